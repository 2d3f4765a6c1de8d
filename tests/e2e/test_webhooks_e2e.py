"""The Manager's webhooks called by the fake API server, as kube-apiserver calls them: the
configurations written from the registered handlers (``webhook_manifests``) are applied to
the fake, and its writes then go through the Manager's handlers over HTTPS. A denial
reaches the client in kube-apiserver's words, a mutation is stored, a dry run reaches the
handler as one and stores nothing, a certificate rotated while serving keeps the calls
going, and with the Manager gone ``failurePolicy`` decides: ``Fail`` refuses the write,
``Ignore`` lets it through. A CRD's conversion webhook, a hub and a spoke on the Manager,
converts the fake's writes and reads between versions, and a read it cannot convert with
the Manager gone answers kube-apiserver's 500."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import Forbidden, ServerError
from aioinformer.operator import AdmissionRequest, Allowed, Conversion, Denied, Manager
from tests._support_webhooks import WebhookPki, apply_manifests, served_names, webhook_manager

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from aioinformer.client import Client, ResourceClient
    from aioinformer.testing import FakeAPIServer

pytestmark = pytest.mark.e2e

SCHEMA = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": SCHEMA}],
    },
}
WIDGETS: dict[str, Any] = {
    "group": "example.com",
    "version": "v1",
    "resource": "widgets",
    "kind": "Widget",
}


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


class Seen:
    """What the Manager's handlers were asked: (operation, name, dry run) per review."""

    def __init__(self) -> None:
        self.validated: list[tuple[str, str, bool]] = []
        self.mutated: list[tuple[str, str, bool]] = []
        self.manager: Manager | None = None


def register(manager: Manager, seen: Seen, **policy: Any) -> None:
    """A validating handler refusing more than 10 replicas (and warning above 5), and a
    mutating one defaulting replicas to 1 and labelling the Widget."""

    @manager.webhooks.validate(**WIDGETS, **policy)
    def check(request: AdmissionRequest[dict[str, Any]]) -> Allowed | None:
        seen.validated.append((request.operation, request.name, request.dry_run))
        replicas = (request.object or {}).get("spec", {}).get("replicas", 0)
        if replicas > 10:
            raise Denied(f"spec.replicas must be at most 10, not {replicas}")
        return Allowed(warnings=[f"{replicas} replicas is a lot"]) if replicas > 5 else None

    @manager.webhooks.mutate(**WIDGETS, **policy)
    async def default(widget: dict[str, Any], request: AdmissionRequest[dict[str, Any]]) -> None:
        seen.mutated.append((request.operation, request.name, request.dry_run))
        widget.setdefault("spec", {}).setdefault("replicas", 1)
        widget["metadata"].setdefault("labels", {})["defaulted-by"] = "webhook"


@pytest.fixture
def pki(tmp_path: Path) -> WebhookPki:
    return WebhookPki(tmp_path)


@pytest.fixture
async def widgets(kube_client: Client) -> ResourceClient:
    await kube_client.resource("customresourcedefinitions").create(WIDGET_CRD)
    return kube_client.resource("example.com/v1/widgets", namespace="default")


@pytest.fixture
async def seen(
    kube_client: Client, pki: WebhookPki, widgets: ResourceClient
) -> AsyncIterator[Seen]:
    seen = Seen()
    manager = webhook_manager(kube_client, pki)
    register(manager, seen)
    seen.manager = manager
    async with manager:
        await apply_manifests(kube_client, manager, pki.ca.cert_pem.bytes())
        yield seen


async def test_a_denial_reaches_the_client_in_kube_apiservers_words(
    seen: Seen, widgets: ResourceClient, fake_apiserver: FakeAPIServer
) -> None:
    with pytest.raises(Forbidden) as refused:
        await widgets.create(widget("big", replicas=50))
    assert str(refused.value).endswith(
        'widgets.example.com "big" is forbidden: admission webhook "vwidget.example.com"'
        " denied the request: spec.replicas must be at most 10, not 50"
    )
    assert fake_apiserver.objects("example.com/v1/widgets") == []
    # The mutating webhook ran first, then the validating one saw the refusal's object.
    assert seen.mutated == [("CREATE", "big", False)]
    assert seen.validated == [("CREATE", "big", False)]


async def test_a_mutation_is_stored_and_the_validating_webhook_sees_it(
    seen: Seen, widgets: ResourceClient, fake_apiserver: FakeAPIServer
) -> None:
    created = await widgets.create(widget("small"))
    assert created["spec"] == {"replicas": 1}
    assert created["metadata"]["labels"] == {"defaulted-by": "webhook"}
    (stored,) = fake_apiserver.objects("example.com/v1/widgets")
    assert stored["spec"] == {"replicas": 1}
    # An update goes through both again; an edit past the limit is refused.
    created["spec"]["replicas"] = 11
    with pytest.raises(Forbidden, match="must be at most 10, not 11"):
        await widgets.update(created)
    assert [operation for operation, _, _ in seen.validated] == ["CREATE", "UPDATE"]


