"""Task hygiene for the queue tests: ``settle()`` and a fixture proving no task leaks.

A test module opts in with ``from tests._support_tasks import no_task_outlives_the_test``
(an autouse fixture: importing it is enough).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


async def settle(rounds: int = 20) -> None:
    """Let every ready task run; no time passes."""
    for _ in range(rounds):
        await asyncio.sleep(0)


@pytest.fixture(autouse=True)
async def no_task_outlives_the_test() -> AsyncIterator[None]:
    """After each test, once ready tasks have run, no task but the test's own is alive."""
    yield
    await settle()
    current = asyncio.current_task()
    leftovers = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    assert leftovers == []
