"""What lists do with CPython's cyclic collector: paused while a list is decoded and
handed to the store, enabled again afterwards (counted across concurrent lists), frozen
only when asked, and never touched when the application manages it itself."""

from __future__ import annotations

import asyncio
import gc
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._kernel.gcpolicy import collector_paused
from aioinformer.reflector import Reflector, ReflectorOptions
from aioinformer.testing import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher

if TYPE_CHECKING:
    from collections.abc import Iterator

    from aioinformer._kernel.gcpolicy import GCPolicy
    from aioinformer.listwatch import ListOptions, ObjectList


@pytest.fixture(autouse=True)
def frozen_before() -> Iterator[int]:
    """The collector's freeze count when the test starts (not 0 on every interpreter:
    CPython 3.12 starts with objects frozen); the collector is restored afterwards."""
    was_enabled = gc.isenabled()
    frozen = gc.get_freeze_count()
    yield frozen
    if gc.get_freeze_count() != frozen:
        gc.unfreeze()
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}}


class RecordingLW(FakeListerWatcher):
    """Records whether the collector was enabled while each LIST page was served."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.enabled_during_list: list[bool] = []

    async def list(self, options: ListOptions) -> ObjectList:
        self.enabled_during_list.append(gc.isenabled())
        return await super().list(options)


class RecordingStore:
    def __init__(self) -> None:
        self.enabled_during_replace: list[bool] = []
        self.replaced = asyncio.Event()

    async def add(self, obj: Any) -> None:
        pass

    async def update(self, obj: Any) -> None:
        pass

    async def delete(self, obj: Any) -> None:
        pass

    async def replace(self, objs: list[Any], resource_version: str) -> None:
        self.enabled_during_replace.append(gc.isenabled())
        self.replaced.set()

    async def resync(self) -> None:
        pass


async def list_once(policy: Any) -> tuple[RecordingLW, RecordingStore]:
    lw = RecordingLW(objects=[pod("a"), pod("b")])
    store = RecordingStore()
    reflector = Reflector(
        lw,
        store,
        clock=FakeClock(),
        options=ReflectorOptions(gc_policy=policy, use_watch_list=False),
    )
    task = asyncio.create_task(reflector.list_and_watch())
    await asyncio.wait_for(store.replaced.wait(), 5)
    await lw.wait_for_watchers(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return lw, store


@pytest.mark.parametrize("policy", ["pause", "freeze"])
async def test_a_list_runs_with_the_collector_paused_and_enables_it_after(policy: str) -> None:
    gc.enable()
    lw, store = await list_once(policy)
    assert lw.enabled_during_list == [False]
    assert store.enabled_during_replace == [False]
    assert gc.isenabled()


async def test_only_the_freeze_policy_freezes_what_the_list_left_alive(frozen_before: int) -> None:
    gc.enable()
    await list_once("pause")
    assert gc.get_freeze_count() == frozen_before
    await list_once("freeze")
    assert gc.get_freeze_count() > frozen_before


async def test_the_off_policy_leaves_the_collector_alone() -> None:
    gc.enable()
    lw, store = await list_once("off")
    assert lw.enabled_during_list == [True]
    assert store.enabled_during_replace == [True]


async def test_a_collector_the_application_disabled_stays_disabled(frozen_before: int) -> None:
    gc.disable()
    await list_once("freeze")
    assert not gc.isenabled()
    assert gc.get_freeze_count() == frozen_before


async def test_a_cancelled_list_enables_the_collector_again() -> None:
    gc.enable()
    lw = RecordingLW(objects=[pod("a")])
    lw.stall_next_list()
    reflector = Reflector(lw, RecordingStore(), clock=FakeClock(), use_watch_list=False)
    task = asyncio.create_task(reflector.list_and_watch())
    await lw.wait_for_list_calls(1)
    assert not gc.isenabled()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gc.isenabled()


def test_concurrent_pauses_enable_the_collector_once_the_last_ends(frozen_before: int) -> None:
    gc.enable()
    first = collector_paused("pause")
    second = collector_paused("freeze")
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second list is still decoding
    assert gc.get_freeze_count() == frozen_before
    second.__exit__(None, None, None)
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen_before  # a freeze asked for by any is honoured


@pytest.mark.parametrize(("policy", "enabled"), [(None, False), ("off", True)])
async def test_the_informer_passes_its_policy_to_its_reflector(
    policy: str | None, enabled: bool
) -> None:
    from aioinformer.informer import SharedIndexInformer

    gc.enable()
    lw = RecordingLW(objects=[pod("a")])
    kwargs: dict[str, Any] = {} if policy is None else {"gc_policy": policy}
    async with SharedIndexInformer(
        lw, clock=FakeClock(), reflector=ReflectorOptions(use_watch_list=False, **kwargs)
    ) as informer:
        assert await informer.wait_for_sync(timeout=5)
    assert lw.enabled_during_list == [enabled]
    assert gc.isenabled()


@pytest.mark.parametrize(("policy", "enabled"), [("pause", False), ("off", True)])
async def test_a_streaming_list_hands_over_with_the_policy_of_a_list(
    policy: GCPolicy, enabled: bool
) -> None:
    gc.enable()
    lw = RecordingLW(objects=[pod("a"), pod("b")])
    store = RecordingStore()
    reflector = Reflector(lw, store, clock=FakeClock(), options=ReflectorOptions(gc_policy=policy))
    task = asyncio.create_task(reflector.list_and_watch())
    await asyncio.wait_for(store.replaced.wait(), 5)
    assert lw.enabled_during_list == []  # streamed: no LIST
    assert store.enabled_during_replace == [enabled]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gc.isenabled()  # the stream carries on as the watch with the collector on
