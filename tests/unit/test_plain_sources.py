"""Sources written to the plain ``ListerWatcher`` contract, as a user writes one from the
docs: they sync with the default settings, streaming lists are asked only of sources that
declare them, and an ``ERROR`` event such a source yields (rather than raises) is acted on
exactly as the error it carries.

:class:`PlainSource` stands in for such a source: ``list`` and ``watch`` over a
:class:`FakeListerWatcher`, forwarding only what the plain contract needs, so a watch from
``""`` replays the current objects as ``ADDED`` events and no bookmark ever comes, as
from kube-apiserver before streaming lists or from a hand-written source. With
``yield_errors`` it hands an ``ERROR`` out as an event, as client-go's ``watch.Interface``
and most Python clients do. :class:`IgnoringSource` is the same source *declaring*
streaming lists it does not serve (a proxy that drops ``sendInitialEvents``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._kernel.backoff import Backoff
from aioinformer.errors import ApiError, Forbidden, Gone, ServerError, TooManyRequests, WatchError
from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import (
    DescribedListerWatcher,
    ListOptions,
    ObjectList,
    SourceInfo,
    WatchEvent,
    source_info,
)
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.reflector import (
    DEADLINE_TICKS,
    DEFAULT_WATCH_INACTIVITY_TIMEOUT,
    INITIAL_EVENTS_GRACE,
    Reflector,
    ReflectorState,
)
from aioinformer.testing import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_reflector import RecordingStore
from tests._support_tasks import stop
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.informer import CacheMode

TICK = DEFAULT_WATCH_INACTIVITY_TIMEOUT / DEADLINE_TICKS


def pod(name: str, phase: str = "Pending") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "status": {"phase": phase},
    }


class PlainSource:
    """A ``ListerWatcher`` that declares nothing: ``list`` and ``watch``, nothing else."""

    def __init__(self, server: FakeListerWatcher, *, yield_errors: bool = False) -> None:
        self.server = server
        self.yield_errors = yield_errors
        self.error_object: Any = None
        """When set, the next ``ERROR`` is yielded with this object instead of its Status."""

    async def list(self, options: ListOptions) -> ObjectList:
        return await self.server.list(
            ListOptions(
                resource_version=options.resource_version,
                limit=options.limit,
                continue_=options.continue_,
            )
        )

    async def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        stream = self.server.watch(
            ListOptions(
                resource_version=options.resource_version,
                timeout_seconds=options.timeout_seconds,
            )
        )
        try:
            async for event in stream:
                yield event
        except ApiError as error:
            if not self.yield_errors:
                raise
            obj, self.error_object = self.error_object or error.status, None
            yield WatchEvent("ERROR", obj)
            # Some adapted sources keep the stream open after an ERROR: it is up to the
            # reader to act on it, never to wait for more.
            await asyncio.Event().wait()
        finally:
            await stream.aclose()  # type: ignore[attr-defined]


class IgnoringSource(PlainSource, DescribedListerWatcher):
    """A source declaring streaming lists whose watch serves them as a plain watch."""

    def describe(self) -> SourceInfo:
        return SourceInfo(resource="pods", namespace="default", watch_list=True)


def requests(server: FakeListerWatcher) -> list[tuple[str, str | None, bool]]:
    """What reached the server: (verb, resourceVersion, asked for initial events)."""
    return [
        (verb, options.resource_version, bool(options.send_initial_events))
        for verb, options in server.requests
    ]


# ----------------------------------------------------------------- declarations


def test_a_plain_source_declares_nothing_and_is_named_after_its_class() -> None:
    info = source_info(PlainSource(FakeListerWatcher()))

    assert info == SourceInfo(resource="PlainSource")
    assert info.watch_list is False
    assert info.namespace is None


def test_what_our_sources_declare_names_their_informers() -> None:
    fake = FakeListerWatcher(resource="configmaps", namespace="kube-system")

    assert source_info(fake) == SourceInfo(
        resource="configmaps", namespace="kube-system", watch_list=True
    )
    assert SharedIndexInformer(fake).name == "configmaps ns=kube-system"
    assert SharedIndexInformer(PlainSource(fake)).name == "PlainSource"
    described = SourceInfo(
        resource="apps/v1/deployments",
        namespace="web",
        label_selector="app=web",
        field_selector="metadata.name=front",
        metadata_only=True,
    )
    assert described.label == (
        "apps/v1/deployments ns=web l=app=web f=metadata.name=front metadata-only"
    )


def test_a_source_infos_old_describe_warns_and_gives_its_label() -> None:
    info = SourceInfo(resource="pods", namespace="default")
    with pytest.warns(DeprecationWarning, match=r"SourceInfo.label") as record:
        assert info.describe() == info.label == "pods ns=default"
    assert {warning.filename for warning in record} == {__file__}


async def test_two_running_informers_never_share_a_name() -> None:
    first = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]), clock=FakeClock())
    second = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]), clock=FakeClock())
    assert first.name == second.name == "pods"
    async with first, second:
        assert first.name == "pods"
        assert second.name == "pods #2"
    third = SharedIndexInformer(FakeListerWatcher(), clock=FakeClock())
    async with third:
        # Both stopped: the name is free again.
        assert third.name == "pods"


# ----------------------------------------------------------------- syncing


async def test_a_plain_source_syncs_with_the_default_settings(cache: CacheMode) -> None:
    server = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(PlainSource(server), clock=FakeClock(), cache=cache)
    async with informer:
        # No time passes on the informer's clock: nothing waits for a grace or a deadline.
        assert await informer.wait_for_sync(timeout=5)
        server.add(pod("c"))
        await wait_until(lambda: informer.lister().get("c", namespace="default") is not None)

    assert requests(server) == [("list", "0", False), ("watch", "2", False)]
    assert sorted(informer.indexer.list_keys()) == ["default/a", "default/b", "default/c"]
    assert informer.name == "PlainSource"


async def test_a_source_that_declares_streaming_lists_but_ignores_them_syncs_after_the_grace(
    cache: CacheMode,
) -> None:
    clock = FakeClock()
    server = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(IgnoringSource(server), clock=clock, cache=cache)
    async with informer:
        await server.wait_for_watchers(1)
        await clock.settle()
        # The replayed objects came, then nothing: no bookmark of either kind.
        await clock.advance(INITIAL_EVENTS_GRACE)
        assert not informer.has_synced()
        assert requests(server) == [("watch", "", False)]

        await clock.advance(2 * TICK)
        assert await informer.wait_for_sync(timeout=5)
        server.add(pod("c"))
        await wait_until(lambda: len(informer.indexer) == 3)

    assert requests(server) == [("watch", "", False), ("list", "0", False), ("watch", "2", False)]
    assert sorted(informer.indexer.list_keys()) == ["default/a", "default/b", "default/c"]


async def test_a_streaming_list_of_events_without_bookmarks_falls_back_within_the_grace() -> None:
    clock = FakeClock()
    server = FakeListerWatcher(objects=[pod("a")])
    store = RecordingStore()
    errors: list[BaseException] = []
    reflector = Reflector(
        IgnoringSource(server),
        store,
        clock=clock,
        watch_error_handler=lambda r, e: errors.append(e),
    )
    task = asyncio.create_task(reflector.list_and_watch())
    await server.wait_for_watchers(1)
    await clock.settle()
    await clock.advance(TICK)
    server.add(pod("b"))  # events keep the stream alive: the grace runs from the last
    await clock.advance(INITIAL_EVENTS_GRACE)
    assert reflector.state is ReflectorState.LISTING
    await clock.advance(2 * TICK)
    await wait_until(lambda: reflector.state is ReflectorState.WATCHING)

    assert requests(server) == [("watch", "", False), ("list", "0", False), ("watch", "2", False)]
    assert store.calls == [("replace", ["default/a", "default/b"], "2")]
    assert [type(e).__name__ for e in errors] == ["InitialEventsIgnored"]
    assert "2 events and no bookmark" in str(errors[0])
    await stop(task)


# ----------------------------------------------------------------- retries


async def test_a_forbidden_source_costs_one_request_per_retry_then_streams_again() -> None:
    clock = FakeClock()
    server = FakeListerWatcher(objects=[pod("a")])
    forbidden = Forbidden({"code": 403, "reason": "Forbidden", "message": "pods is forbidden"})
    server.fail_next_watch(forbidden)
    server.fail_next_list(forbidden, forbidden, forbidden)
    reflector = Reflector(
        server, RecordingStore(), clock=clock, backoff=Backoff(jitter=0.0, clock=clock)
    )
    task = asyncio.create_task(reflector.run())
    while server.open_watches == 0:
        await wait_until(
            lambda: reflector.state is ReflectorState.BACKING_OFF or server.open_watches > 0
        )
        if server.open_watches == 0:
            await clock.advance_to_next()

    # The first round: the streaming attempt, then its fallback LIST. Each retry: a LIST.
    assert requests(server) == [
        ("watch", "", True),
        ("list", "0", False),
        ("list", "0", False),
        ("list", "0", False),
        ("list", "0", False),
        ("watch", "1", False),
    ]
    server.send_error(Gone({"code": 410, "reason": "Expired", "message": "too old"}))
    # run() backs off before it relists.
    await wait_until(lambda: len(server.watch_calls) == 3, between=clock.advance_to_next)
    # The source answered a watch: the relist tries streaming again.
    assert requests(server)[-1] == ("watch", "1", True)
    await stop(task)


# ----------------------------------------------------------------- ERROR events


def status(code: int, reason: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": f"{code} {reason}",
    }
    if details:
        body["details"] = details
    return body


async def start_watching(
    server: FakeListerWatcher, clock: FakeClock, errors: list[BaseException]
) -> tuple[Reflector, RecordingStore, asyncio.Task[None]]:
    """A reflector over a plain source yielding ERROR events, watching after one event."""
    store = RecordingStore()
    reflector = Reflector(
        PlainSource(server, yield_errors=True),
        store,
        clock=clock,
        backoff=Backoff(jitter=0.0, clock=clock),
        watch_error_handler=lambda r, e: errors.append(e),
    )
    task = asyncio.create_task(reflector.list_and_watch())
    await server.wait_for_watchers(1)
    server.add(pod("b"))
    await wait_until(lambda: reflector.last_sync_resource_version == "2")
    return reflector, store, task


async def test_a_yielded_410_relists_from_the_last_resource_version() -> None:
    clock = FakeClock()
    server = FakeListerWatcher(objects=[pod("a")])
    errors: list[BaseException] = []
    reflector, _, task = await start_watching(server, clock, errors)

    server.send_error(status(410, "Expired"))
    await asyncio.wait_for(task, timeout=5)  # the round ends: run() relists

    assert [type(e) for e in errors] == [Gone]
    assert requests(server) == [("list", "0", False), ("watch", "1", False)]
    relist = asyncio.create_task(reflector.list_and_watch())
    await server.wait_for_watchers(1)
    assert requests(server)[2] == ("list", "2", False)
    await stop(relist)


async def test_a_yielded_429_backs_off_and_watches_again_without_a_relist() -> None:
    clock = FakeClock()
    server = FakeListerWatcher(objects=[pod("a")])
    errors: list[BaseException] = []
    reflector, _, task = await start_watching(server, clock, errors)

    server.send_error(status(429, "TooManyRequests", retryAfterSeconds=3))
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    await clock.advance(2.9)
    assert server.open_watches == 0
    await clock.advance(0.1)
    await server.wait_for_watchers(1)

    assert [type(e) for e in errors] == [TooManyRequests]
    assert requests(server) == [("list", "0", False), ("watch", "1", False), ("watch", "2", False)]
    assert not task.done()
    await stop(task)


async def test_a_yielded_500_ends_the_watch_and_relists(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    server = FakeListerWatcher(objects=[pod("a")])
    errors: list[BaseException] = []
    _, _, task = await start_watching(server, clock, errors)

    with caplog.at_level(logging.WARNING, logger="aioinformer.reflector"):
        server.send_error(status(500, "InternalError"))
        await asyncio.wait_for(task, timeout=5)

    assert [type(e) for e in errors] == [ServerError]
    assert "500 InternalError" in caplog.text
    assert "skipped" not in caplog.text


async def test_a_yielded_error_without_a_status_ends_the_watch_as_a_broken_stream() -> None:
    clock = FakeClock()
    server = FakeListerWatcher(objects=[pod("a")])
    errors: list[BaseException] = []
    reflector, _, task = await start_watching(server, clock, errors)
    plain = reflector._lw
    assert isinstance(plain, PlainSource)

    plain.error_object = {"message": "the proxy lost its upstream"}
    server.send_error(status(500, "InternalError"))
    await server.wait_for_watch_calls(2)
    await server.wait_for_watchers(1)

    assert [type(e) for e in errors] == [WatchError]
    assert "without a Status" in str(errors[0])
    assert "the proxy lost its upstream" in str(errors[0])
    # An established stream that broke: watched again from where it was, no relist.
    assert requests(server) == [("list", "0", False), ("watch", "1", False), ("watch", "2", False)]
    await stop(task)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        pytest.param(410, "Expired", id="410"),
        pytest.param(429, "TooManyRequests", id="429"),
        pytest.param(500, "InternalError", id="500"),
        pytest.param(0, "", id="no-status"),
    ],
)
async def test_an_informer_repairs_what_a_yielded_error_made_it_miss(
    cache: CacheMode, code: int, reason: str
) -> None:
    # Whatever the ERROR says, the informer acts at once (a 429 and a Status-less one by
    # watching again, which the compacted history answers with a 410) and converges,
    # where skipping it would have waited out the watch's 120 s silence deadline.
    server = FakeListerWatcher(objects=[pod("a"), pod("b")])
    clock = FakeClock()
    source = PlainSource(server, yield_errors=True)
    informer = SharedIndexInformer(source, clock=clock, cache=cache)
    deleted: list[Any] = []
    informer.add_event_handler(on_delete=deleted.append)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await server.wait_for_watchers(1)
        server.delete("default/b", notify=False)  # the stream missed this delete
        server.modify(pod("a", "Running"), notify=False)
        server.compact()  # only a relist can bring what was missed
        if not code:
            source.error_object = "connection to the upstream lost"
        server.send_error(status(code or 500, reason or "InternalError", retryAfterSeconds=1))
        # run() backs off (0.8 s with jitter) before it relists: move the clock along, by
        # far less than the watch's 120 s silence deadline.
        for _ in range(10):
            await clock.advance(0.5)
        await wait_until(lambda: len(informer.indexer) == 1)
        await wait_until(lambda: len(deleted) == 1)

    cached = informer.lister().get("a", namespace="default")
    assert cached is not None
    assert cached["status"]["phase"] == "Running"
    assert isinstance(deleted[0], DeletedFinalStateUnknown)
    assert deleted[0].key == "default/b"
