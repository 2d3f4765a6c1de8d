"""The waiting both FIFOs share: the synced signal, and poppers parked on an empty queue.

Role. :class:`~aioinformer.delta_fifo.DeltaFIFO` and :class:`~aioinformer.real_fifo.RealFIFO`
queue different things but wait the same way; :class:`_FIFOWaits` is their base. Input: a
subclass's ``__len__`` (its queued items), its ``_signal_synced()`` call when it syncs, and
``_wake_popper()`` calls as it queues. Output: :meth:`_FIFOWaits.has_synced`,
:meth:`_FIFOWaits.wait_synced`, and the turns its poppers wait for (``_wait_for_turn``).

Ordering and task model. One event loop. Parked poppers are woken oldest first, one per
queued item; a pop yields to the loop at least once per :data:`_CHECKPOINT_EVERY` items
it hands out. ``close()`` is synchronous: it wakes every parked popper (they drain what is
left, then get :class:`~aioinformer.errors.FIFOClosedError`), answers ``wait_synced``
calls, then runs the subclass's ``_on_close`` hook.
"""

from __future__ import annotations

import asyncio
from collections import deque

from aioinformer.errors import FIFOClosedError

__all__ = ["_CHECKPOINT_EVERY", "_FIFOWaits"]

_CHECKPOINT_EVERY = 128
"""``pop`` and ``pop_batch`` yield to the event loop at least once per this many items
handed out (``pop_batch`` by whole batches, so once per batch when batches are larger)."""


class _FIFOWaits:
    """What the two queues (this module's and :mod:`aioinformer.real_fifo`'s) share: the
    one-shot synced signal, and the poppers parked while the queue is empty. A subclass
    gives ``__len__`` (queued items) and calls ``_signal_synced()`` when it syncs."""

    __slots__ = ("_closed", "_poppers", "_since_checkpoint", "_sync_outcome", "_synced")

    _closed: bool
    """Set by ``close()``; never cleared."""
    _poppers: deque[asyncio.Future[None]]
    """One future per popper parked while the queue is empty, oldest first. A future
    leaves it when resolved (the popper is woken) or when its popper is cancelled."""
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
        self._poppers = deque()
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
        poppers = self._poppers
        while not len(self):
            if self._closed:
                raise FIFOClosedError(f"{type(self).__name__} is closed")
            woken = asyncio.get_running_loop().create_future()
            poppers.append(woken)
            try:
                await woken
            except asyncio.CancelledError:
                if woken.cancelled() and woken in poppers:
                    poppers.remove(woken)
                # We may have been woken for an item we will not take now; pass the
                # wake-up on so that item is not left waiting.
                if len(self) and poppers:
                    self._wake_popper()
                raise

    def _wake_popper(self) -> None:
        poppers = self._poppers
        while poppers:
            woken = poppers.popleft()
            if not woken.done():  # skips a popper cancelled in this same loop turn
                woken.set_result(None)
                return

    def close(self) -> None:
        """Stop accepting waits: poppers drain what is queued, then get FIFOClosedError."""
        self._closed = True
        poppers, self._poppers = self._poppers, deque()
        for woken in poppers:
            if not woken.done():
                woken.set_result(None)
        self._settle_sync_outcome()
        self._on_close()

    def _on_close(self) -> None:
        """What else a subclass closes with the queue (its other waiters)."""
