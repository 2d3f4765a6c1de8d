"""Handlers that cannot hide: slow calls are logged once per episode, delivery latency and
slow calls show in statistics(), and sync handlers may run in a worker thread."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.informer import SharedIndexInformer
from aioinformer.processor import (
    Notification,
    NotificationKind,
    ProcessorListener,
    SharedProcessor,
    SlowHandlerThresholds,
)
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_tasks import no_task_outlives_the_test, settle  # noqa: F401
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from aioinformer.testing import FakeClock


# The processor's notification kinds, short.
ADD = NotificationKind.ADD
UPDATE = NotificationKind.UPDATE
DELETE = NotificationKind.DELETE


def pod(name: str, rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": rv}}


class HandClock:
    """A clock that moves only when a handler (or the test) moves it: each call's duration
    is exactly what the call says it took."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(0)


@pytest.fixture
def clock() -> HandClock:
    return HandClock()


@pytest.fixture
async def processor(clock: HandClock) -> AsyncIterator[SharedProcessor]:
    processor = SharedProcessor(clock=clock)
    task = asyncio.create_task(processor.run())
    await asyncio.sleep(0)
    yield processor
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def taking(clock: HandClock, seconds: Callable[[str], float], calls: list[str]) -> Any:
    """A sync on_add that records the pod's name and moves the clock as long as
    ``seconds(name)`` says the call took."""

    def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        name = obj["metadata"]["name"]
        calls.append(name)
        clock.now += seconds(name)

    return on_add


def slow_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno == logging.WARNING and "slow past" in record.getMessage()
    ]


