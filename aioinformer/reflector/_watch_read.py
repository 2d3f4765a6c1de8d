"""Reading one watch stream into a store: the watch read, its deadlines and sinks.

Part of :mod:`aioinformer.reflector`: a :class:`WatchRead` applies what one open watch
(:class:`OpenWatch`) brings to a store, a read at a time, checks each event's type and
resourceVersion, watches for silence (the inactivity deadline) and for a streaming list's
end; :class:`TemporaryStore` and :class:`Cursor` are what a streaming list fills and
follows before its objects replace the store's. Run by the reflector's task; nothing here
starts a task of its own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Final, Protocol

from aioinformer._kernel.clock import Clock, TimerHandle, call_later
from aioinformer._objects.meta import annotations_of, meta_namespace_key
from aioinformer._pipeline.reflector_status import LastHeard
from aioinformer._pipeline.watch_policy import (
    WatchEnd,
)
from aioinformer.codec import Head, head_of
from aioinformer.errors import (
    AioinformerError,
    WatchError,
    WatchTimeout,
    error_from_watch_status,
)
from aioinformer.listwatch import (
    ADDED,
    BOOKMARK,
    DELETED,
    ERROR,
    INITIAL_EVENTS_END_ANNOTATION,
    MODIFIED,
    EventFailures,
    WatchBatchSink,
    WatchEvent,
    WatchStreamBase,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

logger = logging.getLogger("aioinformer.reflector")


# -- reading one watch stream into a store ------------------------------------------------


DEFAULT_WATCH_INACTIVITY_TIMEOUT: Final = 120.0
"""Seconds of silence after which a watch is presumed dead, unless configured otherwise.

A reflector always asks for bookmarks, and kube-apiserver sends an idle watch that asked
for them one about every 60 s: two missed bookmarks mean the stream, or the path to it,
is gone."""

INACTIVITY_GRACE: Final = 30.0
"""Seconds past a watch's ``timeoutSeconds`` by which the server must have ended it: the
most any inactivity deadline is allowed to be."""

DEADLINE_TICKS: Final = 20
"""The inactivity check looks at a stream this many times per deadline, so a silent stream
is closed between 1 and 1.05 times the deadline after its last event (126 s at most by
default)."""
INITIAL_EVENTS_GRACE: Final = 10.0
"""Seconds a streaming list still waits for its initial-events-end bookmark after a plain
bookmark, or after its last event when it has brought events and no bookmark at all,
before it gives up on the source. It is measured at the inactivity check's ticks (no
clock is read per event), so it gives up between 10 s and 10 s plus two ticks after the
last event (22 s with the default deadline), one tick after a plain bookmark.
kube-apiserver sends the initial-events-end bookmark right after the last initial event,
and no plain bookmark before it: a source that does either ignores ``sendInitialEvents``
and serves a plain watch."""


def inactivity_deadline(configured: float | None, timeout_seconds: int) -> float:
    """The silence deadline of one watch asked for ``timeout_seconds``: ``configured``
    (default :data:`DEFAULT_WATCH_INACTIVITY_TIMEOUT`), capped at ``timeout_seconds`` plus
    :data:`INACTIVITY_GRACE`, since a server that has not ended the watch by then has
    stopped serving it, whatever the deadline says."""
    deadline = DEFAULT_WATCH_INACTIVITY_TIMEOUT if configured is None else configured
    return min(deadline, timeout_seconds + INACTIVITY_GRACE)


_APPLIED_TYPES: Final = frozenset({ADDED, MODIFIED, DELETED, BOOKMARK})
"""The event types a store is handed; anything else is logged and skipped."""

_PER_EVENT_HANDOFF: Final = 4
"""A store that takes events one at a time (not an :class:`WatchBatchSink`) is handed a
batch with a yield to the event loop before every fourth event."""

# _HANDOFF: the reader yields to the event loop after each batch it applied. Reading a
# buffered stream never suspends, so without it the reflector would decode thousands of
# events before the FIFO's consumer and the handlers run. Every object in flight then
# outlives a young-generation collection: the replaced objects die late, the collector's
# allocation count never balances, and each cached object is promoted to the oldest
# generation, whose full collections traverse the whole cache. Handing off after every
# read keeps the pipeline shallow (one read holds what one chunk of the body held).


class WatchSink(Protocol):
    """Where a watch's events go: a reflector's store or a :class:`TemporaryStore`."""

    async def add(self, obj: Any) -> None: ...

    async def update(self, obj: Any) -> None: ...

    async def delete(self, obj: Any) -> None: ...


class ReflectorStore(WatchSink, Protocol):
    """What a reflector writes to; ``DeltaFIFO`` is one. All methods are coroutines."""

    async def add(self, obj: Any) -> None:
        """An ``ADDED`` event's object."""
        ...

    async def update(self, obj: Any) -> None:
        """A ``MODIFIED`` event's object."""
        ...

    async def delete(self, obj: Any) -> None:
        """A ``DELETED`` event's object (its last state)."""
        ...

    async def replace(self, objs: list[Any], resource_version: str) -> None:
        """The complete state at ``resource_version``, from a list or a streaming list."""
        ...

    async def resync(self) -> None:
        """Periodic resync: re-deliver what the store holds."""
        ...

    # Optional, so not declared: ``async def bookmark(self, resource_version: str)``, a
    # ``BOOKMARK`` event's resourceVersion, called when the store has it (``DeltaFIFO``
    # does), so what the store has applied can advance on a resource nobody changes.


