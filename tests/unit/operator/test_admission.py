"""Admission webhooks without the network: an AdmissionReview v1 parsed once, what each
handler outcome answers (allow, warnings, deny, failure, timeout), the JSONPatch of a
mutation (untyped and typed), and the settings kube-apiserver refuses refused at
registration."""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioinformer.k8s.core_v1 import Pod
from aioinformer.models import KubeObject
from aioinformer.operator.admission import (
    AdmissionRequest,
    AdmissionWebhook,
    Allowed,
    BadReview,
    Denied,
    Operation,
    Rule,
    default_webhook_name,
    default_webhook_path,
    json_patch,
)
from aioinformer.testing._patch import apply_json_patch
from aioinformer.testing.clock import FakeClock
from tests._support_properties import example_settings

RULES = (Rule(api_groups=("example.com",), api_versions=("v1",), resources=("widgets",)),)


def review(**request: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
        "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
        "name": "w",
        "namespace": "default",
        "operation": "CREATE",
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"size": 3},
        },
        "oldObject": None,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    body.update(request)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def webhook(handler: Any, **settings: Any) -> AdmissionWebhook:
    values: dict[str, Any] = {
        "type": "validating",
        "path": "/validate",
        "name": "vwidget.example.com",
        "handler": handler,
        "rules": RULES,
    }
    values.update(settings)
    return AdmissionWebhook(**values)


def patch_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    response = answer["response"]
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = orjson.loads(base64.b64decode(response["patch"]))
    return ops


# -- the request ---------------------------------------------------------------------------


def test_a_review_is_parsed_into_a_request_once() -> None:
    request = AdmissionRequest.from_review(
        review(subResource="status", dryRun=True, requestKind=None, oldObject={"a": 1})
    )
    assert request.uid == "705ab4f5-6393-11e8-b7cc-42010a800002"
    assert request.kind == {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert request.resource["resource"] == "widgets"
    assert request.request_kind == request.kind  # absent: the same as kind
    assert request.request_resource == request.resource
    assert request.sub_resource == "status"
    assert request.request_sub_resource == "status"
    assert (request.name, request.namespace) == ("w", "default")
    assert request.operation is Operation.CREATE
    assert request.user_info["username"] == "alice"
    assert request.object is not None
    assert request.object["spec"] == {"size": 3}
    assert request.old_object == {"a": 1}
    assert request.dry_run is True
    assert request.options == {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}


def test_a_delete_has_only_the_old_object_and_a_cluster_object_no_namespace() -> None:
    request = AdmissionRequest.from_review(
        review(operation="DELETE", object=None, oldObject={"kind": "Widget"}, namespace=None)
    )
    assert request.operation is Operation.DELETE
    assert request.object is None
    assert request.old_object == {"kind": "Widget"}
    assert request.namespace == ""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param([], "not a JSON object", id="a-list"),
        pytest.param({"kind": "ConversionReview"}, "expected kind AdmissionReview", id="kind"),
        pytest.param(
            {**review(), "apiVersion": "admission.k8s.io/v1beta1"},
            "expected apiVersion admission.k8s.io/v1",
            id="v1beta1",
        ),
        pytest.param({**review(), "request": None}, "has no request", id="no-request"),
        pytest.param(review(uid=""), "has no uid", id="no-uid"),
        pytest.param(review(operation="PATCH"), "unknown operation 'PATCH'", id="operation"),
        pytest.param(review(kind=None), "request.kind is missing", id="no-kind"),
        pytest.param(review(object=[1]), "request.object is not an object", id="object"),
    ],
)
def test_a_body_that_is_not_a_v1_review_is_refused_naming_why(body: Any, message: str) -> None:
    with pytest.raises(BadReview, match=message):
        AdmissionRequest.from_review(body)


# -- validating outcomes -------------------------------------------------------------------


@pytest.mark.parametrize("outcome", [None, True, Allowed()], ids=["none", "true", "allowed"])
async def test_a_validating_handler_allows_by_returning_none_true_or_allowed(outcome: Any) -> None:
    seen: list[AdmissionRequest[Any]] = []

    def check(request: AdmissionRequest[Any]) -> Any:
        seen.append(request)
        return outcome

    answer = await webhook(check).review(review())
    assert answer == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": True},
    }
    assert seen[0].name == "w"


