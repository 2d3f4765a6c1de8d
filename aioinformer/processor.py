"""Fan-out from one informer to many handlers: :class:`SharedProcessor` and
:class:`ProcessorListener`.

Role: the last stage of the pipeline, after the cache (:mod:`aioinformer.indexer`). The
informer's single pop task applies each Deltas to the cache and hands the resulting
notifications to :meth:`SharedProcessor.distribute`, which appends them to the queue of
every registered :class:`ProcessorListener`. A listener is consumed one of two ways, fixed
when it is added: *pushed*, by one task that drains its queue into the user's callbacks,
or *pulled*, by an ``informer.events()`` stream awaiting
:meth:`ProcessorListener.next_notification`.

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
handler sees the events of one object in order. Handlers are independent: each has its own
queue and task, so a slow or failing handler delays only itself. A handler that raises is
logged with its name and keeps receiving later notifications.

Buffering: by default a listener's queue is unbounded (client-go's ring buffer grows until
memory runs out). ``max_pending=N`` bounds it with one of two policies (the queues
themselves live in :mod:`aioinformer._pending`):

* ``"block"``: backpressure. Once the queue holds ``N`` notifications, the informer stops
  popping its DeltaFIFO until the handler drains below ``N`` (see
  :meth:`SharedProcessor.has_room` and :meth:`SharedProcessor.wait_for_room`). One pop may
  overshoot by the notifications of a single key, and the snapshot replayed to a late
  handler is queued whole. Events keep accumulating in the DeltaFIFO meanwhile, where they
  are merged per key.
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

Task model: :meth:`SharedProcessor.run` owns an ``asyncio.TaskGroup`` holding one task per
pushed listener. A listener added while it runs is put on a start queue that ``run()``
itself drains, so no task is ever created from the caller's stack. Removing a listener
drops its undelivered notifications and lets a handler call already running finish;
cancelling ``run()`` cancels every listener task, including a handler call that never
returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal

from aioinformer._clock import Clock, default_clock
from aioinformer._pending import CoalescingQueue, Notification, NotificationKind, PendingQueue
from aioinformer._runner import is_async_callable, reads_argument

__all__ = [
    "ADD",
    "DELETE",
    "HandlerRegistration",
    "HandlerStatistics",
    "MINIMUM_RESYNC_PERIOD",
    "Notification",
    "NotificationKind",
    "OverflowPolicy",
    "ProcessorListener",
    "SharedProcessor",
    "UPDATE",
    "determine_resync_period",
]

logger = logging.getLogger(__name__)

# The kinds under their older module-level names, kept importable from here.
ADD: Final = NotificationKind.ADD
UPDATE: Final = NotificationKind.UPDATE
DELETE: Final = NotificationKind.DELETE

_KIND_NAMES: Final = ("add", "update", "delete")

MINIMUM_RESYNC_PERIOD: Final = 1.0
"""Handlers may not ask for resyncs more often than this (seconds)."""

_BATCH: Final = 256
# How many notifications a listener delivers before yielding to the event loop, so a busy
# handler cannot starve the reflector or the other handlers.

OverflowPolicy = Literal["block", "coalesce"]

HandlerFunc = Callable[..., Any]


def determine_resync_period(desired: float, check: float) -> float:
    """The resync period a handler gets for a ``desired`` period, given the informer's
    resync check period (both in seconds; 0 disables).

    An informer that does not resync (``check == 0``) gives every handler 0, and a handler
    cannot resync more often than the informer checks.
    """
    if desired == 0:
        return 0.0
    if check == 0:
        logger.warning(
            "resync period %ss ignored: this informer was created without resync", desired
        )
        return 0.0
    if desired < check:
        logger.warning("resync period %ss raised to the resync check period %ss", desired, check)
        return check
    return desired


@dataclass(frozen=True, slots=True)
class HandlerStatistics:
    """A snapshot of one handler's delivery counters."""

    name: str
    """The handler's name (its ``name=`` or its function's qualified name)."""
    pending: int
    """Notifications queued and not yet delivered."""
    delivered: int
    """Notifications handed to the handler (including those it failed on)."""
    failed: int
    """Calls that raised."""
    coalesced: int
    """Notifications merged into a pending one (``overflow="coalesce"`` only)."""
    max_pending: int | None
    """The queue bound, or ``None`` for unbounded."""
    overflow: OverflowPolicy
    """What happens at the bound."""
    resync_period: float
    """The effective resync period in seconds (0 = never)."""


