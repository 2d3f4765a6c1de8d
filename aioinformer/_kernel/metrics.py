"""Metrics: the seam between aioinformer's components and a metrics backend.

The metric protocols live here: :class:`MetricsProvider` (a workqueue's seven metrics,
recorded by this module), the optional :class:`ReflectorMetricsProvider`,
:class:`LeaderMetricsProvider`, :class:`ControllerMetricsProvider` (controller-runtime's
reconcile metrics), :class:`WebhookMetricsProvider` (controller-runtime's webhook metrics)
and :class:`RestClientMetricsProvider` (client-go's REST client
metrics), whose recorders live with what they record (the reflector's in
:mod:`aioinformer._pipeline.metric_recorders`, the elector's, sharder's and controller's in
:mod:`aioinformer.operator._metrics`, the REST client's in :mod:`aioinformer.client._metrics`),
and the optional :class:`HandlerMetricsProvider`
(pending notifications, delivery latency and errors per handler, DeltaFIFO depth per
informer), recorded by the processor and the informer themselves, and the optional
:class:`CacheAuditMetricsProvider` (an informer's cache audits, recorded by
:mod:`aioinformer.audit`) and the optional :class:`IndexMetricsProvider` (index
functions that failed, recorded by :mod:`aioinformer._pipeline.metric_recorders`). One
provider object
usually implements them all; :func:`set_metrics_provider` installs it for every
component created afterwards, and a component whose protocol the installed provider lacks
records nothing.

The workqueue half, in detail:

Role: a queue reports what happens to its items (added, handed out, finished, retried)
to a per-queue *recorder*; the recorder turns those events into the seven workqueue
metrics client-go defines and writes them to metric objects a :class:`MetricsProvider`
made for the queue's name.

Input: the queue's hook calls (``add``, ``get``, ``done``, ``retry``,
``update_unfinished_work``), all sync and called on the queue's event loop.
Output: ``inc``/``dec``/``set``/``observe`` calls on the provider's metric objects.

Metrics are recorded only for a queue with a non-empty ``name``, as in client-go; an
unnamed queue, or a queue with no provider (neither passed nor installed with
:func:`set_metrics_provider`), gets the no-op recorder and pays nothing.

The method names of the metric protocols (``inc``, ``dec``, ``set``, ``observe``) are
the ones ``prometheus_client`` uses, so its labelled children satisfy them directly
(see :mod:`aioinformer.contrib.prometheus`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from aioinformer._kernel.clock import Clock

__all__ = [
    "AddCounterMetric",
    "AnyMetricsProvider",
    "CacheAuditMetricsProvider",
    "ControllerMetricsProvider",
    "CounterMetric",
    "GaugeMetric",
    "HandlerMetrics",
    "HandlerMetricsProvider",
    "HistogramMetric",
    "IndexMetricsProvider",
    "LeaderMetricsProvider",
    "MetricsProvider",
    "QueueMetrics",
    "ReflectorMetricsProvider",
    "RestClientMetricsProvider",
    "SettableGaugeMetric",
    "ShardingMetricsProvider",
    "WatchListMetricsProvider",
    "WebhookMetricsProvider",
    "get_metrics_provider",
    "new_handler_metrics",
    "new_queue_metrics",
    "new_queued_deltas_metric",
    "set_metrics_provider",
]


class GaugeMetric(Protocol):
    """A value that goes up and down by one (the queue depth)."""

    def inc(self) -> None: ...

    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    """A value that is set outright (unfinished work, longest-running processor)."""

    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    """A monotonically increasing count (adds, retries)."""

    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    """A distribution of observed values, in seconds (queue latency, work duration)."""

    def observe(self, value: float) -> None: ...


@runtime_checkable
class MetricsProvider(Protocol):
    """Makes the metric objects of one queue, keyed by the queue's name.

    Each method is called once per named queue, when the queue is created. Returning
    the same object for two names merges their values.
    """

    def new_depth_metric(self, name: str) -> GaugeMetric:
        """Items waiting to be handed out (``workqueue_depth``)."""
        ...

    def new_adds_metric(self, name: str) -> CounterMetric:
        """Adds the queue accepted, duplicates excluded (``workqueue_adds_total``)."""
        ...

    def new_latency_metric(self, name: str) -> HistogramMetric:
        """Seconds from an item's add to its get (``workqueue_queue_duration_seconds``)."""
        ...

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        """Seconds from an item's get to its done (``workqueue_work_duration_seconds``)."""
        ...

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """Summed age of the items being processed (``workqueue_unfinished_work_seconds``)."""
        ...

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """Age of the oldest item being processed
        (``workqueue_longest_running_processor_seconds``)."""
        ...

    def new_retries_metric(self, name: str) -> CounterMetric:
        """Delayed re-adds, ``add_after``/``add_rate_limited`` (``workqueue_retries_total``)."""
        ...


