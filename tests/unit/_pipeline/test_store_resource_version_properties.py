"""A Hypothesis state machine checks the DeltaFIFO's applied resourceVersion against a
model that follows every event by number.

Watch writes, lists (``replace``), bookmarks, pops, batches and requeues are interleaved
at random. The model keeps each queued key's event numbers; at every step
``last_store_resource_version`` must be that of the event just before the oldest one a
queued key still holds (the newest event when none does): never one past an event still
queued, however the per-key grouping reordered them. It runs on a plain FIFO and on an
atomic one (the informer's), whose batches hand a relist's keys out as one group.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from aioinformer.delta_fifo import DeltaFIFO, Deltas, DeltasBatch, Requeue
from tests._support_properties import machine_settings

NAMES = st.sampled_from(["a", "b", "c", "d"])


def make(name: str, version: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(version)}}


class AppliedMachine(RuleBasedStateMachine):
    atomic = False

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.fifo = DeltaFIFO(atomic=self.atomic)
        self.version = 0
        self.queue: list[str] = []
        self.events: dict[str, list[int]] = {}

    def teardown(self) -> None:
        self.loop.close()

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def event(self) -> int:
        self.version += 1
        return self.version

    def queue_event(self, key: str, number: int) -> None:
        if key not in self.events:
            self.queue.append(key)
            self.events[key] = []
        self.events[key].append(number)

    def take_head(self) -> None:
        del self.events[self.queue.pop(0)]

    @rule(name=NAMES, update=st.booleans())
    def write(self, name: str, update: bool) -> None:
        number = self.event()
        obj = make(name, number)
        self.run(self.fifo.update(obj) if update else self.fifo.add(obj))
        self.queue_event(name, number)

    @rule(names=st.sets(NAMES))
    def relist(self, names: set[str]) -> None:
        number = self.event()
        self.run(self.fifo.replace([make(name, number) for name in sorted(names)], str(number)))
        for name in sorted(names):
            self.queue_event(name, number)
        for key in list(self.queue):
            if key not in names:
                self.queue_event(key, number)  # its tombstone

    @rule()
    def bookmark(self) -> None:
        number = self.event()
        self.run(self.fifo.bookmark(str(number)))

    @precondition(lambda self: self.queue)
    @rule()
    def pop(self) -> None:
        self.run(self.fifo.pop(lambda _: None))
        self.take_head()

    @precondition(lambda self: self.queue)
    @rule()
    def pop_and_requeue(self) -> None:
        def refuse(_: Deltas) -> None:
            raise Requeue

        self.run(self.fifo.pop(refuse))
        self.queue.append(self.queue.pop(0))

    @precondition(lambda self: self.queue)
    @rule(size=st.integers(1, 4), refuse_last=st.booleans())
    def pop_batch(self, size: int, refuse_last: bool) -> None:
        # A batch may hold fewer keys than asked (it stops at the end of the first list)
        # or more (an atomic group), in one process call or two: follow what it handed out.
        handed: list[tuple[str, bool]] = []

        def process(batch: DeltasBatch) -> None:
            for index, (key, _) in enumerate(batch):
                refused = refuse_last and index == len(batch) - 1
                handed.append((key, refused))
                if refused:
                    raise Requeue

        self.run(self.fifo.pop_batch(process, max_keys=size))
        assert handed
        for key, refused in handed:
            assert key == self.queue[0]
            if refused:
                self.queue.append(self.queue.pop(0))
            else:
                self.take_head()

    @invariant()
    def applied_through_the_oldest_event_still_queued(self) -> None:
        # An event is applied once no queued key holds it (a list's event is held by
        # every key it queued): everything before the oldest one still held.
        pending = [number for numbers in self.events.values() for number in numbers]
        through = min(pending) - 1 if pending else self.version
        expected = str(through) if through else ""
        assert self.fifo.last_store_resource_version == expected
        assert self.fifo.list_keys() == self.queue


AppliedMachine.TestCase.settings = machine_settings(100)
test_applied_resource_version_matches_an_event_model = AppliedMachine.TestCase


class AtomicAppliedMachine(AppliedMachine):
    atomic = True


AtomicAppliedMachine.TestCase.settings = machine_settings(100)
test_an_atomic_fifo_applied_resource_version_matches_an_event_model = AtomicAppliedMachine.TestCase
