"""The applied resourceVersion where batches are bigger than one key: an atomic
DeltaFIFO's relist group, and the in-order queue (:class:`~aioinformer.real_fifo.RealFIFO`),
where it is that of the newest item processed, bookmarks queued in their place."""

from __future__ import annotations

import asyncio
from typing import Any

from aioinformer.delta_fifo import DeltaFIFO, DeltasBatch
from aioinformer.indexer import Indexer
from aioinformer.real_fifo import InOrderBatch, RealFIFO


def cm(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def take(batch: DeltasBatch | InOrderBatch) -> None:
    for _ in batch:
        pass


class Gate:
    """An async ``process`` that iterates its batch, records the keys, then waits to be
    released: the batch is taken but not yet done."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.keys: list[str] = []

    async def __call__(self, batch: DeltasBatch | InOrderBatch) -> None:
        self.keys.extend(key for key, _ in batch)
        self.entered.set()
        await self.release.wait()


# -- an atomic DeltaFIFO -------------------------------------------------------------


async def test_an_atomic_group_counts_only_once_its_whole_process_call_returns() -> None:
    indexer = Indexer[Any]()
    f = DeltaFIFO(known_objects=indexer.known_objects, atomic=True)
    await f.replace([cm("a", "1")], "1")
    await f.pop_batch(take)
    assert f.last_store_resource_version == "1"
    await f.replace([cm("a", "2"), cm("b", "2"), cm("c", "2")], "5")
    gate = Gate()
    popping = asyncio.create_task(f.pop_batch(gate, max_keys=1))
    await gate.entered.wait()
    # Every key of the group is out of the queue, but the call has not returned.
    assert gate.keys == ["ns/a", "ns/b", "ns/c"]
    assert len(f) == 0
    assert f.last_store_resource_version == "1"
    gate.release.set()
    assert await popping == 3
    assert f.last_store_resource_version == "5"


async def test_an_atomic_group_cut_at_the_end_of_the_first_list_counts_as_a_whole() -> None:
    f = DeltaFIFO(atomic=True)
    await f.replace([cm("a", "1"), cm("b", "1")], "3")
    await f.add(cm("c", "4"))
    await f.replace([cm("a", "5"), cm("b", "5"), cm("c", "5")], "6")
    calls: list[list[str]] = []

    def record(batch: DeltasBatch) -> None:
        calls.append([key for key, _ in batch])

    # Two process calls (the first list's keys, then the rest), one pop_batch.
    assert await f.pop_batch(record, max_keys=1) == 3
    assert calls == [["ns/a", "ns/b"], ["ns/c"]]
    assert f.last_store_resource_version == "6"


# -- the in-order queue --------------------------------------------------------------


async def test_in_order_each_batch_applies_its_newest_item() -> None:
    f = RealFIFO()
    await f.add(cm("a", "1"))
    await f.update(cm("a", "2"))
    await f.add(cm("b", "3"))
    assert f.last_store_resource_version == ""
    assert await f.pop_batch(take, max_keys=2) == 2
    assert f.last_store_resource_version == "2"
    await f.pop_batch(take)
    assert f.last_store_resource_version == "3"


async def test_in_order_a_relist_counts_as_its_lists_resource_version() -> None:
    indexer = Indexer[Any]()
    f = RealFIFO(known_objects=indexer.known_objects)
    await f.replace([cm("a", "3"), cm("b", "2")], "9")
    await f.pop_batch(take)
    assert f.last_store_resource_version == "9"


async def test_in_order_an_empty_first_list_counts_at_once() -> None:
    f = RealFIFO()
    await f.replace([], "4")
    assert f.has_synced()
    assert f.last_store_resource_version == "4"


async def test_in_order_a_resync_keeps_the_resource_version() -> None:
    indexer = Indexer[Any]()
    f = RealFIFO(known_objects=indexer.known_objects)
    await f.add(cm("a", "1"))
    await f.pop_batch(take)
    indexer.add(cm("a", "1"))
    await f.resync()
    await f.pop_batch(take)
    assert f.last_store_resource_version == "1"


async def test_in_order_a_bookmark_on_an_idle_queue_counts_at_once() -> None:
    f = RealFIFO()
    await f.bookmark("7")
    assert f.last_store_resource_version == "7"
    assert len(f) == 0


async def test_in_order_a_bookmark_waits_behind_what_is_queued_and_is_never_handed_out() -> None:
    f = RealFIFO()
    await f.add(cm("a", "1"))
    await f.bookmark("5")
    await f.add(cm("b", "6"))
    handed: list[str] = []

    def record(batch: InOrderBatch) -> None:
        handed.extend(key for key, _ in batch)

    assert f.last_store_resource_version == ""
    assert await f.pop_batch(record) == 1  # stops at the bookmark
    assert f.last_store_resource_version == "5"
    assert await f.pop_batch(record) == 1
    assert handed == ["ns/a", "ns/b"]
    assert f.last_store_resource_version == "6"
    assert len(f) == 0


async def test_in_order_a_bookmark_during_a_batch_counts_once_the_batch_is_done() -> None:
    f = RealFIFO()
    await f.add(cm("a", "1"))
    gate = Gate()
    popping = asyncio.create_task(f.pop_batch(gate))
    await gate.entered.wait()
    await f.bookmark("7")  # nothing queued, but a is not applied yet
    assert f.last_store_resource_version == ""
    gate.release.set()
    await popping
    assert f.last_store_resource_version == "7"
    assert len(f) == 0


async def test_in_order_a_waiter_wakes_when_reached_and_gets_false_on_close() -> None:
    f = RealFIFO()
    reached = asyncio.create_task(f.wait_for_resource_version("2"))
    never = asyncio.create_task(f.wait_for_resource_version("9"))
    await f.add(cm("a", "2"))
    await asyncio.sleep(0)
    assert not reached.done()
    await f.pop_batch(take)
    assert await reached is True
    f.close()
    assert await never is False
    assert await f.wait_for_resource_version("9") is False
