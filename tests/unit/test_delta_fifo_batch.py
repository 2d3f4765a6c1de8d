"""DeltaFIFO.pop_batch: several keys per call, with the cases of client-go's batched pop
(``the_real_fifo_test.go``, ``PopMultipleDeltaInBatch``) restated for a FIFO that keeps one
entry per key, plus waiting, closing, requeueing and cancellation. Yielding during a
backlog is tested beside ``pop``'s, in ``test_delta_fifo``."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from aioinformer.delta_fifo import (
    DEFAULT_BATCH_KEYS,
    Delta,
    DeltaFIFO,
    Deltas,
    DeltasBatch,
    DeltaType,
    FIFOClosedError,
    Requeue,
)
from aioinformer.listwatch import WatchEvent

Added, Updated, Replaced = DeltaType.ADDED, DeltaType.UPDATED, DeltaType.REPLACED


@dataclass(frozen=True)
class Obj:
    name: str
    val: Any = None


def obj_key(obj: Obj) -> str:
    return obj.name


def new_fifo() -> DeltaFIFO:
    return DeltaFIFO(obj_key, emit_delta_type_replaced=True)


Batch = list[tuple[str, list[tuple[DeltaType, Obj]]]]
"""A popped batch as plain data: (key, [(type, object), ...]) per key."""


class Popper:
    """Pops batches and records each one with the FIFO's *isInInitialList* during it."""

    def __init__(self, fifo: DeltaFIFO) -> None:
        self.fifo = fifo
        self.batches: list[Batch] = []
        self.initial: list[bool] = []

    def process(self, batch: DeltasBatch) -> None:
        self.batches.append([(key, [(d.type, d.object) for d in deltas]) for key, deltas in batch])
        self.initial.append(not self.fifo.has_synced())

    async def drain(self, max_keys: int = DEFAULT_BATCH_KEYS) -> None:
        while len(self.fifo):
            await self.fifo.pop_batch(self.process, max_keys=max_keys)


o1, o2, o3, o4 = Obj("foo1", 5), Obj("foo2", 5), Obj("foo3", 5), Obj("foo4", 5)
UNLIMITED = 999_999


def take_all(batch: DeltasBatch) -> None:
    for _ in batch:
        pass


@pytest.mark.parametrize(
    ("listed", "updates", "max_keys", "expected", "initial"),
    [
        pytest.param(
            [o1, o2, o3],
            [],
            UNLIMITED,
            [[("foo1", [(Replaced, o1)]), ("foo2", [(Replaced, o2)]), ("foo3", [(Replaced, o3)])]],
            [True],
            id="distinct keys leave in one batch",
        ),
        pytest.param(
            [o1, o2],
            [o3, o4],
            2,
            [
                [("foo1", [(Replaced, o1)]), ("foo2", [(Replaced, o2)])],
                [("foo3", [(Updated, o3)]), ("foo4", [(Updated, o4)])],
            ],
            [True, False],
            id="the initial list and later keys leave in separate batches",
        ),
        pytest.param(
            [o1, o2],
            [o3, o4],
            UNLIMITED,
            [
                [("foo1", [(Replaced, o1)]), ("foo2", [(Replaced, o2)])],
                [("foo3", [(Updated, o3)]), ("foo4", [(Updated, o4)])],
            ],
            [True, False],
            id="a batch stops at the end of the initial list whatever its size",
        ),
        pytest.param(
            [o1],
            [o1, o1],
            UNLIMITED,
            [[("foo1", [(Replaced, o1), (Updated, o1), (Updated, o1)])]],
            [True],
            id="more changes to a queued key join its deltas in order",
        ),
        pytest.param(
            [o1, o2],
            [o2, o3],
            UNLIMITED,
            [
                [("foo1", [(Replaced, o1)]), ("foo2", [(Replaced, o2), (Updated, o2)])],
                [("foo3", [(Updated, o3)])],
            ],
            [True, False],
            id="an update of a listed key stays with it, a new key waits for the next batch",
        ),
        pytest.param(
            [o1, o2, o3],
            [o2],
            UNLIMITED,
            [
                [
                    ("foo1", [(Replaced, o1)]),
                    ("foo2", [(Replaced, o2), (Updated, o2)]),
                    ("foo3", [(Replaced, o3)]),
                ]
            ],
            [True],
            id="an update in the middle keeps its key's place",
        ),
        pytest.param(
            [o1, o2, o3],
            [],
            2,
            [
                [("foo1", [(Replaced, o1)]), ("foo2", [(Replaced, o2)])],
                [("foo3", [(Replaced, o3)])],
            ],
            [True, True],
            id="max_keys splits the initial list",
        ),
        pytest.param(
            [],
            [o1, o2, o3],
            2,
            [[("foo1", [(Updated, o1)]), ("foo2", [(Updated, o2)])], [("foo3", [(Updated, o3)])]],
            [False, False],
            id="max_keys splits later changes",
        ),
        pytest.param(
            [o1, o2, o3],
            [o4],
            2,
            [
                [("foo1", [(Replaced, o1)]), ("foo2", [(Replaced, o2)])],
                [("foo3", [(Replaced, o3)])],
                [("foo4", [(Updated, o4)])],
            ],
            [True, True, False],
            id="max_keys and the initial list split together",
        ),
    ],
)
async def test_pop_batch_splits_like_client_go(
    listed: list[Obj],
    updates: list[Obj],
    max_keys: int,
    expected: list[Batch],
    initial: list[bool],
) -> None:
    fifo = new_fifo()
    await fifo.replace(listed, "123")
    for obj in updates:
        await fifo.update(obj)
    popper = Popper(fifo)
    await popper.drain(max_keys)
    assert popper.batches == expected
    assert popper.initial == initial
    assert fifo.has_synced()


