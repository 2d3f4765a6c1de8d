"""The protobuf wire format, as far as Kubernetes bodies use it: varints, tags and
length-delimited fields.

Role: the lowest layer of the fake API server's protobuf decoding (``_protobuf``): it cuts
a message into its fields and knows nothing of what they mean; ``_protobuf_schema``
gives them names and JSON values. Input is the bytes of one message; output is each
field's number, wire type and value (an int for a varint or a fixed-width field, the
bytes of a length-delimited one), or :class:`Malformed` for bytes that are no message
(truncated, a field number 0, a varint longer than 10 bytes, the group wire types 3 and
4, which Kubernetes never writes).

Task model: pure synchronous functions, called from the request handler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Malformed", "fields", "text"]


class Malformed(Exception):
    """The bytes are not a protobuf message (truncated, a bad wire type)."""


def text(value: bytes, where: str) -> str:
    """A string field's bytes as text; ``where`` names the field when they are not UTF-8."""
    try:
        return value.decode()
    except UnicodeDecodeError as exc:
        raise Malformed(f"{where} is not UTF-8") from exc


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Each ``(field number, wire type, value)`` of a message: an int for varints and
    fixed-width fields, the bytes of a length-delimited one."""
    position = 0
    while position < len(data):
        tag, position = _varint(data, position)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise Malformed("field number 0")
        if wire == 0:
            value, position = _varint(data, position)
            yield number, wire, value
        elif wire == 2:
            length, position = _varint(data, position)
            end = position + length
            if end > len(data):
                raise Malformed("a length-delimited field runs past the end")
            yield number, wire, data[position:end]
            position = end
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if position + size > len(data):
                raise Malformed("a fixed-width field runs past the end")
            yield number, wire, int.from_bytes(data[position : position + size], "little")
            position += size
        else:
            raise Malformed(f"wire type {wire}")


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """The varint at ``position`` and the position after it."""
    result = shift = 0
    while True:
        if position >= len(data):
            raise Malformed("a varint runs past the end")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift >= 64:
            raise Malformed("a varint longer than 10 bytes")
