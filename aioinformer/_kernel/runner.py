"""The one structured-concurrency helper: how components start their tasks, wait for the
first of several, and reap them.

Role: the informer, controller, factory and leader elector start, race and reap their
tasks with these pieces instead of writing ``create_task``/``asyncio.wait`` loops of
their own:

* :class:`TaskRunner` is a task group for long-running services. Leaving its
  ``async with`` block, or calling :meth:`TaskRunner.cancel` from any call path, cancels
  every child still running; the block then ends once all of them have ended. A child
  that fails cancels the others, and the failure leaves the block as an
  ``ExceptionGroup``, as with ``asyncio.TaskGroup``.
* :class:`Running` is one component's ``run()`` in its own task, started with signalled
  readiness (anyio's ``TaskGroup.start`` shape): ``run`` receives ``task_status=`` and
  calls ``task_status.started()``; the starter's ``await`` returns then, or raises what
  ``run`` raised before it got there. It is the shape of every ``async with component:``.
  :meth:`Running.spawn` starts a helper owned by an object rather than a block (a queue's
  timer started by its first ``add``, a round's resync loop) from synchronous code; its
  owner cancels it with :meth:`Running.cancel` and reaps it with :meth:`Running.stop`.
* :class:`BlockRun` is such a run for the duration of an ``async with`` body, whose
  failure cancels the body and is raised from the block instead of going unseen.
* :class:`Interruptible` runs a coroutine in the current task so that one call of
  :meth:`Interruptible.interrupt` cancels it once, asyncio's edge cancellation (its cleanup
  may still await, where a cancelled anyio scope would cancel every await of it), and
  tells that interruption apart from any other cancellation of the task, which passes.
* :func:`first_completed` waits for the first of several coroutines and reaps the rest;
  :func:`wait_regardless`, :func:`cancel_and_wait` and :func:`finish_regardless` are the
  shielded waits everything else is built on.
* :func:`is_async_callable` decides once, at registration, whether a callback is
  awaited; :func:`reads_argument`, whether it ever reads one of its arguments (an
  argument it never reads need not be computed).

Input: coroutines and coroutine functions. Output: their outcome, re-raised in the caller.

Ordering: children are cancelled in the reverse order of their start, so a stage that
feeds another stops first. Nothing else is ordered.

Task model: everything runs on the caller's event loop. Every wait that reaps tasks is
shielded and bounded by the tasks themselves: a waiter cancelled meanwhile keeps waiting
until they have ended (no task outlives its owner), then re-raises the cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import dis
import inspect
import math
import types
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
import anyio.abc

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from types import TracebackType

    from aioinformer._kernel.clock import Clock

__all__ = [
    "BlockRun",
    "Interruptible",
    "Running",
    "TaskRunner",
    "cancel_and_wait",
    "finish_regardless",
    "first_completed",
    "is_async_callable",
    "wait_regardless",
]

T = TypeVar("T")

_ENDED: Final = object()
"""What a run's readiness resolves to when it ends before signalling."""


def is_async_callable(fn: object) -> bool:
    """True for a coroutine function, or an object whose ``__call__`` is one."""
    if fn is None:
        return False
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object with ``async def __call__``
    return call is not None and inspect.iscoroutinefunction(call)


_READS: Final = frozenset({"LOAD_DEREF", "LOAD_CLOSURE", "LOAD_CLASSDEREF"})
"""Opcodes that read a variable by name, besides every ``*LOAD_FAST*`` variant (whose
``argval`` is the name, or a tuple of names for the combined 3.12+/3.13+ forms)."""
_INTROSPECTING: Final = frozenset({"locals", "vars", "eval", "exec"})


def reads_argument(fn: object, position: int) -> bool:
    """Whether ``fn`` may read its positional argument at ``position``.

    Conservative: true unless ``fn`` is a plain function (or a bound method of one) whose
    code provably never loads that parameter: it is a named positional parameter, no
    nested function captures it, no instruction loads it, and the code does not call
    ``locals()``/``vars()``/``eval``/``exec``. Anything else (a ``functools.partial``, a
    callable object, ``*args``, a decorated wrapper) counts as reading it.
    """
    target = fn
    offset = 0
    if inspect.ismethod(fn):
        target = fn.__func__
        offset = 1
    code = getattr(target, "__code__", None)
    if not isinstance(code, types.CodeType) or not inspect.isfunction(target):
        return True
    index = position + offset
    if index >= code.co_argcount:
        return True
    name = code.co_varnames[index]
    if name in code.co_cellvars or _INTROSPECTING & set(code.co_names):
        return True
    for instruction in dis.get_instructions(code):
        opname = instruction.opname
        if "LOAD_FAST" in opname or opname in _READS:
            value = instruction.argval
            if value == name or (isinstance(value, tuple) and name in value):
                return True
    return False