class Cursor:
    """The resourceVersion a stream has reached; written once per event."""

    __slots__ = ("resource_version",)

    def __init__(self, resource_version: str = "") -> None:
        self.resource_version = resource_version


class TemporaryStore(WatchBatchSink):
    """Collects a streaming list's initial events, keyed ``namespace/name``.

    Nothing reaches the real store until the whole initial state is in: then it is
    committed with one ``replace()``.
    """

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: dict[str, Any] = {}

    async def add(self, obj: Any) -> None:
        self.items[meta_namespace_key(obj)] = obj

    async def update(self, obj: Any) -> None:
        self.items[meta_namespace_key(obj)] = obj

    async def delete(self, obj: Any) -> None:
        self.items.pop(meta_namespace_key(obj), None)

    async def apply_events(self, events: Sequence[WatchEvent]) -> EventFailures:
        items = self.items
        failures: EventFailures = None
        for event in events:
            kind = event.type
            if kind == BOOKMARK:
                continue
            try:
                key = meta_namespace_key(event.object)
            except Exception as exc:  # noqa: BLE001
                # Blind on purpose: the reader reports it; the batch goes on without it.
                if failures is None:
                    failures = []
                failures.append((event, exc))
                continue
            if kind == DELETED:
                items.pop(key, None)
            else:
                items[key] = event.object
        return failures


class InitialEventsIgnored(WatchError):
    """A streaming list's source sent no initial-events-end bookmark within
    :data:`INITIAL_EVENTS_GRACE` seconds after a plain bookmark, or after its last event
    when it sent events and no bookmark: it serves the request as a plain watch (a proxy
    or a server that drops ``sendInitialEvents``, a source that replays the current
    objects to any watch from ``""``)."""


class StreamingListFailed(Exception):
    """A streaming list's stream ended before its initial-events-end bookmark: ``error``
    is what ended it (reported), ``retriable`` whether streaming again is worth it."""

    def __init__(self, error: BaseException, *, retriable: bool) -> None:
        super().__init__(error)
        self.error = error
        self.retriable = retriable


class _ErrorEvent(Exception):
    """Carries the error of an ``ERROR`` event to where the batch holding it stops."""

    def __init__(self, error: AioinformerError) -> None:
        super().__init__(error)
        self.error = error


def _raise_error_event(event_type: str, obj: Any, name: str) -> None:
    """Raise the error an ``ERROR`` event stands for (a source yielded it instead of
    raising it), wrapped for the batch to stop at it; nothing for any other event."""
    if event_type == ERROR:
        raise _ErrorEvent(error_from_watch_status(obj, url=name))


def _accepted(stream: Any) -> bool:
    """Whether a stream declares that its request was accepted (a plain one cannot)."""
    return isinstance(stream, WatchStreamBase) and stream.opened


