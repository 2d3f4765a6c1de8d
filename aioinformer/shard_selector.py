"""Shard selectors: the slices of a resource a LIST or WATCH asks the API server for.

Role: the vocabulary of server-side sharded list and watch (KEP-5866, kube-apiserver
1.36 alpha behind the ``ShardedListAndWatch`` gate). A shard selector names ranges of a
64-bit hash space; the server hashes one field of each object (its ``metadata.uid`` or
its ``metadata.namespace``) with FNV-1a 64 and serves only the objects whose hash falls in
one of the ranges, on every page of a LIST and on a watch. This module writes and reads
the selector's text, builds the ranges that split the space among replicas, and answers
whether an object belongs: the fake API server and the caching proxy filter with it, and
an informer checks a source's answer against it.

Grammar, as kube-apiserver accepts it::

    shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
    shardRange(object.metadata.namespace, '0x0', '0x4000000000000000') || shardRange(...)

A range is ``[start, end)``: the hash ``h`` of the field's string is in it when
``start <= h < end``. Bounds are ``0x`` and up to 16 hex digits, quoted with ``'`` or
``"``; ``start`` must be less than ``end``. Several ranges joined by ``||`` select the
objects in any of them. ``str()`` of a
selector is the normalised text kube-apiserver echoes in a LIST's ``shardInfo``: each
bound as ``0x`` and 16 lower-case hex digits, ranges joined by `` || ``. As the bounds are
64-bit and the end is excluded, the one hash ``0xffffffffffffffff`` is in no range; a
ring's ranges cover every other.

Invalid text raises :class:`~aioinformer.errors.SelectorError` with kube-apiserver's
message (``invalid shard selector: shard range start 0x8000000000000000 must be less than
end 0x0000000000000000``), before any request is sent; the fake API server answers the
same text with a 500, as kube-apiserver does.

Example::

    selectors = ShardSelector.split(3)  # three replicas, each a third of the space
    options = ListOptions(shard_selector=str(selectors[0]))
    selectors[0].contains(uid=pod["metadata"]["uid"], namespace="default")
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, cast

from aioinformer.errors import SelectorError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "HASH_SPACE",
    "SHARD_FIELDS",
    "ShardField",
    "ShardRange",
    "ShardSelector",
    "fnv1a_64",
    "parse_shard_selector",
]

HASH_SPACE: Final = 1 << 64
"""The size of the hash space; a range's bounds lie in ``[0, HASH_SPACE)``."""

ShardField = Literal["object.metadata.uid", "object.metadata.namespace"]
"""The fields a shard selector may hash."""

SHARD_FIELDS: Final[tuple[ShardField, ...]] = (
    "object.metadata.uid",
    "object.metadata.namespace",
)
"""The supported field paths, in the order kube-apiserver's message lists them."""

_MASK: Final = HASH_SPACE - 1
_OFFSET: Final = 0xCBF29CE484222325
_PRIME: Final = 0x100000001B3


def fnv1a_64(value: str) -> int:
    """The 64-bit FNV-1a hash of ``value``'s UTF-8 bytes, as Go's ``hash/fnv`` computes it
    (``fnv1a_64("") == 0xcbf29ce484222325``)."""
    h = _OFFSET
    for byte in value.encode():
        h = ((h ^ byte) * _PRIME) & _MASK
    return h


def _hex(bound: int) -> str:
    return f"0x{bound:016x}"


@dataclass(frozen=True, slots=True)
class ShardRange:
    """One range ``[start, end)`` of the hash of one field."""

    field: ShardField
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.field not in SHARD_FIELDS:
            raise SelectorError(_unsupported(self.field))
        for bound in (self.start, self.end):
            if not 0 <= bound < HASH_SPACE:
                raise SelectorError(
                    f"invalid shard selector: shard range bound {bound:#x} is not a 64-bit value"
                )
        if self.start >= self.end:
            raise SelectorError(
                f"invalid shard selector: shard range start {_hex(self.start)} must be less"
                f" than end {_hex(self.end)}"
            )

    def contains_hash(self, h: int) -> bool:
        """Whether the hash ``h`` is in the range."""
        return self.start <= h < self.end

    def __str__(self) -> str:
        return f"shardRange({self.field}, '{_hex(self.start)}', '{_hex(self.end)}')"


