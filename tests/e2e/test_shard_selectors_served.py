"""Sharded LIST and WATCH (KEP-5866) over HTTP, as kube-apiserver v1.36 serves them behind
its alpha ``ShardedListAndWatch`` gate, from both servers of the kit: the fake API server
with the gate on, and the caching proxy in front of a fake WITHOUT it (the proxy serves
shard selectors from its cache whatever its upstream knows). And the fake with the gate
off, the default, which ignores the parameter as kube-apiserver does."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest

from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.listwatch import ListOptions
from aioinformer.proxy import CachingProxy
from aioinformer.shard_selector import ShardSelector
from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer
from tests._support_http import status_body

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

CONFIGMAPS = "/api/v1/configmaps"
NAMESPACES = ("default", "team-a", "team-b")
COUNT = 12
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
BAD = "shardRange(object.metadata.uid, '0x8000000000000000', '0x0')"
BAD_MESSAGE = (
    "invalid shard selector: shard range start 0x8000000000000000 must be less than end"
    " 0x0000000000000000"
)
GATE_ON = {"ShardedListAndWatch": True}


def configmap(name: str, namespace: str = "default", app: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "data": {"n": name},
    }


def seeded(**options: Any) -> FakeAPIServer:
    """A fake holding ``COUNT`` ConfigMaps over three namespaces, half of them app=web."""
    server = FakeAPIServer(**options)
    for namespace in NAMESPACES[1:]:
        server.create_namespace(namespace)
    for i in range(COUNT):
        app = "web" if i % 2 else "db"
        server.create(configmap(f"cm{i:02}", NAMESPACES[i % 3], app))
    return server


def key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def in_slice(obj: dict[str, Any], selector: ShardSelector) -> bool:
    meta = obj["metadata"]
    return selector.contains(uid=meta["uid"], namespace=meta["namespace"])


def slice_of(
    server: FakeAPIServer, selector: ShardSelector, keep: Callable[[dict[str, Any]], bool] = bool
) -> set[str]:
    return {
        key(obj) for obj in server.objects("configmaps") if in_slice(obj, selector) and keep(obj)
    }


@dataclass
class Served:
    """A server of shard selectors: where it listens, the fake its objects come from, and
    a client of it."""

    url: str
    upstream: FakeAPIServer
    client: Callable[[], Client]
    http: aiohttp.ClientSession

    async def get(
        self, path: str, accept: str | None = None, **params: str
    ) -> tuple[int, dict[str, Any]]:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        if accept is not None:
            headers["Accept"] = accept
        async with self.http.get(self.url + path, params=params, headers=headers) as answer:
            return answer.status, orjson.loads(await answer.read())

    @contextlib.asynccontextmanager
    async def watch(self, path: str, **params: str) -> AsyncIterator[aiohttp.ClientResponse]:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        query = {"watch": "1", **params}
        async with self.http.get(self.url + path, params=query, headers=headers) as answer:
            yield answer


@pytest.fixture(params=["fake", "proxy"])
async def served(request: pytest.FixtureRequest) -> AsyncIterator[Served]:
    """The fake with the gate on, or the proxy in front of a fake with the gate off."""
    gated = request.param == "fake"
    async with (
        seeded(feature_gates={"ShardedListAndWatch": gated}) as upstream,
        aiohttp.ClientSession() as http,
    ):
        if gated:
            yield Served(upstream.url, upstream, upstream.client, http)
            return
        async with (
            upstream.client() as client,
            CachingProxy(client, resources=["v1/configmaps"]) as proxy,
        ):
            yield Served(proxy.url, upstream, lambda: Client(Config(host=proxy.url)), http)


async def events_until(
    answer: aiohttp.ClientResponse, last: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """The watch events read up to and including the first that ``last`` is true of."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(10):
        while not events or not last(events[-1]):
            line = await answer.content.readline()
            assert line, f"the stream ended after {events}"
            events.append(orjson.loads(line))
    return events


def initial_events_end(event: dict[str, Any]) -> bool:
    annotations = event["object"]["metadata"].get("annotations") or {}
    return event["type"] == "BOOKMARK" and annotations.get("k8s.io/initial-events-end") == "true"


# -- LIST ------------------------------------------------------------------------------------


async def test_every_page_of_a_split_lists_its_slice_echoes_it_and_the_union_is_everything(
    served: Served,
) -> None:
    everything = {key(obj) for obj in served.upstream.objects("configmaps")}
    assert len(everything) == COUNT
    for count in (1, 2, 3):
        for limit in range(1, COUNT + 1):
            seen: list[str] = []
            for selector in ShardSelector.split(count):
                params = {"shardSelector": str(selector), "limit": str(limit)}
                while True:
                    code, page = await served.get(CONFIGMAPS, **params)
                    assert code == 200
                    meta = page["metadata"]
                    assert meta["shardInfo"] == {"selector": str(selector)}
                    assert "remainingItemCount" not in meta
                    assert len(page["items"]) <= limit
                    assert all(in_slice(item, selector) for item in page["items"])
                    seen.extend(key(item) for item in page["items"])
                    if "continue" not in meta:
                        break
                    params["continue"] = meta["continue"]
            assert sorted(seen) == sorted(everything), (count, limit)


