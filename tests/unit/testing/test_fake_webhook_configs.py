"""Webhook configurations on the fake API server, defaulted and refused as kube-apiserver
v1.36 defaults and validates them (``pkg/apis/admissionregistration/validation``, its
table tests ported)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aioinformer.errors import UnprocessableEntity
from aioinformer.testing import FakeAPIServer
from aioinformer.testing._webhook_configs import configuration_errors, default_configuration


def hook(**fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "check.example.com",
        "clientConfig": {"url": "https://127.0.0.1:9443/validate"},
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    spec.update(fields)
    return spec


def errors(*hooks: dict[str, Any], mutating: bool = False) -> list[tuple[str, str]]:
    config = {"metadata": {"name": "c"}, "webhooks": [copy.deepcopy(h) for h in hooks]}
    default_configuration(config, mutating=mutating)
    return [(e.field, e.body()) for e in configuration_errors(config, None, mutating=mutating)]


def test_a_valid_configuration_has_no_errors() -> None:
    assert errors(hook()) == []


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"name": ""}, [("webhooks[0].name", "Required value")]),
        (
            {"name": "short.name"},
            [
                (
                    "webhooks[0].name",
                    'Invalid value: "short.name": should be a domain with at least three '
                    "segments separated by dots",
                )
            ],
        ),
        (
            {"failurePolicy": "Sometimes"},
            [
                (
                    "webhooks[0].failurePolicy",
                    'Unsupported value: "Sometimes": supported values: "Fail", "Ignore"',
                )
            ],
        ),
        (
            {"matchPolicy": "Loose"},
            [
                (
                    "webhooks[0].matchPolicy",
                    'Unsupported value: "Loose": supported values: "Equivalent", "Exact"',
                )
            ],
        ),
        (
            {"sideEffects": None},
            [("webhooks[0].sideEffects", "Required value: must specify one of None, NoneOnDryRun")],
        ),
        (
            {"sideEffects": "Unknown"},
            [
                (
                    "webhooks[0].sideEffects",
                    'Unsupported value: "Unknown": supported values: "None", "NoneOnDryRun"',
                )
            ],
        ),
        (
            {"timeoutSeconds": 0},
            [
                (
                    "webhooks[0].timeoutSeconds",
                    "Invalid value: 0: the timeout value must be between 1 and 30 seconds",
                )
            ],
        ),
        (
            {"clientConfig": {}},
            [
                (
                    "webhooks[0].clientConfig",
                    "Required value: exactly one of url or service is required",
                )
            ],
        ),
        (
            {"clientConfig": {"url": "http://example.com/x"}},
            [
                (
                    "webhooks[0].clientConfig.url",
                    "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired "
                    "format: https://host[/path]",
                )
            ],
        ),
        (
            {"clientConfig": {"url": "https://example.com/x?a=b"}},
            [
                (
                    "webhooks[0].clientConfig.url",
                    'Invalid value: "a=b": query parameters are not permitted in the URL',
                )
            ],
        ),
        (
            {"clientConfig": {"service": {"name": "hooks", "path": "validate"}}},
            [
                (
                    "webhooks[0].clientConfig.service.namespace",
                    "Required value: service namespace is required",
                ),
                (
                    "webhooks[0].clientConfig.service.path",
                    "Invalid value: \"validate\": must start with a '/'",
                ),
            ],
        ),
        (
            {"admissionReviewVersions": []},
            [
                (
                    "webhooks[0].admissionReviewVersions",
                    "Required value: must specify one of v1, v1beta1",
                )
            ],
        ),
        (
            {"admissionReviewVersions": ["v2"]},
            [
                (
                    "webhooks[0].admissionReviewVersions",
                    'Invalid value: ["v2"]: must include at least one of v1, v1beta1',
                )
            ],
        ),
        (
            {"admissionReviewVersions": ["v1", "v1"]},
            [("webhooks[0].admissionReviewVersions[1]", 'Invalid value: "v1": duplicate version')],
        ),
    ],
    ids=[
        "no-name",
        "two-segments",
        "failure-policy",
        "match-policy",
        "no-side-effects",
        "side-effects-unknown",
        "timeout",
        "no-client-config",
        "http-url",
        "query-in-url",
        "service",
        "no-review-versions",
        "unknown-review-version",
        "duplicate-review-version",
    ],
)
def test_a_webhook_is_refused_with_kubes_field_errors(
    fields: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    spec = hook(**fields)
    if fields.get("sideEffects", "") is None:
        del spec["sideEffects"]
    assert errors(spec) == expected


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"operations": []}, [("webhooks[0].rules[0].operations", "Required value")]),
        (
            {"operations": ["*", "CREATE"]},
            [
                (
                    "webhooks[0].rules[0].operations",
                    'Invalid value: ["*","CREATE"]: if \'*\' is present, must not specify other '
                    "operations",
                )
            ],
        ),
        (
            {"operations": ["PATCH"]},
            [
                (
                    "webhooks[0].rules[0].operations[0]",
                    'Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", '
                    '"DELETE", "UPDATE"',
                )
            ],
        ),
        ({"apiGroups": []}, [("webhooks[0].rules[0].apiGroups", "Required value")]),
        ({"apiVersions": [""]}, [("webhooks[0].rules[0].apiVersions[0]", "Required value")]),
        (
            {"resources": ["*/*", "pods"]},
            [
                (
                    "webhooks[0].rules[0].resources",
                    'Invalid value: ["*/*","pods"]: if \'*/*\' is present, must not specify '
                    "other resources",
                )
            ],
        ),
        (
            {"resources": ["*", "pods"]},
            [
                (
                    "webhooks[0].rules[0].resources",
                    'Invalid value: ["*","pods"]: if \'*\' is present, must not specify other '
                    "resources without subresources",
                )
            ],
        ),
        (
            {"resources": ["pods/*", "pods/status"]},
            [
                (
                    "webhooks[0].rules[0].resources[1]",
                    "Invalid value: \"pods/status\": if 'pods/*' is present, must not specify "
                    "pods/status",
                )
            ],
        ),
        (
            {"scope": "Global"},
            [
                (
                    "webhooks[0].rules[0].scope",
                    'Unsupported value: "Global": supported values: "*", "Cluster", "Namespaced"',
                )
            ],
        ),
    ],
    ids=[
        "no-operations",
        "wildcard-operation",
        "unknown-operation",
        "no-groups",
        "empty-version",
        "double-wildcard",
        "wildcard-and-plain",
        "subresource-wildcard",
        "scope",
    ],
)
def test_a_rule_is_refused_with_kubes_field_errors(
    rule: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    spec = hook()
    spec["rules"][0].update(rule)
    assert errors(spec) == expected


def test_webhook_names_are_unique_within_a_configuration() -> None:
    assert errors(hook(), hook()) == [("webhooks[1].name", 'Duplicate value: "check.example.com"')]


def test_a_mutating_webhooks_reinvocation_policy_is_checked() -> None:
    assert errors(hook(reinvocationPolicy="Always"), mutating=True) == [
        (
            "webhooks[0].reinvocationPolicy",
            'Unsupported value: "Always": supported values: "IfNeeded", "Never"',
        )
    ]


def test_an_update_may_keep_the_side_effects_the_stored_configuration_had() -> None:
    old = {"webhooks": [hook(sideEffects="Some")]}
    new = {"webhooks": [hook(sideEffects="Some")]}
    assert configuration_errors(new, old, mutating=False) == []


def test_defaults_are_kube_apiservers() -> None:
    config = {"webhooks": [hook(clientConfig={"service": {"name": "s", "namespace": "n"}})]}
    default_configuration(config, mutating=True)
    (spec,) = config["webhooks"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchPolicy"] == "Equivalent"
    assert spec["namespaceSelector"] == {}
    assert spec["objectSelector"] == {}
    assert spec["timeoutSeconds"] == 10
    assert spec["reinvocationPolicy"] == "Never"
    assert spec["rules"][0]["scope"] == "*"
    assert spec["clientConfig"]["service"]["port"] == 443


def test_the_fake_refuses_an_invalid_configuration_with_a_422() -> None:
    server = FakeAPIServer()
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "guard"},
        "webhooks": [hook(timeoutSeconds=60)],
    }
    with pytest.raises(UnprocessableEntity) as caught:
        server.create(config)
    assert caught.value.status["message"] == (
        'ValidatingWebhookConfiguration.admissionregistration.k8s.io "guard" is invalid: '
        "webhooks[0].timeoutSeconds: Invalid value: 60: the timeout value must be between 1 "
        "and 30 seconds"
    )
    config["webhooks"] = [hook()]
    stored = server.create(config)
    assert stored["webhooks"][0]["timeoutSeconds"] == 10
