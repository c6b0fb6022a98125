"""What each ``--tooltap-mode`` runs for one test, given its cassette.

A test's cassette is its node id, sent as the ``x-tooltap-cassette`` header; its recordings are
``<recordings>/<cassette folder>/<exchange id>.jsonl``, the folder as tooltap renders the name
(``tests/test_weather.py::test_loop`` → ``tests/test_weather.py/test_loop``). The modes carry
pytest-recording's (vcrpy's) meanings, per cassette:

- ``none``: replay only (``tooltap replay --on-miss error``); a request no recording matches
  is a miss and fails the test. A test without a cassette replays against every recording of
  the folder, so that its misses name the closest one, and fails for having none.
- ``once``: replay when the cassette holds recordings, else record it (``tooltap proxy --record
  all``).
- ``new_episodes``: replay what is recorded, forward and record what is not (``tooltap replay
  --on-miss forward``, through a pass-through ``tooltap proxy`` that routes by provider).
- ``all``: record every request, replay none (recordings are added beside the old ones).
- ``rewrite``: delete the cassette, then record as ``all``.

Every provider's SDK is pointed at the same tooltap; the provider is chosen by a path prefix
(the table in :data:`PROVIDERS`), the same in every mode, so that recorded paths match on replay.
"""

import os
import re
import shutil
from typing import Dict, List, Optional, Tuple
from urllib.parse import quote

MODES = ("none", "once", "new_episodes", "all", "rewrite")

# (route name, path prefix, public upstream, environment variable, suffix of its value after
# the tooltap URL). The OpenAI SDKs take the default route, so OpenAI-compatible servers need no
# prefix. An empty route name is the default route.
PROVIDERS: Tuple[Tuple[str, str, str, str, str], ...] = (
    ("", "", "https://api.openai.com", "OPENAI_BASE_URL", "/v1"),
    ("anthropic", "/anthropic", "https://api.anthropic.com", "ANTHROPIC_BASE_URL", "/anthropic"),
    (
        "gemini",
        "/gemini",
        "https://generativelanguage.googleapis.com",
        "GOOGLE_GEMINI_BASE_URL",
        "/gemini",
    ),
    ("ollama", "/ollama", "http://127.0.0.1:11434", "OLLAMA_HOST", "/ollama"),
)

# SDKs refuse to start without a key, which a replayed test does not need.
PLACEHOLDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")

CASSETTE_HEADER = "x-tooltap-cassette"
# tooltap's rendering of a cassette name as a folder (src/record/cassette.rs, layout::segment).
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_MAX_SEGMENT = 96
_MAX_DEPTH = 8
_MAX_NAME = 1024


def base_urls(url: str) -> Dict[str, str]:
    """Each provider's base-URL variable, pointed at the tooltap listening on ``url``."""
    return {variable: url + suffix for _, _, _, variable, suffix in PROVIDERS}


def cassette_name(nodeid: str) -> str:
    """The ``x-tooltap-cassette`` value for a test: its node id, non-ASCII characters
    percent-encoded (a header value is ASCII), cut as tooltap cuts it."""
    encoded = "".join(c if " " <= c <= "~" else quote(c, safe="") for c in nodeid).strip()
    return encoded.encode("ascii")[:_MAX_NAME].decode("ascii").strip()


def cassette_folder(name: str) -> str:
    """The folder tooltap files a cassette's recordings in, relative to the recordings folder:
    ``tests/test_weather.py::test_loop`` is ``tests/test_weather.py/test_loop``. Split at
    ``/``, ``\\`` and ``::``; each part keeps ``[A-Za-z0-9._-]`` (anything else, and a leading
    dot, becomes ``_``), at most 96 characters; empty parts and ``.`` go; at most 8 levels."""
    parts = [p.strip() for piece in re.split(r"[/\\]", name) for p in piece.split("::")]
    parts = [p for p in parts if p and p != "."]
    kept = min(len(parts), _MAX_DEPTH)
    folders = []
    for index in range(kept):
        last = index + 1 == kept
        part = "_".join(parts[index:]) if last and len(parts) > kept else parts[index]
        folders.append(_segment(part))
    return os.path.join(*folders) if folders else "_"


def _segment(text: str) -> str:
    clean = "".join(c if c in _SAFE else "_" for c in text[:_MAX_SEGMENT])
    if clean.startswith("."):
        clean = "_" + clean[1:]
    return clean or "_"


def has_recordings(folder: str) -> bool:
    for _, _, files in os.walk(folder):
        if any(name.endswith(".jsonl") for name in files):
            return True
    return False


