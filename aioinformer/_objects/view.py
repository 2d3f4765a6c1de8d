"""Read-only views of a compact cache's objects: what handlers, index functions and
listers receive.

Role: a compact cache (``cache="compact"``, the default) stores each object as a
:class:`~aioinformer._objects.raw.CompactEntry`, its JSON bytes beside the few fields the
pipeline reads. What the user's code gets for one is an :class:`ObjectView`: a read-only
``Mapping`` that answers ``obj["metadata"]["name"]``, ``["namespace"]``,
``["resourceVersion"]``, ``["labels"]``, ``obj["kind"]`` and ``obj["apiVersion"]`` from the
entry's head without decoding anything; ``uid``, ``generation``, ``deletionTimestamp``,
``annotations``, ``finalizers`` and ``ownerReferences`` by decoding the few bytes the entry
holds for that field; and any other field by decoding that field alone, once per view. A
user's index function reading labels, or a handler reading an annotation, thus allocates a
few small objects that die as it returns, by reference counting (a view and its metadata
share the object's split fields without referring to each other, so they form no cycle):
nothing lives long enough for the cyclic collector to run, however many events go by.

Why read-only: a view is a window on the cache. The same entry is the lister's answer
and every handler's argument, so a change made through one would be a change to what every
other reader sees (client-go's rule: objects from the cache must not be modified; here it
is enforced). Every mutator raises :class:`~aioinformer.errors.ReadOnlyObjectError`, whose
message says how to get a copy to change (:meth:`ObjectView.to_dict`, or
``copy.deepcopy(obj)``).

The decoded parts are :class:`ReadOnlyDict` and :class:`ReadOnlyList`, subclasses of
``dict`` and ``list``: ``isinstance(x, dict)``, ``json.dumps``, orjson and ``dict(x)`` work
on them as on any dict. Their children are frozen as they are reached, so reading one
field of a large ``spec`` never converts the rest.

Input: one :class:`~aioinformer._objects.raw.CompactEntry`. Output: views, and
:func:`json_default`, the ``default=`` for orjson or ``json`` that encodes a view.

Task model: synchronous, no shared state; a view belongs to whoever received it (each
handler call, lister read and index pass gets its own), and caches what it decoded for
its own life only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar, Final, NoReturn, SupportsIndex

import msgspec
import orjson
from pydantic_core import SchemaSerializer, core_schema

from aioinformer._objects.raw import FIELDS_DECODER, CompactEntry
from aioinformer.errors import ReadOnlyObjectError

__all__ = [
    "MetadataView",
    "ObjectView",
    "ReadOnlyDict",
    "ReadOnlyList",
    "freeze",
    "json_default",
    "thaw",
    "view_of",
]

_loads: Final = orjson.loads


def _refuse(what: str) -> NoReturn:
    raise ReadOnlyObjectError(what)


# -- frozen containers -----------------------------------------------------------------


class _RefusesChanges:
    """The mapping mutators, each raising :class:`~aioinformer.errors.ReadOnlyObjectError`:
    put first among the bases of a read-only mapping, they shadow ``dict``'s."""

    __slots__ = ()

    def __setitem__(self, key: str, value: Any) -> NoReturn:
        _refuse(f"cannot set {key!r}")

    def __delitem__(self, key: str) -> NoReturn:
        _refuse(f"cannot delete {key!r}")

    def __ior__(self, other: Any) -> NoReturn:
        _refuse("cannot update it")

    def clear(self) -> NoReturn:
        _refuse("cannot clear it")

    def pop(self, key: str, *default: Any) -> NoReturn:
        _refuse(f"cannot pop {key!r}")

    def popitem(self) -> NoReturn:
        _refuse("cannot pop an item")

    def setdefault(self, key: str, default: Any = None) -> NoReturn:
        _refuse(f"cannot set {key!r}")

    def update(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("cannot update it")


class ReadOnlyDict(_RefusesChanges, dict[str, Any]):
    """A ``dict`` decoded from a cached object that refuses changes.

    Reads work as on any dict (C code such as ``json.dumps`` or orjson reads it directly);
    a child ``dict`` or ``list`` is frozen the first time it is read through this one.
    ``copy()``, ``copy.copy`` and ``copy.deepcopy`` give a plain, mutable deep copy.
    """

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        kind = type(value)
        if kind is dict or kind is list:
            value = freeze(value)
            dict.__setitem__(self, key, value)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def values(self) -> Any:
        self._freeze_children()
        return dict.values(self)

    def items(self) -> Any:
        self._freeze_children()
        return dict.items(self)

    def _freeze_children(self) -> None:
        for key, value in dict.items(self):
            kind = type(value)
            if kind is dict or kind is list:
                dict.__setitem__(self, key, freeze(value))

    def copy(self) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __copy__(self) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (thaw(self),))


