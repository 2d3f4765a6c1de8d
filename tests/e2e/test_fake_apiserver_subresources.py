"""The ``status`` and ``scale`` subresources, driven through the library's client over the
fake API server: a status write changes only ``status``, a main-resource write never
changes it, and a Scale write changes only ``spec.replicas``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import Conflict, NotFound
from tests._support_objects import pod_spec

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def deployment(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec()},
            **spec,
        },
    }


def widget(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"size": 1},
    }


@pytest.fixture
def widgets(fake_apiserver: FakeAPIServer) -> FakeAPIServer:
    fake_apiserver.register_crd("example.com", "v1", "widgets", "Widget", scale_subresource=True)
    fake_apiserver.register_crd("example.com", "v1", "gadgets", "Gadget", status_subresource=False)
    return fake_apiserver


RESOURCES = [
    pytest.param("pods", pod, {"containers": [{"name": "main", "image": "busybox:2"}]}, id="pods"),
    pytest.param("deployments", deployment, deployment("x", replicas=5)["spec"], id="deployments"),
    pytest.param("widgets", widget, {"size": 9}, id="crd-with-status"),
]


@pytest.mark.parametrize(("resource", "make", "new_spec"), RESOURCES)
async def test_status_patch_changes_only_status(
    kube_client: Client, widgets: FakeAPIServer, resource: str, make: Any, new_spec: Any
) -> None:
    created = widgets.create(make("a"))
    client = kube_client.resource(resource, "default")
    patched = await client.patch(
        "a",
        {"metadata": {"labels": {"app": "db"}}, "spec": new_spec, "status": {"ready": True}},
        subresource="status",
    )
    assert patched["status"] == {"ready": True}
    assert patched["spec"] == created["spec"]
    assert patched["metadata"]["labels"] == {"app": "web"}
    assert patched["metadata"]["generation"] == created["metadata"]["generation"]
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert await client.get("a", subresource="status") == patched


@pytest.mark.parametrize(("resource", "make", "new_spec"), RESOURCES)
async def test_main_resource_writes_ignore_status(
    kube_client: Client, widgets: FakeAPIServer, resource: str, make: Any, new_spec: Any
) -> None:
    widgets.create(make("a"))
    client = kube_client.resource(resource, "default")
    await client.patch("a", {"status": {"ready": True}}, subresource="status")
    current = await client.get("a")
    replaced = await client.update(dict(current, spec=new_spec, status={"ready": False}))
    assert (replaced["spec"], replaced["status"]) == (new_spec, {"ready": True})
    assert replaced["metadata"]["generation"] == current["metadata"]["generation"] + 1
    patched = await client.patch("a", {"status": {"ready": False}})
    assert patched["status"] == {"ready": True}


async def test_status_update_replaces_the_status_and_checks_the_resource_version(
    kube_client: Client, widgets: FakeAPIServer
) -> None:
    created = widgets.create(widget("a"))
    client = kube_client.resource("widgets", "default")
    updated = await client.update(
        dict(created, status={"phase": "Ready"}, spec={"size": 100}), subresource="status"
    )
    assert (updated["status"], updated["spec"]) == ({"phase": "Ready"}, {"size": 1})
    with pytest.raises(Conflict):
        await client.update(dict(created, status={"phase": "Stale"}), subresource="status")


async def test_resource_without_status_subresource_stores_status_with_the_object(
    kube_client: Client, widgets: FakeAPIServer
) -> None:
    created = widgets.create(
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    )
    gadgets = kube_client.resource("gadgets", "default")
    updated = await gadgets.update(dict(created, status={"phase": "Ready"}))
    assert updated["status"] == {"phase": "Ready"}
    with pytest.raises(NotFound):
        await gadgets.patch("g", {"status": {}}, subresource="status")


async def test_scale_reads_replicas_and_selector_of_a_deployment(
    kube_client: Client, fake_apiserver: FakeAPIServer
) -> None:
    created = fake_apiserver.create(deployment("web"))
    scale = await kube_client.resource("deployments", "default").get("web", subresource="scale")
    meta = created["metadata"]
    assert scale == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": 1},
        "status": {"replicas": 0, "selector": "app=web"},
    }


async def test_scale_writes_change_only_spec_replicas(
    kube_client: Client, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(deployment("web", replicas=2))
    deployments = kube_client.resource("deployments", "default")
    await deployments.patch("web", {"status": {"replicas": 2}}, subresource="status")
    scale = await deployments.patch("web", {"spec": {"replicas": 4}}, subresource="scale")
    assert (scale["spec"], scale["status"]["replicas"]) == ({"replicas": 4}, 2)
    stored = fake_apiserver.get("deployments", "default", "web")
    assert stored["spec"]["replicas"] == 4
    assert stored["status"] == {"replicas": 2}
    assert stored["metadata"]["generation"] == 2
    updated = await deployments.update(dict(scale, spec={"replicas": 0}), subresource="scale")
    assert updated["spec"] == {"replicas": 0}
    with pytest.raises(Conflict):
        await deployments.update(scale, subresource="scale")  # its resourceVersion is stale


async def test_scale_of_a_custom_resource_and_selector_expressions(
    kube_client: Client, widgets: FakeAPIServer
) -> None:
    obj = widget("w")
    obj["spec"] = {
        "replicas": 3,
        "selector": {
            "matchLabels": {"tier": "front"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        },
    }
    widgets.create(obj)
    scale = await kube_client.resource("widgets", "default").get("w", subresource="scale")
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"]["selector"] == "env in (dev,prod),!legacy,tier=front"


async def test_scale_is_served_only_where_the_resource_has_it(
    kube_client: Client, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
    )
    with pytest.raises(NotFound):
        await kube_client.resource("configmaps", "default").get("c", subresource="scale")


async def test_discovery_announces_status_and_scale(kube_client: Client) -> None:
    deployments = await kube_client.resolve("deployments")
    configmaps = await kube_client.resolve("configmaps")
    assert deployments.subresources == ("scale", "status")
    assert configmaps.subresources == ()
