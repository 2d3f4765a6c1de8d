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
:mod:`aioinformer._meta` and is re-exported here). It is the default key function of every
stage, and it understands a :class:`~aioinformer.models.DeletedFinalStateUnknown`
tombstone, so deletes may be fed either an object or a tombstone.

Indexes. Each index function maps an object to a list of strings (its *index values*);
index ``name`` maps each value to the keys of the objects that produce it. The key sets
are maintained incrementally on every write: an update touches only the values that
changed, and a set that becomes empty is removed, so
:meth:`Indexer.list_index_func_values` never reports a value without objects. They are
dicts of keys to ``None`` rather than ``set``\ s: a dict holding only strings is one the
cyclic garbage collector does not track, so an index of any size costs it nothing.

Task model. Everything here is synchronous and runs on the event loop's thread: no
method suspends, so every method is atomic with respect to other tasks and no lock is
needed. It is a cache fed by a watch: what it holds may be behind the server.

Example::

    indexer = Indexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    indexer.add(pod)
    indexer.by_index(NAMESPACE_INDEX, "default")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeAlias, TypeVar

import msgspec

from aioinformer._gcpolicy import collector_paused
from aioinformer._meta import describe, labels_of, metadata_of, namespace_of
from aioinformer._meta import meta_namespace_key as meta_namespace_key
from aioinformer._raw import CompactEntry, SharedDecode
from aioinformer.errors import KeyFuncError
from aioinformer.models import DeletedFinalStateUnknown

if TYPE_CHECKING:
    import builtins
    from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "CompactIndexer",
    "Index",
    "IndexFunc",
    "Indexer",
    "Indexers",
    "KeyFunc",
    "NAMESPACE_INDEX",
    "label_index_func",
    "meta_namespace_key",
    "namespace_index_func",
    "split_meta_namespace_key",
]

T = TypeVar("T")


class KeyFunc(Protocol):
    """Maps an object to its store key; raises :class:`KeyFuncError` when it cannot."""

    def __call__(self, obj: Any, /) -> str: ...


class IndexFunc(Protocol):
    """Maps an object to its index values (possibly none, possibly several)."""

    def __call__(self, obj: Any, /) -> list[str]: ...


Indexers: TypeAlias = dict[str, IndexFunc]
"""Index functions by index name."""

Index: TypeAlias = dict[str, dict[str, None]]
"""One index: index value -> keys of the objects producing it, as the keys of a dict (an
insertion-ordered set the garbage collector does not track); never empty."""

_ABSENT: Any = object()

NAMESPACE_INDEX = "namespace"
"""The conventional name of the index built by :func:`namespace_index_func`."""


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """Split a key made by :func:`meta_namespace_key` into ``(namespace, name)``.

    A cluster-scoped key gives ``("", name)``. Raises :class:`KeyFuncError` for a key
    with more than one ``/``.
    """
    namespace, sep, name = key.partition("/")
    if not sep:
        return "", key
    if "/" in name:
        raise KeyFuncError(f"unexpected key format: {key!r}")
    return namespace, name


def namespace_index_func(obj: Any) -> list[str]:
    """Index an object by namespace: ``[namespace]``, or ``[""]`` when cluster-scoped.

    Raises :class:`KeyFuncError` for an object without metadata. Reads only the head of a
    compact cache's :class:`~aioinformer._raw.CompactEntry`, so it never decodes one.
    """
    if type(obj) is CompactEntry:
        return [obj.namespace]
    if type(obj) is dict:
        meta = obj.get("metadata")
        if type(meta) is dict:
            return [meta.get("namespace") or ""]
    elif not isinstance(obj, DeletedFinalStateUnknown) and metadata_of(obj) is not None:
        return [namespace_of(obj)]
    raise KeyFuncError(f"object has no metadata: {describe(obj)}")


def label_index_func(label: str) -> IndexFunc:
    """An index function indexing objects by the value of their label ``label`` (no value
    for an object without it): ``indexers={"app": label_index_func("app")}``.

    It reads only labels, which a compact cache keeps decoded beside each object, so it
    never makes the informer decode an object (a function of your own reading
    ``obj["metadata"]["labels"]`` would)."""

    def index(obj: Any) -> list[str]:
        labels = labels_of(obj)
        value = labels.get(label) if labels else None
        return [value] if isinstance(value, str) else []

    index.__name__ = index.__qualname__ = f"label_index_func({label!r})"
    index._aioinformer_head_only = True  # type: ignore[attr-defined]
    return index


