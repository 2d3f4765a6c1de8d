"""Manager pieces that need no API server: argument checks, the runnable group's graceful
stop on a fake clock, the address parser, and the metrics endpoint's dependency."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from aioinformer import State
from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.errors import CacheSyncError
from aioinformer.operator._endpoints import parse_address
from aioinformer.operator._runnables import Runnable, RunnableGroup
from aioinformer.operator.controller import Controller
from aioinformer.operator.manager import LeaderElection, Manager, default_identity
from aioinformer.testing.clock import FakeClock
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_tasks import settle
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Coroutine


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    # Never sent a request: these tests stop before any informer lists.
    async with Client(Config(host="http://127.0.0.1:1", token="t")) as client:
        yield client


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:8081", ("127.0.0.1", 8081)),
        (":8080", ("0.0.0.0", 8080)),
        ("[::1]:0", ("::1", 0)),
    ],
    ids=["host-port", "all-interfaces", "ipv6"],
)
def test_parse_address_reads_host_and_port(address: str, expected: tuple[str, int]) -> None:
    assert parse_address(address, option="health_address") == expected


@pytest.mark.parametrize("address", ["8081", "host:", "host:http", "host:70000", ""])
def test_parse_address_refuses_what_is_not_host_port(address: str) -> None:
    with pytest.raises(ValueError, match="health_address must be 'host:port'"):
        parse_address(address, option="health_address")


def test_leader_election_defaults_to_client_go_timings_and_a_unique_identity() -> None:
    first = LeaderElection(lease_name="ops")
    second = LeaderElection(lease_name="ops")
    assert (first.lease_duration, first.renew_deadline, first.retry_period) == (15, 10, 2)
    assert first.release_on_cancel is True
    assert first.identity != second.identity
    assert default_identity().count("_") >= 1


def test_leader_election_refuses_an_empty_lease_name() -> None:
    with pytest.raises(ValueError, match="lease_name is empty"):
        LeaderElection(lease_name="")


def test_manager_checks_election_timings_at_construction(client: Client) -> None:
    bad = LeaderElection(lease_name="ops", lease_duration=5, renew_deadline=10)
    with pytest.raises(ValueError, match="lease_duration must be greater than renew_deadline"):
        Manager(client, leader_election=bad)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("cache_sync_timeout", 0, "cache_sync_timeout must be > 0"),
        ("graceful_shutdown_timeout", -1, "graceful_shutdown_timeout must be >= 0"),
        ("health_address", "nope", "health address must be 'host:port'"),
    ],
)
def test_manager_refuses_bad_options(client: Client, option: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Manager(client, **{option: value})


def test_add_takes_a_controller_and_add_runnable_an_async_callable(client: Client) -> None:
    manager = Manager(client)

    def sync_job() -> None:
        pass

    with pytest.raises(TypeError, match="takes a Controller"):
        manager.add(sync_job)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="async callable"):
        manager.add_runnable(sync_job)  # type: ignore[arg-type]
    controller = Controller("c", lambda key: None)
    manager.add(controller)
    with pytest.raises(ValueError, match="already added"):
        manager.add(controller)


def test_metrics_address_without_prometheus_client_is_a_clear_error(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(RuntimeError, match=r"pip install 'aioinformer\[prometheus\]'"):
        Manager(client, metrics_address="127.0.0.1:0")


async def test_stop_before_run_makes_run_return_at_once_and_runs_only_once(
    client: Client,
) -> None:
    started: list[str] = []

    async def job() -> None:
        started.append("job")

    manager = Manager(client)
    manager.add_runnable(job, needs_leader_election=False)
    manager.stop()
    await manager.run()
    assert manager.state is State.STOPPED
    assert started == []
    with pytest.raises(RuntimeError, match="runs only once"):
        await manager.run()
    with pytest.raises(RuntimeError, match="stopping or stopped"):
        manager.add_runnable(job)


async def test_group_asks_controllers_to_stop_and_cancels_the_rest_after_the_grace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    failures: list[BaseException] = []
    group = RunnableGroup(
        "g", on_failure=lambda _, error: failures.append(error), clock=clock, grace=lambda: 5.0
    )
    quick_stop = asyncio.Event()
    slow_stop = asyncio.Event()
    ended: list[str] = []

    async def quick() -> None:
        await quick_stop.wait()
        ended.append("quick")

    async def slow() -> None:
        await slow_stop.wait()
        try:
            await clock.sleep(10)  # a drain longer than the grace period
        except asyncio.CancelledError:
            ended.append("slow cut")
            raise

    def cancelled_then_cleaning_up(
        name: str, cleanup: float
    ) -> Callable[[], Coroutine[Any, Any, None]]:
        async def run() -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                try:
                    await clock.sleep(cleanup)  # the cleanup after the cancellation awaits
                except asyncio.CancelledError:
                    ended.append(f"{name} cut")
                    raise
                ended.append(f"{name} cleaned up")
                raise

        return run

    group.add(Runnable("quick", quick, quick_stop.set))
    group.add(Runnable("slow", slow, slow_stop.set))
    group.add(Runnable("tidy", cancelled_then_cleaning_up("tidy", 3)))
    group.add(Runnable("stubborn", cancelled_then_cleaning_up("stubborn", 100)))

    async def run_group() -> None:
        async with group:
            await asyncio.Event().wait()

    running = asyncio.create_task(run_group())
    await settle()
    stopping = asyncio.create_task(group.stop())
    await settle()
    assert ended == ["quick"]
    await clock.wait_for_sleepers(4)  # slow, tidy and stubborn, and the grace period
    await clock.advance(4.9)
    assert ended == ["quick", "tidy cleaned up"]
    assert not stopping.done()
    with caplog.at_level(logging.WARNING, logger="aioinformer.operator._runnables"):
        await clock.advance(0.1)
        await stopping
    assert sorted(ended) == ["quick", "slow cut", "stubborn cut", "tidy cleaned up"]
    assert "cancelled 2 still running after 5.0s: ['slow', 'stubborn']" in caplog.text
    assert not running.done()  # the group's block is left alone: it ends when left
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert failures == []


async def test_group_reports_a_failure_and_not_a_return() -> None:
    failures: list[tuple[str, BaseException]] = []
    group = RunnableGroup(
        "g",
        on_failure=lambda r, error: failures.append((r.name, error)),
        clock=FakeClock(),
        grace=lambda: 1.0,
    )

    async def returns() -> None:
        pass

    async def fails() -> None:
        raise KeyError("x")

    group.add(Runnable("returns", returns))
    async with group:
        group.add(Runnable("fails", fails))  # added while running: starts at once
        await settle()
        assert [(name, type(error)) for name, error in failures] == [("fails", KeyError)]
    with pytest.raises(RuntimeError, match="already stopped"):
        group.add(Runnable("late", returns))


async def test_a_manager_is_ready_once_synced_and_goes_through_every_state_once(
    client: Client,
) -> None:
    manager = Manager(client)
    seen: list[State] = [manager.state]
    async with anyio.create_task_group() as task_group:
        await task_group.start(manager.run)  # nothing to sync: ready at once
        seen.append(manager.state)
        assert manager.is_leader
        assert manager.health().ready
        manager.stop()
        seen.append(manager.state)
    seen.append(manager.state)
    assert seen == [State.NEW, State.RUNNING, State.STOPPING, State.STOPPED]


async def test_async_with_manager_returns_before_its_caches_sync(client: Client) -> None:
    manager = Manager(client, clock=FakeClock())
    manager.informer_for("configmaps")  # its server refuses connections: never synced
    async with manager:
        inside: State = manager.state
        assert not manager.health().ready
        assert manager.health().live
    assert (inside, manager.state) == (State.STARTING, State.STOPPED)


# -- the manager's clock reaches its controllers ---------------------------------------


async def test_a_controller_built_without_a_clock_keeps_its_managers(client: Client) -> None:
    clock = FakeClock(start=100)
    times: list[float] = []
    controller = Controller("delayed", lambda key: times.append(clock.monotonic()))
    Manager(client, clock=clock).add(controller)
    controller.enqueue_after("k", 5)  # on the event loop's time, due in five real seconds
    async with controller:
        await clock.wait_for_sleepers(1)
        await clock.advance(4.9)
        await settle()
        assert times == []
        await clock.advance(0.1)
        await wait_until(lambda: controller.statistics().successes == 1)
    assert times == [105.0]


def test_a_controller_built_on_another_clock_is_refused_naming_both(client: Client) -> None:
    manager = Manager(client, clock=FakeClock())
    controller = Controller("own", lambda key: None, clock=FakeClock(start=7))
    with pytest.raises(ValueError, match=r"'own' runs on <FakeClock now=7.*its manager on <Fake"):
        manager.add(controller)
    manager.add(Controller("same", lambda key: None, clock=manager.options.clock))


async def test_a_controller_the_manager_builds_waits_for_its_caches_as_the_manager_does(
    client: Client,
) -> None:
    clock = FakeClock()
    manager = Manager(client, clock=clock, cache_sync_timeout=3, cache_sync_fail_fast=False)
    config_maps = manager.informer_for("configmaps")  # never started: never synced
    controller = manager.controller("cms", lambda key: None, informers=[config_maps])
    with pytest.raises(ValueError, match="already added"):
        manager.add(controller)
    async with anyio.create_task_group() as task_group:

        async def run() -> None:
            with pytest.raises(CacheSyncError, match="configmaps"):
                await controller.run()

        task_group.start_soon(run)
        await clock.wait_for_sleepers(1)
        await clock.advance(2.9)
        await settle()
        assert controller.state is State.STARTING
        await clock.advance(0.1)
    assert controller.state is State.STOPPED
    patient = manager.controller("patient", lambda key: None, cache_sync_timeout=None)
    assert patient.name == "patient"
