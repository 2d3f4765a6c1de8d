"""A Hypothesis state machine drives a WorkQueue (adds, blocking and non-blocking gets,
done, cancelled getters, shutdown) and checks it against a plain model of client-go's
queue: a FIFO list plus the ``dirty`` and ``processing`` sets.

The machine owns an event loop; getters are real tasks blocked in ``await get()``, and
the loop is run to quiescence after every step before the invariants are checked.
"""

from __future__ import annotations

import asyncio

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from aioinformer.errors import QueueEmpty, ShutDown
from aioinformer.workqueue import WorkQueue
from tests._support_properties import machine_settings

ITEMS = st.sampled_from(["a", "b", "c", "d", "e"])


class WorkQueueMachine(RuleBasedStateMachine):
    """Model: `queue` (FIFO), `dirty`, `processing`, `shut`; handed-out log from getters."""

    @initialize()
    def start(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.wq: WorkQueue[str] = WorkQueue()
        self.queue: list[str] = []
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.shut = False
        self.getters: list[asyncio.Task[None]] = []
        self.handed_out: list[str] = []
        self.shutdown_seen = 0

    def teardown(self) -> None:
        loop = getattr(self, "loop", None)
        if loop is None:
            return
        for task in self.getters:
            task.cancel()
        if self.getters:
            loop.run_until_complete(asyncio.gather(*self.getters, return_exceptions=True))
        loop.close()

    # -- helpers -------------------------------------------------------------------------

    def _hand_out(self, item: str) -> None:
        """Model side of a get: the item must be the head of the model FIFO."""
        assert self.queue, f"{item!r} handed out while the model queue is empty"
        expected = self.queue.pop(0)
        assert item == expected, f"handed out {item!r}, FIFO head was {expected!r}"
        assert item not in self.processing, f"{item!r} handed to two workers at once"
        self.processing.add(item)
        self.dirty.discard(item)

    def _settle(self) -> None:
        async def rounds() -> None:
            for _ in range(10):
                await asyncio.sleep(0)

        self.loop.run_until_complete(rounds())
        for task in [t for t in self.getters if t.done()]:
            self.getters.remove(task)
            failure = None if task.cancelled() else task.exception()
            if failure is not None:
                raise failure

    async def _getter(self) -> None:
        try:
            item = await self.wq.get()
        except ShutDown:
            self.shutdown_seen += 1
            return
        self.handed_out.append(item)
        self._hand_out(item)

    # -- rules ---------------------------------------------------------------------------

    @rule(item=ITEMS)
    def add(self, item: str) -> None:
        self.wq.add(item)
        if not self.shut and item not in self.dirty:
            self.dirty.add(item)
            if item not in self.processing:
                self.queue.append(item)
        self._settle()

    @rule()
    def start_getter(self) -> None:
        self.getters.append(self.loop.create_task(self._getter()))
        self._settle()

    @precondition(lambda self: bool(self.getters))
    @rule(data=st.data())
    def cancel_getter(self, data: st.DataObject) -> None:
        task = data.draw(st.sampled_from(self.getters))
        task.cancel()
        self._settle()

    @precondition(lambda self: bool(self.getters))
    @rule(item=ITEMS)
    def add_then_cancel_the_oldest_getter_before_it_runs(self, item: str) -> None:
        # The add wakes the oldest getter, which is cancelled before it can take the
        # item: the item must reach another getter.
        self.wq.add(item)
        if not self.shut and item not in self.dirty:
            self.dirty.add(item)
            if item not in self.processing:
                self.queue.append(item)
        self.getters[0].cancel()
        self._settle()

    @rule()
    def get_nowait(self) -> None:
        try:
            item = self.wq.get_nowait()
        except QueueEmpty:
            assert not self.queue
            assert not self.shut
        except ShutDown:
            assert not self.queue
            assert self.shut
        else:
            self._hand_out(item)
        self._settle()

    @precondition(lambda self: bool(self.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(sorted(self.processing)))
        self.wq.done(item)
        self.processing.remove(item)
        if item in self.dirty:
            self.queue.append(item)
        self._settle()

    @rule(item=ITEMS)
    def done_for_item_not_processing_is_ignored(self, item: str) -> None:
        if item in self.processing:
            return
        self.wq.done(item)
        self._settle()

    @rule()
    def shut_down(self) -> None:
        self.wq.shut_down()
        self.shut = True
        self._settle()

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def counts_match_the_model(self) -> None:
        if not hasattr(self, "wq"):
            return
        stats = self.wq.statistics()
        assert len(self.wq) == stats.depth == len(self.queue)
        assert stats.processing == len(self.processing)
        assert stats.shutting_down == self.shut

    @invariant()
    def queued_items_are_dirty_and_not_processing(self) -> None:
        if not hasattr(self, "wq"):
            return
        assert set(self.queue) <= self.dirty
        assert not set(self.queue) & self.processing
        assert len(set(self.queue)) == len(self.queue)

    @invariant()
    def no_getter_waits_while_an_item_is_ready(self) -> None:
        if not hasattr(self, "wq"):
            return
        if self.queue:
            assert self.wq.statistics().waiting_getters == 0
            assert not self.getters

    @invariant()
    def no_getter_waits_on_a_shut_down_queue(self) -> None:
        if not hasattr(self, "wq"):
            return
        if self.shut:
            assert not self.getters


WorkQueueMachine.TestCase.settings = machine_settings(100)
test_work_queue_matches_the_model = WorkQueueMachine.TestCase
