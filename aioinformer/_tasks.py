"""Small task helpers shared by the components that own tasks or take callbacks.

* :func:`is_async_callable` decides once, at registration, whether a callback is awaited.
* :func:`wait_regardless` and :func:`cancel_and_wait` keep the structured-concurrency
  promise that no task outlives the component that started it: a cancellation of the
  caller while waiting is held back until the tasks have ended, then re-raised.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

__all__ = ["cancel_and_wait", "is_async_callable", "wait_regardless"]


def is_async_callable(fn: object) -> bool:
    """True for a coroutine function, or an object whose ``__call__`` is one."""
    if fn is None:
        return False
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object with ``async def __call__``
    return call is not None and inspect.iscoroutinefunction(call)


async def wait_regardless(*tasks: asyncio.Task[Any]) -> None:
    """Wait until every one of ``tasks`` has finished, even if cancelled meanwhile (the
    cancellation is re-raised once they have)."""
    interrupted = False
    while pending := [task for task in tasks if not task.done()]:
        try:
            await asyncio.wait(pending)
        except asyncio.CancelledError:
            interrupted = True
    if interrupted:
        raise asyncio.CancelledError


async def cancel_and_wait(*tasks: asyncio.Task[Any]) -> None:
    """Cancel ``tasks`` and wait until every one has finished (see :func:`wait_regardless`)."""
    for task in tasks:
        task.cancel()
    await wait_regardless(*tasks)
