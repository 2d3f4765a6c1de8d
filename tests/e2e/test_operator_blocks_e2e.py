"""The three building blocks composed in one running Controller over the fake API server:
a Widget gets the finalizer, an owned ConfigMap (whose events map back to the Widget through
``enqueue_owner``) and an Event; deleting the Widget runs the cleanup, removes the
finalizer and lets the server delete it; the recorder's Events are on the server when it
closes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aioinformer.controller import Controller, enqueue_owner
from aioinformer.errors import AlreadyExists, NotFound
from aioinformer.factory import SharedInformerFactory
from aioinformer.finalizers import Finalizer, finalizers_of
from aioinformer.indexer import split_meta_namespace_key
from aioinformer.ownership import set_controller_reference
from aioinformer.recorder import EventRecorder
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

SERVER_POLL = 0.005
FINALIZER = "example.com/cleanup"
WIDGETS = "example.com/v1/widgets"


def widget_state(server: FakeAPIServer) -> dict[str, Any] | None:
    try:
        return server.get(WIDGETS, "default", "w")
    except NotFound:
        return None


async def test_finalizer_owner_reference_and_events_in_a_running_controller(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.register_crd("example.com", "v1", "widgets", "Widget")
    cleaned: list[str] = []

    async def cleanup(widget: dict[str, Any]) -> None:
        cleaned.append(widget["metadata"]["name"])

    factory = SharedInformerFactory(kube_client)
    widgets = factory.informer_for(WIDGETS)
    configmaps = factory.informer_for("v1/configmaps")
    configmaps_api = kube_client.resource("v1/configmaps")
    finalizer = Finalizer(kube_client.resource(WIDGETS), FINALIZER, cleanup)
    recorder = EventRecorder(kube_client, reporting_controller="example.com/widget-operator")

    async def reconcile(key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        widget = widgets.lister().get(name, namespace)
        if widget is None:
            return
        result = await finalizer.handle(widget)
        if result.stop:
            recorder.event(widget, type="Normal", reason="Finalized", action="Cleanup")
            return
        if configmaps.lister().get(f"{name}-config", namespace) is None:
            desired = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{name}-config", "namespace": namespace},
                "data": {"owner": name},
            }
            set_controller_reference(result.object, desired)
            try:
                created = await configmaps_api.create(desired)
            except AlreadyExists:
                return
            await configmaps.wait_for_resource_version(
                created["metadata"]["resourceVersion"], timeout=10
            )
            recorder.event(widget, type="Normal", reason="Created", action="Create")

    controller = Controller("widgets", reconcile, informers=[widgets])
    controller.watch(configmaps, enqueue=enqueue_owner("Widget", api_version="example.com/v1"))
    async with recorder, factory, controller:
        fake_apiserver.create(
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
        )
        await wait_until(
            lambda: "w-config" in {c["metadata"]["name"] for c in configmaps.lister().list()},
            poll=SERVER_POLL,
            timeout=10,
        )
        widget = widget_state(fake_apiserver)
        assert widget is not None
        assert finalizers_of(widget) == [FINALIZER]
        owned = fake_apiserver.get("v1/configmaps", "default", "w-config")
        [ref] = owned["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
            "Widget",
            "w",
            widget["metadata"]["uid"],
            True,
        )

        # A hand-deleted ConfigMap brings its owner's key back, through the owner reference.
        fake_apiserver.delete("v1/configmaps", "default", "w-config")

        def recreated() -> bool:
            cached = configmaps.lister().get("w-config", "default")
            return cached is not None and cached["metadata"]["uid"] != owned["metadata"]["uid"]

        await wait_until(recreated, poll=SERVER_POLL, timeout=10)

        fake_apiserver.delete(WIDGETS, "default", "w")
        await wait_until(lambda: widget_state(fake_apiserver) is None, poll=SERVER_POLL, timeout=10)
        assert cleaned == ["w"]
    occurrences: dict[str, int] = {}
    for event in fake_apiserver.objects("events.k8s.io/v1/events"):
        count = event.get("series", {}).get("count", 1)
        occurrences[event["reason"]] = occurrences.get(event["reason"], 0) + count
    assert occurrences == {"Created": 2, "Finalized": 1}
    assert recorder.statistics().failed == 0
