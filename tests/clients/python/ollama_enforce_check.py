"""Drives the official `ollama` Python client against an enforcing tooltap in front of the
fixture upstream (which answers the fixture named in the `x-fixture` header) and prints, per
fixture, what the client got or the error it raised, as JSON. Each fixture's own request is
sent through `chat` (its `messages`, `tools` and `stream` flag; Ollama streams when `stream`
is absent).

Usage: ollama_enforce_check.py BASE_URL FIXTURES_DIR NAME..."""
import json, os, sys

import ollama

base_url, fixtures = sys.argv[1], sys.argv[2]
out = {}
for name in sys.argv[3:]:
    with open(os.path.join(fixtures, name, "request.json")) as f:
        request = json.load(f)
    client = ollama.Client(host=base_url, headers={"x-fixture": name})
    stream = request.get("stream", True)
    got = {"lines": 0, "calls": []}
    try:
        answer = client.chat(model=request["model"], messages=request["messages"],
                             tools=request.get("tools"), stream=stream)
        for part in (answer if stream else [answer]):
            got["lines"] += 1
            got["calls"] += [c.function.name for c in (part.message.tool_calls or [])]
            got["done_reason"] = part.done_reason
        got["raised"] = False
    except ollama.ResponseError as error:
        got.update(raised=True, status=error.status_code, message=str(error.error))
    except Exception as error:  # e.g. pydantic refusing a line the proxy let through
        got.update(raised=True, kind=type(error).__name__, message=str(error)[:300])
    out[name] = got
print(json.dumps(out, sort_keys=True))
