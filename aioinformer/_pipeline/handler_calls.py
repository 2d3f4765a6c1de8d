"""How one handler's callbacks are called and watched: binding, worker threads, slow calls
and delivery latency.

Role: the part of :class:`~aioinformer.processor.ProcessorListener` that concerns a single
call. :func:`bind_calls` settles once, at registration, how each callback is called
(awaited or not, converted first or not, in a worker thread or on the event loop) and how
long it may take before it counts as slow; :func:`report_slow_call` writes the warning of
a slow episode; :func:`latency_summary` turns the recent delivery latencies into
percentiles for the :class:`HandlerStatistics` record ``statistics()`` returns.

Input: the user's ``on_add``/``on_update``/``on_delete`` callbacks and the handler's
options. Output: :data:`Call` tuples the listener's delivery loop unpacks per
notification, and log records.

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

Task model: no task of its own; everything except the threaded calls themselves runs on
the event loop's thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias, runtime_checkable

from aioinformer._kernel.runner import is_async_callable, reads_argument
from aioinformer.errors import InvalidObjectError
from aioinformer.models import DeletedFinalStateUnknown

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterable

__all__ = [
    "DEFAULT_SLOW_HANDLER_THRESHOLDS",
    "LATENCY_WINDOW",
    "Call",
    "EventHandler",
    "HandlerFunc",
    "HandlerStatistics",
    "OverflowPolicy",
    "SkipDelivery",
    "SlowHandlerThresholds",
    "bind_calls",
    "converted_deleted",
    "converted_old",
    "handler_name",
    "latency_summary",
    "report_running_call",
    "report_slow_call",
]

logger = logging.getLogger(__name__)

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

_KIND_NAMES: Final = ("add", "update", "delete")


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


class SkipDelivery(Exception):
    """Raised by a bound call, before the handler is called, when the object to deliver
    does not validate into the informer's model: the listener skips that notification.
    Its own type, so an :class:`~aioinformer.errors.InvalidObjectError` the handler
    itself lets out still counts as the handler's failure."""


def converted_old(convert: Callable[[Any], Any], old: Any) -> Any:
    """An update's ``old`` converted, or ``None`` when it does not validate: the update
    still carries the valid new state."""
    try:
        return convert(old)
    except InvalidObjectError:
        return None


def converted_deleted(convert: Callable[[Any], Any], obj: Any) -> Any:
    """A deleted object converted, or, when it does not validate, a tombstone without a
    last state: the deletion itself must still reach the reader."""
    try:
        return convert(obj)
    except InvalidObjectError as error:
        return DeletedFinalStateUnknown(error.key, None)


Call: TypeAlias = "tuple[HandlerFunc, bool, bool, float]"
"""A callback bound for delivery: (function, is it awaited, does it take one argument,
seconds past which a call is slow)."""


def _in_worker_thread(fn: HandlerFunc) -> Callable[..., Coroutine[Any, Any, Any]]:
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
                    f"run_in_thread=True needs sync callbacks; on_{_KIND_NAMES[kind]} "
                    f"({handler_name(None, fn)}) is async"
                )
            target = _in_worker_thread(fn)
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
        _KIND_NAMES[kind],
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
        _KIND_NAMES[kind],
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
