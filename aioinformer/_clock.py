"""Time, injectable: the ``Clock`` protocol and the event loop's clock.

Every component that waits (reflector backoff and watch deadlines, processor resync,
workqueue delays, leader election) takes ``clock=``; tests pass
:class:`aioinformer.testing.FakeClock` and move time by hand instead of sleeping.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

__all__ = ["Clock", "LoopClock", "default_clock"]


class Clock(Protocol):
    """A monotonic time source that can be slept on."""

    def monotonic(self) -> float:
        """Seconds on a monotonic scale."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend for ``seconds`` (a checkpoint even for 0)."""
        ...


class LoopClock:
    """The running event loop's clock (``loop.time()`` and ``asyncio.sleep``)."""

    __slots__ = ()

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def __repr__(self) -> str:
        return "<LoopClock>"


default_clock: Clock = LoopClock()
