"""The caching proxy over HTTP: what a downstream client sees through it, with a fake API
server upstream (faults and downstream bad input have their own modules)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest
import yaml

from aioinformer import SharedInformerFactory
from aioinformer.client import Client
from aioinformer.config import Config, load_kube_config
from aioinformer.errors import CacheSyncError, UnknownResourceError
from aioinformer.proxy import CachingProxy
from aioinformer.testing import FakeAPIServer, eventually
from aioinformer.testing.clock import FakeClock
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_tls import make_pki

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path


def configmap(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": dict(data),
    }


@pytest.fixture
async def server() -> AsyncIterator[FakeAPIServer]:
    async with FakeAPIServer() as server:
        server.create_namespace("other")
        for i in range(3):
            server.create(configmap(f"cm{i}", i=str(i)))
        server.create(configmap("elsewhere", "other"))
        yield server


@contextlib.asynccontextmanager
async def proxied(server: FakeAPIServer, **options: Any) -> AsyncIterator[CachingProxy]:
    async with (
        server.client() as upstream,
        CachingProxy(
            upstream, resources=options.pop("resources", ["v1/configmaps"]), **options
        ) as proxy,
    ):
        yield proxy


async def read_lines(response: aiohttp.ClientResponse, count: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(5):
        while len(events) < count:
            events.append(orjson.loads(await response.content.readline()))
    return events


async def test_lists_gets_and_discovery_are_answered_from_the_cache(
    server: FakeAPIServer,
) -> None:
    async with proxied(server) as proxy, aiohttp.ClientSession(proxy.url) as http:
        listed = await (await http.get("/api/v1/namespaces/default/configmaps")).json()
        assert listed["kind"] == "ConfigMapList"
        assert [i["metadata"]["name"] for i in listed["items"]] == ["cm0", "cm1", "cm2"]
        assert listed["metadata"]["resourceVersion"] == server.resource_version
        one = await (await http.get("/api/v1/namespaces/default/configmaps/cm1")).json()
        assert (one["kind"], one["data"]) == ("ConfigMap", {"i": "1"})
        everywhere = await (await http.get("/api/v1/configmaps")).json()
        assert len(everywhere["items"]) == 4
        resources = await (await http.get("/api/v1")).json()
        assert [(r["name"], r["verbs"]) for r in resources["resources"]] == [
            ("configmaps", ["get", "list", "watch"])
        ]
        assert (await (await http.get("/apis")).json())["groups"] == []
        version = await (await http.get("/version")).json()
        async with server.client() as direct:
            assert version == await direct.request("GET", "/version")
        missing = await http.get("/api/v1/namespaces/default/configmaps/nope")
        assert missing.status == 404
        assert (await missing.json())["reason"] == "NotFound"
        assert proxy.statistics()["configmaps"].upstream_watches == 1


async def test_a_watch_streams_upstream_changes_with_upstream_resource_versions(
    server: FakeAPIServer,
) -> None:
    async with proxied(server) as proxy, aiohttp.ClientSession(proxy.url) as http:
        rv = server.resource_version
        response = await http.get(
            "/api/v1/namespaces/default/configmaps", params={"watch": "1", "resourceVersion": rv}
        )
        assert response.headers["Content-Type"] == "application/json"
        created = server.create(configmap("new"))
        server.delete("configmaps", "default", "cm0")
        server.create(configmap("ignored", "other"))
        events = await read_lines(response, 2)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "new"),
            ("DELETED", "cm0"),
        ]
        assert (
            events[0]["object"]["metadata"]["resourceVersion"]
            == (created["metadata"]["resourceVersion"])
        )
        response.close()


async def test_a_watch_older_than_the_history_gets_200_and_one_error_event_then_ends(
    server: FakeAPIServer,
) -> None:
    async with proxied(server, history_size=1) as proxy, aiohttp.ClientSession(proxy.url) as http:
        old = server.resource_version
        server.create(configmap("x"))
        rv_of_y = server.create(configmap("y"))["metadata"]["resourceVersion"]
        # The proxy's cache has both writes once it serves the second.
        await eventually(lambda: proxy.statistics()["configmaps"].resource_version == rv_of_y)
        async with http.get(
            "/api/v1/namespaces/default/configmaps", params={"watch": "1", "resourceVersion": old}
        ) as response:
            assert response.status == 200
            async with asyncio.timeout(5):
                body = await response.read()
    assert body.count(b"\n") == 1
    event = orjson.loads(body)
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"].startswith(f"too old resource version: {old} (")


async def test_one_upstream_watch_serves_many_downstream_informers(server: FakeAPIServer) -> None:
    async with proxied(server) as proxy:
        clients = [Client(Config(host=proxy.url)) for _ in range(5)]
        factories = [SharedInformerFactory(client) for client in clients]
        try:
            informers = [f.informer_for("v1/configmaps") for f in factories]
            for factory in factories:
                await factory.start()
            for factory in factories:
                await factory.wait_for_cache_sync(timeout=10)
            server.create(configmap("late"))
            server.patch("configmaps", "default", "cm1", {"data": {"i": "changed"}})

            def converged() -> bool:
                return all(
                    (lister := informer.lister()).get("default/late") is not None
                    and lister.get("default/cm1")["data"] == {"i": "changed"}  # type: ignore[index]
                    for informer in informers
                )

            await eventually(converged)
            assert server.watch_count == 1
            assert proxy.statistics()["configmaps"].watchers == 5
        finally:
            for factory in factories:
                await factory.shutdown()
            for client in clients:
                await client.close()


async def test_the_transform_is_seen_alike_in_list_get_and_watch(server: FakeAPIServer) -> None:
    def rewrite(obj: dict[str, Any]) -> dict[str, Any] | None:
        if obj["metadata"]["name"] == "cm2":
            return None
        obj["data"] = {"routed": "10.0.0.1"}
        return obj

    async with proxied(server, transform=rewrite) as proxy, aiohttp.ClientSession(proxy.url) as h:
        listed = await (await h.get("/api/v1/namespaces/default/configmaps")).json()
        assert {i["metadata"]["name"]: i["data"] for i in listed["items"]} == {
            "cm0": {"routed": "10.0.0.1"},
            "cm1": {"routed": "10.0.0.1"},
        }
        assert (await h.get("/api/v1/namespaces/default/configmaps/cm2")).status == 404
        got = await (await h.get("/api/v1/namespaces/default/configmaps/cm0")).json()
        assert got["data"] == {"routed": "10.0.0.1"}
        response = await h.get(
            "/api/v1/configmaps",
            params={"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"]},
        )
        server.patch("configmaps", "default", "cm2", {"data": {"i": "x"}})
        server.patch("configmaps", "default", "cm1", {"data": {"i": "x"}})
        (event,) = await read_lines(response, 1)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("MODIFIED", "cm1")
        assert event["object"]["data"] == {"routed": "10.0.0.1"}
        assert server.get("configmaps", "default", "cm1")["data"] == {"i": "x"}
        response.close()


async def test_bookmarks_and_timeout_seconds_follow_the_proxy_clock(server: FakeAPIServer) -> None:
    clock = FakeClock()
    async with (
        proxied(server, clock=clock, bookmark_interval=60) as proxy,
        aiohttp.ClientSession(proxy.url) as http,
    ):
        rv = server.resource_version
        response = await http.get(
            "/api/v1/configmaps",
            params={
                "watch": "1",
                "resourceVersion": rv,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "90",
            },
        )
        await eventually(lambda: proxy.statistics()["configmaps"].watchers == 1)
        await clock.advance(60)
        (bookmark,) = await read_lines(response, 1)
        assert bookmark["type"] == "BOOKMARK"
        assert bookmark["object"]["metadata"] == {"resourceVersion": rv}
        await clock.advance(30)
        async with asyncio.timeout(5):
            assert await response.content.read() == b""
        await eventually(lambda: proxy.statistics()["configmaps"].watchers == 0)


async def test_tokens_are_required_when_configured(server: FakeAPIServer) -> None:
    async with proxied(server, tokens=["s3cret"]) as proxy, aiohttp.ClientSession(proxy.url) as h:
        anonymous = await h.get("/api/v1/configmaps")
        assert anonymous.status == 401
        assert (await anonymous.json())["reason"] == "Unauthorized"
        wrong = await h.get("/api/v1/configmaps", headers={"Authorization": "Bearer nope"})
        assert wrong.status == 401
        right = await h.get("/api/v1/configmaps", headers={"Authorization": "Bearer s3cret"})
        assert right.status == 200
        assert (await h.get("/healthz")).status == 200


async def test_https_with_a_written_kubeconfig_serves_our_own_client(
    server: FakeAPIServer, tmp_path: Path
) -> None:
    pki = make_pki()
    async with proxied(server, tokens=["t0ken"], ssl_context=pki.server_context()) as proxy:
        assert proxy.url.startswith("https://127.0.0.1:")
        path = tmp_path / "kubeconfig"
        proxy.write_kubeconfig(str(path), ca_pem=pki.ca_pem)
        written = yaml.safe_load(path.read_text())
        assert written["users"][0]["user"] == {"token": "t0ken"}
        assert path.stat().st_mode & 0o077 == 0
        async with Client(load_kube_config(str(path))) as client:
            page = await client.resource("v1/configmaps", namespace="default").list()
            assert [o["metadata"]["name"] for o in page.items] == ["cm0", "cm1", "cm2"]
        plain = ssl.create_default_context()
        async with aiohttp.ClientSession(proxy.url) as h:
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await h.get("/api", ssl=plain)


async def test_writes_are_refused_or_forwarded_upstream(server: FakeAPIServer) -> None:
    async with proxied(server) as proxy, aiohttp.ClientSession(proxy.url) as h:
        refused = await h.post("/api/v1/namespaces/default/configmaps", json=configmap("w"))
        assert refused.status == 405
        assert (await refused.json())["reason"] == "MethodNotAllowed"
    async with proxied(server, writes="forward") as proxy, aiohttp.ClientSession(proxy.url) as h:
        resources = await (await h.get("/api/v1")).json()
        assert "create" in resources["resources"][0]["verbs"]
        created = await h.post("/api/v1/namespaces/default/configmaps", json=configmap("w"))
        assert created.status == 201
        assert server.get("configmaps", "default", "w")["metadata"]["name"] == "w"
        again = await h.post("/api/v1/namespaces/default/configmaps", json=configmap("w"))
        assert again.status == 409
        assert (await again.json())["reason"] == "AlreadyExists"

        async def listed() -> bool:
            page = await (await h.get("/api/v1/namespaces/default/configmaps/w")).json()
            return bool(page.get("metadata", {}).get("name") == "w")

        await eventually(listed)

        # Bodies, media types and status codes pass through as the upstream answers them.
        patched = await h.patch(
            "/api/v1/namespaces/default/configmaps/w",
            data=b'{"data":{"mode":"blue"}}',
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.status == 200
        assert server.get("configmaps", "default", "w")["data"] == {"mode": "blue"}
        unknown_patch = await h.patch(
            "/api/v1/namespaces/default/configmaps/w",
            data=b"mode: red",
            headers={"Content-Type": "application/yaml"},
        )
        assert unknown_patch.status == 415
        assert (await unknown_patch.json())["reason"] == "UnsupportedMediaType"
        deleted = await h.delete("/api/v1/namespaces/default/configmaps/w")
        assert deleted.status == 200
        assert (await deleted.json())["details"]["name"] == "w"
        assert "w" not in {obj["metadata"]["name"] for obj in server.objects("configmaps")}


async def test_a_namespaced_proxy_forbids_other_namespaces(server: FakeAPIServer) -> None:
    async with proxied(server, namespace="other") as proxy, aiohttp.ClientSession(proxy.url) as h:
        own = await (await h.get("/api/v1/namespaces/other/configmaps")).json()
        assert [i["metadata"]["name"] for i in own["items"]] == ["elsewhere"]
        for path in ("/api/v1/namespaces/default/configmaps", "/api/v1/configmaps"):
            forbidden = await h.get(path)
            assert forbidden.status == 403
            assert 'namespace "other" only' in (await forbidden.json())["message"]


async def test_an_unknown_resource_fails_start_and_leaves_nothing_running(
    server: FakeAPIServer,
) -> None:
    async with server.client() as upstream:
        proxy = CachingProxy(upstream, resources=["v1/configmaps", "gizmos"])
        with pytest.raises(UnknownResourceError, match="gizmos"):
            await proxy.start()


async def test_a_cache_that_cannot_sync_names_its_resource_and_error(
    server: FakeAPIServer,
) -> None:
    server.faults.fail_next(1000, status=403, resource="configmaps")
    async with server.client() as upstream:
        proxy = CachingProxy(upstream, resources=["v1/configmaps"], cache_sync_timeout=0.5)
        with pytest.raises(CacheSyncError, match=r"configmaps.*403"):
            await proxy.start()


def test_plain_http_off_loopback_is_refused() -> None:
    with pytest.raises(ValueError, match="plain HTTP"):
        CachingProxy(
            Client(Config(host="http://127.0.0.1:1")), resources=["v1/pods"], host="0.0.0.0"
        )
    with pytest.raises(ValueError, match="at least one resource"):
        CachingProxy(Client(Config(host="http://127.0.0.1:1")), resources=[])


async def test_readyz_is_503_naming_the_resource_while_its_upstream_watch_is_down(
    server: FakeAPIServer,
) -> None:
    async with proxied(server) as proxy, aiohttp.ClientSession(proxy.url) as h:
        assert (await h.get("/readyz")).status == 200
        await server.faults.refuse_connections()

        async def unready() -> bool:
            answer = await h.get("/readyz")
            return answer.status == 503 and "v1/configmaps: backing_off" in await answer.text()

        await eventually(unready)
        assert proxy.unready()
        listed = await h.get("/api/v1/namespaces/default/configmaps")
        assert listed.status == 200
        await server.faults.accept_connections()

        async def ready() -> bool:
            return (await h.get("/readyz")).status == 200

        await eventually(ready, timeout=10)


async def test_metadata_only_informers_read_through_the_proxy(server: FakeAPIServer) -> None:
    def label(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"].setdefault("labels", {})["via"] = "proxy"
        return obj

    async with (
        proxied(server, transform=label) as proxy,
        Client(Config(host=proxy.url)) as client,
    ):
        listed = await client.resource("v1/configmaps", "default", metadata_only=True).list()
        assert {item["kind"] for item in listed.items} == {"PartialObjectMetadata"}
        assert all("data" not in item for item in listed.items)
        assert all(item["metadata"]["labels"] == {"via": "proxy"} for item in listed.items)

        factory = SharedInformerFactory(client, namespace="default")
        informer = factory.informer_for("v1/configmaps", metadata_only=True)
        async with factory:
            await factory.wait_for_cache_sync(timeout=5)
            server.create(configmap("late", mode="blue"))
            late = await eventually(lambda: informer.indexer.get_by_key("default/late"))
        assert late is not None
        assert late["kind"] == "PartialObjectMetadata"
        assert "data" not in late
        assert late["metadata"]["labels"] == {"via": "proxy"}


async def test_a_close_whose_caller_is_cancelled_still_stops_everything_then_raises_it(
    server: FakeAPIServer,
) -> None:
    async with server.client() as upstream:
        proxy = CachingProxy(upstream, resources=["v1/configmaps"])
        await proxy.start()
        url = proxy.url
        closing = asyncio.create_task(proxy.close())
        await asyncio.sleep(0)  # close() is under way
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        # Nothing listens any more, and no reflector task is left (the autouse fixture).
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.ClientConnectionError):
                await http.get(f"{url}/readyz")