class AddCounterMetric(Protocol):
    """A monotonically increasing count, added to in steps (watch events, summed per
    stream)."""

    def inc(self, amount: float = 1) -> None: ...


@runtime_checkable
class ReflectorMetricsProvider(Protocol):
    """Makes the metric objects of one reflector, keyed by the reflector's name.

    Optional: a reflector records through the provider only when it implements this
    protocol (see :mod:`aioinformer._pipeline.metric_recorders`). Each method is called once per
    reflector, when it is created; two reflectors with the same name get (and share)
    the same objects when the provider returns them, as ``contrib.prometheus`` does.
    """

    def new_reflector_lists_metric(self, name: str) -> CounterMetric:
        """Full lists started, retries included (``reflector_lists_total``)."""
        ...

    def new_reflector_list_duration_metric(self, name: str) -> HistogramMetric:
        """Seconds a successful full list took, every page included
        (``reflector_list_duration_seconds``)."""
        ...

    def new_reflector_items_in_list_metric(self, name: str) -> HistogramMetric:
        """Objects a successful full list returned (``reflector_items_per_list``)."""
        ...

    def new_reflector_watch_lists_metric(self, name: str) -> CounterMetric:
        """Streaming lists started (``reflector_watchLists_total``)."""
        ...

    def new_reflector_watches_metric(self, name: str) -> CounterMetric:
        """Watch requests sent, streaming lists included (``reflector_watches_total``)."""
        ...

    def new_reflector_short_watches_metric(self, name: str) -> CounterMetric:
        """Opened watches that closed within a second without any event
        (``reflector_short_watches_total``)."""
        ...

    def new_reflector_watch_duration_metric(self, name: str) -> HistogramMetric:
        """Seconds from a watch request to the end of its stream
        (``reflector_watch_duration_seconds``)."""
        ...

    def new_reflector_items_in_watch_metric(self, name: str) -> HistogramMetric:
        """Events a watch stream delivered (``reflector_items_per_watch``)."""
        ...

    def new_reflector_last_resource_version_metric(self, name: str) -> SettableGaugeMetric:
        """The last resourceVersion synced, when it is a number
        (``reflector_last_resource_version``)."""
        ...

    def new_reflector_relists_metric(self, name: str) -> CounterMetric:
        """Full lists (plain or streaming) after the first one
        (``aioinformer_reflector_relists_total``)."""
        ...

    def new_reflector_watch_events_metric(self, name: str, event_type: str) -> AddCounterMetric:
        """Watch events applied, by type: ``ADDED``, ``MODIFIED``, ``DELETED``,
        ``BOOKMARK`` (``aioinformer_reflector_watch_events_total``)."""
        ...

    def set_reflector_seconds_since_heard_function(
        self, name: str, seconds_since_heard: Callable[[], float]
    ) -> None:
        """Report ``seconds_since_heard()`` at read time: seconds since the server last
        sent the reflector anything, NaN while it is not running or before it first
        heard from the server (``aioinformer_reflector_seconds_since_heard``)."""
        ...


@runtime_checkable
class WatchListMetricsProvider(Protocol):
    """Makes a reflector's counters of failed streaming lists, keyed by its name.

    Optional and separate from :class:`ReflectorMetricsProvider`, so a provider written
    before these counters existed keeps recording everything else: a reflector counts
    failed streaming lists only through a provider that also implements this protocol.
    """

    def new_reflector_watch_list_failures_metric(self, name: str, outcome: str) -> CounterMetric:
        """Streaming lists that ended before their initial-events-end bookmark, by what
        followed: ``retried`` (streamed again after a backoff) or ``fell_back`` (to
        LIST+WATCH) (``aioinformer_reflector_watch_list_failures_total``)."""
        ...


