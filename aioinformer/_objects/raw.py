"""The compact representation of a cached object: its JSON bytes beside the fields the
pipeline reads.

Role: what a compact cache (``cache="compact"``, see :mod:`aioinformer.informer`) stores
instead of a decoded ``dict``. A :class:`CompactEntry` holds the object's JSON exactly as it
came off the wire (one item of a LIST body, or the ``object`` of a watch line) and the few
fields every stage needs without decoding it: the store key, namespace, name,
resourceVersion, kind, apiVersion and labels. Beside them it holds where in those bytes
the metadata user code reads most lies (uid, generation, deletionTimestamp, annotations,
finalizers, ownerReferences: a ``msgspec.Raw`` over each value, which copies nothing), so
that reading one decodes a few bytes rather than splitting the whole object. ``decode()``
turns it into a fresh ``dict`` each time it is called; what user code gets for one is a
read-only view of it (:mod:`aioinformer._objects.view`).

Why: CPython's cyclic collector walks every container that is alive, and a decoded Pod is
hundreds of them. A cache of decoded objects is walked by every full collection, and
because each update replaces an old object with a young one, full collections keep coming.
A ``CompactEntry`` is an untracked msgspec struct holding bytes, strings and (at most) a dict
of strings, none of which the collector tracks, so a cache of them costs the collector
nothing however large it grows, and its bytes are a fraction of the decoded dict's size.

Input: a LIST body (:func:`decode_list`), one watch line (:func:`decode_watch_line`), or
an already decoded ``dict`` (:meth:`CompactEntry.from_dict`, for sources that produce dicts).
Output: ``CompactEntry`` items and events, decoded with msgspec reading only the head of each
object (what readers get for an entry is a view of it: :mod:`aioinformer._objects.view`).

The two :class:`~aioinformer.listwatch.Decoder` implementations a source reads bytes
through live here too: :class:`CompactDecoder` (these entries) and :class:`ObjectsDecoder`
(plain dicts, the REST client's default), so that the client decodes without importing the
cache; the codecs of :mod:`aioinformer.codec` are built on them.

Ordering and task model: pure, synchronous functions; nothing here suspends or keeps
state. A ``CompactEntry`` is immutable, so it may be shared between the cache, the DeltaFIFO
and handler queues.
"""

from __future__ import annotations

from sys import intern
from typing import Any, ClassVar, Final

import msgspec
import orjson

from aioinformer.errors import KeyFuncError
from aioinformer.listwatch import ObjectList, WatchEvent

__all__ = [
    "DICT_BATCH",
    "FIELDS_DECODER",
    "OBJECTS_DECODER",
    "READS_RAW",
    "CompactDecodeError",
    "ListBody",
    "ObjectsDecoder",
    "CompactDecoder",
    "CompactEntry",
    "decode_list",
    "decode_watch_line",
    "without_fields",
]


class CompactDecodeError(ValueError):
    """A body or line is not the JSON it should be; the message names what was wrong,
    never the content (it may hold a Secret)."""


