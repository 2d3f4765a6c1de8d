"""OpenAPI v3 documents: just enough for kubectl to validate on the server.

Role: answers ``/openapi/v3`` and ``/openapi/v3/<group version path>`` for the fake API
server and the caching proxy. kubectl's ``create -f``, ``apply`` and ``replace`` validate
with ``--validate=strict`` by default: they read the group version's document and, when
the resource's PATCH operation takes the ``fieldValidation`` query parameter, leave the
validation to the server (``?fieldValidation=Strict``); otherwise they fall back to
client-side validation, which downloads ``/openapi/v2`` and fails where it is not served.
Input is the request method, the path split into parts and the resources served as they
are at the time of the request; output is the index (``{"paths": {"api/v1":
{"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}}}``) or one group version's
document, or a 404/405 ``Status``.

A group version's document carries, per resource, its object path with the operations
its ``verbs`` allow (``get``, ``put``, ``patch``, ``delete``), each tagged with the
``x-kubernetes-group-version-kind`` and ``x-kubernetes-action`` kube-apiserver puts
there, and no schemas: ``kubectl explain`` finds nothing to explain, and ``kubectl
apply`` computes its patches from its own types (a JSON merge patch for a custom
resource), as it does against a server whose documents lack the kind.

Ordering: the index lists group versions sorted, the core one first; a document lists
resources in registration order. The hash in each ``serverRelativeURL`` is the SHA-512
of the document, so a client's cache sees a new one when a CRD is registered.

Task model: synchronous functions called from the server's request handler.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Final

import orjson
from aiohttp import web

from aioinformer._apiserver.requests import JSON, method_not_allowed, not_served

if TYPE_CHECKING:
    from collections.abc import Iterable

    from aioinformer._apiserver.objects import ResourceType

__all__ = ["is_openapi", "openapi_response"]

_OPERATIONS: Final = (
    ("get", "get", "read"),
    ("update", "put", "replace"),
    ("patch", "patch", "patch"),
    ("delete", "delete", "delete"),
)
"""(verb, OpenAPI operation, operationId prefix) for an object's path."""

_WRITE_PARAMETERS: Final = ("dryRun", "fieldManager", "fieldValidation")
"""The query parameters a write operation declares (``fieldValidation`` is the one
kubectl looks for)."""


def is_openapi(parts: list[str]) -> bool:
    """Whether a path (split into ``parts``) is under ``/openapi/v3``."""
    return parts[:2] == ["openapi", "v3"]


def openapi_response(
    method: str, parts: list[str], registry: Iterable[ResourceType], *, verbs: tuple[str, ...]
) -> web.Response:
    """The answer to a ``method`` request for an ``/openapi/v3`` path split into
    ``parts``: the index, or the document of the group version the rest names (404 for
    one not served); ``verbs`` are what each resource serves."""
    if method != "GET":
        raise method_not_allowed()
    served = _by_group_version(registry)
    if parts == ["openapi", "v3"]:
        index = {
            "paths": {
                path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={_hash(doc)}"}
                for path, doc in (
                    (path, _document(resources, verbs)) for path, resources in served.items()
                )
            }
        }
        return web.Response(body=orjson.dumps(index), content_type=JSON)
    resources = served.get("/".join(parts[2:]))
    if resources is None:
        raise not_served()
    return web.Response(body=_document(resources, verbs), content_type=JSON)


def _by_group_version(registry: Iterable[ResourceType]) -> dict[str, list[ResourceType]]:
    """Resources by the path of their group version (``api/v1``, ``apis/apps/v1``), in
    the index's order."""
    grouped: dict[str, list[ResourceType]] = {}
    for rt in registry:
        path = f"apis/{rt.group}/{rt.version}" if rt.group else f"api/{rt.version}"
        grouped.setdefault(path, []).append(rt)
    return dict(sorted(grouped.items(), key=lambda item: (item[0] != "api/v1", item[0])))


def _hash(document: bytes) -> str:
    return hashlib.sha512(document).hexdigest().upper()


def _document(resources: list[ResourceType], verbs: tuple[str, ...]) -> bytes:
    """One group version's OpenAPI v3 document (see the module docstring)."""
    paths: dict[str, Any] = {}
    for rt in resources:
        operations = {
            operation: _operation(rt, verb, prefix)
            for verb, operation, prefix in _OPERATIONS
            if verb in verbs
        }
        if operations:
            paths[_object_path(rt)] = {"parameters": _path_parameters(rt), **operations}
    first = resources[0]
    document = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": first.api_version},
        "paths": paths,
        "components": {"schemas": {}},
    }
    return orjson.dumps(document)


def _object_path(rt: ResourceType) -> str:
    root = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    scope = "/namespaces/{namespace}" if rt.namespaced else ""
    return f"{root}{scope}/{rt.plural}/{{name}}"


def _path_parameters(rt: ResourceType) -> list[dict[str, Any]]:
    names = ("name", "namespace") if rt.namespaced else ("name",)
    return [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in names
    ]


def _operation(rt: ResourceType, verb: str, prefix: str) -> dict[str, Any]:
    group = "".join(part.capitalize() for part in (rt.group or "core").split("."))
    scope = "Namespaced" if rt.namespaced else ""
    operation: dict[str, Any] = {
        "operationId": f"{prefix}{group}{rt.version.capitalize()}{scope}{rt.kind}",
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": verb,
        "x-kubernetes-group-version-kind": {
            "group": rt.group,
            "version": rt.version,
            "kind": rt.kind,
        },
    }
    if verb != "get":
        operation["parameters"] = [
            {"name": name, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
            for name in _WRITE_PARAMETERS
        ]
    return operation
