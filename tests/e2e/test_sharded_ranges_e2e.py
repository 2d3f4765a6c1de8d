"""Sharded managers in range mode over one fake API server that serves shard selectors
(KEP-5866): each replica watches only the slots of the hash space it holds, slots move
only through the shard Leases (released after their reconciles, claimed after), no label
is written on any object, and no key is ever reconciled by two replicas at once.

All replicas share one FakeClock, so Lease timings are exact; every reconcile is recorded
as an interval per key, and a reconcile that starts while another replica's reconcile of
the same key is running is recorded as a violation."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer import State
from aioinformer.errors import LeadershipLost
from aioinformer.operator import Controller, Manager, enqueue_owner
from aioinformer.operator.sharding import (
    SLOTS_ANNOTATION,
    ShardedResource,
    ShardRing,
    parse_slots,
    slot_owner,
)
from aioinformer.testing import FakeAPIServer
from aioinformer.testing.clock import FakeClock
from tests._support_sharding import Reconciles, cut_off_able
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import Client

pytestmark = pytest.mark.e2e

POLL = 0.005
SLOTS = 16
RING = ShardRing(
    name="cms",
    namespace="default",
    resources=(ShardedResource("configmaps"),),
    identity="a",
    mode="ranges",
    slots=SLOTS,
)
GATED = {"ShardedListAndWatch": True}


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


def seed(server: FakeAPIServer, count: int) -> list[str]:
    keys = [f"default/cm-{i}" for i in range(count)]
    for key in keys:
        server.create(config_map(key.split("/")[1]))
    return keys


def obj_of(server: FakeAPIServer, key: str) -> dict[str, Any]:
    return server.get("configmaps", "default", key.split("/")[1])


def touch(server: FakeAPIServer, key: str) -> None:
    """Change the object, so whoever holds its slot reconciles it."""
    obj = obj_of(server, key)
    obj["data"] = {"v": str(int(obj["data"].get("v", "0")) + 1)}
    server.update(obj)


def slots_held(server: FakeAPIServer) -> dict[str, frozenset[int]]:
    """Each live shard Lease's slots, as its annotation lists them."""
    held: dict[str, frozenset[int]] = {}
    for lease in server.objects("leases"):
        meta = lease["metadata"]
        if lease["spec"].get("holderIdentity") != meta["name"]:
            continue
        slots = parse_slots((meta.get("annotations") or {}).get(SLOTS_ANNOTATION), SLOTS)
        if slots is not None:
            held[meta["name"]] = slots
    return held


def owner_of(server: FakeAPIServer, key: str) -> str | None:
    obj = server.get("configmaps", "default", key.split("/")[1])
    slot = RING.slot_of(obj)
    return next((name for name, slots in slots_held(server).items() if slot in slots), None)


def replica(
    client: Client, identity: str, clock: FakeClock, record: Reconciles, **ring: Any
) -> Manager:
    manager = Manager(
        client,
        shard=dataclasses.replace(RING, identity=identity, **ring),
        clock=clock,
        cache_audit=None,
    )
    config_maps = manager.informer_for("configmaps")
    manager.add(Controller("cms", record.reconciler(identity), informers=[config_maps]))
    return manager


@contextlib.asynccontextmanager
async def replicas(
    client: Client, identities: list[str], clock: FakeClock, record: Reconciles, **ring: Any
) -> AsyncIterator[dict[str, Manager]]:
    async with contextlib.AsyncExitStack() as stack:
        managers = {}
        for identity in identities:
            managers[identity] = await stack.enter_async_context(
                replica(client, identity, clock, record, **ring)
            )
        yield managers


def settled(managers: dict[str, Manager]) -> bool:
    live = [m for m in managers.values() if m.state is State.RUNNING and m.sharding.is_set()]
    if not live:
        return False
    seats = [m._seat for m in live]
    return all(s is not None and s.slots.seat.settled for s in seats) and sorted(
        slot for s in seats if s is not None for slot in s.slots.serving
    ) == list(range(SLOTS))


async def until(predicate: Any, clock: FakeClock) -> None:
    await wait_until(predicate, poll=POLL, timeout=20, between=lambda: clock.advance(0.5))


@pytest.fixture
async def gated() -> AsyncIterator[FakeAPIServer]:
    async with FakeAPIServer(feature_gates=GATED) as server:
        yield server


