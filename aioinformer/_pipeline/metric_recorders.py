"""Reflector, leader-election, controller, REST client and index metrics: what a component
reports, turned into metrics.

Role: a reflector (or a leader elector, a controller, a client's HTTP layer) reports the
milestones of its cycle to a *recorder*, which writes them to the metric objects a
provider made for the component
(:class:`~aioinformer._kernel.metrics.ReflectorMetricsProvider`,
:class:`~aioinformer._kernel.metrics.LeaderMetricsProvider`,
:class:`~aioinformer._kernel.metrics.ControllerMetricsProvider`,
:class:`~aioinformer._kernel.metrics.RestClientMetricsProvider`,
:class:`~aioinformer._kernel.metrics.IndexMetricsProvider`).

Input: the component's calls, sync, on its event loop: a reflector's list started or
done, watch opened, stream being read (its :class:`~aioinformer.reflector.WatchRead`)
and ended (its :class:`~aioinformer._pipeline.watch_policy.WatchEnd`), relist; an elector's run
started, lease acquired, renewal failed, leadership left; a controller's reconcile
started, ended with its result, and its worker freed; an HTTP request answered (or not)
and finished; an informer's index function failed.
Output: ``inc``/``dec``/``set``/``observe`` calls on the provider's metric objects; for the
seconds-since-heard gauge, one function handed to the provider, which it calls when it
is read.

Cost: nothing happens per watch event. Events are counted by the stream's own counters,
and what they gained is added to the metrics every :data:`FLUSH_PERIOD` seconds while the
stream is read (a timer on the reflector's clock, no task) and when the read ends; the
last resourceVersion moves at the same moments. Seconds-since-heard is computed
whenever it is read. A reconcile costs two clock reads and four metric updates, on
objects resolved when the controller was created; a request one dictionary lookup per
metric (its label set's object is made on first use) and, for the duration, building its
URL template; an index function's failure one dictionary lookup and an increment (a
succeeding one costs nothing). A component with no provider, or one lacking its protocol,
gets the no-op recorder.
"""

from __future__ import annotations

import enum
import functools
import math
import weakref
from typing import TYPE_CHECKING, Final, Protocol
from urllib.parse import quote_plus, urlsplit

from aioinformer._kernel.clock import call_later
from aioinformer._kernel.metrics import (
    ControllerMetricsProvider,
    IndexMetricsProvider,
    LeaderMetricsProvider,
    ReflectorMetricsProvider,
    RestClientMetricsProvider,
    ShardingMetricsProvider,
    WatchListMetricsProvider,
    get_metrics_provider,
)
from aioinformer._pipeline.watch_policy import SHORT_WATCH
from aioinformer.errors import ApiError
from aioinformer.listwatch import ADDED, BOOKMARK, DELETED, MODIFIED

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from aioinformer._kernel.clock import Clock, TimerHandle
    from aioinformer._kernel.metrics import CounterMetric, HistogramMetric
    from aioinformer._pipeline.watch_policy import WatchEnd

__all__ = [
    "FLUSH_PERIOD",
    "NO_REST_CLIENT_METRICS",
    "ControllerMetrics",
    "IndexMetrics",
    "LeaderMetrics",
    "ReconcileResult",
    "ReflectorMetrics",
    "RestClientMetrics",
    "new_controller_metrics",
    "new_index_metrics",
    "new_leader_metrics",
    "new_sharding_metrics",
    "new_reflector_metrics",
    "new_rest_client_metrics",
    "url_template",
]


class _Read(Protocol):
    """What a recorder reads of a reflector's :class:`~aioinformer.reflector.WatchRead`:
    the applied events by type (declared here, below the reflector, which imports this
    module)."""

    @property
    def added(self) -> int: ...

    @property
    def modified(self) -> int: ...

    @property
    def deleted(self) -> int: ...

    @property
    def bookmarks(self) -> int: ...


class _Position(Protocol):
    """What a recorder reads of a reflector's :class:`~aioinformer.reflector.Cursor`."""

    @property
    def resource_version(self) -> str: ...


FLUSH_PERIOD: Final = 15.0
"""Seconds between two additions of a watch stream's event counts to the metrics: about
one scrape interval, so rates stay smooth while a watch lasts 5 to 10 minutes."""


