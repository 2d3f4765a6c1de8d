"""The Controller runner: informer events to keys, N workers, retries, sync gating, drain.

Time is virtual wherever a delay matters (a FakeClock drives the queue's rate limiter and
the drain timeout); the informers read from an in-memory FakeListerWatcher.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

import anyio
import pytest

from aioinformer import State
from aioinformer.errors import CacheSyncError, Requeue, ServerError
from aioinformer.informer import SharedIndexInformer
from aioinformer.models import DeletedFinalStateUnknown, KubeObject
from aioinformer.operator.controller import (
    Controller,
    enqueue_owner,
)
from aioinformer.reflector import ReflectorOptions
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_controller import limiter, retry_until_success
from tests._support_reflector import reflector_statistics
from tests._support_tasks import settle
from tests._support_wait import wait_until


def pod(name: str, *, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, **meta}}


# Loop turns enough for a change to reach a running controller's queue and workers.
SETTLE_ROUNDS = 100


class Recorder:
    """An async reconcile recording each call; ``gate`` (when set) holds calls open."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.calls: list[str] = []
        self.times: list[float] = []
        self.finished: list[str] = []
        self.running: Counter[str] = Counter()
        self.max_running: Counter[str] = Counter()
        self.max_total = 0
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()
        self.clock = clock

    async def __call__(self, key: str) -> None:
        self.calls.append(key)
        if self.clock is not None:
            self.times.append(self.clock.monotonic())
        self.running[key] += 1
        self.max_running[key] = max(self.max_running[key], self.running[key])
        self.max_total = max(self.max_total, sum(self.running.values()))
        self.entered.set()
        try:
            if self.gate is not None:
                await self.gate.wait()
        finally:
            self.running[key] -= 1
        self.finished.append(key)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def pods_informer() -> tuple[FakeListerWatcher, SharedIndexInformer]:
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(lw, name="pods")
    return lw, informer


# -- events to keys ----------------------------------------------------------------------


async def test_informer_events_enqueue_the_objects_keys(
    pods_informer: tuple[FakeListerWatcher, SharedIndexInformer],
) -> None:
    lw, informer = pods_informer
    seen: list[tuple[str, bool]] = []

    async def reconcile(key: str) -> None:
        namespace, _, name = key.partition("/")
        seen.append((key, informer.lister().get(name, namespace=namespace) is not None))

    controller = Controller("pods", reconcile, informers=[informer])
    async with informer, controller:
        await wait_until(lambda: len(seen) == 2)
        assert sorted(seen) == [("default/a", True), ("default/b", True)]

        lw.add(pod("c"))
        await wait_until(lambda: len(seen) == 3)
        lw.modify(pod("a", labels={"x": "y"}))
        await wait_until(lambda: len(seen) == 4)
        lw.delete("default/b")
        await wait_until(lambda: len(seen) == 5)

    assert seen[2:] == [("default/c", True), ("default/a", True), ("default/b", False)]


async def test_a_delete_missed_by_the_watch_enqueues_the_tombstones_key(
    clock: FakeClock,
) -> None:
    lw = FakeListerWatcher(objects=[pod("a"), pod("gone")])
    informer = SharedIndexInformer(lw, clock=clock)
    deleted: list[Any] = []
    informer.add_event_handler(on_delete=deleted.append)
    recorder = Recorder()
    controller = Controller("tombstones", recorder, informers=[informer])
    async with informer, controller:
        await wait_until(lambda: len(recorder.finished) == 2)
        lw.delete("default/gone", notify=False)  # the watch never hears of it
        lw.reset_watch()  # the watch breaks with its history gone: relist
        await wait_until(lambda: reflector_statistics(informer).state.name == "BACKING_OFF")
        await clock.advance(2)
        await wait_until(lambda: "default/gone" in recorder.finished[2:])
    assert isinstance(deleted[0], DeletedFinalStateUnknown)


async def test_a_custom_enqueue_mapping_replaces_the_key_function() -> None:
    lw = FakeListerWatcher(objects=[pod("a", labels={"team": "blue"}), pod("b")])
    informer = SharedIndexInformer(lw)
    keys: list[str] = []

    def by_team(obj: dict[str, Any]) -> list[str]:
        team = obj["metadata"].get("labels", {}).get("team")
        return [f"team/{team}"] if team else []

    controller = Controller("teams", keys.append, informers=[informer], enqueue=by_team)
    async with informer, controller:
        await wait_until(lambda: keys == ["team/blue"])
        lw.add(pod("c", labels={"team": "red"}))
        await wait_until(lambda: keys == ["team/blue", "team/red"])


