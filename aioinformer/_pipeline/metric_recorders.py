"""Reflector and index metrics: what a reflector and an informer's indexes report, turned
into metrics.

Role: a reflector reports the milestones of its cycle to a *recorder*, which writes them to
the metric objects a provider made for it
(:class:`~aioinformer._kernel.metrics.ReflectorMetricsProvider`, and
:class:`~aioinformer._kernel.metrics.IndexMetricsProvider` for an informer's index
functions). The recorders of the other wings live with them: the leader elector's, the
sharder's and the controller's in :mod:`aioinformer.operator._metrics`, the REST client's in
:mod:`aioinformer.client._metrics`.

Input: the reflector's calls, sync, on its event loop: a list started or done, watch
opened, stream being read (its :class:`~aioinformer.reflector.WatchRead`) and ended (its
:class:`~aioinformer._pipeline.watch_policy.WatchEnd`), relist; an informer's index function
failed. Output: ``inc``/``dec``/``set``/``observe`` calls on the provider's metric objects;
for the seconds-since-heard gauge, one function handed to the provider, which it calls when
it is read.

Cost: nothing happens per watch event. Events are counted by the stream's own counters,
and what they gained is added to the metrics every :data:`FLUSH_PERIOD` seconds while the
stream is read (a timer on the reflector's clock, no task) and when the read ends; the
last resourceVersion moves at the same moments. Seconds-since-heard is computed whenever
it is read. An index function's failure costs one dictionary lookup and an increment (a
succeeding one costs nothing). A component with no provider, or one lacking its protocol,
gets the no-op recorder.
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Final, Protocol

from aioinformer._kernel.clock import call_later
from aioinformer._kernel.metrics import (
    IndexMetricsProvider,
    ReflectorMetricsProvider,
    WatchListMetricsProvider,
    get_metrics_provider,
)
from aioinformer._pipeline.watch_policy import SHORT_WATCH
from aioinformer.errors import ApiError
from aioinformer.listwatch import ADDED, BOOKMARK, DELETED, MODIFIED

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from aioinformer._kernel.clock import Clock, TimerHandle
    from aioinformer._kernel.metrics import CounterMetric
    from aioinformer._pipeline.watch_policy import WatchEnd

__all__ = [
    "FLUSH_PERIOD",
    "IndexMetrics",
    "ReflectorMetrics",
    "new_index_metrics",
    "new_reflector_metrics",
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
