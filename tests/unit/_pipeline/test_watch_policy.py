"""The watch-end policy: one table of how a watch ended and what the reflector does next
(client-go v0.32 ``reflector.go``'s watch loop, as a pure function), and one of how a
streaming list ended before its bookmark and whether it is streamed again (client-go's
``watchList`` loop).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from aioinformer._pipeline.watch_policy import (
    REPEATED_FAILURES,
    SHORT_WATCH,
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
from aioinformer.errors import (
    BadRequest,
    ConnectionFailed,
    Forbidden,
    Gone,
    ServerError,
    TLSVerificationError,
    TooManyRequests,
    WatchError,
    WatchTimeout,
)
from aioinformer.testing import FakeClock

GONE = Gone({"message": "too old resource version", "reason": "Expired"})
BUILTIN_REFUSED = ConnectionRefusedError(111, "Connection refused")
THROTTLED = TooManyRequests({"message": "slow down"}, retry_after=2.0)
INTERNAL = ServerError({"code": 500, "reason": "InternalError", "message": "no leader"})
STORAGE = ServerError({"code": 500, "reason": "StorageReadError", "message": "corrupt"})
TOO_LARGE = ServerError(
    {
        "code": 504,
        "reason": "Timeout",
        "message": "Too large resource version: 9, current: 3",
        "details": {"causes": [{"reason": "ResourceVersionTooLarge"}]},
    }
)
REFUSED = ConnectionFailed("refused", refused=True)
NO_ROUTE = ConnectionFailed("no route to host")
BROKEN = WatchError("connection reset mid-stream")
RESET = ConnectionResetError(104, "Connection reset by peer")
IDLE = WatchTimeout("watch sent nothing for 90s")
RESYNC = RuntimeError("resync failed")
BUG = RuntimeError("a bug in the lister-watcher")
FORBIDDEN = Forbidden({"message": "watch forbidden"})

LONG = 30.0  # seconds a watch lived: not a very short watch
SHORT = SHORT_WATCH / 2


@dataclass(frozen=True)
class Case:
    end: WatchEnd
    step: Step
    reported: tuple[BaseException | type[BaseException], ...]
    may_retry_internal: bool = False
    level: int = logging.INFO


WATCH_CASES = [
    # A watch that simply ends is re-opened from the last resourceVersion...
    pytest.param(Case(WatchEnd(events=3, elapsed=LONG), Step.REWATCH, ()), id="closed-rewatch"),
    pytest.param(Case(WatchEnd(events=0, elapsed=LONG), Step.REWATCH, ()), id="quiet-rewatch"),
    # ...unless it closed within a second without an event: trouble, relist.
    pytest.param(
        Case(WatchEnd(events=0, elapsed=SHORT), Step.RELIST, (WatchError,), level=logging.WARNING),
        id="very-short-relist",
    ),
    pytest.param(
        Case(WatchEnd(events=1, elapsed=SHORT), Step.REWATCH, ()), id="short-with-events-rewatch"
    ),
    # The reflector's own deadline and a failed resync.
    pytest.param(
        Case(WatchEnd(IDLE, timed_out=True, elapsed=LONG), Step.REWATCH, (IDLE,)),
        id="deadline-rewatch",
    ),
    pytest.param(
        Case(
            WatchEnd(RESYNC, resync_failed=True, elapsed=SHORT),
            Step.RELIST,
            (RESYNC,),
            level=logging.WARNING,
        ),
        id="resync-failed-relist",
    ),
    # The watch request itself failed: back off on a refusal or a 429, else give up.
    pytest.param(
        Case(WatchEnd(REFUSED, opened=False), Step.BACK_OFF, (REFUSED,)), id="request-refused"
    ),
    pytest.param(
        Case(WatchEnd(BUILTIN_REFUSED, opened=False), Step.BACK_OFF, (BUILTIN_REFUSED,)),
        id="request-refused-builtin-error",
    ),
    pytest.param(
        Case(WatchEnd(THROTTLED, opened=False), Step.BACK_OFF, (THROTTLED,)), id="request-429"
    ),
    pytest.param(
        Case(WatchEnd(NO_ROUTE, opened=False), Step.RAISE, (NO_ROUTE,)), id="request-no-route"
    ),
    pytest.param(Case(WatchEnd(GONE, opened=False), Step.RAISE, (GONE,)), id="request-410"),
    pytest.param(
        Case(WatchEnd(INTERNAL, opened=False), Step.RAISE, (INTERNAL,), may_retry_internal=True),
        id="request-500-never-retried",
    ),
    pytest.param(
        Case(WatchEnd(IDLE, opened=False), Step.RAISE, (IDLE,)), id="request-timeout-from-source"
    ),
    # An ERROR event on an open watch.
    pytest.param(Case(WatchEnd(GONE, elapsed=LONG), Step.RELIST, (GONE,)), id="error-410-relist"),
    pytest.param(
        Case(WatchEnd(THROTTLED, elapsed=LONG), Step.BACK_OFF, (THROTTLED,)),
        id="error-429-back-off",
    ),
    pytest.param(
        Case(WatchEnd(INTERNAL, elapsed=LONG), Step.REWATCH, (INTERNAL,), may_retry_internal=True),
        id="error-500-internal-retried",
    ),
    pytest.param(
        Case(WatchEnd(INTERNAL, elapsed=LONG), Step.RELIST, (INTERNAL,), level=logging.WARNING),
        id="error-500-internal-out-of-retries",
    ),
    pytest.param(
        Case(
            WatchEnd(STORAGE, elapsed=LONG),
            Step.RELIST,
            (STORAGE,),
            may_retry_internal=True,
            level=logging.WARNING,
        ),
        id="error-500-other-relist",
    ),
    pytest.param(
        Case(WatchEnd(FORBIDDEN, elapsed=SHORT), Step.RELIST, (FORBIDDEN,), level=logging.WARNING),
        id="error-403-relist",
    ),
    # A stream that broke after it opened is a closed stream.
    pytest.param(
        Case(WatchEnd(BROKEN, events=2, elapsed=LONG), Step.REWATCH, (BROKEN,)),
        id="broken-rewatch",
    ),
    pytest.param(
        Case(
            WatchEnd(BROKEN, events=0, elapsed=SHORT),
            Step.RELIST,
            (BROKEN, WatchError),
            level=logging.WARNING,
        ),
        id="broken-at-once-relist",
    ),
    # A source of the user's own may let a builtin connection error out: the same.
    pytest.param(
        Case(WatchEnd(RESET, events=2, elapsed=LONG), Step.REWATCH, (RESET,)),
        id="builtin-connection-reset-rewatch",
    ),
    # Answered 200, then broken before the first event: an open watch ending.
    pytest.param(
        Case(WatchEnd(BROKEN, opened=True, events=0, elapsed=LONG), Step.REWATCH, (BROKEN,)),
        id="opened-broken-before-any-event-rewatch",
    ),
    # Anything else from the source is a bug there: raise it.
    pytest.param(Case(WatchEnd(BUG, elapsed=LONG), Step.RAISE, (BUG,)), id="unexpected-raise"),
]


def check(decision_errors: tuple[BaseException, ...], expected: Case) -> None:
    assert len(decision_errors) == len(expected.reported)
    for error, want in zip(decision_errors, expected.reported, strict=True):
        if isinstance(want, type):
            assert isinstance(error, want)
        else:
            assert error is want


@pytest.mark.parametrize("case", WATCH_CASES)
def test_what_follows_the_end_of_a_watch(case: Case) -> None:
    decision = next_step(case.end, may_retry_internal=case.may_retry_internal)

    assert decision.step is case.step
    check(decision.errors, case)
    assert decision.level == case.level


@pytest.mark.parametrize(
    ("error", "expired", "too_large", "internal"),
    [
        pytest.param(GONE, True, False, False, id="gone"),
        pytest.param(TOO_LARGE, False, True, False, id="too-large-by-cause"),
        pytest.param(
            ServerError(
                {"code": 504, "reason": "Timeout", "message": "Too large resource version"}
            ),
            False,
            True,
            False,
            id="too-large-by-message",
        ),
        pytest.param(
            ServerError({"code": 504, "reason": "Timeout", "message": "took too long"}),
            False,
            False,
            False,
            id="plain-504",
        ),
        pytest.param(INTERNAL, False, False, True, id="internal"),
        pytest.param(STORAGE, False, False, False, id="other-500"),
        pytest.param(BROKEN, False, False, False, id="transport"),
        pytest.param(None, False, False, False, id="none"),
    ],
)
def test_error_classification(
    error: BaseException | None, expired: bool, too_large: bool, internal: bool
) -> None:
    assert is_expired(error) is expired
    assert is_too_large(error) is too_large
    assert is_internal_error(error) is internal


async def test_internal_errors_are_retried_within_the_window_of_their_streak() -> None:
    clock = FakeClock()
    retry = InternalErrorRetry(30.0, clock)

    retry.after(INTERNAL)
    assert retry.should_retry()
    await clock.advance(30.0)
    retry.after(INTERNAL)
    assert retry.should_retry()  # the streak is exactly 30 s old
    await clock.advance(1.0)
    retry.after(INTERNAL)
    assert not retry.should_retry()  # too old: the streak ends here
    retry.after(INTERNAL)
    assert retry.should_retry()  # ...and a new one starts


async def test_a_quiet_minute_restarts_the_internal_error_window() -> None:
    clock = FakeClock()
    retry = InternalErrorRetry(30.0, clock)

    retry.after(INTERNAL)
    await clock.advance(25.0)
    retry.after(GONE)  # other errors neither extend nor end a streak
    await clock.advance(60.0)
    retry.after(INTERNAL)

    assert retry.should_retry()


def test_internal_errors_are_never_retried_with_no_window() -> None:
    retry = InternalErrorRetry(0.0, FakeClock())
    retry.after(INTERNAL)

    assert not retry.should_retry()


@pytest.mark.parametrize(
    ("error", "level"),
    [
        pytest.param(GONE, logging.INFO, id="410-relisted"),
        pytest.param(TOO_LARGE, logging.INFO, id="too-large-relisted-latest"),
        pytest.param(FORBIDDEN, logging.WARNING, id="403"),
        pytest.param(INTERNAL, logging.WARNING, id="500"),
        pytest.param(NO_ROUTE, logging.WARNING, id="no-route"),
    ],
)
def test_a_failed_list_and_watch_is_loud_only_when_a_user_should_look(
    error: BaseException, level: int
) -> None:
    assert failure_level(error) == level


def test_a_streak_of_failed_watches_turns_loud_at_the_third_and_an_event_ends_it() -> None:
    streak = FailureStreak()
    failed = WatchEnd(BROKEN, events=0, elapsed=LONG)
    assert [streak.after(failed) for _ in range(REPEATED_FAILURES)] == [False, False, True]
    assert streak.after(WatchEnd(BROKEN, events=1, elapsed=LONG)) is False
    assert streak.after(failed) is False
    assert streak.after(WatchEnd(events=0, elapsed=LONG)) is False


@pytest.mark.parametrize(
    ("end", "retriable"),
    [
        pytest.param(WatchEnd(THROTTLED, opened=False), True, id="429-on-open"),
        pytest.param(WatchEnd(THROTTLED, events=3, elapsed=LONG), True, id="429-error-event"),
        pytest.param(WatchEnd(REFUSED, opened=False), True, id="refused"),
        pytest.param(WatchEnd(BUILTIN_REFUSED, opened=False), True, id="builtin-refused"),
        pytest.param(WatchEnd(NO_ROUTE, opened=False), True, id="no-route"),
        pytest.param(WatchEnd(RESET, opened=False), True, id="builtin-reset-on-open"),
        pytest.param(WatchEnd(BROKEN, events=2, elapsed=SHORT), True, id="broken-mid-stream"),
        pytest.param(WatchEnd(events=2, elapsed=SHORT), True, id="closed-after-events"),
        pytest.param(WatchEnd(elapsed=LONG), True, id="closed-after-a-while"),
        pytest.param(WatchEnd(elapsed=SHORT), False, id="closed-at-once-with-nothing"),
        pytest.param(WatchEnd(BROKEN, opened=False), False, id="broken-before-it-opened"),
        pytest.param(WatchEnd(GONE, opened=False), False, id="410"),
        pytest.param(WatchEnd(FORBIDDEN, opened=False), False, id="403"),
        pytest.param(WatchEnd(BadRequest({"message": "no"}), opened=False), False, id="400"),
        pytest.param(WatchEnd(INTERNAL, opened=False), False, id="500"),
        pytest.param(WatchEnd(TOO_LARGE, opened=False), False, id="504-too-large"),
        pytest.param(
            WatchEnd(TLSVerificationError("bad certificate"), opened=False), False, id="tls"
        ),
        pytest.param(WatchEnd(IDLE, events=1, timed_out=True), False, id="silent-or-ignored"),
        pytest.param(WatchEnd(RESYNC, resync_failed=True), False, id="relist-asked-for"),
        pytest.param(WatchEnd(BUG, events=1, elapsed=LONG), False, id="a-bug"),
    ],
)
def test_a_streaming_list_is_retried_only_after_a_throttle_or_a_lost_connection(
    end: WatchEnd, retriable: bool
) -> None:
    assert watch_list_retriable(end) is retriable
