"""The ``aioinformer`` command, run as a user runs it: a subprocess.

``demo`` must converge and exit 0 (and stop cleanly on SIGINT with its summary);
``watch`` runs against a fake API server the test starts, through ``--kubeconfig``, and
must print the list, then a row per event, across reconnects and 410s; each failure it
knows about must be one line on stderr with exit code 1.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import pytest

from tests._support_cli import (
    LINE_TIMEOUT,
    RunningCli,
    cli_env,
    failing_args,
    pod,
    started_cli,
)
from tests._support_objects import deployment

if TYPE_CHECKING:
    import contextlib

    from aioinformer.testing.apiserver import FakeAPIServer

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _cli(*args: str, timeout: float = 90.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aioinformer", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(),
        check=False,
    )


def _watch(*args: str) -> contextlib.AbstractAsyncContextManager[RunningCli]:
    return started_cli("watch", *args)


def _row(line: str) -> list[str]:
    return line.split()


# ---------------------------------------------------------------------------------------
# Entry points and arguments


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "aioinformer"],
        [str(Path(sys.executable).with_name("aioinformer"))],
    ],
    ids=["python-m", "console-script"],
)
def test_both_entry_points_show_help_naming_the_commands(command: list[str]) -> None:
    result = subprocess.run(
        [*command, "--help"], capture_output=True, text=True, env=cli_env(), check=False
    )
    assert result.returncode == 0, result.stderr
    assert "demo" in result.stdout
    assert "watch" in result.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--pods", "-5"], "--pods"),
        (["watch", "pods", "-n", "a", "-A"], "not allowed with"),
    ],
    ids=["negative-pods", "namespace-and-all-namespaces"],
)
def test_usage_errors_from_the_command_exit_2_with_a_message(argv: list[str], message: str) -> None:
    result = _cli(*argv)
    assert result.returncode == 2
    assert message in result.stderr


def test_fake_watch_refuses_a_kubeconfig_as_a_usage_error() -> None:
    result = _cli("watch", "pods", "--fake", "--kubeconfig", "/dev/null")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "aioinformer: error: --fake cannot be combined with --kubeconfig or --context"
    )


# ---------------------------------------------------------------------------------------
# demo


def _summary_value(output: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}: (.*)$", output, re.MULTILINE)
    assert match is not None, f"no {label!r} line in:\n{output}"
    return match.group(1)


def test_demo_converges_recovers_from_faults_and_exits_zero() -> None:
    result = _cli(
        "demo", "--pods", "300", "--churn", "150", "--handlers", "4", "--duration", "5",
        "--seed", "11",
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert _summary_value(out, "cache == server").startswith("yes")
    assert _summary_value(out, "handlers agreeing with server") == "4/4"
    assert _summary_value(out, "indexes consistent") == "yes"
    assert _summary_value(out, "initial sync").startswith("300 pods in ")
    # Both faults took effect and the informer recovered: a reconnect and a relist.
    assert "not reached" not in _summary_value(out, "faults")
    assert int(_summary_value(out, "reconnects")) >= 1
    assert int(_summary_value(out, "relists")) >= 1
    # Not a terminal: plain progress lines, no escape sequences.
    assert re.search(r"^\[\s*\d+\.\d+s\] churning: server \d+ \| cache \d+", out, re.MULTILINE)
    assert "handler queues mirror:" in out
    assert not ANSI.search(out)


def test_demo_with_no_churn_and_no_pods_still_converges() -> None:
    result = _cli("demo", "--pods", "0", "--churn", "0", "--handlers", "1", "--duration", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _summary_value(result.stdout, "cache == server").startswith("yes")
    assert _summary_value(result.stdout, "handlers agreeing with server") == "1/1"


async def test_demo_stops_on_sigint_and_still_prints_the_summary() -> None:
    async with started_cli(
        "demo", "--pods", "200", "--churn", "100", "--duration", "600"
    ) as running:
        await running.read_until(lambda line: "churning:" in line)
        loop = asyncio.get_running_loop()
        interrupted_at = loop.time()
        code, rest, err = await running.interrupt()
        stopped_after = loop.time() - interrupted_at
    assert code == 0, rest + err
    assert stopped_after < 10
    assert "interrupted: stopping churn" in rest
    assert _summary_value(rest, "ran for").endswith("(interrupted)")
    assert _summary_value(rest, "cache == server").startswith("yes")


# ---------------------------------------------------------------------------------------
# watch


async def test_watch_prints_the_synced_list_then_a_row_per_event(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.create(pod("web-1"))
    fake_apiserver.create(pod("web-0"))
    fake_apiserver.create_namespace("other")
    fake_apiserver.create(pod("elsewhere", namespace="other"))
    kubeconfig = fake_apiserver.kubeconfig_path()
    async with _watch("pods", "--kubeconfig", kubeconfig) as cli:
        header = await cli.read_until(lambda line: line.startswith("EVENT"))
        assert _row(header) == ["EVENT", "NAME", "AGE"]
        first = await cli.read_until(lambda line: True)
        second = await cli.read_until(lambda line: True)
        assert [_row(first)[:2], _row(second)[:2]] == [["ADDED", "web-0"], ["ADDED", "web-1"]]
        assert re.fullmatch(r"\d+s", _row(first)[2])

        fake_apiserver.create(pod("web-2"))
        assert _row(await cli.read_until(lambda line: "web-2" in line))[:2] == ["ADDED", "web-2"]
        fake_apiserver.patch("pods", "default", "web-0", {"metadata": {"labels": {"v": "2"}}})
        assert _row(await cli.read_until(lambda line: "web-0" in line))[:2] == [
            "MODIFIED",
            "web-0",
        ]
        fake_apiserver.delete("pods", "default", "web-1")
        assert _row(await cli.read_until(lambda line: "web-1" in line))[:2] == [
            "DELETED",
            "web-1",
        ]
        code, rest, err = await cli.interrupt()
    assert code == 0, err
    assert err == ""
    assert "elsewhere" not in "\n".join(cli.lines) + rest


async def test_watch_survives_a_dropped_watch_and_a_410_with_a_relist(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.create(pod("stays"))
    fake_apiserver.create(pod("goes"))
    async with _watch("pods", "--kubeconfig", fake_apiserver.kubeconfig_path()) as cli:
        await cli.read_until(lambda line: "goes" in line)
        await cli.read_until(lambda line: "stays" in line)
        await fake_apiserver.wait_for_watchers(1, resource="pods", timeout=LINE_TIMEOUT)

        # A dropped connection: the watch resumes from its resourceVersion.
        await fake_apiserver.restart(reset_history=False)
        fake_apiserver.create(pod("after-drop"))
        assert _row(await cli.read_until(lambda line: "after-drop" in line))[0] == "ADDED"

        # Changes while the watch is away, then the history is gone: the re-watch gets
        # 410 Gone, the informer relists and reports the difference.
        await fake_apiserver.faults.refuse_connections()
        fake_apiserver.delete("pods", "default", "goes")
        fake_apiserver.create(pod("during-outage"))
        fake_apiserver.compact()
        await fake_apiserver.faults.accept_connections()
        seen: dict[str, str] = {}
        while set(seen) != {"goes", "during-outage"}:
            row = _row(await cli.read_until(lambda line: "goes" in line or "outage" in line))
            seen[row[1]] = row[0]
        assert seen == {"goes": "DELETED", "during-outage": "ADDED"}
        code, _, err = await cli.interrupt()
    assert code == 0, err
    # "stays" was printed once, by the list: the relist did not repeat it.
    assert sum("stays" in line for line in cli.lines) == 1
    paths = [r.path for r in fake_apiserver.request_log if "watch" in r.query]
    assert len(paths) >= 3


async def test_watch_all_namespaces_adds_a_namespace_column(
    fake_apiserver: FakeAPIServer,
) -> None:
    for namespace in ("team-a", "team-b"):
        fake_apiserver.create_namespace(namespace)
    fake_apiserver.create(pod("a", namespace="team-a"))
    fake_apiserver.create(pod("b", namespace="team-b"))
    async with _watch("pods", "-A", "--kubeconfig", fake_apiserver.kubeconfig_path()) as cli:
        header = await cli.read_until(lambda line: line.startswith("EVENT"))
        rows = [_row(await cli.read_until(lambda line: True)) for _ in range(2)]
        code, _, err = await cli.interrupt()
    assert code == 0, err
    assert _row(header) == ["EVENT", "NAMESPACE", "NAME", "AGE"]
    assert [r[:3] for r in rows] == [["ADDED", "team-a", "a"], ["ADDED", "team-b", "b"]]


async def test_watch_with_a_label_selector_and_wide_output(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.create(pod("front", tier="web"))
    fake_apiserver.create(pod("back", tier="db"))
    async with _watch(
        "pods", "-l", "tier=web", "-o", "wide", "--kubeconfig", fake_apiserver.kubeconfig_path()
    ) as cli:
        header = await cli.read_until(lambda line: line.startswith("EVENT"))
        row = _row(await cli.read_until(lambda line: True))
        fake_apiserver.create(pod("front-2", tier="web"))
        fake_apiserver.create(pod("back-2", tier="db"))
        await cli.read_until(lambda line: "front-2" in line)
        code, rest, err = await cli.interrupt()
    assert code == 0, err
    assert _row(header) == ["EVENT", "NAME", "AGE", "RESOURCE-VERSION", "LABELS"]
    assert row[:2] == ["ADDED", "front"]
    assert row[3] == fake_apiserver.get("pods", "default", "front")["metadata"]["resourceVersion"]
    assert row[4] == "tier=web"
    assert "back" not in "\n".join(cli.lines) + rest


async def test_watch_json_output_is_one_event_per_line(fake_apiserver: FakeAPIServer) -> None:
    fake_apiserver.create(pod("web-0"))
    async with _watch(
        "pods", "-o", "json", "--kubeconfig", fake_apiserver.kubeconfig_path()
    ) as cli:
        listed = orjson.loads(await cli.read_until(lambda line: True))
        fake_apiserver.delete("pods", "default", "web-0")
        deleted = orjson.loads(await cli.read_until(lambda line: True))
        code, _, err = await cli.interrupt()
    assert code == 0, err
    assert listed["type"] == "ADDED"
    assert listed["object"]["kind"] == "Pod"
    assert listed["object"]["metadata"]["name"] == "web-0"
    assert deleted["type"] == "DELETED"
    assert deleted["object"]["metadata"]["name"] == "web-0"


async def test_watch_name_output_prints_kind_slash_name(fake_apiserver: FakeAPIServer) -> None:
    fake_apiserver.create(deployment("web"))
    kubeconfig = fake_apiserver.kubeconfig_path()
    async with _watch("apps/v1/deployments", "-o", "name", "--kubeconfig", kubeconfig) as cli:
        line = await cli.read_until(lambda line: True)
        code, _, err = await cli.interrupt()
    assert code == 0, err
    assert line == "deployment.apps/web"


async def test_watch_fake_shows_its_seeded_pods_then_its_churn() -> None:
    async with _watch("pods", "--fake") as cli:
        await cli.read_until(lambda line: line.startswith("EVENT"))
        names = {_row(await cli.read_until(lambda line: True))[1] for _ in range(3)}
        change = _row(await cli.read_until(lambda line: True))
        code, _, err = await cli.interrupt()
    assert code == 0, err
    assert names == {"api-0", "web-0", "web-1"}
    assert change[0] in {"ADDED", "MODIFIED", "DELETED"}


async def test_watch_ends_with_an_error_when_access_is_revoked_mid_run(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.create(pod("web-0"))
    fake_apiserver.add_token("temporary")
    kubeconfig = fake_apiserver.kubeconfig_path(token="temporary")
    async with _watch("pods", "--kubeconfig", kubeconfig) as cli:
        await cli.read_until(lambda line: "web-0" in line)
        await fake_apiserver.wait_for_watchers(1, resource="pods", timeout=LINE_TIMEOUT)
        fake_apiserver.remove_token("temporary")
        await fake_apiserver.restart(reset_history=False)
        async with asyncio.timeout(LINE_TIMEOUT):
            _, err = await cli.process.communicate()
    assert cli.process.returncode == 1
    last = err.decode().splitlines()[-1]
    assert last.startswith("aioinformer: error: error from server (Unauthorized)")


async def test_watch_exits_quietly_when_its_reader_goes_away(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.create(pod("web-0"))
    read_end, write_end = os.pipe()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        "watch",
        "pods",
        "--kubeconfig",
        fake_apiserver.kubeconfig_path(),
        stdout=write_end,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    os.close(write_end)
    try:
        loop = asyncio.get_running_loop()
        # As `| head -1` does: read the first bytes, then go away.
        async with asyncio.timeout(LINE_TIMEOUT):
            first = await loop.run_in_executor(None, os.read, read_end, 4096)
        os.close(read_end)
        read_end = -1
        fake_apiserver.create(pod("web-1"))
        async with asyncio.timeout(LINE_TIMEOUT):
            _, err = await process.communicate()
    finally:
        if read_end >= 0:
            os.close(read_end)
        if process.returncode is None:
            process.kill()
            await process.communicate()
    assert first.startswith(b"EVENT")
    assert process.returncode == 0
    assert err == b""


@pytest.mark.parametrize(
    "case",
    [
        "missing-kubeconfig",
        "malformed-kubeconfig",
        "unknown-context",
        "unknown-resource",
        "forbidden-namespace",
        "unreachable-server",
    ],
)
async def test_watch_failures_are_one_clear_line_and_exit_1(
    case: str, fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    args, address = await failing_args(case, fake_apiserver, tmp_path)
    expected = {
        "missing-kubeconfig": "nope.yaml",
        "malformed-kubeconfig": "bad.yaml",
        "unknown-context": "staging",
        "unknown-resource": "widgets",
        "forbidden-namespace": "forbidden",
        "unreachable-server": address,
    }[case]
    async with _watch(*args) as cli:
        line = await cli.failure_line()
    assert expected in line
    if case == "forbidden-namespace":
        assert '"secret"' in line