async def test_a_dry_run_is_admitted_as_one_and_stores_nothing(
    seen: Seen, widgets: ResourceClient, fake_apiserver: FakeAPIServer
) -> None:
    answered = await widgets.create(widget("trial"), dry_run=True)
    assert answered["spec"] == {"replicas": 1}
    assert fake_apiserver.objects("example.com/v1/widgets") == []
    assert seen.mutated == [("CREATE", "trial", True)]
    assert seen.validated == [("CREATE", "trial", True)]


async def test_a_rotated_certificate_keeps_the_calls_going(
    seen: Seen, widgets: ResourceClient, pki: WebhookPki
) -> None:
    assert seen.manager is not None
    await widgets.create(widget("before"))
    assert "first.example" in await served_names(seen.manager, pki.client_context())
    # cert-manager writes a new pair, issued by the same CA, into the mounted directory.
    pki.write("127.0.0.1", "rotated.example")
    await widgets.create(widget("after"))
    assert seen.validated[-1] == ("CREATE", "after", False)
    assert "rotated.example" in await served_names(seen.manager, pki.client_context())


async def test_with_the_webhook_down_failure_policy_decides(
    kube_client: Client, pki: WebhookPki, widgets: ResourceClient, fake_apiserver: FakeAPIServer
) -> None:
    seen = Seen()
    manager = webhook_manager(kube_client, pki)
    register(manager, seen, failure_policy="Ignore", timeout_seconds=2)
    async with manager:
        await apply_manifests(kube_client, manager, pki.ca.cert_pem.bytes())
    # Ignore: the Manager is gone, the write goes through unmutated and unchecked.
    created = await widgets.create(widget("unchecked", replicas=50))
    assert created["spec"] == {"replicas": 50}
    assert seen.validated == []

    configurations = kube_client.resource(
        "admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    )
    config = await configurations.get("validating-webhook-configuration")
    config["webhooks"][0]["failurePolicy"] = "Fail"
    await configurations.update(config)
    # Fail: the write is refused with the call's failure.
    with pytest.raises(ServerError, match=r'failed calling webhook "vwidget\.example\.com"'):
        await widgets.create(widget("refused"))
    assert [w["metadata"]["name"] for w in fake_apiserver.objects("example.com/v1/widgets")] == [
        "unchecked"
    ]


def versioned_crd() -> dict[str, Any]:
    """Widgets in v1 (stored, ``spec.replicas``) and v1beta1 (``spec.size``)."""
    crd = copy.deepcopy(WIDGET_CRD)
    crd["spec"]["versions"].append(
        {"name": "v1beta1", "served": True, "storage": False, "schema": SCHEMA}
    )
    return crd


def widget_conversion() -> Conversion:
    conversion = Conversion("widgets.example.com", hub="v1", kind="Widget")

    @conversion.to_hub("v1beta1")
    def up(obj: dict[str, Any]) -> dict[str, Any]:
        obj["spec"]["replicas"] = obj["spec"].pop("size")
        return obj

    @conversion.from_hub("v1beta1")
    async def down(obj: dict[str, Any]) -> dict[str, Any]:
        obj["spec"]["size"] = obj["spec"].pop("replicas")
        return obj

    return conversion


async def test_a_conversion_round_trip_through_the_managers_hub(
    kube_client: Client, pki: WebhookPki, fake_apiserver: FakeAPIServer
) -> None:
    await kube_client.resource("customresourcedefinitions").create(versioned_crd())
    manager = webhook_manager(kube_client, pki)
    manager.webhooks.add_conversion(widget_conversion())
    beta = kube_client.resource("example.com/v1beta1/widgets", namespace="default")
    async with manager:
        (patch,) = await apply_manifests(kube_client, manager, pki.ca.cert_pem.bytes())
        assert patch["spec"]["conversion"]["strategy"] == "Webhook"
        # Written in v1beta1, stored in v1 (the hub), read back in either.
        created = await beta.create({**widget("w", size=3), "apiVersion": "example.com/v1beta1"})
        assert (created["apiVersion"], created["spec"]) == ("example.com/v1beta1", {"size": 3})
        (stored,) = fake_apiserver.objects("example.com/v1/widgets")
        assert stored["spec"] == {"replicas": 3}
        created["spec"]["size"] = 4
        updated = await beta.update(created)
        assert updated["spec"] == {"size": 4}
        assert [w["spec"] for w in (await beta.list()).items] == [{"size": 4}]
        v1 = kube_client.resource("example.com/v1/widgets", namespace="default")
        assert (await v1.get("w"))["spec"] == {"replicas": 4}
    # With the Manager gone, a read in v1beta1 cannot be converted: kube-apiserver's 500.
    with pytest.raises(ServerError, match=r"conversion webhook for example\.com/v1, Kind=Widget"):
        await beta.get("w")
