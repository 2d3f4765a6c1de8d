"""Rate limiters and RateLimitingQueue: client-go's default_rate_limiters_test.go and
rate_limiting_queue_test.go ported, plus the token bucket (golang.org/x/time/rate's
reservation arithmetic) and the default controller limiter."""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING

import pytest

from aioinformer.testing import FakeClock
from aioinformer.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    RateLimitingQueue,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
)
from tests._support_tasks import no_task_outlives_the_test  # noqa: F401

if TYPE_CHECKING:
    from collections.abc import Hashable

# -- default_rate_limiters_test.go --------------------------------------------------------


def test_exponential_limiter_doubles_per_failure_and_forget_resets() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(
        base_delay=0.001, max_delay=1.0
    )
    assert [limiter.when("one") for _ in range(5)] == [0.001, 0.002, 0.004, 0.008, 0.016]
    assert limiter.num_requeues("one") == 5

    assert [limiter.when("two") for _ in range(2)] == [0.001, 0.002]
    assert limiter.num_requeues("two") == 2

    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 0.001
    assert limiter.num_requeues("two") == 2


@pytest.mark.parametrize(
    ("base_delay", "max_delay", "failures_before", "expected"),
    [
        pytest.param(0.001, 1000.0, 5, 0.032, id="ms_base_below_cap"),
        pytest.param(0.001, 1000.0, 1000, 1000.0, id="ms_base_capped"),
        pytest.param(0.001, 1000.0, 5000, 1000.0, id="ms_base_float_overflow"),
        pytest.param(60.0, 3_600_000.0, 2, 240.0, id="minute_base_below_cap"),
        pytest.param(60.0, 3_600_000.0, 1000, 3_600_000.0, id="minute_base_capped"),
    ],
)
def test_exponential_limiter_caps_at_max_delay_without_overflowing(
    base_delay: float, max_delay: float, failures_before: int, expected: float
) -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(
        base_delay=base_delay, max_delay=max_delay
    )
    for _ in range(failures_before):
        limiter.when("item")
    assert limiter.when("item") == expected


def test_exponential_limiter_rejects_negative_delays() -> None:
    with pytest.raises(ValueError, match="negative"):
        ItemExponentialFailureRateLimiter(base_delay=-1)


def test_fast_slow_limiter_switches_to_slow_after_fast_attempts() -> None:
    limiter: ItemFastSlowRateLimiter[str] = ItemFastSlowRateLimiter(
        fast_delay=0.005, slow_delay=10.0, max_fast_attempts=3
    )
    assert [limiter.when("one") for _ in range(5)] == [0.005, 0.005, 0.005, 10.0, 10.0]
    assert limiter.num_requeues("one") == 5

    assert [limiter.when("two") for _ in range(2)] == [0.005, 0.005]
    assert limiter.num_requeues("two") == 2

    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 0.005


def test_max_of_limiter_waits_the_longest_and_forgets_everywhere() -> None:
    limiter: MaxOfRateLimiter[str] = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(fast_delay=0.005, slow_delay=3.0, max_fast_attempts=3),
        ItemExponentialFailureRateLimiter(base_delay=0.001, max_delay=1.0),
    )
    assert [limiter.when("one") for _ in range(5)] == [0.005, 0.005, 0.005, 3.0, 3.0]
    assert limiter.num_requeues("one") == 5

    assert [limiter.when("two") for _ in range(2)] == [0.005, 0.005]
    assert limiter.num_requeues("two") == 2

    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 0.005


def test_max_of_no_limiters_never_waits() -> None:
    limiter: MaxOfRateLimiter[str] = MaxOfRateLimiter()
    assert limiter.when("x") == 0.0
    assert limiter.num_requeues("x") == 0


class StepRateLimiter:
    """``base_delay`` for the first ``threshold`` calls overall, ``max_delay`` after."""

    def __init__(self, base_delay: float, max_delay: float, threshold: int) -> None:
        self.count = 0
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.threshold = threshold

    def when(self, item: Hashable) -> float:
        self.count += 1
        return self.base_delay if self.count <= self.threshold else self.max_delay

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


def test_with_max_wait_limiter_clamps_long_delays() -> None:
    limiter: WithMaxWaitRateLimiter[int] = WithMaxWaitRateLimiter(
        StepRateLimiter(0.005, 1000.0, 100), max_delay=500.0
    )
    assert {limiter.when(i) for i in range(100)} == {0.005}
    assert {limiter.when(i) for i in range(100, 200)} == {500.0}


# -- the token bucket ----------------------------------------------------------------------


def test_bucket_allows_a_burst_then_spaces_reservations_by_one_over_qps() -> None:
    clock = FakeClock()
    bucket = BucketRateLimiter(qps=10, burst=3, clock=clock)

    delays = [bucket.when(f"item-{i}") for i in range(6)]

    assert delays == pytest.approx([0.0, 0.0, 0.0, 0.1, 0.2, 0.3])


async def test_bucket_refills_with_time_but_never_beyond_burst() -> None:
    clock = FakeClock()
    bucket = BucketRateLimiter(qps=10, burst=3, clock=clock)
    for _ in range(5):  # 3 tokens spent, 2 borrowed: the bucket stands at -2
        bucket.when(None)

    await clock.advance(0.15)  # +1.5 tokens: -0.5, so the next one waits 0.15 s
    assert bucket.when(None) == pytest.approx(0.15)

    await clock.advance(100)  # refills to the burst of 3, no further
    assert [bucket.when(None) for _ in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])


