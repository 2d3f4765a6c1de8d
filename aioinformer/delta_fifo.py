"""The informer's queue: a FIFO of keys, each holding the changes seen for one object.

Role. A :class:`DeltaFIFO` sits between a reflector and the informer's cache. The
reflector is the producer: the result of each LIST goes to :meth:`DeltaFIFO.replace`,
each watch event to :meth:`~DeltaFIFO.add`, :meth:`~DeltaFIFO.update` or
:meth:`~DeltaFIFO.delete`, and a periodic :meth:`~DeltaFIFO.resync` re-offers what the
cache holds. The consumer is the informer's processing task, which calls
:meth:`DeltaFIFO.pop` (one key) or :meth:`DeltaFIFO.pop_batch` (every ready key, up to a
limit) in a loop and applies what it gets to the :class:`~aioinformer.indexer.Indexer`.

Input and output. Each write appends a :class:`Delta` (a :class:`DeltaType` and the
object) to the :class:`Deltas` of the object's key. ``pop`` hands out one key's whole
:class:`Deltas` at a time, oldest change first, so a consumer sees *every* change to an
object, deletions included, not just its latest state. ``pop_batch`` hands out several
keys' Deltas through a :class:`DeltasBatch`, an iterator of ``(key, deltas)`` pairs.

Ordering. Keys leave in the order they first entered: more changes to a key already
queued join its list without moving it, so a busy object cannot starve the others. A
batch holds each key once, so batching never reorders one object's changes.
Two deletions in a row for one key collapse into one (the one carrying the real object
wins over a tombstone). Nothing is ordered across keys beyond that.

Atomic relists and resyncs (``atomic=True``, what the informer uses). After a
``replace`` every queued key ends with a delta of
that replace (its listed object, or a tombstone), so the whole queue at that moment is
the new state of the cache. ``pop_batch`` hands those keys out together, in as few
``process`` calls as the initial population allows (one, or two when the first list's
keys are still queued) and without suspending in between, however many they are and
whatever its ``max_keys``: a consumer that applies a batch without suspending moves its
cache from the old state to the new one in one step, and a reader in another task never
sees a mix of the two. A ``resync`` that queues anything groups the queue the same way.
Later writes to a key of the group join its deltas as usual (the per-key coalescing is
kept); new keys queue behind the group.

Tombstones. A LIST replaces what the watch has told us. A key the FIFO or the cache
(``known_objects``) knows about but the new list lacks was deleted while we were not
watching; ``replace`` queues a ``Deleted`` delta for it whose object is a
:class:`DeletedFinalStateUnknown` carrying the last state seen (the newest queued object,
else the cached one). A tombstone never wraps another tombstone.

Synced. :meth:`DeltaFIFO.has_synced` becomes true once everything queued by the *first*
``replace`` (list items and tombstones alike) has been popped and its ``process`` call has
returned, or as soon as an add, update or delete arrives before any ``replace``. Inside
``process``, ``not fifo.has_synced()`` is client-go's *isInInitialList* for the item
being processed (with one popper; with several, an item popped while an initial item is
still being processed also counts as initial). A batch from ``pop_batch`` never straddles
the end of the initial population, so this holds for every key of a batch at once. The
moment is signalled once, as client-go closes its ``synced`` channel:
:meth:`DeltaFIFO.wait_synced` returns ``True`` from then on (``False`` once the FIFO is
closed without having synced), so a consumer awaits it instead of polling
``has_synced()``.

Applied resourceVersion. :attr:`~DeltaFIFO.last_store_resource_version` is that of the
newest event processed with every event before it (a key's deltas count as of its oldest,
so popping a key does not apply a newer event past another key's older one); bookmarks
count too. :meth:`~DeltaFIFO.wait_for_resource_version` waits for it; see
:mod:`aioinformer._pipeline.store_rv`. An atomic group is held as one: nothing it holds counts as
applied before its whole ``process`` call has returned.

Task model. Everything runs on one event loop. No method suspends between reading and
changing the FIFO's state, so each call is atomic with respect to other tasks and needs
no lock; poppers park on a future of their own while the queue is empty, and a producer
wakes the oldest. Producers are coroutines (the reflector's store protocol) but never suspend.
``pop`` and ``pop_batch`` suspend while the queue is empty and, when it is not, at least
once every 128 items handed out (``pop_batch`` checks before each batch, so a batch larger
than that, a relist's group say, runs without yielding), so that a long backlog cannot
starve the loop. Several
tasks may pop at once; each key is handed to one of them. ``close()`` is synchronous: it
wakes every waiting popper; poppers drain what is left and then get
:class:`FIFOClosedError`.

Example::

    fifo = DeltaFIFO(known_objects=indexer)
    await fifo.replace(items, resource_version)
    deltas = await fifo.pop(apply_to_indexer)

    def apply_batch(batch: DeltasBatch) -> None:
        for key, deltas in batch:
            apply_to_indexer(deltas)

    await fifo.pop_batch(apply_batch, max_keys=1000)
"""

