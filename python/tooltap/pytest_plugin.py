"""The pytest plugin (entry point ``pytest11``): recorded LLM fixtures per test.

A test that asks for the ``tooltap`` fixture (or carries ``@pytest.mark.tooltap``) runs against
its own tooltap, started on a free loopback port before the test and stopped cleanly after it:
``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL`` and ``OLLAMA_HOST`` point
at it for the test, so SDK clients made inside the test go through it, and requests to it carry
the test's node id in the ``x-tooltap-cassette`` header. Its recordings live in
``<--tooltap-recordings>/<cassette folder>/`` (``tests/test_weather.py/test_loop``: one folder
per test, so neighbouring tests and test order never matter). The test fails when replay missed a request (the message names the closest
recording and the JSON pointers that differ) or when tooltap found a violation at or above
``--tooltap-fail-on`` (default ``error``), naming the rule. See docs/testing.md.
"""

import os
import shutil
import tempfile
from typing import List, Optional

import pytest

from tooltap import _modes
from tooltap._bin import find_tooltap_bin
from tooltap._headers import tag_requests
from tooltap._server import Server, TooltapError

_SEVERITIES = {"error": ("error",), "warning": ("error", "warning"), "never": ()}
_STASH = pytest.StashKey()


def pytest_addoption(parser):
    group = parser.getgroup("tooltap", "recorded LLM fixtures checked by tooltap")
    group.addoption(
        "--tooltap-mode",
        choices=_modes.MODES,
        default=os.environ.get("TOOLTAP_MODE", "none"),
        help="none (replay only, the default; TOOLTAP_MODE), once (record a test without "
        "recordings), new_episodes (record only the misses), all (record every request), "
        "rewrite (delete a test's recordings, then record): pytest-recording's meanings",
    )
    group.addoption(
        "--tooltap-recordings",
        default=os.environ.get("TOOLTAP_RECORDINGS"),
        metavar="DIR",
        help="folder of the recordings, one sub-folder per test "
        "(default: tests/recordings under the rootdir; TOOLTAP_RECORDINGS)",
    )
    group.addoption(
        "--tooltap-upstream",
        default=os.environ.get("TOOLTAP_UPSTREAM"),
        metavar="URL",
        help="where recording modes forward every provider's requests (default: each "
        "provider's public API; TOOLTAP_UPSTREAM)",
    )
    group.addoption(
        "--tooltap-fail-on-unused",
        action="store_true",
        default=os.environ.get("TOOLTAP_FAIL_ON_UNUSED", "") not in ("", "0"),
        help="fail a replayed test when one of its recordings answered no request "
        "(TOOLTAP_FAIL_ON_UNUSED=1)",
    )
    group.addoption(
        "--tooltap-fail-on",
        choices=tuple(_SEVERITIES),
        default="error",
        help="fail a test on violations of this severity or worse: error (default), warning, "
        "never; misses always fail",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "tooltap(fail_on=None): run the test against its own tooltap (the tooltap fixture); "
        "fail_on overrides --tooltap-fail-on for this test",
    )


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("tooltap") and "tooltap" not in item.fixturenames:
            item.fixturenames.append("tooltap")


class Tooltap:
    """What the ``tooltap`` fixture yields: the running tooltap and the test's cassette."""

    def __init__(self, mode: str, cassette: str, name: str, fail_on: str):
        self.mode = mode
        self.cassette = cassette
        self.name = name
        self.fail_on = fail_on
        self.url = ""
        self.servers: List[Server] = []
        self.no_cassette = False
        self.recording = False
        self._findings: Optional[List[str]] = None

    @property
    def base_urls(self):
        """Each provider variable's value for this test (``OPENAI_BASE_URL`` ...)."""
        return _modes.base_urls(self.url)

    @property
    def headers(self):
        """The cassette header this test's requests carry (added to httpx and httpx2 requests
        on their own); hand it to other clients as default headers."""
        return {_modes.CASSETTE_HEADER: self.name}

    def start(self, commands: List[List[str]], env) -> None:
        upstream = None
        for argv in commands:
            if upstream:
                argv = argv + ["--upstream", upstream]
            self.servers.append(Server(argv, _violations_path(argv), env))
            upstream = self.servers[-1].url
        self.url = self.servers[-1].url

    def stop(self) -> List[str]:
        """Stops every tooltap (front first) once; returns what should fail the test."""
        if self._findings is not None:
            return self._findings
        findings = []
        for server in reversed(self.servers):
            try:
                status = server.stop()
            except TooltapError as error:
                findings.append(str(error))
                continue
            unused = server.unused()
            findings += unused
            if status != 0 and not (status == 1 and unused):
                findings.append(
                    "tooltap exited with status %s:\n%s" % (status, server.output())
                )
        for server in self.servers:
            findings += ["replay miss: %s" % miss for miss in server.misses()]
            for line in server.violations():
                if line.get("severity") in _SEVERITIES[self.fail_on]:
                    findings.append(_describe(line))
        # A test that sent nothing needs no recordings; one that did needs its own.
        if self.no_cassette and any(s.replayed() or s.misses() for s in self.servers):
            findings.append(
                "no recordings for this test in %s (--tooltap-mode none): record them with "
                "--tooltap-mode once" % self.cassette
            )
        if self.recording:
            _modes.flatten(self.cassette)
        _modes.remove_if_empty(self.cassette)
        self._findings = findings
        return findings


