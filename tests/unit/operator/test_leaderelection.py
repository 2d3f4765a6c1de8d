"""LeaderElector on a fake clock over an in-memory lock.

Ported from client-go v0.32 ``tools/leaderelection/leaderelection_test.go``
(TestTryAcquireOrRenew, TestLeaseSpecToLeaderElectionRecordRoundTrip, TestReleaseLease,
TestReleaseOnCancellation, TestFastPathLeaderElection, TestLeaderElectionConfigValidation),
plus the renew deadline, the acquire jitter, callbacks, ``leadership()`` and competing
electors. No test sleeps: time moves only through :class:`FakeClock`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from aioinformer import State
from aioinformer.errors import AlreadyExists, Conflict, NotFound, ServerError
from aioinformer.operator.leaderelection import (
    JITTER_FACTOR,
    LeaderElectionRecord,
    LeaderElector,
    LeadershipLost,
    LeaseLock,
    lease_spec_to_record,
    record_to_lease_spec,
)
from aioinformer.testing import FakeClock
from aioinformer.workqueue import set_metrics_provider
from tests._support_metrics import (  # noqa: F401
    RecordingProvider,
    WorkqueueOnlyProvider,
    restore_installed_provider,
)
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

# -- an in-memory lock ------------------------------------------------------------------


@dataclass
class LeaseStore:
    """The one stored record all contenders' locks share, versioned like a resourceVersion."""

    record: LeaderElectionRecord | None = None
    version: int = 0

    def write(self, record: LeaderElectionRecord) -> None:
        """A write by someone outside the election (``kubectl edit``, a rogue client)."""
        self.record = record
        self.version += 1


FAIL = ServerError({"code": 500, "message": "injected"})
HANG = "hang"


@dataclass
class MemoryLock:
    """A ResourceLock over a LeaseStore with optimistic concurrency and scripted faults.

    ``faults[op]`` is a queue of what the next calls of ``op`` do: ``None`` to proceed, an
    exception to raise instead, or ``HANG`` to block until cancelled. ``partitioned`` makes every
    call fail, as if the network to the API server were down.
    """

    store: LeaseStore
    identity: str
    clock: FakeClock | None = None
    ops: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    faults: dict[str, list[BaseException | str | None]] = field(default_factory=dict)
    partitioned: bool = False
    on_op: Callable[[str], None] | None = None
    # Version of the store as last read or written through this lock; None before that.
    seen: int | None = None

    def describe(self) -> str:
        return "default/lock"

    async def _enter(self, op: str) -> None:
        self.ops.append(op)
        if self.clock is not None:
            self.times.append(self.clock.monotonic())
        if self.on_op is not None:
            self.on_op(op)
        await asyncio.sleep(0)
        if self.partitioned:
            raise ServerError({"code": 503, "message": "partitioned"})
        queue = self.faults.get(op)
        if queue:
            fault = queue.pop(0)
            if fault is None:
                return
            if fault == HANG:
                await asyncio.Event().wait()
            assert isinstance(fault, BaseException)
            raise fault

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        await self._enter("get")
        if self.store.record is None:
            raise NotFound({"code": 404, "reason": "NotFound"})
        self.seen = self.store.version
        return self.store.record, repr(dataclasses.astuple(self.store.record)).encode()

    async def create(self, record: LeaderElectionRecord) -> None:
        await self._enter("create")
        if self.store.record is not None:
            raise AlreadyExists({"code": 409, "reason": "AlreadyExists"})
        self.store.write(record)
        self.seen = self.store.version

    async def update(self, record: LeaderElectionRecord) -> None:
        await self._enter("update")
        if self.seen is None:
            raise RuntimeError("update before get or create")
        if self.seen != self.store.version:
            raise Conflict({"code": 409, "reason": "Conflict"})
        self.store.write(record)
        self.seen = self.store.version


def held_by(holder: str, seconds: int = 10, transitions: int = 0) -> LeaderElectionRecord:
    stamp = datetime(2024, 1, 1, tzinfo=UTC)
    return LeaderElectionRecord(holder, seconds, stamp, stamp, transitions)


def make_elector(lock: MemoryLock, clock: FakeClock, **kwargs: Any) -> LeaderElector:
    kwargs.setdefault("lease_duration", 15.0)
    kwargs.setdefault("renew_deadline", 10.0)
    kwargs.setdefault("retry_period", 2.0)
    return LeaderElector(lock, clock=clock, **kwargs)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> LeaseStore:
    return LeaseStore()


@pytest.fixture
def lock(store: LeaseStore, clock: FakeClock) -> MemoryLock:
    return MemoryLock(store, "baz", clock)


# -- configuration ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param(
            {"lease_duration": 0.0}, "lease_duration must be greater than zero", id="zero-lease"
        ),
        pytest.param(
            {"renew_deadline": -1.0},
            "renew_deadline must be greater than zero",
            id="negative-renew",
        ),
        pytest.param(
            {"retry_period": 0.0}, "retry_period must be greater than zero", id="zero-retry"
        ),
        pytest.param(
            {"lease_duration": 10.0, "renew_deadline": 10.0},
            "lease_duration must be greater than renew_deadline",
            id="lease-equals-renew",
        ),
        pytest.param(
            {"renew_deadline": 2.4, "retry_period": 2.0},
            "renew_deadline must be greater than retry_period",
            id="renew-within-jittered-retry",
        ),
    ],
)
def test_invalid_timing_is_rejected(
    kwargs: dict[str, float], message: str, lock: MemoryLock, clock: FakeClock
) -> None:
    with pytest.raises(ValueError, match=message):
        make_elector(lock, clock, **kwargs)