_Call = tuple[HandlerFunc, bool, bool]
# A callback bound for delivery: (function, is it async, does it take one argument).


def _bind_calls(
    on_add: HandlerFunc | None,
    on_update: HandlerFunc | None,
    on_delete: HandlerFunc | None,
    convert: Callable[[Any], Any] | None,
) -> tuple[_Call | None, _Call | None, _Call | None]:
    """The calls a listener makes, indexed by :class:`NotificationKind`; ``None`` where the
    handler skips that kind. Whether a callback is async, and the conversion of typed
    informers, are settled here once, so delivery does one lookup per notification."""
    add: _Call | None = None
    update: _Call | None = None
    delete: _Call | None = None
    if convert is None:
        if on_add is not None:
            add = (on_add, is_async_callable(on_add), False)
        if on_update is not None:
            update = (on_update, is_async_callable(on_update), False)
        if on_delete is not None:
            delete = (on_delete, is_async_callable(on_delete), True)
        return add, update, delete
    # Typed informers validate into a model on delivery; the wrapper returns whatever the
    # callback returns, so an async callback's coroutine is still awaited by the caller.
    if on_add is not None:
        add_fn = on_add
        add = (lambda obj, initial: add_fn(convert(obj), initial), is_async_callable(on_add), False)
    if on_update is not None:
        update_fn = on_update
        if reads_argument(on_update, 0):
            update = (
                lambda old, new: update_fn(convert(old), convert(new)),
                is_async_callable(on_update),
                False,
            )
        else:
            # The callback never reads ``old``: it gets None instead of a conversion
            # (in a compact cache, a decode) nobody would look at.
            update = (
                lambda old, new: update_fn(None, convert(new)),
                is_async_callable(on_update),
                False,
            )
    if on_delete is not None:
        delete_fn = on_delete
        delete = (lambda obj: delete_fn(convert(obj)), is_async_callable(on_delete), True)
    return add, update, delete


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
    ) -> None:
        if max_pending is not None and max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        if overflow not in ("block", "coalesce"):
            raise ValueError(f"overflow must be 'block' or 'coalesce', got {overflow!r}")
        if overflow == "coalesce" and max_pending is not None and key_func is None:
            raise ValueError("overflow='coalesce' needs a key_func")
        self.name = name
        self.convert = convert
        """Applied to each object before delivery (typed informers); None for raw."""
        self._calls = _bind_calls(on_add, on_update, on_delete, convert)
        self._upstream_has_synced = upstream_has_synced
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

        self.add: Callable[[Notification], None] = self._queue.put
        """Queue one notification; never blocks (the "block" bound is enforced upstream,
        by the informer waiting in :meth:`SharedProcessor.wait_for_room`)."""

    # -- registration API -------------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the informer has synced and this handler has been handed every
        object of the initial list (or, for a late handler, of its snapshot)."""
        return self._upstream_has_synced() and self._queue.initial_pending <= 0

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
        return HandlerStatistics(
            name=self.name,
            pending=self.pending,
            delivered=self.delivered,
            failed=self.failed,
            coalesced=self.coalesced,
            max_pending=self.max_pending,
            overflow=self.overflow,
            resync_period=self.resync_period,
        )

    def close(self) -> None:
        """Stop delivering: drop undelivered notifications and end the delivery loop once
        a call already running returns. Idempotent."""
        self._queue.close()

    def has_room(self) -> bool:
        """For ``overflow="block"``: False while the queue is at its bound."""
        return self._queue.has_room()

    async def wait_for_room(self) -> None:
        """Wait until the queue is below ``max_pending`` (or the listener is closed)."""
        await self._queue.wait_for_room()

    # -- consumer side ------------------------------------------------------------------

    async def next_notification(self) -> Notification | None:
        """Take the next notification, waiting for one; ``None`` once closed.

        The pull side of a listener without a delivery task (``informer.events()``). The
        notification counts as delivered (and an initial-list add as handled) when taken.
        """
        pending = self._queue
        while True:
            while pending.items:
                notification = pending.take()
                if notification is not None:
                    self.delivered += 1
                    if notification[2] is True and notification[0] == ADD:
                        pending.initial_pending -= 1
                    return notification
            if pending.closed:
                return None
            await pending.arm(asyncio.get_running_loop())

    async def run(self) -> None:
        """Deliver queued notifications until closed or cancelled."""
        pending = self._queue
        items = pending.items
        take = pending.take
        calls = self._calls
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        while True:
            if not items:
                if pending.closed:
                    return
                await pending.arm(loop)
                continue
            budget = _BATCH
            while items and budget:
                budget -= 1
                notification = take()
                if notification is None:
                    continue
                self.delivered += 1
                kind, a, b = notification
                call = calls[kind]
                if call is not None:
                    fn, is_async, unary = call
                    try:
                        if is_async:
                            await (fn(a) if unary else fn(a, b))
                        elif unary:
                            fn(a)
                        else:
                            fn(a, b)
                    except Exception:
                        self.failed += 1
                        logger.exception(
                            "event handler %s failed on %s", self.name, _KIND_NAMES[kind]
                        )
                    except asyncio.CancelledError:
                        if task.cancelling():
                            raise
                        # Nobody cancelled this task: the handler let a CancelledError out
                        # of something it awaited. Ending here would silently stop this
                        # handler's deliveries for good, so it is a failure like any other.
                        self.failed += 1
                        logger.exception(
                            "event handler %s failed on %s with a stray cancellation",
                            self.name,
                            _KIND_NAMES[kind],
                        )
                if b is True and kind == ADD:
                    # An initial-list add counts as handled once its call has returned
                    # (or raised), as client-go's sync tracker does.
                    pending.initial_pending -= 1
                if pending.closed:
                    return
            if items:
                await asyncio.sleep(0)

    def __repr__(self) -> str:
        bound = "" if self.max_pending is None else f" max_pending={self.max_pending}"
        return (
            f"<ProcessorListener {self.name!r} pending={self.pending}{bound}"
            f" resync={self.resync_period}s{' closed' if self.closed else ''}>"
        )


class HandlerRegistration:
    """The handle ``add_event_handler()`` returns: pass it to ``remove_event_handler()``."""

    __slots__ = ("_informer", "_listener")

    def __init__(self, informer: Any, listener: ProcessorListener) -> None:
        # The informer that issued it, compared by identity when it is handed back.
        self._informer = informer
        self._listener = listener

    @property
    def name(self) -> str:
        """The handler's name, as used in logs and statistics."""
        return self._listener.name

    def has_synced(self) -> bool:
        """True once the informer has synced and this handler has been handed every object
        of the initial list (for a late handler: of the snapshot it was given)."""
        return self._listener.has_synced()

    def statistics(self) -> HandlerStatistics:
        """This handler's counters."""
        return self._listener.statistics()

    def __repr__(self) -> str:
        return f"<HandlerRegistration {self.name!r} of {self._informer.name!r}>"


