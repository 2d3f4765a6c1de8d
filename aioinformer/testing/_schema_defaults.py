"""Pruning and defaulting of custom objects by their definition's compiled schema, as
kube-apiserver v1.36's apiextensions server does them when it decodes an object.

Role: the rewriting half of the fake's custom-resource admission, run on every create
and update (and ``status`` write) before the object is validated. Input is a decoded
object, owned by the caller, and the :class:`~aioinformer.testing._schema.Node` of its
version; output is the object changed in place and the paths of the fields pruned:

* pruning (apiextensions' ``pruning``): a field the schema does not specify is dropped,
  unless its object is ``x-kubernetes-preserve-unknown-fields: true`` (whose known
  fields are still pruned within) or it is the ``apiVersion``, ``kind`` or ``metadata``
  of the object itself or of an ``x-kubernetes-embedded-resource``; the items of a
  list without an ``items`` schema lose every field;
* nulls (``PruneNonNullableNullsWithoutDefaults``): a ``null`` where the schema is not
  ``nullable`` and has no ``default`` is dropped;
* defaulting (``structuraldefaulting.Default``): a property with a ``default`` that is
  absent, or ``null`` where not ``nullable``, gets a copy of the default; so do list
  items and additional properties that are such ``null`` values. Defaults apply inside
  objects that are present (or were just defaulted), never creating a missing parent.

Kube-apiserver also defaults when it reads an object from etcd, so a default added to a
schema later shows in old objects; the fake applies defaults on write only, which
differs only for objects stored before their schema changed.

Ordering: prune, then drop nulls, then default, as the apiserver's decoder does; the
pruned paths come in the object's field order (``spec.foo``, ``spec.items[0].bar``).

Task model: pure synchronous functions over one object.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Final

from aioinformer.testing._schema import MISSING

if TYPE_CHECKING:
    from aioinformer.testing._schema import Node

__all__ = ["apply_defaults", "prune"]

_RESOURCE_FIELDS: Final = frozenset({"apiVersion", "kind", "metadata"})


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune(value: Any, node: Node | None, path: str, pruned: list[str], root: bool) -> None:
    if isinstance(value, dict):
        keeps_resource = root or (node is not None and node.embedded)
        preserve = node is not None and node.preserve_unknown
        for key in list(value):
            if keeps_resource and key in _RESOURCE_FIELDS:
                continue
            sub = None if node is None else node.properties.get(key, node.additional)
            if sub is not None:
                _prune(value[key], sub, _join(path, key), pruned, False)
            elif not preserve:
                pruned.append(_join(path, key))
                del value[key]
    elif isinstance(value, list):
        if node is not None and node.preserve_unknown and node.items is None:
            return
        items = None if node is None else node.items
        for i, item in enumerate(value):
            _prune(item, items, f"{path}[{i}]", pruned, False)


def prune(obj: dict[str, Any], node: Node) -> list[str]:
    """Drop the fields of ``obj`` that ``node`` does not specify; the paths dropped."""
    pruned: list[str] = []
    _prune(obj, node, "", pruned, True)
    return pruned


def _non_nullable_null(value: Any, node: Node) -> bool:
    return value is None and not node.nullable


def _prune_nulls(value: Any, node: Node) -> None:
    if isinstance(value, dict):
        for key in list(value):
            sub = node.properties.get(key, node.additional)
            if sub is None:
                continue
            item = value[key]
            if _non_nullable_null(item, sub) and sub.default is MISSING:
                del value[key]
            else:
                _prune_nulls(item, sub)
    elif isinstance(value, list) and node.items is not None:
        for item in value:
            _prune_nulls(item, node.items)


def _default(value: Any, node: Node) -> None:
    if isinstance(value, dict):
        for key, prop in node.properties.items():
            if prop.default is not MISSING and (
                key not in value or _non_nullable_null(value[key], prop)
            ):
                value[key] = copy.deepcopy(prop.default)
        additional = node.additional
        for key, item in value.items():
            sub = node.properties.get(key)
            if sub is None and additional is not None:
                sub = additional
                if _non_nullable_null(item, sub) and sub.default is not MISSING:
                    item = value[key] = copy.deepcopy(sub.default)
            if sub is not None:
                _default(item, sub)
    elif isinstance(value, list) and node.items is not None:
        items = node.items
        for i, item in enumerate(value):
            if _non_nullable_null(item, items) and items.default is not MISSING:
                item = value[i] = copy.deepcopy(items.default)
            _default(item, items)


def apply_defaults(obj: dict[str, Any], node: Node) -> None:
    """Drop the non-nullable nulls without defaults, then apply ``node``'s defaults."""
    _prune_nulls(obj, node)
    _default(obj, node)
