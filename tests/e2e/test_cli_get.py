"""``aioinformer get``, run as a user runs it: a subprocess against a fake API server the
test starts, reached through ``--kubeconfig``.

Each output format, pagination across pages (counted in the server's request log), gets
by name, selectors, the empty case, and every failure it knows about as one line on
stderr with exit code 1. Argument checks run in process: ``tests/unit/cli/test_cli_get_args.py``.
"""

from __future__ import annotations

import asyncio
import io
import re
import sys
from typing import TYPE_CHECKING, Any

import orjson
import pytest
import yaml

from aioinformer.cli._get import GetOptions, run_get
from tests._support_cli import cli_env, failing_args, pod
from tests._support_objects import deployment

if TYPE_CHECKING:
    from pathlib import Path

    from aioinformer.testing.apiserver import FakeAPIServer

TIMEOUT = 60.0
"""Seconds a command may take before the test fails (generous: CI is shared)."""

AGE = re.compile(r"\d+s")


async def _get(*args: str) -> tuple[int, str, str]:
    """Run ``aioinformer get ARGS`` without blocking the loop the fake server runs on;
    return its exit code, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aioinformer",
        "get",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
    )
    try:
        async with asyncio.timeout(TIMEOUT):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def _config_map(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"key": name},
    }


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def _lists(server: FakeAPIServer, path: str) -> list[dict[str, str]]:
    """The query of every LIST the server received on ``path``, in order."""
    return [
        dict(r.query)
        for r in server.request_log
        if r.method == "GET" and r.path == path and "watch" not in r.query
    ]


@pytest.fixture
def seeded(fake_apiserver: FakeAPIServer) -> FakeAPIServer:
    """Pods in ``default`` (two web, one db) and one in ``other``."""
    fake_apiserver.create(pod("web-1", tier="web"))
    fake_apiserver.create(pod("web-0", tier="web"))
    fake_apiserver.create(pod("db-0", tier="db"))
    fake_apiserver.create_namespace("other")
    fake_apiserver.create(pod("elsewhere", namespace="other", tier="web"))
    return fake_apiserver


# ---------------------------------------------------------------------------------------
# Tables


async def test_table_lists_the_context_namespace_with_name_and_age(
    seeded: FakeAPIServer,
) -> None:
    code, out, err = await _get("pods", "--kubeconfig", seeded.kubeconfig_path())
    assert (code, err) == (0, "")
    rows = _rows(out)
    assert rows[0] == ["NAME", "AGE"]
    assert [row[0] for row in rows[1:]] == ["db-0", "web-0", "web-1"]
    assert all(AGE.fullmatch(row[1]) for row in rows[1:]), rows
    # Columns line up: every AGE starts where the header's does.
    lines = out.splitlines()
    assert {line.index(row[1]) for line, row in zip(lines[1:], rows[1:], strict=True)} == {
        lines[0].index("AGE")
    }


async def test_all_namespaces_puts_a_namespace_column_first(seeded: FakeAPIServer) -> None:
    code, out, err = await _get("pods", "-A", "--kubeconfig", seeded.kubeconfig_path())
    assert (code, err) == (0, "")
    rows = _rows(out)
    assert rows[0] == ["NAMESPACE", "NAME", "AGE"]
    assert [row[:2] for row in rows[1:]] == [
        ["default", "db-0"],
        ["default", "web-0"],
        ["default", "web-1"],
        ["other", "elsewhere"],
    ]


async def test_a_cluster_scoped_resource_has_no_namespace_column_even_with_all_namespaces(
    fake_apiserver: FakeAPIServer,
) -> None:
    code, out, err = await _get(
        "namespaces", "-A", "--kubeconfig", fake_apiserver.kubeconfig_path()
    )
    assert (code, err) == (0, "")
    rows = _rows(out)
    assert rows[0] == ["NAME", "AGE"]
    assert "kube-system" in [row[0] for row in rows[1:]]


async def test_wide_with_a_label_selector_adds_resource_version_and_labels(
    seeded: FakeAPIServer,
) -> None:
    code, out, err = await _get(
        "pods", "-l", "tier=web", "-o", "wide", "--kubeconfig", seeded.kubeconfig_path()
    )
    assert (code, err) == (0, "")
    rows = _rows(out)
    assert rows[0] == ["NAME", "AGE", "RESOURCE-VERSION", "LABELS"]
    assert [row[0] for row in rows[1:]] == ["web-0", "web-1"]
    web_0 = seeded.get("pods", "default", "web-0")
    assert rows[1][2:] == [web_0["metadata"]["resourceVersion"], "tier=web"]
    assert _lists(seeded, "/api/v1/namespaces/default/pods")[0]["labelSelector"] == "tier=web"


async def test_a_field_selector_narrows_the_list(seeded: FakeAPIServer) -> None:
    code, out, err = await _get(
        "pods", "--field-selector", "metadata.name=db-0", "--kubeconfig", seeded.kubeconfig_path()
    )
    assert (code, err) == (0, "")
    assert [row[0] for row in _rows(out)] == ["NAME", "db-0"]


# ---------------------------------------------------------------------------------------
# Machine-readable formats


async def test_json_output_is_a_v1_list_of_the_objects(seeded: FakeAPIServer) -> None:
    code, out, err = await _get("pods", "-o", "json", "--kubeconfig", seeded.kubeconfig_path())
    assert (code, err) == (0, "")
    document = orjson.loads(out)
    assert (document["apiVersion"], document["kind"]) == ("v1", "List")
    assert [item["metadata"]["name"] for item in document["items"]] == ["db-0", "web-0", "web-1"]
    assert {(item["apiVersion"], item["kind"]) for item in document["items"]} == {("v1", "Pod")}
    assert document["items"][0] == seeded.get("pods", "default", "db-0") | {
        "apiVersion": "v1",
        "kind": "Pod",
    }


async def test_yaml_output_is_the_same_list_as_json(seeded: FakeAPIServer) -> None:
    kubeconfig = seeded.kubeconfig_path()
    code, out, err = await _get("pods", "-o", "yaml", "--kubeconfig", kubeconfig)
    assert (code, err) == (0, "")
    _, as_json, _ = await _get("pods", "-o", "json", "--kubeconfig", kubeconfig)
    assert out.startswith("apiVersion: v1\n")
    assert yaml.safe_load(out) == orjson.loads(as_json)


async def test_name_output_is_kind_slash_name_with_the_group_for_grouped_kinds(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.create(deployment("web"))
    fake_apiserver.create(pod("web-0"))
    kubeconfig = fake_apiserver.kubeconfig_path()
    code, out, err = await _get("apps/v1/deployments", "-o", "name", "--kubeconfig", kubeconfig)
    assert (code, out, err) == (0, "deployment.apps/web\n", "")
    code, out, err = await _get("pod", "-o", "name", "--kubeconfig", kubeconfig)
    assert (code, out, err) == (0, "pod/web-0\n", "")


# ---------------------------------------------------------------------------------------
# Pagination


@pytest.mark.parametrize(
    ("chunk_args", "limits"),
    [
        (["--chunk-size", "500"], ["500", "500", "500"]),
        ([], ["500", "500", "500"]),
        (["--chunk-size", "1000"], ["1000", "1000"]),
        (["--chunk-size", "0"], [None]),
    ],
    ids=["chunks-of-500", "default-is-500", "chunks-of-1000", "zero-means-one-answer"],
)
async def test_a_long_list_arrives_in_pages_and_every_object_is_printed(
    fake_apiserver: FakeAPIServer, chunk_args: list[str], limits: list[str | None]
) -> None:
    names = [f"cm-{i:04d}" for i in range(1200)]
    for name in names:
        fake_apiserver.create(_config_map(name))
    code, out, err = await _get(
        "configmaps", "-o", "name", *chunk_args, "--kubeconfig", fake_apiserver.kubeconfig_path()
    )
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"configmap/{name}" for name in names]
    queries = _lists(fake_apiserver, "/api/v1/namespaces/default/configmaps")
    assert [query.get("limit") for query in queries] == limits
    # The first page starts the list; each later one continues where the last ended.
    assert "continue" not in queries[0]
    assert all(query.get("continue") for query in queries[1:])


# ---------------------------------------------------------------------------------------
# Gets by name


async def test_named_objects_are_printed_in_the_order_they_were_named(
    seeded: FakeAPIServer,
) -> None:
    code, out, err = await _get("pods", "web-1", "db-0", "--kubeconfig", seeded.kubeconfig_path())
    assert (code, err) == (0, "")
    assert [row[0] for row in _rows(out)] == ["NAME", "web-1", "db-0"]
    gets = [r.path for r in seeded.request_log if r.path.startswith("/api/v1/namespaces/")]
    assert gets == [
        "/api/v1/namespaces/default/pods/web-1",
        "/api/v1/namespaces/default/pods/db-0",
    ]


async def test_names_may_follow_the_options_and_name_objects_in_that_namespace(
    seeded: FakeAPIServer,
) -> None:
    code, out, err = await _get(
        "pods", "-n", "other", "elsewhere", "-o", "name", "--kubeconfig", seeded.kubeconfig_path()
    )
    assert (code, out, err) == (0, "pod/elsewhere\n", "")


async def test_one_named_object_in_json_is_the_object_itself_and_two_are_a_list(
    seeded: FakeAPIServer,
) -> None:
    kubeconfig = seeded.kubeconfig_path()
    code, out, err = await _get("pods", "web-0", "-o", "json", "--kubeconfig", kubeconfig)
    assert (code, err) == (0, "")
    single = orjson.loads(out)
    assert (single["kind"], single["metadata"]["name"]) == ("Pod", "web-0")
    code, out, err = await _get("pods", "web-0", "web-1", "-o", "yaml", "--kubeconfig", kubeconfig)
    assert (code, err) == (0, "")
    both = yaml.safe_load(out)
    assert both["kind"] == "List"
    assert [item["metadata"]["name"] for item in both["items"]] == ["web-0", "web-1"]


async def test_a_missing_named_object_is_reported_while_the_others_are_printed(
    seeded: FakeAPIServer,
) -> None:
    code, out, err = await _get("pods", "web-0", "nope", "--kubeconfig", seeded.kubeconfig_path())
    assert code == 1
    assert [row[0] for row in _rows(out)] == ["NAME", "web-0"]
    assert err.splitlines() == [
        'aioinformer: error: error from server (NotFound): pods "nope" not found'
    ]


@pytest.mark.parametrize("output", ["table", "json"])
async def test_a_single_missing_named_object_prints_only_the_error(
    fake_apiserver: FakeAPIServer, output: str
) -> None:
    args = [] if output == "table" else ["-o", output]
    code, out, err = await _get(
        "pods", "nope", *args, "--kubeconfig", fake_apiserver.kubeconfig_path()
    )
    assert (code, out) == (1, "")
    assert err == 'aioinformer: error: error from server (NotFound): pods "nope" not found\n'


# ---------------------------------------------------------------------------------------
# Nothing found


@pytest.mark.parametrize(
    ("args", "stdout", "stderr"),
    [
        (["-n", "empty"], "", "No resources found in empty namespace.\n"),
        (["-n", "empty", "-o", "wide"], "", "No resources found in empty namespace.\n"),
        (["-A"], "", "No resources found\n"),
        (["-n", "empty", "-o", "name"], "", ""),
        (
            ["-n", "empty", "-o", "json"],
            '{\n  "apiVersion": "v1",\n  "items": [],\n  "kind": "List",\n'
            '  "metadata": {\n    "resourceVersion": ""\n  }\n}\n',
            "",
        ),
    ],
    ids=["table", "wide", "all-namespaces", "name", "json"],
)
async def test_an_empty_list_says_so_on_stderr_only_for_tables(
    fake_apiserver: FakeAPIServer, args: list[str], stdout: str, stderr: str
) -> None:
    kubeconfig = fake_apiserver.kubeconfig_path()
    code, out, err = await _get("configmaps", *args, "--kubeconfig", kubeconfig)
    assert (code, out, err) == (0, stdout, stderr)


# ---------------------------------------------------------------------------------------
# --fake


async def test_fake_lists_its_seeded_pods() -> None:
    code, out, err = await _get("pods", "--fake")
    assert (code, err) == (0, "")
    assert [row[0] for row in _rows(out)] == ["NAME", "api-0", "web-0", "web-1"]


class _ClosedPipe(io.StringIO):
    """stdout whose reader went away (``| head``): every write fails as a pipe does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


