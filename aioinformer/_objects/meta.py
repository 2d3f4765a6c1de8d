"""Metadata accessors: one place that reads ``metadata`` off any object the pipeline carries.

Role: every stage needs an object's key, namespace, name, resourceVersion, labels or owner
references, and an object may be a raw ``dict`` (what the JSON decoder made, the common
case), any other mapping, or a model with a ``.metadata`` attribute (a
:class:`~aioinformer.models.KubeObject` or a user's pydantic model), whose metadata may
itself be a mapping or a model with snake_case attributes, or a compact cache's
:class:`~aioinformer._objects.raw.CompactEntry`, which carries the fields read here
beside its bytes (annotations and owner references are decoded from those bytes), or a
read-only :class:`~aioinformer._objects.view.ObjectView` of one (read through its entry). These
functions accept all of them, so no caller repeats the "dict or model" dance.

Input: an object (and for :func:`same_resource_version`, two). Output: the field, or a
neutral value (``None``, ``""``, an empty tuple) when the object does not carry it; only
:func:`meta_namespace_key` raises, with :class:`~aioinformer.errors.KeyFuncError`, because
an object without a key cannot be stored.

Ordering and task model: pure, synchronous functions; nothing is cached or copied, so a
value read is the object's own (treat it as read-only). The raw-dict case is tested first
with ``type(...) is dict`` because it is the per-event path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aioinformer._objects.raw import CompactEntry
from aioinformer._objects.view import ObjectView
from aioinformer.errors import KeyFuncError
from aioinformer.models import DeletedFinalStateUnknown

__all__ = [
    "annotations_of",
    "api_version_and_kind_of",
    "describe",
    "generation_of",
    "labels_of",
    "meta_namespace_key",
    "metadata_of",
    "name_of",
    "namespace_of",
    "owner_references_of",
    "resource_version_of",
    "same_resource_version",
    "uid_of",
]


def metadata_of(obj: Any) -> Any:
    """The object's metadata (a mapping or a model), or ``None`` when it has none. For a
    :class:`~aioinformer._objects.raw.CompactEntry` it is decoded from the object's bytes."""
    if isinstance(obj, Mapping):
        return obj.get("metadata")
    if type(obj) is CompactEntry:
        return obj.decode().get("metadata")
    return getattr(obj, "metadata", None)


def _field(meta: Any, key: str, attribute: str) -> Any:
    # Models spell camelCase wire fields in snake_case (resourceVersion -> resource_version).
    if isinstance(meta, Mapping):
        return meta.get(key)
    return getattr(meta, attribute, None)


def describe(obj: Any) -> str:
    """Name ``obj`` in an error message by its type, kind and whatever identifying
    metadata it has, never by its content (it may be a Secret)."""
    if type(obj) is ObjectView:
        obj = obj.entry
    if type(obj) is CompactEntry:
        return repr(obj)
    parts = [type(obj).__name__]
    kind = obj.get("kind") if isinstance(obj, Mapping) else getattr(obj, "kind", None)
    if isinstance(kind, str) and kind:
        parts.append(f"kind={kind[:100]!r}")
    meta = metadata_of(obj)
    for field in ("namespace", "name", "uid"):
        value = _field(meta, field, field)
        if isinstance(value, str) and value:
            parts.append(f"{field}={value[:253]!r}")
    return " ".join(parts)


def meta_namespace_key(obj: Any) -> str:
    """Return ``"namespace/name"``, or ``"name"`` for a cluster-scoped object.

    Accepts a raw ``dict`` (the fast path), any object with a ``.metadata`` (a
    :class:`~aioinformer.models.KubeObject`, whose metadata may itself be a mapping or a
    model) and a :class:`DeletedFinalStateUnknown`, whose ``key`` is returned as is.
    Raises :class:`KeyFuncError` when there is no usable ``metadata.name``.
    """
    if type(obj) is ObjectView:
        obj = obj.entry
    if type(obj) is dict:
        meta = obj.get("metadata")
        if type(meta) is dict:
            name = meta.get("name")
            if name and type(name) is str:
                namespace = meta.get("namespace")
                return f"{namespace}/{name}" if namespace else name
        raise KeyFuncError(f"object has no metadata.name: {describe(obj)}")
    if type(obj) is CompactEntry:
        if obj.key:
            return obj.key
        raise KeyFuncError(f"object has no metadata.name: {describe(obj)}")
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    meta = metadata_of(obj)
    if meta is None:
        raise KeyFuncError(f"object has no metadata: {describe(obj)}")
    name = _field(meta, "name", "name")
    if not name or not isinstance(name, str):
        raise KeyFuncError(f"object has no metadata.name: {describe(obj)}")
    namespace = _field(meta, "namespace", "namespace")
    return f"{namespace}/{name}" if namespace else name


