"""The compact cache's side of the informer's pipeline.

Role: what :class:`~aioinformer.informer.SharedIndexInformer` does differently when its
cache is compact (``cache="compact"``, the default): its source lists and watches
:class:`~aioinformer._raw.RawObject` entries when it can (:func:`compact_source`), its
transform sees decoded objects (:func:`compact_transform`), its pop task stores entries and
hands each event's objects to the handlers wrapped in one
:class:`~aioinformer._raw.SharedDecode` (:func:`apply_deltas`), and each handler unwraps
them as it needs (:func:`handler_converter`): the decoded object, or only the key
(:func:`notified_key`). The ``"objects"`` cache's counterpart of :func:`apply_deltas`,
:func:`apply_object_deltas`, sits next to it so that the two stay in step.

Input: Deltas popped from the DeltaFIFO, holding RawObjects (from a compact source),
decoded dicts (from any other source, or a transform) or other objects (a transform's
models), and tombstones. Output: writes to a
:class:`~aioinformer.indexer.CompactIndexer` and notifications whose objects are
``SharedDecode`` wrappers or tombstones holding one.

Ordering: the deltas of one key are applied and distributed in order, exactly as the
``"objects"`` path does; only what travels to the handlers differs.

Task model: synchronous functions run by the informer's pop task (and by handler tasks,
for the unwrapping); nothing here suspends.
"""

from __future__ import annotations

import weakref
from collections import deque
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from aioinformer._meta import meta_namespace_key, same_resource_version
from aioinformer._raw import READS_RAW, RawObject, SharedDecode
from aioinformer.delta_fifo import DeltaType
from aioinformer.listwatch import DescribedListerWatcher, SourceInfo, source_info
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.processor import ADD, DELETE, UPDATE, Notification

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer.delta_fifo import Deltas
    from aioinformer.indexer import CompactIndexer, Indexer
    from aioinformer.listwatch import ListerWatcher, ListOptions, ObjectList

__all__ = [
    "DECODE_WINDOW",
    "CacheMode",
    "DecodeWindow",
    "apply_deltas",
    "apply_object_deltas",
    "compact_source",
    "compact_transform",
    "handler_converter",
    "notified_key",
]

CacheMode: TypeAlias = Literal["compact", "objects"]
"""How an informer keeps its cache: ``"compact"`` (each object's JSON bytes and head,
decoded on read; the collector never walks it) or ``"objects"`` (the decoded dicts)."""

_DELETED: Final = DeltaType.DELETED


class _CompactSource(DescribedListerWatcher):
    """A source that has ``list_compact``/``watch_compact`` (the real client's resources),
    presented as a ``ListerWatcher`` whose items and events are RawObjects, declaring
    what the source declares."""

    __slots__ = ("_source",)

    def __init__(self, source: Any) -> None:
        self._source = source

    def describe(self) -> SourceInfo:
        return source_info(self._source)

    async def list(self, options: ListOptions) -> ObjectList:
        page: ObjectList = await self._source.list_compact(options)
        return page

    def watch(self, options: ListOptions) -> Any:
        return self._source.watch_compact(options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)

    def __repr__(self) -> str:
        return f"<compact {self._source!r}>"


def compact_source(source: ListerWatcher) -> ListerWatcher:
    """``source`` reading RawObjects when it can; otherwise ``source`` itself, whose
    decoded dicts the pop task encodes as it stores them."""
    if callable(getattr(source, "list_compact", None)) and callable(
        getattr(source, "watch_compact", None)
    ):
        return _CompactSource(source)
    return source