class ReflectorMetrics:
    """A reflector's recorder. This base records nothing: reflectors without a provider
    use it."""

    __slots__ = ()

    def list_started(self) -> None:
        """A full list (all its pages) begins."""

    def listed(self, items: int, seconds: float, resource_version: str) -> None:
        """A full list returned ``items`` objects at ``resource_version`` after
        ``seconds``."""

    def watch_list_started(self) -> None:
        """A streaming list's watch request is sent."""

    def watch_list_failed(self, *, retried: bool) -> None:
        """A streaming list ended before its initial-events-end bookmark: ``retried``, it
        is sent again after a backoff; else the reflector falls back to LIST+WATCH."""

    def watch_started(self) -> None:
        """A watch request is sent."""

    def relisted(self) -> None:
        """A list-and-watch round after the first begins (it lists again)."""

    def reading(self, read: _Read, cursor: _Position) -> None:
        """``read`` starts reading a watch stream, advancing ``cursor``."""

    def stop_reading(self) -> None:
        """The read given to :meth:`reading` ended, however it did."""

    def stream_ended(self, end: WatchEnd, *, complete: bool) -> None:
        """A read of a watch stream ended, and how.

        ``complete`` is false when the read stopped at a streaming list's end of initial
        events and the stream carries on as the watch: its events count, the stream's
        duration and size are observed when its last read ends.
        """


class _NoCounter:
    """A counter a provider does not make (an optional protocol it lacks): counting costs
    a call."""

    __slots__ = ()

    def inc(self) -> None:
        pass


_NO_COUNTER: Final = _NoCounter()


