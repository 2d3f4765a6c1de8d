"""A Hypothesis state machine interleaves writes with batched pops.

Two DeltaFIFOs, each feeding its own Indexer, receive the same adds, updates, deletes,
relists and resyncs. One is drained with ``pop_batch`` (any ``max_keys``), the other with
one ``pop`` per key the batch held. Checked throughout:

* a batch is exactly the keys and deltas that as many single pops hand out, and
  *isInInitialList* is the same for every key of a batch and equal to the single pops';
* each key's deltas come out in the order they were written: the resourceVersions of the
  real objects popped for a key never go back (a stale relist may repeat one);
* nothing is duplicated (no delta comes out twice) and nothing is lost: every object
  given to ``add``, ``update`` or ``replace`` comes out exactly once, and once the FIFO is
  drained the cache equals the model of the server.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from aioinformer.delta_fifo import Delta, DeltaFIFO, Deltas, DeltasBatch, DeltaType
from aioinformer.indexer import Indexer, meta_namespace_key
from tests._support_properties import machine_settings

NAMES = st.sampled_from(["ns1/a", "ns1/b", "ns2/a", "c", "d", "e", "f"])


def make(key: str, version: int) -> dict[str, Any]:
    namespace, _, name = key.rpartition("/")
    meta: dict[str, Any] = {"name": name, "resourceVersion": str(version)}
    if namespace:
        meta["namespace"] = namespace
    return {"kind": "Pod", "metadata": meta}


class Side:
    """One FIFO and the cache it fills."""

    def __init__(self, replaced: bool) -> None:
        self.indexer: Indexer[dict[str, Any]] = Indexer()
        self.fifo = DeltaFIFO(known_objects=self.indexer, emit_delta_type_replaced=replaced)

    def apply(self, deltas: Deltas) -> None:
        for delta in deltas:
            if delta.type is DeltaType.DELETED:
                self.indexer.delete(delta.object)
            else:
                self.indexer.update(delta.object)


class BatchMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.batched = Side(False)
        self.single = Side(False)
        self.model: dict[str, dict[str, Any]] = {}
        self.version = 0
        self.replaced = False
        # How often each object was written with add or update, or (when relists queue
        # Replaced deltas, told apart from a resync's Sync deltas) listed; by identity, as
        # the FIFO queues the object itself (no transform). Each write must come out once.
        self.written: dict[int, dict[str, Any]] = {}
        self.writes: dict[int, int] = {}
        self.popped_objects: dict[int, int] = {}
        # Every Delta handed out by the batched side, kept alive so ids stay unique.
        self.popped_deltas: dict[int, Delta] = {}
        self.last_version: dict[str, int] = {}

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def next_version(self) -> int:
        self.version += 1
        return self.version

    @initialize(replaced=st.booleans())
    def configure(self, replaced: bool) -> None:
        self.replaced = replaced
        self.batched = Side(replaced)
        self.single = Side(replaced)

    def write(self, method: str, obj: Any) -> None:
        for side in (self.batched, self.single):
            self.run(getattr(side.fifo, method)(obj))

    @rule(key=NAMES)
    def watch_add_or_update(self, key: str) -> None:
        obj = make(key, self.next_version())
        self.write("update" if key in self.model else "add", obj)
        self.model[key] = obj
        self.count_write(obj)

    def count_write(self, obj: dict[str, Any]) -> None:
        self.written[id(obj)] = obj
        self.writes[id(obj)] = self.writes.get(id(obj), 0) + 1

    @rule(key=NAMES)
    def watch_delete(self, key: str) -> None:
        obj = self.model.pop(key, None)
        self.write("delete", obj if obj is not None else make(key, 0))

    @rule(keys=st.sets(NAMES), stale=st.booleans())
    def relist(self, keys: set[str], stale: bool) -> None:
        listed = [
            self.model[key] if stale and key in self.model else make(key, self.next_version())
            for key in sorted(keys)
        ]
        self.model = {meta_namespace_key(obj): obj for obj in listed}
        for side in (self.batched, self.single):
            self.run(side.fifo.replace(listed, str(self.version)))
        if self.replaced:
            for obj in listed:
                self.count_write(obj)

    @rule()
    def resync(self) -> None:
        for side in (self.batched, self.single):
            self.run(side.fifo.resync())

    def pop_batch(self, max_keys: int) -> None:
        batched, single = self.batched, self.single
        seen: list[tuple[str, Deltas, bool]] = []

        def process(batch: DeltasBatch) -> None:
            initial = not batched.fifo.has_synced()
            assert 1 <= len(batch) <= max_keys
            for key, deltas in batch:
                seen.append((key, deltas, initial))
                batched.apply(deltas)

        taken = self.run(batched.fifo.pop_batch(process, max_keys=max_keys))
        assert taken == len(seen) >= 1
        assert len({key for key, _, _ in seen}) == len(seen), "a key twice in one batch"

        for key, deltas, initial in seen:
            single_initial: list[bool] = []

            def process_one(deltas: Deltas, out: list[bool] = single_initial) -> None:
                out.append(not single.fifo.has_synced())
                single.apply(deltas)

            expected = self.run(single.fifo.pop(process_one))
            assert single.fifo.key_of(expected) == key
            assert list(deltas) == list(expected)
            assert single_initial == [initial]
            self.check_order_and_uniqueness(key, deltas)

    def check_order_and_uniqueness(self, key: str, deltas: Deltas) -> None:
        for delta in deltas:
            assert id(delta) not in self.popped_deltas, f"a delta of {key} came out twice"
            self.popped_deltas[id(delta)] = delta
            if delta.type is DeltaType.DELETED:
                # A deletion carries whatever state was last seen, maybe a tombstone.
                continue
            obj = delta.object
            version = int(obj["metadata"]["resourceVersion"])
            # A stale relist or a resync may repeat a version, never go back to an older.
            assert version >= self.last_version.get(key, 0), f"{key} went back in time"
            self.last_version[key] = version
            if delta.type is not DeltaType.SYNC:
                self.popped_objects[id(obj)] = self.popped_objects.get(id(obj), 0) + 1

    @precondition(lambda self: len(self.batched.fifo) > 0)
    @rule(max_keys=st.integers(1, 8))
    def pop_some(self, max_keys: int) -> None:
        self.pop_batch(max_keys)

    @rule(max_keys=st.integers(1, 8))
    def drain_and_compare(self, max_keys: int) -> None:
        while len(self.batched.fifo):
            self.pop_batch(max_keys)
        assert len(self.single.fifo) == 0
        cached = {
            key: self.batched.indexer.get_by_key(key) for key in self.batched.indexer.list_keys()
        }
        assert cached == self.model
        assert self.batched.fifo.has_synced() == self.single.fifo.has_synced()

    @invariant()
    def both_fifos_hold_the_same_queue(self) -> None:
        assert self.batched.fifo.list_keys() == self.single.fifo.list_keys()
        assert self.batched.fifo.has_synced() == self.single.fifo.has_synced()

    @invariant()
    def no_write_came_out_twice(self) -> None:
        for obj_id, count in self.popped_objects.items():
            assert count <= self.writes.get(obj_id, 0), f"{self.written.get(obj_id)} twice"

    def teardown(self) -> None:
        # End every run with a full drain: then each write has come out exactly once.
        try:
            while len(self.batched.fifo):
                self.pop_batch(3)
            assert self.popped_objects == self.writes
        finally:
            self.loop.close()


BatchMachine.TestCase.settings = machine_settings(100)
test_batched_pops_keep_order_lose_nothing_and_match_single_pops = BatchMachine.TestCase
