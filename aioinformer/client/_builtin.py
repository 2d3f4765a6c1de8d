"""The built-in resources every kube-apiserver serves, known without asking it.

Role: let synchronous code tell that ``"configmaps"``, ``"configmap"``, ``"cm"``,
``"ConfigMap"`` and ``"v1/configmaps"`` are one resource, before discovery has run (the
shared informer factory keys its informers by the resource, and ``informer_for`` cannot
await). Input: a bare word as :meth:`Client.resource <aioinformer.client.Client.resource>`
accepts it (a plural, singular, short name or kind, optionally ``.group``-qualified, in
any case). Output: the :class:`GVR` of the built-in it names, or ``None`` for a word that
names no built-in (a custom resource's plural), which only discovery can resolve.

The table lists the generally available resources of kube-apiserver 1.36 (each group's
preferred version; ``bindings`` and other create-only or deprecated kinds are left out),
with the names their discovery documents publish. A word is matched by discovery's own
rules: the core group first, then the groups in the order kube-apiserver lists them; an
exact plural anywhere wins over a singular, short name or kind. So this agrees with
:class:`~aioinformer.client._discovery.Discovery` on a cluster, except where a custom
resource shadows a built-in's short name with its plural (a CRD named ``cms``, say):
there this table keeps the built-in, as a program naming ``"cm"`` means it.

Task model: pure data and a lookup; no I/O, no tasks.
"""

from __future__ import annotations

from typing import Final

from aioinformer.client._names import GVR, ResourceInfo

__all__ = ["BUILTIN_RESOURCES", "builtin_gvr"]


def _table(
    api_version: str, namespaced: bool, *entries: tuple[str, str, tuple[str, ...]]
) -> list[ResourceInfo]:
    group, _, version = api_version.rpartition("/")
    return [
        ResourceInfo(
            gvr=GVR(group, version, plural),
            kind=kind,
            namespaced=namespaced,
            singular=kind.lower(),
            short_names=short_names,
        )
        for plural, kind, short_names in entries
    ]


BUILTIN_RESOURCES: Final[tuple[ResourceInfo, ...]] = (
    *_table(
        "v1",
        True,
        ("configmaps", "ConfigMap", ("cm",)),
        ("endpoints", "Endpoints", ("ep",)),
        ("events", "Event", ("ev",)),
        ("limitranges", "LimitRange", ("limits",)),
        ("persistentvolumeclaims", "PersistentVolumeClaim", ("pvc",)),
        ("pods", "Pod", ("po",)),
        ("podtemplates", "PodTemplate", ()),
        ("replicationcontrollers", "ReplicationController", ("rc",)),
        ("resourcequotas", "ResourceQuota", ("quota",)),
        ("secrets", "Secret", ()),
        ("serviceaccounts", "ServiceAccount", ("sa",)),
        ("services", "Service", ("svc",)),
    ),
    *_table(
        "v1",
        False,
        ("namespaces", "Namespace", ("ns",)),
        ("nodes", "Node", ("no",)),
        ("persistentvolumes", "PersistentVolume", ("pv",)),
    ),
    *_table("apiregistration.k8s.io/v1", False, ("apiservices", "APIService", ())),
    *_table(
        "apps/v1",
        True,
        ("controllerrevisions", "ControllerRevision", ()),
        ("daemonsets", "DaemonSet", ("ds",)),
        ("deployments", "Deployment", ("deploy",)),
        ("replicasets", "ReplicaSet", ("rs",)),
        ("statefulsets", "StatefulSet", ("sts",)),
    ),
    *_table("events.k8s.io/v1", True, ("events", "Event", ("ev",))),
    *_table(
        "autoscaling/v2", True, ("horizontalpodautoscalers", "HorizontalPodAutoscaler", ("hpa",))
    ),
    *_table("batch/v1", True, ("cronjobs", "CronJob", ("cj",)), ("jobs", "Job", ())),
    *_table(
        "certificates.k8s.io/v1",
        False,
        ("certificatesigningrequests", "CertificateSigningRequest", ("csr",)),
    ),
    *_table(
        "networking.k8s.io/v1",
        True,
        ("ingresses", "Ingress", ("ing",)),
        ("networkpolicies", "NetworkPolicy", ("netpol",)),
    ),
    *_table("networking.k8s.io/v1", False, ("ingressclasses", "IngressClass", ())),
    *_table("policy/v1", True, ("poddisruptionbudgets", "PodDisruptionBudget", ("pdb",))),
    *_table(
        "rbac.authorization.k8s.io/v1",
        True,
        ("rolebindings", "RoleBinding", ()),
        ("roles", "Role", ()),
    ),
    *_table(
        "rbac.authorization.k8s.io/v1",
        False,
        ("clusterrolebindings", "ClusterRoleBinding", ()),
        ("clusterroles", "ClusterRole", ()),
    ),
    *_table(
        "storage.k8s.io/v1",
        False,
        ("csidrivers", "CSIDriver", ()),
        ("csinodes", "CSINode", ()),
        ("storageclasses", "StorageClass", ("sc",)),
        ("volumeattachments", "VolumeAttachment", ()),
    ),
    *_table("storage.k8s.io/v1", True, ("csistoragecapacities", "CSIStorageCapacity", ())),
    *_table(
        "admissionregistration.k8s.io/v1",
        False,
        ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration", ()),
        ("validatingadmissionpolicies", "ValidatingAdmissionPolicy", ()),
        ("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", ()),
        ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration", ()),
    ),
    *_table(
        "apiextensions.k8s.io/v1",
        False,
        ("customresourcedefinitions", "CustomResourceDefinition", ("crd", "crds")),
    ),
    *_table("scheduling.k8s.io/v1", False, ("priorityclasses", "PriorityClass", ("pc",))),
    *_table("coordination.k8s.io/v1", True, ("leases", "Lease", ())),
    *_table("node.k8s.io/v1", False, ("runtimeclasses", "RuntimeClass", ())),
    *_table("discovery.k8s.io/v1", True, ("endpointslices", "EndpointSlice", ())),
)
"""Core group first, then the groups in the order kube-apiserver's ``/apis`` lists them.
Only ``Event`` is served by two groups: its singular, short name and kind mean the core
one, as on a cluster."""


def builtin_gvr(word: str) -> GVR | None:
    """The built-in resource ``word`` names (``"cm"``, ``"ConfigMap"``,
    ``"deployments.apps"``), by discovery's rules; ``None`` when it names none."""
    name, _, group = word.lower().partition(".")
    candidates = [info for info in BUILTIN_RESOURCES if not group or info.gvr.group == group]
    for info in candidates:
        if info.gvr.resource == name:
            return info.gvr
    for info in candidates:
        if info.matches(name):
            return info.gvr
    return None