async def test_warnings_of_an_allowed_request_are_answered() -> None:
    async def check(request: AdmissionRequest[Any]) -> Allowed:
        return Allowed(warnings=["spec.size is deprecated"])

    response = (await webhook(check).review(review()))["response"]
    assert response["allowed"] is True
    assert response["warnings"] == ["spec.size is deprecated"]


@pytest.mark.parametrize("raised", [True, False], ids=["raised", "returned"])
async def test_a_denial_answers_its_code_reason_message_and_warnings(raised: bool) -> None:
    denied = Denied("spec.size must be at most 10", warnings=["size was 11"])

    def check(request: AdmissionRequest[Any]) -> Denied:
        if raised:
            raise denied
        return denied

    response = (await webhook(check).review(review()))["response"]
    assert response == {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "allowed": False,
        "status": {
            "status": "Failure",
            "code": 403,
            "reason": "Forbidden",
            "message": "spec.size must be at most 10",
        },
        "warnings": ["size was 11"],
    }


async def test_a_denial_may_carry_another_code_and_reason() -> None:
    def check(request: AdmissionRequest[Any]) -> None:
        raise Denied("name taken", code=409, reason="AlreadyExists")

    result = (await webhook(check).review(review()))["response"]["status"]
    assert (result["code"], result["reason"]) == (409, "AlreadyExists")


