"""The cache-backed client over the fake API server: a read after a write of the same
client finds that write, deletes included, while the server holds its watch events back;
in both cache modes, with the DeltaFIFO and with the in-order queue.

The server and the client's read timeouts run on one :class:`FakeClock`, so held-back
events arrive, and timeouts pass, only when the test moves it: a second at a time while a
read waits, with real time in between for the HTTP, which is real. The server holds each
batch of events back ``LAG`` seconds after the one before it goes out, so a few writes in
a row take a few ``LAG`` to show. The clients' read timeout is far beyond that
(``HANG_BOUND``): it only bounds a hang, however slowly the machine moves the events,
except where a test is about the timeout (``TIMEOUT``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from aioinformer.errors import CacheReadTimeout, CacheScopeError, SelectorError
from aioinformer.factory import SharedInformerFactory
from aioinformer.operator.cached_client import CachedClient
from aioinformer.operator.manager import Manager
from aioinformer.testing import FakeAPIServer, FakeClock
from tests._support_wait import wait_until
from tests.e2e.test_handler_isolation import pod

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable

    from aioinformer.client import Client
    from aioinformer.informer import CacheMode

T = TypeVar("T")

SOCKET_POLL = 0.01
LAG = 5.0
HANG_BOUND = 600.0
TIMEOUT = 30.0


@pytest.fixture(params=[False, True], ids=["delta_fifo", "in_order"])
def in_order(request: pytest.FixtureRequest) -> bool:
    value: bool = request.param
    return value


def configmap(name: str, *, finalizers: list[str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def names(objects: list[Any]) -> list[str]:
    return sorted(obj["metadata"]["name"] for obj in objects)


class Setup:
    """A server on ``clock``, a factory over it, and a cache-backed client timed on the
    same clock."""

    def __init__(
        self,
        server: FakeAPIServer,
        client: Client,
        factory: SharedInformerFactory,
        clock: FakeClock,
    ) -> None:
        self.server = server
        self.client = client
        self.factory = factory
        self.clock = clock
        self.cached = CachedClient(client, factory, timeout=HANG_BOUND, clock=clock)

    async def drive(self, read: Awaitable[T]) -> T:
        """Await ``read`` while moving the clock (see :func:`driven`)."""
        return await driven(self.clock, read)


async def driven(clock: FakeClock, read: Awaitable[T]) -> T:
    """Await ``read`` while moving ``clock`` a second every ``SOCKET_POLL`` of real time
    (for the held-back events to go out and cross the socket); its result."""
    task = asyncio.ensure_future(read)
    await wait_until(task.done, poll=SOCKET_POLL, timeout=30, between=lambda: clock.advance(1))
    return task.result()


@contextlib.asynccontextmanager
async def running(
    cache: CacheMode, in_order: bool, *existing: dict[str, Any], namespace: str | None = None
) -> AsyncIterator[Setup]:
    """Objects ``existing`` on a server, and a started factory whose ConfigMap and Pod
    informers have synced and watch."""
    clock = FakeClock()
    async with FakeAPIServer(clock=clock) as server, server.client() as client:
        for obj in existing:
            server.create(obj)
        async with SharedInformerFactory(
            client, cache=cache, in_order=in_order, namespace=namespace
        ) as factory:
            setup = Setup(server, client, factory, clock)
            setup.cached.resource("configmaps")
            setup.cached.resource("pods")
            await factory.wait_for_cache_sync(timeout=10)
            await server.wait_for_watchers(2)
            yield setup


# -- create, update, patch --------------------------------------------------------------


async def test_a_get_right_after_a_create_finds_it_while_the_watch_holds_it_back(
    cache: CacheMode, in_order: bool
) -> None:
    async with running(cache, in_order) as setup:
        setup.server.faults.delay_watch_events(LAG)
        config_maps = setup.cached.resource("configmaps")
        created = await config_maps.create(configmap("mine", step="1"))
        assert config_maps.informer.lister().get("mine", "default") is None  # stale

        found = await setup.drive(config_maps.get("mine"))
        assert found is not None
        assert found["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        assert setup.cached.statistics().tracked_versions == 0


async def test_a_list_after_an_update_and_a_patch_has_the_new_versions(
    cache: CacheMode, in_order: bool
) -> None:
    async with running(cache, in_order, configmap("a", step="0"), configmap("b")) as setup:
        setup.server.faults.delay_watch_events(LAG)
        config_maps = setup.cached.resource("configmaps")
        current = await config_maps.api.get("a", "default")
        updated = await config_maps.update(current | {"data": {"step": "1"}})
        patched = await config_maps.patch("b", {"data": {"step": "2"}}, "default")

        listed = await setup.drive(config_maps.list("default"))
        versions = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in listed}
        assert versions == {
            "a": updated["metadata"]["resourceVersion"],
            "b": patched["metadata"]["resourceVersion"],
        }
        # A label selector filters what the cache holds.
        await config_maps.patch("a", {"metadata": {"labels": {"app": "web"}}}, "default")
        selected = await setup.drive(config_maps.list(label_selector="app=web"))
        assert names(selected) == ["a"]


# -- delete -----------------------------------------------------------------------------


@pytest.mark.parametrize("resource", ["configmaps", "pods"], ids=["status-answer", "object-answer"])
async def test_a_delete_is_never_visible_to_the_next_read(
    cache: CacheMode, in_order: bool, resource: str
) -> None:
    make = configmap if resource == "configmaps" else pod
    async with running(cache, in_order) as setup:
        api = setup.cached.resource(resource)
        for round_ in range(3):
            name = f"obj-{round_}"
            setup.server.faults.delay_watch_events(0)
            await api.create(make(name))
            assert names(await api.list()) == [name]

            setup.server.faults.delay_watch_events(LAG)
            await api.delete(name)
            # The server's watch still holds the DELETED event back: the cache has it.
            assert api.informer.lister().get(name, "default") is not None
            assert await setup.drive(api.get(name)) is None
            assert await api.list("default") == []
        assert setup.cached.statistics().tracked_deletions == 0


async def test_a_delete_then_a_create_of_the_same_name_reads_the_new_object(
    cache: CacheMode, in_order: bool
) -> None:
    async with running(cache, in_order, configmap("cycled", v="old")) as setup:
        setup.server.faults.delay_watch_events(LAG)
        config_maps = setup.cached.resource("configmaps")
        await config_maps.delete("cycled")
        created = await config_maps.create(configmap("cycled", v="new"))
        found = await setup.drive(config_maps.get("cycled"))
        assert found is not None
        assert found["metadata"]["uid"] == created["metadata"]["uid"]
        assert found["data"] == {"v": "new"}


async def test_deleting_an_object_its_finalizers_hold_reads_it_marked_without_hanging(
    cache: CacheMode, in_order: bool
) -> None:
    held = configmap("held", finalizers=["example.com/hold"])
    async with running(cache, in_order, held) as setup:
        setup.server.faults.delay_watch_events(LAG)
        config_maps = setup.cached.resource("configmaps")
        marked = await config_maps.delete("held")
        assert marked["metadata"]["deletionTimestamp"]

        found = await setup.drive(config_maps.get("held"))
        assert found is not None
        assert found["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
        listed = await setup.drive(config_maps.list())
        assert names(listed) == ["held"]


# -- bounds -----------------------------------------------------------------------------


@pytest.mark.parametrize("write", ["create", "delete"])
async def test_a_write_the_cache_never_receives_times_out_in_bounded_time(
    cache: CacheMode, in_order: bool, write: str
) -> None:
    async with running(cache, in_order, configmap("doomed")) as setup:
        setup.server.faults.delay_watch_events(1000)
        cached = CachedClient(setup.client, setup.factory, timeout=TIMEOUT, clock=setup.clock)
        config_maps = cached.resource("configmaps")
        if write == "create":
            created = await config_maps.create(configmap("lost"))
            awaited = ("default/lost", created["metadata"]["resourceVersion"], None)
        else:
            answer = await config_maps.delete("doomed")
            awaited = ("default/doomed", None, answer["details"]["uid"])

        with pytest.raises(CacheReadTimeout) as raised:
            await setup.drive(config_maps.get(awaited[0].split("/")[1]))
        error = raised.value
        assert (error.key, error.resource_version, error.uid) == awaited
        assert error.resource == "configmaps"
        assert error.timeout == TIMEOUT
        assert TIMEOUT <= setup.clock.monotonic() < TIMEOUT + 2
        assert cached.statistics().timeouts == 1


async def test_another_clients_writes_are_not_waited_for(cache: CacheMode, in_order: bool) -> None:
    async with running(cache, in_order) as setup:
        setup.server.faults.delay_watch_events(LAG)
        writer = setup.cached.resource("configmaps")
        other = CachedClient(setup.client, setup.factory, clock=setup.clock)
        await writer.create(configmap("theirs"))
        # No clock moves: the other client reads the cache as it is, at once.
        assert await other.resource("configmaps").get("theirs") is None
        assert other.statistics().waits == 0
        found = await setup.drive(writer.get("theirs"))
        assert found is not None


# -- scope and start --------------------------------------------------------------------


async def test_reads_outside_the_factorys_namespace_raise_a_scope_error() -> None:
    async with running("compact", False, namespace="default") as setup:
        config_maps = setup.cached.resource("configmaps")
        assert config_maps.namespace == "default"
        with pytest.raises(CacheScopeError, match="namespace 'other' is not in the cache"):
            await config_maps.get("x", "other")
        with pytest.raises(CacheScopeError, match="holds namespace 'default' only"):
            await config_maps.list("other")
        with pytest.raises(SelectorError):
            await config_maps.list(label_selector="a in (")
        assert await config_maps.list() == []


async def test_a_cluster_scoped_resource_reads_its_own_writes_under_a_namespaced_factory(
    cache: CacheMode,
) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    async with running(cache, False, namespace="default") as setup:
        nodes = setup.cached.resource("nodes")
        assert await nodes.list("elsewhere") == []  # a namespace means nothing here
        await setup.server.wait_for_watchers(3)
        setup.server.faults.delay_watch_events(LAG)
        await nodes.create(node)
        assert names(await setup.drive(nodes.list())) == ["n1"]
        await nodes.delete("n1")
        assert nodes.informer.lister().get("n1") is not None
        assert await setup.drive(nodes.get("n1")) is None


async def test_a_resource_read_first_is_started_and_synced_before_it_is_read(
    cache: CacheMode,
) -> None:
    async with running(cache, False) as setup:
        setup.server.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "s", "namespace": "default"},
            }
        )
        secrets = setup.cached.resource("secrets")
        assert names(await secrets.list()) == ["s"]
        assert (await secrets.get("s")) is not None


async def test_a_read_before_the_factory_starts_says_so() -> None:
    async with FakeAPIServer() as server, server.client() as client:
        factory = SharedInformerFactory(client)
        config_maps = CachedClient(client, factory).resource("configmaps")
        with pytest.raises(RuntimeError, match="factory has not been started"):
            await config_maps.get("x")
        await factory.shutdown()


# -- the manager ------------------------------------------------------------------------


async def test_the_managers_client_reads_its_own_writes_in_a_reconcile() -> None:
    clock = FakeClock()
    async with FakeAPIServer(clock=clock) as server, server.client() as client:
        manager = Manager(client)
        config_maps = manager.cached_client.resource("configmaps")
        async with manager:
            await manager.elected.wait()
            await server.wait_for_watchers(1)
            server.faults.delay_watch_events(LAG)
            await config_maps.create(configmap("made"))
            task = asyncio.ensure_future(config_maps.get("made"))
            await wait_until(
                task.done, poll=SOCKET_POLL, timeout=20, between=lambda: clock.advance(1)
            )
            assert task.result() is not None
            await config_maps.delete("made")
            task = asyncio.ensure_future(config_maps.list())
            await wait_until(
                task.done, poll=SOCKET_POLL, timeout=20, between=lambda: clock.advance(1)
            )
            assert task.result() == []