async def test_each_replica_reconciles_exactly_the_objects_of_its_slots(
    gated: FakeAPIServer,
) -> None:
    clock = FakeClock()
    record = Reconciles()
    keys = seed(gated, 40)
    members = ["a", "b", "c"]
    async with gated.client() as client, replicas(client, members, clock, record) as managers:
        await until(lambda: settled(managers), clock)
        await until(lambda: record.everyone() == set(keys), clock)
        held = slots_held(gated)
        assert sorted(held) == members
        assert sorted(slot for slots in held.values() for slot in slots) == list(range(SLOTS))
        for identity in members:
            mine = {key for key in keys if owner_of(gated, key) == identity}
            assert record.seen(identity) == mine
            informer = managers[identity].informer_for("configmaps")
            # Each watches its slots only: its cache is its share, nothing else.
            assert set(informer.indexer.list_keys()) == mine
        # No label was written: objects stay as created.
        assert all(
            not gated.get("configmaps", "default", key.split("/")[1])["metadata"].get("labels")
            for key in keys
        )
        shards = [m.health().as_dict()["shard"] for m in managers.values()]
        assert all(s["mode"] == "ranges" and s["members"] == members for s in shards)
        assert sum(s["sharder"] for s in shards) == 1
    assert record.violations == []


async def test_auto_takes_ranges_where_they_are_served_and_labels_where_not(
    gated: FakeAPIServer, fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    record = Reconciles()
    seed(gated, 6)
    seed(fake_apiserver, 6)
    async with (
        gated.client() as client,
        replicas(client, ["a"], clock, record, mode="auto") as managers,
    ):
        await until(lambda: settled(managers), clock)
        assert managers["a"].health().as_dict()["shard"]["mode"] == "ranges"
    unsharded = Reconciles()
    async with replicas(kube_client, ["a"], clock, unsharded, mode="auto") as managers:
        await until(lambda: managers["a"].sharding.is_set(), clock)
        assert managers["a"].health().as_dict()["shard"]["mode"] == "labels"
        await until(lambda: len(unsharded.seen("a")) == 6, clock)
        labels = fake_apiserver.get("configmaps", "default", "cm-0")["metadata"]["labels"]
        assert labels == {RING.shard_label: "a"}


async def test_a_replica_that_stops_hands_its_slots_over(gated: FakeAPIServer) -> None:
    clock = FakeClock()
    record = Reconciles()
    keys = seed(gated, 40)
    async with gated.client() as client, replicas(client, ["a", "b", "c"], clock, record) as m:
        await until(lambda: settled(m), clock)
        await until(lambda: record.everyone() == set(keys), clock)
        leaving = next(i for i, manager in m.items() if manager.sharder is None)
        moved = record.seen(leaving)
        assert moved
        m[leaving].stop()
        await until(lambda: m[leaving].state is State.STOPPED, clock)
        rest = {i: manager for i, manager in m.items() if i != leaving}
        await until(lambda: settled(rest), clock)
        await until(
            lambda: moved <= record.seen(next(iter(rest))) | record.seen(list(rest)[1]), clock
        )
        assert sorted(slots_held(gated)) == sorted(rest)
    assert record.violations == []


async def test_a_joining_replica_takes_slots_only_after_they_are_let_go(
    gated: FakeAPIServer,
) -> None:
    clock = FakeClock()
    record = Reconciles()
    keys = seed(gated, 40)
    async with gated.client() as client, replicas(client, ["a", "b"], clock, record) as m:
        await until(lambda: settled(m), clock)
        await until(lambda: record.everyone() == set(keys), clock)
        # A slot moving to c whose object a reconcile of a or b is busy with: it may move
        # only once that reconcile has ended; the other slots moving to c go at once.
        to_c = {s for s in range(SLOTS) if slot_owner(s, ["a", "b", "c"]) == "c"}
        busy = next(k for k in keys if RING.slot_of(obj_of(gated, k)) in to_c)
        busy_slot = RING.slot_of(obj_of(gated, busy))
        released = asyncio.Event()
        record.hold = (busy, released)
        touch(gated, busy)
        await until(lambda: busy in record.running, clock)
        async with replica(client, "c", clock, record) as third:
            m = {**m, "c": third}
            seat = third._seat
            assert seat is not None
            await until(lambda: seat.slots.serving == to_c - {busy_slot}, clock)
            for _ in range(10):
                await clock.advance(0.5)
            assert busy_slot not in seat.slots.serving
            assert busy in record.running  # still at it, on a or b
            released.set()
            await until(lambda: settled(m), clock)
            assert seat.slots.serving == to_c
            taken = {key for key in keys if owner_of(gated, key) == "c"}
            assert busy in taken
            for key in taken:
                touch(gated, key)
            await until(lambda: taken <= record.seen("c"), clock)
    assert record.violations == []


async def test_a_silent_replica_stops_before_its_slots_move(gated: FakeAPIServer) -> None:
    clock = FakeClock()
    record = Reconciles()
    keys = seed(gated, 40)

    def build(client: Client, identity: str) -> Manager:
        return replica(client, identity, clock, record)

    async with cut_off_able(gated, ("a", "b", "c"), build) as (managers, runs):
        await until(lambda: settled(managers), clock)
        await until(lambda: record.everyone() == set(keys), clock)
        silent = next(i for i, m in managers.items() if m.sharder is None)
        lost = {key for key in keys if owner_of(gated, key) == silent}
        assert lost
        gated.remove_token(f"token-{silent}")  # cut off: renewals fail
        started = clock.monotonic()
        await until(lambda: runs[silent].done(), clock)
        with pytest.raises(LeadershipLost):
            await runs[silent]
        assert clock.monotonic() - started <= RING.renew_deadline + RING.retry_period + 0.5
        rest = {i: m for i, m in managers.items() if i != silent}
        await until(lambda: settled(rest), clock)
        # Its slots moved only after its Lease was a lease duration old (taken over).
        assert clock.monotonic() - started >= RING.lease_duration - RING.retry_period
        for key in lost:
            touch(gated, key)
        await until(lambda: all(owner_of(gated, key) in rest for key in lost), clock)
    assert record.violations == []


async def test_controlled_objects_follow_their_owner_when_hashed_by_namespace(
    gated: FakeAPIServer,
) -> None:
    # By namespace, a ConfigMap's Secrets (controlled by it) are in its slot: the shard
    # reconciling the owner holds its children in cache, and no other shard does.
    clock = FakeClock()
    owners: dict[str, str] = {}
    for team in ("red", "blue", "green", "gold"):
        gated.create_namespace(team)
        owner = gated.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "app", "namespace": team},
            }
        )
        owners[team] = owner["metadata"]["uid"]
        gated.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": "app-secret",
                    "namespace": team,
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "ConfigMap",
                            "name": "app",
                            "uid": owner["metadata"]["uid"],
                            "controller": True,
                        }
                    ],
                },
            }
        )
    ring = dataclasses.replace(
        RING,
        resources=(ShardedResource("configmaps", controlled=("secrets",)),),
        range_field="object.metadata.namespace",
    )
    reconciled: dict[str, list[str]] = {}
    async with gated.client() as client, contextlib.AsyncExitStack() as stack:
        managers = {}
        for identity in ("a", "b"):
            manager = Manager(
                client,
                shard=dataclasses.replace(ring, identity=identity),
                clock=clock,
                cache_audit=None,
            )
            config_maps = manager.informer_for("configmaps")
            secrets = manager.informer_for("secrets")

            async def reconcile(key: str, identity: str = identity) -> None:
                reconciled.setdefault(identity, []).append(key)

            controller = Controller("apps", reconcile, informers=[config_maps])
            controller.watch(secrets, enqueue=enqueue_owner("ConfigMap"))
            manager.add(controller)
            managers[identity] = await stack.enter_async_context(manager)
        await until(lambda: settled(managers), clock)
        await until(lambda: sum(len(set(v)) for v in reconciled.values()) == 4, clock)
        held: list[str] = []
        for identity, manager in managers.items():
            cms = namespaces_of(manager.informer_for("configmaps"))
            children = manager.informer_for("secrets")
            # Each owner's children are on its shard (once that informer, too, has
            # relisted with the shard's slots).
            await until(lambda c=children, want=cms: namespaces_of(c) == want, clock)
            assert {k.split("/")[0] for k in reconciled.get(identity, [])} == cms
            held.extend(cms)
        assert sorted(held) == sorted(owners)


