"""Manager over the fake API server: start order, probes, warm-up before the campaign,
two replicas on one Lease, leadership loss, failures and the signal runner."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from aioinformer import State
from aioinformer.errors import CacheSyncError, LeadershipLost, NotFound
from aioinformer.operator.controller import Controller
from aioinformer.operator.manager import LeaderElection, Manager
from aioinformer.testing import FakeAPIServer, Rule
from aioinformer.testing.clock import FakeClock
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from pathlib import Path

    from aioinformer.client import Client

POLL = 0.005


def config_map(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"k": "v"},
    }


def election(identity: str) -> LeaderElection:
    return LeaderElection(
        lease_name="ops", identity=identity, lease_duration=15, renew_deadline=10, retry_period=2
    )


def recording_manager(
    client: Client, seen: list[str], **options: Any
) -> tuple[Manager, Controller]:
    manager = Manager(client, **options)
    config_maps = manager.informer_for("configmaps")

    async def reconcile(key: str) -> None:
        seen.append(key)

    controller = Controller("recorder", reconcile, informers=[config_maps])
    manager.add(controller)
    return manager, controller


async def get(address: str | None, path: str) -> httpx.Response:
    assert address is not None
    async with httpx.AsyncClient() as http:
        return await http.get(f"http://{address}{path}")


async def test_without_election_runs_controllers_after_sync_and_serves_probes(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(config_map("a"))
    seen: list[str] = []
    manager, controller = recording_manager(kube_client, seen, health_address="127.0.0.1:0")
    async with manager:
        address = manager.health_address
        assert (await get(address, "/healthz")).status_code == 200
        await asyncio.wait_for(manager.elected.wait(), 5)
        await wait_until(lambda: seen == ["default/a"], poll=POLL)
        ready = await get(address, "/readyz")
        assert ready.status_code == 200
        body = ready.json()
        assert body["ready"] is True
        assert body["leader"] is True
        assert body["controllers"] == {"recorder": "running"}
        assert (await get(address, "/livez")).status_code == 200
        assert manager.state is State.RUNNING
    assert manager.health().state is State.STOPPED
    assert controller.state is State.STOPPED
    assert manager.health_address is None
    with pytest.raises(httpx.ConnectError):
        await get(address, "/healthz")


async def test_forbidden_resource_raises_cache_sync_error_and_never_campaigns(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.add_token("narrow", rules=[Rule(verbs=["*"], resources=["leases"])])
    started: list[str] = []

    async def side_job() -> None:
        started.append("side job")

    async with fake_apiserver.client(token="narrow") as client:
        manager, controller = recording_manager(
            client,
            [],
            leader_election=election("a"),
            health_address="127.0.0.1:0",
            cache_sync_timeout=0.3,
            # Waits out the timeout: the 403 does not fail the start at once.
            cache_sync_fail_fast=False,
        )
        manager.add_runnable(side_job, needs_leader_election=False)
        run = asyncio.create_task(manager.run())
        await wait_until(lambda: manager.health_address is not None, poll=POLL)
        readyz = await get(manager.health_address, "/readyz")
        assert readyz.status_code == 503
        assert (await get(manager.health_address, "/healthz")).status_code == 200
        with pytest.raises(CacheSyncError, match="configmaps") as caught:
            await run
    assert "403" in str(caught.value) or "Forbidden" in str(caught.value)
    assert started == []
    assert controller.state is State.NEW
    with pytest.raises(NotFound):
        fake_apiserver.get("leases", "default", "ops")


async def test_only_the_leader_reconciles_and_the_standby_takes_over_when_it_stops(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    fake_apiserver.create(config_map("a"))
    seen_a: list[str] = []
    seen_b: list[str] = []
    standby_jobs: list[str] = []

    async def every_replica() -> None:
        standby_jobs.append("b")
        await asyncio.Future()

    first, _ = recording_manager(kube_client, seen_a, leader_election=election("a"), clock=clock)
    second, _ = recording_manager(kube_client, seen_b, leader_election=election("b"), clock=clock)
    second.add_runnable(every_replica, needs_leader_election=False, name="every replica")
    async with first:
        await asyncio.wait_for(first.elected.wait(), 5)
        await wait_until(lambda: seen_a == ["default/a"], poll=POLL)
        async with second:
            # Synced and running, not leading: campaigning.
            await wait_until(
                lambda: second.state is State.RUNNING and not second.is_leader, poll=POLL
            )
            await wait_until(lambda: standby_jobs == ["b"], poll=POLL)
            await clock.advance(3)  # a retry of the standby: the lease is held
            fake_apiserver.create(config_map("c"))
            await wait_until(lambda: seen_a == ["default/a", "default/c"], poll=POLL)
            assert seen_b == []
            assert not second.is_leader
            assert second.health().ready  # a standby with warm caches is ready
            first.stop()
            await wait_until(lambda: first.state is State.STOPPED, poll=POLL)
            lease = fake_apiserver.get("leases", "default", "ops")
            assert lease["spec"].get("holderIdentity", "") == ""  # released on stop
            await wait_until(
                lambda: second.is_leader, poll=POLL, between=lambda: clock.advance(2.5)
            )
            await wait_until(lambda: sorted(seen_b) == ["default/a", "default/c"], poll=POLL)
        lease = fake_apiserver.get("leases", "default", "ops")
        assert lease["spec"]["leaseTransitions"] >= 1


async def test_losing_the_lease_stops_controllers_and_raises_leadership_lost(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    manager, controller = recording_manager(
        kube_client, [], leader_election=election("a"), clock=clock
    )
    run = asyncio.create_task(manager.run())
    await asyncio.wait_for(manager.elected.wait(), 5)
    await wait_until(lambda: controller.state is State.RUNNING, poll=POLL)
    lease = fake_apiserver.get("leases", "default", "ops")
    lease["spec"]["holderIdentity"] = "intruder"
    fake_apiserver.update(lease)
    await wait_until(run.done, poll=POLL, between=lambda: clock.advance(2))
    with pytest.raises(LeadershipLost):
        await run
    assert controller.state is State.STOPPED
    assert not manager.is_leader
    # Not released: the lease is the intruder's now.
    assert fake_apiserver.get("leases", "default", "ops")["spec"]["holderIdentity"] == "intruder"


async def test_a_failing_runnable_stops_the_manager_with_its_error(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    manager, controller = recording_manager(kube_client, [])

    async def broken() -> None:
        await manager.elected.wait()
        raise RuntimeError("boom")

    manager.add_runnable(broken)
    with pytest.raises(RuntimeError, match="boom"):
        await asyncio.wait_for(manager.run(), 10)
    assert controller.state is State.STOPPED
    assert manager.state is State.STOPPED


async def test_stop_drains_an_in_flight_reconcile_before_the_lease_is_released(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(config_map("a"))
    entered = asyncio.Event()
    release = asyncio.Event()
    holders_during_reconcile: list[str] = []
    manager = Manager(kube_client, leader_election=election("a"))
    config_maps = manager.informer_for("configmaps")

    async def reconcile(key: str) -> None:
        entered.set()
        await release.wait()
        lease = fake_apiserver.get("leases", "default", "ops")
        holders_during_reconcile.append(lease["spec"]["holderIdentity"])

    controller = Controller("slow", reconcile, informers=[config_maps])
    manager.add(controller)
    async with manager:
        await asyncio.wait_for(entered.wait(), 5)
        manager.stop()
        assert manager.state is State.STOPPING
        await wait_until(lambda: controller.state is State.STOPPING, poll=POLL)
        release.set()
    assert holders_during_reconcile == ["a"]
    assert fake_apiserver.get("leases", "default", "ops")["spec"].get("holderIdentity", "") == ""


SIGNAL_SCRIPT = """
import asyncio, contextlib, logging, sys
from aioinformer.operator.manager import LeaderElection, Manager
from aioinformer.testing import FakeAPIServer, Rule