async def test_a_failing_enqueue_mapping_is_logged_and_other_objects_still_enqueue(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lw = FakeListerWatcher(objects=[pod("bad"), pod("good")])
    informer = SharedIndexInformer(lw, name="pods")
    keys: list[str] = []

    def mapping(obj: dict[str, Any]) -> list[str]:
        if obj["metadata"]["name"] == "bad":
            raise ValueError("no key for this one")
        return ["default/good"]

    controller = Controller("mapper", keys.append, informers=[informer], enqueue=mapping)
    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.controller"):
        async with informer, controller:
            await wait_until(lambda: keys == ["default/good"])
    assert any(
        "controller mapper: no key for an object of pods" in record.getMessage()
        for record in caplog.records
    )


async def test_manual_enqueue_triggers_a_reconcile() -> None:
    recorder = Recorder()
    controller = Controller("manual", recorder)
    controller.enqueue("x")
    async with controller:
        await wait_until(lambda: recorder.finished == ["x"])
        controller.enqueue("y")
        await wait_until(lambda: recorder.finished == ["x", "y"])


async def test_enqueue_after_waits_for_the_delay(clock: FakeClock) -> None:
    recorder = Recorder()
    controller = Controller("later", recorder, clock=clock)
    async with controller:
        controller.enqueue_after("x", 10)
        await clock.advance(9.9)
        assert recorder.calls == []
        await clock.advance(0.1)
        await wait_until(lambda: recorder.finished == ["x"])


# -- owner references --------------------------------------------------------------------


def owned(kind: str, name: str, *, controller: bool = True, api: str = "example.com/v1") -> Any:
    ref = {"apiVersion": api, "kind": kind, "name": name, "uid": "u1", "controller": controller}
    return pod("cm", ownerReferences=[ref])


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(owned("Widget", "hello"), ["default/hello"], id="controller-owner"),
        pytest.param(owned("Widget", "hello", controller=False), [], id="non-controller-ref"),
        pytest.param(owned("Gadget", "hello"), [], id="other-kind"),
        pytest.param(owned("Widget", "hello", api="other.io/v1"), [], id="other-group"),
        pytest.param(pod("plain"), [], id="no-owner"),
        pytest.param(
            DeletedFinalStateUnknown("default/cm", owned("Widget", "hello")),
            ["default/hello"],
            id="tombstone",
        ),
        pytest.param(DeletedFinalStateUnknown("default/cm", None), [], id="empty-tombstone"),
        pytest.param(
            {
                "metadata": {
                    "name": "cluster-thing",
                    "ownerReferences": [
                        {
                            "apiVersion": "example.com/v1",
                            "kind": "Widget",
                            "name": "w",
                            "controller": True,
                        }
                    ],
                }
            },
            ["w"],
            id="cluster-scoped",
        ),
        pytest.param(
            KubeObject.model_validate(owned("Widget", "typed")), ["default/typed"], id="model"
        ),
    ],
)
def test_enqueue_owner_maps_an_owned_object_to_its_controllers_key(
    obj: Any, expected: list[str]
) -> None:
    mapping = enqueue_owner("Widget", api_version="example.com/v1")
    assert list(mapping(obj)) == expected


def test_enqueue_owner_without_api_version_matches_any_group() -> None:
    mapping = enqueue_owner("Widget")
    assert list(mapping(owned("Widget", "w", api="other.io/v2"))) == ["default/w"]


async def test_a_secondary_informer_enqueues_its_owners_key() -> None:
    widgets = SharedIndexInformer(FakeListerWatcher(objects=[pod("hello")]), name="widgets")
    config_maps_lw = FakeListerWatcher(resource="configmaps", kind="ConfigMap")
    config_maps = SharedIndexInformer(config_maps_lw, name="configmaps")
    recorder = Recorder()
    controller = Controller("widgets", recorder, informers=[widgets])
    controller.watch(config_maps, enqueue=enqueue_owner("Widget"))
    async with widgets, config_maps, controller:
        await wait_until(lambda: recorder.finished == ["default/hello"])
        config_maps_lw.add(owned("Widget", "hello"))
        await wait_until(lambda: recorder.finished == ["default/hello", "default/hello"])
        config_maps_lw.delete("default/cm")
        await wait_until(lambda: len(recorder.finished) == 3)