from __future__ import annotations

import enum
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, cast

from aioinformer._objects.meta import resource_version_of
from aioinformer._pipeline.fifo_producers import (
    apply_one_by_one,
    overridden_producers,
    producers_of,
)
from aioinformer._pipeline.fifo_waits import _CHECKPOINT_EVERY, _FIFOWaits
from aioinformer._pipeline.relist import KnownObjects as KnownObjects
from aioinformer._pipeline.relist import relist_tombstones, unqueued_known
from aioinformer._pipeline.store_rv import AppliedReads, AppliedResourceVersion, low_water
from aioinformer.errors import FIFOClosedError as FIFOClosedError
from aioinformer.errors import KeyFuncError
from aioinformer.errors import Requeue as Requeue
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
from aioinformer.models import DeletedFinalStateUnknown as DeletedFinalStateUnknown

__all__ = [
    "DEFAULT_BATCH_KEYS",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "DeltasBatch",
    "FIFOClosedError",
    "KnownObjects",
    "PopBatchProcessFunc",
    "PopProcessFunc",
    "Requeue",
    "TransformFunc",
]

logger = logging.getLogger(__name__)

DEFAULT_BATCH_KEYS = 1000
"""How many keys ``pop_batch`` hands out at most by default, client-go's batch size."""


class DeltaType(enum.StrEnum):
    """What happened to an object. Members are named in Python's style; their values are
    client-go's spellings (``DeltaType.ADDED == "Added"``), which is what logs, reprs and
    comparisons with strings see."""

    ADDED = "Added"
    """A watch reported the object created."""
    UPDATED = "Updated"
    """A watch reported the object changed."""
    DELETED = "Deleted"
    """The object is gone: from a watch, or a tombstone queued by ``replace``."""
    REPLACED = "Replaced"
    """A LIST (re)delivered the object; emitted when ``emit_delta_type_replaced`` is set."""
    SYNC = "Sync"
    """A resync re-offered the cached object; also a LIST's delta when ``Replaced`` is off."""


_ADDED = DeltaType.ADDED
_UPDATED = DeltaType.UPDATED
_DELETED = DeltaType.DELETED
_REPLACED = DeltaType.REPLACED
_SYNC = DeltaType.SYNC


@dataclass(frozen=True, slots=True, init=False)
class Delta:
    """One change to one object."""

    type: DeltaType
    """What happened."""
    object: Any
    """The object after the change; for ``Deleted``, its last state or a
    :class:`DeletedFinalStateUnknown`."""

    def __init__(self, type: DeltaType, object: Any) -> None:
        # Setting the slots through their descriptors skips the frozen __setattr__
        # guard, which costs more than the rest of the construction on the hot path.
        _set_type(self, type)
        _set_object(self, object)


_set_type = cast("Any", Delta.__dict__["type"]).__set__
_set_object = cast("Any", Delta.__dict__["object"]).__set__


