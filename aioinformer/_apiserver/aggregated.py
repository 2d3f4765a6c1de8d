"""Aggregated discovery: ``/api`` and ``/apis`` as one ``APIGroupDiscoveryList`` each.

Role: what kube-apiserver (1.30+) answers a client that asks for
``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``, as kubectl and
client-go do first: every group, version and resource in two documents, instead of one
request per group version. Input is the request's ``Accept`` header, the path split into
parts and the served resources; output is the ``apidiscovery.k8s.io/v2`` document (the
core group under ``/api``, the named groups under ``/apis``), answered with that media
type, or nothing when the client prefers the classic documents of
:mod:`aioinformer._apiserver.discovery`.

Ordering: the same as the classic documents: groups by name, a group's versions in
kube-apiserver's priority order (the first is the preferred one), resources in
registration order.

Task model: synchronous functions called from the server's request handler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import orjson
from aiohttp import web

from aioinformer._apiserver.discovery import version_order
from aioinformer._apiserver.requests import JSON, method_not_allowed

if TYPE_CHECKING:
    from collections.abc import Iterable

    from aioinformer._apiserver.objects import ResourceType

__all__ = ["AGGREGATED", "aggregated_response", "wants_aggregated"]

AGGREGATED: Final = f"{JSON};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
"""The media type of an aggregated discovery answer."""

_SUBRESOURCE_VERBS: Final = ["get", "patch", "update"]


def wants_aggregated(parts: list[str], accept: str) -> bool:
    """Whether a request for the path split into ``parts`` is for ``/api`` or ``/apis``
    and its ``Accept`` header prefers the ``v2`` aggregated document to plain JSON
    (ranges by falling ``q``, in header order for equal ones)."""
    if parts not in (["api"], ["apis"]):
        return False
    ranges: list[tuple[float, int, str, dict[str, str]]] = []
    for position, clause in enumerate(accept.split(",")):
        media, *raw_params = (part.strip() for part in clause.split(";"))
        params = {}
        for raw in raw_params:
            key, _, value = raw.partition("=")
            params[key.strip()] = value.strip().strip('"')
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 0.0
        if quality > 0:
            ranges.append((-quality, position, media.lower(), params))
    for _, _, media, params in sorted(ranges, key=lambda r: (r[0], r[1])):
        if media not in (JSON, "application/*", "*/*"):
            continue
        if "as" not in params:
            return False
        wanted = (params.get("g"), params.get("v"), params.get("as"))
        if wanted == ("apidiscovery.k8s.io", "v2", "APIGroupDiscoveryList"):
            return True
    return False


def aggregated_response(
    method: str, parts: list[str], registry: Iterable[ResourceType], *, verbs: tuple[str, ...]
) -> web.Response:
    """The ``APIGroupDiscoveryList`` of ``/api`` (``parts == ["api"]``: the core group)
    or ``/apis`` (the named groups); ``verbs`` are what each resource serves."""
    if method != "GET":
        raise method_not_allowed()
    resources = list(registry)
    if parts == ["api"]:
        items = [_group("", resources, verbs)] if any(not rt.group for rt in resources) else []
    else:
        names = sorted({rt.group for rt in resources if rt.group})
        items = [_group(name, resources, verbs) for name in names]
    body = {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
    return web.Response(body=orjson.dumps(body), headers={"Content-Type": AGGREGATED})


def _group(name: str, resources: list[ResourceType], verbs: tuple[str, ...]) -> dict[str, Any]:
    versions = sorted({rt.version for rt in resources if rt.group == name}, key=version_order)
    metadata: dict[str, Any] = {"name": name} if name else {}
    return {
        "metadata": metadata,
        "versions": [
            {
                "version": version,
                "resources": [
                    _resource(rt, verbs)
                    for rt in resources
                    if (rt.group, rt.version) == (name, version)
                ],
                "freshness": "Current",
            }
            for version in versions
        ],
    }


def _kind(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _resource(rt: ResourceType, verbs: tuple[str, ...]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": _kind(rt.group, rt.version, rt.kind),
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    subresources = []
    if rt.status_subresource:
        subresources.append(
            {
                "subresource": "status",
                "responseKind": _kind(rt.group, rt.version, rt.kind),
                "verbs": _SUBRESOURCE_VERBS,
            }
        )
    if rt.scale_subresource:
        subresources.append(
            {
                "subresource": "scale",
                "responseKind": _kind("autoscaling", "v1", "Scale"),
                "verbs": _SUBRESOURCE_VERBS,
            }
        )
    if subresources:
        entry["subresources"] = subresources
    return entry
