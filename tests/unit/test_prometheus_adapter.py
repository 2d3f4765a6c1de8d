"""The prometheus_client adapter: client-go's workqueue metric names, one labelled child
per queue name, values driven by real queue traffic on a fake clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from aioinformer.contrib.prometheus import DURATION_BUCKETS, PrometheusMetricsProvider
from aioinformer.workqueue import RateLimitingQueue, WorkQueue
from tests._support_tasks import no_task_outlives_the_test  # noqa: F401

if TYPE_CHECKING:
    from aioinformer.testing import FakeClock

CLIENT_GO_METRIC_NAMES = [
    "workqueue_depth",
    "workqueue_adds_total",
    "workqueue_queue_duration_seconds",
    "workqueue_work_duration_seconds",
    "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds",
    "workqueue_retries_total",
]


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


def sample(registry: CollectorRegistry, metric: str, queue: str) -> float | None:
    return registry.get_sample_value(metric, {"name": queue})


async def test_queue_traffic_shows_up_under_client_go_metric_names(
    registry: CollectorRegistry, fake_clock: FakeClock
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    async with RateLimitingQueue[str](
        name="pods", clock=fake_clock, metrics_provider=provider
    ) as queue:
        queue.add("default/a")
        queue.add("default/b")
        queue.add("default/a")
        assert sample(registry, "workqueue_adds_total", "pods") == 2
        assert sample(registry, "workqueue_depth", "pods") == 2

        await fake_clock.advance(0.25)
        item = await queue.get()
        assert sample(registry, "workqueue_depth", "pods") == 1
        assert sample(registry, "workqueue_queue_duration_seconds_count", "pods") == 1
        assert sample(registry, "workqueue_queue_duration_seconds_sum", "pods") == 0.25

        await fake_clock.advance(0.25)  # the gauges refresh every 0.5 s from the first add
        assert sample(registry, "workqueue_unfinished_work_seconds", "pods") == 0.25
        await fake_clock.advance(0.5)
        assert sample(registry, "workqueue_unfinished_work_seconds", "pods") == 0.75
        assert sample(registry, "workqueue_longest_running_processor_seconds", "pods") == 0.75

        queue.add_rate_limited(item)
        queue.done(item)
        assert sample(registry, "workqueue_retries_total", "pods") == 1
        assert sample(registry, "workqueue_work_duration_seconds_count", "pods") == 1
        assert sample(registry, "workqueue_work_duration_seconds_sum", "pods") == 0.75

    exposition = generate_latest(registry).decode()
    for name in CLIENT_GO_METRIC_NAMES:
        assert f"# TYPE {name} " in exposition
    assert 'workqueue_adds_total{name="pods"} 2.0' in exposition


async def test_each_queue_name_gets_its_own_series(
    registry: CollectorRegistry, fake_clock: FakeClock
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    async with (
        WorkQueue[str](name="pods", clock=fake_clock, metrics_provider=provider) as pods,
        WorkQueue[str](name="nodes", clock=fake_clock, metrics_provider=provider) as nodes,
    ):
        pods.add("a")
        pods.add("b")
        nodes.add("n")
    assert sample(registry, "workqueue_adds_total", "pods") == 2
    assert sample(registry, "workqueue_adds_total", "nodes") == 1


def test_duration_histograms_use_client_go_buckets(registry: CollectorRegistry) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    provider.new_latency_metric("q").observe(0.003)
    bounds = [
        s.labels["le"]
        for metric in registry.collect()
        if metric.name == "workqueue_queue_duration_seconds"
        for s in metric.samples
        if s.name.endswith("_bucket")
    ]
    assert bounds == [*(str(bound) for bound in DURATION_BUCKETS), "+Inf"]
    assert DURATION_BUCKETS == (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)


def test_second_provider_on_one_registry_is_refused(registry: CollectorRegistry) -> None:
    PrometheusMetricsProvider(registry=registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        PrometheusMetricsProvider(registry=registry)
