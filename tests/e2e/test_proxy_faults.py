"""Downstream clients of the caching proxy stay correct through upstream faults.

An upstream fake API server, a :class:`CachingProxy` in front of it with a transform that
labels objects and hides those labelled ``hide=yes``, and three downstream clients
connected all along: this library's informer, a raw watch stream, and the official
``kubernetes`` Python client's list-then-watch loop (in a thread, as its users run it).
The upstream then loses its connections (the proxy re-watches), loses them with its
history compacted meanwhile (the proxy's watch gets 410 and relists), or restarts; objects
are created, changed, deleted, hidden and revealed while the proxy cannot see them.

After each fault every downstream view equals the upstream's state passed through the
transform, resourceVersions included: nothing lost, no duplicate, no phantom. And no
downstream client relisted: the proxy's relist reached them as events (the raw stream saw
``DELETED`` for what was deleted or hidden during the outage) on the watch they had open.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import aiohttp
import orjson
import pytest
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from kubernetes.client.exceptions import ApiException

from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.factory import SharedInformerFactory
from aioinformer.proxy import CachingProxy
from aioinformer.testing import FakeAPIServer, eventually
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.informer import SharedIndexInformer

Fault = Literal["dropped", "compacted", "restarted"]
View = dict[str, tuple[str, dict[str, str], dict[str, str]]]
"""name -> (resourceVersion, labels, data): what a client's cache says of each object."""

CONVERGE_TIMEOUT = 20.0


def label_and_hide(obj: dict[str, Any]) -> dict[str, Any] | None:
    labels = obj["metadata"].setdefault("labels", {})
    if labels.get("hide") == "yes":
        return None
    labels["via"] = "proxy"
    return obj


