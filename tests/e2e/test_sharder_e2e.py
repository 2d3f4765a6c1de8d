"""The sharder over the fake API server: first assignments, a joining shard drained
into, a released or silent shard's objects moved at once, controlled objects following
their owner, orphaned Leases deleted. Time is a FakeClock; the shards are Leases this
test writes, so every step is the sharder's alone."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from aioinformer.factory import SharedInformerFactory
from aioinformer.operator._sharder import SHARDER_IDENTITY, Sharder
from aioinformer.operator.sharding import (
    ORPHAN_AFTER,
    RING_LABEL,
    ShardedResource,
    ShardRing,
    object_hash_key,
    rendezvous,
)
from aioinformer.testing.clock import FakeClock
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

RING = ShardRing(
    name="cms",
    namespace="default",
    resources=(ShardedResource("configmaps", controlled=("secrets",)),),
    identity="shard-a",
)
POLL = 0.005


def write_lease(server: FakeAPIServer, name: str, *, holder: str | None = None) -> None:
    body: dict[str, Any] = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "default", "labels": {RING_LABEL: "cms"}},
        "spec": {
            "holderIdentity": name if holder is None else holder,
            "leaseDurationSeconds": 15,
            "renewTime": "2026-01-01T00:00:00.000000Z",
            "acquireTime": "2026-01-01T00:00:00.000000Z",
        },
    }
    try:
        current = server.get("leases", "default", name)
    except Exception:  # noqa: BLE001 - not there yet
        server.create(body)
        return
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    server.update(body)


def renew(server: FakeAPIServer, name: str, stamp: str) -> None:
    current = server.get("leases", "default", name)
    current["spec"]["renewTime"] = stamp
    server.update(current)


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


def owned_secret(name: str, owner: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": owner,
                    "uid": f"uid-{owner}",
                    "controller": True,
                }
            ],
        },
    }


def seed(server: FakeAPIServer, shards: tuple[str, ...], count: int) -> list[str]:
    """Shard Leases held by ``shards`` and ``count`` ConfigMaps; their names."""
    for shard in shards:
        write_lease(server, shard)
    names = [f"cm-{i}" for i in range(count)]
    for name in names:
        server.create(config_map(name))
    return names


def desired(name: str, members: list[str]) -> str | None:
    return rendezvous(object_hash_key("", "ConfigMap", "default", name), members)


def labels(server: FakeAPIServer, resource: str, name: str) -> dict[str, str]:
    found: dict[str, str] = server.get(resource, "default", name)["metadata"].get("labels", {})
    return found


def assigned(server: FakeAPIServer, resource: str = "configmaps") -> dict[str, str | None]:
    return {
        obj["metadata"]["name"]: obj["metadata"].get("labels", {}).get(RING.shard_label)
        for obj in server.objects(resource, "default")
    }


@contextlib.asynccontextmanager
async def running_sharder(client: Client, clock: FakeClock) -> AsyncIterator[Sharder]:
    factory = SharedInformerFactory(client, namespace="default", clock=clock)
    sharder = Sharder(client, factory, RING, clock=clock)
    try:
        async with sharder:
            yield sharder
    finally:
        await factory.shutdown()


async def test_unassigned_objects_are_labelled_with_their_rendezvous_shard(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    names = seed(fake_apiserver, ("shard-a", "shard-b", "shard-c"), 20)
    members = ["shard-a", "shard-b", "shard-c"]
    async with running_sharder(kube_client, clock) as sharder:
        expected = {name: desired(name, members) for name in names}
        await wait_until(lambda: assigned(fake_apiserver) == expected, poll=POLL)
        assert len(set(expected.values())) == 3
        # One created later is assigned from the sharder's watch, no pass needed.
        fake_apiserver.create(config_map("late"))
        await wait_until(
            lambda: assigned(fake_apiserver).get("late") == desired("late", members), poll=POLL
        )
        # Counted once the write has returned (the server shows it a moment before).
        await wait_until(lambda: sharder.statistics().assignments == 21, poll=POLL)
        assert sharder.statistics().drains == 0


async def test_a_joining_shard_gets_its_objects_only_through_drains(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    names = seed(fake_apiserver, ("shard-a", "shard-b"), 30)
    async with running_sharder(kube_client, clock) as sharder:
        await wait_until(lambda: None not in assigned(fake_apiserver).values(), poll=POLL)
        before = assigned(fake_apiserver)
        write_lease(fake_apiserver, "shard-c")
        joined = ["shard-a", "shard-b", "shard-c"]
        moving = sorted(name for name in names if desired(name, joined) == "shard-c")
        assert moving

        def drained() -> list[str]:
            return sorted(
                name
                for name in names
                if RING.drain_label in labels(fake_apiserver, "configmaps", name)
            )

        await wait_until(lambda: drained() == moving, poll=POLL)
        # Still labelled with their old shard: nothing moves until the shard lets go.
        assert assigned(fake_apiserver) == before
        for name in moving:  # the old shard acknowledges, as a shard's drain does
            current = fake_apiserver.get("configmaps", "default", name)
            fake_apiserver.patch(
                "configmaps",
                "default",
                name,
                {
                    "metadata": {
                        "resourceVersion": current["metadata"]["resourceVersion"],
                        "labels": {RING.shard_label: None, RING.drain_label: None},
                    }
                },
            )
        expected = {name: desired(name, joined) for name in names}
        await wait_until(lambda: assigned(fake_apiserver) == expected, poll=POLL)
        assert drained() == []
        assert sharder.statistics().drains == len(moving)


async def test_a_released_shards_objects_move_at_once(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    seed(fake_apiserver, ("shard-a", "shard-b"), 20)
    async with running_sharder(kube_client, clock) as sharder:
        await wait_until(lambda: None not in assigned(fake_apiserver).values(), poll=POLL)
        write_lease(fake_apiserver, "shard-b", holder="")  # a graceful stop releases it
        await wait_until(lambda: set(assigned(fake_apiserver).values()) == {"shard-a"}, poll=POLL)
        assert sharder.members == ["shard-a"]
        assert sharder.statistics().drains == 0


async def test_a_silent_shard_is_taken_over_after_its_lease_duration_and_its_objects_move(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    seed(fake_apiserver, ("shard-a", "shard-b"), 20)
    async with running_sharder(kube_client, clock) as sharder:
        await wait_until(lambda: None not in assigned(fake_apiserver).values(), poll=POLL)
        before = assigned(fake_apiserver)
        # shard-a renews; shard-b has gone silent.
        for step in range(1, 4):
            await clock.advance(4.9)
            renew(fake_apiserver, "shard-a", f"2026-01-01T00:00:{5 * step:02d}.000000Z")
            await asyncio.sleep(0.05)
        assert assigned(fake_apiserver) == before  # 14.7 s unrenewed: not yet expired
        await clock.advance(0.5)
        await wait_until(
            lambda: (
                fake_apiserver.get("leases", "default", "shard-b")["spec"]["holderIdentity"]
                == SHARDER_IDENTITY
            ),
            poll=POLL,
        )
        await wait_until(lambda: set(assigned(fake_apiserver).values()) == {"shard-a"}, poll=POLL)
        assert sharder.statistics().takeovers == 1
        assert fake_apiserver.get("leases", "default", "shard-a")["spec"]["holderIdentity"] == (
            "shard-a"
        )
        # The dead shard's Lease is deleted once orphaned.
        await clock.advance(ORPHAN_AFTER)
        await wait_until(
            lambda: (
                [lease["metadata"]["name"] for lease in fake_apiserver.objects("leases")]
                == ["shard-a"]
            ),
            poll=POLL,
        )


async def test_controlled_objects_follow_their_owner_without_a_drain(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    write_lease(fake_apiserver, "shard-a")
    write_lease(fake_apiserver, "shard-b")
    owners = [f"cm-{i}" for i in range(12)]
    for owner in owners:
        fake_apiserver.create(config_map(owner))
        fake_apiserver.create(owned_secret(f"{owner}-secret", owner))
    fake_apiserver.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "loose"}})
    async with running_sharder(kube_client, clock):

        def pairs_agree() -> bool:
            owners_now = assigned(fake_apiserver)
            secrets_now = assigned(fake_apiserver, "secrets")
            return all(
                owners_now[owner] is not None
                and secrets_now[f"{owner}-secret"] == owners_now[owner]
                for owner in owners
            )

        await wait_until(pairs_agree, poll=POLL)
        assert assigned(fake_apiserver, "secrets")["loose"] is None  # no controller: unsharded
        write_lease(fake_apiserver, "shard-c")
        joined = ["shard-a", "shard-b", "shard-c"]
        for owner in owners:  # acknowledge every owner drain, as the shards would

            def settled(owner: str = owner) -> bool:
                return desired(owner, joined) == assigned(fake_apiserver)[owner] or (
                    RING.drain_label in labels(fake_apiserver, "configmaps", owner)
                )

            await wait_until(settled, poll=POLL)
            if RING.drain_label in labels(fake_apiserver, "configmaps", owner):
                fake_apiserver.patch(
                    "configmaps",
                    "default",
                    owner,
                    {"metadata": {"labels": {RING.shard_label: None, RING.drain_label: None}}},
                )
        await wait_until(pairs_agree, poll=POLL)
        assert all(assigned(fake_apiserver)[owner] == desired(owner, joined) for owner in owners)
        secret_labels = [labels(fake_apiserver, "secrets", f"{o}-secret") for o in owners]
        assert all(RING.drain_label not in found for found in secret_labels)
