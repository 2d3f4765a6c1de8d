"""The prometheus_client adapter's controller and REST client series: controller-runtime's
and client-go's metric names, label names and buckets, on a fresh CollectorRegistry,
reached through ``set_metrics_provider`` alone (the way a user turns metrics on), with
values after reconciles of each outcome and requests of each code and method."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from aioinformer._kernel.metrics import (
    ControllerMetricsProvider,
    RestClientMetricsProvider,
    set_metrics_provider,
)
from aioinformer.client._metrics import new_rest_client_metrics
from aioinformer.contrib.prometheus import (
    RECONCILE_TIME_BUCKETS,
    REQUEST_DURATION_BUCKETS,
    PrometheusMetricsProvider,
)
from aioinformer.errors import Conflict, Requeue
from aioinformer.operator.controller import Controller
from aioinformer.testing.clock import FakeClock
from tests._support_controller import limiter
from tests._support_metrics import restore_installed_provider  # noqa: F401
from tests._support_wait import wait_until

# controller-runtime's pkg/internal/controller/metrics and client-go's REST client
# metrics as k8s.io/component-base registers them: (name, type, labels).
CONTROLLER_RUNTIME_SERIES = [
    ("controller_runtime_reconcile_total", "counter", {"controller", "result"}),
    ("controller_runtime_reconcile_errors_total", "counter", {"controller"}),
    ("controller_runtime_reconcile_timeouts_total", "counter", {"controller"}),
    ("controller_runtime_reconcile_time_seconds", "histogram", {"controller"}),
    ("controller_runtime_active_workers", "gauge", {"controller"}),
    ("controller_runtime_max_concurrent_reconciles", "gauge", {"controller"}),
]
REST_CLIENT_SERIES = [
    ("rest_client_requests_total", "counter", {"code", "method", "host"}),
    ("rest_client_request_duration_seconds", "histogram", {"verb", "host"}),
]
CONTROLLER_RUNTIME_BUCKETS = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60,
]  # fmt: skip
CLIENT_GO_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0]

HOST = "10.0.0.1:6443"


@pytest.fixture
def registry(restore_installed_provider: None) -> CollectorRegistry:  # noqa: F811
    """A fresh registry whose provider is installed as a user installs it."""
    registry = CollectorRegistry()
    set_metrics_provider(PrometheusMetricsProvider(registry=registry))
    return registry


def families(registry: CollectorRegistry) -> dict[str, tuple[str, set[str]]]:
    """Each metric family's type and the label names of its samples."""
    found: dict[str, tuple[str, set[str]]] = {}
    for family in registry.collect():
        labels = {name for sample in family.samples for name in sample.labels}
        found[family.name] = (family.type, labels - {"le"})
    return found


def test_the_provider_implements_the_controller_and_rest_client_protocols() -> None:
    provider = PrometheusMetricsProvider(registry=CollectorRegistry())
    assert isinstance(provider, ControllerMetricsProvider)
    assert isinstance(provider, RestClientMetricsProvider)


def test_the_buckets_are_controller_runtime_s_and_client_go_s() -> None:
    assert list(RECONCILE_TIME_BUCKETS) == CONTROLLER_RUNTIME_BUCKETS
    assert list(REQUEST_DURATION_BUCKETS) == CLIENT_GO_BUCKETS


