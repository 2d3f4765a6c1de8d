"""``metadata.managedFields`` as the fake API server records it.

Role: kube-apiserver records, on every object, which field manager wrote which fields
(``metadata.managedFields``). The fake keeps a minimal but well-formed version of that
record: one entry per manager, operation and subresource, with the ``apiVersion`` written,
the ``time`` of its last write and a ``FieldsV1`` set naming the top-level fields the
write carried (and, one level down, the keys of the maps among them). Input is the
object a write stores, the manager name (the first ``/``-separated token of the request's
User-Agent, as kube-apiserver derives it; ``unknown`` for the test's direct calls) and
the subresource; output is the object's new ``managedFields`` list.

The field sets are not the exact ownership server-side apply computes (no conflicts, no
list item keys): they show what was written, cheaply, so code that reads or strips
``managedFields`` (caches, ``metadata_only`` informers, transforms) sees the shape it gets
from a cluster.

Ordering: entries keep their first-write order; a manager's later write replaces its
entry in place. Task model: pure synchronous functions.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["UNKNOWN_MANAGER", "manager_from_user_agent", "record_write"]

UNKNOWN_MANAGER: Final = "unknown"
"""The manager of a write whose client sent no User-Agent (and of direct test calls)."""

_NOT_OWNED: Final = frozenset({"apiVersion", "kind", "metadata", "status"})
_META_OWNED: Final = ("annotations", "finalizers", "generateName", "labels", "ownerReferences")


def manager_from_user_agent(user_agent: str | None) -> str:
    """The field manager kube-apiserver derives from a User-Agent: its part before the
    first ``/`` (``kubectl/v1.36.2 (linux/amd64)`` -> ``kubectl``)."""
    if not user_agent:
        return UNKNOWN_MANAGER
    prefix = user_agent.split("/", 1)[0].strip()
    return prefix or UNKNOWN_MANAGER


def _field_set(value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        owned: dict[str, Any] = {".": {}}
        for key in value:
            owned[f"f:{key}"] = {}
        return owned
    return {}


def _fields_written(obj: Mapping[str, Any], subresource: str | None) -> dict[str, Any]:
    if subresource == "status":
        return {"f:status": _field_set(obj.get("status"))} if "status" in obj else {}
    fields: dict[str, Any] = {}
    meta = obj.get("metadata") or {}
    meta_fields = {f"f:{key}": _field_set(meta[key]) for key in _META_OWNED if meta.get(key)}
    if meta_fields:
        fields["f:metadata"] = meta_fields
    for key in sorted(obj):
        if key not in _NOT_OWNED:
            fields[f"f:{key}"] = _field_set(obj[key])
    return fields


def record_write(
    previous: list[dict[str, Any]] | None,
    obj: Mapping[str, Any],
    *,
    api_version: str,
    manager: str,
    subresource: str | None = None,
) -> list[dict[str, Any]]:
    """The ``managedFields`` after ``manager`` wrote ``obj`` (an ``Update`` operation),
    starting from the ``previous`` entries."""
    entry: dict[str, Any] = {
        "manager": manager,
        "operation": "Update",
        "apiVersion": api_version,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "fieldsType": "FieldsV1",
        "fieldsV1": _fields_written(obj, subresource),
    }
    if subresource is not None:
        entry["subresource"] = subresource
    result: list[dict[str, Any]] = []
    replaced = False
    for old in previous or ():
        same = (
            old.get("manager") == manager
            and old.get("operation") == "Update"
            and old.get("subresource") == subresource
        )
        if same and not replaced:
            result.append(entry)
            replaced = True
        elif not same:
            result.append(old)
    if not replaced:
        result.append(entry)
    return result
