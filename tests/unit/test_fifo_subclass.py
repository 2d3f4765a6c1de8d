"""FIFO subclasses that override the producers see every call: client-go's recording-FIFO
style, for both FIFOs, driven by a reflector over a fake source and by an informer.

A watch hands a FIFO a read at a time (``apply_events``); a subclass overriding ``add``,
``update``, ``delete`` or ``bookmark`` is handed each event by its producer instead, in
stream order, and ``replace``/``resync`` are always called. Covered: the recorded calls
(list and streaming list, resyncs), a filtering subclass (drops what it does not pass on),
the same queue, failures and applied resourceVersion as a plain FIFO, one wake-up per
read either way, and a plain FIFO still taking whole reads.

Task model: reflectors run in a task of the test's, stopped by cancelling it; informers
in ``async with``; every wait is on a ``FakeClock`` or a condition.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

import aioinformer.informer as informer_module
from aioinformer._objects.meta import labels_of
from aioinformer.delta_fifo import DeltaFIFO, Deltas, DeltaType
from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import WatchEvent
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.real_fifo import RealFIFO
from aioinformer.reflector import Reflector, ReflectorState
from aioinformer.testing import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import resource_version_of
from tests._support_tasks import stop
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Iterable

    from aioinformer.informer import CacheMode

Call = tuple[str, ...]


def pod(name: str, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def rv_of(obj: Any) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return "?"
    return resource_version_of(obj) or ""


def recording(base: type[DeltaFIFO | RealFIFO]) -> Any:
    """A subclass of ``base`` that records every producer call in ``calls``, then lets the
    FIFO take it: client-go's recording FIFO."""

    class Recording(base):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.calls: list[Call] = []

        async def add(self, obj: Any) -> None:
            self.calls.append(("add", self.key_of(obj), rv_of(obj)))
            await super().add(obj)

        async def update(self, obj: Any) -> None:
            self.calls.append(("update", self.key_of(obj), rv_of(obj)))
            await super().update(obj)

        async def delete(self, obj: Any) -> None:
            self.calls.append(("delete", self.key_of(obj), rv_of(obj)))
            await super().delete(obj)

        async def bookmark(self, resource_version: str) -> None:
            self.calls.append(("bookmark", resource_version))
            await super().bookmark(resource_version)

        async def replace(self, objs: Iterable[Any], resource_version: str = "") -> None:
            objs = list(objs)
            keys = sorted(self.key_of(o) for o in objs)
            self.calls.append(("replace", *keys, resource_version))
            await super().replace(objs, resource_version)

        async def resync(self) -> None:
            self.calls.append(("resync",))
            await super().resync()

    return Recording


RecordingDeltaFIFO = recording(DeltaFIFO)
RecordingRealFIFO = recording(RealFIFO)
RECORDING = [
    pytest.param(RecordingDeltaFIFO, id="DeltaFIFO"),
    pytest.param(RecordingRealFIFO, id="RealFIFO"),
]
PLAIN = [pytest.param(DeltaFIFO, id="DeltaFIFO"), pytest.param(RealFIFO, id="RealFIFO")]


class KnownNothing:
    """A cache that is empty: enough for resyncs to be queued and do nothing."""

    def list_keys(self) -> list[str]:
        return []

    def get_by_key(self, key: str) -> Any | None:
        return None


def spawn(reflector: Reflector) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(reflector.list_and_watch())


async def watching(
    fifo: DeltaFIFO | RealFIFO,
) -> tuple[FakeListerWatcher, Reflector, asyncio.Task[None]]:
    """A reflector over an empty fake source, writing to ``fifo``, once it watches."""
    lw = FakeListerWatcher()
    reflector = Reflector(lw, fifo, clock=FakeClock())
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)
    await lw.wait_for_watchers(1)
    return lw, reflector, task


# -- the choice, made once ---------------------------------------------------------------