def compact_transform(transform: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``transform`` applied to decoded objects: a RawObject is decoded for it, and what
    it returns is stored as it is returned (a dict is encoded by the pop task). A
    transform marked as accepting RawObjects (:data:`~aioinformer._raw.READS_RAW`, as
    those of :mod:`aioinformer.transforms` are) gets them as they are."""

    if getattr(transform, READS_RAW, False):
        return transform

    def on_decoded(obj: Any) -> Any:
        return transform(obj.decode() if type(obj) is RawObject else obj)

    return on_decoded


def _materialize(obj: Any) -> Any:
    """What a handler receives for a notified object: the (shared) decoded object, or a
    tombstone holding it."""
    kind = type(obj)
    if kind is SharedDecode:
        return obj.get()
    if kind is DeletedFinalStateUnknown:
        inner = obj.obj
        if type(inner) is SharedDecode:
            return DeletedFinalStateUnknown(obj.key, inner.get())
        if type(inner) is RawObject:
            return DeletedFinalStateUnknown(obj.key, inner.decode())
        return obj
    if kind is RawObject:
        return obj.decode()
    return obj


def _notified_key(obj: Any) -> str:
    if type(obj) is SharedDecode:
        obj = obj.entry
    return meta_namespace_key(obj)


def notified_key(cache: CacheMode) -> Callable[[Any], str]:
    """The key of a notified object in a ``cache`` informer, never decoding it (for
    ``keys_only`` handlers, and coalescing queues)."""
    return _notified_key if cache == "compact" else meta_namespace_key


def handler_converter(
    cache: CacheMode, *, keys_only: bool, to_model: Callable[[Any], Any] | None
) -> Callable[[Any], Any] | None:
    """What a handler's listener applies to each notified object before delivery:
    nothing, the key, the decoded object and/or the model (``to_model``)."""
    if keys_only:
        return notified_key(cache)
    if cache == "objects":
        return to_model
    if to_model is None:
        return _materialize
    validate = to_model
    return lambda obj: validate(_materialize(obj))


def _wrap_deleted(obj: Any, window: DecodeWindow) -> Any:
    if type(obj) is DeletedFinalStateUnknown:
        inner = obj.obj
        if type(inner) is RawObject:
            return DeletedFinalStateUnknown(obj.key, SharedDecode(inner, window=window))
        return obj
    return SharedDecode(obj, window=window)


DECODE_WINDOW: Final = 512
"""How many newer decodes a shared decode outlives while a handler still holds it: once
this many more objects have been decoded for the handlers, an older wrapper forgets its
decode, and a handler lagging that far decodes for itself. Handlers that keep up share
every decode: a handler's turn delivers at most 256 notifications (the processor's
batch), so the others reach each decode well within the window. The window holds its
wrappers weakly: a decode every handler is done with dies with its notification, young,
before the collector promotes it; only a lagging handler's are bounded by the window.
Counting decodes rather than events keeps this true however many events the pop task
hands over at once."""


class DecodeWindow:
    """The :class:`~aioinformer._raw.SharedDecode` wrappers that decoded last, oldest
    first, held weakly; one more past :data:`DECODE_WINDOW` makes the oldest forget its
    decode, if a handler still holds it."""

    __slots__ = ("_recent",)

    def __init__(self) -> None:
        self._recent: deque[weakref.ref[SharedDecode]] = deque()

    def add(self, shared: SharedDecode) -> SharedDecode:
        recent = self._recent
        recent.append(weakref.ref(shared))
        if len(recent) > DECODE_WINDOW:
            oldest = recent.popleft()()
            if oldest is not None:
                oldest.forget()
        return shared


def apply_deltas(
    deltas: Deltas,
    indexer: CompactIndexer,
    distribute: Callable[[Notification, bool], None],
    window: DecodeWindow,
    *,
    is_in_initial_list: bool,
) -> None:
    """Apply one key's deltas to a compact cache and distribute the notifications (the
    compact form of the informer's ``_handle_deltas``: same notifications, in the same
    order, with each object wrapped for a shared decode that ``window`` bounds)."""
    first = deltas[0].object
    key = first.key if type(first) is DeletedFinalStateUnknown else meta_namespace_key(first)
    old = indexer.entry_by_key(key)
    put = indexer.put_entry
    for delta in deltas:
        obj = delta.object
        if delta.type is _DELETED:
            indexer.delete_by_key(key)
            distribute(Notification(DELETE, _wrap_deleted(obj, window), None), False)
            old = None
            continue
        kind = type(obj)
        if kind is RawObject:
            entry = obj
            shared = SharedDecode(obj, window=window)
        elif kind is dict:
            # From a source of dicts or a transform: the handlers get this very dict.
            entry = RawObject.from_dict(obj)
            shared = SharedDecode(entry, obj, window=window)
        else:
            entry = obj
            shared = SharedDecode(obj)
        put(key, entry, shared)
        if old is None:
            distribute(Notification(ADD, shared, is_in_initial_list), False)
        else:
            if old is entry:
                # A resync re-delivers the cached entry: one decode serves old and new.
                distribute(Notification(UPDATE, shared, shared), True)
                continue
            if type(old) is RawObject and type(entry) is RawObject:
                is_sync = old.resource_version == entry.resource_version
            else:
                is_sync = same_resource_version(old, entry)
            distribute(Notification(UPDATE, SharedDecode(old, window=window), shared), is_sync)
        old = entry


def apply_object_deltas(
    deltas: Deltas,
    indexer: Indexer[Any],
    distribute: Callable[[Notification, bool], None],
    *,
    is_in_initial_list: bool,
) -> None:
    """Apply one key's deltas to an ``"objects"`` cache and distribute the notifications,
    the cached objects themselves. All the deltas share one key, so it is computed and the
    cached object looked up once: each delta's "old" is what the previous one stored."""
    first = deltas[0].object
    key = first.key if type(first) is DeletedFinalStateUnknown else meta_namespace_key(first)
    old = indexer.get_by_key(key)
    put = indexer.put_by_key
    delete = indexer.delete_by_key
    for delta in deltas:
        obj = delta.object
        if delta.type is _DELETED:
            delete(key)
            distribute(Notification(DELETE, obj, None), False)
            old = None
        elif old is not None:
            put(key, obj)
            try:
                is_sync = old["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
            except (KeyError, TypeError):  # not raw dicts, or no resourceVersion
                is_sync = same_resource_version(old, obj)
            distribute(Notification(UPDATE, old, obj), is_sync)
            old = obj
        else:
            put(key, obj)
            distribute(Notification(ADD, obj, is_in_initial_list), False)
            old = obj
