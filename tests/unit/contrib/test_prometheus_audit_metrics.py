"""The cache audit metrics in ``prometheus_client``: audits by result, differences by kind
and the audits' duration, labelled by informer, from a real informer's audits."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from prometheus_client import CollectorRegistry

from aioinformer.audit import CacheAudit
from aioinformer.contrib.prometheus import AUDIT_DURATION_BUCKETS, PrometheusMetricsProvider
from aioinformer.informer import SharedIndexInformer
from aioinformer.workqueue import set_metrics_provider
from tests._support_health import clock as clock
from tests._support_health import lw as lw
from tests._support_health import pod
from tests._support_metrics import restore_installed_provider as restore_installed_provider

if TYPE_CHECKING:
    from aioinformer.testing.clock import FakeClock
    from aioinformer.testing.lister_watcher import FakeListerWatcher


@pytest.mark.usefixtures("restore_installed_provider")
async def test_audits_show_up_by_result_and_their_differences_by_kind(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    registry = CollectorRegistry()
    set_metrics_provider(PrometheusMetricsProvider(registry=registry))
    informer = SharedIndexInformer(lw, clock=clock, name="pods", audit=CacheAudit())
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await lw.wait_for_watchers(1)
        await informer.audit_cache()
        lw.delete("ns/a", notify=False)
        lw.add(pod("c"), notify=False)
        lw.send_bookmark()
        await informer.audit_cache()

    def value(metric: str, **labels: str) -> float | None:
        return registry.get_sample_value(metric, {"informer": "pods", **labels})

    assert value("aioinformer_cache_audits_total", result="consistent") == 1
    assert value("aioinformer_cache_audits_total", result="different") == 1
    assert value("aioinformer_cache_audits_total", result="failed") == 0
    assert value("aioinformer_cache_audit_differences_total", kind="extra") == 1
    assert value("aioinformer_cache_audit_differences_total", kind="missing") == 1
    assert value("aioinformer_cache_audit_differences_total", kind="stale") == 0
    assert value("aioinformer_cache_audit_duration_seconds_count") == 2
    last = str(AUDIT_DURATION_BUCKETS[-1])
    assert value("aioinformer_cache_audit_duration_seconds_bucket", le=last) == 2