async def test_pop_batch_hands_out_pairs_and_returns_how_many() -> None:
    fifo = new_fifo()
    await fifo.add(o1)
    await fifo.update(o1)
    await fifo.add(o2)
    handed: list[tuple[str, Deltas]] = []
    sizes: list[int] = []

    def process(batch: DeltasBatch) -> None:
        sizes.append(len(batch))
        handed.extend(batch)

    assert await fifo.pop_batch(process) == 2
    assert sizes == [2]
    assert handed == [
        ("foo1", Deltas([Delta(Added, o1), Delta(Updated, o1)])),
        ("foo2", Deltas([Delta(Added, o2)])),
    ]
    assert len(fifo) == 0


async def test_keys_the_process_does_not_reach_stay_queued_in_order() -> None:
    fifo = new_fifo()
    for obj in (o1, o2, o3):
        await fifo.add(obj)

    def process(batch: DeltasBatch) -> None:
        for key, _ in batch:
            if key == "foo1":
                break

    assert await fifo.pop_batch(process) == 1
    assert fifo.list_keys() == ["foo2", "foo3"]
    assert await fifo.pop_batch(lambda batch: None) == 0
    assert fifo.list_keys() == ["foo2", "foo3"]


async def test_the_batch_lets_go_of_each_key_once_the_iteration_moves_on() -> None:
    fifo = new_fifo()
    for obj in (o1, o2):
        await fifo.add(obj)
    first: list[Deltas] = []

    def process(batch: DeltasBatch) -> None:
        iterator = iter(batch)
        _, deltas = next(iterator)
        first.append(deltas)
        held = sys.getrefcount(deltas)
        next(iterator)
        # The batch's reference (its current pair) is gone; ours remain.
        assert sys.getrefcount(deltas) == held - 1

    await fifo.pop_batch(process)
    assert first == [[Delta(Added, o1)]]


@pytest.mark.parametrize("max_keys", [0, -1])
async def test_pop_batch_refuses_a_batch_of_no_keys(max_keys: int) -> None:
    fifo = new_fifo()
    await fifo.add(o1)
    with pytest.raises(ValueError, match="max_keys"):
        await fifo.pop_batch(lambda batch: None, max_keys=max_keys)
    assert fifo.list_keys() == ["foo1"]


