"""SharedProcessor.batch() and room(): notifications held during a batch reach every
listener in order when it ends; resync updates only the due listeners; listeners added or
removed during a batch; backpressure sized in keys; and a batched pipeline from a DeltaFIFO
to bounded handlers that keeps per-key order, bounds the queues and lines a late handler's
snapshot up with what follows."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._pending import CLOSED
from aioinformer.delta_fifo import DeletedFinalStateUnknown, DeltaFIFO, DeltasBatch, DeltaType
from aioinformer.indexer import Indexer, meta_namespace_key
from aioinformer.processor import (
    Notification,
    NotificationKind,
    ProcessorListener,
    SharedProcessor,
)
from aioinformer.testing.clock import FakeClock
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer._pending import PendingQueue


# The processor's notification kinds, short.
ADD = NotificationKind.ADD
UPDATE = NotificationKind.UPDATE
DELETE = NotificationKind.DELETE


def pod(name: str, rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": rv}}


def pulled(name: str = "pulled", **kwargs: Any) -> ProcessorListener:
    """A listener without a task: the test reads its queue directly."""
    return ProcessorListener(name=name, on_add=print, on_update=print, on_delete=print, **kwargs)


def queued(listener: ProcessorListener) -> list[Notification]:
    queue: PendingQueue = listener._queue
    return [entry for entry in queue.items if entry is not CLOSED]


def add(name: str, rv: str = "1", initial: bool = False) -> Notification:
    return Notification(ADD, pod(name, rv), initial)


def update(name: str, old: str, new: str) -> Notification:
    return Notification(UPDATE, pod(name, old), pod(name, new))


def test_a_batch_holds_notifications_until_it_ends() -> None:
    processor = SharedProcessor()
    first, second = pulled("first"), pulled("second")
    processor.add_listener(first, start=False)
    processor.add_listener(second, start=False)
    sent = [add("a"), update("a", "1", "2"), Notification(DELETE, pod("a", "2"), None)]
    with processor.batch():
        for notification in sent:
            processor.distribute(notification, False)
        assert queued(first) == queued(second) == []
    assert queued(first) == queued(second) == sent


def test_a_batch_queues_what_distribute_alone_would_queue() -> None:
    one_by_one, batched = SharedProcessor(), SharedProcessor()
    listeners = {}
    for processor in (one_by_one, batched):
        due, not_due = pulled("due"), pulled("not due")
        processor.add_listener(due, start=False)
        processor.add_listener(not_due, start=False)
        processor._listeners[not_due] = False
        listeners[processor] = (due, not_due)
    sent = [
        (add("a"), False),
        (update("a", "1", "1"), True),
        (add("b"), False),
        (update("b", "1", "1"), True),
        (update("b", "1", "2"), False),
    ]
    for notification, is_sync in sent:
        one_by_one.distribute(notification, is_sync)
    with batched.batch():
        for notification, is_sync in sent:
            batched.distribute(notification, is_sync)
    for alone, together in zip(listeners[one_by_one], listeners[batched], strict=True):
        assert queued(alone) == queued(together)
    due, not_due = listeners[batched]
    assert len(queued(due)) == 5
    assert queued(not_due) == [add("a"), add("b"), update("b", "1", "2")]


def test_a_batch_counts_initial_adds_for_each_listener_sync() -> None:
    processor = SharedProcessor()
    listener = pulled()
    processor.add_listener(listener, start=False)
    with processor.batch():
        processor.distribute(add("a", initial=True), False)
        processor.distribute(add("b", initial=True), False)
        processor.distribute(add("c"), False)
    assert listener._queue.initial_pending == 2
    assert not listener.has_synced()


async def test_a_pushed_listener_syncs_after_handling_a_batch_of_initial_adds() -> None:
    processor = SharedProcessor()
    seen: list[str] = []
    listener = ProcessorListener(
        name="handler", on_add=lambda obj, initial: seen.append(obj["metadata"]["name"])
    )
    processor.add_listener(listener)
    task = asyncio.create_task(processor.run())
    with processor.batch():
        for name in "abc":
            processor.distribute(add(name, initial=True), False)
    # A sync handler with nothing queued is called as the batch is handed over.
    assert seen == ["a", "b", "c"]
    assert listener.has_synced()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_async_listener_syncs_once_its_task_handled_a_batch_of_initial_adds() -> None:
    processor = SharedProcessor()
    seen: list[str] = []

    async def on_add(obj: dict[str, Any], initial: bool) -> None:
        seen.append(obj["metadata"]["name"])

    listener = ProcessorListener(name="handler", on_add=on_add)
    processor.add_listener(listener)
    task = asyncio.create_task(processor.run())
    with processor.batch():
        for name in "abc":
            processor.distribute(add(name, initial=True), False)
    assert not listener.has_synced()
    await wait_until(listener.has_synced)
    assert seen == ["a", "b", "c"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_batch_hands_over_what_it_holds_when_the_block_raises() -> None:
    processor = SharedProcessor()
    listener = pulled()
    processor.add_listener(listener, start=False)

    def apply_then_fail() -> None:
        with processor.batch():
            processor.distribute(add("a"), False)
            raise KeyError("index function failed")

    with pytest.raises(KeyError):
        apply_then_fail()
    assert queued(listener) == [add("a")]
    # The processor is out of the batch: distribute queues at once again.
    processor.distribute(add("b"), False)
    assert queued(listener) == [add("a"), add("b")]


def test_batches_do_not_nest() -> None:
    processor = SharedProcessor()
    with processor.batch(), pytest.raises(RuntimeError, match="nest"), processor.batch():
        pass


def test_a_listener_added_during_a_batch_gets_only_what_follows() -> None:
    processor = SharedProcessor()
    early, late = pulled("early"), pulled("late")
    processor.add_listener(early, start=False)
    with processor.batch():
        processor.distribute(add("a"), False)
        # What a late handler's registration does: the snapshot, then the listener.
        late.add(add("a", initial=True))
        processor.add_listener(late, start=False)
        processor.distribute(update("a", "1", "2"), False)
    assert queued(early) == [add("a"), update("a", "1", "2")]
    assert queued(late) == [add("a", initial=True), update("a", "1", "2")]


def test_a_listener_removed_during_a_batch_gets_nothing_more() -> None:
    processor = SharedProcessor()
    stays, goes = pulled("stays"), pulled("goes")
    processor.add_listener(stays, start=False)
    processor.add_listener(goes, start=False)
    with processor.batch():
        processor.distribute(add("a"), False)
        processor.remove_listener(goes)
    assert queued(stays) == [add("a")]
    assert queued(goes) == []


async def test_a_resync_check_during_a_batch_applies_to_what_follows_it() -> None:
    clock = FakeClock()
    processor = SharedProcessor(clock=clock)
    resyncing = pulled("resyncing", resync_period=10.0)
    processor.add_listener(resyncing, start=False)
    processor.start(clock.monotonic())
    processor.should_resync()  # not due yet: flags cleared
    with processor.batch():
        processor.distribute(update("a", "1", "1"), True)
        await clock.advance(10.0)
        assert processor.should_resync()
        processor.distribute(update("b", "1", "1"), True)
    assert queued(resyncing) == [update("b", "1", "1")]


def test_room_is_the_limit_without_blocking_listeners() -> None:
    processor = SharedProcessor()
    processor.add_listener(pulled(), start=False)
    processor.add_listener(pulled(max_pending=2, overflow="coalesce", key_func=str), start=False)
    assert processor.room(1000) == 1000


def test_room_is_what_the_fullest_blocking_listener_has_left() -> None:
    processor = SharedProcessor()
    roomy, tight = pulled("roomy", max_pending=100), pulled("tight", max_pending=5)
    processor.add_listener(roomy, start=False)
    processor.add_listener(tight, start=False)
    for name in "abc":
        processor.distribute(add(name), False)
    assert tight.room() == 2
    assert processor.room(1000) == 2
    assert processor.room(1) == 1
    for name in "defg":
        processor.distribute(add(name), False)
    assert tight.room() == 0
    assert processor.room(1000) == 0
    processor.remove_listener(tight)
    assert tight.room() is None
    assert processor.room(1000) == 93


# -- a batched pipeline, as the informer runs it ------------------------------------


def make_apply(
    fifo: DeltaFIFO,
    indexer: Indexer[Any],
    processor: SharedProcessor,
    extra_notifications: list[int],
) -> Any:
    """The informer's step for a batch: apply each key's deltas to the cache and
    distribute a notification per delta, inside one processor batch. Appends to
    ``extra_notifications`` how many notifications per listener the batch gives beyond
    one per key."""

    def apply(batch: DeltasBatch) -> None:
        initial = not fifo.has_synced()
        extra = 0
        with processor.batch():
            for key, deltas in batch:
                extra += len(deltas) - 1
                old = indexer.get_by_key(key)
                for delta in deltas:
                    obj = delta.object
                    if delta.type is DeltaType.DELETED:
                        indexer.delete_by_key(key)
                        processor.distribute(Notification(DELETE, obj, None), False)
                        old = None
                    elif old is not None:
                        indexer.put_by_key(key, obj)
                        processor.distribute(Notification(UPDATE, old, obj), False)
                        old = obj
                    else:
                        indexer.put_by_key(key, obj)
                        processor.distribute(Notification(ADD, obj, initial), False)
                        old = obj
        extra_notifications.append(extra)

    return apply


class Replayer:
    """A handler that rebuilds the cache from what it receives, checks each object's
    resourceVersions only grow, and records its queue's length as it finds it."""

    def __init__(self, listener_queue: list[ProcessorListener]) -> None:
        self.state: dict[str, dict[str, Any]] = {}
        self.versions: dict[str, int] = {}
        self.events = 0
        self.longest = 0
        self._listener = listener_queue

    def observe(self, obj: dict[str, Any]) -> None:
        self.events += 1
        if self._listener:
            self.longest = max(self.longest, self._listener[0].pending)
        key = meta_namespace_key(obj)
        version = int(obj["metadata"]["resourceVersion"])
        assert version > self.versions.get(key, 0), f"{key} out of order"
        self.versions[key] = version

    def on_add(self, obj: dict[str, Any], initial: bool) -> None:
        self.observe(obj)
        self.state[meta_namespace_key(obj)] = obj

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        assert old is self.state[meta_namespace_key(new)]
        self.observe(new)
        self.state[meta_namespace_key(new)] = new

    def on_delete(self, obj: Any) -> None:
        assert type(obj) is not DeletedFinalStateUnknown
        self.events += 1
        del self.state[meta_namespace_key(obj)]


