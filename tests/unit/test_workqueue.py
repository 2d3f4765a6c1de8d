"""WorkQueue and DelayingQueue: client-go's queue_test.go, delaying_queue_test.go and
metrics_test.go ported, plus asyncio concurrency and cancellation cases."""

from __future__ import annotations

import asyncio
import gc
import math
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import pytest

from aioinformer.errors import QueueEmpty, ShutDown
from aioinformer.workqueue import (
    DelayingQueue,
    QueueStatistics,
    WorkQueue,
    get_metrics_provider,
    set_metrics_provider,
)
from tests._support_gc import only_new_objects
from tests._support_metrics import restore_installed_provider  # noqa: F401
from tests._support_tasks import no_task_outlives_the_test, settle  # noqa: F401

if TYPE_CHECKING:
    from aioinformer.testing import FakeClock

ShutDownCall = Callable[[WorkQueue[object]], Awaitable[None]]


async def _plain_shut_down(queue: WorkQueue[object]) -> None:
    queue.shut_down()


async def _drain_shut_down(queue: WorkQueue[object]) -> None:
    await queue.shut_down_with_drain()


SHUTDOWNS = [
    pytest.param(_plain_shut_down, id="shut_down"),
    pytest.param(_drain_shut_down, id="shut_down_with_drain"),
]


class RecordedMetric:
    """Stands in for a gauge, counter or histogram and remembers every call."""

    def __init__(self) -> None:
        self.incs = 0
        self.decs = 0
        self.value: float | None = None
        self.sets = 0
        self.observations: list[float] = []

    def inc(self) -> None:
        self.incs += 1

    def dec(self) -> None:
        self.decs += 1

    def set(self, value: float) -> None:
        self.value = value
        self.sets += 1

    def observe(self, value: float) -> None:
        self.observations.append(value)

    @property
    def gauge(self) -> float:
        return float(self.incs - self.decs)


