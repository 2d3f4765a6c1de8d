"""The Controller's event predicates, its quiet handling of a 409 Conflict, and its
per-reconcile timeout.

Time is virtual (a FakeClock drives the rate limiter, the resyncs and the timeout); the
informers read from an in-memory FakeListerWatcher.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from aioinformer.errors import AlreadyExists, Conflict, Requeue
from aioinformer.indexer import meta_namespace_key
from aioinformer.informer import SharedIndexInformer
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.operator._event_gate import EventGate
from aioinformer.operator.controller import Controller
from aioinformer.operator.predicates import Predicate, generation_changed, resource_version_changed
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import Decodes
from tests._support_controller import limiter, retry_until_success
from tests._support_reflector import reflector_statistics
from tests._support_tasks import settle
from tests._support_wait import wait_until

# Loop turns enough for a change to reach a running controller's queue and workers.
SETTLE_ROUNDS = 100


def pod(name: str, *, generation: int = 1, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "generation": generation, **meta}}


def conflict() -> Conflict:
    return Conflict({"code": 409, "reason": "Conflict", "message": "the object has been modified"})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


class Keyed:
    """A controller recording the keys it reconciles, on an informer over one Pod ``a``."""

    def __init__(self, name: str, **options: Any) -> None:
        self.lw = FakeListerWatcher(objects=[pod("a")])
        self.informer = SharedIndexInformer(self.lw, name="pods")
        self.keys: list[str] = []
        self.controller = Controller(name, self.keys.append, informers=[self.informer], **options)


# -- predicates --------------------------------------------------------------------------------


async def test_generation_changed_drops_updates_that_leave_the_generation() -> None:
    run = Keyed("spec", predicates=[generation_changed])
    lw, keys = run.lw, run.keys
    async with run.informer, run.controller:
        await wait_until(lambda: keys == ["default/a"])  # adds pass
        lw.modify(pod("a", labels={"x": "y"}))  # same generation: a label write
        lw.add(pod("b"))
        await wait_until(lambda: keys == ["default/a", "default/b"])
        lw.modify(pod("a", generation=2))
        await wait_until(lambda: keys[2:] == ["default/a"])
        lw.delete("default/b")  # deletes pass
        await wait_until(lambda: keys[3:] == ["default/b"])
        await settle(SETTLE_ROUNDS)
    assert keys == ["default/a", "default/b", "default/a", "default/b"]


async def test_resource_version_changed_drops_the_periodic_resyncs(clock: FakeClock) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(lw, name="pods", resync_period=10, clock=clock)
    every: list[str] = []
    filtered: list[str] = []
    unfiltered = Controller("all", every.append, informers=[informer], clock=clock)
    controller = Controller(
        "writes",
        filtered.append,
        informers=[informer],
        clock=clock,
        predicates=[resource_version_changed],
    )
    async with informer, unfiltered, controller:
        await wait_until(lambda: every == filtered == ["default/a"])
        await clock.advance(10)
        await wait_until(lambda: every == ["default/a", "default/a"])  # the resync came
        lw.modify(pod("a", labels={"x": "y"}))
        await wait_until(lambda: len(every) == 3)
        await wait_until(lambda: filtered == ["default/a", "default/a"])


async def test_watch_applies_its_own_predicates_with_its_enqueue_mapping() -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(lw, name="pods")
    keys: list[str] = []

    def only_b(old: Any, new: Any) -> bool:
        return bool(new["metadata"]["name"] == "b")

    controller = Controller("mapped", keys.append)
    controller.watch(
        informer, enqueue=lambda obj: [f"x/{obj['metadata']['name']}"], predicates=[only_b]
    )
    async with informer, controller:
        await wait_until(lambda: keys == ["x/a"])  # a plain callable judges updates only
        lw.add(pod("b"))
        await wait_until(lambda: keys == ["x/a", "x/b"])
        lw.modify(pod("a", generation=3))
        lw.modify(pod("b", generation=3))
        await wait_until(lambda: keys == ["x/a", "x/b", "x/b"])
        await settle(SETTLE_ROUNDS)
    assert keys == ["x/a", "x/b", "x/b"]


async def test_every_predicate_must_pass() -> None:
    run = Keyed("both", predicates=[generation_changed, lambda old, new: "go" in new["metadata"]])
    lw, keys = run.lw, run.keys
    async with run.informer, run.controller:
        await wait_until(lambda: keys == ["default/a"])
        lw.modify(pod("a", generation=2))  # the second refuses
        lw.modify(pod("a", generation=2, go=True))  # the first refuses
        lw.modify(pod("a", generation=3, go=True))
        await wait_until(lambda: len(keys) == 2)
        await settle(SETTLE_ROUNDS)
    assert keys == ["default/a", "default/a"]


async def test_a_failing_predicate_is_logged_and_lets_the_event_through(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(old: Any, new: Any) -> bool:
        raise KeyError("spec")

    run = Keyed("fragile", predicates=[broken])
    lw, keys = run.lw, run.keys
    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.controller"):
        async with run.informer, run.controller:
            await wait_until(lambda: keys == ["default/a"])
            lw.modify(pod("a", generation=2))
            await wait_until(lambda: keys == ["default/a", "default/a"])
    [record] = caplog.records
    assert record.getMessage() == (
        "controller fragile: a predicate failed on an update event of pods;"
        " letting the event through"
    )
    assert isinstance(record.exc_info[1], KeyError)  # type: ignore[index]


class NoDeletes(Predicate):
    def __init__(self) -> None:
        self.judged: list[Any] = []

    def delete(self, obj: Any) -> bool:
        self.judged.append(obj)
        return False


async def test_a_missed_delete_is_judged_by_its_tombstones_last_state(clock: FakeClock) -> None:
    lw = FakeListerWatcher(objects=[pod("a"), pod("gone")])
    informer = SharedIndexInformer(lw, clock=clock)
    deleted: list[Any] = []
    informer.add_event_handler(on_delete=deleted.append)
    keys: list[str] = []
    no_deletes = NoDeletes()
    controller = Controller("tombstones", keys.append, informers=[informer], clock=clock)

    def judged(obj: Any) -> list[str]:
        return ["judged"] if meta_namespace_key(obj) == "default/gone" else []

    controller.watch(informer, enqueue=judged, predicates=[no_deletes])
    async with informer, controller:
        await wait_until(lambda: sorted(keys) == ["default/a", "default/gone", "judged"])
        lw.delete("default/gone", notify=False)  # the watch never hears of it
        lw.reset_watch()  # the watch breaks with its history gone: relist
        await wait_until(lambda: reflector_statistics(informer).state.name == "BACKING_OFF")
        await clock.advance(2)
        await wait_until(lambda: "default/gone" in keys[3:])
        await settle(SETTLE_ROUNDS)
    assert isinstance(deleted[0], DeletedFinalStateUnknown)
    assert no_deletes.judged == [deleted[0].obj]  # the last state, not the tombstone
    assert "judged" not in keys[3:]


def same_spec(old: Any, new: Any) -> bool:
    """A predicate of the user's own, reading past the metadata."""
    return bool(old.get("spec") == new.get("spec"))


