"""Patch application for the fake API server: JSON merge, JSON and strategic merge patches.

Input is the stored object (never mutated) and a decoded patch document; output is a new
object. Errors raise :class:`PatchError`, which the server answers as 422 ``Invalid`` (or
400 for a document of the wrong shape), as kube-apiserver does.

Strategic merge is approximated without schemas: lists whose items are all objects with a
``name`` field (containers, env, ports, volumes, conditions keyed by ``type``) merge item by
item on that key, ``{"$patch": "delete"}`` inside such an item removes it,
``{"$patch": "replace"}`` on a map replaces it whole, and ``$retainKeys`` /
``$deleteFromPrimitiveList`` directives are dropped. Everything else follows JSON merge
patch (RFC 7386).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["PatchError", "apply_json_patch", "apply_merge_patch", "apply_strategic_merge_patch"]

_MERGE_KEYS = ("name", "type", "containerPort", "mountPath", "devicePath", "ip")


class PatchError(ValueError):
    """The patch cannot be applied; ``code`` is the HTTP status to answer with."""

    def __init__(self, message: str, *, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def _merge_key(items: list[Any]) -> str | None:
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    for key in _MERGE_KEYS:
        if all(key in item for item in items):
            return key
    return None


def apply_strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge patch, approximated as the module docstring describes."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):  # directives: $patch, $retainKeys, $setElementOrder/...
            continue
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key)
        if isinstance(value, list) and isinstance(current, list):
            merged = _merge_lists(current, value)
            result[key] = merged
        else:
            merged_value = apply_strategic_merge_patch(current, value)
            if merged_value is None:
                result.pop(key, None)
            else:
                result[key] = merged_value
    return result


def _merge_lists(current: list[Any], patch: list[Any]) -> list[Any]:
    key = _merge_key(current + patch) if current else _merge_key(patch)
    if key is None:
        return [item for item in copy.deepcopy(patch) if item != {"$patch": "delete"}]
    merged = [dict(item) for item in current]
    index = {item[key]: i for i, item in enumerate(merged)}
    deleted: set[Any] = set()
    for item in patch:
        ident = item.get(key)
        if item.get("$patch") == "delete":
            deleted.add(ident)
            continue
        if ident in index:
            merged[index[ident]] = apply_strategic_merge_patch(merged[index[ident]], item)
        else:
            index[ident] = len(merged)
            merged.append(apply_strategic_merge_patch({}, item))
    return [item for item in merged if item.get(key) not in deleted]


def _unescape_pointer(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _split_pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(f"invalid JSON pointer {path!r}")
    if not path:
        return []
    return [_unescape_pointer(token) for token in path[1:].split("/")]


def _parent(doc: Any, tokens: list[str], path: str) -> tuple[Any, str]:
    current = doc
    for token in tokens[:-1]:
        if isinstance(current, dict) and token in current:
            current = current[token]
        elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
            current = current[int(token)]
        else:
            raise PatchError(f"doc is missing path: {path!r}")
    return current, tokens[-1]


def _get(doc: Any, tokens: list[str], path: str) -> Any:
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise PatchError(f"doc is missing path: {path!r}")


def _remove(doc: Any, tokens: list[str], path: str) -> Any:
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise PatchError(f"unable to remove nonexistent key: {path!r}")


def _add(doc: Any, tokens: list[str], value: Any, path: str, *, replace: bool = False) -> Any:
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError(f"replace operation does not apply: doc is missing key: {path!r}")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = value
            else:
                parent.insert(int(last), value)
        else:
            raise PatchError(f"index out of range in {path!r}")
    else:
        raise PatchError(f"doc is missing path: {path!r}")
    return doc


def apply_json_patch(target: Any, patch: Any) -> Any:
    """RFC 6902 operations: add, remove, replace, move, copy, test."""
    if not isinstance(patch, list):
        raise PatchError("json patch must be a list of operations", code=400)
    doc = copy.deepcopy(target)
    for operation in patch:
        if not isinstance(operation, dict) or "op" not in operation:
            raise PatchError(f"invalid json patch operation {operation!r}", code=400)
        op = operation["op"]
        path = operation.get("path")
        tokens = _split_pointer(path)
        if op == "add":
            doc = _add(doc, tokens, copy.deepcopy(operation.get("value")), str(path))
        elif op == "remove":
            _remove(doc, tokens, str(path))
        elif op == "replace":
            doc = _add(doc, tokens, copy.deepcopy(operation.get("value")), str(path), replace=True)
        elif op in {"move", "copy"}:
            source = _split_pointer(operation.get("from"))
            value = _get(doc, source, str(operation.get("from")))
            if op == "move":
                _remove(doc, source, str(operation.get("from")))
            doc = _add(doc, tokens, copy.deepcopy(value), str(path))
        elif op == "test":
            if _get(doc, tokens, str(path)) != operation.get("value"):
                raise PatchError(f"testing value {path!r} failed")
        else:
            raise PatchError(f"unexpected kind of json patch operation: {op!r}", code=400)
    return doc
