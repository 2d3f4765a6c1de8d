"""Kubernetes Events from a controller: ``events.k8s.io/v1`` Events, a repeated event
aggregated into one series (client-go's ``tools/events`` recorder and broadcaster).

Role: tell users what a controller did to their object (``kubectl events``, ``kubectl
describe``). Input: :meth:`EventRecorder.event` calls, from reconciles. Output: Event
objects written to the API server by a background task, in the regarding object's
namespace (``default`` for a cluster-scoped object).

Aggregation, as client-go does it. Occurrences with the same *key* (``regarding``,
``related``, ``action``, ``reason``; the reporting controller is the recorder's own) are
one series. The first is created as an Event with ``eventTime``; the second turns it into a
series right away (a merge patch setting ``series.count`` 2 and ``series.lastObservedTime``);
later ones only count in memory. The counted total reaches the server:

* when the series ends, ``finish_after`` (6 minutes) after its last occurrence, checked
  every ``finish_after`` (the key is then forgotten: a later occurrence starts a new Event);
* on the series heartbeat every ``refresh_every`` (30 minutes), which keeps a long series
  from expiring on the server;
* when the recorder closes (``aclose()`` / leaving ``async with``), bounded by
  ``flush_timeout``: so a reconcile's events are on the server when an operator stops.

A series patch answered 404 or 409 (the Event expired or was deleted meanwhile) creates
the Event again, with its series.

Failures never reach the caller. A write the server refuses (any
:class:`~aioinformer.errors.ApiError`) is dropped; a transport failure is retried up to
``max_tries`` times (client-go's 12), ``retry_delay`` apart (jittered by up to 25 %). The
first failure of a burst is logged at WARNING, the rest at DEBUG until a write succeeds
again. The queue between :meth:`EventRecorder.event` and the writer holds at most
``max_queued`` (client-go's 1000) occurrences; more are dropped and counted
(:meth:`EventRecorder.statistics`), as client-go's broadcaster drops when full.

Life cycle: a recorder is a :class:`~aioinformer.Service`; its ``state`` goes ``NEW``
(``event()`` queues, nothing is written yet), ``STARTING``, ``RUNNING`` (the writer writes
what is queued; the series timer runs), ``STOPPING`` (the queue and the counted series
are flushed; ``event()`` drops) and ``STOPPED`` (``event()`` drops, and counts).

Ordering: occurrences are written in the order they were recorded. Task model:
:meth:`EventRecorder.event` is synchronous and never waits for the API (call it from the
event loop, e.g. in a reconcile); ``run()`` (or ``async with``, or ``start()``) runs the
writer and the series timer as children of one task runner until ``stop()``
(``aclose()`` also waits for the end). Time comes from ``clock``
(a :class:`~aioinformer.testing.FakeClock` in tests); ``eventTime`` and
``lastObservedTime`` are wall time read at start and moved along that clock.

Example::

    recorder = EventRecorder(client, reporting_controller="example.com/widget-operator")
    async with recorder:
        ...
        recorder.event(widget, type="Normal", reason="Created", action="Create",
                       note="created ConfigMap hello-config")
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import socket
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.lifecycle import Service, State
from aioinformer._kernel.runner import TaskRunner, first_completed
from aioinformer._objects.meta import (
    api_version_and_kind_of,
    describe,
    name_of,
    namespace_of,
    resource_version_of,
    uid_of,
)
from aioinformer.client import Client
from aioinformer.errors import ApiError, Conflict, NotFound, TransportError

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

__all__ = [
    "EventRecorder",
    "EventRecorderStatistics",
    "EventSink",
    "EventType",
    "object_reference",
]

logger = logging.getLogger(__name__)

EventType = Literal["Normal", "Warning"]
"""The two types kube-apiserver accepts for an Event (client-go's ``corev1.EventTypeNormal``
and ``EventTypeWarning``); an informer's notifications are typed by
:data:`aioinformer.informer.NotificationType` instead."""

EVENTS_RESOURCE: Final = "events.k8s.io/v1/events"
MAX_QUEUED: Final = 1000
MAX_TRIES: Final = 12
RETRY_DELAY: Final = 10.0
FINISH_AFTER: Final = 6 * 60.0
REFRESH_EVERY: Final = 30 * 60.0
FLUSH_TIMEOUT: Final = 10.0
NOTE_MAX_BYTES: Final = 1024
"""kube-apiserver refuses a longer note; the recorder cuts it to fit instead."""
FIELD_MAX: Final = 128
"""Longest ``reason``, ``action``, ``reportingController`` and ``reportingInstance``."""

_DOMAIN_PATH_RE: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[^\s]+$"
)
_REFERENCE_FIELDS: Final = (
    "apiVersion",
    "kind",
    "namespace",
    "name",
    "uid",
    "resourceVersion",
    "fieldPath",
)


class EventSink(Protocol):
    """Where Events go: an ``events.k8s.io/v1 events`` :class:`ResourceClient`, or a test
    double with these two methods."""

    async def create(
        self, obj: Mapping[str, Any], namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def patch(
        self, name: str, patch: Any, *, namespace: str | None = None
    ) -> dict[str, Any]: ...


def object_reference(obj: Any) -> dict[str, str]:
    """The ``ObjectReference`` of ``obj`` (a dict or model as read from the server):
    ``apiVersion``, ``kind``, ``namespace``, ``name``, ``uid`` and ``resourceVersion``,
    the empty ones left out. A mapping without ``metadata`` is taken as an
    ``ObjectReference`` already. Raises ``ValueError`` when there is no kind or name."""
    if isinstance(obj, Mapping) and "metadata" not in obj:
        ref = {field: str(obj[field]) for field in _REFERENCE_FIELDS if obj.get(field)}
    else:
        api_version, kind = api_version_and_kind_of(obj)
        values = {
            "apiVersion": api_version,
            "kind": kind,
            "namespace": namespace_of(obj),
            "name": name_of(obj),
            "uid": uid_of(obj),
            "resourceVersion": resource_version_of(obj),
        }
        ref = {field: str(value) for field, value in values.items() if value}
    if not ref.get("kind") or not ref.get("name"):
        raise ValueError(f"an event needs an object with a kind and a name, not {describe(obj)}")
    return ref


def _check_field(what: str, value: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"an event's {what} must be a non-empty string, not {value!r}")
    if len(value) > FIELD_MAX:
        raise ValueError(f"an event's {what} is longer than {FIELD_MAX} characters: {value!r}")
    return value


def _fit_note(note: str) -> str:
    data = note.encode()
    if len(data) <= NOTE_MAX_BYTES:
        return note
    return data[:NOTE_MAX_BYTES].decode(errors="ignore")


def _micro_time(wall: float) -> str:
    """``metav1.MicroTime`` on the wire: RFC 3339 in UTC with six fractional digits."""
    return datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class EventRecorderStatistics:
    """A snapshot of an :class:`EventRecorder`'s counters."""

    queued: int
    """Occurrences waiting for the writer."""
    dropped: int
    """Occurrences dropped: the queue was full, or the recorder closed."""
    created: int
    """Events created on the server."""
    patched: int
    """Series counts written to existing Events."""
    failed: int
    """Writes given up: refused by the server, or out of retries."""
    series: int
    """Keys the recorder aggregates on right now."""