class Indexer(Generic[T]):
    """A store of objects by key with named secondary indexes.

    ``key_func`` (default :func:`meta_namespace_key`) gives each object's key;
    ``indexers`` names the index functions to maintain from the start, and
    :meth:`add_indexers` adds more at any time (existing objects get indexed).

    Methods naming an index (``index``, ``index_keys``, ``by_index``) raise ``KeyError``
    for an unknown name; :meth:`list_index_func_values` returns ``[]`` for one. An index
    function that raises leaves the store unchanged for that write, and the error
    propagates.

    This is a cache: it reflects the server as of the last event applied, and the objects
    it returns are the stored ones, to be treated as read-only.
    """

    __slots__ = ("_indexers", "_indices", "_items", "_key_func", "_pairs")

    _key_func: KeyFunc
    _items: dict[str, T]
    """Objects by key."""
    _indexers: dict[str, IndexFunc]
    """Index functions by name; ``_indices`` has exactly the same names."""
    _indices: dict[str, Index]
    """For each index name: value -> keys. Invariant: key ``k`` is in
    ``_indices[n][v]`` iff ``_items[k]`` exists and ``v`` is in
    ``_indexers[n](_items[k])``; no set is ever empty."""
    _pairs: builtins.list[tuple[IndexFunc, Index]]
    """``(_indexers[n], _indices[n])`` for every index name: what writes iterate."""

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> None:
        self._key_func = key_func
        self._items = {}
        self._indexers = dict(indexers) if indexers else {}
        self._indices = {name: {} for name in self._indexers}
        self._pairs = [(func, self._indices[name]) for name, func in self._indexers.items()]

    def __repr__(self) -> str:
        return f"<Indexer items={len(self._items)} indexes={sorted(self._indexers)}>"

    def __len__(self) -> int:
        return len(self._items)

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
        """Remove the object stored under ``key``; absent is fine."""
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

        Raises ``ValueError`` when a name is already in use; nothing is added then. An
        index function that raises leaves the indexer unchanged.
        """
        clash = sorted(set(indexers) & set(self._indexers))
        if clash:
            raise ValueError(f"indexer conflict: {clash}")
        built: dict[str, Index] = {}
        for name, func in indexers.items():
            index: Index = {}
            for key, obj in self._items.items():
                for value in func(obj):
                    _insert(index, value, key)
            built[name] = index
        self._indexers.update(indexers)
        self._indices.update(built)
        self._pairs.extend((indexers[name], index) for name, index in built.items())

    def _put(self, key: str, obj: T) -> None:
        items = self._items
        pairs = self._pairs
        if not pairs:
            items[key] = obj
            return
        old = items.get(key, _ABSENT)
        # Every index function runs before anything changes, so one that raises leaves
        # the store as it was.
        if old is _ABSENT:
            computed = [(index, func(obj)) for func, index in pairs]
            items[key] = obj
            for index, values in computed:
                for value in values:
                    _insert(index, value, key)
            return
        changes: builtins.list[tuple[Index, builtins.list[str], builtins.list[str]]] = []
        for func, index in pairs:
            new_values = func(obj)
            old_values = func(old)
            if new_values != old_values:
                changes.append((index, old_values, new_values))
        items[key] = obj
        for index, old_values, new_values in changes:
            _move(index, key, old_values, new_values)

    def _unindex(self, key: str, old: Any) -> None:
        for func, index in self._pairs:
            for value in func(old):
                _discard(index, value, key)

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
        values = func(obj)
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


def _insert(index: Index, value: str, key: str) -> None:
    keys = index.get(value)
    if keys is None:
        index[value] = {key: None}
    else:
        keys[key] = None


def _move(index: Index, key: str, old: Sequence[str], new: Sequence[str]) -> None:
    """Re-index ``key`` from values ``old`` to values ``new`` (which differ)."""
    if len(old) == 1 and len(new) == 1:
        _discard(index, old[0], key)
        _insert(index, new[0], key)
        return
    old_set = set(old)
    new_set = set(new)
    for value in old_set - new_set:
        _discard(index, value, key)
    for value in new_set - old_set:
        _insert(index, value, key)


def _discard(index: Index, value: str, key: str) -> None:
    keys = index.get(value)
    if keys is None:
        return
    keys.pop(key, None)
    if not keys:
        del index[value]


def _reads_head_only(func: IndexFunc) -> bool:
    """Whether ``func`` reads only an object's head (namespace, labels), so a CompactEntry
    is passed to it as it is; every other index function gets the decoded object."""
    return func is namespace_index_func or getattr(func, "_aioinformer_head_only", False)


class _Several(msgspec.Struct, frozen=True, gc=False):
    """An index function's values for one object when there are none or several."""

    values: tuple[str, ...]


_Packed: TypeAlias = str | _Several
"""One index function's values for one object: the value itself when there is exactly
one (the usual case), else the values in an untracked struct. Either way the tuple that
holds them is one of strings and structs, which the collector untracks at its first look
(a tuple holding tuples may outlive several looks, and be promoted meanwhile)."""

_NONE: Final = _Several(())


def _pack(values: builtins.list[str]) -> _Packed:
    if len(values) == 1:
        return values[0]
    return _Several(tuple(values)) if values else _NONE


def _unpack(packed: _Packed) -> tuple[str, ...]:
    return (packed,) if type(packed) is str else packed.values  # type: ignore[union-attr]


