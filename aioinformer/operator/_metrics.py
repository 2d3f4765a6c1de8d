"""The operator's metrics: what a leader elector, a sharder and a controller report, turned
into metrics.

Role: each reports the milestones of its cycle to a *recorder*, which writes them to the
metric objects a provider made for it
(:class:`~aioinformer._kernel.metrics.LeaderMetricsProvider`,
:class:`~aioinformer._kernel.metrics.WebhookMetricsProvider`,
:class:`~aioinformer._kernel.metrics.ShardingMetricsProvider`,
:class:`~aioinformer._kernel.metrics.ControllerMetricsProvider`), as the reflector's
recorder does (:mod:`aioinformer._pipeline.metric_recorders`).

Input: the component's calls, sync, on its event loop: an elector's run started, lease
acquired, renewal failed, leadership left; a ring's membership changed; a controller's
reconcile started, ended with its result, and its worker freed; a webhook request
arrived and was answered with a status code. Output:
``inc``/``dec``/``set``/``observe`` calls on the provider's metric objects.

Cost: a reconcile costs two clock reads and four metric updates, on objects resolved when
the controller was created. A component with no provider, or one lacking its protocol,
gets the no-op recorder.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

from aioinformer._kernel.metrics import (
    ControllerMetricsProvider,
    LeaderMetricsProvider,
    ShardingMetricsProvider,
    WebhookMetricsProvider,
    get_metrics_provider,
)

if TYPE_CHECKING:
    from aioinformer._kernel.clock import Clock
    from aioinformer._kernel.metrics import CounterMetric

__all__ = [
    "ControllerMetrics",
    "LeaderMetrics",
    "ReconcileResult",
    "ShardingMetrics",
    "WebhookMetrics",
    "new_controller_metrics",
    "new_leader_metrics",
    "new_sharding_metrics",
    "new_webhook_metrics",
]


class LeaderMetrics:
    """A leader elector's recorder. This base records nothing."""

    __slots__ = ()

    def started(self) -> None:
        """The election begins: not leading yet."""

    def acquired(self) -> None:
        """The lease was acquired: leading."""

    def renewal_failed(self) -> None:
        """A renewal attempt failed while leading."""

    def stopped_leading(self) -> None:
        """Leadership ended (or the election ended without it)."""


class _ProviderLeaderMetrics(LeaderMetrics):
    """Records an election through a :class:`LeaderMetricsProvider`."""

    __slots__ = ("_acquisitions", "_renewal_failures", "_status")

    def __init__(self, provider: LeaderMetricsProvider, name: str) -> None:
        self._status = provider.new_leader_status_metric(name)
        self._acquisitions = provider.new_leader_acquisitions_metric(name)
        self._renewal_failures = provider.new_leader_renewal_failures_metric(name)

    def started(self) -> None:
        self._status.set(0)

    def acquired(self) -> None:
        self._acquisitions.inc()
        self._status.set(1)

    def renewal_failed(self) -> None:
        self._renewal_failures.inc()

    def stopped_leading(self) -> None:
        self._status.set(0)


_NO_LEADER_METRICS: Final = LeaderMetrics()


def new_leader_metrics(name: str, provider: LeaderMetricsProvider | None) -> LeaderMetrics:
    """The recorder for an election on the lease ``name``: ``provider``'s, else the
    installed provider's when it implements :class:`LeaderMetricsProvider`, else the
    no-op one."""
    chosen = provider if provider is not None else get_metrics_provider()
    if not isinstance(chosen, LeaderMetricsProvider):
        return _NO_LEADER_METRICS
    return _ProviderLeaderMetrics(chosen, name)


class ShardingMetrics:
    """A sharder's recorder. This base records nothing."""

    __slots__ = ()

    def members(self, count: int) -> None:
        """The ring has ``count`` members now."""

    def membership_changed(self) -> None:
        """The set of members changed."""

    def assigned(self) -> None:
        """An object was labelled with a shard."""

    def drained(self) -> None:
        """A drain label was written."""

    def took_over(self) -> None:
        """An expired shard Lease was taken over."""


