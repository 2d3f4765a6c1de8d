"""Time, injectable: the ``Clock`` protocol and the event loop's clock.

Role. Every component that waits (reflector backoff and watch deadlines, processor
resync, workqueue delays, leader election) takes ``clock=``; tests pass
:class:`aioinformer.testing.FakeClock` and move time by hand instead of sleeping.

Input: a delay in the clock's seconds. Output: the current time, a sleep that ends at
the deadline, or a callback run at the deadline. Ordering: callbacks due at the same
time run in the order they were scheduled. Task model: no tasks; ``sleep`` suspends
the caller, ``call_later`` callbacks run on the event loop outside any task.

:class:`CancelAfter` is ``asyncio.timeout`` on such a clock.

A ``Clock`` needs only ``monotonic`` and ``sleep``. One that can also call back
(:class:`TimerClock`: :class:`LoopClock` and ``FakeClock`` are) lets components schedule
timers without a task; for any other clock :func:`call_later` falls back to a task that
sleeps on it, so such a clock keeps deciding when its timers fire.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

__all__ = [
    "CancelAfter",
    "Clock",
    "ClockSlot",
    "LoopClock",
    "TimerClock",
    "TimerHandle",
    "call_later",
    "default_clock",
    "run_callback",
]


class TimerHandle(Protocol):
    """A scheduled callback that can still be called off."""

    def cancel(self) -> None:
        """Make sure the callback does not run; harmless once it has run."""
        ...


class Clock(Protocol):
    """A monotonic time source that can be slept on."""

    def monotonic(self) -> float:
        """Seconds on a monotonic scale."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend for ``seconds`` (a checkpoint even for 0)."""
        ...


class TimerClock(Clock, Protocol):
    """A clock that can also run a callback at a deadline, without a task."""

    def call_later(self, delay: float, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback()`` on the event loop once ``delay`` seconds have passed."""
        ...


class LoopClock:
    """The running event loop's clock (``loop.time()``, ``asyncio.sleep``, ``loop.call_later``)."""

    __slots__ = ()

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def call_later(self, delay: float, callback: Callable[[], object]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(0.0, delay), callback)

    def __repr__(self) -> str:
        return "<LoopClock>"


class ClockSlot:
    """A clock keeping another's time, chosen after the components reading it were built:
    a controller made without ``clock=`` reads one, and the Manager it joins puts its own
    clock in it, so the queue, the rate limiter and the drain built with the controller
    all keep the manager's time. ``clock`` is the one read now (the event loop's until set)."""

    __slots__ = ("clock",)

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock: Clock = clock if clock is not None else default_clock

    def monotonic(self) -> float:
        return self.clock.monotonic()

    async def sleep(self, seconds: float) -> None:
        await self.clock.sleep(seconds)

    def call_later(self, delay: float, callback: Callable[[], object]) -> TimerHandle:
        return call_later(self.clock, delay, callback)

    def __repr__(self) -> str:
        return f"<ClockSlot of {self.clock!r}>"


class _SleepingTimer:
    """``call_later`` for a clock that can only sleep: a task sleeping on it.

    Invariant: ``_task`` is done once the callback has run or the timer was cancelled.
    """

    __slots__ = ("_task",)

    def __init__(self, clock: Clock, delay: float, callback: Callable[[], object]) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._fire(clock, delay, callback), name="clock timer"
        )

    @staticmethod
    async def _fire(clock: Clock, delay: float, callback: Callable[[], object]) -> None:
        await clock.sleep(delay)
        run_callback(callback)

    def cancel(self) -> None:
        self._task.cancel()


def run_callback(callback: Callable[[], object]) -> None:
    """Run a due timer's ``callback()`` as the event loop runs its own: a failure is
    reported to the loop's exception handler, and time goes on."""
    try:
        callback()
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001
        # Blind on purpose, as the event loop treats its callbacks: report, keep time going.
        asyncio.get_running_loop().call_exception_handler(
            {"message": f"Exception in timer callback {callback!r}", "exception": exc}
        )


def call_later(clock: Clock, delay: float, callback: Callable[[], object]) -> TimerHandle:
    """``clock.call_later(delay, callback)`` for a :class:`TimerClock`; for a clock that
    only sleeps, a task sleeping on it."""
    method = getattr(clock, "call_later", None)
    if method is None:
        return _SleepingTimer(clock, delay, callback)
    handle: TimerHandle = method(delay, callback)
    return handle


class CancelAfter:
    """``with CancelAfter(clock, seconds):`` -- ``asyncio.timeout`` timed on ``clock``.

    Inside a task, cancels the task once ``seconds`` have passed on ``clock``; leaving the
    block with that cancellation raises ``TimeoutError`` instead (chained to it) and sets
    :attr:`timed_out`. A cancellation from elsewhere, alone or alongside the deadline's,
    propagates as it came. Leaving the block in time calls the deadline off.
    """

    __slots__ = ("_cancelling", "_clock", "_expired", "_handle", "_seconds", "_task", "timed_out")

    def __init__(self, clock: Clock, seconds: float) -> None:
        self._clock = clock
        self._seconds = seconds
        self._task: asyncio.Task[object] | None = None
        self._handle: TimerHandle | None = None
        self._cancelling = 0
        self._expired = False
        self.timed_out = False
        """Whether the block ended with ``TimeoutError`` because the deadline passed."""

    def __enter__(self) -> CancelAfter:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("CancelAfter must be used inside a task")
        if self._task is not None:
            raise RuntimeError("a CancelAfter is entered once")
        self._task = task
        self._cancelling = task.cancelling()
        self._handle = call_later(self._clock, self._seconds, self._expire)
        return self

    def _expire(self) -> None:
        assert self._task is not None
        if not self._task.done():
            self._expired = True
            self._task.cancel()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._task is not None
        assert self._handle is not None
        self._handle.cancel()
        if not self._expired:
            return
        # Take our cancellation back; only when no other one is pending is it ours to turn
        # into a timeout.
        if (
            self._task.uncancel() <= self._cancelling
            and exc_type is not None
            and issubclass(exc_type, asyncio.CancelledError)
        ):
            self.timed_out = True
            raise TimeoutError(f"timed out after {self._seconds:g}s") from exc


default_clock: Clock = LoopClock()