class RecordingProvider:
    """A MetricsProvider whose metrics are plain recorders, remembering the names asked."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.depth = RecordedMetric()
        self.adds = RecordedMetric()
        self.latency = RecordedMetric()
        self.work_duration = RecordedMetric()
        self.unfinished = RecordedMetric()
        self.longest = RecordedMetric()
        self.retries = RecordedMetric()

    def new_depth_metric(self, name: str) -> RecordedMetric:
        self.names.append(name)
        return self.depth

    def new_adds_metric(self, name: str) -> RecordedMetric:
        return self.adds

    def new_latency_metric(self, name: str) -> RecordedMetric:
        return self.latency

    def new_work_duration_metric(self, name: str) -> RecordedMetric:
        return self.work_duration

    def new_unfinished_work_seconds_metric(self, name: str) -> RecordedMetric:
        return self.unfinished

    def new_longest_running_processor_seconds_metric(self, name: str) -> RecordedMetric:
        return self.longest

    def new_retries_metric(self, name: str) -> RecordedMetric:
        return self.retries


# -- queue_test.go ---------------------------------------------------------------------


@pytest.mark.parametrize("shut_down", SHUTDOWNS)
async def test_many_producers_and_consumers_process_every_item_and_leave_queue_empty(
    shut_down: ShutDownCall,
) -> None:
    queue: WorkQueue[object] = WorkQueue()
    processed: set[object] = set()
    late = "added after shutdown!"

    async def producer(i: int) -> None:
        for _ in range(50):
            queue.add(i)
            await asyncio.sleep(0)

    async def consumer() -> None:
        while True:
            try:
                item = await queue.get()
            except ShutDown:
                return
            assert item != late
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            processed.add(item)
            queue.done(item)

    async with asyncio.TaskGroup() as tg:
        consumers = [tg.create_task(consumer()) for _ in range(10)]
        async with asyncio.TaskGroup() as producers:
            for i in range(50):
                producers.create_task(producer(i))
        await shut_down(queue)
        queue.add(late)
        await asyncio.gather(*consumers)

    assert len(queue) == 0
    assert processed == set(range(50))


@pytest.mark.parametrize("shut_down", SHUTDOWNS)
async def test_items_re_added_by_their_worker_are_processed_again(
    shut_down: ShutDownCall,
) -> None:
    queue: WorkQueue[object] = WorkQueue()
    handed_out: list[object] = []
    all_handed_out_twice = asyncio.Event()

    for i in range(50):
        queue.add(i)

    counters: dict[object, int] = {}
    in_hand: set[object] = set()

    async def consumer() -> None:
        while True:
            try:
                item = await queue.get()
            except ShutDown:
                return
            assert item not in in_hand, f"{item!r} handed to two workers at once"
            in_hand.add(item)
            handed_out.append(item)
            if len(handed_out) == 100:
                all_handed_out_twice.set()
            counters[item] = counters.get(item, 0) + 1
            if counters[item] < 2:  # the first worker to get an item re-adds it once
                queue.add(item)
            await asyncio.sleep(0)
            in_hand.remove(item)
            queue.done(item)

    async with asyncio.TaskGroup() as tg:
        consumers = [tg.create_task(consumer()) for _ in range(10)]
        await asyncio.wait_for(all_handed_out_twice.wait(), timeout=5)
        await shut_down(queue)
        await asyncio.gather(*consumers)

    assert len(queue) == 0
    assert set(handed_out) == set(range(50))
    assert all(handed_out.count(i) == 2 for i in range(50))


def test_len_counts_distinct_queued_items() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("foo")
    assert len(queue) == 1
    queue.add("bar")
    assert len(queue) == 2
    queue.add("foo")
    assert len(queue) == 2


async def test_item_added_while_processing_is_handed_out_again_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("foo")
    item = await queue.get()
    assert item == "foo"

    queue.add(item)
    assert len(queue) == 0, "an item being processed must not be queued a second time"
    queue.done(item)

    assert await queue.get() == "foo"
    queue.done("foo")
    assert len(queue) == 0


async def test_duplicate_adds_collapse_into_one_item() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("bar")
    queue.add("bar")

    assert await queue.get() == "bar"
    queue.done("bar")
    assert len(queue) == 0
    with pytest.raises(QueueEmpty):
        queue.get_nowait()


async def test_second_worker_waits_for_done_before_getting_re_added_item() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("foo")
    assert await queue.get() == "foo"

    queue.add("foo")
    queue.add("foo")

    async def other_worker() -> str:
        item = await queue.get()
        queue.done(item)
        return item

    worker = asyncio.create_task(other_worker())
    await settle()
    assert not worker.done(), "the worker must wait until the first worker is done"

    queue.done("foo")
    assert await worker == "foo"
    assert len(queue) == 0


async def test_shut_down_with_drain_waits_for_items_in_flight() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("foo")
    queue.add("bar")
    first = await queue.get()
    second = await queue.get()

    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    with pytest.raises(ShutDown):
        await queue.get()
    assert not drain.done()

    queue.done(first)
    await settle()
    assert not drain.done()

    queue.done(second)
    await asyncio.wait_for(drain, timeout=5)


async def test_shut_down_does_not_wait_for_items_in_flight() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("foo")
    queue.add("bar")
    await queue.get()
    await queue.get()

    queue.shut_down()

    assert queue.shutting_down
    assert queue.statistics().processing == 2
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shut_down_cuts_a_drain_short() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("foo")
    queue.add("bar")
    await queue.get()
    await queue.get()

    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    with pytest.raises(ShutDown):
        await queue.get()
    assert not drain.done()

    queue.shut_down()
    await asyncio.wait_for(drain, timeout=5)
    assert queue.statistics().processing == 2


async def test_drain_hands_out_item_re_added_while_in_flight() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("foo")
    gotten = await queue.get()
    queue.add("foo")

    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    with pytest.raises(ShutDown):
        await queue.get()

    queue.done(gotten)
    again = await queue.get()
    assert again == "foo"
    queue.done(again)

    with pytest.raises(ShutDown):
        await queue.get()
    await asyncio.wait_for(drain, timeout=5)


class BigObject:
    """A hashable, weak-referenceable work item."""

    def __init__(self, data: bytes) -> None:
        self.data = data


@pytest.mark.parametrize("named", [False, True], ids=["without_metrics", "with_metrics"])
async def test_processed_item_is_not_kept_alive_by_the_queue(
    named: bool, fake_clock: FakeClock
) -> None:
    provider = RecordingProvider()
    with only_new_objects():
        async with WorkQueue[BigObject](
            name="gc" if named else "", clock=fake_clock, metrics_provider=provider
        ) as queue:
            obj = BigObject(b"hello")
            ref = weakref.ref(obj)
            queue.add(obj)
            queue.done(await queue.get())
            del obj
            gc.collect()
            assert ref() is None


# -- asyncio specifics: concurrency, cancellation, shutdown ------------------------------


async def test_distinct_items_come_out_in_the_order_first_added() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for item in ["c", "a", "b", "a", "c"]:
        queue.add(item)
    assert [queue.get_nowait() for _ in range(3)] == ["c", "a", "b"]


async def test_waiting_getters_each_receive_a_different_item() -> None:
    queue: WorkQueue[int] = WorkQueue()
    getters = [asyncio.create_task(queue.get()) for _ in range(5)]
    await settle()
    assert queue.statistics().waiting_getters == 5

    for i in range(5):
        queue.add(i)
    results = await asyncio.gather(*getters)

    assert sorted(results) == [0, 1, 2, 3, 4]
    assert queue.statistics().processing == 5


async def test_shut_down_wakes_every_waiting_getter() -> None:
    queue: WorkQueue[int] = WorkQueue()
    getters = [asyncio.create_task(queue.get()) for _ in range(4)]
    await settle()

    queue.shut_down()
    results = await asyncio.gather(*getters, return_exceptions=True)

    assert all(isinstance(result, ShutDown) for result in results)
    assert queue.statistics().waiting_getters == 0


async def test_queued_items_are_still_handed_out_after_shut_down() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("b")
    queue.shut_down()
    queue.add("c")

    assert await queue.get() == "a"
    assert queue.get_nowait() == "b"
    with pytest.raises(ShutDown):
        queue.get_nowait()
    with pytest.raises(ShutDown):
        await queue.get()


async def test_cancelled_getter_that_was_woken_passes_the_item_on() -> None:
    queue: WorkQueue[str] = WorkQueue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await settle()

    queue.add("x")  # wakes `first`, which is cancelled before it can run
    first.cancel()

    assert await asyncio.wait_for(second, timeout=5) == "x"
    with pytest.raises(asyncio.CancelledError):
        await first
    assert queue.statistics() == QueueStatistics(
        depth=0, processing=1, delayed=0, waiting_getters=0, shutting_down=False
    )


async def test_cancelled_waiting_getter_takes_nothing_and_leaves_no_waiter() -> None:
    queue: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(queue.get())
    await settle()
    getter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await getter

    queue.add("x")
    assert queue.statistics().waiting_getters == 0
    assert queue.get_nowait() == "x"


async def test_get_is_a_checkpoint_even_with_an_item_ready() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x")
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    task = asyncio.create_task(other())
    await queue.get()
    assert ran == ["other"]
    await task


async def test_get_nowait_raises_queue_empty_when_nothing_is_ready() -> None:
    queue: WorkQueue[str] = WorkQueue()
    with pytest.raises(QueueEmpty):
        queue.get_nowait()
    queue.add("x")
    assert queue.get_nowait() == "x"
    queue.add("x")
    with pytest.raises(QueueEmpty):
        queue.get_nowait()


async def test_done_for_an_item_not_being_processed_changes_nothing() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x")
    queue.done("x")
    queue.done("never-added")

    assert len(queue) == 1
    assert queue.get_nowait() == "x"
    queue.done("x")
    with pytest.raises(QueueEmpty):
        queue.get_nowait()


async def test_cancelled_drain_leaves_queue_shut_down() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("x")
    await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    drain.cancel()
    with pytest.raises(asyncio.CancelledError):
        await drain
    assert queue.shutting_down
    queue.add("y")
    assert len(queue) == 0


async def test_statistics_and_repr_describe_the_queue(fake_clock: FakeClock) -> None:
    async with DelayingQueue[str](name="pods", clock=fake_clock) as queue:
        queue.add("a")
        queue.add("b")
        queue.add_after("c", 5)
        await queue.get()

        assert queue.statistics() == QueueStatistics(
            depth=1, processing=1, delayed=1, waiting_getters=0, shutting_down=False
        )
        assert repr(queue) == (
            "<DelayingQueue 'pods' state=RUNNING depth=1 processing=1 delayed=1>"
        )
        queue.shut_down()
        assert queue.statistics().shutting_down
        assert "state=STOPPED" in repr(queue)


async def test_leaving_async_with_shuts_down_and_waits_for_the_timer(
    fake_clock: FakeClock,
) -> None:
    queue: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    before = asyncio.all_tasks()
    async with queue:
        queue.add_after("a", 1)
        await fake_clock.wait_for_sleepers(1)
        started = asyncio.all_tasks() - before
        assert len(started) == 3  # the timer, and the sleep and the wake-up it races
    assert queue.shutting_down
    assert all(task.done() for task in started)
    assert fake_clock.sleepers == 0


async def test_plain_queue_starts_no_background_task() -> None:
    before = asyncio.all_tasks()
    async with WorkQueue[str]() as queue:
        queue.add("a")
        await queue.get()
        assert asyncio.all_tasks() == before


def test_queue_can_be_filled_before_the_loop_runs(fake_clock: FakeClock) -> None:
    queue: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    queue.add("now")
    queue.add_after("later", 1)

    async def consume() -> list[str]:
        async with queue:
            first = await queue.get()
            await fake_clock.advance(1)
            return [first, await queue.get()]

    assert asyncio.run(consume()) == ["now", "later"]


# -- delaying_queue_test.go ---------------------------------------------------------------


@pytest.fixture
async def delaying(fake_clock: FakeClock) -> AsyncIterator[DelayingQueue[str]]:
    async with DelayingQueue[str](clock=fake_clock) as queue:
        yield queue


async def test_add_after_adds_the_item_once_its_delay_passed(
    delaying: DelayingQueue[str], fake_clock: FakeClock
) -> None:
    delaying.add_after("foo", 0.05)
    await fake_clock.wait_for_sleepers(1)
    assert len(delaying) == 0

    await fake_clock.advance(0.06)
    assert len(delaying) == 1
    delaying.done(await delaying.get())

    await fake_clock.advance(10)
    assert len(delaying) == 0
    assert delaying.statistics().delayed == 0


async def test_add_after_keeps_the_earliest_due_time(
    delaying: DelayingQueue[str], fake_clock: FakeClock
) -> None:
    delaying.add_after("foo", 0.05)
    delaying.add_after("foo", 0.07)
    await fake_clock.wait_for_sleepers(1)
    assert len(delaying) == 0

    await fake_clock.advance(0.06)
    assert len(delaying) == 1
    delaying.done(await delaying.get())

    await fake_clock.advance(0.02)
    assert len(delaying) == 0, "the later add_after must have been merged away"

    delaying.add_after("foo", 0.05)
    delaying.add_after("foo", 0.03)
    await fake_clock.settle()
    assert len(delaying) == 0
    assert delaying.statistics().delayed == 1

    await fake_clock.advance(0.04)
    assert len(delaying) == 1
    delaying.done(await delaying.get())

    await fake_clock.advance(0.02)
    assert len(delaying) == 0


async def test_earlier_item_added_later_fires_first(
    delaying: DelayingQueue[str], fake_clock: FakeClock
) -> None:
    delaying.add_after("foo", 1)
    delaying.add_after("bar", 0.05)
    await fake_clock.wait_for_sleepers(1)
    assert len(delaying) == 0

    await fake_clock.advance(0.06)
    assert len(delaying) == 1
    assert await delaying.get() == "bar"

    delaying.add_after("baz", 2)
    await fake_clock.advance(1)
    assert len(delaying) == 1
    assert await delaying.get() == "foo"

    await fake_clock.advance(2)
    assert len(delaying) == 1
    assert await delaying.get() == "baz"


async def test_items_due_together_are_queued_earliest_first(
    delaying: DelayingQueue[str], fake_clock: FakeClock
) -> None:
    delaying.add_after("foo", 1)
    delaying.add_after("bar", 0.5)
    delaying.add_after("baz", 0.25)
    await fake_clock.settle()
    assert len(delaying) == 0

    await fake_clock.advance(2)

    assert len(delaying) == 3
    assert [await delaying.get() for _ in range(3)] == ["baz", "bar", "foo"]


async def test_earlier_item_wakes_a_timer_sleeping_towards_a_later_one(
    delaying: DelayingQueue[str], fake_clock: FakeClock
) -> None:
    delaying.add_after("late", 10)
    await fake_clock.wait_for_sleepers(1)
    assert fake_clock.next_deadline() == 10

    delaying.add_after("early", 1)
    await fake_clock.settle()
    assert fake_clock.next_deadline() == 1

    await fake_clock.advance(1)
    assert delaying.get_nowait() == "early"
    assert delaying.statistics().delayed == 1
    await fake_clock.advance(9)
    assert delaying.get_nowait() == "late"


async def test_shut_down_with_drain_ends_the_timer(
    delaying: DelayingQueue[str], fake_clock: FakeClock
) -> None:
    delaying.add_after("a", 1)
    await fake_clock.wait_for_sleepers(1)
    timers = [t for t in asyncio.all_tasks() if t.get_name().endswith(" timer")]
    assert len(timers) == 1

    await delaying.shut_down_with_drain()

    assert timers[0].done()
    assert fake_clock.sleepers == 0


@pytest.mark.parametrize("delay", [0, -1.5, math.nan], ids=["zero", "negative", "nan"])
async def test_non_positive_delay_adds_at_once(delaying: DelayingQueue[str], delay: float) -> None:
    delaying.add_after("now", delay)
    assert len(delaying) == 1
    assert delaying.statistics().delayed == 0


async def test_many_delayed_items_come_out_in_due_order(
    delaying: DelayingQueue[str], fake_clock: FakeClock
) -> None:
    delays = {f"item-{i}": ((i * 7919) % 1000) / 100 + 0.01 for i in range(300)}
    for item, delay in delays.items():
        delaying.add_after(item, delay)
    for item, delay in list(delays.items())[:100]:  # earlier times for a third of them
        delaying.add_after(item, delay / 2)
        delays[item] = delay / 2
    await fake_clock.advance(11)

    order = [delaying.get_nowait() for _ in range(len(delays))]
    assert order == sorted(delays, key=lambda item: (delays[item], order.index(item)))
    assert sorted(order) == sorted(delays)


async def test_shut_down_drops_waiting_items_and_ignores_new_ones(
    delaying: DelayingQueue[str], fake_clock: FakeClock
) -> None:
    delaying.add_after("a", 1)
    await fake_clock.wait_for_sleepers(1)

    delaying.shut_down()
    delaying.add_after("b", 1)
    await fake_clock.advance(5)

    assert delaying.statistics().delayed == 0
    assert len(delaying) == 0
    with pytest.raises(ShutDown):
        await delaying.get()


async def test_delayed_item_already_queued_is_not_duplicated(
    delaying: DelayingQueue[str], fake_clock: FakeClock
) -> None:
    delaying.add("a")
    delaying.add_after("a", 1)
    await fake_clock.advance(1)
    assert len(delaying) == 1


# -- metrics_test.go ------------------------------------------------------------------------


async def test_metrics_record_adds_depth_latency_and_work_duration(
    fake_clock: FakeClock,
) -> None:
    provider = RecordingProvider()
    async with WorkQueue[str](name="test", clock=fake_clock, metrics_provider=provider) as queue:
        assert provider.names == ["test"]
        queue.add("foo")
        assert provider.adds.incs == 1
        assert provider.depth.gauge == 1

        await fake_clock.advance(50e-6)
        item = await queue.get()
        assert item == "foo"
        assert provider.latency.observations == [pytest.approx(50e-6)]

        for _ in range(5):  # re-added while processing: counted once
            queue.add(item)
        assert provider.adds.incs == 2
        assert provider.depth.gauge == 1

        await fake_clock.advance(25e-6)
        queue.done(item)
        assert provider.work_duration.observations == [pytest.approx(25e-6)]
        assert provider.depth.gauge == 1

        item = await queue.get()
        assert item == "foo"
        assert provider.latency.observations[-1] == pytest.approx(25e-6)
        assert len(provider.latency.observations) == 2

        await fake_clock.advance(0.5)  # one refresh period of the unfinished-work gauges
        assert provider.unfinished.value == pytest.approx(0.5 - 75e-6)
        assert provider.longest.value == pytest.approx(0.5 - 75e-6)

        queue.done(item)
        assert provider.work_duration.observations[-1] == pytest.approx(0.5)
        assert len(provider.work_duration.observations) == 2


async def test_unfinished_work_gauges_sum_ages_and_track_the_oldest(
    fake_clock: FakeClock,
) -> None:
    provider = RecordingProvider()
    async with WorkQueue[str](name="q", clock=fake_clock, metrics_provider=provider) as queue:
        queue.add("old")
        await queue.get()
        await fake_clock.advance(0.5)  # refresh: "old" is 0.5 s in
        queue.add("new")
        await queue.get()
        await fake_clock.advance(0.5)  # refresh: 1.0 + 0.5
        assert provider.unfinished.value == pytest.approx(1.5)
        assert provider.longest.value == pytest.approx(1.0)


async def test_metric_updates_stop_after_shut_down(fake_clock: FakeClock) -> None:
    provider = RecordingProvider()
    async with WorkQueue[str](name="q", clock=fake_clock, metrics_provider=provider) as queue:
        queue.add("x")
        await fake_clock.wait_for_sleepers(1)
        await fake_clock.advance(0.5)
        assert provider.unfinished.sets == 1

        queue.shut_down()
        await fake_clock.advance(3600)
        assert provider.unfinished.sets == 1
        assert fake_clock.sleepers == 0


async def test_delayed_adds_count_as_retries(fake_clock: FakeClock) -> None:
    provider = RecordingProvider()
    async with DelayingQueue[str](name="q", clock=fake_clock, metrics_provider=provider) as queue:
        queue.add_after("a", 1)
        queue.add_after("a", 2)
        queue.add_after("b", 0)
        queue.add("c")
        assert provider.retries.incs == 3


async def test_unnamed_queue_records_no_metrics(fake_clock: FakeClock) -> None:
    provider = RecordingProvider()
    async with DelayingQueue[str](clock=fake_clock, metrics_provider=provider) as queue:
        queue.add("a")
        queue.add_after("b", 1)
        await queue.get()
    assert provider.names == []
    assert provider.adds.incs == 0
    assert provider.retries.incs == 0


@pytest.mark.usefixtures("restore_installed_provider")
async def test_installed_provider_serves_named_queues_created_later(
    fake_clock: FakeClock,
) -> None:
    provider = RecordingProvider()
    set_metrics_provider(provider)
    assert get_metrics_provider() is provider

    async with WorkQueue[str](name="installed", clock=fake_clock) as queue:
        queue.add("a")
    assert provider.names == ["installed"]
    assert provider.adds.incs == 1

    set_metrics_provider(None)
    async with WorkQueue[str](name="after", clock=fake_clock) as queue:
        queue.add("a")
    assert provider.names == ["installed"]


class BrokenClock:
    """A clock whose sleep fails, as a misbehaving custom clock would."""

    def monotonic(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        raise RuntimeError("the clock broke")


async def test_failing_timer_is_logged_and_does_not_spin(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with DelayingQueue[str](name="broken", clock=BrokenClock()) as queue:
        queue.add_after("x", 1)
        await settle()
        timer = [t for t in asyncio.all_tasks() if t.get_name().endswith(" timer")]
        assert timer == [], "the timer task must end instead of retrying the sleep"
    assert "queue 'broken': background task DelayingQueue[broken] timer failed" in caplog.text
    assert "the clock broke" in caplog.text
