"""The prometheus_client adapter's webhook series: controller-runtime's names and labels
(``controller_runtime_webhook_*``, label ``webhook`` the path, ``code`` the HTTP status),
reached through ``set_metrics_provider`` alone, with values after answers of two codes."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from aioinformer._kernel.metrics import WebhookMetricsProvider, set_metrics_provider
from aioinformer.contrib.prometheus import PrometheusMetricsProvider
from aioinformer.operator._metrics import new_webhook_metrics
from aioinformer.testing.clock import FakeClock
from tests._support_metrics import restore_installed_provider  # noqa: F401


async def test_answers_are_counted_by_code_timed_and_in_flight_while_answered(
    restore_installed_provider: None,  # noqa: F811
) -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry=registry)
    assert isinstance(provider, WebhookMetricsProvider)
    set_metrics_provider(provider)
    clock = FakeClock()
    recorder = new_webhook_metrics("/validate-example-com-v1-widget", clock=clock)
    labels = {"webhook": "/validate-example-com-v1-widget"}

    started = recorder.started()
    assert registry.get_sample_value("controller_runtime_webhook_requests_in_flight", labels) == 1
    await clock.advance(0.25)
    recorder.finished(started, 200)
    recorder.finished(recorder.started(), 200)
    recorder.finished(recorder.started(), 400)

    def requests(code: str) -> float | None:
        return registry.get_sample_value(
            "controller_runtime_webhook_requests_total", {**labels, "code": code}
        )

    assert (requests("200"), requests("400")) == (2, 1)
    assert registry.get_sample_value("controller_runtime_webhook_requests_in_flight", labels) == 0
    assert (
        registry.get_sample_value("controller_runtime_webhook_latency_seconds_count", labels) == 3
    )
    assert (
        registry.get_sample_value("controller_runtime_webhook_latency_seconds_sum", labels) == 0.25
    )


def test_without_a_webhook_provider_nothing_is_recorded(
    restore_installed_provider: None,  # noqa: F811
) -> None:
    set_metrics_provider(None)
    recorder = new_webhook_metrics("/convert", clock=FakeClock())
    recorder.finished(recorder.started(), 200)  # the no-op recorder
    assert type(recorder).__name__ == "WebhookMetrics"
