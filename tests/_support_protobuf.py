"""A hand encoder of the Kubernetes protobuf wire format, for the tests' request bodies:
the ``k8s\\x00`` magic, a ``runtime.Unknown`` envelope, and the object's fields as
``generated.proto`` numbers them."""

from __future__ import annotations

from aioinformer.testing._protobuf import MAGIC


def varint(value: int) -> bytes:
    """An unsigned varint."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, value: bytes | int | bool) -> bytes:
    """One field: length-delimited for bytes, a varint otherwise."""
    if isinstance(value, bytes):
        return varint(number << 3 | 2) + varint(len(value)) + value
    return varint(number << 3) + varint(int(value))


def text(number: int, value: str) -> bytes:
    """A string field."""
    return field(number, value.encode())


def entry(number: int, key: str, value: bytes) -> bytes:
    """One entry of a ``map<string, ...>`` field."""
    return field(number, text(1, key) + field(2, value))


def envelope(api_version: str, kind: str, raw: bytes, *, encoding: str = "") -> bytes:
    """A whole request body carrying the object message ``raw``."""
    type_meta = text(1, api_version) + text(2, kind)
    return MAGIC + field(1, type_meta) + field(2, raw) + text(3, encoding) + text(4, "")
