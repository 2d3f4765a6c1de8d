"""The in-order queue, :class:`~aioinformer.real_fifo.RealFIFO`: the cases of client-go's
``the_real_fifo_test.go`` as they apply here.

Where client-go computes a relist's deletions when the relist is queued (against the queue
and the cache), ours computes them when the relist is handed out, against the cache the
consumer has filled from everything before it; so the tests drain through a consumer that
applies each change to an :class:`~aioinformer.indexer.Indexer`, as the informer does, and
the outcomes are the same as client-go's.

Task model: each test runs on the test's event loop; producers never suspend.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.delta_fifo import DeletedFinalStateUnknown, DeltaType
from aioinformer.errors import FIFOClosedError
from aioinformer.indexer import Indexer, meta_namespace_key
from aioinformer.real_fifo import InOrderBatch, RealFIFO

if TYPE_CHECKING:
    from collections.abc import Iterable

Change = tuple[DeltaType, Any]

ADDED, UPDATED, DELETED = DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED
REPLACED, SYNC = DeltaType.REPLACED, DeltaType.SYNC


def obj(name: str, value: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "value": value}


def tombstone(name: str, value: Any) -> DeletedFinalStateUnknown:
    return DeletedFinalStateUnknown(f"ns/{name}", obj(name, value))


class Consumer:
    """Pops batches and applies each change to :attr:`cache`, as the informer does;
    records what each batch held and whether it was in the initial list."""

    def __init__(self, *, cached: Iterable[dict[str, Any]] = ()) -> None:
        self.cache: Indexer[Any] = Indexer(meta_namespace_key)
        for o in cached:
            self.cache.add(o)
        self.batches: list[list[Change]] = []
        self.initial: list[bool] = []

    def fifo(self, **options: Any) -> RealFIFO:
        return RealFIFO(known_objects=self.cache.known_objects, **options)

    def apply(self, fifo: RealFIFO, batch: InOrderBatch) -> None:
        self.initial.append(not fifo.has_synced())
        changes: list[Change] = []
        for key, deltas in batch:
            assert len(deltas) == 1
            delta = deltas[0]
            if delta.type is DELETED:
                self.cache.delete_by_key(key)
            else:
                self.cache.put_by_key(key, delta.object)
            changes.append((delta.type, delta.object))
        self.batches.append(changes)

    async def pop(self, fifo: RealFIFO, *, max_keys: int = 1000) -> list[Change]:
        await fifo.pop_batch(lambda batch: self.apply(fifo, batch), max_keys=max_keys)
        return self.batches[-1]

    async def drain(self, fifo: RealFIFO, *, max_keys: int = 1000) -> list[Change]:
        """Every change handed out until the queue is empty, in order."""
        changes: list[Change] = []
        while len(fifo):
            changes += await self.pop(fifo, max_keys=max_keys)
        return changes


async def test_changes_leave_in_the_order_they_came() -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    for i in range(500):
        await fifo.add(obj(f"a{i}", i))
        await fifo.add(obj(f"b{i}", -i))
    changes = await consumer.drain(fifo, max_keys=7)
    assert [o["metadata"]["name"] for _, o in changes] == [
        name for i in range(500) for name in (f"a{i}", f"b{i}")
    ]


async def test_a_relist_after_a_queued_delete_replaces_without_a_tombstone() -> None:
    old, new = obj("foo", 1), obj("foo", 2)
    consumer = Consumer(cached=[old])
    fifo = consumer.fifo()
    await fifo.delete(old)
    await fifo.replace([new], "")
    assert await consumer.drain(fifo) == [(DELETED, old), (REPLACED, new)]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        pytest.param(
            [("add", obj("foo", 2)), ("replace", [])],
            [(ADDED, obj("foo", 2)), (DELETED, tombstone("foo", 2))],
            id="added object deleted on replace",
        ),
        pytest.param(
            [("add", obj("foo", 2)), ("delete", obj("foo", 2)), ("replace", [])],
            [(ADDED, obj("foo", 2)), (DELETED, obj("foo", 2))],
            id="deleted object has a single delete",
        ),
        pytest.param(
            [
                ("add", obj("foo", 2)),
                ("replace", [obj("foo", 2)]),
                ("replace", [obj("foo", 2)]),
                ("replace", []),
            ],
            [
                (ADDED, obj("foo", 2)),
                (REPLACED, obj("foo", 2)),
                (REPLACED, obj("foo", 2)),
                (DELETED, tombstone("foo", 2)),
            ],
            id="synced object has a single delete",
        ),
        pytest.param(
            [("add", obj("foo", 2)), ("replace", []), ("replace", [])],
            [(ADDED, obj("foo", 2)), (DELETED, tombstone("foo", 2))],
            id="added object has a single delete on several replaces",
        ),
        pytest.param(
            [
                ("add", obj("foo", 2)),
                ("delete", obj("foo", 2)),
                ("add", obj("foo", 3)),
                ("replace", []),
            ],
            [
                (ADDED, obj("foo", 2)),
                (DELETED, obj("foo", 2)),
                (ADDED, obj("foo", 3)),
                (DELETED, tombstone("foo", 3)),
            ],
            id="added, deleted and added object is deleted",
        ),
    ],
)
async def test_replace_makes_deletions_for_what_only_the_queue_held(
    script: list[tuple[str, Any]], expected: list[Change]
) -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    for op, arg in script:
        if op == "replace":
            await fifo.replace(arg, "0")
        else:
            await getattr(fifo, op)(arg)
    assert await consumer.drain(fifo, max_keys=1) == expected
    assert len(fifo) == 0


async def test_add_update_delete_of_one_object_are_three_changes() -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    await fifo.add(obj("foo", 10))
    await fifo.update(obj("foo", 12))
    await fifo.delete(obj("foo", 15))
    assert len(fifo) == 3
    assert await consumer.drain(fifo) == [
        (ADDED, obj("foo", 10)),
        (UPDATED, obj("foo", 12)),
        (DELETED, obj("foo", 15)),
    ]
    assert consumer.batches == [
        [(ADDED, obj("foo", 10)), (UPDATED, obj("foo", 12)), (DELETED, obj("foo", 15))]
    ]


async def test_the_transform_applies_to_queued_objects_but_not_tombstones_nor_resyncs() -> None:
    seen: list[Any] = []

    def transform(o: Any) -> Any:
        seen.append(o["value"])
        return {**o, "value": ("t", o["value"])}

    consumer = Consumer(cached=[obj("old", 0)])
    fifo = consumer.fifo(transform=transform)
    await fifo.add(obj("foo", 1))
    await fifo.update(obj("foo", 2))
    await fifo.delete(tombstone("bar", 3))
    await fifo.replace([obj("foo", 4)], "5")
    await fifo.resync()
    changes = await consumer.drain(fifo)
    assert seen == [1, 2, 4]
    assert changes == [
        (ADDED, obj("foo", ("t", 1))),
        (UPDATED, obj("foo", ("t", 2))),
        (DELETED, tombstone("bar", 3)),
        (DELETED, tombstone("old", 0)),
        (REPLACED, obj("foo", ("t", 4))),
        (SYNC, obj("foo", ("t", 4))),
    ]


async def test_a_delete_is_queued_whether_or_not_the_cache_holds_the_object() -> None:
    consumer = Consumer(cached=[obj("foo", 1)])
    fifo = consumer.fifo()
    await fifo.delete(obj("foo", 1))
    await fifo.delete(obj("bar", 1))
    assert await consumer.drain(fifo) == [(DELETED, obj("foo", 1)), (DELETED, obj("bar", 1))]


async def test_a_replace_after_an_add_is_an_added_then_a_replaced() -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    await fifo.add(obj("foo", 10))
    await fifo.replace([obj("foo", 15)], "20")
    assert await consumer.pop(fifo) == [(ADDED, obj("foo", 10))]
    assert await consumer.pop(fifo) == [(REPLACED, obj("foo", 15))]
    assert len(fifo) == 0


async def test_a_resync_after_a_delete_re_offers_nothing() -> None:
    consumer = Consumer(cached=[obj("foo", 5)])
    fifo = consumer.fifo()
    await fifo.delete(obj("foo", 5))
    await fifo.resync()
    assert await consumer.drain(fifo) == [(DELETED, obj("foo", 5))]


async def test_a_resync_re_offers_every_cached_object() -> None:
    consumer = Consumer(cached=[obj("foo", 5), obj("bar", 6)])
    fifo = consumer.fifo()
    await fifo.resync()
    await fifo.resync()  # one queued already: nothing more to offer
    assert len(fifo) == 1
    changes = await consumer.drain(fifo, max_keys=1)
    assert sorted(changes, key=repr) == sorted(
        [(SYNC, obj("foo", 5)), (SYNC, obj("bar", 6))], key=repr
    )
    assert len(consumer.batches) == 1


async def test_a_resync_without_known_objects_does_nothing() -> None:
    fifo = RealFIFO()
    await fifo.resync()
    assert len(fifo) == 0


async def test_a_resync_after_an_update_re_offers_the_updated_object() -> None:
    consumer = Consumer(cached=[obj("foo", 10)])
    fifo = consumer.fifo()
    await fifo.update(obj("foo", 12))
    await fifo.resync()
    assert await consumer.drain(fifo) == [(UPDATED, obj("foo", 12)), (SYNC, obj("foo", 12))]


async def test_a_relist_deletes_what_the_cache_holds_and_the_list_lacks() -> None:
    consumer = Consumer(cached=[obj("foo", 5), obj("bar", 6), obj("baz", 7)])
    fifo = consumer.fifo()
    await fifo.delete(obj("baz", 10))
    await fifo.replace([obj("foo", 5)], "0")
    changes = await consumer.drain(fifo)
    assert changes == [
        (DELETED, obj("baz", 10)),
        (DELETED, tombstone("bar", 6)),
        (REPLACED, obj("foo", 5)),
    ]
    assert consumer.cache.list_keys() == ["ns/foo"]


async def test_has_synced_waits_for_the_first_relist_not_for_what_follows() -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    await fifo.replace([obj("foo", 1), obj("bar", 2), obj("baz", 3)], "0")
    await fifo.delete(obj("foo", 1))
    assert not fifo.has_synced()
    assert await consumer.pop(fifo, max_keys=1) == [
        (REPLACED, obj("foo", 1)),
        (REPLACED, obj("bar", 2)),
        (REPLACED, obj("baz", 3)),
    ]
    assert fifo.has_synced()
    assert consumer.initial == [True]
    assert await consumer.pop(fifo) == [(DELETED, obj("foo", 1))]
    assert consumer.initial == [True, False]


async def test_no_change_jumps_the_line() -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    for name, value in [("foo", 10), ("bar", 1), ("foo", 11), ("foo", 13), ("zab", 30)]:
        await fifo.add(obj(name, value))
    changes = await consumer.drain(fifo, max_keys=2)
    assert [(o["metadata"]["name"], o["value"]) for _, o in changes] == [
        ("foo", 10),
        ("bar", 1),
        ("foo", 11),
        ("foo", 13),
        ("zab", 30),
    ]


def test_key_of() -> None:
    fifo = RealFIFO()
    assert fifo.key_of(obj("foo", 1)) == "ns/foo"
    assert fifo.key_of(DeletedFinalStateUnknown("ns/bar", None)) == "ns/bar"


@pytest.mark.parametrize(
    ("script", "synced_before", "pops_to_sync"),
    [
        pytest.param([], False, 0, id="empty"),
        pytest.param([("add", obj("a", 1))], True, 0, id="add"),
        pytest.param([("replace", [])], True, 0, id="empty replace"),
        pytest.param([("replace", [obj("a", 1), obj("b", 2)])], False, 1, id="replace"),
        pytest.param(
            [("replace", [obj("a", 1)]), ("add", obj("b", 2))], False, 1, id="replace then add"
        ),
        pytest.param(
            [("add", obj("a", 1)), ("replace", [obj("b", 2)])], True, 0, id="add then replace"
        ),
    ],
)
async def test_has_synced(
    script: list[tuple[str, Any]], synced_before: bool, pops_to_sync: int
) -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    for op, arg in script:
        if op == "replace":
            await fifo.replace(arg, "0")
        else:
            await getattr(fifo, op)(arg)
    assert fifo.has_synced() is synced_before
    for _ in range(pops_to_sync):
        await consumer.pop(fifo)
    if script:
        assert fifo.has_synced()
        assert await fifo.wait_synced()


async def test_a_waiting_pop_raises_once_closed() -> None:
    fifo = RealFIFO()
    popper = asyncio.create_task(fifo.pop_batch(lambda batch: None))
    await asyncio.sleep(0)
    assert not popper.done()
    fifo.close()
    with pytest.raises(FIFOClosedError):
        await popper
    assert not await fifo.wait_synced()


async def test_closing_lets_the_popper_drain_first() -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    await fifo.add(obj("a", 1))
    fifo.close()
    assert await consumer.pop(fifo) == [(ADDED, obj("a", 1))]
    with pytest.raises(FIFOClosedError):
        await consumer.pop(fifo)


async def test_a_batch_holds_up_to_max_keys_changes_and_stops_before_a_relist() -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    for value in range(5):
        await fifo.update(obj("foo", value))  # one key, five changes: all kept
    await fifo.replace([obj("foo", 9)], "9")
    await fifo.add(obj("bar", 1))
    await consumer.drain(fifo, max_keys=3)
    assert consumer.batches == [
        [(UPDATED, obj("foo", 0)), (UPDATED, obj("foo", 1)), (UPDATED, obj("foo", 2))],
        [(UPDATED, obj("foo", 3)), (UPDATED, obj("foo", 4))],
        [(REPLACED, obj("foo", 9))],
        [(ADDED, obj("bar", 1))],
    ]


async def test_a_relist_is_one_batch_whatever_max_keys() -> None:
    consumer = Consumer(cached=[obj(f"gone{i}", i) for i in range(50)])
    fifo = consumer.fifo()
    await fifo.replace([obj(f"o{i}", i) for i in range(2000)], "10")
    assert len(fifo) == 1
    assert len(await consumer.pop(fifo, max_keys=1)) == 2050
    assert len(fifo) == 0
    assert len(consumer.cache) == 2000


async def test_several_relists_run_in_order() -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    foo = obj("foo", 2)
    await fifo.add(foo)
    await fifo.replace([foo], "10")
    await fifo.replace([foo, obj("bar", 1)], "20")
    await fifo.replace([], "56")
    assert await consumer.drain(fifo, max_keys=1) == [
        (ADDED, foo),
        (REPLACED, foo),
        (REPLACED, foo),
        (REPLACED, obj("bar", 1)),
        (DELETED, tombstone("foo", 2)),
        (DELETED, tombstone("bar", 1)),
    ]
    assert [len(batch) for batch in consumer.batches] == [1, 1, 2, 2]


async def test_a_resync_after_an_add_is_its_own_batch() -> None:
    consumer = Consumer()
    fifo = consumer.fifo()
    await fifo.add(obj("foo", 2))
    await fifo.resync()
    assert await consumer.drain(fifo) == [(ADDED, obj("foo", 2)), (SYNC, obj("foo", 2))]
    assert [len(batch) for batch in consumer.batches] == [1, 1]


async def test_an_async_process_is_awaited() -> None:
    fifo = RealFIFO()
    await fifo.add(obj("a", 1))
    got: list[str] = []

    async def process(batch: InOrderBatch) -> None:
        await asyncio.sleep(0)
        got.extend(key for key, _ in batch)

    assert await fifo.pop_batch(process) == 1
    assert got == ["ns/a"]
    with pytest.raises(ValueError, match="max_keys"):
        await fifo.pop_batch(process, max_keys=0)