class SharedProcessor:
    """The set of listeners of one informer, their tasks and their resync schedule."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock or default_clock
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
        self._listeners[listener] = True
        if listener.max_pending is not None and listener.overflow == "block":
            self._blocking.append(listener)
        if self._resync_started:
            listener.next_resync = self._clock.monotonic() + listener.resync_period
        if start:
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
        (``is_sync``), only on those flagged due at the last resync check."""
        if is_sync:
            for listener, due in self._listeners.items():
                if due:
                    listener.add(notification)
        else:
            for listener in self._listeners:
                listener.add(notification)

    def has_room(self) -> bool:
        """False while some ``"block"`` listener is at its bound: the informer then waits
        in :meth:`wait_for_room` before popping more."""
        blocking = self._blocking
        return not blocking or all(listener.has_room() for listener in blocking)

    async def wait_for_room(self) -> None:
        """Wait until every ``"block"`` listener is below its bound."""
        for listener in list(self._blocking):
            await listener.wait_for_room()

    def should_resync(self) -> bool:
        """Flag the listeners whose resync is due now and schedule their next one.

        Called by the reflector at the informer's resync check period; True when at least
        one listener is due (the reflector then resyncs the DeltaFIFO).
        """
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
            async with asyncio.TaskGroup() as task_group:
                while True:
                    while to_start:
                        listener = to_start.popleft()
                        if listener in self._listeners:
                            task_group.create_task(listener.run(), name=f"handler {listener.name}")
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
