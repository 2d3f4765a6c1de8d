"""The two ways an informer can hold its cache, as a fixture: ``cache``.

``"objects"`` caches the decoded dicts; ``"compact"`` caches each object's JSON bytes
beside a few decoded fields and decodes a fresh dict on every read (see
:mod:`aioinformer._objects.raw`). The suites that prove the informer correct (convergence, the
faults over the fake API server, cancellation) run once per mode.

Input: nothing. Output: the ``cache`` fixture, parametrised over :data:`CACHE_MODES`
with the ids ``objects-cache`` and ``compact-cache``; the ``source_type`` fixture, a fake
source of dicts or of CompactEntry objects (ids ``dicts-source``, ``rawobjects-source``); and
:func:`resource_version_of`, which reads an object's resourceVersion whatever form the
pipeline holds it in (a dict, or a CompactEntry on its way through the DeltaFIFO).
``tests/conftest.py`` registers the fixtures for every test under ``tests``.

The tests that compare the modes also share a :func:`pod` whose every level changes with
its step, a :class:`CompactFakeListerWatcher` (a fake source of CompactEntry objects, as the real
client is), :class:`Decodes` (a count of whole-object decodes), a :class:`Recorder`
handler, and a :func:`scripted_informer` whose timers fire at the same fake times on every
run, with :func:`until_idle` and :func:`relist_after_lost_history` to drive it. Nothing
here starts a task.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Final

import pytest

from aioinformer._kernel.backoff import Backoff
from aioinformer._objects import view as view_module
from aioinformer._objects.raw import FIELDS_DECODER, CompactEntry
from aioinformer.codec import CompactCodec
from aioinformer.indexer import meta_namespace_key
from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import DescribedListerWatcher, WatchEvent, WatchStreamBase
from aioinformer.reflector import ReflectorOptions, ReflectorState
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_reflector import reflector_statistics
from tests._support_tasks import settle
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.informer import CacheMode
    from aioinformer.listwatch import Decoder, ListOptions, ObjectList, SourceInfo
    from aioinformer.testing.clock import FakeClock

CACHE_MODES: tuple[CacheMode, ...] = ("objects", "compact")


@pytest.fixture(params=CACHE_MODES, ids=lambda mode: f"{mode}-cache")
def cache(request: pytest.FixtureRequest) -> CacheMode:
    """The cache mode of the informers under test; every test taking it runs in both.

    Named after the informer's ``cache=`` keyword, it hides pytest's own ``cache``
    fixture under ``tests``; a test wanting that one reads ``request.config.cache``."""
    mode: CacheMode = request.param
    return mode


@pytest.fixture(params=["dicts", "rawobjects"], ids=lambda kind: f"{kind}-source")
def source_type(request: pytest.FixtureRequest) -> type[FakeListerWatcher]:
    """The fake source under test: one of dicts (which a compact informer encodes as it
    stores them), or one of CompactEntry objects, as the real client is for a compact informer
    (an ``"objects"`` informer reads dicts from either)."""
    if request.param == "rawobjects":
        return CompactFakeListerWatcher
    return FakeListerWatcher


def resource_version_of(obj: Any) -> str | None:
    """The resourceVersion of a decoded object, or of a compact cache's record."""
    if isinstance(obj, dict):
        rv = obj.get("metadata", {}).get("resourceVersion")
        return rv if isinstance(rv, str) else None
    rv = getattr(obj, "resource_version", None)
    return rv if isinstance(rv, str) else None


# ---------------------------------------------------------------------------------------
# what the tests comparing the modes share: a pod, a recording handler, a scripted informer


def pod(name: str, step: int = 0, *, namespace: str | None = "default") -> dict[str, Any]:
    """A pod whose nested maps and lists all change with ``step``."""
    meta: dict[str, Any] = {
        "name": name,
        "labels": {"app": "web", "step": str(step)},
        "annotations": {"note": f"step {step}"},
    }
    if namespace is not None:
        meta["namespace"] = namespace
    return {
        "metadata": meta,
        "spec": {"containers": [{"name": "main", "image": f"busybox:{step}", "args": [step]}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "step": step}]},
    }


class CompactFakeListerWatcher(FakeListerWatcher):
    """A :class:`FakeListerWatcher` that, decoded with a compact codec, lists and watches
    CompactEntry objects, as the real client does for a compact informer: each is encoded from the
    dict the fake would have sent."""

    def decoded_with(self, codec: Decoder) -> DescribedListerWatcher:
        return _AsCompactEntries(self) if isinstance(codec, CompactCodec) else self


class _AsCompactEntries(DescribedListerWatcher):
    """A fake's lists and watches with each object (bookmarks aside) a CompactEntry."""

    def __init__(self, fake: FakeListerWatcher) -> None:
        self.fake = fake

    def describe(self) -> SourceInfo:
        return self.fake.describe()

    async def list(self, options: ListOptions) -> ObjectList:
        page = await self.fake.list(options)
        return dataclasses.replace(page, items=[CompactEntry.from_dict(o) for o in page.items])

    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        stream = self.fake.watch(options)
        assert isinstance(stream, WatchStreamBase)
        return _CompactEntryStream(stream)


