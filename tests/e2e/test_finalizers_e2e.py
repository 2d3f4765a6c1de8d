"""The finalizer helper over the fake API server, which keeps an object with finalizers after
DELETE (marked with ``deletionTimestamp``) until the last one is removed: added on the
first reconcile, cleanup on deletion, removal, an object already gone, a failing cleanup,
another controller's finalizer surviving, and a stale object answered with 409."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import Conflict, NotFound
from aioinformer.operator.finalizers import Finalizer, FinalizerAction, finalizers_of

if TYPE_CHECKING:
    from aioinformer.client import Client, ResourceClient
    from aioinformer.testing import FakeAPIServer

NAME = "example.com/cleanup"
OTHER = "other.io/keep"
WIDGETS = "example.com/v1/widgets"


@pytest.fixture
def widgets(fake_apiserver: FakeAPIServer, kube_client: Client) -> ResourceClient:
    fake_apiserver.register_crd("example.com", "v1", "widgets", "Widget")
    return kube_client.resource(WIDGETS)


def create(server: FakeAPIServer, *finalizers: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "w", "namespace": "default"}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return server.create({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta})


def stored(server: FakeAPIServer) -> dict[str, Any]:
    return server.get(WIDGETS, "default", "w")


def marked_for_deletion(server: FakeAPIServer, *finalizers: str) -> dict[str, Any]:
    """Create the widget with ``finalizers``, DELETE it, and return it as the server keeps
    it: marked with a deletionTimestamp."""
    create(server, *finalizers)
    server.delete(WIDGETS, "default", "w")
    marked = stored(server)
    assert marked["metadata"]["deletionTimestamp"]
    return marked


class Recorder:
    """An async cleanup that remembers what it saw and can be told to fail."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.fail: Exception | None = None

    async def __call__(self, obj: dict[str, Any]) -> None:
        self.seen.append(obj)
        if self.fail is not None:
            raise self.fail


async def test_first_reconcile_adds_the_finalizer_and_returns_the_written_object(
    fake_apiserver: FakeAPIServer, widgets: ResourceClient
) -> None:
    cleanup = Recorder()
    finalizer = Finalizer(widgets, NAME, cleanup)
    result = await finalizer.handle(create(fake_apiserver))
    assert result.action is FinalizerAction.ADDED
    assert not result.stop
    now = stored(fake_apiserver)
    assert finalizers_of(now) == [NAME]
    assert result.resource_version == now["metadata"]["resourceVersion"]
    again = await finalizer.handle(now)
    assert again.action is FinalizerAction.PRESENT
    assert again.object is now
    assert stored(fake_apiserver)["metadata"]["resourceVersion"] == result.resource_version
    assert cleanup.seen == []


async def test_deletion_runs_cleanup_then_removes_the_finalizer_and_the_object_goes(
    fake_apiserver: FakeAPIServer, widgets: ResourceClient
) -> None:
    cleanup = Recorder()
    finalizer = Finalizer(widgets, NAME, cleanup)
    await finalizer.handle(create(fake_apiserver))
    fake_apiserver.delete(WIDGETS, "default", "w")
    marked = stored(fake_apiserver)
    assert marked["metadata"]["deletionTimestamp"]
    result = await finalizer.handle(marked)
    assert result.action is FinalizerAction.FINALIZED
    assert result.stop
    assert cleanup.seen == [marked]
    with pytest.raises(NotFound):
        stored(fake_apiserver)


async def test_a_sync_cleanup_is_called_too(
    fake_apiserver: FakeAPIServer, widgets: ResourceClient
) -> None:
    seen: list[str] = []
    finalizer = Finalizer(widgets, NAME, lambda obj: seen.append(obj["metadata"]["name"]))
    result = await finalizer.handle(marked_for_deletion(fake_apiserver, NAME))
    assert result.action is FinalizerAction.FINALIZED
    assert seen == ["w"]