@runtime_checkable
class LeaderMetricsProvider(Protocol):
    """Makes the metric objects of one leader elector, keyed by the lease's name.

    Optional, as :class:`ReflectorMetricsProvider`: an elector records through the
    provider only when it implements this protocol.
    """

    def new_leader_status_metric(self, name: str) -> SettableGaugeMetric:
        """1 while leading, else 0 (``leader_election_master_status``)."""
        ...

    def new_leader_acquisitions_metric(self, name: str) -> CounterMetric:
        """Times the lease was acquired (``aioinformer_leader_election_acquisitions_total``)."""
        ...

    def new_leader_renewal_failures_metric(self, name: str) -> CounterMetric:
        """Failed renewal attempts while leading
        (``aioinformer_leader_election_renewal_failures_total``)."""
        ...


@runtime_checkable
class ShardingMetricsProvider(Protocol):
    """Makes the metric objects of one shard ring's sharder, keyed by the ring's name.

    Optional, as :class:`ReflectorMetricsProvider`: a sharder records through the
    provider only when it implements this protocol.
    """

    def new_ring_members_metric(self, ring: str) -> SettableGaugeMetric:
        """The ring's live members as the sharder sees them
        (``aioinformer_sharding_ring_members``)."""
        ...

    def new_ring_membership_changes_metric(self, ring: str) -> CounterMetric:
        """Times the set of members changed
        (``aioinformer_sharding_membership_changes_total``)."""
        ...

    def new_sharder_assignments_metric(self, ring: str) -> CounterMetric:
        """Objects labelled with a shard (``aioinformer_sharding_assignments_total``)."""
        ...

    def new_sharder_drains_metric(self, ring: str) -> CounterMetric:
        """Drain labels written (``aioinformer_sharding_drains_total``)."""
        ...

    def new_sharder_takeovers_metric(self, ring: str) -> CounterMetric:
        """Expired shard Leases taken over (``aioinformer_sharding_takeovers_total``)."""
        ...


@runtime_checkable
class WebhookMetricsProvider(Protocol):
    """Makes the metric objects of a webhook server's paths (controller-runtime's webhook
    metrics), keyed by the path (the ``webhook`` label).

    Optional, as :class:`ReflectorMetricsProvider`: a webhook server records through the
    provider only when it implements this protocol. The latency and in-flight objects are
    made once per path, when it is registered; the requests object once per path and
    status code, the first time a request ends with that code.
    """

    def new_webhook_requests_metric(self, webhook: str, code: str) -> CounterMetric:
        """Requests to ``webhook`` answered with HTTP status ``code``
        (``controller_runtime_webhook_requests_total``)."""
        ...

    def new_webhook_latency_metric(self, webhook: str) -> HistogramMetric:
        """Seconds from a request's arrival to its answer
        (``controller_runtime_webhook_latency_seconds``)."""
        ...

    def new_webhook_in_flight_metric(self, webhook: str) -> GaugeMetric:
        """Requests being answered now (``controller_runtime_webhook_requests_in_flight``)."""
        ...


