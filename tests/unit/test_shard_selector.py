"""Shard selectors (KEP-5866): the hash, the text kube-apiserver accepts and echoes, the
ranges a ring splits the space into, and the list metadata that says a server applied one."""

from __future__ import annotations

import itertools

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioinformer._objects.raw import CompactDecoder, ObjectsDecoder
from aioinformer.errors import SelectorError
from aioinformer.listwatch import ListOptions
from aioinformer.shard_selector import (
    HASH_SPACE,
    ShardRange,
    ShardSelector,
    fnv1a_64,
    parse_shard_selector,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Go's hash/fnv New64a over the UTF-8 bytes.
        ("", 0xCBF29CE484222325),
        ("a", 0xAF63DC4C8601EC8C),
        ("foobar", 0x85944171F73967E8),
    ],
)
def test_the_hash_is_fnv1a_64(text: str, expected: int) -> None:
    assert fnv1a_64(text) == expected


def test_a_selector_is_written_as_kube_apiserver_echoes_it() -> None:
    text = (
        "shardRange( object.metadata.uid ,'0x0',\"0x8000000000000000\")"
        "||shardRange(object.metadata.namespace, '0xA', '0xFF')"
    )
    selector = parse_shard_selector(text)
    assert str(selector) == (
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
        " || shardRange(object.metadata.namespace, '0x000000000000000a', '0x00000000000000ff')"
    )
    assert parse_shard_selector(str(selector)) == selector


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x0')",
            "invalid shard selector: shard range start 0x8000000000000000 must be less"
            " than end 0x0000000000000000",
        ),
        (
            "shardRange(object.metadata.name, '0x0', '0x1')",
            'invalid shard selector: unsupported field path "object.metadata.name";'
            " supported: object.metadata.uid, object.metadata.namespace",
        ),
        (
            "shardRange(object.metadata.uid, '0x0', '0x10000000000000000')",
            "invalid shard selector: shard range bound '0x10000000000000000' is not 0x"
            " followed by 1 to 16 hex digits",
        ),
        (
            "shardRange(object.metadata.uid, '0x0')",
            "invalid shard selector: expected shardRange(<field>, '<start>', '<end>'), got"
            " \"shardRange(object.metadata.uid, '0x0')\"",
        ),
        ("", "invalid shard selector: expected shardRange(<field>, '<start>', '<end>'), got ''"),
    ],
)
def test_a_malformed_selector_names_its_fault(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse_shard_selector(text)
    assert str(caught.value) == message


def test_a_range_holds_its_start_and_not_its_end() -> None:
    selector = ShardSelector.of((10, 20))
    assert not selector.contains_hash(9)
    assert selector.contains_hash(10)
    assert selector.contains_hash(19)
    assert not selector.contains_hash(20)


def test_a_range_is_checked_when_built() -> None:
    with pytest.raises(SelectorError, match="must be less than end"):
        ShardRange("object.metadata.uid", 5, 5)
    with pytest.raises(SelectorError, match="not a 64-bit value"):
        ShardRange("object.metadata.uid", 0, HASH_SPACE)
    with pytest.raises(SelectorError, match="no shard range"):
        ShardSelector(())


@given(count=st.integers(min_value=1, max_value=64), h=st.integers(0, HASH_SPACE - 2))
def test_split_ranges_cover_the_space_once(count: int, h: int) -> None:
    selectors = ShardSelector.split(count)
    assert len(selectors) == count
    assert sum(s.contains_hash(h) for s in selectors) == 1
    bounds = [r for s in selectors for r in s.ranges]
    assert bounds[0].start == 0
    assert all(a.end == b.start for a, b in itertools.pairwise(bounds))
    assert bounds[-1].end == HASH_SPACE - 1


def test_split_refuses_no_replicas() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ShardSelector.split(0)


def test_an_object_belongs_by_the_field_each_range_hashes() -> None:
    uid, namespace = "8b0c2b5e-0000-4000-8000-000000000001", "team-a"
    by_uid = fnv1a_64(uid)
    by_namespace = fnv1a_64(namespace)
    assert ShardSelector.of((by_uid, by_uid + 1)).contains(uid=uid, namespace=namespace)
    assert not ShardSelector.of((by_namespace, by_namespace + 1)).contains(
        uid=uid, namespace=namespace
    )
    on_namespace = ShardSelector.of(
        (by_namespace, by_namespace + 1), field="object.metadata.namespace"
    )
    assert on_namespace.contains(uid=uid, namespace=namespace)
    either = parse_shard_selector(f"{ShardSelector.of((0, 1))} || {on_namespace}")
    assert either.contains(uid=uid, namespace=namespace)


def test_options_send_the_selector_as_shard_selector() -> None:
    text = str(ShardSelector.split(2)[1])
    assert ListOptions(shard_selector=text).to_query() == {"shardSelector": text}


@pytest.mark.parametrize("decoder", [ObjectsDecoder(), CompactDecoder()])
def test_a_list_says_which_shard_selector_the_server_applied(decoder: object) -> None:
    text = str(ShardSelector.split(2)[0])
    body = {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "7", "shardInfo": {"selector": text}},
        "items": [],
    }
    page = decoder.decode_list(orjson.dumps(body), kind="ConfigMap", api_version="v1")  # type: ignore[attr-defined]
    assert page.shard_selector == text
    del body["metadata"]["shardInfo"]  # type: ignore[attr-defined]
    page = decoder.decode_list(orjson.dumps(body), kind="ConfigMap", api_version="v1")  # type: ignore[attr-defined]
    assert page.shard_selector is None
