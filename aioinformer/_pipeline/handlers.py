"""A handler as the processor knows it outside delivery: its protocol, settings, statistics
and registration.

Role: the processor's helpers that never run per event. :data:`EventHandler` (what
``add_event_handler()`` takes), :class:`SlowHandlerThresholds` and :data:`OverflowPolicy` (a
handler's settings), :class:`HandlerStatistics` and the latency percentiles behind it, the
warnings of a slow call, a handler's default name, the resync period a handler gets, and
:class:`HandlerRegistration` (the handle ``add_event_handler()`` returns). Each is
re-exported by :mod:`aioinformer.processor`, whose notes say how handlers are called; the
calls themselves (binding, queues, delivery) stay there, on the per-event path.

Task model: plain values and functions; :meth:`HandlerRegistration.wait_for_sync` waits on
its informer from the caller's task. The warnings are logged as ``aioinformer.processor``'s.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias, runtime_checkable

from aioinformer._kernel.runner import first_completed
from aioinformer._pipeline.pending import NotificationKind
from aioinformer.errors import CacheSyncError

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterable

__all__ = [
    "DEFAULT_SLOW_HANDLER_THRESHOLDS",
    "EventHandler",
    "HandlerFunc",
    "HandlerRegistration",
    "HandlerStatistics",
    "KIND_NAMES",
    "LATENCY_WINDOW",
    "MINIMUM_RESYNC_PERIOD",
    "OverflowPolicy",
    "SlowHandlerThresholds",
    "determine_resync_period",
    "handler_name",
    "in_worker_thread",
    "latency_summary",
    "report_running_call",
    "report_slow_call",
]

logger = logging.getLogger("aioinformer.processor")

KIND_NAMES: Final = tuple(kind.name.lower() for kind in NotificationKind)
"""Each notification kind as its callback is named, without ``on_``: ``KIND_NAMES[kind]``."""


MINIMUM_RESYNC_PERIOD: Final = 1.0
"""Handlers may not ask for resyncs more often than this (seconds)."""


HandlerFunc: TypeAlias = "Callable[..., Any]"


@runtime_checkable
class _OnAdd(Protocol):
    def on_add(self, obj: Any, is_in_initial_list: bool) -> Any: ...


@runtime_checkable
class _OnUpdate(Protocol):
    def on_update(self, old: Any, new: Any) -> Any: ...


@runtime_checkable
class _OnDelete(Protocol):
    def on_delete(self, obj: Any) -> Any: ...


EventHandler: TypeAlias = _OnAdd | _OnUpdate | _OnDelete
"""What ``add_event_handler(handler)`` calls: an object with at least one of these methods,
each sync or async; it leaves out the ones it does not need.

* ``on_add(obj, is_in_initial_list)``: the object appeared; ``is_in_initial_list`` is
  true for objects of the initial list (and of the snapshot a late handler receives).
* ``on_update(old, new)``: the object changed, or is being resynced (``old`` and
  ``new`` then have the same resourceVersion).
* ``on_delete(obj)``: the object is gone; ``obj`` is the last state seen or a
  :class:`~aioinformer.models.DeletedFinalStateUnknown` tombstone.
"""


LATENCY_WINDOW: Final = 1024
"""How many recent calls of a handler its latency percentiles are computed over."""


@dataclass(frozen=True, slots=True)
class SlowHandlerThresholds:
    """How long a handler call may take before it is reported as slow (seconds).

    Example: ``SlowHandlerThresholds(loop=0.05)`` reports a sync handler holding the
    event loop for more than 50 ms and keeps the default bound for async handlers.
    """

    loop: float = 0.1
    """For a sync callback run on the event loop: how long it may hold the loop."""
    total: float = 5.0
    """For an async callback, or a sync one run in a worker thread: how long the whole
    call may take."""

    def __post_init__(self) -> None:
        for field, value in (("loop", self.loop), ("total", self.total)):
            if not value > 0:
                raise ValueError(f"SlowHandlerThresholds.{field} must be > 0, got {value}")


DEFAULT_SLOW_HANDLER_THRESHOLDS: Final = SlowHandlerThresholds()


OverflowPolicy = Literal["block", "coalesce"]
"""What a bounded handler queue does at its bound (see :mod:`aioinformer.processor`)."""


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
    slow_calls: int = 0
    """Calls that ran past the handler's slow bound (see :class:`SlowHandlerThresholds`);
    each episode of them is logged once."""
    latency_p50: float | None = None
    """Delivery latency, median: seconds from a notification being queued for this
    handler to its call returning, over its last 1024 calls; ``None`` before the first
    call (and always for an ``events()`` stream, which is pulled, not called)."""
    latency_p99: float | None = None
    """Delivery latency, 99th percentile, over the same calls."""
    latency_max: float | None = None
    """Delivery latency, maximum, over the same calls."""


def report_slow_call(
    name: str, kind: int, seconds: float, limit: float, *, awaited: bool, threaded: bool
) -> None:
    """Warn that handler ``name``'s ``kind`` call took ``seconds``, past ``limit``."""
    if not awaited:
        how = "held the event loop for"
    elif threaded:
        how = "ran in its worker thread for"
    else:
        how = "took"
    logger.warning(
        "event handler %s %s %.3fs on %s (slow past %ss; further slow calls are counted, "
        "not logged, until one is fast again)",
        name,
        how,
        seconds,
        KIND_NAMES[kind],
        limit,
    )