async def test_get_exits_quietly_when_its_reader_goes_away(seeded: FakeAPIServer) -> None:
    # In process (in a thread: the fake server runs on this loop), so that the failing
    # write is certain and not up to the platform's pipe buffering.
    err = io.StringIO()
    options = GetOptions(resource="pods", kubeconfig=seeded.kubeconfig_path())
    code = await asyncio.to_thread(run_get, options, out=_ClosedPipe(), err=err)
    assert (code, err.getvalue()) == (0, "")


# ---------------------------------------------------------------------------------------
# Failures


@pytest.mark.parametrize(
    "case",
    [
        "missing-kubeconfig",
        "malformed-kubeconfig",
        "unknown-context",
        "unknown-resource",
        "forbidden-namespace",
        "invalid-label-selector",
        "unreachable-server",
    ],
)
async def test_failures_are_one_clear_line_and_exit_1(
    case: str, fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    args, address = await failing_args(case, fake_apiserver, tmp_path)
    expected = {
        "missing-kubeconfig": "cannot load kubeconfig",
        "malformed-kubeconfig": "bad.yaml",
        "unknown-context": "staging",
        "unknown-resource": "no resource named 'widgets'",
        "forbidden-namespace": 'error from server (Forbidden): pods is forbidden: User "',
        "invalid-label-selector": "(BadRequest)",
        "unreachable-server": address,
    }[case]
    code, out, err = await _get(*args)
    assert code == 1, (out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("aioinformer: error: ")
    assert expected in lines[0]
    if case == "forbidden-namespace":
        assert 'in the namespace "secret"' in lines[0]
