"""The in-order queue: every change as it came, each relist and resync as one step.

Role. A :class:`RealFIFO` takes a :class:`~aioinformer.delta_fifo.DeltaFIFO`'s place
between the reflector and the informer's cache when the informer is built with
``in_order=True`` (client-go's RealFIFO, its ``InOrderInformers``). The reflector writes to
it through the same methods (``replace``, ``add``, ``update``, ``delete``, ``resync``);
the informer's processing task takes from it with :meth:`RealFIFO.pop_batch`, as from a
DeltaFIFO.

Input and output. Each watch event becomes one item holding one :class:`Delta`, queued
behind everything before it: nothing is merged per key, so the consumer sees every
intermediate state, two changes to one object as two items. A ``replace`` (a LIST) is one
item holding the listed objects; when it reaches the head, :meth:`pop_batch` compares it
with the cache (``known_objects``) as the cache is *then*, after every earlier change was
applied, and hands out the differences in one batch: a ``Deleted`` delta carrying a
:class:`DeletedFinalStateUnknown` (the cached object) for every cached key the list lacks,
then a ``Replaced`` delta for every listed object. A ``resync`` is one item too, handed out
as a ``Sync`` delta for every cached object. A batch yields ``(key, deltas)`` pairs like a
:class:`~aioinformer.delta_fifo.DeltasBatch`, each ``deltas`` holding one change; a key may
come more than once.

Ordering. Items leave in the order they were queued. A batch of watch events holds up to
``max_keys`` consecutive events; a relist or a resync is a batch of its own whatever its
size, so a consumer applying a batch without suspending applies it in one step and a
reader never sees the cache half relisted.

Synced. :meth:`RealFIFO.has_synced` becomes true once the first ``replace``'s batch has
been processed (at once if it listed nothing), or as soon as an add, update or delete
arrives before any ``replace``; :meth:`RealFIFO.wait_synced` waits for it.

Applied resourceVersion. The queue is in order, so :attr:`~RealFIFO.last_store_resource_version`
is simply that of the newest item processed: a watch event's object's, a relist's list
resourceVersion, or a bookmark's. A bookmark that arrives while items are queued or a
batch is being processed waits in the queue behind them (an item of its own, never handed
to ``process``); otherwise it is applied at once. :meth:`~RealFIFO.wait_for_resource_version`
waits for a resourceVersion; see :mod:`aioinformer._pipeline.store_rv`.

Differences from the DeltaFIFO. A delete is queued even for a key the cache does not hold
(as client-go's RealFIFO does); ``pop_batch`` takes its whole batch when it hands it out,
so a ``process`` that raises loses what it did not reach; :class:`~aioinformer.errors.
Requeue` is not supported (it propagates like any other exception).

Task model. Everything runs on one event loop; no method suspends between reading and
changing the queue's state. Producers never suspend. ``pop_batch`` suspends while the queue
is empty and, when it is not, once every 128 items handed out (checked before each batch).
``close()`` is synchronous: waiting poppers wake, drain what is left, then get
:class:`FIFOClosedError`.

Example::

    fifo = RealFIFO(known_objects=indexer.known_objects)
    await fifo.replace(items, resource_version)
    await fifo.update(changed)

    def apply(batch: InOrderBatch) -> None:
        for key, deltas in batch:
            apply_to_indexer(key, deltas)

    await fifo.pop_batch(apply, max_keys=1000)
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any, Final, TypeAlias

from aioinformer._objects.meta import resource_version_of
from aioinformer._pipeline.fifo_producers import (
    apply_one_by_one,
    overridden_producers,
    producers_of,
)
from aioinformer._pipeline.fifo_waits import _CHECKPOINT_EVERY, _FIFOWaits
from aioinformer._pipeline.store_rv import AppliedReads, AppliedResourceVersion
from aioinformer.delta_fifo import (
    DEFAULT_BATCH_KEYS,
    Delta,
    Deltas,
    DeltaType,
    KnownObjects,
    TransformFunc,
)
from aioinformer.indexer import KeyFunc, meta_namespace_key
from aioinformer.listwatch import (
    ADDED,
    BOOKMARK,
    DELETED,
    MODIFIED,
    EventFailures,
    WatchBatchSink,
    WatchEvent,
)
from aioinformer.models import DeletedFinalStateUnknown

__all__ = ["InOrderBatch", "InOrderProcessFunc", "RealFIFO"]

_ADDED: Final = DeltaType.ADDED
_UPDATED: Final = DeltaType.UPDATED
_DELETED: Final = DeltaType.DELETED
_ACTIONS: Final = {ADDED: _ADDED, MODIFIED: _UPDATED, DELETED: _DELETED}
"""The change a watch event's type queues (bookmarks aside)."""
_REPLACED: Final = DeltaType.REPLACED
_SYNC: Final = DeltaType.SYNC


