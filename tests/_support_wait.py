"""Waiting for a condition that notifications announce, for the end-to-end tests.

``wait_until(condition, changed, poll=..., timeout=...)`` re-checks ``condition`` each time
``changed`` is set (a pop, a handler call) and at least every ``poll`` seconds, for what
nothing announces (a reflector's state, a bookmark's resourceVersion).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


async def wait_until(
    condition: Callable[[], bool], changed: asyncio.Event, *, poll: float, timeout: float
) -> None:
    """Return once ``condition()`` holds; raise ``TimeoutError`` after ``timeout`` seconds."""
    async with asyncio.timeout(timeout):
        while not condition():
            changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(poll):
                    await changed.wait()
