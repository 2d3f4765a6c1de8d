"""``aioinformer proxy`` run as a user runs it: a subprocess, in front of an embedded fake
(``--fake``) or a fake API server the test starts (``--kubeconfig``).

It must print one line once it serves, answer lists and watches from its cache with the
``--transform`` applied, accept only ``--token-file``'s tokens, write a kubeconfig its
clients can use, stop with exit 0 on SIGINT, and report each failure it knows about as
one line on stderr (exit 1; exit 2 for options that cannot work).
"""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import pytest

from aioinformer.client import Client
from aioinformer.config import Config, load_kube_config
from aioinformer.factory import SharedInformerFactory
from aioinformer.testing import eventually
from tests._support_cli import LINE_TIMEOUT, failing_args, pod, started_cli

if TYPE_CHECKING:
    from aioinformer.testing.apiserver import FakeAPIServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SERVING = re.compile(r"^serving (?P<what>.+) at (?P<url>\S+) \(one upstream watch per resource\)")

TRANSFORM = """\
def mark(obj):
    if obj["metadata"]["name"] == "api-0":
        return None
    obj["metadata"].setdefault("labels", {})["via"] = "proxy"
    return obj
"""


def _transform_module(tmp_path: Path, name: str) -> dict[str, str]:
    """Write the ``mark`` transform as ``NAME.py`` in ``tmp_path``; the subprocess's
    working directory (as keyword arguments for ``started_cli``)."""
    (tmp_path / f"{name}.py").write_text(TRANSFORM)
    return {"cwd": str(tmp_path)}


