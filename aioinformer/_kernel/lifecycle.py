"""One lifecycle for every long-running part: the :class:`State` vocabulary and the
:class:`Service` mixin.

Role: informers, the factory, controllers, the Manager, leader electors, the Event
recorder, the fake API server and the proxy are services. Each implements two things,

* ``async _serve(*, task_status)``: do the work until asked to stop, calling
  ``task_status.started()`` once ready (anyio's ``TaskGroup.start`` shape);
* ``_request_stop()``: ask ``_serve`` to return soon (set an event, close a queue);

and the mixin gives it the rest, the same way everywhere:

* ``await service.run(task_status=...)``: runs once (a second run raises
  ``RuntimeError``); the state goes NEW → STARTING → RUNNING (at ``started()``) →
  STOPPING (at :meth:`Service.stop`) → STOPPED (when ``_serve`` has returned or raised);
* :meth:`Service.stop`: idempotent and safe after the end; before the start it stops the
  service for good, as client-go's ``Run`` given a closed stop channel: the state goes
  straight to STOPPED, and the one run it allows (``run()``, ``async with`` or a start)
  returns at once without serving; :meth:`Service.aclose`, the same and then a wait until
  the run has ended;
* ``async with service:``: runs it in a task of its own for the body, returning once it is
  ready, or, for a service whose readiness waits on what the body starts (an informer synced
  by a fake the body fills, a controller whose informers the body starts), once it has
  started: the service says which (``_enters_when``) and calls ``_mark_started()``. The failure
  rule: should the run fail meanwhile with one of ``_cancels_body_on`` (every ``Exception``
  unless a service narrows it), the body is cancelled and the run's error leaves the block
  in place of the cancellation. Leaving the block stops the service and waits until it has
  stopped.

A service that also needs to wait until it has stopped from outside awaits
:meth:`Service.wait_stopped`. One started in one place and stopped in another (client-go's
``Start``/``Shutdown``, a server's ``start``/``close``) builds those verbs on
:meth:`Service._start_in_task` and :meth:`Service._stop_and_wait`.

Input: the subclass's ``_serve`` and ``_request_stop``. Output: the state, the run and
its ``async with``.

Task model: ``_serve`` runs in the caller's task (``run``) or in one task of its own
(``async with``), started by :class:`~aioinformer._kernel.runner.BlockRun`; it starts any
children through :class:`~aioinformer._kernel.runner.TaskRunner`.
"""

from __future__ import annotations

import asyncio
import enum
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

import anyio.abc

from aioinformer._kernel.runner import BlockRun, Running

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

__all__ = ["Service", "State"]


class State(enum.Enum):
    """Where a service is in its one run."""

    NEW = "new"
    """Built, not started."""
    STARTING = "starting"
    """Running, not yet ready (an informer not synced, an elector not leading)."""
    RUNNING = "running"
    """Ready and serving."""
    STOPPING = "stopping"
    """Asked to stop, or failed; finishing what it was doing."""
    STOPPED = "stopped"
    """Its run has ended."""


class _Readiness(anyio.abc.TaskStatus[Any]):
    """The ``task_status`` ``_serve`` receives: marks the service RUNNING, then tells the
    starter, if any."""

    __slots__ = ("_service", "_starter")

    def __init__(self, service: Service, starter: anyio.abc.TaskStatus[Any] | None) -> None:
        self._service = service
        self._starter = starter

    def started(self, value: Any = None) -> None:
        service = self._service
        if service._state is State.STARTING:
            service._state = State.RUNNING
        service._mark_started()  # ready is started too: an ``async with`` waiting resumes
        if self._starter is not None:
            self._starter.started(value)