class CompactEntry(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One cached object: its JSON bytes and the fields the pipeline reads.

    Immutable and invisible to the cyclic collector (every field is bytes, a string or a
    dict of strings, which never form a cycle). ``key`` is ``"namespace/name"`` (``"name"``
    when cluster-scoped), ``""`` when the object has no name.
    """

    raw: bytes
    """The object's JSON, as received (or as encoded from a decoded source)."""
    key: str
    name: str
    namespace: str
    resource_version: str
    kind: str
    api_version: str
    labels: dict[str, str] | None = None
    add_type: bool = False
    """True when ``raw`` lacks ``kind``/``apiVersion`` (LIST items do): :meth:`decode`
    adds ``kind`` and ``api_version``, as the decoding client does for a list."""
    # Held metadata fields: each the JSON of its value, a msgspec.Raw over ``raw`` (no
    # copy), empty when the object has no such field; ``None`` when it is not held (read
    # it from ``raw``), as for an object whose head is unusual or an entry made without.
    uid: msgspec.Raw | None = None
    generation: msgspec.Raw | None = None
    deletion_timestamp: msgspec.Raw | None = None
    annotations: msgspec.Raw | None = None
    finalizers: msgspec.Raw | None = None
    owner_references: msgspec.Raw | None = None

    def decode(self) -> dict[str, Any]:
        """A fresh ``dict`` of the object; the caller may keep or change it."""
        obj: dict[str, Any] = orjson.loads(self.raw)
        if self.add_type:
            if "apiVersion" not in obj and self.api_version:
                obj["apiVersion"] = self.api_version
            if "kind" not in obj and self.kind:
                obj["kind"] = self.kind
        return obj

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> CompactEntry:
        """Encode a decoded object (from a source that yields dicts, or a transform).

        Raises :class:`~aioinformer.errors.KeyFuncError` for an object without a usable
        ``metadata.name`` and ``TypeError`` for one orjson cannot encode.
        """
        meta = obj.get("metadata")
        if type(meta) is not dict:
            raise KeyFuncError(f"object has no metadata: kind={obj.get('kind')!r}")
        name = meta.get("name")
        if not name or type(name) is not str:
            raise KeyFuncError(f"object has no metadata.name: kind={obj.get('kind')!r}")
        raw = orjson.dumps(obj)  # first: it raises TypeError for what cannot be encoded
        try:
            head = _head_decoder.decode(raw)
        except _DecodeError:
            pass  # a head the strict decoder refuses: read from the dict below
        else:
            return _entry(raw, head)
        namespace = meta.get("namespace") or ""
        labels = meta.get("labels")
        if (
            type(labels) is not dict
            or not labels
            or not all(type(value) is str for value in labels.values())
        ):
            # The head holds labels only as strings; others are read from the bytes.
            labels = None
        kind = obj.get("kind")
        api_version = obj.get("apiVersion")
        return cls(
            raw=raw,
            key=f"{namespace}/{name}" if namespace else name,
            name=name,
            namespace=namespace,
            resource_version=_text(meta.get("resourceVersion")),
            kind=_text(kind),
            api_version=_text(api_version),
            labels=dict(labels) if labels is not None else None,
            # A kind or apiVersion that is absent (or not a string) is not in the head.
            add_type=type(kind) is not str or type(api_version) is not str,
        )

    def __repr__(self) -> str:
        # Never the bytes: the object may be a Secret.
        return (
            f"CompactEntry(kind={self.kind!r}, key={self.key!r}, "
            f"resource_version={self.resource_version!r}, {len(self.raw)} bytes)"
        )


def _text(value: Any) -> str:
    return value if type(value) is str else ""


# -- decoding: only the head of each object --------------------------------------------


# The heads are typed strictly: an object whose head does not fit (a number for a name,
# labels that are not strings) fails here and takes the careful path, which decodes it
# whole and reports or keeps it exactly as a dict-producing source would.


_NONE: Final = msgspec.Raw(b"")


class _Meta(msgspec.Struct, gc=False, rename="camel"):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""
    labels: dict[str, str] | None = None
    uid: msgspec.Raw = _NONE
    generation: msgspec.Raw = _NONE
    deletion_timestamp: msgspec.Raw = _NONE
    annotations: msgspec.Raw = _NONE
    finalizers: msgspec.Raw = _NONE
    owner_references: msgspec.Raw = _NONE


class _Head(msgspec.Struct, gc=False, rename="camel"):
    kind: str | None = None
    api_version: str | None = None
    metadata: _Meta | None = None


class _ShardInfo(msgspec.Struct, gc=False):
    selector: str | None = None


class _ListMeta(msgspec.Struct, gc=False, rename="camel"):
    resource_version: str = ""
    # The wire name; "continue" is a Python keyword.
    continue_: str | None = msgspec.field(default=None, name="continue")
    remaining_item_count: int | None = None
    shard_info: _ShardInfo | None = None


class _List(msgspec.Struct, gc=False, rename="camel"):
    kind: str | None = None
    api_version: str | None = None
    metadata: _ListMeta | None = None
    items: list[msgspec.Raw] | None = None


class _RawLine(msgspec.Struct, gc=False):
    type: str | None = None
    # Raw cannot be part of a union: an absent object is an empty Raw.
    object: msgspec.Raw = msgspec.Raw(b"")


_head_decoder: Final = msgspec.json.Decoder(_Head)
_list_decoder: Final = msgspec.json.Decoder(_List)
_raw_line_decoder: Final = msgspec.json.Decoder(_RawLine)
_DecodeError: Final = msgspec.DecodeError


def _entry(
    raw: bytes, head: _Head, *, default_kind: str = "", default_api_version: str = ""
) -> CompactEntry:
    """The entry for ``raw`` whose head is ``head``, decoded from ``raw`` itself (its
    held fields are views into it, so anything else would keep other bytes alive);
    kind/apiVersion absent from it are taken from the defaults (a LIST's items)."""
    meta = head.metadata
    if meta is None:
        name = namespace = resource_version = ""
        labels = None
        uid = generation = deletion_timestamp = annotations = finalizers = owners = None
    else:
        name = meta.name
        namespace = meta.namespace
        resource_version = meta.resource_version
        labels = meta.labels or None
        # Views into ``raw``, which the head was decoded from (an absent field is the
        # shared empty default).
        uid = meta.uid
        generation = meta.generation
        deletion_timestamp = meta.deletion_timestamp
        annotations = meta.annotations
        finalizers = meta.finalizers
        owners = meta.owner_references
    kind = head.kind
    api_version = head.api_version
    add_type = False
    if kind is None or api_version is None:
        add_type = True
        kind = kind if kind is not None else default_kind
        api_version = api_version if api_version is not None else default_api_version
    # Namespaces, kinds and apiVersions repeat across a cache: one string each.
    namespace = intern(namespace)
    return CompactEntry(
        raw=raw,
        key=(f"{namespace}/{name}" if namespace else name) if name else "",
        name=name,
        namespace=namespace,
        resource_version=resource_version,
        kind=intern(kind),
        api_version=intern(api_version),
        labels=labels,
        add_type=add_type,
        uid=uid,
        generation=generation,
        deletion_timestamp=deletion_timestamp,
        annotations=annotations,
        finalizers=finalizers,
        owner_references=owners,
    )


class ListBody(msgspec.Struct, frozen=True, gc=False):
    """One decoded LIST page: compact items and the list's metadata."""

    items: list[Any]
    """:class:`CompactEntry` items (a ``dict`` for an item whose head is unusual)."""
    resource_version: str
    continue_: str | None
    remaining_item_count: int | None
    kind: str
    """The item kind (the list's kind without ``List``); ``""`` when unnamed."""
    api_version: str
    shard_selector: str | None = None
    """The shard selector the server says it applied (``metadata.shardInfo.selector``)."""


def decode_list(body: bytes, *, kind: str = "", api_version: str = "") -> ListBody:
    """Decode a LIST answer into compact items; ``kind``/``api_version`` are the
    resource's, used when the list does not name them.

    Raises :class:`CompactDecodeError` for a body that is not a JSON object with a list of
    object ``items``.
    """
    try:
        page = _list_decoder.decode(body)
    except _DecodeError as error:
        raise CompactDecodeError(f"the list is not of the expected shape: {error}") from None
    list_kind = page.kind or ""
    item_kind = list_kind[:-4] if list_kind.endswith("List") else kind
    item_api_version = page.api_version or api_version
    decode_head = _head_decoder.decode
    items: list[CompactEntry] = []
    append = items.append
    for item in page.items or ():
        # Copied out of the body first: the head's held fields are views into what it is
        # decoded from, and must not keep the whole body alive.
        raw = bytes(item)
        try:
            head = decode_head(raw)
        except _DecodeError:
            append(_odd_item(raw, item_kind, item_api_version))
            continue
        append(_entry(raw, head, default_kind=item_kind, default_api_version=item_api_version))
    meta = page.metadata
    return ListBody(
        items=items,
        resource_version=meta.resource_version if meta is not None else "",
        continue_=(meta.continue_ or None) if meta is not None else None,
        remaining_item_count=meta.remaining_item_count if meta is not None else None,
        kind=item_kind,
        api_version=item_api_version,
        shard_selector=_applied_shards(meta),
    )


def _applied_shards(meta: _ListMeta | None) -> str | None:
    info = meta.shard_info if meta is not None else None
    return (info.selector or None) if info is not None else None


def _odd_item(raw: bytes, kind: str, api_version: str) -> Any:
    """An item whose head does not fit the usual shape, decoded whole: the store then
    judges it as it judges any decoded object."""
    item = orjson.loads(raw)
    if type(item) is not dict:
        raise CompactDecodeError("a list item is not a JSON object")
    item.setdefault("apiVersion", api_version)
    item.setdefault("kind", kind)
    return item


_OBJECT_TYPES: Final = {b"ADDED": "ADDED", b"MODIFIED": "MODIFIED", b"DELETED": "DELETED"}
"""The event types that carry an object, by their bytes on the wire."""
_PREFIX: Final = b'{"type":"'
_OBJECT_KEY: Final = b'","object":'


def decode_watch_line(line: bytes | memoryview) -> tuple[str, Any] | None:
    """Decode one watch line whose type is ``ADDED``, ``MODIFIED`` or ``DELETED`` into
    ``(type, CompactEntry)``; ``None`` for any other line (a bookmark, an error, garbage),
    which the caller decodes the careful way.

    The usual line, ``{"type":"…","object":{…}}`` as kube-apiserver writes it, is read in
    one pass: its framing is checked byte by byte, the object is the slice between the two
    keys' framing and the line's closing brace, and its head is decoded from that slice
    (which must be one JSON object and nothing more). Any other spelling of the line
    decodes it as a raw value first, then the object's head.
    """
    data = bytes(line)
    if data.startswith(_PREFIX):
        closing = data.find(b'"', len(_PREFIX))
        kind = _OBJECT_TYPES.get(data[len(_PREFIX) : closing])
        if kind is not None and data.startswith(_OBJECT_KEY, closing):
            start = closing + len(_OBJECT_KEY)
            end = data.rfind(b"}")
            if end > start and not data[end + 1 :].strip():
                raw = data[start:end]
                try:
                    head = _head_decoder.decode(raw)
                except _DecodeError:
                    pass  # not one object between the framing: the careful spelling
                else:
                    return kind, _entry(raw, head)
    return _decode_watch_line_slowly(data)


def _decode_watch_line_slowly(line: bytes | memoryview) -> tuple[str, Any] | None:
    try:
        parsed = _raw_line_decoder.decode(line)
    except _DecodeError:
        return None
    kind = parsed.type
    if kind is None or kind not in _OBJECT_TYPES.values() or not parsed.object:
        return None
    raw = bytes(parsed.object)
    try:
        head = _head_decoder.decode(raw)
    except _DecodeError:
        return None  # not an object: the careful path reports the malformed event
    return kind, _entry(raw, head)


# -- editing an entry without decoding it -----------------------------------------------

READS_RAW: Final = "_aioinformer_reads_raw"
"""The attribute marking a transform that accepts a :class:`CompactEntry` as it is (and
returns one), so a compact informer hands it entries without decoding them."""

FIELDS_DECODER: Final = msgspec.json.Decoder(dict[str, msgspec.Raw])
"""Splits one JSON object into its fields, each value left as raw bytes."""
_encode: Final = msgspec.json.encode


def without_fields(
    entry: CompactEntry, *, metadata: tuple[str, ...] = (), keep: tuple[str, ...] | None = None
) -> CompactEntry:
    """``entry`` without the ``metadata`` fields named, and, with ``keep``, without every
    top-level field not named there; its head is unchanged.

    Only the two levels edited are parsed, into raw values copied back as they were, so
    no ``dict`` of the object is ever built. An entry whose bytes are not a JSON object
    with a ``metadata`` object is returned unchanged.
    """
    try:
        fields = FIELDS_DECODER.decode(entry.raw)
    except _DecodeError:
        return entry
    changed = False
    if keep is not None:
        kept = {name: value for name, value in fields.items() if name in keep}
        changed = len(kept) != len(fields)
        fields = kept
    if metadata and "metadata" in fields:
        try:
            meta = FIELDS_DECODER.decode(fields["metadata"])
        except _DecodeError:
            return entry
        if any(name in meta for name in metadata):
            for name in metadata:
                meta.pop(name, None)
            fields["metadata"] = msgspec.Raw(_encode(meta))
            changed = True
    if not changed:
        return entry
    raw = _encode(fields)
    try:
        head = _head_decoder.decode(raw)
    except _DecodeError:
        # The held fields were views into the old bytes: none is held for the new ones.
        return msgspec.structs.replace(
            entry,
            raw=raw,
            uid=None,
            generation=None,
            deletion_timestamp=None,
            annotations=None,
            finalizers=None,
            owner_references=None,
        )
    # The same head, its held fields now views into the new bytes.
    return _entry(raw, head, default_kind=entry.kind, default_api_version=entry.api_version)


# -- the decoders a source reads bytes through (aioinformer.listwatch.Decoder) -----------

DICT_BATCH: Final = 4
"""Events decoded into dicts are handed on this many at a time (a compact stream hands on
a whole read): each dict is a few hundred objects the cyclic collector tracks, and the
fewer are alive at once, the younger they die. Handing a read of 50 Pods on at once
instead makes every one outlive a young collection, and the collector then promotes the
whole cache to the oldest generation (measured: 4k events/s that way, 17k this way, on
10k cached Pods)."""


class ObjectsDecoder:
    """Decodes a source's bytes into ``dict`` objects, as a client without a cache does
    (the REST client's default, and the objects cache's codec)."""

    __slots__ = ()

    event_batch: ClassVar[int | None] = DICT_BATCH

    def decode_list(self, body: bytes, *, kind: str, api_version: str) -> ObjectList:
        data = orjson.loads(body)
        if type(data) is not dict:
            raise CompactDecodeError("the list is not a JSON object")
        items = data.get("items") or []
        if type(items) is not list:
            raise CompactDecodeError("the list's items are not a JSON array")
        list_api_version = data.get("apiVersion") or api_version
        list_kind = data.get("kind") or ""
        item_kind = list_kind[:-4] if list_kind.endswith("List") else kind
        for item in items:
            if type(item) is not dict:
                raise CompactDecodeError("a list item is not a JSON object")
            item.setdefault("apiVersion", list_api_version)
            item.setdefault("kind", item_kind)
        meta = data.get("metadata") or {}
        return ObjectList(
            items=items,
            resource_version=meta.get("resourceVersion") or "",
            continue_=meta.get("continue") or None,
            remaining_item_count=meta.get("remainingItemCount"),
            kind=item_kind or None,
            api_version=list_api_version,
            shard_selector=_shard_selector_of(meta),
        )

    def decode_event(self, line: bytes) -> WatchEvent | None:
        try:
            raw = orjson.loads(line)
            kind = raw["type"]
            obj = raw["object"]
        except (orjson.JSONDecodeError, TypeError, KeyError):
            return None
        if type(kind) is str and kind != "ERROR" and type(obj) is dict:
            return WatchEvent(kind, obj)
        return None


def _shard_selector_of(meta: dict[str, Any]) -> str | None:
    """A decoded list's ``metadata.shardInfo.selector``, ``None`` when it has none."""
    info = meta.get("shardInfo")
    selector = info.get("selector") if type(info) is dict else None
    return selector if type(selector) is str and selector else None


class CompactDecoder:
    """Decodes a source's bytes into :class:`CompactEntry` objects, reading only each
    object's head (the compact cache's codec)."""

    __slots__ = ()

    event_batch: ClassVar[int | None] = None

    def decode_list(self, body: bytes, *, kind: str, api_version: str) -> ObjectList:
        page = decode_list(body, kind=kind, api_version=api_version)
        return ObjectList(
            items=page.items,
            resource_version=page.resource_version,
            continue_=page.continue_,
            remaining_item_count=page.remaining_item_count,
            kind=page.kind or None,
            api_version=page.api_version,
            shard_selector=page.shard_selector,
        )

    def decode_event(self, line: bytes) -> WatchEvent | None:
        decoded = decode_watch_line(line)
        return WatchEvent(*decoded) if decoded is not None else None


OBJECTS_DECODER: Final = ObjectsDecoder()
"""What a source decodes through unless an informer hands it its codec."""
