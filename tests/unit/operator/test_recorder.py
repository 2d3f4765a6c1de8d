"""The EventRecorder against an in-memory sink on a FakeClock: the Event it builds, client-go's
aggregation of repeats into a series (patched on the first repeat, counted in memory after,
written when the series ends, on the heartbeat and on close), 404 on a series patch,
retries of transport failures and refusals, the bounded queue, and input validation."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from aioinformer import State
from aioinformer.errors import Conflict, Forbidden, NotFound, TransportError
from aioinformer.models import KubeObject, ObjectMeta
from aioinformer.operator.recorder import (
    NOTE_MAX_BYTES,
    EventRecorder,
    object_reference,
)
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.testing.clock import FakeClock

CONTROLLER = "example.com/widget-operator"


class FakeSink:
    """Records every write; ``failures`` are raised by the next writes, in order;
    ``blocked`` set holds every write until it is cleared."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, dict[str, Any]]] = []
        self.failures: list[Exception] = []
        self.release = asyncio.Event()
        self.release.set()

    async def _write(self, verb: str, namespace: str | None, data: dict[str, Any]) -> None:
        await self.release.wait()
        if self.failures:
            raise self.failures.pop(0)
        self.calls.append((verb, namespace, data))

    async def create(self, obj: Any, namespace: str | None = None) -> dict[str, Any]:
        await self._write("create", namespace, dict(obj))
        return dict(obj)

    async def patch(self, name: str, patch: Any, *, namespace: str | None = None) -> dict[str, Any]:
        await self._write("patch", namespace, {"name": name, **patch})
        return {"metadata": {"name": name}}

    def verbs(self) -> list[str]:
        return [verb for verb, _, _ in self.calls]

    def counts(self) -> list[int]:
        return [data["series"]["count"] for _, _, data in self.calls if "series" in data]


def widget(name: str = "hello", *, namespace: str | None = "default", rv: str = "5") -> Any:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": rv}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta}


def recorder(sink: FakeSink, clock: FakeClock, **options: Any) -> EventRecorder:
    options.setdefault("reporting_instance", "operator-0")
    return EventRecorder(sink, reporting_controller=CONTROLLER, clock=clock, **options)


def created(rec: EventRecorder, sink: FakeSink, n: int = 1) -> Any:
    return wait_until(lambda: len(sink.calls) >= n and not rec.statistics().queued)


async def test_the_first_occurrence_creates_an_event_regarding_the_object(
    fake_clock: FakeClock,
) -> None:
    sink = FakeSink()
    async with recorder(sink, fake_clock) as rec:
        rec.event(widget(), type="Normal", reason="Created", action="Create", note="made it")
        await created(rec, sink)
    [(verb, namespace, event)] = sink.calls
    assert (verb, namespace) == ("create", "default")
    assert event["apiVersion"] == "events.k8s.io/v1"
    assert event["kind"] == "Event"
    assert event["metadata"]["namespace"] == "default"
    name, _, suffix = event["metadata"]["name"].partition(".")
    assert name == "hello"
    int(suffix, 16)
    assert event["regarding"] == {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "namespace": "default",
        "name": "hello",
        "uid": "uid-hello",
        "resourceVersion": "5",
    }
    assert event["reportingController"] == CONTROLLER
    assert event["reportingInstance"] == "operator-0"
    assert (event["type"], event["reason"], event["action"], event["note"]) == (
        "Normal",
        "Created",
        "Create",
        "made it",
    )
    assert event["eventTime"].endswith("Z")
    assert len(event["eventTime"].split(".")[1]) == 7  # six digits and the Z
    assert "series" not in event
    assert "related" not in event


async def test_a_cluster_scoped_object_gets_its_events_in_default(fake_clock: FakeClock) -> None:
    sink = FakeSink()
    async with recorder(sink, fake_clock) as rec:
        rec.event(widget("node-1", namespace=None), type="Warning", reason="R", action="A")
        await created(rec, sink)
    assert sink.calls[0][1] == "default"
    assert "namespace" not in sink.calls[0][2]["regarding"]


