"""The structured-concurrency helpers: async detection once at registration, readiness
signalled by the started task, a service group whose children end with it, "the first of
N, then reap the rest", and waits that let no task outlive its owner even when the owner
is cancelled meanwhile."""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any

import pytest

from aioinformer._kernel.runner import (
    BlockRun,
    Running,
    TaskRunner,
    cancel_and_wait,
    finish_regardless,
    first_completed,
    is_async_callable,
    wait_regardless,
)
from aioinformer.testing import FakeClock
from tests._support_tasks import no_task_outlives_the_test, settle  # noqa: F401


async def _coroutine_function() -> None:
    pass


def _function() -> None:
    pass


class _AsyncCallable:
    async def __call__(self) -> None:
        pass


class _SyncCallable:
    def __call__(self) -> None:
        pass


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        pytest.param(_coroutine_function, True, id="coroutine-function"),
        pytest.param(functools.partial(_coroutine_function), True, id="partial-of-async"),
        pytest.param(_AsyncCallable(), True, id="object-with-async-call"),
        pytest.param(_function, False, id="function"),
        pytest.param(_SyncCallable(), False, id="object-with-sync-call"),
        pytest.param(None, False, id="none"),
    ],
)
def test_is_async_callable_tells_what_must_be_awaited(fn: object, expected: bool) -> None:
    assert is_async_callable(fn) is expected


# -- shielded waits --------------------------------------------------------------------


async def test_cancel_and_wait_ends_every_task() -> None:
    tasks = [asyncio.create_task(asyncio.Event().wait()) for _ in range(3)]
    await cancel_and_wait(*tasks)
    assert all(task.cancelled() for task in tasks)


async def test_a_cancelled_waiter_still_waits_for_its_tasks_then_reraises() -> None:
    release = asyncio.Event()
    finished: list[str] = []

    async def slow_cleanup() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await release.wait()  # cleanup that takes a while
            finished.append("cleanup")

    task = asyncio.create_task(slow_cleanup())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(cancel_and_wait(task))
    await asyncio.sleep(0)
    waiter.cancel()  # the owner is cancelled while its task is still cleaning up
    await asyncio.sleep(0)
    assert not waiter.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert finished == ["cleanup"]
    assert task.done()


async def test_wait_regardless_returns_once_all_tasks_have_finished() -> None:
    gate = asyncio.Event()
    tasks = [asyncio.create_task(gate.wait()) for _ in range(2)]
    waiter = asyncio.create_task(wait_regardless(*tasks))
    await asyncio.sleep(0)
    assert not waiter.done()
    gate.set()
    await waiter
    assert all(task.done() and not task.cancelled() for task in tasks)


async def test_finish_regardless_completes_the_work_before_the_cancellation_lands() -> None:
    gate = asyncio.Event()
    steps: list[str] = []

    async def work() -> str:
        await gate.wait()
        steps.append("done")
        return "result"

    waiter = asyncio.create_task(finish_regardless(work()))
    await settle()
    waiter.cancel()
    await settle()
    assert not waiter.done()
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert steps == ["done"]


async def test_finish_regardless_returns_the_result_or_raises_the_error() -> None:
    async def value() -> int:
        return 7

    async def failing() -> None:
        raise ValueError("boom")

    assert await finish_regardless(value()) == 7
    with pytest.raises(ValueError, match="boom"):
        await finish_regardless(failing())


# -- the first of N ----------------------------------------------------------------------


async def _after(turns: int, value: Any) -> Any:
    for _ in range(turns):
        await asyncio.sleep(0)
    return value


async def _forever() -> None:
    await asyncio.Event().wait()


@pytest.mark.parametrize(
    ("turns", "winner"),
    [
        pytest.param((0, 5, 5), 0, id="the-first-finishes-first"),
        pytest.param((5, 0, 5), 1, id="the-second-finishes-first"),
        pytest.param((3, 3, 3), 0, id="a-tie-goes-to-the-earliest-argument"),
        pytest.param((9, 9, 1), 2, id="the-last-finishes-first"),
    ],
)
async def test_first_completed_names_the_first_to_finish_and_reaps_the_others(
    turns: tuple[int, int, int], winner: int
) -> None:
    coros = [_after(n, f"value {i}") for i, n in enumerate(turns)]
    index, task = await first_completed(*coros)
    assert index == winner
    assert task.result() == f"value {winner}"


async def test_first_completed_hands_back_an_error_through_the_task() -> None:
    async def failing() -> None:
        raise ValueError("boom")

    index, task = await first_completed(_forever(), failing())
    assert index == 1
    with pytest.raises(ValueError, match="boom"):
        task.result()


async def test_a_cancelled_first_completed_reaps_every_coroutine() -> None:
    cleaned: list[int] = []

    async def parked(i: int) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # cleanup that needs a turn of its own
            cleaned.append(i)

    waiter = asyncio.create_task(first_completed(parked(0), parked(1)))
    await settle()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert sorted(cleaned) == [0, 1]


