"""The schema language of the fake API server's protobuf tables, and the decoder that reads
a message by one.

Role: between the wire format (``_protobuf_wire``, which cuts a message into numbered
fields) and the tables of the kinds (``_protobuf_meta``, ``_protobuf_workloads``,
``_protobuf_services``, ``_protobuf_machinery``): a :class:`Field` says how one field
maps to JSON (its name, its kind, a nested message, a list or a map), a :data:`Schema`
names a message's fields by number, and :func:`decode_message` reads a message by its
schema, with apimachinery's value types (``resource.Quantity``, ``intstr.IntOrString``,
``metav1.Time`` and ``MicroTime``) decoded to their JSON forms. Input is the bytes of a
message and its schema; output is its JSON mapping, or :class:`NotDecoded` for a field
the schema does not name (at any depth: the body is refused rather than losing it) and
:class:`~aioinformer.testing._protobuf_wire.Malformed` for bytes that do not fit.

A field Go encodes whether set or not (a string, an integer, a boolean, a struct) is left
out when empty or zero, as its ``omitempty`` JSON would be; a Go pointer (``optional``),
present only when set, is kept as sent, zero or not.

Task model: pure synchronous functions, called from the request handler.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from aioinformer.testing._protobuf_wire import Malformed, fields, text

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["SKIP", "Field", "NotDecoded", "Schema", "decode_message"]


@dataclass(frozen=True, slots=True)
class Field:
    """How one protobuf field maps to JSON: ``name`` in the object (empty for an inline
    message, whose fields join the parent's); ``kind`` one of ``string``, ``int``,
    ``bool``, ``bytes`` (base64 in JSON), ``quantity`` (``resource.Quantity``, a string in
    JSON), ``int_or_string`` (``intstr.IntOrString``), ``time`` (``metav1.Time``, RFC 3339),
    ``micro_time`` (``metav1.MicroTime``, to the microsecond), ``message`` (decoded by
    ``schema``) or ``skip`` (set by the server; dropped).
    ``repeated`` makes it a list, ``map`` a ``map<string, kind>``; ``optional`` marks a Go
    pointer, kept as sent even when zero or empty (a value field is left out then, as its
    ``omitempty`` JSON would be)."""

    name: str
    kind: str
    schema: Mapping[int, Field] | None = None
    repeated: bool = False
    map: bool = False
    optional: bool = False


Schema: TypeAlias = dict[int, Field]
"""A message: its fields by number."""

SKIP: Final = Field("", "skip")
"""A field the server sets itself (``selfLink``, the timestamps, ``managedFields``): read
past and dropped, as kube-apiserver overwrites it."""


class NotDecoded(Exception):
    """A well-formed message with a field the schema does not know."""


def decode_message(data: bytes, schema: Mapping[int, Field], where: str) -> dict[str, Any]:
    """One message decoded by ``schema``; a field it does not name refuses the body."""
    out: dict[str, Any] = {}
    for number, wire, value in fields(data):
        field = schema.get(number)
        if field is None:
            raise NotDecoded(f"field {number} of {where} is not decoded")
        if field.kind == "skip":
            continue
        _set(out, field, wire, value, f"{where}.{field.name}" if field.name else where)
    return out


def _set(out: dict[str, Any], field: Field, wire: int, value: int | bytes, where: str) -> None:
    """Put one occurrence of ``field`` into ``out``: a list item, a map entry, an inline
    message's fields, or the value (a zero or empty one only for a Go pointer)."""
    if field.map:
        if not isinstance(value, bytes):
            raise Malformed(f"{where} is not length-delimited (wire type {wire})")
        key, item = _map_entry(value, field, where)
        out.setdefault(field.name, {})[key] = item
        return
    decoded = _value(field, wire, value, where)
    if field.repeated:
        out.setdefault(field.name, []).append(decoded)
    elif not field.name:
        out.update(decoded)
    elif decoded is not None and (field.optional or decoded):
        out[field.name] = decoded


def _value(field: Field, wire: int, value: int | bytes, where: str) -> Any:
    """One field's value, as JSON has it."""
    kind = field.kind
    if kind in ("int", "bool"):
        if not isinstance(value, int):
            raise Malformed(f"{where} is not a varint")
        if kind == "bool":
            return bool(value)
        return value - (1 << 64) if value >= 1 << 63 else value
    if not isinstance(value, bytes):
        raise Malformed(f"{where} is not length-delimited (wire type {wire})")
    if kind == "string":
        return text(value, where)
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind == "message":
        assert field.schema is not None
        return decode_message(value, field.schema, where)
    if kind == "quantity":
        return decode_message(value, _QUANTITY, where).get("string", "")
    if kind == "int_or_string":
        return _int_or_string(decode_message(value, _INT_OR_STRING, where))
    return _time(decode_message(value, _TIME, where), micro=kind == "micro_time")


_QUANTITY: Final[Schema] = {1: Field("string", "string")}
"""``resource.Quantity``: its string form."""

_INT_OR_STRING: Final[Schema] = {
    1: Field("type", "int"),
    2: Field("intVal", "int"),
    3: Field("strVal", "string"),
}
"""``intstr.IntOrString``: type 0 is the integer, 1 the string."""

_TIME: Final[Schema] = {1: Field("seconds", "int"), 2: Field("nanos", "int")}
"""``metav1.Time``: seconds and nanoseconds since the Unix epoch."""


def _int_or_string(decoded: Mapping[str, Any]) -> int | str:
    if decoded.get("type", 0) == 1:
        string: str = decoded.get("strVal", "")
        return string
    number: int = decoded.get("intVal", 0)
    return number


def _time(decoded: Mapping[str, Any], *, micro: bool) -> str | None:
    """RFC 3339 as JSON writes a ``metav1.Time`` (to the second) or a ``MicroTime`` (to the
    microsecond); ``None`` for the zero time, which Go encodes as an empty message."""
    if not decoded:
        return None
    seconds, nanos = decoded.get("seconds", 0), decoded.get("nanos", 0)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=nanos // 1000)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _map_entry(data: bytes, field: Field, where: str) -> tuple[str, Any]:
    """A ``map<string, ...>`` entry (key 1, value 2), the value decoded as ``field``'s kind."""
    key, item = "", b""
    for number, _, value in fields(data):
        if not isinstance(value, bytes) or number not in (1, 2):
            raise Malformed(f"{where} has a map entry that is not (string, value)")
        if number == 1:
            key = text(value, where)
        else:
            item = value
    return key, _value(field, 2, item, f"{where}[{key}]")
