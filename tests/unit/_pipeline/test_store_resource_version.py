"""The resourceVersion a DeltaFIFO's consumer has applied: ordering resourceVersions,
the applied-through point under per-key coalescing, bookmarks, and waiting for it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aioinformer.delta_fifo import DeltaFIFO, Deltas, DeltasBatch, Requeue
from aioinformer.indexer import Indexer
from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import WatchEvent
from aioinformer.reflector import Cursor, TemporaryStore, WatchRead
from aioinformer.resource_version import compare_resource_versions, parse_resource_version
from aioinformer.testing import FakeClock, FakeListerWatcher
from aioinformer.testing._faults import FaultPlan
from aioinformer.testing._resources import BUILTIN_TYPES
from tests.unit.test_reflector_watch_read import Scripted, initial_events_end, pod


def cm(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def fifo() -> DeltaFIFO:
    return DeltaFIFO(known_objects=Indexer[Any]().known_objects)


def ignore(_: Deltas) -> None:
    return None


# -- comparing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "order"),
    [
        ("1", "2", -1),
        ("2", "1", 1),
        ("7", "7", 0),
        ("0", "1", -1),
        ("9", "10", -1),
        ("99999999999999999999999", "100000000000000000000000", -1),
    ],
)
def test_resource_versions_compare_as_integers(a: str, b: str, order: int) -> None:
    assert compare_resource_versions(a, b) == order


@pytest.mark.parametrize("bad", ["", "abc", "01", "-1", "+1", " 1", "1 ", "1.5", "١٢"])
def test_a_resource_version_that_is_not_a_plain_number_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not comparable"):
        compare_resource_versions(bad, "1")
    with pytest.raises(ValueError, match="not comparable"):
        compare_resource_versions("1", bad)


def test_parse_gives_the_number() -> None:
    assert parse_resource_version("0") == 0
    assert parse_resource_version("123") == 123


# -- applied-through ---------------------------------------------------------------


async def test_popping_a_key_does_not_apply_its_newer_event_past_another_queued_key() -> None:
    f = fifo()
    await f.add(cm("a", "1"))
    await f.add(cm("b", "2"))
    await f.update(cm("a", "3"))  # joins a's deltas, ahead of b's event
    assert f.last_store_resource_version == ""
    popped = await f.pop(ignore)
    assert [d.object["metadata"]["resourceVersion"] for d in popped] == ["1", "3"]
    # b's event (2) still waits, so 3 is not applied through, only 1.
    assert f.last_store_resource_version == "1"
    await f.pop(ignore)
    assert f.last_store_resource_version == "3"


async def test_a_replace_counts_once_all_it_queued_is_processed() -> None:
    f = fifo()
    await f.add(cm("a", "4"))
    await f.replace([cm("a", "5"), cm("b", "5")], "9")
    await f.pop(ignore)  # a: its add and its replaced state
    assert f.last_store_resource_version == "4"
    await f.pop(ignore)  # b
    assert f.last_store_resource_version == "9"


async def test_an_empty_replace_counts_at_once() -> None:
    f = fifo()
    await f.replace([], "12")
    assert f.last_store_resource_version == "12"


async def test_a_bookmark_counts_once_everything_before_it_is_processed() -> None:
    f = fifo()
    await f.bookmark("3")
    assert f.last_store_resource_version == "3"
    await f.add(cm("a", "4"))
    await f.bookmark("8")
    assert f.last_store_resource_version == "3"
    await f.pop(ignore)
    assert f.last_store_resource_version == "8"


async def test_a_delete_of_an_unknown_key_counts_at_once() -> None:
    f = fifo()
    await f.delete(cm("gone", "6"))
    assert len(f) == 0
    assert f.last_store_resource_version == "6"


async def test_a_resync_keeps_the_resource_version_and_waits_its_turn() -> None:
    indexer = Indexer[Any]()
    indexer.add(cm("a", "2"))
    f = DeltaFIFO(known_objects=indexer.known_objects)
    await f.replace([cm("a", "2")], "2")
    await f.pop(ignore)
    assert f.last_store_resource_version == "2"
    await f.resync()
    await f.bookmark("5")
    assert f.last_store_resource_version == "2"
    await f.pop(ignore)
    assert f.last_store_resource_version == "5"


async def test_an_event_being_processed_holds_the_resource_version_back() -> None:
    f = fifo()
    await f.add(cm("a", "1"))
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(_: Deltas) -> None:
        entered.set()
        await release.wait()

    popping = asyncio.create_task(f.pop(slow))
    await entered.wait()
    await f.bookmark("7")  # nothing queued, but a is not applied yet
    assert f.last_store_resource_version == ""
    release.set()
    await popping
    assert f.last_store_resource_version == "7"


async def test_a_second_popper_finishing_first_does_not_apply_past_the_first() -> None:
    f = fifo()
    await f.add(cm("a", "1"))
    await f.add(cm("b", "2"))
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(_: Deltas) -> None:
        entered.set()
        await release.wait()

    first = asyncio.create_task(f.pop(slow))  # takes a, and suspends
    await entered.wait()
    await f.pop(ignore)  # b, done while a is not
    assert f.last_store_resource_version == ""
    release.set()
    await first
    assert f.last_store_resource_version == "2"


async def test_a_requeued_key_holds_the_resource_version_back_wherever_it_lands() -> None:
    f = fifo()
    await f.add(cm("a", "1"))
    await f.add(cm("b", "2"))

    def refuse(_: Deltas) -> None:
        raise Requeue

    await f.pop(refuse)  # a goes back behind b, with its event 1
    await f.bookmark("3")
    await f.pop(ignore)  # b
    assert f.list_keys() == ["ns/a"]
    assert f.last_store_resource_version == ""
    await f.pop(ignore)
    assert f.last_store_resource_version == "3"


async def test_a_batch_applies_through_what_it_took_and_no_further() -> None:
    f = fifo()
    await f.add(cm("a", "1"))
    await f.add(cm("b", "2"))
    await f.update(cm("a", "3"))
    await f.add(cm("c", "4"))
    seen: list[str] = []

    def two(batch: DeltasBatch) -> None:
        for key, _ in batch:
            seen.append(key)

    await f.pop_batch(two, max_keys=2)
    assert seen == ["ns/a", "ns/b"]
    assert f.last_store_resource_version == "3"
    await f.pop_batch(two)
    assert f.last_store_resource_version == "4"


async def test_a_requeue_inside_a_batch_holds_the_resource_version_back() -> None:
    f = fifo()
    await f.add(cm("a", "1"))
    await f.add(cm("b", "2"))

    def refuse_b(batch: DeltasBatch) -> None:
        for key, _ in batch:
            if key == "ns/b":
                raise Requeue

    await f.pop_batch(refuse_b)
    assert f.last_store_resource_version == "1"
    await f.pop_batch(refuse_b)  # b refused again
    assert f.last_store_resource_version == "1"
    await f.pop(ignore)
    assert f.last_store_resource_version == "2"


# -- waiting -----------------------------------------------------------------------


async def test_a_waiter_wakes_when_the_resource_version_is_reached_and_not_before() -> None:
    f = fifo()
    waiting = asyncio.create_task(f.wait_for_resource_version("5"))
    await f.add(cm("a", "4"))
    await f.pop(ignore)
    await asyncio.sleep(0)
    assert not waiting.done()
    await f.bookmark("6")  # past the one waited for
    assert await waiting is True
    assert await f.wait_for_resource_version("6") is True


async def test_waiters_get_false_when_the_fifo_closes() -> None:
    f = fifo()
    waiting = asyncio.create_task(f.wait_for_resource_version("5"))
    await asyncio.sleep(0)
    f.close()
    assert await waiting is False
    assert await f.wait_for_resource_version("5") is False


async def test_a_cancelled_wait_leaves_no_waiter_behind() -> None:
    f = fifo()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0):
            await f.wait_for_resource_version("5")
    assert not f._applied._waiters
    await f.bookmark("5")
    assert f.last_store_resource_version == "5"


async def test_waiting_for_an_incomparable_resource_version_raises() -> None:
    f = fifo()
    with pytest.raises(ValueError, match="not comparable"):
        await f.wait_for_resource_version("")


async def test_an_opaque_store_resource_version_satisfies_no_waiter() -> None:
    f = fifo()
    await f.bookmark("opaque-rv")
    assert f.last_store_resource_version == "opaque-rv"
    waiting = asyncio.create_task(f.wait_for_resource_version("1"))
    await asyncio.sleep(0)
    assert not waiting.done()
    f.close()
    assert await waiting is False


# -- bookmarks from the watch ------------------------------------------------------


def bookmark(rv: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": rv}}


async def test_a_watch_hands_each_bookmark_to_a_store_that_takes_them() -> None:
    f = fifo()
    stream = Scripted(
        [
            WatchEvent("ADDED", pod("a", "2")),
            WatchEvent("BOOKMARK", bookmark("5")),
        ]
    )
    read = WatchRead(stream, f, Cursor("1"), name="pods", clock=FakeClock(), deadline=10.0)
    await read.run()
    assert f.last_store_resource_version == ""
    await f.pop(ignore)
    assert f.last_store_resource_version == "5"


async def test_a_streaming_list_keeps_its_closing_bookmark_from_the_temporary_store() -> None:
    temporary = TemporaryStore()
    stream = Scripted(
        [
            WatchEvent("ADDED", pod("a", "2")),
            WatchEvent("BOOKMARK", bookmark("3")),
            WatchEvent("BOOKMARK", initial_events_end("4")),
        ]
    )
    read = WatchRead(
        stream,
        temporary,
        Cursor(""),
        name="pods",
        clock=FakeClock(),
        deadline=10.0,
        until_initial_events_end=True,
    )
    done, _ = await read.run()
    assert done
    assert list(temporary.items) == ["ns/a"]


# -- the fake server's lagging watch -----------------------------------------------


def test_a_watch_event_delay_applies_to_its_resource_and_clears() -> None:
    plan = FaultPlan()
    by_plural = {rt.plural: rt for rt in BUILTIN_TYPES}
    configmaps, pods = by_plural["configmaps"], by_plural["pods"]
    assert plan.watch_event_delay(configmaps) == 0.0
    plan.event_delay, plan.event_delay_resource = 2.0, "configmaps"
    assert plan.watch_event_delay(configmaps) == 2.0
    assert plan.watch_event_delay(pods) == 0.0
    plan.event_delay_resource = None
    assert plan.watch_event_delay(pods) == 2.0
    plan.clear()
    assert plan.watch_event_delay(pods) == 0.0


# -- the informer's view -----------------------------------------------------------


@pytest.mark.parametrize("in_order", [False, True])
async def test_an_informer_waits_from_before_it_starts_and_follows_bookmarks(
    in_order: bool,
) -> None:
    lw = FakeListerWatcher(objects=[pod("a", "0")])
    informer = SharedIndexInformer(lw, in_order=in_order)
    assert informer.last_store_resource_version == ""
    listed = asyncio.create_task(informer.wait_for_resource_version(lw.resource_version))
    async with informer:
        assert await listed is True
        assert informer.last_store_resource_version == lw.resource_version
        await lw.wait_for_watchers(1)

        lw.add(pod("b", "0"), notify=False)  # a change this watch never shows
        assert informer.last_sync_resource_version != lw.resource_version
        bookmarked = asyncio.create_task(informer.wait_for_resource_version(lw.resource_version))
        lw.send_bookmark()
        assert await bookmarked is True
        assert informer.last_store_resource_version == lw.resource_version
        assert informer.lister().get("b", namespace="ns") is None
    assert await informer.wait_for_resource_version(str(int(lw.resource_version) + 1)) is False