def replayer(
    name: str, max_pending: int | None, *, awaits: bool = False
) -> tuple[Replayer, ProcessorListener]:
    """A :class:`Replayer` and its listener; with ``awaits`` its callbacks are async and
    yield once each, so its own task delivers to it and it falls behind the dispatcher (a
    sync one is called by the dispatcher itself whenever nothing of it is queued)."""
    holder: list[ProcessorListener] = []
    handler = Replayer(holder)
    callbacks: dict[str, Any] = {
        "on_add": handler.on_add,
        "on_update": handler.on_update,
        "on_delete": handler.on_delete,
    }
    if awaits:
        callbacks = {name: _awaiting(callback) for name, callback in callbacks.items()}
    listener = ProcessorListener(name=name, max_pending=max_pending, **callbacks)
    holder.append(listener)
    return handler, listener


def _awaiting(callback: Callable[..., None]) -> Callable[..., Any]:
    async def call(*args: Any) -> None:
        callback(*args)
        await asyncio.sleep(0)

    return call


async def test_a_batched_pipeline_keeps_order_bounds_queues_and_lines_up_a_late_handler() -> None:
    indexer: Indexer[Any] = Indexer()
    fifo = DeltaFIFO(known_objects=indexer)
    processor = SharedProcessor()
    max_pending, max_keys = 50, 1000
    bounded, bounded_listener = replayer("bounded", max_pending, awaits=True)
    free, free_listener = replayer("free", None)
    processor.add_listener(bounded_listener)
    processor.add_listener(free_listener)
    extra_notifications: list[int] = []
    apply = make_apply(fifo, indexer, processor, extra_notifications)
    keys = [f"p{i}" for i in range(200)]
    version = 0

    def next_pod(name: str) -> dict[str, Any]:
        nonlocal version
        version += 1
        return pod(name, str(version))

    async def pop_forever() -> None:
        while True:
            room = processor.room(max_keys)
            if not room:
                await processor.wait_for_room()
                continue
            await fifo.pop_batch(apply, max_keys=room)

    late: Replayer | None = None
    async with asyncio.TaskGroup() as tasks:
        running = [tasks.create_task(processor.run()), tasks.create_task(pop_forever())]
        await fifo.replace([next_pod(key) for key in keys], "0")
        for round_ in range(5):
            for i, key in enumerate(keys):
                if (i + round_) % 7 == 0:
                    await fifo.delete(pod(key, str(version)))
                    await fifo.add(next_pod(key))
                else:
                    await fifo.update(next_pod(key))
                if i % 50 == 0:
                    await asyncio.sleep(0)
            if round_ == 2:
                # A late handler: its snapshot comes from the cache as the pop task left
                # it, then it receives everything distributed after.
                late, late_listener = replayer("late", None)
                for obj in indexer.list():
                    late_listener.add(Notification(ADD, obj, True))
                processor.add_listener(late_listener)
        await wait_until(lambda: len(fifo) == 0 and bounded.state == free.state)
        await wait_until(
            lambda: all(listener.pending == 0 for listener in processor),
        )
        for task in running:
            task.cancel()
    final = {key: indexer.get_by_key(key) for key in indexer.list_keys()}
    assert late is not None
    assert bounded.state == free.state == late.state == final
    # Every key yields at least one notification per listener, so a batch of no more
    # keys than the room overshoots only by the extra deltas of its keys.
    assert bounded.longest <= max_pending + max(extra_notifications)
    assert bounded.longest >= max_pending - 1, "the bound was never reached"