async def wait_regardless(*tasks: asyncio.Future[Any]) -> None:
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


async def cancel_and_wait(*tasks: asyncio.Future[Any]) -> None:
    """Cancel ``tasks`` and wait until every one has finished (see :func:`wait_regardless`)."""
    for task in tasks:
        task.cancel()
    await wait_regardless(*tasks)


async def finish_regardless(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion even if the caller is cancelled meanwhile; return its
    result, or raise its error, or the caller's cancellation once it has finished."""
    task = asyncio.ensure_future(coro)
    await wait_regardless(task)
    return task.result()


async def first_completed(*coros: Coroutine[Any, Any, Any]) -> tuple[int, asyncio.Task[Any]]:
    """Run ``coros`` concurrently until one finishes; cancel and reap the others.

    Returns the position of the one that finished (the first in argument order when
    several finished in the same loop turn) and its task, whose ``result()`` gives its
    outcome. A cancellation of the caller cancels them all and is re-raised once they
    have ended.
    """
    tasks = [asyncio.ensure_future(coro) for coro in coros]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait(*[task for task in tasks if not task.done()])
    index = min(index for index, task in enumerate(tasks) if task in done)
    return index, tasks[index]


class _TaskStatus(anyio.abc.TaskStatus[T]):
    """What a run started by :meth:`Running.start` calls to say it is ready: anyio's
    ``TaskStatus``, so the same ``run`` serves ``await task_group.start(component.run)``."""

    __slots__ = ("_ready",)

    def __init__(self, ready: asyncio.Future[T | None]) -> None:
        self._ready = ready
        """Resolved by the first ``started()``; later calls are errors, as in anyio."""

    def started(self, value: T | None = None) -> None:
        if self._ready.done():
            raise RuntimeError("started() called more than once")
        self._ready.set_result(value)


class TaskRunner:
    """A group of service tasks bound to one ``async with`` block (see the module notes),
    built on an anyio task group.

    Children run until they are cancelled: leaving the block, :meth:`cancel`, or a
    sibling's failure cancels them, and ``__aexit__`` returns only once all have ended,
    even if it is cancelled meanwhile. ``name`` prefixes the children's task names.

    What anyio's group lacks and this adds: each child runs in a cancel scope of its own,
    so :meth:`cancel` can cancel them newest first (a stage that feeds another stops
    first), and :meth:`drain` lets them finish within a grace period on an injectable
    clock before cancelling what is left.
    """

    __slots__ = ("_group", "_idle", "_live", "_name", "_scopes")

    def __init__(self, *, name: str) -> None:
        self._name = name
        self._group: anyio.abc.TaskGroup | None = None
        """Set while the block runs; children are started in it."""
        self._scopes: list[anyio.CancelScope] = []
        """One scope per child, in start order; cancelled in reverse."""
        self._live = 0
        """Children started and not yet ended."""
        self._idle: asyncio.Event | None = None
        """Set whenever no child is running (made by the first :meth:`drain`)."""

    async def __aenter__(self) -> TaskRunner:
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group = self._group
        assert group is not None
        self.cancel()
        try:
            return await group.__aexit__(exc_type, exc, tb)
        finally:
            self._group = None
            self._scopes.clear()

    def start_soon(self, coro: Coroutine[Any, Any, Any], *, name: str) -> None:
        """Start ``coro`` as a child named ``"<runner name> <name>"``; it runs until it
        returns or the runner cancels it."""
        group = self._group
        if group is None:
            coro.close()
            raise RuntimeError(f"{self._name}: the task runner is not running")
        scope = anyio.CancelScope()
        self._scopes.append(scope)
        self._live += 1
        group.start_soon(self._child, coro, scope, name=f"{self._name} {name}")

    async def start(self, fn: Callable[..., Coroutine[Any, Any, Any]], *, name: str) -> Any:
        """Start ``fn(task_status=...)`` as a child and return once it calls
        ``task_status.started(value)`` (returning ``value``), as anyio's
        ``TaskGroup.start`` does; raise what it raised, or ``RuntimeError`` if it returned,
        before that."""
        group = self._group
        if group is None:
            raise RuntimeError(f"{self._name}: the task runner is not running")
        scope = anyio.CancelScope()
        self._scopes.append(scope)
        self._live += 1
        return await group.start(self._started_child, fn, scope, name=f"{self._name} {name}")

    async def _child(self, coro: Coroutine[Any, Any, Any], scope: anyio.CancelScope) -> None:
        try:
            with scope:
                await coro
        finally:
            self._ended(scope)

    async def _started_child(
        self,
        fn: Callable[..., Coroutine[Any, Any, Any]],
        scope: anyio.CancelScope,
        *,
        task_status: anyio.abc.TaskStatus[Any],
    ) -> None:
        try:
            with scope:
                await fn(task_status=task_status)
        finally:
            self._ended(scope)

    def _ended(self, scope: anyio.CancelScope) -> None:
        with contextlib.suppress(ValueError):
            self._scopes.remove(scope)
        self._live -= 1
        if self._live == 0 and self._idle is not None:
            self._idle.set()

    def __len__(self) -> int:
        """How many children are still running."""
        return self._live

    def cancel(self) -> None:
        """Cancel every child still running, the newest first. Safe from any call path;
        the block ends once they have ended."""
        for scope in reversed(self._scopes):
            scope.cancel()

    async def wait(self) -> None:
        """Wait until every child has ended by itself. A cancellation of the caller
        cancels the children and is re-raised once they have ended."""
        if self._live == 0:
            return
        idle = self._idle
        if idle is None:
            idle = self._idle = asyncio.Event()
        idle.clear()
        try:
            await idle.wait()
        except asyncio.CancelledError:
            self.cancel()
            await finish_regardless(idle.wait())
            raise

    async def drain(self, grace: float, clock: Clock) -> bool:
        """Let the children end by themselves for up to ``grace`` seconds of ``clock``,
        then cancel the rest and wait until they have ended. True if all ended within
        the grace period. A cancellation of the caller cancels the children and is
        re-raised once they have ended."""
        if self._live == 0:
            return True
        idle = self._idle
        if idle is None:
            idle = self._idle = asyncio.Event()
        idle.clear()
        try:
            first, _ = await first_completed(idle.wait(), clock.sleep(grace))
        except asyncio.CancelledError:
            self.cancel()
            await finish_regardless(idle.wait())
            raise
        if first == 0:
            return True
        self.cancel()
        await finish_regardless(idle.wait())
        return False


class Running:
    """One component's ``run()`` in its own task, started with signalled readiness: the
    shape of every ``async with component:``.

    ``await Running.start(fn, name=...)`` runs ``fn(task_status=...)`` and returns once it
    calls ``task_status.started()`` (anyio's ``TaskGroup.start`` shape), or raises what it
    raised, or ``RuntimeError`` if it returned, before that; cancelling the caller
    meanwhile cancels it. :meth:`stop` and :meth:`wait` reap it; :attr:`failure` says how
    it ended.
    """

    __slots__ = ("_task",)

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self._task = task
        """The component's run; done once :meth:`stop` or :meth:`wait` has returned."""

    @classmethod
    async def start(cls, fn: Callable[..., Coroutine[Any, Any, Any]], *, name: str) -> Running:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Any] = loop.create_future()
        task = loop.create_task(fn(task_status=_TaskStatus(ready)), name=name)

        def ended(_: asyncio.Task[Any]) -> None:
            if not ready.done():
                ready.set_result(_ENDED)

        # Awaiting ``ready`` itself, not a wait on both: the starter resumes in the very
        # loop turn after ``started()``, ahead of whatever the run started meanwhile.
        task.add_done_callback(ended)
        try:
            outcome = await ready
        except asyncio.CancelledError:
            await cancel_and_wait(task)
            raise
        if outcome is _ENDED:
            if task.cancelled():
                raise asyncio.CancelledError
            task.result()
            raise RuntimeError(f"{name} ended without signalling that it started")
        return cls(task)

    @classmethod
    def spawn(cls, coro: Coroutine[Any, Any, Any], *, name: str) -> Running:
        """Run ``coro`` in a task of its own on the running loop, from synchronous code and
        without readiness; the owner reaps it with :meth:`stop` (or :meth:`cancel`, then
        :meth:`wait`). ``RuntimeError`` without a running loop (``coro`` is closed)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            coro.close()
            raise
        return cls(loop.create_task(coro, name=name))

    @property
    def done(self) -> bool:
        """Whether the run has ended."""
        return self._task.done()

    @property
    def failure(self) -> BaseException | None:
        """The error the run ended with; ``None`` while it runs, or if it returned or was
        cancelled."""
        task = self._task
        return None if not task.done() or task.cancelled() else task.exception()

    def cancel(self) -> None:
        """Ask the run to end by cancelling it, without waiting (:meth:`wait` reaps it)."""
        self._task.cancel()

    async def stop(self) -> None:
        """Cancel the run and wait until it has ended (see :func:`cancel_and_wait`)."""
        await cancel_and_wait(self._task)

    async def wait(self) -> None:
        """Wait for the run to end by itself. A cancellation of the caller meanwhile is
        passed on to the run, which is still awaited before the cancellation is
        re-raised."""
        task = self._task
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            await cancel_and_wait(task)
            raise


class BlockRun:
    """A component's ``run()`` for the duration of an ``async with`` body: the shape of
    ``__aenter__``/``__aexit__`` for components that run until stopped.

    :meth:`enter` starts ``fn`` with :meth:`Running.start`. The body usually just waits
    (for a stop signal), so when ``fn`` later raises one of ``cancels_body_on``, the
    task running the body is cancelled, and :meth:`exit` turns that cancellation into
    the error. :meth:`exit` calls ``stop()`` (the component's graceful stop), waits for
    the run to end, and raises its error unless the body raised one of its own.
    """

    __slots__ = ("_block", "_cancelled", "_fn", "_kinds", "_name", "_running")

    def __init__(
        self,
        fn: Callable[..., Coroutine[Any, Any, Any]],
        *,
        name: str,
        cancels_body_on: tuple[type[BaseException], ...],
    ) -> None:
        self._fn = fn
        self._name = name
        self._kinds = cancels_body_on
        self._running: Running | None = None
        """The run, from :meth:`enter` until :meth:`exit`."""
        self._block: asyncio.Task[Any] | None = None
        """The task running the body, while inside the block."""
        self._cancelled = False
        """The run's failure cancelled the body."""

    async def enter(self) -> None:
        """Start the run from the task that runs the body; return once it started."""
        self._block = asyncio.current_task()
        self._cancelled = False
        running = await Running.start(self._run, name=self._name)
        failure = running.failure
        if isinstance(failure, self._kinds):
            # Failed in the very turn it signalled, before the body could be cancelled.
            self._block = None
            raise failure
        self._running = running

    async def _run(self, *, task_status: _TaskStatus[None]) -> None:
        try:
            await self._fn(task_status=task_status)
        except self._kinds:
            block = self._block
            # Only once started: a failure before that is raised by enter() itself.
            if block is not None and self._running is not None and not block.done():
                self._cancelled = True
                block.cancel()
            raise

    async def exit(self, exc: BaseException | None, stop: Callable[[], None]) -> None:
        """Leave the block: ``stop()``, wait for the run, raise its error (see the class)."""
        running, self._running = self._running, None
        if running is None:
            return
        self._block = None
        if self._cancelled:
            task = asyncio.current_task()
            assert task is not None
            task.uncancel()
            if isinstance(exc, asyncio.CancelledError):
                exc = None  # our own cancellation, replaced by the run's error below
        stop()
        await running.wait()
        if running.failure is not None and exc is None:
            raise running.failure


class Interruptible:
    """A coroutine run in the current task, which :meth:`interrupt` may cancel once.

    An interruption is one ``task.cancel()``: the coroutine sees a ``CancelledError`` where
    it awaits, and its cleanup may await on (an anyio scope's cancellation is level-
    triggered and would cut that cleanup short). :meth:`run` takes the interruption back
    (``uncancel()``) and returns ``None``; a cancellation of the task by anyone else, an
    enclosing anyio scope's included, still propagates. Interrupting before :meth:`run`
    or after it ended does nothing; only the first interruption counts.

    Example, a stop that asks a runnable without a stop of its own to end::

        run = Interruptible()
        ...  # in the runnable's task
        await run.run(runnable())
        ...  # in the stopper
        run.interrupt()
    """

    __slots__ = ("_interrupted", "_task")

    def __init__(self) -> None:
        self._task: asyncio.Task[Any] | None = None
        self._interrupted = False

    @property
    def interrupted(self) -> bool:
        """Whether :meth:`interrupt` cancelled the run."""
        return self._interrupted

    def interrupt(self) -> None:
        """Cancel the run once, if it is running and was not interrupted yet."""
        if self._task is not None and not self._interrupted:
            self._interrupted = True
            self._task.cancel()

    async def run(self, coro: Coroutine[Any, Any, T]) -> T | None:
        """``coro``'s result, or ``None`` when it ended on the interruption."""
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        try:
            return await coro
        except asyncio.CancelledError:
            if not self._interrupted:
                raise
            task.uncancel()  # the interruption is spent; any other cancellation remains
            if task.cancelling() or anyio.current_effective_deadline() == -math.inf:
                raise
            return None
        finally:
            self._task = None