async def test_repeats_become_one_series_patched_on_the_first_repeat_and_flushed_on_close(
    fake_clock: FakeClock,
) -> None:
    sink = FakeSink()
    async with recorder(sink, fake_clock) as rec:
        for _ in range(10):
            rec.event(widget(), type="Normal", reason="Synced", action="Sync")
        await created(rec, sink, 2)
        await fake_clock.settle()
        assert sink.verbs() == ["create", "patch"]
        assert sink.counts() == [2]
        name = sink.calls[0][2]["metadata"]["name"]
        assert sink.calls[1][2]["name"] == name
        assert rec.statistics().series == 1
    assert sink.verbs() == ["create", "patch", "patch"]
    assert sink.counts() == [2, 10]
    stats = rec.statistics()
    assert (stats.created, stats.patched, stats.dropped, stats.failed) == (1, 2, 0, 0)
    assert rec.state is State.STOPPED


async def test_distinct_keys_are_distinct_events(fake_clock: FakeClock) -> None:
    sink = FakeSink()
    async with recorder(sink, fake_clock) as rec:
        rec.event(widget(), type="Normal", reason="Created", action="Create")
        rec.event(widget(), type="Normal", reason="Updated", action="Create")
        rec.event(widget(), type="Normal", reason="Created", action="Update")
        rec.event(widget("other"), type="Normal", reason="Created", action="Create")
        rec.event(widget(rv="6"), type="Normal", reason="Created", action="Create")
        rec.event(widget(), type="Normal", reason="Created", action="Create", related=widget("cm"))
        await created(rec, sink, 6)
    assert sink.verbs() == ["create"] * 6
    assert len({data["metadata"]["name"] for _, _, data in sink.calls}) == 6
    assert sink.calls[5][2]["related"]["name"] == "cm"


async def test_a_series_ends_after_six_quiet_minutes_with_its_final_count(
    fake_clock: FakeClock,
) -> None:
    sink = FakeSink()
    async with recorder(sink, fake_clock) as rec:
        for _ in range(3):
            rec.event(widget(), type="Normal", reason="Synced", action="Sync")
        await created(rec, sink, 2)
        await fake_clock.advance(360)
        assert sink.counts() == [2]  # quiet for exactly 6 minutes: not over yet
        await fake_clock.advance(360)
        await wait_until(lambda: rec.statistics().series == 0)
        assert sink.counts() == [2, 3]
        rec.event(widget(), type="Normal", reason="Synced", action="Sync")
        await created(rec, sink, 4)
    assert sink.verbs() == ["create", "patch", "patch", "create"]


async def test_a_singleton_is_forgotten_without_a_write_when_it_ends(
    fake_clock: FakeClock,
) -> None:
    sink = FakeSink()
    async with recorder(sink, fake_clock) as rec:
        rec.event(widget(), type="Normal", reason="Synced", action="Sync")
        await created(rec, sink)
        await fake_clock.advance(720)
        await wait_until(lambda: rec.statistics().series == 0)
    assert sink.verbs() == ["create"]