async def test_pop_batch_waits_for_an_item_then_takes_all_that_are_ready() -> None:
    fifo = new_fifo()
    popper = Popper(fifo)
    task = asyncio.create_task(fifo.pop_batch(popper.process))
    await asyncio.sleep(0)
    assert not task.done()
    await fifo.add(o1)
    await fifo.add(o2)
    await task
    assert popper.batches == [[("foo1", [(Added, o1)]), ("foo2", [(Added, o2)])]]


async def test_pop_batch_drains_a_closed_fifo_then_raises() -> None:
    fifo = new_fifo()
    await fifo.add(o1)
    fifo.close()
    popper = Popper(fifo)
    await fifo.pop_batch(popper.process)
    with pytest.raises(FIFOClosedError):
        await fifo.pop_batch(popper.process)
    assert popper.batches == [[("foo1", [(Added, o1)])]]


async def test_close_wakes_a_waiting_pop_batch() -> None:
    fifo = new_fifo()
    task = asyncio.create_task(fifo.pop_batch(lambda batch: None))
    await asyncio.sleep(0)
    fifo.close()
    with pytest.raises(FIFOClosedError):
        await task


async def test_async_process_is_awaited() -> None:
    fifo = new_fifo()
    await fifo.add(o1)
    seen: list[str] = []

    async def process(batch: DeltasBatch) -> None:
        await asyncio.sleep(0)
        seen.extend(key for key, _ in batch)

    await fifo.pop_batch(process)
    assert seen == ["foo1"]


async def test_requeue_puts_back_the_key_being_processed_and_leaves_the_rest_queued() -> None:
    fifo = new_fifo()
    for obj in (o1, o2, o3):
        await fifo.add(obj)
    applied: list[str] = []

    async def process(batch: DeltasBatch) -> None:
        for key, _ in batch:
            if key == "foo2":
                # A change arrives while foo2 is out, then applying foo2 fails for now.
                await fifo.update(Obj("foo2", 6))
                raise Requeue
            applied.append(key)

    assert await fifo.pop_batch(process) == 2
    assert applied == ["foo1"]
    # foo2 was queued again meanwhile, behind foo3 which the batch never reached; the
    # popped delta goes in front of the newer one.
    assert fifo.list_keys() == ["foo3", "foo2"]
    assert fifo.get_by_key("foo2") == [Delta(Added, o2), Delta(Updated, Obj("foo2", 6))]


async def test_a_requeued_key_without_newer_changes_goes_to_the_back() -> None:
    fifo = new_fifo()
    for obj in (o1, o2, o3):
        await fifo.add(obj)

    def process(batch: DeltasBatch) -> None:
        for _ in batch:
            raise Requeue

    await fifo.pop_batch(process)
    assert fifo.list_keys() == ["foo2", "foo3", "foo1"]


async def test_requeue_with_an_error_raises_it_after_putting_the_key_back() -> None:
    fifo = new_fifo()
    await fifo.add(o1)

    def process(batch: DeltasBatch) -> None:
        for _ in batch:
            raise Requeue(RuntimeError("try later"))

    with pytest.raises(RuntimeError, match="try later"):
        await fifo.pop_batch(process)
    assert fifo.list_keys() == ["foo1"]


async def test_requeue_after_the_iteration_ended_puts_nothing_back() -> None:
    fifo = new_fifo()
    await fifo.add(o1)

    def process(batch: DeltasBatch) -> None:
        for _ in batch:
            pass
        raise Requeue

    assert await fifo.pop_batch(process) == 1
    assert len(fifo) == 0


async def test_an_error_loses_the_keys_handed_out_and_keeps_the_rest_initial() -> None:
    fifo = new_fifo()
    await fifo.replace([o1, o2, o3], "1")

    def process(batch: DeltasBatch) -> None:
        for key, _ in batch:
            if key == "foo2":
                raise KeyError("broken index")

    with pytest.raises(KeyError):
        await fifo.pop_batch(process)
    assert fifo.list_keys() == ["foo3"]
    assert not fifo.has_synced()
    popper = Popper(fifo)
    await popper.drain()
    assert popper.initial == [True]
    assert fifo.has_synced()


