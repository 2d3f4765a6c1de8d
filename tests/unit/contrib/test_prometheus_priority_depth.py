"""``workqueue_depth`` per priority in prometheus_client, as controller-runtime labels it:
a FIFO queue's series has ``priority=""``, a priority queue's one series per priority
(their sum is its depth) and none without it; past MAX_PRIORITY_SERIES priorities the
others share one series."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from aioinformer.contrib.prometheus import MAX_PRIORITY_SERIES, PrometheusMetricsProvider
from aioinformer.priority_queue import LOW_PRIORITY, PriorityMetricsProvider, PriorityQueue
from aioinformer.workqueue import RateLimitingQueue

if TYPE_CHECKING:
    from aioinformer.testing import FakeClock


def depth(registry: CollectorRegistry, queue: str, priority: str) -> float | None:
    return registry.get_sample_value("workqueue_depth", {"name": queue, "priority": priority})


async def test_a_priority_queue_reports_its_depth_per_priority(fake_clock: FakeClock) -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry=registry)
    assert isinstance(provider, PriorityMetricsProvider)
    async with (
        PriorityQueue[str](name="widgets", clock=fake_clock, metrics_provider=provider) as pq,
        RateLimitingQueue[str](name="pods", clock=fake_clock, metrics_provider=provider) as fifo,
    ):
        pq.add("a", priority=LOW_PRIORITY)
        pq.add("b", priority=LOW_PRIORITY)
        pq.add("c")
        fifo.add("x")
        assert (depth(registry, "widgets", "-100"), depth(registry, "widgets", "0")) == (2, 1)
        assert depth(registry, "widgets", "") is None
        assert depth(registry, "pods", "") == 1

        pq.add("a")  # raised: moves from one series to the other
        assert (depth(registry, "widgets", "-100"), depth(registry, "widgets", "0")) == (1, 2)
        assert await pq.get() == "c"
        assert depth(registry, "widgets", "0") == 1


async def test_priorities_past_the_limit_share_one_series(fake_clock: FakeClock) -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry=registry)
    async with PriorityQueue[int](name="many", clock=fake_clock, metrics_provider=provider) as q:
        for priority in range(MAX_PRIORITY_SERIES + 2):
            q.add(priority, priority=priority)
        assert depth(registry, "many", str(MAX_PRIORITY_SERIES - 1)) == 1
        assert depth(registry, "many", str(MAX_PRIORITY_SERIES)) is None
        assert depth(registry, "many", "exceeded_cardinality_limit") == 2
        assert await q.get() == MAX_PRIORITY_SERIES + 1
        assert depth(registry, "many", "exceeded_cardinality_limit") == 1
        assert await q.get() == MAX_PRIORITY_SERIES
        assert depth(registry, "many", "exceeded_cardinality_limit") == 0
