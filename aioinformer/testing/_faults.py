"""Fault injection for the fake API server: what is armed, what took effect.

Role: holds the misbehaviour a test scripted through :class:`Faults` and answers the
server's questions about it. Input is the test's calls (``fail_next``,
``drop_watch_after``...) and the server's requests for the fault that applies to a request
or a new watch; output is the armed fault (a :class:`WatchFault` or a :class:`Failure`),
the ``Status`` error an injected failure answers with, and one :class:`FaultRecord` per
fault that took effect.

Ordering: watch faults are taken in arming order (the first that matches the watch's
resource); a watch fault handed back by a watch that ended too early goes first in line
again. Request failures match in arming order and each counts down its own budget, as
lost watch events (``drop_watch_events``) do.
:attr:`Faults.log` is in the order the faults took effect.

Task model: no tasks of its own except the timer that listens again after
``refuse_connections(seconds)``, which runs on the server's task set (see
:class:`ConnectionHost`). Everything else is synchronous on the server's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from aioinformer._apiserver.objects import ResourceType, StatusError, status_body

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterable

    from aioinformer._apiserver.watch import Change
    from aioinformer._kernel.clock import Clock

__all__ = [
    "ConnectionHost",
    "Failure",
    "FaultPlan",
    "FaultRecord",
    "Faults",
    "LostEvents",
    "WatchFault",
    "WatchFreezer",
    "failure_error",
]

WATCH_EVENT_TYPES: Final = frozenset({"ADDED", "MODIFIED", "DELETED"})
"""The event types a watch cache can lose (``drop_watch_events``)."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FaultRecord:
    """One injected fault that took effect: ``kind`` names it, ``path`` is the request
    it hit (``""`` for server-wide faults), ``detail`` says how."""

    kind: str
    path: str
    detail: str
    at: float


@dataclass(slots=True)
class WatchFault:
    """A fault armed for the next matching watch, due after ``after`` lines were sent."""

    kind: str  # "drop", "drop_abrupt", "close_mid_line", "garbage_line", "stall"
    after: int
    resource: str | None


@dataclass(slots=True)
class Failure:
    """An injected answer for the next ``remaining`` matching requests."""

    status: int
    retry_after: float | None
    resource: str | None
    verb: str | None
    remaining: int
    reason: str | None = None


@dataclass(slots=True)
class LostEvents:
    """The next ``remaining`` watch events of ``types`` (on ``resource`` when given) are
    lost by the watch cache."""

    remaining: int
    resource: str | None
    types: frozenset[str]


def _matches(resource: str | None, rt: ResourceType | None) -> bool:
    return resource is None or (rt is not None and resource in (rt.plural, rt.qualified))


_Budgeted = TypeVar("_Budgeted", Failure, LostEvents)


def _spend(armed: list[_Budgeted], applies: Callable[[_Budgeted], bool]) -> _Budgeted | None:
    """The first of ``armed`` that ``applies``, one of its ``remaining`` spent (disarmed
    at zero); ``None`` when none applies."""
    for entry in armed:
        if applies(entry):
            entry.remaining -= 1
            if entry.remaining <= 0:
                armed.remove(entry)
            return entry
    return None


