"""Clocks that call back: ``call_later`` on the loop's clock and on the fake clock, where a
pending timer is a sleeper like any other, and the fallback for a clock that only sleeps."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioinformer._kernel.clock import CancelAfter, Clock, LoopClock, call_later
from aioinformer.testing import FakeClock

# -- the fake clock ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delays", "order"),
    [
        pytest.param([3.0, 1.0, 2.0], [1, 2, 0], id="by-deadline"),
        pytest.param([1.0, 1.0, 1.0], [0, 1, 2], id="ties-in-scheduling-order"),
        pytest.param([5.0, 0.5], [1], id="only-what-is-due"),
        pytest.param([0.0, 2.0], [0, 1], id="zero-delay-on-the-next-advance"),
    ],
)
async def test_fake_timers_fire_in_deadline_order_at_their_deadline(
    delays: list[float], order: list[int]
) -> None:
    clock = FakeClock()
    fired: list[tuple[int, float]] = []

    def record(index: int) -> None:
        fired.append((index, clock.monotonic()))

    for index, delay in enumerate(delays):
        clock.call_later(delay, functools.partial(record, index))

    await clock.advance(3.0)

    assert fired == [(i, delays[i]) for i in order]
    assert clock.monotonic() == 3.0


async def test_fake_timers_and_sleeping_tasks_share_one_order() -> None:
    clock = FakeClock()
    seen: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        seen.append(name)

    tasks = [
        asyncio.create_task(sleeper("task@2", 2.0)),
        asyncio.create_task(sleeper("task@1", 1.0)),
    ]
    await clock.wait_for_sleepers(2)
    clock.call_later(1.5, lambda: seen.append("timer@1.5"))
    clock.call_later(3.0, lambda: seen.append("timer@3"))

    await clock.advance(5.0)
    await asyncio.gather(*tasks)

    assert seen == ["task@1", "timer@1.5", "task@2", "timer@3"]


async def test_a_cancelled_fake_timer_never_fires_and_stops_counting() -> None:
    clock = FakeClock()
    fired: list[str] = []
    early = clock.call_later(1.0, lambda: fired.append("early"))
    clock.call_later(2.0, lambda: fired.append("late"))
    assert (clock.sleepers, clock.next_deadline()) == (2, 1.0)

    early.cancel()
    early.cancel()  # harmless twice

    assert (clock.sleepers, clock.next_deadline()) == (1, 2.0)
    await clock.advance(5.0)
    assert fired == ["late"]
    assert (clock.sleepers, clock.next_deadline()) == (0, None)


async def test_cancelling_a_fake_timer_after_it_fired_is_harmless() -> None:
    clock = FakeClock()
    fired: list[float] = []
    timer = clock.call_later(1.0, lambda: fired.append(clock.monotonic()))
    await clock.advance(1.0)

    timer.cancel()

    assert fired == [1.0]


async def test_a_fake_timer_scheduling_another_fires_it_within_the_same_advance() -> None:
    clock = FakeClock()
    fired: list[float] = []

    def tick() -> None:
        fired.append(clock.monotonic())
        clock.call_later(1.0, tick)

    clock.call_later(1.0, tick)
    await clock.advance(3.5)

    assert fired == [1.0, 2.0, 3.0]
    assert (clock.sleepers, clock.next_deadline()) == (1, 4.0)


async def test_a_pending_fake_timer_counts_as_a_sleeper() -> None:
    clock = FakeClock()
    waiting = asyncio.create_task(clock.wait_for_sleepers(2, timeout=1.0))
    await clock.settle()
    clock.call_later(4.0, lambda: None)
    await clock.settle()
    assert not waiting.done()

    sleeping = asyncio.create_task(clock.sleep(2.0))
    await waiting

    assert clock.sleepers == 2
    assert await clock.advance_to_next() == 2.0
    await sleeping
    assert clock.sleepers == 1
    assert await clock.advance_to_next() == 4.0
    assert clock.sleepers == 0
    assert repr(clock) == "<FakeClock now=4.000 sleepers=0>"


async def test_a_failing_fake_timer_is_reported_and_time_moves_on() -> None:
    clock = FakeClock()
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: reported.append(context))
    fired: list[str] = []

    def broken() -> None:
        raise RuntimeError("broken timer")

    try:
        clock.call_later(1.0, broken)
        clock.call_later(2.0, lambda: fired.append("after"))
        await clock.advance(2.0)
    finally:
        loop.set_exception_handler(None)

    assert [type(context["exception"]) for context in reported] == [RuntimeError]
    assert fired == ["after"]


@given(delays=st.lists(st.floats(min_value=0.0, max_value=100.0), max_size=20))
def test_fake_timers_fire_sorted_by_deadline_then_scheduling(delays: list[float]) -> None:
    async def run() -> list[tuple[float, int]]:
        clock = FakeClock()
        fired: list[tuple[float, int]] = []

        def record(index: int) -> None:
            fired.append((clock.monotonic(), index))

        for index, delay in enumerate(delays):
            clock.call_later(delay, functools.partial(record, index))
        await clock.advance(100.0)
        return fired

    assert asyncio.run(run()) == sorted((delay, i) for i, delay in enumerate(delays))


# -- the loop's clock ----------------------------------------------------------------------


async def test_loop_timers_fire_in_deadline_order_and_cancel() -> None:
    clock = LoopClock()
    fired: list[str] = []
    done = asyncio.Event()
    clock.call_later(0.02, lambda: fired.append("b"))
    cancelled = clock.call_later(0.01, lambda: fired.append("cancelled"))
    clock.call_later(0.0, lambda: fired.append("a"))
    clock.call_later(-1.0, lambda: fired.append("a2"))
    clock.call_later(0.03, done.set)

    cancelled.cancel()
    async with asyncio.timeout(5):
        await done.wait()

    assert fired == ["a", "a2", "b"]


async def test_a_loop_timer_can_schedule_the_next_one() -> None:
    clock = LoopClock()
    fired: list[float] = []
    done = asyncio.Event()

    def tick() -> None:
        fired.append(clock.monotonic())
        if len(fired) < 3:
            clock.call_later(0.005, tick)
        else:
            done.set()

    start = clock.monotonic()
    clock.call_later(0.005, tick)
    async with asyncio.timeout(5):
        await done.wait()

    assert len(fired) == 3
    assert fired == sorted(fired)
    assert fired[0] >= start


# -- a clock that only sleeps --------------------------------------------------------------


class SleepOnlyClock:
    """A clock written against the two-method protocol: time comes from a fake clock."""

    def __init__(self, inner: FakeClock) -> None:
        self.inner = inner

    def monotonic(self) -> float:
        return self.inner.monotonic()

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


@pytest.mark.parametrize("cancel", [False, True], ids=["fires", "cancelled"])
async def test_call_later_on_a_clock_that_only_sleeps_sleeps_on_it(cancel: bool) -> None:
    inner = FakeClock()
    clock: Clock = SleepOnlyClock(inner)
    fired: list[float] = []

    timer = call_later(clock, 2.0, lambda: fired.append(inner.monotonic()))
    await inner.wait_for_sleepers(1)
    if cancel:
        timer.cancel()
        await inner.settle()
    await inner.advance(3.0)

    assert fired == ([] if cancel else [2.0])
    assert inner.sleepers == 0


async def test_call_later_uses_the_clocks_own_method_when_it_has_one() -> None:
    clock = FakeClock()
    fired: list[float] = []

    call_later(clock, 1.0, lambda: fired.append(clock.monotonic()))

    assert clock.sleepers == 1
    await clock.advance(1.0)
    assert fired == [1.0]


async def test_a_failing_timer_on_a_clock_that_only_sleeps_is_reported() -> None:
    inner = FakeClock()
    clock: Clock = SleepOnlyClock(inner)
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: reported.append(context))

    def broken() -> None:
        raise RuntimeError("broken timer")

    try:
        call_later(clock, 1.0, broken)
        await inner.wait_for_sleepers(1)
        await inner.advance(1.0)
    finally:
        loop.set_exception_handler(None)

    assert [type(context["exception"]) for context in reported] == [RuntimeError]


# -- CancelAfter: asyncio.timeout on a clock ------------------------------------------------


async def test_cancel_after_turns_its_deadline_into_a_timeout_error() -> None:
    clock = FakeClock()
    deadline = CancelAfter(clock, 5.0)

    async def body() -> None:
        with deadline:
            await asyncio.Event().wait()

    task = asyncio.ensure_future(body())
    await clock.wait_for_sleepers(1)
    await clock.advance(4.9)
    assert not task.done()
    await clock.advance(0.1)
    with pytest.raises(TimeoutError, match="timed out after 5s") as raised:
        await task
    assert isinstance(raised.value.__cause__, asyncio.CancelledError)
    assert deadline.timed_out
    assert task.cancelling() == 0


async def test_cancel_after_left_in_time_calls_the_deadline_off() -> None:
    clock = FakeClock()
    with CancelAfter(clock, 5.0) as deadline:
        await asyncio.sleep(0)
    assert clock.sleepers == 0
    await clock.advance(10)
    assert not deadline.timed_out
    current = asyncio.current_task()
    assert current is not None
    assert current.cancelling() == 0


async def test_an_outside_cancellation_passes_through_cancel_after() -> None:
    clock = FakeClock()
    deadline = CancelAfter(clock, 5.0)
    entered = asyncio.Event()

    async def body() -> None:
        with deadline:
            entered.set()
            await asyncio.Event().wait()

    task = asyncio.ensure_future(body())
    await entered.wait()
    task.cancel()
    await clock.advance(5)  # the deadline passes too, before the task has run again
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not deadline.timed_out


async def test_cancel_after_is_entered_once_and_inside_a_task() -> None:
    deadline = CancelAfter(FakeClock(), 1.0)
    with deadline, pytest.raises(RuntimeError, match="entered once"), deadline:
        pass
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[BaseException] = loop.create_future()

    def enter_outside_a_task() -> None:
        try:
            CancelAfter(FakeClock(), 1.0).__enter__()
        except RuntimeError as error:
            outcome.set_result(error)

    loop.call_soon(enter_outside_a_task)
    assert "inside a task" in str(await outcome)
