"""The Manager's webhook server over HTTPS: AdmissionReviews posted with aiohttp to a
Manager running against the fake API server, trusting the CA: allow, deny, warnings,
mutation, typed handlers, dry runs, timeouts, bad requests, metrics, a conversion
webhook, certificates rotated while serving, self-signed mode, start and stop order, and
failures to start."""

from __future__ import annotations

import asyncio
import base64
import socket
import ssl
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest

from aioinformer.models import KubeObject
from aioinformer.operator.admission import AdmissionRequest, Allowed, Denied
from aioinformer.operator.manager import Manager
from aioinformer.operator.webhook import (
    AdmissionSettings,
    WebhookCertificateError,
    WebhookOptions,
    WebhookServerState,
)
from aioinformer.testing._patch import apply_json_patch
from aioinformer.workqueue import set_metrics_provider
from tests._support_metrics import RecordingProvider
from tests._support_metrics import restore_installed_provider as restore_installed_provider
from tests._support_webhooks import WebhookPki, served_names, webhook_manager

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping
    from pathlib import Path

    from aioinformer.client import Client

WIDGETS: AdmissionSettings = {
    "group": "example.com",
    "version": "v1",
    "resource": "widgets",
    "kind": "Widget",
}


def review(**request: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "uid": "e911857d-c318-11e8-bbad-025000000001",
        "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
        "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
        "name": "w",
        "namespace": "default",
        "operation": "CREATE",
        "userInfo": {"username": "alice"},
        "object": {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"size": 3},
        },
        "dryRun": False,
    }
    body.update(request)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


@pytest.fixture
def pki(tmp_path: Path) -> WebhookPki:
    return WebhookPki(tmp_path)


async def post(
    manager: Manager,
    path: str,
    body: bytes | Mapping[str, Any],
    context: ssl.SSLContext,
    *,
    method: str = "POST",
    content_type: str = "application/json",
    session: aiohttp.ClientSession | None = None,
) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else orjson.dumps(dict(body))
    url = f"https://{manager.webhooks.address}{path}"
    own = session is None
    session = session or aiohttp.ClientSession()
    try:
        async with session.request(
            method, url, data=data, headers={"Content-Type": content_type}, ssl=context
        ) as response:
            return response.status, orjson.loads(await response.read())
    finally:
        if own:
            await session.close()


@pytest.fixture
async def running(kube_client: Client, pki: WebhookPki) -> AsyncIterator[Manager]:
    """A manager with a validating and a mutating webhook for widgets."""
    manager = webhook_manager(kube_client, pki)

    @manager.webhooks.validate(
        group="example.com",
        version="v1",
        resource="widgets",
        kind="Widget",
        operations=["CREATE", "UPDATE", "DELETE"],
    )
    def check(request: AdmissionRequest[dict[str, Any]]) -> Allowed | None:
        size = (request.object or {}).get("spec", {}).get("size", 0)
        if size > 10:
            raise Denied("spec.size must be at most 10", warnings=[f"size was {size}"])
        if size == 7:
            return Allowed(warnings=["7 is unlucky"])
        return None

    @manager.webhooks.mutate(**WIDGETS)
    def default(obj: dict[str, Any], request: AdmissionRequest[dict[str, Any]]) -> None:
        obj["spec"].setdefault("color", "blue")
        obj["metadata"].setdefault("labels", {})["dry-run"] = str(request.dry_run).lower()

    async with manager:
        yield manager


async def test_an_allowed_review_is_answered_allowed(running: Manager, pki: WebhookPki) -> None:
    status, answer = await post(
        running, "/validate-example-com-v1-widget", review(), pki.client_context()
    )
    assert status == 200
    assert answer == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "e911857d-c318-11e8-bbad-025000000001", "allowed": True},
    }