class FaultPlan:
    """The faults armed and not yet spent; the server's side of :class:`Faults`.

    Invariants: a :class:`Failure` in ``failures``, and a :class:`LostEvents` in
    ``lost``, has ``remaining > 0``; ``latency`` and ``event_delay`` are never negative.
    """

    __slots__ = ("event_delay", "event_delay_resource", "failures", "latency", "lost", "watch")

    def __init__(self) -> None:
        self.watch: list[WatchFault] = []
        self.failures: list[Failure] = []
        self.lost: list[LostEvents] = []
        self.latency = 0.0
        self.event_delay = 0.0
        self.event_delay_resource: str | None = None

    def watch_event_delay(self, rt: ResourceType) -> float:
        """Seconds to hold back each batch of events sent on a watch on ``rt``."""
        if self.event_delay and _matches(self.event_delay_resource, rt):
            return self.event_delay
        return 0.0

    def take_watch_fault(self, rt: ResourceType) -> WatchFault | None:
        """Disarm and return the first watch fault that applies to a watch on ``rt``."""
        for i, fault in enumerate(self.watch):
            if _matches(fault.resource, rt):
                return self.watch.pop(i)
        return None

    def return_watch_fault(self, fault: WatchFault) -> None:
        """Re-arm ``fault`` first in line: its watch ended before the fault fired."""
        self.watch.insert(0, fault)

    def take_failure(self, rt: ResourceType | None, verb: str) -> Failure | None:
        """The failure that answers a ``verb`` request on ``rt`` (``None``: discovery)."""
        return _spend(
            self.failures,
            lambda f: _matches(f.resource, rt) and (f.verb is None or f.verb == verb),
        )

    def take_lost_event(self, rt: ResourceType, event_type: str) -> bool:
        """Whether a ``event_type`` event on ``rt`` is to be lost (counting it down)."""
        spent = _spend(self.lost, lambda e: event_type in e.types and _matches(e.resource, rt))
        return spent is not None

    def clear(self) -> None:
        """Disarm everything and remove latency."""
        self.watch.clear()
        self.failures.clear()
        self.lost.clear()
        self.latency = 0.0
        self.event_delay = 0.0


# kube-apiserver's Status reason and message for each code an injected failure may take.
_FAILURES: Final[dict[int, tuple[str, str]]] = {
    400: ("BadRequest", "injected failure"),
    401: ("Unauthorized", "Unauthorized"),
    403: ("Forbidden", "forbidden: injected failure"),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    406: ("NotAcceptable", "injected failure"),
    409: ("Conflict", "Operation cannot be fulfilled: injected failure"),
    410: ("Expired", "too old resource version: injected failure"),
    413: ("RequestEntityTooLarge", "Request entity too large: injected failure"),
    415: ("UnsupportedMediaType", "injected failure"),
    422: ("Invalid", "injected failure"),
    429: ("TooManyRequests", "Too many requests, please try again later."),
    500: ("InternalError", "Internal error occurred: injected failure"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "Timeout: the request timed out"),
}


def failure_error(failure: Failure) -> StatusError:
    """The ``Status`` error kube-apiserver would answer with for ``failure.status``
    (``failure.reason`` overriding the usual reason for the code, e.g.
    ``AlreadyExists`` for a 409), with Retry-After (header and ``details``) for 429 and
    5xx when one was asked for."""
    code = failure.status
    headers: dict[str, str] = {}
    details: dict[str, Any] | None = None
    default = "InternalError" if code >= 500 else "BadRequest"
    reason, message = _FAILURES.get(code, (default, "injected failure"))
    if failure.reason is not None:
        reason = failure.reason
    if failure.retry_after is not None and (code == 429 or code >= 500):
        seconds = failure.retry_after
        headers["Retry-After"] = str(int(seconds)) if seconds == int(seconds) else str(seconds)
        details = {"retryAfterSeconds": int(seconds)}
    return StatusError(status_body(code, reason, message, details), headers)


class ConnectionHost(Protocol):
    """What connection faults need from the server: its clock, its listening socket and
    a task set that the server reaps when it stops."""

    @property
    def clock(self) -> Clock:
        """The clock that times ``refuse_connections(seconds)``."""
        ...

    async def stop_listening(self) -> None:
        """Close the listening socket and drop every open connection."""
        ...

    async def start_listening(self) -> bool:
        """Listen again on the same port; ``False`` when already listening."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task the server cancels when it stops."""
        ...


class WatchFreezer(Protocol):
    """What :meth:`Faults.freeze_watches` needs from the server's watch streams."""

    def freeze(self, applies: Callable[[ResourceType], bool]) -> list[str]:
        """Silence every open stream on a resource ``applies`` accepts; their paths."""
        ...