@runtime_checkable
class ControllerMetricsProvider(Protocol):
    """Makes the metric objects of one controller, keyed by the controller's name
    (controller-runtime's reconcile metrics).

    Optional, as :class:`ReflectorMetricsProvider`: a controller records through the
    provider only when it implements this protocol. Each method is called when the
    controller is created (``new_controller_reconciles_metric`` once per result); two
    controllers with the same name share the objects the provider returns for it.
    """

    def new_controller_reconciles_metric(self, controller: str, result: str) -> CounterMetric:
        """Reconciles that ended with ``result``: ``"success"``, ``"error"``,
        ``"requeue"`` or ``"requeue_after"`` (``controller_runtime_reconcile_total``)."""
        ...

    def new_controller_reconcile_errors_metric(self, controller: str) -> CounterMetric:
        """Reconciles that failed, timeouts included
        (``controller_runtime_reconcile_errors_total``)."""
        ...

    def new_controller_reconcile_time_metric(self, controller: str) -> HistogramMetric:
        """Seconds each reconcile took, whatever its result
        (``controller_runtime_reconcile_time_seconds``)."""
        ...

    def new_controller_reconcile_timeouts_metric(self, controller: str) -> CounterMetric:
        """Reconciles cancelled at ``reconcile_timeout``
        (``controller_runtime_reconcile_timeouts_total``)."""
        ...

    def new_controller_active_workers_metric(self, controller: str) -> GaugeMetric:
        """Workers reconciling a key now (``controller_runtime_active_workers``)."""
        ...

    def new_controller_max_concurrent_reconciles_metric(
        self, controller: str
    ) -> SettableGaugeMetric:
        """The controller's number of workers
        (``controller_runtime_max_concurrent_reconciles``)."""
        ...


@runtime_checkable
class RestClientMetricsProvider(Protocol):
    """Makes the metric objects of a :class:`~aioinformer.client.Client`'s requests
    (client-go's REST client metrics), one per label set.

    Optional, as :class:`ReflectorMetricsProvider`: a client records through the
    provider only when it implements this protocol. A client calls each method once per
    label set, the first time a request has it, and keeps the object; every label is
    bounded (a status code, a method, a host, a URL template), so the set stays small.
    """

    def new_rest_client_requests_metric(self, code: str, method: str, host: str) -> CounterMetric:
        """HTTP requests sent to ``host`` with ``method`` that got status ``code``
        (``"200"``, ``"404"``, ...), or ``"<error>"`` when no answer came: a refused
        connection, a timeout before the headers, a TLS failure. A watch counts when its
        response headers arrive; a retried request counts once per attempt
        (``rest_client_requests_total``)."""
        ...

    def new_rest_client_request_duration_metric(
        self, verb: str, url: str, host: str
    ) -> HistogramMetric:
        """Seconds from sending a request to having its answer read, failures included;
        watches and other streams are not observed (``rest_client_request_duration_seconds``).

        ``url`` is client-go's URL template, bounded in cardinality: the request's URL
        with the object's name replaced by ``{name}``, its namespace by ``{namespace}``
        and every query value by ``{value}`` (escaped as client-go writes them), e.g.
        ``https://10.0.0.1:6443/api/v1/namespaces/%7Bnamespace%7D/pods/%7Bname%7D``.
        """
        ...


@runtime_checkable
class HandlerMetricsProvider(Protocol):
    """Makes the metric objects of one informer and of each of its pushed handlers,
    labelled by the informer's name and the handler's name.

    ``new_informer_queued_deltas_metric`` is called once per informer when it starts; the
    handler methods once per handler (``add_event_handler``), when it is added. The
    ``handler_``/``informer_`` prefixes keep the names apart from
    :class:`MetricsProvider`'s (``new_latency_metric`` is the workqueue's). Returning the
    same object for two handlers (two handlers of one informer with the same name, in
    ``prometheus_client``) merges their values: name handlers apart (``name=``).
    """

    def new_handler_pending_metric(self, informer: str, handler: str) -> SettableGaugeMetric:
        """Notifications queued for the handler and not yet delivered
        (``aioinformer_handler_pending``)."""
        ...

    def new_handler_latency_metric(self, informer: str, handler: str) -> HistogramMetric:
        """Seconds from a notification being queued for the handler to its call returning
        (``aioinformer_handler_latency_seconds``)."""
        ...

    def new_handler_errors_metric(self, informer: str, handler: str) -> CounterMetric:
        """Handler calls that raised (``aioinformer_handler_errors_total``)."""
        ...

    def new_informer_queued_deltas_metric(self, informer: str) -> SettableGaugeMetric:
        """Keys waiting in the informer's DeltaFIFO (``aioinformer_informer_queued_deltas``)."""
        ...


