"""Shared by the reflector tests: a recording store and the reflector's statistics.

``RecordingStore`` is a ``ReflectorStore`` that keeps the objects by ``namespace/name``
(``name`` when there is no namespace) and logs every call (``HeldStore`` also holds each
``add`` until released); ``reflector_statistics`` reads
a started informer's reflector record. Waiting lives in ``tests._support_wait``; task
helpers (``stop``, ``other_tasks``) in ``tests._support_tasks``. ``back_off_until_watching``
moves a fake clock through a reflector's backoffs until its watch is open.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from aioinformer.reflector import ReflectorState
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.informer import SharedIndexInformer
    from aioinformer.reflector import Reflector, ReflectorStatistics
    from aioinformer.testing import FakeClock
    from aioinformer.testing.lister_watcher import FakeListerWatcher


def key_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


class RecordingStore:
    """A ReflectorStore that keeps the objects and logs every call."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, Any, str]] = []
        self.resyncs = 0
        self.resync_error_on: int | None = None

    async def add(self, obj: Any) -> None:
        self.calls.append(("add", key_of(obj), obj["metadata"]["resourceVersion"]))
        self.items[key_of(obj)] = obj

    async def update(self, obj: Any) -> None:
        self.calls.append(("update", key_of(obj), obj["metadata"]["resourceVersion"]))
        self.items[key_of(obj)] = obj

    async def delete(self, obj: Any) -> None:
        self.calls.append(("delete", key_of(obj), obj["metadata"]["resourceVersion"]))
        self.items.pop(key_of(obj), None)

    async def replace(self, objs: list[Any], resource_version: str) -> None:
        self.calls.append(("replace", sorted(key_of(o) for o in objs), resource_version))
        self.items = {key_of(o): o for o in objs}

    async def resync(self) -> None:
        self.resyncs += 1
        if self.resync_error_on == self.resyncs:
            raise RuntimeError("expected resync reached")

    def contents(self) -> dict[str, str]:
        """key -> resourceVersion of what the store holds."""
        return {k: v["metadata"]["resourceVersion"] for k, v in sorted(self.items.items())}


class HeldStore(RecordingStore):
    """A RecordingStore whose ``add`` waits for ``release`` to be set: a store call that
    holds the reader up."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def add(self, obj: Any) -> None:
        await self.release.wait()
        await super().add(obj)


def reflector_statistics(informer: SharedIndexInformer) -> ReflectorStatistics:
    """The statistics of a started informer's reflector; the informer has none before run()."""
    stats = informer.statistics().reflector
    assert stats is not None, f"{informer!r} has not started its reflector"
    return stats


async def back_off_until_watching(
    reflector: Reflector, lw: FakeListerWatcher, clock: FakeClock
) -> None:
    """Move ``clock`` through each of the reflector's backoffs until a watch is open."""
    while lw.open_watches == 0:
        await wait_until(
            lambda: reflector.state is ReflectorState.BACKING_OFF or lw.open_watches > 0
        )
        if lw.open_watches == 0:
            await clock.advance_to_next()
