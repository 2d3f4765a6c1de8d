"""A compact cache is invisible to the cyclic garbage collector: after adds, updates,
deletes, a relist and a new index, no container the store holds per object is tracked, so
a full collection never walks its objects, however many it holds. (Each index's dict of
values is tracked, as any dict holding dicts is: walking it costs one step per distinct
index value, not per object.)"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

from aioinformer._pipeline.raw import CompactEntry
from aioinformer._pipeline.view import ObjectView
from aioinformer.indexer import (
    NAMESPACE_INDEX,
    CompactIndexer,
    label_index_func,
    namespace_index_func,
)
from tests._support_gc import only_new_objects

if TYPE_CHECKING:
    import pytest


def tags(obj: dict[str, Any]) -> list[str]:
    """A multi-valued index function of the user's own."""
    return ["even", "small"] if int(obj["metadata"]["resourceVersion"]) % 2 == 0 else []


def pod(index: int, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"p{index}",
            "namespace": f"ns{index % 3}",
            "resourceVersion": str(index),
            "labels": {"app": app},
        },
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }


def tracked_parts(indexer: CompactIndexer) -> list[str]:
    parts: list[tuple[str, object]] = [("items", indexer._items), ("values", indexer._values)]
    parts += [(f"entry {key}", entry) for key, entry in indexer._items.items()]
    parts += [(f"values {key}", values) for key, values in indexer._values.items()]
    parts += [(f"values of {key}", v.per_index) for key, v in indexer._values.items()]
    for name, index in indexer._indices.items():
        parts += [(f"index {name}={value}", keys) for value, keys in index.items()]
    return [name for name, part in parts if gc.is_tracked(part)]


def test_no_part_of_a_compact_store_is_tracked() -> None:
    with only_new_objects():
        indexer = CompactIndexer(
            indexers={
                NAMESPACE_INDEX: namespace_index_func,
                "app": label_index_func("app"),
                "tags": tags,
            }
        )
        indexer.replace([CompactEntry.from_dict(pod(index, "web")) for index in range(30)])
        for index in range(0, 30, 2):
            indexer.put_entry(f"ns{index % 3}/p{index}", CompactEntry.from_dict(pod(index, "db")))
        for index in range(0, 30, 5):
            indexer.delete_by_key(f"ns{index % 3}/p{index}")
        indexer.add_indexers({"tier": label_index_func("tier")})
        indexer.add(pod(99, "cache"))
        # Tuples start out tracked and are untracked by the collector's first look at them.
        gc.collect()
    assert len(indexer) == 25
    assert tracked_parts(indexer) == []


def test_a_bulk_read_hands_out_views_without_decoding_or_pausing_the_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    indexer = CompactIndexer(indexers={NAMESPACE_INDEX: namespace_index_func})
    for index in range(100):
        indexer.add(pod(index, "web"))
    states: list[bool] = []
    decode = CompactEntry.decode

    def recording(entry: CompactEntry) -> dict[str, Any]:
        states.append(gc.isenabled())
        return decode(entry)

    monkeypatch.setattr(CompactEntry, "decode", recording)
    paused: list[str] = []
    monkeypatch.setattr(gc, "disable", lambda: paused.append("disable"))
    listed = indexer.list()
    assert len(listed) == 100
    assert all(type(obj) is ObjectView for obj in listed)
    assert len(indexer.by_index(NAMESPACE_INDEX, "ns0")) == 34
    assert indexer.get_by_key("ns1/p1") is not None
    assert (states, paused) == ([], [])
    # Reading one past its head decodes that one, with the collector left as it was.
    assert listed[0].to_dict()["spec"]["containers"][0]["image"] == "x"
    assert states == [True]
