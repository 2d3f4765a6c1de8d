"""Reflector with ``use_watch_list=True``: client-go's ``reflector_watchlist_test.go``
(``TestWatchList``, v0.32 and master) ported, plus the inactivity deadline and cancellation
of a streaming list. Each case asserts the exact, interleaved list/watch request options
and the store. The retries (a 429, a refused or lost connection, a stream closed before
its bookmark: backed off and streamed again, up to ``max_watch_list_retries``, then
LIST+WATCH) and the failures that fall back at once are timed on a ``FakeClock``. Last, a
user's stream whose ``batches()`` is a generator of its own: read through once, and
closed by the reflector."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._kernel.backoff import Backoff
from aioinformer.errors import (
    BadRequest,
    ConnectionFailed,
    Forbidden,
    Gone,
    ServerError,
    TLSVerificationError,
    TooManyRequests,
    UnprocessableEntity,
    WatchError,
)
from aioinformer.listwatch import (
    INITIAL_EVENTS_END_ANNOTATION,
    ListOptions,
    WatchEvent,
    WatchStreamBase,
)
from aioinformer.reflector import (
    DEFAULT_WATCH_LIST_RETRIES,
    INITIAL_EVENTS_GRACE,
    InitialEventsIgnored,
    Reflector,
    ReflectorOptions,
    ReflectorState,
)
from aioinformer.testing import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_metrics import RecordingProvider
from tests._support_reflector import HeldStore, RecordingStore
from tests._support_tasks import other_tasks, stop
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


def pod(name: str, **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}}
    if spec:
        obj["spec"] = spec
    return obj


def streaming(rv: str = "") -> tuple[str, ListOptions]:
    """The request of a streaming list from ``rv`` (client-go's watch-list options)."""
    return (
        "watch",
        ListOptions(
            resource_version=rv,
            resource_version_match="NotOlderThan",
            allow_watch_bookmarks=True,
            send_initial_events=True,
        ),
    )


def listing(rv: str, limit: int | None = 500) -> tuple[str, ListOptions]:
    return ("list", ListOptions(resource_version=rv, limit=limit))


def watching(rv: str) -> tuple[str, ListOptions]:
    return ("watch", ListOptions(resource_version=rv, allow_watch_bookmarks=True))


def requests(lw: FakeListerWatcher) -> list[tuple[str, ListOptions]]:
    """The interleaved requests, timeouts checked to be in [300, 600) and blanked."""
    out = []
    for kind, options in lw.requests:
        if kind == "watch":
            assert options.timeout_seconds is not None
            assert 300 <= options.timeout_seconds < 600
            options = dataclasses.replace(options, timeout_seconds=None)
        out.append((kind, options))
    return out


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> RecordingStore:
    return RecordingStore()


def spawn(reflector: Reflector) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(reflector.list_and_watch())


async def test_the_store_stays_untouched_until_the_initial_events_end(
    clock: FakeClock, store: RecordingStore
) -> None:
    # "the reflector won't be synced if the bookmark event has been received"
    lw = FakeListerWatcher(objects=[pod("p1")], send_initial_events_end=False)
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await lw.wait_for_watchers(1)
    await clock.settle()

    assert reflector.state is ReflectorState.LISTING
    assert store.calls == []
    assert reflector.last_sync_resource_version == ""
    assert requests(lw) == [streaming()]
    await stop(task)
    assert lw.open_watches == 0


async def test_without_use_watch_list_the_reflector_lists_and_watches(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("p1")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
    task = spawn(reflector)
    await lw.wait_for_watchers(1)

    assert requests(lw) == [listing("0"), watching("1")]
    assert store.contents() == {"p1": "1"}
    await stop(task)


async def test_by_default_the_reflector_streams_its_list(
    clock: FakeClock, store: RecordingStore
) -> None:
    # As client-go 1.35+, whose WatchListClient feature is on by default.
    assert ReflectorOptions().use_watch_list is True
    lw = FakeListerWatcher(objects=[pod("p1")])
    reflector = Reflector(lw, store, clock=clock)
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert requests(lw) == [streaming()]
    assert store.calls == [("replace", ["p1"], "1")]
    await stop(task)


async def test_a_server_ignoring_send_initial_events_is_left_at_its_first_bookmark(
    clock: FakeClock, store: RecordingStore
) -> None:
    # A server that drops sendInitialEvents carries on as a plain watch: its bookmarks
    # have no initial-events-end annotation. Fall back once the grace after the first
    # one is over, in this round.
    lw = FakeListerWatcher(objects=[pod("p1")], send_initial_events_end=False)
    errors: list[BaseException] = []
    reflector = Reflector(
        lw, store, clock=clock, watch_error_handler=lambda _r, exc: errors.append(exc)
    )
    task = spawn(reflector)
    await lw.wait_for_watchers(1)
    lw.send_bookmark()
    await clock.settle()
    await clock.advance(INITIAL_EVENTS_GRACE - 1)
    assert requests(lw) == [streaming()]
    assert reflector.state is ReflectorState.LISTING
    # The check runs every twentieth of the 120 s inactivity deadline.
    await clock.advance(7)
    await wait_until(lambda: len(requests(lw)) == 3)

    assert requests(lw) == [streaming(), listing("0"), watching("1")]
    assert store.calls == [("replace", ["p1"], "1")]
    assert [type(e) for e in errors] == [InitialEventsIgnored]
    assert isinstance(errors[0], WatchError)
    await stop(task)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(BadRequest({"message": "dummy error"}), id="any-error"),
        pytest.param(Forbidden({"message": "watch forbidden"}), id="forbidden"),
        pytest.param(RuntimeError("not even an API error"), id="unexpected-exception"),
    ],
)
async def test_a_failed_streaming_list_falls_back_to_list_and_watch(
    error: BaseException, clock: FakeClock, store: RecordingStore
) -> None:
    # "returning any other error than apierrors.NewInvalid forces fallback"
    lw = FakeListerWatcher(objects=[pod("p1")])
    lw.fail_next_watch(error)
    errors: list[BaseException] = []
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        use_watch_list=True,
        watch_error_handler=lambda r, e: errors.append(e),
    )
    task = spawn(reflector)
    await lw.wait_for_watchers(1)
    lw.add(pod("p2"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")

    assert requests(lw) == [streaming(), listing("0"), watching("1")]
    assert store.contents() == {"p1": "1", "p2": "2"}
    assert errors == [error]
    await stop(task)


async def test_a_server_without_streaming_lists_falls_back_to_list_and_watch(
    clock: FakeClock, store: RecordingStore
) -> None:
    # "the reflector can fall back to old LIST/WATCH semantics when a server doesn't
    # support streaming": the server answers 422 Invalid.
    lw = FakeListerWatcher(objects=[pod("p1")], supports_watch_list=False)
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await lw.wait_for_watchers(1)
    lw.add(pod("p2"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")

    assert requests(lw) == [streaming(), listing("0"), watching("1")]
    assert store.contents() == {"p1": "1", "p2": "2"}
    await stop(task)


async def test_the_reflector_is_synced_with_one_replace_at_the_bookmark(
    clock: FakeClock, store: RecordingStore
) -> None:
    # "prove that the reflector is synced after receiving a bookmark event"
    lw = FakeListerWatcher(objects=[pod("p1"), pod("p2")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert store.calls == [("replace", ["p1", "p2"], "2")]
    assert reflector.last_sync_resource_version == "2"
    assert requests(lw) == [streaming()]
    await stop(task)


async def test_updates_and_deletes_during_streaming_reach_the_committed_state(
    clock: FakeClock, store: RecordingStore
) -> None:
    # "check if Updates and Deletes events are propagated during streaming (until the
    # bookmark is received)"
    lw = FakeListerWatcher(objects=[pod("p1"), pod("p2")], send_initial_events_end=False)
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await lw.wait_for_watchers(1)

    lw.modify(pod("p1", activeDeadlineSeconds=12))  # 3
    lw.add(pod("p3"))  # 4
    lw.delete("p3")  # 5
    lw.send_initial_events_end()
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert store.calls == [("replace", ["p1", "p2"], "5")]
    assert store.items["p1"]["spec"] == {"activeDeadlineSeconds": 12}
    assert store.contents() == {"p1": "3", "p2": "2"}
    await stop(task)


# -- retries: client-go's watchList loop, within max_watch_list_retries ------------------


def busy(retry_after: float | None = 1.0) -> TooManyRequests:
    return TooManyRequests({"message": "busy, check again later"}, retry_after=retry_after)


async def test_the_reflector_retries_429(clock: FakeClock, store: RecordingStore) -> None:
    # "checks if the reflector retries 429": two 429s, each backed off for its
    # Retry-After, then a streaming list that syncs. No LIST is sent.
    lw = FakeListerWatcher(objects=[pod("p1")])
    lw.fail_next_watch(busy(), busy())
    errors: list[BaseException] = []
    reflector = Reflector(
        lw, store, clock=clock, watch_error_handler=lambda _r, e: errors.append(e)
    )
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    assert requests(lw) == [streaming()]
    await clock.advance(0.99)
    assert requests(lw) == [streaming()]
    await clock.advance(0.01)
    await wait_until(lambda: len(lw.watch_calls) == 2)
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    await clock.advance(1.0)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert requests(lw) == [streaming(), streaming(), streaming()]
    assert store.calls == [("replace", ["p1"], "1")]
    assert [type(e) for e in errors] == [TooManyRequests, TooManyRequests]
    stats = reflector.statistics()
    assert (stats.lists, stats.watch_list_retries, stats.watch_list_fallbacks) == (0, 2, 0)
    await stop(task)


async def test_stopping_a_watcher_before_the_sync_sends_a_new_streaming_list(
    clock: FakeClock, store: RecordingStore
) -> None:
    # "check if stopping a watcher before sync results in creating a new watch-list
    # request": the stream closes after one initial event; the next one syncs.
    lw = FakeListerWatcher(objects=[pod("p1")], send_initial_events_end=False)
    reflector = Reflector(lw, store, clock=clock, backoff=Backoff(jitter=0.0, clock=clock))
    task = spawn(reflector)
    await lw.wait_for_watchers(1)
    await clock.settle()
    lw.drop_watches()
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    await clock.advance(0.8)  # the first delay of the injected backoff
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)
    lw.send_initial_events_end()
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert requests(lw) == [streaming(), streaming()]
    assert store.calls == [("replace", ["p1"], "1")]
    assert reflector.statistics().watch_list_retries == 1
    await stop(task)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ConnectionRefusedError("refused"), id="refused"),
        pytest.param(ConnectionFailed("connection refused", refused=True), id="client-refused"),
        pytest.param(ConnectionFailed("connection was reset"), id="client-reset-on-open"),
        pytest.param(ConnectionResetError("reset by peer"), id="reset"),
    ],
)
async def test_a_streaming_list_refused_or_reset_as_it_opens_is_retried(
    error: BaseException, clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("p1")])
    lw.fail_next_watch(error)
    reflector = Reflector(lw, store, clock=clock, backoff=Backoff(jitter=0.0, clock=clock))
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    await clock.advance(0.8)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert requests(lw) == [streaming(), streaming()]
    assert store.contents() == {"p1": "1"}
    await stop(task)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(WatchError("connection to the server was reset"), id="client-reset"),
        pytest.param(ConnectionResetError("reset by peer"), id="builtin-reset"),
        pytest.param(
            TooManyRequests({"message": "busy", "details": {"retryAfterSeconds": 2}}),
            id="429-error-event",
        ),
    ],
)
async def test_a_streaming_list_broken_before_its_bookmark_is_retried(
    error: BaseException, clock: FakeClock, store: RecordingStore
) -> None:
    # After initial events: what was collected is dropped, and the next stream starts
    # afresh. A 429 as an ERROR event waits the retryAfterSeconds of its Status.
    lw = FakeListerWatcher(objects=[pod("p1"), pod("p2")], send_initial_events_end=False)
    reflector = Reflector(lw, store, clock=clock, backoff=Backoff(jitter=0.0, clock=clock))
    task = spawn(reflector)
    await lw.wait_for_watchers(1)
    await clock.settle()
    lw.break_watches(error)
    lw.delete("p2", notify=False)
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    delay = 2.0 if isinstance(error, TooManyRequests) else 0.8
    await clock.advance(delay - 0.01)
    assert len(lw.watch_calls) == 1
    await clock.advance(0.01)
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)
    lw.send_initial_events_end()
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert requests(lw) == [streaming(), streaming()]
    assert store.calls == [("replace", ["p1"], "3")]
    await stop(task)


@pytest.mark.parametrize("retries", [0, 1, 3])
async def test_a_streaming_list_failing_past_its_retries_falls_back_to_list_and_watch(
    retries: int, clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("p1")])
    lw.fail_next_watch(*[busy(retry_after=None)] * (retries + 1))
    errors: list[BaseException] = []
    provider = RecordingProvider()
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        backoff=Backoff(jitter=0.0, clock=clock),
        options=ReflectorOptions(max_watch_list_retries=retries),
        watch_error_handler=lambda _r, e: errors.append(e),
        metrics_provider=provider,
    )
    task = spawn(reflector)
    for delay in (0.8, 1.6, 3.2)[:retries]:
        await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
        await clock.advance(delay)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert requests(lw) == [streaming()] * (retries + 1) + [listing("0"), watching("1")]
    assert store.calls == [("replace", ["p1"], "1")]
    assert len(errors) == retries + 1
    stats = reflector.statistics()
    assert (stats.watch_list_retries, stats.watch_list_fallbacks) == (retries, 1)
    failures = "aioinformer_reflector_watch_list_failures_total"
    assert provider.value(failures, "pods", "retried") == retries
    assert provider.value(failures, "pods", "fell_back") == 1
    assert provider.value("reflector_watchLists_total", "pods") == retries + 1
    await stop(task)


