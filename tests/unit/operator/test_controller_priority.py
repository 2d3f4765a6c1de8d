"""The Controller's priority queue (its default, as controller-runtime's since 0.23): the keys
of the initial list and of resyncs wait at LOW_PRIORITY, those of events at 0, so an object
someone just changed is reconciled before the backlog; a key keeps the highest priority it
was queued with, and a retry (after a failure or a ``Requeue``) the priority it was handed
out with. ``use_priority_queue=False`` keeps the FIFO.

The informers read from a FakeListerWatcher; time is a FakeClock wherever a delay or a
resync matters. The keys' order is read from a one-worker controller started once every
key is queued.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from aioinformer._kernel.metrics import set_metrics_provider
from aioinformer.contrib.prometheus import PrometheusMetricsProvider
from aioinformer.errors import Requeue
from aioinformer.informer import SharedIndexInformer
from aioinformer.operator.controller import Controller
from aioinformer.priority_queue import LOW_PRIORITY, PriorityQueue, namespace_of_key
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from aioinformer.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue
from tests._support_controller import limiter
from tests._support_metrics import restore_installed_provider  # noqa: F401
from tests._support_tasks import settle
from tests._support_wait import wait_until


def pod(name: str, *, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, **meta}}


class Order:
    """A reconcile recording the keys in the order they come; ``hold`` (when given) is a
    key whose reconcile waits for ``release``."""

    def __init__(self, hold: str | None = None) -> None:
        self.keys: list[str] = []
        self.hold = hold
        self.release = asyncio.Event()

    async def __call__(self, key: str) -> None:
        self.keys.append(key)
        if key == self.hold:
            await self.release.wait()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def priority_queue(controller: Controller) -> PriorityQueue[str]:
    queue = controller.queue
    assert isinstance(queue, PriorityQueue)
    return queue


async def queued(controller: Controller, count: int) -> None:
    await wait_until(lambda: len(controller.queue) == count)


# -- the initial list, events, resyncs ---------------------------------------------------


@pytest.mark.parametrize("resync_period", [0.0, 30.0], ids=["keys-only", "objects"])
async def test_the_initial_list_is_queued_at_low_priority(
    clock: FakeClock, resync_period: float
) -> None:
    # Without resync the watch takes the informer's keys; with it, the objects, to tell a
    # resync by their resourceVersions.
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(lw, resync_period=resync_period, clock=clock)
    controller = Controller("initial", Order(), informers=[informer], clock=clock)
    queue = priority_queue(controller)
    async with informer:
        await queued(controller, 2)
        assert queue.priority_of("default/a") == queue.priority_of("default/b") == LOW_PRIORITY
        lw.add(pod("c"))
        await queued(controller, 3)
        assert queue.priority_of("default/c") == 0


@pytest.mark.parametrize("resync_period", [0.0, 30.0], ids=["keys-only", "objects"])
async def test_an_event_raises_a_key_queued_low_above_the_rest_of_the_backlog(
    clock: FakeClock, resync_period: float
) -> None:
    lw = FakeListerWatcher(objects=[pod("a"), pod("b"), pod("c")])
    informer = SharedIndexInformer(lw, resync_period=resync_period, clock=clock)
    order = Order()
    controller = Controller("raise", order, informers=[informer], clock=clock)
    async with informer:
        await queued(controller, 3)
        lw.modify(pod("c", labels={"edited": "yes"}))
        await wait_until(lambda: priority_queue(controller).priority_of("default/c") == 0)
        assert len(controller.queue) == 3  # still one entry per key
        assert priority_queue(controller).priority_of("default/a") == LOW_PRIORITY
        async with controller:
            await wait_until(lambda: len(order.keys) == 3)
    assert order.keys == ["default/c", "default/a", "default/b"]


async def test_the_fifo_keeps_the_order_keys_were_first_queued_in() -> None:
    lw = FakeListerWatcher(objects=[pod("a"), pod("b"), pod("c")])
    informer = SharedIndexInformer(lw)
    order = Order()
    controller = Controller("fifo", order, informers=[informer], use_priority_queue=False)
    assert type(controller.queue) is RateLimitingQueue
    async with informer:
        await queued(controller, 3)
        lw.modify(pod("c", labels={"edited": "yes"}))
        await wait_until(lambda: informer.lister().get("c", namespace="default") != pod("c"))
        await settle()
        async with controller:
            await wait_until(lambda: len(order.keys) == 3)
    assert order.keys == ["default/a", "default/b", "default/c"]


async def test_a_resync_is_queued_low_and_an_event_overtakes_it(clock: FakeClock) -> None:
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(lw, resync_period=30.0, clock=clock)
    order = Order(hold="hold")
    controller = Controller("resync", order, informers=[informer], clock=clock)
    queue = priority_queue(controller)
    async with informer, controller:
        await wait_until(lambda: len(order.keys) == 2)  # the initial list
        controller.enqueue("hold")  # the one worker waits in it from here
        await wait_until(lambda: order.keys[-1:] == ["hold"])
        await clock.advance(30)
        await wait_until(lambda: len(queue) == 2)
        assert queue.priority_of("default/a") == queue.priority_of("default/b") == LOW_PRIORITY
        lw.modify(pod("b", labels={"edited": "yes"}))
        await wait_until(lambda: queue.priority_of("default/b") == 0)
        order.release.set()
        await wait_until(lambda: len(order.keys) == 5)
    assert order.keys[3:] == ["default/b", "default/a"]


async def test_through_predicates_the_initial_list_is_low_and_other_events_are_not() -> None:
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(lw)

    def labels_changed(old: Any, new: Any) -> bool:
        return bool(old["metadata"].get("labels") != new["metadata"].get("labels"))

    controller = Controller("gated", Order(), informers=[informer], predicates=[labels_changed])
    queue = priority_queue(controller)
    async with informer:
        await queued(controller, 2)
        assert queue.priority_of("default/a") == queue.priority_of("default/b") == LOW_PRIORITY
        lw.delete("default/a")
        await wait_until(lambda: queue.priority_of("default/a") == 0)
        lw.modify(pod("b", labels={"edited": "yes"}))
        await wait_until(lambda: queue.priority_of("default/b") == 0)


# -- enqueue and retries -------------------------------------------------------------------


async def test_enqueue_takes_a_priority() -> None:
    order = Order()
    controller = Controller("manual", order)
    controller.enqueue("a")
    controller.enqueue("b", priority=10)
    controller.enqueue("c", priority=LOW_PRIORITY)
    controller.enqueue("d")
    controller.enqueue("d", priority=LOW_PRIORITY)  # queued at 0 already: stays there
    async with controller:
        await wait_until(lambda: len(order.keys) == 4)
    assert order.keys == ["b", "a", "d", "c"]


async def test_enqueue_after_takes_a_priority(clock: FakeClock) -> None:
    controller = Controller("later", Order(), clock=clock)
    controller.enqueue_after("a", 5, priority=3)
    assert priority_queue(controller).priority_of("a") == 3


@pytest.mark.parametrize(
    "outcome",
    [RuntimeError("boom"), Requeue(), Requeue(after=2.0)],
    ids=["failure", "requeue", "requeue-after"],
)
async def test_a_retry_keeps_the_priority_the_key_was_handed_out_with(
    clock: FakeClock, outcome: BaseException
) -> None:
    calls: list[str] = []

    async def reconcile(key: str) -> None:
        calls.append(key)
        if len(calls) == 1:
            raise outcome

    controller = Controller("retry", reconcile, rate_limiter=limiter(1.0), clock=clock)
    queue = priority_queue(controller)
    controller.enqueue("k", priority=7)
    async with controller:
        await wait_until(lambda: len(calls) == 1 and queue.priority_of("k") is not None)
        assert queue.priority_of("k") == 7
        assert len(queue) == 0  # waiting for its delay (1 s, or the 2 s asked for)
        await clock.advance(2)
        await wait_until(lambda: len(calls) == 2)


async def test_a_failed_initial_key_is_retried_low_behind_an_event(clock: FakeClock) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(lw, clock=clock)
    calls: list[str] = []

    async def reconcile(key: str) -> None:
        calls.append(key)
        if calls == ["default/a"]:
            raise RuntimeError("first try fails")

    controller = Controller(
        "low-retry", reconcile, informers=[informer], rate_limiter=limiter(1.0), clock=clock
    )
    queue = priority_queue(controller)
    async with informer, controller:
        await wait_until(lambda: len(calls) == 1 and queue.priority_of("default/a") is not None)
        assert queue.priority_of("default/a") == LOW_PRIORITY
        assert len(queue) == 0  # waiting 1 s, at the priority it was handed out with
        await clock.advance(1)
        await wait_until(lambda: len(calls) == 2)
    assert calls == ["default/a", "default/a"]


# -- options -------------------------------------------------------------------------------


def test_the_default_rate_limiter_is_controller_runtimes_for_its_priority_queue() -> None:
    # Per-key backoff alone (5 ms doubling to 1000 s): no overall bucket.
    assert isinstance(
        Controller("default", Order()).queue.rate_limiter, ItemExponentialFailureRateLimiter
    )


@pytest.mark.parametrize("use_priority_queue", [True, False])
def test_a_given_rate_limiter_is_used_by_either_queue(use_priority_queue: bool) -> None:
    given = limiter(2.0)
    controller = Controller(
        "given", Order(), rate_limiter=given, use_priority_queue=use_priority_queue
    )
    assert controller.queue.rate_limiter is given
    assert isinstance(controller.queue, PriorityQueue) is use_priority_queue


async def test_the_fifo_ignores_a_priority(clock: FakeClock) -> None:
    order = Order()
    controller = Controller("fifo-enqueue", order, use_priority_queue=False, clock=clock)
    controller.enqueue("a")
    controller.enqueue("b", priority=10)
    controller.enqueue_after("c", 0, priority=20)
    async with controller:
        await wait_until(lambda: len(order.keys) == 3)
    assert order.keys == ["a", "b", "c"]


async def test_fair_key_shares_each_priority_among_namespaces() -> None:
    order = Order()
    controller = Controller("fair", order, fair_key=namespace_of_key)
    queue = priority_queue(controller)
    assert queue.fair_key is namespace_of_key
    for key in ("busy/1", "busy/2", "busy/3", "quiet/1"):
        controller.enqueue(key)
    async with controller:
        await wait_until(lambda: len(order.keys) == 4)
    # The quiet namespace waits behind one busy key at most, not behind all three.
    assert order.keys.index("quiet/1") <= 1


def test_fair_key_needs_the_priority_queue() -> None:
    with pytest.raises(ValueError, match="fair_key needs the priority queue"):
        Controller("unfair", Order(), fair_key=namespace_of_key, use_priority_queue=False)


# -- metrics -------------------------------------------------------------------------------


async def test_the_queue_depth_is_reported_per_priority(
    restore_installed_provider: None,  # noqa: F811
) -> None:
    registry = CollectorRegistry()
    set_metrics_provider(PrometheusMetricsProvider(registry=registry))
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(lw)
    controller = Controller("widgets", Order(), informers=[informer])

    def depth(priority: str) -> float | None:
        return registry.get_sample_value(
            "workqueue_depth", {"name": "widgets", "priority": priority}
        )

    async with informer:
        await queued(controller, 2)
        assert (depth("-100"), depth("0")) == (2, None)
        lw.modify(pod("a", labels={"edited": "yes"}))
        await wait_until(lambda: depth("0") == 1)
        assert depth("-100") == 1
        assert depth("") is None  # the total is the sum, not a series of its own
        async with controller:
            await wait_until(lambda: depth("-100") == 0)
        assert depth("0") == 0