async def test_returning_false_denies() -> None:
    response = (await webhook(lambda request: False).review(review()))["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 403


async def test_an_unexpected_exception_answers_500_with_its_message_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def check(request: AdmissionRequest[Any]) -> None:
        raise KeyError("spec")

    with caplog.at_level(logging.ERROR, logger="aioinformer.operator.admission"):
        response = (await webhook(check).review(review()))["response"]
    assert response["allowed"] is False
    assert response["status"] == {"status": "Failure", "code": 500, "message": "'spec'"}
    failures = [r for r in caplog.records if "handler failed" in r.getMessage()]
    assert len(failures) == 1
    assert failures[0].exc_info is not None


async def test_a_handler_running_past_the_timeout_is_cancelled_and_answered_504() -> None:
    clock = FakeClock()
    cancelled = asyncio.Event()

    async def slow(request: AdmissionRequest[Any]) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    answering = asyncio.create_task(webhook(slow, timeout_seconds=2, clock=clock).review(review()))
    await clock.wait_for_sleepers()
    await clock.advance(1.9)
    assert not answering.done()
    await clock.advance(0.1)
    response = (await answering)["response"]
    assert cancelled.is_set()
    assert response["allowed"] is False
    assert response["status"]["code"] == 504
    assert response["status"]["reason"] == "Timeout"
    assert "did not answer within 2s" in response["status"]["message"]


async def test_the_dry_run_flag_reaches_the_handler() -> None:
    seen: list[bool] = []
    hook = webhook(lambda request: seen.append(request.dry_run), side_effects="NoneOnDryRun")
    await hook.review(review(dryRun=True))
    await hook.review(review())
    assert seen == [True, False]


# -- mutating outcomes ---------------------------------------------------------------------


async def test_a_mutation_answers_the_jsonpatch_of_the_edits_to_a_copy() -> None:
    body = review()
    sent = orjson.loads(orjson.dumps(body))

    def default(obj: dict[str, Any], request: AdmissionRequest[Any]) -> None:
        obj["spec"]["color"] = "blue"
        obj["metadata"].setdefault("labels", {})["app.kubernetes.io/name"] = "w"
        assert request.object is not obj  # the request keeps what was sent

    answer = await webhook(default, type="mutating").review(body)
    assert answer["response"]["allowed"] is True
    ops = patch_of(answer)
    assert {"op": "add", "path": "/spec/color", "value": "blue"} in ops
    assert {
        "op": "add",
        "path": "/metadata/labels",
        "value": {"app.kubernetes.io/name": "w"},
    } in ops
    obj = body["request"]["object"]
    assert apply_json_patch(obj, ops)["spec"] == {"size": 3, "color": "blue"}
    assert body == sent  # the review itself was not edited


async def test_a_mutation_that_changes_nothing_answers_no_patch() -> None:
    answer = await webhook(lambda obj, request: None, type="mutating").review(review())
    assert answer["response"] == {"uid": answer["response"]["uid"], "allowed": True}


async def test_a_mutating_handler_may_deny_and_warn() -> None:
    async def deny(obj: dict[str, Any], request: AdmissionRequest[Any]) -> Denied:
        obj["spec"]["size"] = 100  # no patch with a denial
        return Denied("no", warnings=["w"])

    response = (await webhook(deny, type="mutating").review(review()))["response"]
    assert response["allowed"] is False
    assert "patch" not in response
    assert response["warnings"] == ["w"]


class WidgetSpec(KubeObject):
    size: int = 0
    color: str = "red"


class Widget(KubeObject):
    spec: WidgetSpec


async def test_a_typed_validating_handler_gets_model_instances() -> None:
    seen: list[Any] = []

    def check(request: AdmissionRequest[Widget]) -> None:
        seen.append(request.object)

    await webhook(check, model=Widget).review(review())
    assert isinstance(seen[0], Widget)
    assert seen[0].spec.size == 3


async def test_a_typed_mutation_patches_only_what_the_handler_changed() -> None:
    def grow(obj: Widget, request: AdmissionRequest[Widget]) -> None:
        obj.spec.size += 1

    answer = await webhook(grow, type="mutating", model=Widget).review(review())
    assert patch_of(answer) == [{"op": "replace", "path": "/spec/size", "value": 4}]


async def test_a_typed_round_trip_without_edits_adds_no_patch() -> None:
    # ``color`` has a default the object does not carry: a dump of everything would add it.
    answer = await webhook(lambda obj, request: None, type="mutating", model=Widget).review(
        review()
    )
    assert "patch" not in answer["response"]


async def test_an_object_the_model_refuses_is_denied_400() -> None:
    response = (
        await webhook(lambda request: None, model=Widget).review(review(object={"spec": 1}))
    )["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert "not a valid Widget" in response["status"]["message"]


# -- the JSONPatch -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "ops"),
    [
        pytest.param({"a": 1}, {"a": 1}, [], id="equal"),
        pytest.param({}, {"a/b": 1}, [{"op": "add", "path": "/a~1b", "value": 1}], id="slash"),
        pytest.param({"~": 1}, {}, [{"op": "remove", "path": "/~0"}], id="tilde"),
        pytest.param(
            {"a": 1}, {"a": True}, [{"op": "replace", "path": "/a", "value": True}], id="bool"
        ),
        pytest.param(
            {"l": [1, 2, 3]},
            {"l": [1]},
            [{"op": "remove", "path": "/l/2"}, {"op": "remove", "path": "/l/1"}],
            id="shorter",
        ),
        pytest.param(
            {"l": [1]},
            {"l": [2, 3]},
            [
                {"op": "replace", "path": "/l/0", "value": 2},
                {"op": "add", "path": "/l/-", "value": 3},
            ],
            id="longer",
        ),
        pytest.param(
            {"a": {"b": 1}}, {"a": [1]}, [{"op": "replace", "path": "/a", "value": [1]}], id="type"
        ),
        pytest.param(1, 2, [{"op": "replace", "path": "", "value": 2}], id="root"),
    ],
)
def test_json_patch_writes_add_remove_and_replace(old: Any, new: Any, ops: list[Any]) -> None:
    assert json_patch(old, new) == ops


_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(alphabet="ab~/", max_size=3)
_json = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet="ab~/", max_size=3), children, max_size=4)
    ),
    max_leaves=12,
)


@example_settings(200)
@given(old=_json, new=_json)
def test_applying_the_patch_to_the_old_value_gives_the_new_one(old: Any, new: Any) -> None:
    ops = json_patch(old, new)
    patched = apply_json_patch(old, ops)
    # JSON tells true from 1, Python's == does not: compare the encodings (keys sorted,
    # an object's key order means nothing).
    assert orjson.dumps(patched, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
        new, option=orjson.OPT_SORT_KEYS
    )


