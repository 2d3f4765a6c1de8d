"""The handle of one registered handler: :class:`HandlerRegistration`, and the wait for
that handler to have seen the informer's initial list.

Role: what ``add_event_handler()`` and ``events()`` hand back. It names the handler,
reports its counters, tells whether the handler has synced (the informer has synced and
the handler has been handed every object of the initial list, or of the snapshot a late
handler was given) and waits for that.

Input: the informer that issued it (read through its ``has_synced()`` and
``wait_for_sync()`` only) and the handler's
:class:`~aioinformer.processor.ProcessorListener`. Output: booleans and
:class:`~aioinformer.processor.HandlerStatistics`.

Ordering: :meth:`HandlerRegistration.wait_for_sync` returns True only after the call of
the last initial-list add has returned (or raised) for a pushed handler, or after the
last one was taken from an ``events()`` stream; never from a poll: it waits first for
the informer's sync, then for a future the listener resolves as its count of pending
initial adds reaches 0, or as it is closed.

Task model: no task of its own; the wait runs two short-lived tasks (the informer's wait
and the listener's close) while the informer has not synced, reaped before it returns.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from aioinformer._kernel.runner import first_completed

if TYPE_CHECKING:
    from aioinformer._pipeline.handler_calls import HandlerStatistics

__all__ = ["HandlerRegistration"]


class _Listener(Protocol):
    """What a registration reads from its :class:`~aioinformer.processor.ProcessorListener`
    (this module sits below the processor, which builds registrations)."""

    name: str

    @property
    def closed(self) -> bool: ...

    @property
    def initial_pending(self) -> int: ...

    def has_synced(self) -> bool: ...

    async def wait_closed(self) -> None: ...

    async def wait_initial_handled(self) -> None: ...

    def statistics(self) -> HandlerStatistics: ...


class HandlerRegistration:
    """The handle ``add_event_handler()`` returns: pass it to ``remove_event_handler()``."""

    __slots__ = ("_informer", "_listener")

    def __init__(self, informer: Any, listener: _Listener) -> None:
        # The informer that issued it, compared by identity when it is handed back.
        self._informer = informer
        # The processor's ProcessorListener; its informer reads it back.
        self._listener = listener

    @property
    def name(self) -> str:
        """The handler's name, as used in logs and statistics."""
        return self._listener.name

    def has_synced(self) -> bool:
        """True once the informer has synced and this handler has been handed every object
        of the initial list (for a late handler: of the snapshot it was given). Once the
        handler is removed: whether it had by then."""
        return self._listener.has_synced()

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`has_synced`: the informer has synced and every initial-list
        add has been handled (its call returned or raised; for an ``events()`` stream, it
        was taken). False when ``timeout`` (seconds) passes first, when the handler is
        removed first, or when the informer stops first.

        The per-handler form of ``informer.wait_for_sync()``: a handler that fills its
        own state from the initial list (a work queue, an in-memory map) is complete
        once this returns True."""
        listener = self._listener
        if listener.has_synced():
            return True
        if listener.closed:
            return False
        informer = self._informer
        try:
            async with asyncio.timeout(timeout):
                if not informer.has_synced():
                    first, wait = await first_completed(
                        listener.wait_closed(), informer.wait_for_sync()
                    )
                    if first == 0 or not wait.result():
                        return False
                # Past the informer's sync no initial-list add is queued any more: the
                # count only falls from here.
                while listener.initial_pending > 0 and not listener.closed:
                    await listener.wait_initial_handled()
                return listener.has_synced()
        except TimeoutError:
            return False

    def statistics(self) -> HandlerStatistics:
        """This handler's counters."""
        return self._listener.statistics()

    def __repr__(self) -> str:
        return f"<HandlerRegistration {self.name!r} of {self._informer.name!r}>"