# -- workers -----------------------------------------------------------------------------


async def test_workers_reconcile_distinct_keys_in_parallel() -> None:
    recorder = Recorder()
    recorder.gate = asyncio.Event()
    controller = Controller("parallel", recorder, workers=3)
    for key in ("a", "b", "c", "d"):
        controller.enqueue(key)
    async with controller:
        await wait_until(lambda: controller.statistics().active == 3)
        await settle(SETTLE_ROUNDS)
        assert sorted(recorder.calls) == ["a", "b", "c"]
        assert controller.statistics().queue.depth == 1
        recorder.gate.set()
        await wait_until(lambda: sorted(recorder.finished) == ["a", "b", "c", "d"])
    assert recorder.max_total == 3


async def test_a_key_is_never_reconciled_by_two_workers_at_once() -> None:
    recorder = Recorder()
    recorder.gate = asyncio.Event()
    controller = Controller("serial", recorder, workers=4)
    controller.enqueue("k")
    async with controller:
        await wait_until(lambda: recorder.calls == ["k"])
        for _ in range(5):
            controller.enqueue("k")
            await settle(10)
        assert recorder.calls == ["k"]
        assert controller.statistics().active == 1
        recorder.gate.set()
        await wait_until(lambda: recorder.finished == ["k", "k"])
        await settle(SETTLE_ROUNDS)
    assert recorder.calls == ["k", "k"]  # the five re-adds collapsed into one reconcile
    assert recorder.max_running["k"] == 1


async def test_a_sync_reconcile_function_is_called_on_the_loop() -> None:
    calls: list[str] = []

    def reconcile(key: str) -> None:
        calls.append(key)

    controller = Controller("sync", reconcile, workers=2)
    controller.enqueue("a")
    async with controller:
        await wait_until(lambda: calls == ["a"])
    assert controller.statistics().successes == 1


@pytest.mark.parametrize("workers", [0, -1], ids=["zero", "negative"])
def test_fewer_than_one_worker_is_rejected(workers: int) -> None:
    with pytest.raises(ValueError, match="workers"):
        Controller("bad", Recorder(), workers=workers)


# -- outcomes ----------------------------------------------------------------------------