class _Values(msgspec.Struct, frozen=True, gc=False):
    """One entry's values in every index, in ``_pairs`` order. A struct the collector
    does not track, so the dict holding them stays untracked too."""

    per_index: tuple[_Packed, ...]


def _compute(funcs: Iterable[IndexFunc], entry: Any, shared: SharedDecode) -> tuple[_Packed, ...]:
    """Every function's values for ``entry`` (decoded through ``shared`` only for the
    functions that need the object)."""
    return tuple(
        [_pack(func(entry) if _reads_head_only(func) else func(shared.get())) for func in funcs]
    )


_PAUSE_FROM: Final = 64
"""Bulk reads of at least this many entries decode with the collector paused."""


class CompactIndexer(Indexer[Any]):
    """An :class:`Indexer` whose entries are :class:`~aioinformer._raw.CompactEntry`: each
    object's JSON bytes and head, which the cyclic collector never walks.

    Reads (``get``, ``get_by_key``, ``list``, ``index``, ``by_index``) decode a fresh
    ``dict`` each time, which the caller may keep or change without touching the cache.
    Writes accept CompactEntry objects, decoded dicts (encoded here) or any other object (kept as it
    is, decoded to itself). Each entry's index values are kept beside it, so an update or
    a delete never decodes the old object. :func:`namespace_index_func` and the functions
    :func:`label_index_func` makes read the stored head; any other index function gets
    the decoded object (decoded once per write, and shared with the handlers when the
    informer passes its decode along).
    """

    __slots__ = ("_entries_view", "_values")

    _values: dict[str, _Values]
    """For each key: its values in every index, in ``_pairs`` order (only while indexes
    exist). Invariant: ``_values[k].per_index[i]`` is what ``_pairs[i]``'s function gave
    for ``_items[k]``."""

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> None:
        super().__init__(key_func, indexers)
        self._values = {}
        self._entries_view = _Entries(self._items)

    def __repr__(self) -> str:
        return f"<CompactIndexer items={len(self._items)} indexes={sorted(self._indexers)}>"

    @property
    def known_objects(self) -> Any:
        return self._entries_view

    def decode(self, entry: Any) -> Any:
        return entry.decode() if type(entry) is CompactEntry else entry

    def decode_all(self, entries: builtins.list[Any]) -> builtins.list[Any]:
        decode = self.decode
        if len(entries) < _PAUSE_FROM:
            return [decode(entry) for entry in entries]
        # Like a LIST, a bulk read allocates containers that all survive it: left on, the
        # collector would run again and again over them meanwhile (4x the time).
        with collector_paused("pause"):
            return [decode(entry) for entry in entries]

    # -- writes --------------------------------------------------------------------

    def put_entry(self, key: str, entry: Any, carried: Any = None) -> None:
        """Store ``entry`` under ``key``; ``carried`` is its decode
        (:class:`~aioinformer._raw.SharedDecode`), shared with the handlers, for index
        functions that need the object (made here when not given)."""
        if type(entry) is dict:
            entry = CompactEntry.from_dict(entry)
        shared: SharedDecode | None = carried
        pairs = self._pairs
        if not pairs:
            self._items[key] = entry
            return
        if shared is None:
            shared = SharedDecode(entry)
        # Every index function runs before anything changes, so one that raises leaves
        # the store as it was.
        new_values = _compute((func for func, _ in pairs), entry, shared)
        old = self._values.get(key)
        self._items[key] = entry
        self._values[key] = _Values(new_values)
        if old is None:
            for (_, index), values in zip(pairs, new_values, strict=True):
                for value in _unpack(values):
                    _insert(index, value, key)
            return
        for (_, index), before, after in zip(pairs, old.per_index, new_values, strict=True):
            if before != after:
                _move(index, key, _unpack(before), _unpack(after))

    def _put(self, key: str, obj: Any) -> None:
        self.put_entry(key, obj)

    def _unindex(self, key: str, old: Any) -> None:
        # From the values stored beside the entry: the old object is never decoded.
        values = self._values.pop(key, None)
        if values is None:
            return
        for (_, index), previous in zip(self._pairs, values.per_index, strict=True):
            for value in _unpack(previous):
                _discard(index, value, key)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        clash = sorted(set(indexers) & set(self._indexers))
        if clash:
            raise ValueError(f"indexer conflict: {clash}")
        funcs = list(indexers.items())
        computed = {
            key: _compute(indexers.values(), entry, SharedDecode(entry))
            for key, entry in self._items.items()
        }
        built: dict[str, Index] = {name: {} for name, _ in funcs}
        for key, values in computed.items():
            for (name, _), index_values in zip(funcs, values, strict=True):
                for value in _unpack(index_values):
                    _insert(built[name], value, key)
            known = self._values.get(key)
            self._values[key] = _Values((known.per_index if known is not None else ()) + values)
        self._indexers.update(indexers)
        self._indices.update(built)
        self._pairs.extend((indexers[name], built[name]) for name, _ in funcs)

    # -- reads: each a fresh decode ------------------------------------------------

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
