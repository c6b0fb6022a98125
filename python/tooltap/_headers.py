"""Tags the requests a test sends to its tooltap with the ``x-tooltap-cassette`` header.

An environment variable can set a base URL but not a header, so the ``send`` of httpx's and
httpx2's clients (what the openai, anthropic, google-genai and ollama SDKs send with) is wrapped
for the duration of the test: a request to tooltap's URL without the header gets it. Requests
to anything else are untouched. Clients built on other libraries still reach the test's own
tooltap; their recordings lack the header, which only the export by cassette needs.
"""

import importlib
import importlib.util

from tooltap._modes import CASSETTE_HEADER

_LIBRARIES = ("httpx", "httpx2")


def tag_requests(monkeypatch, url: str, name: str) -> None:
    """Until ``monkeypatch`` undoes it, requests to ``url`` carry ``x-tooltap-cassette: name``."""
    prefix = url.rstrip("/") + "/"
    for library in _LIBRARIES:
        if importlib.util.find_spec(library) is None:
            continue
        module = importlib.import_module(library)
        for client in ("Client", "AsyncClient"):
            cls = getattr(module, client, None)
            if cls is not None and hasattr(cls, "send"):
                monkeypatch.setattr(cls, "send", _tagging(cls.send, prefix, name))


def _tagging(send, prefix: str, name: str):
    def tagged_send(self, request, *args, **kwargs):
        if str(request.url).startswith(prefix) and CASSETTE_HEADER not in request.headers:
            request.headers[CASSETTE_HEADER] = name
        return send(self, request, *args, **kwargs)

    tagged_send.__wrapped__ = send
    return tagged_send
