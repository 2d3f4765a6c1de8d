"""The representation seam: each codec decodes the same bytes into objects that read back
the same, and carries them to a handler as the same dict.

``ObjectsCodec`` keeps decoded dicts, ``CompactCodec`` each object's bytes and head; every
part of the pipeline that depends on the difference goes through these methods."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from aioinformer._objects.raw import CompactEntry
from aioinformer._objects.view import ObjectView
from aioinformer.codec import CompactCodec, ObjectsCodec, codec_for, head_of
from aioinformer.errors import KeyFuncError
from aioinformer.indexer import CompactIndexer, Indexer
from aioinformer.models import DeletedFinalStateUnknown

CODECS = [ObjectsCodec, CompactCodec]


def pod(name: str, rv: str = "7", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def list_body(*items: dict[str, Any], rv: str = "42", continue_: str | None = None) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if continue_:
        meta["continue"] = continue_
    return orjson.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items})


def as_dict(obj: Any) -> Any:
    return obj.decode() if type(obj) is CompactEntry else obj


@pytest.mark.parametrize("make", CODECS)
def test_a_list_page_decodes_to_its_items_with_their_kind_and_the_lists_metadata(
    make: type[ObjectsCodec | CompactCodec],
) -> None:
    page = make().decode_list(
        list_body(pod("a"), pod("b"), continue_="more"), kind="Pod", api_version="v1"
    )

    assert (page.resource_version, page.continue_, page.kind, page.api_version) == (
        "42",
        "more",
        "Pod",
        "v1",
    )
    assert [as_dict(item) for item in page.items] == [
        {**pod("a"), "apiVersion": "v1", "kind": "Pod"},
        {**pod("b"), "apiVersion": "v1", "kind": "Pod"},
    ]


@pytest.mark.parametrize("make", CODECS)
def test_a_usual_watch_line_decodes_and_anything_else_is_left_to_the_careful_path(
    make: type[ObjectsCodec | CompactCodec],
) -> None:
    codec = make()
    event = codec.decode_event(orjson.dumps({"type": "MODIFIED", "object": pod("a")}))
    assert event is not None
    assert (event.type, as_dict(event.object)) == ("MODIFIED", pod("a"))
    for line in (
        orjson.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410}}),
        b"not json",
        b'{"type": "MODIFIED", "object": 3}',
    ):
        assert codec.decode_event(line) is None
    # A bookmark is either decoded as it is or left to the careful path, never changed.
    bookmark = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}
    decoded = codec.decode_event(orjson.dumps(bookmark))
    assert decoded is None or (decoded.type, decoded.object) == ("BOOKMARK", bookmark["object"])


@pytest.mark.parametrize("make", CODECS)
def test_what_a_handler_gets_is_the_object_whatever_the_cache_keeps(
    make: type[ObjectsCodec | CompactCodec],
) -> None:
    codec = make()
    convert = codec.handler_converter(keys_only=False, to_model=None)
    source = pod("a")
    # From a source of dicts: the objects codec hands over the source's very dict, the
    # compact one a read-only view of what it stored, equal to it.
    entry = codec.entry(source)
    carried = codec.carry(entry, source)
    delivered_object = (convert or (lambda obj: obj))(carried)
    if make is ObjectsCodec:
        assert delivered_object is source
    else:
        assert type(delivered_object) is ObjectView
        assert delivered_object == source
    # From the cache (a late handler's snapshot, an update's old object): equal dicts.
    assert (convert or (lambda obj: obj))(codec.carry(entry)) == source
    # Keys without decoding.
    keys = codec.handler_converter(keys_only=True, to_model=None)
    assert keys is not None
    assert keys(carried) == codec.carried_key(carried) == codec.key(entry) == "ns/a"
    # A tombstone keeps its key and carries the last state.
    tombstone = codec.carry_deleted(DeletedFinalStateUnknown("ns/a", entry))
    delivered = (convert or (lambda obj: obj))(tombstone)
    assert isinstance(delivered, DeletedFinalStateUnknown)
    assert (delivered.key, delivered.obj) == ("ns/a", source)


def test_the_compact_codec_keeps_bytes_and_shares_one_decode_per_event() -> None:
    codec = CompactCodec()
    entry = codec.entry(pod("a"))
    assert type(entry) is CompactEntry
    assert isinstance(codec.new_indexer(None), CompactIndexer)
    # The entry itself is carried; each handler call gets a view of its own.
    assert codec.carry(entry) is entry
    convert = codec.handler_converter(keys_only=False, to_model=None)
    assert convert is not None
    first, second = convert(entry), convert(entry)
    assert type(first) is ObjectView
    assert first is not second
    assert first == second == entry.decode()
    assert type(ObjectsCodec().new_indexer(None)) is Indexer


@pytest.mark.parametrize("make", CODECS)
def test_two_entries_are_the_same_version_when_their_resource_versions_are(
    make: type[ObjectsCodec | CompactCodec],
) -> None:
    codec = make()
    one, same, newer = (codec.entry(pod("a", rv)) for rv in ("1", "1", "2"))
    assert codec.same_version(one, same)
    assert not codec.same_version(one, newer)


def test_a_reader_reads_the_head_of_either_representation() -> None:
    obj = {**pod("a"), "kind": "Pod", "apiVersion": "v1"}
    assert head_of(obj) == head_of(CompactEntry.from_dict(obj)) == ("Pod", "v1", "7")
    # A Status, an ERROR event's object, has no resourceVersion.
    assert head_of({"kind": "Status", "code": 410}) is None
    assert head_of("garbage") is None


def test_a_key_needs_a_name() -> None:
    for codec in (ObjectsCodec(), CompactCodec()):
        with pytest.raises(KeyFuncError):
            codec.key({"metadata": {}})


def test_a_cache_mode_names_its_codec() -> None:
    assert isinstance(codec_for("compact"), CompactCodec)
    assert isinstance(codec_for("objects"), ObjectsCodec)
    # One per informer: a compact codec holds its informer's decode window.
    assert codec_for("compact") is not codec_for("compact")
    with pytest.raises(ValueError, match="'compact' or 'objects'"):
        codec_for("dicts")  # type: ignore[arg-type]
