"""An interruptible run: one edge cancellation a stopper sends, taken back by the run, while
every other cancellation of the task passes through."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from aioinformer._kernel.runner import Interruptible


async def test_an_interruption_ends_the_run_once_and_its_cleanup_may_still_await() -> None:
    run = Interruptible()
    steps: list[str] = []

    async def work() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            steps.append("interrupted")
            await asyncio.sleep(0)  # a cleanup that awaits is not cut short
            run.interrupt()  # a second interruption does nothing
            await asyncio.sleep(0)
            steps.append("cleaned up")
            raise
        return "never"

    async def interrupt_soon() -> None:
        await asyncio.sleep(0)
        run.interrupt()

    async with anyio.create_task_group() as group:
        group.start_soon(interrupt_soon)
        assert await run.run(work()) is None
    assert steps == ["interrupted", "cleaned up"]
    assert run.interrupted
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0


async def test_a_run_not_interrupted_returns_its_result() -> None:
    async def work() -> int:
        await asyncio.sleep(0)
        return 7

    run = Interruptible()
    run.interrupt()  # before the run: nothing to interrupt
    assert await run.run(work()) == 7
    run.interrupt()  # after it: nothing either
    assert not run.interrupted


async def test_another_cancellation_of_the_task_passes_through() -> None:
    run = Interruptible()
    started = asyncio.Event()

    async def work() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.ensure_future(run.run(work()))
    await started.wait()
    run.interrupt()
    task.cancel()  # the owner's cancellation, beside the interruption
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_scope_cancelled_during_the_cleanup_still_cancels_the_run() -> None:
    # A runnable's group: interrupted first, then cut short when its grace runs out.
    run = Interruptible()
    steps: list[str] = []

    async def work() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            steps.append("interrupted")
            scope.cancel()  # the grace ran out while the cleanup awaits
            await asyncio.Event().wait()
            steps.append("never")

    async def interrupt_soon() -> None:
        await asyncio.sleep(0)
        run.interrupt()

    async with anyio.create_task_group() as group:
        group.start_soon(interrupt_soon)
        with anyio.CancelScope() as scope:
            await run.run(work())
            steps.append("after the run")
    assert scope.cancelled_caught
    assert steps == ["interrupted"]