async def test_a_denial_carries_its_message_and_warnings(running: Manager, pki: WebhookPki) -> None:
    body = review(object={"metadata": {"name": "w"}, "spec": {"size": 11}})
    _, answer = await post(running, "/validate-example-com-v1-widget", body, pki.client_context())
    response = answer["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 403
    assert response["status"]["message"] == "spec.size must be at most 10"
    assert response["warnings"] == ["size was 11"]


async def test_warnings_of_an_allowed_request(running: Manager, pki: WebhookPki) -> None:
    body = review(object={"metadata": {"name": "w"}, "spec": {"size": 7}})
    _, answer = await post(running, "/validate-example-com-v1-widget", body, pki.client_context())
    assert answer["response"]["allowed"] is True
    assert answer["response"]["warnings"] == ["7 is unlucky"]


@pytest.mark.parametrize("dry_run", [False, True])
async def test_a_mutation_answers_a_patch_that_applies(
    running: Manager, pki: WebhookPki, dry_run: bool
) -> None:
    body = review(dryRun=dry_run)
    _, answer = await post(running, "/mutate-example-com-v1-widget", body, pki.client_context())
    response = answer["response"]
    assert response["patchType"] == "JSONPatch"
    patched = apply_json_patch(
        body["request"]["object"], orjson.loads(base64.b64decode(response["patch"]))
    )
    assert patched["spec"] == {"size": 3, "color": "blue"}
    assert patched["metadata"]["labels"] == {"dry-run": str(dry_run).lower()}


async def test_an_unknown_path_answers_404(running: Manager, pki: WebhookPki) -> None:
    status, answer = await post(running, "/validate-nothing", review(), pki.client_context())
    assert status == 404
    assert answer["reason"] == "NotFound"


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        pytest.param(b"{", "application/json", "not JSON", id="not-json"),
        pytest.param(b"", "application/json", "body is empty", id="empty"),
        pytest.param(b"[]", "application/json", "not a JSON object", id="list"),
        pytest.param(b"{}", "application/json", "expected kind AdmissionReview", id="not-review"),
        pytest.param(orjson.dumps(review()), "text/plain", "use application/json", id="type"),
    ],
)
async def test_a_bad_request_answers_400_with_a_message(
    running: Manager, pki: WebhookPki, body: bytes, content_type: str, message: str
) -> None:
    status, answer = await post(
        running,
        "/validate-example-com-v1-widget",
        body,
        pki.client_context(),
        content_type=content_type,
    )
    assert status == 400
    assert answer["kind"] == "Status"
    assert message in answer["message"]


async def test_only_post_is_allowed(running: Manager, pki: WebhookPki) -> None:
    status, answer = await post(
        running, "/validate-example-com-v1-widget", b"", pki.client_context(), method="GET"
    )
    assert status == 405
    assert "use POST" in answer["message"]


async def test_the_manager_is_ready_with_its_webhook_server_serving(running: Manager) -> None:
    await running.elected.wait()  # synced (no election)
    health = running.health()
    assert health.ready
    assert health.webhooks == {
        "state": "serving",
        "address": running.webhooks.address,
        "paths": ["/mutate-example-com-v1-widget", "/validate-example-com-v1-widget"],
    }
    assert "webhooks" in health.as_dict()


class Widget(KubeObject):
    spec: dict[str, int]


async def test_a_typed_handler_gets_and_edits_a_model(kube_client: Client, pki: WebhookPki) -> None:
    manager = webhook_manager(kube_client, pki)
    seen: list[Any] = []

    @manager.webhooks.mutate(
        group="example.com", version="v1", resource="widgets", kind="Widget", model=Widget
    )
    async def double(obj: Widget, request: AdmissionRequest[Widget]) -> None:
        seen.append(request.object)
        obj.spec["size"] *= 2

    async with manager:
        _, answer = await post(
            manager, "/mutate-example-com-v1-widget", review(), pki.client_context()
        )
    assert isinstance(seen[0], Widget)
    ops = orjson.loads(base64.b64decode(answer["response"]["patch"]))
    assert ops == [{"op": "replace", "path": "/spec/size", "value": 6}]