@runtime_checkable
class CacheAuditMetricsProvider(Protocol):
    """Makes the metric objects of one informer's cache audits, labelled by the informer's
    name (see :mod:`aioinformer.audit`).

    Optional, as :class:`ReflectorMetricsProvider`. Each method is called once per label
    set, when the informer starts.
    """

    def new_cache_audits_metric(self, informer: str, result: str) -> CounterMetric:
        """Audits that ended with ``result``: ``consistent``, ``different``, ``lagging``
        or ``failed`` (``aioinformer_cache_audits_total``)."""
        ...

    def new_cache_audit_differences_metric(self, informer: str, kind: str) -> AddCounterMetric:
        """Keys found different, by ``kind``: ``missing``, ``extra`` or ``stale``
        (``aioinformer_cache_audit_differences_total``)."""
        ...

    def new_cache_audit_duration_metric(self, informer: str) -> HistogramMetric:
        """Seconds from an audit's first LIST request to the end of its comparison
        (``aioinformer_cache_audit_duration_seconds``)."""
        ...


@runtime_checkable
class IndexMetricsProvider(Protocol):
    """Makes the failure counter of one index of one informer, labelled by the informer's
    name and the index's name.

    Optional, as :class:`ReflectorMetricsProvider`. Called once per index when the
    informer starts, and for an index added later (``add_indexers``) when it is added.
    """

    def new_index_errors_metric(self, informer: str, index: str) -> CounterMetric:
        """Index function calls that failed: raised, or returned something other than a
        list of strings (``aioinformer_index_errors_total``). Each left one object out of
        that index, never out of the cache."""
        ...


AnyMetricsProvider: TypeAlias = (
    MetricsProvider
    | ReflectorMetricsProvider
    | LeaderMetricsProvider
    | HandlerMetricsProvider
    | ControllerMetricsProvider
    | RestClientMetricsProvider
    | CacheAuditMetricsProvider
    | IndexMetricsProvider
    | ShardingMetricsProvider
    | WebhookMetricsProvider
)
"""What :func:`set_metrics_provider` accepts: a provider of any of the metric protocols
(usually all of them); each component uses the protocols the provider implements."""


class QueueMetrics(Protocol):
    """The hooks a queue calls; sync, on the queue's loop, never raising."""

    @property
    def enabled(self) -> bool:
        """False for the no-op recorder: the queue then runs no unfinished-work task."""
        ...

    def add(self, item: Hashable) -> None:
        """An item became dirty (a new add, not a duplicate)."""
        ...

    def get(self, item: Hashable) -> None:
        """An item was handed to a worker."""
        ...

    def done(self, item: Hashable) -> None:
        """A worker finished an item."""
        ...

    def retry(self) -> None:
        """A delayed add was requested."""
        ...

    def update_unfinished_work(self) -> None:
        """Refresh the gauges that track items still being processed."""
        ...


class _NoQueueMetrics:
    """The recorder of unnamed queues and of queues without a provider."""

    __slots__ = ()

    @property
    def enabled(self) -> bool:
        return False

    def add(self, item: Hashable) -> None:
        pass

    def get(self, item: Hashable) -> None:
        pass

    def done(self, item: Hashable) -> None:
        pass

    def retry(self) -> None:
        pass

    def update_unfinished_work(self) -> None:
        pass