async def test_reconciles_of_each_outcome_show_up_under_controller_runtime_s_names(
    registry: CollectorRegistry,
) -> None:
    clock = FakeClock()

    async def reconcile(key: str) -> Requeue | None:
        await clock.sleep(0.25)
        if key.startswith("fail"):
            raise ValueError("broken")
        if key == "stale":
            raise Conflict({"code": 409, "reason": "Conflict", "message": "modified"})
        if key == "again":
            return Requeue()
        if key == "later":
            return Requeue(after=10)
        return None

    controller = Controller(
        "widgets", reconcile, workers=2, rate_limiter=limiter(1000.0), clock=clock
    )
    keys = ["ok-1", "ok-2", "fail-1", "fail-2", "fail-3", "stale", "again", "later"]
    for key in keys:
        controller.enqueue(key)
    async with controller:
        while controller.statistics().reconciles < len(keys):
            await clock.wait_for_sleepers(1)
            await clock.advance(0.25)
        await wait_until(lambda: controller.statistics().reconciles == len(keys))

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, {"controller": "widgets", **labels})

    totals = {
        result: value("controller_runtime_reconcile_total", result=result)
        for result in ("success", "error", "requeue", "requeue_after")
    }
    assert totals == {"success": 2, "error": 3, "requeue": 2, "requeue_after": 1}
    assert value("controller_runtime_reconcile_errors_total") == 3
    assert value("controller_runtime_reconcile_timeouts_total") == 0
    assert value("controller_runtime_reconcile_time_seconds_count") == len(keys)
    assert value("controller_runtime_reconcile_time_seconds_sum") == 0.25 * len(keys)
    assert value("controller_runtime_reconcile_time_seconds_bucket", le="0.2") == 0
    assert value("controller_runtime_reconcile_time_seconds_bucket", le="0.25") == len(keys)
    assert value("controller_runtime_active_workers") == 0
    assert value("controller_runtime_max_concurrent_reconciles") == 2

    found = families(registry)
    for name, kind, labels in CONTROLLER_RUNTIME_SERIES:
        family = name.removesuffix("_total")  # prometheus_client names counters without it
        assert found[family] == (kind, labels), name
    exposition = generate_latest(registry).decode()
    for name, kind, _ in CONTROLLER_RUNTIME_SERIES:
        assert f"# TYPE {name} {kind}" in exposition
        assert f"# HELP {name} " in exposition
    assert 'controller_runtime_reconcile_time_seconds_bucket{controller="widgets",le="60.0"}' in (
        exposition
    )


def test_requests_of_each_code_and_method_show_up_under_client_go_s_names(
    registry: CollectorRegistry,
) -> None:
    clock = FakeClock()
    metrics = new_rest_client_metrics(f"https://{HOST}", None, clock=clock)  # the installed
    for method, status in [("GET", 200), ("GET", 200), ("GET", 404), ("POST", 201)]:
        metrics.answered(method, status)
        metrics.finished(method, "/api/v1/namespaces/default/pods/web", None, metrics.started())
    metrics.answered("PATCH", 500)
    metrics.unanswered("GET")

    def requests(code: str, method: str) -> float | None:
        labels = {"code": code, "method": method, "host": HOST}
        return registry.get_sample_value("rest_client_requests_total", labels)

    assert requests("200", "GET") == 2
    assert requests("404", "GET") == 1
    assert requests("201", "POST") == 1
    assert requests("500", "PATCH") == 1
    assert requests("<error>", "GET") == 1
    duration = "rest_client_request_duration_seconds_count"
    assert registry.get_sample_value(duration, {"verb": "GET", "host": HOST}) == 3
    assert registry.get_sample_value(duration, {"verb": "POST", "host": HOST}) == 1

    found = families(registry)
    for name, kind, labels in REST_CLIENT_SERIES:
        assert found[name.removesuffix("_total")] == (kind, labels), name
    exposition = generate_latest(registry).decode()
    for name, kind, _ in REST_CLIENT_SERIES:
        assert f"# TYPE {name} {kind}" in exposition
        assert f"# HELP {name} " in exposition
    assert "url=" not in exposition  # component-base labels durations by verb and host only


def test_controllers_and_clients_built_before_the_install_record_nothing(
    restore_installed_provider: None,  # noqa: F811
) -> None:
    set_metrics_provider(None)
    clock = FakeClock()
    Controller("early", lambda key: None, clock=clock)
    early = new_rest_client_metrics(f"https://{HOST}", None, clock=clock)
    registry = CollectorRegistry()
    set_metrics_provider(PrometheusMetricsProvider(registry=registry))
    early.answered("GET", 200)
    assert (
        registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "early"}
        )
        is None
    )
    assert (
        registry.get_sample_value(
            "rest_client_requests_total", {"code": "200", "method": "GET", "host": HOST}
        )
        is None
    )