async def test_a_slice_combines_with_the_namespace_and_the_label_selector(served: Served) -> None:
    for selector in ShardSelector.split(2):
        spelled = str(selector).replace("'", '"').replace(", ", ",")
        code, page = await served.get(
            "/api/v1/namespaces/team-a/configmaps", shardSelector=spelled, labelSelector="app=web"
        )
        assert code == 200
        assert page["metadata"]["shardInfo"] == {"selector": str(selector)}
        expected = slice_of(
            served.upstream,
            selector,
            lambda obj: (
                obj["metadata"]["namespace"] == "team-a"
                and obj["metadata"]["labels"]["app"] == "web"
            ),
        )
        assert {key(item) for item in page["items"]} == expected


async def test_a_metadata_list_is_sharded_and_echoes_the_selector(served: Served) -> None:
    selector = ShardSelector.split(2)[1]
    code, page = await served.get(CONFIGMAPS, accept=META_LIST, shardSelector=str(selector))
    assert (code, page["kind"]) == (200, "PartialObjectMetadataList")
    assert page["metadata"]["shardInfo"] == {"selector": str(selector)}
    assert {item["kind"] for item in page["items"]} == {"PartialObjectMetadata"}
    assert {key(item) for item in page["items"]} == slice_of(served.upstream, selector)


async def test_the_client_reads_back_the_selector_the_server_applied(served: Served) -> None:
    selector = ShardSelector.split(3)[2]
    spelled = str(selector).replace("'", '"').replace("0x0", "0X0", 1)
    async with served.client() as client:
        page = await client.resource("v1/configmaps").list(ListOptions(shard_selector=spelled))
    assert page.shard_selector == str(selector)
    assert {key(item) for item in page.items} == slice_of(served.upstream, selector)


async def test_a_malformed_selector_is_a_500_internal_error_on_list_and_watch(
    served: Served,
) -> None:
    assert await served.get(CONFIGMAPS, shardSelector=BAD) == (
        500,
        status_body(500, "InternalError", BAD_MESSAGE),
    )
    async with served.watch(CONFIGMAPS, shardSelector=BAD) as answer:
        assert answer.status == 500
        assert orjson.loads(await answer.read()) == status_body(500, "InternalError", BAD_MESSAGE)


# -- WATCH -----------------------------------------------------------------------------------


async def test_a_sharded_watch_is_sent_the_events_of_its_slice_only(served: Served) -> None:
    selector = ShardSelector.split(2)[0]
    _, listed = await served.get(CONFIGMAPS, shardSelector=str(selector))
    since = listed["metadata"]["resourceVersion"]
    async with served.watch(CONFIGMAPS, shardSelector=str(selector), resourceVersion=since) as ws:
        assert ws.status == 200
        created: list[dict[str, Any]] = []
        # Written until one lands in the slice: the watch gets that one last, every other
        # of the slice before it, and none of the rest.
        while not created or not in_slice(created[-1], selector):
            i = len(created)
            created.append(served.upstream.create(configmap(f"late{i:02}", NAMESPACES[i % 3])))
        events = await events_until(ws, lambda e: key(e["object"]) == key(created[-1]))
    assert {event["type"] for event in events} == {"ADDED"}
    assert [key(e["object"]) for e in events] == [key(o) for o in created if in_slice(o, selector)]


async def test_a_sharded_streaming_list_sends_its_slice_then_the_initial_events_end(
    served: Served,
) -> None:
    for selector in ShardSelector.split(2, field="object.metadata.namespace"):
        async with served.watch(
            CONFIGMAPS,
            shardSelector=str(selector),
            sendInitialEvents="true",
            allowWatchBookmarks="true",
            resourceVersionMatch="NotOlderThan",
        ) as answer:
            events = await events_until(answer, initial_events_end)
        added = {key(event["object"]) for event in events[:-1]}
        assert {event["type"] for event in events[:-1]} <= {"ADDED"}
        assert added == slice_of(served.upstream, selector)


# -- the gate off ------------------------------------------------------------------------------


async def test_with_the_gate_off_the_fake_ignores_the_selector_malformed_or_not() -> None:
    async with seeded() as server, aiohttp.ClientSession() as http:
        assert dict(server.feature_gates) == {"ShardedListAndWatch": False}
        fake = Served(server.url, server, server.client, http)
        everything = {key(obj) for obj in server.objects("configmaps")}
        for text in (str(ShardSelector.split(4)[0]), BAD):
            code, page = await fake.get(CONFIGMAPS, shardSelector=text, limit="5")
            assert (code, "shardInfo" in page["metadata"]) == (200, False)
            assert page["metadata"]["remainingItemCount"] == COUNT - 5
            async with fake.watch(
                CONFIGMAPS,
                shardSelector=text,
                sendInitialEvents="true",
                allowWatchBookmarks="true",
                resourceVersionMatch="NotOlderThan",
            ) as answer:
                events = await events_until(answer, initial_events_end)
            assert {key(event["object"]) for event in events[:-1]} == everything
        async with server.client() as client:
            options = ListOptions(shard_selector=str(ShardSelector.split(4)[0]))
            page_of_all = await client.resource("v1/configmaps").list(options)
        assert page_of_all.shard_selector is None
        assert {key(item) for item in page_of_all.items} == everything


@pytest.mark.fake_apiserver(feature_gates=GATE_ON)
async def test_the_fixture_takes_the_gate_from_its_marker(fake_apiserver: FakeAPIServer) -> None:
    assert fake_apiserver.feature_gates["ShardedListAndWatch"] is True
