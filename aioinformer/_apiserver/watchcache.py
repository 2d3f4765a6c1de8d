"""kube-apiserver's watch cache: a resource's objects, the changes to them within a window,
the watches open on them, and reads at a resourceVersion.

Role: what ``watchCache`` is to kube-apiserver's cacher, for both servers of the list/watch
API in this package: the fake API server (``aioinformer.testing``, whose store adds the
write rules on top) and the caching proxy (``aioinformer.proxy``, whose cache adds its
upstream reflector's writes and the user's transform on top). Input: changes, each an
encoded :class:`~aioinformer._apiserver.objects.Entry` with the one it replaced
(:meth:`WatchCache.record`, then :meth:`WatchCache.deliver`, or a fan-out of the server's
own). Output: LIST pages at a resourceVersion
(:meth:`WatchCache.list`), single objects (:meth:`WatchCache.get`) and
:class:`~aioinformer._apiserver.watch.Watcher` queues of encoded watch lines
(:meth:`WatchCache.open_watch`, :meth:`WatchCache.bookmark_all`).

The rules, as kube-apiserver v1.36 has them:

* **History.** A :class:`History` keeps the last ``size`` changes in resourceVersion
  order and the resourceVersion the server has reached. One history may be shared by the
  caches of several resources (the fake: one revision counter for every resource, as
  etcd has) or belong to one (the proxy: one per upstream resource). Everything newer than
  ``compacted_rv`` is in it; a change pushed out of the window raises ``compacted_rv``.
* **Reading at a resourceVersion** (:meth:`WatchCache.read_rv`). Unset or ``"0"``: the
  newest state. ``NotOlderThan`` (or no match without a limit): the newest state, once
  the server has reached the version. ``Exact`` (or no match with a limit, the legacy
  rule): the state at exactly that version, rebuilt from the history; 410 ``Expired``
  before the window. A version the server has not reached: 504 too large.
* **Paged lists.** Every page of one LIST reads the snapshot of its first page: the
  ``continue`` token names the resourceVersion and the next key. A token whose version
  left the window answers 410 with a token that goes on at the newest version, as
  kube-apiserver's does. The last few rebuilt snapshots are kept, since the pages of one
  list ask for the same one again and again. The token does not carry the selectors: each
  page is filtered by those its request sends, a shard selector included.
* **Watches.** A watch from a resourceVersion gets every change after it (410 before the
  window); one with initial events gets the state as ``ADDED`` events first and, when
  asked, the ``k8s.io/initial-events-end`` BOOKMARK. Each watcher is offered every change
  in resourceVersion order and queues what its selection sees
  (:meth:`Watcher.queue <aioinformer._apiserver.watch.Watcher.queue>`).
* **Bookmarks** (:meth:`WatchCache.bookmark_all`) carry the server's resourceVersion to
  every watcher that asked for them; one encoding per form, shared by all.

Task model: plain synchronous code on one event loop. A change, its history entry and its
fan-out happen in one step, so a watcher opened in the same step as a snapshot sees exactly
the changes after it. Nothing here reads a clock or starts a task.
"""

from __future__ import annotations

import collections
import contextlib
from typing import TYPE_CHECKING, Final, Generic, TypeVar

from aioinformer._apiserver.objects import StatusError, object_key, status_body
from aioinformer._apiserver.watch import (
    Change,
    ListResult,
    Watcher,
    bookmark_line,
    continue_expired,
    not_found,
    page,
    parse_rv,
    queue_initial,
    read_continue,
    too_large,
    too_old,
)

if TYPE_CHECKING:
    from aioinformer._apiserver.objects import Entry, ResourceType
    from aioinformer.labels import FieldSelector, LabelSelector
    from aioinformer.shard_selector import ShardSelector

__all__ = ["History", "HistoryView", "WatchCache"]

_SNAPSHOTS: Final = 4
"""How many rebuilt past states a cache keeps: the pages of one paginated LIST all read the
same resourceVersion."""

W = TypeVar("W", bound=Watcher)


class History:
    """The changes a server remembers, in resourceVersion order, and how far it has got.

    Invariants: ``events`` holds, in resourceVersion order, every change with
    ``compacted_rv < event.rv``, at most ``size`` of them; ``rv`` is the newest
    resourceVersion the server has reached (no older than any event's), 0 before any.
    """

    __slots__ = ("compacted_rv", "events", "rv", "size")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"history_size must be at least 1, not {size}")
        self.size = size
        self.events: collections.deque[Change] = collections.deque()
        self.rv = 0
        self.compacted_rv = 0

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"<History rv={self.rv} compacted_rv={self.compacted_rv} events={len(self.events)}>"

    def record(self, event: Change) -> None:
        """Append ``event`` (the newest change); the oldest leaves a full window."""
        events = self.events
        events.append(event)
        if len(events) > self.size:
            self.compacted_rv = events.popleft().rv

    def compact(self, rv: int | None = None) -> None:
        """Forget the changes up to ``rv`` (default: all): older reads answer 410."""
        target = self.rv if rv is None else min(rv, self.rv)
        events = self.events
        while events and events[0].rv <= target:
            events.popleft()
        self.compacted_rv = max(self.compacted_rv, target)