async def test_a_failing_reconcile_is_retried_with_growing_delay_then_forgotten(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    times: list[float] = []

    async def reconcile(key: str) -> None:
        times.append(clock.monotonic())
        if len(times) < 4:
            raise RuntimeError(f"attempt {len(times)} failed")

    controller = Controller("retry", reconcile, rate_limiter=limiter(1.0), clock=clock)
    controller.enqueue("default/a")
    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.controller"):
        async with controller:
            await wait_until(lambda: len(times) == 1)
            for _ in range(3):
                await clock.wait_for_sleepers(1)
                await clock.advance_to_next()
            await wait_until(lambda: controller.statistics().successes == 1)
            assert controller.queue.num_requeues("default/a") == 0
    assert times == [0.0, 1.0, 3.0, 7.0]  # delays of 1 s, 2 s and 4 s
    messages = [record.getMessage() for record in caplog.records]
    assert messages[:3] == [
        "controller retry: reconcile of default/a failed (retry 1)",
        "controller retry: reconcile of default/a failed (retry 2)",
        "controller retry: reconcile of default/a failed (retry 3)",
    ]
    assert isinstance(caplog.records[0].exc_info[1], RuntimeError)  # type: ignore[index]
    stats = controller.statistics()
    assert (stats.reconciles, stats.failures, stats.successes) == (4, 3, 1)


@pytest.mark.parametrize("how", ["raised", "returned"])
async def test_requeue_after_retries_after_the_delay_and_forgets_the_failures(
    clock: FakeClock, how: str
) -> None:
    times: list[float] = []

    async def reconcile(key: str) -> Requeue | None:
        times.append(clock.monotonic())
        if len(times) == 1:
            raise RuntimeError("first attempt fails")
        if len(times) == 2:
            if how == "raised":
                raise Requeue(after=5)
            return Requeue(after=5)
        return None

    controller = Controller("after", reconcile, rate_limiter=limiter(1.0), clock=clock)
    controller.enqueue("k")
    async with controller:
        await clock.wait_for_sleepers(1)
        await clock.advance(1)
        await wait_until(lambda: len(times) == 2)
        await settle(SETTLE_ROUNDS)
        assert controller.queue.num_requeues("k") == 0
        await clock.advance(4.9)
        assert len(times) == 2
        await clock.advance(0.1)
        await wait_until(lambda: controller.statistics().successes == 1)
    assert times == [0.0, 1.0, 6.0]
    assert controller.statistics().requeues == 1


async def test_a_bare_requeue_is_rate_limited_without_logging_an_error(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    times: list[float] = []

    async def reconcile(key: str) -> Requeue | None:
        times.append(clock.monotonic())
        return Requeue() if len(times) < 3 else None

    controller = Controller("bare", reconcile, rate_limiter=limiter(1.0), clock=clock)
    controller.enqueue("k")
    with caplog.at_level(logging.WARNING, logger="aioinformer.operator.controller"):
        await retry_until_success(controller, clock, retries=2)
    assert times == [0.0, 1.0, 3.0]
    assert caplog.records == []
    assert controller.statistics().requeues == 2


async def test_requeue_with_an_error_counts_as_a_failure(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    attempts: list[float] = []

    async def reconcile(key: str) -> Requeue | None:
        attempts.append(clock.monotonic())
        if len(attempts) == 1:
            return Requeue(ServerError({"code": 500, "message": "boom"}), after=60)
        return None

    controller = Controller("err", reconcile, rate_limiter=limiter(2.0), clock=clock)
    controller.enqueue("k")
    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.controller"):
        async with controller:
            await clock.wait_for_sleepers(1)
            await clock.advance(2)
            await wait_until(lambda: len(attempts) == 2)
    assert attempts == [0.0, 2.0]  # rate-limited, `after` ignored
    assert controller.statistics().failures == 1
    assert caplog.records[0].getMessage() == "controller err: reconcile of k failed (retry 1)"


@pytest.mark.parametrize(
    ("use_priority_queue", "expected"),
    [
        # The FIFO keeps the retry's delay beside the queued re-add: one more call later.
        (False, [0.0, 0.0, 1.0]),
        # The priority queue keeps one entry per key, ready at the earlier time: the
        # re-add's reconcile is the retry (controller-runtime's priority queue).
        (True, [0.0, 0.0]),
    ],
)
async def test_a_key_enqueued_while_it_fails_is_reconciled_once_more_not_twice(
    clock: FakeClock, use_priority_queue: bool, expected: list[float]
) -> None:
    gate = asyncio.Event()
    calls: list[float] = []

    async def reconcile(key: str) -> None:
        calls.append(clock.monotonic())
        if len(calls) == 1:
            await gate.wait()
            raise RuntimeError("fails while re-added")

    controller = Controller(
        "dirty",
        reconcile,
        rate_limiter=limiter(1.0),
        clock=clock,
        use_priority_queue=use_priority_queue,
    )
    controller.enqueue("k")
    async with controller:
        await wait_until(lambda: len(calls) == 1)
        controller.enqueue("k")  # dirty: handed out again at done()
        gate.set()
        await wait_until(lambda: len(calls) == 2)
        await clock.advance(1)  # the rate-limited retry finds the key already queued
        await settle(SETTLE_ROUNDS)
    assert calls == expected


# -- sync gating -------------------------------------------------------------------------


async def test_workers_start_only_after_every_informer_has_synced(clock: FakeClock) -> None:
    slow_lw = FakeListerWatcher(objects=[pod("slow")])
    slow_lw.fail_next_list(ServerError({"code": 500, "message": "not yet"}))
    fast = SharedIndexInformer(
        FakeListerWatcher(objects=[pod("fast")]),
        name="fast",
        reflector=ReflectorOptions(use_watch_list=False),
    )
    slow = SharedIndexInformer(
        slow_lw, name="slow", clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    recorder = Recorder()
    controller = Controller("gated", recorder, informers=[fast, slow])
    async with fast, slow, controller:
        assert await fast.wait_for_sync(timeout=5)
        await slow_lw.wait_for_list_calls(1)
        await settle(SETTLE_ROUNDS)
        # Read into a declared local: mypy would keep controller.state narrowed past the awaits
        # that change it.
        state: State = controller.state
        assert state is State.STARTING
        assert controller.statistics().queue.depth == 1  # fast's key waits in the queue
        assert recorder.calls == []
        await clock.wait_for_sleepers(1)
        await clock.advance(5)  # the slow informer's list backoff runs out
        assert await slow.wait_for_sync(timeout=5)
        await wait_until(lambda: sorted(recorder.finished) == ["default/fast", "default/slow"])
        assert controller.state is State.RUNNING


async def test_an_informer_that_stops_before_syncing_fails_the_run() -> None:
    lw = FakeListerWatcher()
    lw.stall_next_list()
    informer = SharedIndexInformer(
        lw, name="never", reflector=ReflectorOptions(use_watch_list=False)
    )
    recorder = Recorder()
    controller = Controller("unsynced", recorder, informers=[informer])
    async with informer:
        run = asyncio.create_task(controller.run())
        await lw.wait_for_list_calls(1)
    with pytest.raises(CacheSyncError, match="informer never stopped before it synced"):
        await run
    assert recorder.calls == []
    assert controller.state is State.STOPPED


async def test_stop_while_waiting_for_sync_returns_without_reconciling() -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.stall_next_list()
    informer = SharedIndexInformer(lw, reflector=ReflectorOptions(use_watch_list=False))
    recorder = Recorder()
    controller = Controller("early", recorder, informers=[informer])
    async with informer:
        run = asyncio.create_task(controller.run())
        await lw.wait_for_list_calls(1)
        controller.stop()
        await asyncio.wait_for(run, timeout=5)
    assert recorder.calls == []


# -- shutdown ----------------------------------------------------------------------------


async def test_cancelling_run_lets_the_reconcile_in_flight_finish_then_reraises() -> None:
    recorder = Recorder()
    recorder.gate = asyncio.Event()
    controller = Controller("drain", recorder, workers=2)
    controller.enqueue("busy")
    run = asyncio.create_task(controller.run())
    await recorder.entered.wait()
    run.cancel()
    await settle(SETTLE_ROUNDS)
    assert not run.done()
    assert controller.state is State.STOPPING
    controller.enqueue("late")  # the queue still accepts; nobody takes it
    recorder.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert recorder.finished == ["busy"]
    stats = controller.statistics()
    assert (stats.state, stats.workers, stats.active) == (State.STOPPED, 0, 0)


async def test_stop_takes_no_new_keys_and_drains_the_one_in_flight() -> None:
    recorder = Recorder()
    recorder.gate = asyncio.Event()
    controller = Controller("stop", recorder, workers=1)
    controller.enqueue("first")
    controller.enqueue("second")
    run = asyncio.create_task(controller.run())
    await recorder.entered.wait()
    controller.stop()
    await settle(SETTLE_ROUNDS)
    recorder.gate.set()
    await asyncio.wait_for(run, timeout=5)
    assert recorder.calls == ["first"]
    assert recorder.finished == ["first"]


async def test_a_reconcile_outliving_the_drain_timeout_is_cancelled(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    recorder.gate = asyncio.Event()  # never set
    controller = Controller("stuck", recorder, clock=clock, drain_timeout=10)
    controller.enqueue("ns/stuck")
    with caplog.at_level(logging.WARNING, logger="aioinformer.operator.controller"):
        async with controller:
            await recorder.entered.wait()
            controller.stop()
            await clock.wait_for_sleepers(1)
            await clock.advance(9.9)
            assert controller.statistics().active == 1
            await clock.advance(0.1)
    assert recorder.finished == []
    assert controller.statistics().active == 0
    assert "cancelling 1 reconciles still running: ['ns/stuck']" in caplog.text


async def test_a_second_cancellation_cuts_the_drain_short() -> None:
    recorder = Recorder()
    recorder.gate = asyncio.Event()  # never set
    controller = Controller("impatient", recorder)
    controller.enqueue("k")
    run = asyncio.create_task(controller.run())
    await recorder.entered.wait()
    run.cancel()
    await settle(SETTLE_ROUNDS)
    assert not run.done()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert recorder.finished == []
    assert controller.state is State.STOPPED


async def test_cancelling_the_async_with_body_still_drains() -> None:
    recorder = Recorder()
    recorder.gate = asyncio.Event()

    async def body() -> None:
        async with controller:
            await recorder.entered.wait()
            await asyncio.Event().wait()

    controller = Controller("body", recorder)
    controller.enqueue("k")
    task = asyncio.create_task(body())
    await recorder.entered.wait()
    task.cancel()
    await settle(SETTLE_ROUNDS)
    assert controller.state is State.STOPPING
    recorder.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorder.finished == ["k"]


async def test_stopping_removes_the_handlers_from_the_informers() -> None:
    informer = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]))
    recorder = Recorder()
    controller = Controller("handlers", recorder, informers=[informer])
    async with informer:
        async with controller:
            await wait_until(lambda: recorder.finished == ["default/a"])
            assert len(informer.statistics().handlers) == 1
        assert informer.statistics().handlers == ()


async def test_a_controller_runs_only_once() -> None:
    controller = Controller("once", Recorder())
    controller.stop()
    await controller.run()
    with pytest.raises(RuntimeError, match="runs only once"):
        await controller.run()
    with pytest.raises(RuntimeError, match="before run"):
        controller.watch(SharedIndexInformer(FakeListerWatcher()))


async def test_statistics_and_repr_describe_the_controller() -> None:
    recorder = Recorder()
    recorder.gate = asyncio.Event()
    controller = Controller("stats", recorder, workers=2)
    assert controller.statistics().state is State.NEW
    controller.enqueue("a")
    async with controller:
        await recorder.entered.wait()
        stats = controller.statistics()
        assert (stats.name, stats.state, stats.workers, stats.active) == (
            "stats",
            State.RUNNING,
            2,
            1,
        )
        assert stats.queue.processing == 1
        assert repr(controller) == ("<Controller 'stats' state=RUNNING workers=2 active=1 depth=0>")
        recorder.gate.set()


async def test_anyio_task_group_start_returns_once_the_controller_runs_on_synced_caches() -> None:
    informer = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]))
    recorder = Recorder()
    controller = Controller("started", recorder, informers=[informer])
    async with informer, anyio.create_task_group() as task_group:
        await task_group.start(controller.run)
        assert controller.state is State.RUNNING
        assert informer.has_synced()
        assert controller.statistics().workers == 1
        await wait_until(lambda: recorder.finished == ["default/a"])
        controller.stop()
    assert controller.state is State.STOPPED


