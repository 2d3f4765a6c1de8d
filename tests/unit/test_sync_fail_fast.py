"""Waits for cache sync that fail fast: a first list failing in a way no retry alone heals
(an unknown resource, a 401 or 403, a refused connection) makes ``wait_for_sync``, the
module's ``wait_for_cache_sync`` and a Controller's start raise one ``CacheSyncError``
carrying it as ``cause`` at once, while the informer keeps retrying; ``fail_fast=False``
waits for the retry that succeeds. A wait on an informer never started raises at once.

Informers read from in-memory FakeListerWatchers on a FakeClock: the backoff between
attempts is the clock's, so nothing here sleeps for real.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aioinformer.errors import (
    CacheSyncError,
    ConfigError,
    ConnectionFailed,
    Forbidden,
    NotFound,
    ServerError,
    TLSVerificationError,
    TooManyRequests,
    TransportError,
    Unauthorized,
    UnknownResourceError,
    WatchError,
    fails_until_fixed,
)
from aioinformer.informer import SharedIndexInformer, wait_for_cache_sync
from aioinformer.operator.controller import Controller
from aioinformer.reflector import ReflectorOptions
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test

FORBIDDEN = Forbidden({"code": 403, "reason": "Forbidden", "message": "pods is forbidden"})
PLAIN_LISTS = ReflectorOptions(use_watch_list=False)


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": "1"}}


def informer_failing(*errors: BaseException) -> tuple[SharedIndexInformer, FakeClock]:
    """An informer whose first lists fail with ``errors``; the next one succeeds."""
    source = FakeListerWatcher(objects=[pod("a")], resource="pods", namespace="default")
    source.fail_next_list(*errors)
    clock = FakeClock()
    return SharedIndexInformer(source, clock=clock, reflector=PLAIN_LISTS), clock


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        pytest.param(UnknownResourceError("no widgets"), True, id="unknown-resource"),
        pytest.param(NotFound({"code": 404}), True, id="404"),
        pytest.param(Unauthorized({"code": 401}), True, id="401"),
        pytest.param(FORBIDDEN, True, id="403"),
        pytest.param(ConnectionFailed("refused", refused=True), True, id="refused"),
        pytest.param(ConnectionRefusedError(), True, id="builtin-refused"),
        pytest.param(TLSVerificationError("bad certificate"), True, id="tls"),
        pytest.param(ConfigError("token file gone"), True, id="config"),
        pytest.param(ConnectionFailed("timed out"), False, id="connect-timeout"),
        pytest.param(TooManyRequests({"code": 429}), False, id="429"),
        pytest.param(ServerError({"code": 503}), False, id="503"),
        pytest.param(WatchError("truncated"), False, id="broken-stream"),
        pytest.param(TransportError("bad JSON"), False, id="transport"),
        pytest.param(RuntimeError("bug"), False, id="other"),
    ],
)
def test_fails_until_fixed_tells_lasting_failures_from_passing_ones(
    error: BaseException, expected: bool
) -> None:
    assert fails_until_fixed(error) is expected


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(FORBIDDEN, id="403"),
        pytest.param(Unauthorized({"code": 401, "message": "Unauthorized"}), id="401"),
        pytest.param(UnknownResourceError("no resource named 'pods'"), id="unknown"),
        pytest.param(ConnectionFailed("connection refused", refused=True), id="refused"),
    ],
)
async def test_wait_for_sync_raises_the_lasting_failure_at_once(error: BaseException) -> None:
    informer, _ = informer_failing(error)
    async with informer:
        with pytest.raises(CacheSyncError) as caught:
            # Without failing fast this would return False at its timeout.
            await informer.wait_for_sync(timeout=0.5)
        assert not informer.has_synced()
    failure = caught.value
    assert failure.cause is error
    assert failure.__cause__ is error
    assert failure.timeout is None
    assert [(r.resource, r.namespace, r.last_error) for r in failure.unsynced] == [
        ("pods", "default", error)
    ]


async def test_the_error_names_the_resource_namespace_and_cause() -> None:
    informer, _ = informer_failing(FORBIDDEN)
    async with informer:
        with pytest.raises(CacheSyncError) as caught:
            await informer.wait_for_sync()
    assert (
        str(caught.value) == "caches cannot sync: pods in default: 403 Forbidden: pods is forbidden"
    )


async def test_a_failure_a_retry_may_heal_is_waited_out() -> None:
    informer, _ = informer_failing(ServerError({"code": 503}))
    async with informer:
        assert await informer.wait_for_sync(timeout=0.05) is False


async def test_without_fail_fast_the_wait_sees_the_retry_succeed() -> None:
    informer, clock = informer_failing(FORBIDDEN, FORBIDDEN)
    async with informer:
        waiting = asyncio.create_task(informer.wait_for_sync(fail_fast=False))
        # The two backoffs between the failed lists: the third list succeeds.
        for _ in range(2):
            await clock.wait_for_sleepers(1)
            await clock.advance(60)
        assert await asyncio.wait_for(waiting, timeout=0.5)


async def test_a_later_wait_after_the_fix_returns_true() -> None:
    informer, clock = informer_failing(FORBIDDEN)
    async with informer:
        with pytest.raises(CacheSyncError):
            await informer.wait_for_sync()
        # The informer retries after its backoff, and this list succeeds.
        await clock.wait_for_sleepers(1)
        await clock.advance(60)
        assert await informer.wait_for_sync(timeout=0.5)


async def test_the_reflector_records_the_blocker_until_a_list_succeeds() -> None:
    informer, clock = informer_failing(FORBIDDEN)
    async with informer:
        with pytest.raises(CacheSyncError):
            await informer.wait_for_sync()
        reflector = informer._reflector
        assert reflector is not None
        assert reflector.sync_blocker is FORBIDDEN
        await clock.wait_for_sleepers(1)
        await clock.advance(60)
        assert await informer.wait_for_sync(timeout=0.5)
        assert reflector.sync_blocker is None


async def test_wait_for_cache_sync_raises_the_cause_and_can_wait_it_out() -> None:
    informer, clock = informer_failing(FORBIDDEN)
    async with informer:
        with pytest.raises(
            CacheSyncError, match=r"^caches cannot sync: pods in default: 403"
        ) as caught:
            await wait_for_cache_sync(informer, timeout=300, clock=clock)
        assert caught.value.cause is FORBIDDEN
        waiting = asyncio.create_task(wait_for_cache_sync(informer, fail_fast=False))
        await clock.wait_for_sleepers(1)
        await clock.advance(60)
        await asyncio.wait_for(waiting, timeout=0.5)


async def test_wait_for_cache_sync_names_the_other_unsynced_informers_too() -> None:
    blocked, clock = informer_failing(FORBIDDEN)
    slow = SharedIndexInformer(
        FakeListerWatcher(resource="configmaps"), clock=clock, reflector=PLAIN_LISTS
    )
    slow.lister_watcher.stall_next_list()  # type: ignore[attr-defined]
    async with blocked, slow:
        with pytest.raises(CacheSyncError) as caught:
            await wait_for_cache_sync(blocked, slow, timeout=300, clock=clock)
    assert str(caught.value) == (
        "caches cannot sync: pods in default: 403 Forbidden: pods is forbidden; "
        "configmaps (all namespaces): no error yet"
    )
    assert [r.resource for r in caught.value.unsynced] == ["pods", "configmaps"]


async def test_a_controller_fails_its_start_at_once_with_the_cause() -> None:
    informer, clock = informer_failing(FORBIDDEN)
    controller = Controller("pods", lambda key: None, informers=[informer], clock=clock)
    async with informer:
        with pytest.raises(CacheSyncError) as caught:
            await asyncio.wait_for(controller.run(), timeout=0.5)
    assert caught.value.cause is FORBIDDEN
    assert controller.statistics().sync_error is caught.value


async def test_a_controller_without_fail_fast_starts_once_the_retry_succeeds() -> None:
    informer, clock = informer_failing(FORBIDDEN)
    reconciled = asyncio.Event()

    def reconcile(key: str) -> None:
        reconciled.set()

    controller = Controller(
        "pods", reconcile, informers=[informer], clock=clock, cache_sync_fail_fast=False
    )
    async with controller, informer:
        await clock.wait_for_sleepers(2)  # the controller's sync timeout, the list backoff
        await clock.advance(60)
        await asyncio.wait_for(reconciled.wait(), timeout=0.5)


async def test_waits_on_an_informer_never_started_raise_at_once() -> None:
    informer = SharedIndexInformer(FakeListerWatcher(resource="pods"), clock=FakeClock())
    with pytest.raises(RuntimeError, match=r"^informer pods was never started: use 'async with"):
        await informer.wait_for_sync()
    with pytest.raises(RuntimeError, match="before waiting for a resourceVersion"):
        await informer.wait_for_resource_version("5")


async def test_a_run_scheduled_just_before_the_wait_counts_as_started() -> None:
    informer = SharedIndexInformer(
        FakeListerWatcher(objects=[pod("a")]), clock=FakeClock(), reflector=PLAIN_LISTS
    )
    run = asyncio.create_task(informer.run())
    try:
        assert await informer.wait_for_sync(timeout=0.5)
        assert await informer.wait_for_resource_version("1", timeout=0.5)
    finally:
        informer.stop()
        await run


async def test_a_failure_that_may_heal_after_a_lasting_one_clears_the_blocker() -> None:
    informer, clock = informer_failing(FORBIDDEN, ServerError({"code": 503}))
    async with informer:
        with pytest.raises(CacheSyncError):
            await informer.wait_for_sync()
        reflector = informer._reflector
        assert reflector is not None
        await clock.wait_for_sleepers(1)
        await clock.advance_to_next()  # the next list: a 503, which a retry may get past
        await clock.wait_for_sleepers(1)  # its backoff
        assert reflector.statistics().last_error is not None
        assert reflector.statistics().last_error.__class__ is ServerError
        assert reflector.sync_blocker is None
        assert await informer.wait_for_sync(timeout=0.01) is False