async def test_a_handler_past_its_timeout_is_answered_in_time(
    kube_client: Client, pki: WebhookPki
) -> None:
    manager = webhook_manager(kube_client, pki)
    cancelled = asyncio.Event()

    @manager.webhooks.validate(
        group="example.com", version="v1", resource="widgets", kind="Widget", timeout_seconds=1
    )
    async def hang(request: AdmissionRequest[dict[str, Any]]) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    async with manager:
        async with asyncio.timeout(5):
            _, answer = await post(
                manager, "/validate-example-com-v1-widget", review(), pki.client_context()
            )
    assert cancelled.is_set()
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["code"] == 504


async def test_requests_are_counted_by_path_and_code(
    kube_client: Client, pki: WebhookPki, restore_installed_provider: None
) -> None:
    provider = RecordingProvider()
    set_metrics_provider(provider)
    manager = webhook_manager(kube_client, pki)
    manager.webhooks.validate(None, lambda request: None, **WIDGETS)
    path = "/validate-example-com-v1-widget"
    async with manager:
        context = pki.client_context()
        await post(manager, path, review(), context)
        await post(manager, path, review(), context)
        await post(manager, path, b"{", context)
    assert provider.value("controller_runtime_webhook_requests_total", path, "200") == 2
    assert provider.value("controller_runtime_webhook_requests_total", path, "400") == 1
    assert provider.value("controller_runtime_webhook_requests_in_flight", path) == 0
    assert (
        len(provider.metric("controller_runtime_webhook_latency_seconds", path).observations) == 3
    )


class DoubleConversion:
    """A conversion webhook double: answers every review with its objects relabelled."""

    crd_name = "widgets.example.com"

    def __init__(self) -> None:
        self.reviews: list[Mapping[str, Any]] = []

    async def review(self, review: Mapping[str, Any]) -> dict[str, Any]:
        self.reviews.append(review)
        request = review["request"]
        converted = [
            {**obj, "apiVersion": request["desiredAPIVersion"]} for obj in request["objects"]
        ]
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": {
                "uid": request["uid"],
                "convertedObjects": converted,
                "result": {"status": "Success"},
            },
        }


async def test_a_conversion_webhook_is_served_and_counted(
    kube_client: Client, pki: WebhookPki, restore_installed_provider: None
) -> None:
    provider = RecordingProvider()
    set_metrics_provider(provider)
    manager = webhook_manager(kube_client, pki)
    conversion = DoubleConversion()
    manager.webhooks.add_conversion(conversion)
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "u1",
            "desiredAPIVersion": "example.com/v2",
            "objects": [{"apiVersion": "example.com/v1", "kind": "Widget"}],
        },
    }
    async with manager:
        status, answer = await post(manager, "/convert", body, pki.client_context())
    assert status == 200
    assert answer["response"]["convertedObjects"] == [
        {"apiVersion": "example.com/v2", "kind": "Widget"}
    ]
    assert conversion.reviews == [body]
    assert provider.value("controller_runtime_webhook_requests_total", "/convert", "200") == 1


class BrokenConversion(DoubleConversion):
    async def review(self, review: Mapping[str, Any]) -> dict[str, Any]:
        raise RuntimeError("no hub")


async def test_a_conversion_handler_that_raises_answers_500_with_its_message(
    kube_client: Client, pki: WebhookPki
) -> None:
    manager = webhook_manager(kube_client, pki)
    manager.webhooks.add_conversion(BrokenConversion())
    async with manager:
        status, answer = await post(manager, "/convert", {"kind": "x"}, pki.client_context())
    assert status == 500
    assert answer["message"] == "RuntimeError: no hub"


