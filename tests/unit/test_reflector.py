"""Reflector: client-go v0.32 ``reflector_test.go`` ported, plus the inactivity deadline,
cancellation and observability.

Every test drives a :class:`FakeListerWatcher` and asserts the exact request options the
reflector sent and what reached the store; time is a :class:`FakeClock`, so backoffs,
resyncs and deadlines pass instantly.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._kernel.backoff import Backoff
from aioinformer.delta_fifo import DeltaFIFO, DeltaType
from aioinformer.errors import (
    BadRequest,
    ConnectionFailed,
    Gone,
    ServerError,
    TooManyRequests,
    WatchError,
    WatchTimeout,
)
from aioinformer.indexer import Indexer
from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import ListOptions, WatchEvent, WatchStreamBase
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.reflector import (
    DEADLINE_TICKS,
    DEFAULT_WATCH_INACTIVITY_TIMEOUT,
    Reflector,
    ReflectorOptions,
    ReflectorState,
    ReflectorStatistics,
)
from aioinformer.testing import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_reflector import HeldStore, RecordingStore, back_off_until_watching, key_of
from tests._support_tasks import other_tasks, stop
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Coroutine

# ----------------------------------------------------------------------------- helpers


def pod(name: str, *, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
    }


def without_timeouts(calls: list[ListOptions]) -> list[ListOptions]:
    """The calls with ``timeout_seconds`` checked to be in client-go's range, then blanked."""
    out = []
    for options in calls:
        if options.timeout_seconds is not None:
            assert 300 <= options.timeout_seconds < 600, options
            options = dataclasses.replace(options, timeout_seconds=None)
        out.append(options)
    return out


def watch_options(rv: str) -> ListOptions:
    return ListOptions(resource_version=rv, allow_watch_bookmarks=True)


async def backing_off(reflector: Reflector) -> None:
    """Wait until the reflector sleeps out a backoff (a watch's watchdog sleeps too, so
    counting the clock's sleepers is not enough)."""
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)


def no_jitter(clock: FakeClock) -> Backoff:
    return Backoff(jitter=0.0, clock=clock)