def remove_if_empty(folder: str) -> None:
    """Removes a cassette folder that holds no file (a recording test that sent nothing), so
    that ``once`` records it again and ``none`` does not count it as recorded."""
    if not os.path.isdir(folder):
        return
    for _, _, files in os.walk(folder):
        if files:
            return
    shutil.rmtree(folder, ignore_errors=True)
    try:
        os.rmdir(os.path.dirname(folder))  # the module's folder, when this was its only test
    except OSError:
        pass


def proxy_config(upstream: Optional[str]) -> str:
    """The proxy's TOML: a named route per prefixed provider, each to ``upstream`` when given
    (one server answering every provider, e.g. aimock), else to the provider's public API."""
    lines = []
    for name, prefix, public, _, _ in PROVIDERS:
        if not name:
            continue
        lines += [
            "[[routes]]",
            'name = "%s"' % name,
            'prefix = "%s"' % prefix,
            'upstream = "%s"' % (upstream or public),
            "",
        ]
    return "\n".join(lines)


def default_upstream(upstream: Optional[str]) -> str:
    return upstream or PROVIDERS[0][2]


class Plan:
    """The tooltap commands one test runs, front (the one the SDKs talk to) last."""

    def __init__(self, commands: List[List[str]], recording: bool, no_cassette: bool):
        self.commands = commands
        self.recording = recording
        self.no_cassette = no_cassette


def plan(
    binary: str,
    mode: str,
    recordings: str,
    cassette: str,
    upstream: Optional[str],
    scratch: str,
    fail_on_unused: bool = False,
) -> Plan:
    """What to run for one test in ``mode``, ``cassette`` being its folder of recordings;
    writes the proxy config into ``scratch``. With ``fail_on_unused``, a replay of the test's
    own recordings exits 1 when one of them answered nothing."""
    if mode not in MODES:
        raise ValueError("--tooltap-mode must be one of %s, not %r" % (", ".join(MODES), mode))
    violations = os.path.join(scratch, "violations.jsonl")
    common = ["--listen", "127.0.0.1:0", "--log-format", "json", "--violations", violations]
    if mode == "rewrite" and os.path.isdir(cassette):
        shutil.rmtree(cassette)
    recorded = has_recordings(cassette)
    if mode == "none" or (mode == "once" and recorded):
        # Without its own recordings, the whole folder is loaded, so that the miss names the
        # closest recording of any test (the cassette header keeps them from answering).
        source = cassette if recorded else recordings
        if not os.path.isdir(source):
            source = os.path.join(scratch, "empty")
            os.makedirs(source, exist_ok=True)
        replay = [binary, "replay", "--recordings", source, "--on-miss", "error", *common]
        if recorded and fail_on_unused:
            replay.append("--fail-on-unused")
        return Plan([replay], recording=False, no_cassette=not recorded)
    config = os.path.join(scratch, "tooltap.toml")
    with open(config, "w", encoding="utf-8") as file:
        file.write(proxy_config(upstream))
    proxy = [
        binary,
        "proxy",
        "--config",
        config,
        "--upstream",
        default_upstream(upstream),
        "--admin-listen",
        "off",
    ]
    os.makedirs(cassette, exist_ok=True)
    if mode == "new_episodes":
        router = proxy + [
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--record",
            "off",
            "--inspect",
            "false",
            "--violations",
            "off",
        ]
        # The front's --upstream is filled in with the router's URL once it is ready.
        replay = [binary, "replay", "--recordings", cassette, "--on-miss", "forward", *common]
        if fail_on_unused:
            replay.append("--fail-on-unused")
        return Plan([router, replay], recording=True, no_cassette=False)
    record = proxy + ["--record", "all", "--recordings", cassette, *common]
    return Plan([record], recording=True, no_cassette=False)


def flatten(cassette: str) -> None:
    """Moves the recordings tooltap filed below a test's folder (``<cassette folder>/`` when
    the request named its cassette, ``<route>/<date>/`` or ``replay/<date>/`` when it did not)
    up into the folder itself, so a test's recordings are always ``<folder>/<id>.jsonl``."""
    if not os.path.isdir(cassette):
        return
    for top, folders, files in os.walk(cassette, topdown=False):
        if top == cassette:
            continue
        for name in files:
            if not name.endswith(".jsonl"):
                continue
            target = os.path.join(cassette, name)
            stem, suffix = os.path.splitext(name)
            n = 1
            while os.path.exists(target):
                n += 1
                target = os.path.join(cassette, "%s-%d%s" % (stem, n, suffix))
            os.replace(os.path.join(top, name), target)
        try:
            os.rmdir(top)
        except OSError:
            pass