def test_bucket_with_infinite_qps_never_waits() -> None:
    bucket = BucketRateLimiter(qps=math.inf, burst=0, clock=FakeClock())
    assert {bucket.when(i) for i in range(1000)} == {0.0}


def test_bucket_tracks_no_items() -> None:
    bucket = BucketRateLimiter(qps=1, burst=1, clock=FakeClock())
    bucket.when("a")
    bucket.forget("a")
    assert bucket.num_requeues("a") == 0
    assert bucket.when("a") == pytest.approx(1.0), "forget must not refund the token"


@pytest.mark.parametrize(
    ("qps", "burst", "message"),
    [
        pytest.param(0, 10, "qps", id="zero_qps"),
        pytest.param(-1, 10, "qps", id="negative_qps"),
        pytest.param(math.nan, 10, "qps", id="nan_qps"),
        pytest.param(10, 0, "burst", id="zero_burst"),
    ],
)
def test_bucket_rejects_unusable_settings(qps: float, burst: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BucketRateLimiter(qps=qps, burst=burst, clock=FakeClock())


def test_default_controller_limiter_is_per_item_exponential_under_an_overall_bucket() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)

    # 100 distinct items fit in the burst: each waits its own first backoff, 5 ms.
    assert {limiter.when(f"item-{i}") for i in range(100)} == {0.005}
    # The bucket is empty now: the next ones queue up behind it at 10 per second.
    assert limiter.when("item-100") == pytest.approx(0.1)
    assert limiter.when("item-101") == pytest.approx(0.2)
    assert limiter.num_requeues("item-0") == 1


async def test_default_controller_limiter_backs_a_failing_item_off_to_1000_s() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    delays = []
    for _ in range(30):
        delays.append(limiter.when("failing"))
        await clock.advance(1)  # the bucket refills between retries
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1000.0
    limiter.forget("failing")
    assert limiter.when("failing") == 0.005


def test_limiters_satisfy_the_protocol() -> None:
    limiters: list[RateLimiter[str]] = [
        ItemExponentialFailureRateLimiter(),
        ItemFastSlowRateLimiter(fast_delay=1, slow_delay=2, max_fast_attempts=1),
        BucketRateLimiter(qps=1, burst=1, clock=FakeClock()),
        MaxOfRateLimiter(),
        WithMaxWaitRateLimiter(ItemExponentialFailureRateLimiter(), max_delay=1),
        default_controller_rate_limiter(clock=FakeClock()),
    ]
    for limiter in limiters:
        assert isinstance(limiter.when("x"), float)
        assert isinstance(limiter.num_requeues("x"), int)
        limiter.forget("x")
        assert repr(limiter).startswith("<")


# -- rate_limiting_queue_test.go ------------------------------------------------------------


async def delay_of_next_release(clock: FakeClock) -> float:
    """How far ahead the queue's timer sleeps (the pending add_after delay)."""
    await clock.wait_for_sleepers(1)
    deadline = clock.next_deadline()
    assert deadline is not None
    return deadline - clock.monotonic()


async def release(queue: RateLimitingQueue[str], clock: FakeClock, item: str) -> None:
    """Let the pending delay pass, then take ``item`` and finish it."""
    await clock.advance_to_next()
    assert await queue.get() == item
    queue.done(item)


async def test_rate_limited_adds_wait_as_the_limiter_says_and_forget_resets() -> None:
    clock = FakeClock()
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(
        base_delay=0.001, max_delay=1.0
    )
    async with RateLimitingQueue(limiter, clock=clock) as queue:
        queue.add_rate_limited("one")
        assert await delay_of_next_release(clock) == pytest.approx(0.001)
        await release(queue, clock, "one")

        queue.add_rate_limited("one")
        assert await delay_of_next_release(clock) == pytest.approx(0.002)
        await release(queue, clock, "one")
        assert queue.num_requeues("one") == 2

        queue.add_rate_limited("two")
        assert await delay_of_next_release(clock) == pytest.approx(0.001)
        await release(queue, clock, "two")
        queue.add_rate_limited("two")
        assert await delay_of_next_release(clock) == pytest.approx(0.002)
        await release(queue, clock, "two")

        queue.forget("one")
        assert queue.num_requeues("one") == 0
        queue.add_rate_limited("one")
        assert await delay_of_next_release(clock) == pytest.approx(0.001)
        await release(queue, clock, "one")


async def test_rate_limited_item_is_not_handed_out_before_its_delay() -> None:
    clock = FakeClock()
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(
        base_delay=1.0, max_delay=10.0
    )
    async with RateLimitingQueue(limiter, clock=clock) as queue:
        queue.add_rate_limited("x")
        getter = asyncio.create_task(queue.get())
        await clock.advance(0.999)
        assert not getter.done()
        await clock.advance(0.001)
        assert await getter == "x"


async def test_rate_limiting_queue_defaults_to_the_controller_limiter() -> None:
    clock = FakeClock()
    async with RateLimitingQueue[str](clock=clock) as queue:
        assert isinstance(queue.rate_limiter, MaxOfRateLimiter)
        queue.add_rate_limited("x")
        assert await delay_of_next_release(clock) == pytest.approx(0.005)
        assert queue.num_requeues("x") == 1


async def test_rate_limited_add_on_shut_down_queue_consults_no_limiter() -> None:
    clock = FakeClock()
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    async with RateLimitingQueue(limiter, clock=clock) as queue:
        queue.shut_down()
        queue.add_rate_limited("x")
        assert queue.num_requeues("x") == 0
        assert queue.statistics().delayed == 0