async def test_has_synced_turns_true_only_once_the_last_initial_batch_is_processed() -> None:
    fifo = new_fifo()
    await fifo.replace([o1, o2, o3], "1")
    during: list[bool] = []

    def process(batch: DeltasBatch) -> None:
        during.extend(fifo.has_synced() for _ in batch)

    await fifo.pop_batch(process, max_keys=2)
    assert not fifo.has_synced()
    waiter = asyncio.create_task(fifo.wait_synced())
    await fifo.pop_batch(process, max_keys=2)
    assert fifo.has_synced()
    assert await waiter
    assert during == [False, False, False]


async def test_cancelling_an_async_process_loses_what_it_took_and_keeps_the_rest() -> None:
    fifo = new_fifo()
    await fifo.replace([o1, o2], "1")
    started = asyncio.Event()

    async def process(batch: DeltasBatch) -> None:
        for _ in batch:
            started.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(fifo.pop_batch(process))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fifo.list_keys() == ["foo2"]
    assert not fifo.has_synced()
    await fifo.pop_batch(take_all)
    assert fifo.has_synced()


async def test_cancelling_a_waiting_pop_batch_loses_nothing() -> None:
    fifo = new_fifo()
    task = asyncio.create_task(fifo.pop_batch(lambda batch: None))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await fifo.add(o1)
    popper = Popper(fifo)
    await fifo.pop_batch(popper.process)
    assert popper.batches == [[("foo1", [(Added, o1)])]]


async def test_pop_and_pop_batch_share_one_queue() -> None:
    fifo = new_fifo()
    for obj in (o1, o2, o3):
        await fifo.add(obj)
    single = await fifo.pop(lambda deltas: None)
    assert single == [Delta(Added, o1)]
    popper = Popper(fifo)
    await popper.drain()
    assert popper.batches == [[("foo2", [(Added, o2)]), ("foo3", [(Added, o3)])]]


async def test_two_batch_poppers_each_take_different_keys() -> None:
    fifo = new_fifo()
    first, second = Popper(fifo), Popper(fifo)
    tasks = [
        asyncio.create_task(fifo.pop_batch(first.process)),
        asyncio.create_task(fifo.pop_batch(second.process)),
    ]
    await asyncio.sleep(0)
    await fifo.add(o1)
    await asyncio.sleep(0)
    await fifo.add(o2)
    await asyncio.gather(*tasks)
    assert first.batches == [[("foo1", [(Added, o1)])]]
    assert second.batches == [[("foo2", [(Added, o2)])]]


def added(name: str, rv: int) -> WatchEvent:
    return WatchEvent("ADDED", {"metadata": {"name": name, "resourceVersion": str(rv)}})


async def test_poppers_wait_on_the_fifos_condition_notified_once_per_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The FIFO is asyncio.Condition-driven: a popper waits on it, and a producer call
    # notifies it once however many keys it queued (a watch's batch is one call).
    fifo = DeltaFIFO()
    condition = fifo._condition
    assert isinstance(condition, asyncio.Condition)
    notified: list[int] = []
    notify = condition.notify

    def counting(n: int = 1) -> None:
        notified.append(n)
        notify(n)

    monkeypatch.setattr(condition, "notify", counting)
    popped: list[list[str]] = []

    def process(batch: DeltasBatch) -> None:
        popped.append([key for key, _ in batch])

    popper = asyncio.create_task(fifo.pop_batch(process))
    await asyncio.sleep(0)
    await fifo.apply_events(
        [
            WatchEvent("ADDED", {"metadata": {"name": f"p{i}", "resourceVersion": str(i)}})
            for i in range(50)
        ]
    )
    await asyncio.wait_for(popper, timeout=5)
    assert len(notified) == 1
    assert popped == [[f"p{i}" for i in range(50)]]
    # Nobody waits: nothing is notified.
    await fifo.apply_events(
        [WatchEvent("ADDED", {"metadata": {"name": "q", "resourceVersion": "51"}})]
    )
    assert len(notified) == 1