MODE = sys.argv[1]

@contextlib.asynccontextmanager
async def setup():
    async with FakeAPIServer() as server:
        server.add_token("narrow", rules=[Rule(verbs=["*"], resources=["leases"])])
        token = "narrow" if MODE == "forbidden" else "admin"
        async with server.client(**({"token": token} if MODE == "forbidden" else {})) as client:
            manager = Manager(client, leader_election=LeaderElection(lease_name="ops",
                              identity="me"), cache_sync_timeout=0.5)
            manager.informer_for("configmaps", namespace="kube-system")
            async def announce():
                print("leading", flush=True)
            manager.add_runnable(announce)
            yield manager
            lease = server.get("leases", "default", "ops")
            print("holder=" + repr(lease["spec"].get("holderIdentity", "")), flush=True)

logging.basicConfig(level=logging.WARNING)
sys.exit(Manager.main(setup))
"""


def run_script(tmp_path: Path, mode: str) -> subprocess.Popen[str]:
    script = tmp_path / "manager_script.py"
    script.write_text(textwrap.dedent(SIGNAL_SCRIPT))
    return subprocess.Popen(
        [sys.executable, str(script), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigterm_stops_gracefully_with_exit_code_0_and_releases_the_lease(
    tmp_path: Path,
) -> None:
    process = run_script(tmp_path, "ok")
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "leading"
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "holder=''" in out


def test_an_unsyncable_cache_exits_non_zero_naming_the_resource(tmp_path: Path) -> None:
    process = run_script(tmp_path, "forbidden")
    out, err = process.communicate(timeout=30)
    assert process.returncode == 1
    assert "CacheSyncError" in err
    assert "configmaps" in err
    assert "kube-system" in err
    assert "leading" not in out


async def test_metrics_endpoint_serves_the_prometheus_registry(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    manager = Manager(kube_client, metrics_address="127.0.0.1:0")
    async with manager:
        response = await get(manager.metrics_address, "/metrics")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        assert "# HELP" in response.text
        assert (await get(manager.metrics_address, "/healthz")).status_code == 404


async def test_stop_while_waiting_for_sync_returns_without_campaigning(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.add_token("narrow", rules=[Rule(verbs=["*"], resources=["leases"])])
    async with fake_apiserver.client(token="narrow") as client:
        manager, controller = recording_manager(
            client, [], leader_election=election("a"), cache_sync_fail_fast=False
        )
        async with manager:
            assert manager.state is State.STARTING
            await wait_until(
                lambda: any(i.last_error for i in manager.factory.health().informers.values()),
                poll=POLL,
            )
        assert controller.state is State.NEW
    with pytest.raises(NotFound):
        fake_apiserver.get("leases", "default", "ops")


async def test_a_controller_added_while_running_that_cannot_sync_stops_the_manager(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.add_token("narrow", rules=[Rule(verbs=["*"], resources=["leases"])])
    async with fake_apiserver.client(token="narrow") as client:
        manager = Manager(client)

        async def operator() -> None:
            async with manager:
                await asyncio.wait_for(manager.elected.wait(), 5)
                secrets = manager.informer_for("secrets")
                late = Controller(
                    "late", lambda key: None, informers=[secrets], cache_sync_timeout=0.2
                )
                manager.add(late)
                await asyncio.Event().wait()  # cancelled by the manager's failure

        with pytest.raises(CacheSyncError, match="secrets"):
            await operator()
        assert manager.health().state is State.STOPPED


async def test_cancelling_run_drains_controllers_and_releases_the_lease(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    manager, controller = recording_manager(kube_client, [], leader_election=election("a"))
    run = asyncio.create_task(manager.run())
    await asyncio.wait_for(manager.elected.wait(), 5)
    await wait_until(lambda: controller.state is State.RUNNING, poll=POLL)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert controller.state is State.STOPPED
    assert manager.state is State.STOPPED
    assert fake_apiserver.get("leases", "default", "ops")["spec"].get("holderIdentity", "") == ""


async def test_graceful_shutdown_timeout_is_one_deadline_for_every_runnable(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    manager = Manager(kube_client, clock=clock, graceful_shutdown_timeout=10)

    def stubborn(name: str) -> Callable[[], Coroutine[Any, Any, None]]:
        async def run() -> None:
            try:
                await asyncio.Future()
            except asyncio.CancelledError:
                await clock.sleep(100)  # its cleanup outlasts any grace period
                raise

        run.__qualname__ = name
        return run

    manager.add_runnable(stubborn("leader-only"))
    manager.add_runnable(stubborn("every-replica"), needs_leader_election=False)
    run = asyncio.create_task(manager.run())
    await asyncio.wait_for(manager.elected.wait(), 5)
    manager.stop()
    await clock.wait_for_sleepers(2)  # both cleanups, and the one grace period
    await clock.advance(10)
    await wait_until(run.done, poll=POLL)
    await run
