"""Leader election over ``coordination.k8s.io/v1`` Leases, with client-go's timing rules.

Role: among several processes running the same controller, let exactly one do the work at a
time, and let another take over when it dies or loses contact. Input: a
:class:`ResourceLock` (normally a :class:`LeaseLock`) shared by all contenders, each with its
own identity. Output: callbacks (``on_started_leading``, ``on_stopped_leading``,
``on_new_leader``) or the scope ``async with elector:`` (``elector.leadership()``).

How the election goes (client-go v0.32 ``tools/leaderelection``):

* **Acquire.** Try to take the lease; on failure wait ``retry_period`` stretched by a random
  jitter of up to :data:`JITTER_FACTOR` times ``retry_period``, and try again, forever. An
  attempt still unanswered after ``renew_deadline`` is abandoned as failed.
* **Renew.** Once leading, renew at once and then every ``retry_period``. A renewal may be
  retried every ``retry_period``, but if none succeeds within ``renew_deadline`` (in-flight
  calls are cancelled at the deadline), leadership is lost: the leader work is cancelled and
  awaited, the lease released if configured, ``on_stopped_leading`` called, ``run()`` returns.
* **Expiry by our own clock.** Remote timestamps are never trusted. A contender remembers
  when *it* last saw the record change; the holder is presumed alive until that moment plus
  the record's ``leaseDurationSeconds`` on the contender's clock. Because the holder gives
  up after ``renew_deadline`` and contenders wait at least ``lease_duration`` (which must be
  longer), the old leader has stopped before a new one starts, provided clocks advance at
  similar rates.
* **Optimistic concurrency.** Every write carries the resourceVersion last seen: of two
  contenders writing at once, one gets a 409 and counts the attempt as failed. A leader
  renews on a fast path (write without reading first); on any failure it falls back to
  reading the lease first.
* **Release.** On leaving (``release_on_cancel=True``), a leader writes the lease with an
  empty holder and a 1 s duration, so a contender takes over at its next attempt. The
  leader work has finished by then: release never races with it.

Life cycle: an elector is a :class:`~aioinformer.Service`; its ``state`` goes ``NEW``,
``STARTING`` (trying to take the lease), ``RUNNING`` (leading: renewing the lease and
running the leader work; ``run()`` signals readiness here), ``STOPPING`` (leaving: the
leader work is cancelled and the lease released), ``STOPPED``. An elector stopped while
acquiring never reaches ``RUNNING``.

Task model: ``run()`` works in the caller's task and owns every task it starts, all
finished before it returns: the renew loop and the ``on_started_leading`` work (raced
with :func:`~aioinformer._kernel.runner.first_completed`), and (when ``on_new_leader``
is set) a notifier, a child of the elector's task runner that delivers new-leader
reports in order, so a slow callback never delays a renewal. :meth:`LeaderElector.stop`,
or cancelling ``run()``, stops the leader work, awaits it, then releases the lease.

This is not fencing. A leader cut off from the API server keeps leading for up to
``retry_period + renew_deadline`` after its last successful renewal, and a process that is
frozen (stopped, swapped out) notices nothing until it runs again; work guarded by the lease
should stop promptly when cancelled.

Example::

    lock = LeaseLock(client, "default", "my-controller", identity=socket.gethostname())
    elector = LeaderElector(lock)
    async with elector:              # entered once leading
        await run_controller()       # cancelled if leadership is lost (LeadershipLost raised)
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import anyio

from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.lifecycle import Service, State
from aioinformer._kernel.metrics import LeaderMetricsProvider as LeaderMetricsProvider
from aioinformer._kernel.runner import (
    TaskRunner,
    finish_regardless,
    first_completed,
    is_async_callable,
)
from aioinformer.errors import Conflict, NotFound
from aioinformer.errors import LeadershipLost as LeadershipLost
from aioinformer.operator._metrics import new_leader_metrics
from aioinformer.operator._resourcelock import (
    LeaderElectionRecord,
    LeaseLock,
    ResourceLock,
    lease_spec_to_record,
    record_to_lease_spec,
)

if TYPE_CHECKING:
    import contextlib

    from anyio.abc import TaskStatus

__all__ = [
    "JITTER_FACTOR",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaderMetricsProvider",
    "LeadershipLost",
    "LeaseLock",
    "ResourceLock",
    "lease_spec_to_record",
    "record_to_lease_spec",
]

logger = logging.getLogger(__name__)

JITTER_FACTOR: Final = 1.2
"""Upper bound of the random stretch of the acquire retry, as a multiple of ``retry_period``."""

_RELEASED_LEASE_SECONDS: Final = 1

StartedCallback: TypeAlias = Callable[[], Awaitable[None] | None]
StoppedCallback: TypeAlias = Callable[[], Awaitable[None] | None]
NewLeaderCallback: TypeAlias = Callable[[str], Awaitable[None] | None]

_END: Final = object()


def _jitter(period: float, factor: float) -> float:
    """``period`` stretched by a uniform random amount in ``[0, factor * period)``."""
    return period + random.random() * factor * period


def _to_async0(fn: Callable[[], Awaitable[None] | None]) -> Callable[[], Coroutine[Any, Any, None]]:
    if is_async_callable(fn):

        async def call_async() -> None:
            await fn()  # type: ignore[misc]

        return call_async

    async def call() -> None:
        fn()

    return call


def _to_async1(
    fn: Callable[[str], Awaitable[None] | None],
) -> Callable[[str], Coroutine[Any, Any, None]]:
    if is_async_callable(fn):

        async def call_async(identity: str) -> None:
            await fn(identity)  # type: ignore[misc]

        return call_async

    async def call(identity: str) -> None:
        fn(identity)

    return call


def _callback_name(fn: object) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


async def _completes_within(clock: Clock, seconds: float, coro: Coroutine[Any, Any, None]) -> bool:
    """Run ``coro``; cancel it after ``seconds`` on ``clock``. True when it finished in time."""
    first, task = await first_completed(coro, clock.sleep(seconds))
    task.result()
    return first == 0


class LeaderElector(Service):
    """Contends for a lease and runs the leader work while holding it.

    Arguments (periods in seconds, defaults as client-go's core components):

    * ``lease_duration`` (15): how long contenders wait, from when they last saw the record
      change, before taking over. Written to the lease rounded *up* to whole seconds.
    * ``renew_deadline`` (10): how long the leader keeps retrying a renewal before giving up.
    * ``retry_period`` (2): the wait between attempts.
    * Required: ``lease_duration > renew_deadline > JITTER_FACTOR * retry_period > 0``,
      else ``ValueError``, as is an empty ``lock.identity``.
    * ``on_started_leading()``: runs as a task once the lease is acquired; cancelled (and
      awaited) when leadership ends. Returning does not end leadership; raising does: the
      elector stops, releases the lease and ``run()`` re-raises the error.
    * ``on_stopped_leading()``: called once when ``run()`` ends, *whether or not this elector
      ever led* (as in client-go); after the leader work finished and the lease was released.
    * ``on_new_leader(identity)``: called, in order and off the election path, when the
      observed holder has changed (checked after each acquire attempt and each renewal
      round), including the first holder seen; ``""`` means the lease was seen released.
    * ``release_on_cancel`` (True): release the lease when ``run()`` ends, so a successor
      need not wait for expiry.
    * ``name``: for logs and task names; ``"<namespace>/<lease>[<identity>]"`` by default.
    * ``clock``: the time source (the event loop's by default; tests pass a ``FakeClock``).
    * ``metrics_provider``: records ``leader_election_master_status`` and the acquisition
      and renewal-failure counters, labelled with the lease's name (default: the provider
      installed with ``set_metrics_provider``, if it implements them).

    Callbacks may be sync or async (detected once, here); a sync one should return quickly.
    An elector runs once: ``run()``, ``async with elector:`` or ``leadership()``, a single
    time. :meth:`stop` ends the run as a cancellation would, but lets ``run()`` return.
    """

    def __init__(
        self,
        lock: ResourceLock,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: StartedCallback | None = None,
        on_stopped_leading: StoppedCallback | None = None,
        on_new_leader: NewLeaderCallback | None = None,
        release_on_cancel: bool = True,
        name: str | None = None,
        clock: Clock | None = None,
        metrics_provider: LeaderMetricsProvider | None = None,
    ) -> None:
        if lease_duration <= 0:
            raise ValueError("lease_duration must be greater than zero")
        if renew_deadline <= 0:
            raise ValueError("renew_deadline must be greater than zero")
        if retry_period <= 0:
            raise ValueError("retry_period must be greater than zero")
        if lease_duration <= renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renew_deadline must be greater than retry_period * JITTER_FACTOR")
        if not lock.identity:
            raise ValueError("lock identity is empty")
        self._lock = lock
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.name = name if name is not None else f"{lock.describe()}[{lock.identity}]"
        self._clock: Clock = clock if clock is not None else default_clock
        lease_name = getattr(lock, "name", None)
        self._metrics = new_leader_metrics(
            lease_name if isinstance(lease_name, str) else lock.describe(), metrics_provider
        )
        # Whole seconds written to the lease: never shorter than configured, so contenders
        # never wait less than ``lease_duration``.
        self._lease_seconds = max(1, math.ceil(lease_duration))
        self._on_started_leading = on_started_leading
        self._started = _to_async0(on_started_leading) if on_started_leading else None
        self._on_stopped_leading = on_stopped_leading
        self._stopped_leading = _to_async0(on_stopped_leading) if on_stopped_leading else None
        self._on_new_leader = on_new_leader
        self._new_leader = _to_async1(on_new_leader) if on_new_leader else None

        # Set by stop(): leave the election (releasing the lease) and return.
        self._stop_requested = asyncio.Event()
        # The record as last read from or written to the lock, and when (our monotonic
        # clock) it was last seen to change: the holder is presumed alive until
        # ``_observed_time + _observed_record.lease_duration_seconds``.
        self._observed_record = LeaderElectionRecord()
        self._observed_time = -math.inf
        # Raw form of the record as last *read*; a read with a different raw form is a
        # change (a renewal by the holder, or a new holder) and refreshes ``_observed_time``.
        self._observed_raw: bytes | None = None
        # The holder last reported to ``on_new_leader``; lags ``_observed_record`` until the
        # end of the current attempt (acquire) or renewal round (renew).
        self._reported_leader = ""
        # Identities waiting for the notifier task; only used when ``on_new_leader`` is set.
        self._reports: asyncio.Queue[object] | None = None
        # Set by the notifier once it has delivered every report up to the end marker.
        self._reports_delivered = asyncio.Event()
        # True from the moment leadership is lost (renewals missed the deadline, or the
        # leader work failed): the run ended by itself, not because it was stopped.
        self._lost = False
        # True from acquiring the lease until leaving: the leader status metric is 1.
        self._holding = False
        # The scope of the acquire loop while it runs; stop() cancels it.
        self._acquiring: anyio.CancelScope | None = None

    # -- public surface ---------------------------------------------------------------

    @property
    def service_name(self) -> str:
        return self.name

    @property
    def identity(self) -> str:
        """This contender's identity (the lock's)."""
        return self._lock.identity

    def is_leader(self) -> bool:
        """True while this elector leads: from acquiring the lease until it starts leaving.

        Unlike client-go's ``IsLeader()`` (the last observed record names us), this is False
        once renewals have failed or the elector is stopping, even if the lease still names
        this identity.
        """
        return self._state is State.RUNNING and self._observed_is_us()

    def get_leader(self) -> str:
        """The holder in the record last observed (``""`` for none); informational, may lag."""
        return self._observed_record.holder_identity

    async def run(self, *, task_status: TaskStatus[None] | None = None) -> None:
        """Acquire the lease, lead until leadership is lost, :meth:`stop` is called or the
        call is cancelled, return.

        Returns normally when leadership is lost or after :meth:`stop`; re-raises an
        error of ``on_started_leading``. Either way, and when cancelled, it stops the
        leader work, releases the lease (``release_on_cancel``) and calls
        ``on_stopped_leading`` before it returns or the cancellation propagates. Reports
        already queued for ``on_new_leader`` are delivered before it returns (a second
        cancellation drops them). ``task_status.started()`` (anyio's ``TaskGroup.start``)
        is signalled once this elector leads. ``RuntimeError`` on a second run.
        """
        await super().run(task_status=task_status)

    async def _serve(self, *, task_status: TaskStatus[Any]) -> None:
        self._metrics.started()
        failure: BaseException | None = None
        async with TaskRunner(name=self.name) as runner:
            if self._new_leader is not None:
                self._reports = asyncio.Queue()
                runner.start_soon(self._notify(), name="on_new_leader")
            try:
                # A stop request while acquiring cancels this scope; while leading, it is
                # one of the things the lead races.
                with anyio.CancelScope() as acquiring:
                    self._acquiring = acquiring
                    await self._acquire()
                self._acquiring = None
                if not self._stop_requested.is_set():
                    failure = await self._lead(task_status)
            finally:
                self._leaving()
                if self.release_on_cancel:
                    await finish_regardless(self._release())
                await self._call_stopped_leading()
                if self._reports is not None:
                    self._reports.put_nowait(_END)
                    await self._reports_delivered.wait()
        if failure is not None:
            # Raised here, past the runner: a body's error would leave it in a group.
            raise failure

    def _request_stop(self) -> None:
        self._stop_requested.set()
        if self._acquiring is not None:
            self._acquiring.cancel()

    async def _serve_in_block(self, *, task_status: TaskStatus[Any]) -> None:
        # In a block, a run that ends by itself is leadership lost: it fails the block
        # (cancelling its body), whatever ended it.
        try:
            await super()._serve_in_block(task_status=task_status)
        except Exception as error:
            raise LeadershipLost(f"{self.name}: leadership lost") from error
        if self._lost:
            raise LeadershipLost(f"{self.name}: leadership lost")

    def leadership(self) -> contextlib.AbstractAsyncContextManager[LeaderElector]:
        """``async with elector:`` under its own name: holds leadership for the duration
        of the body.

        Entering starts the election and waits until this elector leads. Leaving normally
        (or by an exception) stops it: the lease is released (``release_on_cancel``). If
        leadership is lost while the body runs, the body is cancelled and
        :class:`LeadershipLost` raised from the ``async with``, much as ``asyncio.timeout``
        turns its cancellation into ``TimeoutError``::

            try:
                async with elector.leadership():
                    await reconcile_forever()
            except LeadershipLost:
                log.warning("lost the lease; exiting so a standby takes over")
        """
        return self

    def __repr__(self) -> str:
        return (
            f"<LeaderElector {self.name!r} identity={self.identity!r} "
            f"state={self._state.name} leader={self.get_leader()!r}>"
        )

    # -- the election -----------------------------------------------------------------

    def _observed_is_us(self) -> bool:
        return self._observed_record.holder_identity == self._lock.identity

    def _lease_valid(self, now: float) -> bool:
        return self._observed_time + self._observed_record.lease_duration_seconds > now

    def _observe(self, record: LeaderElectionRecord) -> None:
        self._observed_record = record
        self._observed_time = self._clock.monotonic()

    async def _try_acquire_or_renew(self) -> bool:
        """One attempt to take or keep the lease; True when this elector now holds it."""
        now = self._clock.monotonic()
        stamp = datetime.now(UTC)
        desired = LeaderElectionRecord(
            holder_identity=self._lock.identity,
            lease_duration_seconds=self._lease_seconds,
            acquire_time=stamp,
            renew_time=stamp,
        )
        desc = self._lock.describe()

        # Any failure of the lock (API error, transport error, a bug in a custom lock) fails
        # only this attempt, as in client-go: the loops retry and the deadline decides.
        # Fast path: a leader whose lease is still valid by its own clock writes without
        # reading first, betting nothing changed since its last write.
        if self._observed_is_us() and self._lease_valid(now):
            renewal = replace(
                desired,
                acquire_time=self._observed_record.acquire_time,
                leader_transitions=self._observed_record.leader_transitions,
            )
            try:
                await self._lock.update(renewal)
            except Exception as exc:  # noqa: BLE001
                # Blind on purpose: any failed write falls back to a read, as client-go does.
                logger.info(
                    "%s: renewing %s without reading failed (%s); reading it", self.name, desc, exc
                )
            else:
                self._observe(renewal)
                return True

        try:
            current, raw = await self._lock.get()
        except NotFound:
            try:
                await self._lock.create(desired)
            except Exception as exc:  # noqa: BLE001
                # Blind on purpose: a failed attempt is retried at the next retry period.
                logger.info("%s: creating lease %s failed: %s", self.name, desc, exc)
                return False
            self._observe(desired)
            return True
        except Exception as exc:  # noqa: BLE001
            # Blind on purpose: a failed attempt is retried at the next retry period.
            logger.warning("%s: reading lease %s failed: %s", self.name, desc, exc)
            return False

        if raw != self._observed_raw:
            self._observe(current)
            self._observed_raw = raw
        if current.holder_identity and self._lease_valid(now) and not self._observed_is_us():
            logger.debug(
                "%s: lease %s is held by %r and has not expired",
                self.name,
                desc,
                current.holder_identity,
            )
            return False

        if self._observed_is_us():
            desired = replace(
                desired,
                acquire_time=current.acquire_time,
                leader_transitions=current.leader_transitions,
            )
        else:
            desired = replace(desired, leader_transitions=current.leader_transitions + 1)
        try:
            await self._lock.update(desired)
        except Exception as exc:  # noqa: BLE001
            # Blind on purpose: a failed attempt is retried at the next retry period.
            logger.info("%s: writing lease %s failed: %s", self.name, desc, exc)
            return False
        self._observe(desired)
        return True

    async def _attempt(self) -> bool:
        """One acquire attempt, abandoned (as failed) if it takes longer than the deadline."""
        outcome: list[bool] = []

        async def attempt() -> None:
            outcome.append(await self._try_acquire_or_renew())

        finished = await _completes_within(self._clock, self.renew_deadline, attempt())
        return finished and outcome[0]

    async def _acquire(self) -> None:
        desc = self._lock.describe()
        logger.info("%s: attempting to acquire lease %s", self.name, desc)
        while True:
            acquired = await self._attempt()
            self._maybe_report_transition()
            if acquired:
                logger.info("%s: acquired lease %s", self.name, desc)
                return
            await self._clock.sleep(_jitter(self.retry_period, JITTER_FACTOR))

    async def _renew_until_done(self) -> None:
        """Attempt at once, then at every ``retry_period`` tick, until one attempt succeeds."""
        tick = self._clock.monotonic()
        while not await self._try_acquire_or_renew():
            self._metrics.renewal_failed()
            now = self._clock.monotonic()
            # Ticks keep their phase; a tick missed by a slow attempt fires at once.
            tick += self.retry_period
            if tick > now:
                await self._clock.sleep(tick - now)
            else:
                tick = now
                await self._clock.sleep(0)

    async def _renew_loop(self) -> None:
        """Renew every ``retry_period``; return when a renewal misses ``renew_deadline``."""
        desc = self._lock.describe()
        while True:
            renewed = await _completes_within(
                self._clock, self.renew_deadline, self._renew_until_done()
            )
            self._maybe_report_transition()
            if not renewed:
                logger.warning(
                    "%s: could not renew lease %s within %ss; leadership lost",
                    self.name,
                    desc,
                    self.renew_deadline,
                )
                return
            await self._clock.sleep(self.retry_period)

    def _leaving(self) -> None:
        """Leave the lead (or the campaign): ``STOPPING`` before the leader work is
        cancelled, so :meth:`is_leader` is False from then on."""
        if self._state in (State.STARTING, State.RUNNING):
            self._state = State.STOPPING
        if self._holding:
            self._holding = False
            self._metrics.stopped_leading()

    async def _lead(self, task_status: TaskStatus[Any]) -> BaseException | None:
        """Lead until the renewals miss their deadline, the leader work fails (its error
        is returned) or a stop is requested."""
        self._holding = True
        self._metrics.acquired()

        async def renew() -> None:
            await self._renew_loop()
            self._lost = True
            self._leaving()

        async def work() -> None:
            assert self._started is not None
            try:
                await self._started()
            except Exception:
                logger.error(
                    "%s: leader work %s failed; stepping down",
                    self.name,
                    _callback_name(self._on_started_leading),
                )
                self._lost = True
                self._leaving()
                raise
            # The leader work returned: keep the lease until told otherwise, as client-go.
            await anyio.sleep_forever()

        # Signalled here, in the run's own task, as anyio requires; then the renewals,
        # the leader work and a stop request race: whichever ends first ends the lead.
        task_status.started()
        stopped = self._stop_requested.wait()
        if self._started is None:
            await first_completed(renew(), stopped)
            return None
        _, ended = await first_completed(renew(), work(), stopped)
        return ended.exception()

    async def _release(self) -> None:
        """Give the lease up if this elector holds it: empty holder, 1 s duration.

        Unlike client-go, a 409 is not the end: a renewal cancelled in flight may have been
        applied by the server after all, leaving the lock's resourceVersion stale. The lease
        is read again and, if it still names this elector, released at its current version.
        """
        if not self._observed_is_us():
            return
        stamp = datetime.now(UTC)
        released = LeaderElectionRecord(
            lease_duration_seconds=_RELEASED_LEASE_SECONDS,
            acquire_time=stamp,
            renew_time=stamp,
            leader_transitions=self._observed_record.leader_transitions,
        )
        desc = self._lock.describe()
        outcome: list[str | Exception] = []

        async def write() -> None:
            try:
                try:
                    await self._lock.update(released)
                except Conflict:
                    current, _ = await self._lock.get()
                    if current.holder_identity != self._lock.identity:
                        outcome.append(f"now held by {current.holder_identity!r}")
                        return
                    await self._lock.update(
                        replace(released, leader_transitions=current.leader_transitions)
                    )
            except Exception as exc:  # noqa: BLE001
                # Blind on purpose: handed to the caller, which logs the failed release.
                outcome.append(exc)

        if not await _completes_within(self._clock, self.renew_deadline, write()):
            logger.error("%s: releasing lease %s timed out", self.name, desc)
        elif outcome:
            logger.error("%s: releasing lease %s failed: %s", self.name, desc, outcome[0])
        else:
            self._observe(released)
            logger.info("%s: released lease %s", self.name, desc)

    # -- callbacks --------------------------------------------------------------------

    def _maybe_report_transition(self) -> None:
        holder = self._observed_record.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        logger.info("%s: new leader observed: %r", self.name, holder)
        if self._reports is not None:
            self._reports.put_nowait(holder)

    async def _notify(self) -> None:
        assert self._reports is not None
        assert self._new_leader is not None
        while (identity := await self._reports.get()) is not _END:
            assert isinstance(identity, str)
            try:
                await self._new_leader(identity)
            except Exception:
                logger.exception(
                    "%s: on_new_leader %s raised", self.name, _callback_name(self._on_new_leader)
                )
        self._reports_delivered.set()

    async def _call_stopped_leading(self) -> None:
        if self._stopped_leading is None:
            return
        try:
            await self._stopped_leading()
        except Exception:
            logger.exception(
                "%s: on_stopped_leading %s raised",
                self.name,
                _callback_name(self._on_stopped_leading),
            )
