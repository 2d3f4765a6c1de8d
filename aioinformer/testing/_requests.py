"""Request parsing for the fake API server's writes.

Role: the small, pure pieces of HTTP handling that kube-apiserver applies to a write (the
read side, shared with the caching proxy, is :mod:`aioinformer._apiserver.requests`). Input is
parts of an ``aiohttp`` request (the parsed resource path, the body bytes); output is
parsed values (the :class:`Target`, a validated new object, the patch function of a
Content-Type) or the :class:`~aioinformer._apiserver.objects.StatusError` kube-apiserver answers
with (400 ``BadRequest``, 415, 422 ``Invalid``).

Ordering: none; each function looks at its arguments only.

Task model: synchronous functions, called from the handlers on the server's event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import orjson

from aioinformer._apiserver.objects import ResourceType, StatusError, status_body
from aioinformer.testing._patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from aioinformer.testing._validation import FieldError, invalid_error

__all__ = [
    "PATCH_TYPES",
    "Target",
    "check_namespace",
    "decode_body",
    "invalid",
    "prepare_new",
    "unsupported_patch_type",
]

PATCH_TYPES: Final = {
    "application/merge-patch+json": apply_merge_patch,
    "application/strategic-merge-patch+json": apply_strategic_merge_patch,
    "application/json-patch+json": apply_json_patch,
}


@dataclass(slots=True)
class Target:
    """A parsed resource request path."""

    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def unsupported_patch_type() -> StatusError:
    """The 415 for a PATCH whose Content-Type is not a known patch type."""
    return StatusError(
        status_body(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types "
            f"include: {', '.join(sorted(PATCH_TYPES))}",
        ),
    )


def invalid(
    rt: ResourceType, name: str | None, path: str, detail: str, value: Any = None
) -> StatusError:
    """The 422 ``Invalid`` with one ``FieldValueInvalid`` cause on ``path`` (``value``,
    when given, is shown as the bad value)."""
    return invalid_error(rt, name or "", [FieldError("FieldValueInvalid", path, detail, value)])


def decode_body(body: bytes) -> Any:
    """The request body as JSON, or the 400 for one that is not."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise StatusError(
            status_body(400, "BadRequest", f"the request body is not valid JSON: {exc}")
        ) from exc


def check_namespace(rt: ResourceType, meta: dict[str, Any], namespace: str | None) -> None:
    """Set the object's namespace to the URL's, or the 400 when it names another one."""
    if not rt.namespaced:
        meta.pop("namespace", None)
        return
    given = meta.get("namespace")
    if given and given != namespace:
        raise StatusError(
            status_body(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace "
                "sent on the request",
            )
        )
    meta["namespace"] = namespace


def prepare_new(rt: ResourceType, obj: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """Normalise an object about to be created: its metadata, its namespace (the URL's,
    else its own, else ``default``; 400 when they differ), no resourceVersion. The store
    admits it (namespace, name, labels) when it is created."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    if rt.namespaced:
        if namespace is None:
            namespace = meta.get("namespace") or "default"
        check_namespace(rt, meta, namespace)
    else:
        meta.pop("namespace", None)
    meta.pop("resourceVersion", None)
    return obj
