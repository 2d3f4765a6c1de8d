"""Protobuf writes and the OpenAPI documents over HTTP, without kubectl: a protobuf
create or update of a decoded kind is stored as its JSON and answered in JSON to a
client that also accepts it, any other kind is a 415 Status, and ``/openapi/v3`` needs
a token as every path does. What client-go's typed clients send besides kubectl's
generators gets there too: leader election creates and renews its Lease, a recorder posts
Events."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp
import orjson
import pytest

from aioinformer.errors import ApiError
from aioinformer.testing._protobuf import MAGIC, PROTOBUF
from tests._support_http import Api
from tests._support_protobuf import envelope, field, text

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

KUBECTL_ACCEPT = f"{PROTOBUF},application/json"
"""What kubectl's typed clients accept."""


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
    body = envelope("v1", "Node", field(1, text(1, "node-1")))
    with pytest.raises(ApiError) as caught:
        async with kube_client.stream("POST", "/api/v1/nodes", body=body, content_type=PROTOBUF):
            pass
    assert (caught.value.code, caught.value.reason) == (415, "UnsupportedMediaType")
    assert "protobuf Node" in caught.value.message
    assert fake_apiserver.objects("nodes") == []


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


# -- what client-go programs write besides kubectl: leader election, event recorders --

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


@pytest.fixture
async def api(fake_apiserver: FakeAPIServer) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(session, fake_apiserver.url)


def lease(holder: str, renewed: int, *, resource_version: str = "") -> bytes:
    meta = text(1, "leader") + text(6, resource_version)
    renew_time = field(1, renewed) + field(2, 250_000_000)
    spec = text(1, holder) + field(2, 15) + field(4, renew_time) + field(5, 0)
    return envelope("coordination.k8s.io/v1", "Lease", field(1, meta) + field(2, spec))


async def test_a_lease_is_created_and_renewed_in_protobuf(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    code, created, _ = await api.call(
        "POST", LEASES, raw=lease("pod-a", 1_700_000_000), content_type=PROTOBUF
    )
    assert code == 201, created
    assert created["spec"] == {
        "holderIdentity": "pod-a",
        "leaseDurationSeconds": 15,
        "renewTime": "2023-11-14T22:13:20.250000Z",
        "leaseTransitions": 0,
    }
    version = created["metadata"]["resourceVersion"]
    body = lease("pod-a", 1_700_000_010, resource_version=version)
    code, renewed, _ = await api.call("PUT", LEASES + "/leader", raw=body, content_type=PROTOBUF)
    assert code == 200, renewed
    stored = fake_apiserver.get("leases.coordination.k8s.io", "default", "leader")
    assert stored["spec"]["renewTime"] == "2023-11-14T22:13:30.250000Z"
    # A stale renewal conflicts, as against kube-apiserver.
    code, conflict, _ = await api.call("PUT", LEASES + "/leader", raw=body, content_type=PROTOBUF)
    assert (code, conflict["reason"]) == (409, "Conflict")


async def test_an_event_is_posted_in_protobuf(api: Api, fake_apiserver: FakeAPIServer) -> None:
    regarding = text(1, "Pod") + text(2, "default") + text(3, "web-0")
    event = (
        field(1, text(1, "web-0.1") + text(3, "default"))
        + field(2, field(1, 1_700_000_000))
        + text(4, "example.com/controller")
        + text(5, "controller-0")
        + text(6, "Scaling")
        + text(7, "Scaled")
        + field(8, regarding)
        + text(10, "scaled to 2")
        + text(11, "Normal")
    )
    body = envelope("events.k8s.io/v1", "Event", event)
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    code, created, _ = await api.call("POST", path, raw=body, content_type=PROTOBUF)
    assert code == 201, created
    stored = fake_apiserver.get("events.events.k8s.io", "default", "web-0.1")
    assert stored["regarding"] == {"kind": "Pod", "namespace": "default", "name": "web-0"}
    assert stored["eventTime"] == "2023-11-14T22:13:20.000000Z"
