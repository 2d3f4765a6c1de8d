"""The fake API server's conversion and admission webhooks on one custom resource, in
kube-apiserver's order: ``widgets.example.com`` is stored as v1 (``spec.replicas``) and
served as v1beta1 too (``spec.count``), converted by a conversion webhook, and watched by
a mutating webhook whose rule names v1beta1 and a validating webhook whose rule names v1
only (``matchPolicy: Equivalent``). A create in v1beta1 is mutated in v1beta1, converted,
validated in v1 and stored as v1; a denial stores nothing; a dry run converts and admits
but stores nothing."""

from __future__ import annotations

import base64
import contextlib
import json
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import Forbidden
from aioinformer.testing import FakeAPIServer
from tests._support_tls import make_pki
from tests.e2e.test_fake_admission_e2e import Hook, mutating, validating, webhook, webhook_server
from tests.e2e.test_fake_conversion_e2e import (
    CRDS,
    V1,
    V1BETA1,
    Webhook,
    beta_widget,
    conversion_crd,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import Client

pytestmark = pytest.mark.e2e


def widget_rule(version: str) -> list[dict[str, Any]]:
    return [
        {
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": ["example.com"],
            "apiVersions": [version],
            "resources": ["widgets"],
        }
    ]


def label_and_double(request: dict[str, Any]) -> dict[str, Any]:
    """A mutating webhook written against v1beta1: doubles ``spec.count`` and labels."""
    count = request["object"]["spec"]["count"]
    patch = json.dumps(
        [
            {"op": "replace", "path": "/spec/count", "value": count * 2},
            {"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}},
        ]
    )
    return {
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": base64.b64encode(patch.encode()).decode(),
    }


def at_most_ten(request: dict[str, Any]) -> dict[str, Any]:
    """A validating webhook written against v1: refuses more than ten replicas."""
    if request["object"]["spec"]["replicas"] > 10:
        return {"allowed": False, "status": {"code": 403, "message": "too many replicas"}}
    return {"allowed": True}


@contextlib.asynccontextmanager
async def widgets_with_webhooks() -> AsyncIterator[tuple[FakeAPIServer, Client, Hook, Webhook]]:
    converter = Webhook(make_pki())
    await converter.start()
    try:
        async with (
            webhook_server() as hook,
            FakeAPIServer() as server,
            server.client() as client,
        ):
            await client.resource(CRDS).create(conversion_crd(converter.client_config()))
            hook.answers["mutate"] = label_and_double
            hook.answers["validate"] = at_most_ten
            server.create(
                mutating(
                    "defaults",
                    webhook(hook, "defaults.example.com", "mutate", rules=widget_rule("v1beta1")),
                )
            )
            server.create(
                validating(
                    "guard",
                    webhook(
                        hook,
                        "guard.example.com",
                        "validate",
                        rules=widget_rule("v1"),
                        matchPolicy="Equivalent",
                    ),
                )
            )
            yield server, client, hook, converter
    finally:
        await converter.stop()


def to_storage_reviews(converter: Webhook) -> list[dict[str, Any]]:
    """The objects of the conversion reviews that asked for v1 (the storage version)."""
    return [
        obj
        for review in converter.reviews
        if review["request"]["desiredAPIVersion"] == "example.com/v1"
        for obj in review["request"]["objects"]
    ]


async def test_a_v1beta1_create_is_mutated_converted_validated_and_stored_as_v1() -> None:
    async with widgets_with_webhooks() as (server, client, hook, converter):
        created = await client.resource(V1BETA1, namespace="default").create(beta_widget("a", 3))

        # The mutating webhook's rule names v1beta1: it is sent the request's version.
        [mutate] = hook.requests("mutate")
        assert (mutate["kind"]["version"], mutate["requestKind"]["version"]) == (
            "v1beta1",
            "v1beta1",
        )
        assert mutate["object"]["apiVersion"] == "example.com/v1beta1"
        assert mutate["object"]["spec"] == {"count": 3}
        # The validating webhook's rule names v1 only: under Equivalent it is sent the
        # mutated object converted to v1, and told the request was made in v1beta1.
        [validate] = hook.requests("validate")
        assert (validate["kind"]["version"], validate["requestKind"]["version"]) == (
            "v1",
            "v1beta1",
        )
        assert validate["resource"]["version"] == "v1"
        assert validate["object"]["apiVersion"] == "example.com/v1"
        assert validate["object"]["spec"] == {"replicas": 6}
        assert validate["object"]["metadata"]["labels"] == {"mutated": "yes"}
        assert validate["object"]["metadata"]["uid"] == created["metadata"]["uid"]
        # The mutated object is what the conversion webhook converted for storage.
        assert {"count": 6} in [obj["spec"] for obj in to_storage_reviews(converter)]
        assert {"count": 3} not in [obj["spec"] for obj in to_storage_reviews(converter)]

        [stored] = server.objects("widgets")
        assert (stored["apiVersion"], stored["spec"]) == ("example.com/v1", {"replicas": 6})
        assert stored["metadata"]["labels"] == {"mutated": "yes"}
        # The answer is in the request's version.
        assert (created["apiVersion"], created["spec"]) == ("example.com/v1beta1", {"count": 6})
        got = await client.resource(V1, namespace="default").get("a")
        assert got["spec"] == {"replicas": 6}


async def test_an_update_in_v1beta1_sends_the_validating_webhook_both_objects_in_v1() -> None:
    async with widgets_with_webhooks() as (server, client, hook, _):
        beta = client.resource(V1BETA1, namespace="default")
        created = await beta.create(beta_widget("a", 1))
        await beta.update({**created, "spec": {"count": 2}})

        update = hook.requests("validate")[-1]
        assert update["operation"] == "UPDATE"
        assert update["oldObject"]["apiVersion"] == "example.com/v1"
        assert update["oldObject"]["spec"] == {"replicas": 2}
        assert update["object"]["spec"] == {"replicas": 4}
        mutate = hook.requests("mutate")[-1]
        assert mutate["oldObject"]["spec"] == {"count": 2}
        assert server.objects("widgets")[0]["spec"] == {"replicas": 4}


async def test_a_v1beta1_create_the_validating_webhook_denies_stores_nothing() -> None:
    async with widgets_with_webhooks() as (server, client, hook, _):
        with pytest.raises(Forbidden) as denied:
            await client.resource(V1BETA1, namespace="default").create(beta_widget("big", 6))
        assert denied.value.message == (
            'widgets.example.com "big" is forbidden: admission webhook "guard.example.com" '
            "denied the request: too many replicas"
        )
        [validate] = hook.requests("validate")
        assert validate["object"]["spec"] == {"replicas": 12}
        assert server.objects("widgets") == []


async def test_a_dry_run_v1beta1_create_converts_and_admits_but_stores_nothing() -> None:
    async with widgets_with_webhooks() as (server, client, hook, converter):
        beta = client.resource(V1BETA1, namespace="default")
        answered = await beta.create(beta_widget("a", 2), dry_run=True)

        assert (answered["apiVersion"], answered["spec"]) == ("example.com/v1beta1", {"count": 4})
        assert answered["metadata"]["labels"] == {"mutated": "yes"}
        [mutate] = hook.requests("mutate")
        [validate] = hook.requests("validate")
        assert mutate["dryRun"] is True
        assert validate["dryRun"] is True
        assert validate["object"]["spec"] == {"replicas": 4}
        assert {"count": 4} in [obj["spec"] for obj in to_storage_reviews(converter)]
        assert server.objects("widgets") == []
        assert (await beta.list()).items == []
