"""``eventually``: returns the predicate's first truthy value, counts falsy values and
exceptions as "not yet", and fails as an assertion naming the predicate and its last
outcome; times on a fake clock when given one, and runs under anyio's runner too."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from aioinformer.errors import NotFound
from aioinformer.testing import FakeClock, eventually, eventually_sync

if TYPE_CHECKING:
    from collections.abc import Iterator


def never() -> bool:
    return False


async def test_returns_the_first_truthy_value_of_a_sync_predicate() -> None:
    values: Iterator[object] = iter([None, 0, [], {"ready": True}])
    assert await eventually(lambda: next(values), interval=0.001) == {"ready": True}


async def test_awaits_an_async_predicate_and_returns_its_value() -> None:
    calls = 0

    async def ready() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        return calls if calls == 3 else 0

    assert await eventually(ready, interval=0.001) == 3


async def test_a_predicate_that_already_holds_returns_without_waiting(
    fake_clock: FakeClock,
) -> None:
    # On a fake clock nothing moves time: any sleep would hang the test.
    assert await eventually(lambda: "now", clock=fake_clock) == "now"
    assert fake_clock.sleepers == 0


async def test_an_assertion_error_means_not_yet() -> None:
    seen: list[int] = []

    def converged() -> bool:
        seen.append(1)
        assert len(seen) >= 3, "not converged"
        return True

    assert await eventually(converged, interval=0.001) is True
    assert len(seen) == 3


async def test_any_exception_means_not_yet_as_gomega_counts_an_error() -> None:
    outcomes: list[Any] = [NotFound({"code": 404, "reason": "NotFound"}), KeyError("a"), "found"]

    def lookup() -> Any:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert await eventually(lookup, interval=0.001) == "found"


async def test_giving_up_is_an_assertion_error_naming_the_predicate_and_its_last_value(
    fake_clock: FakeClock,
) -> None:
    values = iter(range(100))
    task = asyncio.create_task(
        eventually(lambda: next(values) < 0, timeout=1.0, interval=0.5, clock=fake_clock)
    )
    for _ in range(2):
        await fake_clock.wait_for_sleepers()
        await fake_clock.advance(0.5)
    with pytest.raises(AssertionError) as raised:
        await task
    text = str(raised.value)
    assert text.startswith("not true within 1.0 s (3 checks): ")
    assert "lambda: next(values) < 0" in text
    assert text.endswith("last value: False")
    assert raised.value.__cause__ is None


async def test_giving_up_names_the_last_exception_and_chains_it() -> None:
    def converged() -> None:
        assert [1, 2] == [1, 3], "replicas differ"

    with pytest.raises(AssertionError) as raised:
        await eventually(converged, timeout=0.02, interval=0.005)
    assert "converged" in str(raised.value)
    assert "last raised AssertionError: replicas differ" in str(raised.value)
    assert isinstance(raised.value.__cause__, AssertionError)


async def test_message_replaces_the_predicates_name() -> None:
    with pytest.raises(AssertionError, match=r"^not true within 0 s \(1 check\): the cm exists"):
        await eventually(never, timeout=0, message="the cm exists")


async def test_checks_every_interval_and_once_more_at_the_deadline_on_the_given_clock(
    fake_clock: FakeClock,
) -> None:
    checked_at: list[float] = []

    def check() -> bool:
        checked_at.append(fake_clock.monotonic())
        return False

    task = asyncio.create_task(eventually(check, timeout=1.0, interval=0.4, clock=fake_clock))
    while not task.done():
        await fake_clock.wait_for_sleepers()
        await fake_clock.advance_to_next()
        await fake_clock.settle()
    with pytest.raises(AssertionError, match=r"\(4 checks\)"):
        await task
    assert checked_at == pytest.approx([0.0, 0.4, 0.8, 1.0])


async def test_an_async_check_still_running_at_the_deadline_is_cancelled_and_reported() -> None:
    cancelled = asyncio.Event()

    async def hangs() -> bool:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        return True  # pragma: no cover - never reached

    with pytest.raises(AssertionError, match="still running at the deadline, and was cancelled"):
        await eventually(hangs, timeout=0.01)
    assert cancelled.is_set()


async def test_cancelling_the_waiter_is_not_swallowed() -> None:
    task = asyncio.create_task(eventually(never, timeout=60))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"timeout": -1}, "timeout must be 0 or more seconds", id="negative-timeout"),
        pytest.param({"timeout": float("nan")}, "timeout must be 0 or more", id="nan-timeout"),
        pytest.param({"interval": 0}, "interval must be more than 0 seconds", id="zero-interval"),
    ],
)
async def test_bad_timing_is_refused_before_the_first_check(
    kwargs: dict[str, Any], message: str
) -> None:
    calls: list[int] = []
    with pytest.raises(ValueError, match=message):
        await eventually(lambda: calls.append(1), **kwargs)
    assert calls == []


def test_runs_under_anyios_runner() -> None:
    async def main() -> None:
        state: dict[str, str] = {}

        async def later() -> None:
            await anyio.sleep(0.01)
            state["phase"] = "Ready"

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            assert await eventually(lambda: state.get("phase"), interval=0.001) == "Ready"

    anyio.run(main, backend="asyncio")


# -- eventually_sync: the same assertion for sync tests ---------------------------------------


def test_sync_returns_the_first_truthy_value_counting_exceptions_as_not_yet() -> None:
    outcomes: Iterator[object] = iter([None, NotFound(), 0, {"ready": True}])

    def check() -> object:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert eventually_sync(check, interval=0.001) == {"ready": True}


def test_sync_fails_as_an_assertion_naming_the_predicate_and_its_last_error() -> None:
    def missing() -> bool:
        raise NotFound()

    with pytest.raises(AssertionError, match=r"not true within 0.02 s .*missing") as failed:
        eventually_sync(missing, timeout=0.02, interval=0.005)
    assert isinstance(failed.value.__cause__, NotFound)
    assert "last raised NotFound" in str(failed.value)
    with pytest.raises(AssertionError, match=r"\(1 check\): the pods.*\n  last value: False"):
        eventually_sync(never, timeout=0, message="the pods")


def test_sync_refuses_an_async_predicate_and_bad_bounds() -> None:
    async def ready() -> bool:
        return True

    with pytest.raises(TypeError, match=r"returned an awaitable.*await eventually"):
        _ = eventually_sync(ready)
    with pytest.raises(ValueError, match="timeout"):
        eventually_sync(never, timeout=-1)
    with pytest.raises(ValueError, match="interval"):
        eventually_sync(never, interval=0)
