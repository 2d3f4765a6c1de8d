"""The EventRecorder over the fake API server, which now serves ``events.k8s.io/v1`` Events
beside the core ones: repeats stored as one Event with a series, distinct reasons as distinct
Events, a Warning, a full queue dropping, a recreated series after the Event was deleted,
and discovery resolving a bare ``events`` to the core group as kubectl does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aioinformer.recorder import EventRecorder
from aioinformer.testing import FakeClock
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

EVENTS = "events.k8s.io/v1/events"
CONTROLLER = "example.com/widget-operator"
SOCKET_POLL = 0.005


def configmap(fake_apiserver: FakeAPIServer, name: str = "hello") -> dict[str, Any]:
    return fake_apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
        }
    )


def stored_events(fake_apiserver: FakeAPIServer) -> list[dict[str, Any]]:
    return fake_apiserver.objects(EVENTS, "default")


async def test_ten_identical_events_are_one_event_with_a_series_of_ten(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    regarding = configmap(fake_apiserver)
    async with EventRecorder(kube_client, reporting_controller=CONTROLLER) as recorder:
        for _ in range(10):
            recorder.event(regarding, type="Normal", reason="Synced", action="Sync", note="ok")
    [event] = stored_events(fake_apiserver)
    assert event["series"]["count"] == 10
    assert event["series"]["lastObservedTime"] >= event["eventTime"]
    assert event["regarding"]["uid"] == regarding["metadata"]["uid"]
    assert event["metadata"]["name"].startswith("hello.")
    assert (event["type"], event["reason"], event["action"], event["note"]) == (
        "Normal",
        "Synced",
        "Sync",
        "ok",
    )
    stats = recorder.statistics()
    assert (stats.created, stats.patched, stats.failed, stats.dropped) == (1, 2, 0, 0)


async def test_distinct_reasons_are_distinct_events_and_warnings_stay_warnings(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    regarding = configmap(fake_apiserver)
    async with EventRecorder(kube_client, reporting_controller=CONTROLLER) as recorder:
        recorder.event(regarding, type="Normal", reason="Created", action="Create")
        recorder.event(regarding, type="Warning", reason="Failed", action="Sync", note="boom")
    events = {e["reason"]: e for e in stored_events(fake_apiserver)}
    assert sorted(events) == ["Created", "Failed"]
    assert events["Failed"]["type"] == "Warning"
    assert events["Failed"]["note"] == "boom"
    assert all("series" not in e for e in events.values())


async def test_a_full_queue_drops_and_counts_what_it_dropped(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    regarding = configmap(fake_apiserver)
    recorder = EventRecorder(kube_client, reporting_controller=CONTROLLER, max_queued=2)
    for reason in ("A", "B", "C", "D"):
        recorder.event(regarding, type="Normal", reason=reason, action="Sync")
    async with recorder:
        pass
    assert sorted(e["reason"] for e in stored_events(fake_apiserver)) == ["A", "B"]
    assert recorder.statistics().dropped == 2


async def test_a_series_whose_event_was_deleted_is_created_again(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    regarding = configmap(fake_apiserver)
    clock = FakeClock()
    async with EventRecorder(kube_client, reporting_controller=CONTROLLER, clock=clock) as rec:
        rec.event(regarding, type="Normal", reason="Synced", action="Sync")
        rec.event(regarding, type="Normal", reason="Synced", action="Sync")
        rec.event(regarding, type="Normal", reason="Synced", action="Sync")
        await wait_until(lambda: rec.statistics().patched == 1, poll=SOCKET_POLL, timeout=10)
        [event] = stored_events(fake_apiserver)
        fake_apiserver.delete(EVENTS, "default", event["metadata"]["name"])
    [again] = stored_events(fake_apiserver)
    assert again["metadata"]["name"] == event["metadata"]["name"]
    assert again["series"]["count"] == 3
    assert again["eventTime"] == event["eventTime"]


async def test_a_bare_events_resolves_to_the_core_group_and_both_are_discoverable(
    kube_client: Client,
) -> None:
    core = await kube_client.resolve("events")
    assert core.gvr.api_version == "v1"
    new = await kube_client.resolve("events.events.k8s.io")
    assert new.gvr.api_version == "events.k8s.io/v1"
    assert new.kind == "Event"
    assert new.namespaced