async def test_a_long_series_is_written_on_the_half_hour_heartbeat(fake_clock: FakeClock) -> None:
    sink = FakeSink()
    async with recorder(sink, fake_clock) as rec:
        rec.event(widget(), type="Normal", reason="Synced", action="Sync")
        for minute in range(5, 35, 5):
            rec.event(widget(), type="Normal", reason="Synced", action="Sync")
            await fake_clock.advance(300)
            assert sink.counts() == ([2, minute // 5 + 1] if minute >= 30 else [2]), minute
        assert rec.statistics().series == 1


async def test_a_series_patch_answered_404_or_409_creates_the_event_again(
    fake_clock: FakeClock,
) -> None:
    sink = FakeSink()
    async with recorder(sink, fake_clock) as rec:
        rec.event(widget(), type="Normal", reason="Synced", action="Sync")
        await created(rec, sink)
        sink.failures = [NotFound({"message": "expired"})]
        rec.event(widget(), type="Normal", reason="Synced", action="Sync")
        await created(rec, sink, 2)
        sink.failures = [Conflict({"message": "changed"})]
        rec.event(widget(), type="Normal", reason="Synced", action="Sync")
    assert sink.verbs() == ["create", "create", "create"]
    assert sink.counts() == [2, 3]
    assert sink.calls[1][2]["metadata"]["name"] == sink.calls[0][2]["metadata"]["name"]


async def test_transport_failures_are_retried_and_logged_once(
    fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="aioinformer.operator.recorder")
    sink = FakeSink()
    sink.failures = [TransportError("reset"), TransportError("reset"), TransportError("reset")]
    async with recorder(sink, fake_clock) as rec:
        rec.event(widget(), type="Warning", reason="Failed", action="Sync")
        for _ in range(3):
            await fake_clock.wait_for_sleepers(2)  # the series timer and the retry
            # Wake exactly the retry: a fixed step could cover two jittered delays at once.
            assert await fake_clock.advance_to_next() <= 3 * 12.5
        await created(rec, sink)
    assert sink.verbs() == ["create"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "failed, retrying: reset" in warnings[0].getMessage()
    assert any(r.levelno == logging.INFO and "succeed again" in r.message for r in caplog.records)
    assert rec.statistics().failed == 0


async def test_retries_stop_after_max_tries(fake_clock: FakeClock) -> None:
    sink = FakeSink()
    sink.failures = [TransportError("down")] * 3
    async with recorder(sink, fake_clock, max_tries=2) as rec:
        rec.event(widget(), type="Normal", reason="R", action="A")
        await fake_clock.wait_for_sleepers(2)
        await fake_clock.advance(12.5)
        await wait_until(lambda: rec.statistics().failed == 1)
    assert sink.calls == []
    assert len(sink.failures) == 1


async def test_a_refused_event_is_not_retried(fake_clock: FakeClock) -> None:
    sink = FakeSink()
    sink.failures = [Forbidden({"message": "no"})]
    async with recorder(sink, fake_clock) as rec:
        rec.event(widget(), type="Normal", reason="R", action="A")
        rec.event(widget(), type="Normal", reason="Other", action="A")
        await created(rec, sink)
    assert sink.verbs() == ["create"]
    assert sink.calls[0][2]["reason"] == "Other"
    assert rec.statistics().failed == 1


async def test_a_full_queue_drops_and_counts(fake_clock: FakeClock) -> None:
    sink = FakeSink()
    rec = recorder(sink, fake_clock, max_queued=3)
    for reason in "ABCDE":
        rec.event(widget(), type="Normal", reason=reason, action="A")
    stats = rec.statistics()
    assert (stats.queued, stats.dropped) == (3, 2)
    async with rec:
        await created(rec, sink, 3)
    assert [data["reason"] for _, _, data in sink.calls] == ["A", "B", "C"]


async def test_events_after_close_are_dropped_and_close_is_idempotent(
    fake_clock: FakeClock,
) -> None:
    sink = FakeSink()
    rec = recorder(sink, fake_clock)
    async with rec:
        pass
    rec.event(widget(), type="Normal", reason="Late", action="A")
    await rec.aclose()
    assert rec.statistics().dropped == 1
    assert sink.calls == []
    with pytest.raises(RuntimeError, match="runs only once"):
        await rec.start()


async def test_close_is_bounded_by_the_flush_timeout(fake_clock: FakeClock) -> None:
    sink = FakeSink()
    sink.release.clear()
    rec = recorder(sink, fake_clock, flush_timeout=5.0)
    await rec.start()
    rec.event(widget(), type="Normal", reason="A", action="A")
    rec.event(widget(), type="Normal", reason="B", action="A")
    closing = asyncio.create_task(rec.aclose())
    await fake_clock.wait_for_sleepers(2)  # the series timer and the flush deadline
    await fake_clock.advance(5.0)
    await closing
    assert rec.state is State.STOPPED
    assert rec.statistics().dropped == 1
    assert sink.calls == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"type": "Error", "reason": "R", "action": "A"}, "'Normal' or 'Warning'"),
        ({"type": "Normal", "reason": "", "action": "A"}, "reason must be a non-empty"),
        ({"type": "Normal", "reason": "R" * 129, "action": "A"}, "reason is longer than 128"),
        ({"type": "Normal", "reason": "R", "action": "A" * 129}, "action is longer than 128"),
    ],
    ids=["type", "empty-reason", "long-reason", "long-action"],
)
def test_bad_fields_raise_value_error(
    fake_clock: FakeClock, options: dict[str, Any], message: str
) -> None:
    rec = recorder(FakeSink(), fake_clock)
    with pytest.raises(ValueError, match=message):
        rec.event(widget(), **options)
    assert rec.statistics().queued == 0


