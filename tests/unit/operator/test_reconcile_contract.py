"""What a reconcile may hand back, and how long a sync one may hold the loop: a value other
than ``None`` or a ``Requeue`` is a ``TypeError`` naming the function and the value,
handled as a raised exception; ``Requeue(after<0)`` is refused where it is built; a sync
reconcile past the sync handlers' bound is logged once per slow episode.

Time is virtual: a FakeClock drives the rate limiter and, in a test, times the sync
reconcile, which moves it as long as it says it took.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest

from aioinformer.errors import Requeue
from aioinformer.operator.controller import Controller
from aioinformer.testing.clock import FakeClock
from tests._support_controller import limiter, retry_until_success
from tests._support_wait import wait_until


class JumpClock(FakeClock):
    """A FakeClock that a sync reconcile can move without awaiting: the time it took."""

    def jump(self, seconds: float) -> None:
        self._now += seconds


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(5, id="int"),
        pytest.param(True, id="bool"),
        pytest.param({"requeue": True}, id="dict"),
        pytest.param("done", id="str"),
    ],
)
async def test_a_reconcile_returning_something_else_is_a_type_error_and_retried(
    value: object, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    calls: list[str] = []

    def reconcile_widget(key: str) -> object:
        calls.append(key)
        return value if len(calls) == 1 else None

    controller = Controller("widgets", reconcile_widget, clock=clock, rate_limiter=limiter())
    controller.enqueue("default/a")
    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.controller"):
        await retry_until_success(controller, clock, retries=1)
    statistics = controller.statistics()
    assert (statistics.failures, statistics.successes) == (1, 1)
    assert calls == ["default/a", "default/a"]
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert record.exc_info is not None
    error = record.exc_info[1]
    assert isinstance(error, TypeError)
    assert str(error) == (
        "controller widgets: reconcile test_a_reconcile_returning_something_else_is_a_type_"
        f"error_and_retried.<locals>.reconcile_widget returned {value!r} (of type "
        f"{type(value).__name__}) for default/a; a reconcile returns None (done) or a "
        "Requeue (retry), or raises"
    )


async def test_an_async_reconcile_returning_a_value_fails_too() -> None:
    clock = FakeClock()

    async def reconcile(key: str) -> int:
        return 1

    controller = Controller("numbers", reconcile, clock=clock, rate_limiter=limiter())
    controller.enqueue("default/a")
    async with controller:
        await wait_until(lambda: controller.statistics().failures == 1)
    assert controller.statistics().successes == 0


async def test_none_and_requeue_are_what_a_reconcile_returns() -> None:
    clock = FakeClock()
    answers: dict[str, Any] = {"default/a": None, "default/b": Requeue(after=5)}
    controller = Controller("ok", answers.__getitem__, clock=clock)
    controller.enqueue("default/a")
    controller.enqueue("default/b")
    async with controller:
        await wait_until(lambda: controller.statistics().reconciles == 2)
    statistics = controller.statistics()
    assert (statistics.successes, statistics.requeues, statistics.failures) == (1, 1, 0)


@pytest.mark.parametrize("after", [-1, -0.001, math.nan])
def test_requeue_refuses_a_negative_delay(after: float) -> None:
    with pytest.raises(ValueError, match=r"^Requeue\(after=\.\.\.\) must be >= 0 seconds"):
        Requeue(after=after)


def test_requeue_takes_zero_and_positive_delays() -> None:
    assert Requeue(after=0).after == 0
    assert Requeue(after=2.5).after == 2.5


async def test_a_sync_reconcile_holding_the_loop_is_reported_once_per_slow_episode(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = JumpClock()
    took = {"default/slow1": 5.0, "default/slow2": 0.3, "default/fast": 0.01, "default/slow3": 0.2}

    def reconcile(key: str) -> None:
        clock.jump(took[key])

    controller = Controller("blocking", reconcile, clock=clock)
    for key in took:
        controller.enqueue(key)
    with caplog.at_level(logging.WARNING, logger="aioinformer.operator.controller"):
        async with controller:
            await wait_until(lambda: controller.statistics().reconciles == 4)
    name = (
        "test_a_sync_reconcile_holding_the_loop_is_reported_once_per_slow_episode"
        ".<locals>.reconcile"
    )
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"controller blocking: sync reconcile {name} held the event loop for {seconds} on "
        f"{key} (slow past 0.1s; further slow reconciles are counted, not logged, until one "
        "is fast again; make it async, or move its blocking work to a thread)"
        for seconds, key in (("5.000s", "default/slow1"), ("0.200s", "default/slow3"))
    ]
    assert controller.statistics().slow_reconciles == 3