@pytest.mark.parametrize("plain", PLAIN)
def test_a_fifo_chooses_its_path_once_as_it_is_built(plain: type[DeltaFIFO | RealFIFO]) -> None:
    class OnlyReplace(plain):  # type: ignore[valid-type,misc]
        async def replace(self, objs: Iterable[Any], resource_version: str = "") -> None:
            await super().replace(objs, resource_version)

    class OnlyBookmark(plain):  # type: ignore[valid-type,misc]
        async def bookmark(self, resource_version: str) -> None:
            await super().bookmark(resource_version)

    class Grandchild(OnlyBookmark):
        pass

    assert plain()._per_event is False
    # replace and resync are always called: overriding them needs no per-event path.
    assert OnlyReplace()._per_event is False
    assert OnlyBookmark()._per_event is True
    assert Grandchild()._per_event is True


# -- driven by a reflector over a fake source ------------------------------------------------


@pytest.mark.parametrize("fifo_type", RECORDING)
@pytest.mark.parametrize("use_watch_list", [True, False], ids=["streaming-list", "list"])
async def test_a_recording_fifo_sees_every_call_a_reflector_makes_in_order(
    fifo_type: Any, use_watch_list: bool
) -> None:
    clock = FakeClock()
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    fifo = fifo_type(known_objects=KnownNothing())
    reflector = Reflector(lw, fifo, clock=clock, use_watch_list=use_watch_list, resync_period=30.0)
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)
    await lw.wait_for_watchers(1)

    lw.add(pod("c"))  # 3
    lw.modify(pod("a", step="1"))  # 4
    lw.delete("default/b")  # 5, one read with the two before it
    await wait_until(lambda: reflector.last_sync_resource_version == "5")
    lw.send_bookmark()
    await wait_until(lambda: len(fifo.calls) == 5)
    await clock.advance(30.0)
    await wait_until(lambda: len(fifo.calls) == 6)

    assert fifo.calls == [
        ("replace", "default/a", "default/b", "2"),
        ("add", "default/c", "3"),
        ("update", "default/a", "4"),
        ("delete", "default/b", "5"),
        ("bookmark", "5"),
        ("resync",),
    ]
    await stop(task)


@pytest.mark.parametrize("fifo_type", RECORDING)
async def test_one_read_is_one_wake_up_with_per_event_producers_too(
    fifo_type: Any,
) -> None:
    # The producers are called one by one, but nothing suspends between them: a parked
    # popper runs once, after the read, and is handed all of it.
    fifo = fifo_type()
    lw, _reflector, task = await watching(fifo)
    batches: list[list[str]] = []

    def process(batch: Iterable[tuple[str, Deltas]]) -> None:
        batches.append([key for key, _ in batch])

    popper = asyncio.get_running_loop().create_task(fifo.pop_batch(process))
    await wait_until(lambda: fifo._parked == 1)
    for i in range(20):
        lw.add(pod(f"p{i}"))
    await asyncio.wait_for(popper, 5)

    assert batches[-1] == [f"default/p{i}" for i in range(20)]
    assert [call[0] for call in fifo.calls] == ["replace"] + ["add"] * 20
    await stop(task)


@pytest.mark.parametrize("plain", PLAIN)
async def test_a_plain_fifo_takes_each_read_in_one_call(
    plain: type[DeltaFIFO | RealFIFO],
) -> None:
    # Counting the calls from outside the producers: apply_events once per read, and
    # never a per-event producer.
    calls: list[str] = []

    class Counting(plain):  # type: ignore[valid-type,misc]
        async def apply_events(self, events: Any) -> Any:
            calls.append(f"apply_events {len(events)}")
            return await super().apply_events(events)

    fifo = Counting()
    assert fifo._per_event is False
    lw, reflector, task = await watching(fifo)
    for i in range(20):
        lw.add(pod(f"p{i}"))
    await wait_until(lambda: reflector.last_sync_resource_version == "20")

    assert calls == ["apply_events 20"]
    assert len(fifo) == 20
    await stop(task)


