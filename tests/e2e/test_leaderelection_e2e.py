"""Leader election end to end: LeaseLock over the real client against the fake API server.

Real HTTP on 127.0.0.1 and real (short) time: lease 1 s, renew deadline 0.6 s, retry 0.1 s.
Every leader's term is recorded from ``on_started_leading`` until its work is cancelled;
the tests assert that no two terms overlap, whatever happens to the leader.

Timing on a loaded machine: the safety property (never two leaders) is checked from the
recorded terms, whatever the loop's lag. Where a test must tell "handed over at once"
from "waited a lease out", the electors run on a clock slowed down ``SLOWDOWN`` times, so
a lease lasts ten real seconds while retries stay at 0.1 real seconds: the margin between
the two outcomes is then seconds, not tenths.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import Conflict, ConnectionFailed
from aioinformer.operator.leaderelection import (
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    ResourceLock,
)
from aioinformer.testing import FakeAPIServer
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from aioinformer.client import Client

NAMESPACE = "default"
LEASE = "e2e-lock"
LEASE_DURATION = 1.0
RENEW_DEADLINE = 0.6
RETRY_PERIOD = 0.1
SLOWDOWN = 10.0
"""How much slower than the loop's clock a :class:`SlowedClock` runs."""
STEP_DOWN_SLACK = 0.9
"""Seconds (real) allowed beyond retry period + renew deadline for a robbed leader to step
down: request time and loop lag on a shared machine. Not the safety property, which the
recorded terms prove exactly; see the stolen-lease test."""


class SlowedClock:
    """The loop's clock, running ``SLOWDOWN`` times slower: a 1 s lease lasts 10 real
    seconds, a 0.01 s retry period is 0.1 real seconds."""

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time() / SLOWDOWN

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) * SLOWDOWN)


def make_elector(
    lock: ResourceLock, *, clock: SlowedClock | None = None, **callbacks: Any
) -> LeaderElector:
    """An elector with the module's timings, in real seconds whatever ``clock``: on a
    :class:`SlowedClock` the lease lasts ``SLOWDOWN`` times longer (a lease is whole
    seconds on the wire), the renew deadline and retry period keep their real length."""
    scale = SLOWDOWN if clock is not None else 1.0
    return LeaderElector(
        lock,
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE / scale,
        retry_period=RETRY_PERIOD / scale,
        clock=clock,
        **callbacks,
    )


class ContenderLock:
    """A LeaseLock that can be cut off from the API server and counts conflicts it met."""

    def __init__(self, inner: LeaseLock) -> None:
        self.inner = inner
        self.partitioned = False
        self.conflicts = 0

    @property
    def identity(self) -> str:
        return self.inner.identity

    def describe(self) -> str:
        return self.inner.describe()

    async def _call(self, call: Callable[[], Any]) -> Any:
        if self.partitioned:
            raise ConnectionFailed("partitioned from the API server")
        try:
            return await call()
        except Conflict:
            self.conflicts += 1
            raise

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        result: tuple[LeaderElectionRecord, bytes] = await self._call(self.inner.get)
        return result

    async def create(self, record: LeaderElectionRecord) -> None:
        await self._call(lambda: self.inner.create(record))

    async def update(self, record: LeaderElectionRecord) -> None:
        await self._call(lambda: self.inner.update(record))


