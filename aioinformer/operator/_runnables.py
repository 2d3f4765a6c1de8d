"""The manager's runnables and the groups that start and stop them together.

Role: :class:`RunnableGroup` runs a set of :class:`Runnable`\\ s (controllers and plain
async callables) as tasks of one owner, reports the first failure to it, and stops them
all gracefully within a deadline. controller-runtime's ``runnableGroup`` plays this part in
its manager. Input: runnables, added before or after the group starts. Output: the
first error a runnable raised, through the ``on_failure`` callback given at construction.

Stopping (:meth:`RunnableGroup.stop`): a runnable with a ``stop`` function (a controller)
is asked to stop, so it drains its in-flight reconciles; one without is cancelled. All
together get ``timeout`` seconds to end, then whatever still runs is cancelled and
awaited. A runnable that returns on its own has simply finished; that is no failure.

Task model: one task per runnable, created by :meth:`RunnableGroup.start_all` (or by
:meth:`RunnableGroup.add` once started); every task has ended when :meth:`stop` returns,
even if the caller is cancelled meanwhile (the cancellation cuts the grace period short
and is re-raised after the reaping).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aioinformer._kernel.runner import cancel_and_wait, first_completed

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from aioinformer._kernel.clock import Clock

__all__ = ["Runnable", "RunnableGroup"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Runnable:
    """One thing a manager runs: ``run()`` until it returns, fails or is stopped."""

    name: str
    """For logs and task names."""
    run: Callable[[], Coroutine[Any, Any, Any]]
    """Called once, when the group starts it; its coroutine runs as a task."""
    stop: Callable[[], None] | None = None
    """Asks ``run()`` to return gracefully (``Controller.stop``); ``None``: cancel it."""


class RunnableGroup:
    """Runnables started, watched and stopped together (see the module docstring).

    ``on_failure(runnable, error)`` is called (synchronously, from a done callback) when a
    runnable's task raises anything but a cancellation. ``name`` prefixes task names.
    """

    def __init__(
        self,
        name: str,
        *,
        on_failure: Callable[[Runnable, BaseException], None],
        clock: Clock,
    ) -> None:
        self.name = name
        self._on_failure = on_failure
        self._clock = clock
        # Every runnable added, in order; each has a task in _tasks once started.
        self._runnables: list[Runnable] = []
        self._tasks: dict[Runnable, asyncio.Task[Any]] = {}
        self._started = False
        self._stopped = False

    def __len__(self) -> int:
        return len(self._runnables)

    @property
    def started(self) -> bool:
        """``start_all()`` has been called (and ``stop()`` not yet)."""
        return self._started and not self._stopped

    def add(self, runnable: Runnable) -> None:
        """Add ``runnable``; started at once when the group already runs. Raises
        ``RuntimeError`` once the group has stopped."""
        if self._stopped:
            raise RuntimeError(f"{self.name}: cannot add {runnable.name}: already stopped")
        self._runnables.append(runnable)
        if self._started:
            self._launch(runnable)

    def start_all(self) -> None:
        """Start every runnable added so far; later ones start as they are added.
        Idempotent; does nothing once stopped."""
        if self._started or self._stopped:
            return
        self._started = True
        for runnable in self._runnables:
            self._launch(runnable)

    def _launch(self, runnable: Runnable) -> None:
        task = asyncio.get_running_loop().create_task(
            runnable.run(), name=f"{self.name} {runnable.name}"
        )
        self._tasks[runnable] = task

        def ended(task: asyncio.Task[Any]) -> None:
            if task.cancelled():
                return
            error = task.exception()
            if error is not None:
                self._on_failure(runnable, error)
            else:
                logger.debug("%s: %s returned", self.name, runnable.name)

        task.add_done_callback(ended)

    async def stop(self, timeout: float) -> None:
        """Stop every runnable: ask or cancel, wait up to ``timeout`` seconds on the
        clock, cancel what still runs, and wait until every task has ended. Idempotent."""
        self._stopped = True
        tasks = list(self._tasks.items())
        for runnable, task in tasks:
            if task.done():
                continue
            if runnable.stop is not None:
                runnable.stop()
            else:
                task.cancel()
        pending = [task for _, task in tasks if not task.done()]
        cancelled = False
        if pending:
            try:
                await first_completed(asyncio.wait(pending), self._clock.sleep(timeout))
            except asyncio.CancelledError:
                cancelled = True
            late = sorted(runnable.name for runnable, task in tasks if not task.done())
            if late:
                logger.warning(
                    "%s: cancelling %s still running after %ss: %s",
                    self.name,
                    len(late),
                    timeout,
                    late,
                )
        try:
            await cancel_and_wait(*[task for _, task in tasks])
        except asyncio.CancelledError:
            cancelled = True
        if cancelled:
            raise asyncio.CancelledError
