"""Sync failures that raise: ``CacheSyncError`` and its message, the module-level
``wait_for_cache_sync`` over informers, and the Controller's cache-sync timeout.

Informers read from in-memory FakeListerWatchers; every timeout runs on a FakeClock.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aioinformer import State
from aioinformer.errors import (
    AioinformerError,
    CacheSyncError,
    Forbidden,
    NotFound,
    ServerError,
    UnknownResourceError,
    UnsyncedInformer,
)
from aioinformer.informer import SharedIndexInformer, wait_for_cache_sync
from aioinformer.operator.controller import DEFAULT_CACHE_SYNC_TIMEOUT, Controller
from aioinformer.reflector import ReflectorOptions
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_tasks import settle

FORBIDDEN = Forbidden(
    {
        "code": 403,
        "reason": "Forbidden",
        "message": 'configmaps is forbidden: User "x" cannot list resource "configmaps"',
    }
)


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}}


def failing(error: BaseException, **kwargs: Any) -> FakeListerWatcher:
    """A source whose lists keep failing with ``error`` (well past any test's retries)."""
    source = FakeListerWatcher(**kwargs)
    source.fail_next_list(*[error] * 100)
    return source


# -- the error and its records -----------------------------------------------------------


def test_cache_sync_error_is_a_timeout_error_of_the_library() -> None:
    error = CacheSyncError("caches did not sync", unsynced=(), timeout=1.0)
    assert isinstance(error, AioinformerError)
    assert isinstance(error, TimeoutError)
    assert str(error) == "caches did not sync"
    assert error.timeout == 1.0


@pytest.mark.parametrize(
    ("record", "text"),
    [
        pytest.param(
            UnsyncedInformer("cm", "configmaps", "kube-system", "starting", FORBIDDEN),
            'configmaps in kube-system: 403 Forbidden: configmaps is forbidden: User "x" '
            'cannot list resource "configmaps"',
            id="api-error-reads-code-reason-message",
        ),
        pytest.param(
            UnsyncedInformer(
                "widgets",
                "widgets",
                None,
                "starting",
                UnknownResourceError("the API server has no resource named 'widgets'"),
            ),
            "widgets (all namespaces): UnknownResourceError: the API server has no resource"
            " named 'widgets'",
            id="other-error-names-its-class",
        ),
        pytest.param(
            UnsyncedInformer("p", "pods", None, "starting", None),
            "pods (all namespaces): no error yet",
            id="still-listing",
        ),
        pytest.param(
            UnsyncedInformer("p", "pods", "default", "new", None),
            "pods in default: never started",
            id="never-started",
        ),
        pytest.param(
            UnsyncedInformer("p", "pods", "default", "stopped", RuntimeError("stage ended")),
            "pods in default: stopped before it synced: RuntimeError: stage ended",
            id="stopped-with-error",
        ),
        pytest.param(
            UnsyncedInformer("p", "pods", "default", "stopped", None),
            "pods in default: stopped before it synced",
            id="stopped",
        ),
    ],
)
def test_an_unsynced_informer_describes_where_and_why(record: UnsyncedInformer, text: str) -> None:
    assert record.describe() == text


# -- wait_for_cache_sync over informers --------------------------------------------------


async def test_wait_returns_once_every_informer_synced() -> None:
    a = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]), name="a")
    b = SharedIndexInformer(FakeListerWatcher(objects=[pod("b")]), name="b")
    async with a, b:
        await wait_for_cache_sync(a, b, timeout=5)
        assert a.has_synced()
        assert b.has_synced()
        await wait_for_cache_sync(a, b, timeout=0)  # already synced: no wait at all


async def test_a_forbidden_list_raises_at_the_timeout_naming_resource_namespace_and_error() -> None:
    clock = FakeClock()
    denied = SharedIndexInformer(
        failing(FORBIDDEN, resource="configmaps", namespace="kube-system"),
        clock=clock,
        reflector=ReflectorOptions(use_watch_list=False),
    )
    fine = SharedIndexInformer(
        FakeListerWatcher(objects=[pod("a")]),
        name="fine",
        reflector=ReflectorOptions(use_watch_list=False),
    )
    async with denied, fine:
        wait = asyncio.create_task(
            wait_for_cache_sync(denied, fine, timeout=120, clock=clock, fail_fast=False)
        )
        await clock.wait_for_sleepers(2)  # the wait's timer and the reflector's backoff
        await clock.advance(119)
        assert not wait.done()
        await clock.advance(1)
        with pytest.raises(CacheSyncError) as caught:
            await wait
    error = caught.value
    assert str(error) == (
        "caches did not sync within 120s: configmaps in kube-system: 403 Forbidden: configmaps"
        ' is forbidden: User "x" cannot list resource "configmaps"'
    )
    assert error.timeout == 120
    (record,) = error.unsynced
    assert (record.name, record.resource, record.namespace) == (
        "configmaps ns=kube-system",
        "configmaps",
        "kube-system",
    )
    assert record.state == "starting"
    assert record.last_error is FORBIDDEN


async def test_an_informer_that_stops_unsynced_raises_at_once_without_a_timeout() -> None:
    source = FakeListerWatcher()
    source.stall_next_list()
    informer = SharedIndexInformer(
        source, name="stalled", reflector=ReflectorOptions(use_watch_list=False)
    )
    async with informer:
        wait = asyncio.create_task(wait_for_cache_sync(informer))
        await source.wait_for_list_calls(1)
        await settle(10)
        assert not wait.done()
    with pytest.raises(CacheSyncError, match="informer stalled stopped before it synced") as caught:
        await asyncio.wait_for(wait, timeout=5)
    assert caught.value.timeout is None
    assert [record.state for record in caught.value.unsynced] == ["stopped"]


