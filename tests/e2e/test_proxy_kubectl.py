"""kubectl, a client no one here wrote, through ``aioinformer proxy``.

The proxy runs as a user runs it (the CLI in a subprocess, serving HTTPS, with a
``--transform`` module and ``--write-kubeconfig``) in front of a fake API server the test
changes directly; kubectl reads through the written kubeconfig alone. kubectl sends no
bearer token over plain HTTP, which is why these tests serve TLS.

What must hold: ``get`` (table), ``get -o json`` and ``get NAME`` show transformed
objects and never a hidden one, while the upstream keeps the originals; ``get -w`` shows
live upstream changes; a wrong token is ``Unauthorized``; writes are refused by default
and reach the upstream with ``--writes forward``: ``create -f`` validated by the upstream
(kubectl reads the proxy's ``/openapi/v3``), and ``create configmap``'s protobuf body
passed through to a fake that serves TLS itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import pytest
import yaml

from aioinformer.testing import eventually
from tests._support_cli import LINE_TIMEOUT, RunningCli, cli_env, pod, started_cli
from tests._support_tls import make_pki

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from aioinformer.testing.apiserver import FakeAPIServer

KUBECTL = shutil.which("kubectl")

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

TRANSFORM = """\
def rewrite(obj):
    if obj["metadata"]["name"].startswith("hidden-"):
        return None
    obj["metadata"].setdefault("labels", {})["served-by"] = "proxy"
    return obj
