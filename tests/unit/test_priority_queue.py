"""PriorityQueue: controller-runtime's priorityqueue_test.go and fairqueue_test.go ported,
plus the house queue's life cycle, and a Hypothesis state machine checking the queue
against a plain reference model.

Most cases are scripts: the operations controller-runtime's case performs and what it
then expects, one step between two ``|`` (see :func:`run`). Two deliberate differences
from controller-runtime, both the work queue's rules here: ``len()`` counts the items
``get()`` can hand out now, so an item re-added while a worker holds it is not in it until
``done()`` (the depth gauge counts it, as controller-runtime's does); and a shut-down queue
still hands out what is queued before ``get()`` raises :class:`ShutDown`.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import random
import weakref
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from aioinformer.errors import QueueEmpty, ShutDown
from aioinformer.priority_queue import (
    LOW_PRIORITY,
    PriorityMetricsProvider,
    PriorityQueue,
    namespace_of_key,
)
from aioinformer.testing import FakeClock
from aioinformer.workqueue import MetricsProvider, RateLimitingQueue, set_metrics_provider
from tests._support_gc import only_new_objects
from tests._support_metrics import restore_installed_provider  # noqa: F401
from tests._support_properties import machine_settings
from tests._support_tasks import no_task_outlives_the_test, settle  # noqa: F401

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable


class Recorded:
    """A counter, gauge or histogram: its value and its observations."""

    def __init__(self) -> None:
        self.value = 0.0
        self.observations: list[float] = []

    def inc(self) -> None:
        self.value += 1

    def dec(self) -> None:
        self.value -= 1

    def set(self, value: float) -> None:
        self.value = value

    def observe(self, value: float) -> None:
        self.observations.append(value)


class DepthByPriority:
    """The per-priority depth gauge: priority -> items ready at it, never below 0."""

    def __init__(self) -> None:
        self.values: dict[int, int] = {}

    def inc(self, priority: int) -> None:
        self.values[priority] = self.values.get(priority, 0) + 1

    def dec(self, priority: int) -> None:
        self.values[priority] = self.values.get(priority, 0) - 1
        assert self.values[priority] >= 0, f"negative depth at priority {priority}"


def _recorder(metric: str) -> Callable[[TotalDepthProvider, str], Recorded]:
    """A ``new_*_metric`` method returning ``recorded[metric]``."""

    def new_metric(self: TotalDepthProvider, name: str) -> Recorded:
        self.names.append(name)
        return self.recorded[metric]

    return new_metric


class TotalDepthProvider:
    """A workqueue metrics provider, without depth per priority: ``recorded[metric]``;
    ``names`` holds the queue name each metric was made for."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.recorded: defaultdict[str, Recorded] = defaultdict(Recorded)

    new_depth_metric = _recorder("depth")
    new_adds_metric = _recorder("adds")
    new_latency_metric = _recorder("latency")
    new_work_duration_metric = _recorder("work_duration")
    new_unfinished_work_seconds_metric = _recorder("unfinished")
    new_longest_running_processor_seconds_metric = _recorder("longest")
    new_retries_metric = _recorder("retries")


