"""Owner references: make an object a dependent of another, for garbage collection and for
:func:`~aioinformer.operator.controller.enqueue_owner`.

Role: controller-runtime's ``controllerutil.SetControllerReference`` /
``SetOwnerReference`` / ``RemoveOwnerReference`` / ``HasControllerReference``. Input: an
owner (a dict as the API returns it, or a model such as a
:class:`~aioinformer.models.KubeObject` with ``api_version``, ``kind`` and ``metadata``) and
a dependent object (a dict or a ``KubeObject``). Output: the dependent, changed in place
and returned, its ``metadata.ownerReferences`` holding the reference. Nothing is written to
the API server: create or update the dependent afterwards.

Rules (the garbage collector's and controller-runtime's):

* the owner needs ``apiVersion``, ``kind``, ``metadata.name`` and ``metadata.uid`` (an owner
  read from the server has them all; one built locally and never created has no uid);
* a namespaced owner must be in the dependent's namespace, and a cluster-scoped dependent
  (no ``metadata.namespace``) cannot have a namespaced owner; a cluster-scoped owner fits
  any dependent;
* a reference naming the same owner (same API group, kind and name; the version does not
  count) is replaced in place, never duplicated;
* an object has at most one controller: :func:`set_controller_reference` on an object
  another owner controls raises :class:`~aioinformer.errors.AlreadyOwnedError`.

Task model: pure, synchronous functions.

Example::

    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "hello-config", "namespace": "default"}}
    set_controller_reference(widget, configmap)   # widget: the Widget as read from the cache
    await configmaps.create(configmap)
    # Controller.watch(configmap_informer, enqueue=enqueue_owner("Widget")) now maps the
    # ConfigMap's events to the Widget's key.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from aioinformer._objects.meta import (
    api_version_and_kind_of,
    describe,
    metadata_of,
    name_of,
    namespace_of,
    uid_of,
)
from aioinformer._objects.meta import owner_references_of as _owner_references_of
from aioinformer._objects.view import ObjectView
from aioinformer.errors import AlreadyOwnedError, OwnerReferenceError, ReadOnlyObjectError
from aioinformer.models import OwnerReference

__all__ = [
    "has_controller_reference",
    "remove_owner_reference",
    "set_controller_reference",
    "set_owner_reference",
]


def _owner_reference(owner: Any) -> dict[str, Any]:
    """The wire-shaped reference to ``owner``, without ``controller`` and
    ``blockOwnerDeletion``; raises :class:`OwnerReferenceError` naming what is missing."""
    api_version, kind = api_version_and_kind_of(owner)
    ref = {"apiVersion": api_version, "kind": kind, "name": name_of(owner), "uid": uid_of(owner)}
    missing = [field for field, value in ref.items() if not isinstance(value, str) or not value]
    if missing:
        raise OwnerReferenceError(
            f"owner {describe(owner)} has no {', '.join(missing)}: an owner reference needs "
            "apiVersion, kind, metadata.name and metadata.uid (read the owner from the server)"
        )
    return ref


def _check_scope(owner: Any, obj: Any) -> None:
    owner_ns = namespace_of(owner)
    if not owner_ns:
        return
    obj_ns = namespace_of(obj)
    if not obj_ns:
        raise OwnerReferenceError(
            f"cluster-scoped object {describe(obj)} cannot have a namespaced owner "
            f"(owner's namespace {owner_ns!r})"
        )
    if obj_ns != owner_ns:
        raise OwnerReferenceError(
            f"cross-namespace owner references are disallowed: owner's namespace "
            f"{owner_ns!r}, object's namespace {obj_ns!r}"
        )


def _group(api_version: Any) -> str:
    return str(api_version or "").rpartition("/")[0]


def _same_owner(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two references name one owner: the group, kind and name agree (an owner read
    in another version of its API is still the same object)."""
    return bool(
        _group(a.get("apiVersion")) == _group(b.get("apiVersion"))
        and a.get("kind") == b.get("kind")
        and a.get("name") == b.get("name")
    )