"""


@dataclass
class _Proxied:
    """A running proxy and how kubectl reaches it."""

    cli: RunningCli
    kubeconfig: Path
    home: Path

    def env(self, kubeconfig: Path | None = None) -> dict[str, str]:
        env = cli_env()
        env["KUBECONFIG"] = str(kubeconfig or self.kubeconfig)
        env["HOME"] = str(self.home)
        return env

    async def kubectl(self, *args: str, kubeconfig: Path | None = None) -> tuple[int, str, str]:
        """Run ``kubectl ARGS``; its exit code, stdout and stderr."""
        assert KUBECTL is not None
        process = await asyncio.create_subprocess_exec(
            KUBECTL,
            "--request-timeout=20s",
            *args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env(kubeconfig),
        )
        async with asyncio.timeout(LINE_TIMEOUT):
            out, err = await process.communicate()
        return process.returncode or 0, out.decode(), err.decode()


def _tls_files(tmp_path: Path) -> list[str]:
    pki = make_pki()
    issued = pki.ca.issue_cert("127.0.0.1")
    cert, key, ca = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
    cert.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    key.write_bytes(issued.private_key_pem.bytes())
    ca.write_text(pki.ca_pem)
    return ["--tls-cert", str(cert), "--tls-key", str(key), "--tls-ca", str(ca)]


@contextlib.asynccontextmanager
async def _proxy(server: FakeAPIServer, tmp_path: Path, *extra: str) -> AsyncIterator[_Proxied]:
    """``aioinformer proxy`` over HTTPS for pods and config maps in front of ``server``,
    with the ``rewrite`` transform and a written kubeconfig."""
    (tmp_path / "kubectl_rewrites.py").write_text(TRANSFORM)
    home = tmp_path / "home"
    home.mkdir()
    kubeconfig = tmp_path / "proxy.kubeconfig"
    async with started_cli(
        "proxy",
        "--kubeconfig",
        server.kubeconfig_path(),
        "--resource",
        "v1/pods",
        "--resource",
        "v1/configmaps",
        "--listen",
        "127.0.0.1:0",
        "--transform",
        "kubectl_rewrites:rewrite",
        "--write-kubeconfig",
        str(kubeconfig),
        *_tls_files(tmp_path),
        *extra,
        cwd=str(tmp_path),
    ) as cli:
        await cli.read_until(lambda line: line.startswith("serving"))
        yield _Proxied(cli, kubeconfig, home)
        code, _, err = await cli.interrupt()
        assert code == 0, err


def _seed(server: FakeAPIServer) -> None:
    for name in ("web-0", "web-1", "hidden-0"):
        server.create(pod(name))


def _names(table: str) -> list[str]:
    lines = table.splitlines()
    assert lines[0].split()[0] == "NAME", table
    return [line.split()[0] for line in lines[1:]]


async def test_kubectl_get_shows_only_transformed_objects(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    _seed(fake_apiserver)
    async with _proxy(fake_apiserver, tmp_path) as proxied:
        code, out, err = await proxied.kubectl("get", "pods")
        assert code == 0, err
        assert _names(out) == ["web-0", "web-1"]

        code, out, err = await proxied.kubectl("get", "pods", "-o", "json")
        assert code == 0, err
        listed = orjson.loads(out)
        assert [item["metadata"]["name"] for item in listed["items"]] == ["web-0", "web-1"]
        assert {item["metadata"]["labels"]["served-by"] for item in listed["items"]} == {"proxy"}
        # The upstream keeps the originals; resourceVersions are the upstream's.
        upstream = {obj["metadata"]["name"]: obj for obj in fake_apiserver.objects("pods")}
        for item in listed["items"]:
            original = upstream[item["metadata"]["name"]]
            assert "served-by" not in original["metadata"]["labels"]
            assert item["metadata"]["resourceVersion"] == original["metadata"]["resourceVersion"]

        code, out, err = await proxied.kubectl("get", "pod", "web-1", "-o", "json")
        assert code == 0, err
        assert orjson.loads(out)["metadata"]["labels"] == {"app": "web-1", "served-by": "proxy"}

        code, out, err = await proxied.kubectl("get", "pod", "hidden-0")
        assert code == 1
        assert "NotFound" in err
        assert '"hidden-0" not found' in err


async def test_kubectl_watch_shows_live_upstream_changes(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    _seed(fake_apiserver)
    async with _proxy(fake_apiserver, tmp_path) as proxied:
        assert KUBECTL is not None
        watch = await asyncio.create_subprocess_exec(
            KUBECTL,
            "get",
            "pods",
            "-w",
            "--output-watch-events",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=proxied.env(),
        )
        watching = RunningCli(watch)
        try:
            await watching.read_until(lambda line: line.split()[:2] == ["ADDED", "web-1"])
            fake_apiserver.create(pod("web-2"))
            fake_apiserver.create(pod("hidden-1"))
            fake_apiserver.delete("pods", "default", "web-0")
            await watching.read_until(lambda line: line.split()[:2] == ["DELETED", "web-0"])
            assert [line.split()[:2] for line in watching.lines[1:]] == [
                ["ADDED", "web-0"],
                ["ADDED", "web-1"],
                ["ADDED", "web-2"],
                ["DELETED", "web-0"],
            ]
        finally:
            watch.kill()
            await watch.communicate()


async def test_kubectl_with_a_wrong_token_is_unauthorized(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    async with _proxy(fake_apiserver, tmp_path) as proxied:
        config = yaml.safe_load(proxied.kubeconfig.read_text())
        assert len(config["users"][0]["user"]["token"]) >= 40
        config["users"][0]["user"]["token"] = "not-the-token"
        wrong = tmp_path / "wrong.kubeconfig"
        wrong.write_text(yaml.safe_dump(config))
        code, _, err = await proxied.kubectl("get", "pods", kubeconfig=wrong)
        assert code == 1
        # As against kube-apiserver: kubectl's discovery is refused first.
        assert "You must be logged in to the server" in err
        # The written kubeconfig is for its owner only: it holds the token.
        assert os.stat(proxied.kubeconfig).st_mode & 0o777 == 0o600


async def test_kubectl_writes_are_refused_by_default(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    _seed(fake_apiserver)
    async with _proxy(fake_apiserver, tmp_path) as proxied:
        code, _, err = await proxied.kubectl("create", "configmap", "x", "--from-literal=a=b")
        assert code == 1
        assert "does not allow this method" in err
        code, _, err = await proxied.kubectl("delete", "pod", "web-0")
        assert code == 1
        assert re.search(r"MethodNotAllowed", err)
        # The OpenAPI documents offer no write: kubectl's validation stops first.
        manifest = tmp_path / "settings.json"
        manifest.write_bytes(
            orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}})
        )
        code, _, err = await proxied.kubectl("apply", "-f", str(manifest))
        assert code == 1
        assert "failed to download openapi" in err
        code, _, err = await proxied.kubectl("apply", "-f", str(manifest), "--validate=false")
        assert code == 1
        assert "MethodNotAllowed" in err
    assert fake_apiserver.objects("configmaps") == []
    assert len(fake_apiserver.objects("pods")) == 3


async def test_kubectl_writes_forwarded_upstream_come_back_transformed(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    _seed(fake_apiserver)
    manifest = tmp_path / "settings.json"
    manifest.write_bytes(
        orjson.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings"},
                "data": {"mode": "blue"},
            }
        )
    )
    async with _proxy(fake_apiserver, tmp_path, "--writes", "forward") as proxied:
        # kubectl's strict validation reads the proxy's /openapi/v3, whose PATCH operations
        # take fieldValidation: the upstream validates.
        code, out, err = await proxied.kubectl("create", "-f", str(manifest))
        assert code == 0, err
        assert "configmap/settings created" in out
        upstream = fake_apiserver.get("configmaps", "default", "settings")
        assert upstream["data"] == {"mode": "blue"}
        assert "labels" not in upstream["metadata"]
        forwarded = [r for r in fake_apiserver.request_log if r.method == "POST"]
        assert forwarded[-1].query["fieldValidation"] == "Strict"

        code, out, err = await proxied.kubectl("label", "configmap", "settings", "team=edge")
        assert code == 0, err
        assert fake_apiserver.get("configmaps", "default", "settings")["metadata"]["labels"] == {
            "team": "edge"
        }

        async def served() -> Any:
            code, out, err = await proxied.kubectl("get", "configmap", "settings", "-o", "json")
            assert code == 0, err
            shown = orjson.loads(out)
            assert "team" in shown["metadata"].get("labels", {})
            return shown

        # A write shows once it comes back through the upstream watch, transformed.
        shown = await eventually(served, timeout=LINE_TIMEOUT, interval=0.2)
        assert shown["metadata"]["labels"] == {"team": "edge", "served-by": "proxy"}
        assert shown["data"] == {"mode": "blue"}

        code, out, err = await proxied.kubectl("delete", "pod", "web-0")
        assert code == 0, err
        assert [p["metadata"]["name"] for p in fake_apiserver.objects("pods")] == [
            "hidden-0",
            "web-1",
        ]


@pytest.mark.fake_apiserver(tls=True)
async def test_kubectl_generators_protobuf_goes_through_to_an_upstream_over_tls(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    # The proxy reaches the fake through its kubeconfig (its CA, its token); kubectl's
    # "create configmap" sends protobuf, passed through byte for byte and decoded there.
    async with _proxy(fake_apiserver, tmp_path, "--writes", "forward") as proxied:
        code, out, err = await proxied.kubectl("create", "configmap", "x", "--from-literal=a=b")
        assert code == 0, err
        assert "configmap/x created" in out
        assert fake_apiserver.get("configmaps", "default", "x")["data"] == {"a": "b"}
        posted = [r for r in fake_apiserver.request_log if r.method == "POST"]
        assert posted[-1].headers["Content-Type"] == "application/vnd.kubernetes.protobuf"

        async def served() -> Any:
            code, out, err = await proxied.kubectl("get", "configmap", "x", "-o", "json")
            assert code == 0, err
            return orjson.loads(out)

        shown = await eventually(served, timeout=LINE_TIMEOUT, interval=0.2)
        assert shown["metadata"]["labels"] == {"served-by": "proxy"}
