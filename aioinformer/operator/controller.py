"""The controller runner: informer events in, reconcile calls out, failures retried.

Role: :class:`Controller` ties informers to a reconcile function through a
:class:`~aioinformer.priority_queue.PriorityQueue` (a
:class:`~aioinformer.workqueue.RateLimitingQueue` with ``use_priority_queue=False``)::

    informer handlers --key, priority--> PriorityQueue --get()--> N workers --> reconcile(key)
          ^                                ^     |                                  |
          |                                |     +-- add_after / add_rate_limited <-+
    add/update/delete        enqueue(key, priority)   (failure, Requeue: same priority)

Priorities (controller-runtime's, whose controllers use its priority queue by default):
the keys of an informer's initial list and of its resyncs (an update whose old and new
states carry the same resourceVersion) are queued at
:data:`~aioinformer.priority_queue.LOW_PRIORITY`, those of every other event at 0, so a
change someone just made is reconciled before the backlog of a start or a resync. A key
already queued keeps the highest priority it was queued with: an event for an object whose
key waits low raises it. A key handed to a worker keeps its priority for its retry (a
failure, ``Requeue()``, ``Requeue(after=s)``); :meth:`Controller.enqueue` takes one.

Input: the events of one or more :class:`~aioinformer.informer.SharedIndexInformer`\\ s,
filtered by the watch's :mod:`~aioinformer.operator.predicates` (if any), each mapped to keys
(``"namespace/name"`` by default; any ``enqueue`` mapping, such as :func:`enqueue_owner`,
for secondary resources), plus keys passed to :meth:`Controller.enqueue`. Output: calls
of ``reconcile(key)``, which reads the current state from listers and drives the world
towards it. Reconcile is level-based: it gets a key, never an event, so any number of
events for one object collapse into one call.

What a reconcile's outcome does (controller-runtime's rules):

=================================================  ==========================================
outcome                                            effect on the key
=================================================  ==========================================
returns ``None``                                   success: its failure count is forgotten
returns anything else (``True``, ``5``, a dict)    a :class:`TypeError` naming the function
                                                   and the value, handled as a raised
                                                   exception: logged, retried rate-limited
raises an exception                                logged with the controller name and key;
                                                   retried after the rate limiter's delay
                                                   (5 ms, 10 ms, 20 ms, ... up to 1000 s)
returns or raises ``Requeue(after=s)``, ``s > 0``  not a failure: count forgotten, retried
                                                   in ``s`` seconds
returns or raises ``Requeue()``                    retried after the rate limiter's delay,
                                                   not logged as an error
returns or raises ``Requeue(err)``                 as if ``err`` had been raised (``after``
                                                   is ignored, like controller-runtime)
raises (or ``Requeue(err)`` with) a 409            one INFO line, no traceback; retried after
:class:`~aioinformer.errors.Conflict`              the rate limiter's delay; counted in
                                                   ``conflicts``, not ``failures`` (a write
                                                   from a stale cache; ``AlreadyExists`` is
                                                   an ordinary failure)
runs past ``reconcile_timeout``                    cancelled, logged at ERROR; a failure
                                                   (and a timeout), retried rate-limited
=================================================  ==========================================

Metrics: with an installed provider that implements :class:`ControllerMetricsProvider`
(:mod:`aioinformer.contrib.prometheus` does), every reconcile is recorded under
controller-runtime's names, read when the controller is created: its duration, its
result (``success``; ``error`` for the failures and timeouts above, also counted in the
errors and, for a timeout, the timeouts; ``requeue`` for ``Requeue()`` and for a 409
conflict, which is retried the same way and is not a failure; ``requeue_after`` for
``Requeue(after=s)``), the workers busy, and the number of workers. A reconcile cut
short by the controller's stop records no result.

Guarantees:

* One key is reconciled by at most one worker at a time (the work queue hands an item to
  one worker and holds re-adds back until it is done); distinct keys run in parallel on
  up to ``workers`` workers.
* Workers start only once every watched informer has synced and the controller's own
  handler on it has been handed the whole initial list (its registration's
  ``wait_for_sync()``, as controller-runtime waits on its event sources), so a
  reconcile never reads a cache that is still filling, and the first reconciles run
  with every initial object's key already queued. Keys enqueued before that wait in the
  queue. If they
  have not synced within ``cache_sync_timeout`` (2 minutes by default), or one stops
  first, ``run()`` raises :class:`~aioinformer.errors.CacheSyncError` saying why: a
  controller never waits silently on a cache that cannot fill (RBAC, unknown resource).
* Events are never lost while the controller runs: a key re-added while it is being
  reconciled is reconciled again afterwards.

Life cycle: a controller is a :class:`~aioinformer.Service` and its ``state`` an
:class:`~aioinformer.State`: ``NEW`` (handlers registered, keys already queue up),
``STARTING`` (``run()`` waits for every informer to sync; no worker runs), ``RUNNING``
(workers take keys and reconcile them; ``run()`` signals readiness here), ``STOPPING``
(no key is taken any more; reconciles in flight may finish), ``STOPPED`` (every worker
has ended, the controller's handlers are removed from its informers with no call of them
still running, and the queue is shut down).

Task model: :meth:`Controller.run` owns the worker tasks (children of one
:class:`~aioinformer._kernel.runner.TaskRunner`, and the queue's timer task) and returns
only when all have ended. It runs until cancelled or :meth:`Controller.stop`; either way
it shuts down gracefully: the queue is shut down so workers take no more keys, and
reconciles in flight may finish for up to ``drain_timeout`` seconds of the clock (the
runner's drain), then they are cancelled. A cancellation that arrives during the drain
cuts it short. ``async with controller:`` runs it in a task, returning once it has
started (before the informers have synced, so they may start in the same block), and
leaving the block stops it the same way. The controller does not run its informers:
start them (a :class:`~aioinformer.factory.SharedInformerFactory`) alongside it.

Example::

    async def reconcile(key: str) -> Requeue | None:
        namespace, name = split_meta_namespace_key(key)
        widget = widgets.lister().get(name, namespace=namespace)
        if widget is None:
            return None                  # deleted: nothing to do
        ...                              # create or patch what the widget asks for
        return None

    controller = Controller("widgets", reconcile, informers=[widgets], workers=4)
    async with factory, controller:
        await stop_signal.wait()
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

from aioinformer._kernel.clock import CancelAfter, Clock, ClockSlot, default_clock
from aioinformer._kernel.lifecycle import Service, State
from aioinformer._kernel.metrics import ControllerMetricsProvider as ControllerMetricsProvider
from aioinformer._kernel.runner import (
    TaskRunner,
    finish_regardless,
    first_completed,
    is_async_callable,
)
from aioinformer._kernel.sync import Watched, wait_synced
from aioinformer._pipeline.handlers import DEFAULT_SLOW_HANDLER_THRESHOLDS, handler_name
from aioinformer.errors import CacheSyncError, Requeue, ShutDown
from aioinformer.indexer import KeyFunc, meta_namespace_key
from aioinformer.operator._controller_watches import EnqueueFunc as EnqueueFunc
from aioinformer.operator._controller_watches import HandlerSync, add_watch
from aioinformer.operator._controller_watches import enqueue_owner as enqueue_owner
from aioinformer.operator._metrics import new_controller_metrics
from aioinformer.operator.predicates import PredicateLike, as_predicates
from aioinformer.operator.retry import is_conflict
from aioinformer.priority_queue import PriorityQueue
from aioinformer.workqueue import (
    ItemExponentialFailureRateLimiter,
    QueueStatistics,
    RateLimiter,
    RateLimitingQueue,
)

if TYPE_CHECKING:
    from collections.abc import Hashable

    from anyio.abc import TaskStatus

    from aioinformer.informer import HandlerRegistration, SharedIndexInformer

__all__ = [
    "Controller",
    "ControllerMetricsProvider",
    "ControllerStatistics",
    "EnqueueFunc",
    "Reconcile",
    "enqueue_owner",
]

logger = logging.getLogger(__name__)

Reconcile = Callable[[str], Awaitable[Any] | Any]
"""``reconcile(key)``: sync or async; its outcome is read as the module docstring says."""

DEFAULT_DRAIN_TIMEOUT: Final = 30.0
"""Seconds in-flight reconciles may take to finish once the controller is stopping."""

DEFAULT_CACHE_SYNC_TIMEOUT: Final = 120.0
"""Seconds ``run()`` waits for its informers to sync before it raises (controller-runtime's
``CacheSyncTimeout`` default)."""


@dataclass(frozen=True, slots=True)
class ControllerStatistics:
    """A snapshot of a controller, from :meth:`Controller.statistics`."""

    name: str
    state: State
    workers: int
    """Worker tasks running now (``0`` before they start and after the stop)."""
    active: int
    """Reconciles in flight."""
    reconciles: int
    """Reconcile calls that ended, whatever their outcome."""
    successes: int
    """Reconciles that returned without asking for a retry."""
    failures: int
    """Reconciles that raised (or asked with ``Requeue(err)``), a 409 ``Conflict`` aside,
    or timed out: retried rate-limited."""
    requeues: int
    """Reconciles that asked for a retry with ``Requeue`` and no error."""
    queue: QueueStatistics
    """The work queue's snapshot."""
    sync_error: CacheSyncError | None = None
    """Why ``run()`` ended without starting workers: its informers did not sync."""
    conflicts: int = 0
    """Reconciles that raised (or asked with ``Requeue(err)``) a 409
    :class:`~aioinformer.errors.Conflict` (not ``AlreadyExists``): a write from a stale
    cache, retried rate-limited and logged at INFO; not counted in ``failures``."""
    timeouts: int = 0
    """Reconciles cancelled at ``reconcile_timeout``; also counted in ``failures``."""
    slow_reconciles: int = 0
    """Calls of a sync reconcile that held the event loop past 0.1 s (the bound of a sync
    event handler, ``SlowHandlerThresholds().loop``); the first of each run of them is
    logged as a warning."""