def _ends_initial_events(bookmark: Any) -> bool:
    annotations = annotations_of(bookmark)
    return bool(annotations and annotations.get(INITIAL_EVENTS_END_ANNOTATION) == "true")


class OpenWatch:
    """A watch stream as a reflector reads it: the stream, and the one iterator it is
    read through, taken once (``batches()`` of a :class:`WatchStreamBase`, else what
    ``async for`` would read).

    Taken once because a stream's ``batches()`` or ``__aiter__`` may be an async
    generator method: a second call would start a second generator, and what the first
    one still held (the rest of a read it split) would be lost when a streaming list's
    stream carries on as the watch. Taken by the first :meth:`reader` call, inside the
    read, so that what taking it raises ends the read as any stream failure does.
    :meth:`aclose` closes that iterator, then the stream, so such a generator is closed
    when the read ends, not left to the garbage collector (whose finalizer would run its
    ``finally`` later, in a task of its own).
    """

    __slots__ = ("_iterator", "batched", "stream")

    def __init__(self, stream: AsyncIterator[WatchEvent]) -> None:
        self.stream = stream
        self.batched = isinstance(stream, WatchStreamBase)
        """Whether :meth:`reader` hands out lists of events (else one event per call)."""
        self._iterator: AsyncIterator[Any] | None = None

    def reader(self) -> Callable[[], Awaitable[Any]]:
        """The iterator's ``__anext__``, the iterator taken on the first call."""
        iterator = self._iterator
        if iterator is None:
            stream = self.stream
            # Else what ``async for`` would read: a wrapper may hand out its inner iterator.
            iterator = stream.batches() if isinstance(stream, WatchStreamBase) else aiter(stream)
            self._iterator = iterator
        return iterator.__anext__

    async def aclose(self) -> None:
        """Close the iterator read from (when taken, and not the stream itself), then the
        stream and with it the connection; either may already be closed, and either
        without an ``aclose()`` is left as it is."""
        iterator = self._iterator
        try:
            if iterator is not None and iterator is not self.stream:
                await _aclose(iterator)
        finally:
            await _aclose(self.stream)


async def _aclose(iterator: AsyncIterator[Any]) -> None:
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


