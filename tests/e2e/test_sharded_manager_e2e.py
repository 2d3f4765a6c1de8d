"""Sharded managers over one fake API server: each replica reconciles only its shard's
objects, a replica that leaves or goes silent hands its keys over, a joining replica
takes keys through drains, and no key is ever reconciled by two replicas at once.

All replicas share one FakeClock, so Lease timings are exact; every reconcile is
recorded as an interval per key, and a reconcile that starts while another replica's
reconcile of the same key is running is recorded as a violation."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer import State
from aioinformer.errors import LeadershipLost
from aioinformer.operator import Controller, LeaderElection, Manager
from aioinformer.operator.sharding import (
    ShardedResource,
    ShardRing,
    object_hash_key,
    rendezvous,
)
from aioinformer.testing.clock import FakeClock
from tests._support_sharding import Reconciles, cut_off_able
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

POLL = 0.005
RING = ShardRing(
    name="cms", namespace="default", resources=(ShardedResource("configmaps"),), identity="a"
)


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


def desired(key: str, members: list[str]) -> str | None:
    _, name = key.split("/")
    return rendezvous(object_hash_key("", "ConfigMap", "default", name), members)


def shard_of(server: FakeAPIServer, key: str) -> str | None:
    labels = server.get("configmaps", "default", key.split("/")[1])["metadata"].get("labels", {})
    found: str | None = labels.get(RING.shard_label)
    return found


def replica(
    client: Client, identity: str, clock: FakeClock, record: Reconciles, **options: Any
) -> Manager:
    manager = Manager(
        client,
        shard=dataclasses.replace(RING, identity=identity),
        clock=clock,
        cache_audit=None,
        **options,
    )
    config_maps = manager.informer_for("configmaps")
    manager.add(Controller("cms", record.reconciler(identity), informers=[config_maps]))
    return manager


def seed(server: FakeAPIServer, count: int) -> list[str]:
    """``count`` ConfigMaps; their keys."""
    keys = [f"default/cm-{i}" for i in range(count)]
    for key in keys:
        server.create(config_map(key.split("/")[1]))
    return keys


async def every_key_reconciled(record: Reconciles, keys: list[str], clock: FakeClock) -> None:
    await wait_until(
        lambda: set(record.last_owner()) == set(keys),
        poll=POLL,
        between=lambda: clock.advance(0.5),
    )


@contextlib.asynccontextmanager
async def replicas(
    client: Client, identities: list[str], clock: FakeClock, record: Reconciles
) -> AsyncIterator[dict[str, Manager]]:
    async with contextlib.AsyncExitStack() as stack:
        managers = {}
        for identity in identities:
            managers[identity] = await stack.enter_async_context(
                replica(client, identity, clock, record)
            )
        yield managers


async def test_each_replica_reconciles_exactly_its_shards_objects(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    record = Reconciles()
    keys = seed(fake_apiserver, 24)
    members = ["a", "b", "c"]
    async with replicas(kube_client, members, clock, record) as managers:
        await wait_until(
            lambda: all(m.sharding.is_set() for m in managers.values()),
            poll=POLL,
            between=lambda: clock.advance(0.5),
        )
        await every_key_reconciled(record, keys, clock)
        for identity in members:
            assert record.seen(identity) == {k for k in keys if desired(k, members) == identity}
        assert all(shard_of(fake_apiserver, key) == desired(key, members) for key in keys)
        assert sum(1 for m in managers.values() if m.sharder is not None) == 1
        leases = {lease["metadata"]["name"] for lease in fake_apiserver.objects("leases")}
        assert leases == {"a", "b", "c", "cms-sharder"}
        shards = [m.health().as_dict()["shard"] for m in managers.values()]
        assert [s["identity"] for s in shards] == members
        assert all(s["ring"] == "cms" and s["holding"] for s in shards)
        assert all(s["members"] == members for s in shards)  # every replica knows the ring
        assert sum(s["sharder"] for s in shards) == 1
    assert record.violations == []


async def test_a_replica_that_stops_hands_its_keys_over_at_once(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    record = Reconciles()
    keys = seed(fake_apiserver, 24)
    async with replicas(kube_client, ["a", "b", "c"], clock, record) as managers:
        await every_key_reconciled(record, keys, clock)
        leaving = next(i for i, m in managers.items() if m.sharder is None)
        moved = record.seen(leaving)
        assert moved
        managers[leaving].stop()
        await wait_until(lambda: managers[leaving].state is State.STOPPED, poll=POLL)
        rest = [i for i in ("a", "b", "c") if i != leaving]
        # Released on stop: the sharder moves them without waiting a lease out.
        await wait_until(
            lambda: all(shard_of(fake_apiserver, key) in rest for key in keys), poll=POLL
        )
        await wait_until(lambda: moved <= record.seen(rest[0]) | record.seen(rest[1]), poll=POLL)
    assert record.violations == []


async def test_a_joining_replica_takes_its_keys_through_drains(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    record = Reconciles()
    keys = seed(fake_apiserver, 24)
    async with replicas(kube_client, ["a", "b"], clock, record) as managers:
        await every_key_reconciled(record, keys, clock)
        # What a handler of a sharded informer sees of an object moving away.
        ring_a = dataclasses.replace(RING, identity="a")
        seen_deleted: list[tuple[str, bool, bool]] = []

        def on_delete(obj: Any) -> None:
            meta = obj["metadata"]
            seen_deleted.append(
                (f"default/{meta['name']}", ring_a.owns(obj), "deletionTimestamp" in meta)
            )

        managers["a"].informer_for("configmaps").add_event_handler(on_delete=on_delete)
        joined = ["a", "b", "c"]
        taken = {key for key in keys if desired(key, joined) == "c"}
        assert taken
        from_a = {key for key in taken if desired(key, ["a", "b"]) == "a"}
        assert from_a
        async with replica(kube_client, "c", clock, record) as third:
            await wait_until(third.sharding.is_set, poll=POLL, between=lambda: clock.advance(0.5))
            await wait_until(
                lambda: record.seen("c") == taken, poll=POLL, between=lambda: clock.advance(0.5)
            )
            assert all(shard_of(fake_apiserver, key) == desired(key, joined) for key in keys)
            # Moves, not deletions: the new state, not a's, and not being deleted.
            assert sorted(seen_deleted) == sorted((key, False, False) for key in from_a)
            assert not any(
                RING.drain_label
                in fake_apiserver.get("configmaps", "default", k.split("/")[1])["metadata"].get(
                    "labels", {}
                )
                for k in keys
            )
    assert record.violations == []


async def test_a_silent_replica_stops_before_its_keys_move_and_they_move_after_the_lease(
    fake_apiserver: FakeAPIServer,
) -> None:
    clock = FakeClock()
    record = Reconciles()
    keys = seed(fake_apiserver, 24)

    def build(client: Client, identity: str) -> Manager:
        return replica(client, identity, clock, record)

    async with cut_off_able(fake_apiserver, ("a", "b", "c"), build) as (managers, runs):
        await every_key_reconciled(record, keys, clock)
        silent = next(i for i, m in managers.items() if m.sharder is None)
        lost = record.seen(silent)
        fake_apiserver.remove_token(f"token-{silent}")  # cut off: renewals fail
        started = clock.monotonic()
        await wait_until(lambda: runs[silent].done(), poll=POLL, between=lambda: clock.advance(0.5))
        with pytest.raises(LeadershipLost):
            await runs[silent]
        stopped_after = clock.monotonic() - started
        assert stopped_after <= RING.renew_deadline + RING.retry_period + 0.5
        # Its keys stay put until its Lease is a lease duration old, then move.
        assert all(shard_of(fake_apiserver, key) == silent for key in lost)
        rest = [i for i in ("a", "b", "c") if i != silent]
        await wait_until(
            lambda: lost <= record.seen(rest[0]) | record.seen(rest[1]),
            poll=POLL,
            between=lambda: clock.advance(0.5),
        )
        moved_after = clock.monotonic() - started
        assert RING.lease_duration - RING.retry_period <= moved_after
        assert moved_after <= RING.lease_duration + 2 * RING.retry_period + 1
    assert record.violations == []


async def test_sharded_and_leader_elected_controllers_run_side_by_side(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    record = Reconciles()
    keys = seed(fake_apiserver, 12)
    fake_apiserver.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "global"}, "data": {}}
    )
    secrets_seen: dict[str, list[str]] = {}
    election = LeaderElection(
        lease_name="ops", lease_duration=15, renew_deadline=10, retry_period=2, identity=""
    )
    async with contextlib.AsyncExitStack() as stack:
        managers = {}
        for identity in ("a", "b"):
            manager = replica(
                kube_client,
                identity,
                clock,
                record,
                leader_election=dataclasses.replace(election, identity=identity),
            )
            secrets = manager.informer_for("secrets")  # not sharded: every Secret

            async def on_secret(key: str, identity: str = identity) -> None:
                secrets_seen.setdefault(identity, []).append(key)

            manager.add(Controller("secrets", on_secret, informers=[secrets]))
            managers[identity] = await stack.enter_async_context(manager)
        await every_key_reconciled(record, keys, clock)
        await wait_until(lambda: sum(map(len, secrets_seen.values())) == 1, poll=POLL)
        leader = next(i for i, m in managers.items() if m.is_leader)
        assert secrets_seen == {leader: ["default/global"]}
        # Both shards work while one of them leads.
        assert record.seen("a")
        assert record.seen("b")
    assert record.violations == []