class Provider(TotalDepthProvider):
    """With depth per priority, as controller-runtime's fake provider (``depth``)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_priority = DepthByPriority()

    @property
    def depth(self) -> dict[int, int]:
        return self.by_priority.values

    def new_depth_with_priority_metric(self, name: str) -> DepthByPriority:
        return self.by_priority


@pytest.fixture
def provider() -> Provider:
    return Provider()


def test_the_provider_offers_the_optional_protocol(provider: Provider) -> None:
    assert isinstance(provider, MetricsProvider)
    assert isinstance(provider, PriorityMetricsProvider)


# -- the scripts ------------------------------------------------------------------------


def _priority(text: str) -> int:
    return LOW_PRIORITY if text == "low" else int(text)


async def run(script: str, provider: Provider, clock: FakeClock) -> None:
    """Run ``script`` on a queue named "test" (fair by namespace if it starts ``fair``).

    Steps: ``add ITEM [p=P] [after=S]``, ``ratelimited ITEM [p=P]``, ``get ITEM [p=P]``
    (the next item, and its priority), ``empty`` (nothing to get), ``done ITEM``,
    ``advance S``, ``fail ITEM N`` (N failures for the rate limiter), ``forget ITEM``,
    ``spawn`` (a worker waiting in ``get()``), ``got A,B`` (what the spawned workers got so
    far, ``-`` for nothing, ``shutdown`` for ShutDown), ``shutdown``; and checks of
    ``len N``, ``delayed N``, ``processing N``, ``priority ITEM P|none``, ``requeues ITEM
    N``, ``depth P:N,P:N`` (``-`` for none), ``adds N``, ``retries N``. P may be ``low``.
    """
    steps = [step.split() for step in script.split("|")]
    fair = steps[0] == ["fair"]
    queue = PriorityQueue[str](
        fair_key=namespace_of_key if fair else None,
        name="test",
        clock=clock,
        metrics_provider=provider,
    )
    got: list[str] = []

    async def worker() -> None:
        try:
            got.append(await queue.get())
        except ShutDown:
            got.append("shutdown")

    workers: list[asyncio.Task[None]] = []
    async with queue as q:
        for number, (verb, *args) in enumerate(steps[1:] if fair else steps):
            where = f"step {number} ({verb} {' '.join(args)}) of {script!r}"
            options = dict(arg.split("=") for arg in args if "=" in arg)
            word = next((arg for arg in args if "=" not in arg), "")
            last = args[-1] if args else ""
            priority = _priority(options.get("p", "0"))
            match verb:
                case "add" if "after" in options:
                    q.add_after(word, float(options["after"]), priority=priority)
                case "add":
                    q.add(word, priority=priority)
                case "ratelimited":
                    q.add_rate_limited(word, priority=priority)
                case "get":
                    assert len(q), f"{where}: nothing to get"
                    item, held_at = await q.get_with_priority()
                    assert item == word, where
                    assert "p" not in options or held_at == priority, where
                case "empty":
                    with pytest.raises(QueueEmpty):
                        q.get_nowait()
                case "done":
                    q.done(word)
                case "advance":
                    await clock.advance(float(word))
                case "fail":
                    for _ in range(int(last)):
                        q.rate_limiter.when(word)
                case "forget":
                    q.forget(word)
                case "spawn":
                    workers.append(asyncio.create_task(worker()))
                    await settle()
                case "got":
                    await settle()
                    assert got == ([] if word == "-" else word.split(",")), where
                case "shutdown":
                    q.shut_down()
                case "len":
                    assert len(q) == int(word), where
                case "delayed":
                    assert q.statistics().delayed == int(word), where
                case "processing":
                    assert q.statistics().processing == int(word), where
                case "priority":
                    expected = None if last == "none" else _priority(last)
                    assert q.priority_of(word) == expected, where
                case "requeues":
                    assert q.num_requeues(word) == int(last), where
                case "depth":
                    pairs = [] if word == "-" else [pair.split(":") for pair in word.split(",")]
                    assert provider.depth == {_priority(p): int(n) for p, n in pairs}, where
                case "adds" | "retries":
                    assert provider.recorded[verb].value == int(word), where
                case _:
                    raise AssertionError(f"{where}: no such step")
    await asyncio.gather(*workers)


def scripts(cases: dict[str, str]) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("script", list(cases.values()), ids=list(cases))


# priorityqueue_test.go: Describe("Controllerworkqueue"), one script a case.
DESCRIBED = {
    "returns an item": "add foo | get foo | depth 0:0 | adds 1 | retries 0",
    "returns items in order": "add foo | add bar | get foo | get bar | depth 0:0 | adds 2",
    "does not return an item that is currently locked": (
        "add foo | get foo | add foo | add bar | get bar | depth 0:1 | adds 3"
    ),
    "returns an item as soon as it is unlocked": (
        "add foo | get foo | add foo | add bar | get bar | add baz | done foo | get foo"
        " | depth 0:1 | adds 4"
    ),
    "de-duplicates items": "add foo | add foo | len 1 | processing 0 | depth 0:1 | adds 1",
    "enqueues a locked item": (
        "add foo | len 1 | get foo p=0 | add foo | len 0 | depth 0:1 | done foo | len 1"
        " | get foo p=0 | depth 0:0 | adds 2"
    ),
    "retains the highest priority": (
        "add foo p=1 | add foo p=2 | get foo p=2 | len 0 | depth 1:0,2:0 | adds 1"
    ),
    "will not decrease the priority": (
        "add foo p=2 | add foo p=1 | get foo p=2 | len 0 | depth 2:0 | adds 1"
    ),
    "gets pushed to the front if the priority increases": (
        "add foo | add bar | add baz | add baz p=1 | get baz p=1 | len 2 | depth 0:2,1:0 | adds 3"
    ),
    "retains the lowest after duration": (
        "add foo after=0 | add foo after=3600 | get foo p=0 | len 0 | delayed 0 | depth 0:0"
        " | adds 1"
    ),
    "does not include non-ready items in len": (
        "add foo after=60 | add baz | add bar after=60 | add bal | len 2 | delayed 2 | depth 0:2"
    ),
    # controller-runtime #3239; here the queued item is still handed out.
    "get does not get stuck once the queue is shut down": (
        "add baz | shutdown | add foo after=1 | delayed 0 | get baz | spawn | spawn"
        " | got shutdown,shutdown"
    ),
    "updates metrics of an item added with after and then without": (
        "add foo after=3600 | len 0 | depth - | add foo | len 1 | depth 0:1 | get foo | len 0"
        " | depth 0:0 | adds 1"
    ),
    "updates metrics of an item with after re-added with a higher priority and no after": (
        "add foo after=3600 p=0 | len 0 | depth - | add foo p=1 | len 1 | depth 1:1"
        " | get foo p=1 | len 0 | depth 1:0"
    ),
    "follows fifo order in the new priority when an item priority changes": (
        "add foo p=0 | add bar p=1 | add foo p=1 | len 2 | get bar p=1 | len 1 | get foo p=1"
        " | len 0"
    ),
}


# priorityqueue_test.go: the Test* functions that are a sequence of operations.
TESTED = {
    "TestItemIsOnlyReturnedAfterAfterHasPassed": (
        "spawn | add foo after=1 | advance 0.999 | got - | advance 0.001 | got foo"
        " | depth 0:0 | adds 1 | retries 1"
    ),
    "TestHighPriorityItemThatBecameReadyIsReturnedBeforeLowPriorityItem": (
        "add foo after=0 p=-100 | add prio after=1 p=0 | advance 1 | get prio p=0"
        " | depth -100:1,0:0 | adds 2 | retries 1"
    ),
    "TestItemIsReturnedAsSoonAsPossible": "spawn | got - | add foo | got foo | depth 0:0 | adds 1",
    "TestWaitingItemIsReturnedRightAfterReadWithoutAfter": (
        "spawn | add foo after=60 | got - | add foo | got foo | delayed 0 | depth 0:0 | adds 1"
    ),
    "TestMultipleItemsWithAfterAreReturnedInCorrectOrder": (
        "spawn | add foo after=1 | add bar after=0.2 | got - | advance 0.2 | got bar | spawn"
        " | advance 0.8 | got bar,foo | depth 0:0 | adds 2"
    ),
    "TestGetFromPriorityQueueIsUnblockedOnShutdown": "spawn | got - | shutdown | got shutdown",
    "TestItemsAreInludedInLenAndMetricsOnceTheyAreReady": " | ".join(
        [
            "add foo after=0.5 | add baz | add bar after=0.5 | add bal | len 2 | depth 0:2"
            " | advance 1 | len 4 | depth 0:4 | get baz | get bal | get foo | get bar"
            " | done baz | done bal | done foo | done bar | len 0 | depth 0:0"
        ]
        * 2  # again, to notice state the first round left behind
    ),
    "TestMetricsAreUpdatedForItemWhoseRequeueAfterExpiredThatGetsAddedAgainWithoutRequeueAfter": (
        "add foo after=0.05 | advance 0.05 | len 1 | depth 0:1 | add foo | len 1 | depth 0:1"
        " | get foo | len 0 | depth 0:0"
    ),
    # With the default limiter (its bucket lets both through at once): bar's 8th failure
    # waits 0.64 s.
    "TestWhenAddingMultipleItemsWithRatelimitTrueTheyDontAffectEachOther": (
        "spawn | spawn | fail bar 7 | ratelimited foo | ratelimited bar | got - | advance 0.005"
        " | got foo | advance 0.634 | got foo | advance 0.001 | got foo,bar | requeues bar 8"
        " | forget bar | requeues bar 0 | depth 0:0 | adds 2 | retries 2"
    ),
}


# fairqueue_test.go, with the namespace as the one fairness dimension, and more.
FAIR = {
    "simple": (
        "fair | add foo/1 | add foo/2 | add bar/1 | get bar/1 | get foo/1 | get foo/2 | empty"
    ),
    "balanced": (
        "fair | add foo/1 | add foo/2 | add bar/1 | add bar/2 | get bar/1 | get foo/1"
        " | get bar/2 | get foo/2 | empty"
    ),
    "retains fairness across queue operations": (
        "fair | add foo/1 | get foo/1 | add bar/1 | add foo/2 | get bar/1 | len 1"
    ),
    "sorts one tenant by when its items became ready": (
        "fair | add foo/1 | get foo/1 | add foo/1 | add foo/2 | done foo/1 | get foo/1 | get foo/2"
    ),
    "round robin among namespaces, fifo within each, the newest tenant first": (
        "fair | add busy/0 | add busy/1 | add busy/2 | add busy/3 | add quiet/0 | add other/0"
        " | add other/1 | get other/0 | get quiet/0 | get busy/0 | get other/1 | get busy/1"
        " | get busy/2 | get busy/3 | empty"
    ),
    "priority before fairness": (
        "fair | add busy/0 p=1 | add busy/1 p=1 | add quiet/0 | add busy/2 | get busy/0"
        " | get busy/1 | get quiet/0 | get busy/2"
    ),
    "an item held waits, its tenant keeps its turn": (
        "fair | add a/1 | get a/1 | add a/1 | add b/1 | get b/1 | empty | done a/1 | get a/1"
    ),
    "a tenant with nothing queued or held is forgotten": (
        "fair | add a/1 | get a/1 | done a/1 | add b/1 | add a/2 | get a/2 | get b/1"
    ),
    "the round robin is shared by the priorities": (
        "fair | add a/0 p=1 | add a/1 | add b/1 | get a/0 | get b/1 | get a/1"
    ),
    "done for an item not held does nothing": (
        "fair | done ns/foo | add ns/foo | done ns/foo | len 1 | get ns/foo"
    ),
}


# The informer-side helper: the initial list and resyncs at LOW_PRIORITY, events at 0.
LOW = {
    "an event overtakes the initial list and raises a listed key": (
        "add ns/a p=low | add ns/b p=low | add ns/c p=low | add ns/new | add ns/c"
        " | priority ns/c 0 | depth low:2,0:2 | get ns/new p=0 | get ns/c p=0 | get ns/a p=low"
        " | get ns/b p=low"
    ),
    "a requeued key keeps its low priority behind events": (
        "add ns/resync p=low | get ns/resync p=low | ratelimited ns/resync p=low"
        " | done ns/resync | add ns/event | advance 1 | get ns/event | get ns/resync p=low"
    ),
}


# The work queue's rules, as the priority queue keeps them.
RULES = {
    "add after of a ready item keeps it ready at the higher priority": (
        "add foo | add bar | add bar after=10 p=3 | delayed 0 | get bar p=3 | priority foo 0"
        " | retries 1"
    ),
    "add after of a waiting item keeps the earlier time and the higher priority": (
        "add foo after=2 | add foo after=5 p=4 | add foo after=1 p=-1 | add bar p=3"
        " | priority foo 4 | advance 1 | delayed 0 | get foo p=4 | get bar"
    ),
    "an item due while held is queued at done": (
        "add foo | get foo | add foo after=1 p=2 | add bar p=1 | advance 1 | len 1 | get bar"
        " | done foo | get foo p=2"
    ),
    "an item held keeps the highest priority it was re-added with": (
        "add foo | get foo | priority foo none | add foo p=1 | add foo p=5 | add foo p=2"
        " | add bar p=4 | done foo | get foo p=5 | get bar p=4"
    ),
    "add after of 0 adds at once and counts no retry": (
        "add foo after=0 p=2 | get foo p=2 | retries 0"
    ),
    "add after of -1 adds at once and counts no retry": (
        "add foo after=-1 p=2 | get foo p=2 | retries 0"
    ),
    "add after of nan adds at once and counts no retry": (
        "add foo after=nan p=2 | get foo p=2 | retries 0"
    ),
    "shut down drops waiting items and ignores adds": (
        "add later after=1 | add now | shutdown | add ignored | ratelimited ignored | delayed 0"
        " | priority later none | get now | done now | spawn | got shutdown | advance 2 | len 0"
    ),
}


@scripts(DESCRIBED)
async def test_described_case(script: str, provider: Provider, fake_clock: FakeClock) -> None:
    await run(script, provider, fake_clock)


@scripts(TESTED)
async def test_tested_case(script: str, provider: Provider, fake_clock: FakeClock) -> None:
    await run(script, provider, fake_clock)


@scripts(FAIR)
async def test_fair_queue(script: str, provider: Provider, fake_clock: FakeClock) -> None:
    await run(script, provider, fake_clock)


@scripts(LOW)
async def test_low_priority(script: str, provider: Provider, fake_clock: FakeClock) -> None:
    assert LOW_PRIORITY == -100
    await run(script, provider, fake_clock)


@scripts(RULES)
async def test_work_queue_rule(script: str, provider: Provider, fake_clock: FakeClock) -> None:
    await run(script, provider, fake_clock)


def test_namespace_of_key() -> None:
    assert namespace_of_key("default/web-0") == "default"
    assert namespace_of_key("node-1") == ""
    assert namespace_of_key("/odd") == ""
    assert namespace_of_key("ns/a/b") == "ns"


# -- the cases that are no plain sequence --------------------------------------------------


@pytest.mark.parametrize("after", [-1.0, 0.0, 1.0])
async def test_high_priority_items_are_returned_before_low_priority_items(
    after: float, fake_clock: FakeClock, provider: Provider
) -> None:
    # TestHighPriorityItemsAreReturnedBeforeLowPriorityItemMultipleTimes
    per_priority = 200
    priorities = {"high": 10, "upperMiddle": 5, "middle": 0, "lowMiddle": -5, "low": -10}
    async with PriorityQueue[str](name="test", clock=fake_clock, metrics_provider=provider) as q:
        for i in range(per_priority):
            for label, priority in priorities.items():
                q.add_after(f"{label}-{i}", after, priority=priority)
        await fake_clock.advance(max(after, 0))

        handed_out = [q.get_nowait() for _ in range(per_priority * len(priorities))]
    assert handed_out == [f"{label}-{i}" for label in priorities for i in range(per_priority)]
    assert provider.depth == dict.fromkeys(priorities.values(), 0)
    assert provider.recorded["adds"].value == per_priority * 5
    assert provider.recorded["retries"].value == (per_priority * 5 if after > 0 else 0)


async def test_returns_many_items(fake_clock: FakeClock, provider: Provider) -> None:
    # Describe: "returns many items", with 20 workers instead of 100 goroutines.
    rng = random.Random(3)
    async with PriorityQueue[str](name="test", clock=fake_clock, metrics_provider=provider) as q:
        for _ in range(5):
            for i in range(200):
                roll = rng.randrange(100)
                if roll < 10:
                    q.add_after(f"foo{i}", roll / 1000)
                else:
                    q.add(f"foo{i}", priority=roll)
            await fake_clock.advance(0.01)

            async def consumer() -> None:
                for _ in range(10):
                    item = await q.get()
                    await asyncio.sleep(0)
                    q.done(item)

            await asyncio.wait_for(asyncio.gather(*(consumer() for _ in range(20))), 5)


async def test_does_not_deadlock_on_shutdown_while_handing_out_items() -> None:
    # TestPriorityQueueDoesNotDeadlockOnShutdownWhileHandingOutItems (#3538).
    rng = random.Random(7)
    for _ in range(5):
        q: PriorityQueue[str] = PriorityQueue(name="test")

        async def worker(queue: PriorityQueue[str]) -> None:
            while True:
                queue.add(str(rng.randrange(1000)), priority=rng.randrange(100))
                try:
                    await queue.get()
                except ShutDown:
                    return

        workers = [asyncio.create_task(worker(q)) for _ in range(20)]
        await settle(5)
        q.shut_down()
        await asyncio.wait_for(asyncio.gather(*workers), 1)
        await q.aclose()


async def test_shut_down_with_drain_waits_for_items_held(fake_clock: FakeClock) -> None:
    q = PriorityQueue[str](clock=fake_clock)
    q.add("foo")
    item = q.get_nowait()
    drain = asyncio.create_task(q.shut_down_with_drain())
    await settle()
    assert not drain.done()
    q.done(item)
    await asyncio.wait_for(drain, 1)
    with pytest.raises(ShutDown):
        await q.get()


async def test_statistics_and_repr_describe_the_queue(fake_clock: FakeClock) -> None:
    async with PriorityQueue[str](fair_key=namespace_of_key, name="t", clock=fake_clock) as q:
        q.add("ns/a")
        q.add("ns/b")
        q.add_after("ns/c", 5)
        q.get_nowait()
        stats = q.statistics()
        assert (stats.depth, stats.processing, stats.delayed) == (1, 1, 1)
        assert not stats.shutting_down
        assert q.fair_key is namespace_of_key
        assert repr(q) == "<PriorityQueue 't' state=RUNNING depth=1 processing=1 delayed=1 fair>"
    assert isinstance(q, RateLimitingQueue)


async def test_unfinished_work_gauges_are_refreshed(
    fake_clock: FakeClock, provider: Provider
) -> None:
    async with PriorityQueue[str](name="test", clock=fake_clock, metrics_provider=provider) as q:
        q.add("foo")
        await fake_clock.advance(0.25)
        q.get_nowait()
        await fake_clock.advance(1.25)  # refreshed every 0.5 s: last at 1.5
        q.done("foo")
    metric = provider.recorded
    assert metric["latency"].observations == [0.25]
    assert metric["longest"].value == metric["unfinished"].value == pytest.approx(1.25)
    assert metric["work_duration"].observations == [pytest.approx(1.25)]


async def test_a_provider_without_the_priority_protocol_records_the_total_depth(
    fake_clock: FakeClock,
) -> None:
    plain = TotalDepthProvider()
    assert not isinstance(plain, PriorityMetricsProvider)
    async with PriorityQueue[str](name="p", clock=fake_clock, metrics_provider=plain) as q:
        q.add("a", priority=1)
        q.add("a", priority=2)
        q.add("b")
        assert plain.recorded["depth"].value == 2
        q.get_nowait()
        assert plain.recorded["depth"].value == 1


async def test_a_provider_with_the_priority_protocol_gets_no_total_depth(
    provider: Provider, fake_clock: FakeClock
) -> None:
    # As controller-runtime's: the depth per priority replaces the total (its sum), so
    # one gauge family labelled with the priority does not count each item twice.
    async with PriorityQueue[str](name="p", clock=fake_clock, metrics_provider=provider) as q:
        q.add("a", priority=1)
        q.add("b")
        assert provider.depth == {1: 1, 0: 1}
    assert "depth" not in provider.recorded
    assert provider.recorded["adds"].value == 2


@pytest.mark.usefixtures("restore_installed_provider")
async def test_the_installed_provider_is_used_and_unnamed_queues_record_nothing(
    provider: Provider, fake_clock: FakeClock
) -> None:
    set_metrics_provider(provider)
    async with PriorityQueue[str](clock=fake_clock) as unnamed:
        unnamed.add("x", priority=3)
    assert provider.depth == {}
    async with PriorityQueue[str](name="named", clock=fake_clock) as named:
        named.add("x", priority=3)
    assert provider.depth == {3: 1}
    assert set(provider.names) == {"named"}


class BigObject:
    """A hashable, weak-referenceable work item."""

    def __init__(self, data: bytes) -> None:
        self.data = data


def _tenant_of(obj: BigObject) -> Hashable:
    return len(obj.data)


@pytest.mark.parametrize("fair", [False, True], ids=["plain", "fair"])
async def test_processed_item_is_not_kept_alive_by_the_queue(
    fair: bool, fake_clock: FakeClock, provider: Provider
) -> None:
    with only_new_objects():
        async with PriorityQueue[BigObject](
            fair_key=_tenant_of if fair else None,
            name="gc",
            clock=fake_clock,
            metrics_provider=provider,
        ) as queue:
            obj = BigObject(b"hello")
            ref = weakref.ref(obj)
            queue.add(obj)
            queue.done(await queue.get())
            queue.add_after(obj, 1)
            await fake_clock.advance(1)
            queue.done(await queue.get())
            del obj
            gc.collect()
            assert ref() is None


# -- the reference model --------------------------------------------------------------------

ITEMS = st.sampled_from(["a/1", "a/2", "b/1", "b/2", "c/1"])
PRIORITIES = st.sampled_from([LOW_PRIORITY, 0, 1, 5])
DELAYS = st.sampled_from([-1.0, 0.0, 1.0, 2.0, 3.0])


@dataclass
class Entry:
    """An item of the model, queued or waiting."""

    priority: int
    sequence: int = 0
    """When it became ready (the order within a priority)."""
    due: float | None = None
    """When its delay runs out; None once ready."""
    wait: int = 0
    """When it started waiting for ``due`` (the order of items due together)."""


class PriorityQueueMachine(RuleBasedStateMachine):
    """Drives a PriorityQueue on a FakeClock against a plain model.

    Model: ``entries`` holds every item queued or waiting, ``held`` what workers hold;
    the next item is found by scanning the entries ready and not held: the highest
    priority, then (fair mode) the first tenant of ``rotation`` with one, then the lowest
    sequence. ``rotation`` is controller-runtime's list of tenants: a new one goes to the
    front, a served one to the back, and one with nothing ready nor held leaves it.
    """

    fair = False

    @initialize()
    def start(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock()
        self.q: PriorityQueue[str] = PriorityQueue(
            fair_key=namespace_of_key if self.fair else None, clock=self.clock
        )
        self.loop.run_until_complete(self.q.__aenter__())
        self.now = 0.0
        self.counter = itertools.count(1)
        self.entries: dict[str, Entry] = {}
        self.held: set[str] = set()
        self.rotation: list[str] = []
        self.added: set[str] = set()
        self.handed_out: set[str] = set()

    def teardown(self) -> None:
        loop = getattr(self, "loop", None)
        if loop is None:
            return
        try:
            self._drain_everything()
        finally:
            loop.run_until_complete(self.q.aclose())
            loop.close()

    # -- model helpers -------------------------------------------------------------------

    def tenant(self, item: str) -> str:
        return namespace_of_key(item) if self.fair else ""

    def _ready(self, item: str, priority: int) -> None:
        self.entries[item] = Entry(priority, next(self.counter))
        if item not in self.held and self.tenant(item) not in self.rotation:
            self.rotation.insert(0, self.tenant(item))

    def _add(self, item: str, priority: int, delay: float) -> None:
        self.added.add(item)
        entry = self.entries.get(item)
        if entry is not None and entry.due is None:  # ready: stays, maybe higher
            if priority > entry.priority:
                entry.priority, entry.sequence = priority, next(self.counter)
        elif delay <= 0:
            self._ready(item, max(priority, entry.priority) if entry else priority)
        elif entry is None:
            self.entries[item] = Entry(priority, due=self.now + delay, wait=next(self.counter))
        else:
            assert entry.due is not None
            entry.priority = max(priority, entry.priority)
            if self.now + delay < entry.due:
                entry.due, entry.wait = self.now + delay, next(self.counter)

    def _available(self) -> list[str]:
        return [i for i, e in self.entries.items() if e.due is None and i not in self.held]

    def _expected_next(self) -> str | None:
        available = self._available()
        if not available:
            return None
        top = max(self.entries[i].priority for i in available)
        at_top = [i for i in available if self.entries[i].priority == top]
        for tenant in self.rotation:
            mine = [i for i in at_top if self.tenant(i) == tenant]
            if mine:
                return min(mine, key=lambda i: self.entries[i].sequence)
        raise AssertionError("a ready item's tenant is not in the rotation")

    def _get(self) -> None:
        expected = self._expected_next()
        if expected is None:
            with pytest.raises(QueueEmpty):
                self.q.get_nowait()
            return
        got = self.loop.run_until_complete(asyncio.wait_for(self.q.get_with_priority(), 1))
        entry = self.entries.pop(expected)
        assert got == (expected, entry.priority), f"handed out {got}, expected {entry}"
        assert expected not in self.held, f"{expected} handed to two workers at once"
        self.held.add(expected)
        self.handed_out.add(expected)
        self.rotation.remove(self.tenant(expected))
        self.rotation.append(self.tenant(expected))

    def _done(self, item: str) -> None:
        self.q.done(item)
        self.held.remove(item)
        tenant = self.tenant(item)
        busy = any(self.tenant(i) == tenant for i in self.held) or any(
            self.tenant(i) == tenant and e.due is None for i, e in self.entries.items()
        )
        if not busy:
            self.rotation.remove(tenant)

    # -- rules ---------------------------------------------------------------------------

    @rule(item=ITEMS, priority=PRIORITIES)
    def add(self, item: str, priority: int) -> None:
        self.q.add(item, priority=priority)
        self._add(item, priority, 0.0)

    @rule(item=ITEMS, delay=DELAYS, priority=PRIORITIES)
    def add_after(self, item: str, delay: float, priority: int) -> None:
        self.q.add_after(item, delay, priority=priority)
        self._add(item, priority, delay)

    @rule(seconds=st.sampled_from([0.5, 1.0, 2.0]))
    def advance(self, seconds: float) -> None:
        self.loop.run_until_complete(self.clock.advance(seconds))
        self.now += seconds
        due = sorted(
            (e.due, e.wait, i)
            for i, e in self.entries.items()
            if e.due is not None and e.due <= self.now
        )
        for _, _, item in due:
            self._ready(item, self.entries[item].priority)

    @rule()
    def get(self) -> None:
        self._get()

    @precondition(lambda self: bool(self.held))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        self._done(data.draw(st.sampled_from(sorted(self.held))))

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def counts_match_the_model(self) -> None:
        if not hasattr(self, "q"):
            return
        stats = self.q.statistics()
        assert len(self.q) == stats.depth == len(self._available())
        assert stats.processing == len(self.held)
        assert stats.delayed == sum(1 for e in self.entries.values() if e.due is not None)
        for item, entry in self.entries.items():
            assert self.q.priority_of(item) == entry.priority

    def _drain_everything(self) -> None:
        """Every item added is handed out in the end: finish the work, let time pass."""
        while self.held or self.entries:
            for item in sorted(self.held):
                self._done(item)
            while self._expected_next() is not None:
                self._get()
            if any(e.due is not None for e in self.entries.values()):
                self.advance(2.0)
        assert self.handed_out == self.added, "an item added was never handed out"


class FairPriorityQueueMachine(PriorityQueueMachine):
    """The same, in fair mode (the namespace of each key is its tenant)."""

    fair = True


PriorityQueueMachine.TestCase.settings = machine_settings(100)
FairPriorityQueueMachine.TestCase.settings = machine_settings(100)
test_priority_queue_matches_the_model = PriorityQueueMachine.TestCase
test_fair_priority_queue_matches_the_model = FairPriorityQueueMachine.TestCase