class WatchRead:
    """One watch stream being read into a sink.

    ``name`` is for logs; ``deadline`` the seconds of silence after which the stream is
    ended; ``expected_kind``/``expected_api_version`` (``None``: not checked) filter the
    events' objects; ``heard`` is stamped as the read starts and, by the inactivity check,
    when the stream made progress (see :mod:`aioinformer._pipeline.reflector_status`); ``opened``
    says the watch request is known to have succeeded (a stream handed over by a
    streaming list). With ``until_initial_events_end`` the read
    stops, leaving the stream open, at the bookmark ending a streaming list's initial
    events.

    Invariants: ``_scope`` is the timeout scope around the whole read loop; ``_reading``
    is true exactly while the reader awaits the stream's next item, and the scope is
    expired only then. ``reason`` is set before the scope is expired and at most once;
    the reader checks it as soon as a read returns, so an expiry ends a read and never
    lands in a store call. ``applied <= received``. ``_timer`` is the pending
    inactivity check from the start of :meth:`run` until it returns or the check
    itself interrupts the read, else ``None``; ``_seen`` is ``received`` as of the last
    check that saw progress, and ``_quiet_ticks`` counts the checks since that found
    the reader waiting with nothing new.
    """

    __slots__ = (
        "_clock",
        "_cursor",
        "_deadline",
        "_expected_api_version",
        "_expected_kind",
        "_head",
        "_heard",
        "_name",
        "_opened",
        "_plain_bookmark_at",
        "_progress_at",
        "_quiet_ticks",
        "_reading",
        "_scope",
        "_seen",
        "_sink",
        "_stream",
        "_timer",
        "_until_initial_events_end",
        "added",
        "applied",
        "bookmarks",
        "deleted",
        "leftover",
        "modified",
        "reason",
        "received",
        "resync_failed",
    )

    def __init__(
        self,
        stream: AsyncIterator[WatchEvent] | OpenWatch,
        sink: WatchSink,
        cursor: Cursor,
        *,
        name: str,
        clock: Clock,
        deadline: float,
        head: Callable[[Any], Head | None] = head_of,
        expected_kind: str | None = None,
        expected_api_version: str | None = None,
        heard: LastHeard | None = None,
        opened: bool = False,
        until_initial_events_end: bool = False,
        pending: list[WatchEvent] | None = None,
    ) -> None:
        self._stream = stream if isinstance(stream, OpenWatch) else OpenWatch(stream)
        self._sink = sink
        self._cursor = cursor
        self._name = name
        self._clock = clock
        self._deadline = deadline
        self._head = head
        self._expected_kind = expected_kind
        self._expected_api_version = expected_api_version
        self._heard = heard if heard is not None else LastHeard()
        self._opened = opened
        self._until_initial_events_end = until_initial_events_end
        self._scope: asyncio.Timeout | None = None
        self._reading = False
        self._timer: TimerHandle | None = None
        # When a streaming list got its first bookmark that did not end the initial
        # events: kube-apiserver sends none before that end, a server ignoring
        # sendInitialEvents sends them as for any watch.
        self._plain_bookmark_at: float | None = None
        # When the inactivity check last saw the stream make progress (a streaming list
        # that got events and then nothing is waited for INITIAL_EVENTS_GRACE from here).
        self._progress_at = 0.0
        self._seen = 0
        self._quiet_ticks = 0
        self.received = 0
        """Items read from the stream: the inactivity check's measure of progress."""
        self.applied = 0
        """Events applied (``ADDED``/``MODIFIED``/``DELETED``/``BOOKMARK``)."""
        # The applied events by type, for the reflector metrics (read when the stream
        # ends); their sum is at most ``applied``, which also counts unknown types.
        self.added = self.modified = self.deleted = self.bookmarks = 0
        self.leftover: list[WatchEvent] = pending or []
        """Events read and not applied yet: those given as ``pending`` (what came after a
        streaming list's initial-events-end bookmark, applied before anything is read),
        then, once a streaming list stops at that bookmark, what followed it in its
        batch, for the watch that carries on with the stream."""
        self.reason: BaseException | None = None
        """Why the read was interrupted, once it was."""
        self.resync_failed = False
        """The interruption was a failed ``store.resync()``."""

    def interrupted(self) -> bool:
        """Whether :meth:`interrupt` was called (a call: the answer changes across reads)."""
        return self.reason is not None

    def interrupt(self, reason: BaseException, *, resync_failed: bool = False) -> None:
        """End the read in progress, if any, and stop reading."""
        if self.reason is None:
            self.reason = reason
            self.resync_failed = resync_failed
        scope = self._scope
        if self._reading and scope is not None and not scope.expired():
            scope.reschedule(asyncio.get_running_loop().time())

    async def run(self) -> tuple[bool, WatchEnd]:
        """Read the stream until it ends; whether it stopped at the initial-events-end
        bookmark (then the stream is left open; on every other way out it is closed),
        and how it ended."""
        self._seen = self.received
        self._quiet_ticks = 0
        self._timer = call_later(self._clock, self._deadline / DEADLINE_TICKS, self._check)
        started = self._heard.at = self._progress_at = self._clock.monotonic()
        done = interrupted = False
        error: BaseException | None = None
        try:
            try:
                done = await self._read()
                interrupted = not done
            except StopAsyncIteration:
                pass
            except Exception as exc:  # noqa: BLE001
                # Blind on purpose: whatever ended the stream is classified by next_step.
                error = exc
        finally:
            timer, self._timer = self._timer, None
            if timer is not None:
                timer.cancel()
            if not done:
                await self._stream.aclose()
        if interrupted:
            error = self.reason
        return done, WatchEnd(
            error=error,
            opened=self._opened or self.received > 0 or _accepted(self._stream.stream),
            events=self.applied,
            elapsed=self._clock.monotonic() - started,
            timed_out=interrupted and not self.resync_failed,
            resync_failed=interrupted and self.resync_failed,
        )

    async def _read(self) -> bool:
        """Apply events until the stream ends or the read is interrupted.

        Returns true when it stopped at the initial-events-end bookmark, false when
        interrupted. Raises ``StopAsyncIteration`` at the end of the stream, or what
        reading raised (a ``ListerWatcher`` raises the ``ApiError`` of an ``ERROR``
        event). A stream that declares batches (:class:`WatchStreamBase`) is read a batch
        at a time, any other one event at a time; either way each read is applied with one
        call into a store that takes batches (:class:`WatchBatchSink`), and the reader
        yields to the event loop once per batch, so the FIFO's consumer and the handlers
        keep up. This is the per-event path: no formatting, no allocation of its own.
        """
        batched = self._stream.batched
        read_next = self._stream.reader()
        apply = self._apply
        try:
            async with asyncio.timeout(None) as scope:
                self._scope = scope
                pending, self.leftover = self.leftover, []
                if pending and await apply(pending):
                    return True
                while not self.interrupted():
                    self._reading = True
                    try:
                        batch = await read_next() if batched else [await read_next()]
                    finally:
                        self._reading = False
                    if self.interrupted():
                        # Interrupted as the batch came in: leaving the scope disarms its
                        # expiry before it lands, and the next watch replays the events
                        # (the cursor has not moved past them).
                        return False
                    self.received += len(batch)
                    if await apply(batch):
                        return True
                    # Let the consumers catch up before decoding more (see _HANDOFF).
                    await asyncio.sleep(0)
        except TimeoutError:
            if scope.expired():
                return False
            raise
        finally:
            self._scope = None
        return False

    async def _apply(self, batch: list[WatchEvent]) -> bool:
        """Check one batch's events and hand those that pass to the sink in one call;
        true when the batch held the initial-events-end bookmark a streaming list stops
        at (what followed it is kept in :attr:`leftover`). Events before an ``ERROR`` one
        are applied, then its error is raised."""
        accepted: list[WatchEvent] = []
        append = accepted.append
        expected_kind = self._expected_kind
        expected_api_version = self._expected_api_version
        check_type = expected_kind is not None or expected_api_version is not None
        until_initial_events_end = self._until_initial_events_end
        read_head = self._head
        resource_version = ""
        error: BaseException | None = None
        done = False
        try:
            for index, event in enumerate(batch):
                kind = event.type
                obj = event.object
                head = read_head(obj)
                if head is None:
                    # A Status (an ERROR event's object) has no resourceVersion.
                    self._no_resource_version(kind, obj)
                    continue
                obj_kind, obj_api_version, rv = head
                if check_type and (
                    (expected_kind is not None and obj_kind != expected_kind)
                    or (
                        expected_api_version is not None and obj_api_version != expected_api_version
                    )
                ):
                    self._wrong_type(kind, obj, obj_api_version, obj_kind)
                    continue
                if until_initial_events_end and kind == BOOKMARK:
                    if _ends_initial_events(obj):
                        resource_version = rv
                        self.leftover = batch[index + 1 :]
                        done = True
                        break
                    if self._plain_bookmark_at is None:
                        self._plain_bookmark_at = self._clock.monotonic()
                if kind not in _APPLIED_TYPES:
                    self._unknown_type(kind, obj)
                    continue
                append(event)
                resource_version = rv
        except _ErrorEvent as event_error:
            error = event_error.error
        if accepted:
            await self._hand_over(accepted)
            self._count(accepted)
        if done:
            self.bookmarks += 1
            self.applied += 1
        if resource_version:
            self._cursor.resource_version = resource_version
        if error is not None:
            raise error
        return done

    async def _hand_over(self, events: list[WatchEvent]) -> None:
        """Apply checked events to the sink: one call for a batch sink, one per event
        otherwise; what the sink could not take is logged, the rest stays applied."""
        sink = self._sink
        if isinstance(sink, WatchBatchSink):
            failures = await sink.apply_events(events)
            if failures:
                for event, exc in failures:
                    self._rejected(event.type, exc)
            return
        # Optional on a store: one that has it hears each bookmark's resourceVersion.
        bookmark = getattr(sink, "bookmark", None)
        for count, event in enumerate(events, 1):
            if not count % _PER_EVENT_HANDOFF:
                # A store taking events one by one may feed others (the proxy's watchers)
                # that must run before it has taken a whole read's worth.
                await asyncio.sleep(0)
            kind = event.type
            obj = event.object
            try:
                if kind == MODIFIED:
                    await sink.update(obj)
                elif kind == ADDED:
                    await sink.add(obj)
                elif kind == DELETED:
                    await sink.delete(obj)
                elif bookmark is not None:
                    await bookmark(obj["metadata"]["resourceVersion"])
            except Exception as exc:  # noqa: BLE001
                # Blind on purpose: the store's problem with one event, logged, not fatal.
                self._rejected(kind, exc)

    def _count(self, events: list[WatchEvent]) -> None:
        """Count the applied events by type, for the reflector metrics."""
        self.applied += len(events)
        modified = added = deleted = bookmarks = 0
        for event in events:
            kind = event.type
            if kind == MODIFIED:
                modified += 1
            elif kind == ADDED:
                added += 1
            elif kind == DELETED:
                deleted += 1
            else:
                bookmarks += 1
        self.modified += modified
        self.added += added
        self.deleted += deleted
        self.bookmarks += bookmarks

    def _rejected(self, kind: str, exc: Exception) -> None:
        logger.error(
            "%s: store rejected a %s event", self._name, kind, exc_info=(type(exc), exc, None)
        )

    # The ways an event is not applied. Each first checks for an ERROR event that a
    # source yielded rather than raised (off the per-event path: an ERROR's Status has
    # no resourceVersion and is not of the watched kind), and ends the read with the
    # error it stands for, as if the source had raised it.

    def _wrong_type(self, event_type: str, obj: Any, api_version: object, kind: object) -> None:
        _raise_error_event(event_type, obj, self._name)
        logger.error(
            "%s: expected %s %s, but the watch event object is %s %s",
            self._name,
            self._expected_api_version,
            self._expected_kind,
            api_version,
            kind,
        )

    def _no_resource_version(self, event_type: str, obj: Any) -> None:
        _raise_error_event(event_type, obj, self._name)
        logger.error(
            "%s: skipped a watch event (%.40s) whose object has no resourceVersion",
            self._name,
            event_type,
        )

    def _unknown_type(self, event_type: str, obj: Any) -> None:
        _raise_error_event(event_type, obj, self._name)
        logger.error("%s: skipped a watch event of unknown type %.40r", self._name, event_type)

    def _initial_events_ignored(self, now: float) -> InitialEventsIgnored | None:
        """For a streaming list, the error that gives up on it when its source has shown
        that it ignores ``sendInitialEvents`` (see :data:`INITIAL_EVENTS_GRACE`)."""
        since = self._plain_bookmark_at
        if since is not None:
            if now - since < INITIAL_EVENTS_GRACE:
                return None
            return InitialEventsIgnored(
                f"no initial-events-end bookmark {INITIAL_EVENTS_GRACE:g}s after a plain "
                "bookmark: the source ignored sendInitialEvents"
            )
        if self.received and now - self._progress_at >= INITIAL_EVENTS_GRACE:
            return InitialEventsIgnored(
                f"{self.received} events and no bookmark in {INITIAL_EVENTS_GRACE:g}s since "
                "the last: the source ignored sendInitialEvents"
            )
        return None

    def _check(self) -> None:
        """The inactivity check, run by the clock every twentieth of the deadline until the
        read ends: interrupt the read once the stream has been silent for the deadline.

        Silence only accrues while the reader waits on the stream: time spent in a slow
        store call is not the stream's fault.
        """
        if self._timer is None:
            return  # the read ended as this check came due
        tick = self._deadline / DEADLINE_TICKS
        now = self._clock.monotonic()
        if self.received != self._seen:
            # Stamped here rather than per event: the event path stays free of clock
            # reads, at the price of "heard" lagging by up to one tick.
            self._heard.at = self._progress_at = now
        if self._until_initial_events_end:
            ignored = self._initial_events_ignored(now)
            if ignored is not None:
                self._timer = None
                self.interrupt(ignored)
                return
        if self.received != self._seen or not self._reading:
            self._seen = self.received
            self._quiet_ticks = 0
        else:
            self._quiet_ticks += 1
            if self._quiet_ticks >= DEADLINE_TICKS:
                self._timer = None
                self.interrupt(
                    WatchTimeout(f"watch sent nothing for {self._quiet_ticks * tick:g}s")
                )
                return
        self._timer = call_later(self._clock, tick, self._check)