class CountingBackoff(Backoff):
    """A backoff whose delays are all zero and which counts how often it was asked."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock=clock)
        self.calls = 0

    def next_delay(self) -> float:
        self.calls += 1
        return 0.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> RecordingStore:
    return RecordingStore()


def spawn(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(coro)


# ------------------------------------------------------------------- watch handling


async def test_watch_events_reach_the_store_and_events_of_the_wrong_kind_are_skipped(
    clock: FakeClock, store: RecordingStore, caplog: pytest.LogCaptureFixture
) -> None:
    # TestReflectorWatchHandler
    lw = FakeListerWatcher(objects=[pod("foo"), pod("bar")])
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        options=ReflectorOptions(expected_kind="Pod", expected_api_version="v1"),
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    lw.add({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "rejected"}})  # rv 3
    lw.delete("default/foo")  # rv 4
    lw.modify(pod("bar"))  # rv 5
    lw.add(pod("baz"))  # rv 6
    await wait_until(lambda: reflector.last_sync_resource_version == "6")

    assert store.contents() == {"default/bar": "5", "default/baz": "6"}
    assert store.calls[1:] == [
        ("delete", "default/foo", "4"),
        ("update", "default/bar", "5"),
        ("add", "default/baz", "6"),
    ]
    assert "expected v1 Pod, but the watch event object is v1 Service" in caplog.text
    await stop(task)


async def test_an_object_of_another_api_version_is_skipped(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher()
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        options=ReflectorOptions(expected_api_version="apps/v1"),
        use_watch_list=False,
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    lw.add({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}})
    lw.add({"apiVersion": "extensions/v1beta1", "kind": "Deployment", "metadata": {"name": "x"}})
    lw.add({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"}})
    await wait_until(lambda: reflector.last_sync_resource_version == "3")

    assert store.contents() == {"api": "3", "web": "1"}
    await stop(task)


async def test_a_bookmark_only_advances_the_resource_version(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorResourceVersionUpdate: added, modified, bookmark, deleted
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(lw, store, clock=clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    seen: list[str] = []

    lw.add(pod("b"))  # 2
    await wait_until(lambda: reflector.last_sync_resource_version == "2")
    seen.append(reflector.last_sync_resource_version)
    lw.modify(pod("b"))  # 3
    await wait_until(lambda: reflector.last_sync_resource_version == "3")
    seen.append(reflector.last_sync_resource_version)
    lw.add(pod("c"), notify=False)  # 4, never sent to the watch
    lw.send_bookmark()
    await wait_until(lambda: reflector.last_sync_resource_version == "4")
    seen.append(reflector.last_sync_resource_version)
    lw.delete("default/b")  # 5
    await wait_until(lambda: reflector.last_sync_resource_version == "5")
    seen.append(reflector.last_sync_resource_version)

    assert seen == ["2", "3", "4", "5"]
    assert [call[0] for call in store.calls] == ["replace", "add", "update", "delete"]
    assert store.contents() == {"default/a": "1"}
    # The re-watch continues from the latest resourceVersion, the bookmark's included.
    lw.drop_watches()
    await lw.wait_for_watch_calls(2)
    assert lw.watch_calls[-1].resource_version == "5"
    await stop(task)


async def test_events_the_store_rejects_are_logged_and_the_watch_goes_on(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    class PickyStore(RecordingStore):
        async def add(self, obj: Any) -> None:
            if obj["metadata"]["name"] == "bad":
                raise ValueError("no thanks")
            await super().add(obj)

    store = PickyStore()
    lw = FakeListerWatcher()
    reflector = Reflector(lw, store, clock=clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    lw.add(pod("bad"))
    lw.add(pod("good"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")

    assert store.contents() == {"default/good": "2"}
    assert "store rejected a ADDED event" in caplog.text
    await stop(task)


async def test_an_event_without_a_resource_version_is_logged_and_skipped(
    clock: FakeClock, store: RecordingStore, caplog: pytest.LogCaptureFixture
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(lw, store, clock=clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    lw._watchers[0].queue.put_nowait(
        WatchEvent("ADDED", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "odd"}})
    )
    lw.add(pod("b"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")

    assert store.contents() == {"default/a": "1", "default/b": "2"}
    assert "skipped a watch event (ADDED) whose object has no resourceVersion" in caplog.text
    assert "odd" not in caplog.text  # object contents (a Secret's data, say) stay out of logs
    await stop(task)


# ------------------------------------------------------------------ list and watch


async def test_list_then_watch_from_the_list_version_and_rewatch_from_the_last_event(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorListAndWatch: the watch starts at the list's RV, and after the watch
    # closes it starts again at the RV of the last event.
    lw = FakeListerWatcher(objects=[pod("seed")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    for name in ["foo", "bar"]:
        lw.add(pod(name))
    await wait_until(lambda: reflector.last_sync_resource_version == "3")
    lw.drop_watches()
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)
    for name in ["baz", "qux", "zoo"]:
        lw.add(pod(name))
    await wait_until(lambda: reflector.last_sync_resource_version == "6")

    assert without_timeouts(lw.list_calls) == [ListOptions(resource_version="0", limit=500)]
    assert without_timeouts(lw.watch_calls) == [watch_options("1"), watch_options("3")]
    assert store.calls == [
        ("replace", ["default/seed"], "1"),
        ("add", "default/foo", "2"),
        ("add", "default/bar", "3"),
        ("add", "default/baz", "4"),
        ("add", "default/qux", "5"),
        ("add", "default/zoo", "6"),
    ]
    await stop(task)


async def test_each_list_and_watch_round_starts_from_what_the_server_holds(
    clock: FakeClock,
) -> None:
    # TestReflectorListAndWatchWithErrors: one store, a fresh reflector per round.
    store = RecordingStore()
    lw = FakeListerWatcher()

    async def round_(changes: Callable[[], None], until: str) -> None:
        reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
        task = spawn(reflector.list_and_watch())
        await lw.wait_for_watchers(1)
        changes()
        await wait_until(lambda: reflector.last_sync_resource_version == until)
        await stop(task)

    def add_foo_and_bar() -> None:
        lw.add(pod("foo"))
        lw.add(pod("bar"))

    def delete_foo_add_qux() -> None:
        lw.delete("default/foo")
        lw.add(pod("qux"))

    await round_(add_foo_and_bar, "2")
    assert store.contents() == {"default/bar": "2", "default/foo": "1"}

    await round_(delete_foo_add_qux, "4")
    assert store.contents() == {"default/bar": "2", "default/qux": "4"}

    list_error = ServerError({"code": 500, "message": "a list error"})
    lw.fail_next_list(list_error)
    with pytest.raises(ServerError) as raised:
        await Reflector(lw, store, clock=clock, use_watch_list=False).list_and_watch()
    assert raised.value is list_error

    watch_error = WatchError("a watch error")
    lw.fail_next_watch(watch_error)
    with pytest.raises(WatchError) as raised_watch:
        await Reflector(lw, store, clock=clock, use_watch_list=False).list_and_watch()
    assert raised_watch.value is watch_error
    assert store.contents() == {"default/bar": "2", "default/qux": "4"}

    def add_baz() -> None:
        lw.add(pod("baz"))

    await round_(add_baz, "5")
    assert store.contents() == {"default/bar": "2", "default/baz": "5", "default/qux": "4"}


async def test_connection_refused_on_watch_backs_off_exponentially_without_relisting(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorListAndWatchInitConnBackoff, 5 failures, growth not capped.
    lw = FakeListerWatcher(objects=[pod("a")])
    backoff = Backoff(initial=0.001, cap=0.05, reset_after=0.1, jitter=0.0, clock=clock)
    lw.fail_next_watch(*[ConnectionFailed("refused", refused=True) for _ in range(5)])
    reflector = Reflector(lw, store, clock=clock, backoff=backoff, use_watch_list=False)
    task = spawn(reflector.list_and_watch())

    await back_off_until_watching(reflector, lw, clock)

    assert clock.monotonic() == pytest.approx(0.001 + 0.002 + 0.004 + 0.008 + 0.016)
    assert len(lw.list_calls) == 1
    assert len(lw.watch_calls) == 6
    assert {options.resource_version for options in lw.watch_calls} == {"1"}
    await stop(task)


async def test_a_long_run_of_refusals_flattens_at_the_backoff_cap(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorListAndWatchInitConnBackoff, 40 failures: the cap is hit, jitter on.
    lw = FakeListerWatcher(objects=[pod("a")])
    backoff = Backoff(initial=0.001, cap=0.05, reset_after=0.1, clock=clock, rng=random.Random(5))
    lw.fail_next_watch(*[ConnectionFailed("refused", refused=True) for _ in range(40)])
    reflector = Reflector(lw, store, clock=clock, backoff=backoff)
    task = spawn(reflector.list_and_watch())

    await back_off_until_watching(reflector, lw, clock)

    unjittered = 0.001 + 0.002 + 0.004 + 0.008 + 0.016 + 0.032 + 34 * 0.05
    assert unjittered <= clock.monotonic() < 2 * unjittered
    assert 35 * 0.05 <= clock.monotonic() < 40 * 2 * 0.05
    await stop(task)


async def test_a_connection_failure_other_than_refusal_fails_the_call(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher()
    lw.fail_next_watch(ConnectionFailed("connection to x failed: no route"))

    with pytest.raises(ConnectionFailed, match="no route"):
        await Reflector(lw, store, clock=clock, use_watch_list=False).list_and_watch()

    assert len(lw.watch_calls) == 1


async def test_too_many_requests_backs_off_both_on_open_and_as_an_error_event(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestBackoffOnTooManyRequests: 429 opening, then 429 as an ERROR event, then a
    # watch that closes at once (a very short watch: back to the caller).
    lw = FakeListerWatcher()
    backoff = CountingBackoff(clock)
    lw.fail_next_watch(TooManyRequests({"message": "too many requests"}))
    lw.error_next_watch(TooManyRequests({"message": "too many requests", "code": 429}))
    reflector = Reflector(lw, store, clock=clock, backoff=backoff, use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watch_calls(3)
    await lw.wait_for_watchers(1)
    lw.drop_watches()

    await task
    assert backoff.calls == 2
    assert len(lw.list_calls) == 1


async def test_repeated_too_many_requests_never_relist(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestNoRelistOnTooManyRequests
    lw = FakeListerWatcher()
    lw.fail_next_watch(*[TooManyRequests({"message": "busy"}) for _ in range(4)])
    reflector = Reflector(
        lw, store, clock=clock, backoff=CountingBackoff(clock), use_watch_list=False
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    assert len(lw.list_calls) == 1
    assert len(lw.watch_calls) == 5
    await stop(task)


async def test_retry_after_replaces_the_backoff_delay(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher()
    lw.fail_next_watch(TooManyRequests({"message": "busy"}, retry_after=7.0))
    reflector = Reflector(lw, store, clock=clock, backoff=no_jitter(clock), use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await backing_off(reflector)

    await clock.advance(6.9)
    assert len(lw.watch_calls) == 1
    await clock.advance(0.1)
    await lw.wait_for_watchers(1)

    assert len(lw.watch_calls) == 2
    await stop(task)


async def test_retry_after_from_the_status_details_is_honoured_for_error_events(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher()
    lw.error_next_watch(
        {"code": 429, "reason": "TooManyRequests", "details": {"retryAfterSeconds": 3}}
    )
    reflector = Reflector(lw, store, clock=clock, backoff=no_jitter(clock), use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await backing_off(reflector)

    await clock.advance(3.0)
    await lw.wait_for_watchers(1)

    assert len(lw.watch_calls) == 2
    assert len(lw.list_calls) == 1
    await stop(task)


class SteppingClock:
    """A clock whose time moves only by hand, synchronously; nobody ever wakes from it."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        await asyncio.Event().wait()


