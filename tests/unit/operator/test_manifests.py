"""Webhook configurations written from the registrations: every field kube-apiserver
requires, in its rules' words (checked here as its validation checks them), parsed by
the built-in models, and the CRD conversion stanza; and the registration's own checks on
a server (paths, names, wildcards, after the start)."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from aioinformer.k8s.admissionregistration_v1 import (
    MutatingWebhookConfiguration,
    ValidatingWebhookConfiguration,
)
from aioinformer.operator.admission import Rule
from aioinformer.operator.manifests import conversion_patch, webhook_manifests
from aioinformer.operator.webhook import WebhookOptions, WebhookServer, WebhookServerState

_QUALIFIED = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?){2,}$")
_OPERATIONS = {"*", "CREATE", "UPDATE", "DELETE", "CONNECT"}


def kube_refusals(configuration: dict[str, Any]) -> list[str]:
    """What kube-apiserver's validation of an admissionregistration.k8s.io/v1
    configuration would refuse in ``configuration`` (the rules a generated one can break)."""
    problems: list[str] = []
    mutating = configuration["kind"] == "MutatingWebhookConfiguration"
    names = [webhook["name"] for webhook in configuration["webhooks"]]
    if len(set(names)) != len(names):
        problems.append("webhooks[].name: Duplicate value")
    for webhook in configuration["webhooks"]:
        where = f"webhooks[{webhook.get('name')}]"
        if not _QUALIFIED.match(webhook.get("name", "")):
            problems.append(f"{where}.name: should be a domain with at least three segments")
        if "v1" not in webhook.get("admissionReviewVersions", []):
            problems.append(f"{where}.admissionReviewVersions: must include v1")
        if webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            problems.append(f"{where}.sideEffects: Unsupported value")
        if not 1 <= webhook.get("timeoutSeconds", 10) <= 30:
            problems.append(f"{where}.timeoutSeconds: must be between 1 and 30")
        if webhook.get("failurePolicy", "Fail") not in ("Fail", "Ignore"):
            problems.append(f"{where}.failurePolicy: Unsupported value")
        if webhook.get("matchPolicy", "Equivalent") not in ("Exact", "Equivalent"):
            problems.append(f"{where}.matchPolicy: Unsupported value")
        if mutating and webhook.get("reinvocationPolicy", "Never") not in ("Never", "IfNeeded"):
            problems.append(f"{where}.reinvocationPolicy: Unsupported value")
        if not mutating and "reinvocationPolicy" in webhook:
            problems.append(f"{where}.reinvocationPolicy: not a field of a validating webhook")
        config = webhook["clientConfig"]
        if ("url" in config) == ("service" in config):
            problems.append(f"{where}.clientConfig: exactly one of url or service is required")
        if "service" in config:
            service = config["service"]
            if not service.get("namespace") or not service.get("name"):
                problems.append(f"{where}.clientConfig.service: namespace and name required")
            if not service.get("path", "/").startswith("/"):
                problems.append(f"{where}.clientConfig.service.path: must start with '/'")
            if not 1 <= service.get("port", 443) <= 65535:
                problems.append(f"{where}.clientConfig.service.port: must be 1..65535")
        if "url" in config and not config["url"].startswith("https://"):
            problems.append(f"{where}.clientConfig.url: 'https' is the only allowed scheme")
        if "caBundle" in config:
            base64.b64decode(config["caBundle"], validate=True)
        for rule in webhook["rules"]:
            operations = set(rule["operations"])
            if not operations or not operations <= _OPERATIONS:
                problems.append(f"{where}.rules.operations: Unsupported value")
            if "*" in operations and len(operations) > 1:
                problems.append(f"{where}.rules.operations: '*' must be the only one")
            for key in ("apiGroups", "apiVersions", "resources"):
                if not rule[key]:
                    problems.append(f"{where}.rules.{key}: Required value")
            if rule.get("scope", "*") not in ("*", "Cluster", "Namespaced"):
                problems.append(f"{where}.rules.scope: Unsupported value")
        for selector in ("namespaceSelector", "objectSelector"):
            if not isinstance(webhook.get(selector, {}), dict):
                problems.append(f"{where}.{selector}: must be a label selector")
    return problems


class Conversion:
    crd_name = "widgets.example.com"

    async def review(self, review: Any) -> dict[str, Any]:
        return {}


def server() -> WebhookServer:
    webhooks = WebhookServer(WebhookOptions(address="127.0.0.1:0"))
    webhooks.validate(
        None,
        lambda request: None,
        group="example.com",
        version="v1",
        resource="widgets",
        kind="Widget",
        operations=["CREATE", "UPDATE", "DELETE"],
        failure_policy="Ignore",
        timeout_seconds=5,
        namespace_selector={"matchLabels": {"webhooks": "on"}},
    )
    webhooks.validate(
        "/validate-pods-exec",
        lambda request: None,
        rules=[
            Rule(
                operations=("CONNECT",),
                api_groups=("",),
                api_versions=("v1",),
                resources=("pods/exec",),
            )
        ],
        name="vexec.example.com",
        side_effects="NoneOnDryRun",
    )
    webhooks.mutate(
        None,
        lambda obj, request: None,
        group="example.com",
        version="v1",
        resource="widgets",
        kind="Widget",
        reinvocation_policy="IfNeeded",
        object_selector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
    )
    webhooks.add_conversion(Conversion())
    return webhooks


def test_a_server_gives_one_configuration_of_each_kind_and_a_conversion_patch() -> None:
    documents = webhook_manifests(
        server(), service=("ops", "widget-webhook", 443), ca_bundle=b"PEM"
    )
    assert [d["kind"] for d in documents] == [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "CustomResourceDefinition",
    ]
    validating, mutating, crd = documents
    assert validating["metadata"] == {"name": "validating-webhook-configuration"}
    assert mutating["metadata"] == {"name": "mutating-webhook-configuration"}
    first = validating["webhooks"][0]
    assert first == {
        "name": "vwidget.example.com",
        "admissionReviewVersions": ["v1"],
        "clientConfig": {
            "service": {
                "namespace": "ops",
                "name": "widget-webhook",
                "path": "/validate-example-com-v1-widget",
                "port": 443,
            },
            "caBundle": base64.b64encode(b"PEM").decode(),
        },
        "rules": [
            {
                "operations": ["CREATE", "UPDATE", "DELETE"],
                "apiGroups": ["example.com"],
                "apiVersions": ["v1"],
                "resources": ["widgets"],
                "scope": "*",
            }
        ],
        "failurePolicy": "Ignore",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": 5,
        "namespaceSelector": {"matchLabels": {"webhooks": "on"}},
        "objectSelector": {},
    }
    assert validating["webhooks"][1]["sideEffects"] == "NoneOnDryRun"
    assert validating["webhooks"][1]["rules"][0]["resources"] == ["pods/exec"]
    assert mutating["webhooks"][0]["name"] == "mwidget.example.com"
    assert mutating["webhooks"][0]["reinvocationPolicy"] == "IfNeeded"
    assert mutating["webhooks"][0]["clientConfig"]["service"]["path"] == (
        "/mutate-example-com-v1-widget"
    )
    assert crd["metadata"] == {"name": "widgets.example.com"}
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"
    assert crd["spec"]["conversion"]["webhook"]["conversionReviewVersions"] == ["v1"]
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"] == "/convert"


@pytest.mark.parametrize(
    "target",
    [{"service": ("ops", "widget-webhook", 8443)}, {"url": "https://10.0.0.5:9443/"}],
    ids=["service", "url"],
)
def test_the_configurations_pass_kube_apiservers_validation(target: dict[str, Any]) -> None:
    validating, mutating, _ = webhook_manifests(server(), **target)
    assert kube_refusals(validating) == []
    assert kube_refusals(mutating) == []
    ValidatingWebhookConfiguration.model_validate(validating)
    MutatingWebhookConfiguration.model_validate(mutating)


def test_the_checker_refuses_what_kube_apiserver_refuses() -> None:
    # Guards the checker above: a configuration it passed would prove nothing if it passed all.
    (validating, *_) = webhook_manifests(server(), url="https://example.com")
    broken = {**validating, "webhooks": [dict(validating["webhooks"][0])]}
    broken["webhooks"][0].update(
        name="vwidget", sideEffects="Some", timeoutSeconds=31, admissionReviewVersions=["v1beta1"]
    )
    assert len(kube_refusals(broken)) == 4


def test_a_url_gets_each_handlers_path_and_no_ca_bundle_unless_given() -> None:
    validating, _, crd = webhook_manifests(server(), url="https://10.0.0.5:9443/")
    assert validating["webhooks"][0]["clientConfig"] == {
        "url": "https://10.0.0.5:9443/validate-example-com-v1-widget"
    }
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"] == {
        "url": "https://10.0.0.5:9443/convert"
    }


def test_name_labels_and_annotations_go_on_both_configurations() -> None:
    documents = webhook_manifests(
        server(),
        service=("ops", "w", 443),
        name="widgets",
        labels={"app": "widgets"},
        annotations={"cert-manager.io/inject-ca-from": "ops/widget-cert"},
    )
    for document in documents[:2]:
        assert document["metadata"] == {
            "name": "widgets",
            "labels": {"app": "widgets"},
            "annotations": {"cert-manager.io/inject-ca-from": "ops/widget-cert"},
        }


def test_a_server_with_only_one_kind_gives_only_that_configuration() -> None:
    webhooks = WebhookServer()
    webhooks.validate(
        None, lambda request: None, group="", version="v1", resource="pods", kind="Pod"
    )
    (only,) = webhook_manifests(webhooks, service=("ops", "w", 443))
    assert only["kind"] == "ValidatingWebhookConfiguration"
    assert only["webhooks"][0]["name"] == "vpod.core.k8s.io"
    assert only["webhooks"][0]["clientConfig"]["service"]["path"] == "/validate--v1-pod"


def test_the_self_signed_ca_is_the_default_ca_bundle() -> None:
    pytest.importorskip("cryptography", reason="the self-signed pair needs cryptography")
    webhooks = WebhookServer(WebhookOptions(self_signed=("w.ops.svc",)))
    webhooks.validate(
        None, lambda request: None, group="", version="v1", resource="pods", kind="Pod"
    )
    (only,) = webhook_manifests(webhooks, service=("ops", "w", 443))
    assert webhooks.ca_bundle is not None
    assert base64.b64decode(only["webhooks"][0]["clientConfig"]["caBundle"]) == webhooks.ca_bundle


@pytest.mark.parametrize(
    ("target", "message"),
    [
        pytest.param({}, "exactly one", id="none"),
        pytest.param({"service": ("ops", "w", 443), "url": "https://x"}, "exactly one", id="both"),
        pytest.param({"service": ("", "w", 443)}, "namespace and a name", id="no-namespace"),
        pytest.param({"service": ("ops", "w", 0)}, "1..65535", id="port"),
        pytest.param({"url": "http://x"}, "https://", id="http"),
        pytest.param({"url": "https://x/?a=1"}, "without a query", id="query"),
    ],
)
def test_a_target_kube_apiserver_cannot_call_is_refused(
    target: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        webhook_manifests(server(), **target)


def test_a_server_with_nothing_registered_has_no_manifests() -> None:
    with pytest.raises(ValueError, match="nothing registered"):
        webhook_manifests(WebhookServer(), service=("ops", "w", 443))


def test_a_conversion_patch_alone() -> None:
    patch = conversion_patch("widgets.example.com", service=("ops", "w", 443), ca_bundle=b"C")
    assert patch["spec"]["conversion"]["webhook"]["clientConfig"] == {
        "service": {"namespace": "ops", "name": "w", "path": "/convert", "port": 443},
        "caBundle": base64.b64encode(b"C").decode(),
    }


# -- registration on a server --------------------------------------------------------------

WIDGET: dict[str, Any] = {"group": "example.com", "version": "v1", "resource": "widgets"}


def test_a_path_is_served_once() -> None:
    webhooks = WebhookServer()
    webhooks.validate("/w", lambda request: None, name="v1.example.com", **WIDGET)
    with pytest.raises(ValueError, match="already served"):
        webhooks.mutate("/w", lambda obj, request: None, name="m1.example.com", **WIDGET)
    with pytest.raises(ValueError, match="already served"):
        webhooks.add_conversion(Conversion(), "/w")


def test_a_name_is_used_once_per_kind_of_configuration() -> None:
    webhooks = WebhookServer()
    webhooks.validate("/a", lambda request: None, name="v.example.com", **WIDGET)
    webhooks.mutate("/b", lambda obj, request: None, name="v.example.com", **WIDGET)
    with pytest.raises(ValueError, match=r"named 'v\.example\.com' is registered"):
        webhooks.validate("/c", lambda request: None, name="v.example.com", **WIDGET)


def test_without_a_kind_the_resource_names_the_defaults() -> None:
    webhook = WebhookServer().validate(None, lambda request: None, **WIDGET)
    assert (webhook.path, webhook.name) == (
        "/validate-example-com-v1-widgets",
        "vwidgets.example.com",
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param({}, "needs rules=", id="nothing"),
        pytest.param({"group": "example.com", "version": "v1"}, "needs rules=", id="no-resource"),
        pytest.param({**WIDGET, "rules": [Rule()]}, "not both", id="both"),
        pytest.param({"rules": [Rule()]}, "give path= and name=", id="wildcards"),
        pytest.param({**WIDGET, "operations": ["PATCH"]}, "PATCH", id="operation"),
    ],
)
def test_a_registration_that_cannot_make_a_configuration_is_refused(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        WebhookServer().validate(None, lambda request: None, **settings)


def test_wildcard_rules_need_an_explicit_path_and_name() -> None:
    webhook = WebhookServer().validate(
        "/everything", lambda request: None, rules=[Rule(operations=("*",))], name="all.example.com"
    )
    assert webhook.rules[0].as_dict()["operations"] == ["*"]


def test_a_conversion_handler_must_be_one() -> None:
    with pytest.raises(TypeError, match="ConversionHandler"):
        WebhookServer().add_conversion(object())  # type: ignore[arg-type]


async def test_nothing_is_registered_once_started_idle_or_closed() -> None:
    webhooks = WebhookServer()
    await webhooks.start()
    assert webhooks.state is WebhookServerState.IDLE
    assert webhooks.address is None
    with pytest.raises(RuntimeError, match="register webhooks before it starts"):
        webhooks.validate(None, lambda request: None, **WIDGET)
    await webhooks.close()
    with pytest.raises(RuntimeError, match="closed"):
        webhooks.add_conversion(Conversion())
    with pytest.raises(RuntimeError, match="starts once"):
        await webhooks.start()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"address": "9443"}, "host:port", id="address"),
        pytest.param({"cert_dir": "/c", "self_signed": ("x",)}, "not both", id="both"),
        pytest.param({"cert_reload_interval": -1}, ">= 0", id="interval"),
        pytest.param({"cert_name": "a/b"}, "no '/'", id="cert-name"),
    ],
)
def test_webhook_options_are_checked(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WebhookOptions(**options)


def test_the_defaults_are_controller_runtimes() -> None:
    options = WebhookOptions()
    assert options.address == ":9443"
    assert (options.cert_name, options.key_name) == ("tls.crt", "tls.key")
    cert, key = WebhookServer(options).cert_files
    assert str(cert).endswith("k8s-webhook-server/serving-certs/tls.crt")
    assert key.name == "tls.key"
    assert WebhookServer(options).ca_bundle is None