async def test_a_failing_cleanup_keeps_the_finalizer_and_propagates(
    fake_apiserver: FakeAPIServer, widgets: ResourceClient
) -> None:
    cleanup = Recorder()
    cleanup.fail = RuntimeError("bucket still in use")
    finalizer = Finalizer(widgets, NAME, cleanup)
    marked = marked_for_deletion(fake_apiserver, NAME)
    with pytest.raises(RuntimeError, match="bucket still in use"):
        await finalizer.handle(marked)
    assert stored(fake_apiserver) == marked
    cleanup.fail = None
    assert (await finalizer.handle(marked)).action is FinalizerAction.FINALIZED
    assert len(cleanup.seen) == 2


async def test_an_object_gone_before_the_removal_counts_as_finalized(
    fake_apiserver: FakeAPIServer, widgets: ResourceClient
) -> None:
    cleanup = Recorder()
    finalizer = Finalizer(widgets, NAME, cleanup)
    marked = marked_for_deletion(fake_apiserver, NAME)
    fake_apiserver.patch(WIDGETS, "default", "w", {"metadata": {"finalizers": None}})
    result = await finalizer.handle(marked)
    assert result.action is FinalizerAction.FINALIZED
    assert result.object is None
    assert cleanup.seen == [marked]


async def test_another_controllers_finalizer_survives_add_and_remove(
    fake_apiserver: FakeAPIServer, widgets: ResourceClient
) -> None:
    finalizer = Finalizer(widgets, NAME, Recorder())
    await finalizer.handle(create(fake_apiserver, OTHER))
    assert finalizers_of(stored(fake_apiserver)) == [OTHER, NAME]
    fake_apiserver.delete(WIDGETS, "default", "w")
    result = await finalizer.handle(stored(fake_apiserver))
    assert result.action is FinalizerAction.FINALIZED
    still = stored(fake_apiserver)
    assert finalizers_of(still) == [OTHER]
    assert still["metadata"]["deletionTimestamp"]
    assert result.object == still


async def test_deleting_without_this_finalizer_does_nothing(
    fake_apiserver: FakeAPIServer, widgets: ResourceClient
) -> None:
    cleanup = Recorder()
    finalizer = Finalizer(widgets, NAME, cleanup)
    marked = marked_for_deletion(fake_apiserver, OTHER)
    result = await finalizer.handle(marked)
    assert result.action is FinalizerAction.DELETING
    assert result.stop
    assert cleanup.seen == []
    assert stored(fake_apiserver) == marked


async def test_a_stale_object_gets_a_conflict_and_loses_no_concurrent_finalizer(
    fake_apiserver: FakeAPIServer, widgets: ResourceClient
) -> None:
    finalizer = Finalizer(widgets, NAME, Recorder())
    stale = create(fake_apiserver)
    fake_apiserver.patch(WIDGETS, "default", "w", {"metadata": {"finalizers": [OTHER]}})
    with pytest.raises(Conflict):
        await finalizer.handle(stale)
    assert finalizers_of(stored(fake_apiserver)) == [OTHER]
    result = await finalizer.handle(stored(fake_apiserver))
    assert result.action is FinalizerAction.ADDED
    assert finalizers_of(stored(fake_apiserver)) == [OTHER, NAME]


async def test_a_stale_deleting_object_gets_a_conflict_after_cleanup(
    fake_apiserver: FakeAPIServer, widgets: ResourceClient
) -> None:
    cleanup = Recorder()
    finalizer = Finalizer(widgets, NAME, cleanup)
    stale = marked_for_deletion(fake_apiserver, NAME)
    fake_apiserver.patch(WIDGETS, "default", "w", {"metadata": {"finalizers": [NAME, OTHER]}})
    with pytest.raises(Conflict):
        await finalizer.handle(stale)
    assert finalizers_of(stored(fake_apiserver)) == [NAME, OTHER]
    assert (await finalizer.handle(stored(fake_apiserver))).action is FinalizerAction.FINALIZED
    assert finalizers_of(stored(fake_apiserver)) == [OTHER]
    assert len(cleanup.seen) == 2
