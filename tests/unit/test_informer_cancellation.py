"""Cancelling an informer at each stage: during the list, mid-watch, while the pop task
waits, inside a handler blocked forever, under backpressure, and mid-churn. After each:
no task it started is left, no watch stays open, and the FIFO and the cache agree.

Every case runs in both cache modes (the ``cache`` fixture), from a fake source of dicts
and from one of CompactEntry objects as the real client is (the ``source_type`` fixture): a compact
cache holds CompactEntry objects in the FIFO and the cache, and must stop as cleanly as one holding
dicts."""

from __future__ import annotations

import asyncio
import logging
import random
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from aioinformer import State
from aioinformer.delta_fifo import DeltaFIFO, DeltaType
from aioinformer.errors import InformerStoppedError
from aioinformer.indexer import meta_namespace_key
from aioinformer.informer import SharedIndexInformer
from aioinformer.reflector import ReflectorOptions
from aioinformer.testing import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import CompactFakeListerWatcher, resource_version_of
from tests._support_tasks import other_tasks, stop
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.informer import CacheMode
    from aioinformer.listwatch import ListOptions, ObjectList


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "labels": labels}}


def assert_fifo_and_cache_agree(
    informer: SharedIndexInformer, truth: dict[str, dict[str, Any]]
) -> None:
    """``truth`` is the source's state at the last resourceVersion the reflector synced.
    Every object in it is either cached at that version or has it waiting in the FIFO;
    nothing is cached that it lacks, unless a deletion waits in the FIFO. So no delta was
    lost or half-applied."""
    fifo = informer._fifo
    assert isinstance(fifo, DeltaFIFO)
    cache = {meta_namespace_key(obj): obj for obj in informer.indexer.list()}
    for key, obj in truth.items():
        queued = fifo.get_by_key(key)
        newest = queued.newest() if queued else None
        cached = cache.get(key)
        rv = obj["metadata"]["resourceVersion"]
        assert (cached is not None and cached["metadata"]["resourceVersion"] == rv) or (
            newest is not None and resource_version_of(newest.object) == rv
        ), key
    for key in cache.keys() - truth.keys():
        queued = fifo.get_by_key(key)
        assert queued, key
        assert queued[-1].type is DeltaType.DELETED, key


class History:
    """Changes made to a fake source, to rebuild its state at any resourceVersion."""

    def __init__(self, source: FakeListerWatcher) -> None:
        self.source = source
        self.changes: list[tuple[int, str, dict[str, Any] | None]] = []

    def add(self, obj: dict[str, Any]) -> None:
        stored = self.source.add(obj)
        self.changes.append((int(stored["metadata"]["resourceVersion"]), _key(stored), stored))

    def modify(self, obj: dict[str, Any]) -> None:
        stored = self.source.modify(obj)
        self.changes.append((int(stored["metadata"]["resourceVersion"]), _key(stored), stored))

    def delete(self, key: str) -> None:
        self.source.delete(key)
        self.changes.append((int(self.source.resource_version), key, None))

    def state_at(self, resource_version: str) -> dict[str, dict[str, Any]]:
        state: dict[str, dict[str, Any]] = {}
        for rv, key, obj in self.changes:
            if rv > int(resource_version or 0):
                break
            if obj is None:
                state.pop(key, None)
            else:
                state[key] = obj
        return state


def _key(obj: dict[str, Any]) -> str:
    return meta_namespace_key(obj)


