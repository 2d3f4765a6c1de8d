"""Child processes a measuring case starts and speaks to one JSON line at a time.

Role: shared by the multi-process scenarios (:mod:`bench.fanout`, :mod:`bench.sharding`),
whose measured parts each run in a process of their own so that each one's CPU and RSS
are its own. A child is ``python -m MODULE ROLE '<json config>'``: it prints one JSON line
saying it is ready (:func:`serve`), then answers one JSON line per JSON command line on
stdin (``{"op": ..., ...}``) until stdin closes, which ends it.

Input: the module and role to run, and its config. Output: :class:`Child`, with the
child's replies (:meth:`Child.ask`) and what the kernel says of it (:meth:`Child.cpu_seconds`,
:meth:`Child.rss_mib`, from ``/proc/PID``).

Task model: the measuring side awaits each reply in its own task; a child runs one event
loop and answers commands in the order they come.
"""

from __future__ import annotations

import asyncio
import os
import resource
import sys
from typing import TYPE_CHECKING, Any, Final, Self

import orjson

from bench.replay import REPO_ROOT, child_env

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Awaitable, Callable, Iterable

__all__ = ["Child", "raise_fd_limit", "reply", "serve", "start_all"]

_MIB: Final = 1024 * 1024
_REPLY_LIMIT: Final = 256 * _MIB
"""Longest reply line read from a child (a fan-out clients' report carries every latency)."""
_CLOSE_TIMEOUT: Final = 10.0
_OPEN_FILES: Final = 65_536
"""The open-file limit each child asks for (at most the hard limit)."""


def raise_fd_limit() -> None:
    """A thousand watches are a thousand sockets on each side: lift the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = _OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, _OPEN_FILES)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def reply(payload: dict[str, Any]) -> None:
    """Write one reply line to the measuring side."""
    sys.stdout.buffer.write(orjson.dumps(payload) + b"\n")
    sys.stdout.flush()


async def serve(
    ready: dict[str, Any], commands: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]]
) -> None:
    """Say ``ready``, then answer each command line on stdin until it closes."""
    reply(ready)
    while line := await asyncio.to_thread(sys.stdin.buffer.readline):
        command = orjson.loads(line)
        reply(await commands[command["op"]](command))


class Child:
    """A child process (see the module notes), spoken to one JSON line at a time."""

    def __init__(self, process: asyncio.subprocess.Process, ready: dict[str, Any]) -> None:
        self.process = process
        self.ready = ready

    @classmethod
    async def start(
        cls, module: str, role: str, config: dict[str, Any], *, stderr: int | None = None
    ) -> Self:
        """Start ``python -m module role config`` and wait for its ready line (closing it
        if it fails to say it). ``stderr`` as for :func:`asyncio.create_subprocess_exec`
        (default: this process's)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            role,
            orjson.dumps(config).decode(),
            cwd=REPO_ROOT,
            env=child_env(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            limit=_REPLY_LIMIT,
        )
        child = cls(process, {})
        try:
            child.ready = await child._line(f"{role} did not start")
        except BaseException:
            await child.close()
            raise
        return child

    async def _line(self, failure: str) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{failure}: exited with {await self.process.wait()}")
        answer: dict[str, Any] = orjson.loads(line)
        return answer

    async def ask(self, **command: Any) -> dict[str, Any]:
        """Send one command and return the child's reply to it."""
        assert self.process.stdin is not None
        self.process.stdin.write(orjson.dumps(command) + b"\n")
        await self.process.stdin.drain()
        return await self._line(f"no answer to {command['op']!r}")

    def cpu_seconds(self) -> float:
        """utime + stime so far, from ``/proc/PID/stat``."""
        with open(f"/proc/{self.process.pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) in MiB, from ``/proc/PID/status``."""
        found = {}
        with open(f"/proc/{self.process.pid}/status", "rb") as status:
            for line in status:
                name, _, value = line.partition(b":")
                if name in (b"VmRSS", b"VmHWM"):
                    found[name] = int(value.split()[0]) / 1024
        return found[b"VmRSS"], found[b"VmHWM"]

    async def kill(self) -> None:
        """SIGKILL the child and reap it."""
        self.process.kill()
        await self.process.wait()

    async def close(self) -> None:
        """Close its stdin (the child ends), killing it if it has not ended in time."""
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()
        try:
            async with asyncio.timeout(_CLOSE_TIMEOUT):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


async def start_all(
    stack: contextlib.AsyncExitStack, module: str, role: str, configs: Iterable[dict[str, Any]]
) -> list[Child]:
    """Start one ``role`` child per config at once, each closed when ``stack`` closes;
    raise the first start that failed (the others are closed with the stack)."""
    started = await asyncio.gather(
        *(Child.start(module, role, config) for config in configs), return_exceptions=True
    )
    children = [child for child in started if isinstance(child, Child)]
    for child in children:
        stack.push_async_callback(child.close)
    for failure in started:
        if isinstance(failure, BaseException):
            raise failure
    return children
