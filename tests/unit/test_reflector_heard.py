"""The reflector's "last heard" bookkeeping and its re-watch count: what
``ReflectorStatistics.seconds_since_heard``, ``watch_restarts`` and
``inactivity_deadline`` report, on a ``FakeClock``, and that the per-event path reads no
clock for them."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.listwatch import ListOptions, ObjectList, WatchEvent
from aioinformer.reflector import DEADLINE_TICKS, Reflector, ReflectorOptions, ReflectorState
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_reflector import HeldStore, RecordingStore
from tests._support_tasks import stop
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Coroutine

DEADLINE = 100.0
TICK = DEADLINE / DEADLINE_TICKS


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}}


def spawn(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(coro)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def reflector_for(lw: Any, clock: FakeClock) -> Reflector:
    # These cases time a LIST's answer and the watch that follows it.
    return Reflector(
        lw,
        RecordingStore(),
        clock=clock,
        options=ReflectorOptions(watch_inactivity_timeout=DEADLINE, use_watch_list=False),
    )


def since(reflector: Reflector) -> float | None:
    return reflector.statistics().seconds_since_heard


async def test_nothing_is_heard_before_the_first_list_answers(clock: FakeClock) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.stall_next_list()
    reflector = reflector_for(lw, clock)
    assert since(reflector) is None
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_list_calls(1)
    await clock.advance(30.0)
    assert since(reflector) is None
    assert reflector.statistics().inactivity_deadline is None  # listing, not watching
    await stop(task)


async def test_a_list_and_a_new_watch_count_as_heard_and_silence_accrues(
    clock: FakeClock,
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = reflector_for(lw, clock)
    await clock.advance(7.0)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    assert since(reflector) == 0.0
    assert reflector.statistics().inactivity_deadline == DEADLINE

    await clock.advance(45.0)
    assert since(reflector) == 45.0
    await stop(task)


async def test_events_and_bookmarks_are_heard_at_the_next_tick_of_the_inactivity_check(
    clock: FakeClock,
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = reflector_for(lw, clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    await clock.advance(3.5 * TICK)
    lw.send_bookmark()
    await wait_until(lambda: reflector.statistics().events == 1)
    assert since(reflector) == 3.5 * TICK  # not stamped by the event itself
    await clock.advance(0.5 * TICK)  # the check at 4 ticks sees the bookmark
    assert since(reflector) == 0.0

    await clock.advance(2 * TICK)
    lw.add(pod("b"))
    await wait_until(lambda: reflector.statistics().events == 2)
    await clock.advance(TICK)
    assert since(reflector) == 0.0
    await stop(task)


class QueueSource:
    """A lister-watcher whose one watch yields whatever the test puts in ``events``."""

    resource = "pods"

    def __init__(self) -> None:
        self.events: asyncio.Queue[WatchEvent] = asyncio.Queue()
        self.watching = asyncio.Event()

    async def list(self, options: ListOptions) -> ObjectList:
        return ObjectList(items=[], resource_version="1")

    async def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        self.watching.set()
        while True:
            yield await self.events.get()


async def test_a_malformed_watch_item_still_counts_as_heard(clock: FakeClock) -> None:
    source = QueueSource()
    reflector = reflector_for(source, clock)
    task = spawn(reflector.list_and_watch())
    await source.watching.wait()

    await clock.advance(5 * TICK)
    source.events.put_nowait(WatchEvent("ADDED", {"kind": "Pod", "metadata": {"name": "x"}}))
    await wait_until(lambda: source.events.empty())
    await clock.advance(TICK)

    assert since(reflector) == 0.0
    assert reflector.statistics().events == 0  # skipped: no resourceVersion
    await stop(task)


async def test_a_silent_stream_is_reopened_and_the_new_watch_is_heard_and_counted(
    clock: FakeClock,
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.stall_next_watch()
    reflector = reflector_for(lw, clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    await clock.advance(DEADLINE - TICK)
    assert since(reflector) == DEADLINE - TICK
    assert reflector.statistics().watch_restarts == 0
    await clock.advance(2 * TICK)
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)

    stats = reflector.statistics()
    assert stats.watch_restarts == 1
    assert stats.relists == 0
    assert stats.seconds_since_heard == TICK  # re-watched at the deadline, a tick ago
    await stop(task)


async def test_restarts_count_rewatches_but_not_the_first_watch_after_a_relist(
    clock: FakeClock,
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(lw, RecordingStore(), clock=clock)
    task = spawn(reflector.run())
    await lw.wait_for_watchers(1)

    lw.add(pod("b"))
    lw.drop_watches()  # a normal end after an event: re-watched at once
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)
    assert reflector.statistics().watch_restarts == 1

    lw.reset_watch()  # ends the watch at once, without events: relist, then a first watch
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    await clock.advance_to_next()
    await wait_until(lambda: reflector.statistics().relists == 1)
    await lw.wait_for_watchers(1)
    stats = reflector.statistics()
    assert stats.state is ReflectorState.WATCHING
    assert stats.watch_restarts == 1  # the watch after the relist is a first watch
    await stop(task)


class CountingClock(FakeClock):
    """A FakeClock that counts its ``monotonic()`` reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def monotonic(self) -> float:
        self.reads += 1
        return super().monotonic()


async def test_reading_events_reads_no_clock() -> None:
    clock = CountingClock()
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = reflector_for(lw, clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    before = clock.reads

    for i in range(200):
        lw.add(pod(f"p{i}"))
    await wait_until(lambda: reflector.last_sync_resource_version == lw.resource_version)

    assert clock.reads == before
    await stop(task)


async def test_a_store_call_holding_the_reader_up_is_not_heard_but_not_timed_out(
    clock: FakeClock,
) -> None:
    store = HeldStore()
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(
        lw, store, clock=clock, options=ReflectorOptions(watch_inactivity_timeout=DEADLINE)
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    lw.add(pod("b"))
    await clock.advance(TICK)  # the check sees the item read: heard
    assert since(reflector) == 0.0

    await clock.advance(2 * DEADLINE)
    assert since(reflector) == 2 * DEADLINE  # the reader is stuck: nothing new is read
    assert len(lw.watch_calls) == 1  # and the stream is not blamed for it
    store.release.set()
    await wait_until(lambda: reflector.last_sync_resource_version == lw.resource_version)
    await stop(task)
