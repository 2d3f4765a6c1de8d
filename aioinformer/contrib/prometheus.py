"""Workqueue metrics in ``prometheus_client``, under client-go's metric names.

Role: a :class:`~aioinformer.workqueue.MetricsProvider` backed by seven labelled
``prometheus_client`` metric families, one child per queue name (label ``name``):

========================================== ========= ======================================
metric                                     type      meaning
========================================== ========= ======================================
``workqueue_depth``                        Gauge     items queued, ready to be handed out
``workqueue_adds_total``                   Counter   adds accepted (duplicates excluded)
``workqueue_queue_duration_seconds``       Histogram add → get
``workqueue_work_duration_seconds``        Histogram get → done
``workqueue_unfinished_work_seconds``      Gauge     summed age of items being processed
``workqueue_longest_running_processor_     Gauge     age of the oldest item being processed
seconds``
``workqueue_retries_total``                Counter   delayed re-adds
========================================== ========= ======================================

The histograms use client-go's buckets (10 ns to 10 s, one per power of ten). Requires the
``prometheus`` extra (``pip install aioinformer[prometheus]``). Example::

    from aioinformer.contrib.prometheus import PrometheusMetricsProvider
    from aioinformer.workqueue import set_metrics_provider

    set_metrics_provider(PrometheusMetricsProvider())   # before creating queues
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

if TYPE_CHECKING:
    from aioinformer.workqueue import (
        CounterMetric,
        GaugeMetric,
        HistogramMetric,
        SettableGaugeMetric,
    )

__all__ = ["DURATION_BUCKETS", "PrometheusMetricsProvider"]

DURATION_BUCKETS: Final = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
"""Histogram buckets of the two duration metrics: 1e-8 s to 10 s, as client-go's."""

_LABELS: Final = ("name",)


class PrometheusMetricsProvider:
    """Registers the workqueue metric families in ``registry`` (the default registry
    unless given) and hands each named queue its labelled children.

    Create one per registry: registering the families twice in one registry fails.
    """

    def __init__(self, *, registry: CollectorRegistry | None = REGISTRY) -> None:
        self._depth = Gauge(
            "workqueue_depth",
            "Current depth of the workqueue.",
            _LABELS,
            registry=registry,
        )
        self._adds = Counter(
            "workqueue_adds_total",
            "Total number of adds handled by the workqueue.",
            _LABELS,
            registry=registry,
        )
        self._latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in the workqueue before being requested.",
            _LABELS,
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self._work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from the workqueue takes.",
            _LABELS,
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self._unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "Seconds of work in progress not yet observed by work_duration; large "
            "values indicate stuck workers.",
            _LABELS,
            registry=registry,
        )
        self._longest = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds the longest running processor of the workqueue has run.",
            _LABELS,
            registry=registry,
        )
        self._retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by the workqueue.",
            _LABELS,
            registry=registry,
        )

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self._depth.labels(name=name)

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self._adds.labels(name=name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self._latency.labels(name=name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self._work_duration.labels(name=name)

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._unfinished.labels(name=name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._longest.labels(name=name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self._retries.labels(name=name)

    def __repr__(self) -> str:
        return "<PrometheusMetricsProvider>"