@example_settings(50)
@given(objects=st.dictionaries(st.text(max_size=3), _json, max_size=4))
def test_a_value_patched_to_itself_needs_no_operation(objects: dict[str, Any]) -> None:
    assert json_patch(objects, orjson.loads(orjson.dumps(objects))) == []


# -- registration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param({"side_effects": "Some"}, "side_effects must be 'None' or", id="some"),
        pytest.param({"side_effects": "Unknown"}, "side_effects must be", id="unknown"),
        pytest.param({"timeout_seconds": 0}, "1 to 30", id="timeout-0"),
        pytest.param({"timeout_seconds": 31}, "1 to 30", id="timeout-31"),
        pytest.param({"name": "vwidget"}, "fully qualified", id="name-one-segment"),
        pytest.param({"name": "v.example"}, "fully qualified", id="name-two-segments"),
        pytest.param({"name": "V.example.com"}, "fully qualified", id="name-upper"),
        pytest.param({"rules": ()}, "no rules", id="no-rules"),
        pytest.param({"path": "validate"}, "starts with '/'", id="path"),
        pytest.param({"failure_policy": "Retry"}, "failure_policy", id="failure-policy"),
        pytest.param({"match_policy": "Fuzzy"}, "match_policy", id="match-policy"),
        pytest.param({"reinvocation_policy": "IfNeeded"}, "mutating webhooks only", id="reinvoke"),
    ],
)
def test_settings_kube_apiserver_refuses_are_refused_at_registration(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        webhook(lambda request: None, **settings)


def test_a_mutating_webhook_is_never_reinvoked_unless_told() -> None:
    assert webhook(lambda o, r: None, type="mutating").reinvocation_policy == "Never"
    with pytest.raises(ValueError, match="reinvocation_policy must be"):
        webhook(lambda o, r: None, type="mutating", reinvocation_policy="Always")


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"operations": ()}, "at least one operation"),
        ({"operations": ("PATCH",)}, "unknown operation 'PATCH'"),
        ({"api_groups": ()}, "at least one of api_groups"),
        ({"api_versions": ("*", "v1")}, "'\\*' must be alone"),
        ({"scope": "Global"}, "scope must be"),
    ],
)
def test_a_rule_kube_apiserver_refuses_is_refused(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Rule(**rule)


def test_default_paths_and_names_are_controller_runtimes_and_fully_qualified() -> None:
    assert default_webhook_path("validating", "example.com", "v1", "Widget") == (
        "/validate-example-com-v1-widget"
    )
    assert default_webhook_path("mutating", "", "v1", "Pod") == "/mutate--v1-pod"
    assert default_webhook_name("validating", "example.com", "Widget") == "vwidget.example.com"
    assert default_webhook_name("mutating", "apps", "Deployment") == "mdeployment.apps.k8s.io"
    assert default_webhook_name("validating", "", "Pod") == "vpod.core.k8s.io"


POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "namespace": "default",
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "labels": {"app": "p"},
    },
    "spec": {
        "containers": [
            {"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "1"}}},
        ],
        "restartPolicy": "Always",
    },
    "status": {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"},
}


async def test_a_built_in_model_mutation_patches_camel_case_paths_only_where_edited() -> None:
    def pin(obj: Pod, request: AdmissionRequest[Pod]) -> None:
        assert obj.spec is not None
        assert obj.spec.containers is not None
        container = obj.spec.containers[0]
        container.image = "nginx:1.27"
        container.image_pull_policy = "IfNotPresent"

    body = review(
        kind={"group": "", "version": "v1", "kind": "Pod"},
        resource={"group": "", "version": "v1", "resource": "pods"},
        object=POD,
    )
    ops = patch_of(await webhook(pin, type="mutating", model=Pod).review(body))
    assert ops == [
        {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:1.27"},
        {"op": "add", "path": "/spec/containers/0/imagePullPolicy", "value": "IfNotPresent"},
    ]
