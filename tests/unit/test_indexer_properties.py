"""A Hypothesis state machine drives an Indexer with random writes and checks it
against a plain dict after every step: same objects, and every index equal to one
recomputed from scratch, with no empty sets. The same machine drives a CompactIndexer,
whose reads are fresh decodes equal to (never the same as) what was written.

One of the index functions it may add fails on some objects (it raises, or returns a
``str``): those objects stay stored, are absent from that index only, and are counted as
``unindexed`` while they are stored."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from aioinformer.indexer import (
    NAMESPACE_INDEX,
    CompactIndexer,
    Indexer,
    IndexFunc,
    meta_namespace_key,
    namespace_index_func,
)
from tests._support_properties import machine_settings

NAMES = st.sampled_from(["a", "b", "c", "d", "e"])
NAMESPACES = st.sampled_from(["", "ns1", "ns2"])
TAGS = st.lists(st.sampled_from(["x", "y", "z"]), max_size=3)


def tags_index(obj: dict[str, Any]) -> list[str]:
    """Multi-valued, possibly empty, possibly with repeats."""
    tags: str = obj["metadata"]["labels"]["tags"]
    return tags.split(",") if tags else []


def first_tag_index(obj: dict[str, Any]) -> list[str]:
    tags = tags_index(obj)
    return tags[:1]


def picky_index(obj: dict[str, Any]) -> list[str]:
    """Fails on some objects: raises for a "z" tag, returns a ``str`` for the lone tag "y"."""
    tags = tags_index(obj)
    if "z" in tags:
        raise ValueError("no z")
    if tags == ["y"]:
        return "y"  # type: ignore[return-value]  # the mistake under test
    return tags


def fails_on(func: IndexFunc, obj: dict[str, Any]) -> bool:
    return func is picky_index and ("z" in tags_index(obj) or tags_index(obj) == ["y"])


EXTRA_INDEXERS: dict[str, IndexFunc] = {
    "tags": tags_index,
    "first-tag": first_tag_index,
    "picky": picky_index,
}


@st.composite
def objects(draw: st.DrawFn) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": draw(NAMES),
        "labels": {"tags": ",".join(draw(TAGS))},
        "resourceVersion": str(draw(st.integers(0, 1000))),
    }
    namespace = draw(NAMESPACES)
    if namespace:
        meta["namespace"] = namespace
    return {"kind": "Pod", "metadata": meta}


class IndexerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.indexer: Indexer[dict[str, Any]] = Indexer(
            indexers={NAMESPACE_INDEX: namespace_index_func}
        )
        self.model: dict[str, dict[str, Any]] = {}
        self.funcs: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index_func}

    @rule(obj=objects())
    def add(self, obj: dict[str, Any]) -> None:
        self.indexer.add(obj)
        self.model[meta_namespace_key(obj)] = obj

    @rule(obj=objects())
    def update(self, obj: dict[str, Any]) -> None:
        self.indexer.update(obj)
        self.model[meta_namespace_key(obj)] = obj

    @rule(obj=objects())
    def delete(self, obj: dict[str, Any]) -> None:
        self.indexer.delete(obj)
        self.model.pop(meta_namespace_key(obj), None)

    @rule(objs=st.lists(objects(), max_size=6))
    def replace(self, objs: list[dict[str, Any]]) -> None:
        self.indexer.replace(objs, "1")
        self.model = {meta_namespace_key(obj): obj for obj in objs}

    @precondition(lambda self: len(self.funcs) < 1 + len(EXTRA_INDEXERS))
    @rule(name=st.sampled_from(sorted(EXTRA_INDEXERS)))
    def add_indexer(self, name: str) -> None:
        if name in self.funcs:
            try:
                self.indexer.add_indexers({name: EXTRA_INDEXERS[name]})
            except ValueError:
                return
            raise AssertionError("a duplicate index name was accepted")
        self.indexer.add_indexers({name: EXTRA_INDEXERS[name]})
        self.funcs[name] = EXTRA_INDEXERS[name]

    @invariant()
    def store_equals_model(self) -> None:
        assert len(self.indexer) == len(self.model)
        assert sorted(self.indexer.list_keys()) == sorted(self.model)
        for key, obj in self.model.items():
            self.check_stored(key, obj)

    def check_stored(self, key: str, obj: dict[str, Any]) -> None:
        assert self.indexer.get_by_key(key) is obj

    @invariant()
    def indexes_equal_a_rebuild(self) -> None:
        assert set(self.indexer.get_indexers()) == set(self.funcs)
        unindexed = 0
        for name, func in self.funcs.items():
            expected: dict[str, set[str]] = {}
            for key, obj in self.model.items():
                if fails_on(func, obj):
                    unindexed += 1
                    continue
                for value in func(obj):
                    expected.setdefault(value, set()).add(key)
            actual = {
                value: set(self.indexer.index_keys(name, value))
                for value in self.indexer.list_index_func_values(name)
            }
            assert actual == expected
            assert all(actual.values()), "an index kept an empty set"
            for value, keys in expected.items():
                by_index = self.indexer.by_index(name, value)
                assert sorted(meta_namespace_key(o) for o in by_index) == sorted(keys)
        assert self.indexer.statistics().unindexed == unindexed


IndexerMachine.TestCase.settings = machine_settings(100)


class CompactIndexerMachine(IndexerMachine):
    def __init__(self) -> None:
        super().__init__()
        self.indexer = CompactIndexer(indexers={NAMESPACE_INDEX: namespace_index_func})

    def check_stored(self, key: str, obj: dict[str, Any]) -> None:
        stored = self.indexer.get_by_key(key)
        assert stored == obj
        assert stored is not obj


CompactIndexerMachine.TestCase.settings = machine_settings(100)
test_indexer_matches_a_dict_model = IndexerMachine.TestCase
test_compact_indexer_matches_a_dict_model = CompactIndexerMachine.TestCase