class _Relist:
    """A queued ``replace``: the listed objects with their keys, already transformed."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        self.pairs = pairs


class _Resync:
    """A queued ``resync``."""

    __slots__ = ()


_RESYNC: Final = _Resync()


class _Bookmark:
    """A queued bookmark: its resourceVersion is in the applied log, in its place."""

    __slots__ = ()


_BOOKMARK: Final = _Bookmark()

_Item: TypeAlias = "tuple[str, Deltas] | _Relist | _Resync | _Bookmark"


class InOrderBatch:
    """What one :meth:`RealFIFO.pop_batch` call hands to its ``process``: iterate it, once,
    for ``(key, deltas)`` pairs in order, each ``deltas`` holding one change. ``len()`` is
    how many pairs it holds."""

    __slots__ = ("_pairs",)

    def __init__(self, pairs: list[tuple[str, Deltas]]) -> None:
        self._pairs = pairs

    def __len__(self) -> int:
        return len(self._pairs)

    def __iter__(self) -> Iterator[tuple[str, Deltas]]:
        return iter(self._pairs)

    def __repr__(self) -> str:
        return f"<InOrderBatch {len(self._pairs)} changes>"


InOrderProcessFunc: TypeAlias = Callable[[InOrderBatch], Awaitable[None] | None]
"""Consumes one batch by iterating it; may be sync or async."""


def _one(action: DeltaType, obj: Any) -> Deltas:
    deltas = Deltas()
    deltas.append(Delta(action, obj))
    return deltas


# AppliedReads first: its ``_on_close`` overrides the base's no-op.
class RealFIFO(AppliedReads, _FIFOWaits, WatchBatchSink):
    """A queue of single changes, in arrival order, with relists and resyncs as one item.

    ``key_func`` gives each object's key (tombstones use their own ``key``).
    ``known_objects`` is the cache the consumer fills: a relist's differences and a
    resync's objects are read from it when their batch is handed out; without it, a
    relist deletes nothing and a resync does nothing. ``transform`` (sync) is applied to
    each object as it is queued, except tombstones and what a resync re-offers; an error
    it raises propagates to the producer.

    **Subclassing.** As a :class:`~aioinformer.delta_fifo.DeltaFIFO`'s: ``add``,
    ``update``, ``delete``, ``bookmark``, ``replace`` and ``resync`` may be overridden,
    and an override sees every call a reflector makes. A FIFO whose class overrides any
    of the first four is seen to at construction, and :meth:`apply_events` hands each
    event of a read to its producer, one at a time in stream order, instead of queuing
    the read in one loop: a coroutine call per event, nothing for a plain FIFO.
    """

    __slots__ = (
        "_applied",
        "_busy",
        "_initial",
        "_key_func",
        "_known_objects",
        "_per_event",
        "_populated",
        "_queue",
        "_rv_log",
        "_transform",
    )

    _queue: deque[_Item]
    """Queued items, oldest first."""
    _initial: bool
    """True while the first ``replace``'s item is queued or being processed."""
    _busy: bool
    """True while a batch is handed out and its ``process`` call has not returned."""
    _rv_log: deque[Any]
    """``_applied.log``: one entry per queued item, in queue order (see ``_store_rv``)."""
    _per_event: bool
    """Set once, as the FIFO is built: its class overrides a per-event producer, so
    ``apply_events`` calls the producers one event at a time instead of its batch loop."""

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key,
        *,
        known_objects: KnownObjects | None = None,
        transform: TransformFunc | None = None,
    ) -> None:
        self._key_func = key_func
        self._known_objects = known_objects
        self._transform = transform
        self._queue = deque()
        self._populated = False
        self._initial = False
        self._busy = False
        self._applied = AppliedResourceVersion()
        self._rv_log = self._applied.log
        self._per_event = bool(overridden_producers(type(self), _PLAIN_PRODUCERS))
        super().__init__()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<RealFIFO {state} queued={len(self._queue)} synced={self._synced}>"

    def __len__(self) -> int:
        """Queued items: one per change, one per relist or resync, one per bookmark
        waiting behind them."""
        return len(self._queue)

    def key_of(self, obj: Any) -> str:
        """The key of an object or a tombstone (its ``key``)."""
        if type(obj) is DeletedFinalStateUnknown:
            return obj.key
        return self._key_func(obj)

    # -- producers -------------------------------------------------------------------

    async def add(self, obj: Any) -> None:
        """Queue an ``Added`` change."""
        self._push(_ADDED, obj)
        self._wake_poppers()

    async def update(self, obj: Any) -> None:
        """Queue an ``Updated`` change."""
        self._push(_UPDATED, obj)
        self._wake_poppers()

    async def delete(self, obj: Any) -> None:
        """Queue a ``Deleted`` change (``obj`` may be a :class:`DeletedFinalStateUnknown`)."""
        self._push(_DELETED, obj)
        self._wake_poppers()

    async def apply_events(self, events: Sequence[WatchEvent]) -> EventFailures:
        """A watch's events, in order, each queued as :meth:`add`, :meth:`update`,
        :meth:`delete` or :meth:`bookmark` would queue it; an event whose key or transform
        fails is returned with its error (see
        :class:`~aioinformer.listwatch.WatchBatchSink`).

        In a subclass that overrides one of those four producers, each event is handed
        to its producer instead, one at a time, in order (see the class notes); what a
        producer raises is returned as an event it could not take."""
        if self._per_event:
            return await apply_one_by_one(self, events)
        failures: EventFailures = None
        push = self._push
        for event in events:
            kind = event.type
            try:
                if kind == BOOKMARK:
                    self._bookmark_now(resource_version_of(event.object) or "")
                else:
                    push(_ACTIONS[kind], event.object)
            except Exception as exc:  # noqa: BLE001
                # Blind on purpose: the reader reports it; the batch goes on without it.
                if failures is None:
                    failures = []
                failures.append((event, exc))
        self._wake_poppers()
        return failures

    def _push(self, action: DeltaType, obj: Any) -> None:
        if not self._populated:
            # A change before any list: the initial population is empty.
            self._populated = True
            self._signal_synced()
        key = self._key_func(obj) if type(obj) is dict else self.key_of(obj)
        transform = self._transform
        if transform is not None and type(obj) is not DeletedFinalStateUnknown:
            obj = transform(obj)
        # Inlined (no helper calls): this runs once per watch event.
        deltas = Deltas()
        deltas.append(Delta(action, obj))
        self._queue.append((key, deltas))
        self._rv_log.append(obj)

    async def replace(self, objs: Iterable[Any], resource_version: str = "") -> None:
        """Queue the result of a LIST as one item (see the module notes for what it
        becomes). ``resource_version`` becomes :attr:`last_store_resource_version` once the
        item is processed."""
        key_of = self.key_of
        transform = self._transform
        if transform is None:
            pairs = [(key_of(obj), obj) for obj in objs]
        else:
            pairs = [(key_of(obj), transform(obj)) for obj in objs]
        if not self._populated:
            self._populated = True
            if not pairs:
                # Nothing listed and nothing cached yet: synced with nothing to apply.
                self._signal_synced()
                self._bookmark_now(resource_version)
                return
            self._initial = True
        self._rv_log.append(resource_version or None)
        self._append(_Relist(pairs))

    async def resync(self) -> None:
        """Queue a resync: its batch re-offers every cached object as a ``Sync`` change."""
        if self._known_objects is None:
            return
        queue = self._queue
        if queue and queue[-1] is _RESYNC:
            return  # the one queued already re-offers the same objects
        self._rv_log.append(None)  # a resync carries no resourceVersion
        self._append(_RESYNC)

    async def bookmark(self, resource_version: str) -> None:
        """A watch's ``BOOKMARK``: the server has sent every event up to
        ``resource_version``. It becomes :attr:`last_store_resource_version` once every
        item queued before it has been processed."""
        self._bookmark_now(resource_version)

    def _bookmark_now(self, resource_version: str) -> None:
        self._rv_log.append(resource_version or None)
        if self._queue or self._busy:
            # Behind the items queued or in process; never woken for, never handed out.
            self._queue.append(_BOOKMARK)
        else:
            applied = self._applied
            applied.advance(applied.base + 1)

    def _apply_bookmarks(self) -> None:
        """Apply the bookmarks at the head of the queue: what was before them is done."""
        queue = self._queue
        count = 0
        while queue and queue[0] is _BOOKMARK:
            queue.popleft()
            count += 1
        if count:
            applied = self._applied
            applied.advance(applied.base + count)

    def _append(self, item: _Item) -> None:
        self._queue.append(item)
        self._wake_poppers()

    # -- consumer --------------------------------------------------------------------

    async def pop_batch(
        self, process: InOrderProcessFunc, *, max_keys: int = DEFAULT_BATCH_KEYS
    ) -> int:
        """Hand the next batch to one ``process`` call and return how many changes it
        held: up to ``max_keys`` consecutive watch events, or one relist's or resync's
        changes, all of them. Waits while the queue is empty; raises
        :class:`FIFOClosedError` once it is closed and empty. Inside ``process``, ``not
        fifo.has_synced()`` is *isInInitialList* for every change of the batch."""
        if max_keys < 1:
            raise ValueError(f"max_keys must be at least 1, got {max_keys}")
        queue = self._queue
        while True:
            if not queue or self._since_checkpoint >= _CHECKPOINT_EVERY:
                await self._wait_for_turn()
            if queue[0] is not _BOOKMARK:
                break
            # Only another popper's batch, still in process, can leave one at the head.
            self._apply_bookmarks()
        initial = False
        head = queue.popleft()
        items = 1
        if type(head) is tuple:
            pairs = [head]
            while queue and len(pairs) < max_keys and type(queue[0]) is tuple:
                pairs.append(queue.popleft())  # type: ignore[arg-type]
            items = len(pairs)
        elif type(head) is _Relist:
            initial = self._initial
            pairs = self._differences(head)
        else:
            pairs = self._resync_pairs()
        self._since_checkpoint += len(pairs)
        self._busy = True
        try:
            result = process(InOrderBatch(pairs))
            if result is not None and inspect.isawaitable(result):
                await result
        finally:
            self._busy = False
            if initial:
                self._initial = False
                self._signal_synced()
            applied = self._applied
            applied.advance(applied.base + items)
            self._apply_bookmarks()
        return len(pairs)

    def _differences(self, relist: _Relist) -> list[tuple[str, Deltas]]:
        """A relist against the cache as it is now: tombstones for the cached keys it
        lacks, then each listed object."""
        pairs: list[tuple[str, Deltas]] = []
        known = self._known_objects
        if known is not None:
            listed = {key for key, _ in relist.pairs}
            for key in known.list_keys():
                if key not in listed:
                    gone = DeletedFinalStateUnknown(key, known.get_by_key(key))
                    pairs.append((key, _one(_DELETED, gone)))
        pairs.extend((key, _one(_REPLACED, obj)) for key, obj in relist.pairs)
        return pairs

    def _resync_pairs(self) -> list[tuple[str, Deltas]]:
        known = self._known_objects
        if known is None:
            return []
        pairs = []
        for key in known.list_keys():
            obj = known.get_by_key(key)
            if obj is not None:
                pairs.append((key, _one(_SYNC, obj)))
        return pairs


_PLAIN_PRODUCERS: Final = producers_of(RealFIFO)
"""RealFIFO's own producers: a subclass with any other takes events one by one."""
