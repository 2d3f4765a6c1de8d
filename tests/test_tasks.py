"""The shared task helpers: async detection once at registration, and waits that let no
task outlive its owner even when the owner is cancelled meanwhile."""

from __future__ import annotations

import asyncio
import functools

import pytest

from aioinformer._tasks import cancel_and_wait, is_async_callable, wait_regardless


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