# -- readiness ---------------------------------------------------------------------------


async def test_start_returns_once_the_run_signals_it_has_started() -> None:
    steps: list[str] = []
    proceed = asyncio.Event()

    async def run(*, task_status: Any) -> None:
        steps.append("setting up")
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        task_status.started()
        await proceed.wait()
        steps.append("after proceed")
        await asyncio.Event().wait()

    running = await Running.start(run, name="component")
    assert steps == ["setting up"]
    proceed.set()
    await settle()
    assert steps == ["setting up", "after proceed"]
    await running.stop()
    assert running.failure is None


async def test_a_failure_before_readiness_is_raised_by_start() -> None:
    async def run(*, task_status: Any) -> None:
        await asyncio.sleep(0)
        raise ValueError("cannot start")

    with pytest.raises(ValueError, match="cannot start"):
        await Running.start(run, name="component")


async def test_a_run_returning_before_readiness_is_an_error() -> None:
    async def run(*, task_status: Any) -> None:
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="component ended without signalling"):
        await Running.start(run, name="component")


async def test_signalling_readiness_twice_is_an_error() -> None:
    async def run(*, task_status: Any) -> None:
        task_status.started()
        task_status.started()

    running = await Running.start(run, name="component")
    await running.wait()
    assert isinstance(running.failure, RuntimeError)


async def test_cancelling_the_starter_cancels_the_run_before_it_is_ready() -> None:
    ended: list[str] = []

    async def run(*, task_status: Any) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            ended.append("run")

    starter = asyncio.create_task(Running.start(run, name="component"))
    await settle()
    starter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starter
    assert ended == ["run"]


async def test_stop_waits_for_the_run_to_clean_up_even_when_cancelled_during_the_drain() -> None:
    release = asyncio.Event()
    steps: list[str] = []

    async def run(*, task_status: Any) -> None:
        task_status.started()
        try:
            await asyncio.Event().wait()
        finally:
            await release.wait()
            steps.append("cleaned up")

    running = await Running.start(run, name="component")
    stopper = asyncio.create_task(running.stop())
    await settle()
    stopper.cancel()
    await settle()
    assert not stopper.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await stopper
    assert steps == ["cleaned up"]


async def test_the_failure_of_a_run_is_kept_for_its_owner() -> None:
    async def run(*, task_status: Any) -> None:
        task_status.started()
        await asyncio.sleep(0)
        raise ValueError("later")

    running = await Running.start(run, name="component")
    await running.wait()
    assert isinstance(running.failure, ValueError)


async def test_a_cancelled_wait_cancels_the_run_and_waits_for_it() -> None:
    ended: list[str] = []

    async def run(*, task_status: Any) -> None:
        task_status.started()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)
            ended.append("run")

    running = await Running.start(run, name="component")
    waiter = asyncio.create_task(running.wait())
    await settle()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert ended == ["run"]


def test_spawn_without_a_running_loop_refuses_and_closes_the_coroutine() -> None:
    started: list[str] = []

    async def helper() -> None:
        started.append("ran")

    coro = helper()
    with pytest.raises(RuntimeError):
        Running.spawn(coro, name="helper")
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED
    assert started == []


async def test_a_spawned_helper_runs_until_its_owner_cancels_and_reaps_it() -> None:
    steps: list[str] = []

    async def helper() -> None:
        steps.append("started")
        try:
            await asyncio.Event().wait()
        finally:
            steps.append("cleaned up")

    running = Running.spawn(helper(), name="helper")
    await settle()
    assert (steps, running.done) == (["started"], False)
    running.cancel()
    assert not running.done, "cancel() does not wait"
    await running.wait()
    assert (steps, running.done, running.failure) == (["started", "cleaned up"], True, None)


async def test_a_spawned_helper_keeps_its_failure_for_its_owner() -> None:
    async def helper() -> None:
        raise ValueError("broken")

    running = Running.spawn(helper(), name="helper")
    await running.wait()
    assert isinstance(running.failure, ValueError)


# -- the service group -------------------------------------------------------------------


async def test_leaving_the_block_cancels_the_children_newest_first_and_waits() -> None:
    order: list[str] = []
    names: list[str] = []

    async def service(name: str) -> None:
        task = asyncio.current_task()
        assert task is not None
        names.append(task.get_name())
        try:
            await asyncio.Event().wait()
        finally:
            order.append(name)

    async with TaskRunner(name="svc") as runner:
        runner.start_soon(service("first"), name="first")
        runner.start_soon(service("second"), name="second")
        await settle()
        assert len(runner) == 2
    assert order == ["second", "first"]
    assert names == ["svc first", "svc second"]
    assert len(runner) == 0


async def test_cancel_from_another_call_path_ends_the_children() -> None:
    ended = asyncio.Event()

    async def service() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            ended.set()

    async with TaskRunner(name="svc") as runner:
        runner.start_soon(service(), name="child")
        await settle()
        asyncio.get_running_loop().call_soon(runner.cancel)
        await ended.wait()
        await settle()
        assert len(runner) == 0


