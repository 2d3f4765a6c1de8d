"""What a reflector does next when one watch stream ends: the decision, apart from the I/O.

Role. The reflector reads a watch until it ends, sums up how it ended in a
:class:`WatchEnd` and asks :func:`next_step` what follows. The answer is a
:class:`Decision`: a :class:`Step` (watch again at once, back off and watch again,
relist, or give up by raising) and the errors the
reflector reports to its error handler (or raises, for :attr:`Step.RAISE`).

Input: a :class:`WatchEnd` (the error the stream ended with, if any, whether it had
opened, how long it lasted, how many events it applied). Output: a
:class:`Decision`. :func:`next_step` is pure: no I/O, no clock, no logging; the
time-dependent part of the internal-error rule is decided beforehand by
:class:`InternalErrorRetry` and passed in as ``may_retry_internal``.

The rules are client-go v0.32's ``tools/cache/reflector.go``: a watch request that
fails is retried after a backoff only for a refused connection or a 429, and is
otherwise a failure of the whole list-and-watch; a watch that opened and then ended
with an ``ApiError`` is re-listed (410 Gone, and any other status), backed off (429) or
re-opened at once (500 ``InternalError`` while retries are allowed); a watch that lasted
less than a second without an event calls for a relist.

A streaming list that ends before its initial-events-end bookmark is judged by
:func:`watch_list_retriable`: a throttled or unreachable server, or a stream lost on the
way, is worth streaming again after a backoff (client-go's ``watchList`` loop); anything
else says the server cannot stream that list, and the reflector falls back to LIST+WATCH.

Task model: none; :class:`InternalErrorRetry` reads the clock it is given and is used by
one task at a time.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from aioinformer.errors import (
    ApiError,
    ConnectionFailed,
    Gone,
    TLSVerificationError,
    TooManyRequests,
    TransportError,
    WatchError,
)

if TYPE_CHECKING:
    from aioinformer._kernel.clock import Clock

__all__ = [
    "Decision",
    "FailureStreak",
    "InternalErrorRetry",
    "RelistRequested",
    "Step",
    "WatchEnd",
    "failure_level",
    "is_expired",
    "is_internal_error",
    "is_too_large",
    "next_step",
    "watch_list_retriable",
]

SHORT_WATCH: Final = 1.0
"""A watch closing sooner than this (seconds) without events means trouble: relist."""

REPEATED_FAILURES: Final = 3
"""Failed watches in a row (no event in between) from which even a routine end is a
WARNING."""

INTERNAL_ERROR_RESET: Final = 60.0
"""A quiet spell this long (seconds) restarts the internal-error retry window."""


class Step(enum.Enum):
    """What the reflector does after a watch stream ended."""

    REWATCH = "rewatch"
    """Open the next watch at once, from the last resourceVersion seen."""
    BACK_OFF = "back-off"
    """Sleep a backoff delay (a 429's ``Retry-After`` wins), then open the next watch."""
    RELIST = "relist"
    """End this list-and-watch normally; ``run()`` relists after its backoff."""
    RAISE = "raise"
    """Give up: raise the first of :attr:`Decision.errors`."""


@dataclass(frozen=True, slots=True)
class WatchEnd:
    """How one watch stream ended."""

    error: BaseException | None = None
    """What ended the stream: what reading raised, or why the reflector ended it
    (``timed_out``, ``resync_failed``); ``None`` when the stream simply ended."""
    opened: bool = True
    """Whether the watch request had succeeded: the stream delivered something, or it
    was handed over already open. An error before that is a failed watch request."""
    events: int = 0
    """Events applied from this stream."""
    elapsed: float = SHORT_WATCH
    """Seconds from the request to the end of the stream."""
    timed_out: bool = False
    """The reflector's inactivity deadline ended the stream (``error`` is the
    :class:`~aioinformer.errors.WatchTimeout`)."""
    resync_failed: bool = False
    """The reflector ended the stream because ``store.resync()`` failed (``error`` is
    what it raised), or to relist on request (``Reflector.request_relist``, ``error``
    is the reason given): either way the next step is a relist."""


@dataclass(frozen=True, slots=True)
class Decision:
    """The step to take, and the errors to report (or, for ``RAISE``, to raise)."""

    step: Step
    errors: tuple[BaseException, ...] = ()
    """Every failure met, in order; each goes to the error handler exactly once
    (except with ``RAISE``, where the caller raises the first and reports nothing)."""
    level: int = logging.INFO
    """How loud a log line the decision deserves."""


def next_step(end: WatchEnd, *, may_retry_internal: bool = False) -> Decision:
    """Decide what follows the end of a watch. (A streaming list that ends before its
    initial-events-end bookmark is judged by :func:`watch_list_retriable` instead.)"""
    return _after_watch(end, may_retry_internal)


def watch_list_retriable(end: WatchEnd) -> bool:
    """Whether a streaming list that ended before its initial-events-end bookmark is
    worth streaming again after a backoff, rather than falling back to LIST+WATCH.

    Retriable, as in client-go's ``watchList``: a 429 (the request or an ``ERROR``
    event), a refused connection, and the ways a connection is lost (reset, broken before
    an answer, broken mid-stream, closed before the bookmark): a LIST would meet the same
    overloaded server or network, and cost it more. Not retriable, so a LIST at once:
    every other ``Status`` (400 or 422: no streaming lists; 403; 410, whose fallback lists
    from the last resourceVersion; 5xx, see below), a TLS failure, a stream the
    reflector ended (silent past its deadline, or showing that it ignores
    ``sendInitialEvents``), and one that closed within a second with nothing sent (a
    server that does not stream lists).

    5xx falls back at once, as in client-go: kube-apiserver asks a client to come back
    later with a 429 and its Retry-After (priority and fairness, a watch cache still
    initialising), while a 5xx to a streaming request may come from a part of the path
    that cannot stream (an aggregated server, a proxy) and would fail every retry; a
    LIST to a server that is really down fails as cheaply, and ``run()`` backs off.
    """
    if end.timed_out or end.resync_failed:
        return False
    error = end.error
    if error is None:
        return not _short(end)
    if is_retriable_watch_error(error):
        return True
    if isinstance(error, ApiError | TLSVerificationError):
        return False
    if isinstance(error, ConnectionFailed | ConnectionError):
        return True
    return end.opened and isinstance(error, WatchError)


def _short(end: WatchEnd) -> bool:
    return end.elapsed < SHORT_WATCH and end.events == 0


def _short_watch_error(what: str) -> WatchError:
    return WatchError(f"very short watch: the {what} closed within a second without any event")


class RelistRequested(Exception):
    """A relist asked for on purpose, not a fault (an informer whose selectors moved):
    given to ``Reflector.request_relist``, it is logged at INFO, not as a warning."""


def _after_watch(end: WatchEnd, may_retry_internal: bool) -> Decision:
    error = end.error
    if end.resync_failed and error is not None:
        level = logging.INFO if isinstance(error, RelistRequested) else logging.WARNING
        return Decision(Step.RELIST, (error,), level)
    if end.timed_out and error is not None:
        return Decision(Step.REWATCH, (error,))
    if error is not None and not end.opened:
        # The watch request itself failed (client-go's failed Watch() call).
        if is_retriable_watch_error(error):
            return Decision(Step.BACK_OFF, (error,))
        return Decision(Step.RAISE, (error,))
    if isinstance(error, ApiError):
        if is_expired(error):
            return Decision(Step.RELIST, (error,))
        if isinstance(error, TooManyRequests):
            return Decision(Step.BACK_OFF, (error,))
        if is_internal_error(error) and may_retry_internal:
            return Decision(Step.REWATCH, (error,))
        return Decision(Step.RELIST, (error,), logging.WARNING)
    if error is not None and not isinstance(error, TransportError | ConnectionError):
        return Decision(Step.RAISE, (error,))
    # A stream that broke after it opened is a closed stream (from a source of the
    # user's own, a builtin ConnectionError such as ConnectionResetError says the same).
    errors = () if error is None else (error,)
    if _short(end):
        return Decision(Step.RELIST, (*errors, _short_watch_error("watch")), logging.WARNING)
    return Decision(Step.REWATCH, errors)


def is_expired(error: BaseException | None) -> bool:
    """410 Gone: the resourceVersion asked for is older than the server keeps."""
    return isinstance(error, Gone)


def is_too_large(error: BaseException | None) -> bool:
    """The server has not yet seen the resourceVersion asked for (504 or older forms)."""
    if not isinstance(error, ApiError):
        return False
    causes = error.details.get("causes") or []
    for cause in causes:
        if isinstance(cause, dict) and cause.get("reason") == "ResourceVersionTooLarge":
            return True
    if error.reason != "Timeout":
        return False
    for cause in causes:
        if isinstance(cause, dict) and cause.get("message") == "Too large resource version":
            return True
    return "Too large resource version" in error.message


def is_internal_error(error: BaseException | None) -> bool:
    """A 500 ``InternalError`` (say, etcd without a leader): worth re-watching at once."""
    return isinstance(error, ApiError) and error.code == 500 and error.reason == "InternalError"


def is_retriable_watch_error(error: BaseException) -> bool:
    """A refused connection or a 429: back off and watch again, no relist needed.

    A refusal is the client's ``ConnectionFailed(refused=True)`` or, from a
    ``ListerWatcher`` of the user's own, the builtin ``ConnectionRefusedError``."""
    return isinstance(error, TooManyRequests | ConnectionRefusedError) or (
        isinstance(error, ConnectionFailed) and error.refused
    )


def failure_level(error: BaseException) -> int:
    """How loud a failed list-and-watch is logged: INFO when the reflector recovers
    from it as a matter of course (the resourceVersion it asked for is expired or not
    there yet, and the next list asks for the latest state), WARNING otherwise: a 403,
    an unknown resource or a broken server is for a user to look at."""
    if is_expired(error) or is_too_large(error):
        return logging.INFO
    return logging.WARNING


class FailureStreak:
    """Counts the watches in a row that ended in a failure without delivering an event.

    Each such end on its own is routine (a dropped connection, a refusal, a silent stream
    closed at its deadline) and logged at INFO; from the :data:`REPEATED_FAILURES`-th in a
    row on, the reflector logs it as a WARNING, since something keeps failing.
    """

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def after(self, end: WatchEnd) -> bool:
        """Record how a watch ended; whether the streak is now long enough to warn."""
        if end.events or end.error is None:
            self.count = 0
        else:
            self.count += 1
        return self.count >= REPEATED_FAILURES


class InternalErrorRetry:
    """How long internal errors (500 ``InternalError``) from a watch are retried at once.

    Retries are allowed while the first such error of the current streak is at most
    ``max_duration`` seconds old; a streak ends after :data:`INTERNAL_ERROR_RESET`
    seconds without one. ``max_duration <= 0`` disables retrying.
    """

    __slots__ = ("_clock", "_first", "_last", "_max")

    def __init__(self, max_duration: float, clock: Clock) -> None:
        self._max = max_duration
        self._clock = clock
        # Invariant: _first is None iff _last is None (no streak in progress).
        self._first: float | None = None
        self._last: float | None = None

    def after(self, error: BaseException | None) -> None:
        """Record how a watch ended."""
        if not is_internal_error(error):
            return
        now = self._clock.monotonic()
        if self._last is not None and now - self._last >= INTERNAL_ERROR_RESET:
            self._first = None
        if self._first is None:
            self._first = now
        self._last = now

    def should_retry(self) -> bool:
        """Whether an internal error just recorded may be retried at once."""
        if self._max <= 0:
            return False
        if self._first is None or self._clock.monotonic() - self._first <= self._max:
            return True
        self._first = self._last = None
        return False