class Deltas(list[Delta]):
    """The changes queued for one key, oldest first. Never empty when handed out."""

    __slots__ = ()

    def oldest(self) -> Delta | None:
        """The first change, or ``None`` when empty."""
        return self[0] if self else None

    def newest(self) -> Delta | None:
        """The latest change, or ``None`` when empty."""
        return self[-1] if self else None


PopProcessFunc: TypeAlias = Callable[[Deltas], Awaitable[None] | None]
"""Consumes one key's deltas; may be sync or async; raise :class:`Requeue` to put them back."""

PopBatchProcessFunc: TypeAlias = Callable[["DeltasBatch"], Awaitable[None] | None]
"""Consumes several keys' deltas by iterating a :class:`DeltasBatch`; may be sync or async;
raise :class:`Requeue` to put back the key being processed."""

TransformFunc: TypeAlias = Callable[[Any], Any]
"""Applied to each object as it is queued (not to ``Sync`` deltas nor tombstones)."""


class DeltasBatch:
    """The keys one :meth:`DeltaFIFO.pop_batch` call hands to its ``process``: iterate it,
    once, for ``(key, deltas)`` pairs, oldest key first.

    A key leaves the FIFO only as the iteration reaches it, and the batch lets go of a
    key's deltas as soon as the iteration moves past it. A consumer applying a large batch
    so frees each key's deltas as it goes, as it would with single pops: holding a
    thousand keys' deltas until the batch ends would make the cyclic collector run about
    twice as often during a backlog (it counts allocations net of frees, and a burst of
    frees does not make up for a burst of allocations). ``len()`` is how many keys the
    batch was sized for; it hands out fewer only if the queue empties meanwhile.
    """

    __slots__ = ("_current", "_current_seq", "_fifo", "_size", "_taken")

    _current: tuple[str, Deltas] | None
    """The pair handed out last, until the iteration moves on or ends: what a
    :class:`Requeue` puts back."""
    _taken: int
    """Keys handed out so far; never more than ``_size``."""

    def __init__(self, fifo: DeltaFIFO, size: int) -> None:
        self._fifo = fifo
        self._size = size
        self._taken = 0
        self._current = None
        self._current_seq = 0

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[tuple[str, Deltas]]:
        fifo = self._fifo
        queue = fifo._queue
        take = fifo._items.pop
        forget = fifo._first_seq.pop
        size = self._size
        while self._taken < size and queue:
            key = queue.popleft()
            self._taken += 1
            self._current_seq = forget(key)
            current = self._current = (key, take(key))
            yield current
        self._current = None

    def __repr__(self) -> str:
        return f"<DeltasBatch {self._taken}/{self._size} taken>"


