"""The waiting both FIFOs share: the synced signal, and poppers waiting on one condition.

Role. :class:`~aioinformer.delta_fifo.DeltaFIFO` and :class:`~aioinformer.real_fifo.RealFIFO`
queue different things but wait the same way; :class:`_FIFOWaits` is their base. Input: a
subclass's ``__len__`` (its queued items), its ``_signal_synced()`` call when it syncs, and
one ``_wake_poppers()`` call at the end of each producer call. Output:
:meth:`_FIFOWaits.has_synced`, :meth:`_FIFOWaits.wait_synced`, and the turns its poppers
wait for (``_wait_for_turn``).

Waiting. Poppers wait on one ``asyncio.Condition`` per queue for the queue to hold
something (or be closed); a producer notifies it once per call, however many items that
call queued (a watch's batch is one call), and only when a popper waits, so the usual
call pays one integer test. The condition's lock is only ever held across code that does
not suspend, so a producer, which is synchronous inside, takes it without waiting (see
:func:`_holding`). A popper woken and then cancelled before it took anything passes the
wake-up on, so no queued item waits for a popper that left.

Ordering and task model. One event loop. Waiting poppers are woken oldest first (the
condition's order); a pop yields to the loop at least once per :data:`_CHECKPOINT_EVERY`
items it hands out. ``close()`` is synchronous: it wakes every waiting popper (they drain
what is left, then get :class:`~aioinformer.errors.FIFOClosedError`), answers
``wait_synced`` calls, then runs the subclass's ``_on_close`` hook.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from aioinformer.errors import FIFOClosedError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["_CHECKPOINT_EVERY", "_FIFOWaits"]

_CHECKPOINT_EVERY = 128
"""``pop`` and ``pop_batch`` yield to the event loop at least once per this many items
handed out (``pop_batch`` by whole batches, so once per batch when batches are larger)."""


@contextlib.contextmanager
def _holding(condition: asyncio.Condition) -> Iterator[None]:
    """Hold ``condition``'s lock from synchronous code.

    The lock is free whenever synchronous code runs (everyone holds it only across code
    that does not suspend), so acquiring it completes without suspending: the acquire
    coroutine is run to its end here. Were it ever held across a suspension, that is a bug,
    and this raises rather than wait."""
    acquire = condition.acquire()
    try:
        acquire.send(None)
    except StopIteration:
        pass
    else:
        acquire.close()
        raise RuntimeError("a FIFO's condition was held across a suspension")
    try:
        yield
    finally:
        condition.release()


class _FIFOWaits:
    """What the two queues (this module's and :mod:`aioinformer.real_fifo`'s) share: the
    one-shot synced signal, and the poppers waiting on the queue's condition. A subclass
    gives ``__len__`` (queued items), calls ``_signal_synced()`` when it syncs and
    ``_wake_poppers()`` after it queued something."""

    __slots__ = (
        "_closed",
        "_condition",
        "_parked",
        "_since_checkpoint",
        "_sync_outcome",
        "_synced",
    )

    _closed: bool
    """Set by ``close()``; never cleared."""
    _condition: asyncio.Condition
    """What poppers wait on for an item (or the close); notified by producers."""
    _parked: int
    """Poppers waiting on ``_condition`` now (woken ones count until they run)."""
    _since_checkpoint: int
    """Items handed out since ``pop`` last yielded to the event loop."""
    _synced: bool
    """Set by ``_signal_synced()`` once the first list has been processed (or a change
    came before any list); never cleared."""
    _sync_outcome: asyncio.Future[bool] | None
    """What ``wait_synced()`` calls wait on, made by the first that has to wait:
    resolved ``True`` as ``_synced`` is set, or ``False`` by ``close()`` before that."""

    def __init__(self) -> None:
        self._closed = False
        self._condition = asyncio.Condition()
        self._parked = 0
        self._since_checkpoint = 0
        self._synced = False
        self._sync_outcome = None

    def __len__(self) -> int:
        raise NotImplementedError

    def has_synced(self) -> bool:
        """True once the first list has been fully processed (see the module notes)."""
        return self._synced

    async def wait_synced(self) -> bool:
        """Wait until :meth:`has_synced` is true, then return ``True``; return ``False``
        if the FIFO is closed first. Returns at once when either has happened already.

        A one-shot signal: it is given once, when the FIFO first syncs, and stays given.
        """
        if self._synced or self._closed:
            return self._synced
        outcome = self._sync_outcome
        if outcome is None:
            outcome = self._sync_outcome = asyncio.get_running_loop().create_future()
        # Shielded: one waiter giving up (a timeout) must not cancel it for the others.
        return await asyncio.shield(outcome)

    def _signal_synced(self) -> None:
        self._synced = True
        self._settle_sync_outcome()

    def _settle_sync_outcome(self) -> None:
        outcome = self._sync_outcome
        if outcome is not None and not outcome.done():
            outcome.set_result(self._synced)

    def is_closed(self) -> bool:
        """True once :meth:`close` has been called (items may still be queued)."""
        return self._closed

    async def _wait_for_turn(self) -> None:
        """Before a pop takes anything: wait for an item if there is none, else yield to
        the event loop once (the pop has handed out enough since the last yield)."""
        if not len(self):
            await self._wait_for_item()
            self._since_checkpoint = 0
            return
        # Reset before yielding, so that other poppers do not yield for the same turn.
        self._since_checkpoint = 0
        # Taken before the item: a cancellation here loses nothing.
        await asyncio.sleep(0)
        if not len(self):
            await self._wait_for_item()

    async def _wait_for_item(self) -> None:
        condition = self._condition
        try:
            async with condition:
                while not len(self):
                    if self._closed:
                        raise FIFOClosedError(f"{type(self).__name__} is closed")
                    self._parked += 1
                    try:
                        await condition.wait()
                    finally:
                        self._parked -= 1
        except asyncio.CancelledError:
            # We may have been woken for an item we will not take now; pass the wake-up
            # on so that item is not left waiting.
            self._wake_poppers()
            raise

    def _wake_poppers(self) -> None:
        """After a producer call queued something: wake the waiting poppers, oldest
        first, as many as there are items (one notify however many were queued)."""
        if self._parked:
            count = len(self)
            if count:
                condition = self._condition
                with _holding(condition):
                    condition.notify(count)

    def close(self) -> None:
        """Stop accepting waits: poppers drain what is queued, then get FIFOClosedError."""
        self._closed = True
        if self._parked:
            condition = self._condition
            with _holding(condition):
                condition.notify_all()
        self._settle_sync_outcome()
        self._on_close()

    def _on_close(self) -> None:
        """What else a subclass closes with the queue (its other waiters)."""
