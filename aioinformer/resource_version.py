"""Ordering resourceVersions: the one place that decides whether one is newer than another.

Role. The API documents a resourceVersion as an opaque string that clients may only test
for equality. Read-your-own-writes needs more: "has the cache applied my write yet?" is a
question of order. kube-apiserver backed by etcd hands out decimal revision numbers, and
Kubernetes' own consistency checks compare two resourceVersions as integers when both
parse as such; :func:`compare_resource_versions` does the same, and refuses (with
:class:`ValueError`) rather than guesses when either is not such a number.

Input: two resourceVersion strings. Output: their order as -1, 0 or 1.

Ordering and task model: a pure, synchronous function with no state.
"""

from __future__ import annotations

__all__ = ["compare_resource_versions", "parse_resource_version"]


def parse_resource_version(resource_version: str) -> int:
    """The integer a comparable resourceVersion stands for.

    Comparable means a non-empty string of ASCII decimal digits without a leading zero
    (``"0"`` itself is fine): a leading zero, a sign or spaces would make two spellings of
    one number, which the server never produces. Raises :class:`ValueError` naming the
    value otherwise.
    """
    if (
        type(resource_version) is not str
        or not resource_version.isascii()
        or not resource_version.isdigit()
        or (len(resource_version) > 1 and resource_version[0] == "0")
    ):
        raise ValueError(
            f"resourceVersion {resource_version!r} is not comparable: only resourceVersions "
            "made of decimal digits (as etcd-backed servers send) can be ordered"
        )
    return int(resource_version)


def compare_resource_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as resourceVersion ``a`` is older than, the same as, or newer than ``b``.

    Both are compared as integers; :class:`ValueError` if either is not comparable (see
    :func:`parse_resource_version`): an empty string, a non-numeric value from a server
    that is not etcd-backed, ``"01"``.
    """
    left = parse_resource_version(a)
    right = parse_resource_version(b)
    return (left > right) - (left < right)