async def test_fake_proxy_serves_transformed_objects_and_live_changes(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "clients.yaml"
    async with started_cli(
        "proxy",
        "--fake",
        "--resource",
        "v1/pods",
        "--resource",
        "v1/endpoints",
        "--listen",
        "127.0.0.1:0",
        "--transform",
        "cli_proxy_marks:mark",
        "--write-kubeconfig",
        str(kubeconfig),
        **_transform_module(tmp_path, "cli_proxy_marks"),
    ) as cli:
        line = await cli.read_until(lambda text: text.startswith("serving"))
        match = SERVING.match(line)
        assert match is not None, line
        assert match["what"] == "v1/pods, v1/endpoints"
        assert line.endswith(f"; clients' kubeconfig: {kubeconfig}")
        assert kubeconfig.stat().st_mode & 0o777 == 0o600

        config = load_kube_config(str(kubeconfig))
        assert config.host == match["url"]
        async with Client(config) as client:
            pods = await client.resource("v1/pods").list()
            names = sorted(p["metadata"]["name"] for p in pods.items)
            # The seed's five pods, less the hidden one, every one carrying the label.
            assert "api-0" not in names
            assert {"web-0", "web-1", "coredns-0", "metrics-0"} <= set(names)
            assert all(p["metadata"]["labels"]["via"] == "proxy" for p in pods.items)

            # The embedded fake moves the web Endpoints every second: a watch through
            # the proxy sees it, transformed.
            factory = SharedInformerFactory(client, namespace="default")
            endpoints = factory.informer_for("v1/endpoints")
            versions: list[str] = []
            endpoints.add_event_handler(
                on_update=lambda _, new: versions.append(new["metadata"]["resourceVersion"])
            )
            async with factory:
                await factory.wait_for_cache_sync(timeout=LINE_TIMEOUT)
                await eventually(lambda: len(versions) >= 2, timeout=LINE_TIMEOUT)
            web = endpoints.indexer.get_by_key("default/web")
            assert web is not None
            assert web["metadata"]["labels"]["via"] == "proxy"

        code, out, err = await cli.interrupt()
    assert code == 0, err
    assert out == ""
    assert cli.lines == [line]


async def test_proxy_in_front_of_a_cluster_requires_its_tokens(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    fake_apiserver.create(pod("web-0"))
    tokens = tmp_path / "tokens"
    tokens.write_text("# downstream clients\nsecret-one\nsecret-two\n")
    async with started_cli(
        "proxy",
        "--kubeconfig",
        fake_apiserver.kubeconfig_path(),
        "--resource",
        "pods",
        "-n",
        "default",
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        str(tokens),
    ) as cli:
        match = SERVING.match(await cli.read_until(lambda text: text.startswith("serving")))
        assert match is not None
        url = match["url"]
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{url}/api/v1/namespaces/default/pods") as response:
                assert response.status == 401
                assert (await response.json())["reason"] == "Unauthorized"
            wrong = {"Authorization": "Bearer secret-three"}
            async with session.get(f"{url}/api/v1/pods", headers=wrong) as response:
                assert response.status == 401
            right = {"Authorization": "Bearer secret-two"}
            async with session.get(
                f"{url}/api/v1/namespaces/default/pods", headers=right
            ) as response:
                assert response.status == 200
                body = await response.json()
            assert [p["metadata"]["name"] for p in body["items"]] == ["web-0"]
            # -n scopes the proxy: another namespace is forbidden, whatever the token.
            async with session.get(
                f"{url}/api/v1/namespaces/kube-system/pods", headers=right
            ) as response:
                assert response.status == 403
            # A change upstream reaches a watch through the proxy.
            query = f"watch=1&resourceVersion={body['metadata']['resourceVersion']}"
            async with session.get(
                f"{url}/api/v1/namespaces/default/pods?{query}", headers=right
            ) as watch:
                assert watch.status == 200
                fake_apiserver.create(pod("web-1"))
                async with asyncio.timeout(LINE_TIMEOUT):
                    event = await watch.content.readline()
            assert b'"ADDED"' in event
            assert b'"web-1"' in event
        code, _, err = await cli.interrupt()
    assert code == 0, err
    # One upstream watch for the proxy, whatever its clients did.
    assert fake_apiserver.watch_count <= 1


@pytest.mark.parametrize(
    "case",
    ["missing-kubeconfig", "unknown-resource", "forbidden-namespace", "unreachable-server"],
)
async def test_proxy_failures_are_one_clear_line_and_exit_1(
    case: str, fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    args, address = await failing_args(case, fake_apiserver, tmp_path)
    expected = {
        "missing-kubeconfig": "nope.yaml",
        "unknown-resource": "widgets",
        "forbidden-namespace": "forbidden",
        "unreachable-server": address,
    }[case]
    resource, *rest = args
    async with started_cli(
        "proxy", "--resource", resource, *rest, "--listen", "127.0.0.1:0"
    ) as cli:
        line = await cli.failure_line()
    assert expected in line


async def test_plain_http_off_loopback_and_a_taken_port_are_refused() -> None:
    async with started_cli("proxy", "--fake", "--resource", "pods", "--listen", "0.0.0.0:0") as cli:
        line = await cli.failure_line(code=2)
    assert line.startswith("aioinformer: error: refusing to serve plain HTTP on '0.0.0.0'")

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with started_cli(
            "proxy", "--fake", "--resource", "pods", "--listen", f"127.0.0.1:{port}"
        ) as cli:
            line = await cli.failure_line()
    assert line.startswith(f"aioinformer: error: cannot listen on 127.0.0.1:{port}")


async def test_the_ingress_example_transform_serves_from_the_command_line() -> None:
    async with started_cli(
        "proxy",
        "--fake",
        "--resource",
        "v1/endpoints",
        "--listen",
        "127.0.0.1:0",
        "--transform",
        "rewrite_endpoints:to_router",
        cwd=str(EXAMPLES),
    ) as cli:
        match = SERVING.match(await cli.read_until(lambda text: text.startswith("serving")))
        assert match is not None
        async with Client(Config(host=match["url"])) as client:
            listed = await client.resource("v1/endpoints", "default").list()
        served = {obj["metadata"]["name"]: obj for obj in listed.items}
        assert set(served) == {"web", "api"}
        for obj in served.values():
            assert obj["subsets"] == [
                {
                    "addresses": [{"ip": "10.0.0.100"}],
                    "ports": [{"name": "http", "port": 8443, "protocol": "TCP"}],
                }
            ]
            assert obj["metadata"]["annotations"]["router.example.com/backends"]
        code, _, err = await cli.interrupt()
    assert code == 0, err


async def test_a_signal_before_it_serves_abandons_the_start(fake_apiserver: FakeAPIServer) -> None:
    # Every upstream request hangs: the proxy is still resolving its resource.
    fake_apiserver.faults.latency(600)
    async with started_cli(
        "proxy",
        "--kubeconfig",
        fake_apiserver.kubeconfig_path(),
        "--resource",
        "pods",
        "--listen",
        "127.0.0.1:0",
    ) as cli:
        await fake_apiserver.faults.wait_for("latency", timeout=LINE_TIMEOUT)
        code, out, err = await cli.interrupt()
    assert code == 130, err
    assert out == ""
    assert err == ""
