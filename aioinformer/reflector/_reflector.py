"""The reflector itself: its options, its lifecycle and the loop that lists and watches.

Part of :mod:`aioinformer.reflector` (whose notes say what a reflector does and
guarantees): :class:`ReflectorOptions`, :class:`Reflector` and its relist policy. Reading
one watch stream into a store is :mod:`aioinformer.reflector._watch_read`'s.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeAlias

from aioinformer._kernel.backoff import Backoff
from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.gcpolicy import collector_paused
from aioinformer._kernel.runner import Running, is_async_callable
from aioinformer._pipeline.list_policy import ListPolicy
from aioinformer._pipeline.metric_recorders import new_reflector_metrics
from aioinformer._pipeline.reflector_status import LastHeard, ReflectorState, ReflectorStatistics
from aioinformer._pipeline.watch_policy import (
    Decision,
    FailureStreak,
    InternalErrorRetry,
    RelistRequested,
    Step,
    WatchEnd,
    failure_level,
    is_expired,
    is_internal_error,
    is_too_large,
    next_step,
    watch_list_retriable,
)
from aioinformer.errors import (
    AioinformerError,
    ApiError,
    Gone,
    TooManyRequests,
    WatchError,
    fails_until_fixed,
)
from aioinformer.listwatch import (
    ListerWatcher,
    ListOptions,
    ObjectList,
    WatchEvent,
    source_info,
)
from aioinformer.reflector._options import (
    MIN_WATCH_TIMEOUT,
    ReflectorOptions,
)
from aioinformer.reflector._watch_read import (
    Cursor,
    OpenWatch,
    ReflectorStore,
    StreamingListFailed,
    TemporaryStore,
    WatchRead,
    WatchSink,
    inactivity_deadline,
)

if TYPE_CHECKING:
    from aioinformer._kernel.metrics import ReflectorMetricsProvider

logger = logging.getLogger("aioinformer.reflector")

WatchErrorHandler: TypeAlias = Callable[["Reflector", BaseException], Awaitable[None] | None]
"""``handler(reflector, error)``, sync or async: told about every list or watch failure."""


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
        self._name = name or info.label
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
        # A relist asked for on purpose while listing (the source's selection moved under
        # the list in flight, which was sent with the old one): owed once the list ends.
        self._relist_owed: BaseException | None = None
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
        if self._listing and isinstance(reason, RelistRequested):
            # The list under way was sent with the old selection (a streaming list's
            # stream would even go on as the watch): relist as soon as it ends.
            self._relist_owed = reason
            return
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
        ``BackoffUntil``), which a 429's ``Retry-After`` replaces, except a round ended for
        a relist asked for on purpose (:class:`RelistRequested`), which relists at once.
        A ``CancelledError`` let out by the lister-watcher while this task is not being
        cancelled counts as such a failure: only cancelling the task ends ``run()``.
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
                if error is None and isinstance(self._resync_error, RelistRequested):
                    # A relist asked for on purpose (selectors moved) is no failure: it
                    # starts at once, without the backoff between attempts.
                    await self._clock.sleep(0)
                    continue
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
        self._relist_owed = None
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
            owed = self._take_owed_relist()
            if owed is not None:
                # The watch ends at once (a carried stream closed with it), and run()
                # relists with the selection as it is now.
                self._resync_error = owed
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

    def _take_owed_relist(self) -> BaseException | None:
        """The reason of a relist asked for on purpose while listing, once (see
        :meth:`request_relist`)."""
        owed, self._relist_owed = self._relist_owed, None
        return owed

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
            except StreamingListFailed as failed:
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

        Raises :class:`StreamingListFailed` when the stream ended before its
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
            raise StreamingListFailed(error, retriable=watch_list_retriable(end))
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
