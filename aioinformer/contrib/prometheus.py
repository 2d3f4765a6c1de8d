"""aioinformer's metrics in ``prometheus_client``, under client-go's metric names.

Role: one provider implementing every metric protocol of :mod:`aioinformer._kernel.metrics`
(the workqueue's :class:`~aioinformer.workqueue.MetricsProvider`, the reflector's, the
leader elector's, the controller's, the client's, the informers' and handlers',
and the cache audits'), backed by labelled
``prometheus_client`` metric families registered once per provider, one child per label
set. Input: the ``new_*_metric`` calls components
make when they are created. Output: the children, which the components update directly.

Workqueue metrics, label ``name`` (the queue's name), plus ``priority`` on the depth
(``""`` for a FIFO queue; for a :class:`~aioinformer.priority_queue.PriorityQueue` one
series per priority, ``"0"``, ``"-100"``, ..., whose sum is its depth, as
controller-runtime's; beyond :data:`MAX_PRIORITY_SERIES` priorities the rest share
``"exceeded_cardinality_limit"``):

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

Reflector metrics, label ``name`` (the reflector's name: an informer's name), plus
``type`` on the events counter and ``outcome`` (``retried``, ``fell_back``) on the
streaming-list failures:

=================================================== ========= ======================================
metric                                              type      meaning
=================================================== ========= ======================================
``reflector_lists_total``                           Counter   full lists started
``reflector_list_duration_seconds``                 Histogram seconds a successful list took
``reflector_items_per_list``                        Histogram objects a successful list returned
``reflector_watchLists_total``                      Counter   streaming lists started
``reflector_watches_total``                         Counter   watch requests (streaming included)
``reflector_short_watches_total``                   Counter   watches closed within 1 s, no event
``reflector_watch_duration_seconds``                Histogram seconds a watch stream lasted
``reflector_items_per_watch``                       Histogram events a watch stream delivered
``reflector_last_resource_version``                 Gauge     last resourceVersion synced
``aioinformer_reflector_relists_total``             Counter   full lists after the first
``aioinformer_reflector_watch_events_total``        Counter   watch events applied, by ``type``
``aioinformer_reflector_watch_list_failures_total`` Counter   failed streaming lists, by ``outcome``
``aioinformer_reflector_seconds_since_heard``       Gauge     seconds since the server last spoke
=================================================== ========= ======================================

Leader-election metrics, label ``name`` (the lease's name):

=================================================== ======= ============================
metric                                              type    meaning
=================================================== ======= ============================
``leader_election_master_status``                   Gauge   1 while leading, else 0
``aioinformer_leader_election_acquisitions_total``  Counter leases acquired
``aioinformer_leader_election_renewal_failures_``   Counter failed renewal attempts
``total``
=================================================== ======= ============================

Controller metrics, controller-runtime's, label ``controller`` (the controller's name),
plus ``result`` (``success``, ``error``, ``requeue``, ``requeue_after``) on the total:

================================================= ========= ===============================
metric                                            type      meaning
================================================= ========= ===============================
``controller_runtime_reconcile_total``            Counter   reconciles ended, by ``result``
``controller_runtime_reconcile_errors_total``     Counter   reconciles that failed
``controller_runtime_reconcile_timeouts_total``   Counter   reconciles cancelled at the
                                                            ``reconcile_timeout``
``controller_runtime_reconcile_time_seconds``     Histogram seconds per reconcile
``controller_runtime_active_workers``             Gauge     workers reconciling now
``controller_runtime_max_concurrent_reconciles``  Gauge     the controller's workers
================================================= ========= ===============================

Webhook metrics, controller-runtime's, label ``webhook`` (the path served), plus ``code``
(the HTTP status answered) on the total:

=================================================== ========= ============================
metric                                              type      meaning
=================================================== ========= ============================
``controller_runtime_webhook_requests_total``       Counter   requests answered, by
                                                              ``code``
``controller_runtime_webhook_latency_seconds``      Histogram seconds per request
``controller_runtime_webhook_requests_in_flight``   Gauge     requests being answered
=================================================== ========= ============================

Sharding metrics, label ``ring`` (the shard ring's name), recorded by the replica running
the ring's sharder:

=================================================== ======= ============================
metric                                              type    meaning
=================================================== ======= ============================
``aioinformer_sharding_ring_members``               Gauge   live members of the ring
``aioinformer_sharding_membership_changes_total``   Counter changes of the member set
``aioinformer_sharding_assignments_total``          Counter objects labelled with a
                                                            shard
``aioinformer_sharding_drains_total``               Counter drain labels written
``aioinformer_sharding_takeovers_total``            Counter expired shard Leases
                                                            taken over
=================================================== ======= ============================

REST client metrics, client-go's (as ``k8s.io/component-base`` registers them), label
``host`` (the server's host and port), plus ``code`` and ``method`` on the total and
``verb`` (the method) on the histogram:

========================================== ========= ======================================
metric                                     type      meaning
========================================== ========= ======================================
``rest_client_requests_total``             Counter   requests by status code (``<error>``:
                                                     no answer) and method
``rest_client_request_duration_seconds``   Histogram seconds per request, answer read
                                                     (streams such as watches excluded)
========================================== ========= ======================================

Informer and handler metrics, client-go has none: label ``informer`` (the informer's
name) and, per handler, ``handler`` (its name), per index ``index`` (the index's name):

========================================== ========= ======================================
metric                                     type      meaning
========================================== ========= ======================================
``aioinformer_handler_pending``            Gauge     notifications queued, not delivered
``aioinformer_handler_latency_seconds``    Histogram queued for the handler → call returned
``aioinformer_handler_errors_total``       Counter   handler calls that raised
``aioinformer_informer_queued_deltas``     Gauge     keys waiting in the DeltaFIFO
``aioinformer_index_errors_total``         Counter   index function calls that failed, by
                                                     ``index`` (the object stays cached)
========================================== ========= ======================================

Cache audit metrics (see :mod:`aioinformer.audit`), label ``informer``, plus ``result`` on
the audits counter and ``kind`` on the differences counter:

=============================================== ========= =================================
metric                                          type      meaning
=============================================== ========= =================================
``aioinformer_cache_audits_total``              Counter   audits by ``result``:
                                                          ``consistent``, ``different``,
                                                          ``lagging``, ``failed``
``aioinformer_cache_audit_differences_total``   Counter   keys found different, by
                                                          ``kind``: ``missing``,
                                                          ``extra``, ``stale``
``aioinformer_cache_audit_duration_seconds``    Histogram first LIST request → compared
=============================================== ========= =================================

An alert on ``increase(aioinformer_cache_audit_differences_total[1h]) > 0`` says that a
watch lost events (and that the informer repaired its cache).

The event counters and the last resourceVersion move every 15 s while a watch stream is
read and when it ends; the per-watch histograms when it ends.
``aioinformer_reflector_seconds_since_heard`` is computed whenever it is scraped (NaN
while the reflector is not running). Two components with the same name share one child:
counters add up, a gauge shows the last value set, and the seconds-since-heard gauge
follows the reflector created last. Give informers distinct names to tell them apart.

The workqueue duration histograms use client-go's buckets (10 ns to 10 s, one per power
of ten); the list duration histogram ``prometheus_client``'s default buckets (5 ms to
10 s, as client-go's); the watch duration and item histograms buckets of their own (see
:data:`WATCH_DURATION_BUCKETS` and :data:`ITEM_BUCKETS`), handler latency
:data:`HANDLER_LATENCY_BUCKETS`; the reconcile and request durations controller-runtime's
and client-go's (:data:`RECONCILE_TIME_BUCKETS`, :data:`REQUEST_DURATION_BUCKETS`).
Requires the ``prometheus`` extra (``pip install aioinformer[prometheus]``). Example::

    from aioinformer.contrib.prometheus import PrometheusMetricsProvider
    from aioinformer.workqueue import set_metrics_provider

    set_metrics_provider(PrometheusMetricsProvider())   # before creating informers and queues
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer._kernel.metrics import AddCounterMetric
    from aioinformer.priority_queue import PriorityDepthMetric
    from aioinformer.workqueue import (
        CounterMetric,
        GaugeMetric,
        HistogramMetric,
        SettableGaugeMetric,
    )

__all__ = [
    "AUDIT_DURATION_BUCKETS",
    "DURATION_BUCKETS",
    "HANDLER_LATENCY_BUCKETS",
    "ITEM_BUCKETS",
    "MAX_PRIORITY_SERIES",
    "PrometheusMetricsProvider",
    "RECONCILE_TIME_BUCKETS",
    "REQUEST_DURATION_BUCKETS",
    "WATCH_DURATION_BUCKETS",
]

DURATION_BUCKETS: Final = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
"""Histogram buckets of the two duration metrics: 1e-8 s to 10 s, as client-go's."""

