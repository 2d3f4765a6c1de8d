"""SharedIndexInformer against a FakeListerWatcher: client-go's shared_informer_test.go and
controller_test.go cases, plus events(), typed access, bounded handlers and statistics."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import Field

from aioinformer import State
from aioinformer._kernel.backoff import Backoff
from aioinformer.errors import ApiError, Forbidden, InformerStoppedError, ServerError
from aioinformer.indexer import NAMESPACE_INDEX, Indexer, meta_namespace_key, namespace_index_func
from aioinformer.informer import (
    Event,
    EventStream,
    HandlerRegistration,
    Lister,
    SharedIndexInformer,
)
from aioinformer.models import DeletedFinalStateUnknown, KubeObject
from aioinformer.reflector import ReflectorOptions, ReflectorState
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from aioinformer.transforms import strip_managed_fields
from tests._support_reflector import reflector_statistics
from tests._support_tasks import settle
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


def pod(
    name: str, *, labels: dict[str, str] | None = None, namespace: str | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


async def relist_after_backoff(informer: SharedIndexInformer, clock: FakeClock) -> None:
    """Wait for the reflector to back off after a broken watch, then let the backoff
    (at most 1.6 s with jitter) run out so that it relists."""
    await wait_until(lambda: reflector_statistics(informer).state is ReflectorState.BACKING_OFF)
    await clock.advance(2)


# Loop turns enough for a change to cross a running informer: reflector, FIFO, processor,
# handlers.
SETTLE_ROUNDS = 200


class RecordingHandler:
    """Records the names it is handed (adds and updates), as client-go's testListener."""

    def __init__(self, name: str = "recorder") -> None:
        self.name = name
        self.received: list[str] = []
        self.initial_flags: list[tuple[str, bool]] = []
        self.deleted: list[Any] = []

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.received.append(obj["metadata"]["name"])
        self.initial_flags.append((obj["metadata"]["name"], is_in_initial_list))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.received.append(new["metadata"]["name"])

    def on_delete(self, obj: Any) -> None:
        self.deleted.append(obj)

    def names(self) -> set[str]:
        return set(self.received)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def source() -> FakeListerWatcher:
    return FakeListerWatcher()


async def started(informer: SharedIndexInformer) -> AsyncIterator[SharedIndexInformer]:
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        yield informer


# -- indexers -------------------------------------------------------------------------


def label_keys(obj: dict[str, Any]) -> list[str]:
    return sorted(obj["metadata"].get("labels", {}))