class _ProviderShardingMetrics(ShardingMetrics):
    """Records a sharder through a :class:`ShardingMetricsProvider`."""

    __slots__ = ("_assignments", "_changes", "_drains", "_members", "_takeovers")

    def __init__(self, provider: ShardingMetricsProvider, ring: str) -> None:
        self._members = provider.new_ring_members_metric(ring)
        self._changes = provider.new_ring_membership_changes_metric(ring)
        self._assignments = provider.new_sharder_assignments_metric(ring)
        self._drains = provider.new_sharder_drains_metric(ring)
        self._takeovers = provider.new_sharder_takeovers_metric(ring)

    def members(self, count: int) -> None:
        self._members.set(count)

    def membership_changed(self) -> None:
        self._changes.inc()

    def assigned(self) -> None:
        self._assignments.inc()

    def drained(self) -> None:
        self._drains.inc()

    def took_over(self) -> None:
        self._takeovers.inc()


_NO_SHARDING_METRICS: Final = ShardingMetrics()


def new_sharding_metrics(ring: str) -> ShardingMetrics:
    """The recorder for the sharder of ``ring``: the installed provider's when it
    implements :class:`ShardingMetricsProvider`, else the no-op one."""
    chosen = get_metrics_provider()
    if not isinstance(chosen, ShardingMetricsProvider):
        return _NO_SHARDING_METRICS
    return _ProviderShardingMetrics(chosen, ring)


# -- index functions ---------------------------------------------------------------------


class ReconcileResult(enum.StrEnum):
    """The ``result`` label values of ``controller_runtime_reconcile_total``, as
    controller-runtime writes them."""

    ERROR = "error"
    """Failed (raised, ``Requeue(err)``, or timed out): retried rate-limited."""
    REQUEUE_AFTER = "requeue_after"
    """Asked for a retry after a delay: ``Requeue(after=s)`` with ``s > 0``."""
    REQUEUE = "requeue"
    """Asked for a rate-limited retry without an error: ``Requeue()``, or a 409
    ``Conflict``, which the controller retries that way without calling it a failure."""
    SUCCESS = "success"
    """Returned without asking for a retry."""


class ControllerMetrics:
    """A controller's recorder. This base records nothing: controllers without a
    provider use it.

    A worker calls :meth:`started` when it takes a key and :meth:`stopped` once it is
    done with it, however the reconcile ended; in between, one of the result methods
    when the reconcile ended with an outcome, none when the controller's stop cancelled
    it. The result methods take what :meth:`started` returned.
    """

    __slots__ = ()

    def started(self) -> float:
        """A worker took a key and reconciles it; returns the start time."""
        return 0.0

    def stopped(self) -> None:
        """The worker is done with the key."""

    def succeeded(self, started: float) -> None:
        """The reconcile returned without asking for a retry."""

    def requeued(self, started: float) -> None:
        """The reconcile asked for a rate-limited retry without an error (or hit a
        409 conflict, retried the same way)."""

    def requeued_after(self, started: float) -> None:
        """The reconcile asked for a retry after a delay."""

    def failed(self, started: float, *, timed_out: bool = False) -> None:
        """The reconcile failed; ``timed_out`` when ``reconcile_timeout`` cancelled it."""


