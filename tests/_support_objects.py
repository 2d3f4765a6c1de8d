"""Minimal but valid objects of the kinds the fake API server validates, for tests.

The fake refuses what kube-apiserver refuses (a Pod without containers, a Deployment
without a selector): these builders make the smallest objects it admits, so a test states
only what it is about (names, labels, extra fields) and never trips on validation.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["IMAGE", "POD_SPEC", "deployment", "pod", "pod_spec"]

IMAGE: Final = "registry.k8s.io/pause:3.10"
"""The image of the builders' containers."""

POD_SPEC: Final[dict[str, Any]] = {"containers": [{"name": "app", "image": IMAGE}]}
"""The smallest valid pod spec: one container with a name and an image (copy it, or use
:func:`pod_spec`, before changing it)."""


def pod_spec(**fields: Any) -> dict[str, Any]:
    """A fresh valid pod spec, with ``fields`` added (``nodeName="n1"``)."""
    return {"containers": [{"name": "app", "image": IMAGE}], **fields}


def pod(
    name: str,
    namespace: str | None = "default",
    *,
    labels: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    **meta: Any,
) -> dict[str, Any]:
    """A valid Pod ``namespace/name`` with ``labels``, ``spec`` (default: one container)
    and further ``metadata`` fields (``annotations=...``, ``finalizers=...``)."""
    metadata: dict[str, Any] = {"name": name, **meta}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec if spec is not None else pod_spec(),
    }


def deployment(
    name: str,
    namespace: str = "default",
    *,
    replicas: int = 1,
    app: str | None = None,
    **meta: Any,
) -> dict[str, Any]:
    """A valid Deployment whose selector matches its template's ``app`` label (default:
    its name)."""
    labels = {"app": app or name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec()},
        },
    }