def test_the_retries_default_to_three_and_are_never_negative() -> None:
    assert ReflectorOptions().max_watch_list_retries == DEFAULT_WATCH_LIST_RETRIES == 3
    with pytest.raises(ValueError, match="max_watch_list_retries"):
        ReflectorOptions(max_watch_list_retries=-1)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(UnprocessableEntity({"message": "sendInitialEvents forbidden"}), id="422"),
        pytest.param(ServerError({"code": 500, "reason": "InternalError"}), id="500"),
        pytest.param(ServerError({"code": 503, "reason": "ServiceUnavailable"}), id="503"),
        pytest.param(TLSVerificationError("certificate rejected"), id="tls"),
        pytest.param(WatchError("garbage before the stream opened"), id="unopened-stream"),
    ],
)
async def test_a_failure_not_worth_retrying_falls_back_at_once(
    error: BaseException, clock: FakeClock, store: RecordingStore
) -> None:
    # The clock never moves: a backoff would never end.
    lw = FakeListerWatcher(objects=[pod("p1")])
    lw.fail_next_watch(error)
    reflector = Reflector(lw, store, clock=clock)
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert requests(lw) == [streaming(), listing("0"), watching("1")]
    stats = reflector.statistics()
    assert (stats.watch_list_retries, stats.watch_list_fallbacks) == (0, 1)
    await stop(task)


