"""Kubernetes protobuf request bodies, decoded for the few kinds kubectl's generators send.

Role: lets the fake API server take the writes ``kubectl create configmap``, ``create
secret``, ``create namespace`` and ``create serviceaccount`` send (client-go's typed
clients encode built-in kinds as ``application/vnd.kubernetes.protobuf``). Input is a
request body in that media type; output is the object as the JSON mapping kube-apiserver
would have decoded, or the ``Status`` it answers with: 415 ``UnsupportedMediaType``
naming any other kind (send it as JSON), 400 ``BadRequest`` for a body that is not the
envelope.

The wire format, as apimachinery's protobuf serializer writes it: the four bytes
``k8s\\x00``, then a ``runtime.Unknown`` message (field 1 ``typeMeta`` {1 apiVersion,
2 kind}, 2 ``raw``, 3 ``contentEncoding``, 4 ``contentType``) whose ``raw`` is the
object's own message (fields numbered as in ``k8s.io/api``'s ``generated.proto``). The
schemas below name the fields the fake reads; those the server sets itself
(``selfLink``, the timestamps, ``managedFields``) are skipped, as kube-apiserver
overwrites them, and any other field refuses the body (415) rather than losing it.

A field Go encodes whether set or not (a string, an integer) is left out when empty or
zero, as its ``omitempty`` JSON would be; an optional boolean, present only when set,
is kept as sent.

Task model: pure synchronous functions, called from the request handler.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from aioinformer._apiserver.objects import StatusError, status_body

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["MAGIC", "PROTOBUF", "decode_protobuf_object", "is_protobuf"]

PROTOBUF: Final = "application/vnd.kubernetes.protobuf"
"""The media type of Kubernetes protobuf bodies."""

MAGIC: Final = b"k8s\x00"
"""What every Kubernetes protobuf body starts with."""


@dataclass(frozen=True, slots=True)
class _Field:
    """How one protobuf field maps to JSON: ``name`` in the object, ``kind`` one of
    ``string``, ``int``, ``bool``, ``bytes`` (base64 in JSON), ``message``, ``strings``
    (repeated), ``messages`` (repeated), ``string_map``, ``bytes_map``, or ``skip`` (set
    by the server; dropped). ``schema`` is the message's own, for the message kinds."""

    name: str
    kind: str
    schema: Mapping[int, _Field] | None = None


_Schema = dict[int, _Field]

_SKIP: Final = _Field("", "skip")

_OWNER_REFERENCE: Final[_Schema] = {
    1: _Field("kind", "string"),
    3: _Field("name", "string"),
    4: _Field("uid", "string"),
    5: _Field("apiVersion", "string"),
    6: _Field("controller", "bool"),
    7: _Field("blockOwnerDeletion", "bool"),
}

_OBJECT_META: Final[_Schema] = {
    1: _Field("name", "string"),
    2: _Field("generateName", "string"),
    3: _Field("namespace", "string"),
    4: _SKIP,  # selfLink
    5: _Field("uid", "string"),
    6: _Field("resourceVersion", "string"),
    7: _Field("generation", "int"),
    8: _SKIP,  # creationTimestamp
    9: _SKIP,  # deletionTimestamp
    10: _Field("deletionGracePeriodSeconds", "int"),
    11: _Field("labels", "string_map"),
    12: _Field("annotations", "string_map"),
    13: _Field("ownerReferences", "messages", _OWNER_REFERENCE),
    14: _Field("finalizers", "strings"),
    17: _SKIP,  # managedFields
}

_OBJECT_REFERENCE: Final[_Schema] = {
    1: _Field("kind", "string"),
    2: _Field("namespace", "string"),
    3: _Field("name", "string"),
    4: _Field("uid", "string"),
    5: _Field("apiVersion", "string"),
    6: _Field("resourceVersion", "string"),
    7: _Field("fieldPath", "string"),
}

_METADATA: Final = _Field("metadata", "message", _OBJECT_META)

_KINDS: Final[dict[tuple[str, str], _Schema]] = {
    ("v1", "ConfigMap"): {
        1: _METADATA,
        2: _Field("data", "string_map"),
        3: _Field("binaryData", "bytes_map"),
        4: _Field("immutable", "bool"),
    },
    ("v1", "Secret"): {
        1: _METADATA,
        2: _Field("data", "bytes_map"),
        3: _Field("type", "string"),
        4: _Field("stringData", "string_map"),
        5: _Field("immutable", "bool"),
    },
    ("v1", "Namespace"): {
        1: _METADATA,
        2: _Field("spec", "message", {1: _Field("finalizers", "strings")}),
        3: _Field("status", "message", {1: _Field("phase", "string"), 2: _SKIP}),
    },
    ("v1", "ServiceAccount"): {
        1: _METADATA,
        2: _Field("secrets", "messages", _OBJECT_REFERENCE),
        3: _Field("imagePullSecrets", "messages", {1: _Field("name", "string")}),
        4: _Field("automountServiceAccountToken", "bool"),
    },
}

_TYPE_META: Final[_Schema] = {1: _Field("apiVersion", "string"), 2: _Field("kind", "string")}


class _Malformed(Exception):
    """The bytes are not a protobuf message (truncated, a bad wire type)."""


class _NotDecoded(Exception):
    """A well-formed message with a field the schema does not know."""


def is_protobuf(content_type: str) -> bool:
    """Whether a Content-Type header names the Kubernetes protobuf media type."""
    return content_type.split(";")[0].strip().lower() == PROTOBUF


def _decoded_kinds() -> list[str]:
    """The kinds whose protobuf bodies are decoded, sorted."""
    return sorted(kind for _, kind in _KINDS)