@dataclass
class Terms:
    """Leader terms as (start, end, identity), on the loop's clock; a violation is recorded
    the moment a term starts while another is running."""

    running: set[str] = field(default_factory=set)
    spans: list[tuple[float, float, str]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    started: dict[str, float] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def work(self, identity: str) -> Callable[[], Any]:
        async def lead() -> None:
            loop = asyncio.get_running_loop()
            if self.running:
                self.violations.append(f"{identity} started while {self.running} led")
            self.running.add(identity)
            start = self.started[identity] = loop.time()
            self.changed.set()
            try:
                await asyncio.Event().wait()
            finally:
                self.running.discard(identity)
                self.spans.append((start, loop.time(), identity))
                self.changed.set()

        return lead

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Every start and end of a term sets ``changed``: nothing else moves ``running``."""
        await wait_until(predicate, changed=self.changed, timeout=timeout)

    def leader(self) -> str:
        (only,) = self.running
        return only

    def assert_never_two_leaders(self) -> None:
        assert not self.violations
        spans = sorted(self.spans)
        for (_, end, first), (start, _, second) in itertools.pairwise(spans):
            assert end <= start, f"{first} led until {end}, {second} started at {start}"


@dataclass
class Cluster:
    server: FakeAPIServer
    client: Client
    terms: Terms = field(default_factory=Terms)
    locks: dict[str, ContenderLock] = field(default_factory=dict)
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def start(self, identity: str, **kwargs: Any) -> LeaderElector:
        lock = ContenderLock(LeaseLock(self.client, NAMESPACE, LEASE, identity))
        elector = make_elector(lock, on_started_leading=self.terms.work(identity), **kwargs)
        self.locks[identity] = lock
        self.tasks[identity] = asyncio.create_task(elector.run(), name=identity)
        return elector

    def lease_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.server.get("leases", NAMESPACE, LEASE)["spec"]
        return spec

    async def renewals(self, count: int) -> None:
        """Wait until the holder has renewed the lease ``count`` more times (each renewal
        writes a new renewTime), instead of sleeping for what should be enough."""
        seen = [self.lease_spec()["renewTime"]]

        def renewed() -> bool:
            current = self.lease_spec()["renewTime"]
            if current == seen[-1]:
                return False
            seen.append(current)
            return True

        for _ in range(count):
            # The truth is on the server, which announces no writes: poll it. The timeout
            # bounds a hang only.
            await wait_until(
                renewed, poll=RETRY_PERIOD / 10, timeout=30, what="the lease's next renewal"
            )


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with FakeAPIServer() as server, server.client() as client:
        state = Cluster(server, client)
        try:
            yield state
        finally:
            for task in state.tasks.values():
                task.cancel()
            if state.tasks:
                await asyncio.wait(state.tasks.values())
            state.terms.assert_never_two_leaders()


async def test_two_electors_one_leads_and_the_other_takes_over_on_release(
    cluster: Cluster,
) -> None:
    clock = SlowedClock()
    cluster.start("a", clock=clock)
    cluster.start("b", clock=clock)
    await cluster.terms.wait_for(lambda: len(cluster.terms.running) == 1)
    first = cluster.terms.leader()
    other = "b" if first == "a" else "a"
    assert cluster.lease_spec()["holderIdentity"] == first
    assert cluster.lease_spec()["leaseDurationSeconds"] == 1

    cluster.tasks[first].cancel()
    released_at = clock.monotonic()
    # A contender that ignored the release would wait out the lease it last saw (1 s on
    # its clock, ten real seconds) from a moment after the release: the hand-over must
    # come sooner. The wait's own deadline is only a bound on a hang.
    await cluster.terms.wait_for(lambda: cluster.terms.running == {other}, timeout=30.0)
    assert clock.monotonic() - released_at < LEASE_DURATION
    assert cluster.lease_spec()["holderIdentity"] == other
    assert cluster.lease_spec()["leaseTransitions"] == 1


async def test_simultaneous_first_acquisitions_let_exactly_one_win(cluster: Cluster) -> None:
    for name in ("a", "b", "c"):
        cluster.start(name)
    await cluster.terms.wait_for(lambda: len(cluster.terms.running) == 1)
    await cluster.renewals(3)  # the others keep retrying meanwhile, all on one Lease
    assert len(cluster.terms.running) == 1
    assert len(cluster.server.objects("leases", NAMESPACE)) == 1


@pytest.mark.parametrize("contenders", [2, 3])
async def test_a_leader_cut_off_from_the_api_steps_down_before_another_takes_over(
    contenders: int, cluster: Cluster
) -> None:
    names = [f"replica-{i}" for i in range(contenders)]
    for name in names:
        cluster.start(name)
    await cluster.terms.wait_for(lambda: len(cluster.terms.running) == 1)
    first = cluster.terms.leader()

    cluster.locks[first].partitioned = True
    await cluster.terms.wait_for(lambda: cluster.terms.running - {first} != set())
    assert cluster.tasks[first].done()  # it gave up within its renew deadline
    second = cluster.terms.leader()
    assert second != first
    (first_term,) = [span for span in cluster.terms.spans if span[2] == first]
    assert cluster.terms.started[second] >= first_term[1]
    cluster.terms.assert_never_two_leaders()


async def test_a_lease_stolen_mid_term_ends_the_term_and_is_waited_out(
    cluster: Cluster,
) -> None:
    for name in ("a", "b", "c"):
        cluster.start(name)
    await cluster.terms.wait_for(lambda: len(cluster.terms.running) == 1)
    first = cluster.terms.leader()
    loop = asyncio.get_running_loop()

    lease = cluster.server.get("leases", NAMESPACE, LEASE)
    lease["spec"] = {
        **lease["spec"],
        "holderIdentity": "intruder",
        "leaseDurationSeconds": 1,
        "leaseTransitions": lease["spec"]["leaseTransitions"] + 1,
    }
    cluster.server.update(lease)
    stolen_at = loop.time()

    await cluster.terms.wait_for(lambda: first not in cluster.terms.running)
    # It stepped down at its renew deadline (after the next renewal met the 409) instead
    # of holding on. The bound's slack absorbs loop lag; the property that matters, no
    # overlap with the next leader's term, is checked exactly by assert_never_two_leaders.
    assert loop.time() - stolen_at < RETRY_PERIOD + RENEW_DEADLINE + STEP_DOWN_SLACK
    assert cluster.locks[first].conflicts >= 1  # its fast-path renewal met a 409
    await cluster.terms.wait_for(lambda: len(cluster.terms.running) == 1)
    assert loop.time() - stolen_at >= 1.0  # the intruder's lease was waited out
    assert cluster.lease_spec()["holderIdentity"] == cluster.terms.leader()


async def test_leadership_scope_over_http_releases_on_exit(cluster: Cluster) -> None:
    elector = make_elector(LeaseLock(cluster.client, NAMESPACE, LEASE, "scoped"))
    async with elector.leadership():
        assert cluster.lease_spec()["holderIdentity"] == "scoped"
        await cluster.renewals(2)
        assert elector.is_leader()
    spec = cluster.lease_spec()
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1


def load_example(name: str) -> Any:
    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


async def test_leader_election_example_hands_over_from_alpha_to_beta() -> None:
    example = load_example("leader_election")
    outcome = await asyncio.wait_for(example.main(), 30)
    assert outcome.leaders == ["alpha", "beta"]
    # Waiting out the released lease would take at least its duration (1 s, counted from
    # a moment after the release); taking over at the next retry takes a fraction of it.
    assert outcome.handover_seconds < example.LEASE_DURATION