# -- the same results as the batch path -------------------------------------------------------


def events() -> list[WatchEvent]:
    def obj(name: str, rv: int) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}}

    return [
        WatchEvent("ADDED", obj("a", 1)),
        WatchEvent("ADDED", {"metadata": {"resourceVersion": "2"}}),  # no name: rejected
        WatchEvent("MODIFIED", obj("a", 3)),
        WatchEvent("ADDED", obj("b", 4)),
        WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": "5"}}),
        WatchEvent("DELETED", obj("b", 6)),
        WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": "7"}}),
    ]


def deltas_of(fifo: DeltaFIFO) -> dict[str, list[tuple[DeltaType, str]]]:
    out = {}
    for key in fifo.list_keys():
        deltas = fifo.get_by_key(key)
        assert deltas is not None
        out[key] = [(d.type, rv_of(d.object)) for d in deltas]
    return out


async def test_per_event_producers_queue_reject_and_track_versions_as_a_batch_does() -> None:
    plain, recording = DeltaFIFO(), RecordingDeltaFIFO()
    plain_failures = await plain.apply_events(events())
    recording_failures = await recording.apply_events(events())

    assert recording.calls == [
        ("add", "ns/a", "1"),
        # The nameless object's key fails in the recording override itself: the error is
        # returned for that event, and the others go on.
        ("update", "ns/a", "3"),
        ("add", "ns/b", "4"),
        ("bookmark", "5"),
        ("delete", "ns/b", "6"),
        ("bookmark", "7"),
    ]
    assert deltas_of(recording) == deltas_of(plain)
    for failures in (plain_failures, recording_failures):
        assert failures is not None
        assert [(event.type, type(exc).__name__) for event, exc in failures] == [
            ("ADDED", "KeyFuncError")
        ]
    for fifo in (plain, recording):
        assert fifo.last_store_resource_version == ""
        while len(fifo):
            await fifo.pop(lambda deltas: None)
        # The bookmark after the last event counts once everything before it is applied.
        assert fifo.last_store_resource_version == "7"


async def test_per_event_producers_in_order_give_the_same_queue_as_a_batch() -> None:
    plain, recording = RealFIFO(), RecordingRealFIFO()
    await plain.apply_events(events())
    await recording.apply_events(events())
    popped: dict[str, list[list[tuple[str, DeltaType, str]]]] = {"plain": [], "recording": []}
    for name, fifo in (("plain", plain), ("recording", recording)):
        while len(fifo):

            def process(batch: Iterable[tuple[str, Deltas]], name: str = name) -> None:
                popped[name].append(
                    [(key, d.type, rv_of(d.object)) for key, ds in batch for d in ds]
                )

            await fifo.pop_batch(process)
        assert fifo.last_store_resource_version == "7"
    assert popped["recording"] == popped["plain"]
    # The bookmark waits in the queue between the changes before and after it.
    assert popped["plain"] == [
        [
            ("ns/a", DeltaType.ADDED, "1"),
            ("ns/a", DeltaType.UPDATED, "3"),
            ("ns/b", DeltaType.ADDED, "4"),
        ],
        [("ns/b", DeltaType.DELETED, "6")],
    ]


@pytest.mark.parametrize("plain", PLAIN)
async def test_an_override_that_raises_loses_that_event_only(
    plain: type[DeltaFIFO | RealFIFO],
) -> None:
    class Picky(plain):  # type: ignore[valid-type,misc]
        async def update(self, obj: Any) -> None:
            if obj["metadata"]["name"] == "bad":
                raise RuntimeError("no updates to bad")
            await super().update(obj)

    def event(kind: str, name: str, rv: int) -> WatchEvent:
        return WatchEvent(kind, {"metadata": {"name": name, "resourceVersion": str(rv)}})

    fifo = Picky()
    failures = await fifo.apply_events(
        [event("ADDED", "bad", 1), event("MODIFIED", "bad", 2), event("ADDED", "good", 3)]
    )

    assert failures is not None
    assert [(e.type, str(exc)) for e, exc in failures] == [("MODIFIED", "no updates to bad")]
    assert len(fifo) == 2