class Service:
    """The mixin that gives a long-running part its lifecycle (see the module notes).

    Subclasses implement ``_serve`` and ``_request_stop`` and name themselves with
    :attr:`service_name`. The state lives in class-level defaults until the first
    transition, so subclasses need not call an ``__init__`` of ours.
    """

    _state: State = State.NEW
    _stopped: asyncio.Event | None = None
    _stopped_before_start: bool = False
    """Set by :meth:`stop` in NEW, until the one run the service allows has returned at
    once without serving."""
    _block: BlockRun | None = None
    _in_task: Running | None = None
    """The run :meth:`_start_in_task` began, until :meth:`_stop_and_wait` reaps it."""
    _cancels_body_on: ClassVar[tuple[type[BaseException], ...]] = (Exception,)
    """The failures of the run that cancel an ``async with`` body (see the module notes)."""
    _enters_when: ClassVar[Literal["ready", "started"]] = "ready"
    """When ``async with`` returns: once the run is ready (``task_status.started()``, the
    default), or once it has started (:meth:`_mark_started`), for a service whose readiness
    waits on what the body itself starts (an informer, a controller, a Manager)."""
    _on_started: Callable[[], None] | None = None
    """Tells the ``async with`` waiting for the start, until :meth:`_mark_started` has."""

    @property
    def service_name(self) -> str:
        """How logs, task names and errors name this service."""
        return type(self).__name__

    @property
    def state(self) -> State:
        """Where this service is in its run."""
        return self._state

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[Any]) -> None:
        raise NotImplementedError

    def _request_stop(self) -> None:
        raise NotImplementedError

    def _claim(self) -> bool:
        """Leave NEW (True), or say the service was stopped before it started (False: the
        run returns at once), or refuse a second run."""
        if self._stopped_before_start:
            self._stopped_before_start = False  # the one run it allows is this one
            return False
        if self._state is not State.NEW:
            raise RuntimeError(f"{self.service_name} runs only once")
        self._state = State.STARTING
        self._stopped = asyncio.Event()
        return True

    async def run(self, *, task_status: anyio.abc.TaskStatus[Any] | None = None) -> None:
        """Serve until stopped; runs once. With anyio, ``await group.start(service.run)``
        returns once it is ready. Returns at once, its starter told, when the service was
        stopped before it started."""
        if not self._claim():
            if task_status is not None:
                task_status.started()
            return
        await self._run_claimed(task_status)

    async def _run_claimed(self, task_status: anyio.abc.TaskStatus[Any] | None) -> None:
        try:
            await self._serve(task_status=_Readiness(self, task_status))
        finally:
            self._state = State.STOPPED
            stopped = self._stopped
            assert stopped is not None
            stopped.set()

    def stop(self) -> None:
        """Ask the service to stop: its run returns soon. Idempotent; does nothing after
        the end. Before the start, the service never serves: a later run returns at once."""
        state = self._state
        if state in (State.STARTING, State.RUNNING):
            self._state = State.STOPPING
            self._request_stop()
        elif state is State.NEW:
            self._state = State.STOPPED
            self._stopped_before_start = True

    async def aclose(self) -> None:
        """:meth:`stop`, then wait until the run has ended: the one async stop verb of every
        service (a factory's ``shutdown()`` and a server's ``close()`` are this, under
        client-go's and asyncio's names). Idempotent; returns at once for a service never
        started. Raises what made a run begun by ``start()`` fail (``async with`` and
        ``run()`` raise theirs themselves). A caller cancelled while it waits still waits
        for the run to end before the cancellation is raised."""
        failure = await self._stop_and_wait()
        if failure is not None:
            raise failure

    async def wait_stopped(self) -> None:
        """Wait until the run has ended (at once if it never started)."""
        stopped = self._stopped
        if stopped is not None:
            await stopped.wait()

    async def _start_in_task(self) -> None:
        """Run in a task of its own, returning once ready (or raising what the run raised
        before, with the run ended): the start of a service stopped elsewhere by
        :meth:`_stop_and_wait`. Runs once, as :meth:`run`; returns at once when the
        service was stopped before it started."""
        if not self._claim():
            return
        self._in_task = await Running.start(self._serve_in_block, name=self.service_name)

    async def _stop_and_wait(self) -> BaseException | None:
        """:meth:`stop`, then wait until the run has ended; the failure of a run that
        :meth:`_start_in_task` began (``async with`` and ``run()`` report theirs
        themselves). A cancellation of the caller meanwhile reaches that run, which is
        still awaited before the cancellation is re-raised."""
        self.stop()
        running, self._in_task = self._in_task, None
        if running is None:
            await self.wait_stopped()
            return None
        await running.wait()
        return running.failure

    def _mark_started(self) -> None:
        """The run has started (called by ``_serve``, before it is ready): an ``async
        with`` that enters at the start (:attr:`_enters_when`) returns now. Once only;
        readiness calls it too."""
        notify, self._on_started = self._on_started, None
        if notify is not None:
            notify()

    async def _serve_in_block(self, *, task_status: anyio.abc.TaskStatus[Any]) -> None:
        """What ``async with`` runs: the same run, already claimed, entered at the point
        :attr:`_enters_when` names."""
        if self._enters_when == "started":
            self._on_started = task_status.started
            await self._run_claimed(None)
        else:
            await self._run_claimed(task_status)

    async def __aenter__(self) -> Self:
        if not self._claim():
            return self  # stopped before it started: the body runs, the service does not
        block = self._block = BlockRun(
            self._serve_in_block,
            name=self.service_name,
            cancels_body_on=self._cancels_body_on,
        )
        await block.enter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        block, self._block = self._block, None
        if block is not None:
            await block.exit(exc, self.stop)
