"""How an informer's pipeline represents objects: one :class:`Codec`, chosen once.

Role: the one seam between the pipeline and the two ways an informer can keep its cache.
:class:`ObjectsCodec` (``cache="objects"``) keeps the decoded ``dict`` of each object, as
client-go keeps its objects; :class:`CompactCodec` (``cache="compact"``, the default) keeps
each object's JSON bytes beside the few fields the pipeline reads
(:class:`~aioinformer._objects.raw.CompactEntry`), which the cyclic collector never
walks, and decodes on read. Everything that depends on the representation is a method here:

* decoding: a LIST body (:meth:`Codec.decode_list`) and one watch line
  (:meth:`Codec.decode_event`), for a source that decodes with the codec (a
  :class:`~aioinformer.client.ResourceClient` through
  :meth:`~aioinformer.listwatch.DescribedListerWatcher.decoded_with`), and how many decoded
  events are handed on at a time (:attr:`Codec.event_batch`): a codec is the
  :class:`~aioinformer.listwatch.Decoder` such a source is given, and inherits these from
  the decoder of its representation in :mod:`aioinformer._objects.raw`, which the client
  uses without knowing the cache;
* the cache: what is stored for an object from any source (:meth:`Codec.entry`, which
  encodes a dict for the compact cache), the head a reader checks (:meth:`Codec.head`),
  the store (:meth:`Codec.new_indexer`: its reads are what a lister returns);
* delivery: what a notification carries (:meth:`Codec.carry`,
  :meth:`Codec.carry_deleted`), what a handler receives (:meth:`Codec.handler_converter`:
  for the compact cache, a read-only :class:`~aioinformer._objects.view.ObjectView` per
  call) and the key of a carried object without decoding it (:meth:`Codec.carried_key`);
* transforms: :meth:`Codec.wrap_transform` hands a user's transform decoded objects, or
  the entries themselves to a transform that edits bytes, and checks that what a user's
  transform returns is an object to cache (:class:`~aioinformer.errors.TransformError`
  otherwise).

Input: bytes from a source, objects from a source of dicts, entries from the cache.
Output: entries, notification payloads, handler arguments.

No stage of the pipeline tells the two representations apart: the reflector, the FIFOs,
the informer and the processor ask the codec. What still checks an object's type does so
because it is a function a user hands the pipeline or calls on what it got, which sees
whatever the informer's cache holds and has no codec to ask:

* the metadata accessors (:mod:`aioinformer._objects.meta`), a dict, a model, an entry or a
  view alike, and the compact store (:class:`~aioinformer.indexer.CompactIndexer`), whose
  reads wrap its entries in views;
* the shipped index functions (:func:`~aioinformer.indexer.namespace_index_func` and the
  label index's), which read an entry's head, so the default index never decodes one;
* the shipped transforms (:func:`~aioinformer.transforms.strip_managed_fields`,
  :func:`~aioinformer.transforms.keep_metadata_only`), which edit an entry's bytes
  without decoding them;
* a typed informer's model guard (``_pipeline/model_guard.py``), which validates a view
  from one decode of the whole object;
* the operator's edits of an object (finalizers, owner references), which refuse a
  read-only view with :class:`~aioinformer.errors.ReadOnlyObjectError`.

Task model: pure functions, run by the task that calls them; a codec holds no state.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias

from aioinformer._objects.meta import meta_namespace_key, same_resource_version
from aioinformer._objects.raw import (
    DICT_BATCH,
    READS_RAW,
    CompactDecoder,
    CompactEntry,
    ObjectsDecoder,
)
from aioinformer._objects.view import ObjectView
from aioinformer.errors import KeyFuncError, TransformError
from aioinformer.indexer import CompactIndexer, Indexer, IndexFunc
from aioinformer.models import DeletedFinalStateUnknown

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from aioinformer.listwatch import ObjectList, WatchEvent

__all__ = [
    "CacheMode",
    "Codec",
    "CompactCodec",
    "DICT_BATCH",
    "Head",
    "OBJECTS",
    "ObjectsCodec",
    "codec_for",
    "head_of",
]

CacheMode: TypeAlias = Literal["compact", "objects"]
"""How an informer keeps its cache: ``"compact"`` (each object's JSON bytes and head,
decoded on read; the collector never walks it) or ``"objects"`` (the decoded dicts)."""

Head: TypeAlias = tuple[Any, Any, str]
"""What a reader checks of a watch event's object: ``(kind, apiVersion, resourceVersion)``
(the first two ``None`` when absent)."""


class Codec(abc.ABC):
    """How one informer's pipeline represents objects (see the module notes)."""

    __slots__ = ()

    cache: ClassVar[CacheMode]
    """The ``cache=`` an informer is given for this codec."""
    event_batch: ClassVar[int | None]
    """How many decoded events a reader hands on at a time; ``None``: a whole read."""

    # -- decoding (the client's Decoder, inherited from _objects.raw's decoders) ------

    @abc.abstractmethod
    def decode_list(self, body: bytes, *, kind: str, api_version: str) -> ObjectList:
        """See :meth:`aioinformer.listwatch.Decoder.decode_list`."""

    @abc.abstractmethod
    def decode_event(self, line: bytes) -> WatchEvent | None:
        """See :meth:`aioinformer.listwatch.Decoder.decode_event`."""

    # -- the cache ----------------------------------------------------------------------

    @abc.abstractmethod
    def entry(self, obj: Any) -> Any:
        """What the cache stores for ``obj``, which came from a source or a transform."""

    @abc.abstractmethod
    def key(self, obj: Any) -> str:
        """The cache key of an object or entry (``namespace/name``, or ``name``); raises
        :class:`~aioinformer.errors.KeyFuncError` when it has no name."""

    @abc.abstractmethod
    def head(self, obj: Any) -> Head | None:
        """An event object's kind, apiVersion and resourceVersion; ``None`` when it has
        no usable resourceVersion."""

    @abc.abstractmethod
    def new_indexer(
        self, indexers: Mapping[str, IndexFunc] | None, *, strict: bool = False
    ) -> Indexer[Any]:
        """The store for this representation (its reads are what a lister returns);
        ``strict``: a failing index function refuses the write (see
        :class:`~aioinformer.indexer.Indexer`)."""

    @abc.abstractmethod
    def same_version(self, old: Any, new: Any) -> bool:
        """Whether two entries of one object carry the same resourceVersion (an update
        between them is a resync)."""

    # -- delivery -------------------------------------------------------------------------

    @abc.abstractmethod
    def carry(self, entry: Any, obj: Any = None) -> Any:
        """What a notification carries for ``entry`` (``obj``: the object it was made
        from, when that is what handlers should get as it is)."""

    @abc.abstractmethod
    def carry_deleted(self, obj: Any) -> Any:
        """What a delete notification carries for a deleted object or tombstone."""

    @abc.abstractmethod
    def handler_converter(
        self, *, keys_only: bool, to_model: Callable[[Any], Any] | None
    ) -> Callable[[Any], Any] | None:
        """What a handler's listener applies to each carried object before delivery:
        nothing, the key, the decoded object and/or the model (``to_model``)."""

    @abc.abstractmethod
    def carried_key(self, carried: Any) -> str:
        """The key of a carried object, never decoding it."""

    @abc.abstractmethod
    def wrap_transform(self, transform: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``transform`` as the FIFO applies it to what a source hands over. What a
        transform of the user's returns must have a key (a mapping with
        ``metadata.name``, or a model): anything else (``None``, a list, a ``str``) raises
        :class:`~aioinformer.errors.TransformError` naming the transform and the key of
        the object it was given, and an exception it raises carries a note naming both.
        The FIFO's producer then fails as for any failing transform: a watch event is
        skipped (and logged), a list fails and is retried."""


class ObjectsCodec(ObjectsDecoder, Codec):
    """Decoded dicts everywhere: sources' objects are cached, carried and handed over as
    they are (to be treated as read-only), as client-go does."""

    __slots__ = ()

    cache: ClassVar[CacheMode] = "objects"

    def entry(self, obj: Any) -> Any:
        return obj

    def key(self, obj: Any) -> str:
        return meta_namespace_key(obj)

    def head(self, obj: Any) -> Head | None:
        try:
            return obj.get("kind"), obj.get("apiVersion"), obj["metadata"]["resourceVersion"]
        except (KeyError, TypeError, AttributeError):
            return None

    def new_indexer(
        self, indexers: Mapping[str, IndexFunc] | None, *, strict: bool = False
    ) -> Indexer[Any]:
        return Indexer(meta_namespace_key, indexers, strict=strict)

    def same_version(self, old: Any, new: Any) -> bool:
        return same_resource_version(old, new)

    def carry(self, entry: Any, obj: Any = None) -> Any:
        return entry

    def carry_deleted(self, obj: Any) -> Any:
        return obj

    def handler_converter(
        self, *, keys_only: bool, to_model: Callable[[Any], Any] | None
    ) -> Callable[[Any], Any] | None:
        return meta_namespace_key if keys_only else to_model

    def carried_key(self, carried: Any) -> str:
        return meta_namespace_key(carried)

    def wrap_transform(self, transform: Callable[[Any], Any]) -> Callable[[Any], Any]:
        if getattr(transform, READS_RAW, False):
            return transform  # one of aioinformer.transforms: returns what it is given
        return _checked(transform, transform, meta_namespace_key)


class CompactCodec(CompactDecoder, Codec):
    """Each object's JSON bytes and head (:class:`~aioinformer._objects.raw.CompactEntry`) in
    the cache and in every notification; each handler call, like each lister read, gets its
    own read-only :class:`~aioinformer._objects.view.ObjectView` of the entry, which decodes
    only the fields it is asked for and dies with the call. Objects from a source of dicts
    (or a transform) are encoded as they are stored."""

    __slots__ = ()

    cache: ClassVar[CacheMode] = "compact"

    def entry(self, obj: Any) -> Any:
        # From a source of dicts or a transform: encoded here; anything but a dict (a
        # transform's model) is kept as it is.
        return CompactEntry.from_dict(obj) if type(obj) is dict else obj

    def key(self, obj: Any) -> str:
        if type(obj) is CompactEntry and obj.key:
            return obj.key
        return meta_namespace_key(obj)

    def head(self, obj: Any) -> Head | None:
        return head_of(obj)

    def new_indexer(
        self, indexers: Mapping[str, IndexFunc] | None, *, strict: bool = False
    ) -> Indexer[Any]:
        return CompactIndexer(meta_namespace_key, indexers, strict=strict)

    def same_version(self, old: Any, new: Any) -> bool:
        if type(old) is CompactEntry and type(new) is CompactEntry:
            return old.resource_version == new.resource_version
        return same_resource_version(old, new)

    def carry(self, entry: Any, obj: Any = None) -> Any:
        # The entry itself: each handler makes its own view of it, so no decode outlives
        # the call that made it.
        return entry

    def carry_deleted(self, obj: Any) -> Any:
        if type(obj) is dict:
            return CompactEntry.from_dict(obj)
        if type(obj) is DeletedFinalStateUnknown and type(obj.obj) is dict:
            return DeletedFinalStateUnknown(obj.key, CompactEntry.from_dict(obj.obj))
        return obj

    def handler_converter(
        self, *, keys_only: bool, to_model: Callable[[Any], Any] | None
    ) -> Callable[[Any], Any] | None:
        if keys_only:
            return self.carried_key
        if to_model is None:
            return _materialize
        validate = to_model
        # The model guard validates a view from one decode of its entry.
        return lambda obj: validate(_materialize(obj))

    def carried_key(self, carried: Any) -> str:
        if type(carried) is CompactEntry and carried.key:
            return carried.key
        return meta_namespace_key(carried)

    def wrap_transform(self, transform: Callable[[Any], Any]) -> Callable[[Any], Any]:
        # A transform marked as taking CompactEntry objects (those of aioinformer.transforms) edits
        # the bytes; any other gets decoded objects, and what it returns is stored as it
        # is returned (a dict is encoded as it is stored).
        if getattr(transform, READS_RAW, False):
            return transform

        def on_decoded(obj: Any) -> Any:
            return transform(obj.decode() if type(obj) is CompactEntry else obj)

        return _checked(on_decoded, transform, self.key, encodes=True)


def _checked(
    apply: Callable[[Any], Any],
    transform: Callable[[Any], Any],
    key: Callable[[Any], str],
    *,
    encodes: bool = False,
) -> Callable[[Any], Any]:
    """``apply`` (which calls the user's ``transform``), raising
    :class:`~aioinformer.errors.TransformError` when what it returns has no ``key`` or,
    with ``encodes`` (the compact cache, which stores a dict as its JSON), is a dict that
    does not encode, and noting the transform and the key on an exception it raises.

    With ``encodes``, a dict returned is encoded here, into the entry the store keeps, in
    the FIFO's producer: a dict that failed to encode in the pop task could only be
    dropped there, after the informer reported synced."""
    name = str(getattr(transform, "__qualname__", None) or transform)

    def key_before(obj: Any) -> str:
        try:
            return key(obj)
        except KeyFuncError:
            return "an object without metadata.name"

    def transformed(obj: Any) -> Any:
        try:
            result = apply(obj)
        except Exception as exc:
            exc.add_note(f"raised by transform {name} on {key_before(obj)}")
            raise
        try:
            key(result)
        except KeyFuncError:
            raise TransformError(name, key_before(obj), result) from None
        if encodes and type(result) is dict:
            try:
                return CompactEntry.from_dict(result)
            except TypeError as exc:
                raise TransformError(name, key_before(obj), result, unencodable=str(exc)) from None
        return result

    transformed.__qualname__ = transformed.__name__ = f"checked({name})"
    return transformed


OBJECTS: Final = ObjectsCodec()
"""The objects codec, which holds no state: what decodes for a caller that gives none."""


def _materialize(obj: Any) -> Any:
    """What a handler receives for a carried object: a view of an entry, or a tombstone
    holding one."""
    kind = type(obj)
    if kind is CompactEntry:
        return ObjectView(obj)
    if kind is DeletedFinalStateUnknown:
        inner = obj.obj
        if type(inner) is CompactEntry:
            return DeletedFinalStateUnknown(obj.key, ObjectView(inner))
    return obj


def head_of(obj: Any) -> Head | None:
    """:meth:`Codec.head` for an object of either representation: what a reader that does
    not know its source's codec checks."""
    if type(obj) is CompactEntry:
        rv = obj.resource_version
        return (obj.kind, obj.api_version, rv) if rv else None
    return OBJECTS.head(obj)


def codec_for(cache: CacheMode) -> Codec:
    """A codec for ``cache``."""
    if cache == "compact":
        return CompactCodec()
    if cache == "objects":
        return ObjectsCodec()
    raise ValueError(f"cache must be 'compact' or 'objects', got {cache!r}")