class _ReadOnlyStrings(ReadOnlyDict):
    """A read-only ``dict`` of strings (labels): nothing to freeze, so every read is the
    plain dict's."""

    __slots__ = ()

    __getitem__ = dict.__getitem__
    get = dict.get  # type: ignore[assignment]
    values = dict.values
    items = dict.items


class ReadOnlyList(list[Any]):
    """A ``list`` decoded from a cached object that refuses changes; children are frozen
    as they are reached, and copies are plain and mutable (see :class:`ReadOnlyDict`)."""

    __slots__ = ()

    def __getitem__(self, index: Any) -> Any:
        if type(index) is slice:
            self._freeze_children()
            return ReadOnlyList(list.__getitem__(self, index))
        value = list.__getitem__(self, index)
        kind = type(value)
        if kind is dict or kind is list:
            value = freeze(value)
            list.__setitem__(self, index, value)
        return value

    def __iter__(self) -> Iterator[Any]:
        self._freeze_children()
        return list.__iter__(self)

    def __reversed__(self) -> Iterator[Any]:
        self._freeze_children()
        return list.__reversed__(self)

    def _freeze_children(self) -> None:
        for index, value in enumerate(list.__iter__(self)):
            kind = type(value)
            if kind is dict or kind is list:
                list.__setitem__(self, index, freeze(value))

    def copy(self) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __copy__(self) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (thaw(self),))

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        _refuse("cannot set an item")

    def __delitem__(self, index: Any) -> NoReturn:
        _refuse("cannot delete an item")

    def __iadd__(self, other: Iterable[Any]) -> NoReturn:  # type: ignore[misc]
        _refuse("cannot extend it")

    def __imul__(self, count: SupportsIndex) -> NoReturn:
        _refuse("cannot extend it")

    def append(self, value: Any) -> NoReturn:
        _refuse("cannot append to it")

    def extend(self, values: Iterable[Any]) -> NoReturn:
        _refuse("cannot extend it")

    def insert(self, index: SupportsIndex, value: Any) -> NoReturn:
        _refuse("cannot insert into it")

    def pop(self, index: SupportsIndex = -1) -> NoReturn:
        _refuse("cannot pop an item")

    def remove(self, value: Any) -> NoReturn:
        _refuse("cannot remove an item")

    def clear(self) -> NoReturn:
        _refuse("cannot clear it")

    def sort(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("cannot sort it in place (sorted(items) gives a sorted copy)")

    def reverse(self) -> NoReturn:
        _refuse("cannot reverse it in place (list(reversed(items)) gives a copy)")


def freeze(value: Any) -> Any:
    """``value`` (decoded JSON) as read-only: a dict or list becomes a
    :class:`ReadOnlyDict` or :class:`ReadOnlyList` whose children freeze as they are read;
    anything else is immutable already."""
    kind = type(value)
    if kind is dict:
        return ReadOnlyDict(value)
    if kind is list:
        return ReadOnlyList(value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of ``value`` (a view, a read-only container, or plain
    JSON data)."""
    if isinstance(value, _LazyObject):
        return value.to_dict()
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in dict.items(value)}
    if isinstance(value, list):
        return [thaw(item) for item in list.__iter__(value)]
    return value


# -- views -----------------------------------------------------------------------------


def _plain(view: _LazyObject) -> dict[str, Any]:
    return view.to_dict()


# How pydantic (and so FastAPI) serialises a view it meets as ``Any``, in a response
# annotated ``dict[str, Any]`` say: as the plain object.
_SERIALIZER: Final = SchemaSerializer(
    core_schema.any_schema(serialization=core_schema.plain_serializer_function_ser_schema(_plain))
)


class _LazyObject(_RefusesChanges, Mapping[str, Any]):
    """A read-only mapping over one JSON object's bytes: split into raw fields on first
    need, each field decoded (and frozen) the first time it is read."""

    __slots__ = ("_fields", "_values")

    __pydantic_serializer__: ClassVar[SchemaSerializer] = _SERIALIZER

    _fields: dict[str, msgspec.Raw] | None
    _values: dict[str, Any] | None

    def _raw(self) -> bytes | msgspec.Raw:
        raise NotImplementedError

    def _split(self) -> dict[str, msgspec.Raw]:
        fields = self._fields
        if fields is None:
            fields = self._fields = FIELDS_DECODER.decode(self._raw())
        return fields

    def _decoded(self, key: str, held: msgspec.Raw | None = None) -> Any:
        """``key``'s value, decoded (and frozen) on its first read: from ``held``, the
        bytes an entry holds for the field, or else from the object's split fields."""
        values = self._values
        if values is None:
            values = self._values = {}
        elif key in values:
            return values[key]
        raw = self._split()[key] if held is None else held
        value = values[key] = freeze(_loads(memoryview(raw)))
        return value

    def __getitem__(self, key: str) -> Any:
        return self._decoded(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __iter__(self) -> Iterator[str]:
        return iter(self._split())

    def __len__(self) -> int:
        return len(self._split())

    def __contains__(self, key: object) -> bool:
        return key in self._split()

    def to_dict(self) -> dict[str, Any]:
        """A plain, mutable ``dict`` of the whole object, decoded afresh: change it and
        send it back."""
        value: dict[str, Any] = _loads(memoryview(self._raw()))
        return value

    def __copy__(self) -> dict[str, Any]:
        return self.to_dict()

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return self.to_dict()

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.to_dict(),))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _LazyObject):
            return self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):
            return bool(self.to_dict() == thaw(other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __or__(self, other: Any) -> Any:
        if isinstance(other, Mapping):
            return self.to_dict() | dict(other)
        return NotImplemented


# The metadata fields a compact entry holds as their own JSON: the wire name, and the
# entry's attribute.
_HELD: Final = {
    "uid": "uid",
    "generation": "generation",
    "deletionTimestamp": "deletion_timestamp",
    "annotations": "annotations",
    "finalizers": "finalizers",
    "ownerReferences": "owner_references",
}


class MetadataView(_LazyObject):
    """An object's ``metadata`` in a view: ``name``, ``namespace``, ``resourceVersion``
    and ``labels`` come from the cache entry's head, ``uid``, ``generation``,
    ``deletionTimestamp``, ``annotations``, ``finalizers`` and ``ownerReferences`` from
    the few bytes of JSON it holds for each; any other field (``managedFields``,
    ``creationTimestamp``, ...) is decoded from the object's bytes on first read."""

    __slots__ = ("_entry", "_labels", "_top")

    def __init__(self, entry: CompactEntry, top: dict[str, msgspec.Raw] | None) -> None:
        self._fields = None
        self._values = None
        self._labels: _ReadOnlyStrings | None = None
        self._entry = entry
        # The object's raw top-level fields, shared with the view that made this one. No
        # reference back to that view: the pair would be a cycle, and every view would
        # then outlive its call until the collector ran.
        self._top = top

    def _top_fields(self) -> dict[str, msgspec.Raw]:
        top = self._top
        if top is None:
            top = self._top = FIELDS_DECODER.decode(self._entry.raw)
        return top

    def _raw(self) -> msgspec.Raw:
        return self._top_fields()["metadata"]

    def __getitem__(self, key: str) -> Any:
        entry = self._entry
        if key == "name":
            if entry.name:
                return entry.name
        elif key == "namespace":
            if entry.namespace:
                return entry.namespace
        elif key == "resourceVersion":
            if entry.resource_version:
                return entry.resource_version
        elif key == "labels":
            if entry.labels is not None:
                labels = self._labels
                if labels is None:
                    labels = self._labels = _ReadOnlyStrings(entry.labels)
                return labels
        else:
            attribute = _HELD.get(key)
            if attribute is not None:
                held = getattr(entry, attribute)
                if held is not None:
                    if not held:  # held, and the object has no such field
                        raise KeyError(key)
                    return self._decoded(key, held)
        return self._decoded(key)

    def __contains__(self, key: object) -> bool:
        entry = self._entry
        if (
            (key == "name" and entry.name)
            or (key == "namespace" and entry.namespace)
            or (key == "resourceVersion" and entry.resource_version)
            or (key == "labels" and entry.labels is not None)
        ):
            return True
        attribute = _HELD.get(key) if type(key) is str else None
        if attribute is not None:
            held = getattr(entry, attribute)
            if held is not None:
                return bool(held)
        return key in self._split()

    def __bool__(self) -> bool:
        return bool(self._entry.name) or bool(self._split())

    def __repr__(self) -> str:
        entry = self._entry
        return f"MetadataView(namespace={entry.namespace!r}, name={entry.name!r})"


class ObjectView(_LazyObject):
    """A read-only view of one object in a compact cache (see the module notes).

    A ``Mapping``: ``obj["spec"]``, ``obj.get("status")``, ``"spec" in obj``, iteration
    and ``len`` work as on the decoded dict, and a view equals a mapping of the same
    content. ``obj["metadata"]``'s name, namespace, resourceVersion and labels, ``kind``
    and ``apiVersion`` are read from the entry without decoding; any other field is
    decoded on its first read and kept for this view's life. Decoded parts are read-only
    ``dict``/``list`` subclasses. :meth:`to_dict` (or ``copy.deepcopy``) gives a plain
    copy to change, :meth:`to_json` the object's JSON bytes.
    """

    __slots__ = ("_entry", "_metadata")

    def __init__(self, entry: CompactEntry) -> None:
        self._fields = None
        self._values = None
        self._entry = entry
        self._metadata: MetadataView | None = None

    @property
    def entry(self) -> CompactEntry:
        """The cache entry this view reads."""
        return self._entry

    def _raw(self) -> bytes:
        return self._entry.raw

    def _split(self) -> dict[str, msgspec.Raw]:
        fields = self._fields
        if fields is None:
            entry = self._entry
            metadata = self._metadata
            if metadata is not None:
                # One split of the bytes for the view and its metadata, whichever came first.
                fields = self._fields = metadata._top_fields()
            else:
                fields = self._fields = FIELDS_DECODER.decode(entry.raw)
            if entry.add_type:
                # A LIST item: its kind and apiVersion are the list's.
                if "apiVersion" not in fields and entry.api_version:
                    fields["apiVersion"] = msgspec.Raw(orjson.dumps(entry.api_version))
                if "kind" not in fields and entry.kind:
                    fields["kind"] = msgspec.Raw(orjson.dumps(entry.kind))
        return fields

    def __getitem__(self, key: str) -> Any:
        if key == "metadata":
            metadata = self._metadata
            if metadata is None and self._entry.name:
                metadata = self._metadata = MetadataView(self._entry, self._fields)
            if metadata is not None:
                return metadata
        elif not self._entry.add_type:
            # The head read both (and found them strings) when the object had them.
            if key == "kind":
                return self._entry.kind
            if key == "apiVersion":
                return self._entry.api_version
        return self._decoded(key)

    def __contains__(self, key: object) -> bool:
        entry = self._entry
        if (key == "metadata" and entry.name) or (
            not entry.add_type and (key == "kind" or key == "apiVersion")
        ):
            return True
        return key in self._split()

    def __bool__(self) -> bool:
        return bool(self._entry.name) or bool(self._split())

    def to_dict(self) -> dict[str, Any]:
        return self._entry.decode()

    def to_json(self) -> bytes:
        """The object's JSON, as the server sent it (with the list's kind and apiVersion
        added for a LIST item)."""
        entry = self._entry
        return orjson.dumps(entry.decode()) if entry.add_type else entry.raw

    def __repr__(self) -> str:
        # Never the content: the object may be a Secret.
        entry = self._entry
        return (
            f"ObjectView(kind={entry.kind!r}, key={entry.key!r}, "
            f"resource_version={entry.resource_version!r})"
        )


def view_of(entry: Any) -> Any:
    """What a reader gets for a cached entry: an :class:`ObjectView` of a
    :class:`~aioinformer._objects.raw.CompactEntry`, anything else as it is."""
    return ObjectView(entry) if type(entry) is CompactEntry else entry


def json_default(value: Any) -> Any:
    """The ``default=`` that lets ``orjson.dumps`` or ``json.dumps`` encode a view (or any
    other ``Mapping``) as the object it shows."""
    if isinstance(value, _LazyObject):
        return value.to_dict()
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")
