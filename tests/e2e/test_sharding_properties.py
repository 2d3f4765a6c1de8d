"""Sharding as a state machine: replicas join, leave gracefully, crash (cut off from the
API server, their Lease no longer renewed), objects come and go, time passes; through
all of it no key is ever reconciled by two replicas at once, and once membership has
been stable for a lease duration every object has exactly one owner, a live member, and
it is the one rendezvous hashing picks.

Each example runs on a fresh fake API server with sharded Managers sharing one
FakeClock. Time moves in half-second steps with real pauses between them, so each
replica reacts to every deadline as it would in real time (a replica cut off reaches
its renew deadline, and stops, a few steps before the sharder sees its Lease expire).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.errors import NotFound
from aioinformer.operator import Controller, Manager, Requeue
from aioinformer.operator.sharding import (
    ShardedResource,
    ShardRing,
    object_hash_key,
    rendezvous,
)
from aioinformer.testing.apiserver import FakeAPIServer
from aioinformer.testing.clock import FakeClock
from tests._support_properties import PROFILE, examples

pytestmark = pytest.mark.timeout(7200 if PROFILE == "long" else 600)

SHARDING = settings(
    max_examples=examples(20),
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

RING = ShardRing(
    name="cms", namespace="default", resources=(ShardedResource("configmaps"),), identity="r0"
)
IDENTITIES = ("r0", "r1", "r2", "r3")
NAMES = tuple(f"cm-{i}" for i in range(8))
REQUEUE = 2.0
"""Seconds of FakeClock after which every reconcile asks to run again."""
STEP = 0.5
"""Seconds of FakeClock per tick."""
PAUSE = 0.01
"""Real seconds between ticks, for requests in flight to land."""
RECONCILE = 1.5
"""Seconds of FakeClock each reconcile takes (three ticks): a slow reconcile, so that
moves decided while one runs are common."""


class Replica:
    """One sharded manager with its own token (so it can be cut off) and run."""

    def __init__(self, world: World, identity: str, generation: int) -> None:
        self.identity = identity
        self.token = f"token-{identity}-{generation}"
        world.server.add_token(self.token)
        self.client = Client(Config(host=world.server.url, token=self.token))
        self.manager = Manager(
            self.client,
            shard=dataclasses.replace(RING, identity=identity),
            clock=world.clock,
            cache_audit=None,
            graceful_shutdown_timeout=5,
        )
        informer = self.manager.informer_for("configmaps")
        self.manager.add(
            Controller(
                "cms",
                world.reconciler(identity),
                informers=[informer],
                workers=2,
                clock=world.clock,
            )
        )
        self.run: asyncio.Future[None] = asyncio.ensure_future(self.manager.run())
        self.cut_off = False

    async def close(self) -> None:
        self.manager.stop()
        with contextlib.suppress(Exception):
            await self.run
        await self.client.close()


class World:
    def __init__(self) -> None:
        self.server = FakeAPIServer(require_namespaces=False)
        self.clock = FakeClock()
        self.replicas: dict[str, Replica] = {}
        self.generations: dict[str, int] = {}
        self.running: dict[str, str] = {}
        self.violations: list[tuple[str, str, str]] = []
        self.reconciled: list[tuple[str, str]] = []
        self.serial = 0

    def reconciler(self, identity: str) -> Any:
        async def reconcile(key: str) -> Requeue:
            other = self.running.get(key)
            if other is not None and other != identity:
                self.violations.append((key, other, identity))
            self.running[key] = identity
            try:
                await self.clock.sleep(RECONCILE)
                self.reconciled.append((key, identity))
            finally:
                if self.running.get(key) == identity:
                    del self.running[key]
            # Every key again soon, as a controller with a periodic check does: a replica
            # cut off goes on reconciling what it holds until it stops.
            return Requeue(after=REQUEUE)

        return reconcile

    async def start(self) -> None:
        await self.server.start()

    async def tick(self, steps: int = 1) -> None:
        for _ in range(steps):
            await self.clock.advance(STEP)
            await asyncio.sleep(PAUSE)

    def live(self) -> list[str]:
        return sorted(
            identity
            for identity, replica in self.replicas.items()
            if not replica.cut_off and not replica.run.done()
        )

    async def close_replica(self, replica: Replica) -> None:
        """Stop ``replica`` gracefully, time passing meanwhile (its reconciles in flight
        take clock time to finish)."""
        closing = asyncio.ensure_future(replica.close())
        while not closing.done():
            await self.tick(1)
        await closing

    async def reap(self) -> None:
        """Close the replicas whose run ended (a cut-off one stops by itself)."""
        for identity, replica in list(self.replicas.items()):
            if replica.run.done():
                await self.close_replica(replica)
                del self.replicas[identity]

    def owners(self) -> dict[str, str | None]:
        return {
            obj["metadata"]["name"]: obj["metadata"].get("labels", {}).get(RING.shard_label)
            for obj in self.server.objects("configmaps", "default")
        }

    def draining(self) -> list[str]:
        return [
            obj["metadata"]["name"]
            for obj in self.server.objects("configmaps", "default")
            if RING.drain_label in obj["metadata"].get("labels", {})
        ]

    async def close(self) -> None:
        for replica in list(self.replicas.values()):
            await self.close_replica(replica)
        self.replicas.clear()
        await self.server.close()


class ShardingMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.world = World()
        self.run(self.world.start())

    def run(self, coro: Any) -> Any:
        return self.runner.run(coro)

    @initialize()
    def a_working_ring(self) -> None:
        """Two replicas and a few objects, assigned: every example starts with work to
        hand over."""
        world = self.world

        async def start() -> None:
            for identity in IDENTITIES[:2]:
                world.generations[identity] = 1
                world.replicas[identity] = Replica(world, identity, 1)
            for name in NAMES[:4]:
                world.server.create(
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
                )
            for _ in range(40):
                await world.tick(1)
                if None not in world.owners().values():
                    return
            raise AssertionError(f"the ring never assigned its objects: {world.owners()}")

        self.run(start())

    # -- membership ----------------------------------------------------------------------

    @precondition(lambda self: len(self.world.replicas) < len(IDENTITIES))
    @rule(identity=st.sampled_from(IDENTITIES))
    def join(self, identity: str) -> None:
        world = self.world
        if identity in world.replicas:
            return
        generation = world.generations.get(identity, 0) + 1
        world.generations[identity] = generation

        async def start() -> None:
            world.replicas[identity] = Replica(world, identity, generation)
            await world.tick(2)

        self.run(start())

    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        world = self.world
        live = world.live()
        if not live:
            return
        identity = data.draw(st.sampled_from(live))

        async def stop() -> None:
            replica = world.replicas.pop(identity)
            await world.close_replica(replica)

        self.run(stop())

    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        world = self.world
        live = world.live()
        if not live:
            return
        identity = data.draw(st.sampled_from(live))
        replica = world.replicas[identity]
        world.server.remove_token(replica.token)  # its requests get 401 from now on
        replica.cut_off = True
        self.run(world.tick(1))

    # -- objects -------------------------------------------------------------------------

    @rule(name=st.sampled_from(NAMES))
    def create(self, name: str) -> None:
        with contextlib.suppress(Exception):
            self.world.server.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
            )
        self.run(self.world.tick(1))

    @rule(name=st.sampled_from(NAMES))
    def delete(self, name: str) -> None:
        with contextlib.suppress(NotFound):
            self.world.server.delete("configmaps", "default", name)
        self.run(self.world.tick(1))

    @rule()
    def every_object_changes(self) -> None:
        """An update to every object: each owner reconciles all of its keys at once, so
        moves land while reconciles run."""
        world = self.world
        world.serial += 1
        for obj in world.server.objects("configmaps", "default"):
            with contextlib.suppress(NotFound):
                world.server.patch(
                    "configmaps",
                    "default",
                    obj["metadata"]["name"],
                    {"metadata": {"annotations": {"serial": str(world.serial)}}},
                )
        self.run(world.tick(1))

    @rule(steps=st.integers(1, 12))
    def time_passes(self, steps: int) -> None:
        self.run(self.world.tick(steps))
        self.run(self.world.reap())

    # -- what must hold ------------------------------------------------------------------

    @invariant()
    def no_key_is_reconciled_by_two_replicas_at_once(self) -> None:
        assert self.world.violations == []

    @rule()
    def membership_stays_stable(self) -> None:
        """Let a lease duration and more pass without joins or leaves: every object ends
        with exactly one owner, a live member, the one rendezvous picks, and no drain
        left hanging."""
        world = self.world

        async def settle() -> None:
            # Enough for a cut-off replica to stop, its Lease to expire and be taken
            # over, a sharder to be elected, and every drain to be acknowledged.
            await world.tick(int(2 * RING.lease_duration / STEP) + 8)
            await world.reap()
            live = world.live()
            if not live:
                return  # no replica left to own anything, nor a sharder to say so
            for _ in range(200):
                owners = world.owners()
                expected = {
                    name: rendezvous(object_hash_key("", "ConfigMap", "default", name), live)
                    for name in owners
                }
                if owners == expected and not world.draining():
                    return
                await world.tick(1)
            raise AssertionError(
                f"no stable ownership: live {live}, owners {world.owners()},"
                f" draining {world.draining()}"
            )

        self.run(settle())

    def teardown(self) -> None:
        try:
            self.run(self.world.close())
        finally:
            self.runner.close()


def test_no_key_is_ever_reconciled_twice_at_once_and_ownership_settles() -> None:
    run_state_machine_as_test(ShardingMachine, settings=SHARDING)
