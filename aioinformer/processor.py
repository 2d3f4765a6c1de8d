"""Fan-out from one informer to many handlers: :class:`SharedProcessor` and
:class:`ProcessorListener`.

Role: the last stage of the pipeline. The informer's single pop task applies each Deltas to
the cache and hands the resulting notifications to :meth:`SharedProcessor.distribute`, which
appends them to the queue of every registered :class:`ProcessorListener`. Each listener owns
one task that drains its queue into the user's callbacks.

Input: notifications, small tuples ``(kind, a, b)``:

* ``(ADD, obj, is_in_initial_list)``
* ``(UPDATE, old, new)``
* ``(DELETE, obj_or_tombstone, None)``

Output: calls to ``on_add(obj, is_in_initial_list)``, ``on_update(old, new)`` and
``on_delete(obj)`` (sync or async, detected once when the listener is built).

Ordering: a listener delivers notifications in the order they were distributed, so every
handler sees the events of one object in order. Handlers are independent: each has its own
queue and task, so a slow or failing handler delays only itself. A handler that raises is
logged with its name and keeps receiving later notifications.

Buffering: by default a listener's queue is unbounded (client-go's ring buffer grows until
memory runs out). ``max_pending=N`` bounds it with one of two policies:

* ``"block"``: backpressure. Once the queue holds ``N`` notifications, the informer stops
  popping its DeltaFIFO until the handler drains below ``N`` (see
  :meth:`SharedProcessor.wait_for_room`). One pop may overshoot by the notifications of a
  single key, and the snapshot replayed to a late handler is queued whole. Events keep
  accumulating in the DeltaFIFO meanwhile, where they are merged per key.
* ``"coalesce"``: once the queue holds ``N`` notifications, a new notification for a key that
  already has one pending is merged into it, keeping only the newest state: add+update is an
  add of the new object, update+update one update from the first old to the last new,
  add+delete vanishes, update+delete is the delete. A pending delete is never merged (the
  object may be re-created with a new uid). The queue therefore never holds more than
  ``max(N, distinct keys)`` entries, and replaying what the handler received still yields
  the newest state of every object.

Resync: each listener has a resync period (0 = never). :meth:`SharedProcessor.should_resync`
runs at the informer's check period, flags the listeners that are due, and schedules their
next resync; ``distribute(..., is_sync=True)`` then reaches only the flagged listeners. A new
listener starts flagged, as in client-go.

Task model: :meth:`SharedProcessor.run` owns an ``asyncio.TaskGroup`` holding one task per
listener; listeners added while it runs get their task at once. Removing a listener drops
its undelivered notifications and lets a handler call already running finish; cancelling
``run()`` cancels every listener task, including a handler call that never returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal

from aioinformer._clock import Clock, default_clock
from aioinformer._tasks import is_async_callable

__all__ = [
    "ADD",
    "DELETE",
    "HandlerStatistics",
    "MINIMUM_RESYNC_PERIOD",
    "Notification",
    "OverflowPolicy",
    "ProcessorListener",
    "SharedProcessor",
    "UPDATE",
    "determine_resync_period",
]

logger = logging.getLogger(__name__)

ADD: Final = 0
"""Notification kind: ``(ADD, obj, is_in_initial_list)``."""
UPDATE: Final = 1
"""Notification kind: ``(UPDATE, old, new)``."""
DELETE: Final = 2
"""Notification kind: ``(DELETE, obj_or_tombstone, None)``."""
_NOOP: Final = 3
# A coalesced-away entry left in a queue; skipped on delivery.

_KIND_NAMES: Final = ("add", "update", "delete", "noop")

MINIMUM_RESYNC_PERIOD: Final = 1.0
"""Handlers may not ask for resyncs more often than this (seconds)."""

_BATCH: Final = 256
# How many notifications a listener delivers before yielding to the event loop, so a busy
# handler cannot starve the reflector or the other handlers.

Notification = tuple[int, Any, Any] | list[Any]
"""``(kind, a, b)``; coalescing listeners keep mutable ``[kind, a, b]`` entries."""

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


class ProcessorListener:
    """One handler's queue, delivery task and resync schedule.

    Built by the informer; users hold it as a ``HandlerRegistration``. ``on_add``,
    ``on_update`` and ``on_delete`` may each be ``None`` (that kind is skipped), a function
    or a coroutine function.
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
        self._on_add = on_add
        self._on_update = on_update
        self._on_delete = on_delete
        self._add_is_async = is_async_callable(on_add)
        self._update_is_async = is_async_callable(on_update)
        self._delete_is_async = is_async_callable(on_delete)
        self.convert = convert
        """Applied to each object before delivery (typed informers); None for raw."""
        self._upstream_has_synced = upstream_has_synced

        # Undelivered notifications, oldest first. Holds _NOOP entries (counted in
        # _noops) only for coalescing listeners.
        self._queue: deque[Notification] = deque()
        self._noops = 0
        # Coalescing only: key -> its newest pending entry, which is in _queue and is not
        # a _NOOP; every pending non-delete entry's key maps to the newest such entry.
        self._pending_by_key: dict[Hashable, list[Any]] = {}
        self._key_func = key_func
        self.max_pending = max_pending
        self.overflow: OverflowPolicy = overflow

        # Initial-list adds queued and not yet delivered: has_synced() needs it at 0.
        self._initial_pending = 0

        # The delivery loop waits on this future when the queue is empty; whoever adds a
        # notification resolves it. None while the loop is running.
        self._waiter: asyncio.Future[None] | None = None
        # "block" only: resolved by the delivery loop once the queue is below max_pending.
        self._room: asyncio.Future[None] | None = None
        # True once removed or stopped: no more deliveries start.
        self.closed = False

        self.requested_resync_period = requested_resync_period
        self.resync_period = resync_period
        self.next_resync = now + resync_period

        self.delivered = 0
        self.failed = 0
        self.coalesced = 0

        # True for a listener without a delivery task, whose consumer pulls with
        # next_notification() (informer.events()).
        self.pull = False

        self.add: Callable[[Notification], None]
        """Queue one notification; never blocks (the "block" bound is enforced upstream,
        by the informer waiting in :meth:`SharedProcessor.wait_for_room`)."""
        if max_pending is not None and overflow == "coalesce":
            self.add = self._add_coalescing
        else:
            self.add = self._add_unbounded

    # -- registration API -------------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the informer has synced and this handler has been handed every
        object of the initial list (or, for a late handler, of its snapshot)."""
        return self._upstream_has_synced() and self._initial_pending <= 0

    @property
    def pending(self) -> int:
        """Notifications queued and not yet delivered."""
        return len(self._queue) - self._noops

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

    # -- producer side ------------------------------------------------------------------

    def _add_unbounded(self, notification: Notification) -> None:
        if notification[0] == ADD and notification[2]:
            self._initial_pending += 1
        self._queue.append(notification)
        # self._wake(), inlined: this runs once per event and listener.
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _add_coalescing(self, notification: Notification) -> None:
        kind, a, b = notification
        key = self._key_func(a if kind != UPDATE else b)  # type: ignore[misc]
        pending = self._pending_by_key.get(key)
        max_pending = self.max_pending
        assert max_pending is not None
        if pending is not None and self.pending >= max_pending and self._merge(pending, kind, a, b):
            self.coalesced += 1
            if pending[0] == _NOOP:
                del self._pending_by_key[key]
            return
        entry = [kind, a, b]
        if kind == ADD and b:
            self._initial_pending += 1
        self._queue.append(entry)
        if kind == DELETE:
            self._pending_by_key.pop(key, None)
        else:
            self._pending_by_key[key] = entry
        self._wake()

    def _merge(self, pending: list[Any], kind: int, a: Any, b: Any) -> bool:
        """Fold a new notification into the pending entry of the same key; False when the
        pair cannot be merged and the new one must be queued."""
        pending_kind = pending[0]
        if pending_kind == ADD:
            if kind == DELETE:
                # The handler never saw the object: both notifications vanish.
                if pending[2]:
                    self._initial_pending -= 1
                pending[0], pending[1], pending[2] = _NOOP, None, None
                self._noops += 1
                return True
            pending[1] = a if kind == ADD else b
            return True
        if pending_kind == UPDATE:
            if kind == DELETE:
                pending[0], pending[1], pending[2] = DELETE, a, None
                return True
            pending[2] = a if kind == ADD else b
            return True
        return False

    def close(self) -> None:
        """Stop delivering: drop undelivered notifications and end the delivery loop once
        a call already running returns. Idempotent."""
        self.closed = True
        self._queue.clear()
        self._pending_by_key.clear()
        self._noops = 0
        self._initial_pending = 0
        self._wake()
        room = self._room
        if room is not None:
            self._room = None
            if not room.done():
                room.set_result(None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def has_room(self) -> bool:
        """For ``overflow="block"``: False while the queue is at its bound."""
        max_pending = self.max_pending
        return max_pending is None or self.closed or len(self._queue) < max_pending

    async def wait_for_room(self) -> None:
        """Wait until the queue is below ``max_pending`` (or the listener is closed)."""
        while not self.has_room():
            room = self._room
            if room is None:
                room = self._room = asyncio.get_running_loop().create_future()
            await room

    # -- consumer side ------------------------------------------------------------------

    async def next_notification(self) -> Notification | None:
        """Take the next notification, waiting for one; ``None`` once closed.

        The pull side of a listener without a delivery task (``informer.events()``). The
        notification counts as delivered (and an initial-list add as handled) when taken.
        """
        queue = self._queue
        while True:
            while queue:
                notification = self._take()
                if notification is not None:
                    if notification[0] == ADD and notification[2]:
                        self._initial_pending -= 1
                    return notification
            if self.closed:
                return None
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            await waiter

    def _take(self) -> Notification | None:
        """Pop the oldest entry and do its bookkeeping; None for a coalesced-away one."""
        notification = self._queue.popleft()
        kind = notification[0]
        if self._room is not None and self.has_room():
            room, self._room = self._room, None
            if not room.done():
                room.set_result(None)
        if kind == _NOOP:
            self._noops -= 1
            return None
        if self._pending_by_key:
            key = self._key_func(  # type: ignore[misc]
                notification[1] if kind != UPDATE else notification[2]
            )
            if self._pending_by_key.get(key) is notification:
                del self._pending_by_key[key]
        self.delivered += 1
        return notification

    async def run(self) -> None:
        """Deliver queued notifications until closed or cancelled."""
        queue = self._queue
        loop = asyncio.get_running_loop()
        on_add, on_update, on_delete = self._on_add, self._on_update, self._on_delete
        add_async, update_async = self._add_is_async, self._update_is_async
        delete_async = self._delete_is_async
        convert = self.convert
        bookkeeping = self.max_pending is not None or self._key_func is not None
        task = asyncio.current_task()
        assert task is not None
        while True:
            if not queue:
                if self.closed:
                    return
                waiter = self._waiter = loop.create_future()
                await waiter
                continue
            budget = _BATCH
            while queue and budget:
                budget -= 1
                if bookkeeping:
                    notification = self._take()
                    if notification is None:
                        continue
                else:
                    notification = queue.popleft()
                    self.delivered += 1
                kind, a, b = notification
                try:
                    if kind == ADD:
                        if on_add is not None:
                            if convert is not None:
                                a = convert(a)
                            if add_async:
                                await on_add(a, b)
                            else:
                                on_add(a, b)
                    elif kind == UPDATE:
                        if on_update is not None:
                            if convert is not None:
                                a, b = convert(a), convert(b)
                            if update_async:
                                await on_update(a, b)
                            else:
                                on_update(a, b)
                    elif on_delete is not None:
                        if convert is not None:
                            a = convert(a)
                        if delete_async:
                            await on_delete(a)
                        else:
                            on_delete(a)
                except Exception:
                    self.failed += 1
                    logger.exception("event handler %s failed on %s", self.name, _KIND_NAMES[kind])
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
                if kind == ADD and b is True:
                    # An initial-list add counts as handled once its call has returned
                    # (or raised), as client-go's sync tracker does.
                    self._initial_pending -= 1
                if self.closed:
                    return
            if queue:
                await asyncio.sleep(0)

    def __repr__(self) -> str:
        bound = "" if self.max_pending is None else f" max_pending={self.max_pending}"
        return (
            f"<ProcessorListener {self.name!r} pending={self.pending}{bound}"
            f" resync={self.resync_period}s{' closed' if self.closed else ''}>"
        )


class SharedProcessor:
    """The set of listeners of one informer, their tasks and their resync flags."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock or default_clock
        # listener -> "due for resync at the last check". Insertion-ordered; a listener is
        # here iff it is registered and not closed. New listeners start flagged.
        self._listeners: dict[ProcessorListener, bool] = {}
        # Listeners with overflow="block" and a bound: the ones wait_for_room() checks.
        self._blocking: list[ProcessorListener] = []
        # Set while run() is running: new listeners get their task here.
        self._task_group: asyncio.TaskGroup | None = None
        self._stopped = False

    @property
    def clock(self) -> Clock:
        return self._clock

    def __len__(self) -> int:
        return len(self._listeners)

    def __iter__(self) -> Iterator[ProcessorListener]:
        return iter(list(self._listeners))

    def __contains__(self, listener: object) -> bool:
        return listener in self._listeners

    def add_listener(self, listener: ProcessorListener, *, start: bool = True) -> None:
        """Register a listener (flagged for resync). ``start=False`` leaves it without a
        delivery task: its consumer pulls with ``next_notification()``."""
        listener.pull = not start
        self._listeners[listener] = True
        if listener.max_pending is not None and listener.overflow == "block":
            self._blocking.append(listener)
        if start and self._task_group is not None:
            self._task_group.create_task(listener.run(), name=f"handler {listener.name}")

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

    @property
    def needs_room(self) -> bool:
        """True when some ``"block"`` listener is at its bound."""
        if not self._blocking:
            return False
        return any(not listener.has_room() for listener in self._blocking)

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
        """Run every listener's delivery task until cancelled; then close them all."""
        if self._stopped:
            raise RuntimeError("a SharedProcessor runs once")
        try:
            async with asyncio.TaskGroup() as task_group:
                self._task_group = task_group
                for listener in self._listeners:
                    if not listener.pull:
                        task_group.create_task(listener.run(), name=f"handler {listener.name}")
                await asyncio.Event().wait()  # until cancelled
        finally:
            self._task_group = None
            self.stop()

    def stop(self) -> None:
        """Close every listener (ends ``events()`` streams); later adds are refused by the
        informer. Idempotent."""
        self._stopped = True
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()
        self._blocking.clear()

    @property
    def stopped(self) -> bool:
        return self._stopped

    def __repr__(self) -> str:
        return f"<SharedProcessor listeners={len(self._listeners)}>"
