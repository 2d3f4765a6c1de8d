"""Discovery documents: ``/api``, ``/apis``, group versions, ``/version``.

Role: answers the requests a client makes to learn what a server serves, from the
resources it serves as they are at the time of the request (the fake API server's
:class:`~aioinformer.testing._resources.ResourceRegistry`, so a CRD registered at runtime
shows up at once; the caching proxy's configured resources). Input is the request method
and the path split into parts; output is the JSON document kube-apiserver publishes at
that path (``APIVersions``, ``APIResourceList``, ``APIGroupList``, ``APIGroup``, the
version info) or ``ok`` for the health endpoints, and 404/405 ``Status`` errors otherwise.

Ordering: resources are listed in registration order, groups by name, a group's versions
in kube-apiserver's priority order (:func:`version_order`: ``v2``, ``v1``, ``v1beta1``,
``v1alpha1``), the first of them preferred.

Task model: synchronous functions called from the server's request handler.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

import orjson
from aiohttp import web

from aioinformer._apiserver.requests import JSON, method_not_allowed, not_served

if TYPE_CHECKING:
    from collections.abc import Iterable

    from aioinformer._apiserver.objects import ResourceType

__all__ = ["VERBS", "VERSION_INFO", "discovery_response", "is_discovery", "version_order"]

_KUBE_VERSION: Final = re.compile(r"v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?")

VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
"""What a resource of the fake API server (and of a proxy that forwards writes) serves."""

VERSION_INFO: Final = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-aioinformer-fake",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T00:00:00Z",
    "goVersion": "go1.23.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def is_discovery(parts: list[str]) -> bool:
    """Whether a path under ``/api`` or ``/apis`` (split into ``parts``) is a discovery
    document rather than a resource."""
    if parts[0] == "api":
        return len(parts) <= 2
    return len(parts) <= 3


def discovery_response(
    method: str,
    parts: list[str],
    registry: Iterable[ResourceType],
    *,
    port: int,
    verbs: tuple[str, ...] = VERBS,
    version_info: dict[str, Any] | None = None,
) -> web.Response:
    """The answer to a ``method`` request for the discovery path split into ``parts``;
    ``port`` is the server's, which ``/api`` publishes as its address; ``verbs`` what each
    resource serves; ``version_info`` the ``/version`` document (default: the fake's)."""
    if method != "GET":
        raise method_not_allowed()
    body: dict[str, Any]
    if parts == ["version"]:
        body = dict(VERSION_INFO if version_info is None else version_info)
    elif parts in (["healthz"], ["livez"], ["readyz"]):
        return web.Response(text="ok", content_type="text/plain")
    elif parts == ["api"]:
        body = {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{port}"}
            ],
        }
    elif parts == ["api", "v1"]:
        body = _resource_list(registry, "", "v1", verbs)
    elif parts == ["apis"]:
        body = {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [_group(registry, g) for g in _groups(registry)],
        }
    elif len(parts) == 2 and parts[0] == "apis" and parts[1] in _groups(registry):
        body = {"kind": "APIGroup", "apiVersion": "v1", **_group(registry, parts[1])}
    elif (
        len(parts) == 3
        and parts[0] == "apis"
        and any((rt.group, rt.version) == (parts[1], parts[2]) for rt in registry)
    ):
        body = _resource_list(registry, parts[1], parts[2], verbs)
    else:
        raise not_served()
    return web.Response(body=orjson.dumps(body), content_type=JSON)


def version_order(version: str) -> tuple[int, int, int, str]:
    """A sort key putting versions in kube-apiserver's priority order, first preferred:
    "kube-like" ones (``v2``, ``v1``, ``v2beta1``, ``v1alpha1``) by stability, then major,
    then minor, newest first; then the others by name."""
    match = _KUBE_VERSION.fullmatch(version)
    if match is None:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), "")


def _groups(registry: Iterable[ResourceType]) -> list[str]:
    return sorted({rt.group for rt in registry if rt.group})


def _group(registry: Iterable[ResourceType], group: str) -> dict[str, Any]:
    versions = sorted({rt.version for rt in registry if rt.group == group}, key=version_order)
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def _resource_list(
    registry: Iterable[ResourceType], group: str, version: str, verbs: tuple[str, ...]
) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for rt in registry:
        if (rt.group, rt.version) != (group, version):
            continue
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        resources.append(entry)
        if rt.status_subresource:
            resources.append(
                {
                    "name": f"{rt.plural}/status",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": rt.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if rt.scale_subresource:
            resources.append(
                {
                    "name": f"{rt.plural}/scale",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }
