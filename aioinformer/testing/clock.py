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

Timers set with ``call_later()`` share the sleepers' queue: a pending timer counts in
``sleepers``, ``next_deadline()`` and ``wait_for_sleepers()`` as a sleeping task does, and
``advance()`` runs it at its deadline, in order with the sleepers, from the task that
called ``advance()``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import TYPE_CHECKING

from aioinformer._kernel.clock import TimerHandle, run_callback

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["FakeClock"]

_SETTLE_ROUNDS = 20


class _Timer:
    """A callback waiting in a :class:`FakeClock`'s queue.

    Invariant: ``_callback`` is ``None`` exactly once the timer has fired or been
    cancelled, which is when it stops counting as a sleeper.
    """

    __slots__ = ("_callback",)

    def __init__(self, callback: Callable[[], object]) -> None:
        self._callback: Callable[[], object] | None = callback

    def cancel(self) -> None:
        self._callback = None

    def done(self) -> bool:
        """Whether the timer will no longer run (fired or cancelled)."""
        return self._callback is None

    def fire(self) -> None:
        callback, self._callback = self._callback, None
        if callback is not None:
            run_callback(callback)


class FakeClock:
    """A ``Clock`` whose time is advanced by hand."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        # (deadline, sequence, sleeper's future or timer); done ones are dropped lazily.
        self._sleepers: list[tuple[float, int, asyncio.Future[None] | _Timer]] = []
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

    def call_later(self, delay: float, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback()`` once time has advanced by ``delay``.

        A timer that is due already (``delay <= 0``) still waits for the next
        ``advance()``, even ``advance(0)``: under this clock nothing happens unless the
        test moves time.
        """
        timer = _Timer(callback)
        heapq.heappush(self._sleepers, (self._now + max(0.0, delay), next(self._seq), timer))
        self._event().set()
        return timer

    @property
    def sleepers(self) -> int:
        """How many tasks are sleeping, and timers are pending, on this clock right now."""
        return sum(1 for _, _, fut in self._sleepers if not fut.done())

    def next_deadline(self) -> float | None:
        """The earliest pending wake-up (or timer) time, or ``None`` when nobody sleeps."""
        self._prune()
        return self._sleepers[0][0] if self._sleepers else None

    def _prune(self) -> None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)

    async def wait_for_sleepers(self, count: int = 1, *, timeout: float = 5.0) -> None:
        """Wait (in real time, bounded) until at least ``count`` tasks sleep (or timers
        are pending) on the clock."""
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
            deadline, _, waiter = heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            if isinstance(waiter, _Timer):
                waiter.fire()
            else:
                waiter.set_result(None)
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