def _timer_for(clock: Clock) -> Callable[[], float]:
    """What times a sync reconcile: the wall clock on the event loop's time (a blocked
    loop is real time), else the injected clock, as tests move it."""
    kept = clock.clock if isinstance(clock, ClockSlot) else clock
    return time.perf_counter if kept is default_clock else clock.monotonic


class Controller(Service):
    """Runs ``reconcile(key)`` on ``workers`` workers for every key the informers' events
    (and :meth:`enqueue`) produce, retrying failures with rate-limited backoff.

    ``name`` labels logs, statistics and the queue's metrics. ``informers`` are watched
    from construction on: every add, update (resyncs included) and delete enqueues
    ``key_func(obj)`` (default :func:`~aioinformer.indexer.meta_namespace_key`, which maps
    a tombstone to its key), or the keys ``enqueue(obj)`` yields when that mapping is
    given. :meth:`watch` adds informers with their own mapping. ``reconcile`` may be sync
    or async (detected once, here); a sync one runs on the event loop and must not block.

    Keyword arguments: ``use_priority_queue`` (default ``True``, controller-runtime's
    ``UsePriorityQueue``) queues keys in a :class:`~aioinformer.priority_queue.PriorityQueue`:
    the initial list's and resyncs' keys low, other events' at 0, retries at the priority
    they were handed out with (see the module docstring); ``False`` keeps a first-in,
    first-out :class:`~aioinformer.workqueue.RateLimitingQueue`, where
    :meth:`enqueue`'s ``priority`` is ignored. ``fair_key`` (priority queue only, else
    ``ValueError``; default ``None``) names each key's tenant, such as
    :func:`~aioinformer.priority_queue.namespace_of_key`: within a priority the queue then
    hands out keys round-robin among tenants, so one busy namespace cannot starve the
    others. ``rate_limiter`` decides failure delays with either queue (default: per-key
    backoff, 5 ms doubling up to 1000 s, a
    :class:`~aioinformer.workqueue.ItemExponentialFailureRateLimiter`, as controller-runtime
    gives its priority queue; with ``use_priority_queue=False``,
    :func:`~aioinformer.workqueue.default_controller_rate_limiter`, which also caps all
    retries at 10 per second past a burst of 100); ``clock`` drives the
    queue's delays, the drain timeout and the sync timeout (tests pass a ``FakeClock``;
    without it, the event loop's, or the clock of the Manager it is added to);
    ``drain_timeout`` bounds, in seconds, how long in-flight reconciles may run once
    stopping. ``cache_sync_timeout`` (seconds, default 120; ``None`` waits forever) bounds
    the wait for the informers, and the controller's handlers on them, to sync: past it,
    as soon as an informer stops unsynced, or as soon as an informer's first list fails
    in a way no retry alone heals (an unknown resource, a 401 or 403, a refused
    connection; ``cache_sync_fail_fast=False`` waits for those to heal instead),
    ``run()`` raises :class:`~aioinformer.errors.CacheSyncError` naming each unsynced
    informer's resource, namespace and last error, and no worker ever starts.
    ``predicates`` filter the events of ``informers`` (see :meth:`watch`).
    ``reconcile_timeout`` (seconds on ``clock``; ``None``, the default: no limit)
    cancels an async reconcile running longer, which then counts as a failure; a sync
    reconcile cannot be interrupted, so with one it raises ``ValueError`` here, as does a
    timeout that is not positive.

    It runs once: ``await controller.run()`` or ``async with controller:`` (see the
    module docstring for its states).
    """

    _enters_when: ClassVar[Literal["ready", "started"]] = "started"
    """``async with`` returns once the run has started, before the informers have synced:
    they are often started in the same block, after the controller."""
    _cancels_body_on: ClassVar[tuple[type[BaseException], ...]] = (CacheSyncError,)
    """The failure that ends an ``async with`` body: the informers did not sync."""

    def __init__(
        self,
        name: str,
        reconcile: Reconcile,
        *,
        informers: Sequence[SharedIndexInformer] = (),
        workers: int = 1,
        key_func: KeyFunc = meta_namespace_key,
        rate_limiter: RateLimiter[str] | None = None,
        clock: Clock | None = None,
        enqueue: EnqueueFunc | None = None,
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT,
        cache_sync_timeout: float | None = DEFAULT_CACHE_SYNC_TIMEOUT,
        predicates: Iterable[PredicateLike] = (),
        reconcile_timeout: float | None = None,
        cache_sync_fail_fast: bool = True,
        use_priority_queue: bool = True,
        fair_key: Callable[[str], Hashable] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if fair_key is not None and not use_priority_queue:
            raise ValueError(
                f"controller {name}: fair_key needs the priority queue (use_priority_queue=True)"
            )
        self._is_async = is_async_callable(reconcile)
        if reconcile_timeout is not None:
            if not reconcile_timeout > 0:
                raise ValueError(f"reconcile_timeout must be > 0 or None, got {reconcile_timeout}")
            if not self._is_async:
                raise ValueError(
                    f"controller {name}: reconcile_timeout needs an async reconcile; a sync"
                    f" one ({reconcile!r}) cannot be interrupted"
                )
        self._reconcile_timeout = reconcile_timeout
        if drain_timeout < 0:
            raise ValueError(f"drain_timeout must be >= 0, got {drain_timeout}")
        if cache_sync_timeout is not None and cache_sync_timeout < 0:
            raise ValueError(f"cache_sync_timeout must be >= 0 or None, got {cache_sync_timeout}")
        self._cache_sync_timeout = cache_sync_timeout
        self._cache_sync_fail_fast = cache_sync_fail_fast
        # Set once, when run() gave up waiting for the informers to sync.
        self._sync_error: CacheSyncError | None = None
        self.name = name
        self._reconcile = reconcile
        self._workers = workers
        self._key_func = key_func
        self._guards: list[Callable[[str], Awaitable[bool]]] = []
        """Run before each reconcile, in order; one returning True handled the key (see
        :meth:`_add_guard`)."""
        # Without ``clock=``, a slot: the event loop's time until a Manager adding this
        # controller puts its own clock in it (see _keep_time_of).
        self._clock: Clock = clock if clock is not None else ClockSlot()
        self._drain_timeout = float(drain_timeout)
        self._queue: RateLimitingQueue[str]
        # The same queue when it is a priority queue (the default), else None.
        self._priority_queue: PriorityQueue[str] | None
        if use_priority_queue:
            if rate_limiter is None:
                # controller-runtime's default with its priority queue: per-key backoff
                # alone, no overall bucket that would hold an event's retry behind a
                # burst of failing resync keys.
                rate_limiter = ItemExponentialFailureRateLimiter()
            self._queue = self._priority_queue = PriorityQueue(
                rate_limiter, fair_key=fair_key, name=name, clock=self._clock
            )
        else:
            self._priority_queue = None
            self._queue = RateLimitingQueue(rate_limiter, name=name, clock=self._clock)
        self._metrics = new_controller_metrics(name, clock=self._clock, workers=workers)
        # Every informer watched, with its registration; all must sync before workers start.
        self._watches: list[tuple[SharedIndexInformer, HandlerRegistration]] = []
        # Set when asked to stop while running (stopped before the start, run() returns
        # at once without serving: Service).
        self._stop_requested = asyncio.Event()
        # The workers' runner while they run; None before and after.
        self._workers_runner: TaskRunner | None = None
        # Worker index -> the key it is reconciling; a worker absent here is idle in get().
        self._in_flight: dict[int, str] = {}
        # Told after each reconcile (a shard waiting to let a slot go: _on_reconcile_end).
        self._reconcile_ends: list[Callable[[], None]] = []
        # Keys whose reconcile the drain cancelled, for its warning.
        self._cut_short: list[str] = []
        self._reconciles = 0
        self._successes = 0
        self._failures = 0
        self._requeues = 0
        self._conflicts = 0
        self._timeouts = 0
        # A sync reconcile's name in warnings, and what times it: the wall clock (a
        # blocked loop is real time), or the injected clock in tests.
        self._reconcile_name = handler_name(None, reconcile)
        self._timer = _timer_for(self._clock)
        self._slow_reconciles = 0
        # True from a slow sync reconcile until one is fast again: one warning per episode.
        self._slow_episode = False
        checks = as_predicates(predicates)
        for informer in informers:
            self.watch(informer, enqueue=enqueue, predicates=checks)

    def _keep_time_of(self, clock: Clock) -> None:
        """Keep ``clock``'s time: the Manager adding this controller gives its own. One built
        without ``clock=`` takes it; one built with another clock raises ``ValueError``, as
        its delays and drain would keep another time than the manager's grace and election."""
        if isinstance(self._clock, ClockSlot):
            self._clock.clock = clock
            self._timer = _timer_for(self._clock)
        elif self._clock is not clock:
            raise ValueError(
                f"controller {self.name!r} runs on {self._clock!r}, its manager on {clock!r}:"
                " build it without clock= (it then keeps the manager's) or with the manager's"
            )

    # -- inputs ------------------------------------------------------------------------

    def watch(
        self,
        informer: SharedIndexInformer,
        *,
        enqueue: EnqueueFunc | None = None,
        predicates: Iterable[PredicateLike] = (),
    ) -> None:
        """Also enqueue keys for ``informer``'s events: ``enqueue(obj)``'s keys, or the
        controller's ``key_func(obj)``. Only before :meth:`run` starts (``RuntimeError``
        after); the informer must sync before workers start.

        ``predicates`` (see :mod:`aioinformer.operator.predicates`) filter the events first: one
        enqueues keys only when every predicate lets it through. A delete the watch missed
        is judged by its tombstone's last state, and let through when there is none. A
        predicate that raises is logged and the event let through: a reconcile too many
        is harmless, one too few leaves the object unreconciled until its next event.
        """
        if self.state is not State.NEW:
            raise RuntimeError(f"controller {self.name}: watch() must be called before run()")
        registration = add_watch(
            informer,
            self._queue,
            where=f"controller {self.name}",
            key_func=self._key_func,
            enqueue=enqueue,
            predicates=as_predicates(predicates),
        )
        self._watches.append((informer, registration))

    def _on_reconcile_end(self, told: Callable[[], None]) -> None:
        """Call ``told()`` each time a worker is done with a key (reconciled, guarded off
        or failed): a shard of a ring in range mode waits so for the reconciles of a slot
        it gives up (see :mod:`aioinformer.operator._slot_keeper`)."""
        self._reconcile_ends.append(told)

    def _reconciling(self) -> list[str]:
        """The keys workers are reconciling now."""
        return list(self._in_flight.values())

    def _add_guard(self, guard: Callable[[str], Awaitable[bool]]) -> None:
        """Run ``await guard(key)`` before each reconcile; when it returns True the key is
        handled (forgotten, not reconciled), and an error it raises counts as the
        reconcile's. The sharded Manager guards its controllers with a shard's drain
        acknowledgement (see :mod:`aioinformer.operator._shard`). Only before :meth:`run`."""
        if self.state is not State.NEW:
            raise RuntimeError(f"controller {self.name}: guards are added before run()")
        self._guards.append(guard)

    @property
    def key_func(self) -> KeyFunc:
        """How this controller maps an object to its key."""
        return self._key_func

    @property
    def informers(self) -> list[SharedIndexInformer]:
        """The informers this controller watches, in the order they were added."""
        return [informer for informer, _ in self._watches]

    def enqueue(self, key: str, *, priority: int = 0) -> None:
        """Queue ``key`` for a reconcile (a manual trigger) at ``priority`` (higher is
        reconciled first; a key already queued keeps the higher of its two priorities);
        ignored once stopping. With ``use_priority_queue=False`` the priority is ignored."""
        queue = self._priority_queue
        if queue is not None:
            queue.add(key, priority=priority)
        else:
            self._queue.add(key)

    def enqueue_after(self, key: str, delay: float, *, priority: int = 0) -> None:
        """Queue ``key`` at ``priority`` once ``delay`` seconds have passed; ignored once
        stopping (the priority as for :meth:`enqueue`)."""
        self._requeue_after(key, delay, priority)

    def _requeue_after(self, key: str, delay: float, priority: int) -> None:
        queue = self._priority_queue
        if queue is not None:
            queue.add_after(key, delay, priority=priority)
        else:
            self._queue.add_after(key, delay)

    def _requeue_rate_limited(self, key: str, priority: int) -> None:
        """Queue ``key`` again after its rate limiter's delay, at the priority it was
        handed out with (controller-runtime's requeue keeps it)."""
        queue = self._priority_queue
        if queue is not None:
            queue.add_rate_limited(key, priority=priority)
        else:
            self._queue.add_rate_limited(key)

    # -- inspection --------------------------------------------------------------------

    @property
    def service_name(self) -> str:
        return f"controller {self.name}"

    @property
    def queue(self) -> RateLimitingQueue[str]:
        """The controller's work queue (for inspection; prefer :meth:`enqueue`): a
        :class:`~aioinformer.priority_queue.PriorityQueue` unless the controller was built
        with ``use_priority_queue=False``."""
        return self._queue

    def statistics(self) -> ControllerStatistics:
        """A frozen snapshot of the controller's state, counters and queue."""
        return ControllerStatistics(
            name=self.name,
            state=self.state,
            workers=0 if self._workers_runner is None else len(self._workers_runner),
            active=len(self._in_flight),
            reconciles=self._reconciles,
            successes=self._successes,
            failures=self._failures,
            requeues=self._requeues,
            queue=self._queue.statistics(),
            sync_error=self._sync_error,
            conflicts=self._conflicts,
            timeouts=self._timeouts,
            slow_reconciles=self._slow_reconciles,
        )

    def __repr__(self) -> str:
        return (
            f"<Controller {self.name!r} state={self.state.name} workers={self._workers}"
            f" active={len(self._in_flight)} depth={len(self._queue)}>"
        )

    # -- running -----------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] | None = None) -> None:
        """Wait for the informers to sync, then reconcile until cancelled or stopped.

        Stopping is graceful (see the module docstring). Returns normally after
        :meth:`stop`; re-raises the cancellation when cancelled. Raises
        :class:`~aioinformer.errors.CacheSyncError` when the informers did not sync within
        ``cache_sync_timeout`` or one stopped before it synced (no worker has started
        then; ``statistics().sync_error`` keeps it). ``task_status.started()`` (anyio's
        ``TaskGroup.start``) is signalled once the informers have synced and the workers
        start (the controller is ``RUNNING``); ``RuntimeError`` on a second run.
        """
        await super().run(task_status=task_status)

    async def _serve(self, *, task_status: TaskStatus[Any]) -> None:
        stop_requested = self._stop_requested
        self._mark_started()
        try:
            if not await self._wait_for_sync(stop_requested):
                return
            logger.info(
                "controller %s: caches synced, starting %s workers", self.name, self._workers
            )
            async with TaskRunner(name=f"controller {self.name}") as runner:
                self._workers_runner = runner
                task_status.started()
                for index in range(self._workers):
                    runner.start_soon(self._work(index), name=f"worker {index}")
                try:
                    await stop_requested.wait()
                finally:
                    await self._drain(runner)
        finally:
            self._workers_runner = None
            for informer, registration in self._watches:
                informer.remove_event_handler(registration)
            try:
                await finish_regardless(self._wait_handlers_stopped())
            finally:
                await finish_regardless(self._queue.aclose())

    def _request_stop(self) -> None:
        self._stop_requested.set()

    async def _wait_handlers_stopped(self) -> None:
        """Wait until each handler the run removed has stopped
        (``registration.wait_stopped()``): its delivery task has ended, after the call
        it was in returned (one in a worker thread included), so no call of its
        predicates, key function or mapping is left running once ``run()`` returns.
        Never hangs on an informer: the handler of one never started has no task, and
        one whose informer stopped had its task cancelled (a call in a worker thread is
        then left to finish on its own)."""
        for _, registration in self._watches:
            await registration.wait_stopped()

    async def _wait_for_sync(self, stop_requested: asyncio.Event) -> bool:
        """True once every handler of the controller synced; False when asked to stop
        first; raises :class:`CacheSyncError` past ``cache_sync_timeout`` or when an
        informer stops."""
        watched = [
            Watched.of(HandlerSync(informer, registration))
            for informer, registration in self._watches
        ]
        first, wait = await first_completed(
            stop_requested.wait(),
            wait_synced(
                watched,
                timeout=self._cache_sync_timeout,
                clock=self._clock,
                fail_fast=self._cache_sync_fail_fast,
            ),
        )
        if first == 0:
            return False
        try:
            wait.result()
        except CacheSyncError as error:
            self._sync_error = error
            logger.error("controller %s: no worker started: %s", self.name, error)
            raise
        return not stop_requested.is_set()

    async def _drain(self, runner: TaskRunner) -> None:
        """Stop taking keys, give in-flight reconciles ``drain_timeout``, cancel the rest.

        Shutting the queue down ends the idle workers (their ``get()`` raises
        :class:`ShutDown`) and makes the busy ones end after their reconcile. Returns only
        when every worker has ended, even if cancelled meanwhile (the cancellation cuts
        the grace period short and is re-raised then: no worker outlives ``run()``)."""
        if self.state is not State.STOPPING:
            self._state = State.STOPPING  # cancelled, not stopped: the same graceful stop
        self._queue.shut_down()
        if self._in_flight:
            logger.info(
                "controller %s: waiting up to %ss for %s reconciles to finish",
                self.name,
                self._drain_timeout,
                len(self._in_flight),
            )
        if not await runner.drain(self._drain_timeout, self._clock):
            logger.warning(
                "controller %s: cancelling %s reconciles still running: %s",
                self.name,
                len(self._cut_short),
                sorted(self._cut_short),
            )

    def _taking_keys(self) -> bool:
        return self._state is State.RUNNING

    async def _work(self, index: int) -> None:
        """One worker: take a key, reconcile it, record the outcome; until stopping."""
        queue = self._queue
        prioritized = self._priority_queue
        metrics = self._metrics
        in_flight = self._in_flight
        priority = 0
        while self._taking_keys():
            try:
                if prioritized is not None:
                    key, priority = await prioritized.get_with_priority()
                else:
                    key = await queue.get()
            except ShutDown:
                return
            if not self._taking_keys():
                queue.done(key)  # woken just as the controller stopped: take nothing new
                return
            in_flight[index] = key
            started = metrics.started()
            try:
                await self._process(key, started, priority)
            except asyncio.CancelledError:
                if not self._taking_keys():
                    self._cut_short.append(key)
                raise
            except Exception:
                # _process handles every outcome of a reconcile: this is a bug of ours.
                logger.exception("controller %s: worker %s failed", self.name, index)
                return
            finally:
                metrics.stopped()
                del in_flight[index]
                queue.done(key)
                for told in self._reconcile_ends:
                    told()

    async def _process(self, key: str, started: float, priority: int) -> None:
        """Reconcile ``key`` and act on the outcome; ``started`` is what the metrics
        recorder returned as the reconcile began, ``priority`` what the key was handed out
        with (a retry keeps it)."""
        queue = self._queue
        deadline: CancelAfter | None = None
        try:
            for guard in self._guards:
                if await guard(key):
                    queue.forget(key)  # handled before any reconcile (a shard's drain)
                    return
            if self._reconcile_timeout is not None:
                with CancelAfter(self._clock, self._reconcile_timeout) as deadline:
                    result = await self._reconcile(key)
            elif self._is_async:
                result = await self._reconcile(key)
            else:
                timer = self._timer
                began = timer()
                try:
                    result = self._reconcile(key)
                finally:
                    self._timed(key, timer() - began)
                if inspect.isawaitable(result):
                    result = await result
        except Requeue as requeue:
            result = requeue
        except Exception as error:  # noqa: BLE001 - logged with its traceback by _retry_failed
            self._reconciles += 1
            if deadline is not None and deadline.timed_out:
                self._failures += 1
                self._timeouts += 1
                self._metrics.failed(started, timed_out=True)
                logger.error(
                    "controller %s: reconcile of %s timed out after %gs and was cancelled"
                    " (retry %s)",
                    self.name,
                    key,
                    self._reconcile_timeout,
                    queue.num_requeues(key) + 1,
                )
                self._requeue_rate_limited(key, priority)
            else:
                self._retry_failed(key, error, started, priority)
            return
        self._reconciles += 1
        if result is not None and not isinstance(result, Requeue):
            self._retry_failed(key, self._wrong_return(key, result), started, priority)
            return
        if not isinstance(result, Requeue):
            self._successes += 1
            self._metrics.succeeded(started)
            queue.forget(key)
            return
        if result.err is not None:
            self._retry_failed(key, result.err, started, priority)
            return
        self._requeues += 1
        if result.after is not None and result.after > 0:
            self._metrics.requeued_after(started)
            queue.forget(key)
            self._requeue_after(key, result.after, priority)
        else:
            self._metrics.requeued(started)
            self._requeue_rate_limited(key, priority)

    def _wrong_return(self, key: str, result: object) -> TypeError:
        """The failure of a reconcile that returned neither ``None`` nor a ``Requeue``."""
        return TypeError(
            f"controller {self.name}: reconcile {self._reconcile_name} returned "
            f"{_brief(result)} for {key}; a reconcile returns None (done) or a Requeue "
            "(retry), or raises"
        )

    def _timed(self, key: str, seconds: float) -> None:
        """Warn once per slow episode that a sync reconcile held the event loop past the
        bound sync event handlers have (``SlowHandlerThresholds().loop``)."""
        limit = DEFAULT_SLOW_HANDLER_THRESHOLDS.loop
        if seconds <= limit:
            self._slow_episode = False
            return
        self._slow_reconciles += 1
        if self._slow_episode:
            return
        self._slow_episode = True
        logger.warning(
            "controller %s: sync reconcile %s held the event loop for %.3fs on %s (slow past "
            "%ss; further slow reconciles are counted, not logged, until one is fast again; "
            "make it async, or move its blocking work to a thread)",
            self.name,
            self._reconcile_name,
            seconds,
            key,
            limit,
        )

    def _retry_failed(self, key: str, error: BaseException, started: float, priority: int) -> None:
        """Count, log and rate-limit a reconcile that failed with ``error``: a 409 from a
        stale cache in one INFO line (and, in the metrics, as a ``requeue``: it is
        retried as one and is no failure), anything else at ERROR with its traceback."""
        queue = self._queue
        retry = queue.num_requeues(key) + 1
        if is_conflict(error):
            self._conflicts += 1
            self._metrics.requeued(started)
            logger.info(
                "controller %s: reconcile of %s hit a conflict, retrying (retry %s): %s",
                self.name,
                key,
                retry,
                error,
            )
        else:
            self._failures += 1
            self._metrics.failed(started)
            logger.error(
                "controller %s: reconcile of %s failed (retry %s)",
                self.name,
                key,
                retry,
                exc_info=error,
            )
        self._requeue_rate_limited(key, priority)


def _brief(value: object) -> str:
    """``value``'s repr, cut to a readable length, with its type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} (of type {type(value).__name__})"
