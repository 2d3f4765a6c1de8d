"""The fake API server's watch streams: one chunked 200 response of JSON lines per watch.

Role: turns a WATCH request (read by ``_apiserver.requests.watch_query``, as the proxy
reads it) into a :class:`~aioinformer._apiserver.watch.Watcher` of the resource's watch
cache and writes what the store offers it. Input is the parsed request (resource, query,
negotiated conversion), the store's fan-out into the watcher's buffer, the server's clock
and the armed watch faults; output is the response body: the initial events or the
history since the requested resourceVersion, live events, a BOOKMARK every
``bookmark_interval`` when asked for, and the injected faults (a garbage line, half a
line, a dropped, stalled or frozen stream), each recorded in the fault log. A watch of a
version its definition's webhook converts (``_converter``) has each event's object
converted before it is written, one review per event; an event that fails to convert
ends the stream, as kube-apiserver ends a watch it cannot encode. A version older than
the history is answered as kube-apiserver v1.36.2 answers it: HTTP 200, one ``ERROR``
line carrying the 410 ``Expired`` Status (``too old resource version: 1 (216)``), then the
end of the stream; with ``expired_watch="status"`` the request itself answers HTTP 410,
for tests of a client's handling of that answer (other servers and paths can give it).

Compression (``watch_list_compression``, kube-apiserver 1.37's ``WatchListCompression``
feature gate): a streaming list (:func:`~aioinformer._apiserver.requests.streams_a_list`)
whose request accepts gzip (:func:`~aioinformer._apiserver.requests.accepts_gzip`) is
answered ``Content-Encoding: gzip``, and every line of it, initial events, bookmarks, live
events and injected faults alike, is written as a gzip member of its own (level 1, as
kube-apiserver's), each in its own write: the worst case of 1.37, which closes a member at
every flush and flushes whenever no further event is queued. Any other watch is written as
is.

Ordering: lines go out in the order the store queued them (resourceVersion order); a
bookmark is only written when the buffer is empty, so its version is safe to resume from.
A watch fault fires exactly after its ``after``-th line; a watch that ends before that
hands the fault back to the plan for the next watch.

Task model: each stream runs in its aiohttp handler task and sleeps on its watcher's
``wake`` event, bounded by the next bookmark or ``timeoutSeconds`` on the server's clock.
Everything accumulated between two wake-ups goes out in one ``write()`` (one per line
when compressed). The registry (:class:`WatchStreams`) is only touched from handlers and
the server's lifecycle, all on one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

from aioinformer._apiserver.objects import ResourceType, StatusError
from aioinformer._apiserver.requests import (
    Conversion,
    WatchListSupport,
    accepts_gzip,
    streams_a_list,
    watch_query,
    watch_response,
)
from aioinformer._apiserver.watch import Watcher, bookmark_line, error_line
from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.runner import first_completed

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp import web

    from aioinformer.testing._converter import Conversions
    from aioinformer.testing._faults import FaultPlan, Faults, WatchFault
    from aioinformer.testing._requests import (
        Target,
    )
    from aioinformer.testing._store import Store

__all__ = [
    "ActiveWatch",
    "ExpiredWatch",
    "StreamSettings",
    "WatchListSupport",
    "WatchStreams",
]

ExpiredWatch: TypeAlias = Literal["status", "error_event"]
"""How a watch from a compacted resourceVersion is answered (see
``FakeAPIServer(expired_watch=...)``): ``"error_event"``, one ERROR event in a 200 stream
(kube-apiserver v1.36.2's answer), or ``"status"``, an HTTP 410 on the request."""

logger = logging.getLogger(__name__)


class StreamSettings(Protocol):
    """The server's options a stream reads when it starts (they may change between
    watches): the clock for timeouts and bookmarks, and the bookmark interval."""

    @property
    def clock(self) -> Clock:
        """Times ``timeoutSeconds`` and bookmarks."""
        ...

    @property
    def bookmark_interval(self) -> float:
        """Seconds between two BOOKMARKs on a watch that allows them."""
        ...

    @property
    def watch_list(self) -> WatchListSupport:
        """How a watch with ``sendInitialEvents`` is answered."""
        ...

    @property
    def expired_watch(self) -> ExpiredWatch:
        """How a watch from a compacted resourceVersion is answered."""
        ...

    @property
    def watch_list_compression(self) -> bool:
        """Whether a streaming list that accepts gzip is compressed, one member per line."""
        ...


@dataclass(eq=False, slots=True)
class ActiveWatch:
    """One open watch stream: its watcher and the request whose connection carries it;
    ``frozen`` once ``Faults.freeze_watches`` silenced it (never cleared)."""

    watcher: Watcher
    request: web.Request
    frozen: bool = False


class WatchStreams:
    """Every open watch stream of one server, and the handler that serves a new one.

    Invariants: ``active`` holds exactly the streams whose handler is between opening
    its watcher and closing it; ``changed`` is set whenever ``active`` changed; once
    ``closing`` is set, every stream ends at its next wake-up.
    """

    def __init__(
        self,
        settings: StreamSettings,
        *,
        store: Store,
        plan: FaultPlan,
        faults: Faults,
        conversions: Conversions | None = None,
    ) -> None:
        self._settings = settings
        self._conversions = conversions
        self._store = store
        self._plan = plan
        self._faults = faults
        self.active: set[ActiveWatch] = set()
        self.changed = asyncio.Event()
        self.closing = False

    # -- the registry --------------------------------------------------------------------

    def count(self, rt: ResourceType | None = None) -> int:
        """How many streams are open (on ``rt`` when given)."""
        return sum(1 for a in self.active if rt is None or a.watcher.rt.id == rt.id)

    async def wait_for(self, count: int, *, rt: ResourceType | None, timeout: float) -> None:
        """Wait (in real time, bounded) until ``count`` streams are open (on ``rt``)."""
        async with asyncio.timeout(timeout):
            while self.count(rt) < count:
                self.changed.clear()
                await self.changed.wait()

    def close_all(self) -> None:
        """Ask every stream to end cleanly at its next wake-up."""
        for active in list(self.active):
            active.watcher.close()

    def abort_all(self) -> None:
        """End every stream and cut its connection without ending the body."""
        for active in list(self.active):
            active.watcher.close()
            transport = active.request.transport
            if transport is not None:
                transport.abort()

    def freeze(self, applies: Callable[[ResourceType], bool]) -> list[str]:
        """Silence every open stream whose resource ``applies`` (see
        ``Faults.freeze_watches``); the request paths of those newly frozen."""
        paths = []
        for active in self.active:
            if not active.frozen and applies(active.watcher.rt):
                active.frozen = True
                active.watcher.wake.set()
                paths.append(active.request.path)
        return sorted(paths)

    # -- the handler -----------------------------------------------------------------------

    async def serve(
        self,
        request: web.Request,
        target: Target,
        query: dict[str, str],
        convert: Conversion | None,
        *,
        shard_selectors: bool = False,
    ) -> web.StreamResponse:
        """Answer a WATCH request (see the module docstring); ``shard_selectors``: its
        ``shardSelector`` is served (the server's feature gate is on), not ignored."""
        options, timeout = watch_query(
            target.rt,
            query,
            convert,
            name=target.name,
            watch_list=self._settings.watch_list,
            shard_selectors=shard_selectors,
        )
        bookmarks = options["bookmarks"]
        compress = (
            self._settings.watch_list_compression
            and streams_a_list(query, watch_list=self._settings.watch_list)
            and accepts_gzip(request.headers.get("Accept-Encoding", ""))
        )
        response = watch_response(gzip=compress)
        out = _Lines(response, compress=compress)
        try:
            watcher = self._store.open_watch(target.rt, namespace=target.namespace, **options)
        except StatusError as exc:
            if exc.code != 410 or self._settings.expired_watch == "status":
                raise
            try:
                await response.prepare(request)
                await out.write([error_line(exc.status)])
                await response.write_eof()
            except ConnectionError:
                logger.debug("watch client on %s went away before its 410", request.path)
            return response
        active = ActiveWatch(watcher, request)
        self.active.add(active)
        self.changed.set()
        try:
            await response.prepare(request)
            await self._stream(request, out, active, timeout=timeout, bookmarks=bookmarks)
        except ConnectionError:
            logger.debug("watch client on %s went away", request.path)
        finally:
            self._store.close_watch(watcher)
            self.active.discard(active)
            self.changed.set()
            if active.frozen:
                self._faults.record("frozen_watch_closed", request.path, "")
        return response

    async def _stream(
        self,
        request: web.Request,
        out: _Lines,
        active: ActiveWatch,
        *,
        timeout: int | None,
        bookmarks: bool,
    ) -> None:
        watcher = active.watcher
        clock = self._settings.clock
        start = clock.monotonic()
        end = start + timeout if timeout else None
        interval = self._settings.bookmark_interval
        next_bookmark = start + interval if bookmarks else None
        fault = self._plan.take_watch_fault(watcher.rt)
        sent = 0
        try:
            while True:
                if active.frozen:
                    await self._frozen(watcher)
                    # A dead path never delivers a clean end either.
                    _abort(request, watcher)
                    return
                if end is not None and clock.monotonic() >= end:
                    break
                if watcher.buffer:
                    batch = watcher.buffer
                    watcher.buffer = []
                    if self._conversions is not None and watcher.as_meta is None:
                        try:
                            batch = await self._conversions.lines(watcher.rt, batch)
                        except StatusError as exc:
                            # kube-apiserver ends a watch whose event it cannot encode.
                            logger.info("watch on %s ends: %s", request.path, exc.status["message"])
                            break
                    held = self._plan.watch_event_delay(watcher.rt)
                    if held:
                        # Taken before the wait: what arrives meanwhile waits its own turn.
                        await clock.sleep(held)
                    if fault is not None and sent + len(batch) >= fault.after:
                        cut = fault.after - sent
                        await out.write(batch[:cut])
                        sent += cut
                        applied, fault = fault, None
                        outcome = await self._apply_fault(
                            request, out, watcher, applied, batch[cut:]
                        )
                        if outcome == "end":
                            break
                        if outcome == "abort":
                            return
                        continue
                    await out.write(batch)
                    sent += len(batch)
                    continue
                if watcher.closed or self.closing:
                    break
                now = clock.monotonic()
                if fault is not None and fault.after <= sent:
                    applied, fault = fault, None
                    outcome = await self._apply_fault(request, out, watcher, applied, [])
                    if outcome == "end":
                        break
                    if outcome == "abort":
                        return
                    continue
                if next_bookmark is not None and now >= next_bookmark:
                    # Everything up to the newest write was offered to this watcher (its
                    # buffer is empty), so that version is safe to resume from.
                    rv = max(self._store.rv, watcher.min_rv)
                    await out.write([bookmark_line(watcher.rt, rv, as_meta=watcher.as_meta)])
                    sent += 1
                    next_bookmark = now + interval
                    continue
                deadlines = [d for d in (end, next_bookmark) if d is not None]
                delay = min(deadlines) - now if deadlines else None
                watcher.wake.clear()
                await _wait(clock, watcher.wake, delay)
        finally:
            if fault is not None:
                # The watch ended before the fault's turn: the next watch gets it.
                self._plan.return_watch_fault(fault)
        if not _aborted(request):
            await out.response.write_eof()

    async def _apply_fault(
        self,
        request: web.Request,
        out: _Lines,
        watcher: Watcher,
        fault: WatchFault,
        rest: list[bytes],
    ) -> str:
        kind = fault.kind
        path = request.path
        if kind == "garbage_line":
            self._faults.record("garbage_line", path, f"after {fault.after} lines")
            await out.write([b"{this is not json at all\n", *rest])
            return "continue"
        if kind == "drop":
            self._faults.record("drop_watch", path, f"after {fault.after} lines")
            return "end"
        if kind == "drop_abrupt" or kind == "close_mid_line":
            if kind == "close_mid_line":
                line = rest[0] if rest else b'{"type":"MODIFIED","object":{"kind":"Status"}}\n'
                self._faults.record("close_mid_line", path, f"after {fault.after} lines")
                await out.write([line[: max(1, len(line) // 2)]])
            else:
                self._faults.record("drop_watch", path, f"abruptly after {fault.after} lines")
            _abort(request, watcher)
            return "abort"
        # stall: nothing more on this stream until it is closed from either side
        self._faults.record("stall_watch", path, f"after {fault.after} lines")
        await self._frozen(watcher)
        return "end"

    async def _frozen(self, watcher: Watcher) -> None:
        """Send nothing, dropping what the store offers, until the watch is closed from
        either side (the client going away cancels the handler)."""
        while not watcher.closed and not self.closing:
            watcher.buffer.clear()
            watcher.wake.clear()
            await watcher.wake.wait()


class _Lines:
    """Writes a watch's lines to its response: as they are, all of a batch in one write,
    or, with ``compress``, each line as a gzip member of its own, in a write of its own."""

    __slots__ = ("compress", "response")

    def __init__(self, response: web.StreamResponse, *, compress: bool) -> None:
        self.response = response
        self.compress = compress

    async def write(self, lines: list[bytes]) -> None:
        if not lines:
            return
        if not self.compress:
            await self.response.write(lines[0] if len(lines) == 1 else b"".join(lines))
            return
        for line in lines:
            await self.response.write(gzip.compress(line, compresslevel=1, mtime=0))


def _aborted(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _abort(request: web.Request, watcher: Watcher) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort()
    watcher.close()


async def _wait(clock: Clock, event: asyncio.Event, delay: float | None) -> None:
    """Wait for ``event``, at most ``delay`` seconds on ``clock`` (``None``: no bound)."""
    if delay is None:
        await event.wait()
        return
    if delay <= 0:
        return
    # The loop's own timeout is cheaper than racing two tasks; only a substituted clock
    # (a FakeClock a test drives) needs the race.
    if clock is default_clock:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await event.wait()
        return
    await first_completed(event.wait(), clock.sleep(delay))
