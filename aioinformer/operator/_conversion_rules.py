"""What kube-apiserver does with a conversion webhook's converted object, done beforehand.

Role: the API server checks each object a conversion webhook answers against the object
it sent (apiextensions-apiserver's ``webhook_converter.go``): the same kind, the same
name, namespace and uid, and metadata otherwise its own except labels and annotations,
which the webhook may change but which must then be valid. It refuses the first three
outright (the client's read fails with the webhook blamed) and silently puts every other
metadata field back. :func:`settle_metadata` applies the same rules to one converted
object, so that :class:`~aioinformer.operator.conversion.Conversion` answers a Failure
naming the fault, and a Success that is exactly what the API server will keep.

Input: the object as the request carried it and the converter's result. Output: the
result with the original's metadata restored (labels and annotations the converter's),
or :class:`RuleBroken` naming the first rule it breaks.

Task model: pure synchronous functions.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["RuleBroken", "annotation_problem", "label_problem", "settle_metadata"]

_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE: Final = re.compile(_NAME_FMT)
_SUBDOMAIN_RE: Final = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)
_MAX_NAME: Final = 63
_MAX_PREFIX: Final = 253
_ANNOTATIONS_LIMIT: Final = 256 * 1024
"""Bytes the keys and values of an object's annotations may take together."""

_IDENTITY: Final = ("name", "namespace", "uid")
"""The metadata a converted object must keep, or the API server refuses it."""


class RuleBroken(Exception):
    """A converted object the API server would refuse; ``str()`` says why. ``review``
    turns it into the answer's Failure message; it never reaches its caller."""


def _qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a qualified name (``[prefix/]name``), or ``None``."""
    if key.count("/") > 1:
        return "a key holds at most one '/'"
    prefix, slash, name = key.rpartition("/")
    if slash and (
        not prefix or len(prefix.encode()) > _MAX_PREFIX or not _SUBDOMAIN_RE.fullmatch(prefix)
    ):
        return "the prefix before '/' must be a DNS subdomain of at most 253 characters"
    if not name or len(name.encode()) > _MAX_NAME or not _NAME_RE.fullmatch(name):
        return (
            "the name must be 1 to 63 alphanumerics, '-', '_' or '.', starting and "
            "ending with an alphanumeric"
        )
    return None


def label_problem(key: str, value: str) -> str | None:
    """Why ``key: value`` is not a valid label, in apimachinery's rules, or ``None``."""
    problem = _qualified_name_problem(key)
    if problem is not None:
        return f"label key {key!r}: {problem}"
    if value and (len(value.encode()) > _MAX_NAME or not _NAME_RE.fullmatch(value)):
        return (
            f"label {key!r} value {value!r}: must be empty or 1 to 63 alphanumerics, '-', "
            "'_' or '.', starting and ending with an alphanumeric"
        )
    return None


def annotation_problem(annotations: Mapping[str, str]) -> str | None:
    """Why ``annotations`` are not valid, in apimachinery's rules, or ``None``."""
    size = 0
    for key, value in annotations.items():
        problem = _qualified_name_problem(key.lower())
        if problem is not None:
            return f"annotation key {key!r}: {problem}"
        size += len(key.encode()) + len(value.encode())
    if size > _ANNOTATIONS_LIMIT:
        return f"annotations take {size} bytes, more than the {_ANNOTATIONS_LIMIT} allowed"
    return None


def _string_map(meta: Mapping[str, Any], field: str) -> dict[str, str] | None:
    """``meta[field]`` as a map of strings (``None`` when absent or null)."""
    value = meta.get(field)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise RuleBroken(f"metadata.{field} is a {type(value).__name__}, not an object")
    for key, item in value.items():
        if not isinstance(item, str):
            raise RuleBroken(f"metadata.{field}[{key!r}] is a {type(item).__name__}, not a string")
    return dict(value)


def settle_metadata(original: Mapping[str, Any], converted: dict[str, Any]) -> dict[str, Any]:
    """``converted`` as the API server keeps it, or :class:`RuleBroken`.

    Refused: another ``kind``; no ``metadata`` object (in either); another name, namespace
    or uid;
    labels or annotations that are not maps of strings, or, when they changed, invalid
    ones. Restored: every other metadata field, from ``original`` (deep-copied), so a
    converter that touched ``resourceVersion`` or ``finalizers`` has no effect there.
    Labels and annotations are the converter's; absent or null, they are dropped.
    """
    if converted.get("kind") != original.get("kind"):
        raise RuleBroken(
            f"kind {converted.get('kind')!r} is not the request's {original.get('kind')!r}"
        )
    answered = converted.get("metadata")
    if not isinstance(answered, Mapping):
        what = "no metadata" if answered is None else f"metadata of type {type(answered).__name__}"
        raise RuleBroken(f"the converted object has {what} (a converter keeps the input's)")
    found = original.get("metadata", {})
    if not isinstance(found, Mapping):
        raise RuleBroken(f"the request's object has metadata of type {type(found).__name__}")
    sent: Mapping[str, Any] = found
    for field in _IDENTITY:
        if (answered.get(field) or "") != (sent.get(field) or ""):
            raise RuleBroken(
                f"metadata.{field} {answered.get(field)!r} is not the request's "
                f"{sent.get(field)!r}: a conversion keeps an object's identity"
            )
    restored: dict[str, Any] = copy.deepcopy(dict(sent))
    for field in ("labels", "annotations"):
        kept = _string_map(answered, field)
        if kept is None:
            restored.pop(field, None)
            continue
        if kept != sent.get(field):
            problem = (
                next((p for k, v in kept.items() if (p := label_problem(k, v))), None)
                if field == "labels"
                else annotation_problem(kept)
            )
            if problem is not None:
                raise RuleBroken(problem)
        restored[field] = kept
    converted["metadata"] = restored
    return converted