@pytest.mark.parametrize(
    ("max_duration", "rewind_at", "retries"),
    [
        pytest.param(0.0, None, 0, id="retries-off"),
        pytest.param(30.0, None, 31, id="retries-on-all-calls-fail"),
        pytest.param(30.0, 10, 40, id="retries-on-one-quiet-minute-resets-the-window"),
    ],
)
async def test_internal_errors_are_retried_for_the_configured_duration(
    max_duration: float, rewind_at: int | None, retries: int, store: RecordingStore
) -> None:
    # TestRetryInternalError: every watch sends a 500 InternalError and takes 1 s.
    stepping = SteppingClock()

    class SlowFailingWatches(FakeListerWatcher):
        def watch(self, options: ListOptions) -> Any:
            if len(self.watch_calls) + 1 == rewind_at:
                stepping.now += 60.0
            stepping.now += 1.0
            self.error_next_watch(
                {"code": 500, "reason": "InternalError", "message": "etcdserver: no leader"}
            )
            return super().watch(options)

    lw = SlowFailingWatches()
    reflector = Reflector(
        lw,
        store,
        clock=stepping,
        options=ReflectorOptions(max_internal_error_retry_duration=max_duration),
        use_watch_list=False,
    )

    await reflector.list_and_watch()

    assert len(lw.watch_calls) - 1 == retries