async def test_a_relist_asked_for_between_two_streaming_lists_is_the_next_one(
    clock: FakeClock, store: RecordingStore
) -> None:
    # A cache audit asking for a relist while the reflector backs off between streaming
    # lists: the next streaming list is that relist (from ""), and the watch it carries
    # on into is not cut short for it.
    lw = FakeListerWatcher(objects=[pod("p1")])
    reflector = Reflector(lw, store, clock=clock, backoff=Backoff(jitter=0.0, clock=clock))
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)
    lw.send_error(Gone({"message": "too old resource version", "reason": "Expired"}))
    await task
    lw.fail_next_watch(busy(retry_after=None))
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    reflector.request_relist(RuntimeError("the audit found a difference"))
    await clock.advance(0.8)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)
    lw.add(pod("p2"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")

    assert requests(lw) == [streaming(), streaming("1"), streaming()]
    assert not task.done()
    await stop(task)


class Plain:
    """A source that declares nothing: never asked for a streaming list."""

    def __init__(self, fake: FakeListerWatcher) -> None:
        self.fake = fake

    async def list(self, options: ListOptions) -> Any:
        return await self.fake.list(options)

    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        return self.fake.watch(options)


async def test_a_plain_source_is_never_asked_for_a_streaming_list(
    clock: FakeClock, store: RecordingStore
) -> None:
    # Its first watch answers 429: that watch backs off and watches again, as any watch
    # does; nothing asks for initial events.
    lw = FakeListerWatcher(objects=[pod("p1")])
    lw.fail_next_watch(busy())
    reflector = Reflector(Plain(lw), store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    await clock.advance(1.0)
    await lw.wait_for_watchers(1)

    assert requests(lw) == [listing("0"), watching("1"), watching("1")]
    assert reflector.statistics().watch_list_fallbacks == 0
    await stop(task)


async def test_after_the_sync_the_stream_carries_on_as_the_watch(
    clock: FakeClock, store: RecordingStore
) -> None:
    # "stopping a watcher after synchronization results in creating a new watch request"
    lw = FakeListerWatcher(objects=[pod("p1"), pod("p2")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    lw.add(pod("p3"))  # arrives on the same stream
    await wait_until(lambda: reflector.last_sync_resource_version == "3")
    lw.drop_watches()
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)
    lw.add(pod("p4"))
    await wait_until(lambda: reflector.last_sync_resource_version == "4")

    assert requests(lw) == [streaming(), watching("3")]
    assert store.contents() == {"p1": "1", "p2": "2", "p3": "3", "p4": "4"}
    assert store.calls == [
        ("replace", ["p1", "p2"], "2"),
        ("add", "p3", "3"),
        ("add", "p4", "4"),
    ]
    await stop(task)


async def test_a_quiet_stream_breaking_after_the_sync_is_watched_again_without_a_relist(
    clock: FakeClock, store: RecordingStore
) -> None:
    # The streaming list's request succeeded long ago: its stream breaking before any
    # later event is a watch that ended, not a watch request that failed.
    lw = FakeListerWatcher(objects=[pod("p1")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)
    await clock.advance(5)  # quiet, but not a very short watch
    lw.break_watches(WatchError("connection reset by peer"))
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)
    lw.add(pod("p2"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")

    assert not task.done()
    assert requests(lw) == [streaming(), watching("1")]
    assert store.calls == [("replace", ["p1"], "1"), ("add", "p2", "2")]
    await stop(task)


async def test_an_expired_watch_after_the_sync_fails_the_call(
    clock: FakeClock, store: RecordingStore
) -> None:
    # "expiring an established watcher results in returning an error from the reflector"
    lw = FakeListerWatcher(objects=[pod("p1")])
    expired = Gone({"message": "rv already expired", "reason": "Expired"})
    lw.fail_next_watch(None, expired)
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)
    lw.add(pod("p3"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")
    lw.drop_watches()

    with pytest.raises(Gone) as raised:
        await task

    assert raised.value is expired
    assert requests(lw) == [streaming(), watching("2")]
    assert store.contents() == {"p1": "1", "p3": "2"}


async def test_a_bookmark_without_the_initial_events_end_annotation_does_not_sync(
    clock: FakeClock, store: RecordingStore
) -> None:
    # "prove that the reflector is checking the value of the initialEventsEnd annotation"
    lw = FakeListerWatcher(objects=[pod("p1"), pod("p2")], send_initial_events_end=False)
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await lw.wait_for_watchers(1)

    lw.send_bookmark()
    lw._watchers[0].queue.put_nowait(
        WatchEvent(
            "BOOKMARK",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "resourceVersion": "2",
                    "annotations": {INITIAL_EVENTS_END_ANNOTATION: "false"},
                },
            },
        )
    )
    await clock.settle()

    assert store.calls == []
    assert reflector.state is ReflectorState.LISTING
    await stop(task)


async def test_an_expired_streaming_list_falls_back_to_a_list_from_the_last_version(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("p1")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)
    lw.send_error(Gone({"message": "too old resource version", "reason": "Expired"}))
    await task
    lw.add(pod("p2"))

    lw.error_next_watch(Gone({"message": "too old resource version", "reason": "Expired"}))
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert requests(lw) == [streaming(), streaming("1"), listing("1", None), watching("2")]
    assert store.calls[-1] == ("replace", ["p1", "p2"], "2")
    assert reflector.statistics().relists == 1
    await stop(task)


async def test_a_stalled_streaming_list_falls_back_at_its_deadline(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("p1")])
    lw.stall_next_watch()
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        use_watch_list=True,
        options=ReflectorOptions(watch_inactivity_timeout=60.0),
    )
    task = spawn(reflector)
    await lw.wait_for_watchers(1)

    await clock.advance(67.0)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert requests(lw) == [streaming(), listing("0"), watching("1")]
    assert lw.open_watches == 1
    assert store.calls == [("replace", ["p1"], "1")]
    await stop(task)


async def test_a_very_short_empty_streaming_list_falls_back_to_a_list(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("p1")], send_initial_events_end=False)
    lw.delete("p1", notify=False)
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await lw.wait_for_watchers(1)

    lw.drop_watches()  # closed at once, nothing sent: the server does not stream lists
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)

    assert requests(lw) == [streaming(), listing("0"), watching("2")]
    await stop(task)


async def test_cancelling_a_streaming_list_closes_it_and_commits_nothing(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("p1"), pod("p2")], send_initial_events_end=False)
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True, resync_period=10.0)
    task = spawn(reflector)
    await lw.wait_for_watchers(1)
    await clock.settle()

    await stop(task)

    assert lw.open_watches == 0
    assert store.calls == []
    assert reflector.state is ReflectorState.STOPPED
    assert other_tasks() == set()


