"""``SharedIndexInformer.health()`` over a ``FakeListerWatcher`` on a ``FakeClock``: live
after sync, not live through a silent stream from three quarters of the deadline until the
re-watch, live across an idle stream that gets a bookmark a minute, and the error,
relist and re-watch figures; plus the ``FactoryHealth`` aggregation rules."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import Forbidden, Gone, WatchTimeout, describe_error
from aioinformer.health import FactoryHealth, InformerHealth
from aioinformer.reflector import ReflectorState
from tests._support_health import DEADLINE, WINDOW, pod
from tests._support_health import clock as clock
from tests._support_health import informer as informer
from tests._support_health import list_informer as list_informer
from tests._support_health import lw as lw
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.informer import SharedIndexInformer
    from aioinformer.testing.clock import FakeClock
    from aioinformer.testing.lister_watcher import FakeListerWatcher


@pytest.fixture
async def running(informer: SharedIndexInformer) -> AsyncIterator[SharedIndexInformer]:
    async with informer:
        yield informer


async def synced(informer: SharedIndexInformer, lw: FakeListerWatcher) -> None:
    assert await informer.wait_for_sync(timeout=5)
    await lw.wait_for_watchers(1)


async def test_an_informer_not_started_is_neither_synced_nor_live(
    informer: SharedIndexInformer,
) -> None:
    health = informer.health()
    assert health == InformerHealth(
        name="pods ns=ns",
        resource="pods",
        namespace="ns",
        started=False,
        stopped=False,
        synced=False,
        live=False,
        state=ReflectorState.STOPPED,
        seconds_since_heard=None,
        liveness_window=None,
        last_error=None,
        relists=0,
        watch_restarts=0,
        cache_size=0,
    )


async def test_a_synced_watching_informer_is_live(
    running: SharedIndexInformer, lw: FakeListerWatcher
) -> None:
    await synced(running, lw)
    health = running.health()
    assert (health.started, health.synced, health.live, health.stopped) == (True, True, True, False)
    assert health.state is ReflectorState.WATCHING
    assert health.seconds_since_heard == 0.0
    assert health.liveness_window == WINDOW
    assert health.cache_size == 2
    assert health.as_dict() == {
        "name": "pods ns=ns",
        "resource": "pods",
        "namespace": "ns",
        "started": True,
        "stopped": False,
        "synced": True,
        "live": True,
        "state": "WATCHING",
        "seconds_since_heard": 0.0,
        "liveness_window": WINDOW,
        "last_error": None,
        "relists": 0,
        "watch_restarts": 0,
        "cache_size": 2,
        "index_errors": 0,
        "unindexed": 0,
        "last_index_error": None,
    }


async def test_a_silent_stream_is_not_live_from_three_quarters_of_the_deadline_to_the_rewatch(
    list_informer: SharedIndexInformer, lw: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = list_informer
    lw.stall_next_watch()
    async with informer as running:
        await synced(running, lw)

        await clock.advance(WINDOW)
        assert running.health().live
        await clock.advance(1.0)
        health = running.health()
        assert not health.live
        assert health.synced
        assert health.state is ReflectorState.WATCHING  # the reflector has not given up yet
        assert health.seconds_since_heard == WINDOW + 1.0

        await clock.advance(DEADLINE - WINDOW)  # the deadline passes: re-watched
        await lw.wait_for_watch_calls(2)
        await lw.wait_for_watchers(1)
        health = running.health()
        assert health.live
        assert health.watch_restarts == 1
        assert health.relists == 0
        assert health.last_error is not None
        assert health.last_error.startswith("WatchTimeout: watch sent nothing for ")

        for _ in range(3):  # and it stays live as long as the new stream talks
            await clock.advance(WINDOW - 10.0)
            lw.add(pod(f"p{clock.monotonic():g}"))
            await clock.advance(10.0)
            assert running.health().live
        assert running.health().watch_restarts == 1


async def test_an_idle_watch_with_a_bookmark_a_minute_stays_live(
    running: SharedIndexInformer, lw: FakeListerWatcher, clock: FakeClock
) -> None:
    await synced(running, lw)
    for second in range(5, 601, 5):  # ten minutes, looked at every five seconds
        await clock.advance(5.0)
        if second % 60 == 0:
            lw.send_bookmark()
        assert running.health().live, f"not live at {second}s"
    health = running.health()
    assert (health.watch_restarts, health.relists) == (0, 0)
    assert len(lw.watch_calls) == 1


async def test_a_forbidden_list_shows_as_last_error_and_the_informer_is_not_live(
    list_informer: SharedIndexInformer, lw: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = list_informer
    forbidden = Forbidden(
        {"code": 403, "reason": "Forbidden", "message": 'pods is forbidden: User "x" cannot list'}
    )
    lw.fail_next_list(forbidden)
    async with informer as running:
        await wait_until(lambda: running.health().state is ReflectorState.BACKING_OFF)
        health = running.health()
        assert health.last_error == '403 Forbidden: pods is forbidden: User "x" cannot list'
        assert (health.synced, health.live, health.seconds_since_heard) == (False, False, None)

        await clock.advance_to_next()
        await synced(running, lw)
        health = running.health()
        assert health.live
        assert health.last_error == '403 Forbidden: pods is forbidden: User "x" cannot list'


async def test_relists_and_watch_restarts_are_counted(
    running: SharedIndexInformer, lw: FakeListerWatcher, clock: FakeClock
) -> None:
    await synced(running, lw)
    lw.add(pod("c"))
    lw.drop_watches()  # ended after an event: re-watched without a relist
    await lw.wait_for_watch_calls(2)
    await lw.wait_for_watchers(1)
    assert (running.health().watch_restarts, running.health().relists) == (1, 0)

    lw.send_error(Gone({"code": 410, "reason": "Expired", "message": "too old"}))
    await wait_until(lambda: running.health().state is ReflectorState.BACKING_OFF)
    assert not running.health().live
    await clock.advance_to_next()
    await wait_until(lambda: running.health().relists == 1)
    await lw.wait_for_watchers(1)
    health = running.health()
    assert (health.watch_restarts, health.relists, health.live) == (1, 1, True)
    assert health.last_error == "410 Expired: too old"


async def test_a_stopped_informer_is_not_live(
    informer: SharedIndexInformer, lw: FakeListerWatcher
) -> None:
    async with informer:
        await synced(informer, lw)
    health = informer.health()
    assert (health.started, health.stopped, health.synced, health.live) == (
        True,
        True,
        True,
        False,
    )
    assert health.state is ReflectorState.STOPPED


def record(name: str, *, started: bool = True, stopped: bool = False, live: bool = True) -> Any:
    return InformerHealth(
        name=name,
        resource=name,
        namespace=None,
        started=started,
        stopped=stopped,
        synced=live,
        live=live,
        state=ReflectorState.WATCHING if live else ReflectorState.BACKING_OFF,
        seconds_since_heard=1.0 if live else None,
        liveness_window=WINDOW if live else None,
        last_error=None,
        relists=0,
        watch_restarts=0,
        cache_size=0,
    )


@pytest.mark.parametrize(
    ("records", "options", "ready", "live"),
    [
        pytest.param({}, {"started": False}, False, True, id="not-started-empty"),
        pytest.param({"a": record("a")}, {"started": False}, False, True, id="not-started"),
        pytest.param({}, {"started": True}, True, True, id="started-empty"),
        pytest.param({"a": record("a"), "b": record("b")}, {}, True, True, id="all-live"),
        pytest.param({"a": record("a"), "b": record("b", live=False)}, {}, False, True, id="stale"),
        pytest.param({"a": record("a", started=False)}, {}, False, True, id="informer-not-started"),
        pytest.param(
            {"a": record("a"), "b": record("b", stopped=True, live=False)},
            {},
            False,
            False,
            id="one-stopped",
        ),
        pytest.param(
            {"a": record("a", stopped=True, live=False)},
            {"started": True, "stopping": True},
            False,
            True,
            id="shutting-down",
        ),
    ],
)
def test_factory_health_is_ready_when_all_are_live_and_live_unless_one_stopped(
    records: dict[str, InformerHealth], options: dict[str, bool], ready: bool, live: bool
) -> None:
    health = FactoryHealth.of(records, **options)
    assert (health.ready, health.live) == (ready, live)
    with pytest.raises(TypeError):
        health.informers["x"] = record("x")  # type: ignore[index]
    assert health.as_dict() == {
        "ready": ready,
        "live": live,
        "started": health.started,
        "informers": {name: r.as_dict() for name, r in records.items()},
    }


@pytest.mark.parametrize(
    ("error", "text"),
    [
        pytest.param(Gone({"code": 410, "reason": "Expired"}), "410 Expired", id="api-error"),
        pytest.param(WatchTimeout("silent"), "WatchTimeout: silent", id="other"),
        pytest.param(asyncio.CancelledError(), "CancelledError", id="no-message"),
    ],
)
def test_errors_are_described_in_one_line(error: BaseException, text: str) -> None:
    assert describe_error(error) == text
