"""``aioinformer demo`` in a pseudo-terminal: the live display renders, and Ctrl-C typed at
the terminal stops the demo cleanly with its summary.

The demo runs as a session leader whose controlling terminal is the pty's slave end (a
small launcher claims it with ``TIOCSCTTY`` after ``setsid``), so a ``^C`` written to the master end
reaches it as SIGINT through the terminal's line discipline, as a user's keystroke does.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

ANSI = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07)")
TIMEOUT = 60.0
"""Seconds a test waits for the demo's output or exit before failing."""

# Makes the inherited pty slave the controlling terminal of its new session, puts it on
# fds 0-2, then becomes the demo.
LAUNCHER = """
import fcntl, os, sys, termios
fd = int(sys.argv[1])
fcntl.ioctl(fd, termios.TIOCSCTTY, 0)
for target in (0, 1, 2):
    os.dup2(fd, target)
os.close(fd)
os.execv(sys.executable, [sys.executable, "-m", "aioinformer", *sys.argv[2:]])
"""


@dataclass
class _Terminal:
    """The master end of a pty with a demo running on the slave end."""

    master: int
    process: subprocess.Popen[bytes]
    output: bytearray = field(default_factory=bytearray)

    def text(self) -> str:
        return self.output.decode(errors="replace")

    def plain(self) -> str:
        return ANSI.sub("", self.text()).replace("\r", "")

    def read_until(self, predicate: Callable[[_Terminal], bool]) -> None:
        """Collect output until ``predicate(self)`` or the demo exits (then EOF)."""
        deadline = time.monotonic() + TIMEOUT
        while not predicate(self):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out; output so far:\n{self.plain()}")
            ready, _, _ = select.select([self.master], [], [], min(remaining, 0.5))
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the slave side is closed, the demo has exited
                chunk = b""
            if not chunk:
                if predicate(self):
                    return
                raise AssertionError(f"output ended; output:\n{self.plain()}")
            self.output += chunk

    def drain_and_wait(self) -> int:
        """Read everything left, wait for the exit, return its code."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                self.output += chunk
            elif self.process.poll() is not None:
                break
        return self.process.wait(timeout=max(1.0, deadline - time.monotonic()))


@contextlib.contextmanager
def _demo_in_terminal(*args: str, columns: int = 120, rows: int = 40) -> Iterator[_Terminal]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update(TERM="xterm-256color", PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(slave), "demo", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        pass_fds=(slave,),
        env=env,
    )
    os.close(slave)
    terminal = _Terminal(master, process)
    try:
        yield terminal
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def _summary(plain: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}: (.*)$", plain, re.MULTILINE)
    assert match is not None, f"no {label!r} line in:\n{plain}"
    return match.group(1).strip()


def test_demo_draws_its_live_display_in_a_terminal() -> None:
    with _demo_in_terminal(
        "--pods", "300", "--churn", "100", "--duration", "2", "--seed", "5"
    ) as terminal:
        code = terminal.drain_and_wait()
    raw = terminal.text()
    plain = terminal.plain()
    assert code == 0, plain
    # A live display: cursor hidden while it runs, redrawn in place, shown again at the end.
    assert "\x1b[?25l" in raw
    assert "\x1b[?25h" in raw
    assert "\x1b[2K" in raw or "\x1b[1A" in raw
    assert "\x1b[" in raw.split("initial sync", 1)[1]  # colours or cursor moves
    expected = ["aioinformer demo", "initial sync", "━", "300/300 pods", "events/s"]
    expected += ["cache / server", "queue depth", "slow-audit", "relists", "reconnects"]
    for part in expected:
        assert part in plain, part
    assert "churning" in plain
    # Not the plain progress lines meant for pipes.
    assert "handler queues mirror:" not in plain
    assert _summary(plain, "cache == server").startswith("yes")


def test_ctrl_c_at_the_terminal_stops_the_demo_with_its_summary() -> None:
    with _demo_in_terminal("--pods", "200", "--churn", "100", "--duration", "600") as terminal:
        terminal.read_until(lambda t: "churning" in t.plain())
        os.write(terminal.master, b"\x03")
        typed_at = time.monotonic()
        terminal.read_until(lambda t: "cache == server:" in t.plain())
        code = terminal.drain_and_wait()
        stopped_after = time.monotonic() - typed_at
    plain = terminal.plain()
    assert code == 0, plain
    assert stopped_after < 10
    assert "interrupted" in plain
    assert _summary(plain, "ran for").endswith("(interrupted)")
    assert _summary(plain, "cache == server").startswith("yes")
