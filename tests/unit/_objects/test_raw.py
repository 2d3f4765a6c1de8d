"""The compact representation: CompactEntry, head-only decoding of LIST bodies and watch
lines, and the shared decode handed to handlers."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from aioinformer._objects.meta import (
    annotations_of,
    labels_of,
    meta_namespace_key,
    name_of,
    namespace_of,
    resource_version_of,
    same_resource_version,
)
from aioinformer._objects.raw import (
    CompactDecodeError,
    CompactEntry,
    decode_list,
    decode_watch_line,
)
from aioinformer.codec import CompactCodec
from aioinformer.errors import ApiError, KeyFuncError, WatchError
from aioinformer.watch import WatchStreamDecoder

if TYPE_CHECKING:
    from aioinformer.listwatch import WatchEvent


def pod(name: str = "web-0", namespace: str = "default", rv: str = "7") -> dict[str, Any]:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "resourceVersion": rv,
            "labels": {"app": "web"},
            "annotations": {"note": "x"},
        },
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Running"},
    }


def line(kind: str, obj: Any) -> bytes:
    return orjson.dumps({"type": kind, "object": obj})


# -- CompactEntry ---------------------------------------------------------------------------


def test_a_raw_object_is_invisible_to_the_cyclic_collector() -> None:
    entry = CompactEntry.from_dict(pod())
    assert not gc.is_tracked(entry)
    assert entry.labels is not None
    assert not gc.is_tracked(entry.labels)
    decoded = decode_watch_line(line("ADDED", pod()))
    assert decoded is not None
    assert not gc.is_tracked(decoded[1])


def test_from_dict_keeps_the_head_and_decodes_back_to_an_equal_fresh_dict() -> None:
    obj = pod()
    entry = CompactEntry.from_dict(obj)
    assert (entry.key, entry.name, entry.namespace, entry.resource_version) == (
        "default/web-0",
        "web-0",
        "default",
        "7",
    )
    assert (entry.kind, entry.api_version, entry.labels) == ("Pod", "v1", {"app": "web"})
    first, second = entry.decode(), entry.decode()
    assert first == obj
    assert second == obj
    assert first is not second
    first["metadata"]["name"] = "changed"
    assert entry.decode() == obj


def test_a_cluster_scoped_object_is_keyed_by_name() -> None:
    obj = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1"}}
    assert CompactEntry.from_dict(obj).key == "n1"


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({"kind": "Pod"}, id="no-metadata"),
        pytest.param({"metadata": {"namespace": "a"}}, id="no-name"),
        pytest.param({"metadata": {"name": 3}}, id="name-not-a-string"),
    ],
)
def test_from_dict_refuses_an_object_without_a_name(obj: dict[str, Any]) -> None:
    with pytest.raises(KeyFuncError):
        CompactEntry.from_dict(obj)


def test_the_repr_never_shows_the_bytes() -> None:
    secret = {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": "s"},
        "data": {"k": "c2VjcmV0"},
    }
    text = repr(CompactEntry.from_dict(secret))
    assert "c2VjcmV0" not in text
    assert "Secret" in text
    assert "'s'" in text


def test_the_metadata_accessors_read_the_head_without_decoding() -> None:
    entry = CompactEntry.from_dict(pod())
    assert meta_namespace_key(entry) == "default/web-0"
    assert namespace_of(entry) == "default"
    assert name_of(entry) == "web-0"
    assert resource_version_of(entry) == "7"
    assert labels_of(entry) == {"app": "web"}
    assert annotations_of(entry) == {"note": "x"}
    assert same_resource_version(entry, CompactEntry.from_dict(pod(rv="7")))
    assert not same_resource_version(entry, CompactEntry.from_dict(pod(rv="8")))


def test_an_entry_without_a_name_has_no_key() -> None:
    decoded = decode_watch_line(line("ADDED", {"kind": "Pod", "metadata": {}}))
    assert decoded is not None
    with pytest.raises(KeyFuncError):
        meta_namespace_key(decoded[1])


# -- watch lines -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ADDED", "MODIFIED", "DELETED"])
def test_a_canonical_line_gives_the_object_bytes_exactly_as_sent(kind: str) -> None:
    obj = pod()
    decoded = decode_watch_line(line(kind, obj))
    assert decoded is not None
    event_type, entry = decoded
    assert event_type == kind
    assert entry.raw == orjson.dumps(obj)
    assert entry.decode() == obj
    assert entry.key == "default/web-0"
    assert entry.resource_version == "7"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(b'{"object":%s,"type":"ADDED"}', id="object-first"),
        pytest.param(b'{ "type" : "ADDED" , "object" : %s }', id="spaced"),
        pytest.param(b'{"type":"ADDED","object":%s,"extra":{"a":1}}', id="extra-key"),
        pytest.param(b'{"type":"ADDED","object":%s}\r', id="carriage-return"),
        pytest.param(b'{"type":"ADDED","object":{"metadata":{}},"object":%s}', id="twice"),
    ],
)
def test_other_spellings_of_a_line_give_the_same_object(text: bytes) -> None:
    obj = pod()
    decoded = decode_watch_line(text % orjson.dumps(obj))
    assert decoded is not None
    assert decoded[0] == "ADDED"
    assert decoded[1].decode() == obj
    assert decoded[1].key == "default/web-0"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            line("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "9"}}), id="bookmark"
        ),
        pytest.param(line("ERROR", {"kind": "Status", "code": 410}), id="error"),
        pytest.param(b"not json", id="garbage"),
        pytest.param(b'{"type":"ADDED"}', id="no-object"),
        pytest.param(b'{"type":"ADDED","object":[1]}', id="object-not-a-mapping"),
        pytest.param(
            line("ADDED", {"metadata": {"name": "a", "labels": {"n": 1}}}), id="odd-labels"
        ),
        pytest.param(line("ADDED", {"metadata": "nope"}), id="odd-metadata"),
        pytest.param(line("ADDED", {"metadata": {"name": "a"}}) + b"}", id="trailing-brace"),
        pytest.param(line("ADDED", {"metadata": {"name": "a"}})[:-2], id="truncated"),
        pytest.param(b'{"type":"ADDED","object":{"metadata":{"name":"a"}}', id="unclosed"),
    ],
)
def test_every_other_line_is_left_to_the_careful_path(text: bytes) -> None:
    assert decode_watch_line(text) is None


def test_the_compact_stream_decoder_frames_lines_across_chunks() -> None:
    body = line("ADDED", pod("a")) + b"\n" + line("MODIFIED", pod("a", rv="8")) + b"\n"
    body += line("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "9"}}) + b"\n"
    decoder = WatchStreamDecoder(codec=CompactCodec())
    events: list[WatchEvent] = []
    for start in range(0, len(body), 37):
        events.extend(decoder.feed(body[start : start + 37]))
    decoder.finish()
    assert [event.type for event in events] == ["ADDED", "MODIFIED", "BOOKMARK"]
    assert type(events[0].object) is CompactEntry
    assert events[1].object.resource_version == "8"
    # A bookmark is small and read by the reflector: it stays a dict.
    assert events[2].object == {"kind": "Pod", "metadata": {"resourceVersion": "9"}}


def test_the_compact_stream_decoder_reports_errors_as_the_plain_one_does() -> None:
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    decoder = WatchStreamDecoder(codec=CompactCodec())
    assert list(decoder.feed(line("ERROR", status) + b"\n")) == []
    assert isinstance(decoder.failure, ApiError)
    assert decoder.failure.code == 410
    garbage = WatchStreamDecoder(codec=CompactCodec())
    assert [e.type for e in garbage.feed(line("ADDED", pod()) + b"\n{oops\n")] == ["ADDED"]
    assert isinstance(garbage.failure, WatchError)


def test_an_odd_object_arrives_decoded_and_whole() -> None:
    odd = {"metadata": {"name": "a", "labels": {"n": 1}}}
    events = list(WatchStreamDecoder(codec=CompactCodec()).feed(line("ADDED", odd) + b"\n"))
    assert [(e.type, e.object) for e in events] == [("ADDED", odd)]


# -- LIST bodies -------------------------------------------------------------------------


def test_a_list_body_gives_entries_that_decode_with_the_list_kind() -> None:
    items = [pod("a"), pod("b")]
    for item in items:
        del item["kind"], item["apiVersion"]  # as a server sends them
    body = orjson.dumps(
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "42", "continue": "next", "remainingItemCount": 3},
            "items": items,
        }
    )
    page = decode_list(body)
    assert (page.resource_version, page.continue_, page.remaining_item_count) == ("42", "next", 3)
    assert (page.kind, page.api_version) == ("Pod", "v1")
    assert [entry.key for entry in page.items] == ["default/a", "default/b"]
    assert all(entry.kind == "Pod" and entry.api_version == "v1" for entry in page.items)
    decoded = page.items[0].decode()
    assert decoded["kind"] == "Pod"
    assert decoded["apiVersion"] == "v1"
    assert decoded["spec"] == items[0]["spec"]


def test_a_list_without_its_kind_uses_the_resource_defaults() -> None:
    body = orjson.dumps({"metadata": {}, "items": [{"metadata": {"name": "a"}}]})
    page = decode_list(body, kind="Widget", api_version="example.com/v1")
    assert page.items[0].decode() == {
        "metadata": {"name": "a"},
        "apiVersion": "example.com/v1",
        "kind": "Widget",
    }
    assert (page.resource_version, page.continue_, page.remaining_item_count) == ("", None, None)


def test_an_odd_list_item_is_decoded_whole_with_the_list_kind() -> None:
    body = orjson.dumps(
        {"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": 5}}]}
    )
    assert decode_list(body).items == [{"metadata": {"name": 5}, "apiVersion": "v1", "kind": "Pod"}]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"[]", id="not-an-object"),
        pytest.param(b"{", id="truncated"),
        pytest.param(b'{"items": {}}', id="items-not-a-list"),
        pytest.param(b'{"items": [3]}', id="item-not-an-object"),
    ],
)
def test_a_malformed_list_raises_a_clear_error(body: bytes) -> None:
    with pytest.raises(CompactDecodeError):
        decode_list(body)
