"""``aioinformer.operator.retry``: client-go's ``util/retry`` tests ported (a function that always
conflicts, one that succeeds at once, one that fails otherwise, one that conflicts twice),
plus the backoff's waits, read off a clock that records them."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from aioinformer.errors import AlreadyExists, Conflict, NotFound, ServerError
from aioinformer.operator.retry import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRY,
    RetryBackoff,
    is_conflict,
    on_error,
    retry_on_conflict,
)
from aioinformer.testing.clock import FakeClock


class RecordingClock:
    """A clock whose sleeps return at once, each recorded."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return sum(self.sleeps)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await asyncio.sleep(0)


def conflict() -> Conflict:
    return Conflict({"code": 409, "reason": "Conflict", "message": "the object has been modified"})


THREE = RetryBackoff(steps=3, duration=0.0, factor=1.0)


class Calls:
    """An async function failing with ``errors`` in turn, then returning its call count."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.count = 0

    async def __call__(self) -> int:
        self.count += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.count


async def test_a_function_that_always_conflicts_raises_the_last_conflict() -> None:
    errors = [conflict() for _ in range(3)]
    fn = Calls(*errors)
    with pytest.raises(Conflict) as raised:
        await retry_on_conflict(fn, backoff=THREE, clock=RecordingClock())
    assert raised.value is errors[-1]
    assert fn.count == 3


async def test_a_function_that_succeeds_is_called_once() -> None:
    fn = Calls()
    clock = RecordingClock()
    assert await retry_on_conflict(fn, backoff=THREE, clock=clock) == 1
    assert clock.sleeps == []


async def test_another_error_is_raised_at_once() -> None:
    error = NotFound({"code": 404, "message": "gone"})
    fn = Calls(error, conflict())
    with pytest.raises(NotFound) as raised:
        await retry_on_conflict(fn, backoff=THREE, clock=RecordingClock())
    assert raised.value is error
    assert fn.count == 1


async def test_a_function_conflicting_twice_then_succeeding_returns_its_result() -> None:
    fn = Calls(conflict(), conflict())
    assert await retry_on_conflict(fn, backoff=THREE, clock=RecordingClock()) == 3


async def test_already_exists_is_not_retried() -> None:
    error = AlreadyExists({"code": 409, "reason": "AlreadyExists", "message": "taken"})
    fn = Calls(error)
    with pytest.raises(AlreadyExists):
        await retry_on_conflict(fn, backoff=THREE, clock=RecordingClock())
    assert fn.count == 1
    assert not is_conflict(error)
    assert is_conflict(conflict())


async def test_positional_arguments_reach_the_function() -> None:
    async def add(a: int, b: str) -> str:
        return f"{a}{b}"

    assert await retry_on_conflict(add, 1, "x", clock=RecordingClock()) == "1x"


async def test_the_default_retry_waits_about_ten_ms_four_times() -> None:
    clock = RecordingClock()
    with pytest.raises(Conflict):
        await retry_on_conflict(Calls(*(conflict() for _ in range(5))), clock=clock)
    assert len(clock.sleeps) == DEFAULT_RETRY.steps - 1 == 4
    assert all(0.010 <= s < 0.011 for s in clock.sleeps)


async def test_the_default_backoff_grows_five_fold() -> None:
    clock = RecordingClock()
    fn = Calls(*(conflict() for _ in range(4)))
    with pytest.raises(Conflict):
        await retry_on_conflict(fn, backoff=DEFAULT_BACKOFF, clock=clock)
    assert fn.count == 4
    for wait, base in zip(clock.sleeps, [0.010, 0.050, 0.250], strict=True):
        assert base <= wait < base * 1.1


async def test_on_error_retries_what_its_predicate_calls_retriable() -> None:
    fn = Calls(ServerError({"code": 500}), ServerError({"code": 503}))
    retriable: list[Exception] = []

    def is_server_error(error: Exception) -> bool:
        retriable.append(error)
        return isinstance(error, ServerError)

    assert await on_error(THREE, is_server_error, fn, clock=RecordingClock()) == 3
    assert len(retriable) == 2
    fn = Calls(conflict())
    with pytest.raises(Conflict):
        await on_error(THREE, is_server_error, fn, clock=RecordingClock())
    assert fn.count == 1


async def test_a_cancellation_during_the_wait_ends_the_retries() -> None:
    clock = FakeClock()
    fn = Calls(conflict(), conflict())
    backoff = RetryBackoff(steps=3, duration=1.0)
    task = asyncio.ensure_future(retry_on_conflict(fn, backoff=backoff, clock=clock))
    await clock.wait_for_sleepers(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fn.count == 1


async def test_the_waits_run_on_the_given_clock() -> None:
    clock = FakeClock()
    fn = Calls(conflict())
    backoff = RetryBackoff(steps=2, duration=5.0)
    task = asyncio.ensure_future(retry_on_conflict(fn, backoff=backoff, clock=clock))
    await clock.wait_for_sleepers(1)
    await clock.advance(4.9)
    assert not task.done()
    await clock.advance(0.1)
    assert await task == 2


# -- RetryBackoff ----------------------------------------------------------------------------------


def test_backoff_delays_grow_by_the_factor_up_to_the_cap() -> None:
    backoff = RetryBackoff(steps=6, duration=1.0, factor=2.0, cap=5.0)
    assert backoff.delays() == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_backoff_jitter_stretches_each_delay_by_a_fraction_of_itself() -> None:
    backoff = RetryBackoff(steps=4, duration=1.0, factor=3.0, jitter=0.5)
    delays = backoff.delays(random.Random(3))
    replay = random.Random(3)
    assert delays == [base + replay.random() * 0.5 * base for base in (1.0, 3.0, 9.0)]
    assert all(base < d < base * 1.5 for d, base in zip(delays, (1.0, 3.0, 9.0), strict=True))


def test_a_backoff_of_one_step_waits_never() -> None:
    assert RetryBackoff(steps=1, duration=1.0).delays() == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"steps": 0, "duration": 1.0}, "steps must be at least 1", id="no-steps"),
        pytest.param({"steps": 2, "duration": -1.0}, "duration must be >= 0", id="duration"),
        pytest.param({"steps": 2, "duration": 1.0, "factor": -2.0}, "factor", id="factor"),
        pytest.param({"steps": 2, "duration": 1.0, "jitter": float("nan")}, "jitter", id="nan"),
        pytest.param({"steps": 2, "duration": 1.0, "cap": -1.0}, "cap", id="cap"),
    ],
)
def test_a_backoff_that_cannot_work_is_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetryBackoff(**options)
