r"""The informer's cache: a keyed store of objects with named secondary indexes.

Role. The :class:`Indexer` is the informer's cache stage, between the
:class:`~aioinformer.delta_fifo.DeltaFIFO` and the fan-out to handlers
(:mod:`aioinformer.processor`, the last stage), and the only store listers read. The
single task that pops the DeltaFIFO applies each object's deltas here
(``add``/``update``/``delete``, or ``replace`` for a full list), then hands the change to
the handlers. It is also the FIFO's ``known_objects``: the FIFO asks it which keys exist
when it builds tombstones and resyncs.

Input and output. Objects are stored as given (raw ``dict`` by default, or any type when
the informer transforms them); nothing is copied. Reads return the stored objects
themselves, so callers must treat them as read-only: mutating one in place corrupts the
indexes, which are computed from the stored state.

Keys. :func:`meta_namespace_key` gives ``"namespace/name"`` (``"name"`` for a
cluster-scoped object; it lives with the other metadata accessors in
:mod:`aioinformer._objects.meta` and is re-exported here). It is the default key function of every
stage, and it understands a :class:`~aioinformer.models.DeletedFinalStateUnknown`
tombstone, so deletes may be fed either an object or a tombstone.

Indexes. Each index function maps an object to a list of strings (its *index values*);
index ``name`` maps each value to the keys of the objects that produce it. The key sets
are maintained incrementally on every write: an update touches only the values that
changed, and a set that becomes empty is removed, so
:meth:`Indexer.list_index_func_values` never reports a value without objects. They are
dicts of keys to ``None`` rather than ``set``\ s: a dict holding only strings is one the
cyclic garbage collector does not track, so an index of any size costs it nothing.

Failing index functions. An index function is user code: one that raises, or returns
anything but a list (or tuple) of strings, never costs the object. The object is stored
and kept in every other index; the failing index lacks it (the key appears under none of
its values) until the function succeeds on a later version. Each failure is counted
(:meth:`Indexer.statistics`) and logged once per index and key with the exception, again
after the function has succeeded for that key in between. A ``str`` returned is refused
(:class:`~aioinformer.errors.IndexValuesError`: "return a list of strings, e.g.
[value]"), never indexed character by character. ``strict=True`` refuses the write
instead, raising :class:`~aioinformer.errors.IndexFuncError`, as client-go panics; an
informer made with ``strict_indexes=True`` then stops with that error. The values of a
write are checked inline and a failure takes a separate, careful path, so a write whose
functions succeed costs what it did before the check.

Task model. Everything here is synchronous and runs on the event loop's thread: no
method suspends, so every method is atomic with respect to other tasks and no lock is
needed. It is a cache fed by a watch: what it holds may be behind the server.

Example::

    indexer = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    indexer.add(pod)
    indexer.by_index(NAMESPACE_INDEX, "default")
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from aioinformer._objects.meta import meta_namespace_key as meta_namespace_key
from aioinformer._objects.raw import CompactEntry
from aioinformer._objects.view import ObjectView
from aioinformer._pipeline.indexes import NAMESPACE_INDEX as NAMESPACE_INDEX
from aioinformer._pipeline.indexes import (
    NO_VALUES,
    Packed,
    PackedValues,
    Unfit,
    add_key,
    checked_values,
    discard_key,
    discard_key_everywhere,
    move_key,
    pack,
    reads_head_only,
    unpack,
)
from aioinformer._pipeline.indexes import Index as Index
from aioinformer._pipeline.indexes import Indexers as Indexers
from aioinformer._pipeline.indexes import IndexFunc as IndexFunc
from aioinformer._pipeline.indexes import KeyFunc as KeyFunc
from aioinformer._pipeline.indexes import as_indexers as as_indexers
from aioinformer._pipeline.indexes import label_index_func as label_index_func
from aioinformer._pipeline.indexes import namespace_index_func as namespace_index_func
from aioinformer._pipeline.indexes import split_meta_namespace_key as split_meta_namespace_key
from aioinformer.errors import (
    IndexFuncError,
)
from aioinformer.models import DeletedFinalStateUnknown

if TYPE_CHECKING:
    import builtins
    from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = [
    "CompactIndexer",
    "Index",
    "IndexFunc",
    "Indexer",
    "IndexerStatistics",
    "Indexers",
    "KeyFunc",
    "NAMESPACE_INDEX",
    "as_indexers",
    "label_index_func",
    "meta_namespace_key",
    "namespace_index_func",
    "split_meta_namespace_key",
]

T = TypeVar("T")

logger = logging.getLogger(__name__)

_ABSENT: Any = object()


@dataclass(frozen=True, slots=True)
class IndexerStatistics:
    """A snapshot of an indexer's size and of its index functions' failures."""

    items: int
    """Objects stored."""
    index_errors: int
    """Index function calls that failed (raised, or returned something other than a list
    of strings) since the indexer was made; each left one object out of one index."""
    unindexed: int
    """Objects left out of an index now because its function failed on them, counted once
    per index; back to 0 once every function succeeds on every object."""
    last_index_error: IndexFuncError | None
    """The most recent failure; ``None`` if none."""


class Indexer(Generic[T]):
    """A store of objects by key with named secondary indexes.

    ``key_func`` (default :func:`meta_namespace_key`) gives each object's key;
    ``indexers`` names the index functions to maintain from the start (a mapping of
    names to functions, checked by :func:`as_indexers`), and :meth:`add_indexers` adds
    more at any time (existing objects get indexed).

    Methods naming an index (``index``, ``index_keys``, ``by_index``) raise ``KeyError``
    for an unknown name; :meth:`list_index_func_values` returns ``[]`` for one.

    An index function that fails on an object (it raises, or returns something other
    than a list or tuple of strings: a ``str`` is refused, never indexed character by
    character) never costs the object: it is stored, and indexed by every other index,
    and is absent from that one index until the function succeeds on a later version of
    it. The failure is counted (:meth:`statistics`) at every write and logged once per
    index and key, with the exception; once the function succeeds for that key, a later
    failure is logged again. With ``strict=True`` the write is refused instead, as
    client-go panics: the store is left as it was and
    :class:`~aioinformer.errors.IndexFuncError` (naming the index, the key and the
    exception) propagates; :meth:`add_indexers` then adds nothing.

    This is a cache: it reflects the server as of the last event applied, and the objects
    it returns are the stored ones, to be treated as read-only.
    """

    __slots__ = (
        "_failing",
        "_index_errors",
        "_indexers",
        "_indices",
        "_items",
        "_key_func",
        "_last_index_error",
        "_on_failure",
        "_pairs",
        "_source",
        "_strict",
    )

    _key_func: KeyFunc
    _items: dict[str, T]
    """Objects by key."""
    _indexers: dict[str, IndexFunc]
    """Index functions by name; ``_indices`` has exactly the same names."""
    _indices: dict[str, Index]
    """For each index name: value -> keys. Invariant: key ``k`` is in
    ``_indices[n][v]`` iff ``_items[k]`` exists, ``n`` is not in ``_failing[k]`` and
    ``v`` is in ``_indexers[n](_items[k])``; no set is ever empty."""
    _pairs: builtins.list[tuple[IndexFunc, Index]]
    """``(_indexers[n], _indices[n])`` for every index name, in ``_indexers`` order: what
    writes iterate."""
    _failing: dict[str, tuple[str, ...]]
    """For each stored key some index function failed on at its last write: the names of
    those indexes, in which the key has no value. Empty while every function succeeds,
    which is all the per-write paths test."""
    _strict: bool
    _index_errors: int
    """Index function calls that failed, ever."""
    _last_index_error: IndexFuncError | None
    _source: str
    """Who owns this indexer, as failure logs name it (``"informer pods: "``)."""
    _on_failure: Callable[[str], None] | None
    """Called with an index's name at each failure of its function (metrics)."""

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key,
        indexers: Mapping[str, IndexFunc] | None = None,
        *,
        strict: bool = False,
    ) -> None:
        self._key_func = key_func
        self._items = {}
        self._indexers = as_indexers(indexers)
        self._indices = {name: {} for name in self._indexers}
        self._pairs = [(func, self._indices[name]) for name, func in self._indexers.items()]
        self._failing = {}
        self._strict = strict
        self._index_errors = 0
        self._last_index_error = None
        self._source = ""
        self._on_failure = None

    def __repr__(self) -> str:
        return f"<Indexer items={len(self._items)} indexes={sorted(self._indexers)}>"

    def __len__(self) -> int:
        return len(self._items)

    @property
    def strict(self) -> bool:
        """Whether a failing index function refuses the write (``strict=True``)."""
        return self._strict

    def statistics(self) -> IndexerStatistics:
        """A frozen snapshot: the objects stored and the index functions' failures."""
        return IndexerStatistics(
            items=len(self._items),
            index_errors=self._index_errors,
            unindexed=sum(len(names) for names in self._failing.values()),
            last_index_error=self._last_index_error,
        )

    def report_index_failures(
        self, *, source: str, on_failure: Callable[[str], None] | None = None
    ) -> None:
        """Name the indexer's owner in its failure logs (``source``, such as ``"informer
        pods"``), and have ``on_failure(index_name)`` called at each failure (an
        informer counts them in its metrics)."""
        self._source = f"{source}: " if source else ""
        self._on_failure = on_failure

    # -- writes --------------------------------------------------------------------

    def add(self, obj: T) -> None:
        """Store ``obj`` under its key, replacing any object with the same key."""
        self._put(self._key_func(obj), obj)

    def update(self, obj: T) -> None:
        """Same as :meth:`add`: the store does not distinguish creation from change."""
        self._put(self._key_func(obj), obj)

    def delete(self, obj: Any) -> None:
        """Remove the object with ``obj``'s key; absent is fine.

        ``obj`` may be a :class:`DeletedFinalStateUnknown`, whose ``key`` is used whatever
        the key function.
        """
        key = obj.key if type(obj) is DeletedFinalStateUnknown else self._key_func(obj)
        self.delete_by_key(key)

    def put_entry(self, key: str, entry: Any, carried: Any = None) -> None:
        """Store ``entry`` (what the cache keeps, see :meth:`entry_by_key`) under ``key``;
        ``carried`` is what its notification carries, for a store that can reuse it."""
        self.put_by_key(key, entry)

    def put_by_key(self, key: str, obj: T) -> None:
        """Store ``obj`` under ``key``, which must be the key ``key_func`` gives it: for a
        caller that already has the key, saving its recomputation (the informer's pop task).
        """
        self._put(key, obj)

    def delete_by_key(self, key: str) -> None:
        """Remove the object stored under ``key``; absent is fine. Never raises: an index
        function failing on the object only means it had no values to remove there."""
        old = self._items.pop(key, _ABSENT)
        if old is not _ABSENT:
            self._unindex(key, old)

    def replace(self, objs: Iterable[T], resource_version: str = "") -> None:
        """Make the store hold exactly ``objs``.

        The indexes are updated incrementally: objects that are gone are unindexed, the
        others go through the same path as :meth:`update`, so unchanged index values are
        not touched. ``resource_version`` is accepted for symmetry with the FIFO and is
        not stored. With duplicate keys in ``objs`` the last one wins.
        """
        key_func = self._key_func
        new_items = {key_func(obj): obj for obj in objs}
        items = self._items
        for key in [key for key in items if key not in new_items]:
            self._unindex(key, items[key])
            del items[key]
        for key, obj in new_items.items():
            self._put(key, obj)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add index functions and index every stored object with them.

        Raises ``ValueError`` when a name is already in use, and
        :class:`~aioinformer.errors.IndexerArgumentsError` when ``indexers`` is not a
        mapping of names to functions; nothing is added then. A function failing on a
        stored object leaves that object out of its index (see the class notes); with
        ``strict=True`` it raises and nothing is added.
        """
        indexers = as_indexers(indexers)
        clash = sorted(set(indexers) & set(self._indexers))
        if clash:
            raise ValueError(f"indexer conflict: {clash}")
        built: dict[str, Index] = {}
        failed: list[tuple[str, str, IndexFuncError]] = []
        for name, func in indexers.items():
            index: Index = {}
            for key, obj in self._items.items():
                try:
                    values = checked_values(func, func(obj))
                except Exception as exc:  # noqa: BLE001 - a user's function: reported
                    failed.append((key, name, self._index_failed(name, key, exc)))
                    continue
                for value in values:
                    add_key(index, value, key)
            built[name] = index
        self._indexers.update(indexers)
        self._indices.update(built)
        self._pairs.extend((indexers[name], index) for name, index in built.items())
        self._add_failing(failed)

    def _put(self, key: str, obj: T) -> None:
        items = self._items
        pairs = self._pairs
        if not pairs:
            items[key] = obj
            return
        failing = self._failing
        if failing and key in failing:
            self._put_carefully(key, obj)
            return
        old = items.get(key, _ABSENT)
        # Every index function runs, and its values are checked, before anything
        # changes; one that fails sends the write down the careful path, which runs them
        # one by one. The test is inline: a call of a checking function per index would
        # cost several times the test.
        try:
            if old is _ABSENT:
                computed: builtins.list[tuple[Index, Any]] = [
                    (index, func(obj)) for func, index in pairs
                ]
                for _, values in computed:
                    if type(values) is not list and type(values) is not tuple:
                        raise Unfit
                    for value in values:
                        if type(value) is not str:
                            raise Unfit
            else:
                changes: builtins.list[tuple[Index, Sequence[str], Sequence[str]]] = []
                for func, index in pairs:
                    new_values: Any = func(obj)
                    old_values = func(old)
                    if new_values != old_values:
                        # The old values were checked as they were stored; equal new
                        # ones need no check.
                        if type(new_values) is not list and type(new_values) is not tuple:
                            raise Unfit
                        for value in new_values:
                            if type(value) is not str:
                                raise Unfit
                        changes.append((index, old_values, new_values))
        except Exception:  # noqa: BLE001 - a user's function: the careful path reports it
            pass
        else:
            items[key] = obj
            if old is _ABSENT:
                for index, values in computed:
                    for value in values:
                        add_key(index, value, key)
                return
            for index, before, after in changes:
                move_key(index, key, before, after)
            return
        # Outside the handler: what the careful path logs is not chained to this.
        self._put_carefully(key, obj)

    def _put_carefully(self, key: str, obj: T) -> None:
        """:meth:`_put` when an index function fails on ``obj``, or failed on the object
        stored under ``key``: each function is run on its own, and a failing one leaves
        the key out of its index (or, strict, raises before anything changes)."""
        old = self._items.get(key, _ABSENT)
        was_failing = self._failing.get(key, ())
        plan: builtins.list[tuple[Index, Sequence[str] | None, Sequence[str]]] = []
        failed: builtins.list[tuple[str, IndexFuncError]] = []
        for name, func in self._indexers.items():
            try:
                new_values = checked_values(func, func(obj))
            except Exception as exc:  # noqa: BLE001 - a user's function: reported
                failed.append((name, self._index_failed(name, key, exc)))
                new_values = ()
            old_values: Sequence[str] | None = ()
            if old is not _ABSENT and name not in was_failing:
                try:
                    old_values = checked_values(func, func(old))
                except Exception:  # noqa: BLE001 - it succeeded once: the key is found below
                    old_values = None
            plan.append((self._indices[name], old_values, new_values))
        self._items[key] = obj
        for index, old_values, new_values in plan:
            if old_values is None:
                # A function that succeeded on the stored object fails on it now: where
                # it indexed the key is found by looking.
                discard_key_everywhere(index, key)
                old_values = ()
            if list(old_values) != list(new_values):
                move_key(index, key, old_values, new_values)
        self._set_failing(key, was_failing, failed)

    def _index_failed(self, name: str, key: str, exc: Exception) -> IndexFuncError:
        """Count one failure of index ``name``'s function on ``key``; raise it when
        strict (before the write changed anything), else return it."""
        error = IndexFuncError(name, key, exc)
        self._index_errors += 1
        self._last_index_error = error
        if self._on_failure is not None:
            self._on_failure(name)
        if self._strict:
            raise error from exc
        return error

    def _set_failing(
        self,
        key: str,
        was_failing: tuple[str, ...],
        failed: builtins.list[tuple[str, IndexFuncError]],
    ) -> None:
        """Record which indexes ``key`` is absent from after a careful write, logging
        each index whose function was not already failing on it."""
        if failed:
            self._failing[key] = tuple(name for name, _ in failed)
        elif was_failing:
            del self._failing[key]
        for name, error in failed:
            if name not in was_failing:
                self._log_failure(error)

    def _add_failing(self, failed: builtins.list[tuple[str, str, IndexFuncError]]) -> None:
        """Record the failures of indexes just added (``(key, name, error)``), and log them."""
        failing = self._failing
        for key, name, error in failed:
            failing[key] = (*failing.get(key, ()), name)
            self._log_failure(error)

    def _log_failure(self, error: IndexFuncError) -> None:
        cause = error.error
        logger.error(
            "%s%s; the object is cached, absent from that index until its function succeeds on it",
            self._source,
            error,
            exc_info=(type(cause), cause, cause.__traceback__),
        )

    def _unindex(self, key: str, old: Any) -> None:
        failing = self._failing
        if not (failing and key in failing):
            try:
                for func, index in self._pairs:
                    for value in func(old):
                        discard_key(index, value, key)
                return
            except Exception:  # noqa: BLE001 - it succeeded once: the key is found below
                pass
        skipped = failing.pop(key, ())
        for name, func in self._indexers.items():
            if name in skipped:
                continue
            index = self._indices[name]
            try:
                values = checked_values(func, func(old))
            except Exception:  # noqa: BLE001 - it succeeded once: the key is found by looking
                discard_key_everywhere(index, key)
                continue
            for value in values:
                discard_key(index, value, key)

    # -- reads ---------------------------------------------------------------------

    def get(self, obj: Any) -> T | None:
        """The stored object with ``obj``'s key, or ``None``."""
        return self._items.get(self._key_func(obj))

    def get_by_key(self, key: str) -> T | None:
        """The stored object with this key, or ``None``."""
        return self._items.get(key)

    def list(self) -> builtins.list[T]:
        """Every stored object, in no particular order."""
        return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        """Every stored key, in no particular order."""
        return list(self._items)

    def index(self, index_name: str, obj: Any) -> builtins.list[T]:
        """Objects sharing at least one of ``obj``'s values in index ``index_name``."""
        func = self._indexers[index_name]
        index = self._indices[index_name]
        values = checked_values(func, func(obj))
        if len(values) == 1:
            keys: Iterable[str] = index.get(values[0], ())
        else:
            union: set[str] = set()
            for value in values:
                union.update(index.get(value, ()))
            keys = union
        items = self._items
        return [items[key] for key in keys]

    def index_keys(self, index_name: str, indexed_value: str) -> builtins.list[str]:
        """Keys of the objects whose index ``index_name`` includes ``indexed_value``, sorted."""
        return sorted(self._indices[index_name].get(indexed_value, ()))

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[T]:
        """Objects whose index ``index_name`` includes ``indexed_value``."""
        items = self._items
        return [items[key] for key in self._indices[index_name].get(indexed_value, ())]

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """Every value index ``index_name`` holds (``[]`` for an unknown index)."""
        index = self._indices.get(index_name)
        return list(index) if index is not None else []

    def get_indexers(self) -> Indexers:
        """A copy of the index functions by name."""
        return dict(self._indexers)

    def has_index(self, index_name: str) -> bool:
        """Whether an index called ``index_name`` is maintained (without copying
        :meth:`get_indexers`)."""
        return index_name in self._indexers

    # -- entries: what is stored, before decoding -------------------------------------
    # Here the stored objects are what reads return; a CompactIndexer stores CompactEntry objects
    # and decodes on read. Listers and the informer go through these to filter or hand
    # over entries before paying for a decode.

    def entry_by_key(self, key: str) -> Any:
        """The entry stored under ``key``, or ``None``."""
        return self._items.get(key)

    def entries(self) -> builtins.list[Any]:
        """Every stored entry, in no particular order."""
        return list(self._items.values())

    def entries_by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        """The entries whose index ``index_name`` includes ``indexed_value``."""
        items = self._items
        return [items[key] for key in self._indices[index_name].get(indexed_value, ())]

    def decode(self, entry: Any) -> T:
        """The object an entry stands for (the entry itself here)."""
        return entry  # type: ignore[no-any-return]

    def decode_all(self, entries: builtins.list[Any]) -> builtins.list[T]:
        """The objects ``entries`` stand for, in order (``entries`` itself here)."""
        return entries

    @property
    def known_objects(self) -> Any:
        """What a :class:`~aioinformer.delta_fifo.DeltaFIFO` consults: ``list_keys()`` and
        ``get_by_key()`` answering entries."""
        return self


