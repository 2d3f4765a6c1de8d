"""SharedProcessor and ProcessorListener: per-handler queues and tasks, ordering,
isolation of slow and failing handlers, resync flags, bounded queues (block, coalesce)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from aioinformer.indexer import meta_namespace_key
from aioinformer.processor import (
    Notification,
    NotificationKind,
    ProcessorListener,
    SharedProcessor,
    determine_resync_period,
)
from aioinformer.testing.clock import FakeClock
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


# The processor's notification kinds, short.
ADD = NotificationKind.ADD
UPDATE = NotificationKind.UPDATE
DELETE = NotificationKind.DELETE


def pod(name: str, rv: str = "1", namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}}


class Recorder:
    """Records calls as ``(kind, name, rv)`` tuples."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.calls.append(("add", obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.calls.append(("update", new["metadata"]["name"], new["metadata"]["resourceVersion"]))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.calls.append(("delete", obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))


def listener_for(recorder: Recorder, **kwargs: Any) -> ProcessorListener:
    return ProcessorListener(
        name=kwargs.pop("name", "recorder"),
        on_add=recorder.on_add,
        on_update=recorder.on_update,
        on_delete=recorder.on_delete,
        **kwargs,
    )


@pytest.fixture
async def running() -> AsyncIterator[SharedProcessor]:
    processor = SharedProcessor()
    task = asyncio.create_task(processor.run())
    await asyncio.sleep(0)
    yield processor
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_listener_delivers_every_notification_in_order(running: SharedProcessor) -> None:
    recorder = Recorder()
    running.add_listener(listener_for(recorder))
    expected = []
    for i in range(1000):
        running.distribute(Notification(ADD, pod(f"p{i}"), False), False)
        expected.append(("add", f"p{i}", "1"))
    running.distribute(Notification(UPDATE, pod("p1"), pod("p1", "2")), False)
    running.distribute(Notification(DELETE, pod("p1", "2"), None), False)
    expected += [("update", "p1", "2"), ("delete", "p1", "2")]
    await wait_until(lambda: len(recorder.calls) == len(expected))
    assert recorder.calls == expected


async def test_async_handlers_are_awaited(running: SharedProcessor) -> None:
    seen: list[str] = []

    async def on_add(obj: dict[str, Any], initial: bool) -> None:
        await asyncio.sleep(0)
        seen.append(obj["metadata"]["name"])

    running.add_listener(ProcessorListener(name="async", on_add=on_add))
    for name in "abc":
        running.distribute(Notification(ADD, pod(name), False), False)
    await wait_until(lambda: len(seen) == 3)
    assert seen == ["a", "b", "c"]


async def test_callable_object_with_async_call_is_detected_as_async(
    running: SharedProcessor,
) -> None:
    seen: list[str] = []

    class Handler:
        async def __call__(self, obj: dict[str, Any], initial: bool) -> None:
            seen.append(obj["metadata"]["name"])

    running.add_listener(ProcessorListener(name="callable", on_add=Handler()))
    running.distribute(Notification(ADD, pod("a"), False), False)
    await wait_until(lambda: seen == ["a"])


async def test_slow_handler_does_not_delay_another(running: SharedProcessor) -> None:
    release = asyncio.Event()
    fast = Recorder()

    async def slow_add(obj: dict[str, Any], initial: bool) -> None:
        await release.wait()

    slow = ProcessorListener(name="slow", on_add=slow_add)
    running.add_listener(slow)
    running.add_listener(listener_for(fast, name="fast"))
    for i in range(10):
        running.distribute(Notification(ADD, pod(f"p{i}"), False), False)
    await wait_until(lambda: len(fast.calls) == 10)
    assert slow.pending == 9  # the first is being handled
    release.set()
    await wait_until(lambda: slow.pending == 0)