async def test_a_long_note_is_cut_to_one_kib_on_a_character_boundary(
    fake_clock: FakeClock,
) -> None:
    sink = FakeSink()
    async with recorder(sink, fake_clock) as rec:
        rec.event(widget(), type="Normal", reason="R", action="A", note="é" * 600)
        await created(rec, sink)
    note = sink.calls[0][2]["note"]
    assert note == "é" * 512
    assert len(note.encode()) == NOTE_MAX_BYTES


@pytest.mark.parametrize(
    "controller", ["widget-operator", "Example.com/x", "example.com/", "x" * 125 + ".com/op"]
)
def test_the_reporting_controller_must_be_a_short_domain_prefixed_path(controller: str) -> None:
    with pytest.raises(ValueError, match="reporting"):
        EventRecorder(FakeSink(), reporting_controller=controller)


def test_the_default_instance_is_controller_and_hostname() -> None:
    rec = EventRecorder(FakeSink(), reporting_controller=CONTROLLER)
    assert rec.reporting_instance.startswith(CONTROLLER + "-")


def test_object_reference_reads_models_and_passes_references_through() -> None:
    model = KubeObject(
        apiVersion="v1", kind="Pod", metadata=ObjectMeta(name="p", namespace="ns", uid="u")
    )
    assert object_reference(model) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "ns",
        "name": "p",
        "uid": "u",
    }
    ref = {"kind": "Node", "name": "n1", "fieldPath": "spec", "extra": "x"}
    assert object_reference(ref) == {"kind": "Node", "name": "n1", "fieldPath": "spec"}
    with pytest.raises(ValueError, match="kind and a name"):
        object_reference({"metadata": {"name": "x"}})


async def test_an_unexpected_sink_failure_drops_that_write_and_the_writer_goes_on(
    fake_clock: FakeClock,
) -> None:
    sink = FakeSink()
    sink.failures = [RuntimeError("sink bug")]
    async with recorder(sink, fake_clock) as rec:
        rec.event(widget(), type="Normal", reason="A", action="A")
        rec.event(widget(), type="Normal", reason="B", action="A")
        await created(rec, sink)
    assert [data["reason"] for _, _, data in sink.calls] == ["B"]
    assert rec.statistics().failed == 1


async def test_closing_a_recorder_never_started_drops_what_it_queued(
    fake_clock: FakeClock,
) -> None:
    sink = FakeSink()
    rec = recorder(sink, fake_clock)
    rec.event(widget(), type="Normal", reason="A", action="A")
    await rec.aclose()
    stats = rec.statistics()
    assert (stats.queued, stats.dropped) == (0, 1)
    assert rec.state is State.STOPPED
    assert sink.calls == []


async def test_a_recorder_stopped_before_its_run_never_writes(fake_clock: FakeClock) -> None:
    sink = FakeSink()
    rec = recorder(sink, fake_clock)
    rec.event(widget(), type="Normal", reason="A", action="A")
    rec.stop()
    rec.event(widget(), type="Normal", reason="B", action="A")  # dropped: stopped
    async with anyio.create_task_group() as task_group:
        await task_group.start(rec.run)  # returns at once: the run does not serve
    assert rec.statistics().dropped == 2
    assert sink.calls == []
    with pytest.raises(RuntimeError, match="runs only once"):
        await rec.run()


async def test_a_recorder_goes_through_every_state_once_and_flushes_while_stopping(
    fake_clock: FakeClock,
) -> None:
    sink = FakeSink()
    sink.release.clear()
    rec = recorder(sink, fake_clock)
    seen: list[State] = [rec.state]
    async with anyio.create_task_group() as task_group:
        await task_group.start(rec.run)
        seen.append(rec.state)
        rec.event(widget(), type="Normal", reason="A", action="A")
        await asyncio.sleep(0)
        rec.stop()
        seen.append(rec.state)
        rec.event(widget(), type="Normal", reason="Late", action="A")  # dropped: stopping
        sink.release.set()
    seen.append(rec.state)
    assert seen == [State.NEW, State.RUNNING, State.STOPPING, State.STOPPED]
    assert [data["reason"] for _, _, data in sink.calls] == ["A"]
    assert rec.statistics().dropped == 1
    with pytest.raises(RuntimeError, match="runs only once"):
        await rec.run()
