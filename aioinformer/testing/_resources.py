"""The built-in resources the fake API server serves, and resource-name resolution.

Each entry mirrors the discovery document kube-apiserver publishes for it (group,
version, plural, kind, scope, short names, status subresource) and the field selectors it
accepts beyond ``metadata.name`` and ``metadata.namespace``; the workload controllers
(deployments, replica sets, stateful sets) also serve the ``scale`` subresource.
"""

from __future__ import annotations

from typing import Final

from aioinformer.testing._store import ResourceType

__all__ = ["BUILTIN_RESOURCES", "VERBS"]

_BASE: Final = frozenset({"metadata.name", "metadata.namespace"})

VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

BUILTIN_RESOURCES: Final[tuple[ResourceType, ...]] = (
    ResourceType(
        "",
        "v1",
        "namespaces",
        "Namespace",
        False,
        "namespace",
        ("ns",),
        True,
        _BASE | {"status.phase"},
    ),
    ResourceType(
        "", "v1", "nodes", "Node", False, "node", ("no",), True, _BASE | {"spec.unschedulable"}
    ),
    ResourceType(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        "pod",
        ("po",),
        True,
        _BASE
        | {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        },
    ),
    ResourceType("", "v1", "configmaps", "ConfigMap", True, "configmap", ("cm",)),
    ResourceType("", "v1", "secrets", "Secret", True, "secret", (), False, _BASE | {"type"}),
    ResourceType("", "v1", "services", "Service", True, "service", ("svc",), True),
    ResourceType("", "v1", "endpoints", "Endpoints", True, "endpoints", ("ep",)),
    ResourceType("", "v1", "serviceaccounts", "ServiceAccount", True, "serviceaccount", ("sa",)),
    ResourceType(
        "",
        "v1",
        "events",
        "Event",
        True,
        "event",
        ("ev",),
        False,
        _BASE
        | {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        },
    ),
    ResourceType(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        True,
        "deployment",
        ("deploy",),
        True,
        scale_subresource=True,
    ),
    ResourceType(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        True,
        "replicaset",
        ("rs",),
        True,
        scale_subresource=True,
    ),
    ResourceType(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        True,
        "statefulset",
        ("sts",),
        True,
        scale_subresource=True,
    ),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, "daemonset", ("ds",), True),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True, "lease"),
)
