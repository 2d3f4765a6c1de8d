"""One handler's queue of undelivered notifications: plain, or coalescing past a bound.

Role: the buffer between :meth:`SharedProcessor.distribute
<aioinformer.processor.SharedProcessor.distribute>` (the producer, the informer's pop task)
and one listener's consumer (its delivery task, or an ``events()`` stream). It also defines
the notification itself: :class:`Notification`, a ``(kind, a, b)`` named tuple whose
:class:`NotificationKind` says how to read ``a`` and ``b``.

Input: :meth:`PendingQueue.put` never blocks and never suspends. A ``"block"`` bound is
enforced upstream: the producer asks :meth:`PendingQueue.has_room` and waits in
:meth:`PendingQueue.wait_for_room`. Output: :meth:`PendingQueue.take` returns the oldest
notification, or ``None`` for an entry that was coalesced away.

Ordering: first in, first out. :class:`CoalescingQueue` keeps the order of first arrival
per key: once the queue holds ``max_pending`` notifications, a new notification for a key
that already has one pending is folded into it instead of being appended (add+update is an
add of the new object, update+update one update from the first old to the last new,
add+delete vanishes, update+delete is the delete; a pending delete is never merged).

Task model: no task of its own; everything runs on the event loop's thread. The consumer
waits on the future :meth:`PendingQueue.arm` returns when it finds the queue empty; the
next :meth:`~PendingQueue.put` or :meth:`~PendingQueue.close` resolves it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

__all__ = ["CoalescingQueue", "Notification", "NotificationKind", "PendingQueue"]


class NotificationKind(IntEnum):
    """What a :class:`Notification` announces, and so how its ``a`` and ``b`` read."""

    ADD = 0
    """``(ADD, obj, is_in_initial_list)``: the object appeared."""
    UPDATE = 1
    """``(UPDATE, old, new)``: the object changed, or is resynced (same resourceVersion)."""
    DELETE = 2
    """``(DELETE, obj_or_tombstone, None)``: the object is gone."""


_ADD: Final = NotificationKind.ADD
_UPDATE: Final = NotificationKind.UPDATE
_DELETE: Final = NotificationKind.DELETE
_NOOP: Final = 3
# Marks a coalescing entry whose notifications cancelled out; never handed out.


class Notification(NamedTuple):
    """One change, as queued for each handler: ``(kind, a, b)``."""

    kind: NotificationKind
    a: Any
    """The object (``ADD``, ``DELETE``) or the old object (``UPDATE``)."""
    b: Any
    """``is_in_initial_list`` (``ADD``), the new object (``UPDATE``) or ``None``."""


_as_notification: Final = tuple.__new__
# Builds a Notification from a coalescing entry without the keyword-handling constructor.


class PendingQueue:
    """Notifications in arrival order; unbounded, or bounded for ``overflow="block"``."""

    __slots__ = (
        "_closing",
        "_room",
        "_waiter",
        "closed",
        "initial_pending",
        "initial_waiter",
        "items",
        "max_pending",
        "take",
    )

    items: deque[Any]
    """Undelivered entries, oldest first. Consumers may test it for emptiness; they remove
    entries only through :attr:`take`."""
    max_pending: int | None
    """The ``"block"`` bound :meth:`has_room` checks, or ``None`` for none."""
    initial_pending: int
    """Initial-list adds put here and not yet handled: incremented by :meth:`put`,
    decremented by the consumer once it has handled one, and by coalescing when one is
    merged away. A listener has synced only at 0."""
    initial_waiter: asyncio.Future[None] | None
    """What :meth:`initial_handled` handed out, while unresolved: whoever decrements
    :attr:`initial_pending` calls :meth:`release_initial` when this is set."""
    closed: bool
    """Set once by :meth:`close`; ``items`` stays empty from then on."""
    take: Callable[[], Notification | None]
    """Remove and return the oldest entry (the queue must not be empty); ``None`` for an
    entry coalesced away. For an unbounded plain queue this is the deque's own
    ``popleft``: the per-event path pays no Python frame for it."""

    def __init__(self, *, max_pending: int | None = None) -> None:
        self.items = deque()
        self.max_pending = max_pending
        self.initial_pending = 0
        self.closed = False
        # Resolved by the next put() or close(); None while the consumer is not waiting.
        self._waiter: asyncio.Future[None] | None = None
        # Resolved once the queue is below max_pending again; None while nobody waits.
        self._room: asyncio.Future[None] | None = None
        self.initial_waiter = None
        # Resolved by close(); None until someone waits for it.
        self._closing: asyncio.Future[None] | None = None
        self.take = self.items.popleft if max_pending is None else self._take_bounded

    def __len__(self) -> int:
        """Notifications pending (entries coalesced away are not counted)."""
        return len(self.items)

    @property
    def coalesced(self) -> int:
        """Notifications merged into a pending one; always 0 here."""
        return 0

    def put(self, notification: Notification) -> None:
        """Queue one notification and wake the consumer; never blocks."""
        # The identity test goes first: it settles updates and deletes without comparing
        # an IntEnum, which the interpreter has no fast path for.
        if notification[2] is True and notification[0] == _ADD:
            self.initial_pending += 1
        self.items.append(notification)
        # _wake_consumer() inlined: this runs once per notification per handler.
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def put_many(self, notifications: list[Notification], initial_adds: int) -> None:
        """Queue several notifications in order and wake the consumer once; never blocks.

        ``initial_adds`` is how many of them are initial-list adds: the producer counts
        them once for all the queues it hands the same list to.
        """
        self.initial_pending += initial_adds
        self.items.extend(notifications)
        self._wake_consumer()

    def _wake_consumer(self) -> None:
        """Resolve the future a consumer waiting for a notification awaits, if any."""
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def arm(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        """A future the next :meth:`put` or :meth:`close` resolves: what a consumer that
        found the queue empty awaits."""
        waiter = self._waiter = loop.create_future()
        return waiter

    def initial_handled(self) -> asyncio.Future[None]:
        """A future resolved once no initial-list add is pending (:attr:`initial_pending`
        is 0) or the queue is closed; at once if so already. Shared by every waiter:
        await it shielded."""
        waiter = self.initial_waiter
        if waiter is None:
            waiter = self.initial_waiter = asyncio.get_running_loop().create_future()
        self.release_initial()
        return waiter

    def release_initial(self) -> None:
        """Resolve :attr:`initial_waiter` if no initial-list add is pending any more."""
        waiter = self.initial_waiter
        if waiter is not None and (self.initial_pending <= 0 or self.closed):
            self.initial_waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def closing(self) -> asyncio.Future[None]:
        """A future resolved by :meth:`close` (already resolved once closed). Shared by
        every waiter: await it shielded."""
        closing = self._closing
        if closing is None:
            closing = self._closing = asyncio.get_running_loop().create_future()
            if self.closed:
                closing.set_result(None)
        return closing

    def has_room(self) -> bool:
        """False while a bounded queue is at its bound (always True once closed)."""
        max_pending = self.max_pending
        return max_pending is None or self.closed or len(self.items) < max_pending

    async def wait_for_room(self) -> None:
        """Wait until :meth:`has_room`."""
        while not self.has_room():
            room = self._room
            if room is None:
                room = self._room = asyncio.get_running_loop().create_future()
            await room

    def _take_bounded(self) -> Notification | None:
        notification: Notification = self.items.popleft()
        # Tested here, not only inside: most takes find no producer waiting for room.
        if self._room is not None:
            self._release_room()
        return notification

    def _release_room(self) -> None:
        room = self._room
        if room is not None and self.has_room():
            self._room = None
            if not room.done():
                room.set_result(None)

    def close(self) -> None:
        """Drop every undelivered notification and wake whoever waits. Idempotent."""
        self.closed = True
        self.items.clear()
        self.initial_pending = 0
        for future in (self._waiter, self._room, self.initial_waiter, self._closing):
            if future is not None and not future.done():
                future.set_result(None)
        self._waiter = self._room = self.initial_waiter = None

    def __repr__(self) -> str:
        bound = "" if self.max_pending is None else f"/{self.max_pending}"
        return f"<{type(self).__name__} {len(self)}{bound}{' closed' if self.closed else ''}>"


class CoalescingQueue(PendingQueue):
    """A queue that, once it holds ``max_pending`` notifications, merges a new one into the
    pending entry of the same key, so it holds at most ``max_pending`` plus two entries per
    key (a pending delete and the one after it). Replaying what it hands out still yields
    the newest state of every object."""

    __slots__ = ("_by_key", "_coalesced", "_key_func", "_noops")

    def __init__(self, *, max_pending: int, key_func: Callable[[Any], Hashable]) -> None:
        super().__init__(max_pending=max_pending)
        self.take = self._take_coalescing
        self._key_func = key_func
        # Entries are mutable [kind, a, b] lists so that a merge rewrites them in place.
        # Invariant: a key is here iff the newest entry of that key in ``items`` was not
        # queued as a delete and has not been merged away (_NOOP), and it maps to that
        # entry. Only an ADD or UPDATE entry accepts a merge; one turned into a DELETE by
        # a merge stays here and accepts no more.
        self._by_key: dict[Hashable, list[Any]] = {}
        # The number of _NOOP entries in ``items``.
        self._noops = 0
        self._coalesced = 0

    def __len__(self) -> int:
        return len(self.items) - self._noops

    @property
    def coalesced(self) -> int:
        """Notifications merged into a pending one."""
        return self._coalesced

    def _key(self, kind: int, a: Any, b: Any) -> Hashable:
        return self._key_func(b if kind == _UPDATE else a)

    def put(self, notification: Notification) -> None:
        kind, a, b = notification
        key = self._key(kind, a, b)
        pending = self._by_key.get(key)
        max_pending = self.max_pending
        assert max_pending is not None
        if pending is not None and len(self) >= max_pending and self._merge(pending, kind, a, b):
            self._coalesced += 1
            if pending[0] == _NOOP:
                del self._by_key[key]
            return
        entry = [kind, a, b]
        if kind == _ADD and b:
            self.initial_pending += 1
        self.items.append(entry)
        if kind == _DELETE:
            self._by_key.pop(key, None)
        else:
            self._by_key[key] = entry
        self._wake_consumer()

    def put_many(self, notifications: list[Notification], initial_adds: int) -> None:
        # Each one may merge into a pending entry, so they go in one at a time.
        put = self.put
        for notification in notifications:
            put(notification)

    def _merge(self, pending: list[Any], kind: int, a: Any, b: Any) -> bool:
        """Fold a new notification into the pending entry of the same key; False when the
        pair cannot be merged and the new one must be queued."""
        pending_kind = pending[0]
        if pending_kind == _ADD:
            if kind == _DELETE:
                # The handler never saw the object: both notifications vanish.
                if pending[2]:
                    self.initial_pending -= 1
                    if self.initial_waiter is not None:
                        self.release_initial()
                pending[0], pending[1], pending[2] = _NOOP, None, None
                self._noops += 1
                return True
            pending[1] = a if kind == _ADD else b
            return True
        if pending_kind == _UPDATE:
            if kind == _DELETE:
                pending[0], pending[1], pending[2] = _DELETE, a, None
                return True
            pending[2] = a if kind == _ADD else b
            return True
        return False

    def _take_coalescing(self) -> Notification | None:
        entry = self.items.popleft()
        if self._room is not None:
            self._release_room()
        kind, a, b = entry
        if kind == _NOOP:
            self._noops -= 1
            return None
        if self._by_key:
            key = self._key(kind, a, b)
            if self._by_key.get(key) is entry:
                del self._by_key[key]
        notification: Notification = _as_notification(Notification, (kind, a, b))
        return notification

    def close(self) -> None:
        super().close()
        self._by_key.clear()
        self._noops = 0
