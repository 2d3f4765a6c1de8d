"""Which webhooks the fake API server calls for a request: rules, scope, selectors and
matchPolicy, as kube-apiserver's ``rules``, ``namespace`` and ``object`` matchers and
``ShouldCallHook`` decide (their table tests, ported)."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer._apiserver.objects import ResourceType, StatusError
from aioinformer.testing._admission_rules import Attributes, Webhook, rule_matches, should_call

PODS = ResourceType("", "v1", "pods", "Pod", True)
NAMESPACES = ResourceType("", "v1", "namespaces", "Namespace", False)
NODES = ResourceType("", "v1", "nodes", "Node", False)
DEPLOYMENTS = ResourceType("apps", "v1", "deployments", "Deployment", True)
WIDGETS_V1 = ResourceType("example.com", "v1", "widgets", "Widget", True)
WIDGETS_V2 = ResourceType("example.com", "v2", "widgets", "Widget", True)
CONFIGS = ResourceType(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    False,
)


def attrs(
    rt: ResourceType = PODS,
    *,
    operation: str = "CREATE",
    subresource: str = "",
    namespace: str = "default",
    name: str = "x",
    labels: dict[str, str] | None = None,
    old_labels: dict[str, str] | None = None,
) -> Attributes:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    obj = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": meta}
    old = None
    if old_labels is not None:
        old = {"metadata": {"name": name, "labels": old_labels}}
    return Attributes(
        operation,
        rt,
        subresource,
        name,
        namespace,
        None if operation == "DELETE" else obj,
        old,
        False,
        {},
        "system:admin",
    )


def rule(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "operations": ["*"],
        "apiGroups": ["*"],
        "apiVersions": ["*"],
        "resources": ["*/*"],
        "scope": "*",
    }
    base.update(fields)
    return base


def hook(*rules: dict[str, Any], **fields: Any) -> Webhook:
    spec: dict[str, Any] = {"name": "h.example.com", "rules": list(rules), **fields}
    return Webhook("config", False, spec)


NO_NAMESPACE_LABELS: dict[str, dict[str, str]] = {"default": {}}


def labels_of(namespaces: dict[str, dict[str, str]]) -> Any:
    return namespaces.get


@pytest.mark.parametrize(
    ("resources", "resource", "subresource", "matches"),
    [
        (["*"], "pods", "", True),
        (["*"], "pods", "status", False),
        (["*/*"], "pods", "status", True),
        (["*/*"], "pods", "", True),
        (["pods/*"], "pods", "status", True),
        # kube-apiserver's matcher: a wildcard subresource matches the main resource too.
        (["pods/*"], "pods", "", True),
        (["*/status"], "pods", "status", True),
        (["*/status"], "deployments", "status", True),
        (["*/status"], "pods", "log", False),
        (["pods/status"], "pods", "status", True),
        (["pods/status"], "pods", "", False),
        (["pods"], "pods", "status", False),
        (["pods"], "deployments", "", False),
    ],
)
def test_a_rule_matches_resources_and_subresources_as_kube_apiserver_does(
    resources: list[str], resource: str, subresource: str, matches: bool
) -> None:
    rt = PODS if resource == "pods" else ResourceType("", "v1", resource, "X", True)
    request = attrs(rt, operation="UPDATE", subresource=subresource)
    assert rule_matches(rule(resources=resources), request, rt) is matches


@pytest.mark.parametrize(
    ("field", "values", "matches"),
    [
        ("operations", ["CREATE"], True),
        ("operations", ["UPDATE", "DELETE"], False),
        ("apiGroups", [""], True),
        ("apiGroups", ["apps"], False),
        ("apiVersions", ["v1"], True),
        ("apiVersions", ["v1beta1"], False),
    ],
)
def test_a_rule_matches_operations_groups_and_versions(
    field: str, values: list[str], matches: bool
) -> None:
    assert rule_matches(rule(**{field: values}), attrs(), PODS) is matches


@pytest.mark.parametrize(
    ("scope", "rt", "namespace", "matches"),
    [
        ("*", PODS, "default", True),
        ("*", NODES, "", True),
        ("Namespaced", PODS, "default", True),
        ("Namespaced", NODES, "", False),
        ("Cluster", NODES, "", True),
        ("Cluster", PODS, "default", False),
        # A Namespace is cluster-scoped, though its requests name it as their namespace.
        ("Cluster", NAMESPACES, "team-a", True),
        ("Namespaced", NAMESPACES, "team-a", False),
    ],
)
def test_a_rules_scope_tells_namespaced_from_cluster_requests(
    scope: str, rt: ResourceType, namespace: str, matches: bool
) -> None:
    request = attrs(rt, namespace=namespace)
    assert rule_matches(rule(scope=scope), request, rt) is matches


def test_a_webhook_applies_when_any_rule_matches() -> None:
    webhook = hook(rule(apiGroups=["apps"]), rule(apiGroups=[""]))
    invocation = should_call(webhook, attrs(), namespace_labels=labels_of(NO_NAMESPACE_LABELS))
    assert invocation is not None
    assert invocation.rt == PODS


def test_no_rule_no_call() -> None:
    assert should_call(hook(), attrs(), namespace_labels=labels_of(NO_NAMESPACE_LABELS)) is None


def test_admissionregistration_objects_are_exempt() -> None:
    request = attrs(CONFIGS, namespace="")
    assert should_call(hook(rule()), request, namespace_labels=labels_of({})) is None


@pytest.mark.parametrize(
    ("selector", "namespace_labels", "called"),
    [
        ({}, {}, True),
        ({"matchLabels": {"env": "prod"}}, {"env": "prod"}, True),
        ({"matchLabels": {"env": "prod"}}, {"env": "dev"}, False),
        ({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}, {}, True),
        ({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}, {"skip": ""}, False),
        (
            {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]},
            {"env": "prod"},
            True,
        ),
    ],
)
def test_a_namespace_selector_reads_the_namespaces_labels(
    selector: dict[str, Any], namespace_labels: dict[str, str], called: bool
) -> None:
    webhook = hook(rule(), namespaceSelector=selector)
    invocation = should_call(
        webhook, attrs(), namespace_labels=labels_of({"default": namespace_labels})
    )
    assert (invocation is not None) is called


def test_a_cluster_scoped_object_always_matches_a_namespace_selector() -> None:
    webhook = hook(rule(), namespaceSelector={"matchLabels": {"env": "prod"}})
    request = attrs(NODES, namespace="")
    assert should_call(webhook, request, namespace_labels=labels_of({})) is not None


def test_a_namespace_being_created_matches_on_its_own_labels() -> None:
    webhook = hook(rule(), namespaceSelector={"matchLabels": {"env": "prod"}})
    created = attrs(NAMESPACES, namespace="", name="team-a", labels={"env": "prod"})
    assert should_call(webhook, created, namespace_labels=labels_of({})) is not None
    other = attrs(NAMESPACES, namespace="", name="team-b", labels={"env": "dev"})
    assert should_call(webhook, other, namespace_labels=labels_of({})) is None


def test_a_namespace_being_deleted_matches_on_its_stored_labels() -> None:
    webhook = hook(rule(), namespaceSelector={"matchLabels": {"env": "prod"}})
    deleted = attrs(NAMESPACES, operation="DELETE", namespace="team-a", name="team-a")
    stored = {"team-a": {"env": "prod"}}
    assert should_call(webhook, deleted, namespace_labels=labels_of(stored)) is not None


def test_a_missing_namespace_answers_404_only_when_a_rule_matches() -> None:
    selector = {"matchLabels": {"env": "prod"}}
    request = attrs(namespace="gone")
    matching = hook(rule(), namespaceSelector=selector)
    with pytest.raises(StatusError) as caught:
        should_call(matching, request, namespace_labels=labels_of({}))
    assert caught.value.status["message"] == 'namespaces "gone" not found'
    assert caught.value.code == 404
    unrelated = hook(rule(apiGroups=["apps"]), namespaceSelector=selector)
    assert should_call(unrelated, request, namespace_labels=labels_of({})) is None


@pytest.mark.parametrize(
    ("labels", "old_labels", "called"),
    [
        ({"app": "web"}, None, True),
        ({"app": "db"}, None, False),
        ({"app": "db"}, {"app": "web"}, True),
        (None, None, False),
    ],
)
def test_an_object_selector_reads_the_object_or_the_old_object(
    labels: dict[str, str] | None, old_labels: dict[str, str] | None, called: bool
) -> None:
    webhook = hook(rule(), objectSelector={"matchLabels": {"app": "web"}})
    request = attrs(operation="UPDATE", labels=labels, old_labels=old_labels)
    invocation = should_call(webhook, request, namespace_labels=labels_of(NO_NAMESPACE_LABELS))
    assert (invocation is not None) is called


def test_a_delete_matches_an_object_selector_on_the_old_object() -> None:
    webhook = hook(rule(), objectSelector={"matchLabels": {"app": "web"}})
    request = attrs(operation="DELETE", old_labels={"app": "web"})
    assert should_call(webhook, request, namespace_labels=labels_of(NO_NAMESPACE_LABELS))


def test_match_policy_equivalent_sends_the_version_a_rule_names() -> None:
    webhook = hook(rule(apiVersions=["v2"]), matchPolicy="Equivalent")
    request = attrs(WIDGETS_V1)
    invocation = should_call(
        webhook,
        request,
        namespace_labels=labels_of(NO_NAMESPACE_LABELS),
        equivalents=[WIDGETS_V1, WIDGETS_V2],
    )
    assert invocation is not None
    assert invocation.rt == WIDGETS_V2


def test_match_policy_exact_ignores_other_versions() -> None:
    webhook = hook(rule(apiVersions=["v2"]), matchPolicy="Exact")
    invocation = should_call(
        webhook,
        attrs(WIDGETS_V1),
        namespace_labels=labels_of(NO_NAMESPACE_LABELS),
        equivalents=[WIDGETS_V1, WIDGETS_V2],
    )
    assert invocation is None


def test_an_exact_match_is_preferred_to_an_equivalent_one() -> None:
    webhook = hook(rule(apiVersions=["v2"]), rule(apiVersions=["v1"]))
    invocation = should_call(
        webhook,
        attrs(WIDGETS_V1),
        namespace_labels=labels_of(NO_NAMESPACE_LABELS),
        equivalents=[WIDGETS_V1, WIDGETS_V2],
    )
    assert invocation is not None
    assert invocation.rt == WIDGETS_V1


def test_the_webhooks_timeout_defaults_to_ten_seconds() -> None:
    assert hook().timeout == 10.0
    assert hook(timeoutSeconds=3).timeout == 3.0
    assert hook(failurePolicy="Ignore").ignores_failures
    assert not hook(failurePolicy="Fail").ignores_failures