async def test_a_replace_failure_closes_the_stream_and_falls_back(clock: FakeClock) -> None:
    class FailingOnce(RecordingStore):
        failed = False

        async def replace(self, objs: list[Any], resource_version: str) -> None:
            if not self.failed:
                self.failed = True
                raise RuntimeError("store full")
            await super().replace(objs, resource_version)

    store = FailingOnce()
    lw = FakeListerWatcher(objects=[pod("p1")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True, backoff=Backoff(clock=clock))
    task = spawn(reflector)
    await lw.wait_for_watchers(1)
    await wait_until(lambda: len(lw.requests) == 3)

    assert requests(lw) == [streaming(), listing("0"), watching("1")]
    assert lw.open_watches == 1
    assert store.calls == [("replace", ["p1"], "1")]
    await stop(task)


class SplitReads(WatchStreamBase):
    """A user's stream, written from WatchStreamBase's contract alone: ``batches()`` is an
    async generator method that splits each read of the fake into reads of two events."""

    def __init__(self, inner: WatchStreamBase) -> None:
        self._inner = inner
        self.reads = 0
        self.closed_in: list[asyncio.Task[Any] | None] = []
        """The task that ran each ``batches()`` generator's ``finally``."""

    @property
    def opened(self) -> bool:
        return self._inner.opened

    async def batches(self) -> AsyncIterator[list[WatchEvent]]:
        try:
            async for batch in self._inner.batches():
                self.reads += 1
                for start in range(0, len(batch), 2):
                    yield batch[start : start + 2]
        finally:
            self.closed_in.append(asyncio.current_task())

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return aiter(self._inner)

    async def aclose(self) -> None:
        await self._inner.aclose()


class SplittingReads(FakeListerWatcher):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.streams: list[SplitReads] = []

    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        inner = super().watch(options)
        assert isinstance(inner, WatchStreamBase)
        self.streams.append(SplitReads(inner))
        return self.streams[-1]


async def test_events_after_the_initial_events_end_in_a_split_read_all_reach_the_store(
    clock: FakeClock, store: RecordingStore
) -> None:
    # One read brings the initial-events-end bookmark and ten changes after it; the
    # user's stream hands them out two at a time. The watch that carries the stream on
    # must go on reading the same batches() iterator: a second call would start a new
    # generator, and the changes the first one still held would never arrive.
    lw = SplittingReads(objects=[pod(f"p{i}") for i in range(3)], send_initial_events_end=False)
    reflector = Reflector(lw, store, clock=clock, use_watch_list=True)
    task = spawn(reflector)
    await lw.wait_for_watchers(1)
    lw.send_initial_events_end()
    for i in range(10):
        lw.modify(pod(f"p{i % 3}", step=i))
    await wait_until(lambda: reflector.last_sync_resource_version == "13")

    assert store.contents() == {"p0": "13", "p1": "11", "p2": "12"}
    assert [call[2] for call in store.calls[1:]] == [str(rv) for rv in range(4, 14)]
    assert requests(lw) == [streaming()]
    await stop(task)
    assert lw.streams[0].closed_in == [task]


@pytest.mark.parametrize("use_watch_list", [True, False])
async def test_cancelling_closes_the_generator_a_user_stream_is_read_through(
    clock: FakeClock, store: RecordingStore, use_watch_list: bool
) -> None:
    # The iterator a stream is read through is closed with the stream as the reflector
    # stops, not later by the garbage collector's finalizer in a task of its own.
    lw = SplittingReads(objects=[pod("p1")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=use_watch_list)
    baseline = other_tasks()
    task = spawn(reflector)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)
    await stop(task)

    assert [stream.closed_in for stream in lw.streams] == [[task]]
    assert other_tasks() == baseline
    assert lw.open_watches == 0


async def test_cancelling_a_read_held_in_the_store_closes_the_user_stream_generator(
    clock: FakeClock,
) -> None:
    # Cancelled while a store call holds the reader up, the stream's generator is left
    # suspended at its yield: the reflector closes it as it stops.
    store = HeldStore()
    lw = SplittingReads()
    reflector = Reflector(lw, store, clock=clock)
    baseline = other_tasks()
    task = spawn(reflector)
    await lw.wait_for_watchers(1)
    lw.add(pod("p1"))
    await wait_until(lambda: lw.streams[0].reads == 1)
    await clock.settle()
    await stop(task)

    assert lw.streams[0].closed_in == [task]
    assert other_tasks() == baseline
    assert lw.open_watches == 0
    assert store.calls == [("replace", [], "0")]


class BrokenBatches(WatchStreamBase):
    """A user's stream whose ``batches()`` raises as it is called."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()

    @property
    def opened(self) -> bool:
        return False

    def batches(self) -> AsyncIterator[list[WatchEvent]]:
        raise RuntimeError("no batches today")

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        raise RuntimeError("no events today")

    async def aclose(self) -> None:
        self.closed.set()


class FirstWatchBroken(FakeListerWatcher):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.broken = BrokenBatches()

    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        if len(self.watch_calls) == 0:
            self.watch_calls.append(options)
            return self.broken
        return super().watch(options)


@pytest.mark.parametrize("use_watch_list", [True, False])
async def test_a_stream_whose_batches_raise_is_closed_and_the_reflector_goes_on(
    clock: FakeClock, store: RecordingStore, use_watch_list: bool
) -> None:
    # What taking a stream's iterator raises ends that read as any stream failure does:
    # the stream is closed, and the failure handled: a streaming list falls back to a
    # list; a watch ends list_and_watch with the error, and run() backs off and lists and
    # watches again.
    lw = FirstWatchBroken(objects=[pod("p1")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=use_watch_list)
    task = asyncio.get_running_loop().create_task(reflector.run())
    await asyncio.wait_for(lw.broken.closed.wait(), 5)
    for _ in range(10):
        if reflector.last_sync_resource_version == "1" and lw.open_watches == 1:
            break
        await clock.advance(1.0)
    assert store.contents() == {"p1": "1"}
    assert lw.open_watches == 1
    await stop(task)
    assert lw.open_watches == 0
