"""Fan-out from one informer to many handlers: :class:`SharedProcessor` and
:class:`ProcessorListener`.

Role: the last stage of the pipeline, after the cache (:mod:`aioinformer.indexer`). The
informer's single pop task applies each Deltas to the cache and hands the resulting
notifications to :meth:`SharedProcessor.distribute`, which appends them to the queue of
every registered :class:`ProcessorListener`. When the pop task applies a batch of keys
(``DeltaFIFO.pop_batch``), it distributes inside :meth:`SharedProcessor.batch`: the batch's
notifications are held and handed to each listener's queue with one call when the batch
ends, instead of one call per notification per listener. A listener is consumed one of
two ways, fixed when it is added: *pushed*, by one task that drains its queue into the
user's callbacks, or *pulled*, by an ``informer.events()`` stream awaiting
:meth:`ProcessorListener.next_notification`. A pushed listener whose callbacks are all
sync and run on the loop is *called directly* while nothing of it is queued: when a batch
ends, the processor calls it itself (:meth:`ProcessorListener.call_now`), every such
handler for one notification before the next, and no task is woken. A direct call past
the handler's bound starts a slow episode: the rest of the batch, and what follows until
the handler is fast again, goes to its queue and task, so a slow handler holds the
dispatcher for one call.

Input: :class:`Notification` named tuples ``(kind, a, b)``, ``kind`` a
:class:`NotificationKind`:

* ``(ADD, obj, is_in_initial_list)``
* ``(UPDATE, old, new)``
* ``(DELETE, obj_or_tombstone, None)``

Output: calls to ``on_add(obj, is_in_initial_list)``, ``on_update(old, new)`` and
``on_delete(obj)``. Each callback is bound once, when the listener is built, to a call
that knows whether to await it (sync or async) and whether to convert the objects first;
an ``on_update`` whose code never reads ``old`` is handed ``None`` for it instead of a
conversion.

Ordering: a listener delivers notifications in the order they were distributed, so every
handler sees the events of one object in order; batching changes when they reach the
queues, never their order. Handlers are independent: each has its own
queue and task, so a slow or failing handler delays only itself. A handler that raises is
logged with its name and keeps receiving later notifications.

Buffering: by default a listener's queue is unbounded (client-go's ring buffer grows until
memory runs out). ``max_pending=N`` bounds it with one of two policies (the queues
themselves live in :mod:`aioinformer._pipeline.pending`):

* ``"block"``: backpressure. Once the queue holds ``N`` notifications, the informer stops
  popping its DeltaFIFO until the handler drains below ``N`` (see
  :meth:`SharedProcessor.has_room` and :meth:`SharedProcessor.wait_for_room`). One pop may
  overshoot by the notifications of a single key, and the snapshot replayed to a late
  handler is queued whole. A batched pop takes no more keys than
  :meth:`SharedProcessor.room` allows, so it overshoots by at most one batch: in the worst
  case by the extra deltas of its keys (a key with three queued deltas gives three
  notifications), never by more than the notifications of the batch. A relist or a
  resync is one batch whatever its size (it reaches the cache in one step): the informer
  waits for room before it, and it may overshoot by its own notifications. Events keep
  accumulating in the DeltaFIFO meanwhile, where they are merged per key.
* ``"coalesce"``: once the queue holds ``N`` notifications, a new notification for a key that
  already has one pending is merged into it, keeping only the newest state: add+update is an
  add of the new object, update+update one update from the first old to the last new,
  add+delete vanishes, update+delete is the delete. A pending delete is never merged (the
  object may be re-created with a new uid). Past ``N``, a key adds an entry only when none
  of its pending ones can absorb it, so the queue holds at most ``N`` plus two entries per
  key (a pending delete and the one after it), and replaying what the handler received
  still yields the newest state of every object.

Resync: each listener has a resync period (0 = never). :meth:`SharedProcessor.start`
schedules every listener's first resync one period after the informer starts; a listener
added later counts from when it is added. :meth:`SharedProcessor.should_resync` runs at the
informer's check period, flags the listeners that are due, and schedules their next
resync; ``distribute(..., is_sync=True)`` then reaches only the flagged listeners. A new
listener starts flagged, as in client-go.

Task model: :meth:`SharedProcessor.run` owns a task group
(:class:`~aioinformer._kernel.runner.TaskRunner`) holding one task per pushed listener.
A listener added while it runs is put on a start queue that ``run()`` itself drains, so
no task is ever created from the caller's stack. Removing a listener
drops its undelivered notifications and lets a handler call already running finish;
cancelling ``run()`` cancels every listener task, including a handler call that never
returns (a call running in a worker thread, ``run_in_thread=True``, cannot be cancelled:
its task ends at once and leaves the call to finish on its own). As in every anyio task
group, the cancellation holds at each later await: a handler's cleanup that must await
goes under ``anyio.CancelScope(shield=True)``, and ``run()`` ends once it has.

Watching the handlers: each pushed call is timed with one clock read, and a call past the
handler's :class:`SlowHandlerThresholds` is logged once per slow episode (see below). The
processor stamps each hand-over to a listener with
one clock read (per batch, not per notification), so a listener knows when each entry was
queued; ``statistics()`` reports the delivery latency, queued to call returned, over the
last calls. With a :class:`HandlerMetricsProvider` installed, the same figures, the
pending count and the errors go to its metrics.

Slow calls: a call is timed with one clock read, as it returns (it started when the
previous call of the same delivery round returned), nothing else on the per-call path. A
sync callback run on the event loop holds the loop for its whole
duration, stalling every informer and handler on it, so its bound is short
(:attr:`SlowHandlerThresholds.loop`, 0.1 s by default, the figure client-go's slow
processing trace uses). An async callback, or a sync one run in a worker thread, only
delays its own handler, so its bound is on its total duration and long
(:attr:`SlowHandlerThresholds.total`, 5 s by default: well past an API round trip, well
under the minutes a stuck call would go unnoticed). A slow call is reported once per
*episode*: the first slow call warns, the following slow calls only count
(``slow_calls`` in the handler's statistics) until a call of that handler finishes under
its bound again, which ends the episode. A sync call is judged when it returns (until
then it holds the loop). An awaited call is also judged while it runs, each time
notifications are queued for its handler: one stuck on an await that never completes is
reported as "has been running for" once new events wait behind it.

Worker threads: with ``run_in_thread=True`` each sync callback runs through the event
loop's default executor, one call at a time per handler (the listener awaits each before
taking the next), so ordering is unchanged. Conversions (typed models, compact-cache
decodes) still run on the event loop, since the cache they read is not thread-safe. A
thread cannot be cancelled: a listener cancelled while its call runs in a thread ends at
once, leaving that call to finish in its thread (a warning names the handler), so a
stuck handler never holds up its informer's stop; the call's result is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.metrics import HandlerMetricsProvider
from aioinformer._kernel.runner import (
    TaskRunner,
    is_async_callable,
    reads_argument,
)
from aioinformer._pipeline.handlers import (
    DEFAULT_SLOW_HANDLER_THRESHOLDS,
    KIND_NAMES,
    LATENCY_WINDOW,
    HandlerFunc,
    handler_name,
    in_worker_thread,
    latency_summary,
    report_running_call,
    report_slow_call,
)
from aioinformer._pipeline.handlers import MINIMUM_RESYNC_PERIOD as MINIMUM_RESYNC_PERIOD
from aioinformer._pipeline.handlers import EventHandler as EventHandler
from aioinformer._pipeline.handlers import HandlerRegistration as HandlerRegistration
from aioinformer._pipeline.handlers import HandlerStatistics as HandlerStatistics
from aioinformer._pipeline.handlers import OverflowPolicy as OverflowPolicy
from aioinformer._pipeline.handlers import SlowHandlerThresholds as SlowHandlerThresholds
from aioinformer._pipeline.handlers import determine_resync_period as determine_resync_period
from aioinformer._pipeline.model_guard import (
    SkipDelivery,
    converted_deleted,
    converted_old,
)
from aioinformer._pipeline.pending import (
    CLOSED,
    CoalescingQueue,
    Notification,
    NotificationKind,
    PendingQueue,
)
from aioinformer.errors import InvalidObjectError

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterator
    from contextlib import AbstractContextManager

    from aioinformer._kernel.metrics import HandlerMetrics

__all__ = [
    "EventHandler",
    "HandlerMetricsProvider",
    "HandlerRegistration",
    "HandlerStatistics",
    "MINIMUM_RESYNC_PERIOD",
    "Notification",
    "NotificationKind",
    "OverflowPolicy",
    "ProcessorListener",
    "SharedProcessor",
    "SlowHandlerThresholds",
    "determine_resync_period",
]

logger = logging.getLogger(__name__)

_ADD: Final = NotificationKind.ADD


_BATCH: Final = 256
# How many notifications a listener delivers before yielding to the event loop, so a busy
# handler cannot starve the reflector or the other handlers.


# -- one handler's calls: binding, worker threads, slow calls, delivery latency ----------
#
# How a listener calls a single handler. bind_calls() settles once, at registration, how
# each callback is called (awaited or not, converted first or not, in a worker thread or
# on the event loop) and how long it may take before it counts as slow. The warning of a
# slow episode and the latency percentiles of HandlerStatistics are
# aioinformer._pipeline.handlers', with the rest of what a handler is outside delivery.
# The module docstring says how slow calls and worker threads behave.


Call: TypeAlias = "tuple[HandlerFunc, bool, bool, float]"
"""A callback bound for delivery: (function, is it awaited, does it take one argument,
seconds past which a call is slow)."""


def bind_calls(
    on_add: HandlerFunc | None,
    on_update: HandlerFunc | None,
    on_delete: HandlerFunc | None,
    convert: Callable[[Any], Any] | None,
    *,
    run_in_thread: bool = False,
    thresholds: SlowHandlerThresholds = DEFAULT_SLOW_HANDLER_THRESHOLDS,
    validates: bool = False,
) -> tuple[Call | None, Call | None, Call | None]:
    """The calls a listener makes, indexed by ``NotificationKind``; ``None`` where the
    handler skips that kind. Whether a callback is awaited, the conversion of typed
    informers and the slow bound are settled here once, so delivery does one lookup per
    notification.

    ``validates`` says ``convert`` may raise
    :class:`~aioinformer.errors.InvalidObjectError` (a typed informer's model): only then
    are the calls wrapped to skip or soften an invalid object, so the other handlers pay
    nothing for it per notification.

    Raises ``TypeError`` when ``run_in_thread`` is asked of an async callback: it already
    runs off the loop while it awaits, and a thread would not run its coroutine.
    """
    bound: list[Call | None] = []
    for kind, fn in enumerate((on_add, on_update, on_delete)):
        if fn is None:
            bound.append(None)
            continue
        is_async = is_async_callable(fn)
        target = fn
        if run_in_thread:
            if is_async:
                raise TypeError(
                    f"run_in_thread=True needs sync callbacks; on_{KIND_NAMES[kind]} "
                    f"({handler_name(None, fn)}) is async"
                )
            target = in_worker_thread(fn)
        limit = thresholds.total if is_async or run_in_thread else thresholds.loop
        bound.append(
            (
                _converting(kind, fn, target, convert, validates=validates),
                is_async or run_in_thread,
                kind == 2,
                limit,
            )
        )
    return bound[0], bound[1], bound[2]


def _converting(
    kind: int,
    fn: HandlerFunc,
    target: HandlerFunc,
    convert: Callable[[Any], Any] | None,
    *,
    validates: bool,
) -> HandlerFunc:
    """``target`` with its objects converted first (typed informers); the wrapper returns
    whatever ``target`` returns, so an async callback's coroutine is still awaited by the
    caller. ``fn`` is the user's callback, inspected for the arguments it reads.

    With ``validates``, an object that does not validate into the informer's model
    raises :class:`SkipDelivery` for an add, or an update's new object, before ``target``
    is called; an update's invalid ``old`` becomes ``None``, an invalid deleted object a
    tombstone without a last state (:func:`converted_old`, :func:`converted_deleted`)."""
    if convert is None:
        return target
    if not validates:
        if kind == 0:
            return lambda obj, initial: target(convert(obj), initial)
        if kind == 2:
            return lambda obj: target(convert(obj))
        if reads_argument(fn, 0):
            return lambda old, new: target(convert(old), convert(new))
        # The callback never reads ``old``: it gets None instead of a conversion (in a
        # compact cache, a decode) nobody would look at.
        return lambda old, new: target(None, convert(new))
    if kind == 2:
        return lambda obj: target(converted_deleted(convert, obj))

    def new_state(obj: Any) -> Any:
        try:
            return convert(obj)
        except InvalidObjectError:
            raise SkipDelivery from None

    if kind == 0:
        return lambda obj, initial: target(new_state(obj), initial)
    if reads_argument(fn, 0):
        return lambda old, new: target(converted_old(convert, old), new_state(new))
    return lambda old, new: target(None, new_state(new))


# -- the listeners and the processor -----------------------------------------------------


class ProcessorListener:
    """One handler's queue, delivery and resync schedule.

    Built by the informer; users hold it as a :class:`HandlerRegistration`. ``on_add``,
    ``on_update`` and ``on_delete`` may each be ``None`` (that kind is skipped), a function
    or a coroutine function. It is consumed either by :meth:`run` (pushed) or by
    :meth:`next_notification` (pulled), never both.
    """

    def __init__(
        self,
        *,
        name: str,
        on_add: HandlerFunc | None = None,
        on_update: HandlerFunc | None = None,
        on_delete: HandlerFunc | None = None,
        requested_resync_period: float = 0.0,
        resync_period: float = 0.0,
        now: float = 0.0,
        upstream_has_synced: Callable[[], bool] = lambda: True,
        max_pending: int | None = None,
        overflow: OverflowPolicy = "block",
        key_func: Callable[[Any], Hashable] | None = None,
        convert: Callable[[Any], Any] | None = None,
        validates: bool = False,
        run_in_thread: bool = False,
        slow_thresholds: SlowHandlerThresholds = DEFAULT_SLOW_HANDLER_THRESHOLDS,
        metrics: HandlerMetrics | None = None,
    ) -> None:
        if max_pending is not None and max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        if overflow not in ("block", "coalesce"):
            raise ValueError(f"overflow must be 'block' or 'coalesce', got {overflow!r}")
        if overflow == "coalesce" and max_pending is not None and key_func is None:
            raise ValueError("overflow='coalesce' needs a key_func")
        self.name = name
        self.convert = convert
        """Applied to each object before delivery (typed informers); None for raw. With
        ``validates``, it may raise ``InvalidObjectError`` (a model's validation)."""
        self._calls = bind_calls(
            on_add,
            on_update,
            on_delete,
            convert,
            run_in_thread=run_in_thread,
            thresholds=slow_thresholds,
            validates=validates,
        )
        self.run_in_thread = run_in_thread
        self.slow_thresholds = slow_thresholds
        self._upstream_has_synced = upstream_has_synced
        # has_synced() once closed: closing drops the initial adds still queued.
        self._synced_when_closed = False
        self.max_pending = max_pending
        self.overflow: OverflowPolicy = overflow

        # Undelivered notifications. Its initial_pending (initial-list adds not yet
        # handled) is decremented here once a call returns, or when a pull consumer
        # takes one.
        self._queue: PendingQueue
        if max_pending is not None and overflow == "coalesce":
            assert key_func is not None
            self._queue = CoalescingQueue(max_pending=max_pending, key_func=key_func)
        else:
            self._queue = PendingQueue(max_pending=max_pending)

        self.requested_resync_period = requested_resync_period
        self.resync_period = resync_period
        self.next_resync = now + resync_period
        """When this listener is next due a resync (clock seconds). Written only by its
        :class:`SharedProcessor` once added."""

        self.delivered = 0
        self.failed = 0
        self.slow_calls = 0
        # True from a slow call until a call is under its bound again: only the first
        # slow call of such an episode is logged.
        self._slow_episode = False
        # While an awaited call runs: its (kind, start, bound), for stamp() to judge.
        self._awaiting: tuple[int, float, float] | None = None
        # Entries taken from the queue as None (coalesced away). With ``delivered`` it
        # numbers every entry ever taken: the next one taken is entry
        # ``delivered + _skipped`` since the listener was built.
        self._skipped = 0
        # (entries queued so far, clock time): the entries numbered below the first count
        # were queued by that time. One per stamp() (one per batch the processor hands
        # over), dropped once those entries are taken; None for a pulled listener, which
        # has no calls to time.
        self._stamps: deque[tuple[int, float]] | None = None
        # Delivery latency of the last LATENCY_WINDOW calls, in seconds.
        self._latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self._timer: Callable[[], float] = time.perf_counter
        self.metrics = metrics

        # Whether the dispatcher may call this handler itself (see call_now): every
        # callback it has runs on the loop and is not awaited. Set once pushed (a pulled
        # listener has no calls), by time_deliveries().
        self._callable_directly = False
        self._all_sync = all(call is None or not call[1] for call in self._calls)

        # The delivery task, once run() began, and set as it ends: what wait_stopped()
        # waits for (a pulled or direct-called listener has no call of its own running
        # once it is closed).
        self._task: asyncio.Task[Any] | None = None
        self._run_ended = asyncio.Event()

        self.add: Callable[[Notification], None] = self._queue.put_nowait
        """Queue one notification; never blocks (the "block" bound is enforced upstream,
        by the informer waiting in :meth:`SharedProcessor.wait_for_room`)."""
        self.add_many: Callable[[list[Notification], int], None] = self._queue.put_many
        """Queue several notifications, of which the second argument are initial-list
        adds, waking the consumer once; never blocks."""

    # -- registration API -------------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the informer has synced and this handler has been handed every
        object of the initial list (or, for a late handler, of its snapshot). Once
        closed: whether it had when it was closed."""
        if self._queue.closed:
            return self._synced_when_closed
        return self._upstream_has_synced() and self._queue.initial_pending <= 0

    @property
    def initial_pending(self) -> int:
        """Initial-list adds queued and not yet handled."""
        return self._queue.initial_pending

    async def wait_initial_handled(self) -> None:
        """Return once :attr:`initial_pending` is 0 or the listener is closed."""
        await asyncio.shield(self._queue.initial_handled())

    async def wait_closed(self) -> None:
        """Return once the listener is closed (removed, or its informer stopped)."""
        await asyncio.shield(self._queue.closing())

    async def wait_stopped(self) -> None:
        """Return once the listener is closed and no call of its handler runs any more:
        its delivery task has ended (after the call it was in returned, for a removed
        handler; cancelled, for a stopped informer). A call in a worker thread that its
        stopping informer left behind (see the module notes) is not waited for.

        Raises ``RuntimeError`` when called from the handler's own delivery task, which
        would wait for itself."""
        if self._task is not None and self._task is asyncio.current_task():
            raise RuntimeError(
                f"handler {self.name!r} cannot wait for its own stop from inside its call"
            )
        await self.wait_closed()
        if self._task is not None:
            await self._run_ended.wait()

    @property
    def pending(self) -> int:
        """Notifications queued and not yet delivered."""
        return len(self._queue)

    @property
    def coalesced(self) -> int:
        """Notifications merged into a pending one (``overflow="coalesce"`` only)."""
        return self._queue.coalesced

    @property
    def closed(self) -> bool:
        """True once removed or stopped: no more deliveries start."""
        return self._queue.closed

    def statistics(self) -> HandlerStatistics:
        """Counters of this handler, as a frozen record."""
        p50, p99, worst = latency_summary(self._latencies)
        return HandlerStatistics(
            name=self.name,
            pending=self.pending,
            delivered=self.delivered,
            failed=self.failed,
            coalesced=self.coalesced,
            max_pending=self.max_pending,
            overflow=self.overflow,
            resync_period=self.resync_period,
            slow_calls=self.slow_calls,
            latency_p50=p50,
            latency_p99=p99,
            latency_max=worst,
        )

    def time_deliveries(self, timer: Callable[[], float]) -> None:
        """Record delivery latency from now on, read from ``timer`` (seconds), and count
        what is queued already as queued now. For a pushed listener; called by its
        :class:`SharedProcessor` when it is added."""
        self._timer = timer
        self._stamps = deque()
        self._callable_directly = self._all_sync
        self.stamp(timer())

    def stamp(self, now: float) -> None:
        """Note that every notification queued so far was queued by ``now`` (a reading of
        the timer given to :meth:`time_deliveries`); the producer calls it after queueing.
        Does nothing for a listener whose deliveries are not timed."""
        stamps = self._stamps
        if stamps is not None:
            stamps.append((self.delivered + self._skipped + len(self._queue.items), now))
        awaiting = self._awaiting
        if awaiting is not None and not self._slow_episode:
            self._slow_episode = report_running_call(
                self.name, awaiting, now, threaded=self.run_in_thread
            )
        metrics = self.metrics
        if metrics is not None:
            metrics.pending.set(len(self._queue))

    def close(self) -> None:
        """Stop delivering: drop undelivered notifications and end the delivery loop once
        a call already running returns. Idempotent."""
        if not self._queue.closed:
            self._synced_when_closed = self.has_synced()
        self._queue.close()
        if self._stamps is not None:
            self._stamps.clear()
        if self.metrics is not None:
            self.metrics.pending.set(0)

    def has_room(self) -> bool:
        """For ``overflow="block"``: False while the queue is at its bound."""
        return self._queue.has_room()

    def room(self) -> int | None:
        """For ``overflow="block"``: how many more notifications fit under the bound
        (0 when at or over it); ``None`` when unbounded or closed."""
        max_pending = self.max_pending
        if max_pending is None or self._queue.closed:
            return None
        return max(0, max_pending - len(self._queue))

    async def wait_for_room(self) -> None:
        """Wait until the queue is below ``max_pending`` (or the listener is closed)."""
        await self._queue.wait_for_room()

    def takes_direct_calls(self) -> bool:
        """Whether the dispatcher may deliver to this handler by calling it now: it is
        pushed, its callbacks are sync and run on the loop, nothing of it is queued (the
        order of its notifications stays), and it is not in a slow episode."""
        return self._callable_directly and not self._queue.items and not self._slow_episode

    def call_now(self, notification: Notification, now: float) -> bool:
        """Call the handler for ``notification`` (handed over at ``now``, a reading of the
        delivery timer) from the dispatcher's task, as its own task would: an exception
        is logged and counted, the call timed, the delivery latency recorded; no task is
        woken. False once the call was past the handler's bound: a slow episode starts,
        and the dispatcher queues what follows for the handler's own task, so one slow
        handler holds the dispatcher for one call, not a whole batch.

        Only when :meth:`takes_direct_calls` says so."""
        self.delivered += 1
        kind, a, b = notification
        call = self._calls[kind]
        if call is None:
            return True
        fn, _, unary, limit = call
        timer = self._timer
        started = timer()
        try:
            if unary:
                fn(a)
            else:
                fn(a, b)
        except SkipDelivery:
            pass
        except (Exception, asyncio.CancelledError):  # noqa: BLE001 - logged by _failed
            # A sync handler cannot be cancelled: a CancelledError out of it is its own,
            # a failure like any other, never the dispatcher's end.
            self._failed(kind)
        ended = timer()
        latency = ended - now
        self._latencies.append(latency)
        if self.metrics is not None:
            self.metrics.latency.observe(latency)
        if ended - started <= limit:
            return True
        self._slow(kind, ended - started, limit, awaited=False)
        return False

    def _failed(self, kind: int, *, stray: bool = False) -> None:
        """Count a call that raised and log it with its traceback; called from the
        ``except`` block that caught it, by both ways of delivering (:meth:`run` and
        :meth:`call_now`). ``stray``: a ``CancelledError`` nobody asked for."""
        self.failed += 1
        if self.metrics is not None:
            self.metrics.errors.inc()
        logger.exception(
            "event handler %s failed on %s%s",
            self.name,
            KIND_NAMES[kind],
            " with a stray cancellation" if stray else "",
        )

    def _slow(self, kind: int, seconds: float, limit: float, *, awaited: bool) -> None:
        """Count a call that ran past its bound; the first of an episode is logged."""
        self.slow_calls += 1
        if not self._slow_episode:
            self._slow_episode = True
            report_slow_call(
                self.name, kind, seconds, limit, awaited=awaited, threaded=self.run_in_thread
            )

    # -- consumer side ------------------------------------------------------------------

    async def next_notification(self) -> Notification | None:
        """Take the next notification, waiting for one; ``None`` once closed.

        The pull side of a listener without a delivery task (``informer.events()``). The
        notification counts as delivered (and an initial-list add as handled) when taken.
        """
        pending = self._queue
        while True:
            if pending.closed:
                return None
            notification = await pending.get()
            if notification is CLOSED:
                return None
            if notification is not None:
                self.delivered += 1
                if notification[2] is True and notification[0] == _ADD:
                    pending.initial_pending -= 1
                    if pending.initial_waiter is not None:
                        pending.release_initial()
                return notification  # type: ignore[no-any-return]

    async def run(self) -> None:
        """Deliver queued notifications until closed or cancelled."""
        self._task = asyncio.current_task()
        try:
            await self._deliver()
        finally:
            self._run_ended.set()

    async def _deliver(self) -> None:
        pending = self._queue
        items = pending.items
        get = pending.get
        take = pending.get_nowait
        calls = self._calls
        timer = self._timer
        stamps = self._stamps if self._stamps is not None else deque()
        latencies = self._latencies
        metrics = self.metrics
        # Entries taken so far (this task is the only taker), and the stamp of the next
        # entry to take while it is known: its count and time; a count of 0 when none is.
        taken = self.delivered + self._skipped
        stamp_end = 0
        stamp_time = 0.0
        task = asyncio.current_task()
        assert task is not None
        while True:
            # A round: the first entry (waited for in asyncio.Queue.get when there is
            # none), then what is queued, up to _BATCH, before yielding to the loop.
            notification = take() if items else await get()
            # One clock read per call: each call starts when the previous one of this
            # round ended (what lies between, taking the next entry, is part of it).
            ended = timer()
            for count in range(_BATCH):
                if count:
                    if not items:
                        break
                    notification = take()
                if notification is CLOSED:
                    return
                taken += 1
                if notification is None:
                    self._skipped += 1
                    continue
                self.delivered += 1
                kind, a, b = notification
                call = calls[kind]
                if call is not None:
                    fn, is_async, unary, limit = call
                    started = ended
                    try:
                        if is_async:
                            self._awaiting = (kind, started, limit)
                            await (fn(a) if unary else fn(a, b))
                        elif unary:
                            fn(a)
                        else:
                            fn(a, b)
                    except SkipDelivery:
                        # The object failed the informer's model: already reported
                        # (and counted) by its guard, and no fault of the handler.
                        pass
                    except Exception:  # noqa: BLE001 - logged by _failed
                        self._failed(kind)
                    except asyncio.CancelledError:
                        if task.cancelling():
                            raise
                        # Nobody cancelled this task: the handler let a CancelledError out
                        # of something it awaited. Ending here would silently stop this
                        # handler's deliveries for good, so it is a failure like any other.
                        self._failed(kind, stray=True)
                    ended = timer()
                    if is_async:
                        self._awaiting = None
                    if ended - started > limit:
                        self._slow(kind, ended - started, limit, awaited=is_async)
                    elif self._slow_episode:
                        self._slow_episode = False
                    if taken > stamp_end:
                        # The entry just taken (number taken - 1) was queued by the time
                        # of the first stamp counting past it; earlier stamps are spent.
                        while stamps and stamps[0][0] < taken:
                            stamps.popleft()
                        stamp_end, stamp_time = stamps[0] if stamps else (0, 0.0)
                    if stamp_end:
                        latency = ended - stamp_time
                        latencies.append(latency)
                        if metrics is not None:
                            metrics.latency.observe(latency)
                            metrics.pending.set(len(pending))
                if b is True and kind == _ADD:
                    # An initial-list add counts as handled once its call has returned
                    # (or raised), as client-go's sync tracker does.
                    pending.initial_pending -= 1
                    if pending.initial_waiter is not None:
                        pending.release_initial()
                if pending.closed:
                    return
            # Stamps of entries without a call (a kind the handler skips) are dropped here.
            while stamps and stamps[0][0] <= taken:
                stamps.popleft()
            if items:
                await asyncio.sleep(0)

    def __repr__(self) -> str:
        bound = "" if self.max_pending is None else f" max_pending={self.max_pending}"
        return (
            f"<ProcessorListener {self.name!r} pending={self.pending}{bound}"
            f" resync={self.resync_period}s{' closed' if self.closed else ''}>"
        )


def _call_in_turn(
    listeners: list[ProcessorListener],
    notifications: list[Notification],
    now: float,
    *,
    release: bool,
) -> None:
    """Call ``listeners`` for each of ``notifications`` in turn (every handler for one
    notification, then the next). With ``release`` (the list is the caller's to change),
    each notification is dropped from the list once all have had it: what it holds then
    dies with it, young, instead of a whole batch of objects living until the end of the
    batch. A listener whose call
    was slow, or that was removed meanwhile, is left out of the rest; what it did not get
    is queued for its own task."""
    active = listeners
    for index, notification in enumerate(notifications):
        slowed: list[ProcessorListener] | None = None
        for listener in active:
            if listener.closed or not listener.call_now(notification, now):
                if slowed is None:
                    slowed = []
                slowed.append(listener)
        if slowed is not None:
            rest = notifications[index + 1 :]
            for listener in slowed:
                if rest and not listener.closed:
                    listener.add_many(rest, _initial_adds(rest))
                    listener.stamp(now)
            active = [listener for listener in active if listener not in slowed]
            if not active:
                return
        if release:
            notifications[index] = None  # type: ignore[call-overload]


def _initial_adds(notifications: list[Notification]) -> int:
    return sum(1 for n in notifications if n[2] is True and n[0] == _ADD)


class _Batch:
    """The context manager :meth:`SharedProcessor.batch` returns (one per processor)."""

    __slots__ = ("_processor",)

    def __init__(self, processor: SharedProcessor) -> None:
        self._processor = processor

    def __enter__(self) -> None:
        self._processor._begin_batch()

    def __exit__(self, *exc_info: object) -> None:
        self._processor._end_batch()


class SharedProcessor:
    """The set of listeners of one informer, their tasks and their resync schedule."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock or default_clock
        # What handler calls and delivery latency are timed with: the cheapest monotonic
        # clock, unless a clock was injected (tests drive that one by hand).
        self._timer: Callable[[], float] = (
            time.perf_counter if self._clock is default_clock else self._clock.monotonic
        )
        # listener -> "due for resync at the last check". Insertion-ordered; a listener is
        # here iff it is registered and not closed. New listeners start flagged.
        self._listeners: dict[ProcessorListener, bool] = {}
        # Listeners with overflow="block" and a bound: the ones has_room() checks.
        self._blocking: list[ProcessorListener] = []
        # Pushed listeners still without a delivery task, oldest first; only run() takes
        # from it, and _listener_added is set whenever it gains one.
        self._to_start: deque[ProcessorListener] = deque()
        self._listener_added = asyncio.Event()
        # True once start() ran: from then on a new listener's first resync is scheduled
        # from the clock when it is added.
        self._resync_started = False
        self._stopped = False
        # Inside batch(): every notification distributed so far, in order, not yet handed
        # to the listeners; None outside a batch.
        self._held: list[Notification] | None = None
        # Inside batch(), once a resync update was held: the held notifications without
        # the resync updates, for the listeners not due a resync; else None.
        self._held_unsynced: list[Notification] | None = None
        self._batch = _Batch(self)

    def __len__(self) -> int:
        return len(self._listeners)

    def __iter__(self) -> Iterator[ProcessorListener]:
        return iter(list(self._listeners))

    def __contains__(self, listener: object) -> bool:
        return listener in self._listeners

    def start(self, now: float) -> None:
        """Schedule every listener's first resync one period after ``now`` (the clock's
        time when the informer starts); listeners added later count from when they are
        added."""
        self._resync_started = True
        for listener in self._listeners:
            listener.next_resync = now + listener.resync_period

    def add_listener(self, listener: ProcessorListener, *, start: bool = True) -> None:
        """Register a listener (flagged for resync). ``start=False`` leaves it without a
        delivery task: its consumer pulls with ``next_notification()``."""
        if self._held:
            # The caller took the new listener's snapshot from a cache that already holds
            # what was held so far: those notifications are not the new listener's.
            self._flush()
        self._listeners[listener] = True
        if listener.max_pending is not None and listener.overflow == "block":
            self._blocking.append(listener)
        if self._resync_started:
            listener.next_resync = self._clock.monotonic() + listener.resync_period
        if start:
            listener.time_deliveries(self._timer)
            self._to_start.append(listener)
            self._listener_added.set()

    def remove_listener(self, listener: ProcessorListener) -> None:
        """Unregister a listener and drop its undelivered notifications. A handler call
        already running finishes. Removing an unknown listener does nothing."""
        if self._listeners.pop(listener, None) is None:
            return
        if listener in self._blocking:
            self._blocking.remove(listener)
        listener.close()

    def distribute(self, notification: Notification, is_sync: bool) -> None:
        """Queue ``notification`` on every listener, or, for a resync update
        (``is_sync``), only on those flagged due at the last resync check.

        Inside :meth:`batch`, the notification is held and handed over when the batch
        ends."""
        held = self._held
        if held is not None:
            held.append(notification)
            unsynced = self._held_unsynced
            if is_sync:
                if unsynced is None:
                    self._held_unsynced = held[:-1]
            elif unsynced is not None:
                unsynced.append(notification)
            return
        now = self._timer()
        if is_sync:
            for listener, due in self._listeners.items():
                if due:
                    listener.add(notification)
                    listener.stamp(now)
        else:
            for listener in self._listeners:
                listener.add(notification)
                listener.stamp(now)

    def batch(self) -> AbstractContextManager[None]:
        """A context in which :meth:`distribute` holds notifications and hands them to
        every listener at once when the context exits (even by an exception).

        For a consumer that applies many keys' deltas in one go (``DeltaFIFO.pop_batch``):
        each listener's queue takes the whole batch with one call and its consumer is
        woken once, instead of once per notification per listener. Every listener still
        receives the same notifications in the same order. A listener added during the
        batch receives only what is distributed after it was added; one removed during
        the batch receives nothing more. Batches do not nest.
        """
        return self._batch

    def _begin_batch(self) -> None:
        if self._held is not None:
            raise RuntimeError("SharedProcessor.batch() does not nest")
        self._held = []

    def _end_batch(self) -> None:
        self._flush()
        self._held = None

    def _flush(self) -> None:
        """Hand the held notifications to the listeners and start holding anew."""
        held = self._held
        if not held:
            return
        unsynced = self._held_unsynced
        self._held = []
        self._held_unsynced = None
        # Counted once for every queue; resync updates are never initial-list adds.
        initial_adds = _initial_adds(held)
        now = self._timer()
        # Queued first, for the handlers' own tasks; then the handlers that take direct
        # calls are called here. A snapshot: a handler called from here may add or remove
        # handlers (one added meanwhile took its snapshot from a cache that holds these
        # changes already).
        direct: list[ProcessorListener] = []
        for listener, due in tuple(self._listeners.items()):
            notifications = held if unsynced is None or due else unsynced
            if listener.takes_direct_calls():
                if notifications is held:
                    direct.append(listener)
                else:
                    _call_in_turn([listener], notifications, now, release=False)
            elif not listener.closed:
                listener.add_many(notifications, initial_adds)
                listener.stamp(now)
        if direct:
            _call_in_turn(direct, held, now, release=True)

    def has_room(self) -> bool:
        """False while some ``"block"`` listener is at its bound: the informer then waits
        in :meth:`wait_for_room` before popping more."""
        blocking = self._blocking
        return not blocking or all(listener.has_room() for listener in blocking)

    def room(self, limit: int) -> int:
        """How many keys the informer may pop next: ``limit``, lowered to the room left
        in the fullest ``"block"`` listener (0 when one is at its bound).

        A listener gets at most one notification per delta, so a batch of no more keys
        than this overshoots a ``"block"`` bound by at most the batch's deltas beyond one
        per key (a key with three queued deltas gives up to three notifications).
        """
        for listener in self._blocking:
            room = listener.room()
            if room is not None and room < limit:
                limit = room
        return limit

    async def wait_for_room(self) -> None:
        """Wait until every ``"block"`` listener is below its bound."""
        for listener in list(self._blocking):
            await listener.wait_for_room()

    def should_resync(self) -> bool:
        """Flag the listeners whose resync is due now and schedule their next one.

        Called by the reflector at the informer's resync check period; True when at least
        one listener is due (the reflector then resyncs the DeltaFIFO).
        """
        if self._held:
            # Held notifications were distributed under the flags of the last check.
            self._flush()
        now = self._clock.monotonic()
        any_due = False
        for listener in self._listeners:
            period = listener.resync_period
            due = period != 0 and now >= listener.next_resync
            self._listeners[listener] = due
            if due:
                any_due = True
                listener.next_resync = now + period
        return any_due

    def resync_check_period_changed(self, check_period: float) -> None:
        """Recompute every listener's period for a new (smaller) check period."""
        for listener in self._listeners:
            listener.resync_period = determine_resync_period(
                listener.requested_resync_period, check_period
            )

    def statistics(self) -> tuple[HandlerStatistics, ...]:
        """Per-handler counters, in registration order."""
        return tuple(listener.statistics() for listener in self._listeners)

    async def run(self) -> None:
        """Run every pushed listener's delivery task until cancelled; then close them all.

        Listeners added before or while it runs get their task from here, in the order
        they were added.
        """
        if self._stopped:
            raise RuntimeError("a SharedProcessor runs once")
        to_start = self._to_start
        added = self._listener_added
        try:
            async with TaskRunner(name="handler") as handlers:
                while True:
                    while to_start:
                        listener = to_start.popleft()
                        if listener in self._listeners:
                            handlers.start_soon(listener.run(), name=listener.name)
                    added.clear()
                    await added.wait()
        finally:
            self.stop()

    def stop(self) -> None:
        """Close every listener (ends ``events()`` streams); later adds are refused by the
        informer. Idempotent."""
        self._stopped = True
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()
        self._blocking.clear()
        self._to_start.clear()

    def __repr__(self) -> str:
        return f"<SharedProcessor listeners={len(self._listeners)}>"


if not TYPE_CHECKING:  # type checkers report the old names as missing, as they should
    from aioinformer._kernel.moved import moved_names

    __getattr__ = moved_names(__name__)