class _ProviderReflectorMetrics(ReflectorMetrics):
    """Records a reflector's cycle through a :class:`ReflectorMetricsProvider`."""

    __slots__ = (
        "_added",
        "_bookmarks",
        "_carried",
        "_clock",
        "_cursor",
        "_deleted",
        "_flushed",
        "_items_in_list",
        "_items_in_watch",
        "_last_rv",
        "_list_duration",
        "_lists",
        "_modified",
        "_read",
        "_relists",
        "_short_watches",
        "_timer",
        "_watch_duration",
        "_watch_list_fallbacks",
        "_watch_list_retries",
        "_watch_lists",
        "_watches",
    )

    def __init__(self, provider: ReflectorMetricsProvider, name: str, clock: Clock) -> None:
        self._clock = clock
        self._lists = provider.new_reflector_lists_metric(name)
        self._list_duration = provider.new_reflector_list_duration_metric(name)
        self._items_in_list = provider.new_reflector_items_in_list_metric(name)
        self._watch_lists = provider.new_reflector_watch_lists_metric(name)
        failures = provider if isinstance(provider, WatchListMetricsProvider) else None
        self._watch_list_retries = (
            failures.new_reflector_watch_list_failures_metric(name, "retried")
            if failures is not None
            else _NO_COUNTER
        )
        self._watch_list_fallbacks = (
            failures.new_reflector_watch_list_failures_metric(name, "fell_back")
            if failures is not None
            else _NO_COUNTER
        )
        self._watches = provider.new_reflector_watches_metric(name)
        self._short_watches = provider.new_reflector_short_watches_metric(name)
        self._watch_duration = provider.new_reflector_watch_duration_metric(name)
        self._items_in_watch = provider.new_reflector_items_in_watch_metric(name)
        self._last_rv = provider.new_reflector_last_resource_version_metric(name)
        self._relists = provider.new_reflector_relists_metric(name)
        self._added = provider.new_reflector_watch_events_metric(name, ADDED)
        self._modified = provider.new_reflector_watch_events_metric(name, MODIFIED)
        self._deleted = provider.new_reflector_watch_events_metric(name, DELETED)
        self._bookmarks = provider.new_reflector_watch_events_metric(name, BOOKMARK)
        # Events of a streaming list's initial part, whose stream goes on as the watch:
        # observed with the rest of the stream in items_per_watch.
        self._carried = 0
        # The read in progress and its cursor, between reading() and stop_reading().
        self._read: _Read | None = None
        self._cursor: _Position | None = None
        # The read's counts (added, modified, deleted, bookmarks) already in the metrics.
        self._flushed = (0, 0, 0, 0)
        # The pending flush while a read is in progress, else None.
        self._timer: TimerHandle | None = None

    def list_started(self) -> None:
        self._lists.inc()

    def listed(self, items: int, seconds: float, resource_version: str) -> None:
        self._list_duration.observe(seconds)
        self._items_in_list.observe(items)
        self._set_resource_version(resource_version)

    def watch_list_started(self) -> None:
        self._watch_lists.inc()
        self._watches.inc()

    def watch_list_failed(self, *, retried: bool) -> None:
        (self._watch_list_retries if retried else self._watch_list_fallbacks).inc()

    def watch_started(self) -> None:
        self._watches.inc()

    def relisted(self) -> None:
        self._relists.inc()

    def reading(self, read: _Read, cursor: _Position) -> None:
        self._read = read
        self._cursor = cursor
        self._flushed = (0, 0, 0, 0)
        self._timer = call_later(self._clock, FLUSH_PERIOD, self._tick)

    def stop_reading(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self._flush()
        self._read = self._cursor = None

    def _tick(self) -> None:
        if self._timer is None:
            return  # the read ended as this flush came due
        self._flush()
        self._timer = call_later(self._clock, FLUSH_PERIOD, self._tick)

    def _flush(self) -> None:
        read, cursor = self._read, self._cursor
        if read is None or cursor is None:
            return
        added, modified, deleted, bookmarks = self._flushed
        if read.added != added:
            self._added.inc(read.added - added)
        if read.modified != modified:
            self._modified.inc(read.modified - modified)
        if read.deleted != deleted:
            self._deleted.inc(read.deleted - deleted)
        if read.bookmarks != bookmarks:
            self._bookmarks.inc(read.bookmarks - bookmarks)
        self._flushed = (read.added, read.modified, read.deleted, read.bookmarks)
        self._set_resource_version(cursor.resource_version)

    def stream_ended(self, end: WatchEnd, *, complete: bool) -> None:
        if not complete:
            self._carried += end.events
            return
        events = self._carried + end.events
        self._carried = 0
        self._watch_duration.observe(end.elapsed)
        self._items_in_watch.observe(events)
        if (
            end.opened
            and events == 0
            and end.elapsed < SHORT_WATCH
            and not end.timed_out
            and not end.resync_failed
            and not isinstance(end.error, ApiError)
        ):
            self._short_watches.inc()

    def _set_resource_version(self, resource_version: str) -> None:
        # resourceVersions are opaque strings; every known server makes them integers.
        try:
            value = float(resource_version)
        except ValueError:
            return
        self._last_rv.set(value)


_NO_REFLECTOR_METRICS: Final = ReflectorMetrics()


def new_reflector_metrics(
    name: str,
    provider: ReflectorMetricsProvider | None,
    *,
    clock: Clock,
    seconds_since_heard: Callable[[], float],
) -> ReflectorMetrics:
    """The recorder for a reflector called ``name``: ``provider``'s, else the installed
    provider's when it implements :class:`ReflectorMetricsProvider`, else the no-op one.

    ``seconds_since_heard`` is handed to the provider for its gauge; a bound method is
    held weakly, so the provider never keeps a reflector alive (the gauge then reads
    NaN).
    """
    chosen = provider if provider is not None else get_metrics_provider()
    if not isinstance(chosen, ReflectorMetricsProvider):
        return _NO_REFLECTOR_METRICS
    chosen.set_reflector_seconds_since_heard_function(name, _weakly(seconds_since_heard))
    return _ProviderReflectorMetrics(chosen, name, clock)


def _weakly(function: Callable[[], float]) -> Callable[[], float]:
    if not hasattr(function, "__self__"):
        return function
    method = weakref.WeakMethod(function)

    def call() -> float:
        bound = method()
        return math.nan if bound is None else bound()

    return call


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


class IndexMetrics:
    """An informer's recorder of failing index functions. This base records nothing."""

    __slots__ = ()

    def track(self, indexes: Iterable[str]) -> None:
        """Make ``indexes``' counters (at zero) now, as they are added."""

    def failed(self, index: str) -> None:
        """Index ``index``'s function failed on one object."""


class _ProviderIndexMetrics(IndexMetrics):
    """Records failing index functions through an :class:`IndexMetricsProvider`."""

    __slots__ = ("_counters", "_informer", "_provider")

    def __init__(self, provider: IndexMetricsProvider, informer: str) -> None:
        self._provider = provider
        self._informer = informer
        self._counters: dict[str, CounterMetric] = {}

    def track(self, indexes: Iterable[str]) -> None:
        for index in indexes:
            self._counter(index)

    def failed(self, index: str) -> None:
        self._counter(index).inc()

    def _counter(self, index: str) -> CounterMetric:
        counter = self._counters.get(index)
        if counter is None:
            counter = self._counters[index] = self._provider.new_index_errors_metric(
                self._informer, index
            )
        return counter


_NO_INDEX_METRICS: Final = IndexMetrics()


def new_index_metrics(informer: str, indexes: Iterable[str]) -> IndexMetrics:
    """The recorder of informer ``informer``'s failing index functions, with the counters
    of ``indexes`` made: the installed provider's when it implements
    :class:`IndexMetricsProvider`, else the no-op one."""
    chosen = get_metrics_provider()
    if not isinstance(chosen, IndexMetricsProvider):
        return _NO_INDEX_METRICS
    metrics = _ProviderIndexMetrics(chosen, informer)
    metrics.track(indexes)
    return metrics


# -- controllers ---------------------------------------------------------------------------


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


# -- REST client ---------------------------------------------------------------------------

_NO_ANSWER: Final = 0
"""The status a recorder files a request without an answer under."""
_NO_ANSWER_CODE: Final = "<error>"
"""client-go's ``code`` for a request without an answer: an error's text would make the
label unbounded."""
_UNNAMED_SUBRESOURCES: Final = frozenset(("finalize", "status"))
"""The subresources client-go's template recognises after a name."""
_NAME: Final = "%7Bname%7D"
_NAMESPACE: Final = "%7Bnamespace%7D"


def url_template(base: str, path: str, query: Mapping[str, str] | None = None) -> str:
    """client-go's URL template of a request (its ``finalURLTemplate``): the URL with
    bounded cardinality that labels a request's duration.

    ``base`` is the server's URL as configured (it may carry a path prefix), ``path``
    the request's path under it (``/api/...`` or ``/apis/...``), ``query`` its
    parameters. Under ``/api/<version>`` and ``/apis/<group>/<version>``, the namespace
    after ``namespaces/`` becomes ``{namespace}`` and the object's name ``{name}``
    (kept before ``status`` and ``finalize``); every query value becomes ``{value}``,
    keys sorted; braces are escaped as Go writes them (``%7Bname%7D``). A path of one
    segment (``/version``) is kept as it is; any other path outside ``/api`` and
    ``/apis`` becomes ``/{prefix}``, without its query or the base's path.
    """
    parts = urlsplit(base)
    return _template(f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/"), path, query)


def _template(origin: str, base_path: str, path: str, query: Mapping[str, str] | None) -> str:
    """:func:`url_template` with the base already split into its origin and its path."""
    if not path.startswith("/"):
        path = "/" + path
    segments = path.split("/")
    if len(segments) <= 2:
        return origin + base_path + path + _query_template(query)
    if segments[1] == "api":
        index = 3
    elif segments[1] == "apis":
        index = 4
    else:
        return origin + "/%7Bprefix%7D"
    # The placeholders are written escaped: the path is already quoted, so it holds no
    # brace of its own to escape.
    after = len(segments) - index
    if after == 2:
        segments[index + 1] = _NAME
    elif after == 3:
        if segments[index + 2] in _UNNAMED_SUBRESOURCES:
            segments[index + 1] = _NAME
        else:
            segments[index + 1] = _NAMESPACE
    elif after >= 4:
        segments[index + 1] = _NAMESPACE
        if segments[index + 3] not in _UNNAMED_SUBRESOURCES:
            segments[index + 3] = _NAME
    # Empty segments drop out and a trailing slash goes, as Go's path.Join cleans them.
    joined = "/".join([part for part in segments if part])
    return f"{origin}{base_path}/{joined}{_query_template(query)}"


def _query_template(query: Mapping[str, str] | None) -> str:
    if not query:
        return ""
    return _query_keys_template(tuple(sorted(query)))


@functools.lru_cache(maxsize=256)
def _query_keys_template(keys: tuple[str, ...]) -> str:
    # A client sends a handful of parameter names: the template of each set is kept.
    return "?" + "&".join(f"{quote_plus(key)}=%7Bvalue%7D" for key in keys)


class RestClientMetrics:
    """A client's recorder. This base records nothing: clients without a provider use
    it.

    Every request sent is reported once it is :meth:`answered` (its response headers
    arrived) or :meth:`unanswered` (it failed first); a retried request once per
    attempt. A request whose answer is read whole (not a stream) is also reported when
    it is :meth:`finished`, with what :meth:`started` returned when it began.
    """

    __slots__ = ()

    def started(self) -> float:
        """A request whose answer is read whole begins; returns the start time."""
        return 0.0

    def answered(self, method: str, status: int) -> None:
        """A request's response headers arrived with ``status``."""

    def unanswered(self, method: str) -> None:
        """A request failed before any answer: connection, TLS, timeout."""

    def finished(
        self, method: str, path: str, query: Mapping[str, str] | None, started: float
    ) -> None:
        """The request begun at ``started`` ended: its answer read, or failed."""


class _ProviderRestClientMetrics(RestClientMetrics):
    """Records a client's requests through a :class:`RestClientMetricsProvider`."""

    __slots__ = (
        "_base_path",
        "_clock",
        "_durations",
        "_host",
        "_origin",
        "_provider",
        "_results",
    )

    def __init__(self, provider: RestClientMetricsProvider, base: str, clock: Clock) -> None:
        self._provider = provider
        parts = urlsplit(base)
        # Split once: the URL template of each request only adds its path and query.
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._base_path = parts.path.rstrip("/")
        # client-go's host label: the server's host[:port] as configured.
        self._host = parts.netloc.rpartition("@")[2]
        self._clock = clock
        # (status, method) -> counter; status _NO_ANSWER for a request without an answer.
        self._results: dict[tuple[int, str], CounterMetric] = {}
        # (method, URL template) -> histogram.
        self._durations: dict[tuple[str, str], HistogramMetric] = {}

    def started(self) -> float:
        return self._clock.monotonic()

    def answered(self, method: str, status: int) -> None:
        counter = self._results.get((status, method))
        if counter is None:
            counter = self._result_metric(method, status, str(status))
        counter.inc()

    def unanswered(self, method: str) -> None:
        counter = self._results.get((_NO_ANSWER, method))
        if counter is None:
            counter = self._result_metric(method, _NO_ANSWER, _NO_ANSWER_CODE)
        counter.inc()

    def _result_metric(self, method: str, status: int, code: str) -> CounterMetric:
        counter = self._provider.new_rest_client_requests_metric(code, method, self._host)
        self._results[status, method] = counter
        return counter

    def finished(
        self, method: str, path: str, query: Mapping[str, str] | None, started: float
    ) -> None:
        key = (method, _template(self._origin, self._base_path, path, query))
        histogram = self._durations.get(key)
        if histogram is None:
            histogram = self._provider.new_rest_client_request_duration_metric(
                method, key[1], self._host
            )
            self._durations[key] = histogram
        histogram.observe(self._clock.monotonic() - started)


NO_REST_CLIENT_METRICS: Final = RestClientMetrics()
"""The recorder of a client that has not opened its session yet, or has no provider."""


def new_rest_client_metrics(
    base: str, provider: RestClientMetricsProvider | None, *, clock: Clock
) -> RestClientMetrics:
    """The recorder for a client of the server at ``base`` (its configured URL):
    ``provider``'s, else the installed provider's when it implements
    :class:`RestClientMetricsProvider`, else the no-op one. Durations are read on
    ``clock``."""
    chosen = provider if provider is not None else get_metrics_provider()
    if not isinstance(chosen, RestClientMetricsProvider):
        return NO_REST_CLIENT_METRICS
    return _ProviderRestClientMetrics(chosen, base, clock)