def configmap(name: str, *, hide: bool = False, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if hide:
        meta["labels"] = {"hide": "yes"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}


def view_of(objects: Any) -> View:
    return {
        obj["metadata"]["name"]: (
            obj["metadata"]["resourceVersion"],
            dict(obj["metadata"].get("labels") or {}),
            dict(obj.get("data") or {}),
        )
        for obj in objects
    }


def expected(server: FakeAPIServer) -> View:
    """The upstream's objects in ``default`` as the transform serves them."""
    shown = []
    for obj in server.objects("configmaps", "default"):
        transformed = label_and_hide(obj)
        if transformed is not None:
            shown.append(transformed)
    return view_of(shown)


@dataclass
class RawWatch:
    """A watch stream read as any HTTP client would: the list, then one watch that is
    re-opened (counted) if it ever ends."""

    url: str
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[tuple[str, str]] = field(default_factory=list)
    opens: int = 0

    async def run(self) -> None:
        path = f"{self.url}/api/v1/namespaces/default/configmaps"
        async with aiohttp.ClientSession() as http:
            listed = await (await http.get(path)).json()
            self.objects = {item["metadata"]["name"]: item for item in listed["items"]}
            rv = listed["metadata"]["resourceVersion"]
            while True:
                self.opens += 1
                query = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true"}
                async with http.get(path, params=query, timeout=aiohttp.ClientTimeout()) as w:
                    assert w.status == 200, await w.text()
                    async for line in w.content:
                        event = orjson.loads(line)
                        obj = event["object"]
                        rv = obj["metadata"]["resourceVersion"]
                        if event["type"] == "BOOKMARK":
                            continue
                        name = obj["metadata"]["name"]
                        self.events.append((event["type"], name))
                        if event["type"] == "DELETED":
                            self.objects.pop(name, None)
                        else:
                            self.objects[name] = obj


class OfficialClient:
    """The ``kubernetes`` package's informer-less loop, as its users write it: list, then
    watch from the list's resourceVersion with ``Watch().stream`` in short rounds (so the
    thread can be stopped), relisting only on a 410."""

    def __init__(self, url: str) -> None:
        configuration = k8s.Configuration()
        configuration.host = url
        self._api_client = k8s.ApiClient(configuration)
        self._api = k8s.CoreV1Api(self._api_client)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._objects: dict[str, dict[str, Any]] = {}
        self.lists = 0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kubernetes client", daemon=True)

    def view(self) -> View:
        with self._lock:
            return view_of(self._objects.values())

    def _list(self) -> str:
        self.lists += 1
        answer = self._api.list_namespaced_config_map("default", _preload_content=False)
        listed = orjson.loads(answer.data)
        with self._lock:
            self._objects = {item["metadata"]["name"]: item for item in listed["items"]}
        rv: str = listed["metadata"]["resourceVersion"]
        return rv

    def _run(self) -> None:
        try:
            rv = self._list()
            while not self._stop.is_set():
                try:
                    for event in k8s_watch.Watch().stream(
                        self._api.list_namespaced_config_map,
                        "default",
                        resource_version=rv,
                        timeout_seconds=1,
                        _request_timeout=10,
                    ):
                        obj = event["raw_object"]
                        rv = obj["metadata"]["resourceVersion"]
                        with self._lock:
                            if event["type"] == "DELETED":
                                self._objects.pop(obj["metadata"]["name"], None)
                            else:
                                self._objects[obj["metadata"]["name"]] = obj
                except ApiException as exc:
                    if exc.status != 410:
                        raise
                    rv = self._list()
        except BaseException as exc:  # noqa: BLE001 - reported by stop(), in the test's task
            self.error = exc

    def start(self) -> None:
        self._thread.start()

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.to_thread(self._thread.join, 15)
        assert not self._thread.is_alive()
        self._api_client.close()


@dataclass
class Downstream:
    informer: SharedIndexInformer
    raw: RawWatch
    official: OfficialClient

    def views(self) -> dict[str, View]:
        return {
            "informer": view_of(self.informer.indexer.list()),
            "raw watch": view_of(self.raw.objects.values()),
            "kubernetes client": self.official.view(),
        }


@pytest.fixture
async def server() -> AsyncIterator[FakeAPIServer]:
    async with FakeAPIServer() as server:
        for i in range(4):
            server.create(configmap(f"cm-{i}", i=str(i)))
        server.create(configmap("secret-0", hide=True, i="s"))
        yield server


@contextlib.asynccontextmanager
async def connected(server: FakeAPIServer) -> AsyncIterator[tuple[CachingProxy, Downstream]]:
    async with (
        server.client() as upstream,
        CachingProxy(upstream, resources=["v1/configmaps"], transform=label_and_hide) as proxy,
        Client(Config(host=proxy.url)) as client,
    ):
        factory = SharedInformerFactory(client, namespace="default")
        informer = factory.informer_for("v1/configmaps")
        raw = RawWatch(proxy.url)
        official = OfficialClient(proxy.url)
        raw_task = asyncio.create_task(raw.run(), name="raw watch")
        official.start()
        try:
            async with factory:
                await factory.wait_for_cache_sync(timeout=CONVERGE_TIMEOUT)
                downstream = Downstream(informer, raw, official)
                await converged(server, downstream)
                yield proxy, downstream
        finally:
            raw_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await raw_task
            await official.stop()
        assert official.error is None, official.error


async def converged(server: FakeAPIServer, downstream: Downstream) -> None:
    def agree() -> bool:
        want = expected(server)
        return all(view == want for view in downstream.views().values())

    await eventually(agree, timeout=CONVERGE_TIMEOUT, interval=0.05)


def change_everything(server: FakeAPIServer) -> None:
    """A create, an update, a delete, an object hidden, one revealed, one created hidden."""
    server.create(configmap("cm-new", i="new"))
    server.patch("configmaps", "default", "cm-1", {"data": {"i": "changed"}})
    server.delete("configmaps", "default", "cm-2")
    server.patch("configmaps", "default", "cm-3", {"metadata": {"labels": {"hide": "yes"}}})
    server.patch("configmaps", "default", "secret-0", {"metadata": {"labels": {"hide": "no"}}})
    server.create(configmap("secret-1", hide=True, i="s1"))


async def inflict(fault: Fault, server: FakeAPIServer) -> None:
    """``fault``, with :func:`change_everything` happening while the proxy cannot see."""
    await server.faults.refuse_connections()
    change_everything(server)
    if fault == "restarted":
        # Back with its objects but not its watch history.
        await server.restart(reset_history=True)
        return
    if fault == "compacted":
        server.compact()
    await server.faults.accept_connections()


@pytest.mark.parametrize("fault", ["dropped", "compacted", "restarted"])
async def test_every_downstream_cache_converges_without_relisting(
    fault: Fault, server: FakeAPIServer
) -> None:
    async with connected(server) as (proxy, downstream):
        assert set(expected(server)) == {"cm-0", "cm-1", "cm-2", "cm-3"}
        seen_before = len(downstream.raw.events)

        await inflict(fault, server)
        await converged(server, downstream)
        assert set(expected(server)) == {"cm-0", "cm-1", "cm-new", "secret-0"}

        # The changes reached the open watch as events, the outage's deletions and the
        # object hidden meanwhile included.
        after = downstream.raw.events[seen_before:]
        assert ("DELETED", "cm-2") in after
        assert ("DELETED", "cm-3") in after
        assert ("ADDED", "cm-new") in after
        assert ("ADDED", "secret-0") in after
        assert ("MODIFIED", "cm-1") in after
        assert all(name != "secret-1" for _, name in after)

        # A change after the fault flows as before.
        server.create(configmap("cm-after", i="after"))
        await converged(server, downstream)

        # Nobody downstream relisted; one raw watch, never re-opened.
        informer_stats = downstream.informer.statistics().reflector
        assert informer_stats is not None
        assert informer_stats.relists == 0
        assert downstream.official.lists == 1
        assert downstream.raw.opens == 1
        # After a compaction or a restart the proxy's own watch got 410 and it relisted:
        # what the relist taught it reached the clients as events.
        if fault != "dropped":
            assert proxy.statistics()["configmaps"].relists >= 1


async def test_a_watcher_that_stops_reading_is_closed_and_slows_no_one(
    server: FakeAPIServer,
) -> None:
    async with (
        server.client() as upstream,
        CachingProxy(
            upstream, resources=["v1/configmaps"], watcher_buffer=20, flush_interval=0
        ) as proxy,
        aiohttp.ClientSession() as http,
    ):
        path = "/api/v1/namespaces/default/configmaps"
        rv = (await (await http.get(proxy.url + path)).json())["metadata"]["resourceVersion"]
        query = f"{path}?watch=1&resourceVersion={rv}"

        # The stuck client: a tiny receive buffer, the request sent, nothing read.
        stuck = socket.socket()
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.connect(("127.0.0.1", proxy.port))
        reader, writer = await asyncio.open_connection(sock=stuck)
        writer.write(f"GET {query} HTTP/1.1\r\nHost: proxy\r\n\r\n".encode())
        await writer.drain()

        fast = await http.get(proxy.url + query, timeout=aiohttp.ClientTimeout())
        await eventually(lambda: proxy.statistics()["configmaps"].watchers == 2)

        changes = 600
        payload = "x" * 8192
        for i in range(changes):
            server.patch("configmaps", "default", "cm-0", {"data": {"i": f"{i}{payload}"}})
        received = 0
        async with asyncio.timeout(CONVERGE_TIMEOUT):
            while received < changes:
                event = orjson.loads(await fast.content.readline())
                assert event["type"] == "MODIFIED"
                assert event["object"]["data"]["i"] == f"{received}{payload}"
                received += 1
        stats = proxy.statistics()["configmaps"]
        assert stats.slow_watchers_closed == 1
        assert stats.watchers == 1

        # The stuck client's connection was ended: reading it to the end finishes.
        async with asyncio.timeout(CONVERGE_TIMEOUT):
            with contextlib.suppress(ConnectionResetError):
                while await reader.read(1 << 16):
                    pass
        writer.close()
        fast.close()
