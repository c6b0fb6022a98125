"""What each ``--tooltap-mode`` runs for one test, given its cassette folder.

The modes carry pytest-recording's (vcrpy's) meanings, per cassette; a cassette is the folder of
one test's recordings:

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
_UNSAFE = re.compile(r"[^A-Za-z0-9._\[\]=,+-]")
_MAX_SEGMENT = 120


def base_urls(url: str) -> Dict[str, str]:
    """Each provider's base-URL variable, pointed at the tooltap listening on ``url``."""
    return {variable: url + suffix for _, _, _, variable, suffix in PROVIDERS}


def cassette_dir(recordings: str, nodeid: str) -> str:
    """``<recordings>/<module>/<test>``: pytest-recording's layout, one folder per test. Each
    segment keeps letters, digits and ``._[]=,+-``, anything else becomes ``_``, and is cut
    to a safe length, so a node id never escapes the recordings folder."""
    path, _, name = nodeid.partition("::")
    module = os.path.splitext(os.path.basename(path))[0] or "tests"
    return os.path.join(recordings, _segment(module), _segment(name.replace("::", ".") or "test"))


def _segment(text: str) -> str:
    cleaned = _UNSAFE.sub("_", text)[:_MAX_SEGMENT]
    return "_" + cleaned if cleaned in ("", ".", "..") or cleaned.startswith(".") else cleaned


def has_recordings(folder: str) -> bool:
    for _, _, files in os.walk(folder):
        if any(name.endswith(".jsonl") for name in files):
            return True
    return False


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
) -> Plan:
    """What to run for one test in ``mode``; writes the proxy config into ``scratch``."""
    if mode not in MODES:
        raise ValueError("--tooltap-mode must be one of %s, not %r" % (", ".join(MODES), mode))
    violations = os.path.join(scratch, "violations.jsonl")
    common = ["--listen", "127.0.0.1:0", "--log-format", "json", "--violations", violations]
    if mode == "rewrite" and os.path.isdir(cassette):
        shutil.rmtree(cassette)
    recorded = has_recordings(cassette)
    if mode == "none" or (mode == "once" and recorded):
        # Without its own recordings, the whole folder answers, so a miss names the closest.
        source = cassette if recorded else recordings
        if not os.path.isdir(source):
            source = os.path.join(scratch, "empty")
            os.makedirs(source, exist_ok=True)
        replay = [binary, "replay", "--recordings", source, "--on-miss", "error", *common]
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
        return Plan([router, replay], recording=True, no_cassette=False)
    record = proxy + ["--record", "all", "--recordings", cassette, *common]
    return Plan([record], recording=True, no_cassette=False)