@dataclass(frozen=True, slots=True)
class _Occurrence:
    key: tuple[Any, ...]
    body: dict[str, Any]
    observed: float


class _Series:
    """One key's Event: the body as created, how often it occurred, how much of that the
    server has seen. Invariant: ``written <= count``."""

    __slots__ = ("body", "count", "last_observed", "written")

    def __init__(self, body: dict[str, Any], observed: float) -> None:
        self.body = body
        self.count = 1
        self.written = 0
        self.last_observed = observed

    @property
    def unwritten(self) -> bool:
        """Whether the series counted occurrences the server has not seen. A lone
        occurrence whose create failed is not retried here: the next one patches, and
        recreates it when the patch finds nothing."""
        return self.count > 1 and self.count > self.written


def _freeze(ref: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(ref.items())) if ref else ()


class EventRecorder(Service):
    """Records ``events.k8s.io/v1`` Events for one controller, aggregating repeats into
    series (see the module docstring for the rules and the failure handling).

    ``client`` is a :class:`~aioinformer.client.Client` (the recorder writes through its
    ``events.k8s.io/v1/events`` resource) or any :class:`EventSink`.
    ``reporting_controller`` names the controller as a domain-prefixed path
    (``example.com/widget-operator``, as kube-apiserver requires);
    ``reporting_instance`` the running copy (default ``<controller>-<hostname>``, as
    client-go). Both are at most 128 characters; ``ValueError`` otherwise.

    It runs once: ``async with recorder:``, ``await recorder.run()`` (until
    :meth:`stop`), or ``await recorder.start()`` then ``await recorder.aclose()``.
    """

    def __init__(
        self,
        client: Client | EventSink,
        *,
        reporting_controller: str,
        reporting_instance: str | None = None,
        clock: Clock | None = None,
        max_queued: int = MAX_QUEUED,
        max_tries: int = MAX_TRIES,
        retry_delay: float = RETRY_DELAY,
        finish_after: float = FINISH_AFTER,
        refresh_every: float = REFRESH_EVERY,
        flush_timeout: float = FLUSH_TIMEOUT,
    ) -> None:
        _check_field("reportingController", reporting_controller)
        if not _DOMAIN_PATH_RE.match(reporting_controller):
            raise ValueError(
                f"reporting_controller {reporting_controller!r} must be a domain-prefixed "
                "path such as 'example.com/widget-operator'"
            )
        if reporting_instance is None:
            reporting_instance = f"{reporting_controller}-{socket.gethostname()}"[:FIELD_MAX]
        _check_field("reportingInstance", reporting_instance)
        if max_queued < 1 or max_tries < 1:
            raise ValueError("max_queued and max_tries must be at least 1")
        self._sink: EventSink = (
            client.resource(EVENTS_RESOURCE) if isinstance(client, Client) else client
        )
        self.reporting_controller: Final = reporting_controller
        self.reporting_instance: Final = reporting_instance
        self._clock = clock or default_clock
        self._max_queued = max_queued
        self._max_tries = max_tries
        self._retry_delay = retry_delay
        self._finish_after = finish_after
        self._refresh_every = refresh_every
        self._flush_timeout = flush_timeout
        self._stop_requested = asyncio.Event()
        """Set by :meth:`stop` (or :meth:`aclose`): flush, then end the run."""
        self._queue: deque[_Occurrence] = deque()
        """Recorded, not yet handed to the writer; at most ``max_queued`` long."""
        self._cache: dict[tuple[Any, ...], _Series] = {}
        """Key → its series, from the first occurrence until the series ends."""
        self._wake = asyncio.Event()
        """Set while the queue has something, or the recorder is closing."""
        self._idle = asyncio.Event()
        """Set while the writer waits on an empty queue."""
        self._lock = asyncio.Lock()
        """Held by whoever changes the cache across a write: the writer or the timer."""
        self._anchor: tuple[float, float] | None = None
        self._last_suffix = 0
        self._failing = False
        self._dropped = self._created = self._patched = self._failed = 0

    @property
    def service_name(self) -> str:
        return "event recorder"

    def _now(self) -> tuple[float, float]:
        """(clock time, wall time): wall time read once, then moved along ``clock``."""
        now = self._clock.monotonic()
        if self._anchor is None:
            self._anchor = (now, time.time())
        return now, self._anchor[1] + (now - self._anchor[0])

    def event(
        self,
        regarding: Any,
        *,
        type: EventType,
        reason: str,
        action: str,
        note: str = "",
        related: Any = None,
    ) -> None:
        """Record that ``action`` happened to ``regarding`` (a dict, a model, or an
        ``ObjectReference`` dict) for ``reason``; ``type`` is ``"Normal"`` or
        ``"Warning"``. Returns at once: the write happens in the background.

        Raises ``ValueError`` for an unknown type, an empty or over-long (128 characters)
        reason or action, or an object without kind and name. A ``note`` over 1 KiB is
        cut to 1 KiB. When the queue is full or the recorder closed, the occurrence is
        dropped and counted.
        """
        if type not in ("Normal", "Warning"):
            raise ValueError(f"an event's type is 'Normal' or 'Warning', not {type!r}")
        _check_field("reason", reason)
        _check_field("action", action)
        ref = object_reference(regarding)
        related_ref = None if related is None else object_reference(related)
        if self._state in (State.STOPPING, State.STOPPED):
            self._dropped += 1
            logger.debug("event %s on %s dropped: the recorder is %s", reason, ref, self._state)
            return
        if len(self._queue) >= self._max_queued:
            self._dropped += 1
            return
        observed, wall = self._now()
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref['name']}.{self._name_suffix(wall):x}",
                "namespace": ref.get("namespace") or "default",
            },
            "eventTime": _micro_time(wall),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "regarding": ref,
            "note": _fit_note(note),
            "type": type,
        }
        if related_ref is not None:
            body["related"] = related_ref
        key = (action, reason, _freeze(ref), _freeze(related_ref))
        self._queue.append(_Occurrence(key, body, observed))
        self._idle.clear()
        self._wake.set()

    def _name_suffix(self, wall: float) -> int:
        # Nanoseconds of the wall time, as client-go names events; strictly increasing
        # per recorder, so two events in one tick of a coarse (or fake) clock differ.
        suffix = max(int(wall * 1e9), self._last_suffix + 1)
        self._last_suffix = suffix
        return suffix

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Run the recorder in a task of its own; returns once the writer runs. Stop it
        with :meth:`aclose`. ``RuntimeError`` if it ran already."""
        await self._start_in_task()

    def stop(self) -> None:
        """Ask the run to end: what is queued and the counted series totals are written,
        bounded by ``flush_timeout`` on the clock; later occurrences are dropped.
        Idempotent. A recorder stopped before it started drops what it queued and will
        not start. :meth:`aclose` also waits until the run has ended."""
        if self._state is State.NEW:
            self._dropped += len(self._queue)
            self._queue.clear()
        super().stop()

    def statistics(self) -> EventRecorderStatistics:
        """The recorder's counters, as a frozen record."""
        return EventRecorderStatistics(
            queued=len(self._queue),
            dropped=self._dropped,
            created=self._created,
            patched=self._patched,
            failed=self._failed,
            series=len(self._cache),
        )

    # -- the writer and the series timer -----------------------------------------------------

    async def _serve(self, *, task_status: TaskStatus[Any]) -> None:
        self._now()
        async with TaskRunner(name=self.service_name) as runner:
            runner.start_soon(self._tick(), name="series timer")
            runner.start_soon(self._write_queued(), name="writer")
            task_status.started()
            await self._stop_requested.wait()
            index, _ = await first_completed(self._flush(), self._clock.sleep(self._flush_timeout))
            if index == 1:
                logger.warning(
                    "event recorder closed before %d queued events were written (%.1fs)",
                    len(self._queue),
                    self._flush_timeout,
                )
                self._dropped += len(self._queue)
                self._queue.clear()

    def _request_stop(self) -> None:
        self._stop_requested.set()

    async def _write_queued(self) -> None:
        while True:
            if not self._queue:
                self._wake.clear()
                self._idle.set()
                await self._wake.wait()
                continue
            occurrence = self._queue.popleft()
            async with self._lock:
                await self._record(occurrence)

    async def _flush(self) -> None:
        while self._queue or not self._idle.is_set():
            await self._idle.wait()
        async with self._lock:
            for series in list(self._cache.values()):
                if series.unwritten:
                    await self._write(series)

    async def _record(self, occurrence: _Occurrence) -> None:
        series = self._cache.get(occurrence.key)
        if series is None:
            series = self._cache[occurrence.key] = _Series(occurrence.body, occurrence.observed)
            await self._write(series)
            return
        series.count += 1
        series.last_observed = occurrence.observed
        if series.count == 2:
            await self._write(series)

    async def _tick(self) -> None:
        next_refresh = self._clock.monotonic() + self._refresh_every
        while True:
            await self._clock.sleep(self._finish_after)
            async with self._lock:
                now = self._clock.monotonic()
                for key, series in list(self._cache.items()):
                    if now - series.last_observed > self._finish_after:
                        if series.unwritten:
                            await self._write(series)
                        del self._cache[key]
                if now >= next_refresh:
                    next_refresh = now + self._refresh_every
                    for series in list(self._cache.values()):
                        if series.count > 1:
                            await self._write(series)

    async def _write(self, series: _Series) -> None:
        """Bring ``series`` to the server: create its Event, or patch its count; retried
        on transport failures, given up on refusals."""
        count = series.count
        body = series.body
        meta = body["metadata"]
        tries = 0
        while True:
            try:
                if count < 2:
                    await self._sink.create(body, meta["namespace"])
                    self._created += 1
                else:
                    await self._write_count(series, count)
            except ApiError as exc:
                self._failed += 1
                self._log_failure("refused, dropped", body, exc)
                return
            except TransportError as exc:
                tries += 1
                if tries >= self._max_tries:
                    self._failed += 1
                    self._log_failure(f"failed {tries} times, dropped", body, exc)
                    return
                self._log_failure("failed, retrying", body, exc)
                await self._clock.sleep(self._retry_delay * random.uniform(0.75, 1.25))
                continue
            except Exception as exc:  # noqa: BLE001 - a sink's failure must not end the writer
                self._failed += 1
                self._log_failure("failed, dropped", body, exc)
                return
            series.written = max(series.written, count)
            if self._failing:
                self._failing = False
                logger.info("event writes succeed again")
            return

    async def _write_count(self, series: _Series, count: int) -> None:
        _, wall = self._now()
        wall -= self._clock.monotonic() - series.last_observed
        value = {"count": count, "lastObservedTime": _micro_time(wall)}
        meta = series.body["metadata"]
        try:
            await self._sink.patch(meta["name"], {"series": value}, namespace=meta["namespace"])
            self._patched += 1
        except (NotFound, Conflict):
            # The Event expired or was deleted: create it again, with its series.
            await self._sink.create({**series.body, "series": value}, meta["namespace"])
            self._created += 1

    def _log_failure(self, what: str, body: Mapping[str, Any], exc: BaseException) -> None:
        level = logging.DEBUG if self._failing else logging.WARNING
        self._failing = True
        logger.log(
            level,
            "writing event %s/%s (%s %s) %s: %s",
            body["metadata"]["namespace"],
            body["metadata"]["name"],
            body["reason"],
            body["regarding"].get("name"),
            what,
            exc,
        )

    def __repr__(self) -> str:
        return (
            f"<EventRecorder {self.reporting_controller!r} state={self._state.value} "
            f"queued={len(self._queue)} series={len(self._cache)}>"
        )
