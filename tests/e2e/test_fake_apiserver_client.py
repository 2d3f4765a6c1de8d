"""``server.client()`` and the ``kube_client`` fixture: the library's own client, talking
to the fake over real HTTP."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import pytest

from aioinformer.errors import Gone, NotAnObjectError, PatchArgumentsError
from aioinformer.k8s.core_v1 import ConfigMap
from aioinformer.listwatch import ListOptions, WatchEvent
from aioinformer.models import ObjectMeta
from tests._support_objects import pod

if TYPE_CHECKING:
    from aioinformer.client import Client, ResourceClient
    from aioinformer.testing import FakeAPIServer


async def first_event(resource: ResourceClient, options: ListOptions) -> WatchEvent:
    async with contextlib.aclosing(resource.watch(options)) as events:
        async for event in events:
            return event
    raise AssertionError("the watch ended without an event")


async def test_server_client_lists_pods(fake_apiserver: FakeAPIServer) -> None:
    fake_apiserver.create(pod("a"))
    async with fake_apiserver.client() as client:
        page = await client.resource("pods", namespace="default").list(ListOptions())
    assert [item["metadata"]["name"] for item in page.items] == ["a"]
    assert page.items[0]["kind"] == "Pod"
    assert page.resource_version == fake_apiserver.resource_version


async def test_kube_client_fixture_watches_and_sees_410(
    kube_client: Client, fake_apiserver: FakeAPIServer
) -> None:
    pods = kube_client.resource("v1/configmaps", namespace="default")
    old = fake_apiserver.resource_version
    fake_apiserver.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
    )
    event = await first_event(pods, ListOptions(resource_version=old))
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "c")
    fake_apiserver.compact()
    with pytest.raises(Gone):
        await first_event(pods, ListOptions(resource_version=old))


async def test_a_typed_object_is_written_as_its_json_and_misplaced_arguments_never_leave(
    fake_apiserver: FakeAPIServer,
) -> None:
    async with fake_apiserver.client() as client:
        config_maps = client.resource("v1/configmaps")
        created = await config_maps.create(
            ConfigMap(metadata=ObjectMeta(name="typed", namespace="default"), data={"a": "1"})
        )
        assert (created["kind"], created["data"]) == ("ConfigMap", {"a": "1"})
        read = ConfigMap.model_validate(created)
        read.data = {"a": "2"}
        assert (await config_maps.update(read))["data"] == {"a": "2"}

        sent = len(fake_apiserver.request_log)
        with pytest.raises(NotAnObjectError):
            await config_maps.create([created])  # type: ignore[arg-type]
        with pytest.raises(PatchArgumentsError):
            await config_maps.patch("typed", "default", {"data": {}})  # type: ignore[arg-type]
        assert len(fake_apiserver.request_log) == sent
    assert fake_apiserver.get("configmaps", "default", "typed")["data"] == {"a": "2"}