async def test_a_rotated_certificate_reaches_new_connections_while_open_ones_keep_working(
    kube_client: Client, pki: WebhookPki
) -> None:
    manager = webhook_manager(kube_client, pki)
    manager.webhooks.validate(None, lambda request: None, **WIDGETS)
    path = "/validate-example-com-v1-widget"
    context = pki.client_context()
    async with manager, aiohttp.ClientSession() as kept:
        assert "first.example" in await served_names(manager, context)
        status, _ = await post(manager, path, review(), context, session=kept)
        assert status == 200
        pki.write("127.0.0.1", "second.example")
        assert "second.example" in await served_names(manager, context)
        status, _ = await post(manager, path, review(), context, session=kept)
        assert status == 200
        connector = kept.connector
        assert connector is not None
        # The kept session reused its one connection, made with the first certificate.
        assert len(connector._conns) == 1


async def test_a_broken_rotation_keeps_the_old_certificate(
    kube_client: Client, pki: WebhookPki
) -> None:
    manager = webhook_manager(kube_client, pki)
    manager.webhooks.validate(None, lambda request: None, **WIDGETS)
    context = pki.client_context()
    async with manager:
        (pki.directory / "tls.key").write_bytes(pki.ca.issue_cert("x").private_key_pem.bytes())
        assert "first.example" in await served_names(manager, context)
        status, _ = await post(manager, "/validate-example-com-v1-widget", review(), context)
        assert status == 200


async def test_a_self_signed_server_is_trusted_with_its_ca_bundle(kube_client: Client) -> None:
    pytest.importorskip("cryptography", reason="the self-signed pair needs cryptography")
    manager = Manager(
        kube_client, webhook=WebhookOptions(address="127.0.0.1:0", self_signed=("127.0.0.1",))
    )
    manager.webhooks.validate(None, lambda request: None, **WIDGETS)
    ca_bundle = manager.webhooks.ca_bundle
    assert ca_bundle is not None
    context = ssl.create_default_context(cadata=ca_bundle.decode())
    async with manager:
        scratch = manager.webhooks.cert_files[0].parent
        status, _ = await post(manager, "/validate-example-com-v1-widget", review(), context)
    assert status == 200
    assert not scratch.exists()  # the pair's files go with the server


async def test_the_server_listens_before_the_informers_list_and_closes_after_the_runnables(
    kube_client: Client, pki: WebhookPki, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = webhook_manager(kube_client, pki)
    manager.webhooks.validate(None, lambda request: None, **WIDGETS)
    at_factory_start: list[bool] = []
    at_runnable_stop: list[bool] = []
    start = manager.factory.start

    async def recording_start() -> None:
        at_factory_start.append(manager.webhooks.started)
        await start()

    monkeypatch.setattr(manager.factory, "start", recording_start)

    async def runnable() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            at_runnable_stop.append(manager.webhooks.started)

    manager.add_runnable(runnable)
    async with manager:
        await manager.elected.wait()
        await asyncio.sleep(0)
    assert at_factory_start == [True]
    assert at_runnable_stop == [True]
    assert manager.webhooks.state is WebhookServerState.CLOSED


async def test_a_manager_without_webhooks_never_listens(kube_client: Client) -> None:
    manager = Manager(kube_client)
    async with manager:
        assert manager.webhooks.state is WebhookServerState.IDLE
        assert manager.webhooks.address is None
        assert manager.health().webhooks is None
        with pytest.raises(RuntimeError, match="register webhooks before it starts"):
            manager.webhooks.validate(None, lambda request: None, **WIDGETS)


async def test_a_webhook_address_in_use_fails_the_run_with_oserror(
    kube_client: Client, pki: WebhookPki
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        manager = webhook_manager(kube_client, pki, address=f"127.0.0.1:{port}")
        manager.webhooks.validate(None, lambda request: None, **WIDGETS)
        with pytest.raises(OSError, match=r"(?i)address already in use"):
            await manager.run()


async def test_missing_certificate_files_fail_the_run_naming_the_file(
    kube_client: Client, tmp_path: Path
) -> None:
    manager = Manager(
        kube_client, webhook=WebhookOptions(address="127.0.0.1:0", cert_dir=tmp_path / "none")
    )
    manager.webhooks.validate(None, lambda request: None, **WIDGETS)
    with pytest.raises(WebhookCertificateError, match=r"none/tls\.crt does not exist"):
        await manager.run()
