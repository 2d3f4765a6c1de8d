"""Read-your-own-writes over the fake API server: a write through ``ResourceClient``, then
``informer.wait_for_resource_version`` with the write's resourceVersion, then the lister
has it, even while the server holds every watch event back; and a bookmark on a resource
nobody writes moves ``last_store_resource_version`` forward. Each runs with the
DeltaFIFO and with the in-order queue (``in_order=True``).

The server runs on a :class:`FakeClock`, so held-back events and bookmarks arrive only when
the test moves that clock; the HTTP between server and informer is real, so waits for it
are polled, bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import pytest

from aioinformer.informer import SharedIndexInformer
from aioinformer.testing import FakeAPIServer, FakeClock
from tests._support_wait import wait_until
from tests.e2e.test_frozen_watch import configmap

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import ResourceClient

SOCKET_POLL = 0.005
LAG = 5.0

pytestmark = pytest.mark.parametrize("in_order", [False, True], ids=["delta_fifo", "in_order"])


@contextlib.asynccontextmanager
async def running(
    clock: FakeClock, *existing: str, in_order: bool
) -> AsyncIterator[tuple[FakeAPIServer, ResourceClient, SharedIndexInformer]]:
    """A server on ``clock`` holding ConfigMaps named ``existing``, and a ConfigMap
    informer over it (in order or not), synced and watching."""
    async with FakeAPIServer(clock=clock) as server, server.client() as client:
        for name in existing:
            server.create(configmap(name))
        configmaps = client.resource("configmaps")
        async with SharedIndexInformer(configmaps, in_order=in_order) as informer:
            assert await informer.wait_for_sync(timeout=10)
            await server.wait_for_watchers(1)
            yield server, configmaps, informer


async def wait_driving_the_clock(
    informer: SharedIndexInformer, clock: FakeClock, rv: str
) -> tuple[bool, float]:
    """Wait for ``rv`` while moving the server's clock a second at a time; the result, and
    how far the clock moved."""
    waiting = asyncio.create_task(informer.wait_for_resource_version(rv, timeout=10))
    started = clock.monotonic()
    await wait_until(waiting.done, poll=SOCKET_POLL, timeout=10, between=lambda: clock.advance(1.0))
    return waiting.result(), clock.monotonic() - started


async def test_a_write_is_read_back_from_the_lister_after_waiting_for_its_version(
    in_order: bool,
) -> None:
    clock = FakeClock()
    async with running(clock, "before", in_order=in_order) as (server, configmaps, informer):
        server.faults.delay_watch_events(LAG)

        created = await configmaps.create(configmap("mine", step="1"))
        rv = created["metadata"]["resourceVersion"]
        # The server answered, but its watch holds the event back: the cache is stale.
        assert informer.lister().get("mine", namespace="default") is None
        assert await informer.wait_for_resource_version(rv, timeout=0) is False

        applied, waited = await wait_driving_the_clock(informer, clock, rv)
        assert applied is True
        assert waited >= LAG
        cached = informer.lister().get("mine", namespace="default")
        assert cached is not None
        assert cached["metadata"]["resourceVersion"] == rv
        assert cached["data"] == {"step": "1"}

        # An update, read back the same way.
        updated = await configmaps.update(created | {"data": {"step": "2"}})
        new_rv = updated["metadata"]["resourceVersion"]
        applied, _ = await wait_driving_the_clock(informer, clock, new_rv)
        assert applied is True
        cached = informer.lister().get("mine", namespace="default")
        assert cached is not None
        assert cached["data"] == {"step": "2"}
        assert informer.last_store_resource_version == new_rv


async def test_a_wait_ends_false_when_the_informer_stops_first(in_order: bool) -> None:
    clock = FakeClock()
    async with running(clock, in_order=in_order) as (server, configmaps, informer):
        server.faults.delay_watch_events(LAG)
        created = await configmaps.create(configmap("late"))
        waiting = asyncio.create_task(
            informer.wait_for_resource_version(created["metadata"]["resourceVersion"])
        )
        await asyncio.sleep(0)
        assert not waiting.done()
    assert await waiting is False


async def test_waiting_for_a_version_that_cannot_be_compared_raises(in_order: bool) -> None:
    async with running(FakeClock(), in_order=in_order) as (_, _, informer):
        with pytest.raises(ValueError, match="not comparable"):
            await informer.wait_for_resource_version("")


async def test_a_bookmark_moves_an_idle_resources_store_version_forward(in_order: bool) -> None:
    clock = FakeClock()
    async with running(clock, "quiet", in_order=in_order) as (server, _, informer):
        listed = informer.last_store_resource_version
        assert listed == server.resource_version

        # A write elsewhere moves the server's version; no ConfigMap changes.
        server.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "s", "namespace": "default"},
            }
        )
        newest = server.resource_version
        assert int(newest) > int(listed)
        waiting = asyncio.create_task(informer.wait_for_resource_version(newest))
        await clock.advance(server.bookmark_interval)
        await wait_until(waiting.done, poll=SOCKET_POLL, timeout=10)
        assert waiting.result() is True
        assert informer.last_store_resource_version == newest
        assert informer.last_sync_resource_version == newest
        assert len(informer.lister().list()) == 1
