"""A Hypothesis state machine plays a reflector against a DeltaFIFO feeding an Indexer.

The model is a plain dict of what the server holds. Watch-like writes (add, update,
delete) and LIST-like ``replace`` calls change it; resyncs and partial pops are
interleaved at random. Throughout, the FIFO's structural invariants hold; whenever the
FIFO is drained into the Indexer, the Indexer equals the model.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from aioinformer.delta_fifo import DeletedFinalStateUnknown, DeltaFIFO, Deltas, DeltaType
from aioinformer.indexer import NAMESPACE_INDEX, Indexer, namespace_index_func
from tests._support_properties import machine_settings

NAMES = st.sampled_from(["ns1/a", "ns1/b", "ns2/a", "c", "d", "e"])


def make(key: str, version: int) -> dict[str, Any]:
    namespace, _, name = key.rpartition("/")
    meta: dict[str, Any] = {"name": name, "resourceVersion": str(version)}
    if namespace:
        meta["namespace"] = namespace
    return {"kind": "Pod", "metadata": meta}


class FIFOMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.indexer: Indexer[dict[str, Any]] = Indexer(
            indexers={NAMESPACE_INDEX: namespace_index_func}
        )
        self.fifo = DeltaFIFO(known_objects=self.indexer)
        self.model: dict[str, dict[str, Any]] = {}
        self.version = 0
        self.listed = False

    def teardown(self) -> None:
        self.loop.close()

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def next_version(self) -> int:
        self.version += 1
        return self.version

    @initialize(replaced=st.booleans())
    def configure(self, replaced: bool) -> None:
        self.fifo = DeltaFIFO(known_objects=self.indexer, emit_delta_type_replaced=replaced)

    def apply(self, deltas: Deltas) -> None:
        for delta in deltas:
            if delta.type is DeltaType.DELETED:
                self.indexer.delete(delta.object)
            else:
                self.indexer.update(delta.object)

    @rule(key=NAMES)
    def watch_add_or_update(self, key: str) -> None:
        obj = make(key, self.next_version())
        if key in self.model:
            self.run(self.fifo.update(obj))
        else:
            self.run(self.fifo.add(obj))
        self.model[key] = obj

    @rule(key=NAMES)
    def watch_delete(self, key: str) -> None:
        # A watch only reports deletes of objects it showed; others must be ignored.
        obj = self.model.pop(key, None)
        self.run(self.fifo.delete(obj if obj is not None else make(key, 0)))

    @rule(keys=st.sets(NAMES), stale=st.booleans())
    def relist(self, keys: set[str], stale: bool) -> None:
        # Objects may have changed or vanished while the watch was down.
        self.model = {
            key: self.model[key] if stale and key in self.model else make(key, self.next_version())
            for key in keys
        }
        self.run(self.fifo.replace(list(self.model.values()), str(self.version)))
        self.listed = True

    @rule()
    def resync(self) -> None:
        self.run(self.fifo.resync())

    @precondition(lambda self: len(self.fifo) > 0)
    @rule(count=st.integers(1, 3))
    def pop_some(self, count: int) -> None:
        for _ in range(min(count, len(self.fifo))):
            self.run(self.fifo.pop(self.apply))

    @rule()
    def drain_and_compare(self) -> None:
        while len(self.fifo):
            self.run(self.fifo.pop(self.apply))
        assert {key: self.indexer.get_by_key(key) for key in self.indexer.list_keys()} == (
            self.model
        )
        if self.listed:
            assert self.fifo.has_synced()

    @invariant()
    def the_synced_signal_is_given_exactly_when_the_counters_say_so(self) -> None:
        # The invariant written on DeltaFIFO._synced: the one-shot signal mirrors client-go's
        # definition of synced, taken from the population counters.
        fifo = self.fifo
        counted = (
            fifo._populated
            and fifo._initial_population_count == 0
            and fifo._initial_in_process == 0
        )
        assert fifo.has_synced() is counted

    @invariant()
    def fifo_is_well_formed(self) -> None:
        keys = self.fifo.list_keys()
        assert len(keys) == len(set(keys)) == len(self.fifo)
        # The invariant written on DeltaFIFO._items: a key is queued iff it has deltas.
        assert set(self.fifo._items) == set(keys)
        for key in keys:
            deltas = self.fifo.get_by_key(key)
            assert deltas, f"{key} is queued with no deltas"
            for older, newer in itertools.pairwise(deltas):
                both_deleted = older.type is newer.type is DeltaType.DELETED
                assert not both_deleted, f"undeduplicated deletions for {key}"
            for delta in deltas:
                assert self.fifo.key_of(delta.object) == key
                if isinstance(delta.object, DeletedFinalStateUnknown):
                    assert not isinstance(delta.object.obj, DeletedFinalStateUnknown)


FIFOMachine.TestCase.settings = machine_settings(100)
test_delta_fifo_into_indexer_matches_a_dict_model = FIFOMachine.TestCase
