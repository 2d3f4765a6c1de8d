"""The Reflector: keeps a store in step with one resource on the API server.

Role. The first stage of an informer. It LISTs the resource, hands the whole result to
the store with one ``replace(items, resource_version)``, then WATCHes from the list's
resourceVersion and applies each event with ``add``/``update``/``delete``. When the
watch ends it watches again from the last resourceVersion it saw; when the server has
forgotten that resourceVersion (410 Gone) it lists again. Its input is a
:class:`~aioinformer.listwatch.ListerWatcher`, its output the calls on a
:class:`ReflectorStore` (in an informer, a ``DeltaFIFO``).

Semantics are client-go v0.32's ``tools/cache/reflector.go``:

* **Lists.** The first list asks for resourceVersion ``"0"`` (any cached state will do)
  in pages of 500 (``page_size`` overrides it), following ``continue`` tokens; later
  pages clear the resourceVersion, and an expired token falls back to one unpaginated
  list. Relists ask for the last resourceVersion seen (bookmarks included), unpaginated
  unless ``page_size`` is set or the first list came back paginated. When a list's
  resourceVersion is expired (410) or too large (504 ``ResourceVersionTooLarge``), the
  list is retried at once with ``""``: a consistent read.
* **Watches** send ``allow_watch_bookmarks=True`` and a ``timeout_seconds`` drawn from
  [300, 600), spreading reconnects over time. A ``BOOKMARK`` advances the resourceVersion,
  and goes to ``store.bookmark(rv)`` when the store has it (a DeltaFIFO does). A watch that
  ends normally is re-opened from the last resourceVersion; one that ends within a second
  with no events, or with an ``ERROR`` event (410 Gone included), makes
  :meth:`Reflector.list_and_watch` return so that :meth:`Reflector.run` relists after a
  backoff. Refused connections and 429s back off (a ``Retry-After`` wins over the
  computed delay) and re-watch without relisting.
* **Inactivity deadline.** A watch that delivers nothing (no event, no bookmark) for
  longer than its deadline is closed and re-opened from the same resourceVersion: a dead
  connection never hangs the reflector. This is the one silence deadline of a watch (the
  client's own read timeout is off for watches). It is
  ``ReflectorOptions.watch_inactivity_timeout``, 120 s by default
  (``DEFAULT_WATCH_INACTIVITY_TIMEOUT``): two of the bookmarks kube-apiserver sends an
  idle watch about once a minute. It never exceeds the watch's ``timeout_seconds`` plus
  30 s, by which the server must have ended the watch. Raise it for a server that sends
  no bookmarks. Silence accrues only while the reflector waits on the stream (not while
  a slow store call holds it up) and is measured in twentieths of the deadline, so a
  stalled watch is closed after between 1 and 1.05 times the deadline.
* **Last heard.** ``statistics().seconds_since_heard`` counts from the last list
  answered, watch started, or progress the inactivity check saw on the stream (no clock
  read per event); see :mod:`aioinformer._pipeline.reflector_status`.
* **Streaming list** (``use_watch_list=True``, the default, with a source that declares
  :attr:`~aioinformer.listwatch.SourceInfo.watch_list`): the initial state comes from a
  watch with ``send_initial_events=True`` and ``resource_version_match="NotOlderThan"``;
  its events are collected apart and committed with one ``replace()`` at the bookmark
  annotated ``k8s.io/initial-events-end``, and the same stream then carries on as the
  watch, as in client-go 1.35+. A plain source (one that declares nothing) is never asked
  for one: nothing says its ``watch`` honours ``send_initial_events``.
* **Streaming-list retries.** A streaming list that fails in a way worth retrying (a 429,
  as an answer or an ``ERROR`` event; a refused or lost connection; the stream closing
  before its initial-events-end bookmark) is sent again after a backoff (the
  reflector's, a ``Retry-After`` winning), as client-go's ``watchList`` does, at most
  ``ReflectorOptions.max_watch_list_retries`` times (3 by default,
  ``DEFAULT_WATCH_LIST_RETRIES``): a throttled server is not sent the full LIST it can
  least afford. Past that, and at once after any other failure, the round falls back to
  LIST+WATCH: another ``Status`` (an old server's 422 or 400, a 403, a 410, any 5xx), a
  TLS failure, a stream closed within a second with nothing sent, one silent past its
  deadline, and a source that shows it serves a plain watch: a plain bookmark, or events
  and then no bookmark at all, and no initial-events-end bookmark within
  ``INITIAL_EVENTS_GRACE`` (10 s) after it (see
  :func:`~aioinformer._pipeline.watch_policy.watch_list_retriable` for why 5xx falls back).
  Each failure goes to the error handler; ``statistics()`` counts the retries and the
  fallbacks, and so do the metrics. After a fallback the next rounds list without trying
  to stream until a watch has opened, so a source that fails every request (a forbidden
  or unknown resource) costs one request per retry; once a watch opened, the next relist
  streams again, so a server upgraded meanwhile is used.
* **Failing fast.** Before the first list succeeds, a failure that no retry alone heals
  (:func:`~aioinformer.errors.fails_until_fixed`: an unknown resource, a 404, a 401 or
  403, a refused connection, a rejected certificate, an unusable configuration) is kept
  as :attr:`Reflector.sync_blocker`, which the waits for an informer's sync raise at once
  (see :meth:`~aioinformer.informer.SharedIndexInformer.wait_for_sync`). The reflector
  retries it all the same, with backoff: a CustomResourceDefinition installed later, a
  RoleBinding granted, a server started, and the next list syncs the store.
* **Backoff** between attempts is :class:`aioinformer._kernel.backoff.Backoff`: 0.8 s doubling
  to 30 s, with jitter, reset after two minutes without failures.
* **Resync.** With ``resync_period > 0``, ``store.resync()`` is called every period while
  watching (when ``should_resync`` allows it).
* **Garbage collector.** A list and its hand-over to the store run with CPython's cyclic
  collector paused (``gc_policy="pause"``), or paused and then frozen (``"freeze"``), or
  untouched (``"off"``); see :mod:`aioinformer._kernel.gcpolicy` for why and for the price.
* **Expected kind.** Watch events whose object is not of the expected ``kind`` /
  ``apiVersion`` are logged and skipped: they never reach the store. The expectation is
  ``expected_kind``/``expected_api_version`` when given; each one not given is adopted
  from the first LIST page that names it (:attr:`ObjectList.kind` /
  :attr:`ObjectList.api_version`, which the client derives from the List's kind:
  ``PodList`` → ``Pod``) and kept for the reflector's life. A source that names no kind
  (and a streaming list, which has no List) leaves the check off.
* **ERROR events.** A source raises the error of an ``ERROR`` event's ``Status``; one
  that yields the event instead (an adapted ``watch.Interface``) is handled exactly as if
  it had raised that error: a 410 relists from the last resourceVersion, a 429 backs off
  and re-watches, any other ``Status`` ends the watch and relists, and an object that is
  no ``Status`` ends the watch as a broken stream would. It is never skipped.

Reading a watch. :class:`WatchRead` (at the end of this module) takes one open watch stream
(the async iterator a ``ListerWatcher`` returned), applies its events to a sink (the
reflector's store, or the :class:`TemporaryStore` of a streaming list) and sums up how
the stream ended in a :class:`~aioinformer._pipeline.watch_policy.WatchEnd`, which the reflector
hands to :func:`~aioinformer._pipeline.watch_policy.next_step`.

A read's input: the stream (read a batch at a time when it declares
:class:`~aioinformer.listwatch.WatchStreamBase`, else an event at a time), the sink, a
:class:`Cursor` to advance, the inactivity deadline. Its output: the events of each read
checked (kind, resourceVersion, ``ERROR``) and handed to the sink with one call
(:class:`~aioinformer.listwatch.WatchBatchSink`) or one call per event, in stream order;
the cursor's resourceVersion after each batch; the ``WatchEnd``.

Errors. :meth:`Reflector.list_and_watch` raises when a list fails (after the retry at
``""``) or when opening a watch fails for a reason other than a refusal or a 429; it
returns normally when a watch ends in a way that calls for a relist. :meth:`Reflector.run`
loops over it with backoff until cancelled. ``watch_error_handler(reflector, error)``
(sync or async) hears about every failure exactly once: the errors ``list_and_watch``
raises through ``run()``, the ones it absorbs where they happen. How a watch ends
(re-watch, back off, relist, raise) is decided by the pure
:func:`aioinformer._pipeline.watch_policy.next_step`, shared by the watch and the streaming list.

Task model. Everything runs in the task that awaits ``run()``/``list_and_watch()``.
The reads of a watch stream are bounded by an ``asyncio.timeout`` scope on that task,
expired only while a read is awaited (see :class:`WatchRead`): a
callback on the injected clock, not a task, expires it when the stream has been silent
too long. With a resync period, a resync task calls ``store.resync()`` and, when that
fails, expires the current read's scope too; it is a
:meth:`~aioinformer._kernel.runner.Running.spawn` helper local to ``list_and_watch()``,
which reaps it before it returns. Cancellation is clean at every
await: a list in progress is dropped before anything reaches the store, an open watch
stream is closed in the reflector's task, with the iterator it was read through (see
:class:`OpenWatch`), and a backoff sleep simply ends.

Example::

    reflector = Reflector(client.resource("pods", namespace="default"), fifo)
    async with TaskRunner(name="pods") as tasks:
        tasks.start_soon(reflector.run(), name="reflector")
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol, TypeAlias

from aioinformer._kernel.backoff import Backoff as Backoff
from aioinformer._kernel.clock import Clock, TimerHandle, call_later, default_clock
from aioinformer._kernel.gcpolicy import GCPolicy as GCPolicy
from aioinformer._kernel.gcpolicy import collector_paused
from aioinformer._kernel.metrics import AddCounterMetric as AddCounterMetric
from aioinformer._kernel.metrics import ReflectorMetricsProvider as ReflectorMetricsProvider
from aioinformer._kernel.runner import Running, is_async_callable
from aioinformer._pipeline.list_policy import DEFAULT_PAGE_SIZE as DEFAULT_PAGE_SIZE
from aioinformer._pipeline.list_policy import ListPolicy
from aioinformer._pipeline.meta import annotations_of, meta_namespace_key
from aioinformer._pipeline.metric_recorders import new_reflector_metrics
from aioinformer._pipeline.reflector_status import LastHeard, ReflectorState, ReflectorStatistics
from aioinformer._pipeline.watch_policy import (
    Decision,
    FailureStreak,
    InternalErrorRetry,
    Step,
    WatchEnd,
    failure_level,
    is_expired,
    is_internal_error,
    is_too_large,
    next_step,
    watch_list_retriable,
)
from aioinformer.codec import Head, head_of
from aioinformer.errors import (
    AioinformerError,
    ApiError,
    Gone,
    TooManyRequests,
    WatchError,
    WatchTimeout,
    error_from_watch_status,
    fails_until_fixed,
)

# ListerWatcher, ListOptions, ObjectList and WatchEvent are re-exported: DESIGN.md names
# this module as their home for reflector users.
from aioinformer.listwatch import (
    ADDED,
    BOOKMARK,
    DELETED,
    ERROR,
    INITIAL_EVENTS_END_ANNOTATION,
    MODIFIED,
    EventFailures,
    ListerWatcher,
    ListOptions,
    ObjectList,
    WatchBatchSink,
    WatchEvent,
    WatchStreamBase,
    source_info,
)

__all__ = [
    "AddCounterMetric",
    "Backoff",
    "DEFAULT_WATCH_INACTIVITY_TIMEOUT",
    "DEFAULT_WATCH_LIST_RETRIES",
    "GCPolicy",
    "ListOptions",
    "ListerWatcher",
    "ObjectList",
    "Reflector",
    "ReflectorMetricsProvider",
    "ReflectorOptions",
    "ReflectorState",
    "ReflectorStatistics",
    "ReflectorStore",
    "WatchErrorHandler",
    "WatchEvent",
]

logger = logging.getLogger(__name__)

MIN_WATCH_TIMEOUT: Final = 300.0
"""Lower bound of a watch's ``timeout_seconds``; each watch draws from [min, 2 x min)."""