def namespace_of(obj: Any) -> str:
    """The object's namespace; ``""`` for a cluster-scoped object or one without
    metadata."""
    if type(obj) is ObjectView:
        obj = obj.entry
    if type(obj) is CompactEntry:
        return obj.namespace
    return _field(metadata_of(obj), "namespace", "namespace") or ""


def name_of(obj: Any) -> str | None:
    """The object's name, or ``None`` when it has none."""
    if type(obj) is ObjectView:
        obj = obj.entry
    if type(obj) is CompactEntry:
        return obj.name or None
    value = _field(metadata_of(obj), "name", "name")
    return value if isinstance(value, str) else None


def resource_version_of(obj: Any) -> str | None:
    """The object's resourceVersion, or ``None`` when it has none."""
    if type(obj) is ObjectView:
        obj = obj.entry
    if type(obj) is CompactEntry:
        return obj.resource_version or None
    value = _field(metadata_of(obj), "resourceVersion", "resource_version")
    return value if isinstance(value, str) else None


def generation_of(obj: Any) -> int | None:
    """The object's ``metadata.generation``, or ``None`` when it has none (kinds without
    a spec, such as ConfigMaps, carry none)."""
    value = _field(metadata_of(obj), "generation", "generation")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def same_resource_version(old: Any, new: Any) -> bool:
    """Whether two states of one object carry the same resourceVersion: an update between
    them is a resync, not a change (client-go compares the two the same way)."""
    if type(old) is dict and type(new) is dict:
        old_meta, new_meta = old.get("metadata"), new.get("metadata")
        if type(old_meta) is dict and type(new_meta) is dict:
            return bool(old_meta.get("resourceVersion") == new_meta.get("resourceVersion"))
    return resource_version_of(old) == resource_version_of(new)


def labels_of(obj: Any) -> Mapping[str, str] | None:
    """The object's labels, or ``None`` when it has none."""
    if type(obj) is ObjectView:
        obj = obj.entry
    if type(obj) is CompactEntry:
        return obj.labels
    labels: Mapping[str, str] | None = _field(metadata_of(obj), "labels", "labels")
    return labels


def annotations_of(obj: Any) -> Mapping[str, str] | None:
    """The object's annotations, or ``None`` when it has none."""
    annotations: Mapping[str, str] | None = _field(metadata_of(obj), "annotations", "annotations")
    return annotations


def owner_references_of(obj: Any) -> tuple[Mapping[str, Any], ...]:
    """The object's ``ownerReferences`` as wire-shaped mappings (camelCase keys), in order;
    empty when it has none. References held as models are dumped by alias."""
    refs = _field(metadata_of(obj), "ownerReferences", "owner_references") or ()
    return tuple(
        ref.model_dump(by_alias=True) if hasattr(ref, "model_dump") else ref for ref in refs
    )


def api_version_and_kind_of(obj: Any) -> tuple[str | None, str | None]:
    """The object's ``apiVersion`` and ``kind`` (a model's ``api_version`` and ``kind``);
    ``None`` for one it does not carry."""
    if isinstance(obj, Mapping):
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
    else:
        api_version, kind = getattr(obj, "api_version", None), getattr(obj, "kind", None)
    return (
        api_version if isinstance(api_version, str) else None,
        kind if isinstance(kind, str) else None,
    )


def uid_of(obj: Any) -> str | None:
    """The object's uid, or ``None`` when it has none."""
    value = _field(metadata_of(obj), "uid", "uid")
    return value if isinstance(value, str) else None
