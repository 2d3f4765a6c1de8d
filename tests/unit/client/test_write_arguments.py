"""Write calls with misplaced or wrong-shaped arguments: ``create``/``update`` given
something that is not one object, ``patch`` given the namespace where its body goes.

Both the client (:class:`~aioinformer.client.ResourceClient`) and the fake API server's
direct Python API answer with the same typed errors, before anything is sent or stored;
the messages say what to write instead. The client here points at a port nothing listens
on and knows its resource without discovery, so a request sent by mistake would fail
with a different error, and ``client.session`` stays ``None`` when none was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.client import GVR, Client, ResourceInfo
from aioinformer.config import Config
from aioinformer.errors import (
    AioinformerError,
    Conflict,
    NotAnObjectError,
    PatchArgumentsError,
)
from aioinformer.k8s.core_v1 import ConfigMap
from aioinformer.models import ObjectMeta
from aioinformer.testing import FakeAPIServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import ResourceClient

CONFIG_MAPS = ResourceInfo(GVR("", "v1", "configmaps"), "ConfigMap", namespaced=True)


def config_map(name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    # Port 9 (discard) on loopback: nothing answers there in a test run. Not entered with
    # ``async with``, which would open the session: it opens with the first request.
    client = Client(Config(host="http://127.0.0.1:9", token="t"))
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def api(client: Client) -> ResourceClient:
    return client.resource(CONFIG_MAPS)


@pytest.fixture
def server() -> FakeAPIServer:
    server = FakeAPIServer()
    server.create(config_map("web", a="1"))
    return server


# -- create and update ---------------------------------------------------------------


async def test_the_client_refuses_to_create_a_list_and_says_to_create_each_item(
    client: Client, api: ResourceClient
) -> None:
    items = [config_map("a"), config_map("b")]
    with pytest.raises(NotAnObjectError) as raised:
        await api.create(items)  # type: ignore[arg-type]
    message = str(raised.value)
    assert message.startswith("ResourceClient.create() takes one object")
    assert "got a list of 2 items: create each item with a call of its own" in message
    assert client.session is None  # refused before any request


async def test_the_client_refuses_to_update_a_manifest_text_and_says_to_decode_it(
    client: Client, api: ResourceClient
) -> None:
    with pytest.raises(NotAnObjectError) as raised:
        await api.update('{"kind": "ConfigMap"}')  # type: ignore[arg-type]
    message = str(raised.value)
    assert message.startswith("ResourceClient.update() takes one object")
    assert 'got the str \'{"kind": "ConfigMap"}\'' in message
    assert "decode a manifest's JSON or YAML text first" in message
    assert client.session is None


async def test_a_value_of_another_type_is_named_in_the_error(api: ResourceClient) -> None:
    with pytest.raises(NotAnObjectError, match=r"got a value of type int: 3$"):
        await api.create(3)  # type: ignore[arg-type]


def test_the_fake_refuses_the_same_objects_with_the_same_error(server: FakeAPIServer) -> None:
    stored = server.resource_version
    with pytest.raises(NotAnObjectError, match=r"^FakeAPIServer\.create\(\) takes one object"):
        server.create([config_map("a")])  # type: ignore[arg-type]
    with pytest.raises(NotAnObjectError, match=r"got a list of 1 item: create each item"):
        server.create([config_map("a")])  # type: ignore[arg-type]
    with pytest.raises(NotAnObjectError, match=r"^FakeAPIServer\.update\(\) .* got the str"):
        server.update("web")  # type: ignore[arg-type]
    assert server.resource_version == stored


def test_the_errors_are_type_errors_of_the_library() -> None:
    assert issubclass(NotAnObjectError, TypeError)
    assert issubclass(NotAnObjectError, AioinformerError)
    assert issubclass(PatchArgumentsError, TypeError)
    assert issubclass(PatchArgumentsError, AioinformerError)


def test_a_typed_object_built_in_code_is_stored_as_its_json_by_alias(
    server: FakeAPIServer,
) -> None:
    model = ConfigMap(
        metadata=ObjectMeta(name="typed", namespace="default"),
        data={"k": "v"},
        binary_data={"b": "AA=="},
    )
    stored = server.create(model)
    assert (stored["apiVersion"], stored["kind"]) == ("v1", "ConfigMap")  # the defaults
    assert stored["binaryData"] == {"b": "AA=="}  # by alias
    assert "immutable" not in stored  # unset: no null sent


def test_a_typed_object_read_back_updates_as_it_was_changed(server: FakeAPIServer) -> None:
    read = ConfigMap.model_validate(server.get("configmaps", "default", "web"))
    assert read.data is not None
    read.data["a"] = "2"
    updated = server.update(read)  # its resourceVersion is the precondition
    assert updated["data"] == {"a": "2"}
    assert updated["metadata"]["resourceVersion"] != read.metadata.resource_version
    with pytest.raises(Conflict):
        server.update(read)  # the same, now stale


# -- patch ---------------------------------------------------------------------------


async def test_a_patch_with_the_namespace_where_get_takes_it_gets_the_call_to_write(
    client: Client, api: ResourceClient
) -> None:
    with pytest.raises(PatchArgumentsError) as raised:
        await api.patch("web", "default", {"data": {"a": "2"}})  # type: ignore[arg-type]
    message = str(raised.value)
    assert message.startswith(
        "ResourceClient.patch(name, patch, namespace=None) takes the name, then the patch"
        " body, then the namespace"
    )
    assert "it got the str 'default' where the patch body goes and a mapping where the" in message
    assert "Write patch('web', {'data': {'a': '2'}}, namespace='default')" in message
    assert "or patch('default', {'data': {'a': '2'}}, namespace='web') if 'default'" in message
    assert client.session is None


async def test_a_patch_with_the_namespace_first_gets_both_readings_of_the_call(
    api: ResourceClient,
) -> None:
    with pytest.raises(PatchArgumentsError) as raised:
        await api.patch("default", "web", {"data": {}})  # type: ignore[arg-type]
    assert "patch('web', {'data': {}}, namespace='default') if 'web' is the name" in str(
        raised.value
    )


async def test_a_patch_with_the_body_first_gets_the_call_to_write(api: ResourceClient) -> None:
    with pytest.raises(PatchArgumentsError) as raised:
        await api.patch({"data": {}}, "web", "default")  # type: ignore[arg-type]
    assert str(raised.value).endswith(
        "it got a mapping where the name goes and the str 'web' where the patch body goes."
        " Write patch('web', {'data': {}}, namespace='default')"
    )


async def test_a_patch_without_a_body_says_what_a_body_is(api: ResourceClient) -> None:
    with pytest.raises(PatchArgumentsError) as raised:
        await api.patch("web", "default")
    message = str(raised.value)
    assert "it got the str 'default' where the patch body goes" in message
    assert "a list of operations (patch_type='json')" in message


async def test_a_patch_with_a_mapping_for_the_namespace_is_refused(api: ResourceClient) -> None:
    with pytest.raises(PatchArgumentsError, match="a mapping where the namespace goes"):
        await api.patch("web", {"data": {}}, {"namespace": "default"})  # type: ignore[arg-type]


async def test_a_long_body_is_shortened_in_the_message(api: ResourceClient) -> None:
    body = {"data": {f"key-{index}": "x" * 100 for index in range(50)}}
    with pytest.raises(PatchArgumentsError) as raised:
        await api.patch("web", "default", body)  # type: ignore[arg-type]
    assert len(str(raised.value)) < 600


def test_the_fake_s_patch_in_the_client_s_order_gets_its_own_call_to_write(
    server: FakeAPIServer,
) -> None:
    with pytest.raises(PatchArgumentsError) as raised:
        server.patch("configmaps", "web", {"data": {}}, "default")  # type: ignore[arg-type]
    message = str(raised.value)
    assert message.startswith(
        "FakeAPIServer.patch(resource, namespace, name, patch) takes the namespace before"
        " the name, as its get() and delete() do"
    )
    assert message.endswith("Write patch('configmaps', 'default', 'web', {'data': {}})")


def test_the_fake_refuses_a_patch_body_that_is_a_str(server: FakeAPIServer) -> None:
    stored = server.resource_version
    with pytest.raises(PatchArgumentsError, match="the str 'x' where the patch body goes"):
        server.patch("configmaps", "default", "web", "x")
    with pytest.raises(PatchArgumentsError, match="a mapping where the namespace goes"):
        server.patch("configmaps", {"data": {}}, "web", {})  # type: ignore[arg-type]
    assert server.resource_version == stored


def test_a_well_placed_patch_still_reaches_the_fake_s_store(server: FakeAPIServer) -> None:
    patched = server.patch("configmaps", "default", "web", {"data": {"a": "2"}})
    assert patched["data"] == {"a": "2"}
