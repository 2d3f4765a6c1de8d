"""``registration.wait_for_sync()``: a handler's own sync, awaited without polling, and the
Controller's wait on its handlers' registrations.

Informers read from in-memory FakeListerWatchers on a FakeClock; slow handlers are held
by events the test sets, so every ordering is decided by the test, not by timing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aioinformer._kernel.sync import Watched, wait_synced
from aioinformer.errors import CacheSyncError
from aioinformer.informer import SharedIndexInformer
from aioinformer.operator._controller_watches import HandlerSync
from aioinformer.operator.controller import Controller
from aioinformer.reflector import ReflectorOptions
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_tasks import settle


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}}


class Gated:
    """An async ``on_add`` that waits for the test to open its gate before returning."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started: list[str] = []
        self.returned: list[str] = []

    async def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.started.append(obj["metadata"]["name"])
        await self.gate.wait()
        self.returned.append(obj["metadata"]["name"])


async def test_the_wait_returns_only_once_the_last_initial_add_was_handled() -> None:
    source = FakeListerWatcher(objects=[pod(f"p{i}") for i in range(3)])
    informer = SharedIndexInformer(source, clock=FakeClock())
    handler = Gated()
    registration = informer.add_event_handler(handler)
    async with informer:
        waiting = asyncio.create_task(registration.wait_for_sync())
        assert await informer.wait_for_sync(timeout=5)
        await settle()
        # The informer has synced, but the handler is still inside its first call.
        assert handler.started == ["p0"]
        assert not waiting.done()
        assert not registration.has_synced()

        returned_when_done: list[list[str]] = []
        waiting.add_done_callback(lambda _: returned_when_done.append(list(handler.returned)))
        handler.gate.set()
        assert await asyncio.wait_for(waiting, timeout=5) is True
        assert returned_when_done == [["p0", "p1", "p2"]]
        assert registration.has_synced()
        # Synced already: answered at once, without waiting.
        assert await registration.wait_for_sync(timeout=0) is True


async def test_a_handler_added_to_a_synced_informer_waits_for_its_snapshot() -> None:
    source = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(source, clock=FakeClock())
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        handler = Gated()
        registration = informer.add_event_handler(handler)
        waiting = asyncio.create_task(registration.wait_for_sync())
        await settle()
        assert not waiting.done()
        handler.gate.set()
        assert await asyncio.wait_for(waiting, timeout=5) is True
        assert handler.returned == ["a", "b"]


async def test_the_wait_returns_false_at_its_timeout() -> None:
    source = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock())
    handler = Gated()
    registration = informer.add_event_handler(handler)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        assert await registration.wait_for_sync(timeout=0.01) is False
        handler.gate.set()
        assert await registration.wait_for_sync(timeout=5) is True


async def test_the_wait_returns_false_when_the_handler_is_removed_first() -> None:
    source = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock())
    handler = Gated()
    registration = informer.add_event_handler(handler)
    # Removed before the informer even started: the wait ends with it.
    unstarted = informer.add_event_handler(Gated())
    before_start = asyncio.create_task(unstarted.wait_for_sync())
    await settle()
    informer.remove_event_handler(unstarted)
    assert await asyncio.wait_for(before_start, timeout=5) is False
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        waiting = asyncio.create_task(registration.wait_for_sync())
        await settle()
        informer.remove_event_handler(registration)
        assert await asyncio.wait_for(waiting, timeout=5) is False
        assert not registration.has_synced()
        assert await registration.wait_for_sync() is False
        handler.gate.set()


async def test_the_wait_returns_false_when_the_informer_stops_first() -> None:
    source = FakeListerWatcher(objects=[pod("a")])
    source.fail_next_list(*[RuntimeError("no list")] * 100)
    # Plain LISTs, so that the failures scripted above are what it meets.
    informer = SharedIndexInformer(
        source, clock=FakeClock(), reflector=ReflectorOptions(use_watch_list=False)
    )
    registration = informer.add_event_handler(on_add=lambda obj, initial: None)
    async with informer:
        waiting = asyncio.create_task(registration.wait_for_sync())
        await settle()
        assert not waiting.done()
    assert await asyncio.wait_for(waiting, timeout=5) is False


async def test_an_events_stream_syncs_once_its_initial_events_were_taken() -> None:
    source = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(source, clock=FakeClock())
    async with informer, informer.events() as stream:
        waiting = asyncio.create_task(stream.registration.wait_for_sync())
        assert await informer.wait_for_sync(timeout=5)
        first = await anext(stream)
        await settle()
        assert first.object["metadata"]["name"] == "a"
        assert not waiting.done()
        await anext(stream)
        assert await asyncio.wait_for(waiting, timeout=5) is True


async def test_the_controller_reconciles_only_after_its_handler_saw_the_initial_list() -> None:
    count = 5000  # many more than a handler delivers in one turn of the event loop
    source = FakeListerWatcher(objects=[pod(f"p{i}") for i in range(count)])
    informer = SharedIndexInformer(source, clock=FakeClock())
    queued_at_first_reconcile: list[int] = []
    reconciled = asyncio.Event()
    controller: Controller

    def reconcile(key: str) -> None:
        if not queued_at_first_reconcile:
            queue = controller.statistics().queue
            queued_at_first_reconcile.append(queue.depth + queue.processing)
        reconciled.set()

    controller = Controller("pods", reconcile, informers=[informer])
    async with informer, controller:
        await asyncio.wait_for(reconciled.wait(), timeout=5)
    assert queued_at_first_reconcile == [count]


async def test_a_sync_error_says_when_the_handler_lags_behind_a_synced_informer() -> None:
    clock = FakeClock()
    source = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(source, name="pods", clock=clock)
    handler = Gated()
    registration = informer.add_event_handler(handler)
    watched = [Watched.of(HandlerSync(informer, registration))]
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        waiting = asyncio.create_task(wait_synced(watched, timeout=30, clock=clock))
        await clock.wait_for_sleepers(1)
        await clock.advance(30)
        with pytest.raises(CacheSyncError) as raised:
            await asyncio.wait_for(waiting, timeout=5)
        handler.gate.set()
    (record,) = raised.value.unsynced
    assert record.state == "synced"
    assert str(raised.value) == (
        "caches did not sync within 30s: pods (all namespaces): synced, but its handler has"
        " not yet handled the whole initial list"
    )
