"""What the command-line tests share: the subprocess environment, a running command read
line by line, a pod, and the setups that make ``get`` and ``watch`` fail with a one-line
error."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from aioinformer.testing.apiserver import FakeAPIServer, Rule

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path


def cli_env() -> dict[str, str]:
    """The environment a CLI subprocess runs in: no kubeconfig or terminal size inherited
    from the caller, unbuffered output."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "COLUMNS", "LINES")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


LINE_TIMEOUT = 30.0
"""Seconds a test waits for an expected line before failing (generous: CI is shared)."""


class RunningCli:
    """A CLI subprocess on the test's loop, read line by line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []

    async def read_until(self, predicate: Callable[[str], bool]) -> str:
        """Read stdout lines until one satisfies ``predicate``; return it."""
        stdout = self.process.stdout
        assert stdout is not None
        async with asyncio.timeout(LINE_TIMEOUT):
            while True:
                raw = await stdout.readline()
                if not raw:
                    stderr = await self.process.stderr.read() if self.process.stderr else b""
                    raise AssertionError(
                        f"output ended; got {self.lines!r}; stderr {stderr.decode()!r}"
                    )
                line = raw.decode().rstrip("\n")
                self.lines.append(line)
                if predicate(line):
                    return line

    async def failure_line(self, code: int = 1) -> str:
        """Wait for the command to end with ``code``, having written nothing to stdout and
        one ``aioinformer: error: ...`` line to stderr; return that line."""
        async with asyncio.timeout(LINE_TIMEOUT):
            out, err = await self.process.communicate()
        assert self.process.returncode == code, (out, err)
        assert out == b""
        lines = err.decode().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith("aioinformer: error: ")
        return lines[0]

    async def interrupt(self) -> tuple[int, str, str]:
        """SIGINT, then the exit code and the rest of stdout and stderr."""
        self.process.send_signal(signal.SIGINT)
        async with asyncio.timeout(LINE_TIMEOUT):
            out, err = await self.process.communicate()
        return self.process.returncode or 0, out.decode(), err.decode()


@contextlib.asynccontextmanager
async def started_cli(*args: str, cwd: str | None = None) -> AsyncIterator[RunningCli]:
    """``aioinformer ARGS`` (in ``cwd``) on the test's loop; killed on leaving if it is
    still running."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
        cwd=cwd,
    )
    running = RunningCli(process)
    try:
        yield running
    finally:
        if process.returncode is None:
            process.kill()
            await process.communicate()


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    """A pod labelled ``labels`` (``app=NAME`` when none are given)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": name}},
        "spec": {"containers": [{"name": "main", "image": "example/app:1"}]},
    }


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


async def _closed_port() -> int:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port: int = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    return port


def _kubeconfig_text(url: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\ncurrent-context: dead\n"
        f"clusters: [{{name: dead, cluster: {{server: '{url}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: dead, context: {cluster: dead, user: u}}]\n"
    )


async def failing_args(case: str, server: FakeAPIServer, tmp_path: Path) -> tuple[list[str], str]:
    """The arguments after the command name that make it fail as ``case`` says, and the
    ``127.0.0.1:PORT`` address of the unreachable server (``""`` for the other cases).

    Cases: ``missing-kubeconfig`` (``nope.yaml``), ``malformed-kubeconfig``
    (``bad.yaml``), ``unknown-context`` (``staging``), ``unknown-resource``
    (``widgets``), ``forbidden-namespace`` (namespace ``secret`` for a token allowed only
    ``allowed``), ``invalid-label-selector`` and ``unreachable-server``.
    """
    if case == "missing-kubeconfig":
        return ["pods", "--kubeconfig", str(tmp_path / "nope.yaml")], ""
    if case == "malformed-kubeconfig":
        path = _write(tmp_path / "bad.yaml", "clusters: [this is: not: valid\n")
        return ["pods", "--kubeconfig", path], ""
    if case == "unknown-context":
        return ["pods", "--kubeconfig", server.kubeconfig_path(), "--context", "staging"], ""
    if case == "unknown-resource":
        return ["widgets", "--kubeconfig", server.kubeconfig_path()], ""
    if case == "forbidden-namespace":
        server.add_token(
            "limited", rules=[Rule(verbs=["*"], resources=["pods"], namespaces=["allowed"])]
        )
        return ["pods", "-n", "secret", "--kubeconfig", server.kubeconfig_path(token="limited")], ""
    if case == "invalid-label-selector":
        return ["pods", "-l", "a in (b", "--kubeconfig", server.kubeconfig_path()], ""
    assert case == "unreachable-server", case
    address = f"127.0.0.1:{await _closed_port()}"
    path = _write(tmp_path / "dead.yaml", _kubeconfig_text(f"http://{address}"))
    return ["pods", "--kubeconfig", path], address