async def test_indexers_added_before_and_after_start_index_the_cache(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1", labels={"a": "a-val", "b": "b-val1"}))
    source.add(pod("pod2", labels={"b": "b-val2"}))
    informer = SharedIndexInformer(source, resync_period=1, clock=clock)
    informer.add_indexers({"labels": label_keys})
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        assert [p["metadata"]["name"] for p in informer.indexer.by_index("labels", "a")] == ["pod1"]
        source.add(pod("pod3", labels={"a": "a-val2"}))
        await wait_until(lambda: len(informer.indexer.by_index("labels", "a")) == 2)

        informer.add_indexers({"labels-again": label_keys})
        names = sorted(
            p["metadata"]["name"] for p in informer.indexer.by_index("labels-again", "a")
        )
        assert names == ["pod1", "pod3"]
        assert sorted(informer.indexer.list_index_func_values("labels")) == ["a", "b"]
        assert sorted(informer.indexer.list_index_func_values("labels-again")) == ["a", "b"]
        with pytest.raises(ValueError, match="conflict"):
            informer.add_indexers({"labels": label_keys})
    with pytest.raises(InformerStoppedError):
        informer.add_indexers({"late": label_keys})


# -- resync -----------------------------------------------------------------------------


async def test_each_handler_resyncs_on_its_own_period(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1"))
    source.add(pod("pod2"))
    informer = SharedIndexInformer(source, resync_period=1, clock=clock)
    listeners = [RecordingHandler("l1"), RecordingHandler("l2"), RecordingHandler("l3")]
    informer.add_event_handler(listeners[0], resync_period=0)
    informer.add_event_handler(listeners[1], resync_period=2)
    informer.add_event_handler(listeners[2], resync_period=3)
    async with informer:
        await wait_until(
            lambda: all(listener.names() == {"pod1", "pod2"} for listener in listeners)
        )
        for listener in listeners:
            listener.received.clear()

        await clock.advance(2)
        await wait_until(lambda: listeners[1].names() == {"pod1", "pod2"})
        await settle(SETTLE_ROUNDS)
        assert listeners[0].received == []
        assert listeners[2].received == []
        for listener in listeners:
            listener.received.clear()

        await clock.advance(1)
        await wait_until(lambda: listeners[2].names() == {"pod1", "pod2"})
        await settle(SETTLE_ROUNDS)
        assert listeners[0].received == []
        assert listeners[1].received == []


async def test_resync_check_period_follows_the_smallest_handler_period(
    source: FakeListerWatcher,
) -> None:
    informer = SharedIndexInformer(source, resync_period=12 * 3600)
    handlers = []
    expectations = [
        (0, 12 * 3600, [0]),
        (60, 60, [0, 60]),
        (55, 55, [0, 60, 55]),
        (5, 5, [0, 60, 55, 5]),
    ]
    for requested, check, periods in expectations:
        handlers.append(informer.add_event_handler(RecordingHandler(), resync_period=requested))
        assert informer.resync_check_period == check
        assert [reg.statistics().resync_period for reg in handlers] == periods


@pytest.mark.parametrize(
    ("informer_period", "requested", "expected"),
    [
        pytest.param(0, 5, 0, id="informer-without-resync-gives-zero"),
        pytest.param(10, 0.2, 1, id="below-one-second-raised-to-one"),
        pytest.param(10, None, 10, id="default-is-informer-period"),
        pytest.param(10, 0, 0, id="zero-opts-out"),
    ],
)
def test_handler_resync_period_rules(
    source: FakeListerWatcher, informer_period: float, requested: float | None, expected: float
) -> None:
    informer = SharedIndexInformer(source, resync_period=informer_period)
    registration = informer.add_event_handler(RecordingHandler(), resync_period=requested)
    assert registration.statistics().resync_period == expected


async def test_handler_added_while_running_with_shorter_period_gets_the_check_period(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = SharedIndexInformer(source, resync_period=30, clock=clock)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        registration = informer.add_event_handler(RecordingHandler(), resync_period=5)
        assert registration.statistics().resync_period == 30
        assert informer.resync_check_period == 30


async def test_informer_without_resync_never_resyncs(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1"))
    informer = SharedIndexInformer(source, resync_period=0, clock=clock)
    handler = RecordingHandler()
    informer.add_event_handler(handler, resync_period=1)
    async with informer:
        await wait_until(lambda: handler.received == ["pod1"])
        await clock.advance(10)
        await settle(SETTLE_ROUNDS)
        assert handler.received == ["pod1"]


# -- watch disruption, tombstones -------------------------------------------------------


async def test_watch_disruption_and_relist_reach_handlers(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1"))
    source.add(pod("pod2"))
    informer = SharedIndexInformer(source, resync_period=1, clock=clock)
    no_resync, resync = RecordingHandler("no-resync"), RecordingHandler("resync")
    informer.add_event_handler(no_resync, resync_period=0)
    informer.add_event_handler(resync, resync_period=1)
    async with informer:
        await wait_until(lambda: no_resync.names() == resync.names() == {"pod1", "pod2"})
        for handler in (no_resync, resync):
            handler.received.clear()
        # Changes the watch never reports, then a lost server: only a relist finds them.
        source.add(pod("pod3"), notify=False)
        source.modify(pod("pod2", labels={"changed": "yes"}), notify=False)
        # The resync check flags only the resyncing handler; the relist's unchanged
        # pod1 is then a resync update, which only flagged handlers receive.
        await clock.advance(1)
        source.reset_watch()
        await relist_after_backoff(informer, clock)
        await wait_until(lambda: no_resync.names() == {"pod2", "pod3"})
        await wait_until(lambda: resync.names() == {"pod1", "pod2", "pod3"})
        await settle(SETTLE_ROUNDS)
        assert "pod1" not in no_resync.received


async def test_object_deleted_while_watch_was_down_arrives_as_tombstone(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1", namespace="ns"))
    source.add(pod("pod2", namespace="ns"))
    informer = SharedIndexInformer(source, clock=clock)
    handler = RecordingHandler()
    informer.add_event_handler(handler)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        source.delete("ns/pod1", notify=False)
        source.reset_watch()
        await relist_after_backoff(informer, clock)
        await wait_until(lambda: len(handler.deleted) == 1)
        tombstone = handler.deleted[0]
        assert isinstance(tombstone, DeletedFinalStateUnknown)
        assert tombstone.key == "ns/pod1"
        assert tombstone.obj["metadata"]["name"] == "pod1"
        assert informer.lister().get("pod1", "ns") is None


async def test_list_error_reaches_the_watch_error_handler(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1"))
    source.fail_next_list(Forbidden({"message": "Access Denied", "code": 403}))
    informer = SharedIndexInformer(
        source, clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    errors: list[BaseException] = []
    informer.set_watch_error_handler(lambda reflector, exc: errors.append(exc))
    async with informer:
        await wait_until(lambda: len(errors) == 1)
        assert isinstance(errors[0], ApiError)
        assert "Access Denied" in str(errors[0])
        assert not informer.has_synced()


async def test_a_stray_cancellation_from_the_source_is_retried_and_the_informer_syncs(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    # The source lets out a CancelledError nobody asked for: a list failure, not a stop.
    source.add(pod("pod1"))
    source.fail_next_list(asyncio.CancelledError())
    informer = SharedIndexInformer(
        source, clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    async with informer:
        await relist_after_backoff(informer, clock)
        assert await informer.wait_for_sync(timeout=5)
        assert informer.state is State.RUNNING
        assert informer.indexer.list_keys() == ["pod1"]


async def test_wait_for_sync_times_out_while_list_keeps_failing(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.fail_next_list(*[ServerError({"message": "no", "code": 503})] * 5)
    informer = SharedIndexInformer(
        source, clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    async with informer:
        assert not await informer.wait_for_sync(timeout=0.05)


async def test_wait_for_sync_without_fail_fast_times_out_on_a_403(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.fail_next_list(*[Forbidden({"message": "no", "code": 403})] * 5)
    informer = SharedIndexInformer(
        source, clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    async with informer:
        assert not await informer.wait_for_sync(timeout=0.05, fail_fast=False)


# -- configuration before start ---------------------------------------------------------


async def test_transform_and_error_handler_can_only_be_set_before_start(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = SharedIndexInformer(source, clock=clock)
    informer.set_transform(lambda obj: obj)
    informer.set_watch_error_handler(lambda reflector, exc: None)
    async with informer:
        with pytest.raises(RuntimeError, match="before"):
            informer.set_transform(lambda obj: obj)
        with pytest.raises(RuntimeError, match="before"):
            informer.set_watch_error_handler(lambda reflector, exc: None)


async def test_transform_is_applied_before_cache_and_handlers(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1"))
    source.add(pod("pod2"))

    def upper(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["name"] = obj["metadata"]["name"].upper()
        return obj

    informer = SharedIndexInformer(source, clock=clock)
    informer.set_transform(upper)
    handler = RecordingHandler()
    informer.add_event_handler(handler)
    async with informer:
        await wait_until(lambda: handler.names() == {"POD1", "POD2"})
        assert sorted(informer.indexer.list_keys()) == ["POD1", "POD2"]


def refuse_poisoned(obj: dict[str, Any]) -> dict[str, Any]:
    if obj["metadata"].get("labels", {}).get("poison"):
        raise ValueError("cannot transform a poisoned object")
    return obj


async def test_a_transform_failing_on_a_watch_event_is_logged_and_later_events_apply(
    source: FakeListerWatcher, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    source.add(pod("a"))
    informer = SharedIndexInformer(source, clock=clock, transform=refuse_poisoned)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        with caplog.at_level(logging.ERROR):
            source.add(pod("bad", labels={"poison": "yes"}))
            source.add(pod("b"))
            await wait_until(lambda: informer.indexer.get_by_key("b") is not None)
        assert informer.indexer.get_by_key("bad") is None
        assert informer.state is State.RUNNING
    record = next(r for r in caplog.records if "rejected" in r.getMessage())
    assert record.exc_info is not None
    assert "poisoned" in str(record.exc_info[1])


async def test_a_transform_failing_on_a_listed_object_fails_the_list_until_it_is_gone(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("a"))
    source.add(pod("bad", labels={"poison": "yes"}))
    errors: list[BaseException] = []
    informer = SharedIndexInformer(
        source,
        clock=clock,
        transform=refuse_poisoned,
        watch_error_handler=lambda reflector, exc: errors.append(exc),
        reflector=ReflectorOptions(use_watch_list=False),
    )
    async with informer:
        await wait_until(lambda: len(errors) == 1)
        assert isinstance(errors[0], ValueError)
        assert not informer.has_synced()
        # Not wedged: the reflector keeps relisting after its backoff.
        source.delete("bad", notify=False)
        await relist_after_backoff(informer, clock)
        assert await informer.wait_for_sync(timeout=5)
        assert informer.indexer.list_keys() == ["a"]


async def test_transforming_informer_reports_transformed_objects(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    def make(name: str, generation: str) -> dict[str, Any]:
        obj = pod(name, labels={"generation": generation}, namespace="namespace")
        obj["spec"] = {"hostname": "hostname", "subdomain": "subdomain"}
        obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
        return obj

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        obj["spec"] = {"hostname": "new-hostname", "nodeName": "nodename"}
        stripped: dict[str, Any] = strip_managed_fields(obj)
        return stripped

    def expected(name: str, generation: str) -> tuple[str, str, dict[str, Any]]:
        return name, generation, {"hostname": "new-hostname", "nodeName": "nodename"}

    def summary(obj: dict[str, Any] | None) -> tuple[str, str, dict[str, Any]] | None:
        if obj is None:
            return None
        assert "managedFields" not in obj["metadata"]
        return obj["metadata"]["name"], obj["metadata"]["labels"]["generation"], obj["spec"]

    source.add(make("pod1", "1"))
    source.modify(make("pod1", "2"))
    events: asyncio.Queue[tuple[str, Any, Any]] = asyncio.Queue()
    informer = SharedIndexInformer(source, transform=transform, clock=clock)
    informer.add_event_handler(
        on_add=lambda obj, initial: events.put_nowait(("ADDED", None, summary(obj))),
        on_update=lambda old, new: events.put_nowait(("MODIFIED", summary(old), summary(new))),
        on_delete=lambda obj: events.put_nowait(("DELETED", summary(obj), None)),
    )
    async with informer:
        assert await events.get() == ("ADDED", None, expected("pod1", "2"))
        source.add(make("pod2", "1"))
        assert await events.get() == ("ADDED", None, expected("pod2", "1"))
        source.add(make("pod3", "1"))
        assert await events.get() == ("ADDED", None, expected("pod3", "1"))
        source.modify(make("pod2", "2"))
        assert await events.get() == ("MODIFIED", expected("pod2", "1"), expected("pod2", "2"))
        source.delete("namespace/pod1")
        assert await events.get() == ("DELETED", expected("pod1", "2"), None)
        assert sorted(informer.indexer.list_keys()) == ["namespace/pod2", "namespace/pod3"]


# -- handler registration ---------------------------------------------------------------


def test_remove_handler_unregisters_it(source: FakeListerWatcher) -> None:
    informer = SharedIndexInformer(source)
    first = informer.add_event_handler(RecordingHandler())
    second = informer.add_event_handler(RecordingHandler())
    assert informer.statistics().handlers == (first.statistics(), second.statistics())
    informer.remove_event_handler(second)
    assert len(informer.statistics().handlers) == 1
    informer.remove_event_handler(first)
    assert informer.statistics().handlers == ()


def test_removing_a_foreign_handler_does_nothing(source: FakeListerWatcher) -> None:
    informer = SharedIndexInformer(source)
    other = SharedIndexInformer(FakeListerWatcher())
    registration = informer.add_event_handler(RecordingHandler())
    other.remove_event_handler(registration)
    assert len(informer.statistics().handlers) == 1
    assert len(other.statistics().handlers) == 0


def test_same_handler_registered_twice_gets_two_registrations(
    source: FakeListerWatcher,
) -> None:
    informer = SharedIndexInformer(source)
    handler = RecordingHandler()
    first = informer.add_event_handler(handler)
    second = informer.add_event_handler(handler)
    assert first is not second
    assert len(informer.statistics().handlers) == 2
    informer.remove_event_handler(first)
    assert len(informer.statistics().handlers) == 1
    informer.remove_event_handler(first)  # removing twice is fine
    informer.remove_event_handler(second)
    assert len(informer.statistics().handlers) == 0


def test_handler_name_is_given_name_or_qualified_function_name(
    source: FakeListerWatcher,
) -> None:
    def on_add(obj: Any, initial: bool) -> None: ...

    informer = SharedIndexInformer(source)
    assert informer.add_event_handler(on_add=on_add).name.endswith("<locals>.on_add")
    assert informer.add_event_handler(RecordingHandler()).name == "RecordingHandler"
    assert informer.add_event_handler(RecordingHandler(), name="audit").name == "audit"


async def test_informer_state_goes_new_running_stopped_and_refuses_late_handlers(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1"))
    informer = SharedIndexInformer(source, clock=clock)
    handler = RecordingHandler()
    registration = informer.add_event_handler(handler)
    # Read into a declared local: mypy would keep informer.state narrowed past the awaits
    # that change it.
    state: State = informer.state
    assert state is State.NEW
    async with informer:
        await wait_until(lambda: handler.received == ["pod1"])
        state = informer.state
        assert state is State.RUNNING
    assert informer.state is State.STOPPED
    with pytest.raises(InformerStoppedError):
        informer.add_event_handler(RecordingHandler())
    with pytest.raises(InformerStoppedError):
        informer.events()
    informer.remove_event_handler(registration)  # a no-op, no error
    with pytest.raises(RuntimeError, match="once"):
        await informer.run()


async def test_removed_handler_receives_nothing_more(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = SharedIndexInformer(source, clock=clock)
    handler = RecordingHandler()
    registration = informer.add_event_handler(handler)
    other = RecordingHandler()
    informer.add_event_handler(other)
    async with informer:
        source.add(pod("pod1"))
        await wait_until(lambda: handler.received == ["pod1"])
        informer.remove_event_handler(registration)
        source.add(pod("pod2"))
        await wait_until(lambda: other.received == ["pod1", "pod2"])
        await settle(SETTLE_ROUNDS)
        assert handler.received == ["pod1"]


async def test_handler_added_while_active_gets_snapshot_then_events_and_syncs(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = SharedIndexInformer(source, clock=clock)
    first = RecordingHandler("first")
    first_registration = informer.add_event_handler(first)
    assert not first_registration.has_synced()
    async with informer:
        source.add(pod("pod1"))
        await wait_until(lambda: first.received == ["pod1"])
        assert first_registration.has_synced()

        gate = asyncio.Event()
        second = RecordingHandler("second")

        async def gated_add(obj: dict[str, Any], initial: bool) -> None:
            await gate.wait()
            second.on_add(obj, initial)

        registration = informer.add_event_handler(
            on_add=gated_add, on_update=second.on_update, name="second"
        )
        assert not registration.has_synced()
        await settle(SETTLE_ROUNDS)
        assert not registration.has_synced()  # its snapshot add has not returned yet
        gate.set()
        source.add(pod("pod2"))
        await wait_until(lambda: second.received == ["pod1", "pod2"])
        assert registration.has_synced()
        assert second.initial_flags == [("pod1", True), ("pod2", False)]
        await wait_until(lambda: first.received == ["pod1", "pod2"])


async def test_is_in_initial_list_is_true_only_for_the_initial_list(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1"))
    source.add(pod("pod2"))
    informer = SharedIndexInformer(source, clock=clock)
    handler = RecordingHandler()
    informer.add_event_handler(handler)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        source.add(pod("pod3"))
        await wait_until(lambda: len(handler.initial_flags) == 3)
        assert sorted(handler.initial_flags) == [
            ("pod1", True),
            ("pod2", True),
            ("pod3", False),
        ]
        # A relist after the informer synced adds objects as not initial.
        source.add(pod("pod4"), notify=False)
        source.reset_watch()
        await relist_after_backoff(informer, clock)
        await wait_until(lambda: len(handler.initial_flags) == 4)
        assert handler.initial_flags[-1] == ("pod4", False)


async def test_sync_is_reported_for_an_empty_initial_list(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = SharedIndexInformer(source, clock=clock)
    registration = informer.add_event_handler(RecordingHandler())
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        assert registration.has_synced()


async def test_async_with_returns_before_sync(source: FakeListerWatcher, clock: FakeClock) -> None:
    source.add(pod("pod1"))
    source.stall_next_watch()
    gate = asyncio.Event()
    original_list = source.list

    async def slow_list(options: Any) -> Any:
        await gate.wait()
        return await original_list(options)

    source.list = slow_list  # type: ignore[method-assign]
    informer = SharedIndexInformer(
        source, clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    async with informer:
        assert not informer.has_synced()
        gate.set()
        assert await informer.wait_for_sync(timeout=5)


async def test_handler_abuse_add_and_remove_during_churn(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    rng = random.Random(7)
    informer = SharedIndexInformer(source, clock=clock)
    registrations: list[HandlerRegistration] = []
    names: list[str] = []
    async with informer:
        await informer.wait_for_sync(timeout=5)
        for i in range(1000):
            if not names or rng.random() < 0.4:
                names.append(f"pod{i}")
                source.add(pod(f"pod{i}"))
            elif rng.random() < 0.5:
                source.modify(pod(rng.choice(names), labels={"i": str(i)}))
            else:
                source.delete(names.pop(rng.randrange(len(names))))
            if rng.random() < 0.5:
                registrations.append(
                    informer.add_event_handler(on_add=lambda o, i: None, resync_period=1)
                )
            elif registrations:
                informer.remove_event_handler(registrations.pop(rng.randrange(len(registrations))))
            if i % 50 == 0:
                await asyncio.sleep(0)
        await wait_until(lambda: sorted(informer.indexer.list_keys()) == sorted(names))
    assert informer.state is State.STOPPED


async def test_update_handler_sees_only_allowed_transitions_and_can_write_back(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    allowed = {("from", "to"), ("to", "to"), ("from", "from")}
    bad: list[tuple[str, str]] = []
    done: list[str] = []

    def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        transition = (old["metadata"]["labels"]["check"], new["metadata"]["labels"]["check"])
        if transition not in allowed:
            bad.append(transition)
        if new["metadata"]["labels"].get("final") == "true":
            source.delete(new["metadata"]["name"])

    informer = SharedIndexInformer(source, clock=clock)
    informer.add_event_handler(
        on_update=on_update, on_delete=lambda obj: done.append(obj["metadata"]["name"])
    )
    async with informer:
        await source.wait_for_watchers(1)
        for i in range(3):
            name = f"a-{i}"
            source.add(pod(name, labels={"check": "from"}))
            source.modify(pod(name, labels={"check": "to", "final": "true"}))
        await wait_until(lambda: len(done) == 3)
    assert bad == []


# -- events() ---------------------------------------------------------------------------


async def test_events_yield_added_updated_deleted_and_end_on_stop(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1"))
    informer = SharedIndexInformer(source, clock=clock)
    stream = informer.events()
    assert isinstance(stream, EventStream)
    received: list[Event] = []

    async def consume() -> None:
        async for event in stream:
            received.append(event)

    async with informer:
        consumer = asyncio.create_task(consume())
        await wait_until(lambda: len(received) == 1)
        source.modify(pod("pod1", labels={"x": "y"}))
        source.delete("pod1")
        await wait_until(lambda: len(received) == 3)
    await asyncio.wait_for(consumer, timeout=5)
    assert [(event.type, event.object["metadata"]["name"]) for event in received] == [
        ("ADDED", "pod1"),
        ("UPDATED", "pod1"),
        ("DELETED", "pod1"),
    ]
    assert received[0].is_in_initial_list
    assert received[1].old["metadata"].get("labels") is None
    assert received[1].object["metadata"]["labels"] == {"x": "y"}


async def test_events_registered_late_start_with_the_cache_snapshot(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1"))
    informer = SharedIndexInformer(source, clock=clock)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        async with informer.events() as stream:
            event = await anext(stream)
            assert (event.type, event.is_in_initial_list) == ("ADDED", True)
            assert stream.registration.has_synced()
        assert informer.statistics().handlers == ()


async def test_abandoned_event_stream_unregisters_itself(
    source: FakeListerWatcher,
) -> None:
    informer = SharedIndexInformer(source)
    stream = informer.events()
    assert len(informer.statistics().handlers) == 1
    del stream
    assert informer.statistics().handlers == ()


# -- failing and bounded handlers -------------------------------------------------------


async def test_failing_handler_does_not_stop_delivery_to_itself_or_others(
    source: FakeListerWatcher, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(obj: Any, initial: bool) -> None:
        raise ValueError("handler bug")

    informer = SharedIndexInformer(source, clock=clock)
    bad = informer.add_event_handler(on_add=explode, name="exploder")
    good = RecordingHandler()
    informer.add_event_handler(good)
    with caplog.at_level(logging.ERROR):
        async with informer:
            for i in range(3):
                source.add(pod(f"pod{i}"))
            await wait_until(lambda: len(good.received) == 3)
            await wait_until(lambda: bad.statistics().failed == 3)
    assert any("exploder" in record.getMessage() for record in caplog.records)


async def test_blocking_bound_holds_the_fifo_back_without_losing_events(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    gate = asyncio.Event()
    seen: list[str] = []

    async def slow(obj: dict[str, Any], initial: bool) -> None:
        await gate.wait()
        seen.append(obj["metadata"]["name"])

    informer = SharedIndexInformer(source, clock=clock)
    registration = informer.add_event_handler(on_add=slow, max_pending=3, overflow="block")
    async with informer:
        await informer.wait_for_sync(timeout=5)
        for i in range(20):
            source.add(pod(f"pod{i}"))
        await settle(500)
        assert registration.statistics().pending <= 3
        assert informer.statistics().fifo_pending > 0  # backpressure reached the FIFO
        gate.set()
        await wait_until(lambda: len(seen) == 20)
    assert seen == [f"pod{i}" for i in range(20)]


async def test_coalescing_handler_ends_with_the_newest_state(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    gate = asyncio.Event()
    view: dict[str, str] = {}

    async def on_add(obj: dict[str, Any], initial: bool) -> None:
        await gate.wait()
        view[obj["metadata"]["name"]] = obj["metadata"]["labels"]["v"]

    async def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        view[new["metadata"]["name"]] = new["metadata"]["labels"]["v"]

    informer = SharedIndexInformer(source, clock=clock)
    registration = informer.add_event_handler(
        on_add=on_add, on_update=on_update, max_pending=2, overflow="coalesce"
    )
    async with informer:
        await informer.wait_for_sync(timeout=5)
        source.add(pod("a", labels={"v": "0"}))
        source.add(pod("b", labels={"v": "0"}))
        source.add(pod("c", labels={"v": "0"}))
        for v in range(1, 50):
            source.modify(pod("b", labels={"v": str(v)}))
            source.modify(pod("c", labels={"v": str(v)}))
        await wait_until(lambda: informer.statistics().fifo_pending == 0)
        await settle(SETTLE_ROUNDS)
        assert registration.statistics().pending <= 3
        gate.set()
        await wait_until(lambda: view == {"a": "0", "b": "49", "c": "49"})
        assert registration.statistics().coalesced > 0


# -- typed access -----------------------------------------------------------------------


class Pod(KubeObject):
    spec: dict[str, Any] = Field(default_factory=dict)


async def test_model_makes_handlers_events_and_listers_typed(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1", namespace="ns"))
    informer = SharedIndexInformer(source, model=Pod, clock=clock)
    seen: list[Any] = []
    informer.add_event_handler(on_add=lambda obj, initial: seen.append(obj))
    stream = informer.events()
    async with informer:
        await wait_until(lambda: len(seen) == 1)
        assert isinstance(seen[0], Pod)
        assert seen[0].metadata.name == "pod1"
        event = await anext(stream)
        assert isinstance(event.object, Pod)
        got = informer.lister().get("pod1", namespace="ns")
        assert isinstance(got, Pod)
        raw = informer.indexer.list()[0]  # the cache stays raw
        assert isinstance(raw, Mapping)
        assert not isinstance(raw, Pod)
        await stream.aclose()


# -- statistics ----------------------------------------------------------------------


async def test_statistics_report_cache_handlers_and_reflector(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("pod1"))
    informer = SharedIndexInformer(source, clock=clock, name="pods")
    handler = RecordingHandler()
    informer.add_event_handler(handler, name="recorder")
    before = informer.statistics()
    assert (before.state, before.cache_size, before.reflector) == (State.NEW, 0, None)
    async with informer:
        await wait_until(lambda: handler.received == ["pod1"])
        stats = informer.statistics()
        assert stats.name == "pods"
        assert stats.synced
        assert stats.cache_size == 1
        assert stats.last_sync_resource_version == source.resource_version
        assert [(h.name, h.delivered, h.failed) for h in stats.handlers] == [("recorder", 1, 0)]
        assert stats.reflector is not None
        assert "pods" in repr(informer)


# -- reflector settings passed through ------------------------------------------------


async def test_an_informer_skips_watch_objects_of_another_kind_than_its_list(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("a", namespace="default"))
    informer = SharedIndexInformer(
        source, clock=clock, reflector=ReflectorOptions(use_watch_list=False)
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await source.wait_for_watchers(1)
        source.add({"kind": "Secret", **pod("imposter", namespace="default")})
        source.add(pod("b", namespace="default"))
        await wait_until(lambda: "default/b" in informer.indexer.list_keys())
        assert sorted(informer.indexer.list_keys()) == ["default/a", "default/b"]


async def test_a_configured_expected_kind_wins_over_the_kind_of_the_list(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.add(pod("a", namespace="default"))
    informer = SharedIndexInformer(
        source,
        clock=clock,
        reflector=ReflectorOptions(expected_kind="Widget", use_watch_list=False),
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await source.wait_for_watchers(1)
        source.add({"kind": "Widget", **pod("w", namespace="default")})
        source.add(pod("b", namespace="default"))  # a Pod, as the list said
        await wait_until(lambda: "default/w" in informer.indexer.list_keys())
        await settle(SETTLE_ROUNDS)
        assert sorted(informer.indexer.list_keys()) == ["default/a", "default/w"]


async def test_an_informer_backs_off_with_the_backoff_it_was_given(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    source.fail_next_list(Forbidden({"message": "no", "code": 403}))
    backoff = Backoff(initial=7.0, cap=7.0, jitter=0.0, clock=clock)
    informer = SharedIndexInformer(
        source, clock=clock, backoff=backoff, reflector=ReflectorOptions(use_watch_list=False)
    )
    async with informer:
        await wait_until(lambda: reflector_statistics(informer).state is ReflectorState.BACKING_OFF)
        await clock.advance(6.9)  # the default backoff (0.8 s to 1.6 s) would be over
        assert len(source.list_calls) == 1
        await clock.advance(0.2)
        await source.wait_for_list_calls(2)
        assert await informer.wait_for_sync(timeout=5)


async def test_an_informer_reopens_a_silent_watch_after_its_inactivity_timeout(
    source: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = SharedIndexInformer(
        source, clock=clock, reflector=ReflectorOptions(watch_inactivity_timeout=40.0)
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await source.wait_for_watch_calls(1)
        await clock.advance(35)
        assert len(source.watch_calls) == 1
        await clock.advance(10)  # the default deadline is at least 330 s
        await source.wait_for_watch_calls(2)


def test_an_informer_refuses_a_non_positive_inactivity_timeout(source: FakeListerWatcher) -> None:
    with pytest.raises(ValueError, match="watch_inactivity_timeout"):
        SharedIndexInformer(source, reflector=ReflectorOptions(watch_inactivity_timeout=0))


# -- lister namespaces ------------------------------------------------------------------


@pytest.mark.parametrize("namespace", ["a", None], ids=["one-namespace", "all-namespaces"])
async def test_a_lister_gets_by_name_in_the_namespace_its_informer_watches(
    namespace: str | None,
) -> None:
    source = FakeListerWatcher(namespace=namespace)
    source.add(pod("x", namespace="a"))
    informer = SharedIndexInformer(source)
    async for _ in started(informer):
        found = informer.lister().get("x")
        # All namespaces: no name alone says which namespace, as in client-go.
        assert (found or {}).get("metadata", {}).get("namespace") == namespace
        assert informer.lister().get("x", "a") is not None


@pytest.mark.parametrize("with_index", [True, False], ids=["namespace-index", "scan"])
@pytest.mark.parametrize("everywhere", [None, ""], ids=["none", "empty-string"])
def test_a_lister_given_no_namespace_or_the_empty_one_lists_all_namespaces(
    with_index: bool, everywhere: str | None
) -> None:
    indexers = {NAMESPACE_INDEX: namespace_index_func} if with_index else None
    indexer: Indexer[Any] = Indexer(meta_namespace_key, indexers)
    for obj in (pod("x", namespace="a"), pod("y", namespace="b"), pod("node-1")):
        indexer.add(obj)
    lister: Lister[Any] = Lister(indexer)
    names = sorted(o["metadata"]["name"] for o in lister.list(namespace=everywhere))
    assert names == ["node-1", "x", "y"]
    assert [o["metadata"]["name"] for o in lister.list(namespace="a")] == ["x"]