@dataclass(frozen=True, slots=True)
class ShardSelector:
    """Ranges of one field's hash, joined by ``||``: an object belongs when its hash is in
    any of them. Build one with :meth:`split`, :meth:`of` or :func:`parse_shard_selector`;
    ``str()`` is the text a request carries."""

    ranges: tuple[ShardRange, ...]

    def __post_init__(self) -> None:
        if not self.ranges:
            raise SelectorError("invalid shard selector: no shard range")

    @classmethod
    def of(
        cls, *bounds: tuple[int, int], field: ShardField = "object.metadata.uid"
    ) -> ShardSelector:
        """A selector of the ranges ``[start, end)`` given as pairs."""
        return cls(tuple(ShardRange(field, start, end) for start, end in bounds))

    @classmethod
    def split(cls, count: int, *, field: ShardField = "object.metadata.uid") -> list[ShardSelector]:
        """The hash space cut into ``count`` adjacent ranges of (nearly) equal size, one
        selector each, in order: what ``count`` replicas that share a resource watch."""
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        cuts = [HASH_SPACE * i // count for i in range(count)] + [_MASK]
        return [cls((ShardRange(field, cuts[i], cuts[i + 1]),)) for i in range(count)]

    def contains_hash(self, h: int) -> bool:
        """Whether the hash ``h`` is in any of the ranges."""
        return any(r.start <= h < r.end for r in self.ranges)

    def contains(self, *, uid: str, namespace: str) -> bool:
        """Whether an object with this ``uid`` and ``namespace`` (``""`` for a
        cluster-scoped one) belongs to the selector: its field's hash is in a range."""
        hashes: dict[str, int] = {}

        def hash_of(field: ShardField) -> int:
            h = hashes.get(field)
            if h is None:
                h = hashes[field] = fnv1a_64(uid if field == SHARD_FIELDS[0] else namespace)
            return h

        return self.contains_by(hash_of)

    def contains_by(self, hash_of: Callable[[ShardField], int]) -> bool:
        """Whether the object whose field hashes ``hash_of(field)`` gives belongs to the
        selector: for a holder of hashes computed once (the fake API server's stored
        objects keep theirs)."""
        for r in self.ranges:
            h = hash_of(r.field)
            if r.start <= h < r.end:
                return True
        return False

    def __str__(self) -> str:
        return " || ".join(str(r) for r in self.ranges)


_RANGE = re.compile(
    r"""\s*shardRange\s*\(\s*(?P<field>[^,\s)]*)\s*,\s*(?P<q1>['"])(?P<start>[^'"]*)(?P=q1)\s*,"""
    r"""\s*(?P<q2>['"])(?P<end>[^'"]*)(?P=q2)\s*\)\s*"""
)
_BOUND = re.compile(r"0[xX][0-9a-fA-F]{1,16}")


def _unsupported(path: str) -> str:
    return f'invalid shard selector: unsupported field path "{path}"; supported: ' + ", ".join(
        SHARD_FIELDS
    )


def _bound(text: str) -> int:
    if not _BOUND.fullmatch(text):
        raise SelectorError(
            f"invalid shard selector: shard range bound {text!r} is not 0x followed by"
            " 1 to 16 hex digits"
        )
    return int(text, 16)


def parse_shard_selector(text: str) -> ShardSelector:
    """The selector ``text`` writes; raises :class:`~aioinformer.errors.SelectorError`
    with kube-apiserver's message when it does not parse."""
    ranges: list[ShardRange] = []
    for part in text.split("||"):
        match = _RANGE.fullmatch(part)
        if match is None:
            raise SelectorError(
                "invalid shard selector: expected shardRange(<field>, '<start>', '<end>'),"
                f" got {part.strip()!r}"
            )
        path = match["field"]
        if path not in SHARD_FIELDS:
            raise SelectorError(_unsupported(path))
        ranges.append(
            ShardRange(cast("ShardField", path), _bound(match["start"]), _bound(match["end"]))
        )
    return ShardSelector(tuple(ranges))
