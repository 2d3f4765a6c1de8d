"""The one way the tests wait for a condition: ``wait_until``.

Input: a condition (a sync or async callable returning ``bool``) and how to re-check it.
Output: ``wait_until`` returns once the condition holds, or raises ``TimeoutError`` whose
message names the condition, after ``timeout`` seconds of real time.

Prefer what announces the condition over this helper: ``informer.wait_for_sync``, the fake
API server's ``wait_for_watchers``, a ``FakeClock``'s ``wait_for_sleepers``, an
``asyncio.Event`` a handler sets. ``wait_until`` is for what nothing announces, and it
re-checks in one of three ways:

- every loop turn (the default, ``poll=0``): for state that tasks of this event loop change,
  so no real time needs to pass;
- each time ``changed`` is set, and at least every ``poll`` seconds (``poll=0``: only when
  it is set): for a condition some notifications announce and others do not (a pop does,
  a reflector's state does not);
- every ``poll`` seconds (1-10 ms): for what only polling can observe, such as socket I/O
  between a real client and server, another server's state or a subprocess. A real sleep
  lets the loop's selector run, which ``sleep(0)`` alone would starve.

``between``, when given, runs before each re-check: drivers use it to move a fake clock past
a backoff the code under test sleeps out. Ordering: the condition is always checked first,
so a condition that already holds returns without yielding. Task model: runs in the
caller's task and starts none.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from typing import TYPE_CHECKING

from aioinformer.testing._eventually import describe

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable


async def wait_until(
    condition: Callable[[], bool | Awaitable[bool]],
    *,
    timeout: float = 5.0,
    poll: float = 0.0,
    changed: asyncio.Event | None = None,
    between: Callable[[], Awaitable[object]] | None = None,
    what: str | None = None,
) -> None:
    """Return once ``condition()`` holds; raise ``TimeoutError`` naming ``what`` (default:
    the condition's source) after ``timeout`` seconds of real time."""
    try:
        async with asyncio.timeout(timeout):
            while not await _holds(condition):
                if between is not None:
                    await between()
                if changed is None:
                    await asyncio.sleep(poll)
                    continue
                changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(poll or None):
                        await changed.wait()
    except TimeoutError:
        raise TimeoutError(
            f"gave up after {timeout} s waiting until {what or describe(condition)}"
        ) from None


async def _holds(condition: Callable[[], bool | Awaitable[bool]]) -> bool:
    result = condition()
    if inspect.isawaitable(result):
        return await result
    return result
