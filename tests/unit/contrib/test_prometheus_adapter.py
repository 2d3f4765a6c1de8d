"""The prometheus_client adapter: client-go's workqueue, reflector and leader-election
metric names (and aioinformer's own), one labelled child per name, values driven by real
queue, reflector and elector traffic on a fake clock."""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from aioinformer.contrib.prometheus import DURATION_BUCKETS, PrometheusMetricsProvider
from aioinformer.operator.leaderelection import LeaderElector
from aioinformer.reflector import DEADLINE_TICKS, DEFAULT_WATCH_INACTIVITY_TIMEOUT, Reflector
from aioinformer.testing.lister_watcher import FakeListerWatcher
from aioinformer.workqueue import RateLimitingQueue, WorkQueue
from tests._support_reflector import RecordingStore
from tests._support_tasks import no_task_outlives_the_test, stop  # noqa: F401
from tests._support_wait import wait_until

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

REFLECTOR_METRIC_NAMES = [
    "reflector_lists_total",
    "reflector_list_duration_seconds",
    "reflector_items_per_list",
    "reflector_watchLists_total",
    "reflector_watches_total",
    "reflector_short_watches_total",
    "reflector_watch_duration_seconds",
    "reflector_items_per_watch",
    "reflector_last_resource_version",
    "aioinformer_reflector_relists_total",
    "aioinformer_reflector_watch_events_total",
    "aioinformer_reflector_watch_list_failures_total",
    "aioinformer_reflector_seconds_since_heard",
]

LEADER_METRIC_NAMES = [
    "leader_election_master_status",
    "aioinformer_leader_election_acquisitions_total",
    "aioinformer_leader_election_renewal_failures_total",
]


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


def sample(registry: CollectorRegistry, metric: str, queue: str) -> float | None:
    # A FIFO queue's depth carries priority="" (a priority queue's, one per priority).
    labels = {"name": queue, "priority": ""} if metric == "workqueue_depth" else {"name": queue}
    return registry.get_sample_value(metric, labels)


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


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}}


async def test_reflector_traffic_shows_up_under_client_go_and_aioinformer_names(
    registry: CollectorRegistry, fake_clock: FakeClock
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    reflector = Reflector(
        lw, RecordingStore(), clock=fake_clock, metrics_provider=provider, use_watch_list=False
    )
    task = asyncio.get_running_loop().create_task(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    lw.add(pod("c"))
    lw.modify(pod("c"))
    await wait_until(lambda: reflector.statistics().events == 2)
    await fake_clock.advance(27.0)
    # The two events are stamped as heard by the first inactivity check, one tick in.
    tick = DEFAULT_WATCH_INACTIVITY_TIMEOUT / DEADLINE_TICKS
    assert sample(registry, "aioinformer_reflector_seconds_since_heard", "pods") == 27.0 - tick
    lw.drop_watches()
    await lw.wait_for_watch_calls(2)
    await stop(task)

    assert sample(registry, "reflector_lists_total", "pods") == 1
    assert sample(registry, "reflector_items_per_list_sum", "pods") == 2
    assert sample(registry, "reflector_watches_total", "pods") == 2
    assert sample(registry, "reflector_watch_duration_seconds_sum", "pods") == 27.0
    assert sample(registry, "reflector_items_per_watch_sum", "pods") == 2
    assert sample(registry, "reflector_last_resource_version", "pods") == 4
    added = {"name": "pods", "type": "ADDED"}
    assert registry.get_sample_value("aioinformer_reflector_watch_events_total", added) == 1
    value = sample(registry, "aioinformer_reflector_seconds_since_heard", "pods")
    assert value is not None
    assert math.isnan(value)  # stopped

    exposition = generate_latest(registry).decode()
    for name in REFLECTOR_METRIC_NAMES:
        assert f"# TYPE {name} " in exposition
    assert 'reflector_lists_total{name="pods"} 1.0' in exposition


async def test_two_reflectors_with_one_name_share_the_child(
    registry: CollectorRegistry, fake_clock: FakeClock
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    for _ in range(2):
        lw = FakeListerWatcher(objects=[pod("a")])
        reflector = Reflector(
            lw, RecordingStore(), clock=fake_clock, metrics_provider=provider, use_watch_list=False
        )
        task = asyncio.get_running_loop().create_task(reflector.list_and_watch())
        await lw.wait_for_watchers(1)
        await stop(task)
    assert sample(registry, "reflector_lists_total", "pods") == 2


async def test_leader_status_shows_up_under_client_go_name(
    registry: CollectorRegistry, fake_clock: FakeClock
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    lock = _SoleLock()
    elector = LeaderElector(lock, clock=fake_clock, metrics_provider=provider)
    task = asyncio.get_running_loop().create_task(elector.run())
    await wait_until(elector.is_leader, between=fake_clock.settle)
    assert sample(registry, "leader_election_master_status", "ctrl") == 1
    assert sample(registry, "aioinformer_leader_election_acquisitions_total", "ctrl") == 1
    await stop(task)
    assert sample(registry, "leader_election_master_status", "ctrl") == 0

    exposition = generate_latest(registry).decode()
    for name in LEADER_METRIC_NAMES:
        assert f"# TYPE {name} " in exposition


class _SoleLock:
    """A lease nobody else contends for: every write succeeds."""

    name = "ctrl"
    identity = "me"

    def __init__(self) -> None:
        self.record: Any = None

    def describe(self) -> str:
        return "default/ctrl"

    async def get(self) -> Any:
        from aioinformer.errors import NotFound

        if self.record is None:
            raise NotFound({"code": 404, "reason": "NotFound"})
        return self.record, repr(self.record).encode()

    async def create(self, record: Any) -> None:
        self.record = record

    async def update(self, record: Any) -> None:
        self.record = record
