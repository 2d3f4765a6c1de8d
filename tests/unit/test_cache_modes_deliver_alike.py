"""Both cache modes deliver the same calls with the same arguments.

One script of changes plays against an informer built with ``cache="objects"``, then
against one built with ``cache="compact"``, on a fresh fake source and
:class:`FakeClock` each time (so resourceVersions and timers repeat exactly). The compact
informer reads either dicts or, as from the real client, CompactEntry objects (the
``source_type`` fixture; the objects informer always reads dicts). Every
handler, every ``events()`` stream and every late registration records what it is handed;
the two transcripts must be equal, call for call, and every object in them must be a plain
``dict`` (or, with ``model=``, that model), whatever the cache holds.

The script covers: the initial list; adds, updates and deletes from the watch; a resync
(to a resyncing handler, not to a quiet one); a relist after a lost watch history, with
a tombstone for an object deleted meanwhile, an add for one created meanwhile and resync
updates for the unchanged ones; a handler and a stream added to the running informer
(their snapshots); and an update after that. It plays plain, with a ``model``, and with
a transform. Time moves only by the fake clock, and the backoff has no jitter, so the
timers fire in the same order in both runs.

Task model: the informer runs in ``async with``; each stream is consumed by a task of a
task group that ends when the informer stops and its streams end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import Field

from aioinformer import ObjectView
from aioinformer.informer import SharedIndexInformer
from aioinformer.models import DeletedFinalStateUnknown, KubeObject
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import (
    Recorder,
    pod,
    relist_after_lost_history,
    scripted_informer,
    until_idle,
)
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer.informer import CacheMode, EventStream

Call = tuple[Any, ...]
Transcript = dict[str, list[Call]]


class Pod(KubeObject):
    spec: dict[str, Any] = Field(default_factory=dict)


async def consume(stream: EventStream, calls: list[Call]) -> None:
    async for event in stream:
        calls.append(("event", event.type, event.object, event.old, event.is_in_initial_list))


def resource_version(obj: Any) -> str:
    if isinstance(obj, Mapping):
        value = obj["metadata"]["resourceVersion"]
    else:
        value = obj.metadata.resource_version
    assert isinstance(value, str)
    return value


async def play(
    cache: CacheMode,
    source_type: type[FakeListerWatcher] = FakeListerWatcher,
    *,
    model: type[Any] | None = None,
    transform: Callable[[Any], Any] | None = None,
) -> Transcript:
    """Run the script against a fresh informer in ``cache`` mode reading from a fresh
    ``source_type``; return what each handler and stream was handed."""
    clock = FakeClock()
    source = source_type(objects=[pod("a"), pod("b")])
    informer = scripted_informer(source, clock, cache, model=model, transform=transform)
    transcript: Transcript = {
        name: [] for name in ("resyncing", "quiet", "early events", "late", "late events")
    }
    informer.add_event_handler(Recorder(transcript["resyncing"]), resync_period=1)
    informer.add_event_handler(Recorder(transcript["quiet"]), resync_period=0)

    async with asyncio.TaskGroup() as streams:
        early = informer.events(name="early events")
        streams.create_task(consume(early, transcript["early events"]))
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            await until_idle(informer, source)

            source.add(pod("c"))
            source.modify(pod("a", 1))
            source.delete("default/b")
            await until_idle(informer, source)

            resynced = len(transcript["resyncing"]) + len(source.objects())
            await clock.advance(1)
            await wait_until(lambda: len(transcript["resyncing"]) == resynced)
            await until_idle(informer, source)

            # Changes no watch reports, then a lost history: only a relist finds them.
            source.delete("default/a", notify=False)
            source.add(pod("d"), notify=False)
            await relist_after_lost_history(informer, source, clock)

            informer.add_event_handler(Recorder(transcript["late"]))
            late = informer.events(name="late events")
            streams.create_task(consume(late, transcript["late events"]))
            await until_idle(informer, source)

            source.modify(pod("c", 1))
            await until_idle(informer, source)
    return transcript


def assert_plain(value: Any, where: str) -> None:
    """``value`` is made of dicts, lists and JSON scalars only, exactly those types (a
    compact cache's read-only view: its content is)."""
    if type(value) is ObjectView:
        assert_plain(value.to_dict(), where)
    elif type(value) is dict:
        for key, item in value.items():
            assert type(key) is str, where
            assert_plain(item, f"{where}.{key}")
    elif type(value) is list:
        for index, item in enumerate(value):
            assert_plain(item, f"{where}[{index}]")
    else:
        assert value is None or type(value) in (str, int, float, bool), f"{where}: {value!r}"


def objects_in(call: Call) -> list[Any]:
    found: list[Any] = []
    for arg in call[1:]:
        if isinstance(arg, DeletedFinalStateUnknown):
            found.append(arg.obj)
        elif not isinstance(arg, (bool, str)) and arg is not None:
            found.append(arg)
    return found


def assert_the_script_covered_every_kind_of_delivery(transcript: Transcript) -> None:
    """Guards the comparison against a script that silently stopped exercising a case."""
    resyncing, quiet = transcript["resyncing"], transcript["quiet"]
    resyncs = [
        c
        for c in resyncing
        if c[0] == "update" and resource_version(c[1]) == resource_version(c[2])
    ]
    assert len(resyncs) >= 3  # two at the resync check, one or more at the relist
    assert not [
        c for c in quiet if c[0] == "update" and resource_version(c[1]) == resource_version(c[2])
    ]
    assert any(c[0] == "delete" and isinstance(c[1], DeletedFinalStateUnknown) for c in quiet)
    assert any(c[0] == "delete" and not isinstance(c[1], DeletedFinalStateUnknown) for c in quiet)
    assert [c[2] for c in quiet if c[0] == "add"] == [True, True, False, False]
    assert [c[0] for c in transcript["late"]] == ["add", "add", "update"]
    assert [c[2] for c in transcript["late"][:2]] == [True, True]
    assert [c[1] for c in transcript["late events"]] == ["ADDED", "ADDED", "UPDATED"]
    assert {c[1] for c in transcript["early events"]} == {"ADDED", "UPDATED", "DELETED"}


def without_status(obj: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in obj.items() if name != "status"}


def as_a_pod(obj: Any, where: str) -> None:
    assert type(obj) is Pod, where


def plain_without_status(obj: Any, where: str) -> None:
    assert_plain(obj, where)
    assert "status" not in obj, where
    assert "spec" in obj, where


@pytest.mark.parametrize(
    ("options", "delivered_as"),
    [
        pytest.param({}, assert_plain, id="plain"),
        pytest.param({"model": Pod}, as_a_pod, id="typed"),
        pytest.param({"transform": without_status}, plain_without_status, id="transformed"),
    ],
)
async def test_handlers_and_streams_get_the_same_objects_in_both_cache_modes(
    options: dict[str, Any],
    delivered_as: Callable[[Any, str], None],
    source_type: type[FakeListerWatcher],
) -> None:
    objects = await play("objects", **options)
    compact = await play("compact", source_type, **options)
    assert_the_script_covered_every_kind_of_delivery(objects)
    assert compact == objects
    for name, calls in compact.items():
        for number, call in enumerate(calls):
            for obj in objects_in(call):
                delivered_as(obj, f"{name} call {number}")


@pytest.mark.parametrize("model", [None, Pod], ids=["dicts", "typed"])
async def test_listers_read_the_same_objects_in_both_cache_modes(
    model: type[Any] | None, source_type: type[FakeListerWatcher]
) -> None:
    async def read(cache: CacheMode) -> list[Any]:
        source = source_type(objects=[pod("a"), pod("b", 1)])
        informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache, model=model)
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            lister = informer.lister()
            return [lister.get("a", "default"), lister.list(), lister.list("default", "step=1")]

    assert await read("compact") == await read("objects")


async def test_a_handler_lagging_far_behind_gets_what_objects_mode_delivers(
    source_type: type[FakeListerWatcher],
) -> None:
    # A handler hundreds of events behind the others reads its views of entries the cache
    # has long replaced: what it gets must be what objects mode delivers.
    updates = 600

    async def run(cache: CacheMode, source_type: type[FakeListerWatcher]) -> list[list[Call]]:
        source = source_type(objects=[pod("a")])
        informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
        prompt, lagging = Recorder(), Recorder()
        gate = asyncio.Event()

        async def on_update(old: Any, new: Any) -> None:
            await gate.wait()
            lagging.on_update(old, new)

        informer.add_event_handler(prompt)
        informer.add_event_handler(on_add=lagging.on_add, on_update=on_update, name="lagging")
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            for step in range(1, updates + 1):
                source.modify(pod("a", step))
            await wait_until(lambda: len(prompt.calls) == 1 + updates)
            gate.set()
            await wait_until(lambda: len(lagging.calls) == 1 + updates)
        return [prompt.calls, lagging.calls]

    objects = await run("objects", FakeListerWatcher)
    compact = await run("compact", source_type)
    assert compact == objects
    prompt, lagging = compact
    assert lagging == prompt
