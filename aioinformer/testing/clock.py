"""A virtual clock for deterministic tests: time moves only when the test says so.

Pass it as ``clock=`` to a Reflector, SharedIndexInformer, DelayingQueue or LeaderElector,
then drive time::

    clock = FakeClock()
    reflector = Reflector(lw, store, clock=clock)
    ...
    await clock.wait_for_sleepers(1)   # the reflector is now backing off
    await clock.advance(0.8)           # wake it exactly at its deadline

``advance()`` wakes sleepers one deadline at a time, in order, and lets the event loop
run between them, so a woken task that goes back to sleep is woken again if its new
deadline still falls within the advance.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

__all__ = ["FakeClock"]

_SETTLE_ROUNDS = 20


class FakeClock:
    """A ``Clock`` whose time is advanced by hand."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        # (deadline, sequence, future); cancelled futures are dropped lazily.
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._changed: asyncio.Event | None = None

    def monotonic(self) -> float:
        return self._now

    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        self._event().set()
        await fut

    @property
    def sleepers(self) -> int:
        """How many tasks are sleeping on this clock right now."""
        return sum(1 for _, _, fut in self._sleepers if not fut.done())

    def next_deadline(self) -> float | None:
        """The earliest pending wake-up time, or ``None`` when nobody sleeps."""
        self._prune()
        return self._sleepers[0][0] if self._sleepers else None

    def _prune(self) -> None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)

    async def wait_for_sleepers(self, count: int = 1, *, timeout: float = 5.0) -> None:
        """Wait (in real time, bounded) until at least ``count`` tasks sleep on the clock."""
        async with asyncio.timeout(timeout):
            while self.sleepers < count:
                event = self._event()
                event.clear()
                await event.wait()

    async def settle(self) -> None:
        """Let ready tasks run: a few rounds of the event loop, no time passes."""
        for _ in range(_SETTLE_ROUNDS):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, waking every sleeper due on the way."""
        target = self._now + seconds
        await self.settle()
        while True:
            self._prune()
            if not self._sleepers or self._sleepers[0][0] > target:
                break
            deadline, _, fut = heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            fut.set_result(None)
            await self.settle()
        self._now = target
        await self.settle()

    async def advance_to_next(self) -> float:
        """Jump to the earliest pending deadline, wake what is due, return the new time."""
        deadline = self.next_deadline()
        if deadline is not None:
            await self.advance(max(0.0, deadline - self._now))
        return self._now

    def __repr__(self) -> str:
        return f"<FakeClock now={self._now:.3f} sleepers={self.sleepers}>"
