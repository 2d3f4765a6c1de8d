"""A CustomResourceDefinition's ``spec.conversion`` and the ConversionReview on the fake
API server, as kube-apiserver v1.36 validates, defaults, builds and checks them: the
definition's conversion refused with the apiextensions server's field paths and words,
the review sent, and each answer check of ``webhookConverter`` with its message.
The calls themselves, over HTTPS, are in ``tests/e2e/test_fake_conversion_e2e.py``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aioinformer.testing import FakeAPIServer
from aioinformer.testing._conversion import (
    ConversionFailure,
    conversion_errors,
    converted_objects,
    default_conversion,
    gvk_text,
    review_request,
    webhook_config,
)
from aioinformer.testing._converter import Conversions, _go_duration, _status_message
from aioinformer.testing._webhook_address import WebhookAddress
from tests.unit.testing.test_fake_crds import refusal, widget_crd

UID = "5a0a5ab1-0000-4000-8000-000000000001"
GVK = "example.com/v1, Kind=Widget"
URL = "https://127.0.0.1:8443/convert"


def webhook(client_config: dict[str, Any], versions: list[Any] | None = None) -> dict[str, Any]:
    stanza: dict[str, Any] = {"clientConfig": client_config}
    if versions is not None:
        stanza["conversionReviewVersions"] = versions
    return {"strategy": "Webhook", "webhook": stanza}


def causes(conversion: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e.reason, e.field, e.body()) for e in conversion_errors(conversion)]


WEBHOOK_CC = "spec.conversion.webhookClientConfig"
VERSIONS = "spec.conversion.conversionReviewVersions"
FORM = "; desired format: https://host[/path]"


@pytest.mark.parametrize(
    ("conversion", "expected"),
    [
        pytest.param({"strategy": "None"}, [], id="none"),
        pytest.param(webhook({"url": URL}, ["v1"]), [], id="url"),
        pytest.param(
            webhook({"service": {"namespace": "ops", "name": "hooks", "port": 443}}, ["v1beta1"]),
            [],
            id="service",
        ),
        pytest.param(
            {"strategy": "Webhook"},
            [
                (
                    "FieldValueRequired",
                    WEBHOOK_CC,
                    "Required value: required when strategy is set to Webhook",
                ),
                ("FieldValueRequired", VERSIONS, "Required value"),
            ],
            id="no-webhook",
        ),
        pytest.param(
            webhook({"url": URL, "service": {"namespace": "a", "name": "b", "port": 1}}, ["v1"]),
            [
                (
                    "FieldValueRequired",
                    WEBHOOK_CC,
                    "Required value: exactly one of url or service is required",
                )
            ],
            id="url-and-service",
        ),
        pytest.param(
            webhook({"caBundle": ""}, ["v1"]),
            [
                (
                    "FieldValueRequired",
                    WEBHOOK_CC,
                    "Required value: exactly one of url or service is required",
                )
            ],
            id="neither",
        ),
        pytest.param(
            webhook({"url": "http://127.0.0.1/convert?x=1#top"}, ["v1"]),
            [
                (
                    "FieldValueInvalid",
                    f"{WEBHOOK_CC}.url",
                    f"Invalid value: \"http\": 'https' is the only allowed URL scheme{FORM}",
                ),
                (
                    "FieldValueInvalid",
                    f"{WEBHOOK_CC}.url",
                    'Invalid value: "top": fragments are not permitted in the URL',
                ),
                (
                    "FieldValueInvalid",
                    f"{WEBHOOK_CC}.url",
                    'Invalid value: "x=1": query parameters are not permitted in the URL',
                ),
            ],
            id="url-scheme-fragment-query",
        ),
        pytest.param(
            webhook({"url": "https:///convert"}, ["v1"]),
            [
                (
                    "FieldValueInvalid",
                    f"{WEBHOOK_CC}.url",
                    f'Invalid value: "": host must be specified{FORM}',
                )
            ],
            id="url-without-host",
        ),
        pytest.param(
            webhook({"service": {"port": 0, "path": "convert"}}, ["v1"]),
            [
                (
                    "FieldValueRequired",
                    f"{WEBHOOK_CC}.service.name",
                    "Required value: service name is required",
                ),
                (
                    "FieldValueRequired",
                    f"{WEBHOOK_CC}.service.namespace",
                    "Required value: service namespace is required",
                ),
                (
                    "FieldValueInvalid",
                    f"{WEBHOOK_CC}.service.port",
                    "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                ),
                (
                    "FieldValueInvalid",
                    f"{WEBHOOK_CC}.service.path",
                    "Invalid value: \"convert\": must start with a '/'",
                ),
            ],
            id="service-fields",
        ),
        pytest.param(
            webhook({"url": URL}, ["v2", "v2"]),
            [
                ("FieldValueInvalid", f"{VERSIONS}[1]", 'Invalid value: "v2": duplicate version'),
                (
                    "FieldValueInvalid",
                    VERSIONS,
                    'Invalid value: ["v2","v2"]: must include at least one of v1, v1beta1',
                ),
            ],
            id="no-known-review-version",
        ),
        pytest.param(
            {
                "strategy": "None",
                "webhook": {"clientConfig": {"url": URL}, "conversionReviewVersions": ["v1"]},
            },
            [
                (
                    "FieldValueForbidden",
                    WEBHOOK_CC,
                    "Forbidden: should not be set when strategy is not set to Webhook",
                ),
                (
                    "FieldValueForbidden",
                    VERSIONS,
                    "Forbidden: should not be set when strategy is not set to Webhook",
                ),
            ],
            id="webhook-without-strategy",
        ),
    ],
)
def test_the_conversion_stanza_is_validated_as_the_apiextensions_server_does(
    conversion: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    assert causes(conversion) == expected


def test_a_webhook_definition_without_a_client_config_is_refused_with_a_422() -> None:
    crd = widget_crd(conversion={"strategy": "Webhook"})
    assert refusal(crd) == [
        (
            "FieldValueRequired",
            WEBHOOK_CC,
            "Required value: required when strategy is set to Webhook",
        ),
        ("FieldValueRequired", VERSIONS, "Required value"),
    ]


def test_the_conversion_is_defaulted_as_the_v1_api_defaults_it() -> None:
    spec: dict[str, Any] = {}
    default_conversion(spec)
    assert spec == {"conversion": {"strategy": "None"}}
    spec = {"conversion": {"webhook": {"clientConfig": {"service": {"name": "a"}}}}}
    default_conversion(spec)
    assert spec["conversion"]["strategy"] == "None"
    assert spec["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443

    server = FakeAPIServer()
    conversion = webhook({"service": {"namespace": "ops", "name": "hooks"}}, ["v1"])
    stored = server.create(widget_crd(conversion=conversion))
    assert stored["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443


def test_the_webhook_is_read_from_a_stored_definition() -> None:
    crd = widget_crd(
        conversion=webhook(
            {"service": {"namespace": "ops", "name": "hooks", "port": 9443, "path": "/c"}},
            ["v2", "v1beta1", "v1"],
        )
    )
    config = webhook_config(crd)
    assert config is not None
    assert (config.definition, config.url, config.service) == (
        "widgets.example.com",
        None,
        ("ops", "hooks", 9443, "/c"),
    )
    # The first version kube-apiserver speaks, in the definition's order.
    assert config.review_version == "v1beta1"
    assert webhook_config(widget_crd()) is None


def test_the_review_carries_the_uid_the_desired_version_and_the_objects() -> None:
    obj = {"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "a"}}
    assert review_request("v1", UID, "example.com/v1", [obj]) == {
        "kind": "ConversionReview",
        "apiVersion": "apiextensions.k8s.io/v1",
        "request": {"uid": UID, "desiredAPIVersion": "example.com/v1", "objects": [obj]},
    }
    assert gvk_text("example.com/v1", "WidgetList") == "example.com/v1, Kind=WidgetList"
    assert gvk_text("v1", "Pod") == "/v1, Kind=Pod"


# -- the answer's checks ---------------------------------------------------------------------


def stored(name: str = "a", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "generation": 1,
            "finalizers": ["example.com/keep"],
            **meta,
        },
        "spec": {"replicas": 3},
    }


def converted(obj: dict[str, Any], desired: str = "example.com/v1beta1") -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["apiVersion"] = desired
    out["spec"] = {"count": out["spec"].pop("replicas")}
    return out


def answer(
    objects: list[dict[str, Any]],
    *,
    uid: str = UID,
    result: dict[str, Any] | None = None,
    api_version: str = "apiextensions.k8s.io/v1",
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "ConversionReview",
        "response": {
            "uid": uid,
            "convertedObjects": objects,
            "result": result if result is not None else {"status": "Success"},
        },
    }


def check(
    reply: Any,
    sent: list[dict[str, Any]],
    *,
    is_list: bool = False,
    review_version: str = "v1",
) -> list[dict[str, Any]]:
    gvk = GVK + ("List" if is_list else "")
    return converted_objects(
        review_version, UID, reply, sent, "example.com/v1beta1", gvk, is_list=is_list
    )


def test_a_good_answer_gives_the_converted_objects() -> None:
    sent = [stored("a"), stored("b")]
    assert check(answer([converted(o) for o in sent]), sent, is_list=True) == [
        converted(o) for o in sent
    ]


def refused(reply: Any, sent: list[dict[str, Any]], **options: Any) -> str:
    with pytest.raises(ConversionFailure) as failure:
        check(reply, sent, **options)
    return str(failure.value)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        pytest.param(
            {"apiVersion": "v1", "kind": "Status"},
            "conversion webhook for example.com/v1, Kind=Widget failed: expected webhook "
            "response of apiextensions.k8s.io/v1, Kind=ConversionReview, got /v1, Kind=Status",
            id="not-a-review",
        ),
        pytest.param(
            {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"},
            "conversion webhook for example.com/v1, Kind=Widget failed: no response provided",
            id="no-response",
        ),
        pytest.param(
            answer([], uid="other"),
            "conversion webhook for example.com/v1, Kind=Widget failed: expected "
            f'response.uid="{UID}", got "other"',
            id="uid",
        ),
        pytest.param(
            answer([], result={"status": "Failure", "message": "cannot convert spec.count"}),
            "conversion webhook for example.com/v1, Kind=Widget failed: cannot convert spec.count",
            id="failure-message",
        ),
        pytest.param(
            answer([], result={"status": "Failure"}),
            "conversion webhook for example.com/v1, Kind=Widget failed: "
            "response.result.status was 'Failure', not 'Success'",
            id="failure-without-message",
        ),
        pytest.param(
            answer([]),
            "conversion webhook for example.com/v1, Kind=Widget returned 0 objects, expected 1",
            id="dropped-object",
        ),
        pytest.param(
            answer([converted(stored(), "example.com/v2")]),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object at "
            "index 0: invalid groupVersion (expected example.com/v1beta1, received "
            "example.com/v2)",
            id="group-version",
        ),
        pytest.param(
            answer([{**converted(stored()), "kind": "Gadget"}]),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object at "
            "index 0: invalid kind (expected Widget, received Gadget)",
            id="kind",
        ),
        pytest.param(
            answer([converted(stored("b"))]),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object: "
            "must have the same name: a != b",
            id="name",
        ),
        pytest.param(
            answer([converted(stored(namespace="other"))]),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object: "
            "must have the same namespace: default != other",
            id="namespace",
        ),
        pytest.param(
            answer([converted(stored(uid="changed"))]),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object: "
            "must have the same UID: uid-a != changed",
            id="uid-changed",
        ),
        pytest.param(
            answer([converted(stored(labels={"size": 3}))]),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid metadata: "
            "metadata.labels[size] must be a string, but is int64 in converted object",
            id="label-not-a-string",
        ),
        pytest.param(
            answer([{k: v for k, v in converted(stored()).items() if k != "metadata"}]),
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object: "
            "must have the same name: a != ",
            id="no-metadata",
        ),
    ],
)
def test_an_answer_kube_apiserver_refuses_is_refused_with_its_message(
    reply: Any, message: str
) -> None:
    assert refused(reply, [stored()]) == message


def test_a_lists_items_are_named_by_their_index_from_one() -> None:
    sent = [stored("a"), stored("b")]
    reply = answer([converted(sent[0]), converted(stored("c"))])
    assert refused(reply, sent, is_list=True) == (
        "conversion webhook for example.com/v1, Kind=WidgetList returned invalid converted "
        "object at index 2: must have the same name: b != c"
    )
    reply = answer([converted(sent[0])])
    assert refused(reply, sent, is_list=True) == (
        "conversion webhook for example.com/v1, Kind=WidgetList returned 1 objects, expected 2"
    )


def test_metadata_is_restored_but_for_labels_and_annotations() -> None:
    sent = stored(labels={"a": "1"}, annotations={"note": "kept"})
    out = converted(sent)
    out["metadata"].update(
        generation=42,
        finalizers=["example.com/other"],
        garbage="x",
        labels={"a": "1", "converted": "yes"},
    )
    del out["metadata"]["annotations"]
    [result] = check(answer([out]), [sent])
    assert result["metadata"] == {
        "name": "a",
        "namespace": "default",
        "uid": "uid-a",
        "generation": 1,
        "finalizers": ["example.com/keep"],
        "labels": {"a": "1", "converted": "yes"},
    }
    assert result["spec"] == {"count": 3}


def test_a_v1beta1_answer_is_not_checked_for_its_kind_or_uid() -> None:
    sent = [stored()]
    reply = answer([converted(sent[0])], uid="whatever", api_version="apiextensions.k8s.io/v1beta1")
    assert check(reply, sent, review_version="v1beta1") == [converted(sent[0])]
    assert refused(reply, sent) == (
        "conversion webhook for example.com/v1, Kind=Widget failed: expected webhook response "
        "of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, "
        "Kind=ConversionReview"
    )


# -- the call's words ------------------------------------------------------------------------


def test_the_timeout_is_sent_as_go_prints_a_duration() -> None:
    assert _go_duration(30.0) == "30s"
    assert _go_duration(0.25) == "250ms"


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        pytest.param(400, b"", "the server rejected our request for an unknown reason", id="400"),
        pytest.param(404, b"", "the server could not find the requested resource", id="404"),
        pytest.param(
            502,
            b"bad gateway\n",
            'an error on the server ("bad gateway") has prevented the request from succeeding',
            id="5xx-with-text",
        ),
        pytest.param(
            403,
            b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no, thanks"}',
            "no, thanks",
            id="status-body",
        ),
    ],
)
def test_a_failed_http_answer_is_worded_as_client_go_words_it(
    status: int, body: bytes, message: str
) -> None:
    assert _status_message(status, body) == message


def test_a_service_connects_where_the_server_maps_it_else_to_loopback() -> None:
    crd = widget_crd(
        conversion=webhook(
            {"service": {"namespace": "ops", "name": "hooks", "port": 443, "path": "/c"}}, ["v1"]
        )
    )
    config = webhook_config(crd)
    assert config is not None
    conversions = Conversions(FakeAPIServer()._store, timeout=5)
    assert conversions._endpoint(config) == WebhookAddress(
        "https://hooks.ops.svc:443/c?timeout=5s",
        "https://127.0.0.1:443/c?timeout=5s",
        "hooks.ops.svc",
    )
    mapped = Conversions(
        FakeAPIServer()._store, timeout=5, services={("ops", "hooks"): ("127.0.0.1", 9443)}
    )
    assert mapped._endpoint(config) == WebhookAddress(
        "https://hooks.ops.svc:443/c?timeout=5s",
        "https://127.0.0.1:9443/c?timeout=5s",
        "hooks.ops.svc",
    )


def test_labels_the_webhook_changes_must_be_valid() -> None:
    out = converted(stored())
    out["metadata"]["labels"] = {"bad key": "x"}
    message = refused(answer([out]), [stored()])
    assert message.startswith(
        "conversion webhook for example.com/v1, Kind=Widget returned invalid metadata: "
        'metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric'
    )
    # Labels given back unchanged are not checked again.
    sent = stored(labels={"a": "1"})
    assert check(answer([converted(sent)]), [sent])[0]["metadata"]["labels"] == {"a": "1"}