ITEM_BUCKETS: Final = (0.0, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
"""Buckets of ``reflector_items_per_list`` and ``reflector_items_per_watch``."""

WATCH_DURATION_BUCKETS: Final = (1.0, 10.0, 60.0, 120.0, 300.0, 450.0, 600.0, 900.0)
"""Buckets of ``reflector_watch_duration_seconds``: watches are asked to last 300 to
600 s; shorter ones ended early (inactivity deadline, errors, dropped connections)."""

HANDLER_LATENCY_BUCKETS: Final = (1e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0)
"""Buckets of ``aioinformer_handler_latency_seconds``: from a fast handler's
sub-millisecond delivery to a backlog of minutes."""

RECONCILE_TIME_BUCKETS: Final = (
    *(0.005, 0.01, 0.025, 0.05),
    *(0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    *(1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0),
    *(6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0),
)
"""Buckets of ``controller_runtime_reconcile_time_seconds``: controller-runtime's, 5 ms to
60 s, finest below a second."""

REQUEST_DURATION_BUCKETS: Final = (
    0.005,
    0.025,
    0.1,
    0.25,
    0.5,
    1.0,
    2.0,
    4.0,
    8.0,
    15.0,
    30.0,
    60.0,
)
"""Buckets of ``rest_client_request_duration_seconds``: client-go's, 5 ms to 60 s."""

AUDIT_DURATION_BUCKETS: Final = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Buckets of ``aioinformer_cache_audit_duration_seconds``: a paged LIST of a small
resource to a large one, plus the wait for the cache to catch up (up to a bookmark,
about a minute, on a quiet resource)."""

_LABELS: Final = ("name",)
_DEPTH_LABELS: Final = ("name", "priority")

MAX_PRIORITY_SERIES: Final = 25
"""The ``workqueue_depth`` series one priority queue gets, one per priority, as
controller-runtime bounds them; the items of any further priority are counted together
under ``priority="exceeded_cardinality_limit"``."""

_EXCEEDED: Final = "exceeded_cardinality_limit"
_CONTROLLER_LABELS: Final = ("controller",)
_HANDLER_LABELS: Final = ("informer", "handler")


class _DepthByPriority:
    """One priority queue's ``workqueue_depth`` children, one per priority (made on the
    priority's first add and kept), at most :data:`MAX_PRIORITY_SERIES` of them."""

    __slots__ = ("_children", "_family", "_name")

    def __init__(self, family: Gauge, name: str) -> None:
        self._family = family
        self._name = name
        self._children: dict[int, Gauge] = {}

    def _child(self, priority: int) -> Gauge:
        children = self._children
        label = str(priority) if len(children) < MAX_PRIORITY_SERIES else _EXCEEDED
        child = children[priority] = self._family.labels(name=self._name, priority=label)
        return child

    def inc(self, priority: int) -> None:
        child = self._children.get(priority)
        (child if child is not None else self._child(priority)).inc()

    def dec(self, priority: int) -> None:
        child = self._children.get(priority)
        (child if child is not None else self._child(priority)).dec()


class PrometheusMetricsProvider:
    """Registers the metric families in ``registry`` (the default registry unless
    given) and hands each named queue, reflector, leader elector, informer, handler,
    controller and client its labelled children.

    Create one per registry: registering the families twice in one registry fails.
    """

    def __init__(self, *, registry: CollectorRegistry | None = REGISTRY) -> None:
        self._depth = Gauge(
            "workqueue_depth",
            "Current depth of the workqueue, by priority for a priority queue.",
            _DEPTH_LABELS,
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
        self._register_reflector_metrics(registry)
        self._register_leader_metrics(registry)
        self._register_sharding_metrics(registry)
        self._register_handler_metrics(registry)
        self._register_controller_metrics(registry)
        self._register_webhook_metrics(registry)
        self._register_rest_client_metrics(registry)
        self._register_audit_metrics(registry)

    def _register_reflector_metrics(self, registry: CollectorRegistry | None) -> None:
        self._lists = Counter(
            "reflector_lists_total",
            "Full LIST requests (every page of one list counts once) sent by reflectors.",
            _LABELS,
            registry=registry,
        )
        self._list_duration = Histogram(
            "reflector_list_duration_seconds",
            "Seconds a reflector's successful full list took, all pages included.",
            _LABELS,
            registry=registry,
        )
        self._items_per_list = Histogram(
            "reflector_items_per_list",
            "Objects a reflector's successful full list returned.",
            _LABELS,
            registry=registry,
            buckets=ITEM_BUCKETS,
        )
        self._watch_lists = Counter(
            "reflector_watchLists_total",
            "Streaming lists (watches with sendInitialEvents) started by reflectors.",
            _LABELS,
            registry=registry,
        )
        self._watches = Counter(
            "reflector_watches_total",
            "WATCH requests sent by reflectors, streaming lists included.",
            _LABELS,
            registry=registry,
        )
        self._short_watches = Counter(
            "reflector_short_watches_total",
            "Reflector watches that closed within a second without delivering an event.",
            _LABELS,
            registry=registry,
        )
        self._watch_duration = Histogram(
            "reflector_watch_duration_seconds",
            "Seconds from a reflector's watch request to the end of its stream.",
            _LABELS,
            registry=registry,
            buckets=WATCH_DURATION_BUCKETS,
        )
        self._items_per_watch = Histogram(
            "reflector_items_per_watch",
            "Events one watch stream delivered to a reflector.",
            _LABELS,
            registry=registry,
            buckets=ITEM_BUCKETS,
        )
        self._last_rv = Gauge(
            "reflector_last_resource_version",
            "The resourceVersion a reflector last synced, as a number.",
            _LABELS,
            registry=registry,
        )
        self._relists = Counter(
            "aioinformer_reflector_relists_total",
            "Total number of full lists done by the reflectors after their first.",
            _LABELS,
            registry=registry,
        )
        self._watch_events = Counter(
            "aioinformer_reflector_watch_events_total",
            "Total number of watch events applied by the reflectors, by event type.",
            ("name", "type"),
            registry=registry,
        )
        self._watch_list_failures = Counter(
            "aioinformer_reflector_watch_list_failures_total",
            "Total number of streaming lists that ended before their initial-events-end "
            "bookmark, by what the reflector did next.",
            ("name", "outcome"),
            registry=registry,
        )
        self._seconds_since_heard = Gauge(
            "aioinformer_reflector_seconds_since_heard",
            "Seconds since the API server last sent the reflector anything (a list, an "
            "event or a bookmark); NaN while the reflector is not running.",
            _LABELS,
            registry=registry,
        )

    def _register_leader_metrics(self, registry: CollectorRegistry | None) -> None:
        self._leader_status = Gauge(
            "leader_election_master_status",
            "1 while this process holds the lease and leads, 0 otherwise.",
            _LABELS,
            registry=registry,
        )
        self._acquisitions = Counter(
            "aioinformer_leader_election_acquisitions_total",
            "Total number of times the lease was acquired.",
            _LABELS,
            registry=registry,
        )
        self._renewal_failures = Counter(
            "aioinformer_leader_election_renewal_failures_total",
            "Total number of failed lease renewal attempts while leading.",
            _LABELS,
            registry=registry,
        )

    def _register_sharding_metrics(self, registry: CollectorRegistry | None) -> None:
        ring = ("ring",)
        self._ring_members = Gauge(
            "aioinformer_sharding_ring_members",
            "Live members of the shard ring, as its sharder sees them.",
            ring,
            registry=registry,
        )
        self._ring_changes = Counter(
            "aioinformer_sharding_membership_changes_total",
            "Total number of changes of the shard ring's member set.",
            ring,
            registry=registry,
        )
        self._assignments = Counter(
            "aioinformer_sharding_assignments_total",
            "Total number of objects the sharder labelled with a shard.",
            ring,
            registry=registry,
        )
        self._drains = Counter(
            "aioinformer_sharding_drains_total",
            "Total number of drain labels the sharder wrote.",
            ring,
            registry=registry,
        )
        self._takeovers = Counter(
            "aioinformer_sharding_takeovers_total",
            "Total number of expired shard Leases the sharder took over.",
            ring,
            registry=registry,
        )

    def _register_handler_metrics(self, registry: CollectorRegistry | None) -> None:
        self._handler_pending = Gauge(
            "aioinformer_handler_pending",
            "Notifications queued for an informer's event handler and not yet delivered.",
            _HANDLER_LABELS,
            registry=registry,
        )
        self._handler_latency = Histogram(
            "aioinformer_handler_latency_seconds",
            "Seconds from a notification being queued for an event handler to the "
            "handler's call returning.",
            _HANDLER_LABELS,
            registry=registry,
            buckets=HANDLER_LATENCY_BUCKETS,
        )
        self._handler_errors = Counter(
            "aioinformer_handler_errors_total",
            "Event handler calls that raised.",
            _HANDLER_LABELS,
            registry=registry,
        )
        self._queued_deltas = Gauge(
            "aioinformer_informer_queued_deltas",
            "Keys waiting in an informer's DeltaFIFO to be applied to its cache.",
            ("informer",),
            registry=registry,
        )
        self._index_errors = Counter(
            "aioinformer_index_errors_total",
            "Index function calls of an informer that failed (raised, or returned something "
            "other than a list of strings), by index: each left one object out of that "
            "index, not out of the cache.",
            ("informer", "index"),
            registry=registry,
        )

    def _register_audit_metrics(self, registry: CollectorRegistry | None) -> None:
        self._audits = Counter(
            "aioinformer_cache_audits_total",
            "Cache audits of an informer, by result: consistent, different (the informer "
            "relisted), lagging (the cache did not catch up in time) or failed.",
            ("informer", "result"),
            registry=registry,
        )
        self._audit_differences = Counter(
            "aioinformer_cache_audit_differences_total",
            "Keys a cache audit found differing from the server, by kind: missing from "
            "the cache, extra in it, or stale (another resourceVersion).",
            ("informer", "kind"),
            registry=registry,
        )
        self._audit_duration = Histogram(
            "aioinformer_cache_audit_duration_seconds",
            "Seconds from a cache audit's first LIST request to the end of its comparison.",
            ("informer",),
            registry=registry,
            buckets=AUDIT_DURATION_BUCKETS,
        )

    def _register_controller_metrics(self, registry: CollectorRegistry | None) -> None:
        self._reconciles = Counter(
            "controller_runtime_reconcile_total",
            "Reconciles a controller finished, by result: success, error, requeue, requeue_after.",
            ("controller", "result"),
            registry=registry,
        )
        self._reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Reconciles a controller finished with an error, timeouts included.",
            _CONTROLLER_LABELS,
            registry=registry,
        )
        self._reconcile_timeouts = Counter(
            "controller_runtime_reconcile_timeouts_total",
            "Reconciles a controller cancelled because they ran past its reconcile timeout.",
            _CONTROLLER_LABELS,
            registry=registry,
        )
        self._reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Seconds each reconcile of a controller took, whatever its result.",
            _CONTROLLER_LABELS,
            registry=registry,
            buckets=RECONCILE_TIME_BUCKETS,
        )
        self._active_workers = Gauge(
            "controller_runtime_active_workers",
            "Workers of a controller busy reconciling a key right now.",
            _CONTROLLER_LABELS,
            registry=registry,
        )
        self._max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "How many reconciles a controller runs at most at once: its workers.",
            _CONTROLLER_LABELS,
            registry=registry,
        )

    def _register_webhook_metrics(self, registry: CollectorRegistry | None) -> None:
        self._webhook_requests = Counter(
            "controller_runtime_webhook_requests_total",
            "Requests a webhook path answered, by HTTP status code.",
            ("webhook", "code"),
            registry=registry,
        )
        self._webhook_latency = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Seconds a webhook path took to answer a request.",
            ("webhook",),
            registry=registry,
        )
        self._webhook_in_flight = Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Requests a webhook path is answering right now.",
            ("webhook",),
            registry=registry,
        )

    def _register_rest_client_metrics(self, registry: CollectorRegistry | None) -> None:
        self._requests = Counter(
            "rest_client_requests_total",
            "HTTP requests sent to the API server, by status code ('<error>' when none "
            "came back), method and host.",
            ("code", "method", "host"),
            registry=registry,
        )
        self._request_duration = Histogram(
            "rest_client_request_duration_seconds",
            "Seconds from sending a request to the API server to having its answer read, "
            "by verb and host.",
            ("verb", "host"),
            registry=registry,
            buckets=REQUEST_DURATION_BUCKETS,
        )

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self._depth.labels(name=name, priority="")

    def new_depth_with_priority_metric(self, name: str) -> PriorityDepthMetric:
        return _DepthByPriority(self._depth, name)

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

    # -- reflectors ---------------------------------------------------------------

    def new_reflector_lists_metric(self, name: str) -> CounterMetric:
        return self._lists.labels(name=name)

    def new_reflector_list_duration_metric(self, name: str) -> HistogramMetric:
        return self._list_duration.labels(name=name)

    def new_reflector_items_in_list_metric(self, name: str) -> HistogramMetric:
        return self._items_per_list.labels(name=name)

    def new_reflector_watch_lists_metric(self, name: str) -> CounterMetric:
        return self._watch_lists.labels(name=name)

    def new_reflector_watch_list_failures_metric(self, name: str, outcome: str) -> CounterMetric:
        return self._watch_list_failures.labels(name=name, outcome=outcome)

    def new_reflector_watches_metric(self, name: str) -> CounterMetric:
        return self._watches.labels(name=name)

    def new_reflector_short_watches_metric(self, name: str) -> CounterMetric:
        return self._short_watches.labels(name=name)

    def new_reflector_watch_duration_metric(self, name: str) -> HistogramMetric:
        return self._watch_duration.labels(name=name)

    def new_reflector_items_in_watch_metric(self, name: str) -> HistogramMetric:
        return self._items_per_watch.labels(name=name)

    def new_reflector_last_resource_version_metric(self, name: str) -> SettableGaugeMetric:
        return self._last_rv.labels(name=name)

    def new_reflector_relists_metric(self, name: str) -> CounterMetric:
        return self._relists.labels(name=name)

    def new_reflector_watch_events_metric(self, name: str, event_type: str) -> AddCounterMetric:
        return self._watch_events.labels(name=name, type=event_type)

    def set_reflector_seconds_since_heard_function(
        self, name: str, seconds_since_heard: Callable[[], float]
    ) -> None:
        self._seconds_since_heard.labels(name=name).set_function(seconds_since_heard)

    # -- leader election ------------------------------------------------------------

    def new_leader_status_metric(self, name: str) -> SettableGaugeMetric:
        return self._leader_status.labels(name=name)

    def new_leader_acquisitions_metric(self, name: str) -> CounterMetric:
        return self._acquisitions.labels(name=name)

    def new_leader_renewal_failures_metric(self, name: str) -> CounterMetric:
        return self._renewal_failures.labels(name=name)

    # -- sharding -----------------------------------------------------------------------

    def new_ring_members_metric(self, ring: str) -> SettableGaugeMetric:
        return self._ring_members.labels(ring=ring)

    def new_ring_membership_changes_metric(self, ring: str) -> CounterMetric:
        return self._ring_changes.labels(ring=ring)

    def new_sharder_assignments_metric(self, ring: str) -> CounterMetric:
        return self._assignments.labels(ring=ring)

    def new_sharder_drains_metric(self, ring: str) -> CounterMetric:
        return self._drains.labels(ring=ring)

    def new_sharder_takeovers_metric(self, ring: str) -> CounterMetric:
        return self._takeovers.labels(ring=ring)

    # -- webhooks -----------------------------------------------------------------------

    def new_webhook_requests_metric(self, webhook: str, code: str) -> CounterMetric:
        return self._webhook_requests.labels(webhook=webhook, code=code)

    def new_webhook_latency_metric(self, webhook: str) -> HistogramMetric:
        return self._webhook_latency.labels(webhook=webhook)

    def new_webhook_in_flight_metric(self, webhook: str) -> GaugeMetric:
        return self._webhook_in_flight.labels(webhook=webhook)

    # -- informers and handlers --------------------------------------------------------

    def new_handler_pending_metric(self, informer: str, handler: str) -> SettableGaugeMetric:
        return self._handler_pending.labels(informer=informer, handler=handler)

    def new_handler_latency_metric(self, informer: str, handler: str) -> HistogramMetric:
        return self._handler_latency.labels(informer=informer, handler=handler)

    def new_handler_errors_metric(self, informer: str, handler: str) -> CounterMetric:
        return self._handler_errors.labels(informer=informer, handler=handler)

    def new_informer_queued_deltas_metric(self, informer: str) -> SettableGaugeMetric:
        return self._queued_deltas.labels(informer=informer)

    def new_index_errors_metric(self, informer: str, index: str) -> CounterMetric:
        return self._index_errors.labels(informer=informer, index=index)

    # -- controllers ----------------------------------------------------------------------

    def new_controller_reconciles_metric(self, controller: str, result: str) -> CounterMetric:
        return self._reconciles.labels(controller=controller, result=result)

    def new_controller_reconcile_errors_metric(self, controller: str) -> CounterMetric:
        return self._reconcile_errors.labels(controller=controller)

    def new_controller_reconcile_time_metric(self, controller: str) -> HistogramMetric:
        return self._reconcile_time.labels(controller=controller)

    def new_controller_reconcile_timeouts_metric(self, controller: str) -> CounterMetric:
        return self._reconcile_timeouts.labels(controller=controller)

    def new_controller_active_workers_metric(self, controller: str) -> GaugeMetric:
        return self._active_workers.labels(controller=controller)

    def new_controller_max_concurrent_reconciles_metric(
        self, controller: str
    ) -> SettableGaugeMetric:
        return self._max_concurrent.labels(controller=controller)

    # -- REST client -------------------------------------------------------------------------

    def new_rest_client_requests_metric(self, code: str, method: str, host: str) -> CounterMetric:
        return self._requests.labels(code=code, method=method, host=host)

    def new_rest_client_request_duration_metric(
        self, verb: str, url: str, host: str
    ) -> HistogramMetric:
        # component-base dropped the url label for its cardinality: verb and host only.
        return self._request_duration.labels(verb=verb, host=host)

    # -- cache audits ------------------------------------------------------------------

    def new_cache_audits_metric(self, informer: str, result: str) -> CounterMetric:
        return self._audits.labels(informer=informer, result=result)

    def new_cache_audit_differences_metric(self, informer: str, kind: str) -> AddCounterMetric:
        return self._audit_differences.labels(informer=informer, kind=kind)

    def new_cache_audit_duration_metric(self, informer: str) -> HistogramMetric:
        return self._audit_duration.labels(informer=informer)

    def __repr__(self) -> str:
        return "<PrometheusMetricsProvider>"