def _compute(funcs: Iterable[IndexFunc], entry: Any, view: Any) -> tuple[Packed, ...]:
    """Every function's values for ``entry`` (``view`` of it for the functions that need
    the object)."""
    return tuple([pack(func(entry) if reads_head_only(func) else func(view)) for func in funcs])


def _run(func: IndexFunc, entry: Any, view: Any) -> Packed:
    """One function's checked values for ``entry``: what :func:`_compute` gives, with
    :class:`~aioinformer.errors.IndexValuesError` saying what is wrong with them."""
    values = func(entry) if reads_head_only(func) else func(view)
    try:
        return pack(values)
    except Unfit:
        # A list of str subclasses (a StrEnum's members) packs as the plain strings.
        return pack([str(value) for value in checked_values(func, values)])


class CompactIndexer(Indexer[Any]):
    """An :class:`Indexer` whose entries are :class:`~aioinformer._objects.raw.CompactEntry`: each
    object's JSON bytes and head, which the cyclic collector never walks.

    Reads (``get``, ``get_by_key``, ``list``, ``index``, ``by_index``) return a read-only
    :class:`~aioinformer._objects.view.ObjectView` of each entry, which decodes only the
    fields its reader asks for (``obj.to_dict()`` gives a copy to change).
    Writes accept CompactEntry objects, decoded dicts (encoded here) or any other object (kept as it
    is, decoded to itself). Each entry's index values are kept beside it, so an update or
    a delete never decodes the old object. :func:`namespace_index_func` and the functions
    :func:`label_index_func` makes read the stored head; any other index function gets
    a view of the entry (one per write, shared by the index functions). An index function
    failing on an entry leaves it out of that index as the :class:`Indexer` does (its
    stored values there are none).
    """

    __slots__ = ("_entries_view", "_values")

    _values: dict[str, PackedValues]
    """For each key: its values in every index, in ``_pairs`` order (only while indexes
    exist). Invariant: ``_values[k].per_index[i]`` is what ``_pairs[i]``'s function gave
    for ``_items[k]``."""

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key,
        indexers: Mapping[str, IndexFunc] | None = None,
        *,
        strict: bool = False,
    ) -> None:
        super().__init__(key_func, indexers, strict=strict)
        self._values = {}
        self._entries_view = _Entries(self._items)

    def __repr__(self) -> str:
        return f"<CompactIndexer items={len(self._items)} indexes={sorted(self._indexers)}>"

    @property
    def known_objects(self) -> Any:
        return self._entries_view

    def decode(self, entry: Any) -> Any:
        return ObjectView(entry) if type(entry) is CompactEntry else entry

    def decode_all(self, entries: builtins.list[Any]) -> builtins.list[Any]:
        # Views are small and decode nothing until read: no collector pause is needed.
        return [ObjectView(entry) if type(entry) is CompactEntry else entry for entry in entries]

    # -- writes --------------------------------------------------------------------

    def put_entry(self, key: str, entry: Any, carried: Any = None) -> None:
        """Store ``entry`` under ``key`` (``carried`` is unused: index functions get a view
        of their own, which dies with the write)."""
        if type(entry) is dict:
            entry = CompactEntry.from_dict(entry)
        pairs = self._pairs
        if not pairs:
            self._items[key] = entry
            return
        shared = ObjectView(entry) if type(entry) is CompactEntry else entry
        # Every index function runs, and its values are checked, before anything changes;
        # one that fails (or failed on the stored entry) sends the write down the careful
        # path, which runs them one by one.
        new_values: tuple[Packed, ...] | None = None
        failing = self._failing
        if not (failing and key in failing):
            # Not contextlib.suppress: a context manager per write costs more than the try.
            try:  # noqa: SIM105
                new_values = _compute((func for func, _ in pairs), entry, shared)
            except Exception:  # noqa: BLE001 - a user's function: the careful path reports it
                pass
        if new_values is None:
            # Outside the handler: what the careful path logs is not chained to this.
            was_failing = failing.get(key, ())
            new_values, failed = self._compute_carefully(self._indexers.items(), key, entry, shared)
            self._set_failing(key, was_failing, failed)
        old = self._values.get(key)
        self._items[key] = entry
        self._values[key] = PackedValues(new_values)
        if old is None:
            for (_, index), values in zip(pairs, new_values, strict=True):
                for value in unpack(values):
                    add_key(index, value, key)
            return
        for (_, index), before, after in zip(pairs, old.per_index, new_values, strict=True):
            if before != after:
                move_key(index, key, unpack(before), unpack(after))

    def _compute_carefully(
        self,
        funcs: Iterable[tuple[str, IndexFunc]],
        key: str,
        entry: Any,
        shared: Any,
    ) -> tuple[tuple[Packed, ...], builtins.list[tuple[str, IndexFuncError]]]:
        """Each named function's values for ``entry``, no values for one that fails, and
        the failures (raised at the first one, when strict)."""
        values: builtins.list[Packed] = []
        failed: builtins.list[tuple[str, IndexFuncError]] = []
        for name, func in funcs:
            try:
                values.append(_run(func, entry, shared))
            except Exception as exc:  # noqa: BLE001 - a user's function: reported
                failed.append((name, self._index_failed(name, key, exc)))
                values.append(NO_VALUES)
        return tuple(values), failed

    def _put(self, key: str, obj: Any) -> None:
        self.put_entry(key, obj)

    def _unindex(self, key: str, old: Any) -> None:
        # From the values stored beside the entry (none for an index whose function
        # failed on it): the old object is never decoded.
        failing = self._failing
        if failing:
            failing.pop(key, None)
        values = self._values.pop(key, None)
        if values is None:
            return
        for (_, index), previous in zip(self._pairs, values.per_index, strict=True):
            for value in unpack(previous):
                discard_key(index, value, key)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        indexers = as_indexers(indexers)
        clash = sorted(set(indexers) & set(self._indexers))
        if clash:
            raise ValueError(f"indexer conflict: {clash}")
        funcs = list(indexers.items())
        computed: dict[str, tuple[Packed, ...]] = {}
        failed: builtins.list[tuple[str, str, IndexFuncError]] = []
        for key, entry in self._items.items():
            shared = ObjectView(entry) if type(entry) is CompactEntry else entry
            try:
                computed[key] = _compute(indexers.values(), entry, shared)
                continue
            except Exception:  # noqa: BLE001 - a user's function: the careful path reports it
                pass
            values, failures = self._compute_carefully(funcs, key, entry, shared)
            computed[key] = values
            failed.extend((key, name, error) for name, error in failures)
        built: dict[str, Index] = {name: {} for name, _ in funcs}
        for key, values in computed.items():
            for (name, _), index_values in zip(funcs, values, strict=True):
                for value in unpack(index_values):
                    add_key(built[name], value, key)
            known = self._values.get(key)
            before = known.per_index if known is not None else ()
            self._values[key] = PackedValues(before + values)
        self._indexers.update(indexers)
        self._indices.update(built)
        self._pairs.extend((indexers[name], built[name]) for name, _ in funcs)
        self._add_failing(failed)

    # -- reads: each a view of its own ----------------------------------------------

    def get(self, obj: Any) -> Any:
        entry = self._items.get(self._key_func(obj))
        return None if entry is None else self.decode(entry)

    def get_by_key(self, key: str) -> Any:
        entry = self._items.get(key)
        return None if entry is None else self.decode(entry)

    def list(self) -> builtins.list[Any]:
        return self.decode_all(list(self._items.values()))

    def index(self, index_name: str, obj: Any) -> builtins.list[Any]:
        return self.decode_all(super().index(index_name, obj))

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        return self.decode_all(self.entries_by_index(index_name, indexed_value))


class _Entries:
    """A compact cache as a DeltaFIFO's ``known_objects``: its keys and its entries,
    undecoded (tombstones and resyncs carry entries, decoded only for the handlers)."""

    __slots__ = ("_items",)

    def __init__(self, items: dict[str, Any]) -> None:
        self._items = items

    def list_keys(self) -> builtins.list[str]:
        return list(self._items)

    def get_by_key(self, key: str) -> Any:
        return self._items.get(key)