async def test_failing_handler_is_logged_by_name_and_keeps_receiving(
    running: SharedProcessor, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []

    def on_add(obj: dict[str, Any], initial: bool) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "bad":
            raise RuntimeError("boom")

    listener = ProcessorListener(name="picky-handler", on_add=on_add)
    running.add_listener(listener)
    with caplog.at_level(logging.ERROR, logger="aioinformer.processor"):
        for name in ("good", "bad", "after"):
            running.distribute(Notification(ADD, pod(name), False), False)
        await wait_until(lambda: len(seen) == 3)
    assert seen == ["good", "bad", "after"]
    assert listener.failed == 1
    assert listener.delivered == 3
    assert any("picky-handler" in record.getMessage() for record in caplog.records)


async def test_handler_raising_a_stray_cancellation_is_a_failure_not_the_end_of_delivery(
    running: SharedProcessor, caplog: pytest.LogCaptureFixture
) -> None:
    # A handler awaiting a future someone else cancelled gets a CancelledError although
    # nobody cancelled the listener: that is the handler failing, not a shutdown.
    seen: list[str] = []

    async def on_add(obj: dict[str, Any], initial: bool) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "bad":
            abandoned = asyncio.get_running_loop().create_future()
            abandoned.cancel()
            await abandoned

    listener = ProcessorListener(name="awaits-a-cancelled-future", on_add=on_add)
    running.add_listener(listener)
    with caplog.at_level(logging.ERROR, logger="aioinformer.processor"):
        for name in ("good", "bad", "after"):
            running.distribute(Notification(ADD, pod(name), False), False)
        await wait_until(lambda: len(seen) == 3)
    assert seen == ["good", "bad", "after"]
    assert listener.failed == 1
    assert any("awaits-a-cancelled-future" in record.getMessage() for record in caplog.records)


async def test_cancelling_the_processor_still_cancels_a_handler_call() -> None:
    processor = SharedProcessor()
    entered = asyncio.Event()

    async def on_add(obj: dict[str, Any], initial: bool) -> None:
        entered.set()
        await asyncio.Event().wait()

    listener = ProcessorListener(name="waits", on_add=on_add)
    processor.add_listener(listener)
    task = asyncio.create_task(processor.run())
    processor.distribute(Notification(ADD, pod("a"), False), False)
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert listener.failed == 0


async def test_missing_callbacks_are_skipped(running: SharedProcessor) -> None:
    deleted: list[str] = []
    listener = ProcessorListener(name="deletes-only", on_delete=lambda o: deleted.append("x"))
    running.add_listener(listener)
    running.distribute(Notification(ADD, pod("a"), False), False)
    running.distribute(Notification(UPDATE, pod("a"), pod("a", "2")), False)
    running.distribute(Notification(DELETE, pod("a", "2"), None), False)
    await wait_until(lambda: listener.delivered == 3)
    assert deleted == ["x"]


async def test_listener_added_to_running_processor_gets_a_task(running: SharedProcessor) -> None:
    recorder = Recorder()
    running.distribute(Notification(ADD, pod("before"), False), False)
    running.add_listener(listener_for(recorder))
    running.distribute(Notification(ADD, pod("after"), False), False)
    await wait_until(lambda: len(recorder.calls) == 1)
    assert recorder.calls == [("add", "after", "1")]


async def test_listeners_registered_before_run_start_with_it() -> None:
    processor = SharedProcessor()
    recorder = Recorder()
    processor.add_listener(listener_for(recorder))
    processor.distribute(Notification(ADD, pod("queued-early"), False), False)
    task = asyncio.create_task(processor.run())
    await wait_until(lambda: len(recorder.calls) == 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorder.calls == [("add", "queued-early", "1")]


async def test_removed_listener_drops_undelivered_but_finishes_running_call(
    running: SharedProcessor,
) -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    finished: list[str] = []

    async def on_add(obj: dict[str, Any], initial: bool) -> None:
        started.set()
        await release.wait()
        finished.append(obj["metadata"]["name"])

    listener = ProcessorListener(name="removed", on_add=on_add)
    running.add_listener(listener)
    running.distribute(Notification(ADD, pod("first"), False), False)
    running.distribute(Notification(ADD, pod("second"), False), False)
    await started.wait()
    running.remove_listener(listener)
    running.remove_listener(listener)  # idempotent
    assert listener not in running
    assert listener.pending == 0
    release.set()
    await wait_until(lambda: finished == ["first"])
    running.distribute(Notification(ADD, pod("third"), False), False)
    for _ in range(50):
        await asyncio.sleep(0)
    assert finished == ["first"]


async def test_stopping_the_processor_cancels_a_handler_blocked_forever() -> None:
    processor = SharedProcessor()
    entered = asyncio.Event()
    cancelled = asyncio.Event()

    async def on_add(obj: dict[str, Any], initial: bool) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    listener = ProcessorListener(name="stuck", on_add=on_add)
    processor.add_listener(listener)
    task = asyncio.create_task(processor.run())
    processor.distribute(Notification(ADD, pod("a"), False), False)
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()
    assert listener.closed
    assert len(processor) == 0


async def test_stopping_the_processor_cancels_every_handler_mid_call_and_waits_for_cleanup() -> (
    None
):
    processor = SharedProcessor()
    entered: list[str] = []
    steps: list[str] = []
    both_in = asyncio.Event()
    cleanup_may_end = asyncio.Event()

    async def blocked(obj: dict[str, Any], initial: bool) -> None:
        entered.append("blocked")
        if len(entered) == 2:
            both_in.set()
        try:
            await asyncio.Event().wait()
        finally:
            steps.append("blocked cancelled")

    async def cleaning(obj: dict[str, Any], initial: bool) -> None:
        entered.append("cleaning")
        if len(entered) == 2:
            both_in.set()
        try:
            await asyncio.Event().wait()
        finally:
            # Cancellation is level-triggered: cleanup that awaits must be shielded.
            with anyio.CancelScope(shield=True):
                await cleanup_may_end.wait()
                steps.append("cleaning finished its cleanup")

    processor.add_listener(ProcessorListener(name="blocked", on_add=blocked))
    processor.add_listener(ProcessorListener(name="cleaning", on_add=cleaning))
    task = asyncio.create_task(processor.run())
    processor.distribute(Notification(ADD, pod("a"), False), False)
    await both_in.wait()
    task.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done(), "the stop did not wait for a handler's cleanup"
    assert steps == ["blocked cancelled"]
    cleanup_may_end.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert steps == ["blocked cancelled", "cleaning finished its cleanup"]
    assert len(processor) == 0


def test_processor_runs_only_once() -> None:
    processor = SharedProcessor()
    processor.stop()
    with pytest.raises(RuntimeError):
        asyncio.run(processor.run())


# -- resync bookkeeping ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("desired", "check", "expected"),
    [
        pytest.param(0, 0, 0, id="no-resync-anywhere"),
        pytest.param(0, 10, 0, id="handler-opts-out"),
        pytest.param(5, 0, 0, id="informer-without-resync-disables-handler"),
        pytest.param(5, 10, 10, id="raised-to-check-period"),
        pytest.param(30, 10, 30, id="longer-than-check-kept"),
        pytest.param(10, 10, 10, id="equal-to-check-kept"),
    ],
)
def test_determine_resync_period(desired: float, check: float, expected: float) -> None:
    assert determine_resync_period(desired, check) == expected


def test_new_listener_starts_flagged_for_resync_distribution() -> None:
    processor = SharedProcessor(clock=FakeClock())
    recorder = Recorder()
    listener = listener_for(recorder, resync_period=0)
    processor.add_listener(listener)
    processor.distribute(Notification(UPDATE, pod("a"), pod("a")), True)
    assert listener.pending == 1


async def test_should_resync_flags_only_due_listeners_and_reschedules_them() -> None:
    clock = FakeClock()
    processor = SharedProcessor(clock=clock)
    never = listener_for(Recorder(), name="never", resync_period=0)
    every2 = listener_for(Recorder(), name="every2", resync_period=2, now=0)
    every3 = listener_for(Recorder(), name="every3", resync_period=3, now=0)
    for listener in (never, every2, every3):
        processor.add_listener(listener, start=False)

    def resync_round() -> list[str]:
        due = processor.should_resync()
        processor.distribute(Notification(UPDATE, pod("a"), pod("a")), True)
        names = [listener.name for listener in (never, every2, every3) if listener.pending]
        for listener in (never, every2, every3):
            listener._queue.items.clear()
        assert due == bool(names)
        return names

    assert resync_round() == []
    await clock.advance(2)
    assert resync_round() == ["every2"]
    await clock.advance(1)
    assert resync_round() == ["every3"]
    await clock.advance(1)
    assert resync_round() == ["every2"]
    await clock.advance(2)
    assert resync_round() == ["every2", "every3"]


def test_non_sync_notifications_reach_every_listener_regardless_of_flags() -> None:
    processor = SharedProcessor(clock=FakeClock())
    listeners = [listener_for(Recorder(), name=f"l{i}", resync_period=i) for i in range(3)]
    for listener in listeners:
        processor.add_listener(listener, start=False)
    processor.should_resync()  # nobody is due at t=0 except with period 0 (never)
    processor.distribute(Notification(UPDATE, pod("a"), pod("a", "2")), False)
    assert [listener.pending for listener in listeners] == [1, 1, 1]


def test_resync_check_period_change_recomputes_listener_periods() -> None:
    processor = SharedProcessor()
    zero = listener_for(Recorder(), requested_resync_period=0)
    minute = listener_for(Recorder(), requested_resync_period=60, resync_period=60)
    processor.add_listener(zero, start=False)
    processor.add_listener(minute, start=False)
    processor.resync_check_period_changed(55)
    assert (zero.resync_period, minute.resync_period) == (0, 60)
    processor.resync_check_period_changed(90)
    assert minute.resync_period == 90


# -- bounded queues -------------------------------------------------------------------


def test_max_pending_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_pending"):
        ProcessorListener(name="x", max_pending=0)
    with pytest.raises(ValueError, match="overflow"):
        ProcessorListener(name="x", max_pending=1, overflow="drop")  # type: ignore[arg-type]


async def test_block_policy_makes_wait_for_room_wait_until_handler_drains() -> None:
    processor = SharedProcessor()
    release = asyncio.Event()
    handled: list[str] = []

    async def on_add(obj: dict[str, Any], initial: bool) -> None:
        await release.wait()
        handled.append(obj["metadata"]["name"])

    listener = ProcessorListener(name="bounded", on_add=on_add, max_pending=2)
    processor.add_listener(listener)
    task = asyncio.create_task(processor.run())
    for i in range(4):
        processor.distribute(Notification(ADD, pod(f"p{i}"), False), False)
    await wait_until(lambda: listener.pending == 3)  # one taken by the blocked call
    assert not processor.has_room()
    waiter = asyncio.create_task(processor.wait_for_room())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiter.done()
    release.set()
    await waiter
    assert listener.pending < 2
    await wait_until(lambda: len(handled) == 4)
    assert processor.has_room()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_wait_for_room_returns_when_the_blocking_listener_is_removed() -> None:
    processor = SharedProcessor()
    listener = ProcessorListener(name="never-drained", max_pending=1)
    processor.add_listener(listener, start=False)
    processor.distribute(Notification(ADD, pod("a"), False), False)
    waiter = asyncio.create_task(processor.wait_for_room())
    await asyncio.sleep(0)
    assert not waiter.done()
    processor.remove_listener(listener)
    await waiter


def coalescing(max_pending: int) -> ProcessorListener:
    return ProcessorListener(
        name="coalescing",
        on_add=lambda o, i: None,
        max_pending=max_pending,
        overflow="coalesce",
        key_func=meta_namespace_key,
    )


def drain(listener: ProcessorListener) -> list[tuple[str, str, str | None]]:
    out: list[tuple[str, str, str | None]] = []
    while listener._queue.items:
        notification = listener._queue.get_nowait()
        if notification is None:
            continue
        kind, a, b = notification
        if kind == UPDATE:
            out.append(("update", b["metadata"]["name"], a["metadata"]["resourceVersion"]))
        elif kind == ADD:
            out.append(("add", a["metadata"]["name"], a["metadata"]["resourceVersion"]))
        else:
            out.append(("delete", a["metadata"]["name"], a["metadata"]["resourceVersion"]))
    return out


@pytest.mark.parametrize(
    ("sequence", "expected"),
    [
        pytest.param(
            [(ADD, "1"), (UPDATE, "2"), (UPDATE, "3")],
            [("add", "a", "3")],
            id="add-then-updates-is-one-add-of-the-newest",
        ),
        pytest.param(
            [(UPDATE, "2"), (UPDATE, "3")],
            [("update", "a", "1")],  # from the first old (rv 1) to the newest
            id="updates-fold-from-first-old",
        ),
        pytest.param(
            [(ADD, "1"), (DELETE, "1")],
            [],
            id="add-then-delete-vanishes",
        ),
        pytest.param(
            [(UPDATE, "2"), (DELETE, "2")],
            [("delete", "a", "2")],
            id="update-then-delete-is-the-delete",
        ),
        pytest.param(
            [(DELETE, "1"), (ADD, "5")],
            [("delete", "a", "1"), ("add", "a", "5")],
            id="delete-is-never-merged",
        ),
    ],
)
def test_coalesce_keeps_newest_state_per_key(
    sequence: list[tuple[int, str]], expected: list[tuple[str, str, str]]
) -> None:
    listener = coalescing(max_pending=1)
    filler = pod("filler", namespace="other")
    listener.add(Notification(ADD, filler, False))  # fills the bound: coalescing is active
    previous = pod("a", "1")
    for kind, rv in sequence:
        obj = pod("a", rv)
        if kind == UPDATE:
            listener.add(Notification(UPDATE, previous, obj))
        elif kind == ADD:
            listener.add(Notification(ADD, obj, False))
        else:
            listener.add(Notification(DELETE, obj, None))
        previous = obj
    assert drain(listener)[1:] == expected


def test_coalesce_does_not_merge_below_the_bound() -> None:
    listener = coalescing(max_pending=10)
    listener.add(Notification(ADD, pod("a", "1"), False))
    listener.add(Notification(UPDATE, pod("a", "1"), pod("a", "2")))
    assert listener.coalesced == 0
    assert drain(listener) == [("add", "a", "1"), ("update", "a", "1")]


def test_coalesce_bounds_queue_by_distinct_keys_and_replay_gives_newest_state() -> None:
    listener = coalescing(max_pending=3)
    state: dict[str, dict[str, Any]] = {}
    for rv in range(1, 200):
        name = f"p{rv % 5}"
        obj = pod(name, str(rv))
        if name in state:
            listener.add(Notification(UPDATE, state[name], obj))
        else:
            listener.add(Notification(ADD, obj, False))
        state[name] = obj
        assert listener.pending <= 5
    view: dict[str, dict[str, Any]] = {}
    while listener._queue.items:
        notification = listener._queue.get_nowait()
        if notification is not None:
            kind, a, b = notification
            view[meta_namespace_key(a)] = b if kind == UPDATE else a
    assert view == {meta_namespace_key(obj): obj for obj in state.values()}
    assert listener.coalesced > 0


async def test_coalesced_initial_add_followed_by_delete_still_lets_handler_sync() -> None:
    listener = coalescing(max_pending=1)
    listener.add(Notification(ADD, pod("a"), True))
    listener.add(Notification(ADD, pod("b"), True))
    assert not listener.has_synced()
    listener.add(Notification(DELETE, pod("b"), None))  # merges into the pending initial add of b
    assert not listener.has_synced()
    assert await listener.next_notification() == (ADD, pod("a"), True)
    assert listener.has_synced()
    assert listener.pending == 0


async def test_initial_add_counts_as_handled_only_after_the_call_returns(
    running: SharedProcessor,
) -> None:
    entered = asyncio.Event()
    release = asyncio.Event()

    async def on_add(obj: dict[str, Any], initial: bool) -> None:
        entered.set()
        await release.wait()

    listener = ProcessorListener(name="slow-initial", on_add=on_add)
    running.add_listener(listener)
    running.distribute(Notification(ADD, pod("a"), True), False)
    await entered.wait()
    assert not listener.has_synced()
    release.set()
    await wait_until(listener.has_synced)


async def test_pull_listener_yields_notifications_and_ends_when_closed() -> None:
    listener = ProcessorListener(name="pull")
    listener.add(Notification(ADD, pod("a"), True))
    assert await listener.next_notification() == (ADD, pod("a"), True)
    assert listener.has_synced()
    waiter = asyncio.create_task(listener.next_notification())
    await asyncio.sleep(0)
    listener.close()
    assert await waiter is None


def test_statistics_is_a_frozen_record() -> None:
    listener = coalescing(max_pending=4)
    listener.add(Notification(ADD, pod("a"), False))
    stats = listener.statistics()
    assert (stats.name, stats.pending, stats.max_pending, stats.overflow) == (
        "coalescing",
        1,
        4,
        "coalesce",
    )
    with pytest.raises(AttributeError):
        stats.pending = 0  # type: ignore[misc]