class BlockingLister(FakeListerWatcher):
    """A fake whose next list call blocks until cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.listing = asyncio.Event()
        self.list_cancelled = False

    async def list(self, options: ListOptions) -> ObjectList:
        self.listing.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.list_cancelled = True
            raise
        raise AssertionError("unreachable")


class CompactBlockingLister(BlockingLister, CompactFakeListerWatcher):
    """A :class:`BlockingLister` that lists and watches CompactEntry objects, as the client does."""


def blocking_lister(source_type: type[FakeListerWatcher]) -> BlockingLister:
    if issubclass(source_type, CompactFakeListerWatcher):
        return CompactBlockingLister()
    return BlockingLister()


async def test_cancel_during_list_leaves_no_task_and_nothing_cached(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = blocking_lister(source_type)
    source.add(pod("a"))
    baseline = other_tasks()
    informer = SharedIndexInformer(
        source, clock=FakeClock(), cache=cache, reflector=ReflectorOptions(use_watch_list=False)
    )
    task = asyncio.create_task(informer.run())
    await source.listing.wait()
    await stop(task)
    assert source.list_cancelled
    assert other_tasks() == baseline
    assert informer.state is State.STOPPED
    assert len(informer.indexer) == 0
    assert not informer.has_synced()
    assert not await informer.wait_for_sync(timeout=1)


async def test_cancel_mid_watch_closes_the_watch(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type()
    history = History(source)
    history.add(pod("a"))
    history.add(pod("b"))
    baseline = other_tasks()
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    task = asyncio.create_task(informer.run())
    await source.wait_for_watchers(1)
    history.modify(pod("a", changed="yes"))
    await stop(task)
    assert source.open_watches == 0
    assert other_tasks() == baseline
    assert_fifo_and_cache_agree(informer, history.state_at(informer.last_sync_resource_version))


async def test_cancel_while_pop_waits_on_an_idle_informer(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    baseline = other_tasks()
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await source.wait_for_watchers(1)
    assert other_tasks() == baseline
    assert source.open_watches == 0
    assert informer.state is State.STOPPED


async def test_handler_blocked_forever_does_not_prevent_stop(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    entered = asyncio.Event()
    cancelled = asyncio.Event()

    async def stuck(obj: Any, initial: bool) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    baseline = other_tasks()
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    informer.add_event_handler(on_add=stuck)
    async with informer:
        await entered.wait()
    assert cancelled.is_set()
    assert other_tasks() == baseline
    assert source.open_watches == 0


async def test_cancel_under_backpressure_stops_cleanly_and_fifo_agrees_with_cache(
    cache: CacheMode,
    source_type: type[FakeListerWatcher],
) -> None:
    source = source_type()
    history = History(source)
    gate = asyncio.Event()

    async def slow(obj: Any, initial: bool) -> None:
        await gate.wait()

    baseline = other_tasks()
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    informer.add_event_handler(on_add=slow, max_pending=2)
    task = asyncio.create_task(informer.run())
    await source.wait_for_watchers(1)
    for i in range(10):
        history.add(pod(f"p{i}"))
    await wait_until(lambda: informer.statistics().fifo_pending > 0 and len(informer.indexer) >= 2)
    await stop(task)
    assert other_tasks() == baseline
    assert_fifo_and_cache_agree(informer, history.state_at(informer.last_sync_resource_version))


@pytest.mark.parametrize("cancel_at", [0, 1, 5, 37, 120])
async def test_cancel_mid_churn_leaves_fifo_and_cache_in_agreement(
    cancel_at: int, cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    rng = random.Random(cancel_at)
    source = source_type()
    history = History(source)
    for i in range(20):
        history.add(pod(f"seed{i}"))
    baseline = other_tasks()
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    informer.add_event_handler(on_update=lambda old, new: None)
    task = asyncio.create_task(informer.run())
    await source.wait_for_watchers(1)
    live = [f"default/seed{i}" for i in range(20)]
    for step in range(150):
        if step == cancel_at:
            task.cancel()
        roll = rng.random()
        if not live or roll < 0.4:
            history.add(pod(f"new{step}"))
            live.append(f"default/new{step}")
        elif roll < 0.7:
            history.modify(pod(live[rng.randrange(len(live))].split("/")[1], step=str(step)))
        else:
            history.delete(live.pop(rng.randrange(len(live))))
        await asyncio.sleep(0)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert other_tasks() == baseline
    assert source.open_watches == 0
    assert_fifo_and_cache_agree(informer, history.state_at(informer.last_sync_resource_version))


async def test_event_stream_ends_when_informer_is_cancelled(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    stream = informer.events()
    task = asyncio.create_task(informer.run())
    first = await anext(stream)
    assert first.type == "ADDED"
    await stop(task)
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_cancelling_the_owner_inside_async_with_stops_everything(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    baseline = other_tasks()
    inside = asyncio.Event()

    async def owner() -> None:
        async with informer:
            inside.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(owner())
    await inside.wait()
    await source.wait_for_watchers(1)
    await stop(task)
    assert other_tasks() == baseline
    assert source.open_watches == 0
    assert informer.state is State.STOPPED


async def test_stop_makes_run_return_normally(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    task = asyncio.create_task(informer.run())
    assert await informer.wait_for_sync(timeout=5)
    informer.stop()
    await asyncio.wait_for(task, timeout=5)
    assert source.open_watches == 0
    assert informer.state is State.STOPPED


async def test_anyio_task_group_start_returns_once_synced(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    async with anyio.create_task_group() as task_group:
        await task_group.start(informer.run)
        assert informer.has_synced()
        assert len(informer.indexer) == 2
        task_group.cancel_scope.cancel()
    assert informer.state is State.STOPPED
    assert source.open_watches == 0


async def test_adding_a_handler_while_stopping_raises_informer_stopped(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    # A handler whose cancellation cleanup takes a while keeps the informer's tasks
    # winding down; a handler added meanwhile must be refused as after the stop.
    source = source_type(objects=[pod("a")])
    entered = asyncio.Event()
    finish_cleanup = asyncio.Event()

    async def slow_to_stop(obj: Any, initial: bool) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await finish_cleanup.wait()
            raise

    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    informer.add_event_handler(on_add=slow_to_stop)
    task = asyncio.create_task(informer.run())
    await entered.wait()
    informer.stop()
    await wait_until(lambda: source.open_watches == 0)
    with pytest.raises(InformerStoppedError):
        informer.add_event_handler(on_add=lambda obj, initial: None)
    with pytest.raises(InformerStoppedError):
        informer.events()
    finish_cleanup.set()
    await asyncio.wait_for(task, timeout=5)
    assert informer.state is State.STOPPED


def namespace_or_stray_cancellation(obj: dict[str, Any]) -> list[str]:
    """An index function that lets out a CancelledError nobody asked for on pod "bad"."""
    if obj["metadata"]["name"] == "bad":
        raise asyncio.CancelledError
    return [obj["metadata"]["namespace"]]


def failing_on_bad(source: FakeListerWatcher, cache: CacheMode) -> SharedIndexInformer:
    """An informer named "pods" whose pop task ends unexpectedly on pod "bad"."""
    return SharedIndexInformer(
        source,
        clock=FakeClock(),
        cache=cache,
        name="pods",
        indexers={"by-namespace": namespace_or_stray_cancellation},
    )


async def test_a_stage_task_ending_unexpectedly_stops_the_informer_with_an_error(
    caplog: pytest.LogCaptureFixture,
    cache: CacheMode,
    source_type: type[FakeListerWatcher],
) -> None:
    # The informer must never look alive with one of its tasks gone: it stops, logs and
    # raises, so waiters and the owner find out.
    source = source_type(objects=[pod("a"), pod("bad")])
    baseline = other_tasks()
    informer = failing_on_bad(source, cache)
    task = asyncio.create_task(informer.run())
    with caplog.at_level(logging.ERROR, logger="aioinformer.informer"):
        # The waiter learns why the informer will never sync, not just that it did not.
        with pytest.raises(RuntimeError, match="'pods pop' was cancelled unexpectedly"):
            await informer.wait_for_sync(timeout=5)
        with pytest.raises(RuntimeError, match="'pods pop' was cancelled unexpectedly"):
            await asyncio.wait_for(task, timeout=5)
    assert informer.state is State.STOPPED
    assert any("pods pop" in record.getMessage() for record in caplog.records)
    assert other_tasks() == baseline
    assert source.open_watches == 0
    with pytest.raises(InformerStoppedError):
        informer.add_event_handler(on_add=lambda obj, initial: None)


async def test_async_with_returns_once_started_before_any_stage_has_run_and_runs_once_synced(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    async with informer:
        # Read into a declared local: mypy would keep informer.state narrowed past the awaits
        # that change it.
        state: State = informer.state
        assert state is State.STARTING
        assert source.list_calls == []  # the starter resumes ahead of the stages
        assert not informer.has_synced()
        assert await informer.wait_for_sync(timeout=5)
        state = informer.state
        assert state is State.RUNNING
    assert informer.state is State.STOPPED


async def test_wait_for_sync_called_before_start_returns_once_synced(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    waiter = asyncio.create_task(informer.wait_for_sync(timeout=5))
    await asyncio.sleep(0)
    async with informer:
        assert await waiter


async def test_wait_for_sync_returns_false_once_the_informer_stops_unsynced(
    cache: CacheMode,
    source_type: type[FakeListerWatcher],
) -> None:
    source = source_type()
    source.stall_next_list()
    informer = SharedIndexInformer(
        source, clock=FakeClock(), cache=cache, reflector=ReflectorOptions(use_watch_list=False)
    )
    async with informer:
        waiter = asyncio.create_task(informer.wait_for_sync())
        await source.wait_for_list_calls(1)
    assert await asyncio.wait_for(waiter, timeout=5) is False
    assert not await informer.wait_for_sync()


async def test_run_goes_starting_running_stopping_stopped_and_runs_only_once(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    seen: list[State] = [informer.state]
    async with anyio.create_task_group() as task_group:
        await task_group.start(informer.run)
        seen.append(informer.state)
        informer.stop()
        seen.append(informer.state)
    seen.append(informer.state)
    assert seen == [State.NEW, State.RUNNING, State.STOPPING, State.STOPPED]
    with pytest.raises(RuntimeError, match="runs only once"):
        await informer.run()
    with pytest.raises(RuntimeError, match="runs only once"):
        async with informer:
            pass


async def test_an_unsynced_run_is_starting(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    source.fail_next_list(RuntimeError("down"))
    informer = SharedIndexInformer(
        source, clock=FakeClock(), cache=cache, reflector=ReflectorOptions(use_watch_list=False)
    )
    async with informer:
        await wait_until(lambda: informer.health().last_error is not None)
        assert (informer.state, informer.statistics().state) == (State.STARTING, State.STARTING)
    assert informer.state is State.STOPPED


async def test_a_failing_informer_cancels_the_async_with_body_and_its_error_leaves_the_block(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    # A stage gone freezes the cache: a body waiting for something else must not go on
    # reading it unaware, so the failure reaches it at once.
    source = source_type(objects=[pod("a"), pod("bad")])
    informer = failing_on_bad(source, cache)
    reached: list[str] = []

    async def wait_in_the_block() -> None:
        async with informer, asyncio.timeout(5):
            await asyncio.Event().wait()
            reached.append("past the wait")

    with pytest.raises(RuntimeError, match="'pods pop' was cancelled unexpectedly"):
        await wait_in_the_block()
    assert reached == []
    assert informer.state is State.STOPPED
    assert source.open_watches == 0
