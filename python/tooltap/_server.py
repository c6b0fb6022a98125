"""One tooltap process (``replay`` or ``proxy``) on a free loopback port, for one test.

Input: the mode's command line; output: the base URL read from tooltap's ready line, and, once
stopped (SIGTERM, which tooltap answers with a clean end: every recording and violations line
written), the replay misses from its log and the violations from its violations file.
"""

import json
import os
import signal
import subprocess
import threading
from typing import List, Optional

READY_MESSAGES = ("tooltap proxy ready", "tooltap replay ready")
MISS_PREFIX = "tooltap replay: no recording "
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


class TooltapError(RuntimeError):
    """tooltap did not start or stop as expected; the message carries its output."""


class Server:
    """A running tooltap child. ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self, argv: List[str], violations_path: Optional[str], env=None):
        self.argv = argv
        self.violations_path = violations_path
        self.lines: List[str] = []
        self.url = ""
        self.returncode: Optional[int] = None
        self._ready = threading.Event()
        self._process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self._reader = threading.Thread(target=self._read, name="tooltap-log", daemon=True)
        self._reader.start()
        if not self._ready.wait(START_TIMEOUT) or not self.url:
            self._kill()
            raise TooltapError(
                "tooltap did not report ready within %ss: %s\n%s"
                % (START_TIMEOUT, " ".join(argv), self.output())
            )

    def _read(self) -> None:
        assert self._process.stdout is not None
        for raw in self._process.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            if not self.url:
                listen = _ready_address(line)
                if listen:
                    self.url = "http://" + listen
                    self._ready.set()
        # The process ended (or closed its output): a start that never got ready stops waiting.
        self._ready.set()

    def output(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> int:
        """SIGTERM, then wait for the clean end; returns the exit status."""
        if self.returncode is not None:
            return self.returncode
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
        try:
            self.returncode = self._process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._kill()
            raise TooltapError(
                "tooltap did not stop within %ss of SIGTERM: %s\n%s"
                % (STOP_TIMEOUT, " ".join(self.argv), self.output())
            )
        self._reader.join(STOP_TIMEOUT)
        return self.returncode

    def _kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self.returncode = self._process.wait()

    def misses(self) -> List[str]:
        """The miss messages replay logged (each names the two closest recordings); none with
        ``--on-miss forward``, where a miss is forwarded and recorded, as asked."""
        if "forward" in self.argv:
            return []
        found = []
        for line in self.lines:
            message = _message(line)
            if message and message.startswith(MISS_PREFIX):
                found.append(message)
        return found

    def replayed(self) -> int:
        """How many requests replay answered from a recording."""
        return sum(1 for line in self.lines if _message(line) == "replaying")

    def unused(self) -> List[str]:
        """The recordings replay reported never used at its exit, one line per cassette; only
        when it ran with ``--fail-on-unused`` (it logs them as a warning either way)."""
        if "--fail-on-unused" not in self.argv:
            return []
        found = []
        for line in self.lines:
            value = _parse(line)
            fields = (value or {}).get("fields") or {}
            if fields.get("message") == "recordings never used":
                found.append(
                    "recordings never used (cassette %s): %s"
                    % (fields.get("cassette"), fields.get("recordings"))
                )
        return found

    def violations(self) -> List[dict]:
        """The violations lines tooltap wrote (docs/violations-file.md), summary lines left out."""
        if not self.violations_path or not os.path.exists(self.violations_path):
            return []
        found = []
        with open(self.violations_path, encoding="utf-8") as file:
            for line in file:
                line = line.strip()
                if not line:
                    continue
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if isinstance(value, dict) and "rule" in value:
                    found.append(value)
        return found


def _parse(line: str) -> Optional[dict]:
    if not line.startswith("{"):
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _message(line: str) -> Optional[str]:
    value = _parse(line)
    if value is None:
        return None
    fields = value.get("fields")
    if isinstance(fields, dict) and isinstance(fields.get("message"), str):
        return fields["message"]
    return None


def _ready_address(line: str) -> Optional[str]:
    value = _parse(line)
    if value is None:
        return None
    fields = value.get("fields") or {}
    if fields.get("message") in READY_MESSAGES and isinstance(fields.get("listen"), str):
        return fields["listen"]
    return None