# -- driven by an informer ---------------------------------------------------------------


@pytest.mark.parametrize("in_order", [False, True], ids=["DeltaFIFO", "RealFIFO"])
async def test_an_informer_over_a_recording_fifo_records_every_call_in_order(
    monkeypatch: pytest.MonkeyPatch, cache: CacheMode, in_order: bool
) -> None:
    built: list[Any] = []

    def building(base: Any) -> Any:
        class Built(base):  # type: ignore[misc]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                built.append(self)

        return Built

    Delta, InOrder = building(RecordingDeltaFIFO), building(RecordingRealFIFO)
    monkeypatch.setattr(informer_module, "DeltaFIFO", Delta)
    monkeypatch.setattr(informer_module, "RealFIFO", InOrder)
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(lw, clock=FakeClock(), cache=cache, in_order=in_order)
    seen: list[str] = []
    informer.add_event_handler(
        on_add=lambda obj, _initial: seen.append(f"add {obj['metadata']['name']}"),
        on_update=lambda _old, new: seen.append(f"update {new['metadata']['name']}"),
        on_delete=lambda obj: seen.append("delete"),
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await lw.wait_for_watchers(1)
        lw.add(pod("c"))
        lw.modify(pod("a", step="1"))
        lw.delete("default/b")
        await wait_until(lambda: len(seen) == 5)

    (fifo,) = built
    assert fifo.calls == [
        ("replace", "default/a", "default/b", "2"),
        ("add", "default/c", "3"),
        ("update", "default/a", "4"),
        ("delete", "default/b", "5"),
    ]
    assert sorted(seen[:2]) == ["add a", "add b"]
    assert seen[2:] == ["add c", "update a", "delete"]


@pytest.mark.parametrize("in_order", [False, True], ids=["DeltaFIFO", "RealFIFO"])
async def test_a_filtering_fifo_keeps_what_it_drops_out_of_the_informers_cache(
    monkeypatch: pytest.MonkeyPatch, cache: CacheMode, in_order: bool
) -> None:
    # A user's filter: events for pods labelled hidden=yes never reach the cache, and
    # deletions of pods labelled keep=yes are ignored.
    # The objects are what the informer's codec queues (a compact entry, or a dict):
    # labels_of reads either.
    def hidden(obj: Any) -> bool:
        return (labels_of(obj) or {}).get("hidden") == "yes"

    def filtering(base: Any) -> Any:
        class Filtering(base):  # type: ignore[misc]
            async def add(self, obj: Any) -> None:
                if not hidden(obj):
                    await super().add(obj)

            async def update(self, obj: Any) -> None:
                if not hidden(obj):
                    await super().update(obj)

            async def delete(self, obj: Any) -> None:
                if (labels_of(obj) or {}).get("keep") != "yes":
                    await super().delete(obj)

        return Filtering

    Filtering, FilteringInOrder = filtering(DeltaFIFO), filtering(RealFIFO)
    monkeypatch.setattr(informer_module, "DeltaFIFO", Filtering)
    monkeypatch.setattr(informer_module, "RealFIFO", FilteringInOrder)
    lw = FakeListerWatcher(objects=[pod("a", keep="yes")])
    informer = SharedIndexInformer(lw, clock=FakeClock(), cache=cache, in_order=in_order)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await lw.wait_for_watchers(1)
        lw.add(pod("secret", hidden="yes"))  # 2
        lw.delete("default/a")  # 3
        lw.add(pod("shown"))  # 4
        lw.modify(pod("secret", hidden="yes", step="1"))  # 5
        lw.add(pod("last"))  # 6
        await wait_until(lambda: informer.last_store_resource_version == "6")
        keys = sorted(informer.indexer.list_keys())

    assert keys == ["default/a", "default/last", "default/shown"]