def test_client_go_core_defaults_and_a_valid_configuration_are_accepted(
    lock: MemoryLock, clock: FakeClock
) -> None:
    elector = LeaderElector(lock)
    assert (elector.lease_duration, elector.renew_deadline, elector.retry_period) == (15, 10, 2)
    assert elector.release_on_cancel
    make_elector(lock, clock, lease_duration=15.0, renew_deadline=2.0, retry_period=1.0)
    assert elector.state is State.NEW
    assert not elector.is_leader()
    assert elector.get_leader() == ""


def test_empty_lock_identity_is_rejected(store: LeaseStore, clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="lock identity is empty"):
        make_elector(MemoryLock(store, ""), clock)


# -- one attempt: TestTryAcquireOrRenew -------------------------------------------------


@dataclass
class AttemptCase:
    stored: LeaderElectionRecord | None
    expect_success: bool
    out_holder: str
    transitions: int
    ops: list[str]
    # Seconds to let pass after a first, failed attempt before the attempt under test.
    retry_after: float | None = None


ATTEMPT_CASES = {
    "acquire from no object": AttemptCase(None, True, "baz", 0, ["get", "create"]),
    "acquire from an empty lease spec": AttemptCase(
        LeaderElectionRecord(), True, "baz", 1, ["get", "update"]
    ),
    "acquire from led object after its lease duration seconds": AttemptCase(
        held_by("bing", 3), True, "baz", 1, ["get", "get", "update"], retry_after=3.0
    ),
    "acquire from led, unacked object": AttemptCase(
        held_by("bing", 10), True, "baz", 1, ["get", "get", "update"], retry_after=11.0
    ),
    "acquire from empty led, acked object": AttemptCase(
        held_by("", 10), True, "baz", 1, ["get", "update"]
    ),
    "don't acquire from led, acked object": AttemptCase(
        held_by("bing", 10), False, "bing", 0, ["get"]
    ),
    "don't acquire from led object just before its lease duration": AttemptCase(
        held_by("bing", 10), False, "bing", 0, ["get", "get"], retry_after=9.999
    ),
    "transitions count on from the stored record": AttemptCase(
        held_by("", 1, transitions=4), True, "baz", 5, ["get", "update"]
    ),
}


