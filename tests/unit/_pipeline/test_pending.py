"""The per-handler queues of ``aioinformer._pipeline.pending``, checked against plain-list models
with Hypothesis, plus the waiting and closing behaviour the delivery loop relies on."""

from __future__ import annotations

import asyncio
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from aioinformer._pipeline.pending import (
    _NOOP,
    CLOSED,
    CoalescingQueue,
    Notification,
    NotificationKind,
    PendingQueue,
)
from aioinformer.indexer import meta_namespace_key
from tests._support_properties import example_settings, machine_settings

ADD, UPDATE, DELETE = NotificationKind.ADD, NotificationKind.UPDATE, NotificationKind.DELETE

KEYS = st.sampled_from(["a", "b", "c", "d"])


def obj(key: str, rv: int) -> dict[str, Any]:
    return {"metadata": {"name": key, "namespace": "ns", "resourceVersion": str(rv)}}


def notification_for(kind: NotificationKind, key: str, rv: int, initial: bool) -> Notification:
    if kind is ADD:
        return Notification(ADD, obj(key, rv), initial)
    if kind is UPDATE:
        return Notification(UPDATE, obj(key, rv - 1), obj(key, rv))
    return Notification(DELETE, obj(key, rv), None)


class PlainQueueMachine(RuleBasedStateMachine):
    """A plain queue is a list: first in, first out, nothing merged or dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.queue = PendingQueue(max_pending=3)
        self.model: list[Notification] = []
        self.initial = 0
        self.rv = 0

    @rule(kind=st.sampled_from(NotificationKind), key=KEYS, initial=st.booleans())
    def put(self, kind: NotificationKind, key: str, initial: bool) -> None:
        self.rv += 1
        notification = notification_for(kind, key, self.rv, initial)
        self.queue.put_nowait(notification)
        self.model.append(notification)
        if kind is ADD and initial:
            self.initial += 1

    @rule(
        batch=st.lists(
            st.tuples(st.sampled_from(NotificationKind), KEYS, st.booleans()), max_size=5
        )
    )
    def put_many(self, batch: list[tuple[NotificationKind, str, bool]]) -> None:
        notifications = []
        for kind, key, initial in batch:
            self.rv += 1
            notifications.append(notification_for(kind, key, self.rv, initial))
        initial_adds = sum(1 for kind, _, initial in batch if kind is ADD and initial)
        self.queue.put_many(notifications, initial_adds)
        self.model.extend(notifications)
        self.initial += initial_adds

    @precondition(lambda self: self.model)
    @rule()
    def take(self) -> None:
        assert self.queue.get_nowait() == self.model.pop(0)

    @invariant()
    def agrees_with_the_model(self) -> None:
        assert list(self.queue.items) == self.model
        assert len(self.queue) == len(self.model)
        assert self.queue.initial_pending == self.initial
        assert self.queue.has_room() == (len(self.model) < 3)


class CoalescingQueueMachine(RuleBasedStateMachine):
    """A coalescing queue against a list model that finds each key's merge target by a
    linear scan instead of an index, and applies the documented merge table."""

    def __init__(self) -> None:
        super().__init__()
        self.queue = CoalescingQueue(max_pending=2, key_func=meta_namespace_key)
        # Entries [kind, a, b, key], kind possibly _NOOP.
        self.model: list[list[Any]] = []
        self.initial = 0
        self.coalesced = 0
        self.rv = 0

    def pending(self) -> int:
        return sum(1 for entry in self.model if entry[0] != _NOOP)

    def target(self, key: str) -> list[Any] | None:
        for entry in reversed(self.model):
            if entry[3] == key:
                return entry if entry[0] in (ADD, UPDATE) else None
        return None

    @rule(kind=st.sampled_from(NotificationKind), key=KEYS, initial=st.booleans())
    def put(self, kind: NotificationKind, key: str, initial: bool) -> None:
        self.rv += 1
        kind_, a, b = notification = notification_for(kind, key, self.rv, initial)
        self.queue.put_nowait(notification)
        target = self.target(key)
        if target is not None and self.pending() >= 2:
            self.coalesced += 1
            if target[0] is ADD and kind is DELETE:
                if target[2]:
                    self.initial -= 1
                target[:3] = [_NOOP, None, None]
            elif target[0] is ADD:
                target[1] = a if kind is ADD else b
            elif kind is DELETE:
                target[:3] = [DELETE, a, None]
            else:
                target[2] = a if kind is ADD else b
            return
        self.model.append([kind_, a, b, key])
        if kind is ADD and initial:
            self.initial += 1

    @precondition(lambda self: self.model)
    @rule()
    def take(self) -> None:
        kind, a, b, _ = self.model.pop(0)
        taken = self.queue.get_nowait()
        if kind == _NOOP:
            assert taken is None
            return
        assert taken == (kind, a, b)
        assert isinstance(taken, Notification)
        if kind is ADD and b:
            # What the consumer does once it has handled an initial-list add.
            self.queue.initial_pending -= 1
            self.initial -= 1

    @invariant()
    def agrees_with_the_model(self) -> None:
        assert [list(entry) for entry in self.queue.items] == [e[:3] for e in self.model]
        assert len(self.queue) == self.pending()
        assert self.queue.initial_pending == self.initial
        assert self.queue.coalesced == self.coalesced


TestPlainQueue = PlainQueueMachine.TestCase
TestPlainQueue.settings = machine_settings(100)
TestCoalescingQueue = CoalescingQueueMachine.TestCase
TestCoalescingQueue.settings = machine_settings(100)


@st.composite
def histories(draw: st.DrawFn) -> list[Notification]:
    """Notifications an informer could produce: per key, add, updates, delete, again."""
    live: dict[str, dict[str, Any]] = {}
    out: list[Notification] = []
    for rv, key in enumerate(draw(st.lists(KEYS, max_size=60)), start=1):
        current = live.get(key)
        if current is None:
            live[key] = obj(key, rv)
            out.append(Notification(ADD, live[key], draw(st.booleans())))
        elif draw(st.booleans()):
            out.append(Notification(DELETE, current, None))
            del live[key]
        else:
            live[key] = obj(key, rv)
            out.append(Notification(UPDATE, current, live[key]))
    return out


@example_settings(300)
@given(
    history=histories(),
    bound=st.sampled_from([1, 2, 5]),
    take_every=st.sampled_from([0, 1, 3]),
)
def test_replaying_a_coalesced_queue_gives_the_newest_state(
    history: list[Notification], bound: int, take_every: int
) -> None:
    queue = CoalescingQueue(max_pending=bound, key_func=meta_namespace_key)
    truth: dict[str, Any] = {}
    view: dict[str, Any] = {}
    keys: set[str] = set()

    def apply(state: dict[str, Any], notification: Notification | None) -> None:
        if notification is None:
            return
        kind, a, b = notification
        if kind is DELETE:
            state.pop(meta_namespace_key(a), None)
        else:
            new = b if kind is UPDATE else a
            state[meta_namespace_key(new)] = new

    for i, notification in enumerate(history, start=1):
        queue.put_nowait(notification)
        apply(truth, notification)
        # Past the bound a key adds entries only while none of its own can absorb them:
        # at most a pending delete and the entry after it.
        keys.add(meta_namespace_key(notification.a))
        assert len(queue) <= bound + 2 * len(keys)
        if take_every and i % take_every == 0 and queue.items:
            apply(view, queue.get_nowait())
    while queue.items:
        apply(view, queue.get_nowait())
    assert view == truth


@example_settings(200)
@given(history=histories(), bound=st.sampled_from([1, 2, 5]), split=st.integers(1, 7))
def test_putting_many_into_a_coalescing_queue_is_putting_each(
    history: list[Notification], bound: int, split: int
) -> None:
    one_by_one = CoalescingQueue(max_pending=bound, key_func=meta_namespace_key)
    together = CoalescingQueue(max_pending=bound, key_func=meta_namespace_key)
    for notification in history:
        one_by_one.put_nowait(notification)
    for start in range(0, len(history), split):
        chunk = history[start : start + split]
        # The count is for plain queues; a coalescing one counts as it merges.
        together.put_many(chunk, -1)
    assert [list(entry) for entry in together.items] == [list(e) for e in one_by_one.items]
    assert together.initial_pending == one_by_one.initial_pending
    assert together.coalesced == one_by_one.coalesced


@pytest.mark.parametrize(
    ("bound", "puts", "has_room"),
    [
        pytest.param(None, 100, True, id="unbounded-always-has-room"),
        pytest.param(2, 1, True, id="below-the-bound"),
        pytest.param(2, 2, False, id="at-the-bound"),
        pytest.param(2, 3, False, id="past-the-bound"),
    ],
)
def test_has_room_reflects_the_bound(bound: int | None, puts: int, has_room: bool) -> None:
    queue = PendingQueue(max_pending=bound)
    for rv in range(puts):
        queue.put_nowait(Notification(ADD, obj("a", rv), False))
    assert queue.has_room() is has_room


async def test_a_put_wakes_a_consumer_waiting_in_get() -> None:
    queue = PendingQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not getter.done()
    notification = Notification(ADD, obj("a", 1), False)
    queue.put_nowait(notification)
    assert await getter == notification


@pytest.mark.parametrize("coalescing", [False, True])
async def test_putting_many_wakes_a_consumer_waiting_in_get(coalescing: bool) -> None:
    queue = (
        CoalescingQueue(max_pending=5, key_func=meta_namespace_key)
        if coalescing
        else PendingQueue()
    )
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.put_many(
        [Notification(ADD, obj("a", 1), False), Notification(ADD, obj("b", 1), False)], 0
    )
    assert await getter == Notification(ADD, obj("a", 1), False)
    assert len(queue) == 1


async def test_taking_below_the_bound_releases_a_producer_waiting_for_room() -> None:
    queue = PendingQueue(max_pending=1)
    queue.put_nowait(Notification(ADD, obj("a", 1), False))
    producer = asyncio.create_task(queue.wait_for_room())
    await asyncio.sleep(0)
    assert not producer.done()
    queue.get_nowait()
    await producer


async def test_close_drops_everything_and_wakes_both_sides() -> None:
    queue = PendingQueue(max_pending=1)
    queue.put_nowait(Notification(ADD, obj("a", 1), True))
    producer = asyncio.create_task(queue.wait_for_room())
    await asyncio.sleep(0)
    queue.close()
    queue.close()  # idempotent
    await producer
    assert (len(queue), queue.initial_pending, queue.closed) == (0, 0, True)
    assert queue.has_room()
    assert await queue.get() is CLOSED


async def test_close_wakes_a_consumer_waiting_in_get() -> None:
    queue = CoalescingQueue(max_pending=1, key_func=meta_namespace_key)
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.close()
    assert await getter is CLOSED


def test_both_queues_are_asyncio_queues_built_on_their_own_storage() -> None:
    # As the standard library builds PriorityQueue and LifoQueue: _init, _put and _get.
    for queue in (PendingQueue(), CoalescingQueue(max_pending=1, key_func=meta_namespace_key)):
        assert isinstance(queue, asyncio.Queue)
        for method in ("_init", "_put", "_get"):
            assert getattr(type(queue), method) is not getattr(asyncio.Queue, method)
