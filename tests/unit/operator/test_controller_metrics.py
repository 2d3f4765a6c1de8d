"""Controller metrics under controller-runtime's names: a Controller on a FakeClock,
recording into a provider of plain recorders installed with ``set_metrics_provider``.

Each outcome maps onto controller-runtime's ``result`` label as controller-runtime maps
it (a 409 conflict, which the controller retries as a ``Requeue()`` without calling it a
failure, counts as ``requeue``); errors, timeouts, durations on the controller's clock,
busy workers and the worker count; a provider without the protocol records nothing.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from aioinformer._kernel.metrics import ControllerMetricsProvider, set_metrics_provider
from aioinformer.errors import Conflict, Requeue
from aioinformer.operator._metrics import ControllerMetrics, ReconcileResult
from aioinformer.operator.controller import Controller
from aioinformer.testing.clock import FakeClock
from tests._support_controller import limiter
from tests._support_metrics import (  # noqa: F401
    RecordingProvider,
    WorkqueueOnlyProvider,
    restore_installed_provider,
)
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable

RESULTS = ("success", "error", "requeue", "requeue_after")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def provider(restore_installed_provider: None) -> RecordingProvider:  # noqa: F811
    provider = RecordingProvider()
    set_metrics_provider(provider)
    return provider


def results(provider: RecordingProvider, controller: str) -> dict[str, float]:
    return {
        result: provider.value("controller_runtime_reconcile_total", controller, result)
        for result in RESULTS
    }


def conflict() -> Conflict:
    return Conflict({"code": 409, "reason": "Conflict", "message": "the object has been modified"})


def test_the_recording_provider_implements_the_controller_protocol() -> None:
    assert isinstance(RecordingProvider(), ControllerMetricsProvider)
    assert not isinstance(WorkqueueOnlyProvider(), ControllerMetricsProvider)


def test_every_series_exists_at_zero_and_the_worker_count_is_set_on_creation(
    provider: RecordingProvider, clock: FakeClock
) -> None:
    Controller("idle", lambda key: None, workers=4, clock=clock)
    assert results(provider, "idle") == dict.fromkeys(RESULTS, 0.0)
    assert [result.value for result in ReconcileResult] == [
        "error",
        "requeue_after",
        "requeue",
        "success",
    ]
    for metric in (
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_timeouts_total",
        "controller_runtime_reconcile_time_seconds",
        "controller_runtime_active_workers",
    ):
        assert ("idle",) in provider.series(metric)
    assert provider.metric("controller_runtime_max_concurrent_reconciles", "idle").sets == [4]


async def test_each_outcome_counts_under_controller_runtime_s_result(
    provider: RecordingProvider, clock: FakeClock
) -> None:
    outcomes: dict[str, Callable[[], Requeue | None]] = {
        "ok": lambda: None,
        "again": Requeue,
        "later": lambda: Requeue(after=5),
        "now": lambda: Requeue(after=0),  # no delay: controller-runtime's plain Requeue
    }

    async def reconcile(key: str) -> Requeue | None:
        if key == "fail":
            raise ValueError("broken")
        if key == "wrapped":
            raise Requeue(ValueError("broken"), after=5)  # the error wins over ``after``
        if key == "stale":
            raise conflict()
        return outcomes[key]()

    # Retries are far in virtual time: each key is reconciled once.
    controller = Controller("outcomes", reconcile, rate_limiter=limiter(1000.0), clock=clock)
    for key in ("ok", "again", "later", "now", "fail", "wrapped", "stale"):
        controller.enqueue(key)
    async with controller:
        await wait_until(lambda: controller.statistics().reconciles == 7)

    assert results(provider, "outcomes") == {
        "success": 1,
        "error": 2,
        "requeue": 3,  # again, now, and the conflict
        "requeue_after": 1,
    }
    stats = controller.statistics()
    assert provider.value("controller_runtime_reconcile_errors_total", "outcomes") == 2
    assert stats.failures == 2  # errors_total agrees with the controller's own count
    assert (stats.requeues, stats.conflicts) == (3, 1)
    assert provider.value("controller_runtime_reconcile_timeouts_total", "outcomes") == 0
    time = provider.metric("controller_runtime_reconcile_time_seconds", "outcomes")
    assert time.observations == [0.0] * 7  # nothing took virtual time
    assert provider.value("controller_runtime_active_workers", "outcomes") == 0


async def test_reconcile_time_is_read_on_the_controller_s_clock(
    provider: RecordingProvider, clock: FakeClock
) -> None:
    async def reconcile(key: str) -> None:
        await clock.sleep(2.5)
        if key == "fail":
            raise ValueError("broken")

    controller = Controller("timed", reconcile, rate_limiter=limiter(1000.0), clock=clock)
    controller.enqueue("ok")
    controller.enqueue("fail")
    async with controller:
        await clock.wait_for_sleepers(1)
        await clock.advance(2.5)
        await clock.wait_for_sleepers(1)
        await clock.advance(2.5)
        await wait_until(lambda: controller.statistics().reconciles == 2)
    time = provider.metric("controller_runtime_reconcile_time_seconds", "timed")
    assert time.observations == [2.5, 2.5]  # failures are timed too
    assert results(provider, "timed") == {
        "success": 1,
        "error": 1,
        "requeue": 0,
        "requeue_after": 0,
    }


async def test_active_workers_counts_the_workers_busy_with_a_key(
    provider: RecordingProvider, clock: FakeClock
) -> None:
    release = asyncio.Event()
    started: list[str] = []

    async def reconcile(key: str) -> None:
        started.append(key)
        await release.wait()

    controller = Controller("busy", reconcile, workers=3, clock=clock)
    active = provider.metric("controller_runtime_active_workers", "busy")
    async with controller:
        controller.enqueue("a")
        controller.enqueue("b")
        await wait_until(lambda: len(started) == 2)
        assert active.value == 2
        release.set()
        await wait_until(lambda: controller.statistics().reconciles == 2)
        assert active.value == 0
    assert provider.metric("controller_runtime_max_concurrent_reconciles", "busy").sets == [3]


async def test_a_timeout_counts_as_an_error_and_as_a_timeout(
    provider: RecordingProvider, clock: FakeClock
) -> None:
    async def reconcile(key: str) -> None:
        await asyncio.Event().wait()  # hangs until the timeout cancels it

    controller = Controller(
        "slow", reconcile, rate_limiter=limiter(1000.0), clock=clock, reconcile_timeout=30
    )
    controller.enqueue("k")
    async with controller:
        await clock.wait_for_sleepers(1)
        await clock.advance(30)
        await wait_until(lambda: controller.statistics().timeouts == 1)
    assert provider.value("controller_runtime_reconcile_timeouts_total", "slow") == 1
    assert provider.value("controller_runtime_reconcile_errors_total", "slow") == 1
    assert results(provider, "slow")["error"] == 1
    time = provider.metric("controller_runtime_reconcile_time_seconds", "slow")
    assert time.observations == [30.0]


async def test_a_reconcile_cut_short_by_the_stop_frees_its_worker_and_records_no_result(
    provider: RecordingProvider, clock: FakeClock
) -> None:
    started = asyncio.Event()

    async def reconcile(key: str) -> None:
        started.set()
        await asyncio.Event().wait()

    controller = Controller("cut", reconcile, clock=clock, drain_timeout=0)
    controller.enqueue("k")
    async with controller:
        await started.wait()
        assert provider.value("controller_runtime_active_workers", "cut") == 1
    assert provider.value("controller_runtime_active_workers", "cut") == 0
    assert results(provider, "cut") == dict.fromkeys(RESULTS, 0.0)
    assert provider.metric("controller_runtime_reconcile_time_seconds", "cut").observations == []


async def test_a_provider_without_the_controller_protocol_records_nothing(
    restore_installed_provider: None,  # noqa: F811
    clock: FakeClock,
) -> None:
    provider = WorkqueueOnlyProvider()
    set_metrics_provider(provider)
    keys: list[str] = []
    controller = Controller("plain", keys.append, clock=clock)
    assert type(controller._metrics) is ControllerMetrics  # the no-op recorder
    controller.enqueue("k")
    async with controller:
        await wait_until(lambda: keys == ["k"])
    assert set(provider.names) == {"plain"}  # only its workqueue's metrics


async def test_with_no_provider_the_controller_records_nothing_and_runs(
    restore_installed_provider: None,  # noqa: F811
    clock: FakeClock,
) -> None:
    set_metrics_provider(None)
    keys: list[str] = []
    controller = Controller("none", keys.append, clock=clock)
    assert type(controller._metrics) is ControllerMetrics
    controller.enqueue("k")
    async with controller:
        await wait_until(lambda: keys == ["k"])
    assert controller.statistics().successes == 1