class _ProviderControllerMetrics(ControllerMetrics):
    """Records a controller's reconciles through a :class:`ControllerMetricsProvider`."""

    __slots__ = (
        "_active",
        "_clock",
        "_error",
        "_errors",
        "_requeue",
        "_requeue_after",
        "_success",
        "_time",
        "_timeouts",
    )

    def __init__(
        self, provider: ControllerMetricsProvider, name: str, clock: Clock, workers: int
    ) -> None:
        self._clock = clock
        # Every result's series exists from the start, at zero, as controller-runtime
        # makes them: a rate over a series that appears late misses its first increase.
        results = {
            result: provider.new_controller_reconciles_metric(name, result.value)
            for result in ReconcileResult
        }
        self._success = results[ReconcileResult.SUCCESS]
        self._error = results[ReconcileResult.ERROR]
        self._requeue = results[ReconcileResult.REQUEUE]
        self._requeue_after = results[ReconcileResult.REQUEUE_AFTER]
        self._errors = provider.new_controller_reconcile_errors_metric(name)
        self._time = provider.new_controller_reconcile_time_metric(name)
        self._timeouts = provider.new_controller_reconcile_timeouts_metric(name)
        self._active = provider.new_controller_active_workers_metric(name)
        provider.new_controller_max_concurrent_reconciles_metric(name).set(workers)

    def started(self) -> float:
        self._active.inc()
        return self._clock.monotonic()

    def stopped(self) -> None:
        self._active.dec()

    def succeeded(self, started: float) -> None:
        self._time.observe(self._clock.monotonic() - started)
        self._success.inc()

    def requeued(self, started: float) -> None:
        self._time.observe(self._clock.monotonic() - started)
        self._requeue.inc()

    def requeued_after(self, started: float) -> None:
        self._time.observe(self._clock.monotonic() - started)
        self._requeue_after.inc()

    def failed(self, started: float, *, timed_out: bool = False) -> None:
        self._time.observe(self._clock.monotonic() - started)
        self._errors.inc()
        self._error.inc()
        if timed_out:
            self._timeouts.inc()


_NO_CONTROLLER_METRICS: Final = ControllerMetrics()


def new_controller_metrics(name: str, *, clock: Clock, workers: int) -> ControllerMetrics:
    """The recorder for a controller called ``name`` running ``workers`` workers: the
    installed provider's when it implements :class:`ControllerMetricsProvider`, else the
    no-op one. Durations are read on ``clock``."""
    provider = get_metrics_provider()
    if not isinstance(provider, ControllerMetricsProvider):
        return _NO_CONTROLLER_METRICS
    return _ProviderControllerMetrics(provider, name, clock, workers)


class WebhookMetrics:
    """A webhook path's recorder. This base records nothing.

    The server calls :meth:`started` when a request for the path arrives and
    :meth:`finished` with what it returned once the answer is written, whatever it was."""

    __slots__ = ()

    def started(self) -> float:
        """A request arrived; returns the time it did."""
        return 0.0

    def finished(self, started: float, code: int) -> None:
        """The request was answered with HTTP status ``code``."""


class _ProviderWebhookMetrics(WebhookMetrics):
    """Records a webhook path's requests through a :class:`WebhookMetricsProvider`."""

    __slots__ = ("_clock", "_codes", "_in_flight", "_latency", "_path", "_provider")

    def __init__(self, provider: WebhookMetricsProvider, path: str, clock: Clock) -> None:
        self._provider = provider
        self._path = path
        self._clock = clock
        self._latency = provider.new_webhook_latency_metric(path)
        self._in_flight = provider.new_webhook_in_flight_metric(path)
        # One counter per status code met, made the first time: codes are few.
        self._codes: dict[int, CounterMetric] = {}

    def started(self) -> float:
        self._in_flight.inc()
        return self._clock.monotonic()

    def finished(self, started: float, code: int) -> None:
        self._in_flight.dec()
        self._latency.observe(self._clock.monotonic() - started)
        counter = self._codes.get(code)
        if counter is None:
            counter = self._codes[code] = self._provider.new_webhook_requests_metric(
                self._path, str(code)
            )
        counter.inc()


_NO_WEBHOOK_METRICS: Final = WebhookMetrics()


def new_webhook_metrics(path: str, *, clock: Clock) -> WebhookMetrics:
    """The recorder for the webhook served at ``path``: the installed provider's when it
    implements :class:`WebhookMetricsProvider`, else the no-op one. Latencies are read on
    ``clock``."""
    provider = get_metrics_provider()
    if not isinstance(provider, WebhookMetricsProvider):
        return _NO_WEBHOOK_METRICS
    return _ProviderWebhookMetrics(provider, path, clock)
