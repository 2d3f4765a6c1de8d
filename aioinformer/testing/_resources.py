"""The built-in resources the fake API server serves, and resource-name resolution.

Each entry mirrors the discovery document kube-apiserver publishes for it (group,
version, plural, kind, scope, short names, status subresource) and the field selectors it
accepts beyond ``metadata.name`` and ``metadata.namespace``; the workload controllers
(deployments, replica sets, stateful sets) also serve the ``scale`` subresource.
CustomResourceDefinitions are served too: a created one installs the resource it defines
(``_crds``), and so are the webhook configurations admission calls (``_webhook_configs``,
``_admission``). Pods, Services and ServiceAccounts answer a delete with the deleted object,
as their kube-apiserver registries do; the others (and custom resources) with a ``Status``.

:class:`ResourceRegistry` is the set a running server serves: the built-ins plus the CRDs
registered at runtime (``register_crd``) or installed from CustomResourceDefinition
objects, which :meth:`ResourceRegistry.remove` takes away again when they are deleted.
Input is registrations and names (a URL's group, version and plural; a test's
``"deployments.apps"``; an object's apiVersion and kind); output is the
:class:`ResourceType` they name. Ordering: iteration follows first registration, which is
the order discovery documents list resources in. Task model: synchronous, no tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from aioinformer._apiserver.objects import ResourceType
from aioinformer.errors import UnknownResourceError
from aioinformer.testing._webhook_configs import WEBHOOK_CONFIGURATION_TYPES

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

__all__ = ["BUILTIN_TYPES", "CRD_TYPE", "ResourceRegistry"]

_BASE: Final = frozenset({"metadata.name", "metadata.namespace"})

CRD_TYPE: Final = ResourceType(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    False,
    "customresourcedefinition",
    ("crd", "crds"),
    True,
    generation=True,
)
"""``apiextensions.k8s.io/v1`` CustomResourceDefinitions: creating one serves the resource
it defines (``_crds``)."""


BUILTIN_TYPES: Final[tuple[ResourceType, ...]] = (
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
        generation=True,
        returns_deleted_object=True,
    ),
    ResourceType("", "v1", "configmaps", "ConfigMap", True, "configmap", ("cm",)),
    ResourceType("", "v1", "secrets", "Secret", True, "secret", (), False, _BASE | {"type"}),
    ResourceType(
        "",
        "v1",
        "services",
        "Service",
        True,
        "service",
        ("svc",),
        True,
        returns_deleted_object=True,
    ),
    ResourceType("", "v1", "endpoints", "Endpoints", True, "endpoints", ("ep",)),
    ResourceType(
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        True,
        "serviceaccount",
        ("sa",),
        returns_deleted_object=True,
    ),
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
    # The same Events through the newer API; a bare "events" still means the core one.
    ResourceType("events.k8s.io", "v1", "events", "Event", True, "event", ("ev",)),
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
        generation=True,
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
        generation=True,
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
        generation=True,
    ),
    ResourceType(
        "apps", "v1", "daemonsets", "DaemonSet", True, "daemonset", ("ds",), True, generation=True
    ),
    ResourceType("batch", "v1", "jobs", "Job", True, "job", (), True, generation=True),
    ResourceType(
        "batch", "v1", "cronjobs", "CronJob", True, "cronjob", ("cj",), True, generation=True
    ),
    ResourceType(
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        True,
        "ingress",
        ("ing",),
        True,
        generation=True,
    ),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True, "lease"),
    CRD_TYPE,
    *WEBHOOK_CONFIGURATION_TYPES,
)


class ResourceRegistry:
    """The resources one server serves, found by URL parts, by name or by object.

    Invariant: ``_by_gvr`` and ``_by_kind`` hold the same resource types, each under its
    own key; registering a key again replaces the type but keeps its first position.
    """

    def __init__(self, resources: Iterable[ResourceType] = BUILTIN_TYPES) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        for rt in resources:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        """Serve ``rt`` from now on."""
        self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        self._by_kind[(rt.api_version, rt.kind)] = rt

    def remove(self, rt: ResourceType) -> None:
        """Stop serving ``rt`` (its version of the resource); the other versions stay."""
        if self._by_gvr.get((rt.group, rt.version, rt.plural)) == rt:
            del self._by_gvr[(rt.group, rt.version, rt.plural)]
        if self._by_kind.get((rt.api_version, rt.kind)) == rt:
            del self._by_kind[(rt.api_version, rt.kind)]

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._by_gvr.values())

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The resource a URL's ``group``, ``version`` and ``plural`` name, if served."""
        return self._by_gvr.get((group, version, plural))

    def resolve(self, resource: str) -> ResourceType:
        """The resource named ``pods``, ``deployments.apps`` or ``apps/v1/deployments``;
        :class:`~aioinformer.errors.UnknownResourceError` when none is served."""
        parts = resource.split("/")
        candidates: list[ResourceType]
        if len(parts) == 3:
            candidates = [rt for rt in self if (rt.group, rt.version, rt.plural) == tuple(parts)]
        elif len(parts) == 2:
            candidates = [
                rt for rt in self if not rt.group and (rt.version, rt.plural) == tuple(parts)
            ]
        else:
            plural, _, group = resource.partition(".")
            candidates = [
                rt for rt in self if rt.plural == plural and (rt.group == group if group else True)
            ]
            # A bare plural served by the core group and another group means the core one,
            # as kubectl reads it.
            if not group and len(candidates) > 1:
                core = [rt for rt in candidates if not rt.group]
                candidates = core or candidates
        if not candidates:
            raise UnknownResourceError(f"the fake API server does not serve {resource!r}")
        return candidates[0]

    def for_object(self, obj: Mapping[str, Any]) -> ResourceType:
        """The resource of an object, from its ``apiVersion`` and ``kind``;
        :class:`~aioinformer.errors.UnknownResourceError` when none is served."""
        api_version = str(obj.get("apiVersion", ""))
        kind = obj.get("kind")
        rt = self._by_kind.get((api_version, str(kind)))
        if rt is not None:
            return rt
        raise UnknownResourceError(f"the fake API server does not serve {api_version} {kind}")
