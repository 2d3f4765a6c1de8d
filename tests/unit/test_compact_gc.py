"""A compact cache is invisible to the cyclic garbage collector: after adds, updates,
deletes, a relist and a new index, no container the store holds per object is tracked, so
a full collection never walks its objects, however many it holds. (Each index's dict of
values is tracked, as any dict holding dicts is: walking it costs one step per distinct
index value, not per object.) And what user code reads it through leaves nothing for the
collector either: a view, and all it hands out, is freed by reference counting when its
reader drops it, so a pipeline with the user's own index functions, transform, predicate
and handlers makes no cyclic garbage per event."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

from aioinformer._objects.raw import CompactEntry
from aioinformer._objects.view import ObjectView
from aioinformer.indexer import (
    NAMESPACE_INDEX,
    CompactIndexer,
    label_index_func,
    namespace_index_func,
)
from aioinformer.informer import SharedIndexInformer
from aioinformer.operator.predicates import generation_changed
from aioinformer.testing import FakeClock, FakeListerWatcher
from tests._support_gc import only_new_objects
from tests._support_wait import wait_until
from tests._support_wire import OnTheWire

if TYPE_CHECKING:
    from collections.abc import Callable

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


def rich_pod(index: int, step: int = 0) -> dict[str, Any]:
    """A Pod with what user code reads past the head: annotations, a generation, a spec."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"p{index}",
            "namespace": "default",
            "uid": f"uid-{index}",
            "generation": step + 1,
            "labels": {"app": f"app{index % 4}", "team": "a"},
            "annotations": {"step": str(step)},
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        },
        "spec": {"nodeName": f"node{index % 3}", "containers": [{"name": "c"}]},
    }


def app_label(obj: Any) -> list[str]:
    """An index function as the docs teach one: over a label, through ``get``."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return [labels["app"]] if "app" in labels else []


def node_of(obj: Any) -> list[str]:
    """An index function over a spec field."""
    return [obj["spec"]["nodeName"]]


READS: dict[str, Callable[[ObjectView], Any]] = {
    "the head": lambda view: view["metadata"]["name"],
    "labels": lambda view: dict(view["metadata"]["labels"]),
    "annotations": lambda view: view["metadata"]["annotations"]["step"],
    "spec": lambda view: view["spec"]["containers"][0]["name"],
    "annotations, then spec": lambda view: (view["metadata"]["annotations"], view["spec"]),
    "spec, then annotations": lambda view: (view["spec"], view["metadata"]["annotations"]),
    "metadata past the head, then kind": lambda view: (view["metadata"]["uid"], view.get("kind")),
    "every field": lambda view: {key: view[key] for key in view},
}


def test_a_view_and_what_it_hands_out_die_without_the_collector() -> None:
    entries = [CompactEntry.from_dict(rich_pod(index)) for index in range(20)]
    listed = [CompactEntry.from_dict({k: v for k, v in rich_pod(i).items() if k != "kind"})
              for i in range(20)]  # fmt: skip
    assert all(entry.add_type for entry in listed)
    found: dict[str, int] = {}
    with only_new_objects():
        gc.collect()
        gc.disable()
        try:
            for name, read in READS.items():
                for entry in entries + listed:
                    view = ObjectView(entry)
                    read(view)
                    del view
                found[name] = gc.collect()
        finally:
            gc.enable()
    assert found == dict.fromkeys(READS, 0)


async def test_user_code_on_the_pipeline_leaves_no_cyclic_garbage_per_event() -> None:
    """Python index functions over labels and over a spec field, a transform, a predicate
    and a handler reading ``old`` and ``new``: a round of ``2n`` watch events leaves the
    collector no more to find than a round of ``n`` (what asyncio's own bookkeeping leaves
    per read of the stream is the same in both)."""
    objects = 200
    fake = FakeListerWatcher(objects=[rich_pod(index) for index in range(objects)])

    def drop_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"].pop("managedFields", None)
        return obj

    informer = SharedIndexInformer(
        OnTheWire(fake),
        clock=FakeClock(),
        cache="compact",
        indexers={"app": app_label, "node": node_of},
        transform=drop_managed_fields,
    )
    seen: list[tuple[str, str]] = []

    def on_update(old: Any, new: Any) -> None:
        if generation_changed.update(old, new):
            seen.append((new["metadata"]["annotations"]["step"], old["spec"]["nodeName"]))

    informer.add_event_handler(on_update=on_update)

    async def modify(events: int, step: int) -> int:
        """The collector's find after ``events`` MODIFIED events read in one read."""
        seen.clear()
        gc.collect()
        gc.disable()
        try:
            for index in range(events):
                fake.modify(rich_pod(index, step))
            await wait_until(lambda: len(seen) == events, what=f"{events} updates handled")
            return gc.collect()
        finally:
            gc.enable()

    with only_new_objects():
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            await modify(1, 1)  # the watch is open and read
            short = await modify(objects // 2, 2)
            long = await modify(objects, 3)
            assert seen[0] == ("3", "node0")
            assert len(informer.indexer.by_index("node", "node1")) == 67
            assert "managedFields" not in informer.indexer.list()[0]["metadata"]
    assert long - short < objects // 10, (short, long)
