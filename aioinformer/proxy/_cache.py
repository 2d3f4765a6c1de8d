"""The proxy's watch cache: one resource's objects as the upstream has them, transformed,
with a bounded history of changes that downstream watches are served from.

Role: kube-apiserver's watch cache (:class:`aioinformer._apiserver.watchcache.WatchCache`,
shared with the fake API server, holds its history, snapshots, paged lists,
resourceVersion rules, watchers and bookmarks) fed by a reflector. A
:class:`~aioinformer.reflector.Reflector` writes to a :class:`ProxyWatchCache` (it is a
``ReflectorStore``): ``replace`` with every list, ``add``/``update``/``delete`` with every
watch event, ``bookmark`` with every upstream BOOKMARK. The cache runs the user's
transform once per object change, encodes the result once
(:class:`~aioinformer._apiserver.objects.Entry`), records the change in its history and
offers it to every open downstream :class:`ProxyWatcher`, which queues the same encoded
line bytes as every other watcher; the lines go out in one flush per loop iteration (or
per ``flush_interval``). Output: LIST pages at a resourceVersion
(:meth:`ProxyWatchCache.list`), single objects (:meth:`ProxyWatchCache.get`) and watchers
(:meth:`ProxyWatchCache.open_watch`).

Semantics:

* **resourceVersions are the upstream's.** Objects keep their upstream
  ``metadata.resourceVersion`` (a transform cannot change it) and the cache's own
  resourceVersion is the newest one it has heard of: a list's, an event's, a bookmark's.
  Upstream resourceVersions are integers (kube-apiserver's etcd revisions); the history
  is ordered by them.
* **A relist is diffed, not replayed.** The first list loads the cache. A later one (after
  an upstream 410, a restart, a dropped connection that outlived the upstream's history)
  is compared with what the cache holds: objects new or changed since become ``ADDED`` /
  ``MODIFIED`` events at their own resourceVersions, objects gone become ``DELETED`` at
  the list's resourceVersion. Downstream watches stay open and converge, with no relist
  of their own. An object whose upstream resourceVersion did not change is not
  transformed again.
* **The transform** (``transform(obj) -> obj | None``) sees the decoded upstream object,
  with ``kind`` and ``apiVersion``; it may change it in place or return another.
  ``None`` hides the object: downstream never sees it, and one that was visible is
  ``DELETED``. A transform that raises, or renames the object, hides it too (counted in
  ``transform_errors``, logged once per object): an untransformed object never leaks.
* **History** keeps the last ``history_size`` events of the resource. A read at an older
  resourceVersion answers 410 ``Expired``: a watch (answered, as kube-apiserver v1.36.2
  answers it, with one ``ERROR`` event in a 200 stream), an ``Exact`` LIST, an expired
  ``continue``.
* **Shard selectors** (KEP-5866) filter LIST pages and watchers from the cache whatever
  the upstream serves: each entry keeps its hashed ``uid`` and ``namespace`` once
  computed, so fanning a change out to many sharded watchers hashes it once.
* **Slow watchers.** A watcher with more than ``watcher_buffer`` lines queued is closed
  (its ``abort`` callback ends the HTTP stream even if a write is blocked); its client
  re-watches from its last resourceVersion, or relists after a 410.

Task model: synchronous methods on one event loop, except :meth:`ProxyWatchCache.wait_fresh`,
which suspends until the cache reaches a resourceVersion. Nothing here reads a clock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from aioinformer._apiserver import watchcache
from aioinformer._apiserver.objects import Entry, ResourceType, object_key
from aioinformer._apiserver.watch import Watcher, too_large

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["CacheStatistics", "ProxyWatcher", "Transform", "ProxyWatchCache"]

logger = logging.getLogger("aioinformer.proxy")

Transform: TypeAlias = Callable[[dict[str, Any]], dict[str, Any] | None]
"""``transform(obj) -> obj | None``: what downstream sees of an upstream object."""


class ProxyWatcher(Watcher):
    """A downstream watch: a :class:`~aioinformer._apiserver.watch.Watcher` that also knows
    how to end its HTTP stream at once (``abort``) and how to hand bytes to its connection
    without its writer (``send``)."""

    __slots__ = ("abort", "send")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.abort: Callable[[], None] | None = None
        self.send: Callable[[bytes], bool] | None = None
        """Set by the HTTP side while its writer is idle: ``send(data)`` writes ``data``
        to the connection at once and returns ``True``, or returns ``False`` (the
        connection is backed up or closing) and the writer must be woken instead."""


class CacheStatistics:
    """Counters of one :class:`ProxyWatchCache` (read them, do not write them)."""

    __slots__ = ("events", "malformed", "relists", "slow_watchers_closed", "transform_errors")

    def __init__(self) -> None:
        self.events = 0
        """Changes recorded in the history (each offered to every watcher once)."""
        self.relists = 0
        """Upstream lists after the first, each diffed into events."""
        self.slow_watchers_closed = 0
        """Watchers closed because their queue passed ``watcher_buffer`` lines."""
        self.transform_errors = 0
        """Object changes the transform failed on (the object is hidden)."""
        self.malformed = 0
        """Upstream objects skipped for having no ``metadata.name``."""


class ProxyWatchCache(watchcache.WatchCache[ProxyWatcher]):
    """One resource's transformed objects, history and watchers (see the module notes):
    the shared watch cache, with a history of its own, written by a reflector.

    Invariants: ``rv`` is the newest upstream resourceVersion heard (0 before the first
    list); ``_upstream`` maps every upstream key (hidden objects too) to its upstream
    resourceVersion string; ``_pending`` holds the watchers that queued lines since the
    last flush, and ``_flush_handle`` is set iff a flush is scheduled.
    """

    def __init__(
        self,
        rt: ResourceType,
        *,
        transform: Transform | None = None,
        history_size: int = 10_000,
        watcher_buffer: int = 10_000,
        flush_interval: float = 0.0,
    ) -> None:
        super().__init__(rt, watchcache.History(history_size), ProxyWatcher)
        if watcher_buffer < 1:
            raise ValueError(f"watcher_buffer must be at least 1, not {watcher_buffer}")
        self.transform = transform
        self.history_size = history_size
        self.watcher_buffer = watcher_buffer
        self.flush_interval = flush_interval
        self.stats = CacheStatistics()
        self.synced = asyncio.Event()
        self._upstream: dict[str, str] = {}
        self._fresh: list[tuple[int, asyncio.Future[None]]] = []
        self._failed_keys: set[str] = set()
        self._pending: set[ProxyWatcher] = set()
        self._flush_handle: asyncio.Handle | None = None

    def __repr__(self) -> str:
        return (
            f"<ProxyWatchCache {self.rt.qualified} objects={len(self.entries)} rv={self.rv} "
            f"history={len(self.history)} watchers={len(self.watchers)}>"
        )

    # -- the ReflectorStore the upstream reflector writes to -------------------------------

    async def add(self, obj: Any) -> None:
        self._apply(obj)

    async def update(self, obj: Any) -> None:
        self._apply(obj)

    async def delete(self, obj: Any) -> None:
        key = self._key_of(obj)
        if key is None:
            return
        meta = obj["metadata"]
        rv = self._rv_of(meta)
        self._upstream.pop(key, None)
        self._failed_keys.discard(key)
        prev = self.entries.get(key)
        if prev is not None:
            self._commit("DELETED", key, self._deleted_entry(obj, prev, rv), prev)
        self._advance(rv)

    async def replace(self, objs: list[Any], resource_version: str) -> None:
        list_rv = _int_rv(resource_version, self.history.rv)
        if not self.synced.is_set():
            self._load(objs, list_rv)
            return
        self.stats.relists += 1
        seen: set[str] = set()
        changed: list[tuple[int, str, dict[str, Any]]] = []
        upstream = self._upstream
        for obj in objs:
            key = self._key_of(obj)
            if key is None:
                continue
            meta = obj["metadata"]
            seen.add(key)
            text = meta.get("resourceVersion")
            if upstream.get(key) != text or key in self._failed_keys:
                changed.append((_int_rv(text, list_rv), key, obj))
        changed.sort(key=lambda change: change[0])
        for _, _, obj in changed:
            self._apply(obj)
        for key in [key for key in upstream if key not in seen]:
            del upstream[key]
            self._failed_keys.discard(key)
            prev = self.entries.get(key)
            if prev is not None:
                last = self._last_state(prev, max(list_rv, self.history.rv))
                self._commit("DELETED", key, last, prev)
        self._advance(list_rv)

    async def resync(self) -> None:
        """Nothing to do: downstream clients resync their own caches."""

    async def bookmark(self, resource_version: str) -> None:
        self._advance(_int_rv(resource_version, self.history.rv))

    # -- writes ----------------------------------------------------------------------------

    def _load(self, objs: Iterable[dict[str, Any]], list_rv: int) -> None:
        """The first list: the state, with no history before it."""
        entries: dict[str, Entry] = {}
        for obj in objs:
            key = self._key_of(obj)
            if key is None:
                continue
            meta = obj["metadata"]
            self._upstream[key] = meta.get("resourceVersion", "")
            entry = self._transformed(key, obj, self._rv_of(meta))
            if entry is not None:
                entries[key] = entry
        self.load(entries, list_rv)
        self.synced.set()
        self._wake_fresh()

    def _apply(self, obj: dict[str, Any]) -> None:
        """An upstream ADDED or MODIFIED object (or a changed one found by a relist)."""
        key = self._key_of(obj)
        if key is None:
            return
        meta = obj["metadata"]
        rv = self._rv_of(meta)
        self._upstream[key] = meta.get("resourceVersion", "")
        entry = self._transformed(key, obj, rv)
        prev = self.entries.get(key)
        if entry is not None:
            self._commit("ADDED" if prev is None else "MODIFIED", key, entry, prev)
        elif prev is not None:
            self._commit("DELETED", key, self._last_state(prev, rv), prev)
        self._advance(rv)

    def _key_of(self, obj: Any) -> str | None:
        """``namespace/name`` of an upstream object; ``None`` (logged, counted) for one
        without a name, which no API server sends but a broken one might."""
        meta = obj.get("metadata") if type(obj) is dict else None
        if type(meta) is dict:
            name = meta.get("name")
            if type(name) is str and name:
                return object_key(meta.get("namespace"), name)
        self.stats.malformed += 1
        logger.error("skipping a %s object without metadata.name", self.rt.qualified)
        return None

    def _run_transform(self, obj: dict[str, Any], rv: int) -> Entry | None:
        """The transform's entry for ``obj`` (``None``: hidden); raises what it raises,
        and ``ValueError`` when it renamed the object."""
        transform = self.transform
        if transform is None:
            return Entry(obj, rv)
        meta = obj["metadata"]
        name, namespace, text = meta["name"], meta.get("namespace"), meta.get("resourceVersion")
        result = transform(obj)
        if result is None:
            return None
        new_meta = result["metadata"]
        if new_meta.get("name") != name or new_meta.get("namespace") != namespace:
            raise ValueError("the transform renamed the object; it may not")
        new_meta["resourceVersion"] = text
        return Entry(result, rv)

    def _transformed(self, key: str, obj: dict[str, Any], rv: int) -> Entry | None:
        """The entry downstream sees for ``obj``, or ``None`` when it is hidden."""
        try:
            entry = self._run_transform(obj, rv)
        except Exception as exc:  # noqa: BLE001 - a user callback: any failure hides the object
            self.stats.transform_errors += 1
            if key not in self._failed_keys:
                self._failed_keys.add(key)
                logger.error(
                    "transform failed on %s %s; the object is hidden: %r",
                    self.rt.qualified,
                    key,
                    exc,
                )
            return None
        self._failed_keys.discard(key)
        return entry

    def _deleted_entry(self, obj: dict[str, Any], prev: Entry, rv: int) -> Entry:
        """What a DELETED event carries: the transformed final state when the transform
        still shows it, else the last state downstream saw, at the deletion's rv."""
        try:
            entry = self._run_transform(obj, rv)
        except Exception:  # noqa: BLE001 - counted and logged at the object's last change
            entry = None
        if entry is not None:
            return entry
        return self._last_state(prev, rv)

    def _last_state(self, prev: Entry, rv: int) -> Entry:
        """``prev``'s object, whole (with kind and apiVersion), restamped at ``rv``."""
        last = prev.decode()
        last["apiVersion"] = self.rt.api_version
        last["kind"] = self.rt.kind
        last["metadata"]["resourceVersion"] = str(rv)
        return Entry(last, rv)

    def _rv_of(self, meta: dict[str, Any]) -> int:
        return _int_rv(meta.get("resourceVersion"), self.history.rv)

    def _commit(self, kind: str, key: str, entry: Entry, prev: Entry | None) -> None:
        """Record a change and queue it for every watcher, to go out at the next flush;
        a watcher whose queue passes ``watcher_buffer`` lines is closed and aborted."""
        event = self.record(kind, key, entry, prev)
        self.stats.events += 1
        limit = self.watcher_buffer
        pending = self._pending
        overflowed: list[ProxyWatcher] | None = None
        for watcher in self.watchers:
            if watcher.queue(event):
                if len(watcher.buffer) > limit:
                    if overflowed is None:
                        overflowed = []
                    overflowed.append(watcher)
                else:
                    pending.add(watcher)
        if pending and self._flush_handle is None:
            loop = asyncio.get_running_loop()
            delay = self.flush_interval
            self._flush_handle = (
                loop.call_later(delay, self._flush) if delay > 0 else loop.call_soon(self._flush)
            )
        if overflowed:
            for watcher in overflowed:
                self.stats.slow_watchers_closed += 1
                logger.warning(
                    "closing a watch of %s: its client is not reading (%d events queued)",
                    self.rt.qualified,
                    len(watcher.buffer),
                )
                pending.discard(watcher)
                watcher.buffer.clear()
                self.close_watch(watcher)
                if watcher.abort is not None:
                    watcher.abort()

    def _flush(self) -> None:
        """Send what every watcher queued since the last flush: straight to its connection
        when that takes it at once (no task switch per watcher), else by waking its
        writer, which waits for the connection to drain."""
        self._flush_handle = None
        pending, self._pending = self._pending, set()
        for watcher in pending:
            send = watcher.send
            batch = watcher.buffer
            if (
                send is not None
                and batch
                and not watcher.closed
                and send(batch[0] if len(batch) == 1 else b"".join(batch))
            ):
                watcher.buffer = []
                continue
            watcher.wake.set()

    def _advance(self, rv: int) -> None:
        history = self.history
        if rv > history.rv:
            history.rv = rv
            self._wake_fresh()

    def _wake_fresh(self) -> None:
        if not self._fresh:
            return
        waiting = []
        for target, future in self._fresh:
            if target <= self.rv:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((target, future))
        self._fresh = waiting

    # -- reads -----------------------------------------------------------------------------

    async def wait_fresh(self, rv: int, timeout: float) -> None:
        """Return once the cache has reached ``rv``; after ``timeout`` seconds the 504
        kube-apiserver answers for a resourceVersion it has not reached."""
        if rv <= self.rv:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiter = (rv, future)
        self._fresh.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                await future
        except TimeoutError:
            raise too_large(rv, self.rv) from None
        finally:
            if waiter in self._fresh:
                self._fresh.remove(waiter)

    def close_all(self) -> None:
        """Close every watcher (the proxy is shutting down)."""
        super().close_all()
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._pending.clear()


def _int_rv(text: Any, default: int) -> int:
    """An upstream resourceVersion as an integer; ``default`` when it is not one."""
    try:
        return int(text)
    except (TypeError, ValueError):
        return default