def report_running_call(
    name: str, awaiting: tuple[int, float, float], now: float, *, threaded: bool
) -> bool:
    """Warn, and return True, if the call ``awaiting`` describes (its kind, start and
    bound) has run past its bound by ``now``; return False otherwise."""
    kind, started, limit = awaiting
    if now - started <= limit:
        return False
    logger.warning(
        "event handler %s has been running for %.3fs on %s%s (slow past %ss; further slow "
        "calls are counted, not logged, until one is fast again)",
        name,
        now - started,
        KIND_NAMES[kind],
        " in its worker thread" if threaded else "",
        limit,
    )
    return True


def latency_summary(samples: Iterable[float]) -> tuple[float | None, float | None, float | None]:
    """The 50th and 99th percentiles (nearest rank) and the maximum of ``samples``;
    ``None`` for each when there are none."""
    ordered = sorted(samples)
    count = len(ordered)
    if not count:
        return None, None, None
    return (
        ordered[max(0, math.ceil(0.5 * count) - 1)],
        ordered[max(0, math.ceil(0.99 * count) - 1)],
        ordered[-1],
    )


def handler_name(handler: object, *funcs: Callable[..., Any] | None) -> str:
    """The name a handler is known by when none is given: its class's qualified name, or
    its first callback's."""
    if handler is not None:
        return type(handler).__qualname__
    for func in funcs:
        if func is not None:
            qualname = getattr(func, "__qualname__", None)
            return qualname or type(func).__qualname__
    return "handler"


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


class ListenerView(Protocol):
    """What a registration reads from its :class:`ProcessorListener`."""

    name: str

    @property
    def closed(self) -> bool: ...

    @property
    def initial_pending(self) -> int: ...

    def has_synced(self) -> bool: ...

    async def wait_closed(self) -> None: ...

    async def wait_stopped(self) -> None: ...

    async def wait_initial_handled(self) -> None: ...

    def statistics(self) -> HandlerStatistics: ...


async def started_and_synced(informer: Any, fail_fast: bool) -> bool:
    """The informer's wait for sync, once its run has begun."""
    await informer.wait_started()
    result: bool = await informer.wait_for_sync(fail_fast=fail_fast)
    return result


class HandlerRegistration:
    """The handle ``add_event_handler()`` returns: pass it to ``remove_event_handler()``."""

    __slots__ = ("_informer", "_listener")

    def __init__(self, informer: Any, listener: ListenerView) -> None:
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

    async def wait_for_sync(self, timeout: float | None = None, *, fail_fast: bool = True) -> bool:
        """Wait until :meth:`has_synced`: the informer has synced and every initial-list
        add has been handled (its call returned or raised; for an ``events()`` stream, it
        was taken). False when ``timeout`` (seconds) passes first, when the handler is
        removed first, or when the informer stops first. An informer not started yet is
        waited for (a handler is registered before its informer starts).

        The per-handler form of ``informer.wait_for_sync()``, raising as it does, when
        its first list failed in a way no retry alone heals (with ``fail_fast``) or its
        run failed: a handler that fills its own state from the initial list (a work
        queue, an in-memory map) is complete once this returns True."""
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
                        listener.wait_closed(), started_and_synced(informer, fail_fast)
                    )
                    if first == 0 or not wait.result():
                        return False
                # Past the informer's sync no initial-list add is queued any more: the
                # count only falls from here.
                while listener.initial_pending > 0 and not listener.closed:
                    await listener.wait_initial_handled()
                return listener.has_synced()
        except CacheSyncError:
            raise  # the informer's, failing fast: a TimeoutError, but not this wait's
        except TimeoutError:
            return False

    async def wait_stopped(self) -> None:
        """Return once the handler is removed (or its informer stopped) and no call of it
        runs any more: a call that was running when it was removed has returned. What a
        controller for a resource that goes away waits for before it lets go of what its
        handler used (client-go 1.37's wait for a listener's shutdown). Waits until then
        when the handler was not removed; ``RuntimeError`` from inside the handler's own
        call, which would wait for itself."""
        await self._listener.wait_stopped()

    def statistics(self) -> HandlerStatistics:
        """This handler's counters."""
        return self._listener.statistics()

    def __repr__(self) -> str:
        return f"<HandlerRegistration {self.name!r} of {self._informer.name!r}>"


def in_worker_thread(fn: HandlerFunc) -> Callable[..., Coroutine[Any, Any, Any]]:
    """An async function that runs ``fn`` in the loop's default executor and returns what
    it returned. Cancelled meanwhile, it ends at once: a thread cannot be stopped, so the
    running call is left to finish on its own (its result dropped) and a warning says so;
    waiting for it would let one stuck handler hold up its informer's stop for good."""

    async def call(*args: Any) -> Any:
        context = contextvars.copy_context()
        returned = False

        def run() -> Any:
            nonlocal returned
            try:
                return context.run(fn, *args)
            finally:
                returned = True

        try:
            return await asyncio.get_running_loop().run_in_executor(None, run)
        except asyncio.CancelledError:
            if not returned:
                logger.warning(
                    "event handler %s was still running in its worker thread when its"
                    " informer stopped; the call is left to finish on its own",
                    handler_name(None, fn),
                )
            raise

    return call
