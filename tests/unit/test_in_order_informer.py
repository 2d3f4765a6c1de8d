"""Informers built with ``in_order=True``: every watch event reaches the cache and the
handlers on its own, in the order the server sent it, where the default pipeline groups
the events queued meanwhile by object.

Covers the order across objects while the handlers hold the informer back, every
intermediate state reaching the handlers, a relist's differences (tombstones included),
the initial list's ``is_in_initial_list``, resyncs and ``events()``, in both cache modes.

Task model: each test runs an informer in ``async with`` on a ``FakeClock``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.informer import SharedIndexInformer
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import (
    Recorder,
    pod,
    relist_after_lost_history,
    scripted_informer,
    until_idle,
)
from tests._support_tasks import settle
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.informer import CacheMode


def step_of(obj: Any) -> str:
    return str(obj["metadata"]["labels"]["step"])


def summary(calls: list[tuple[Any, ...]]) -> list[tuple[str, ...]]:
    """Each call as ``(kind, name, step)``; a tombstone as ``("delete", key, "?")``."""
    out: list[tuple[str, ...]] = []
    for call in calls:
        obj = call[1] if call[0] != "update" else call[2]
        if isinstance(obj, DeletedFinalStateUnknown):
            out.append((call[0], obj.key, "?"))
        else:
            out.append((call[0], obj["metadata"]["name"], step_of(obj)))
    return out


@pytest.mark.parametrize(
    ("in_order", "expected"),
    [
        pytest.param(False, [("a", "1"), ("a", "2"), ("b", "1")], id="coalescing"),
        pytest.param(True, [("a", "1"), ("b", "1"), ("a", "2")], id="in-order"),
    ],
)
async def test_events_held_back_reach_handlers_grouped_by_object_or_in_order(
    cache: CacheMode, in_order: bool, expected: list[tuple[str, str]]
) -> None:
    source = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache, in_order=in_order)
    assert informer.in_order is in_order
    gate = asyncio.Event()
    updates: list[tuple[str, str]] = []

    async def on_add(obj: Any, initial: bool) -> None:
        if obj["metadata"]["name"] == "gate":
            await gate.wait()

    def on_update(old: Any, new: Any) -> None:
        updates.append((new["metadata"]["name"], step_of(new)))

    registration = informer.add_event_handler(
        on_add=on_add, on_update=on_update, max_pending=1, overflow="block"
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await wait_until(lambda: registration.statistics().pending == 0)
        source.add(pod("gate"))  # the handler sits in this call
        source.add(pod("filler"))  # and this one fills its queue: the informer waits
        await wait_until(lambda: registration.statistics().pending == 1)
        source.modify(pod("a", 1))
        source.modify(pod("b", 1))
        source.modify(pod("a", 2))
        await wait_until(lambda: informer.statistics().fifo_pending == (3 if in_order else 2))
        gate.set()
        await wait_until(lambda: len(updates) == 3)
    assert updates == expected


async def test_an_in_order_informer_delivers_every_change_and_a_relist_as_differences(
    cache: CacheMode,
) -> None:
    source = FakeListerWatcher(objects=[pod("a"), pod("b"), pod("c")])
    clock = FakeClock()
    informer = scripted_informer(source, clock, cache, in_order=True)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    events: list[tuple[str, str]] = []

    async def consume() -> None:
        async for event in informer.events():
            name = (
                event.object.key
                if isinstance(event.object, DeletedFinalStateUnknown)
                else event.object["metadata"]["name"]
            )
            events.append((event.type, name))

    async with informer:
        consumer = asyncio.create_task(consume())
        assert await informer.wait_for_sync(timeout=5)
        await until_idle(informer, source)
        source.modify(pod("a", 1))
        source.modify(pod("a", 2))
        source.delete("default/b")
        await until_idle(informer, source)
        # Missed by the watch: a new object, a deletion and a change.
        source.add(pod("d", 1), notify=False)
        source.delete("default/c", notify=False)
        source.modify(pod("a", 3), notify=False)
        await relist_after_lost_history(informer, source, clock)
        assert sorted(o["metadata"]["name"] for o in informer.lister().list()) == ["a", "d"]
        consumer.cancel()
    assert summary(recorder.calls) == [
        ("add", "a", "0"),
        ("add", "b", "0"),
        ("add", "c", "0"),
        ("update", "a", "1"),
        ("update", "a", "2"),
        ("delete", "b", "0"),
        ("delete", "default/c", "?"),
        ("update", "a", "3"),
        ("add", "d", "1"),
    ]
    assert [call[2] for call in recorder.calls[:3]] == [True, True, True]
    assert [call[2] for call in recorder.calls if call[0] == "add"][3:] == [False]
    assert events == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("ADDED", "c"),
        ("UPDATED", "a"),
        ("UPDATED", "a"),
        ("DELETED", "b"),
        ("DELETED", "default/c"),
        ("UPDATED", "a"),
        ("ADDED", "d"),
    ]


async def test_an_in_order_informer_resyncs_its_handlers(cache: CacheMode) -> None:
    source = FakeListerWatcher(objects=[pod("a"), pod("b")])
    clock = FakeClock()
    informer = SharedIndexInformer(source, clock=clock, cache=cache, resync_period=1, in_order=True)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await wait_until(lambda: len(recorder.calls) == 2)
        await clock.advance(1)
        await wait_until(lambda: len(recorder.calls) == 4)
        await settle(50)
    resyncs = recorder.calls[2:]
    assert sorted(
        (kind, old["metadata"]["name"], new["metadata"]["resourceVersion"])
        for kind, old, new in resyncs
    ) == sorted(
        ("update", o["metadata"]["name"], o["metadata"]["resourceVersion"])
        for o in source.objects()
    )