async def test_an_error_event_after_an_unsafe_delete_makes_run_relist(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorReplacesStoreOnUnsafeDelete: a 500 ERROR event ends the watch, run()
    # relists and the replace drops the corrupt object.
    lw = FakeListerWatcher(objects=[pod("foo-1"), pod("foo-2"), pod("foo-3")])
    reflector = Reflector(lw, store, clock=clock, backoff=no_jitter(clock), use_watch_list=False)
    task = spawn(reflector.run())
    await lw.wait_for_watchers(1)
    lw.add(pod("corrupt"))
    await wait_until(lambda: "default/corrupt" in store.items)

    lw.delete("default/corrupt", notify=False)
    lw.send_error(
        {
            "code": 500,
            "reason": "StorageReadError",
            "message": "corrupt object has been deleted",
        }
    )
    await backing_off(reflector)
    await clock.advance(0.8)
    await lw.wait_for_watchers(1)

    assert reflector.last_sync_resource_version == "5"
    assert store.calls[-1] == ("replace", ["default/foo-1", "default/foo-2", "default/foo-3"], "5")
    assert [options.resource_version for options in lw.list_calls] == ["0", "4"]
    await stop(task)


async def test_gone_as_an_error_event_relists_after_backoff_at_the_last_version(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(lw, store, clock=clock, backoff=no_jitter(clock), use_watch_list=False)
    task = spawn(reflector.run())
    await lw.wait_for_watchers(1)
    lw.add(pod("b"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")

    lw.send_error(Gone({"message": "too old resource version: 1 (2)", "reason": "Expired"}))
    await backing_off(reflector)
    await clock.advance(0.8)
    await lw.wait_for_watchers(1)

    assert [(kind, o.resource_version) for kind, o in lw.requests] == [
        ("list", "0"),
        ("watch", "1"),
        ("list", "2"),
        ("watch", "2"),
    ]
    assert lw.list_calls[1] == ListOptions(resource_version="2")  # a relist is unpaginated
    assert reflector.statistics().relists == 1
    await stop(task)


async def test_a_watch_from_a_compacted_version_relists(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(lw, store, clock=clock, backoff=no_jitter(clock), use_watch_list=False)
    task = spawn(reflector.run())
    await lw.wait_for_watchers(1)

    await clock.advance(1.0)  # a watch that lived a second is simply re-opened...
    lw.add(pod("b"), notify=False)
    lw.reset_watch()  # ...but its resourceVersion was compacted away meanwhile
    await backing_off(reflector)  # re-watched, got 410 as an ERROR event
    await clock.advance(0.8)
    await lw.wait_for_watchers(1)

    assert [(kind, o.resource_version) for kind, o in lw.requests] == [
        ("list", "0"),
        ("watch", "1"),
        ("watch", "1"),
        ("list", "1"),
        ("watch", "2"),
    ]
    assert store.contents() == {"default/a": "1", "default/b": "2"}
    await stop(task)


async def test_a_very_short_watch_without_events_ends_the_round(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    errors: list[BaseException] = []
    reflector = Reflector(lw, store, clock=clock, watch_error_handler=lambda r, e: errors.append(e))
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    lw.drop_watches()
    await task

    assert len(lw.watch_calls) == 1
    assert len(errors) == 1
    assert isinstance(errors[0], WatchError)
    assert "very short watch" in str(errors[0])


async def test_a_quiet_watch_that_lasted_a_second_is_simply_reopened(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    await clock.advance(1.0)
    lw.drop_watches()
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)

    assert [o.resource_version for o in lw.watch_calls] == ["1", "1"]
    assert len(lw.list_calls) == 1
    await stop(task)


async def test_a_stream_that_breaks_after_events_is_reopened_without_relisting(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    errors: list[BaseException] = []
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        watch_error_handler=lambda r, e: errors.append(e),
        use_watch_list=False,
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    lw.add(pod("b"))
    broken = WatchError("connection broke mid-response")
    lw.break_watches(broken)
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)

    assert [o.resource_version for o in lw.watch_calls] == ["1", "2"]
    assert len(lw.list_calls) == 1
    assert errors == [broken]
    await stop(task)


# ----------------------------------------------------------------------- pagination


def pods(count: int) -> list[dict[str, Any]]:
    return [pod(f"pod-{i:02d}") for i in range(count)]


async def test_the_list_is_paged_with_the_configured_page_size(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorWatchListPageSize
    lw = FakeListerWatcher(objects=pods(10))
    reflector = Reflector(lw, store, clock=clock, page_size=4, use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    assert lw.list_calls == [
        ListOptions(resource_version="0", limit=4),
        ListOptions(limit=4, continue_="continue-1"),
        ListOptions(limit=4, continue_="continue-2"),
    ]
    assert len(store.items) == 10
    assert store.calls == [("replace", [key_of(p) for p in pods(10)], "10")]
    await stop(task)


async def test_relists_at_a_resource_version_are_unpaginated_by_default(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorNotPaginatingNotConsistentReads + TestReflectorResyncWithResourceVersion
    lw = FakeListerWatcher(objects=pods(4))
    reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    for item in pods(8)[4:]:
        lw.add(item, notify=False)
    lw.send_error(Gone({"message": "too old"}))
    await task

    await spawn_and_wait_for_watch(reflector, lw)

    assert lw.list_calls == [
        ListOptions(resource_version="0", limit=500),
        ListOptions(resource_version="4"),
    ]
    assert len(store.items) == 8


async def spawn_and_wait_for_watch(reflector: Reflector, lw: FakeListerWatcher) -> None:
    watches = len(lw.watch_calls)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watch_calls(watches + 1)
    await lw.wait_for_watchers(1)
    await stop(task)


async def test_a_paginated_first_list_keeps_later_lists_paginated(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled
    lw = FakeListerWatcher(objects=[pod(f"p{i:03d}") for i in range(501)])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
    await spawn_and_wait_for_watch(reflector, lw)
    await spawn_and_wait_for_watch(reflector, lw)

    assert lw.list_calls == [
        ListOptions(resource_version="0", limit=500),
        ListOptions(limit=500, continue_="continue-1"),
        ListOptions(resource_version="501", limit=500),
        ListOptions(limit=500, continue_="continue-2"),
    ]
    assert len(store.items) == 501


async def test_an_expired_exact_resource_version_is_relisted_from_the_latest_state(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorExpiredExactResourceVersion
    lw = FakeListerWatcher(objects=pods(4))
    reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
    await spawn_and_wait_for_watch(reflector, lw)
    for item in pods(8)[4:]:
        lw.add(item, notify=False)

    lw.fail_next_list(Gone({"message": "The resourceVersion for the provided list is too old."}))
    await spawn_and_wait_for_watch(reflector, lw)

    assert [o.resource_version for o in lw.list_calls] == ["0", "4", ""]
    assert len(store.items) == 8
    assert reflector.last_sync_resource_version == "8"


async def test_an_expired_continuation_falls_back_to_one_full_list(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorFullListIfExpired
    lw = FakeListerWatcher(objects=pods(4))
    reflector = Reflector(lw, store, clock=clock, page_size=4, use_watch_list=False)
    await spawn_and_wait_for_watch(reflector, lw)
    for item in pods(8)[4:]:
        lw.add(item, notify=False)

    lw.fail_next_list(None, Gone({"message": "continue token too old", "reason": "Expired"}))
    await spawn_and_wait_for_watch(reflector, lw)

    assert lw.list_calls == [
        ListOptions(resource_version="0", limit=4),
        ListOptions(resource_version="4", limit=4),
        ListOptions(limit=4, continue_="continue-1"),
        ListOptions(resource_version="4"),
    ]
    assert len(store.items) == 8


TOO_LARGE_FORMS = [
    pytest.param(
        {
            "code": 504,
            "reason": "Timeout",
            "message": "too large resource version",
            "details": {"causes": [{"reason": "ResourceVersionTooLarge"}]},
        },
        id="cause-reason",
    ),
    pytest.param(
        {
            "code": 504,
            "reason": "Timeout",
            "message": "too large resource version",
            "details": {"causes": [{"message": "Too large resource version"}]},
        },
        id="cause-message-of-1.17-to-1.18",
    ),
    pytest.param(
        {"code": 504, "reason": "Timeout", "message": "Too large resource version"},
        id="status-message-before-1.17",
    ),
]


@pytest.mark.parametrize("status", TOO_LARGE_FORMS)
async def test_a_too_large_resource_version_is_relisted_from_the_latest_state(
    status: dict[str, Any], clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorFullListIfTooLarge
    lw = FakeListerWatcher(objects=pods(2))
    reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
    await spawn_and_wait_for_watch(reflector, lw)

    lw.fail_next_list(ServerError(status))
    await spawn_and_wait_for_watch(reflector, lw)

    assert [o.resource_version for o in lw.list_calls] == ["0", "2", ""]
    assert reflector.last_sync_resource_version == "2"


async def test_a_504_that_is_not_about_resource_versions_fails_the_list(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher()
    lw.fail_next_list(ServerError({"code": 504, "reason": "Timeout", "message": "slow etcd"}))

    with pytest.raises(ServerError, match="slow etcd"):
        await Reflector(lw, store, clock=clock, use_watch_list=False).list_and_watch()

    assert len(lw.list_calls) == 1
    assert store.calls == []


async def test_the_retry_at_the_latest_state_can_fail_too(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher()
    lw.fail_next_list(Gone({"message": "expired"}), BadRequest({"message": "nope"}))

    with pytest.raises(BadRequest):
        await Reflector(lw, store, clock=clock, use_watch_list=False).list_and_watch()

    assert [o.resource_version for o in lw.list_calls] == ["0", ""]


# ------------------------------------------------------------------------- timeouts


@pytest.mark.parametrize(
    ("min_watch_timeout", "low"),
    [
        pytest.param(None, 300, id="default"),
        pytest.param(1.0, 300, id="small-minimum-not-honoured"),
        pytest.param(1800.0, 1800, id="thirty-minutes"),
    ],
)
async def test_watch_timeouts_are_drawn_between_the_minimum_and_twice_it(
    min_watch_timeout: float | None, low: int, clock: FakeClock, store: RecordingStore
) -> None:
    # TestWatchTimeout
    lw = FakeListerWatcher()
    options = (
        ReflectorOptions()
        if min_watch_timeout is None
        else ReflectorOptions(min_watch_timeout=min_watch_timeout)
    )
    reflector = Reflector(lw, store, clock=clock, options=options)
    for _ in range(5):
        await spawn_and_wait_for_watch(reflector, lw)

    for watch_options in lw.watch_calls:
        assert watch_options.timeout_seconds is not None
        assert low <= watch_options.timeout_seconds < 2 * low


async def test_a_stalled_watch_is_closed_at_its_inactivity_deadline_and_reopened(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    errors: list[BaseException] = []
    lw.stall_next_watch()
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        options=ReflectorOptions(watch_inactivity_timeout=90.0),
        watch_error_handler=lambda r, e: errors.append(e),
        use_watch_list=False,
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    await clock.advance(89.0)
    assert len(lw.watch_calls) == 1
    await clock.advance(90.0 * 0.05 + 1.0)
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)

    assert lw.open_watches == 1  # the stalled stream was closed, the new one is open
    assert [o.resource_version for o in lw.watch_calls] == ["1", "1"]
    assert len(lw.list_calls) == 1
    assert len(errors) == 1
    assert isinstance(errors[0], WatchTimeout)
    lw.add(pod("b"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")
    await stop(task)


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        pytest.param(None, lambda timeout: DEFAULT_WATCH_INACTIVITY_TIMEOUT, id="default-120s"),
        pytest.param(100.0, lambda timeout: 100.0, id="configured"),
        pytest.param(10_000.0, lambda timeout: timeout + 30.0, id="huge-capped-at-timeout+30s"),
    ],
)
async def test_a_frozen_watch_is_closed_between_one_and_1_05_times_its_deadline(
    clock: FakeClock,
    store: RecordingStore,
    configured: float | None,
    expected: Callable[[int], float],
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.stall_next_watch()
    options = ReflectorOptions(watch_inactivity_timeout=configured)
    reflector = Reflector(lw, store, clock=clock, options=options, use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    timeout = lw.watch_calls[0].timeout_seconds
    assert timeout is not None
    deadline = expected(timeout)

    await clock.advance(deadline - 1.0)
    assert len(lw.watch_calls) == 1
    await clock.advance(deadline * 0.05 + 1.0)
    await lw.wait_for_watch_calls(2)
    assert len(lw.list_calls) == 1

    await stop(task)


def test_the_default_deadline_is_two_bookmark_intervals_so_a_freeze_ends_within_130s() -> None:
    assert DEFAULT_WATCH_INACTIVITY_TIMEOUT == 120.0
    assert DEFAULT_WATCH_INACTIVITY_TIMEOUT * (1 + 1 / DEADLINE_TICKS) <= 130.0


async def test_bookmarks_keep_a_quiet_watch_alive(clock: FakeClock, store: RecordingStore) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(
        lw, store, clock=clock, options=ReflectorOptions(watch_inactivity_timeout=90.0)
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    for _ in range(20):  # ten minutes of a bookmark a minute
        await clock.advance(60.0)
        lw.send_bookmark()
        await clock.settle()

    assert len(lw.watch_calls) == 1
    await stop(task)


async def test_the_deadline_never_interrupts_a_store_call_in_progress(
    clock: FakeClock,
) -> None:
    store = HeldStore()
    lw = FakeListerWatcher()
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        options=ReflectorOptions(watch_inactivity_timeout=10.0),
        use_watch_list=False,
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    lw.add(pod("slow"))
    await clock.settle()

    await clock.advance(30.0)  # silent for three deadlines, but the reader is in the store
    assert len(lw.watch_calls) == 1
    store.release.set()
    await wait_until(lambda: "default/slow" in store.items)
    await clock.advance(12.0)  # now it is reading again: the stalled stream is closed
    await lw.wait_for_watch_calls(2)

    assert [o.resource_version for o in lw.watch_calls] == ["0", "1"]
    await stop(task)


class HandClock:
    """A clock whose sleepers the test wakes one by one, by hand."""

    def __init__(self) -> None:
        self.sleeping: list[asyncio.Future[None]] = []

    def monotonic(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self.sleeping.append(future)
        await future


async def test_an_outside_cancel_racing_the_watchdog_still_cancels(
    store: RecordingStore,
) -> None:
    hand = HandClock()
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.stall_next_watch()
    reflector = Reflector(
        lw, store, clock=hand, options=ReflectorOptions(watch_inactivity_timeout=10.0)
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    for _ in range(DEADLINE_TICKS):  # every silent tick of the watchdog
        await wait_until(lambda: bool(hand.sleeping))
        hand.sleeping.pop().set_result(None)
        await asyncio.sleep(0)  # the watchdog runs; on the last tick it interrupts
    task.cancel()  # ...and the outside cancel lands before the reader resumes

    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(2):  # a swallowed cancel would watch on forever
            await task
    assert len(lw.watch_calls) == 1
    assert lw.open_watches == 0


async def test_an_interrupted_reader_is_left_without_a_pending_cancellation(
    clock: FakeClock,
) -> None:
    seen: list[int] = []

    class Probe(RecordingStore):
        async def add(self, obj: Any) -> None:
            task = asyncio.current_task()
            assert task is not None
            seen.append(task.cancelling())
            await super().add(obj)

    lw = FakeListerWatcher(objects=[pod("a")])
    lw.stall_next_watch()
    reflector = Reflector(
        lw, Probe(), clock=clock, options=ReflectorOptions(watch_inactivity_timeout=10.0)
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    await clock.advance(11.0)
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)

    lw.add(pod("b"))
    await wait_until(lambda: bool(seen))

    assert seen == [0]
    await stop(task)


# -------------------------------------------------------------------------- resync


async def test_resync_runs_every_period_and_a_failed_one_ends_the_round(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestReflectorResync: the resync error is not raised by list_and_watch.
    store.resync_error_on = 2
    lw = FakeListerWatcher()
    errors: list[BaseException] = []
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        resync_period=0.001,
        watch_error_handler=lambda r, e: errors.append(e),
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    await clock.advance(0.001)
    assert store.resyncs == 1
    await clock.advance(0.001)

    await task
    assert store.resyncs == 2
    assert lw.open_watches == 0
    assert [str(e) for e in errors] == ["expected resync reached"]


async def test_should_resync_gates_each_resync(clock: FakeClock, store: RecordingStore) -> None:
    answers = iter([False, True, False, True])
    lw = FakeListerWatcher()
    reflector = Reflector(
        lw, store, clock=clock, resync_period=30.0, should_resync=lambda: next(answers)
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    await clock.advance(120.0)

    assert store.resyncs == 2
    await stop(task)


async def test_no_resync_without_a_period(clock: FakeClock, store: RecordingStore) -> None:
    lw = FakeListerWatcher()
    reflector = Reflector(
        lw, store, clock=clock, options=ReflectorOptions(watch_inactivity_timeout=10_000.0)
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    await clock.advance(3600.0)

    assert store.resyncs == 0
    await stop(task)


# -------------------------------------------------------------------- run and errors


async def test_run_backs_off_after_a_failed_list_and_tries_again(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    failure = ServerError({"code": 503, "message": "unavailable"})
    lw.fail_next_list(failure, failure)
    errors: list[tuple[Reflector, BaseException]] = []
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        backoff=no_jitter(clock),
        watch_error_handler=lambda r, e: errors.append((r, e)),
        use_watch_list=False,
    )
    task = spawn(reflector.run())

    await backing_off(reflector)
    await clock.advance(0.8)
    await lw.wait_for_list_calls(2)
    await backing_off(reflector)
    assert len(lw.list_calls) == 2
    await clock.advance(1.6)
    await lw.wait_for_watchers(1)

    assert errors == [(reflector, failure), (reflector, failure)]
    assert store.contents() == {"default/a": "1"}
    assert reflector.statistics().last_error is failure
    await stop(task)


async def test_an_async_error_handler_is_awaited(clock: FakeClock, store: RecordingStore) -> None:
    lw = FakeListerWatcher()
    seen: list[BaseException] = []

    async def handler(reflector: Reflector, error: BaseException) -> None:
        await asyncio.sleep(0)
        seen.append(error)

    lw.fail_next_list(ServerError({"code": 500}))
    reflector = Reflector(lw, store, clock=clock, watch_error_handler=handler, use_watch_list=False)
    task = spawn(reflector.run())
    await backing_off(reflector)

    assert len(seen) == 1
    await stop(task)


async def test_an_async_callable_object_is_detected_as_an_async_handler(
    clock: FakeClock, store: RecordingStore
) -> None:
    class Handler:
        def __init__(self) -> None:
            self.seen: list[BaseException] = []

        async def __call__(self, reflector: Reflector, error: BaseException) -> None:
            self.seen.append(error)

    handler = Handler()
    lw = FakeListerWatcher()
    lw.fail_next_list(ServerError({"code": 500}))
    reflector = Reflector(lw, store, clock=clock, watch_error_handler=handler, use_watch_list=False)
    task = spawn(reflector.run())
    await backing_off(reflector)

    assert len(handler.seen) == 1
    await stop(task)


async def test_a_failing_error_handler_is_logged_and_run_goes_on(
    clock: FakeClock, store: RecordingStore, caplog: pytest.LogCaptureFixture
) -> None:
    def handler(reflector: Reflector, error: BaseException) -> None:
        raise RuntimeError("handler bug")

    lw = FakeListerWatcher()
    lw.fail_next_list(ServerError({"code": 500}))
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        backoff=no_jitter(clock),
        watch_error_handler=handler,
        use_watch_list=False,
    )
    task = spawn(reflector.run())
    await backing_off(reflector)
    await clock.advance(0.8)
    await lw.wait_for_watchers(1)

    assert "watch error handler failed" in caplog.text
    await stop(task)


async def test_an_unexpected_exception_is_logged_with_its_traceback_and_retried(
    clock: FakeClock, store: RecordingStore, caplog: pytest.LogCaptureFixture
) -> None:
    lw = FakeListerWatcher()
    lw.fail_next_list(KeyError("bug"))
    reflector = Reflector(lw, store, clock=clock, backoff=no_jitter(clock), use_watch_list=False)
    task = spawn(reflector.run())
    await backing_off(reflector)
    await clock.advance(0.8)
    await lw.wait_for_watchers(1)

    record = next(r for r in caplog.records if "list and watch failed" in r.getMessage())
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    await stop(task)


async def test_a_stray_cancellation_from_a_list_is_a_failure_that_is_retried(
    clock: FakeClock, store: RecordingStore, caplog: pytest.LogCaptureFixture
) -> None:
    # A CancelledError that nobody asked for (the lister-watcher awaited something that
    # was cancelled elsewhere) must not end run(): the informer would look alive forever
    # with nothing listing or watching.
    lw = FakeListerWatcher(objects=[pod("a")])
    stray = asyncio.CancelledError()
    lw.fail_next_list(stray)
    errors: list[BaseException] = []
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        backoff=no_jitter(clock),
        watch_error_handler=lambda r, e: errors.append(e),
        use_watch_list=False,
    )
    task = spawn(reflector.run())
    await backing_off(reflector)
    await clock.advance(0.8)
    await lw.wait_for_watchers(1)

    assert store.contents() == {"default/a": "1"}
    assert errors == [stray]
    assert "list and watch failed" in caplog.text
    await stop(task)


async def test_an_error_handler_letting_out_a_stray_cancellation_does_not_stop_run(
    clock: FakeClock, store: RecordingStore, caplog: pytest.LogCaptureFixture
) -> None:
    async def handler(reflector: Reflector, error: BaseException) -> None:
        abandoned = asyncio.get_running_loop().create_future()
        abandoned.cancel()
        await abandoned

    lw = FakeListerWatcher()
    lw.fail_next_list(ServerError({"code": 500}))
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        backoff=no_jitter(clock),
        watch_error_handler=handler,
        use_watch_list=False,
    )
    task = spawn(reflector.run())
    await backing_off(reflector)
    await clock.advance(0.8)
    await lw.wait_for_watchers(1)

    assert "watch error handler failed" in caplog.text
    await stop(task)


async def test_run_cannot_be_started_twice(clock: FakeClock, store: RecordingStore) -> None:
    lw = FakeListerWatcher()
    reflector = Reflector(lw, store, clock=clock)
    task = spawn(reflector.run())
    await lw.wait_for_watchers(1)

    with pytest.raises(RuntimeError, match="already running"):
        await reflector.run()
    await stop(task)


async def test_list_and_watch_cannot_run_twice_at_once(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher()
    reflector = Reflector(lw, store, clock=clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    with pytest.raises(RuntimeError, match="already listing and watching"):
        await reflector.list_and_watch()
    assert lw.open_watches == 1
    await stop(task)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"resync_period": -1.0}, id="negative-resync"),
        pytest.param({"page_size": -5}, id="negative-page-size"),
        pytest.param({"watch_inactivity_timeout": 0.0}, id="zero-deadline"),
    ],
)
def test_nonsensical_settings_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        Reflector(FakeListerWatcher(), RecordingStore(), options=ReflectorOptions(**kwargs))


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"resync_period": -1.0}, id="negative-resync"),
        pytest.param({"page_size": -5}, id="negative-page-size"),
    ],
)
def test_nonsensical_reflector_keywords_are_rejected_by_the_same_check(
    kwargs: dict[str, Any],
) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        Reflector(FakeListerWatcher(), RecordingStore(), **kwargs)


def test_options_are_frozen_and_replace_only_the_fields_given() -> None:
    options = ReflectorOptions(page_size=7, expected_kind="Pod")

    assert options.replace() is options
    assert options.replace(page_size=None, use_watch_list=None) is options
    assert options.replace(page_size=7, gc_policy="pause") is options
    assert options.replace(page_size=3, gc_policy="off") == ReflectorOptions(
        page_size=3, expected_kind="Pod", gc_policy="off"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.page_size = 1  # type: ignore[misc]
    with pytest.raises(ValueError, match="watch_inactivity_timeout"):
        options.replace(watch_inactivity_timeout=-1.0)


def test_reflector_keywords_replace_the_fields_of_its_options() -> None:
    options = ReflectorOptions(page_size=7, use_watch_list=True, expected_kind="Pod")
    kept = Reflector(FakeListerWatcher(), RecordingStore(), options=options)
    changed = Reflector(
        FakeListerWatcher(), RecordingStore(), options=options, page_size=2, resync_period=5.0
    )

    assert kept.options is options
    assert changed.options == ReflectorOptions(
        page_size=2, use_watch_list=True, expected_kind="Pod", resync_period=5.0
    )


async def test_an_informer_hands_its_reflector_options_to_its_reflector(
    clock: FakeClock,
) -> None:
    lw = FakeListerWatcher(objects=pods(5))
    informer = SharedIndexInformer(
        lw, clock=clock, reflector=ReflectorOptions(page_size=3, use_watch_list=False)
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)

    assert lw.list_calls[0].limit == 3


# -------------------------------------------------------------------- cancellation


async def test_cancelling_during_a_list_page_leaves_the_store_untouched(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=pods(10))
    lw.fail_next_list(None)
    lw.stall_next_list()  # the second page never comes
    reflector = Reflector(lw, store, clock=clock, page_size=4, use_watch_list=False)
    task = spawn(reflector.run())
    await lw.wait_for_list_calls(2)
    await clock.settle()
    assert reflector.statistics().state is ReflectorState.LISTING

    await stop(task)

    assert store.calls == []
    assert reflector.state is ReflectorState.STOPPED
    assert reflector.last_sync_resource_version == ""
    assert other_tasks() == set()


async def test_cancelling_mid_watch_closes_the_stream(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestRunUntil / TestReflectorStopWatch
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(lw, store, clock=clock, resync_period=30.0)
    task = spawn(reflector.run())
    await lw.wait_for_watchers(1)
    lw.add(pod("b"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")

    await stop(task)

    assert lw.open_watches == 0
    assert reflector.state is ReflectorState.STOPPED
    assert other_tasks() == set()


async def test_cancelling_during_backoff_stops_at_once(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher()
    lw.fail_next_list(ServerError({"code": 500}))
    reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
    task = spawn(reflector.run())
    await backing_off(reflector)

    await stop(task)

    assert clock.sleepers == 0
    assert reflector.state is ReflectorState.STOPPED
    assert other_tasks() == set()


async def test_cancelling_while_a_watch_is_backing_off_closes_everything(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher()
    lw.fail_next_watch(TooManyRequests({"message": "busy"}))
    reflector = Reflector(lw, store, clock=clock, resync_period=60.0, use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await backing_off(reflector)
    await clock.wait_for_sleepers(2)  # the resync timer and the backoff

    await stop(task)

    assert clock.sleepers == 0
    assert other_tasks() == set()


async def test_an_error_event_closes_the_watch_stream(
    clock: FakeClock, store: RecordingStore
) -> None:
    # TestCloseWatchChannelOnError
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(lw, store, clock=clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    lw.send_error({"code": 500, "message": "boom"})
    await task

    assert lw.open_watches == 0
    assert other_tasks() == set()


# ----------------------------------------------------------------- observability


async def test_repr_names_the_resource_namespace_state_and_version(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(namespace="default", objects=[pod("a"), pod("b")])
    reflector = Reflector(lw, store, clock=clock)
    assert repr(reflector) == "<Reflector pods ns=default state=STOPPED rv=''>"
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    assert repr(reflector) == "<Reflector pods ns=default state=WATCHING rv='2'>"
    assert repr(Reflector(lw, store, name="my-pods")) == "<Reflector my-pods state=STOPPED rv=''>"
    await stop(task)


async def test_statistics_count_requests_events_and_relists(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=pods(3))
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        page_size=2,
        backoff=no_jitter(clock),
        options=ReflectorOptions(watch_inactivity_timeout=120.0),
        use_watch_list=False,
    )
    task = spawn(reflector.run())
    await lw.wait_for_watchers(1)
    lw.add(pod("x"))
    lw.send_bookmark()
    await wait_until(lambda: reflector.statistics().events == 2)
    gone = Gone({"message": "too old"})
    lw.send_error(gone)
    await backing_off(reflector)
    await clock.advance(0.8)
    await lw.wait_for_watchers(1)

    assert reflector.statistics() == ReflectorStatistics(
        state=ReflectorState.WATCHING,
        lists=4,
        watches=2,
        relists=1,
        events=2,
        last_resource_version="4",
        last_error=reflector.statistics().last_error,
        seconds_since_heard=0.0,  # the relist and its watch, just now
        watch_restarts=0,  # the watch after a relist is a first watch
        inactivity_deadline=120.0,
    )
    assert isinstance(reflector.statistics().last_error, Gone)
    with pytest.raises(dataclasses.FrozenInstanceError):
        reflector.statistics().events = 0  # type: ignore[misc]
    await stop(task)


# ---------------------------------------------------------------- with a DeltaFIFO


async def test_into_a_delta_fifo_a_list_queues_replaced_deltas_and_events_follow(
    clock: FakeClock,
) -> None:

    fifo = DeltaFIFO(known_objects=Indexer())
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    reflector = Reflector(lw, fifo, clock=clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    lw.modify(pod("a", app="web"))
    lw.delete("default/b")
    await wait_until(lambda: reflector.last_sync_resource_version == "4")

    a = fifo.get_by_key("default/a")
    b = fifo.get_by_key("default/b")
    assert a is not None
    assert b is not None
    assert [d.type for d in a] == [DeltaType.REPLACED, DeltaType.UPDATED]
    assert [d.type for d in b] == [DeltaType.REPLACED, DeltaType.DELETED]
    assert not fifo.has_synced()
    await stop(task)


async def test_into_a_delta_fifo_a_relist_tombstones_what_vanished_while_unwatched(
    clock: FakeClock,
) -> None:

    indexer: Indexer[Any] = Indexer()
    fifo = DeltaFIFO(known_objects=indexer)
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    reflector = Reflector(lw, fifo, clock=clock, backoff=no_jitter(clock))
    task = spawn(reflector.run())
    await lw.wait_for_watchers(1)
    for _ in range(2):  # the consumer applies the initial list to the cache
        deltas = await fifo.pop(lambda d: indexer.add(d.newest().object))  # type: ignore[union-attr]
    assert fifo.has_synced()
    assert len(deltas) == 1

    lw.delete("default/b", notify=False)  # missed by the watch...
    lw.send_error(Gone({"message": "too old resource version"}))  # ...which then expires
    await backing_off(reflector)
    await clock.advance(0.8)
    await lw.wait_for_watchers(1)

    b = fifo.get_by_key("default/b")
    assert b is not None
    newest = b.newest()
    assert newest is not None
    assert newest.type is DeltaType.DELETED
    assert newest.object == DeletedFinalStateUnknown("default/b", indexer.get_by_key("default/b"))
    a = fifo.get_by_key("default/a")
    assert a is not None
    assert [d.type for d in a] == [DeltaType.REPLACED]
    await stop(task)


class ReadsOfFour(WatchStreamBase):
    """A stream whose every read brings at most four events, as a connection's reads bring
    what one chunk of the body held, however much the server has sent."""

    def __init__(self, inner: WatchStreamBase) -> None:
        self._inner = inner

    @property
    def opened(self) -> bool:
        return self._inner.opened

    async def batches(self) -> AsyncIterator[list[WatchEvent]]:
        async for batch in self._inner.batches():
            for start in range(0, len(batch), 4):
                yield batch[start : start + 4]

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return aiter(self._inner)

    async def aclose(self) -> None:
        await self._inner.aclose()


class ReadingFourAtATime(FakeListerWatcher):
    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        inner = super().watch(options)
        assert isinstance(inner, WatchStreamBase)
        return ReadsOfFour(inner)


async def test_a_burst_of_buffered_events_is_handed_to_the_consumer_a_read_at_a_time(
    clock: FakeClock,
) -> None:
    # Reading buffered events never suspends; unless the reflector hands off after each
    # read the whole burst sits in the FIFO before its consumer runs, and every object in
    # flight is promoted by the garbage collector (see _HANDOFF).
    indexer: Indexer[Any] = Indexer()
    fifo = DeltaFIFO(known_objects=indexer)
    lw = ReadingFourAtATime(objects=[pod(f"p{i}") for i in range(50)])
    reflector = Reflector(lw, fifo, clock=clock)
    depths: list[int] = []

    def apply(deltas: Any) -> None:
        depths.append(len(fifo))
        indexer.update(deltas.newest().object)

    async def consume() -> None:
        while True:
            await fifo.pop(apply)

    task = spawn(reflector.list_and_watch())
    consumer = spawn(consume())
    await lw.wait_for_watchers(1)
    await wait_until(fifo.has_synced)
    depths.clear()
    for round_ in range(4):
        for i in range(50):
            lw.modify(pod(f"p{i}", round=str(round_)))
    await wait_until(lambda: reflector.last_sync_resource_version == "250")
    await wait_until(lambda: len(fifo) == 0)
    assert len(depths) >= 50
    assert max(depths) <= 8, max(depths)
    await stop(consumer)
    await stop(task)


# ------------------------------------------------------------- expected kind adoption


async def test_the_reflector_adopts_the_kind_of_the_first_list_for_its_watches(
    clock: FakeClock, store: RecordingStore, caplog: pytest.LogCaptureFixture
) -> None:
    lw = FakeListerWatcher(objects=[pod("foo")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    lw.add({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})  # rv 2
    lw.add({"apiVersion": "v2", "kind": "Pod", "metadata": {"name": "p"}})  # rv 3
    lw.add(pod("bar"))  # rv 4
    await wait_until(lambda: reflector.last_sync_resource_version == "4")
    assert store.contents() == {"default/bar": "4", "default/foo": "1"}
    assert "expected v1 Pod, but the watch event object is v1 Secret" in caplog.text
    assert "expected v1 Pod, but the watch event object is v2 Pod" in caplog.text
    await stop(task)


async def test_a_list_naming_no_kind_leaves_the_watch_unchecked(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher()  # empty: its list names no kind
    reflector = Reflector(lw, store, clock=clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    lw.add({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
    await wait_until(lambda: reflector.last_sync_resource_version == "1")
    assert store.contents() == {"s": "1"}
    await stop(task)


async def test_a_configured_expectation_is_kept_and_only_the_missing_one_adopted(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("foo")])
    reflector = Reflector(
        lw,
        store,
        clock=clock,
        options=ReflectorOptions(expected_kind="Widget"),
        use_watch_list=False,
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    lw.add({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w1"}})  # rv 2
    lw.add({"apiVersion": "v9", "kind": "Widget", "metadata": {"name": "w2"}})  # rv 3
    lw.add(pod("bar"))  # rv 4
    lw.add({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w3"}})  # rv 5
    await wait_until(lambda: reflector.last_sync_resource_version == "5")
    assert store.contents() == {"default/foo": "1", "w1": "2", "w3": "5"}
    await stop(task)


async def test_the_adopted_kind_is_kept_across_relists(
    clock: FakeClock, store: RecordingStore
) -> None:
    lw = FakeListerWatcher(objects=[pod("foo")])
    reflector = Reflector(lw, store, clock=clock, use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    # A Secret now stored: the next list no longer names one kind for its items.
    lw.add({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}, notify=False)
    lw.reset_watch()  # the watch breaks, list_and_watch returns to relist
    await task
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    lw.add({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}})
    lw.add(pod("bar"))
    await wait_until(lambda: "default/bar" in store.contents())
    assert "t" not in store.contents()
    await stop(task)
