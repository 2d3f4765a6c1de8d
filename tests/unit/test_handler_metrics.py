"""Informer and handler metrics through the MetricsProvider seam: a provider implementing
HandlerMetricsProvider gets per-handler pending, latency and errors and the informer's
queued deltas; one written for the workqueue alone keeps working; the prometheus_client
adaptor exports them under aioinformer_ names."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client import CollectorRegistry

from aioinformer._kernel.metrics import new_handler_metrics, new_queued_deltas_metric
from aioinformer.contrib.prometheus import HANDLER_LATENCY_BUCKETS, PrometheusMetricsProvider
from aioinformer.informer import SharedIndexInformer
from aioinformer.processor import HandlerMetricsProvider
from aioinformer.testing.lister_watcher import FakeListerWatcher
from aioinformer.workqueue import WorkQueue, get_metrics_provider, set_metrics_provider
from tests._support_tasks import no_task_outlives_the_test  # noqa: F401
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterator


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}}


class Recorded:
    """Any metric: remembers every value it was given."""

    def __init__(self) -> None:
        self.sets: list[float] = []
        self.observations: list[float] = []
        self.incs = 0

    def set(self, value: float) -> None:
        self.sets.append(value)

    def observe(self, value: float) -> None:
        self.observations.append(value)

    def inc(self) -> None:
        self.incs += 1

    def dec(self) -> None:
        self.incs -= 1


class WorkqueueOnlyProvider:
    """A provider written before informer metrics existed."""

    def __init__(self) -> None:
        self.metric = Recorded()

    def new_depth_metric(self, name: str) -> Recorded:
        return self.metric

    new_adds_metric = new_latency_metric = new_work_duration_metric = new_depth_metric
    new_unfinished_work_seconds_metric = new_depth_metric
    new_longest_running_processor_seconds_metric = new_retries_metric = new_depth_metric


class FullProvider(WorkqueueOnlyProvider):
    """Both protocols; the informer and handler metrics keyed by their labels."""

    def __init__(self) -> None:
        super().__init__()
        self.metrics: dict[tuple[str, ...], Recorded] = {}

    def _metric(self, *labels: str) -> Recorded:
        return self.metrics.setdefault(labels, Recorded())

    def new_handler_pending_metric(self, informer: str, handler: str) -> Recorded:
        return self._metric("pending", informer, handler)

    def new_handler_latency_metric(self, informer: str, handler: str) -> Recorded:
        return self._metric("latency", informer, handler)

    def new_handler_errors_metric(self, informer: str, handler: str) -> Recorded:
        return self._metric("errors", informer, handler)

    def new_informer_queued_deltas_metric(self, informer: str) -> Recorded:
        return self._metric("queued", informer)


@pytest.fixture(autouse=True)
def restore_installed_provider() -> Iterator[None]:
    previous = get_metrics_provider()
    yield
    set_metrics_provider(previous)


async def run_handlers(informer: SharedIndexInformer, source: FakeListerWatcher) -> None:
    """Deliver two objects to every handler, one listed and one watched; the handler
    named "failing" raises on each."""
    source.add(pod("listed"))
    calls: list[str] = []

    def ok(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        calls.append("ok")

    def failing(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        calls.append("failing")
        raise RuntimeError("handler bug")

    informer.add_event_handler(on_add=ok, name="ok")
    informer.add_event_handler(on_add=failing, name="failing")
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.add(pod("watched"))
        await wait_until(lambda: len(calls) == 4)
        await asyncio.sleep(0)


def test_the_prometheus_adaptor_implements_the_handler_protocol() -> None:
    provider = PrometheusMetricsProvider(registry=CollectorRegistry())
    assert isinstance(provider, HandlerMetricsProvider)
    assert not isinstance(WorkqueueOnlyProvider(), HandlerMetricsProvider)


async def test_handlers_and_the_informer_report_to_a_provider_that_implements_them() -> None:
    provider = FullProvider()
    set_metrics_provider(provider)
    source = FakeListerWatcher()
    await run_handlers(SharedIndexInformer(source, name="pods"), source)

    metrics = provider.metrics
    assert set(metrics) == {
        ("pending", "pods", "ok"),
        ("latency", "pods", "ok"),
        ("errors", "pods", "ok"),
        ("pending", "pods", "failing"),
        ("latency", "pods", "failing"),
        ("errors", "pods", "failing"),
        ("queued", "pods"),
    }
    for handler in ("ok", "failing"):
        assert len(metrics["latency", "pods", handler].observations) == 2
        assert all(seconds >= 0 for seconds in metrics["latency", "pods", handler].observations)
        # Sync handlers are called by the dispatcher itself when nothing of theirs is
        # queued: nothing is ever pending; 0 once closed.
        assert set(metrics["pending", "pods", handler].sets) == {0}
    assert metrics["errors", "pods", "ok"].incs == 0
    assert metrics["errors", "pods", "failing"].incs == 2
    assert metrics["queued", "pods"].sets
    assert metrics["queued", "pods"].sets[-1] == 0


async def test_a_workqueue_only_provider_keeps_working_and_records_no_informer_metrics() -> None:
    provider = WorkqueueOnlyProvider()
    set_metrics_provider(provider)
    assert new_handler_metrics("pods", "ok") is None
    new_queued_deltas_metric("pods").set(3)  # a no-op gauge

    source = FakeListerWatcher()
    await run_handlers(SharedIndexInformer(source, name="pods"), source)
    async with WorkQueue[str](name="q") as queue:
        queue.add("a")
    assert provider.metric.incs == 2  # the workqueue's depth and adds, nothing else


async def test_prometheus_exports_handler_and_informer_metrics_by_informer_and_handler() -> None:
    registry = CollectorRegistry()
    set_metrics_provider(PrometheusMetricsProvider(registry=registry))
    source = FakeListerWatcher()
    await run_handlers(SharedIndexInformer(source, name="pods"), source)

    def value(metric: str, **labels: str) -> float | None:
        return registry.get_sample_value(metric, {"informer": "pods", **labels})

    assert value("aioinformer_handler_errors_total", handler="failing") == 2
    assert value("aioinformer_handler_errors_total", handler="ok") == 0
    assert value("aioinformer_handler_latency_seconds_count", handler="ok") == 2
    top = str(HANDLER_LATENCY_BUCKETS[-1])
    assert value("aioinformer_handler_latency_seconds_bucket", handler="ok", le=top) == 2
    assert value("aioinformer_handler_pending", handler="ok") == 0
    assert value("aioinformer_informer_queued_deltas") == 0