class HistoryView:
    """What every reader of a :class:`History` asks of it: how far the server has got,
    and where its window starts."""

    history: History

    @property
    def rv(self) -> int:
        """The newest resourceVersion the server has reached."""
        return self.history.rv

    @property
    def compacted_rv(self) -> int:
        """Reads at older resourceVersions answer 410 ``Expired``."""
        return self.history.compacted_rv


class WatchCache(HistoryView, Generic[W]):
    """One resource's objects, its share of a :class:`History`, and its watchers (see the
    module notes). ``watcher_type`` is the :class:`~aioinformer._apiserver.watch.Watcher`
    (sub)class :meth:`open_watch` makes.

    Invariants: ``entries`` is the resource's state after its newest change in the history,
    and ``last_write_rv`` that change's resourceVersion (so the state at any version
    ``>= last_write_rv`` is ``entries``); ``_ordered`` is ``None`` or exactly (sorted keys,
    their entries); ``_snapshots`` holds states at versions below ``last_write_rv``, which
    never change; every watcher in ``watchers`` has been offered every delivered change
    newer than its start, in order.
    """

    def __init__(self, rt: ResourceType, history: History, watcher_type: type[W]) -> None:
        self.rt = rt
        self.history = history
        self.watcher_type = watcher_type
        self.entries: dict[str, Entry] = {}
        self.last_write_rv = 0
        self.watchers: list[W] = []
        self._id = rt.id
        self._ordered: tuple[list[str], list[Entry]] | None = None
        self._snapshots: collections.OrderedDict[int, tuple[list[str], list[Entry]]] = (
            collections.OrderedDict()
        )

    def __len__(self) -> int:
        return len(self.entries)

    # -- changes ---------------------------------------------------------------------------

    def load(self, entries: dict[str, Entry], rv: int) -> None:
        """Make ``entries`` the state at ``rv``, with no history before it (a first list;
        only for a cache with a history of its own)."""
        self.entries = entries
        self._ordered = None
        self._snapshots.clear()
        history = self.history
        history.events.clear()
        history.rv = history.compacted_rv = self.last_write_rv = rv

    def record(
        self,
        event_type: str,
        key: str,
        entry: Entry,
        prev: Entry | None,
        *,
        rt: ResourceType | None = None,
    ) -> Change:
        """Make ``entry`` the state of ``key`` (for ``DELETED``: remove it; ``entry`` is
        its last state) and record the change in the history, without offering it to the
        watchers (see :meth:`deliver`). ``rt``: the version of the resource the change was
        written at, which its watch lines name (default: the cache's).

        A change older than the resource's newest one (a proxy's relist finding an object
        that changed before a bookmark it heard) is recorded at the newest one, so the
        history stays in resourceVersion order; the object keeps its own version.
        """
        rv = entry.rv if entry.rv > self.last_write_rv else self.last_write_rv
        event = Change(rv, rt or self.rt, event_type, key, entry, prev)
        if event_type == "DELETED":
            del self.entries[key]
        else:
            self.entries[key] = entry
        self._ordered = None
        self.last_write_rv = rv
        self.history.record(event)
        return event

    def deliver(self, event: Change) -> None:
        """Offer ``event`` to every watcher, waking those that queued it."""
        for watcher in self.watchers:
            watcher.offer(event)

    def replays(self, event: Change) -> bool:
        """Whether a watch opened from before ``event`` is sent it; every change is,
        unless a subclass withholds some (the fake's lost-event fault)."""
        return True

    # -- reads -----------------------------------------------------------------------------

    def get(self, namespace: str | None, name: str) -> Entry:
        """The current object, or the 404 ``NotFound``."""
        entry = self.entries.get(object_key(namespace, name))
        if entry is None:
            raise not_found(self.rt, name)
        return entry

    def ordered(self) -> tuple[list[str], list[Entry]]:
        """(keys, entries) of the current state, sorted by key (kept until a change)."""
        if self._ordered is None:
            keys = sorted(self.entries)
            entries = self.entries
            self._ordered = (keys, [entries[k] for k in keys])
        return self._ordered

    def snapshot(self, rv: int) -> tuple[list[str], list[Entry]]:
        """(keys, entries) of the resource as it was at ``rv``, sorted by key.

        The caller guarantees ``compacted_rv <= rv``. Rebuilt by undoing the newer
        changes of the history; the last few rebuilt states are kept.
        """
        if rv >= self.last_write_rv:
            return self.ordered()
        cached = self._snapshots.get(rv)
        if cached is not None:
            self._snapshots.move_to_end(rv)
            return cached
        rt, rt_id = self.rt, self._id
        state = dict(self.entries)
        for event in reversed(self.history.events):
            if event.rv <= rv:
                break
            if event.rt is not rt and event.rt.id != rt_id:
                continue
            if event.prev is None:
                state.pop(event.key, None)
            else:
                state[event.key] = event.prev
        keys = sorted(state)
        result = (keys, [state[k] for k in keys])
        self._snapshots[rv] = result
        while len(self._snapshots) > _SNAPSHOTS:
            self._snapshots.popitem(last=False)
        return result

    def read_rv(self, resource_version: str | None, match: str | None, *, limit: int | None) -> int:
        """The resourceVersion a LIST reads at, or the 410/504 kube-apiserver answers (see
        the module notes). A server that waits for a version it has not reached does so
        before asking."""
        history = self.history
        if not resource_version:
            return history.rv
        requested = parse_rv(resource_version)
        if requested == 0:
            return history.rv
        if requested > history.rv:
            raise too_large(requested, history.rv)
        exact = match == "Exact" or (not match and bool(limit))
        if not exact:
            return history.rv
        if requested < history.compacted_rv:
            raise StatusError(
                status_body(410, "Expired", "The resourceVersion for the provided list is too old.")
            )
        return requested

    def list(
        self,
        *,
        namespace: str | None,
        label_selector: LabelSelector | None,
        field_selector: FieldSelector | None,
        resource_version: str | None,
        resource_version_match: str | None,
        limit: int | None,
        continue_: str | None,
        shard_selector: ShardSelector | None = None,
    ) -> ListResult:
        """One LIST page; the pages of one list read one snapshot. ``shard_selector``
        keeps only its slice (the page then echoes it)."""
        start = ""
        history = self.history
        if continue_:
            rv, start = read_continue(continue_, resource_version)
            if rv < history.compacted_rv or rv > history.rv:
                raise continue_expired(history.rv, start)
        else:
            rv = self.read_rv(resource_version, resource_version_match, limit=limit)
        keys, entries = self.snapshot(rv)
        return page(
            keys,
            entries,
            rv,
            namespace=namespace if self.rt.namespaced else None,
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            start=start,
            shard_selector=shard_selector,
        )

    # -- watches ---------------------------------------------------------------------------

    def open_watch(
        self,
        *,
        namespace: str | None,
        label_selector: LabelSelector | None,
        field_selector: FieldSelector | None,
        resource_version: str | None,
        initial_events: bool,
        initial_events_end: bool,
        bookmarks: bool = False,
        as_meta: str | None = None,
        rt: ResourceType | None = None,
        shard_selector: ShardSelector | None = None,
    ) -> W:
        """Register a watcher with its first lines already queued.

        ``initial_events`` queues ``ADDED`` for the current state, then, with
        ``initial_events_end``, the ``k8s.io/initial-events-end`` BOOKMARK; otherwise the
        changes after ``resource_version`` are queued (none for an unset or ``"0"`` one).
        A version older than the history raises the 410 ``Expired`` (the caller answers
        it, or sends it as an ERROR event). ``bookmarks``: :meth:`bookmark_all` reaches
        it. ``as_meta`` makes it a metadata-only watch (see
        :class:`~aioinformer._apiserver.watch.Watcher`). ``rt``: the version of the resource
        the watch is served at, which its initial events and bookmarks name (default: the
        cache's). ``shard_selector``: only the objects of its slice, initial events too.
        """
        rt = rt or self.rt
        history = self.history
        if initial_events:
            start_rv = history.rv
        else:
            start_rv = parse_rv(resource_version) if resource_version else 0
            if start_rv == 0:
                start_rv = history.rv
            elif start_rv < history.compacted_rv:
                raise too_old(start_rv, history.compacted_rv)
        watcher = self.watcher_type(
            rt,
            namespace=namespace if rt.namespaced else None,
            label_selector=label_selector,
            field_selector=field_selector,
            min_rv=start_rv,
            as_meta=as_meta,
            bookmarks=bookmarks,
            shard_selector=shard_selector,
        )
        if initial_events:
            queue_initial(
                watcher,
                self.snapshot(start_rv)[1],
                start_rv,
                initial_events_end=initial_events_end,
            )
        elif start_rv < self.last_write_rv:
            rt_id = self._id
            for event in history.events:
                if (
                    event.rv > start_rv
                    and (event.rt is rt or event.rt.id == rt_id)
                    and self.replays(event)
                ):
                    watcher.offer(event)
        if watcher.buffer:
            watcher.wake.set()
        self.watchers.append(watcher)
        return watcher

    def close_watch(self, watcher: Watcher) -> None:
        """Stop offering changes to ``watcher`` and wake its writer, which ends."""
        with contextlib.suppress(ValueError):
            self.watchers.remove(watcher)  # type: ignore[arg-type]
        watcher.close()

    def bookmark_all(self) -> None:
        """Queue a BOOKMARK at the server's resourceVersion for every watcher that asked
        for bookmarks, and wake it."""
        lines: dict[str | None, bytes] = {}
        rv = self.history.rv
        for watcher in self.watchers:
            if not watcher.bookmarks:
                continue
            line = lines.get(watcher.as_meta)
            if line is None:
                line = lines[watcher.as_meta] = bookmark_line(self.rt, rv, as_meta=watcher.as_meta)
            watcher.buffer.append(line)
            watcher.wake.set()

    def close_all(self) -> None:
        """Close every watcher (the server is shutting down)."""
        for watcher in list(self.watchers):
            self.close_watch(watcher)