async def test_async_with_returns_once_the_controller_has_started() -> None:
    controller = Controller("entered", Recorder())
    async with controller:
        assert controller.state is not State.NEW
    assert controller.state is State.STOPPED


async def test_a_controller_goes_through_every_state_once(clock: FakeClock) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.fail_next_list(ServerError({"code": 500, "message": "not yet"}))
    informer = SharedIndexInformer(
        lw, clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    recorder = Recorder()
    recorder.gate = asyncio.Event()
    controller = Controller("phases", recorder, informers=[informer], clock=clock)
    seen: list[State] = [controller.state]
    async with informer, anyio.create_task_group() as task_group:
        task_group.start_soon(controller.run)
        await lw.wait_for_list_calls(1)
        await settle(SETTLE_ROUNDS)
        seen.append(controller.state)  # waiting for the informer's second list
        await clock.wait_for_sleepers(1)
        await clock.advance(5)
        await recorder.entered.wait()
        seen.append(controller.state)
        controller.stop()
        seen.append(controller.state)  # the reconcile in flight drains
        assert controller.statistics().active == 1
        recorder.gate.set()
    seen.append(controller.state)
    assert seen == [State.NEW, State.STARTING, State.RUNNING, State.STOPPING, State.STOPPED]
    assert recorder.finished == ["default/a"]


async def test_a_drain_that_ends_in_time_cancels_nothing(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    recorder.gate = asyncio.Event()
    controller = Controller("tidy", recorder, clock=clock, drain_timeout=10, workers=3)
    controller.enqueue("ns/a")
    with caplog.at_level(logging.INFO, logger="aioinformer.operator.controller"):
        async with controller:
            await recorder.entered.wait()
            controller.stop()
            await clock.wait_for_sleepers(1)  # the grace period
            await clock.advance(9.9)
            assert controller.statistics().workers == 1  # the idle two ended at once
            recorder.gate.set()
    assert recorder.finished == ["ns/a"]
    assert "waiting up to 10.0s for 1 reconciles to finish" in caplog.text
    assert "cancelling" not in caplog.text