@pytest.mark.parametrize(
    ("predicates", "decodes"),
    [
        pytest.param([], 0, id="none"),
        pytest.param([generation_changed], 0, id="held-fields"),
        pytest.param([same_spec], 2, id="past-the-metadata"),
    ],
)
async def test_the_states_are_read_past_their_heads_only_for_predicates(
    monkeypatch: pytest.MonkeyPatch, predicates: list[Any], decodes: int
) -> None:
    run = Keyed("decodes", enqueue=lambda obj: [obj["metadata"]["name"]], predicates=predicates)
    async with run.informer, run.controller:
        await wait_until(lambda: run.keys == ["a"])
        counter = Decodes(monkeypatch)
        # The name is read from the head, the generation from the few bytes the entry holds
        # for it; the spec, old and new, from the object's bytes.
        run.lw.modify(pod("a", generation=2))
        await wait_until(lambda: run.keys == ["a", "a"])
    assert counter.count == decodes


def test_a_tombstone_without_a_last_state_is_let_through() -> None:
    no_deletes = NoDeletes()
    gate = EventGate((no_deletes,), "controller blind", "pods")
    assert gate.delete(DeletedFinalStateUnknown("default/x", None))
    assert no_deletes.judged == []
    assert not gate.delete(DeletedFinalStateUnknown("default/y", pod("y")))
    assert not gate.delete(pod("z"))
    assert no_deletes.judged == [pod("y"), pod("z")]


def test_a_single_predicate_must_come_in_a_list() -> None:
    informer = SharedIndexInformer(FakeListerWatcher(), name="pods")
    with pytest.raises(TypeError, match="wrap it in a list"):
        Controller("bad", print, informers=[informer], predicates=generation_changed)  # type: ignore[arg-type]
    controller = Controller("bad", print)
    with pytest.raises(TypeError, match="got the single predicate"):
        controller.watch(informer, predicates=lambda old, new: True)  # type: ignore[arg-type]


def test_something_not_callable_is_refused_as_a_predicate() -> None:
    informer = SharedIndexInformer(FakeListerWatcher(), name="pods")
    with pytest.raises(TypeError, match="must be a Predicate or a callable"):
        Controller("bad", print, informers=[informer], predicates=["generation"])  # type: ignore[list-item]


