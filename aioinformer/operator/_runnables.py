"""The manager's runnables and the groups that start and stop them together.

Role: :class:`RunnableGroup` runs a set of :class:`Runnable`\\ s (controllers and plain
async callables) as children of one :class:`~aioinformer._kernel.runner.TaskRunner`,
reports each failure to its owner, and stops them all gracefully within a deadline.
controller-runtime's ``runnableGroup`` plays this part in its manager. Input: runnables,
added before or after the group starts. Output: the errors runnables raised, through the
``on_failure`` callback given at construction.

Stopping (:meth:`RunnableGroup.stop`, or leaving ``async with group:``): a runnable with
a ``stop`` function (a controller) is asked to stop, so it drains its in-flight
reconciles; one without is cancelled once, as a hint: its cleanup may still await. All
together get ``grace()`` seconds of the clock to end (the runner's drain), then whatever
still runs is cancelled for good (its cancel scope) and awaited. A runnable that returns
on its own, or ends on the hint, has simply finished; that is no failure.

Task model: one child of the group's runner per runnable, started on entering
``async with group:`` (or by :meth:`RunnableGroup.add` inside it); every child has ended
when the block is left, even if the caller is cancelled meanwhile (the cancellation cuts
the grace period short and is re-raised after the reaping).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from aioinformer._kernel.runner import Interruptible, TaskRunner

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from types import TracebackType

    from aioinformer._kernel.clock import Clock

__all__ = ["Runnable", "RunnableGroup"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Runnable:
    """One thing a manager runs: ``run()`` until it returns, fails or is stopped."""

    name: str
    """For logs and task names."""
    run: Callable[[], Coroutine[Any, Any, Any]]
    """Called once, when the group starts it; its coroutine runs as a child of the group."""
    stop: Callable[[], None] | None = None
    """Asks ``run()`` to return gracefully (``Controller.stop``); ``None``: cancel it."""


class RunnableGroup:
    """Runnables started, watched and stopped together (see the module docstring).

    ``on_failure(runnable, error)`` is called when a runnable raises anything but a
    cancellation; the others keep running (the owner decides to stop). ``name`` prefixes
    task names; ``grace()`` gives the seconds of ``clock`` the runnables get to end once
    the group stops, read when it stops.
    """

    def __init__(
        self,
        name: str,
        *,
        on_failure: Callable[[Runnable, BaseException], None],
        clock: Clock,
        grace: Callable[[], float],
    ) -> None:
        self.name = name
        self._on_failure = on_failure
        self._clock = clock
        self._grace = grace
        self._runnables: list[Runnable] = []
        """Every runnable added, in order."""
        self._runner: TaskRunner | None = None
        """The children's runner, while the group's block runs and it has not stopped."""
        self._block: TaskRunner | None = None
        """The same runner, until the block is left."""
        self._runs: dict[Runnable, Interruptible] = {}
        """Runnable → its run, while it runs: :meth:`stop` interrupts those without a
        ``stop`` of their own."""
        self._stopped = False
        self._cut_short: list[str] = []
        """Runnables the grace period ran out on, cancelled by the drain."""

    def __len__(self) -> int:
        return len(self._runnables)

    def add(self, runnable: Runnable) -> None:
        """Add ``runnable``; started at once when the group already runs. Raises
        ``RuntimeError`` once the group has stopped."""
        if self._stopped:
            raise RuntimeError(f"{self.name}: cannot add {runnable.name}: already stopped")
        self._runnables.append(runnable)
        if self._runner is not None:
            self._launch(self._runner, runnable)

    async def __aenter__(self) -> Self:
        """Start every runnable added so far; later ones start as they are added."""
        if self._stopped:
            raise RuntimeError(f"{self.name}: already stopped")
        runner = TaskRunner(name=self.name)
        await runner.__aenter__()
        self._runner = self._block = runner
        for runnable in self._runnables:
            self._launch(runner, runnable)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        runner, self._block = self._block, None
        assert runner is not None
        try:
            await self.stop()
        finally:
            await runner.__aexit__(exc_type, exc, tb)

    def _launch(self, runner: TaskRunner, runnable: Runnable) -> None:
        runner.start_soon(self._run_one(runnable), name=runnable.name)

    async def _run_one(self, runnable: Runnable) -> None:
        run = self._runs[runnable] = Interruptible()
        try:
            await run.run(runnable.run())
            # Ended by itself, or on the interruption, as asked: a child must not end
            # cancelled, as anyio's task group would take that for a failure and cancel
            # every sibling.
        except asyncio.CancelledError:
            # The runner's cancellation: the grace period ran out, or the owner's block
            # is cancelled. Its scope takes the error back.
            if self._stopped:
                self._cut_short.append(runnable.name)
            raise
        except Exception as error:  # noqa: BLE001 - handed to the owner, which stops
            self._on_failure(runnable, error)
        else:
            logger.debug("%s: %s returned", self.name, runnable.name)
        finally:
            del self._runs[runnable]

    async def stop(self) -> None:
        """Stop every runnable: ask or cancel, give them ``grace()`` seconds on the clock,
        cancel what still runs, and wait until every one has ended. Idempotent; the
        group takes no runnable afterwards."""
        self._stopped = True
        runner = self._runner
        if runner is None:
            return
        self._runner = None
        for runnable, run in list(self._runs.items()):
            if runnable.stop is not None:
                runnable.stop()
            else:
                # Once, as an interruption (the level-triggered cancel scope would cut
                # the runnable's cleanup short): the drain cancels it for good later.
                run.interrupt()
        grace = self._grace()
        if not await runner.drain(grace, self._clock):
            logger.warning(
                "%s: cancelled %s still running after %ss: %s",
                self.name,
                len(self._cut_short),
                grace,
                sorted(self._cut_short),
            )