DEFAULT_WATCH_LIST_RETRIES: Final = 3
"""How many times a failed streaming list is tried again before the reflector falls back
to LIST+WATCH, unless configured otherwise. From a fresh backoff (0.8 s doubling, with
jitter) three retries wait 5.6 to 11.2 s in all, or what the server's Retry-After asks:
long enough to ride out a throttled or restarting server without sending it the full LIST
it can least afford, short enough that a cache still syncs within seconds when streaming
keeps failing."""


WatchErrorHandler: TypeAlias = Callable[["Reflector", BaseException], Awaitable[None] | None]
"""``handler(reflector, error)``, sync or async: told about every list or watch failure."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReflectorOptions:
    """A reflector's static configuration, checked once, here, when it is built.

    An informer or a factory builds one from its keywords and hands the same object down,
    so every setting is validated in this one place. :meth:`replace` gives a copy with
    some fields changed (and checks it again).
    """

    resync_period: float = 0.0
    """Seconds between ``store.resync()`` calls; 0: never. Never negative."""
    page_size: int | None = None
    """Force this LIST page size on every list; ``None`` (or 0): the reflector's rules
    (pages of 500 for the first list, unpaginated relists at a resourceVersion)."""
    use_watch_list: bool = True
    """Get the state from a streaming list (``send_initial_events``) on every list,
    falling back to LIST+WATCH whenever the server refuses or ignores one; ``False``:
    always LIST+WATCH."""
    max_watch_list_retries: int = DEFAULT_WATCH_LIST_RETRIES
    """How many times one list streams again, each after a backoff, when its streaming
    list failed in a way worth retrying (a 429, a refused or lost connection, a stream
    closed before its initial-events-end bookmark) before it falls back to LIST+WATCH;
    3 by default (``DEFAULT_WATCH_LIST_RETRIES``), 0: fall back at once. Never
    negative."""
    watch_inactivity_timeout: float | None = None
    """Seconds of silence after which a watch is closed and re-opened; ``None``:
    ``DEFAULT_WATCH_INACTIVITY_TIMEOUT`` (120 s). Capped at the watch's
    ``timeout_seconds`` plus 30 s. Positive when given."""
    min_watch_timeout: float = MIN_WATCH_TIMEOUT
    """Lower bound of each watch's ``timeout_seconds`` (never below 300 s)."""
    max_internal_error_retry_duration: float = 0.0
    """How long a watch ending in a 500 ``InternalError`` is re-opened at once instead
    of relisting (0: never)."""
    expected_kind: str | None = None
    """Watch events whose object has another ``kind`` are skipped and logged; ``None``:
    adopted from the first list that names one."""
    expected_api_version: str | None = None
    """As ``expected_kind``, for ``apiVersion``."""
    gc_policy: GCPolicy = "pause"
    """What a list does with CPython's cyclic collector: ``"pause"``, ``"freeze"`` or
    ``"off"`` (see :mod:`aioinformer._kernel.gcpolicy`)."""

    def __post_init__(self) -> None:
        if self.resync_period < 0:
            raise ValueError(f"resync_period must not be negative, got {self.resync_period!r}")
        if self.page_size is not None and self.page_size < 0:
            raise ValueError(f"page_size must not be negative, got {self.page_size!r}")
        if self.max_watch_list_retries < 0:
            raise ValueError(
                f"max_watch_list_retries must not be negative, got {self.max_watch_list_retries!r}"
            )
        timeout = self.watch_inactivity_timeout
        if timeout is not None and timeout <= 0:
            raise ValueError(f"watch_inactivity_timeout must be positive, got {timeout!r}")

    def replace(self, **changes: Any) -> ReflectorOptions:
        """A copy with the fields in ``changes`` replaced, or this very object when they
        change nothing; ``None`` values are ignored, so callers can pass their optional
        keywords straight through."""
        given = {k: v for k, v in changes.items() if v is not None and v != getattr(self, k)}
        return dataclasses.replace(self, **given) if given else self


