"""What a reflector says about itself: its state, its statistics, when it last heard.

Role. The reporting half of :mod:`aioinformer.reflector` (which re-exports the public
names): :class:`ReflectorState`, the phase a reflector is in; :class:`ReflectorStatistics`,
the frozen snapshot ``Reflector.statistics()`` returns; and :class:`LastHeard`, the one
mutable cell recording when the server last said anything, shared by the reflector and
the watch being read (:class:`aioinformer.reflector.WatchRead`).

Input: clock readings, written by the reflector's own task and by the inactivity
check's timer callback, both on the event loop. Output: values read by ``statistics()``,
``SharedIndexInformer.health()`` and metrics. No tasks, no locks: every write is one
attribute store between two suspension points.

"Heard" counts three moments: a LIST answered (each full list, before it is handed to
the store), the start of each watch (so that a freshly opened watch has a whole window
before it is judged silent), and progress on a watch stream: any item read, a
``BOOKMARK`` or an event that was then skipped as malformed included. Progress is not
stamped per event (that path gets no clock read): the inactivity check, which already
runs every twentieth of the deadline and compares the items read with what it saw last,
stamps the time when it sees some. So the record lags the last item by at most a twentieth
of the deadline and errs towards "heard recently"; the liveness window
(:mod:`aioinformer.health`) is three quarters of the deadline, wide enough for that.
While a slow store call holds the reader up nothing new is read, so nothing is heard:
the cache is falling behind then too, although the inactivity deadline (which only
counts time spent waiting on the stream) does not close the watch for it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["LastHeard", "ReflectorState", "ReflectorStatistics"]


class ReflectorState(enum.Enum):
    """Where a reflector is in its cycle. ``repr()`` and ``statistics()`` show it."""

    STOPPED = "STOPPED"
    """Not running: before ``run()``/``list_and_watch()`` starts and after it returns."""
    LISTING = "LISTING"
    """Fetching the full state: LIST pages, or the initial events of a streaming list."""
    WATCHING = "WATCHING"
    """Opening or reading a watch from the last synced resourceVersion."""
    BACKING_OFF = "BACKING_OFF"
    """Sleeping out a backoff delay before the next list or watch attempt."""


@dataclass(frozen=True, slots=True)
class ReflectorStatistics:
    """A snapshot of a reflector's counters, from :meth:`Reflector.statistics`."""

    state: ReflectorState
    """The state at the time of the snapshot."""
    lists: int
    """LIST requests sent: every page and every retry counts."""
    watches: int
    """WATCH requests sent, streaming lists included."""
    relists: int
    """Full lists (plain or streaming) started after the first one."""
    events: int
    """Watch events applied: ``ADDED``, ``MODIFIED``, ``DELETED`` and ``BOOKMARK``."""
    last_resource_version: str
    """The last resourceVersion synced (``""`` before the first list)."""
    last_error: BaseException | None
    """The most recent list or watch failure, or ``None``."""
    seconds_since_heard: float | None = None
    """Seconds since the server last answered a list, a watch started or a watch stream
    delivered anything (see :class:`LastHeard` for the precision); ``None`` before the
    first list."""
    watch_restarts: int = 0
    """Watches opened after the first one following each list: re-watches after the
    server ended a watch, after a dropped or silent stream, after a back-off."""
    inactivity_deadline: float | None = None
    """The silence deadline of the watch being read, while ``WATCHING``; else ``None``."""
    watch_list_retries: int = 0
    """Streaming lists sent again, after a backoff, because the one before failed in a
    way worth retrying (a 429, a refused or lost connection, a stream closed before its
    initial-events-end bookmark)."""
    watch_list_fallbacks: int = 0
    """Times a streaming list was given up for LIST+WATCH: at once after a failure not
    worth retrying, or once its retries (``max_watch_list_retries``) were spent."""


class LastHeard:
    """When the reflector last heard from the server, in its clock's seconds.

    Invariant: ``at`` is ``None`` until the first list is answered (or, for a streaming
    list, the first watch starts) and never decreases afterwards.
    """

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: float | None = None

    def seconds_since(self, now: float) -> float | None:
        """``now - at`` (never negative), or ``None`` when nothing was heard yet."""
        at = self.at
        return None if at is None else max(0.0, now - at)