@pytest.mark.parametrize("case", ATTEMPT_CASES.values(), ids=ATTEMPT_CASES.keys())
async def test_try_acquire_or_renew(
    case: AttemptCase, store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    store.record = case.stored
    elector = make_elector(lock, clock, lease_duration=10.0, renew_deadline=5.0)
    if case.retry_after is not None:
        assert not await elector._try_acquire_or_renew()
        await clock.advance(case.retry_after)

    assert await elector._try_acquire_or_renew() is case.expect_success

    assert elector.get_leader() == case.out_holder
    assert elector._observed_record.leader_transitions == case.transitions
    assert lock.ops == case.ops
    assert store.record is None or store.record.holder_identity == case.out_holder


async def test_renewing_an_acquired_lease_writes_without_reading_and_keeps_acquire_time(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector = make_elector(lock, clock)
    assert await elector._try_acquire_or_renew()
    acquired = store.record
    assert acquired is not None
    lock.ops.clear()
    await clock.advance(2.0)

    assert await elector._try_acquire_or_renew()

    assert lock.ops == ["update"]
    assert store.record is not None
    assert store.record.holder_identity == "baz"
    assert store.record.acquire_time == acquired.acquire_time
    assert store.record.leader_transitions == 0
    assert store.record.lease_duration_seconds == 15


async def test_a_renewal_by_the_holder_restarts_the_wait_for_expiry(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    store.record = held_by("bing", 10)
    elector = make_elector(lock, clock)
    assert not await elector._try_acquire_or_renew()
    await clock.advance(8.0)
    store.write(dataclasses.replace(held_by("bing", 10), renew_time=datetime.now(UTC)))
    await clock.advance(3.0)  # 11 s after the first sighting, 3 s after the renewal

    assert not await elector._try_acquire_or_renew()  # the renewal is seen now, at 11 s
    await clock.advance(9.5)
    assert not await elector._try_acquire_or_renew()
    await clock.advance(0.5)  # 10 s after this elector saw the renewal
    assert await elector._try_acquire_or_renew()
    assert elector.get_leader() == "baz"


async def test_remote_timestamps_never_decide_expiry(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    ancient = datetime(2000, 1, 1, tzinfo=UTC)
    store.record = LeaderElectionRecord("bing", 10, ancient, ancient, 0)
    elector = make_elector(lock, clock)

    assert not await elector._try_acquire_or_renew()
    assert elector.get_leader() == "bing"


async def test_a_write_that_conflicts_fails_the_attempt(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    store.record = held_by("", 1)

    def sneak_in(op: str) -> None:
        if op == "update":
            store.write(held_by("intruder", 10))

    lock.on_op = sneak_in
    elector = make_elector(lock, clock)

    assert not await elector._try_acquire_or_renew()
    assert store.record is not None
    assert store.record.holder_identity == "intruder"
    assert elector.get_leader() == ""


async def test_a_failed_read_fails_the_attempt_without_writing(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    lock.faults["get"] = [FAIL]
    elector = make_elector(lock, clock)

    assert not await elector._try_acquire_or_renew()
    assert lock.ops == ["get"]
    assert store.record is None


async def test_losing_the_creation_race_fails_the_attempt(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    def sneak_in(op: str) -> None:
        if op == "create":
            store.write(held_by("bing", 10))

    lock.on_op = sneak_in
    elector = make_elector(lock, clock)

    assert not await elector._try_acquire_or_renew()
    assert lock.ops == ["get", "create"]


# -- the Lease wire format: TestLeaseSpecToLeaderElectionRecordRoundTrip ----------------


def test_lease_spec_and_record_round_trip() -> None:
    spec = {
        "holderIdentity": "foo",
        "leaseDurationSeconds": 10,
        "acquireTime": "2024-05-06T07:08:09.123456Z",
        "renewTime": "2024-05-06T07:08:19.654321Z",
        "leaseTransitions": 1,
    }
    record = lease_spec_to_record(spec)
    assert record == LeaderElectionRecord(
        holder_identity="foo",
        lease_duration_seconds=10,
        acquire_time=datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
        renew_time=datetime(2024, 5, 6, 7, 8, 19, 654321, tzinfo=UTC),
        leader_transitions=1,
    )
    assert record_to_lease_spec(record) == spec
    assert lease_spec_to_record(record_to_lease_spec(record)) == record


def test_an_empty_lease_spec_reads_as_an_unheld_record() -> None:
    assert lease_spec_to_record({}) == LeaderElectionRecord()
    assert record_to_lease_spec(LeaderElectionRecord()) == {
        "holderIdentity": "",
        "leaseDurationSeconds": 0,
        "leaseTransitions": 0,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "2024-01-02T03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), id="seconds"
        ),
        pytest.param(
            "2024-01-02T03:04:05.123456789Z",
            datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
            id="nanoseconds-truncated",
        ),
        pytest.param(
            "2024-01-02T05:04:05.5+02:00",
            datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=UTC),
            id="offset-normalised-to-utc",
        ),
        pytest.param("yesterday", None, id="garbage"),
        pytest.param(1700000000, None, id="not-a-string"),
    ],
)
def test_lease_timestamps_parse_leniently(text: object, expected: datetime | None) -> None:
    record = lease_spec_to_record({"holderIdentity": "a", "renewTime": text})
    assert record.renew_time == expected


def test_timestamps_are_written_as_utc_microtime() -> None:
    local = datetime(2024, 1, 2, 5, 4, 5, 7, tzinfo=timezone(timedelta(hours=2)))
    spec = record_to_lease_spec(LeaderElectionRecord("a", 1, local, local, 0))
    assert spec["acquireTime"] == "2024-01-02T03:04:05.000007Z"


# -- LeaseLock over a resource client ---------------------------------------------------


class StubLeases:
    """Just enough of a ResourceClient for leases: get/create/update with RV preconditions."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.rv = 0
        self.resources: list[tuple[str, str | None]] = []

    def resource(self, resource: str, namespace: str | None = None) -> StubLeases:
        self.resources.append((resource, namespace))
        return self

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.rv)}}
        self.objects[obj["metadata"]["name"]] = obj
        return obj

    async def get(self, name: str) -> dict[str, Any]:
        if name not in self.objects:
            raise NotFound({"code": 404})
        return self.objects[name]

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj["metadata"]["name"] in self.objects:
            raise AlreadyExists({"code": 409, "reason": "AlreadyExists"})
        return self._stamp(obj)

    async def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        current = self.objects[obj["metadata"]["name"]]
        if obj["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
            raise Conflict({"code": 409, "reason": "Conflict"})
        return self._stamp(obj)


async def test_lease_lock_creates_reads_and_updates_a_lease_with_rv_preconditions() -> None:
    api = StubLeases()
    first = LeaseLock(api, "kube-system", "ctrl", "a")
    second = LeaseLock(api, "kube-system", "ctrl", "b")
    assert api.resources == [("coordination.k8s.io/v1/leases", "kube-system")] * 2
    assert first.identity == "a"
    assert first.describe() == "kube-system/ctrl"
    with pytest.raises(NotFound):
        await first.get()

    await first.create(held_by("a", 15))
    lease = api.objects["ctrl"]
    assert lease["kind"] == "Lease"
    assert lease["apiVersion"] == "coordination.k8s.io/v1"
    assert lease["metadata"]["namespace"] == "kube-system"
    assert lease["spec"]["holderIdentity"] == "a"

    record, raw = await second.get()
    assert record == held_by("a", 15)
    await first.update(held_by("a", 15, transitions=0))  # first's RV is still current
    _, raw_after = await second.get()
    assert raw_after == raw  # the same record written again reads the same
    await first.update(held_by("a", 16))
    with pytest.raises(Conflict):
        await second.update(held_by("b", 15))  # second last saw an older RV
    _, raw_changed = await second.get()
    assert raw_changed != raw
    await second.update(held_by("b", 15, transitions=1))
    assert api.objects["ctrl"]["spec"]["holderIdentity"] == "b"
    assert "rv='" in repr(second)


async def test_a_labelled_lease_lock_creates_its_lease_labelled_and_keeps_the_labels() -> None:
    api = StubLeases()
    ring = {"alpha.sharding.timebertt.dev/controllerring": "cms"}
    lock = LeaseLock(api, "ops", "shard-a", "shard-a", labels=ring)
    await lock.create(held_by("shard-a", 15))
    assert api.objects["shard-a"]["metadata"]["labels"] == ring
    # Someone strips the label (and adds one of their own): the next renewal puts it back.
    stripped = api.objects["shard-a"]
    api.objects["shard-a"] = {
        **stripped,
        "metadata": {**stripped["metadata"], "labels": {"x": "y"}},
    }
    await lock.get()
    await lock.update(held_by("shard-a", 15, transitions=0))
    assert api.objects["shard-a"]["metadata"]["labels"] == {"x": "y", **ring}
    # An unlabelled lock leaves labels alone.
    plain = LeaseLock(api, "ops", "shard-a", "other")
    await plain.get()
    await plain.update(held_by("other", 15, transitions=1))
    assert api.objects["shard-a"]["metadata"]["labels"] == {"x": "y", **ring}


async def test_lease_lock_refuses_to_update_a_lease_it_never_saw() -> None:
    with pytest.raises(RuntimeError, match="never read nor created"):
        await LeaseLock(StubLeases(), "ns", "ctrl", "a").update(held_by("a"))


# -- release: TestReleaseLease ----------------------------------------------------------


async def test_release_gives_up_an_acquired_lease(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector = make_elector(lock, clock)
    assert await elector._try_acquire_or_renew()

    await elector._release()

    assert lock.ops == ["get", "create", "update"]
    assert store.record is not None
    assert store.record.holder_identity == ""
    assert store.record.lease_duration_seconds == 1
    assert store.record.leader_transitions == 0
    assert elector.get_leader() == ""


async def test_release_does_nothing_when_another_holds_the_lease(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    store.record = held_by("bing")
    elector = make_elector(lock, clock)
    assert not await elector._try_acquire_or_renew()

    await elector._release()

    assert lock.ops == ["get"]
    assert store.record == held_by("bing")


async def test_release_retries_once_at_the_current_version_after_a_conflict(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector = make_elector(lock, clock)
    assert await elector._try_acquire_or_renew()
    assert store.record is not None
    store.write(store.record)  # a renewal cancelled in flight, applied by the server anyway

    await elector._release()

    assert lock.ops == ["get", "create", "update", "get", "update"]
    assert store.record.holder_identity == ""
    assert elector.get_leader() == ""


async def test_release_after_a_conflict_leaves_a_lease_taken_by_another_alone(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector = make_elector(lock, clock)
    assert await elector._try_acquire_or_renew()
    store.write(held_by("bing", 10, transitions=1))

    await elector._release()

    assert lock.ops == ["get", "create", "update", "get"]
    assert store.record == held_by("bing", 10, transitions=1)


async def test_a_failed_release_is_logged_not_raised(
    lock: MemoryLock, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    elector = make_elector(lock, clock)
    assert await elector._try_acquire_or_renew()
    lock.faults["update"] = [FAIL]

    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.leaderelection"):
        await elector._release()

    assert "releasing lease default/lock failed" in caplog.text
    assert elector.get_leader() == "baz"


# -- running: acquire, renew, lose ------------------------------------------------------


@dataclass
class Recorder:
    """Callbacks that log what happened, when (virtual time), for assertions."""

    clock: FakeClock
    events: list[tuple[str, float]] = field(default_factory=list)
    leaders: list[str] = field(default_factory=list)

    def log(self, what: str) -> None:
        self.events.append((what, self.clock.monotonic()))

    def names(self) -> list[str]:
        return [what for what, _ in self.events]

    def at(self, what: str) -> float:
        return next(when for name, when in self.events if name == what)

    async def lead(self) -> None:
        self.log("started")
        try:
            await asyncio.Event().wait()
        finally:
            self.log("work-cancelled")

    def stopped(self) -> None:
        self.log("stopped")

    def new_leader(self, identity: str) -> None:
        self.leaders.append(identity)


def recorded_elector(
    lock: MemoryLock, clock: FakeClock, **kwargs: Any
) -> tuple[LeaderElector, Recorder]:
    rec = Recorder(clock)
    kwargs.setdefault("on_started_leading", rec.lead)
    kwargs.setdefault("on_stopped_leading", rec.stopped)
    kwargs.setdefault("on_new_leader", rec.new_leader)
    return make_elector(lock, clock, **kwargs), rec


@contextlib.asynccontextmanager
async def running(elector: LeaderElector) -> AsyncIterator[asyncio.Task[None]]:
    """Run the elector in a task; cancel and await it on the way out."""
    task = asyncio.create_task(elector.run())
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.wait([task])
        if not task.cancelled():
            task.exception()  # retrieved: the test asserts on it where it matters


async def test_elector_acquires_then_renews_at_once_and_every_retry_period(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector, rec = recorded_elector(lock, clock)
    async with running(elector):
        await wait_until(lambda: rec.names() == ["started"], between=clock.settle)
        assert elector.state is State.RUNNING
        assert elector.is_leader()
        assert elector.get_leader() == "baz"
        await clock.advance(4.0)
        assert lock.ops == ["get", "create", "update", "update", "update"]
        assert lock.times == [0.0, 0.0, 0.0, 2.0, 4.0]
        assert rec.leaders == ["baz"]
        assert "state=RUNNING" in repr(elector)


async def test_leadership_is_lost_when_no_renewal_succeeds_within_the_renew_deadline(
    lock: MemoryLock, clock: FakeClock
) -> None:
    elector, rec = recorded_elector(lock, clock)
    async with running(elector) as task:
        await wait_until(lambda: len(lock.ops) == 3, between=clock.settle)
        lock.partitioned = True
        await clock.advance(12.0)  # virtual time stops at the expected loss
        await asyncio.wait_for(task, 5)
        assert task.result() is None

    assert rec.names() == ["started", "work-cancelled", "stopped"]
    assert rec.at("work-cancelled") == 12.0  # the round began at 2 s, its deadline is 10 s
    attempts = sorted({t for t in lock.times[3:] if t < 12.0})
    assert attempts == [2.0, 4.0, 6.0, 8.0, 10.0]
    assert elector.state is State.STOPPED
    assert not elector.is_leader()


async def test_a_hung_renewal_is_cancelled_at_the_deadline_and_the_lease_released(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector, rec = recorded_elector(lock, clock)
    async with running(elector) as task:
        await wait_until(lambda: len(lock.ops) == 3, between=clock.settle)
        lock.faults["update"] = [HANG]
        await clock.advance(12.0)
        await asyncio.wait_for(task, 5)

    assert rec.at("stopped") == 12.0
    assert lock.ops[3:] == ["update", "update"]  # the hung renewal, then the release
    assert store.record is not None
    assert store.record.holder_identity == ""


async def test_a_renewal_that_succeeds_before_the_deadline_keeps_leadership(
    lock: MemoryLock, clock: FakeClock
) -> None:
    elector, rec = recorded_elector(lock, clock)
    async with running(elector):
        await wait_until(lambda: len(lock.ops) == 3, between=clock.settle)
        # The rounds' attempts at 2, 4, 6 and 8 s fail on both paths; the one at 10 s works.
        lock.faults["update"] = [FAIL] * 4
        lock.faults["get"] = [FAIL] * 4
        await clock.advance(30.0)
        assert elector.is_leader()
        assert rec.names() == ["started"]


async def test_a_lease_stolen_mid_term_ends_leadership_at_the_renew_deadline(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector, rec = recorded_elector(lock, clock)
    async with running(elector) as task:
        await wait_until(lambda: len(lock.ops) == 3, between=clock.settle)
        await clock.advance(1.0)
        store.write(held_by("thief", 30, transitions=1))
        await clock.advance(11.0)
        await asyncio.wait_for(task, 5)

    assert rec.at("stopped") == 12.0
    assert lock.ops[3:5] == ["update", "get"]  # the fast path meets a conflict, then reads
    assert rec.leaders == ["baz", "thief"]
    assert store.record == held_by("thief", 30, transitions=1)  # not ours: not released


@pytest.mark.parametrize(
    ("draw", "interval"),
    [
        pytest.param(0.0, 2.0, id="no-stretch"),
        pytest.param(0.5, 2.0 + 0.5 * JITTER_FACTOR * 2.0, id="half-stretch"),
        pytest.param(0.999, 2.0 + 0.999 * JITTER_FACTOR * 2.0, id="almost-full-stretch"),
    ],
)
async def test_acquire_retries_after_retry_period_stretched_by_jitter(
    draw: float,
    interval: float,
    store: LeaseStore,
    lock: MemoryLock,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(random, "random", lambda: draw)  # the jitter source
    store.record = held_by("bing", 1000)
    elector, _ = recorded_elector(lock, clock)
    async with running(elector):
        await clock.advance(4 * interval + 0.001)
    assert lock.times == pytest.approx([k * interval for k in range(5)])


async def test_acquire_jitter_varies_within_its_bounds(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    store.record = held_by("bing", 1000)
    elector, _ = recorded_elector(lock, clock)
    async with running(elector):
        await clock.advance(200.0)
    gaps = [b - a for a, b in itertools.pairwise(lock.times)]
    assert len(gaps) > 40
    assert all(2.0 <= gap < 2.0 * (1 + JITTER_FACTOR) for gap in gaps)
    assert max(gaps) - min(gaps) > 1.0


async def test_an_acquire_attempt_that_hangs_is_abandoned_at_the_renew_deadline(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(random, "random", lambda: 0.0)  # no jitter
    lock.faults["get"] = [HANG]
    elector, rec = recorded_elector(lock, clock)
    async with running(elector):
        await clock.advance(10.0)
        assert rec.names() == []
        await clock.advance(2.0)  # abandoned at 10 s, retried one retry period later
        await wait_until(lambda: rec.names() == ["started"], between=clock.settle)
    assert lock.times[:3] == [0.0, 12.0, 12.0]
    assert lock.ops[:3] == ["get", "get", "create"]


async def test_acquire_takes_over_once_the_lease_expires_by_our_clock(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    store.record = held_by("bing", 10)
    elector, rec = recorded_elector(lock, clock)
    async with running(elector):
        await clock.advance(20.0)
        assert elector.is_leader()
        before = [t for t in lock.times if t < rec.at("started")]
        assert rec.at("started") >= 10.0
        assert max(before) < 10.0
        assert rec.leaders == ["bing", "baz"]
        assert store.record is not None
        assert store.record.leader_transitions == 1


# -- ReleaseOnCancel and the fast path: TestReleaseOnCancellation, TestFastPathLeaderElection


@pytest.mark.parametrize(
    "faults",
    [
        pytest.param({"update": [HANG]}, id="cancelled-during-update"),
        pytest.param({"update": [FAIL], "get": [HANG]}, id="cancelled-during-get"),
    ],
)
async def test_cancelling_run_stops_the_work_then_releases_the_lease(
    faults: dict[str, list[BaseException | str | None]],
    store: LeaseStore,
    lock: MemoryLock,
    clock: FakeClock,
) -> None:
    elector, rec = recorded_elector(lock, clock)
    async with running(elector) as task:
        await wait_until(lambda: len(lock.ops) == 3, between=clock.settle)
        lock.faults = faults
        lock.on_op = rec.log
        await clock.advance(2.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    assert rec.names()[-3:] == ["work-cancelled", "update", "stopped"]
    assert store.record is not None
    assert store.record.holder_identity == ""
    assert store.record.lease_duration_seconds == 1
    assert elector.state is State.STOPPED


async def test_without_release_on_cancel_the_lease_is_left_to_expire(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector, rec = recorded_elector(lock, clock, release_on_cancel=False)
    async with running(elector):
        await wait_until(lambda: len(lock.ops) == 3, between=clock.settle)
    assert rec.names() == ["started", "work-cancelled", "stopped"]
    assert lock.ops == ["get", "create", "update"]
    assert store.record is not None
    assert store.record.holder_identity == "baz"


@pytest.mark.parametrize(
    ("update_faults", "cancel_at_update", "expected_ops"),
    [
        pytest.param([], 2, ["get", "create", "update", "update"], id="fast-path-after-acquire"),
        pytest.param(
            [None, Conflict({"code": 409})],
            4,
            ["get", "create", "update", "update", "get", "update", "update"],
            id="slow-path-after-fast-path-fails",
        ),
    ],
)
async def test_renewals_take_the_fast_path_and_fall_back_to_reading(
    update_faults: list[BaseException | str | None],
    cancel_at_update: int,
    expected_ops: list[str],
    lock: MemoryLock,
    clock: FakeClock,
) -> None:
    elector, _ = recorded_elector(lock, clock, release_on_cancel=False)
    lock.faults["update"] = update_faults
    async with running(elector) as task:

        def cancel_at(op: str) -> None:
            if op == "update" and lock.ops.count("update") == cancel_at_update:
                task.cancel()

        lock.on_op = cancel_at
        await clock.advance(10.0)
        assert task.done()
    assert lock.ops == expected_ops


# -- callbacks --------------------------------------------------------------------------


async def test_on_stopped_leading_is_called_even_if_the_elector_never_led(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    store.record = held_by("bing", 1000)
    elector, rec = recorded_elector(lock, clock)
    async with running(elector):
        await clock.advance(5.0)
    assert rec.names() == ["stopped"]
    assert rec.leaders == ["bing"]
    assert store.record == held_by("bing", 1000)


async def test_leader_work_that_returns_does_not_end_leadership(
    lock: MemoryLock, clock: FakeClock
) -> None:
    done: list[float] = []
    elector, rec = recorded_elector(lock, clock, on_started_leading=lambda: done.append(1.0))
    async with running(elector):
        await clock.advance(10.0)
        assert done == [1.0]
        assert elector.is_leader()
        assert lock.ops.count("update") == 6
    assert rec.names() == ["stopped"]


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_leader_work_that_fails_ends_leadership_and_run_raises(
    flavour: str, store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    def fail_sync() -> None:
        raise ValueError("boom")

    async def fail_async() -> None:
        await asyncio.sleep(0)
        raise ValueError("boom")

    work = fail_sync if flavour == "sync" else fail_async
    elector, rec = recorded_elector(lock, clock, on_started_leading=work)
    with pytest.raises(ValueError, match="boom"):
        await asyncio.wait_for(elector.run(), 5)
    assert rec.names() == ["stopped"]
    assert store.record is not None
    assert store.record.holder_identity == ""


async def test_async_callbacks_are_awaited_and_new_leaders_reported_in_order(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    seen: list[str] = []
    stopped: list[str] = []

    async def on_new_leader(identity: str) -> None:
        await asyncio.sleep(0)
        seen.append(identity)

    async def on_stopped_leading() -> None:
        await asyncio.sleep(0)
        stopped.append("stopped")

    store.record = held_by("bing", 5)
    elector = make_elector(
        lock, clock, on_new_leader=on_new_leader, on_stopped_leading=on_stopped_leading
    )
    async with running(elector):
        await clock.advance(10.0)
        assert elector.is_leader()
    assert seen == ["bing", "baz"]
    assert stopped == ["stopped"]


async def test_a_failing_on_new_leader_is_logged_and_later_reports_still_arrive(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []

    def on_new_leader(identity: str) -> None:
        seen.append(identity)
        if identity == "bing":
            raise RuntimeError("bad callback")

    store.record = held_by("bing", 5)
    elector = make_elector(lock, clock, on_new_leader=on_new_leader)
    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.leaderelection"):
        async with running(elector):
            await clock.advance(10.0)
            await wait_until(lambda: len(seen) == 2, between=clock.settle)
    assert seen == ["bing", "baz"]
    assert "on_new_leader" in caplog.text


async def test_an_elector_runs_only_once(lock: MemoryLock, clock: FakeClock) -> None:
    elector = make_elector(lock, clock)
    async with running(elector):
        await wait_until(elector.is_leader, between=clock.settle)
    with pytest.raises(RuntimeError, match="runs only once"):
        await elector.run()


# -- async with elector.leadership() ----------------------------------------------------


async def test_leadership_scope_enters_once_leading_and_releases_on_exit(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    store.record = held_by("bing", 10)
    elector = make_elector(lock, clock)
    entered_at: list[float] = []

    async def body() -> None:
        async with elector.leadership():
            entered_at.append(clock.monotonic())
            assert elector.is_leader()
            await clock.sleep(5.0)

    task = asyncio.create_task(body())
    await clock.advance(30.0)
    await asyncio.wait_for(task, 5)
    assert entered_at[0] >= 10.0
    assert elector.state is State.STOPPED
    assert store.record is not None
    assert store.record.holder_identity == ""


async def test_leadership_lost_cancels_the_body_and_raises_leadership_lost(
    lock: MemoryLock, clock: FakeClock
) -> None:
    elector = make_elector(lock, clock)
    cancelled_at: list[float] = []

    async def body() -> None:
        async with elector.leadership():
            lock.partitioned = True
            try:
                await asyncio.Event().wait()
            finally:
                cancelled_at.append(clock.monotonic())

    task = asyncio.create_task(body())
    await clock.advance(10.0)
    with pytest.raises(LeadershipLost):
        await asyncio.wait_for(task, 5)
    # Partitioned before the first renewal (at 0 s), whose deadline is then 10 s.
    assert cancelled_at == [10.0]
    assert elector.state is State.STOPPED


async def test_a_body_that_swallows_the_loss_still_gets_leadership_lost(
    lock: MemoryLock, clock: FakeClock
) -> None:
    elector = make_elector(lock, clock)

    async def body() -> str:
        async with elector.leadership():
            lock.partitioned = True
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                return "swallowed"
        return "unreachable"

    task = asyncio.create_task(body())
    await clock.advance(10.0)
    with pytest.raises(LeadershipLost):
        await asyncio.wait_for(task, 5)


async def test_a_loss_noticed_as_the_body_ends_still_raises_leadership_lost(
    lock: MemoryLock, clock: FakeClock
) -> None:
    elector = make_elector(lock, clock)

    async def body() -> None:
        async with elector:
            lock.partitioned = True
            # The body's last await is the one during which the renewals run out.
            await clock.advance(10.0)

    with pytest.raises(LeadershipLost):
        await body()
    current = asyncio.current_task()
    assert current is not None
    assert current.cancelling() == 0
    await asyncio.sleep(0)  # no stray cancellation is left pending on this task
    assert elector.state is State.STOPPED


async def test_leader_work_that_fails_inside_the_block_is_leadership_lost(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    async def lead() -> None:
        raise KeyError("work")

    elector = make_elector(lock, clock, on_started_leading=lead)
    with pytest.raises(LeadershipLost) as raised:
        async with elector:
            await asyncio.Event().wait()
    assert isinstance(raised.value.__cause__, KeyError)
    assert store.record is not None
    assert store.record.holder_identity == ""


async def test_an_elector_goes_through_every_state_once_and_stop_releases(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    store.record = held_by("bing", 10)
    elector = make_elector(lock, clock)
    seen: list[State] = [elector.state]

    def note() -> None:
        if elector.state is not seen[-1]:
            seen.append(elector.state)

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(elector.run)
        await wait_until(lambda: len(lock.ops) == 1, between=clock.settle)
        note()
        await clock.advance(30.0)
        await wait_until(elector.is_leader, between=clock.settle)
        note()
        elector.stop()
        note()
    note()
    assert seen == [State.NEW, State.STARTING, State.RUNNING, State.STOPPING, State.STOPPED]
    assert store.record is not None
    assert store.record.holder_identity == ""  # stop() releases, as a cancellation does


async def test_an_error_in_the_body_propagates_and_releases_the_lease(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector = make_elector(lock, clock)
    with pytest.raises(KeyError, match="oops"):
        async with elector.leadership():
            raise KeyError("oops")
    assert store.record is not None
    assert store.record.holder_identity == ""


async def test_cancelling_the_body_from_outside_is_not_leadership_lost(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector = make_elector(lock, clock)
    inside = asyncio.Event()

    async def body() -> None:
        async with elector.leadership():
            inside.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(body())
    await asyncio.wait_for(inside.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.record is not None
    assert store.record.holder_identity == ""


async def test_cancelling_while_waiting_to_lead_stops_the_election(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    store.record = held_by("bing", 1000)
    elector = make_elector(lock, clock)

    async def body() -> None:
        async with elector.leadership():
            pytest.fail("must not lead")

    task = asyncio.create_task(body())
    await clock.advance(5.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert elector.state is State.STOPPED
    assert store.record == held_by("bing", 1000)


# -- competing electors -----------------------------------------------------------------


@dataclass
class Contest:
    """Electors sharing one store; checks after every step that at most one leads."""

    clock: FakeClock
    store: LeaseStore
    locks: dict[str, MemoryLock] = field(default_factory=dict)
    electors: dict[str, LeaderElector] = field(default_factory=dict)
    recorders: dict[str, Recorder] = field(default_factory=dict)
    leading_now: set[str] = field(default_factory=set)
    overlaps: list[tuple[float, set[str]]] = field(default_factory=list)

    def add(self, identity: str) -> LeaderElector:
        lock = MemoryLock(self.store, identity, self.clock)
        rec = Recorder(self.clock)

        async def lead() -> None:
            self.leading_now.add(identity)
            if len(self.leading_now) > 1:
                self.overlaps.append((self.clock.monotonic(), set(self.leading_now)))
            try:
                await rec.lead()
            finally:
                self.leading_now.discard(identity)

        elector = make_elector(
            lock, self.clock, on_started_leading=lead, on_stopped_leading=rec.stopped
        )
        self.locks[identity] = lock
        self.electors[identity] = elector
        self.recorders[identity] = rec
        return elector

    def leaders(self) -> list[str]:
        return [name for name, elector in self.electors.items() if elector.is_leader()]

    async def run_for(self, seconds: float, step: float = 0.25) -> None:
        for _ in range(round(seconds / step)):
            await self.clock.advance(step)
            assert len(self.leaders()) <= 1, self.leaders()
        assert not self.overlaps

    def intervals(self) -> list[tuple[float, float, str]]:
        spans = []
        for name, rec in self.recorders.items():
            starts = [t for what, t in rec.events if what == "started"]
            ends = [t for what, t in rec.events if what == "work-cancelled"]
            ends += [math.inf] * (len(starts) - len(ends))
            spans += [(s, e, name) for s, e in zip(starts, ends, strict=True)]
        return sorted(spans)


def assert_disjoint(spans: list[tuple[float, float, str]]) -> None:
    for (_, end, first), (start, _, second) in itertools.pairwise(spans):
        assert end <= start, f"{first} still led at {start} when {second} started"


@pytest.mark.parametrize("contenders", [2, 3])
async def test_competing_electors_hand_over_without_overlap(
    contenders: int, store: LeaseStore, clock: FakeClock
) -> None:
    contest = Contest(clock, store)
    names = [f"candidate-{i}" for i in range(contenders)]
    tasks = {name: asyncio.create_task(contest.add(name).run()) for name in names}
    try:
        await contest.run_for(5.0)
        (first,) = contest.leaders()

        # The leader is cut off from the API: it gives up at its deadline, and another
        # takes over only once the lease has expired by its own clock.
        contest.locks[first].partitioned = True
        await contest.run_for(30.0)
        assert tasks[first].done()
        (second,) = contest.leaders()
        assert second != first
        lost_at = contest.recorders[first].at("work-cancelled")
        assert contest.recorders[second].at("started") >= lost_at + 3.0

        # The new leader leaves gracefully: it releases, and (with three) the last contender
        # takes over within one jittered retry period; with two, nobody is left to lead.
        tasks[second].cancel()
        await contest.run_for(5.0)
        if contenders == 3:
            (third,) = contest.leaders()
            released_at = contest.recorders[second].at("work-cancelled")
            assert contest.recorders[third].at("started") - released_at <= 2.0 * 2.2
        else:
            assert contest.leaders() == []
        assert_disjoint(contest.intervals())
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.wait(tasks.values())


async def test_competing_electors_wait_out_a_lease_stolen_mid_term(
    store: LeaseStore, clock: FakeClock
) -> None:
    contest = Contest(clock, store)
    tasks = [asyncio.create_task(contest.add(name).run()) for name in ("a", "b", "c")]
    try:
        await contest.run_for(5.0)
        (first,) = contest.leaders()
        assert store.record is not None
        stolen_at = clock.monotonic()
        store.write(held_by("thief", 20, store.record.leader_transitions + 1))
        await contest.run_for(40.0)
        (second,) = contest.leaders()
        assert contest.recorders[first].at("work-cancelled") <= stolen_at + 12.0
        assert contest.recorders[second].at("started") >= stolen_at + 20.0
        assert_disjoint(contest.intervals())
        assert store.record.holder_identity == second
        assert store.record.leader_transitions == 2
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)


async def test_anyio_task_group_start_returns_once_the_elector_leads(
    store: LeaseStore, lock: MemoryLock, clock: FakeClock
) -> None:
    elector = make_elector(lock, clock)
    async with anyio.create_task_group() as task_group:
        await task_group.start(elector.run)
        assert elector.is_leader()
        task_group.cancel_scope.cancel()
    assert elector.state is State.STOPPED
    assert store.record is not None
    assert store.record.holder_identity == ""  # released on the way out


# -- metrics ----------------------------------------------------------------------------


async def test_leader_status_is_one_while_leading_and_zero_before_and_after(
    lock: MemoryLock, clock: FakeClock
) -> None:
    provider = RecordingProvider()
    elector, rec = recorded_elector(lock, clock, metrics_provider=provider)
    status = provider.metric("leader_election_master_status", "default/lock")
    assert status.sets == []
    async with running(elector) as task:
        await wait_until(lambda: rec.names() == ["started"], between=clock.settle)
        assert status.sets == [0, 1]
        assert provider.value("aioinformer_leader_election_acquisitions_total", "default/lock") == 1
        lock.partitioned = True
        await clock.advance(12.0)
        await asyncio.wait_for(task, 5)
    assert status.sets == [0, 1, 0]
    # The renewal rounds at 2, 4, 6, 8 and 10 s all failed.
    failures = provider.value("aioinformer_leader_election_renewal_failures_total", "default/lock")
    assert failures == 5


async def test_leader_metrics_are_labelled_with_the_lease_name(clock: FakeClock) -> None:
    provider = RecordingProvider()
    lease = LeaseLock(StubLeases(), "kube-system", "my-controller", "a")
    LeaderElector(lease, clock=clock, metrics_provider=provider)
    assert ("leader_election_master_status", "my-controller") in provider.metrics


async def test_an_elector_that_never_leads_reports_zero(lock: MemoryLock, clock: FakeClock) -> None:
    provider = RecordingProvider()
    lock.store.write(held_by("someone-else"))
    elector, _ = recorded_elector(lock, clock, metrics_provider=provider)
    async with running(elector):
        await wait_until(lambda: len(lock.ops) >= 1, between=clock.settle)
        await clock.advance(4.0)
    assert provider.metric("leader_election_master_status", "default/lock").sets == [0]
    assert provider.value("aioinformer_leader_election_acquisitions_total", "default/lock") == 0


@pytest.mark.usefixtures("restore_installed_provider")
async def test_an_installed_workqueue_only_provider_leaves_the_election_unrecorded(
    lock: MemoryLock, clock: FakeClock
) -> None:
    set_metrics_provider(WorkqueueOnlyProvider())
    elector, rec = recorded_elector(lock, clock)
    async with running(elector):
        await wait_until(lambda: rec.names() == ["started"], between=clock.settle)
        assert elector.is_leader()