class Faults:
    """Scriptable misbehaviour of a :class:`FakeAPIServer`; every fault that takes effect
    is appended to :attr:`log`.

    ``delay_watch_events`` holds back the events of every watch until removed.
    Watch faults (``drop_watch_after``, ``close_mid_line``, ``garbage_line``,
    ``stall_watch``) arm the next watch opened (on ``resource`` when given); each arms one
    watch, and a watch that ends before the fault's turn came hands it on to the next
    one, so an armed fault always takes effect once. ``freeze_watches`` acts at once on the
    watches open at that moment instead. ``drop_watch_events`` loses the next writes'
    events from every watch while the objects change in storage, as a faulty watch
    cache does. Request faults (``fail_next``,
    ``latency``) apply to every request they match. Connection faults
    (``refuse_connections``, ``accept_connections``) are async since they stop and
    restart the listening socket.
    """

    def __init__(self, host: ConnectionHost, plan: FaultPlan) -> None:
        self._host = host
        self._plan = plan
        self.log: list[FaultRecord] = []
        self._changed = asyncio.Event()
        self._freezer: WatchFreezer | None = None

    def attach_freezer(self, freezer: WatchFreezer) -> None:
        """Give :meth:`freeze_watches` the server's open watch streams."""
        self._freezer = freezer

    # -- arming --------------------------------------------------------------------------

    def drop_watch_after(
        self, n: int, *, resource: str | None = None, abrupt: bool = False
    ) -> None:
        """End the next watch after ``n`` lines: cleanly (as a server-side timeout does),
        or with ``abrupt=True`` by closing the connection without ending the body."""
        self._plan.watch.append(WatchFault("drop_abrupt" if abrupt else "drop", n, resource))

    def close_mid_line(self, after: int = 0, *, resource: str | None = None) -> None:
        """After ``after`` lines, send half a line and close the connection."""
        self._plan.watch.append(WatchFault("close_mid_line", after, resource))

    def garbage_line(self, after: int = 0, *, resource: str | None = None) -> None:
        """After ``after`` lines, send a line that is not JSON, then carry on."""
        self._plan.watch.append(WatchFault("garbage_line", after, resource))

    def stall_watch(self, after: int = 0, *, resource: str | None = None) -> None:
        """After ``after`` lines, keep the stream open but send nothing more (no events,
        no bookmarks), until the client gives up or the server stops."""
        self._plan.watch.append(WatchFault("stall", after, resource))

    def freeze_watches(self, *, resource: str | None = None) -> int:
        """Silence every watch open now (on ``resource`` when given), as a dead network
        path does: no more bytes, no bookmarks, not even the end at ``timeoutSeconds``,
        while the connection stays open until the client closes it. Watches opened
        afterwards work normally (the next connection gets through). Each frozen watch
        logs a ``"freeze_watch"`` record now, and a ``"frozen_watch_closed"`` one when
        its connection ends. Returns how many watches were frozen."""
        if self._freezer is None:
            raise RuntimeError("freeze_watches needs the server's watch streams")
        paths = self._freezer.freeze(lambda rt: _matches(resource, rt))
        for path in paths:
            self.record("freeze_watch", path, "no bytes until the client closes it")
        return len(paths)

    def drop_watch_events(
        self,
        count: int = 1,
        *,
        resource: str | None = None,
        types: Iterable[str] = ("DELETED",),
    ) -> None:
        """Lose the events of the next ``count`` writes whose event is of one of ``types``
        (``"ADDED"``, ``"MODIFIED"``, ``"DELETED"``; on ``resource`` when given), as the
        watch cache of kube-apiserver has been seen to lose deletes
        (kubernetes/kubernetes#123072): the write succeeds and LISTs and GETs show it,
        but no watch ever hears of it, neither the open ones nor one opened later from
        an older resourceVersion, while bookmarks move past it. A watcher's cache keeps
        the object until it relists. A streaming list (``sendInitialEvents``) reads the
        stored state, as a LIST does. Matched on the write's own event type (an update
        that moves an object out of a watch's selector is a ``MODIFIED``). Each lost event
        logs a ``"drop_watch_event"`` record naming the type, key and resourceVersion.
        ``ValueError`` for a ``count`` below 1 or another type."""
        if count < 1:
            raise ValueError(f"drop_watch_events: count must be at least 1, got {count!r}")
        kinds = frozenset(types)
        if not kinds or not kinds <= WATCH_EVENT_TYPES:
            raise ValueError(
                f"drop_watch_events: types must be among ADDED, MODIFIED and DELETED, "
                f"got {sorted(kinds)!r}"
            )
        self._plan.lost.append(LostEvents(count, resource, kinds))

    def loses(self, event: Change) -> bool:
        """The store's question for each write: is ``event`` lost by the watch cache?
        (see :meth:`drop_watch_events`); records it when it is."""
        if not self._plan.lost or not self._plan.take_lost_event(event.rt, event.type):
            return False
        self.record(
            "drop_watch_event",
            "",
            f"{event.type} {event.key} at resourceVersion {event.rv}",
        )
        return True

    def fail_next(
        self,
        k: int = 1,
        *,
        status: int = 429,
        retry_after: float | None = 1,
        resource: str | None = None,
        verb: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Answer the next ``k`` matching requests with ``status``, carrying the reason
        kube-apiserver gives that code (429 ``TooManyRequests`` with Retry-After, 409
        ``Conflict``, 410 ``Expired``, 422 ``Invalid``, 500 ``InternalError``, 503
        ``ServiceUnavailable``...) or ``reason`` when given (``"AlreadyExists"``,
        ``"Gone"``)."""
        self._plan.failures.append(Failure(status, retry_after, resource, verb, k, reason))

    def delay_watch_events(self, seconds: float, *, resource: str | None = None) -> None:
        """Hold back every event sent on a watch (on ``resource`` when given) for
        ``seconds`` on the server's clock, open watches included, as a lagging watch cache
        does: a write is answered at once but its watchers hear of it late. Bookmarks are
        not delayed, but never overtake the events held back. 0 removes it."""
        self._plan.event_delay = max(0.0, seconds)
        self._plan.event_delay_resource = resource
        self.record("delay_watch_events", "", f"{seconds}s on {resource or 'every resource'}")

    def latency(self, seconds: float) -> None:
        """Delay every request by ``seconds`` (on the server's clock); 0 removes it."""
        self._plan.latency = max(0.0, seconds)

    async def refuse_connections(self, seconds: float | None = None) -> None:
        """Stop listening and drop open connections: connects get ECONNREFUSED. After
        ``seconds`` (on the server's clock) or at :meth:`accept_connections`, listen on
        the same port again."""
        await self._host.stop_listening()
        self.record("refuse_connections", "", "" if seconds is None else f"for {seconds}s")
        if seconds is not None:
            self._host.spawn(self._reopen_after(seconds))

    async def _reopen_after(self, seconds: float) -> None:
        await self._host.clock.sleep(seconds)
        await self.accept_connections()

    async def accept_connections(self) -> None:
        """Listen again after :meth:`refuse_connections` (no-op when listening)."""
        if await self._host.start_listening():
            self.record("accept_connections", "", "")

    def clear(self) -> None:
        """Disarm every pending fault and remove latency (the log is kept)."""
        self._plan.clear()

    # -- records ---------------------------------------------------------------------------

    def record(self, kind: str, path: str, detail: str) -> None:
        """Log that a fault of ``kind`` took effect on ``path`` and wake :meth:`wait_for`."""
        self.log.append(FaultRecord(kind, path, detail, time.monotonic()))
        logger.debug("fake apiserver fault %s on %r: %s", kind, path, detail)
        self._changed.set()

    def count(self, kind: str) -> int:
        """How many faults of ``kind`` took effect so far."""
        return sum(1 for record in self.log if record.kind == kind)

    async def wait_for(self, kind: str, count: int = 1, *, timeout: float = 5.0) -> None:
        """Wait (in real time, bounded) until ``count`` faults of ``kind`` took effect."""
        async with asyncio.timeout(timeout):
            while self.count(kind) < count:
                self._changed.clear()
                await self._changed.wait()