def _violations_path(argv: List[str]) -> Optional[str]:
    if "--violations" in argv:
        value = argv[argv.index("--violations") + 1]
        return None if value == "off" else value
    return None


def _describe(line: dict) -> str:
    return "tooltap violation %s (%s) at %s in exchange %s: %s" % (
        line.get("rule"),
        line.get("severity"),
        line.get("path") or "/",
        line.get("exchange"),
        line.get("detail"),
    )


@pytest.fixture
def tooltap(request, monkeypatch):
    """A tooltap for this test (see the module doc); yields a :class:`Tooltap`."""
    config = request.config
    mode = config.getoption("--tooltap-mode")
    recordings = config.getoption("--tooltap-recordings") or os.path.join(
        str(config.rootpath), "tests", "recordings"
    )
    recordings = os.path.abspath(recordings)
    marker = request.node.get_closest_marker("tooltap")
    fail_on = (marker.kwargs.get("fail_on") if marker else None) or config.getoption(
        "--tooltap-fail-on"
    )
    if fail_on not in _SEVERITIES:
        raise pytest.UsageError("tooltap fail_on must be one of %s" % ", ".join(_SEVERITIES))
    name = _modes.cassette_name(request.node.nodeid)
    cassette = os.path.join(recordings, _modes.cassette_folder(name))
    scratch = tempfile.mkdtemp(prefix="tooltap-")
    plan = _modes.plan(
        find_tooltap_bin(),
        mode,
        recordings,
        cassette,
        config.getoption("--tooltap-upstream"),
        scratch,
        config.getoption("--tooltap-fail-on-unused"),
    )
    session = Tooltap(mode, cassette, name, fail_on)
    session.no_cassette = plan.no_cassette
    session.recording = plan.recording
    request.node.stash[_STASH] = session
    try:
        session.start(plan.commands, None)
    except TooltapError:
        session.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    for variable, value in session.base_urls.items():
        monkeypatch.setenv(variable, value)
    tag_requests(monkeypatch, session.url, name)
    if not plan.recording:
        for variable in _modes.PLACEHOLDER_KEYS:
            if not os.environ.get(variable):
                monkeypatch.setenv(variable, "tooltap-replay")
    try:
        yield session
        findings = session.stop()
    finally:
        session.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    if findings and not getattr(request.node, "_tooltap_reported", False):
        pytest.fail(_report(session, findings), pytrace=False)


def _report(session: Tooltap, findings: List[str]) -> str:
    return "tooltap (mode %s, recordings %s):\n  %s" % (
        session.mode,
        session.cassette,
        "\n  ".join(findings),
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Stops the test's tooltap right after the test body, so that a miss or a violation fails
    the test itself (not only its teardown)."""
    try:
        result = yield
    except BaseException as error:
        session = item.stash.get(_STASH, None)
        if session is not None:
            findings = session.stop()
            if findings:
                item._tooltap_reported = True
                raise pytest.fail.Exception(_report(session, findings), pytrace=False) from error
        raise
    session = item.stash.get(_STASH, None)
    if session is not None:
        findings = session.stop()
        if findings:
            item._tooltap_reported = True
            pytest.fail(_report(session, findings), pytrace=False)
    return result
