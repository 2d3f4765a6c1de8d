"""What client-go's typed clients send in protobuf besides kubectl's generators reaches the
fake over HTTP as it reaches kube-apiserver: leader election creates and renews its
Lease, a recorder posts Events; the answers are JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp
import pytest

from aioinformer.testing._protobuf import PROTOBUF
from tests._support_http import Api
from tests._support_protobuf import envelope, field, text

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.testing import FakeAPIServer

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