class _CompactEntryStream(WatchStreamBase):
    def __init__(self, inner: WatchStreamBase) -> None:
        self._inner = inner

    @property
    def opened(self) -> bool:
        return self._inner.opened

    async def batches(self) -> AsyncIterator[list[WatchEvent]]:
        async for batch in self._inner.batches():
            yield [_as_raw(event) for event in batch]

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        async for batch in self.batches():
            for event in batch:
                yield event

    async def aclose(self) -> None:
        await self._inner.aclose()


def _as_raw(event: WatchEvent) -> WatchEvent:
    if isinstance(event.object, dict) and event.type != "BOOKMARK":
        return WatchEvent(event.type, CompactEntry.from_dict(event.object))
    return event


class Decodes:
    """Counts, while installed, what parses an object's bytes past its head: whole-object
    decodes (:meth:`CompactEntry.decode`) and splits of the whole object into its fields
    (a :class:`~aioinformer._objects.view.ObjectView` makes one, on its first read past
    what the entry holds)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Counts from now until the test ends (``monkeypatch`` undoes it)."""
        self.count = 0
        decode = CompactEntry.decode
        counts = self

        def counting(entry: CompactEntry) -> dict[str, Any]:
            self.count += 1
            return decode(entry)

        class CountingSplitter:
            @staticmethod
            def decode(data: Any) -> Any:
                # An entry's bytes, not one field's raw value (metadata is split alone).
                if type(data) is bytes:
                    counts.count += 1
                return FIELDS_DECODER.decode(data)

        monkeypatch.setattr(CompactEntry, "decode", counting)
        monkeypatch.setattr(view_module, "FIELDS_DECODER", CountingSplitter())


class Recorder:
    """A handler appending each call and its arguments to :attr:`calls`:
    ``("add", obj, is_in_initial_list)``, ``("update", old, new)``, ``("delete", obj)``."""

    def __init__(self, calls: list[tuple[Any, ...]] | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = [] if calls is None else calls

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.calls.append(("add", obj, is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        self.calls.append(("update", old, new))

    def on_delete(self, obj: Any) -> None:
        self.calls.append(("delete", obj))


BACKOFF = 0.5
"""Seconds of a scripted informer's backoff, without jitter: under its 1 s resync period,
so a relist falls between two resync checks."""


def scripted_informer(
    source: FakeListerWatcher, clock: FakeClock, cache: CacheMode, **options: Any
) -> SharedIndexInformer:
    """An informer whose timers fire at the same fake times on every run: resync checks
    every second, a backoff of exactly :data:`BACKOFF`; lists and relists are plain LISTs
    (the scripts fail and count those) unless a ``reflector`` option says otherwise."""
    options.setdefault("reflector", ReflectorOptions(use_watch_list=False))
    return SharedIndexInformer(
        source,
        clock=clock,
        cache=cache,
        resync_period=1,
        backoff=Backoff(initial=BACKOFF, cap=BACKOFF, jitter=0.0, clock=clock),
        **options,
    )


async def until_idle(informer: SharedIndexInformer, source: FakeListerWatcher) -> None:
    """Wait until the cache holds the source's objects at their resourceVersions and
    nothing is queued (FIFO, handler queues), then until calls under way have returned.
    Reads the cache's entries as they are: a compact cache decodes nothing for this."""

    def versions(objs: list[Any]) -> dict[str, str | None]:
        return {meta_namespace_key(o): resource_version_of(o) for o in objs}

    def idle() -> bool:
        stats = informer.statistics()
        return (
            stats.fifo_pending == 0
            and all(handler.pending == 0 for handler in stats.handlers)
            and versions(informer.indexer.entries()) == versions(source.objects())
        )

    await wait_until(idle)
    await settle(200)


EXPIRED: Final = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "reason": "Expired",
    "code": 410,
    "message": "too old resource version",
}


async def relist_after_lost_history(
    informer: SharedIndexInformer, source: FakeListerWatcher, clock: FakeClock
) -> None:
    """Make the informer relist, as after a compaction: the source forgets its history
    and answers the next watch with 410 Expired, so the informer backs off, lists and
    watches again; returns once it watches and its cache matches the source. (A forgotten
    history alone is not enough: a watch from the newest version is still served.)

    Every backoff on the way (the ended watch may count as too short, then the 410) is
    waited out by advancing ``clock`` :data:`BACKOFF` at a time, so the same changes
    move time the same way on every run."""
    calls = len(source.watch_calls)
    source.error_next_watch(EXPIRED)
    source.reset_watch()

    def state() -> ReflectorState:
        return reflector_statistics(informer).state

    def watching_again() -> bool:
        # The first watch after the reset meets the 410; the one after the relist streams.
        return (
            len(source.watch_calls) >= calls + 2
            and source.open_watches > 0
            and state() is ReflectorState.WATCHING
        )

    while not watching_again():
        await wait_until(lambda: watching_again() or state() is ReflectorState.BACKING_OFF)
        if state() is ReflectorState.BACKING_OFF:
            await clock.advance(BACKOFF)
    await until_idle(informer, source)