# AppliedReads first: its ``_on_close`` overrides the base's no-op.
class DeltaFIFO(AppliedReads, _FIFOWaits, WatchBatchSink):
    """A queue of per-key :class:`Deltas` with client-go v0.32 semantics.

    ``key_func`` gives each object's key (tombstones always use their own ``key``).
    ``known_objects`` is the cache the consumer fills (anything with ``list_keys()`` and
    ``get_by_key()``); without it, deletes of keys not queued are dropped, ``replace``
    can only tombstone queued keys, and ``resync`` does nothing.
    ``emit_delta_type_replaced`` makes ``replace`` queue ``Replaced`` rather than ``Sync``
    deltas. ``transform`` (sync) is applied to each object as it is queued, except for
    ``Sync`` deltas from ``resync`` (those objects come from the cache, already
    transformed) and tombstones; an error it raises propagates to the producer.
    ``atomic`` makes what a ``replace`` or a ``resync`` queued leave :meth:`pop_batch`
    as one group whatever its size (see the module notes); off, a relist leaves in
    batches of ``max_keys`` as in client-go v0.32.

    **Subclassing.** The producers ``add``, ``update``, ``delete``, ``bookmark``,
    ``replace`` and ``resync`` may be overridden (to record the calls, or to filter:
    an override that does not call ``super()`` drops what it was given), and an
    override sees every call a reflector makes. A watch's events normally skip the
    per-event producers (:meth:`apply_events` queues a whole read in one loop); a FIFO
    whose class overrides any of ``add``, ``update``, ``delete`` or ``bookmark`` is seen
    to at construction and hands each event to its producer, one at a time in stream
    order, instead. That costs a coroutine call per event (a plain FIFO pays nothing
    for the choice); a popper is still woken once per read unless an override suspends.
    ``replace`` and ``resync`` are always called. Override them as coroutines with the
    same signatures; patch the class, not an instance (a FIFO chooses as it is built).

    **Cancellation.** Cancelling a ``pop`` that is waiting for an item loses nothing. Once
    an item has been taken it belongs to that ``pop`` call, as in client-go where an item
    leaves the queue before ``process`` runs: if an async ``process`` is cancelled, the
    item is *not* put back (for an informer that means shutdown, and re-delivering a
    half-applied change would be worse), and it counts as processed for
    :meth:`has_synced`. A consumer that must not lose it can raise :class:`Requeue` from
    ``process`` on cancellation, or shield it.
    """

    __slots__ = (
        "_applied",
        "_atomic",
        "_by_event_type",
        "_emit_replaced",
        "_first_seq",
        "_group",
        "_holds",
        "_initial_in_process",
        "_initial_population_count",
        "_items",
        "_key_func",
        "_known_objects",
        "_out_of_order",
        "_per_event",
        "_populated",
        "_queue",
        "_rv_log",
        "_seq",
        "_transform",
    )

    _items: dict[str, Deltas]
    """Deltas by key. Invariant: a key is in ``_items`` iff it is in ``_queue``, and its
    Deltas are never empty."""
    _queue: deque[str]
    """Keys in the order they first entered; each key at most once."""
    _populated: bool
    """True once the first ``replace``, ``add``, ``update`` or ``delete`` has happened."""
    _initial_population_count: int
    """Items queued by the first ``replace`` not yet popped; set once, only decreases."""
    _initial_in_process: int
    """Items popped while ``_initial_population_count`` was positive whose ``process``
    call has not returned yet. ``has_synced()`` waits for both counters to reach zero."""
    _group: int
    """Keys at the head of the queue that ``pop_batch`` hands out together: the queue's
    length at the end of the last ``replace`` (or ``resync`` that queued anything),
    lowered as keys leave. Never more than ``len(_queue)``."""
    _seq: int
    """The number of the latest event handed to the FIFO (-1 before any); each is logged
    in ``_applied.log`` (``_rv_log``) under it."""
    _first_seq: dict[str, int]
    """For each queued key, the number of its oldest queued event. Keys are queued in
    increasing order of it, except those in ``_out_of_order``."""
    _out_of_order: set[str]
    """Keys put back by a requeue, whose number may be older than the queue head's; may
    hold keys since popped (skipped, and dropped, when met)."""
    _holds: list[int]
    """For each ``process`` call suspended mid-pop (or batch being processed), the oldest
    event number it may hold."""
    _per_event: bool
    """Set once, as the FIFO is built: its class overrides a per-event producer, so
    ``apply_events`` calls the producers one event at a time instead of its batch loop."""

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key,
        *,
        known_objects: KnownObjects | None = None,
        emit_delta_type_replaced: bool = True,
        transform: TransformFunc | None = None,
        atomic: bool = False,
    ) -> None:
        self._key_func = key_func
        self._atomic = atomic
        self._known_objects = known_objects
        self._emit_replaced = emit_delta_type_replaced
        self._transform = transform
        self._items = {}
        self._queue = deque()
        self._populated = False
        self._initial_population_count = 0
        self._initial_in_process = 0
        self._group = 0
        self._applied = AppliedResourceVersion()
        self._rv_log = self._applied.log
        self._seq = -1
        self._first_seq = {}
        self._out_of_order = set()
        self._holds = []
        # What apply_events does with each watch event type.
        self._by_event_type: dict[str, Callable[[Any], None]] = {
            ADDED: self._add_now,
            MODIFIED: self._update_now,
            DELETED: self._delete_now,
            BOOKMARK: self._bookmark_event,
        }
        self._per_event = bool(overridden_producers(type(self), _PLAIN_PRODUCERS))
        super().__init__()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"<DeltaFIFO {state} queued={len(self._queue)} "
            f"synced={self.has_synced()} waiting={self._parked}>"
        )

    def __len__(self) -> int:
        return len(self._queue)

    # -- keys and reads ------------------------------------------------------------

    def key_of(self, obj: Any) -> str:
        """The key of an object, a tombstone (its ``key``) or a :class:`Deltas` (newest)."""
        if isinstance(obj, Deltas):
            if not obj:
                raise KeyFuncError("cannot take the key of an empty Deltas")
            obj = obj[-1].object
        if type(obj) is DeletedFinalStateUnknown:
            return obj.key
        return self._key_func(obj)

    def _populate(self) -> None:
        # Before the first replace nothing is initial, so a write of any other kind
        # fixes an empty initial population: the FIFO is synced from here on.
        self._populated = True
        self._signal_synced()

    def list_keys(self) -> list[str]:
        """Queued keys, in the order they will be popped."""
        return list(self._queue)

    def list(self) -> list[Any]:
        """The newest object of every queued key, in queue order."""
        items = self._items
        return [items[key][-1].object for key in self._queue]

    def get(self, obj: Any) -> Deltas | None:
        """A copy of the Deltas queued for ``obj``'s key, or ``None``."""
        return self.get_by_key(self.key_of(obj))

    def get_by_key(self, key: str) -> Deltas | None:
        """A copy of the Deltas queued for ``key``, or ``None``."""
        deltas = self._items.get(key)
        return Deltas(deltas) if deltas is not None else None

    # -- producers -----------------------------------------------------------------

    async def add(self, obj: Any) -> None:
        """Queue an ``Added`` delta."""
        self._add_now(obj)
        self._wake_poppers()

    async def update(self, obj: Any) -> None:
        """Queue an ``Updated`` delta."""
        self._update_now(obj)
        self._wake_poppers()

    async def delete(self, obj: Any) -> None:
        """Queue a ``Deleted`` delta, unless the key is neither queued nor known.

        ``obj`` may be the object or a :class:`DeletedFinalStateUnknown`. Without
        ``known_objects``, only a queued key can be deleted.
        """
        self._delete_now(obj)
        self._wake_poppers()

    async def apply_events(self, events: Sequence[WatchEvent]) -> EventFailures:
        """A watch's events, in order, each as :meth:`add`, :meth:`update`,
        :meth:`delete` or :meth:`bookmark` would take it, with one wake-up of a parked
        popper for them all. An event whose key or transform fails is returned with its
        error and the others are queued (see
        :class:`~aioinformer.listwatch.WatchBatchSink`).

        In a subclass that overrides one of those four producers, each event is handed
        to its producer instead, one at a time, in order (see the class notes); what a
        producer raises is returned as an event it could not take."""
        if self._per_event:
            return await apply_one_by_one(self, events)
        failures: EventFailures = None
        by_type = self._by_event_type
        for event in events:
            try:
                by_type[event.type](event.object)
            except Exception as exc:  # noqa: BLE001
                # Blind on purpose: the reader reports it; the batch goes on without it.
                if failures is None:
                    failures = []
                failures.append((event, exc))
        self._wake_poppers()
        return failures

    def _add_now(self, obj: Any) -> None:
        if not self._populated:
            self._populate()
        key = self._key_func(obj) if type(obj) is dict else self.key_of(obj)
        self._seq += 1
        self._rv_log.append(obj)
        self._enqueue(_ADDED, obj, key, True)

    def _update_now(self, obj: Any) -> None:
        if not self._populated:
            self._populate()
        key = self._key_func(obj) if type(obj) is dict else self.key_of(obj)
        self._seq += 1
        self._rv_log.append(obj)
        self._enqueue(_UPDATED, obj, key, True)

    def _delete_now(self, obj: Any) -> None:
        key = self._key_func(obj) if type(obj) is dict else self.key_of(obj)
        if not self._populated:
            self._populate()
        self._seq += 1
        self._rv_log.append(obj)
        if key not in self._items:
            known = self._known_objects
            if known is None or known.get_by_key(key) is None:
                # Nothing to apply, but the event's resourceVersion counts as reached.
                self._advance()
                return
        self._enqueue(_DELETED, obj, key, True)

    def _bookmark_event(self, obj: Any) -> None:
        self._bookmark_now(resource_version_of(obj) or "")

    async def replace(self, objs: Iterable[Any], resource_version: str = "") -> None:
        """Queue the result of a LIST, and tombstones for what it no longer contains.

        Each object gets a ``Replaced`` delta (``Sync`` when ``emit_delta_type_replaced``
        is off). Then every key that is queued or known but absent from ``objs`` gets a
        ``Deleted`` delta carrying a :class:`DeletedFinalStateUnknown` with the newest
        queued object, or else the cached one (``None`` if the cache lost it meanwhile).
        The first call fixes the initial population that :meth:`has_synced` waits for.
        With ``atomic``, everything queued when it returns leaves :meth:`pop_batch` as
        one group (see the module notes). ``resource_version`` becomes
        :attr:`last_store_resource_version` once everything queued by this call, and
        before it, has been processed. A ``transform`` failing on one of ``objs`` makes
        the call raise with nothing queued (and, for the first call, nothing synced).
        """
        action = _REPLACED if self._emit_replaced else _SYNC
        key_of = self.key_of
        pairs = [(key_of(obj), obj) for obj in objs]
        transform = self._transform
        if transform is not None:
            # Every object is transformed before anything is queued: a transform failing
            # on one fails the whole call with nothing queued, so a list the cache could
            # not take whole is never half applied (nor counted as synced).
            pairs = [
                (key, obj if type(obj) is DeletedFinalStateUnknown else transform(obj))
                for key, obj in pairs
            ]
        self._seq += 1
        self._rv_log.append(resource_version or None)
        keys = {key for key, _ in pairs}
        enqueue = self._enqueue
        for key, obj in pairs:
            enqueue(action, obj, key, False)

        # Each tombstone is queued as it is found: a queued key only gains a delta, and
        # the cache's keys that are found later are checked against the queue as it is.
        queued_deletions = 0
        for tombstone in relist_tombstones(self._items, self._known_objects, keys):
            queued_deletions += 1
            enqueue(_DELETED, tombstone, tombstone.key, False)

        if self._atomic:
            self._group = len(self._queue)
        if not self._populated:
            self._populated = True
            self._initial_population_count = len(keys) + queued_deletions
            if not self._initial_population_count:
                self._signal_synced()
        self._advance()
        self._wake_poppers()

    async def resync(self) -> None:
        """Queue a ``Sync`` delta for every known object whose key has nothing queued;
        if it queued any and the FIFO is ``atomic``, everything queued leaves
        :meth:`pop_batch` as one group."""
        known = self._known_objects
        if known is None:
            return
        # A resync carries no resourceVersion, but its deltas still wait their turn.
        self._seq += 1
        self._rv_log.append(None)
        items = self._items
        before = len(items)
        for key, obj in unqueued_known(known, items, self.key_of):
            self._enqueue(_SYNC, obj, key, False)
        if self._atomic and len(items) > before:
            self._group = len(self._queue)
        self._advance()
        self._wake_poppers()

    async def bookmark(self, resource_version: str) -> None:
        """A watch's ``BOOKMARK``: the server has sent every event up to
        ``resource_version``. It becomes :attr:`last_store_resource_version` once every
        event queued before it has been processed, so a quiet resource's cache catches up
        with the server without any object changing."""
        self._bookmark_now(resource_version)

    def _bookmark_now(self, resource_version: str) -> None:
        self._seq += 1
        self._rv_log.append(resource_version or None)
        self._advance()

    def _low_water(self) -> int:
        return low_water(
            self._seq + 1, self._first_seq, self._queue, self._holds, self._out_of_order
        )

    def _advance(self) -> None:
        self._applied.advance(self._low_water())

    def _enqueue(self, action: DeltaType, obj: Any, key: str, transform: bool) -> None:
        if transform and self._transform is not None and type(obj) is not DeletedFinalStateUnknown:
            obj = self._transform(obj)
        delta = Delta(action, obj)
        deltas = self._items.get(key)
        if deltas is None:
            deltas = Deltas()
            deltas.append(delta)
            self._items[key] = deltas
            self._first_seq[key] = self._seq
            self._queue.append(key)
        elif action is _DELETED and deltas[-1].type is _DELETED:
            # Two deletions in a row say the same thing; keep the one with the real
            # object, so a tombstone only survives when it is all we have.
            if type(deltas[-1].object) is DeletedFinalStateUnknown:
                deltas[-1] = delta
        else:
            deltas.append(delta)

    # -- consumer ------------------------------------------------------------------

    async def pop(self, process: PopProcessFunc) -> Deltas:
        """Take the oldest key's Deltas, run ``process`` on them, and return them.

        Waits while the queue is empty; raises :class:`FIFOClosedError` once the FIFO is
        closed and empty. ``process`` may be sync or async. If it raises
        :class:`Requeue`, the Deltas go back to the queue (at the back, or merged in
        front of changes queued meanwhile) and ``pop`` raises the requeue's ``err``, or
        returns normally when it has none. Any other exception from ``process``
        propagates and the item is not put back.

        While an async ``process`` is suspended, its key is neither queued nor (until
        ``process`` stores it) in ``known_objects``, so a ``replace`` meanwhile cannot
        queue a tombstone for it. Client-go runs ``process`` under the queue's lock and
        has no such window; a consumer that needs relists to catch every deletion should
        apply the deltas to its store before its first suspension (the informer's
        ``process`` is synchronous).
        """
        queue = self._queue
        if not queue or self._since_checkpoint >= _CHECKPOINT_EVERY:
            await self._wait_for_turn()
        self._since_checkpoint += 1
        key = queue.popleft()
        deltas = self._items.pop(key)
        held = self._first_seq.pop(key)
        holds = self._holds
        holding = False
        if self._group:
            self._group -= 1
        initial = self._initial_population_count > 0
        if initial:
            self._initial_population_count -= 1
            self._initial_in_process += 1
        try:
            result = process(deltas)
            if result is not None and inspect.isawaitable(result):
                # Only a suspended process can be seen by others, so only it holds.
                holds.append(held)
                holding = True
                await result
        except Requeue as requeue:
            self._requeue(key, deltas, held)
            if requeue.err is not None:
                raise requeue.err from requeue
        finally:
            if initial:
                self._initial_in_process -= 1
                if not self._initial_in_process and not self._initial_population_count:
                    self._signal_synced()
            if holding:
                holds.remove(held)
            if holds or self._out_of_order:
                self._advance()
            else:  # one popper, nothing requeued: the queue head is the oldest event
                queue = self._queue
                self._applied.advance(self._first_seq[queue[0]] if queue else self._seq + 1)
        return deltas

    async def pop_batch(
        self, process: PopBatchProcessFunc, *, max_keys: int = DEFAULT_BATCH_KEYS
    ) -> int:
        """Hand up to ``max_keys`` of the oldest keys to one ``process`` call, as a
        :class:`DeltasBatch` that yields ``(key, deltas)`` in queue order; return how many
        keys it handed out.

        Client-go's ``PopBatch``: what :meth:`pop` does for one key, done for every key
        ready now (up to ``max_keys``) in one call of ``process``, so a consumer can
        apply a backlog without suspending between keys. Each key appears once, so the
        order of each key's deltas is kept exactly as with ``pop``. Waits while the queue
        is empty and raises :class:`FIFOClosedError` once the FIFO is closed and empty,
        as ``pop`` does; it also yields to the event loop before handing out a batch when
        at least 128 items went out since the last yield.

        A batch never mixes items of the first ``replace`` with later ones: while some of
        that initial population is still queued, the batch stops at its end, so
        ``not fifo.has_synced()`` inside ``process`` (client-go's *isInInitialList*)
        holds for every key of the batch or for none.

        With ``atomic``, the keys queued by the last ``replace`` (or ``resync``) leave
        as one group, ``max_keys`` notwithstanding: in one ``process`` call, or, when the
        group runs past the end of the initial population, in two calls made one after
        the other without suspending (unless the first ``process`` was async).

        A key leaves the queue only when the iteration reaches it: keys a ``process`` does
        not reach (it raised, or stopped iterating) stay queued, in order, and still count
        towards :meth:`has_synced`. If ``process`` raises :class:`Requeue`, the key it was
        handed last goes back as :meth:`pop` puts one back, and ``pop_batch`` raises the
        requeue's ``err`` if it has one. Any other exception propagates; the keys already
        handed out are not put back, so a consumer that must isolate one key's failure
        from the rest catches it per key. Cancellation of an async ``process`` behaves as
        for :meth:`pop`, for the keys handed out. As in client-go, batches are meant for
        one popper: with several, an async ``process`` may be handed keys queued after
        its batch was sized.
        """
        if max_keys < 1:
            raise ValueError(f"max_keys must be at least 1, got {max_keys}")
        queue = self._queue
        if not queue or self._since_checkpoint >= _CHECKPOINT_EVERY:
            await self._wait_for_turn()
        handed = 0
        while True:
            count = self._group or min(len(queue), max_keys)
            taken, whole = await self._hand_out(process, count)
            handed += taken
            # The rest of a group cut at the end of the initial population follows at
            # once: no other task may run between the two halves of one relist.
            if not (self._group and whole and queue):
                return handed

    async def _hand_out(self, process: PopBatchProcessFunc, count: int) -> tuple[int, bool]:
        """One ``process`` call of :meth:`pop_batch` for at most ``count`` keys; returns
        how many it took, and whether it took all it was sized for without suspending
        (a synchronous ``process`` that iterated the whole batch)."""
        initial = self._initial_population_count
        if initial:
            count = min(count, initial)
            self._initial_population_count = initial - count
            self._initial_in_process += count
        batch = DeltasBatch(self, count)
        suspended = False
        # The batch takes keys from the head: none holds an event older than this. Held
        # until the whole call returns, so a group counts as applied only as a whole.
        held = self._low_water()
        holds = self._holds
        holds.append(held)
        try:
            result = process(batch)
            if result is not None and inspect.isawaitable(result):
                suspended = True
                await result
        except Requeue as requeue:
            current = batch._current
            if current is not None:
                self._requeue(*current, batch._current_seq)
            if requeue.err is not None:
                raise requeue.err from requeue
        finally:
            taken = batch._taken
            self._since_checkpoint += taken
            if self._group:
                self._group = max(0, self._group - taken)
            if initial:
                self._initial_in_process -= count
                # What the iteration did not reach is still queued, and still initial.
                self._initial_population_count += count - taken
                if not self._initial_in_process and not self._initial_population_count:
                    self._signal_synced()
            holds.remove(held)
            self._advance()
        return taken, taken == count and not suspended

    def _requeue(self, key: str, deltas: Deltas, seq: int) -> None:
        if not self._populated:
            self._populate()
        # The popped deltas go back with their old number, wherever the key lands.
        self._first_seq[key] = seq
        self._out_of_order.add(key)
        newer = self._items.get(key)
        if newer is None:
            self._items[key] = deltas
            self._queue.append(key)
            self._wake_poppers()
            return
        # Changes arrived while an async process ran: keep the popped ones first, so the
        # consumer still sees the key's history in order, and keep the queue position.
        merged = Deltas(deltas)
        for delta in newer:
            if delta.type is _DELETED and merged[-1].type is _DELETED:
                if type(merged[-1].object) is DeletedFinalStateUnknown:
                    merged[-1] = delta
            else:
                merged.append(delta)
        self._items[key] = merged


_PLAIN_PRODUCERS: Final = producers_of(DeltaFIFO)
"""DeltaFIFO's own producers: a subclass with any other takes events one by one."""