# ------------------------------------------------------------------ the state


@dataclass(frozen=True, slots=True)
class _Stopped:
    """Not running."""

    label: ClassVar[ReflectorState] = ReflectorState.STOPPED


@dataclass(frozen=True, slots=True)
class _Listing:
    """Fetching the full state from ``resource_version`` (a streaming list: ``streaming``)."""

    label: ClassVar[ReflectorState] = ReflectorState.LISTING
    resource_version: str
    streaming: bool = False


@dataclass(frozen=True, slots=True)
class _Watching:
    """Reading a watch the server will end after ``timeout_seconds``; silence longer than
    ``deadline`` seconds closes it first."""

    label: ClassVar[ReflectorState] = ReflectorState.WATCHING
    timeout_seconds: int
    deadline: float


@dataclass(frozen=True, slots=True)
class _BackingOff:
    """Sleeping ``delay`` seconds before the next attempt."""

    label: ClassVar[ReflectorState] = ReflectorState.BACKING_OFF
    delay: float


_State: TypeAlias = _Stopped | _Listing | _Watching | _BackingOff


@dataclass(frozen=True, slots=True)
class _CarriedStream:
    """A streaming list's stream, open, carrying on as the watch: asked for ``timeout``
    seconds, with the events ``pending`` that it read past its initial-events-end
    bookmark (one read may bring both)."""

    stream: OpenWatch
    timeout: int
    pending: list[WatchEvent]


