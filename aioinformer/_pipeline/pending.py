"""One handler's queue of undelivered notifications: plain, or coalescing past a bound.

Role: the buffer between :meth:`SharedProcessor.distribute
<aioinformer.processor.SharedProcessor.distribute>` (the producer, the informer's pop task)
and one listener's consumer (its delivery task, or an ``events()`` stream). It also defines
the notification itself: :class:`Notification`, a ``(kind, a, b)`` named tuple whose
:class:`NotificationKind` says how to read ``a`` and ``b``.

Both queues are ``asyncio.Queue`` subclasses, built as the standard library builds
``PriorityQueue`` and ``LifoQueue``: they override ``_init``, ``_put`` and ``_get`` (the
storage, and what taking an entry does) and keep ``asyncio.Queue``'s waiting. Unbounded at
the ``asyncio.Queue`` level: ``put_nowait`` never blocks and never suspends, and a
``"block"`` bound is enforced upstream (the producer asks :meth:`PendingQueue.has_room` and
waits in :meth:`PendingQueue.wait_for_room`). Output: ``get()``/``get_nowait()`` return the
oldest notification, ``None`` for an entry that was coalesced away, or :data:`CLOSED` once
the queue is closed. ``task_done``/``join`` are not used.

Ordering: first in, first out. :class:`CoalescingQueue` keeps the order of first arrival
per key: once the queue holds ``max_pending`` notifications, a new notification for a key
that already has one pending is folded into it instead of being appended (add+update is an
add of the new object, update+update one update from the first old to the last new,
add+delete vanishes, update+delete is the delete; a pending delete is never merged).

Task model: no task of its own; everything runs on the event loop's thread. The consumer
waits in ``await queue.get()``; the next ``put_nowait`` or :meth:`~PendingQueue.close`
wakes it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

__all__ = ["CLOSED", "CoalescingQueue", "Notification", "NotificationKind", "PendingQueue"]


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


CLOSED: Final[Any] = object()
"""What ``get()`` returns once the queue is closed (after dropping what was queued)."""

_as_notification: Final = tuple.__new__
# Builds a Notification from a coalescing entry without the keyword-handling constructor.


class PendingQueue(asyncio.Queue[Any]):
    """Notifications in arrival order; unbounded, or bounded for ``overflow="block"``."""

    _queue: deque[Any]
    max_pending: int | None
    """The ``"block"`` bound :meth:`has_room` checks, or ``None`` for none."""
    initial_pending: int
    """Initial-list adds put here and not yet handled: incremented by ``put_nowait``,
    decremented by the consumer once it has handled one, and by coalescing when one is
    merged away. A listener has synced only at 0."""
    initial_waiter: asyncio.Future[None] | None
    """What :meth:`initial_handled` handed out, while unresolved: whoever decrements
    :attr:`initial_pending` calls :meth:`release_initial` when this is set."""
    closed: bool
    """Set once by :meth:`close`; nothing is queued from then on but :data:`CLOSED`."""

    def __init__(self, *, max_pending: int | None = None) -> None:
        super().__init__()
        self.max_pending = max_pending
        self.initial_pending = 0
        self.closed = False
        # Resolved once the queue is below max_pending again; None while nobody waits.
        self._room: asyncio.Future[None] | None = None
        self.initial_waiter = None
        # Resolved by close(); None until someone waits for it.
        self._closing: asyncio.Future[None] | None = None

    # -- what asyncio.Queue is built on ---------------------------------------------------

    def _init(self, maxsize: int) -> None:
        self._queue = deque()

    def _put(self, item: Any) -> None:
        # The identity test goes first: it settles updates and deletes without comparing
        # an IntEnum, which the interpreter has no fast path for.
        if item is not CLOSED and item[2] is True and item[0] == _ADD:
            self.initial_pending += 1
        self._queue.append(item)

    def _get(self) -> Any:
        item = self._queue.popleft()
        # Tested here, not only inside: most takes find no producer waiting for room.
        if self._room is not None:
            self._release_room()
        return item

    # -- the listener's side ------------------------------------------------------------

    @property
    def items(self) -> deque[Any]:
        """Undelivered entries, oldest first. Consumers may test it for emptiness; they
        remove entries only through ``get``/``get_nowait``."""
        return self._queue

    def __len__(self) -> int:
        """Notifications pending (entries coalesced away are not counted)."""
        return 0 if self.closed else len(self._queue)

    @property
    def coalesced(self) -> int:
        """Notifications merged into a pending one; always 0 here."""
        return 0

    def put_many(self, notifications: list[Notification], initial_adds: int) -> None:
        """Queue several notifications in order; never blocks. ``initial_adds`` is how
        many of them are initial-list adds (counted as they are put, so only a check)."""
        put = self.put_nowait
        for notification in notifications:
            put(notification)

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
        return max_pending is None or self.closed or len(self._queue) < max_pending

    async def wait_for_room(self) -> None:
        """Wait until :meth:`has_room`."""
        while not self.has_room():
            room = self._room
            if room is None:
                room = self._room = asyncio.get_running_loop().create_future()
            await room

    def _release_room(self) -> None:
        room = self._room
        if room is not None and self.has_room():
            self._room = None
            if not room.done():
                room.set_result(None)

    def close(self) -> None:
        """Drop every undelivered notification and wake whoever waits: a consumer in
        ``get()`` gets :data:`CLOSED`. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self._queue.clear()
        self.initial_pending = 0
        for future in (self._room, self.initial_waiter, self._closing):
            if future is not None and not future.done():
                future.set_result(None)
        self._room = self.initial_waiter = None
        self.put_nowait(CLOSED)

    def __repr__(self) -> str:
        bound = "" if self.max_pending is None else f"/{self.max_pending}"
        return f"<{type(self).__name__} {len(self)}{bound}{' closed' if self.closed else ''}>"


class CoalescingQueue(PendingQueue):
    """A queue that, once it holds ``max_pending`` notifications, merges a new one into the
    pending entry of the same key, so it holds at most ``max_pending`` plus two entries per
    key (a pending delete and the one after it). Replaying what it hands out still yields
    the newest state of every object."""

    def __init__(self, *, max_pending: int, key_func: Callable[[Any], Hashable]) -> None:
        super().__init__(max_pending=max_pending)
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
        return 0 if self.closed else len(self._queue) - self._noops

    @property
    def coalesced(self) -> int:
        """Notifications merged into a pending one."""
        return self._coalesced

    def _key(self, kind: int, a: Any, b: Any) -> Hashable:
        return self._key_func(b if kind == _UPDATE else a)

    def _put(self, item: Any) -> None:
        if item is CLOSED:
            self._queue.append(item)
            return
        kind, a, b = item
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
        self._queue.append(entry)
        if kind == _DELETE:
            self._by_key.pop(key, None)
        else:
            self._by_key[key] = entry

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

    def _get(self) -> Any:
        entry = self._queue.popleft()
        if self._room is not None:
            self._release_room()
        if entry is CLOSED:
            return entry
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
        self._by_key.clear()
        self._noops = 0
        super().close()