async def test_start_returns_once_the_child_signals_and_gives_its_value() -> None:
    steps: list[str] = []

    async def service(*, task_status: Any) -> None:
        steps.append("starting")
        await asyncio.sleep(0)
        task_status.started("ready")
        steps.append("serving")
        await asyncio.Event().wait()

    async with TaskRunner(name="svc") as runner:
        value = await runner.start(service, name="child")
        assert value == "ready"
        assert steps[0] == "starting"
        assert len(runner) == 1
    assert len(runner) == 0


async def test_start_raises_what_the_child_raised_before_signalling() -> None:
    async def service(*, task_status: Any) -> None:
        raise KeyError("early")

    async with TaskRunner(name="svc") as runner:
        with pytest.raises(KeyError, match="early"):
            await runner.start(service, name="child")
        assert len(runner) == 0


async def test_drain_lets_children_finish_within_the_grace_period() -> None:
    clock = FakeClock()
    release = asyncio.Event()
    finished: list[str] = []

    async def worker() -> None:
        await release.wait()
        finished.append("worker")

    async with TaskRunner(name="svc") as runner:
        runner.start_soon(worker(), name="worker")
        drain = asyncio.ensure_future(runner.drain(30, clock))
        await settle()
        release.set()
        assert await drain is True
    assert finished == ["worker"]


async def test_drain_cancels_what_outlives_the_grace_period() -> None:
    clock = FakeClock()
    cancelled: list[str] = []

    async def stuck() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append("stuck")
            raise

    async with TaskRunner(name="svc") as runner:
        runner.start_soon(stuck(), name="stuck")
        drain = asyncio.ensure_future(runner.drain(30, clock))
        await settle()
        assert cancelled == []
        await clock.advance(30)
        assert await drain is False
        assert cancelled == ["stuck"]
        assert len(runner) == 0


async def test_drain_of_an_idle_runner_returns_at_once() -> None:
    async with TaskRunner(name="svc") as runner:
        assert await runner.drain(30, FakeClock()) is True


async def test_a_failing_child_cancels_its_siblings_and_the_block() -> None:
    cancelled: list[str] = []

    async def sibling() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append("sibling")
            raise

    async def failing() -> None:
        await asyncio.sleep(0)
        raise ValueError("boom")

    async def serve() -> None:
        async with TaskRunner(name="svc") as runner:
            runner.start_soon(sibling(), name="sibling")
            runner.start_soon(failing(), name="failing")
            await asyncio.Event().wait()

    with pytest.raises(ExceptionGroup) as caught:
        await serve()
    assert caught.group_contains(ValueError, match="boom")
    assert cancelled == ["sibling"]


async def test_a_runner_that_is_not_running_refuses_children() -> None:
    runner = TaskRunner(name="svc")
    with pytest.raises(RuntimeError, match="not running"):
        runner.start_soon(_forever(), name="child")


async def _fail_after_start(error: BaseException, *, task_status: Any) -> None:
    task_status.started()
    await asyncio.sleep(0)
    raise error


async def test_block_run_cancels_the_body_on_a_listed_failure_and_raises_it_on_exit() -> None:
    stopped: list[str] = []
    block = BlockRun(
        functools.partial(_fail_after_start, KeyError("k")),
        name="component",
        cancels_body_on=(KeyError,),
    )

    async def body() -> None:
        await block.enter()
        try:
            await asyncio.Event().wait()  # ended by the run's failure
        except asyncio.CancelledError as exc:
            await block.exit(exc, lambda: stopped.append("stop"))

    with pytest.raises(KeyError):
        await body()
    assert stopped == ["stop"]


async def test_block_run_leaves_the_body_alone_on_other_failures() -> None:
    block = BlockRun(
        functools.partial(_fail_after_start, ValueError("v")),
        name="component",
        cancels_body_on=(KeyError,),
    )
    await block.enter()
    await settle()  # the run has failed by now; the body goes on
    with pytest.raises(ValueError, match="v"):
        await block.exit(None, lambda: None)


async def test_wait_returns_once_every_child_ended_by_itself() -> None:
    release = asyncio.Event()
    ended: list[str] = []

    async def child(name: str) -> None:
        await release.wait()
        ended.append(name)

    async with TaskRunner(name="svc") as runner:
        runner.start_soon(child("a"), name="a")
        runner.start_soon(child("b"), name="b")
        waiter = asyncio.ensure_future(runner.wait())
        await settle()
        assert not waiter.done()
        release.set()
        await waiter
        assert sorted(ended) == ["a", "b"]
        await runner.wait()  # nothing left: at once


async def test_a_cancelled_wait_cancels_the_children_and_waits_for_them() -> None:
    cancelled: list[str] = []

    async def child() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append("child")
            raise

    async with TaskRunner(name="svc") as runner:
        runner.start_soon(child(), name="child")
        waiter = asyncio.ensure_future(runner.wait())
        await settle()
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert cancelled == ["child"]
        assert len(runner) == 0
