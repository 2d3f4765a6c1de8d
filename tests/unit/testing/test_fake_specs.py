"""The fake API server's spec validation: each rule refuses what kube-apiserver v1.36
refuses, with its field path and message, and admits what it admits.

The cases follow those of kube-apiserver's own validation tests
(``pkg/apis/core/validation``, ``pkg/apis/apps/validation``, ``pkg/apis/batch/validation``),
written anew as tables of (object, expected causes)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from aioinformer.errors import BadRequest, UnprocessableEntity
from aioinformer.testing import FakeAPIServer
from tests._support_objects import IMAGE, deployment, pod, pod_spec

LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
PORT_RANGE = "must be between 1 and 65535, inclusive"
MISMATCH = "`selector` does not match template `labels`"
SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')"
)
NEGATIVE = "must be greater than or equal to 0"
LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
KEY_MESSAGE = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)


@dataclass(frozen=True)
class Case:
    """An object and the causes (reason, field, message) its create answers with."""

    id: str
    obj: dict[str, Any]
    causes: list[tuple[str, str, str]]


def containers(*items: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"containers": list(items), **fields}


def workload(kind: str, spec: dict[str, Any], name: str = "w") -> dict[str, Any]:
    group = "batch/v1" if kind == "Job" else "apps/v1"
    return {
        "apiVersion": group,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def template(labels: dict[str, str] | None, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {"labels": labels} if labels is not None else {}
    return {"metadata": meta, "spec": spec if spec is not None else pod_spec()}


def selected(app: str = "web", **spec: Any) -> dict[str, Any]:
    """A workload spec whose selector matches its template."""
    return {
        "selector": {"matchLabels": {"app": app}},
        "template": template({"app": app}),
        **spec,
    }


def service(*ports: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc", "namespace": "default"},
        "spec": {"ports": list(ports), **spec},
    }


def config_map(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default"},
        "data": data,
    }


def secret(kind: str | None = None, **fields: Any) -> dict[str, Any]:
    typed = {"type": kind} if kind is not None else {}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        **typed,
        **fields,
    }


def job(restart: str | None, **spec: Any) -> dict[str, Any]:
    fields = {"restartPolicy": restart} if restart is not None else {}
    return workload("Job", {"template": template(None, pod_spec(**fields)), **spec}, "j")


REQ = "FieldValueRequired"
INV = "FieldValueInvalid"
DUP = "FieldValueDuplicate"
UNS = "FieldValueNotSupported"
FORB = "FieldValueForbidden"

INVALID = [
    # -- Pod -----------------------------------------------------------------------------
    Case("pod-without-spec", pod("p", spec={}), [(REQ, "spec.containers", "Required value")]),
    Case(
        "pod-with-empty-containers",
        pod("p", spec=containers()),
        [(REQ, "spec.containers", "Required value")],
    ),
    Case(
        "container-without-name-or-image",
        pod("p", spec=containers({})),
        [
            (REQ, "spec.containers[0].name", "Required value"),
            (REQ, "spec.containers[0].image", "Required value"),
        ],
    ),
    Case(
        "container-name-not-a-label",
        pod("p", spec=containers({"name": "Web_1", "image": IMAGE})),
        [(INV, "spec.containers[0].name", f'Invalid value: "Web_1": {LABEL_MESSAGE}')],
    ),
    Case(
        "container-name-with-dots",
        pod("p", spec=containers({"name": "a.b", "image": IMAGE})),
        [(INV, "spec.containers[0].name", 'Invalid value: "a.b": must not contain dots')],
    ),
    Case(
        "duplicate-container-names",
        pod("p", spec=containers({"name": "a", "image": IMAGE}, {"name": "a", "image": IMAGE})),
        [(DUP, "spec.containers[1].name", 'Duplicate value: "a"')],
    ),
    Case(
        "init-container-reusing-a-container-name",
        pod(
            "p",
            spec=containers(
                {"name": "a", "image": IMAGE}, initContainers=[{"name": "a", "image": IMAGE}]
            ),
        ),
        [(DUP, "spec.initContainers[0].name", 'Duplicate value: "a"')],
    ),
    Case(
        "init-container-without-image",
        pod("p", spec=containers({"name": "a", "image": IMAGE}, initContainers=[{"name": "i"}])),
        [(REQ, "spec.initContainers[0].image", "Required value")],
    ),
    Case(
        "container-port-zero",
        pod("p", spec=containers({"name": "a", "image": IMAGE, "ports": [{}]})),
        [(REQ, "spec.containers[0].ports[0].containerPort", "Required value")],
    ),
    Case(
        "container-port-out-of-range",
        pod(
            "p",
            spec=containers({"name": "a", "image": IMAGE, "ports": [{"containerPort": 65536}]}),
        ),
        [(INV, "spec.containers[0].ports[0].containerPort", f"Invalid value: 65536: {PORT_RANGE}")],
    ),
    Case(
        "host-port-negative",
        pod(
            "p",
            spec=containers(
                {"name": "a", "image": IMAGE, "ports": [{"containerPort": 80, "hostPort": -1}]}
            ),
        ),
        [(INV, "spec.containers[0].ports[0].hostPort", f"Invalid value: -1: {PORT_RANGE}")],
    ),
    Case(
        "port-protocol-unknown",
        pod(
            "p",
            spec=containers(
                {"name": "a", "image": IMAGE, "ports": [{"containerPort": 80, "protocol": "HTTP"}]}
            ),
        ),
        [
            (
                UNS,
                "spec.containers[0].ports[0].protocol",
                'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
            )
        ],
    ),
    Case(
        "port-names-invalid-and-duplicate",
        pod(
            "p",
            spec=containers(
                {
                    "name": "a",
                    "image": IMAGE,
                    "ports": [
                        {"containerPort": 80, "name": "http"},
                        {"containerPort": 81, "name": "http"},
                        {"containerPort": 82, "name": "-9"},
                    ],
                }
            ),
        ),
        [
            (DUP, "spec.containers[0].ports[1].name", 'Duplicate value: "http"'),
            (
                INV,
                "spec.containers[0].ports[2].name",
                'Invalid value: "-9": must contain at least one letter (a-z)',
            ),
            (
                INV,
                "spec.containers[0].ports[2].name",
                'Invalid value: "-9": must not begin or end with a hyphen',
            ),
        ],
    ),
    Case(
        "container-name-too-long",
        pod("p", spec=containers({"name": "a" * 64, "image": IMAGE})),
        [
            (
                INV,
                "spec.containers[0].name",
                f'Invalid value: "{"a" * 64}": must be no more than 63 characters',
            )
        ],
    ),
    Case(
        "two-nameless-containers-are-a-duplicate-too",
        pod("p", spec=containers({"image": IMAGE}, {"image": IMAGE})),
        [
            (REQ, "spec.containers[0].name", "Required value"),
            (REQ, "spec.containers[1].name", "Required value"),
            (DUP, "spec.containers[1].name", 'Duplicate value: ""'),
        ],
    ),
    Case(
        "two-nameless-init-containers-are-not-a-duplicate",
        pod(
            "p",
            spec=containers(
                {"name": "a", "image": IMAGE}, initContainers=[{"image": IMAGE}, {"image": IMAGE}]
            ),
        ),
        [
            (REQ, "spec.initContainers[0].name", "Required value"),
            (REQ, "spec.initContainers[1].name", "Required value"),
        ],
    ),
    Case(
        "init-containers-reusing-each-others-name",
        pod(
            "p",
            spec=containers(
                {"name": "a", "image": IMAGE},
                initContainers=[{"name": "i", "image": IMAGE}, {"name": "i", "image": IMAGE}],
            ),
        ),
        [(DUP, "spec.initContainers[1].name", 'Duplicate value: "i"')],
    ),
    Case(
        "port-names-each-iana-rule",
        pod(
            "p",
            spec=containers(
                {
                    "name": "a",
                    "image": IMAGE,
                    "ports": [
                        {"containerPort": 80, "name": "a-very-long-port-name"},
                        {"containerPort": 81, "name": "a--b"},
                        {"containerPort": 82, "name": "web_1"},
                        {"containerPort": 83, "name": "8080"},
                    ],
                }
            ),
        ),
        [
            (
                INV,
                "spec.containers[0].ports[0].name",
                'Invalid value: "a-very-long-port-name": must be no more than 15 characters',
            ),
            (
                INV,
                "spec.containers[0].ports[1].name",
                'Invalid value: "a--b": must not contain consecutive hyphens',
            ),
            (
                INV,
                "spec.containers[0].ports[2].name",
                'Invalid value: "web_1": must contain only alpha-numeric characters (a-z, 0-9), '
                "and hyphens (-)",
            ),
            (
                INV,
                "spec.containers[0].ports[3].name",
                'Invalid value: "8080": must contain at least one letter (a-z)',
            ),
        ],
    ),
    Case(
        "an-invalid-port-name-is-not-also-a-duplicate",
        pod(
            "p",
            spec=containers(
                {
                    "name": "a",
                    "image": IMAGE,
                    "ports": [{"containerPort": 80, "name": "a--b"}] * 2,
                }
            ),
        ),
        [
            (
                INV,
                f"spec.containers[0].ports[{i}].name",
                'Invalid value: "a--b": must not contain consecutive hyphens',
            )
            for i in range(2)
        ],
    ),
    Case(
        "host-port-too-high",
        pod(
            "p",
            spec=containers(
                {"name": "a", "image": IMAGE, "ports": [{"containerPort": 1, "hostPort": 65536}]}
            ),
        ),
        [(INV, "spec.containers[0].ports[0].hostPort", f"Invalid value: 65536: {PORT_RANGE}")],
    ),
    Case(
        "container-policies-unknown",
        pod(
            "p",
            spec=containers(
                {
                    "name": "a",
                    "image": IMAGE,
                    "terminationMessagePolicy": "Stderr",
                    "ports": [{}],
                    "imagePullPolicy": "Sometimes",
                }
            ),
        ),
        [
            (
                UNS,
                "spec.containers[0].terminationMessagePolicy",
                'Unsupported value: "Stderr": supported values: "File", "FallbackToLogsOnError"',
            ),
            (REQ, "spec.containers[0].ports[0].containerPort", "Required value"),
            (
                UNS,
                "spec.containers[0].imagePullPolicy",
                'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", '
                '"Never"',
            ),
        ],
    ),
    Case(
        "pod-image-with-surrounding-space-after-the-spec",
        pod(
            "p",
            spec=containers(
                {"name": "a", "image": " " + IMAGE},
                initContainers=[{"name": "i", "image": IMAGE + " "}],
                restartPolicy="Sometimes",
            ),
        ),
        [
            (
                UNS,
                "spec.restartPolicy",
                'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
            ),
            (
                INV,
                "spec.containers[0].image",
                f'Invalid value: " {IMAGE}": must not have leading or trailing whitespace',
            ),
            (
                INV,
                "spec.initContainers[0].image",
                f'Invalid value: "{IMAGE} ": must not have leading or trailing whitespace',
            ),
        ],
    ),
    Case(
        "pod-names-and-deadline-in-order",
        pod(
            "p",
            spec=pod_spec(
                hostname="Web",
                activeDeadlineSeconds=0,
                nodeName="node_1",
                serviceAccountName="a..b",
                nodeSelector={"disk": "ssd!"},
                dnsPolicy="Cluster",
                subdomain="a.b",
            ),
        ),
        [
            (
                UNS,
                "spec.dnsPolicy",
                'Unsupported value: "Cluster": supported values: "ClusterFirstWithHostNet", '
                '"ClusterFirst", "Default", "None"',
            ),
            (INV, "spec.nodeSelector", f'Invalid value: "ssd!": {LABEL_VALUE_MESSAGE}'),
            (INV, "spec.serviceAccountName", f'Invalid value: "a..b": {SUBDOMAIN_MESSAGE}'),
            (INV, "spec.nodeName", f'Invalid value: "node_1": {SUBDOMAIN_MESSAGE}'),
            (
                INV,
                "spec.activeDeadlineSeconds",
                "Invalid value: 0: must be between 1 and 2147483647, inclusive",
            ),
            (INV, "spec.hostname", f'Invalid value: "Web": {LABEL_MESSAGE}'),
            (INV, "spec.subdomain", 'Invalid value: "a.b": must not contain dots'),
        ],
    ),
    Case(
        "restart-policy-unknown",
        pod("p", spec=pod_spec(restartPolicy="Sometimes")),
        [
            (
                UNS,
                "spec.restartPolicy",
                'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
            )
        ],
    ),
    # -- Deployment, ReplicaSet, StatefulSet ---------------------------------------------
    Case(
        "deployment-without-selector",
        workload("Deployment", {"template": template({"app": "web"})}),
        [
            (REQ, "spec.selector", "Required value"),
            (INV, "spec.template.metadata.labels", f'Invalid value: {{"app":"web"}}: {MISMATCH}'),
        ],
    ),
    Case(
        "deployment-without-template",
        workload("Deployment", {"selector": {"matchLabels": {"app": "web"}}}),
        [
            (INV, "spec.template.metadata.labels", f"Invalid value: null: {MISMATCH}"),
            (REQ, "spec.template.spec.containers", "Required value"),
        ],
    ),
    Case(
        "deployment-selector-not-matching",
        workload(
            "Deployment",
            {"selector": {"matchLabels": {"app": "db"}}, "template": template({"app": "web"})},
        ),
        [(INV, "spec.template.metadata.labels", f'Invalid value: {{"app":"web"}}: {MISMATCH}')],
    ),
    Case(
        "deployment-empty-selector",
        workload("Deployment", {"selector": {}, "template": template({"app": "web"})}),
        [(INV, "spec.selector", "Invalid value: {}: empty selector is invalid for deployment")],
    ),
    Case(
        "deployment-negative-replicas",
        workload("Deployment", selected(replicas=-1)),
        [(INV, "spec.replicas", "Invalid value: -1: must be greater than or equal to 0")],
    ),
    Case(
        "deployment-template-container-without-image",
        workload(
            "Deployment",
            {
                "selector": {"matchLabels": {"app": "web"}},
                "template": template({"app": "web"}, containers({"name": "web"})),
            },
        ),
        [(REQ, "spec.template.spec.containers[0].image", "Required value")],
    ),
    Case(
        "deployment-template-restart-never",
        workload(
            "Deployment",
            {
                "selector": {"matchLabels": {"app": "web"}},
                "template": template({"app": "web"}, pod_spec(restartPolicy="Never")),
            },
        ),
        [
            (
                UNS,
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Never": supported values: "Always"',
            )
        ],
    ),
    Case(
        "deployment-selector-bad-operator",
        workload(
            "Deployment",
            {
                "selector": {"matchExpressions": [{"key": "app", "operator": "Is"}]},
                "template": template({"app": "web"}),
            },
        ),
        [
            (
                INV,
                "spec.selector.matchExpressions[0].operator",
                'Invalid value: "Is": not a valid selector operator',
            ),
            (
                INV,
                "spec.selector",
                'Invalid value: {"matchExpressions":[{"key":"app","operator":"Is"}]}: '
                "invalid label selector",
            ),
        ],
    ),
    Case(
        "deployment-selector-in-without-values",
        workload(
            "Deployment",
            {
                "selector": {"matchExpressions": [{"key": "app", "operator": "In"}]},
                "template": template({"app": "web"}),
            },
        ),
        [
            (
                REQ,
                "spec.selector.matchExpressions[0].values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ),
            (
                INV,
                "spec.selector",
                'Invalid value: {"matchExpressions":[{"key":"app","operator":"In"}]}: '
                "invalid label selector",
            ),
        ],
    ),
    Case(
        "deployment-selector-exists-with-values",
        workload(
            "Deployment",
            {
                "selector": {
                    "matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]
                },
                "template": template({"app": "web"}),
            },
        ),
        [
            (
                FORB,
                "spec.selector.matchExpressions[0].values",
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            (
                INV,
                "spec.selector",
                'Invalid value: {"matchExpressions":[{"key":"app","operator":"Exists",'
                '"values":["x"]}]}: invalid label selector',
            ),
        ],
    ),
    Case(
        "deployment-selector-shown-in-go-field-order",
        workload(
            "Deployment",
            {
                "selector": {
                    "matchExpressions": [{"key": "tier", "operator": "Is", "values": []}],
                    "matchLabels": {"app": "web"},
                },
                "template": template({"app": "web"}),
            },
        ),
        [
            (
                INV,
                "spec.selector.matchExpressions[0].operator",
                'Invalid value: "Is": not a valid selector operator',
            ),
            (
                INV,
                "spec.selector",
                'Invalid value: {"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier",'
                '"operator":"Is"}]}: invalid label selector',
            ),
        ],
    ),
    Case(
        "deployment-template-unchecked-under-a-selector-that-does-not-parse",
        workload(
            "Deployment",
            {
                "selector": {"matchExpressions": [{"key": "app", "operator": "In"}]},
                "template": template({}, {"restartPolicy": "Never"}),
            },
        ),
        [
            (
                REQ,
                "spec.selector.matchExpressions[0].values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ),
            (
                INV,
                "spec.selector",
                'Invalid value: {"matchExpressions":[{"key":"app","operator":"In"}]}: '
                "invalid label selector",
            ),
        ],
    ),
    Case(
        "deployment-selector-label-value-too-long",
        workload(
            "Deployment",
            {"selector": {"matchLabels": {"app": "x" * 64}}, "template": template({"app": "a"})},
        ),
        [
            (
                INV,
                "spec.selector.matchLabels",
                f'Invalid value: "{"x" * 64}": must be no more than 63 bytes',
            ),
            (
                INV,
                "spec.selector",
                f'Invalid value: {{"matchLabels":{{"app":"{"x" * 64}"}}}}: invalid label selector',
            ),
        ],
    ),
    Case(
        "deployment-negative-counts-after-the-template",
        workload(
            "Deployment",
            selected(minReadySeconds=-1, revisionHistoryLimit=-2, progressDeadlineSeconds=0),
        ),
        [
            (INV, "spec.minReadySeconds", f"Invalid value: -1: {NEGATIVE}"),
            (INV, "spec.revisionHistoryLimit", f"Invalid value: -2: {NEGATIVE}"),
        ],
    ),
    Case(
        "deployment-progress-deadline-within-min-ready",
        workload("Deployment", selected(minReadySeconds=30, progressDeadlineSeconds=30)),
        [
            (
                INV,
                "spec.progressDeadlineSeconds",
                "Invalid value: 30: must be greater than minReadySeconds",
            )
        ],
    ),
    Case(
        "replicaset-min-ready-before-the-selector",
        workload("ReplicaSet", {"minReadySeconds": -5, "template": template({"app": "web"})}),
        [
            (INV, "spec.minReadySeconds", f"Invalid value: -5: {NEGATIVE}"),
            (REQ, "spec.selector", "Required value"),
            (INV, "spec.template.metadata.labels", f'Invalid value: {{"app":"web"}}: {MISMATCH}'),
        ],
    ),
    Case(
        # A string is shown as Go's %q shows it, a map as encoding/json writes it (which
        # escapes <, > and &).
        "bad-values-shown-as-go-shows-them",
        workload(
            "Deployment",
            {
                "selector": {"matchLabels": {"app": "web"}},
                "template": template({"app": "a<b", "tier": "x\x00"}),
            },
        ),
        [
            (
                INV,
                "spec.template.metadata.labels",
                f'Invalid value: {{"app":"a\\u003cb","tier":"x\\u0000"}}: {MISMATCH}',
            ),
            (INV, "spec.template.labels", f'Invalid value: "a<b": {LABEL_VALUE_MESSAGE}'),
            (INV, "spec.template.labels", f'Invalid value: "x\\x00": {LABEL_VALUE_MESSAGE}'),
        ],
    ),
    Case(
        "deployment-template-with-a-deadline-worded-as-a-replicasets",
        workload(
            "Deployment",
            {
                "selector": {"matchLabels": {"app": "web"}},
                "template": template({"app": "web"}, pod_spec(activeDeadlineSeconds=30)),
            },
        ),
        [
            (
                FORB,
                "spec.template.spec.activeDeadlineSeconds",
                "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
            )
        ],
    ),
    Case(
        "statefulset-template-with-a-deadline",
        workload(
            "StatefulSet",
            {
                "selector": {"matchLabels": {"app": "web"}},
                "template": template({"app": "web"}, {"activeDeadlineSeconds": 0}),
            },
        ),
        [
            (
                FORB,
                "spec.template.spec.activeDeadlineSeconds",
                "Forbidden: activeDeadlineSeconds in StatefulSet is not Supported",
            )
        ],
    ),
    Case(
        "replicaset-without-selector",
        workload("ReplicaSet", {"template": template({"app": "web"})}),
        [
            (REQ, "spec.selector", "Required value"),
            (INV, "spec.template.metadata.labels", f'Invalid value: {{"app":"web"}}: {MISMATCH}'),
        ],
    ),
    Case(
        "replicaset-empty-selector-words-it-as-a-deployment",
        workload("ReplicaSet", {"selector": {}, "template": template({"app": "web"})}),
        [(INV, "spec.selector", "Invalid value: {}: empty selector is invalid for deployment")],
    ),
    Case(
        "statefulset-selector-not-matching",
        workload(
            "StatefulSet",
            {"selector": {"matchLabels": {"app": "db"}}, "template": template({"app": "web"})},
        ),
        [(INV, "spec.template.metadata.labels", f'Invalid value: {{"app":"web"}}: {MISMATCH}')],
    ),
    Case(
        "statefulset-empty-selector",
        workload("StatefulSet", {"selector": {}, "template": template({"app": "web"})}),
        [(INV, "spec.selector", "Invalid value: {}: empty selector is invalid for statefulset")],
    ),
    Case(
        "statefulset-selector-that-does-not-parse-has-no-detail",
        workload(
            "StatefulSet",
            {
                "selector": {"matchExpressions": [{"key": "app", "operator": "Is"}]},
                "template": template({"app": "web"}, pod_spec(restartPolicy="Never")),
            },
        ),
        [
            (
                INV,
                "spec.selector.matchExpressions[0].operator",
                'Invalid value: "Is": not a valid selector operator',
            ),
            (
                INV,
                "spec.selector",
                'Invalid value: {"matchExpressions":[{"key":"app","operator":"Is"}]}',
            ),
            (
                UNS,
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Never": supported values: "Always"',
            ),
        ],
    ),
    Case(
        "statefulset-name-is-a-dns-label",
        workload("StatefulSet", selected(), name="web.v1"),
        [(INV, "metadata.name", 'Invalid value: "web.v1": must not contain dots')],
    ),
    Case(
        "statefulset-negative-min-ready",
        workload("StatefulSet", selected(replicas=-1, minReadySeconds=-1)),
        [
            (INV, "spec.replicas", f"Invalid value: -1: {NEGATIVE}"),
            (INV, "spec.minReadySeconds", f"Invalid value: -1: {NEGATIVE}"),
        ],
    ),
    Case(
        "statefulset-pod-management-policy",
        workload("StatefulSet", selected(podManagementPolicy="Random")),
        [
            (
                INV,
                "spec.podManagementPolicy",
                "Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
            )
        ],
    ),
    # -- DaemonSet ---------------------------------------------------------------------
    Case(
        "daemonset-without-selector-matches-nothing",
        workload("DaemonSet", {"template": template({"app": "web"})}),
        [(INV, "spec.template.metadata.labels", f'Invalid value: {{"app":"web"}}: {MISMATCH}')],
    ),
    Case(
        "daemonset-empty-selector",
        workload("DaemonSet", {"selector": {}, "template": template({"app": "web"})}),
        [(INV, "spec.selector", "Invalid value: {}: empty selector is invalid for daemonset")],
    ),
    Case(
        "daemonset-negative-counts-after-the-template",
        workload("DaemonSet", selected(minReadySeconds=-1, revisionHistoryLimit=-1)),
        [
            (INV, "spec.minReadySeconds", f"Invalid value: -1: {NEGATIVE}"),
            (INV, "spec.revisionHistoryLimit", f"Invalid value: -1: {NEGATIVE}"),
        ],
    ),
    Case(
        "daemonset-template-without-containers",
        workload(
            "DaemonSet",
            {"selector": {"matchLabels": {"app": "a"}}, "template": template({"app": "a"}, {})},
        ),
        [(REQ, "spec.template.spec.containers", "Required value")],
    ),
    # -- Job ---------------------------------------------------------------------------
    Case(
        "job-restart-policy-unset",
        job(None),
        [
            (
                REQ,
                "spec.template.spec.restartPolicy",
                'Required value: valid values: "OnFailure", "Never"',
            )
        ],
    ),
    Case(
        "job-restart-policy-always",
        job("Always"),
        [
            (
                REQ,
                "spec.template.spec.restartPolicy",
                'Required value: valid values: "OnFailure", "Never"',
            )
        ],
    ),
    Case(
        "job-negative-counts",
        job("Never", parallelism=-1, completions=-2, backoffLimit=-3),
        [
            (INV, "spec.parallelism", "Invalid value: -1: must be greater than or equal to 0"),
            (INV, "spec.completions", "Invalid value: -2: must be greater than or equal to 0"),
            (INV, "spec.backoffLimit", "Invalid value: -3: must be greater than or equal to 0"),
        ],
    ),
    Case(
        "job-restart-policy-unknown-twice",
        job("Sometimes"),
        [
            (
                UNS,
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
            ),
            (
                UNS,
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Sometimes": supported values: "OnFailure", "Never"',
            ),
        ],
    ),
    Case(
        "job-negative-ttl",
        job("Never", ttlSecondsAfterFinished=-1),
        [(INV, "spec.ttlSecondsAfterFinished", f"Invalid value: -1: {NEGATIVE}")],
    ),
    Case(
        "job-manual-selector-missing",
        workload(
            "Job",
            {
                "manualSelector": True,
                "template": template({"app": "j"}, pod_spec(restartPolicy="Never")),
            },
            "j",
        ),
        [
            (REQ, "spec.selector", "Required value"),
            (INV, "spec.template.metadata.labels", f'Invalid value: {{"app":"j"}}: {MISMATCH}'),
        ],
    ),
    Case(
        "job-manual-selector-that-does-not-parse-is-not-compared",
        workload(
            "Job",
            {
                "manualSelector": True,
                "selector": {"matchExpressions": [{"key": "app", "operator": "Is"}]},
                "template": template({"app": "j"}, pod_spec(restartPolicy="Never")),
            },
            "j",
        ),
        [
            (
                INV,
                "spec.selector.matchExpressions[0].operator",
                'Invalid value: "Is": not a valid selector operator',
            )
        ],
    ),
    Case(
        "job-template-without-containers",
        workload("Job", {"template": {"spec": {"restartPolicy": "Never"}}}, "j"),
        [(REQ, "spec.template.spec.containers", "Required value")],
    ),
    # -- Service -----------------------------------------------------------------------
    Case("service-without-ports", service(), [(REQ, "spec.ports", "Required value")]),
    Case(
        "service-port-zero-defaults-the-target-port-too",
        service({}),
        [
            (INV, "spec.ports[0].port", f"Invalid value: 0: {PORT_RANGE}"),
            (INV, "spec.ports[0].targetPort", f"Invalid value: 0: {PORT_RANGE}"),
        ],
    ),
    Case(
        "service-port-names-required-past-one",
        service({"port": 80}, {"port": 81}),
        [
            (REQ, "spec.ports[0].name", "Required value"),
            (REQ, "spec.ports[1].name", "Required value"),
        ],
    ),
    Case(
        "service-port-names-unique",
        service({"port": 80, "name": "web"}, {"port": 81, "name": "web"}),
        [(DUP, "spec.ports[1].name", 'Duplicate value: "web"')],
    ),
    Case(
        "service-port-name-not-a-label",
        service({"port": 80, "name": "Web"}),
        [(INV, "spec.ports[0].name", f'Invalid value: "Web": {LABEL_MESSAGE}')],
    ),
    Case(
        "service-protocol-unknown",
        service({"port": 80, "protocol": "tcp"}),
        [
            (
                UNS,
                "spec.ports[0].protocol",
                'Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP"',
            )
        ],
    ),
    Case(
        # An enum's value is written by encoding/json, a plain string's by %q.
        "service-enum-and-string-values-shown-apart",
        service({"port": 80, "protocol": "<tcp>", "name": "<web>"}),
        [
            (INV, "spec.ports[0].name", f'Invalid value: "<web>": {LABEL_MESSAGE}'),
            (
                UNS,
                "spec.ports[0].protocol",
                'Unsupported value: "\\u003ctcp\\u003e": supported values: "SCTP", "TCP", "UDP"',
            ),
        ],
    ),
    Case(
        "service-target-port-name-not-iana",
        service({"port": 80, "targetPort": "http_alt"}),
        [
            (
                INV,
                "spec.ports[0].targetPort",
                'Invalid value: "http_alt": must contain only alpha-numeric characters '
                "(a-z, 0-9), and hyphens (-)",
            )
        ],
    ),
    Case(
        "service-target-port-out-of-range",
        service({"port": 80, "targetPort": 70000}),
        [(INV, "spec.ports[0].targetPort", f"Invalid value: 70000: {PORT_RANGE}")],
    ),
    Case(
        "service-name-is-a-dns-label",
        {**service({"port": 80}), "metadata": {"name": "web.v1", "namespace": "default"}},
        [(INV, "metadata.name", 'Invalid value: "web.v1": must not contain dots')],
    ),
    Case(
        "service-invalid-port-names-still-repeat",
        service({"port": 80, "name": "Web"}, {"port": 81, "name": "Web"}),
        [
            (INV, "spec.ports[0].name", f'Invalid value: "Web": {LABEL_MESSAGE}'),
            (INV, "spec.ports[1].name", f'Invalid value: "Web": {LABEL_MESSAGE}'),
            (DUP, "spec.ports[1].name", 'Duplicate value: "Web"'),
        ],
    ),
    Case(
        "service-port-too-high",
        service({"port": 65536, "targetPort": 8080}),
        [(INV, "spec.ports[0].port", f"Invalid value: 65536: {PORT_RANGE}")],
    ),
    Case(
        "service-external-name-missing",
        {**service(type="ExternalName"), "spec": {"type": "ExternalName"}},
        [(REQ, "spec.externalName", "Required value")],
    ),
    Case(
        "service-external-name-not-a-subdomain",
        {**service(), "spec": {"type": "ExternalName", "externalName": "Bad_Host."}},
        [(INV, "spec.externalName", f'Invalid value: "Bad_Host": {SUBDOMAIN_MESSAGE}')],
    ),
    Case(
        "service-node-port-on-a-cluster-ip",
        service({"port": 80, "nodePort": 30080}),
        [(FORB, "spec.ports[0].nodePort", "Forbidden: may not be used when `type` is 'ClusterIP'")],
    ),
    Case(
        "service-app-protocol-not-a-qualified-name",
        service({"port": 80, "appProtocol": "my protocol"}),
        [
            (
                INV,
                "spec.ports[0].appProtocol",
                'Invalid value: "my protocol": name part must consist of alphanumeric '
                "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            )
        ],
    ),
    Case(
        "service-affinity-and-traffic-policies-in-order",
        service(
            {"port": 80},
            sessionAffinity="Sticky",
            type="Internal",
            externalTrafficPolicy="Local",
            internalTrafficPolicy="Node",
        ),
        [
            (
                UNS,
                "spec.sessionAffinity",
                'Unsupported value: "Sticky": supported values: "ClientIP", "None"',
            ),
            (
                UNS,
                "spec.type",
                'Unsupported value: "Internal": supported values: "ClusterIP", '
                '"ExternalName", "LoadBalancer", "NodePort"',
            ),
            (
                INV,
                "spec.externalTrafficPolicy",
                'Invalid value: "Local": may only be set for externally-accessible services',
            ),
            (
                UNS,
                "spec.internalTrafficPolicy",
                'Unsupported value: "Node": supported values: "Cluster", "Local"',
            ),
        ],
    ),
    Case(
        "service-external-traffic-policy-unknown",
        service({"port": 80}, type="NodePort", externalTrafficPolicy="Nearest"),
        [
            (
                UNS,
                "spec.externalTrafficPolicy",
                'Unsupported value: "Nearest": supported values: "Cluster", "Local"',
            )
        ],
    ),
    Case(
        "service-type-unknown",
        service({"port": 80}, type="Internal"),
        [
            (
                UNS,
                "spec.type",
                'Unsupported value: "Internal": supported values: "ClusterIP", '
                '"ExternalName", "LoadBalancer", "NodePort"',
            )
        ],
    ),
    # -- ConfigMap and Secret ------------------------------------------------------------
    Case(
        "configmap-key-with-a-space",
        config_map(**{"a b": "1"}),
        [(INV, "data[a b]", f'Invalid value: "a b": {KEY_MESSAGE}')],
    ),
    Case(
        "configmap-dot-keys",
        config_map(**{".": "1", "..": "2", "..a": "3"}),
        [
            (INV, "data[.]", "Invalid value: \".\": must not be '.'"),
            (INV, "data[..]", "Invalid value: \"..\": must not be '..'"),
            (INV, "data[..a]", "Invalid value: \"..a\": must not start with '..'"),
        ],
    ),
    Case(
        "configmap-key-in-data-and-binary-data",
        {**config_map(a="1"), "binaryData": {"a": "MQ=="}},
        [(INV, "data[a]", 'Invalid value: "a": duplicate of key present in binaryData')],
    ),
    Case(
        "configmap-bad-key-in-both-bags",
        {**config_map(**{"a b": "1"}), "binaryData": {"a b": "MQ=="}},
        [
            (INV, "data[a b]", f'Invalid value: "a b": {KEY_MESSAGE}'),
            (INV, "data[a b]", 'Invalid value: "a b": duplicate of key present in binaryData'),
            (INV, "binaryData[a b]", f'Invalid value: "a b": {KEY_MESSAGE}'),
        ],
    ),
    Case(
        "configmap-key-too-long",
        config_map(**{"k" * 254: "1"}),
        [
            (
                INV,
                f"data[{'k' * 254}]",
                f'Invalid value: "{"k" * 254}": must be no more than 253 characters',
            )
        ],
    ),
    Case(
        "configmap-over-one-mebibyte",
        {**config_map(a="x" * (512 * 1024)), "binaryData": {"b": "eHh4" * (512 * 1024 // 3 + 1)}},
        [("FieldValueTooLong", "", "Too long: may not be more than 1048576 bytes")],
    ),
    Case(
        "secret-over-one-mebibyte",
        secret(stringData={"a": "x" * (1024 * 1024 + 1)}),
        [("FieldValueTooLong", "data", "Too long: may not be more than 1048576 bytes")],
    ),
    Case(
        "secret-tls-without-its-keys",
        secret("kubernetes.io/tls", data={"ca.crt": "eA=="}),
        [(REQ, "data[tls.crt]", "Required value"), (REQ, "data[tls.key]", "Required value")],
    ),
    Case(
        "secret-basic-auth-with-neither-key",
        secret("kubernetes.io/basic-auth"),
        [(REQ, "data[username]", "Required value"), (REQ, "data[password]", "Required value")],
    ),
    Case(
        "secret-ssh-auth-with-an-empty-key",
        secret("kubernetes.io/ssh-auth", data={"ssh-privatekey": ""}),
        [(REQ, "data[ssh-privatekey]", "Required value")],
    ),
    Case(
        "secret-docker-config-without-its-key",
        secret("kubernetes.io/dockerconfigjson", data={"config.json": "e30="}),
        [(REQ, "data[.dockerconfigjson]", "Required value")],
    ),
    Case(
        "secret-service-account-token-without-its-account",
        secret("kubernetes.io/service-account-token"),
        [
            (
                REQ,
                "metadata.annotations[kubernetes.io/service-account.name]",
                "Required value",
            )
        ],
    ),
    Case(
        "secret-string-data-key-is-a-data-key",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default"},
            "stringData": {"pass word": "x"},
        },
        [
            (
                INV,
                "data[pass word]",
                'Invalid value: "pass word": ' + KEY_MESSAGE,
            )
        ],
    ),
]


VALID = [
    pod("p"),
    pod(
        "p",
        spec=containers(
            {
                "name": "web",
                "image": IMAGE,
                "ports": [
                    {"containerPort": 80, "name": "http", "protocol": "TCP"},
                    {"containerPort": 53, "hostPort": 53, "protocol": "UDP"},
                ],
            },
            initContainers=[{"name": "init", "image": IMAGE}],
            restartPolicy="OnFailure",
        ),
    ),
    deployment("web"),
    workload("Deployment", selected(replicas=0)),
    workload(
        "Deployment",
        {
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]},
            "template": template({"app": "a"}),
        },
    ),
    workload("ReplicaSet", selected()),
    # Only a Pod's images are refused for surrounding whitespace, not a template's.
    workload(
        "ReplicaSet",
        {
            "selector": {"matchLabels": {"app": "a"}},
            "template": template({"app": "a"}, containers({"name": "a", "image": IMAGE + " "})),
        },
    ),
    workload("StatefulSet", selected(podManagementPolicy="Parallel")),
    # kube-apiserver does not validate a StatefulSet template's pod spec.
    workload(
        "StatefulSet",
        {"selector": {"matchLabels": {"app": "a"}}, "template": template({"app": "a"}, {})},
    ),
    workload("DaemonSet", selected()),
    job("Never"),
    job("OnFailure", parallelism=0, completions=1),
    service({"port": 80}),
    service({"port": 80, "name": "http", "targetPort": "http"}, {"port": 443, "name": "https"}),
    service(clusterIP="None"),
    service(type="ExternalName", externalName="example.com"),
    service(type="ExternalName", externalName="example.com."),
    # A Service's name may start with a digit since RelaxedServiceNameValidation.
    {**service({"port": 80}), "metadata": {"name": "1web", "namespace": "default"}},
    service({"port": 80, "nodePort": 30080}, type="NodePort"),
    service({"port": 80}, externalIPs=["192.0.2.1"], externalTrafficPolicy="Local"),
    service({"port": 80}, sessionAffinity="ClientIP"),
    workload(
        "Job",
        {
            "manualSelector": True,
            "selector": {"matchLabels": {"app": "j"}},
            "template": template({"app": "j"}, pod_spec(restartPolicy="Never")),
        },
        "j",
    ),
    workload("Deployment", selected(minReadySeconds=5, progressDeadlineSeconds=600)),
    config_map(**{"app.properties": "x", "KEY_NAME": "y", "key-name": "z", ".hidden": "w"}),
    secret("kubernetes.io/tls", data={"tls.crt": "eA==", "tls.key": "eA=="}),
    secret("kubernetes.io/basic-auth", data={"password": ""}),
    secret("Opaque", data={"a": "eA=="}),
]


def causes(server: FakeAPIServer, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(UnprocessableEntity) as caught:
        server.create(copy.deepcopy(obj))
    details = caught.value.status["details"]
    return [(c["reason"], c["field"], c["message"]) for c in details["causes"]]


@pytest.mark.parametrize("case", INVALID, ids=[case.id for case in INVALID])
def test_an_invalid_spec_is_refused_with_kube_apiservers_causes(case: Case) -> None:
    server = FakeAPIServer()
    assert causes(server, case.obj) == case.causes


@pytest.mark.parametrize("obj", VALID, ids=lambda obj: f"{obj['kind']}")
def test_a_valid_spec_is_admitted(obj: dict[str, Any]) -> None:
    server = FakeAPIServer()
    stored = server.create(copy.deepcopy(obj))
    assert stored["spec" if "spec" in obj else "data"] == obj.get("spec", obj.get("data"))


def test_the_422_is_built_as_kube_apiserver_builds_it() -> None:
    server = FakeAPIServer()
    with pytest.raises(UnprocessableEntity) as caught:
        server.create(workload("Deployment", {"template": template({"app": "web"})}, "web"))
    assert caught.value.status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Deployment.apps "web" is invalid: [spec.selector: Required value, '
        'spec.template.metadata.labels: Invalid value: {"app":"web"}: '
        "`selector` does not match template `labels`]",
        "reason": "Invalid",
        "details": {
            "name": "web",
            "group": "apps",
            "kind": "Deployment",
            "causes": [
                {"reason": REQ, "message": "Required value", "field": "spec.selector"},
                {
                    "reason": INV,
                    "message": 'Invalid value: {"app":"web"}: '
                    "`selector` does not match template `labels`",
                    "field": "spec.template.metadata.labels",
                },
            ],
        },
        "code": 422,
    }


def test_one_cause_gives_a_message_without_brackets() -> None:
    server = FakeAPIServer()
    with pytest.raises(UnprocessableEntity) as caught:
        server.create(pod("web-0", spec={}))
    assert (
        caught.value.status["message"] == 'Pod "web-0" is invalid: spec.containers: Required value'
    )
    assert caught.value.status["details"]["kind"] == "Pod"
    assert "group" not in caught.value.status["details"]


def test_an_error_of_the_whole_object_has_an_empty_field_in_the_message_too() -> None:
    server = FakeAPIServer()
    with pytest.raises(UnprocessableEntity) as caught:
        server.create(config_map(a="x" * (1024 * 1024 + 1)))
    assert caught.value.status["message"] == (
        'ConfigMap "cfg" is invalid: : Too long: may not be more than 1048576 bytes'
    )


def test_a_generate_name_that_makes_no_valid_name_is_refused_before_the_name() -> None:
    server = FakeAPIServer()
    obj = config_map()
    obj["metadata"] = {"generateName": "Bad_", "namespace": "default"}
    with pytest.raises(UnprocessableEntity) as caught:
        server.create(obj)
    found = caught.value.status["details"]["causes"]
    assert [cause["field"] for cause in found] == ["metadata.generateName", "metadata.name"]
    assert found[0]["message"] == f'Invalid value: "Bad_": {SUBDOMAIN_MESSAGE}'
    # A trailing dash is allowed: the server appends to it.
    obj["metadata"]["generateName"] = "settings-"
    assert server.create(obj)["metadata"]["name"].startswith("settings-")


def test_metadata_causes_come_before_the_specs() -> None:
    server = FakeAPIServer()
    obj = pod("web-0", labels={"bad key": "x"}, spec={})
    fields = [field for _, field, _ in causes(server, obj)]
    assert fields == ["metadata.labels", "spec.containers"]


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        (
            service({"port": "http"}),
            'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal '
            "string into Go struct field ServicePort.spec.ports.port of type int32",
        ),
        (
            pod(
                "p",
                spec=containers({"name": "a", "image": IMAGE, "ports": [{"containerPort": "80"}]}),
            ),
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into '
            "Go struct field ContainerPort.spec.containers.ports.containerPort of type int32",
        ),
        (
            workload("Deployment", selected(replicas="3")),
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot '
            "unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            service({"port": 80.0}),
            'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal '
            "number 80.0 into Go struct field ServicePort.spec.ports.port of type int32",
        ),
    ],
    ids=["service-port", "container-port", "replicas", "fraction"],
)
def test_an_integer_field_given_a_string_is_the_decoders_400(
    obj: dict[str, Any], problem: str
) -> None:
    server = FakeAPIServer()
    with pytest.raises(BadRequest) as caught:
        server.create(obj)
    assert caught.value.status["message"] == problem


def test_updates_and_patches_are_validated_too() -> None:
    server = FakeAPIServer()
    server.create(deployment("web"))
    stored = server.get("deployments.apps", "default", "web")
    stored["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(UnprocessableEntity) as caught:
        server.update(stored)
    assert [c["field"] for c in caught.value.status["details"]["causes"]] == [
        "spec.template.metadata.labels"
    ]
    server.create(pod("web-0"))
    with pytest.raises(UnprocessableEntity) as caught:
        server.patch("pods", "default", "web-0", {"spec": {"containers": [{"name": "app"}]}})
    assert [c["field"] for c in caught.value.status["details"]["causes"]] == [
        "spec.containers[0].image"
    ]
    assert server.get("pods", "default", "web-0")["spec"] == pod_spec()


def test_a_status_update_does_not_validate_the_spec() -> None:
    server = FakeAPIServer(validate_specs=False)
    server.create(pod("web-0", spec={}))
    server.validate_specs = True
    stored = server.get("pods", "default", "web-0")
    stored["status"] = {"phase": "Running"}
    assert server.update(stored, subresource="status")["status"] == {"phase": "Running"}


def test_validate_specs_false_admits_any_spec_but_still_checks_names() -> None:
    server = FakeAPIServer(validate_specs=False)
    assert not server.validate_specs
    server.create(pod("web-0", spec={}))
    server.create(workload("Deployment", {}))
    server.create(service())
    with pytest.raises(UnprocessableEntity) as caught:
        server.create(pod("Bad_Name", spec={}))
    assert [c["field"] for c in caught.value.status["details"]["causes"]] == ["metadata.name"]


def test_other_kinds_have_no_spec_rules() -> None:
    server = FakeAPIServer()
    server.create(
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "data", "namespace": "default"},
            "subsets": [],
        }
    )