def namespaces_of(informer: Any) -> set[str]:
    return {key.split("/")[0] for key in informer.indexer.list_keys()}


async def test_a_replica_that_lost_its_lease_cuts_a_hung_reconcile_before_a_takeover(
    gated: FakeAPIServer,
) -> None:
    # Its running reconciles get only what is left before the sharder may take the Lease
    # over (lease_duration - renew_deadline - retry_period), not the whole grace period:
    # otherwise the next owner of its slots would reconcile beside them.
    clock = FakeClock()
    record = Reconciles()
    keys = seed(gated, 20)

    def build(client: Client, identity: str) -> Manager:
        return replica(client, identity, clock, record)

    async with cut_off_able(gated, ("a", "b"), build) as (managers, runs):
        await until(lambda: settled(managers), clock)
        await until(lambda: record.everyone() == set(keys), clock)
        silent = next(i for i, m in managers.items() if m.sharder is None)
        hung = next(key for key in keys if owner_of(gated, key) == silent)
        record.hold = (hung, asyncio.Event())  # never set: the reconcile hangs
        touch(gated, hung)
        await until(lambda: record.running.get(hung) == silent, clock)
        gated.remove_token(f"token-{silent}")  # cut off: renewals fail
        started = clock.monotonic()
        await until(lambda: runs[silent].done(), clock)
        with pytest.raises(LeadershipLost):
            await runs[silent]
        assert hung not in record.running  # cut short
        assert clock.monotonic() - started < RING.lease_duration
    assert record.violations == []
