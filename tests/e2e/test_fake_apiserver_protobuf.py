"""Protobuf writes and the OpenAPI documents over HTTP, without kubectl: a protobuf
create or update of a decoded kind is stored as its JSON and answered in JSON to a
client that also accepts it, any other kind is a 415 Status, and ``/openapi/v3`` needs
a token as every path does."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp
import orjson
import pytest

from aioinformer.errors import ApiError
from aioinformer.testing._protobuf import MAGIC, PROTOBUF

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

KUBECTL_ACCEPT = f"{PROTOBUF},application/json"
"""What kubectl's typed clients accept."""


def varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, value: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(value)) + value


def config_map(name: str, data: dict[str, str], resource_version: str = "") -> bytes:
    meta = field(1, name.encode()) + field(6, resource_version.encode())
    raw = field(1, meta) + b"".join(
        field(2, field(1, key.encode()) + field(2, value.encode())) for key, value in data.items()
    )
    type_meta = field(1, b"v1") + field(2, b"ConfigMap")
    return MAGIC + field(1, type_meta) + field(2, raw)


async def test_a_protobuf_create_and_update_store_the_object_and_answer_json(
    kube_client: Client, fake_apiserver: FakeAPIServer
) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    async with kube_client.stream(
        "POST",
        path,
        body=config_map("settings", {"mode": "blue"}),
        content_type=PROTOBUF,
        accept=KUBECTL_ACCEPT,
    ) as answer:
        assert answer.status == 201
        assert answer.content_type == "application/json"
        created = orjson.loads(await answer.read())
    assert created["data"] == {"mode": "blue"}
    assert fake_apiserver.get("configmaps", "default", "settings")["data"] == {"mode": "blue"}

    body = config_map("settings", {"mode": "green"}, created["metadata"]["resourceVersion"])
    async with kube_client.stream(
        "PUT", f"{path}/settings", body=body, content_type=PROTOBUF, accept=KUBECTL_ACCEPT
    ) as answer:
        assert answer.status == 200
    assert fake_apiserver.get("configmaps", "default", "settings")["data"] == {"mode": "green"}


async def test_a_protobuf_body_of_another_kind_than_the_url_is_refused_as_json_would_be(
    kube_client: Client,
) -> None:
    with pytest.raises(ApiError) as caught:
        async with kube_client.stream(
            "POST",
            "/api/v1/namespaces/default/secrets",
            body=config_map("settings", {}),
            content_type=PROTOBUF,
        ):
            pass
    assert caught.value.code == 400
    assert "ConfigMap in version" in caught.value.message


async def test_a_protobuf_kind_the_fake_does_not_decode_is_a_415_status(
    kube_client: Client, fake_apiserver: FakeAPIServer
) -> None:
    type_meta = field(1, b"apps/v1") + field(2, b"Deployment")
    body = MAGIC + field(1, type_meta) + field(2, field(1, field(1, b"web")))
    with pytest.raises(ApiError) as caught:
        async with kube_client.stream(
            "POST", "/apis/apps/v1/namespaces/default/deployments", body=body, content_type=PROTOBUF
        ):
            pass
    assert (caught.value.code, caught.value.reason) == (415, "UnsupportedMediaType")
    assert "protobuf Deployment" in caught.value.message
    assert fake_apiserver.objects("deployments") == []


async def test_the_openapi_documents_need_a_token(
    kube_client: Client, fake_apiserver: FakeAPIServer
) -> None:
    async with kube_client.stream("GET", "/openapi/v3") as answer:
        index = orjson.loads(await answer.read())
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    async with kube_client.stream("GET", url.split("?")[0]) as answer:
        document = orjson.loads(await answer.read())
    assert "/apis/apps/v1/namespaces/{namespace}/deployments/{name}" in document["paths"]
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{fake_apiserver.url}/openapi/v3") as anonymous,
    ):
        assert anonymous.status == 401