async def test_a_sync_handler_holding_the_loop_is_reported_once_per_slow_episode(
    processor: SharedProcessor, clock: HandClock, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []
    durations = {"slow1": 0.3, "slow2": 0.4, "fast": 0.01, "slow3": 0.2}
    listener = ProcessorListener(name="blocker", on_add=taking(clock, durations.__getitem__, calls))
    processor.add_listener(listener)
    for name in durations:
        processor.distribute(Notification(ADD, pod(name), False), False)
    await wait_until(lambda: len(calls) == 4)

    # slow1 opens an episode, slow2 is inside it, fast ends it, slow3 opens the next.
    assert slow_warnings(caplog) == [
        "event handler blocker held the event loop for 0.300s on add (slow past 0.1s; "
        "further slow calls are counted, not logged, until one is fast again)",
        "event handler blocker held the event loop for 0.200s on add (slow past 0.1s; "
        "further slow calls are counted, not logged, until one is fast again)",
    ]
    assert listener.statistics().slow_calls == 3


async def test_an_async_handler_is_judged_on_its_whole_call_against_the_longer_bound(
    processor: SharedProcessor, clock: HandClock, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    async def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        calls.append(new["metadata"]["name"])
        clock.now += 6.0 if new["metadata"]["name"] == "stuck" else 1.0
        await asyncio.sleep(0)
        returned.append(new["metadata"]["name"])

    returned: list[str] = []
    listener = ProcessorListener(name="awaiter", on_update=on_update)
    processor.add_listener(listener)
    processor.distribute(Notification(UPDATE, pod("io"), pod("io", "2")), False)
    processor.distribute(Notification(UPDATE, pod("stuck"), pod("stuck", "2")), False)
    await wait_until(lambda: len(returned) == 2)
    await settle(1)  # the call's timing is read once it has returned

    assert slow_warnings(caplog) == [
        "event handler awaiter took 6.000s on update (slow past 5.0s; further slow calls "
        "are counted, not logged, until one is fast again)"
    ]
    assert listener.statistics().slow_calls == 1


async def test_an_awaited_call_stuck_past_its_bound_is_reported_while_it_runs(
    processor: SharedProcessor, clock: HandClock, caplog: pytest.LogCaptureFixture
) -> None:
    release = asyncio.Event()
    returned: list[str] = []

    async def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        if obj["metadata"]["name"] == "stuck":
            await release.wait()
        returned.append(obj["metadata"]["name"])

    listener = ProcessorListener(name="waiter", on_add=on_add)
    processor.add_listener(listener)
    processor.distribute(Notification(ADD, pod("stuck"), False), False)
    await settle()
    clock.now = 4.0
    processor.distribute(Notification(ADD, pod("early"), False), False)
    assert slow_warnings(caplog) == []  # 4 s in: under the 5 s bound

    clock.now = 7.5
    processor.distribute(Notification(ADD, pod("waiting"), False), False)
    processor.distribute(Notification(ADD, pod("more"), False), False)
    assert slow_warnings(caplog) == [
        "event handler waiter has been running for 7.500s on add (slow past 5.0s; further "
        "slow calls are counted, not logged, until one is fast again)"
    ]
    release.set()
    await wait_until(lambda: len(returned) == 4)
    await settle(1)
    # The call counts once it returns, in the episode its warning opened.
    assert len(slow_warnings(caplog)) == 1
    assert listener.statistics().slow_calls == 1


async def test_a_handler_can_be_given_its_own_slow_bounds(
    processor: SharedProcessor, clock: HandClock, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []
    listener = ProcessorListener(
        name="patient",
        on_delete=lambda obj: calls.append(obj["metadata"]["name"]),
        on_add=taking(clock, lambda name: 0.3, calls),
        slow_thresholds=SlowHandlerThresholds(loop=0.5),
    )
    processor.add_listener(listener)
    processor.distribute(Notification(ADD, pod("a"), False), False)
    processor.distribute(Notification(DELETE, pod("a"), None), False)
    await wait_until(lambda: len(calls) == 2)
    assert slow_warnings(caplog) == []
    assert listener.statistics().slow_calls == 0


@pytest.mark.parametrize(
    ("loop", "total"), [(0.0, 5.0), (0.1, -1.0)], ids=["zero-loop", "negative-total"]
)
def test_slow_bounds_must_be_positive(loop: float, total: float) -> None:
    with pytest.raises(ValueError, match="must be > 0"):
        SlowHandlerThresholds(loop=loop, total=total)


async def test_delivery_latency_runs_from_queued_to_the_call_returning(
    processor: SharedProcessor, clock: HandClock
) -> None:
    calls: list[str] = []
    listener = ProcessorListener(name="steady", on_add=taking(clock, lambda name: 0.5, calls))
    processor.add_listener(listener)
    stats = listener.statistics()
    assert (stats.latency_p50, stats.latency_p99, stats.latency_max) == (None, None, None)

    # One batch queued at 0: the calls return at 0.5, 1.0 and 1.5.
    with processor.batch():
        for name in ("a", "b", "c"):
            processor.distribute(Notification(ADD, pod(name), False), False)
    await wait_until(lambda: len(calls) == 3)
    # Queued at 10: returns at 10.5.
    clock.now = 10.0
    processor.distribute(Notification(ADD, pod("d"), False), False)
    await wait_until(lambda: len(calls) == 4)

    stats = listener.statistics()
    assert (stats.latency_p50, stats.latency_p99, stats.latency_max) == (0.5, 1.5, 1.5)
    assert stats.pending == 0


async def test_entries_coalesced_away_do_not_shift_the_latency_of_later_ones(
    processor: SharedProcessor, clock: HandClock
) -> None:
    calls: list[str] = []
    sync_on_add = taking(clock, lambda name: 0.5, calls)

    async def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        # Async: delivered by the listener's own task, from its queue.
        sync_on_add(obj, is_in_initial_list)

    listener = ProcessorListener(
        name="coalescing",
        on_add=on_add,
        slow_thresholds=SlowHandlerThresholds(loop=10.0, total=10.0),
        max_pending=1,
        overflow="coalesce",
        key_func=lambda obj: obj["metadata"]["name"],
    )
    processor.add_listener(listener)
    with processor.batch():
        processor.distribute(Notification(ADD, pod("a"), False), False)
        processor.distribute(Notification(ADD, pod("gone"), False), False)
        processor.distribute(Notification(DELETE, pod("gone"), None), False)  # add+delete
    clock.now = 3.0
    processor.distribute(Notification(ADD, pod("c"), False), False)
    await wait_until(lambda: len(calls) == 2)

    # "a" returns at 3.5 (queued at 0), "c" at 4.0 (queued at 3).
    assert calls == ["a", "c"]
    stats = listener.statistics()
    assert (stats.latency_p50, stats.latency_max) == (1.0, 3.5)
    assert stats.coalesced == 1


async def test_a_late_handlers_snapshot_counts_as_queued_when_it_is_added(
    processor: SharedProcessor, clock: HandClock
) -> None:
    calls: list[str] = []
    listener = ProcessorListener(name="late", on_add=taking(clock, lambda name: 0.25, calls))
    # What the informer does for a handler added while it runs: the snapshot goes in
    # first, then the listener joins the processor.
    for name in ("a", "b"):
        listener.add(Notification(ADD, pod(name), True))
    clock.now = 100.0
    processor.add_listener(listener)
    await wait_until(lambda: len(calls) == 2)
    assert listener.statistics().latency_max == 0.5
    assert listener.has_synced()


@pytest.mark.parametrize(
    ("informer_bound", "handler_bound", "slow_calls"),
    [(10.0, None, 0), (10.0, 1.0, 1), (1.0, None, 1)],
    ids=["informer-bound-holds", "handler-bound-wins", "informer-bound-trips"],
)
async def test_an_informer_sets_its_handlers_default_bounds_and_a_handler_its_own(
    fake_clock: FakeClock, informer_bound: float, handler_bound: float | None, slow_calls: int
) -> None:
    source = FakeListerWatcher()
    source.add(pod("a"))
    informer = SharedIndexInformer(
        source,
        clock=fake_clock,
        slow_handler_thresholds=SlowHandlerThresholds(total=informer_bound),
    )
    returned = asyncio.Event()

    async def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        await fake_clock.advance(6.0)
        returned.set()

    registration = informer.add_event_handler(
        on_add=on_add,
        slow_thresholds=None
        if handler_bound is None
        else SlowHandlerThresholds(total=handler_bound),
    )
    async with informer:
        await returned.wait()
        await settle(1)
        assert registration.statistics().slow_calls == slow_calls


# -- a real blocking handler ---------------------------------------------------------------


async def test_a_handler_blocking_the_loop_with_time_sleep_is_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = FakeListerWatcher()
    source.add(pod("a"))
    informer = SharedIndexInformer(source)
    done = asyncio.Event()

    def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        time.sleep(0.3)  # the blocking handler this feature exists to catch
        done.set()

    registration = informer.add_event_handler(on_add=on_add, name="sleeper")
    async with informer:
        await done.wait()
        await wait_until(lambda: registration.statistics().slow_calls == 1)
    [warning] = slow_warnings(caplog)
    assert warning.startswith("event handler sleeper held the event loop for 0.3")
    assert "on add" in warning
    stats = registration.statistics()
    assert stats.latency_max is not None
    assert stats.latency_max >= 0.3


# -- worker threads ------------------------------------------------------------------------


async def test_a_threaded_handler_blocks_its_thread_not_the_loop() -> None:
    source = FakeListerWatcher()
    informer = SharedIndexInformer(source)
    release = threading.Event()
    threads: list[int] = []
    seen: list[str] = []
    other: list[str] = []

    def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        threads.append(threading.get_ident())
        if obj["metadata"]["name"] == "first":
            release.wait(timeout=10)
        seen.append(obj["metadata"]["name"])

    registration = informer.add_event_handler(on_add=on_add, run_in_thread=True, name="thr")
    informer.add_event_handler(on_add=lambda obj, initial: other.append(obj["metadata"]["name"]))
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        for name in ("first", "second", "third"):
            source.add(pod(name))
        # The loop keeps running: the other handler gets every event while this one's
        # first call is still blocked in its thread.
        await wait_until(lambda: other == ["first", "second", "third"])
        await wait_until(lambda: len(threads) == 1, poll=0.001)
        assert seen == []
        assert registration.statistics().pending == 2
        release.set()
        await wait_until(lambda: len(seen) == 3, poll=0.001)
    assert seen == ["first", "second", "third"]  # one call at a time, in order
    assert threading.get_ident() not in threads


async def test_a_threaded_keys_only_handler_gets_keys_in_its_worker_thread() -> None:
    source = FakeListerWatcher()
    source.add(pod("a"))
    informer = SharedIndexInformer(source)
    received: list[tuple[str, bool]] = []

    def on_add(key: str, is_in_initial_list: bool) -> None:
        received.append((key, threading.current_thread() is threading.main_thread()))

    informer.add_event_handler(on_add=on_add, keys_only=True, run_in_thread=True)
    async with informer:
        await wait_until(lambda: bool(received), poll=0.001)
    assert received == [("default/a", False)]


async def test_a_threaded_call_is_judged_on_its_whole_duration(
    processor: SharedProcessor, clock: HandClock, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []
    listener = ProcessorListener(
        name="threaded",
        on_add=taking(clock, {"io": 1.0, "slow": 6.0}.__getitem__, calls),
        run_in_thread=True,
    )
    processor.add_listener(listener)
    processor.distribute(Notification(ADD, pod("io"), False), False)
    processor.distribute(Notification(ADD, pod("slow"), False), False)
    await wait_until(lambda: listener.statistics().slow_calls == 1, poll=0.001)

    # 1 s blocks only the thread: under the 5 s bound that applies, unlike the loop's.
    assert slow_warnings(caplog) == [
        "event handler threaded ran in its worker thread for 6.000s on add (slow past 5.0s; "
        "further slow calls are counted, not logged, until one is fast again)"
    ]


async def test_run_in_thread_refuses_an_async_callback() -> None:
    informer = SharedIndexInformer(FakeListerWatcher())

    async def on_delete(obj: Any) -> None:
        pass

    with pytest.raises(TypeError, match="run_in_thread=True needs sync callbacks; on_delete"):
        informer.add_event_handler(
            on_add=lambda obj, initial: None, on_delete=on_delete, run_in_thread=True
        )


async def test_stopping_leaves_a_threaded_call_to_finish_and_leaves_no_task(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started = threading.Event()
    release = threading.Event()
    finished = threading.Event()

    def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        started.set()
        release.wait(timeout=10)
        finished.set()

    runner = SharedProcessor()
    runner.add_listener(ProcessorListener(name="thr", on_add=on_add, run_in_thread=True))
    task = asyncio.create_task(runner.run())
    runner.distribute(Notification(ADD, pod("a"), False), False)
    await wait_until(started.is_set, poll=0.001)

    task.cancel()
    with caplog.at_level(logging.WARNING), pytest.raises(asyncio.CancelledError):
        await task  # a stuck thread does not hold the stop up
    assert not finished.is_set()
    assert "still running in its worker thread when its informer stopped" in caplog.text
    release.set()
    await asyncio.get_running_loop().run_in_executor(None, finished.wait, 10)
    assert finished.is_set()
