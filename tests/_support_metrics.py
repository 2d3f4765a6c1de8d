"""Shared by the metrics tests: a provider whose metrics are plain recorders.

``RecordingProvider`` implements the reflector, leader-election, controller, webhook, REST
client and index metric protocols (not the workqueue's), keeping each metric object by ``(metric,
*labels)`` so a test reads ``provider.value("reflector_lists_total", "pods")`` or
``provider.value("rest_client_requests_total", "404", "GET", "127.0.0.1:8080")``;
``WorkqueueOnlyProvider`` implements the workqueue protocol alone, as providers written
before the other protocols existed do. The fixture ``restore_installed_provider`` puts
back the provider installed before the test (import it into a test module to use it).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import pytest

from aioinformer.workqueue import get_metrics_provider, set_metrics_provider

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


@pytest.fixture
def restore_installed_provider() -> Iterator[None]:
    """Put the installed metrics provider back after the test."""
    previous = get_metrics_provider()
    yield
    set_metrics_provider(previous)


class RecordedMetric:
    """Counter, gauge and histogram in one: the running value and every observation."""

    def __init__(self) -> None:
        self.value = 0.0
        self.observations: list[float] = []
        self.sets: list[float] = []

    def inc(self, amount: float = 1) -> None:
        self.value += amount

    def dec(self) -> None:
        self.value -= 1

    def set(self, value: float) -> None:
        self.value = value
        self.sets.append(value)

    def observe(self, value: float) -> None:
        self.observations.append(value)


class RecordingProvider:
    """A reflector and leader metrics provider recording into :class:`RecordedMetric`."""

    def __init__(self) -> None:
        self.metrics: defaultdict[tuple[str, ...], RecordedMetric] = defaultdict(RecordedMetric)
        self.heard: dict[str, Callable[[], float]] = {}

    def metric(self, *key: str) -> RecordedMetric:
        return self.metrics[key]

    def value(self, *key: str) -> float:
        return self.metrics[key].value

    def new_reflector_lists_metric(self, name: str) -> RecordedMetric:
        return self.metric("reflector_lists_total", name)

    def new_reflector_list_duration_metric(self, name: str) -> RecordedMetric:
        return self.metric("reflector_list_duration_seconds", name)

    def new_reflector_items_in_list_metric(self, name: str) -> RecordedMetric:
        return self.metric("reflector_items_per_list", name)

    def new_reflector_watch_lists_metric(self, name: str) -> RecordedMetric:
        return self.metric("reflector_watchLists_total", name)

    def new_reflector_watch_list_failures_metric(self, name: str, outcome: str) -> RecordedMetric:
        return self.metric("aioinformer_reflector_watch_list_failures_total", name, outcome)

    def new_reflector_watches_metric(self, name: str) -> RecordedMetric:
        return self.metric("reflector_watches_total", name)

    def new_reflector_short_watches_metric(self, name: str) -> RecordedMetric:
        return self.metric("reflector_short_watches_total", name)

    def new_reflector_watch_duration_metric(self, name: str) -> RecordedMetric:
        return self.metric("reflector_watch_duration_seconds", name)

    def new_reflector_items_in_watch_metric(self, name: str) -> RecordedMetric:
        return self.metric("reflector_items_per_watch", name)

    def new_reflector_last_resource_version_metric(self, name: str) -> RecordedMetric:
        return self.metric("reflector_last_resource_version", name)

    def new_reflector_relists_metric(self, name: str) -> RecordedMetric:
        return self.metric("aioinformer_reflector_relists_total", name)

    def new_reflector_watch_events_metric(self, name: str, event_type: str) -> RecordedMetric:
        return self.metric("aioinformer_reflector_watch_events_total", name, event_type)

    def set_reflector_seconds_since_heard_function(
        self, name: str, seconds_since_heard: Callable[[], float]
    ) -> None:
        self.heard[name] = seconds_since_heard

    def new_leader_status_metric(self, name: str) -> RecordedMetric:
        return self.metric("leader_election_master_status", name)

    def new_leader_acquisitions_metric(self, name: str) -> RecordedMetric:
        return self.metric("aioinformer_leader_election_acquisitions_total", name)

    def new_leader_renewal_failures_metric(self, name: str) -> RecordedMetric:
        return self.metric("aioinformer_leader_election_renewal_failures_total", name)

    def new_webhook_requests_metric(self, webhook: str, code: str) -> RecordedMetric:
        return self.metric("controller_runtime_webhook_requests_total", webhook, code)

    def new_webhook_latency_metric(self, webhook: str) -> RecordedMetric:
        return self.metric("controller_runtime_webhook_latency_seconds", webhook)

    def new_webhook_in_flight_metric(self, webhook: str) -> RecordedMetric:
        return self.metric("controller_runtime_webhook_requests_in_flight", webhook)

    def new_controller_reconciles_metric(self, controller: str, result: str) -> RecordedMetric:
        return self.metric("controller_runtime_reconcile_total", controller, result)

    def new_controller_reconcile_errors_metric(self, controller: str) -> RecordedMetric:
        return self.metric("controller_runtime_reconcile_errors_total", controller)

    def new_controller_reconcile_time_metric(self, controller: str) -> RecordedMetric:
        return self.metric("controller_runtime_reconcile_time_seconds", controller)

    def new_controller_reconcile_timeouts_metric(self, controller: str) -> RecordedMetric:
        return self.metric("controller_runtime_reconcile_timeouts_total", controller)

    def new_controller_active_workers_metric(self, controller: str) -> RecordedMetric:
        return self.metric("controller_runtime_active_workers", controller)

    def new_controller_max_concurrent_reconciles_metric(self, controller: str) -> RecordedMetric:
        return self.metric("controller_runtime_max_concurrent_reconciles", controller)

    def new_rest_client_requests_metric(self, code: str, method: str, host: str) -> RecordedMetric:
        return self.metric("rest_client_requests_total", code, method, host)

    def new_rest_client_request_duration_metric(
        self, verb: str, url: str, host: str
    ) -> RecordedMetric:
        return self.metric("rest_client_request_duration_seconds", verb, url, host)

    def new_index_errors_metric(self, informer: str, index: str) -> RecordedMetric:
        return self.metric("aioinformer_index_errors_total", informer, index)

    def series(self, metric: str) -> dict[tuple[str, ...], RecordedMetric]:
        """Every metric object made for ``metric``, by its labels."""
        return {key[1:]: value for key, value in self.metrics.items() if key[0] == metric}


class WorkqueueOnlyProvider:
    """Implements only the workqueue's ``MetricsProvider``: one shared recorder."""

    def __init__(self) -> None:
        self.recorded = RecordedMetric()
        self.names: list[str] = []

    def _new(self, name: str) -> RecordedMetric:
        self.names.append(name)
        return self.recorded

    def new_depth_metric(self, name: str) -> RecordedMetric:
        return self._new(name)

    def new_adds_metric(self, name: str) -> RecordedMetric:
        return self._new(name)

    def new_latency_metric(self, name: str) -> RecordedMetric:
        return self._new(name)

    def new_work_duration_metric(self, name: str) -> RecordedMetric:
        return self._new(name)

    def new_unfinished_work_seconds_metric(self, name: str) -> RecordedMetric:
        return self._new(name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> RecordedMetric:
        return self._new(name)

    def new_retries_metric(self, name: str) -> RecordedMetric:
        return self._new(name)