async def test_an_informer_whose_run_failed_makes_the_wait_raise_before_the_timeout() -> None:
    def stray_cancellation(obj: dict[str, Any]) -> list[str]:
        raise asyncio.CancelledError

    clock = FakeClock()
    informer = SharedIndexInformer(
        FakeListerWatcher(objects=[pod("a")]),
        name="broken",
        clock=clock,
        indexers={"x": stray_cancellation},
    )
    run = asyncio.create_task(informer.run())
    with pytest.raises(CacheSyncError, match="informer broken stopped before it synced"):
        await asyncio.wait_for(wait_for_cache_sync(informer, timeout=120, clock=clock), 5)
    assert clock.monotonic() == 0  # not a second of the timeout went by
    with pytest.raises(RuntimeError, match="unexpectedly"):
        await run


async def test_an_informer_not_started_yet_is_waited_for_not_failed_at_once() -> None:
    clock = FakeClock()
    informer = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]), name="late")
    wait = asyncio.create_task(wait_for_cache_sync(informer, timeout=10, clock=clock))
    await clock.wait_for_sleepers(1)
    assert not wait.done()
    async with informer:  # its run begins after the wait did: the wait still succeeds
        await asyncio.wait_for(wait, timeout=5)


async def test_an_informer_never_started_is_reported_as_such_at_the_timeout() -> None:
    clock = FakeClock()
    informer = SharedIndexInformer(FakeListerWatcher(resource="pods", namespace="default"))
    wait = asyncio.create_task(wait_for_cache_sync(informer, timeout=3, clock=clock))
    await clock.wait_for_sleepers(1)
    await clock.advance(3)
    with pytest.raises(CacheSyncError) as caught:
        await wait
    assert str(caught.value) == "caches did not sync within 3s: pods in default: never started"


async def test_a_negative_timeout_is_refused() -> None:
    informer = SharedIndexInformer(FakeListerWatcher())
    with pytest.raises(ValueError, match="timeout"):
        await wait_for_cache_sync(informer, timeout=-1)


# -- the Controller's cache-sync timeout ---------------------------------------------------


async def reconcile_nothing(key: str) -> None:
    raise AssertionError(f"no reconcile may run before the caches synced: {key}")


def test_the_controller_waits_two_minutes_by_default_and_checks_the_timeout() -> None:
    assert DEFAULT_CACHE_SYNC_TIMEOUT == 120.0
    with pytest.raises(ValueError, match="cache_sync_timeout"):
        Controller("bad", reconcile_nothing, cache_sync_timeout=-1)


async def test_the_controller_raises_at_its_sync_timeout_and_never_starts_workers() -> None:
    clock = FakeClock()
    source = failing(NotFound({"code": 404, "reason": "NotFound", "message": "no widgets"}))
    informer = SharedIndexInformer(
        source, name="widgets", clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    controller = Controller(
        "widgets",
        reconcile_nothing,
        informers=[informer],
        clock=clock,
        cache_sync_fail_fast=False,
    )
    controller.enqueue("default/early")
    async with informer:
        run = asyncio.create_task(controller.run())
        await clock.wait_for_sleepers(2)  # the controller's timer and the list backoff
        await clock.advance(DEFAULT_CACHE_SYNC_TIMEOUT)
        with pytest.raises(CacheSyncError, match=r"within 120s: pods \(all namespaces\): 404"):
            await asyncio.wait_for(run, timeout=5)
    statistics = controller.statistics()
    assert statistics.state is State.STOPPED
    assert statistics.sync_error is not None
    assert statistics.sync_error.unsynced[0].name == "widgets"
    assert statistics.reconciles == 0
    assert statistics.workers == 0


async def test_a_sync_failure_ends_the_async_with_block_of_the_controller() -> None:
    clock = FakeClock()
    informer = SharedIndexInformer(
        failing(ServerError({"code": 500})),
        name="p",
        clock=clock,
        reflector=ReflectorOptions(use_watch_list=False),
    )
    controller = Controller(
        "blocked", reconcile_nothing, informers=[informer], clock=clock, cache_sync_timeout=30
    )
    forever = asyncio.Event()

    async def serve() -> None:
        async with controller:
            await clock.wait_for_sleepers(2)
            await clock.advance(30)
            await forever.wait()  # a body that only waits for a stop signal

    async with informer:
        with pytest.raises(CacheSyncError, match="within 30s"):
            await serve()
        task = asyncio.current_task()
        assert task is not None
        assert task.cancelling() == 0  # the block's own cancellation was taken back
    assert controller.statistics().sync_error is not None


async def test_a_controller_without_a_sync_timeout_waits_as_long_as_it_takes() -> None:
    clock = FakeClock()
    source = failing(ServerError({"code": 500}))
    informer = SharedIndexInformer(
        source, name="slow", clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    controller = Controller(
        "patient", reconcile_nothing, informers=[informer], clock=clock, cache_sync_timeout=None
    )
    async with informer, controller:
        await clock.wait_for_sleepers(1)
        await clock.advance(10 * DEFAULT_CACHE_SYNC_TIMEOUT)
        await settle(10)
        state: State = controller.state
        assert state is State.STARTING
    assert controller.statistics().sync_error is None
