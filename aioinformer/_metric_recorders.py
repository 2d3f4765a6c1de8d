"""Reflector and leader-election metrics: what a component reports, turned into metrics.

Role: a reflector (or a leader elector) reports the milestones of its cycle to a
*recorder*, which writes them to the metric objects a provider made for the
component's name (:class:`~aioinformer._metrics.ReflectorMetricsProvider`,
:class:`~aioinformer._metrics.LeaderMetricsProvider`).

Input: the component's calls, sync, on its event loop: a reflector's list started or
done, watch opened, stream ended (with its :class:`~aioinformer._watch_stream.WatchRead`
and :class:`~aioinformer._watch_policy.WatchEnd`), relist; an elector's run started,
lease acquired, renewal failed, leadership left.
Output: ``inc``/``set``/``observe`` calls on the provider's metric objects; for the
seconds-since-heard gauge, one function handed to the provider, which it calls when it
is read.

Cost: nothing happens per watch event. Events are counted by the stream's own counters
and added to the metrics when the stream ends, so the event counters and the last
resourceVersion move once per watch (every 5 to 10 minutes, or at the inactivity
deadline), while seconds-since-heard is computed whenever it is read. A component with
no provider, or one lacking its protocol, gets the no-op recorder.
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Final

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

    from aioinformer._clock import Clock
    from aioinformer._watch_policy import WatchEnd
    from aioinformer._watch_stream import WatchRead

__all__ = [
    "HeardTracker",
    "LeaderMetrics",
    "ReflectorMetrics",
    "new_leader_metrics",
    "new_reflector_metrics",
]


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

    def stream_ended(
        self, read: WatchRead, end: WatchEnd, resource_version: str, *, complete: bool
    ) -> None:
        """A read of a watch stream ended: how, and the resourceVersion it reached.

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
        "_deleted",
        "_items_in_list",
        "_items_in_watch",
        "_last_rv",
        "_list_duration",
        "_lists",
        "_modified",
        "_relists",
        "_short_watches",
        "_watch_duration",
        "_watch_lists",
        "_watches",
    )

    def __init__(self, provider: ReflectorMetricsProvider, name: str) -> None:
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

    def stream_ended(
        self, read: WatchRead, end: WatchEnd, resource_version: str, *, complete: bool
    ) -> None:
        if read.added:
            self._added.inc(read.added)
        if read.modified:
            self._modified.inc(read.modified)
        if read.deleted:
            self._deleted.inc(read.deleted)
        if read.bookmarks:
            self._bookmarks.inc(read.bookmarks)
        self._set_resource_version(resource_version)
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
    return _ProviderReflectorMetrics(chosen, name)


def _weakly(function: Callable[[], float]) -> Callable[[], float]:
    if not hasattr(function, "__self__"):
        return function
    method = weakref.WeakMethod(function)

    def call() -> float:
        bound = method()
        return math.nan if bound is None else bound()

    return call


class HeardTracker:
    """When the server was last heard from, sampled when asked (no per-event cost).

    The owner marks each completed list with :meth:`heard` and passes the running
    count of items read from watch streams to :meth:`seconds`: a count that moved
    since the last call means the server spoke in between, and the time is taken as
    now. So the answer is late by at most the interval between two calls (one scrape).
    """

    __slots__ = ("_clock", "_count", "_heard_at")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._count = 0
        # Clock time the server was last heard from; None before anything was.
        self._heard_at: float | None = None

    def begin(self) -> None:
        """A list-and-watch round starts: silence is measured from now on, until the
        server is first heard from."""
        if self._heard_at is None:
            self._heard_at = self._clock.monotonic()

    def heard(self) -> None:
        """The server answered just now (a list completed)."""
        self._heard_at = self._clock.monotonic()

    def seconds(self, count: int) -> float:
        """Seconds since the server was last heard from (or since :meth:`begin`), given
        the items read so far; NaN before either."""
        now = self._clock.monotonic()
        if count != self._count:
            self._count = count
            self._heard_at = now
        return math.nan if self._heard_at is None else now - self._heard_at


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