_STOPPED: Final = _Stopped()


def _is_stray_cancellation() -> bool:
    """For a ``CancelledError`` just caught: true when nobody cancelled the current task
    (it came out of something awaited that was cancelled elsewhere)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() == 0


class Reflector:
    """Lists and watches one resource into a :class:`ReflectorStore`.

    ``lister_watcher`` is the source, ``store`` the destination. ``options`` is the
    static configuration (:class:`ReflectorOptions`); the keywords ``resync_period``,
    ``page_size`` and ``use_watch_list``, when given, replace its fields. Also:

    * ``name``: for logs, metrics and ``repr`` (default: what the lister-watcher
      describes, see :func:`~aioinformer.listwatch.source_info`);
    * ``should_resync``: when given, a resync happens only if it returns true;
    * ``backoff``: a :class:`~aioinformer._kernel.backoff.Backoff` (default 0.8 s to 30 s);
    * ``watch_error_handler``: ``handler(reflector, error)``, sync or async;
    * ``clock``: time source for every wait (default: the event loop's);
    * ``metrics_provider``: records the reflector metrics under ``name`` (default: the
      provider installed with ``set_metrics_provider``, if it implements them).

    The reflector trusts the lister-watcher for selectors and namespace: it sends the
    request options its algorithm needs and nothing else.
    """

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        store: ReflectorStore,
        *,
        name: str | None = None,
        resync_period: float | None = None,
        page_size: int | None = None,
        backoff: Backoff | None = None,
        watch_error_handler: WatchErrorHandler | None = None,
        use_watch_list: bool | None = None,
        clock: Clock | None = None,
        should_resync: Callable[[], bool] | None = None,
        options: ReflectorOptions | None = None,
        metrics_provider: ReflectorMetricsProvider | None = None,
    ) -> None:
        base = options if options is not None else ReflectorOptions()
        self._options = options = base.replace(
            resync_period=resync_period, page_size=page_size, use_watch_list=use_watch_list
        )
        self._lw = lister_watcher
        self._store = store
        info = source_info(lister_watcher)
        self._name = name or info.describe()
        # Streaming lists are asked of a source that declares them, and only then.
        self._use_watch_list = options.use_watch_list and info.watch_list
        # Whether the next list tries streaming: false from a failed streaming list
        # until a watch opens, so a source failing every request costs one per retry.
        self._stream_next = self._use_watch_list
        self._should_resync = should_resync
        self._page_size = options.page_size or None
        self._clock: Clock = clock if clock is not None else default_clock
        self._backoff = backoff if backoff is not None else Backoff(clock=self._clock)
        # What every watch event's object must be; None: not checked. A configured value
        # is never replaced; an unset one is adopted once, from the first list naming it.
        self._expected_kind = options.expected_kind
        self._expected_api_version = options.expected_api_version
        self._min_watch_timeout = max(MIN_WATCH_TIMEOUT, options.min_watch_timeout)
        self._rng = random.Random()
        self._handler: WatchErrorHandler | None = None
        self._handler_is_async = False
        self.set_watch_error_handler(watch_error_handler)

        self._state: _State = _STOPPED
        # The last resourceVersion synced into the store: a list's, or the last event's.
        self._cursor = Cursor()
        self._policy = ListPolicy()
        # True once a full list (plain or streaming) was committed to the store.
        self._synced_once = False
        self._running = False
        # True exactly while list_and_watch() runs.
        self._in_round = False
        # True while a round gets its full state (streaming, backing off between
        # streaming lists, listing), before it watches: a relist asked for meanwhile is
        # the list under way.
        self._listing = False
        # The watch stream being read, while one is; a failed resync interrupts it.
        self._read: WatchRead | None = None
        # Set by the resync task when store.resync() failed; ends the current
        # list_and_watch() (the next one relists). Cleared when list_and_watch() starts.
        self._resync_error: BaseException | None = None
        self._lists = 0
        self._watches = 0
        self._relists = 0
        self._events = 0
        self._last_error: BaseException | None = None
        # Before the first sync, the latest failure when no retry alone heals it (see
        # fails_until_fixed); None otherwise, and from the first list that succeeds on.
        # ``_blocked`` is set exactly while it is not None: the waits for sync that fail
        # fast wait on it.
        self._sync_blocker: BaseException | None = None
        self._blocked = asyncio.Event()
        self._heard = LastHeard()
        self._watch_restarts = 0
        self._watch_list_retries = 0
        self._watch_list_fallbacks = 0
        self._metrics = new_reflector_metrics(
            self._name,
            metrics_provider,
            clock=self._clock,
            seconds_since_heard=self._seconds_since_heard,
        )

    # ----------------------------------------------------------------- surface

    @property
    def name(self) -> str:
        """The name used in logs and ``repr``."""
        return self._name

    @property
    def options(self) -> ReflectorOptions:
        """The static configuration in force."""
        return self._options

    @property
    def state(self) -> ReflectorState:
        """Where the reflector is in its cycle."""
        return self._state.label

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion last synced into the store (``""`` before any list).

        Advances with every watch event, bookmarks included. Not synchronised with what
        the store's consumers have processed.
        """
        return self._cursor.resource_version

    @property
    def sync_blocker(self) -> BaseException | None:
        """Before the first list succeeded: the latest failure, when it is one that no
        retry alone heals (:func:`~aioinformer.errors.fails_until_fixed`: an unknown
        resource, a 401 or 403, a refused connection...); ``None`` once a list succeeded,
        while no failure happened, or when the latest was one that may heal (a 503). The
        reflector retries it all the same."""
        return self._sync_blocker

    async def wait_sync_blocked(self) -> BaseException:
        """Wait until :attr:`sync_blocker` is set, and return it (at once if it is)."""
        while self._sync_blocker is None:
            await self._blocked.wait()
        return self._sync_blocker

    def set_watch_error_handler(self, handler: WatchErrorHandler | None) -> None:
        """Replace the failure hook (``None`` removes it); sync or async."""
        self._handler = handler
        self._handler_is_async = handler is not None and is_async_callable(handler)

    def request_relist(self, reason: BaseException) -> None:
        """Ask for a full relist of the latest state (``resourceVersion=""``, a consistent
        read), as a cache audit that found the store differing from the server does.

        While watching, the watch ends as after a failed resync: ``reason`` goes to the
        error handler and this round returns, so :meth:`run` relists after its backoff.
        While listing, or between rounds, the list under way or coming is that relist
        (it reads at or past every resourceVersion the store had applied)."""
        self._policy.rv_unavailable = True
        if not self._in_round or self._listing:
            return
        # The resync task's path: the read in progress, or the next one, ends at once.
        self._resync_error = reason
        read = self._read
        if read is not None:
            read.interrupt(reason, resync_failed=True)

    def seconds_since_heard(self) -> float | None:
        """Seconds since the server was last heard from (``None`` before the first list);
        see :class:`ReflectorStatistics`."""
        return self._heard.seconds_since(self._clock.monotonic())

    def statistics(self) -> ReflectorStatistics:
        """A frozen snapshot of the state and counters."""
        state = self._state
        return ReflectorStatistics(
            state=state.label,
            lists=self._lists,
            watches=self._watches,
            relists=self._relists,
            events=self._events + (self._read.applied if self._read is not None else 0),
            last_resource_version=self._cursor.resource_version,
            last_error=self._last_error,
            seconds_since_heard=self.seconds_since_heard(),
            watch_restarts=self._watch_restarts,
            inactivity_deadline=state.deadline if isinstance(state, _Watching) else None,
            watch_list_retries=self._watch_list_retries,
            watch_list_fallbacks=self._watch_list_fallbacks,
        )

    def _seconds_since_heard(self) -> float:
        """:meth:`seconds_since_heard` for the metrics gauge: NaN while not running or
        before the server was first heard from."""
        seconds = self.seconds_since_heard()
        if seconds is None or not (self._running or self._in_round):
            return math.nan
        return seconds

    def __repr__(self) -> str:
        return (
            f"<Reflector {self._name} state={self._state.label.name}"
            f" rv={self._cursor.resource_version!r}>"
        )

    # --------------------------------------------------------------- lifecycle

    async def run(self) -> None:
        """List and watch until cancelled, backing off between attempts.

        Each failure raised by :meth:`list_and_watch` goes to the error handler; every
        attempt, failed or not, is followed by a backoff delay (client-go's sliding
        ``BackoffUntil``), which a 429's ``Retry-After`` replaces. A ``CancelledError``
        let out by the lister-watcher while this task is not being cancelled counts as
        such a failure: only cancelling the task ends ``run()``.
        """
        if self._running:
            raise RuntimeError(f"{self!r} is already running")
        self._running = True
        logger.debug("%s: starting", self._name)
        try:
            while True:
                error: BaseException | None = None
                try:
                    await self.list_and_watch()
                except Exception as exc:
                    error = exc
                    if isinstance(exc, AioinformerError | ConnectionRefusedError):
                        logger.log(
                            failure_level(exc), "%s: list and watch failed: %s", self._name, exc
                        )
                    else:
                        logger.exception("%s: list and watch failed", self._name)
                    await self._report(exc)
                except asyncio.CancelledError as exc:
                    if not _is_stray_cancellation():
                        raise
                    # Let out by the lister-watcher although nobody cancelled us: a
                    # failure like any other, or the reflector would end for good.
                    error = exc
                    logger.exception(
                        "%s: list and watch failed with a stray cancellation", self._name
                    )
                    await self._report(exc)
                await self._back_off(error)
        finally:
            self._running = False
            self._state = _STOPPED
            logger.debug("%s: stopped", self._name)

    async def list_and_watch(self) -> None:
        """List (or stream-list) once, then watch until a relist is called for.

        Raises when the list fails, or when opening a watch fails for a reason other
        than a refused connection or a 429 (those back off and retry here). Returns
        normally when a watch ends in a way that calls for a relist (410 Gone, another
        ``ERROR`` event, a very short watch, a failed resync).
        """
        if self._in_round:
            raise RuntimeError(f"{self!r} is already listing and watching")
        self._in_round = True
        self._resync_error = None
        # The round's helper (the resync loop): it does not outlive the round.
        helper: Running | None = None
        try:
            if self._synced_once:
                self._relists += 1
                self._metrics.relisted()
            self._listing = True
            carried = await self._stream_or_fall_back() if self._stream_next else None
            if carried is None:
                await self._list()
            self._listing = False
            if self._options.resync_period > 0:
                helper = Running.spawn(self._resync_loop(), name=f"{self._name} resync")
            await self._watch(carried)
        finally:
            try:
                if helper is not None:
                    await helper.stop()
            finally:
                self._in_round = self._listing = False
                if not self._running:
                    self._state = _STOPPED

    # -------------------------------------------------------------------- list

    async def _list(self) -> None:
        policy = self._policy
        resource_version = policy.resource_version(self._cursor.resource_version)
        self._state = _Listing(resource_version)
        limit = policy.limit(resource_version, self._page_size)
        self._metrics.list_started()
        started = self._clock.monotonic()
        with collector_paused(self._options.gc_policy):
            try:
                items, list_rv, paginated = await self._list_pages(resource_version, limit)
            except ApiError as exc:
                if not (is_expired(exc) or is_too_large(exc)):
                    raise
                logger.info(
                    "%s: list at resourceVersion %r failed (%s), listing the latest state",
                    self._name,
                    resource_version,
                    exc,
                )
                policy.rv_unavailable = True
                items, list_rv, paginated = await self._list_pages(
                    policy.resource_version(self._cursor.resource_version), limit
                )
            self._heard.at = self._clock.monotonic()
            if resource_version == "0" and paginated:
                policy.paginated_result = True
            policy.rv_unavailable = False
            self._metrics.listed(len(items), self._clock.monotonic() - started, list_rv)
            await self._store.replace(items, list_rv)
        self._cursor.resource_version = list_rv
        self._listed()
        logger.debug("%s: listed %d objects at %s", self._name, len(items), list_rv)

    async def _list_pages(
        self, resource_version: str, limit: int | None
    ) -> tuple[list[Any], str, bool]:
        """One full list, page by page: (items, the list's resourceVersion, paginated)."""
        options = ListOptions(resource_version=resource_version, limit=limit)
        items: list[Any] | None = None
        list_rv = ""
        paginated = False
        while True:
            self._lists += 1
            try:
                page: ObjectList = await self._lw.list(options)
            except Gone:
                if not options.continue_:
                    raise
                # The snapshot behind the token is gone: one unpaginated list instead.
                logger.info("%s: list continuation expired, listing in one page", self._name)
                self._lists += 1
                page = await self._lw.list(ListOptions(resource_version=resource_version))
                self._adopt_kind(page)
                return page.items, page.resource_version, paginated
            self._adopt_kind(page)
            if items is None:
                if not page.continue_:
                    return page.items, page.resource_version, paginated
                items = list(page.items)
                list_rv = page.resource_version
            else:
                items.extend(page.items)
            if not page.continue_:
                return items, list_rv, paginated
            # A continued list is pinned by its token; a resourceVersion is not allowed.
            options = ListOptions(limit=limit, continue_=page.continue_)
            paginated = True

    def _adopt_kind(self, page: ObjectList) -> None:
        """Take the page's item kind/apiVersion as the watch expectation for whichever
        of the two is not set yet (a configured one is never replaced)."""
        if self._expected_kind is None and page.kind:
            self._expected_kind = page.kind
        if self._expected_api_version is None and page.api_version:
            self._expected_api_version = page.api_version

    # ------------------------------------------------------------------- watch

    def _watch_timeout(self) -> int:
        return int(self._min_watch_timeout * (self._rng.random() + 1.0))

    def _deadline(self, timeout_seconds: int) -> float:
        return inactivity_deadline(self._options.watch_inactivity_timeout, timeout_seconds)

    async def _watch(self, carried: _CarriedStream | None) -> None:
        """Watch until a relist is called for.

        ``carried``, when given, is a streaming list's stream, still open, with what it
        read past its initial-events-end bookmark; it is owned, and closed, from here on.
        Its request has succeeded, so it breaking before any further event is an open
        watch ending, not a failed watch request.
        """
        retry = InternalErrorRetry(self._options.max_internal_error_retry_duration, self._clock)
        streak = FailureStreak()
        stream: OpenWatch | None = None
        pending: list[WatchEvent] | None = None
        timeout = 0
        if carried is not None:
            stream, timeout, pending = carried.stream, carried.timeout, carried.pending
        while True:
            # A streaming list's stream was opened (and read) before we got it.
            carried_over = stream is not None
            if stream is None:
                timeout = self._watch_timeout()
                self._watches += 1
                self._metrics.watch_started()
                stream = OpenWatch(
                    self._lw.watch(
                        ListOptions(
                            resource_version=self._cursor.resource_version,
                            timeout_seconds=timeout,
                            allow_watch_bookmarks=True,
                        )
                    )
                )
            self._state = _Watching(timeout, self._deadline(timeout))
            _, end, _ = await self._consume(
                stream, self._store, self._cursor, timeout, opened=carried_over, pending=pending
            )
            stream = pending = None
            if end.opened:
                # The source answers: the next list may try streaming again.
                self._stream_next = self._use_watch_list
            retry.after(end.error)
            # Asked only where the policy looks at it: should_retry() ends a stale streak.
            may_retry = end.opened and is_internal_error(end.error) and retry.should_retry()
            decision = next_step(end, may_retry_internal=may_retry)
            if not await self._follow(decision, "watch", repeated=streak.after(end)):
                return
            self._watch_restarts += 1

    async def _follow(self, decision: Decision, what: str, *, repeated: bool = False) -> bool:
        """Carry out ``decision``; false when the list-and-watch round is over. A
        ``repeated`` failure is logged as a WARNING whatever the decision's level."""
        step = decision.step
        if step is Step.RAISE:
            raise decision.errors[0]
        level = max(decision.level, logging.WARNING) if repeated else decision.level
        for error in decision.errors:
            logger.log(level, "%s: %s ended with %s; %s", self._name, what, error, step.value)
            await self._report(error)
        if step is Step.BACK_OFF:
            await self._back_off(decision.errors[-1] if decision.errors else None)
        return step is not Step.RELIST

    async def _consume(
        self,
        stream: OpenWatch,
        sink: WatchSink,
        cursor: Cursor,
        timeout_seconds: int,
        *,
        opened: bool = False,
        until_initial_events_end: bool = False,
        pending: list[WatchEvent] | None = None,
    ) -> tuple[bool, WatchEnd, list[WatchEvent]]:
        """Read ``stream`` into ``sink`` (see :class:`WatchRead`), in view of the resync
        task and of ``statistics()`` while it runs; whether it stopped at the
        initial-events-end bookmark, how it ended, and what it read past that bookmark."""
        read = WatchRead(
            stream,
            sink,
            cursor,
            name=self._name,
            clock=self._clock,
            deadline=self._deadline(timeout_seconds),
            expected_kind=self._expected_kind,
            expected_api_version=self._expected_api_version,
            heard=self._heard,
            opened=opened,
            until_initial_events_end=until_initial_events_end,
            pending=pending,
        )
        if self._resync_error is not None:
            read.interrupt(self._resync_error, resync_failed=True)
        self._read = read
        self._metrics.reading(read, cursor)
        try:
            done, end = await read.run()
        finally:
            self._read = None
            self._events += read.applied
            self._metrics.stop_reading()
        self._metrics.stream_ended(end, complete=not done)
        return done, end, read.leftover

    # -------------------------------------------------------- streaming list

    async def _stream_or_fall_back(self) -> _CarriedStream | None:
        """Get the initial state from a streaming list, streaming again after a backoff
        when it failed in a way worth retrying (:func:`watch_list_retriable`), at most
        ``max_watch_list_retries`` times; ``None`` when it gave up, and the caller lists.

        Every failure goes to the error handler once, retried or not. After a fallback
        the next rounds list without streaming until a watch has opened.
        """
        retries = 0
        allowed = self._options.max_watch_list_retries
        while True:
            try:
                return await self._watch_list()
            except _StreamingListFailed as failed:
                error, retriable = failed.error, failed.retriable
            except Exception as exc:  # noqa: BLE001
                # Blind on purpose: any other failure (the store's replace, a source
                # raising as it is asked) falls back to list+watch at once.
                error, retriable = exc, False
            if retriable and retries < allowed:
                retries += 1
                self._watch_list_retries += 1
                self._metrics.watch_list_failed(retried=True)
                logger.info(
                    "%s: streaming list failed, streaming again after a backoff "
                    "(retry %d of %d): %s",
                    self._name,
                    retries,
                    allowed,
                    error,
                )
                await self._report(error)
                await self._back_off(error)
                continue
            self._stream_next = False
            self._watch_list_fallbacks += 1
            self._metrics.watch_list_failed(retried=False)
            if retriable:
                logger.info(
                    "%s: streaming list failed %d times, falling back to list and watch: %s",
                    self._name,
                    retries + 1,
                    error,
                )
            else:
                logger.info(
                    "%s: streaming list failed, falling back to list and watch: %s",
                    self._name,
                    error,
                )
            await self._report(error)
            return None

    async def _watch_list(self) -> _CarriedStream:
        """Get the initial state from one streaming list and commit it with one
        ``replace()``; return the stream, still open, to carry on as the watch.

        Raises :class:`_StreamingListFailed` when the stream ended before its
        initial-events-end bookmark, anything else the store's ``replace`` raised.
        """
        # A streaming list decodes the whole state as a LIST does: the same policy.
        with collector_paused(self._options.gc_policy):
            return await self._stream_list()

    async def _stream_list(self) -> _CarriedStream:
        temporary = TemporaryStore()
        cursor = Cursor()
        timeout = self._watch_timeout()
        self._watches += 1
        self._metrics.watch_list_started()
        rv = "" if self._policy.rv_unavailable else self._cursor.resource_version
        self._state = _Listing(rv, streaming=True)
        stream = OpenWatch(
            self._lw.watch(
                ListOptions(
                    resource_version=rv,
                    resource_version_match="NotOlderThan",
                    timeout_seconds=timeout,
                    allow_watch_bookmarks=True,
                    send_initial_events=True,
                )
            )
        )
        done, end, leftover = await self._consume(
            stream, temporary, cursor, timeout, until_initial_events_end=True
        )
        if not done:
            error = end.error
            if error is None:
                error = WatchError(
                    f"the stream ended after {end.events} events, before its "
                    "initial-events-end bookmark"
                )
            raise _StreamingListFailed(error, retriable=watch_list_retriable(end))
        try:
            self._policy.rv_unavailable = False
            await self._store.replace(list(temporary.items.values()), cursor.resource_version)
        except BaseException:
            await stream.aclose()
            raise
        self._cursor.resource_version = cursor.resource_version
        self._listed()
        logger.debug(
            "%s: streamed %d objects at %s",
            self._name,
            len(temporary.items),
            cursor.resource_version,
        )
        return _CarriedStream(stream, timeout, leftover)

    # ------------------------------------------------------------------ timers

    async def _resync_loop(self) -> None:
        clock = self._clock
        while True:
            await clock.sleep(self._options.resync_period)
            if self._should_resync is not None and not self._should_resync():
                continue
            try:
                await self._store.resync()
            except Exception as exc:  # noqa: BLE001
                # Blind on purpose: a failed resync ends this list_and_watch, as in client-go.
                self._resync_error = exc
                read = self._read
                if read is not None:
                    read.interrupt(exc, resync_failed=True)
                return

    async def _back_off(self, error: BaseException | None) -> None:
        delay = self._backoff.next_delay()
        if isinstance(error, TooManyRequests) and error.retry_after is not None:
            delay = error.retry_after
        self._state = _BackingOff(delay)
        await self._clock.sleep(delay)

    def _listed(self) -> None:
        """A full list (plain or streaming) was committed to the store."""
        self._synced_once = True
        self._sync_blocker = None
        self._blocked.clear()

    async def _report(self, error: BaseException) -> None:
        self._last_error = error
        if not self._synced_once:
            # The latest attempt says whether the store can sync by retrying alone: a
            # failure that may heal (a 503 after a 403 fixed meanwhile) clears the blocker.
            if fails_until_fixed(error):
                self._sync_blocker = error
                self._blocked.set()
            else:
                self._sync_blocker = None
                self._blocked.clear()
        handler = self._handler
        if handler is None:
            return
        try:
            result = handler(self, error)
            if self._handler_is_async and result is not None:
                await result
        except Exception:
            logger.exception("%s: watch error handler failed", self._name)
        except asyncio.CancelledError:
            if not _is_stray_cancellation():
                raise
            logger.exception("%s: watch error handler failed", self._name)


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


class _StreamingListFailed(Exception):
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