class _ProviderQueueMetrics:
    """Turns a queue's hook calls into client-go's workqueue metrics."""

    __slots__ = (
        "_added_at",
        "_adds",
        "_clock",
        "_depth",
        "_latency",
        "_longest",
        "_retries",
        "_started_at",
        "_unfinished",
        "_work_duration",
    )

    def __init__(self, provider: MetricsProvider, name: str, clock: Clock) -> None:
        self._clock = clock
        self._depth = provider.new_depth_metric(name)
        self._adds = provider.new_adds_metric(name)
        self._latency = provider.new_latency_metric(name)
        self._work_duration = provider.new_work_duration_metric(name)
        self._unfinished = provider.new_unfinished_work_seconds_metric(name)
        self._longest = provider.new_longest_running_processor_seconds_metric(name)
        self._retries = provider.new_retries_metric(name)
        # item -> clock time of the add that made it dirty; dropped when it is handed out.
        # An item re-added while being processed keeps its first add time.
        self._added_at: dict[Hashable, float] = {}
        # item -> clock time it was handed out; dropped when done() is called for it.
        self._started_at: dict[Hashable, float] = {}

    @property
    def enabled(self) -> bool:
        return True

    def add(self, item: Hashable) -> None:
        self._adds.inc()
        self._depth.inc()
        self._added_at.setdefault(item, self._clock.monotonic())

    def get(self, item: Hashable) -> None:
        now = self._clock.monotonic()
        self._depth.dec()
        self._started_at[item] = now
        added = self._added_at.pop(item, None)
        if added is not None:
            self._latency.observe(now - added)

    def done(self, item: Hashable) -> None:
        started = self._started_at.pop(item, None)
        if started is not None:
            self._work_duration.observe(self._clock.monotonic() - started)

    def retry(self) -> None:
        self._retries.inc()

    def update_unfinished_work(self) -> None:
        now = self._clock.monotonic()
        total = 0.0
        oldest = 0.0
        for started in self._started_at.values():
            age = now - started
            total += age
            oldest = max(oldest, age)
        self._unfinished.set(total)
        self._longest.set(oldest)


_NO_METRICS: Final = _NoQueueMetrics()

_installed_provider: AnyMetricsProvider | None = None


def set_metrics_provider(provider: AnyMetricsProvider | None) -> None:
    """Install the provider used by named queues, reflectors and leader electors
    created without ``metrics_provider=``, and by controllers, informers, handlers and
    clients.

    Each reads it when it is created (a client: when it opens its connection pool, at
    its first request), so install it before building informers and controllers. A
    component whose protocol the provider does not implement records nothing. ``None``
    uninstalls it (later components record nothing).
    """
    global _installed_provider
    _installed_provider = provider


def get_metrics_provider() -> AnyMetricsProvider | None:
    """The provider installed with :func:`set_metrics_provider`, or ``None``."""
    return _installed_provider


def new_queue_metrics(name: str, provider: MetricsProvider | None, *, clock: Clock) -> QueueMetrics:
    """The recorder for a queue called ``name``: no-op unless named and provided for."""
    if not name:
        return _NO_METRICS
    if provider is not None:
        return _ProviderQueueMetrics(provider, name, clock)
    installed = _installed_provider
    # The installed provider may serve only reflectors or electors.
    if not isinstance(installed, MetricsProvider):
        return _NO_METRICS
    return _ProviderQueueMetrics(installed, name, clock)


# -- informer and handler metrics ------------------------------------------------------
#
# The installed provider is used for them only if it implements HandlerMetricsProvider,
# so a provider written for the workqueue alone keeps working.


@dataclass(frozen=True, slots=True)
class HandlerMetrics:
    """The metric objects one handler writes to."""

    pending: SettableGaugeMetric
    latency: HistogramMetric
    errors: CounterMetric


def _handler_metrics_provider() -> HandlerMetricsProvider | None:
    provider = _installed_provider
    return provider if isinstance(provider, HandlerMetricsProvider) else None


def new_handler_metrics(informer: str, handler: str) -> HandlerMetrics | None:
    """The metrics of handler ``handler`` of informer ``informer``, or ``None`` when the
    installed provider (if any) does not implement :class:`HandlerMetricsProvider`."""
    provider = _handler_metrics_provider()
    if provider is None:
        return None
    return HandlerMetrics(
        pending=provider.new_handler_pending_metric(informer, handler),
        latency=provider.new_handler_latency_metric(informer, handler),
        errors=provider.new_handler_errors_metric(informer, handler),
    )


class _NoGauge:
    """The queued-deltas gauge of an informer without a provider: setting it costs a call."""

    __slots__ = ()

    def set(self, value: float) -> None:
        pass


def new_queued_deltas_metric(informer: str) -> SettableGaugeMetric:
    """The DeltaFIFO depth gauge of informer ``informer``; a no-op one when the installed
    provider (if any) does not implement :class:`HandlerMetricsProvider`."""
    provider = _handler_metrics_provider()
    if provider is None:
        return _NoGauge()
    return provider.new_informer_queued_deltas_metric(informer)
