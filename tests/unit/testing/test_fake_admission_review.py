"""AdmissionReview requests and answers on the fake API server: what is posted, what an
answer must be (kube-apiserver's ``VerifyAdmissionResponse``), the failures a denial or
a broken call answers (``ToStatusErr``, ``ErrCallingWebhook``), dryRun options and the
Warning header."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import orjson
import pytest

from aioinformer._apiserver.objects import ResourceType, StatusError
from aioinformer.testing._admission import (
    AdmissionChain,
    relabel,
    user_groups,
    warning_header,
    write_options,
)
from aioinformer.testing._admission_call import webhook_address
from aioinformer.testing._admission_review import (
    CallFailed,
    build_review,
    call_failed,
    denied,
    read_answer,
    review_version,
)
from aioinformer.testing._admission_rules import Attributes, Invocation, Webhook
from aioinformer.testing._resources import ResourceRegistry
from aioinformer.testing._store import Store
from aioinformer.testing._webhook_address import WebhookAddress

PODS = ResourceType("", "v1", "pods", "Pod", True)
DEPLOYMENTS = ResourceType("apps", "v1", "deployments", "Deployment", True)
UID = "0b5b1c4e-0000-4000-8000-000000000001"


def attrs(
    rt: ResourceType = PODS, *, name: str = "web", dry_run: bool = False, operation: str = "CREATE"
) -> Attributes:
    obj = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {"name": name}}
    return Attributes(
        operation,
        rt,
        "",
        name,
        "default",
        obj,
        None,
        dry_run,
        {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        "alice",
        ("system:authenticated",),
    )


def answer(**response: Any) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": UID, **response},
        }
    )


def test_a_review_names_the_request_as_kube_apiserver_builds_it() -> None:
    request = attrs()
    hook = Webhook("config", False, {"name": "h.example.com"})
    review = build_review(UID, Invocation(hook, PODS, ""), request)
    assert review == {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": UID,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "web",
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": request.object,
            "oldObject": None,
            "dryRun": False,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        },
    }


def test_a_review_for_an_equivalent_version_carries_the_object_in_that_version() -> None:
    v2 = ResourceType("apps", "v2", "deployments", "Deployment", True)
    hook = Webhook("config", False, {"name": "h.example.com"})
    review = build_review(UID, Invocation(hook, v2, ""), attrs(DEPLOYMENTS))
    request = review["request"]
    assert request["kind"]["version"] == "v2"
    assert request["requestKind"]["version"] == "v1"
    assert request["object"]["apiVersion"] == "apps/v2"


def test_an_allowing_answer_is_read_with_its_warnings_and_patch() -> None:
    patch = [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]
    body = answer(
        allowed=True,
        patchType="JSONPatch",
        patch=base64.b64encode(orjson.dumps(patch)).decode(),
        warnings=["careful"],
    )
    read = read_answer(UID, body, mutating=True)
    assert read.allowed
    assert read.patch == patch
    assert read.warnings == ("careful",)


@pytest.mark.parametrize(
    ("body", "mutating", "reason"),
    [
        (b"<html>", False, "couldn't get version/kind; json parse error"),
        (orjson.dumps({"apiVersion": "admission.k8s.io/v1"}), False, "webhook response was absent"),
        (
            orjson.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": "other", "allowed": True},
                }
            ),
            False,
            f'expected response.uid="{UID}", got "other"',
        ),
        (
            orjson.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1beta1",
                    "kind": "AdmissionReview",
                    "response": {"uid": UID, "allowed": True},
                }
            ),
            False,
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got "
            "admission.k8s.io/v1beta1, Kind=AdmissionReview",
        ),
        (
            answer(allowed=True, patch="W10="),
            True,
            "webhook returned response.patch but not response.patchType",
        ),
        (
            answer(allowed=True, patchType="JSONPatch"),
            True,
            "webhook returned response.patchType but not response.patch",
        ),
        (
            answer(allowed=True, patch="W10=", patchType="JSONPatch"),
            False,
            "validating webhook may not return response.patch",
        ),
        (
            answer(allowed=True, patch="W10=", patchType="MergePatch"),
            True,
            'unsupported patch type "MergePatch"',
        ),
    ],
    ids=[
        "not-json",
        "no-response",
        "other-uid",
        "other-version",
        "patch-without-type",
        "type-without-patch",
        "validating-patch",
        "merge-patch",
    ],
)
def test_an_answer_kube_apiserver_refuses_fails_the_call(
    body: bytes, mutating: bool, reason: str
) -> None:
    with pytest.raises(CallFailed) as caught:
        read_answer(UID, body, mutating=mutating)
    assert str(caught.value).startswith(reason)


def test_a_patch_that_is_not_base64_json_is_an_internal_error() -> None:
    with pytest.raises(StatusError) as caught:
        read_answer(UID, answer(allowed=True, patch="!!", patchType="JSONPatch"), mutating=True)
    assert caught.value.code == 500


@pytest.mark.parametrize(
    ("result", "code", "reason", "message"),
    [
        (
            None,
            403,
            "Forbidden",
            'pods "web" is forbidden: admission webhook "h" denied the request without explanation',
        ),
        (
            {"message": "you shall not pass"},
            403,
            "Forbidden",
            'pods "web" is forbidden: admission webhook "h" denied the request: you shall not pass',
        ),
        (
            {"reason": "Forbidden"},
            403,
            "Forbidden",
            'pods "web" is forbidden: admission webhook "h" denied the request: Forbidden',
        ),
        (
            {"code": 500, "message": "internal error"},
            500,
            "InternalError",
            'Internal error occurred: admission webhook "h" denied the request: internal error',
        ),
        (
            {"code": 422, "reason": "Invalid", "message": "bad size"},
            422,
            "Invalid",
            'pods "web" is forbidden: admission webhook "h" denied the request: bad size',
        ),
    ],
    ids=["nil", "message", "reason", "500", "own-code"],
)
def test_a_denial_is_worded_as_kube_apiservers_to_status_err(
    result: dict[str, Any] | None, code: int, reason: str, message: str
) -> None:
    status = denied(attrs(), "h", result).status
    assert (status["code"], status["reason"], status["message"]) == (code, reason, message)


def test_a_denial_names_the_resource_with_its_group_and_unknown_without_a_name() -> None:
    status = denied(attrs(DEPLOYMENTS, name=""), "h", {"message": "no"}).status
    assert status["message"].startswith('deployments.apps "Unknown" is forbidden: ')
    assert status["details"] == {"name": "Unknown", "group": "apps", "kind": "deployments"}


def test_a_call_failure_is_an_internal_error_naming_the_webhook() -> None:
    status = call_failed("h.example.com", "boom").status
    assert status["code"] == 500
    assert status["reason"] == "InternalError"
    assert (
        status["message"] == 'Internal error occurred: failed calling webhook "h.example.com": boom'
    )
    assert status["details"] == {
        "causes": [{"message": 'failed calling webhook "h.example.com": boom'}]
    }


def test_the_review_version_is_v1_when_accepted_else_v1beta1() -> None:
    assert review_version(["v1beta1", "v1"]) == "v1"
    assert review_version(["v1beta1"]) == "v1beta1"
    with pytest.raises(CallFailed):
        review_version(["v2"])


def test_a_webhook_url_carries_kubes_timeout_parameter() -> None:
    url = webhook_address({"clientConfig": {"url": "https://h/x"}, "timeoutSeconds": 5}, {})
    assert url == WebhookAddress("https://h/x?timeout=5s", "https://h/x?timeout=5s")
    assert url.headers() == {}


def test_a_service_connects_where_the_server_maps_it_else_to_loopback() -> None:
    service = {"name": "hooks", "namespace": "ops", "port": 9443, "path": "/validate"}
    spec = {"clientConfig": {"service": service}}
    assert webhook_address(spec, {}) == WebhookAddress(
        "https://hooks.ops.svc:9443/validate?timeout=10s",
        "https://127.0.0.1:9443/validate?timeout=10s",
        "hooks.ops.svc",
    )
    mapped = webhook_address(spec, {("ops", "hooks"): ("127.0.0.2", 8443)})
    assert mapped == WebhookAddress(
        "https://hooks.ops.svc:9443/validate?timeout=10s",
        "https://127.0.0.2:8443/validate?timeout=10s",
        "hooks.ops.svc",
    )
    assert mapped.headers() == {"Host": "hooks.ops.svc:9443"}
    # Another service is not mapped by that entry; a missing port is kube's 443.
    other = {"clientConfig": {"service": {"name": "other", "namespace": "ops"}}}
    assert webhook_address(other, {("ops", "hooks"): ("127.0.0.2", 8443)}).url == (
        "https://127.0.0.1:443?timeout=10s"
    )


def test_a_warning_header_is_quoted_as_kube_apiserver_quotes_it() -> None:
    assert warning_header('say "hi" \\ bye') == '299 - "say \\"hi\\" \\\\ bye"'


def test_write_options_carry_dry_run_and_the_field_manager() -> None:
    assert write_options("create", ["All"], {"fieldManager": "me"}) == {
        "kind": "CreateOptions",
        "apiVersion": "meta.k8s.io/v1",
        "dryRun": ["All"],
        "fieldManager": "me",
    }
    assert write_options("patch", [], {})["kind"] == "UpdateOptions"
    assert write_options("delete", [], {}, {"propagationPolicy": "Foreground"}) == {
        "kind": "DeleteOptions",
        "apiVersion": "meta.k8s.io/v1",
        "propagationPolicy": "Foreground",
    }


@pytest.mark.parametrize(
    ("verb", "kind"),
    [("create", "CreateOptions"), ("update", "UpdateOptions"), ("patch", "PatchOptions")],
)
def test_an_unknown_dry_run_value_is_kubes_422(verb: str, kind: str) -> None:
    with pytest.raises(StatusError) as caught:
        write_options(verb, ["All", "Maybe"], {})
    assert caught.value.code == 422
    assert caught.value.status["message"] == (
        f'{kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["All","Maybe"]: '
        'supported values: "All"'
    )


def test_users_get_the_groups_kubes_authenticators_give() -> None:
    assert user_groups("system:admin") == ("system:masters", "system:authenticated")
    assert user_groups("system:serviceaccount:ops:bot") == (
        "system:serviceaccounts",
        "system:serviceaccounts:ops",
        "system:authenticated",
    )
    assert user_groups("alice") == ("system:authenticated",)


async def test_a_dry_run_reaching_a_webhook_with_side_effects_is_refused() -> None:
    chain = AdmissionChain(Store(history_size=10), ResourceRegistry())
    hook = Webhook("config", False, {"name": "h.example.com", "sideEffects": "Some"})
    with pytest.raises(StatusError) as caught:
        await chain._call(Invocation(hook, PODS, ""), attrs(dry_run=True))
    assert caught.value.code == 400
    assert (
        caught.value.status["message"]
        == 'admission webhook "h.example.com" does not support dry run'
    )


async def test_a_dry_run_reaching_a_webhook_without_side_effects_class_fails_the_call() -> None:
    chain = AdmissionChain(Store(history_size=10), ResourceRegistry())
    failing = Webhook("config", False, {"name": "h.example.com"})
    with pytest.raises(StatusError) as caught:
        await chain._call(Invocation(failing, PODS, ""), attrs(dry_run=True))
    assert caught.value.status["message"] == (
        'Internal error occurred: failed calling webhook "h.example.com": '
        "Webhook SideEffects is nil"
    )
    ignoring = Webhook("config", False, {"name": "h.example.com", "failurePolicy": "Ignore"})
    assert await chain._call(Invocation(ignoring, PODS, ""), attrs(dry_run=True)) is None


WIDGETS_V1 = ResourceType("example.com", "v1", "widgets", "Widget", True)
WIDGETS_V1BETA1 = ResourceType("example.com", "v1beta1", "widgets", "Widget", True)


async def test_a_webhook_of_another_version_is_sent_the_objects_converted() -> None:
    calls: list[tuple[str, str]] = []

    async def convert(
        obj: dict[str, Any], source: ResourceType, desired: ResourceType
    ) -> dict[str, Any]:
        calls.append((source.version, desired.version))
        return {**obj, "apiVersion": desired.api_version, "converted": True}

    chain = AdmissionChain(Store(history_size=10), ResourceRegistry(), convert=convert)
    hook = Webhook("config", False, {"name": "h.example.com"})
    request = attrs(WIDGETS_V1BETA1, operation="UPDATE")
    request = dataclasses.replace(request, old_object=dict(request.object or {}))
    # The request's own version: nothing converted.
    assert await chain._versioned(Invocation(hook, WIDGETS_V1BETA1, ""), request) is request
    assert calls == []
    sent = await chain._versioned(Invocation(hook, WIDGETS_V1, ""), request)
    assert calls == [("v1beta1", "v1"), ("v1beta1", "v1")]
    assert sent.object is not None
    assert sent.old_object is not None
    assert sent.object["converted"] is True
    assert sent.old_object["apiVersion"] == "example.com/v1"
    # The request itself keeps its version.
    assert sent.rt == WIDGETS_V1BETA1


async def test_without_a_conversion_webhook_only_the_apiversion_changes() -> None:
    obj = {"apiVersion": "example.com/v1beta1", "kind": "Widget", "spec": {"count": 1}}
    assert await relabel(obj, WIDGETS_V1BETA1, WIDGETS_V1) == {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "spec": {"count": 1},
    }
