"""Reflector metrics: a reflector over a FakeListerWatcher on a FakeClock, recording into
a provider of plain recorders. Lists, watches, short watches, relists, watch events by
type, the last resourceVersion and seconds-since-heard; and the optional-protocol rule
(no provider, or a provider without the reflector protocol, records nothing and breaks
nothing)."""

from __future__ import annotations

import asyncio
import gc
import math
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._kernel.backoff import Backoff
from aioinformer._kernel.metrics import set_metrics_provider
from aioinformer._pipeline.metric_recorders import (
    FLUSH_PERIOD,
    ReflectorMetrics,
    new_reflector_metrics,
)
from aioinformer.informer import SharedIndexInformer
from aioinformer.reflector import DEADLINE_TICKS, Reflector, ReflectorOptions
from aioinformer.testing import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from aioinformer.workqueue import WorkQueue
from tests._support_gc import only_new_objects
from tests._support_metrics import (  # noqa: F401
    RecordingProvider,
    WorkqueueOnlyProvider,
    restore_installed_provider,
)
from tests._support_reflector import RecordingStore
from tests._support_tasks import stop
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from aioinformer.listwatch import ListOptions, ObjectList


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}}


class SlowLister(FakeListerWatcher):
    """A FakeListerWatcher whose every list takes ``delay`` seconds of virtual time."""

    def __init__(self, clock: FakeClock, delay: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.clock = clock
        self.delay = delay

    async def list(self, options: ListOptions) -> ObjectList:
        await self.clock.sleep(self.delay)
        return await super().list(options)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def provider() -> RecordingProvider:
    return RecordingProvider()


def spawn(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(coro)


def events(provider: RecordingProvider, name: str = "pods") -> dict[str, float]:
    return {
        kind: provider.value("aioinformer_reflector_watch_events_total", name, kind)
        for kind in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
    }


async def test_a_list_is_counted_with_its_duration_items_and_resource_version(
    clock: FakeClock, provider: RecordingProvider
) -> None:
    lw = SlowLister(clock, 2.5, objects=[pod("a"), pod("b")])
    reflector = Reflector(
        lw, RecordingStore(), clock=clock, metrics_provider=provider, use_watch_list=False
    )
    task = spawn(reflector.list_and_watch())
    await wait_until(lambda: reflector.statistics().lists == 1)
    assert provider.value("reflector_lists_total", "pods") == 1
    assert provider.metric("reflector_list_duration_seconds", "pods").observations == []

    await clock.advance(2.5)
    await lw.wait_for_watchers(1)
    assert provider.metric("reflector_list_duration_seconds", "pods").observations == [2.5]
    assert provider.metric("reflector_items_per_list", "pods").observations == [2]
    assert provider.value("reflector_last_resource_version", "pods") == 2
    assert provider.value("reflector_watches_total", "pods") == 1
    assert provider.value("aioinformer_reflector_relists_total", "pods") == 0
    await stop(task)


async def test_watch_events_are_counted_by_type_every_flush_period_and_at_the_end(
    clock: FakeClock, provider: RecordingProvider
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(
        lw, RecordingStore(), clock=clock, metrics_provider=provider, use_watch_list=False
    )
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)

    lw.add(pod("b"))
    lw.add(pod("c"))
    lw.modify(pod("b"))
    lw.delete("ns/c")
    lw.send_bookmark()
    await wait_until(lambda: reflector.statistics().events == 5)
    # Nothing per event: the stream's counts are added every flush period.
    assert events(provider) == {"ADDED": 0, "MODIFIED": 0, "DELETED": 0, "BOOKMARK": 0}
    assert provider.value("reflector_last_resource_version", "pods") == 1
    await clock.advance(FLUSH_PERIOD)
    assert events(provider) == {"ADDED": 2, "MODIFIED": 1, "DELETED": 1, "BOOKMARK": 1}
    assert provider.value("reflector_last_resource_version", "pods") == 5
    assert provider.metric("reflector_items_per_watch", "pods").observations == []

    lw.add(pod("d"))
    await wait_until(lambda: reflector.statistics().events == 6)
    await clock.advance(30.0 - FLUSH_PERIOD)
    lw.drop_watches()
    await lw.wait_for_watch_calls(2)

    assert events(provider) == {"ADDED": 3, "MODIFIED": 1, "DELETED": 1, "BOOKMARK": 1}
    assert provider.metric("reflector_items_per_watch", "pods").observations == [6]
    assert provider.metric("reflector_watch_duration_seconds", "pods").observations == [30.0]
    assert provider.value("reflector_last_resource_version", "pods") == 6
    assert provider.value("reflector_watches_total", "pods") == 2
    assert provider.value("reflector_short_watches_total", "pods") == 0
    await stop(task)


async def test_a_short_watch_is_counted_and_the_relist_after_it_too(
    clock: FakeClock, provider: RecordingProvider
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(
        lw,
        RecordingStore(),
        clock=clock,
        metrics_provider=provider,
        backoff=Backoff(initial=0.5, jitter=0.0, clock=clock),
        use_watch_list=False,
    )
    task = spawn(reflector.run())
    await lw.wait_for_watchers(1)
    lw.drop_watches()  # at once, without events: a very short watch, so run() relists
    await wait_until(lambda: provider.value("reflector_short_watches_total", "pods") == 1)
    await clock.advance(0.5)
    await lw.wait_for_list_calls(2)
    await lw.wait_for_watchers(1)

    assert provider.value("aioinformer_reflector_relists_total", "pods") == 1
    assert provider.value("reflector_lists_total", "pods") == 2
    assert provider.value("reflector_watches_total", "pods") == 2
    assert provider.metric("reflector_items_per_watch", "pods").observations == [0]
    assert reflector.statistics().relists == 1
    await stop(task)


async def test_a_streaming_list_counts_as_one_watch_list_and_one_watch(
    clock: FakeClock, provider: RecordingProvider
) -> None:
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    reflector = Reflector(
        lw, RecordingStore(), clock=clock, use_watch_list=True, metrics_provider=provider
    )
    task = spawn(reflector.list_and_watch())
    await wait_until(lambda: reflector.last_sync_resource_version == "2")
    lw.add(pod("c"))
    await wait_until(lambda: reflector.last_sync_resource_version == "3")
    lw.drop_watches()
    await lw.wait_for_watch_calls(2)

    assert provider.value("reflector_watchLists_total", "pods") == 1
    assert provider.value("reflector_watches_total", "pods") == 2
    assert provider.value("reflector_lists_total", "pods") == 0
    # Initial events, the initial-events-end bookmark, then one live event: one stream.
    assert events(provider)["ADDED"] == 3
    assert events(provider)["BOOKMARK"] == 1
    assert provider.metric("reflector_items_per_watch", "pods").observations == [4]
    assert provider.value("reflector_last_resource_version", "pods") == 3
    await stop(task)


async def test_seconds_since_heard_grows_in_silence_and_resets_when_the_server_speaks(
    clock: FakeClock, provider: RecordingProvider
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    # A 100 s deadline: the inactivity check, which notes progress, runs every tick.
    tick = 100.0 / DEADLINE_TICKS
    options = ReflectorOptions(watch_inactivity_timeout=100.0)
    reflector = Reflector(
        lw,
        RecordingStore(),
        clock=clock,
        options=options,
        metrics_provider=provider,
        use_watch_list=False,
    )
    seconds_since_heard = provider.heard["pods"]
    assert math.isnan(seconds_since_heard())  # not running

    task = spawn(reflector.run())
    await lw.wait_for_watchers(1)
    assert seconds_since_heard() == 0.0
    await clock.advance(40.0)
    assert seconds_since_heard() == 40.0

    lw.send_bookmark()
    await wait_until(lambda: reflector.statistics().events == 1)
    await clock.advance(15.0)  # the check one tick after the bookmark saw it
    assert seconds_since_heard() == 15.0 - tick

    await stop(task)
    assert math.isnan(seconds_since_heard())
    assert clock.sleepers == 0  # the flush timer went with the cancelled read


async def test_the_gauge_function_does_not_keep_a_reflector_alive(
    clock: FakeClock, provider: RecordingProvider
) -> None:
    with only_new_objects():
        reflector = Reflector(
            FakeListerWatcher(), RecordingStore(), clock=clock, metrics_provider=provider
        )
        del reflector
        gc.collect()
    assert math.isnan(provider.heard["pods"]())


@pytest.mark.usefixtures("restore_installed_provider")
def test_without_a_provider_the_reflector_gets_the_no_op_recorder() -> None:
    set_metrics_provider(None)
    recorder = new_reflector_metrics(
        "pods", None, clock=FakeClock(), seconds_since_heard=lambda: 0.0
    )
    assert type(recorder) is ReflectorMetrics


# A provider written before streaming-list failures were counted: every method of
# RecordingProvider but that counter's.
ProviderBeforeWatchListFailures: Any = type(
    "ProviderBeforeWatchListFailures",
    (),
    {
        name: value
        for name, value in vars(RecordingProvider).items()
        if name not in ("__dict__", "__weakref__", "new_reflector_watch_list_failures_metric")
    },
)


def test_a_provider_without_the_watch_list_failure_counters_still_records_the_rest() -> None:
    provider = ProviderBeforeWatchListFailures()
    recorder = new_reflector_metrics(
        "pods", provider, clock=FakeClock(), seconds_since_heard=lambda: 0.0
    )
    recorder.list_started()
    recorder.watch_list_started()
    recorder.watch_list_failed(retried=True)
    recorder.watch_list_failed(retried=False)
    assert provider.value("reflector_lists_total", "pods") == 1
    assert provider.value("reflector_watchLists_total", "pods") == 1
    assert not any(
        key[0] == "aioinformer_reflector_watch_list_failures_total" for key in provider.metrics
    )


@pytest.mark.usefixtures("restore_installed_provider")
async def test_the_installed_provider_records_reflectors_created_later(
    clock: FakeClock, provider: RecordingProvider
) -> None:
    set_metrics_provider(provider)
    lw = FakeListerWatcher(resource="configmaps")
    reflector = Reflector(lw, RecordingStore(), clock=clock, use_watch_list=False)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    assert provider.value("reflector_lists_total", "configmaps") == 1
    assert "configmaps" in provider.heard
    await stop(task)


@pytest.mark.usefixtures("restore_installed_provider")
async def test_a_workqueue_only_provider_still_serves_queues_and_reflectors_ignore_it(
    clock: FakeClock,
) -> None:
    workqueue_only = WorkqueueOnlyProvider()
    set_metrics_provider(workqueue_only)
    lw = FakeListerWatcher(objects=[pod("a")])
    reflector = Reflector(lw, RecordingStore(), clock=clock)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    lw.add(pod("b"))
    lw.drop_watches()
    await lw.wait_for_watch_calls(2)
    await stop(task)

    async with WorkQueue[str](name="q", clock=clock) as queue:
        queue.add("x")
    assert workqueue_only.names[0] == "q"
    assert workqueue_only.recorded.value >= 1


@pytest.mark.usefixtures("restore_installed_provider")
async def test_a_provider_without_the_workqueue_protocol_leaves_queues_unrecorded(
    clock: FakeClock, provider: RecordingProvider
) -> None:
    set_metrics_provider(provider)
    async with WorkQueue[str](name="q", clock=clock) as queue:
        queue.add("x")
        assert await queue.get() == "x"
        queue.done("x")
        assert not queue._metrics.enabled


@pytest.mark.usefixtures("restore_installed_provider")
async def test_an_informer_records_under_its_name_through_the_installed_provider(
    clock: FakeClock, provider: RecordingProvider
) -> None:
    set_metrics_provider(provider)
    source = FakeListerWatcher(namespace="ns", objects=[pod("a")])
    informer = SharedIndexInformer(
        source, clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await source.wait_for_watchers(1)
        assert provider.value("reflector_lists_total", "pods ns=ns") == 1
        assert provider.heard["pods ns=ns"]() == 0.0


async def test_a_watch_ended_early_by_a_failed_resync_is_not_a_short_watch(
    clock: FakeClock, provider: RecordingProvider
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    store = RecordingStore()
    store.resync_error_on = 1
    reflector = Reflector(lw, store, clock=clock, resync_period=0.5, metrics_provider=provider)
    task = spawn(reflector.list_and_watch())
    await lw.wait_for_watchers(1)
    await clock.advance(0.5)
    await asyncio.wait_for(task, 5)  # a failed resync ends the round
    assert provider.metric("reflector_watch_duration_seconds", "pods").observations == [0.5]
    assert provider.value("reflector_short_watches_total", "pods") == 0