# -- 409 Conflict ------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["raised", "requeue-raised", "requeue-returned"])
async def test_a_conflict_is_retried_rate_limited_with_one_info_line(
    clock: FakeClock, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    times: list[float] = []

    async def reconcile(key: str) -> Requeue | None:
        times.append(clock.monotonic())
        if len(times) < 3:
            if how == "raised":
                raise conflict()
            if how == "requeue-raised":
                raise Requeue(conflict())
            return Requeue(conflict(), after=60)
        return None

    controller = Controller("stale", reconcile, rate_limiter=limiter(1.0), clock=clock)
    controller.enqueue("default/a")
    with caplog.at_level(logging.DEBUG, logger="aioinformer.operator.controller"):
        await retry_until_success(controller, clock, retries=2)
    assert times == [0.0, 1.0, 3.0]  # rate-limited: 1 s then 2 s
    conflicts = [r for r in caplog.records if "conflict" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in conflicts] == [
        (
            logging.INFO,
            f"controller stale: reconcile of default/a hit a conflict, retrying (retry {n}):"
            " 409 Conflict: the object has been modified",
        )
        for n in (1, 2)
    ]
    assert all(r.exc_info is None for r in conflicts)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    stats = controller.statistics()
    assert (stats.reconciles, stats.conflicts, stats.failures, stats.successes) == (3, 2, 0, 1)


async def test_already_exists_is_a_failure_not_a_quiet_conflict(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    async def reconcile(key: str) -> None:
        calls.append(key)
        if len(calls) == 1:
            raise AlreadyExists({"code": 409, "reason": "AlreadyExists", "message": "taken"})

    controller = Controller("taken", reconcile, rate_limiter=limiter(1.0), clock=clock)
    controller.enqueue("k")
    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.controller"):
        await retry_until_success(controller, clock, retries=1)
    assert caplog.records[0].getMessage() == "controller taken: reconcile of k failed (retry 1)"
    assert isinstance(caplog.records[0].exc_info[1], AlreadyExists)  # type: ignore[index]
    stats = controller.statistics()
    assert (stats.conflicts, stats.failures) == (0, 1)


# -- reconcile timeout -------------------------------------------------------------------------


async def test_a_reconcile_past_its_timeout_is_cancelled_logged_and_retried(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    starts: list[float] = []
    cancelled: list[float] = []

    async def reconcile(key: str) -> None:
        starts.append(clock.monotonic())
        if len(starts) == 1:
            try:
                await asyncio.Event().wait()  # hangs
            except asyncio.CancelledError:
                cancelled.append(clock.monotonic())
                raise

    controller = Controller(
        "slow", reconcile, rate_limiter=limiter(1.0), clock=clock, reconcile_timeout=30
    )
    controller.enqueue("default/a")
    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.controller"):
        async with controller:
            await wait_until(lambda: starts == [0.0])
            await clock.advance(29.9)
            assert cancelled == []
            await clock.advance(0.1)
            await wait_until(lambda: cancelled == [30.0])
            await clock.wait_for_sleepers(1)
            await clock.advance(1)  # the rate limiter's first delay
            await wait_until(lambda: controller.statistics().successes == 1)
    assert starts == [0.0, 31.0]
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert record.getMessage() == (
        "controller slow: reconcile of default/a timed out after 30s and was cancelled (retry 1)"
    )
    stats = controller.statistics()
    assert (stats.failures, stats.timeouts, stats.successes) == (1, 1, 1)
    assert clock.sleepers == 0  # the second reconcile's deadline was called off


async def test_a_reconcile_raising_its_own_timeout_error_is_an_ordinary_failure(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    async def reconcile(key: str) -> None:
        raise TimeoutError("the upstream call timed out")

    controller = Controller("own", reconcile, clock=clock, reconcile_timeout=30)
    controller.enqueue("k")
    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.controller"):
        async with controller:
            await wait_until(lambda: controller.statistics().failures == 1)
    assert caplog.records[0].getMessage() == "controller own: reconcile of k failed (retry 1)"
    assert controller.statistics().timeouts == 0


async def test_a_reconcile_within_its_timeout_is_not_disturbed(clock: FakeClock) -> None:
    async def reconcile(key: str) -> None:
        await clock.sleep(29)

    controller = Controller("fine", reconcile, clock=clock, reconcile_timeout=30)
    controller.enqueue("k")
    async with controller:
        await clock.wait_for_sleepers(2)  # the reconcile and its deadline
        await clock.advance(29)
        await wait_until(lambda: controller.statistics().successes == 1)
        await clock.advance(5)
    assert controller.statistics().timeouts == 0


def test_a_timeout_needs_an_async_reconcile() -> None:
    with pytest.raises(ValueError, match="reconcile_timeout needs an async reconcile"):
        Controller("sync", lambda key: None, reconcile_timeout=5)


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan")])
def test_a_timeout_must_be_positive(timeout: float) -> None:
    async def reconcile(key: str) -> None:
        return None

    with pytest.raises(ValueError, match="reconcile_timeout must be > 0"):
        Controller("bad", reconcile, reconcile_timeout=timeout)
