"""Reflector and leader-election metrics: what a component reports, turned into metrics.

Role: a reflector (or a leader elector) reports the milestones of its cycle to a
*recorder*, which writes them to the metric objects a provider made for the
component's name (:class:`~aioinformer._metrics.ReflectorMetricsProvider`,
:class:`~aioinformer._metrics.LeaderMetricsProvider`).

Input: the component's calls, sync, on its event loop: a reflector's list started or
done, watch opened, stream being read (its :class:`~aioinformer._watch_stream.WatchRead`)
and ended (its :class:`~aioinformer._watch_policy.WatchEnd`), relist; an elector's run
started, lease acquired, renewal failed, leadership left.
Output: ``inc``/``set``/``observe`` calls on the provider's metric objects; for the
seconds-since-heard gauge, one function handed to the provider, which it calls when it
is read.

Cost: nothing happens per watch event. Events are counted by the stream's own counters,
and what they gained is added to the metrics every :data:`FLUSH_PERIOD` seconds while the
stream is read (a timer on the reflector's clock, no task) and when the read ends; the
last resourceVersion moves at the same moments. Seconds-since-heard is computed
whenever it is read. A component with no provider, or one lacking its protocol, gets
the no-op recorder.
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Final

from aioinformer._clock import call_later
from aioinformer._metrics import (
    LeaderMetricsProvider,
    ReflectorMetricsProvider,
    get_metrics_provider,
)
from aioinformer._watch_policy import SHORT_WATCH
from aioinformer.errors import ApiError
from aioinformer.listwatch import ADDED, BOOKMARK, DELETED, MODIFIED

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer._clock import Clock, TimerHandle
    from aioinformer._watch_policy import WatchEnd
    from aioinformer._watch_stream import Cursor, WatchRead

__all__ = [
    "FLUSH_PERIOD",
    "LeaderMetrics",
    "ReflectorMetrics",
    "new_leader_metrics",
    "new_reflector_metrics",
]

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

    def watch_started(self) -> None:
        """A watch request is sent."""

    def relisted(self) -> None:
        """A list-and-watch round after the first begins (it lists again)."""

    def reading(self, read: WatchRead, cursor: Cursor) -> None:
        """``read`` starts reading a watch stream, advancing ``cursor``."""

    def stop_reading(self) -> None:
        """The read given to :meth:`reading` ended, however it did."""

    def stream_ended(self, end: WatchEnd, *, complete: bool) -> None:
        """A read of a watch stream ended, and how.

        ``complete`` is false when the read stopped at a streaming list's end of initial
        events and the stream carries on as the watch: its events count, the stream's
        duration and size are observed when its last read ends.
        """


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
        "_watch_lists",
        "_watches",
    )

    def __init__(self, provider: ReflectorMetricsProvider, name: str, clock: Clock) -> None:
        self._clock = clock
        self._lists = provider.new_reflector_lists_metric(name)
        self._list_duration = provider.new_reflector_list_duration_metric(name)
        self._items_in_list = provider.new_reflector_items_in_list_metric(name)
        self._watch_lists = provider.new_reflector_watch_lists_metric(name)
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
        self._read: WatchRead | None = None
        self._cursor: Cursor | None = None
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

    def watch_started(self) -> None:
        self._watches.inc()

    def relisted(self) -> None:
        self._relists.inc()

    def reading(self, read: WatchRead, cursor: Cursor) -> None:
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
