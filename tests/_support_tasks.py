"""Task hygiene: ``settle()``, ``stop()``, the census ``other_tasks()`` and a fixture
proving no task leaks.

``other_tasks()`` is every task of the running loop but the caller's: a test takes it as a
baseline before starting a component and compares after stopping it. A test module opts in
to the fixture with ``from tests._support_tasks import no_task_outlives_the_test`` (an
autouse fixture: importing it is enough). Nothing here starts a task.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


async def settle(rounds: int = 20) -> None:
    """Let every ready task run; no time passes."""
    for _ in range(rounds):
        await asyncio.sleep(0)


def other_tasks() -> set[asyncio.Task[Any]]:
    """Every unfinished task of the running loop except the caller's."""
    return asyncio.all_tasks() - {asyncio.current_task()}


async def stop(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and check that it ended cancelled, not by returning or raising."""
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.fixture(autouse=True)
async def no_task_outlives_the_test() -> AsyncIterator[None]:
    """After each test, once ready tasks have run, no task but the test's own is alive."""
    yield
    await settle()
    current = asyncio.current_task()
    leftovers = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    assert leftovers == [], f"tasks outlived the test: {leftovers}"
