"""Atomic relists and resyncs: what a ``replace`` or a ``resync`` queued reaches the cache
in one step.

Covers :class:`~aioinformer.delta_fifo.DeltaFIFO` with ``atomic=True`` (the cases of
client-go's atomic FIFO tests, as they apply to a per-key queue: one group whatever
``max_keys``, earlier changes kept in front of the replace, several replaces in order,
resyncs) and the informer built on it: a task reading the lister on every loop turn while
a relist changes every one of three batches' worth of objects sees the whole old state or
the whole new one, never a mix, in both cache modes and both pipelines (``in_order``).

Task model: each test runs on the test's event loop; the informer tests run the informer
in ``async with`` and a reader task beside it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.delta_fifo import (
    DeletedFinalStateUnknown,
    DeltaFIFO,
    DeltasBatch,
    DeltaType,
)
from aioinformer.indexer import Indexer, meta_namespace_key
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import (
    BACKOFF,
    EXPIRED,
    pod,
    relist_after_lost_history,
    scripted_informer,
)
from tests._support_tasks import settle
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.informer import CacheMode

Popped = list[list[tuple[str, list[tuple[DeltaType, Any]]]]]
"""What each ``process`` call received: per key, its deltas as ``(type, object)``."""


def obj(name: str, value: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "value": value}


async def pop_once(fifo: DeltaFIFO, *, max_keys: int = 1) -> Popped:
    """One ``pop_batch`` call; each of its ``process`` calls as one list."""
    calls: Popped = []

    def process(batch: DeltasBatch) -> None:
        calls.append([(key, [(d.type, d.object) for d in deltas]) for key, deltas in batch])

    await fifo.pop_batch(process, max_keys=max_keys)
    return calls


# -- the FIFO ----------------------------------------------------------------------------


async def test_a_replace_leaves_as_one_batch_whatever_max_keys() -> None:
    fifo = DeltaFIFO(atomic=True)
    await fifo.replace([obj(f"o{i}", i) for i in range(2500)], "10")
    calls = await pop_once(fifo, max_keys=1)
    assert len(calls) == 1
    assert [key for key, _ in calls[0]] == [f"ns/o{i}" for i in range(2500)]
    assert len(fifo) == 0
    assert fifo.has_synced()


async def test_without_atomic_a_replace_leaves_in_batches_of_max_keys() -> None:
    fifo = DeltaFIFO()
    await fifo.replace([obj(f"o{i}", i) for i in range(5)], "10")
    assert [len(call) for call in await pop_once(fifo, max_keys=2)] == [2]


async def test_an_added_object_is_in_the_same_group_as_the_replace_that_drops_it() -> None:
    fifo = DeltaFIFO(atomic=True)
    await fifo.add(obj("foo", 2))
    await fifo.add(obj("bar", 1))
    await fifo.replace([], "123")
    calls = await pop_once(fifo)
    assert calls == [
        [
            (
                "ns/foo",
                [
                    (DeltaType.ADDED, obj("foo", 2)),
                    (DeltaType.DELETED, DeletedFinalStateUnknown("ns/foo", obj("foo", 2))),
                ],
            ),
            (
                "ns/bar",
                [
                    (DeltaType.ADDED, obj("bar", 1)),
                    (DeltaType.DELETED, DeletedFinalStateUnknown("ns/bar", obj("bar", 1))),
                ],
            ),
        ]
    ]
    assert len(fifo) == 0


async def test_several_replaces_reach_the_consumer_in_order() -> None:
    fifo = DeltaFIFO(atomic=True)
    foo = obj("foo", 2)
    await fifo.add(foo)
    await fifo.add(obj("bar", 1))
    await fifo.replace([foo], "10")
    await fifo.replace([foo, obj("baz", 3)], "20")
    await fifo.replace([], "56")
    calls = await pop_once(fifo)
    assert len(calls) == 1
    deltas = dict(calls[0])
    assert [t for t, _ in deltas["ns/foo"]] == [
        DeltaType.ADDED,
        DeltaType.REPLACED,
        DeltaType.REPLACED,
        DeltaType.DELETED,
    ]
    assert [t for t, _ in deltas["ns/baz"]] == [DeltaType.REPLACED, DeltaType.DELETED]
    assert [t for t, _ in deltas["ns/bar"]] == [DeltaType.ADDED, DeltaType.DELETED]
    assert len(fifo) == 0


async def test_a_replace_after_an_add_pops_both_values_then_nothing() -> None:
    fifo = DeltaFIFO(atomic=True)
    await fifo.add(obj("foo", 10))
    await fifo.replace([obj("foo", 15)], "20")
    assert await pop_once(fifo) == [
        [("ns/foo", [(DeltaType.ADDED, obj("foo", 10)), (DeltaType.REPLACED, obj("foo", 15))])]
    ]
    assert len(fifo) == 0
    assert fifo.list_keys() == []


async def test_keys_queued_after_the_group_leave_after_it() -> None:
    fifo = DeltaFIFO(atomic=True)
    await fifo.replace([obj("a", 1), obj("b", 1), obj("c", 1)], "10")
    await fifo.update(obj("b", 2))  # joins its key inside the group
    await fifo.add(obj("d", 1))  # queues behind the group
    first = await pop_once(fifo, max_keys=1)
    assert [key for key, _ in first[0]] == ["ns/a", "ns/b", "ns/c"]
    assert [t for t, _ in dict(first[0])["ns/b"]] == [DeltaType.REPLACED, DeltaType.UPDATED]
    assert await pop_once(fifo, max_keys=1) == [[("ns/d", [(DeltaType.ADDED, obj("d", 1))])]]


async def test_a_resync_leaves_as_one_group_with_what_was_queued_before() -> None:
    known: Indexer[Any] = Indexer(meta_namespace_key)
    for i in range(5):
        known.add(obj(f"o{i}", i))
    fifo = DeltaFIFO(known_objects=known, atomic=True)
    await fifo.update(obj("o0", 10))
    await fifo.resync()
    calls = await pop_once(fifo, max_keys=2)
    assert len(calls) == 1
    assert calls[0][0] == ("ns/o0", [(DeltaType.UPDATED, obj("o0", 10))])
    assert [(key, [t for t, _ in d]) for key, d in calls[0][1:]] == [
        (f"ns/o{i}", [DeltaType.SYNC]) for i in range(1, 5)
    ]


async def test_a_resync_that_queues_nothing_makes_no_group() -> None:
    fifo = DeltaFIFO(known_objects=Indexer(meta_namespace_key), atomic=True)
    await fifo.add(obj("a", 1))
    await fifo.add(obj("b", 1))
    await fifo.resync()
    assert [len(call) for call in await pop_once(fifo, max_keys=1)] == [1]


async def test_a_group_past_the_initial_list_is_split_there_without_suspending() -> None:
    fifo = DeltaFIFO(atomic=True)
    await fifo.replace([obj("a", 1), obj("b", 1)], "10")
    await fifo.replace([obj("a", 2), obj("b", 2), obj("c", 2)], "20")
    turns = 0

    async def count_turns() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count_turns())
    await asyncio.sleep(0)
    seen: list[tuple[list[str], bool, int]] = []

    def process(batch: DeltasBatch) -> None:
        seen.append(([key for key, _ in batch], fifo.has_synced(), turns))

    try:
        await fifo.pop_batch(process, max_keys=1)
    finally:
        counter.cancel()
    # The initial keys with has_synced() false, the rest with it true, and no loop
    # turn in between.
    assert [(keys, synced) for keys, synced, _ in seen] == [
        (["ns/a", "ns/b"], False),
        (["ns/c"], True),
    ]
    assert seen[0][2] == seen[1][2]


# -- the informer ------------------------------------------------------------------------

OBJECTS = 300
"""Three batches of :data:`BATCH_KEYS`, so a relist split into batches would show."""

BATCH_KEYS = 100
"""The room of a ``"block"`` handler that takes every call at once: each batch the
informer pops has at most this many keys (the default, 1000, would need thousands of
objects, each deep-copied on every LIST)."""


def steps(objs: list[Any]) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["labels"]["step"] for o in objs}


@pytest.mark.parametrize("in_order", [False, True], ids=["coalescing", "in-order"])
async def test_a_lister_read_during_a_relist_sees_the_old_state_or_the_new_one(
    cache: CacheMode, in_order: bool
) -> None:
    source = FakeListerWatcher(objects=[pod(f"p{i:04}") for i in range(OBJECTS)])
    clock = FakeClock()
    informer = scripted_informer(source, clock, cache, in_order=in_order)
    informer.add_event_handler(
        on_update=lambda old, new: None, max_pending=BATCH_KEYS, overflow="block"
    )
    reads: list[dict[str, str]] = []

    async def read_every_turn() -> None:
        lister = informer.lister()
        # Until the new state shows, and a few turns more in case it is not whole yet.
        while reads.count(new) < 3:
            reads.append(steps(lister.list()))
            await asyncio.sleep(0)

    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        old = steps(source.objects())
        # Every object changes, some go and others come, while no watch tells: only
        # the relist can carry it.
        for i in range(BATCH_KEYS):
            source.delete(f"default/p{i:04}", notify=False)
            source.add(pod(f"n{i:04}", 1), notify=False)
        for i in range(BATCH_KEYS, OBJECTS):
            source.modify(pod(f"p{i:04}", 1), notify=False)
        new = steps(source.objects())
        reader = asyncio.create_task(read_every_turn())
        await relist_after_lost_history(informer, source, clock)
        await reader
    mixed = [read for read in reads if read not in (old, new)]
    assert not mixed, f"{len(mixed)} of {len(reads)} reads saw a mix of old and new"
    assert reads[0] == old
    assert reads[-1] == new


@pytest.mark.parametrize("in_order", [False, True], ids=["coalescing", "in-order"])
async def test_a_relist_waits_for_room_under_a_blocking_handler_then_goes_in_whole(
    in_order: bool,
) -> None:
    source = FakeListerWatcher(objects=[pod(f"p{i}") for i in range(20)])
    clock = FakeClock()
    informer = scripted_informer(source, clock, "objects", in_order=in_order)
    gate = asyncio.Event()
    gate.set()

    async def on_update(old: Any, new: Any) -> None:
        await gate.wait()

    registration = informer.add_event_handler(on_update=on_update, max_pending=2, overflow="block")
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        old = steps(informer.lister().list())
        gate.clear()
        source.modify(pod("p0", 1))  # the handler sits in this call
        source.modify(pod("p1", 1))
        source.modify(pod("p2", 1))  # and these fill its queue
        await wait_until(lambda: registration.statistics().pending == 2)
        for i in range(3, 20):
            source.modify(pod(f"p{i}", 1), notify=False)
        lists = len(source.list_calls)
        source.error_next_watch(EXPIRED)
        source.reset_watch()
        source.drop_watches()
        while len(source.list_calls) == lists:
            await clock.advance(BACKOFF)
            await settle(50)
        await settle(200)
        # Listed and queued, but not applied: the handler has no room.
        assert informer.statistics().fifo_pending > 0
        assert steps(informer.lister().list()) == {**old, "p0": "1", "p1": "1", "p2": "1"}
        gate.set()
        await wait_until(lambda: set(steps(informer.lister().list()).values()) == {"1"})
