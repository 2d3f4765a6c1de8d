"""The fake API server calls admission webhooks as kube-apiserver does: over HTTPS to a
webhook written here (aiohttp.web, certificates from trustme), driven with the project's
``Client`` and, for what it does not expose (dry runs, warnings), raw aiohttp."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
from aiohttp import web

from aioinformer.errors import ApiError
from aioinformer.testing import ADMIN_TOKEN
from tests._support_tls import Pki, make_pki
from tests.e2e.test_fake_apiserver_kubectl import KUBECTL, kubectl, manifest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from aioinformer.testing import FakeAPIServer

pytestmark = pytest.mark.e2e


def allow(request: dict[str, Any]) -> dict[str, Any]:
    return {"allowed": True}


@dataclass
class Hook:
    """A webhook listening on 127.0.0.1 over TLS: every review it got, by path, and what
    it answers (``answer`` takes the review's request, gives the response's fields)."""

    pki: Pki
    port: int = 0
    reviews: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = field(default_factory=dict)
    hang: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}/{path}"

    def requests(self, path: str) -> list[dict[str, Any]]:
        return [review["request"] for at, review in self.reviews if at == path]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.match_info["path"]
        review = await request.json()
        self.reviews.append((path, review))
        if path == "hang":
            await self.hang.wait()
        if path == "garbage":
            return web.Response(text="not json")
        answer = self.answers.get(path, allow)(review["request"])
        return web.json_response(
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], **answer},
            }
        )


@contextlib.asynccontextmanager
async def webhook_server(names: tuple[str, ...] = ("127.0.0.1",)) -> AsyncIterator[Hook]:
    hook = Hook(make_pki())
    app = web.Application()
    app.router.add_post("/{path:.*}", hook.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    hook.port = listening.getsockname()[1]
    context = hook.pki.server_context(names=names)
    await web.SockSite(runner, listening, ssl_context=context).start()
    try:
        yield hook
    finally:
        hook.hang.set()
        await runner.cleanup()


@pytest.fixture
async def hook() -> AsyncIterator[Hook]:
    async with webhook_server() as server:
        yield server


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def webhook(hook: Hook, name: str, path: str, **fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name,
        "clientConfig": {
            "url": hook.url(path),
            "caBundle": base64.b64encode(hook.pki.ca_pem.encode()).decode(),
        },
        "rules": [
            {
                "operations": ["CREATE", "UPDATE", "DELETE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    spec.update(fields)
    return spec


def configuration(kind: str, name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": list(hooks),
    }


def validating(name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return configuration("ValidatingWebhookConfiguration", name, *hooks)


def mutating(name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return configuration("MutatingWebhookConfiguration", name, *hooks)


def config_map(name: str, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "1"}}


def patch_answer(*operations: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    encoded = base64.b64encode(json.dumps(list(operations)).encode()).decode()

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if request["object"] is None:  # a delete has nothing to patch
            return {"allowed": True}
        return {"allowed": True, "patchType": "JSONPatch", "patch": encoded}

    return answer


def deny(message: str, **status: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": False, "status": {"message": message, **status}}

    return answer


async def raw(
    server: FakeAPIServer, method: str, path: str, body: Any = None
) -> tuple[int, dict[str, Any], list[str]]:
    """A request with the admin token: (status, decoded body, Warning headers)."""
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, server.url + path, json=body, headers=headers) as response,
    ):
        return response.status, await response.json(), response.headers.getall("Warning", [])


async def test_a_validating_webhook_denies_a_create_with_its_message(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    hook.answers["deny"] = deny("no configmaps today")
    fake_apiserver.create(validating("guard", webhook(hook, "guard.example.com", "deny")))
    async with fake_apiserver.client() as client:
        with pytest.raises(ApiError) as caught:
            await client.resource("configmaps").create(config_map("c1"))
    status = caught.value.status
    assert status["code"] == 403
    assert status["reason"] == "Forbidden"
    assert status["message"] == (
        'configmaps "c1" is forbidden: admission webhook "guard.example.com" denied the '
        "request: no configmaps today"
    )
    assert status["details"] == {"name": "c1", "kind": "configmaps"}
    assert fake_apiserver.objects("configmaps", "default") == []
    (request,) = hook.requests("deny")
    assert request["operation"] == "CREATE"
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["requestKind"] == request["kind"]
    assert request["name"] == "c1"
    assert request["namespace"] == "default"
    assert request["userInfo"]["username"] == "system:admin"
    assert request["object"]["metadata"]["name"] == "c1"
    assert request["oldObject"] is None
    assert request["dryRun"] is False
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}


async def test_a_denial_keeps_the_webhooks_code_and_reason(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    hook.answers["deny"] = deny("size too big", code=422, reason="Invalid")
    fake_apiserver.create(validating("guard", webhook(hook, "guard.example.com", "deny")))
    status, body, _ = await raw(
        fake_apiserver, "POST", "/api/v1/namespaces/default/configmaps", config_map("c1")
    )
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["message"].endswith("denied the request: size too big")


async def test_a_mutation_is_stored_and_seen_by_the_validating_webhook(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    hook.answers["label"] = patch_answer(
        {"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}
    )
    fake_apiserver.create(mutating("labeller", webhook(hook, "label.example.com", "label")))
    fake_apiserver.create(validating("guard", webhook(hook, "guard.example.com", "check")))
    async with fake_apiserver.client() as client:
        created = await client.resource("configmaps").create(config_map("c1"))
    assert created["metadata"]["labels"] == {"mutated": "yes"}
    stored = fake_apiserver.get("configmaps", "default", "c1")
    assert stored["metadata"]["labels"] == {"mutated": "yes"}
    (mutated_request,) = hook.requests("label")
    assert "uid" not in mutated_request["object"]["metadata"]
    (validated,) = hook.requests("check")
    assert validated["object"]["metadata"]["labels"] == {"mutated": "yes"}
    # The validating webhook sees the object as stored: its uid is the stored one.
    assert validated["object"]["metadata"]["uid"] == stored["metadata"]["uid"]


async def test_mutating_webhooks_run_in_configuration_name_order(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    hook.answers["first"] = patch_answer({"op": "add", "path": "/data/order", "value": "first"})
    hook.answers["second"] = patch_answer(
        {"op": "replace", "path": "/data/order", "value": "second"}
    )
    fake_apiserver.create(mutating("b-second", webhook(hook, "second.example.com", "second")))
    fake_apiserver.create(mutating("a-first", webhook(hook, "first.example.com", "first")))
    async with fake_apiserver.client() as client:
        created = await client.resource("configmaps").create(config_map("c1"))
    assert created["data"]["order"] == "second"
    assert [path for path, _ in hook.reviews] == ["first", "second"]
    assert hook.requests("second")[0]["object"]["data"]["order"] == "first"


async def test_an_update_and_a_patch_send_the_old_object(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    fake_apiserver.create(config_map("c1"))
    fake_apiserver.create(validating("guard", webhook(hook, "guard.example.com", "check")))
    async with fake_apiserver.client() as client:
        resource = client.resource("configmaps")
        await resource.patch("c1", {"data": {"a": "2"}}, "default")
        current = await resource.get("c1", "default")
        current["data"]["a"] = "3"
        await resource.update(current)
    patched, updated = hook.requests("check")
    assert patched["operation"] == updated["operation"] == "UPDATE"
    assert patched["oldObject"]["data"] == {"a": "1"}
    assert patched["object"]["data"] == {"a": "2"}
    assert patched["options"]["kind"] == "UpdateOptions"
    assert updated["oldObject"]["data"] == {"a": "2"}
    assert updated["object"]["data"] == {"a": "3"}


async def test_a_delete_sends_the_old_object_and_delete_options(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    fake_apiserver.create(config_map("c1"))
    fake_apiserver.create(validating("guard", webhook(hook, "guard.example.com", "check")))
    async with fake_apiserver.client() as client:
        await client.resource("configmaps").delete("c1", "default", grace_period_seconds=0)
    (request,) = hook.requests("check")
    assert request["operation"] == "DELETE"
    assert request["object"] is None
    assert request["oldObject"]["metadata"]["name"] == "c1"
    assert request["name"] == "c1"
    assert request["options"] == {
        "kind": "DeleteOptions",
        "apiVersion": "meta.k8s.io/v1",
        "gracePeriodSeconds": 0,
    }
    assert fake_apiserver.objects("configmaps", "default") == []


async def test_a_denied_delete_keeps_the_object(fake_apiserver: FakeAPIServer, hook: Hook) -> None:
    fake_apiserver.create(config_map("c1"))
    hook.answers["deny"] = deny("keep it")
    fake_apiserver.create(validating("guard", webhook(hook, "guard.example.com", "deny")))
    async with fake_apiserver.client() as client:
        with pytest.raises(ApiError) as caught:
            await client.resource("configmaps").delete("c1", "default")
    assert caught.value.status["code"] == 403
    assert fake_apiserver.get("configmaps", "default", "c1")["metadata"]["name"] == "c1"


@pytest.mark.parametrize("down", ["closed-port", "timeout", "garbage"])
async def test_failure_policy_fail_refuses_when_the_webhook_cannot_answer(
    fake_apiserver: FakeAPIServer, hook: Hook, down: str
) -> None:
    path = {"timeout": "hang"}.get(down, down)
    spec = webhook(hook, "guard.example.com", path, timeoutSeconds=1)
    if down == "closed-port":
        spec["clientConfig"]["url"] = f"https://127.0.0.1:{closed_port()}/x"
    fake_apiserver.create(validating("guard", spec))
    status, body, _ = await raw(
        fake_apiserver, "POST", "/api/v1/namespaces/default/configmaps", config_map("c1")
    )
    assert status == 500
    assert body["reason"] == "InternalError"
    prefix = 'Internal error occurred: failed calling webhook "guard.example.com": '
    assert body["message"].startswith(prefix)
    reason = body["message"][len(prefix) :]
    if down == "closed-port":
        assert reason.endswith("connect: connection refused")
    elif down == "timeout":
        assert reason.endswith("context deadline exceeded")
        assert "?timeout=1s" in reason
    else:
        assert reason.startswith("couldn't get version/kind; json parse error")
    assert body["details"]["causes"] == [
        {"message": body["message"][len("Internal error occurred: ") :]}
    ]
    assert fake_apiserver.objects("configmaps", "default") == []


@pytest.mark.parametrize("down", ["closed-port", "timeout"])
async def test_failure_policy_ignore_lets_the_request_through(
    fake_apiserver: FakeAPIServer, hook: Hook, down: str
) -> None:
    spec = webhook(hook, "guard.example.com", "hang", timeoutSeconds=1, failurePolicy="Ignore")
    if down == "closed-port":
        spec["clientConfig"]["url"] = f"https://127.0.0.1:{closed_port()}/x"
    fake_apiserver.create(validating("guard", spec))
    async with fake_apiserver.client() as client:
        await client.resource("configmaps").create(config_map("c1"))
    assert fake_apiserver.get("configmaps", "default", "c1")["data"] == {"a": "1"}


async def test_a_webhook_trusting_another_ca_fails_the_call(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    spec = webhook(hook, "guard.example.com", "check")
    spec["clientConfig"]["caBundle"] = base64.b64encode(make_pki().ca_pem.encode()).decode()
    fake_apiserver.create(validating("guard", spec))
    status, body, _ = await raw(
        fake_apiserver, "POST", "/api/v1/namespaces/default/configmaps", config_map("c1")
    )
    assert status == 500
    assert "tls: failed to verify certificate" in body["message"]
    assert hook.reviews == []


async def test_a_namespace_selector_picks_namespaces_by_label(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    fake_apiserver.create_namespace("watched", labels={"admission": "on"})
    fake_apiserver.create_namespace("ignored")
    selector = {"matchLabels": {"admission": "on"}}
    fake_apiserver.create(
        validating("guard", webhook(hook, "guard.example.com", "check", namespaceSelector=selector))
    )
    async with fake_apiserver.client() as client:
        for namespace in ("watched", "ignored"):
            cm = config_map("c1")
            cm["metadata"]["namespace"] = namespace
            await client.resource("configmaps").create(cm, namespace)
    assert [r["namespace"] for r in hook.requests("check")] == ["watched"]


async def test_a_namespace_object_matches_a_namespace_selector_on_its_own_labels(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    rules = [
        {
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["namespaces"],
            "scope": "Cluster",
        }
    ]
    selector = {"matchLabels": {"team": "a"}}
    fake_apiserver.create(
        validating(
            "guard",
            webhook(hook, "guard.example.com", "check", rules=rules, namespaceSelector=selector),
        )
    )
    async with fake_apiserver.client() as client:
        for name, labels in (("team-a", {"team": "a"}), ("team-b", {"team": "b"})):
            await client.resource("namespaces").create(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": name, "labels": labels},
                }
            )
    assert [r["name"] for r in hook.requests("check")] == ["team-a"]


async def test_an_object_selector_matches_the_object_or_the_old_object(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    selector = {"matchExpressions": [{"key": "checked", "operator": "Exists"}]}
    fake_apiserver.create(
        validating("guard", webhook(hook, "guard.example.com", "check", objectSelector=selector))
    )
    async with fake_apiserver.client() as client:
        resource = client.resource("configmaps")
        await resource.create(config_map("plain"))
        await resource.create(config_map("labelled", checked="1"))
        # Removing the label still reaches the webhook: the old object carries it.
        await resource.patch("labelled", {"metadata": {"labels": None}}, "default")
    requests = hook.requests("check")
    assert [(r["operation"], r["name"]) for r in requests] == [
        ("CREATE", "labelled"),
        ("UPDATE", "labelled"),
    ]


async def test_a_subresource_rule_matches_status_writes_only(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    rules = [
        {
            "operations": ["UPDATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods/status"],
            "scope": "Namespaced",
        }
    ]
    fake_apiserver.create(
        validating("guard", webhook(hook, "guard.example.com", "check", rules=rules))
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    fake_apiserver.create(pod)
    async with fake_apiserver.client() as client:
        pods = client.resource("pods")
        await pods.patch("p1", {"metadata": {"labels": {"a": "b"}}}, "default")
        await pods.patch("p1", {"status": {"phase": "Running"}}, "default", subresource="status")
    (request,) = hook.requests("check")
    assert request["subResource"] == "status"
    assert request["requestSubResource"] == "status"
    assert request["object"]["status"] == {"phase": "Running"}


async def test_a_cluster_scope_rule_skips_namespaced_objects(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    rules = [
        {
            "operations": ["CREATE"],
            "apiGroups": ["*"],
            "apiVersions": ["*"],
            "resources": ["*"],
            "scope": "Cluster",
        }
    ]
    fake_apiserver.create(
        validating("guard", webhook(hook, "guard.example.com", "check", rules=rules))
    )
    async with fake_apiserver.client() as client:
        await client.resource("configmaps").create(config_map("c1"))
        await client.resource("nodes").create(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
        )
    (request,) = hook.requests("check")
    assert request["kind"]["kind"] == "Node"
    assert "namespace" not in request


async def test_webhook_configurations_are_not_sent_to_webhooks(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    rules = [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]
    hook.answers["deny"] = deny("nothing")
    fake_apiserver.create(
        validating("guard", webhook(hook, "guard.example.com", "deny", rules=rules))
    )
    async with fake_apiserver.client() as client:
        configs = client.resource("validatingwebhookconfigurations.admissionregistration.k8s.io")
        await configs.delete("guard")
    assert hook.reviews == []


async def test_a_dry_run_is_admitted_but_stores_nothing(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    hook.answers["label"] = patch_answer(
        {"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}
    )
    fake_apiserver.create(mutating("labeller", webhook(hook, "label.example.com", "label")))
    fake_apiserver.create(validating("guard", webhook(hook, "guard.example.com", "check")))
    fake_apiserver.create(config_map("kept"))
    rv = fake_apiserver.resource_version
    path = "/api/v1/namespaces/default/configmaps"
    async with fake_apiserver.client() as client:
        created = await client.resource("configmaps").create(config_map("c1"), dry_run=True)
    assert created["metadata"]["labels"] == {"mutated": "yes"}
    assert "resourceVersion" not in created["metadata"]
    assert created["metadata"]["uid"]
    async with (
        aiohttp.ClientSession() as session,
        session.patch(
            fake_apiserver.url + path + "/kept?dryRun=All",
            data=json.dumps({"data": {"a": "changed"}}),
            headers={
                "Authorization": f"Bearer {ADMIN_TOKEN}",
                "Content-Type": "application/merge-patch+json",
            },
        ) as response,
    ):
        patched = await response.json()
        assert response.status == 200, patched
    assert patched["data"] == {"a": "changed"}
    assert patched["metadata"]["resourceVersion"] == rv
    status, deleted, _ = await raw(fake_apiserver, "DELETE", path + "/kept?dryRun=All")
    assert status == 200, deleted
    assert fake_apiserver.resource_version == rv
    assert [cm["metadata"]["name"] for cm in fake_apiserver.objects("configmaps", "default")] == [
        "kept"
    ]
    assert fake_apiserver.get("configmaps", "default", "kept")["data"] == {"a": "1"}
    requests = hook.requests("check")
    assert [(r["operation"], r["dryRun"]) for r in requests] == [
        ("CREATE", True),
        ("UPDATE", True),
        ("DELETE", True),
    ]
    assert requests[0]["options"]["dryRun"] == ["All"]


async def test_a_configuration_with_side_effects_is_refused(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    spec = webhook(hook, "guard.example.com", "check", sideEffects="Some")
    status, body, _ = await raw(
        fake_apiserver,
        "POST",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        validating("guard", spec),
    )
    assert status == 422
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"',
            "field": "webhooks[0].sideEffects",
        }
    ]


async def test_an_unknown_dry_run_value_is_refused(fake_apiserver: FakeAPIServer) -> None:
    path = "/api/v1/namespaces/default/configmaps?dryRun=Yes"
    status, body, _ = await raw(fake_apiserver, "POST", path, config_map("c1"))
    assert status == 422
    assert body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Yes"]: '
        'supported values: "All"'
    )


async def test_a_dry_run_without_webhooks_emits_no_watch_event(
    fake_apiserver: FakeAPIServer,
) -> None:
    rv = fake_apiserver.resource_version
    path = "/api/v1/namespaces/default/configmaps"
    status, _, _ = await raw(fake_apiserver, "POST", path + "?dryRun=All", config_map("c1"))
    assert status == 201
    assert fake_apiserver.resource_version == rv
    assert fake_apiserver.objects("configmaps", "default") == []


async def test_warnings_come_back_as_warning_headers(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    def warn(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": True, "warnings": ['size is "large"', "deprecated field"]}

    hook.answers["warn"] = warn
    hook.answers["deny"] = deny("no")
    fake_apiserver.create(validating("guard", webhook(hook, "warn.example.com", "warn")))
    path = "/api/v1/namespaces/default/configmaps"
    status, _, warnings = await raw(fake_apiserver, "POST", path, config_map("c1"))
    assert status == 201
    assert warnings == ['299 - "size is \\"large\\""', '299 - "deprecated field"']
    # A denial carries the warnings given before it too.
    fake_apiserver.create(mutating("m", webhook(hook, "mwarn.example.com", "warn")))
    fake_apiserver.create(validating("z-deny", webhook(hook, "deny.example.com", "deny")))
    status, _, warnings = await raw(fake_apiserver, "POST", path, config_map("c2"))
    assert status == 403
    assert warnings == ['299 - "size is \\"large\\""', '299 - "deprecated field"']


async def test_an_answer_with_another_uid_fails_the_call(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    hook.answers["check"] = lambda request: {"allowed": True, "uid": "someone-else"}
    fake_apiserver.create(validating("guard", webhook(hook, "guard.example.com", "check")))
    status, body, _ = await raw(
        fake_apiserver, "POST", "/api/v1/namespaces/default/configmaps", config_map("c1")
    )
    assert status == 500
    uid = hook.requests("check")[0]["uid"]
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "guard.example.com": '
        f'expected response.uid="{uid}", got "someone-else"'
    )


async def test_an_invalid_configuration_is_refused_with_kubes_causes(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    bad = webhook(hook, "short", "check", timeoutSeconds=31, failurePolicy="Sometimes")
    del bad["sideEffects"]
    bad["clientConfig"]["url"] = "http://127.0.0.1/x"
    status, body, _ = await raw(
        fake_apiserver,
        "POST",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        validating("guard", bad),
    )
    assert status == 422
    assert [(c["field"], c["reason"]) for c in body["details"]["causes"]] == [
        ("webhooks[0].name", "FieldValueInvalid"),
        ("webhooks[0].failurePolicy", "FieldValueNotSupported"),
        ("webhooks[0].sideEffects", "FieldValueRequired"),
        ("webhooks[0].timeoutSeconds", "FieldValueInvalid"),
        ("webhooks[0].clientConfig.url", "FieldValueInvalid"),
    ]
    assert body["message"].startswith(
        'ValidatingWebhookConfiguration.admissionregistration.k8s.io "guard" is invalid: '
    )


async def test_a_configuration_is_stored_with_kubes_defaults(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    async with fake_apiserver.client() as client:
        configs = client.resource("mutatingwebhookconfigurations.admissionregistration.k8s.io")
        created = await configs.create(mutating("m", webhook(hook, "m.example.com", "x")))
    (spec,) = created["webhooks"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchPolicy"] == "Equivalent"
    assert spec["namespaceSelector"] == {}
    assert spec["objectSelector"] == {}
    assert spec["timeoutSeconds"] == 10
    assert spec["reinvocationPolicy"] == "Never"
    assert spec["rules"][0]["scope"] == "*"


def widget_crd(*versions: str) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
            },
            "versions": [
                {"name": v, "served": True, "storage": i == 0, "schema": schema}
                for i, v in enumerate(versions)
            ],
        },
    }


@pytest.mark.parametrize(("policy", "called"), [("Equivalent", True), ("Exact", False)])
async def test_match_policy_equivalent_sends_another_version_of_a_crd(
    fake_apiserver: FakeAPIServer, hook: Hook, policy: str, called: bool
) -> None:
    fake_apiserver.create(widget_crd("v1", "v2"))
    rules = [
        {
            "operations": ["CREATE"],
            "apiGroups": ["example.com"],
            "apiVersions": ["v2"],
            "resources": ["widgets"],
        }
    ]
    fake_apiserver.create(
        validating(
            "guard", webhook(hook, "guard.example.com", "check", rules=rules, matchPolicy=policy)
        )
    )
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}}
    status, _, _ = await raw(
        fake_apiserver, "POST", "/apis/example.com/v1/namespaces/default/widgets", widget
    )
    assert status == 201
    requests = hook.requests("check")
    assert bool(requests) is called
    if called:
        (request,) = requests
        assert request["kind"] == {"group": "example.com", "version": "v2", "kind": "Widget"}
        assert request["requestKind"]["version"] == "v1"
        assert request["object"]["apiVersion"] == "example.com/v2"


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.fake_apiserver(tls=True)
async def test_kubectl_applies_a_webhook_configuration_that_then_denies(
    fake_apiserver: FakeAPIServer, hook: Hook, tmp_path: Path
) -> None:
    hook.answers["deny"] = deny("kubectl was here")
    config = validating("guard", webhook(hook, "guard.example.com", "deny"))
    code, out, err = await kubectl(
        fake_apiserver, tmp_path, "apply", "-f", manifest(tmp_path, "hook.yaml", config)
    )
    assert code == 0, err
    assert out.strip() == (
        "validatingwebhookconfiguration.admissionregistration.k8s.io/guard created"
    )
    code, out, err = await kubectl(
        fake_apiserver, tmp_path, "create", "configmap", "c1", "--from-literal=a=1"
    )
    assert code != 0
    assert (
        'error: failed to create configmap: configmaps "c1" is forbidden: admission webhook '
        '"guard.example.com" denied the request: kubectl was here'
    ) in err


async def test_an_update_of_a_missing_object_is_a_404_before_any_webhook(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    fake_apiserver.create(validating("guard", webhook(hook, "guard.example.com", "check")))
    status, body, _ = await raw(
        fake_apiserver, "PUT", "/api/v1/namespaces/default/configmaps/c1", config_map("c1")
    )
    assert (status, body["message"]) == (404, 'configmaps "c1" not found')
    assert hook.reviews == []


@pytest.mark.parametrize(("policy", "calls"), [("IfNeeded", 2), ("Never", 1)])
async def test_a_webhook_is_reinvoked_if_needed_after_a_later_change(
    fake_apiserver: FakeAPIServer, hook: Hook, policy: str, calls: int
) -> None:
    hook.answers["later"] = patch_answer({"op": "add", "path": "/data/later", "value": "x"})
    fake_apiserver.create(
        mutating(
            "a",
            webhook(hook, "first.example.com", "first", reinvocationPolicy=policy),
            webhook(hook, "later.example.com", "later"),
        )
    )
    async with fake_apiserver.client() as client:
        await client.resource("configmaps").create(config_map("c1"))
    assert [path for path, _ in hook.reviews] == ["first", "later", "first"][: calls + 1]
    if calls == 2:
        assert hook.requests("first")[1]["object"]["data"]["later"] == "x"


async def test_a_generated_name_is_the_one_the_validating_webhook_saw(
    fake_apiserver: FakeAPIServer, hook: Hook
) -> None:
    fake_apiserver.create(validating("guard", webhook(hook, "guard.example.com", "check")))
    cm = config_map("")
    del cm["metadata"]["name"]
    cm["metadata"]["generateName"] = "gen-"
    async with fake_apiserver.client() as client:
        created = await client.resource("configmaps").create(cm)
    (request,) = hook.requests("check")
    assert request["object"]["metadata"]["name"] == created["metadata"]["name"]
    assert created["metadata"]["name"].startswith("gen-")


async def test_a_service_reference_is_called_at_its_cluster_name(
    fake_apiserver: FakeAPIServer,
) -> None:
    async with webhook_server(names=("guard.ops.svc",)) as hook:
        spec = webhook(hook, "guard.example.com", "check")
        spec["clientConfig"] = {
            "service": {"name": "guard", "namespace": "ops", "port": hook.port, "path": "/check"},
            "caBundle": spec["clientConfig"]["caBundle"],
        }
        fake_apiserver.create(validating("guard", spec))
        async with fake_apiserver.client() as client:
            await client.resource("configmaps").create(config_map("c1"))
        assert [r["name"] for r in hook.requests("check")] == ["c1"]


async def test_a_service_reference_connects_where_webhook_services_maps_it(
    fake_apiserver: FakeAPIServer,
) -> None:
    async with webhook_server(names=("guard.ops.svc",)) as hook:
        spec = webhook(hook, "guard.example.com", "check")
        spec["clientConfig"] = {
            "service": {"name": "guard", "namespace": "ops", "port": 443, "path": "/check"},
            "caBundle": spec["clientConfig"]["caBundle"],
        }
        fake_apiserver.webhook_services[("ops", "guard")] = ("127.0.0.1", hook.port)
        fake_apiserver.create(validating("guard", spec))
        async with fake_apiserver.client() as client:
            await client.resource("configmaps").create(config_map("c1"))
        assert [r["name"] for r in hook.requests("check")] == ["c1"]