def decode_protobuf_object(body: bytes) -> dict[str, Any]:
    """The object a protobuf request body carries, as its JSON mapping (with the
    ``apiVersion`` and ``kind`` of its envelope), for the kinds of :data:`_KINDS`.

    Raises :class:`StatusError`: 400 ``BadRequest`` when the body is not the envelope,
    415 ``UnsupportedMediaType`` for another kind, an encoded ``raw`` or a field the fake
    does not decode."""
    if not body.startswith(MAGIC):
        raise _bad_request("the protobuf body does not start with the Kubernetes magic number")
    try:
        type_meta, raw, encoding = _envelope(body[len(MAGIC) :])
    except (_Malformed, _NotDecoded) as exc:
        raise _bad_request(f"the protobuf envelope cannot be decoded: {exc}") from exc
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    schema = _KINDS.get((api_version, kind))
    if schema is None:
        raise _unsupported(kind or "object without a kind", "")
    if encoding:
        raise _unsupported(kind, f" (content encoding {encoding!r})")
    try:
        obj = _message(raw, schema, kind)
    except _NotDecoded as exc:
        raise _unsupported(kind, f" ({exc})") from exc
    except _Malformed as exc:
        raise _bad_request(f"the protobuf {kind} cannot be decoded: {exc}") from exc
    return {"apiVersion": api_version, "kind": kind, **obj}


def _envelope(data: bytes) -> tuple[dict[str, Any], bytes, str]:
    """A ``runtime.Unknown``'s type meta, raw object and content encoding (its content
    type, field 4, is always protobuf here and is not read)."""
    type_meta: dict[str, Any] = {}
    raw, encoding = b"", ""
    for number, _, value in _fields(data):
        if number not in (1, 2, 3):
            continue
        if not isinstance(value, bytes):
            raise _Malformed(f"field {number} of runtime.Unknown is not length-delimited")
        if number == 1:
            type_meta = _message(value, _TYPE_META, "runtime.TypeMeta")
        elif number == 2:
            raw = value
        else:
            encoding = _text(value, "runtime.Unknown.contentEncoding")
    return type_meta, raw, encoding


def _bad_request(message: str) -> StatusError:
    return StatusError(status_body(400, "BadRequest", message))


def _unsupported(kind: str, why: str) -> StatusError:
    """kube-apiserver's 415 words, naming the kind and what to send instead."""
    decoded = ", ".join(_decoded_kinds())
    return StatusError(
        status_body(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types "
            f"include: application/json, {PROTOBUF} (for {decoded}); the fake API server "
            f"does not decode a protobuf {kind}{why}: send it as JSON",
        )
    )


def _message(data: bytes, schema: Mapping[int, _Field], where: str) -> dict[str, Any]:
    """One message decoded by ``schema``; empty strings and zero integers left out."""
    out: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        field = schema.get(number)
        if field is None:
            raise _NotDecoded(f"field {number} of {where} is not decoded")
        if field.kind == "skip":
            continue
        _set(out, field, wire, value, f"{where}.{field.name}")
    return out


def _set(out: dict[str, Any], field: _Field, wire: int, value: int | bytes, where: str) -> None:
    kind = field.kind
    if kind in ("int", "bool"):
        if not isinstance(value, int):
            raise _Malformed(f"{where} is not a varint")
        if kind == "bool":
            out[field.name] = bool(value)
        elif value:
            out[field.name] = value - (1 << 64) if value >= 1 << 63 else value
        return
    if not isinstance(value, bytes):
        raise _Malformed(f"{where} is not length-delimited (wire type {wire})")
    if kind == "string":
        if value:
            out[field.name] = _text(value, where)
    elif kind == "bytes":
        out[field.name] = base64.b64encode(value).decode()
    elif kind == "strings":
        out.setdefault(field.name, []).append(_text(value, where))
    elif kind in ("message", "messages"):
        assert field.schema is not None
        decoded = _message(value, field.schema, where)
        if kind == "messages":
            out.setdefault(field.name, []).append(decoded)
        elif decoded:
            out[field.name] = decoded
    else:
        key, item = _map_entry(value, where, binary=kind == "bytes_map")
        out.setdefault(field.name, {})[key] = item


def _map_entry(data: bytes, where: str, *, binary: bool) -> tuple[str, str]:
    """A ``map<string, string|bytes>`` entry (key 1, value 2); bytes come out base64."""
    key, item = "", b""
    for number, _, value in _fields(data):
        if not isinstance(value, bytes) or number not in (1, 2):
            raise _Malformed(f"{where} has a map entry that is not (string, value)")
        if number == 1:
            key = _text(value, where)
        else:
            item = value
    return key, base64.b64encode(item).decode() if binary else _text(item, where)


def _text(value: bytes, where: str) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError as exc:
        raise _Malformed(f"{where} is not UTF-8") from exc


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Each ``(field number, wire type, value)`` of a message: an int for varints and
    fixed-width fields, the bytes of a length-delimited one."""
    position = 0
    while position < len(data):
        tag, position = _varint(data, position)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise _Malformed("field number 0")
        if wire == 0:
            value, position = _varint(data, position)
            yield number, wire, value
        elif wire == 2:
            length, position = _varint(data, position)
            end = position + length
            if end > len(data):
                raise _Malformed("a length-delimited field runs past the end")
            yield number, wire, data[position:end]
            position = end
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if position + size > len(data):
                raise _Malformed("a fixed-width field runs past the end")
            yield number, wire, int.from_bytes(data[position : position + size], "little")
            position += size
        else:
            raise _Malformed(f"wire type {wire}")


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """The varint at ``position`` and the position after it."""
    result = shift = 0
    while True:
        if position >= len(data):
            raise _Malformed("a varint runs past the end")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift >= 64:
            raise _Malformed("a varint longer than 10 bytes")