def _write_references(obj: Any, refs: list[dict[str, Any]]) -> None:
    """Store ``refs`` as ``obj``'s ``metadata.ownerReferences``, in ``obj``'s own shape."""
    if isinstance(obj, ObjectView):
        raise ReadOnlyObjectError("owner references are set on a copy")
    if isinstance(obj, MutableMapping):
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, MutableMapping):
            raise TypeError(f"metadata of {describe(obj)} is not a mutable mapping")
        meta["ownerReferences"] = refs
        return
    meta = metadata_of(obj)
    if isinstance(meta, MutableMapping):
        meta["ownerReferences"] = refs
    elif meta is not None and hasattr(meta, "owner_references"):
        meta.owner_references = [OwnerReference.model_validate(ref) for ref in refs]
    else:
        raise TypeError(
            f"cannot set owner references on {describe(obj)}: it is neither a mapping nor a "
            "model whose metadata has owner_references"
        )


def _references(obj: Any) -> list[dict[str, Any]]:
    return [dict(ref) for ref in _owner_references_of(obj)]


def _upsert(obj: Any, ref: dict[str, Any]) -> Any:
    refs = _references(obj)
    for index, existing in enumerate(refs):
        if _same_owner(existing, ref):
            refs[index] = ref
            break
    else:
        refs.append(ref)
    _write_references(obj, refs)
    return obj


def set_controller_reference(owner: Any, obj: Any, *, block_owner_deletion: bool = True) -> Any:
    """Make ``owner`` the controller of ``obj``: add (or update in place) a reference with
    ``controller: true`` and ``blockOwnerDeletion: block_owner_deletion`` to ``obj``'s
    ``metadata.ownerReferences``; return ``obj``.

    Raises :class:`~aioinformer.errors.AlreadyOwnedError` when another owner is the
    controller already, and :class:`~aioinformer.errors.OwnerReferenceError` for an owner
    without apiVersion, kind, name or uid, or one the scope rules (module docstring) forbid.
    """
    ref = _owner_reference(owner)
    _check_scope(owner, obj)
    ref["controller"] = True
    ref["blockOwnerDeletion"] = block_owner_deletion
    for existing in _references(obj):
        if existing.get("controller") and not _same_owner(existing, ref):
            raise AlreadyOwnedError(describe(obj), ref, existing)
    return _upsert(obj, ref)


def set_owner_reference(owner: Any, obj: Any) -> Any:
    """Add ``owner`` to ``obj``'s ``metadata.ownerReferences`` as a plain (non-controller)
    owner, or replace the reference already naming it; return ``obj``.

    As in controller-runtime, a reference already naming ``owner`` is replaced whole, so
    this turns a controller reference to the same owner into a plain one. Raises
    :class:`~aioinformer.errors.OwnerReferenceError` as :func:`set_controller_reference`.
    """
    ref = _owner_reference(owner)
    _check_scope(owner, obj)
    return _upsert(obj, ref)


def remove_owner_reference(owner: Any, obj: Any) -> Any:
    """Remove the reference naming ``owner`` from ``obj``; return ``obj``. Raises
    :class:`~aioinformer.errors.OwnerReferenceError` when ``obj`` has none."""
    ref = _owner_reference(owner)
    refs = _references(obj)
    kept = [existing for existing in refs if not _same_owner(existing, ref)]
    if len(kept) == len(refs):
        raise OwnerReferenceError(
            f"{describe(obj)} has no owner reference to {ref['kind']} {ref['name']!r}"
        )
    _write_references(obj, kept)
    return obj


def has_controller_reference(obj: Any) -> bool:
    """Whether any owner reference of ``obj`` has ``controller: true``."""
    return any(ref.get("controller") for ref in _owner_references_of(obj))
