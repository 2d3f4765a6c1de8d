"""Kubernetes protobuf request bodies, decoded for the kinds kubectl and client-go write.

Role: lets the fake API server take the writes client-go's typed clients encode as
``application/vnd.kubernetes.protobuf``: ``kubectl create configmap``, ``secret``,
``namespace``, ``serviceaccount``, ``deployment``, ``service``, ``job``, ``cronjob`` and
``ingress`` (``kubectl run`` and ``expose`` send JSON), and what other client-go
programs write: Pods, ReplicaSets, StatefulSets, DaemonSets, Endpoints, leader election's
Leases and recorders' Events (both ``v1`` and ``events.k8s.io/v1``).
Input is a request body in that media type; output is the object as the JSON mapping
kube-apiserver would have decoded, or the ``Status`` it answers with: 415
``UnsupportedMediaType`` naming any other kind (send it as JSON), 400 ``BadRequest`` for a
body that is not the envelope.

The wire format, as apimachinery's protobuf serializer writes it: the four bytes
``k8s\\x00``, then a ``runtime.Unknown`` message (field 1 ``typeMeta`` {1 apiVersion,
2 kind}, 2 ``raw``, 3 ``contentEncoding``, 4 ``contentType``) whose ``raw`` is the
object's own message (fields numbered as in ``k8s.io/api``'s ``generated.proto``). This
module reads the envelope and holds the table of kinds, (apiVersion, kind) to the
object's message; the rest is beside it: the wire format in ``_protobuf_wire``, the
schema language and the decoder in ``_protobuf_schema``, and the messages in
``_protobuf_meta`` (object metadata and references), ``_protobuf_workloads`` (Pods and
the workloads), ``_protobuf_services`` (Services, Endpoints, Ingresses) and
``_protobuf_machinery`` (Leases, Events); ConfigMaps, Secrets, Namespaces and
ServiceAccounts, a few fields each, are in the table itself. Each message is described
generically (field number to JSON name, kind, nested message, list or map) and names the
fields the fake reads; those the server sets itself (``selfLink``, the timestamps,
``managedFields``) are skipped, as kube-apiserver overwrites them, and any other field,
at any depth (a probe, a volume, a condition), refuses the body (415) rather than losing
it.

A field Go encodes whether set or not (a string, an integer, a boolean, a struct) is left
out when empty or zero, as its ``omitempty`` JSON would be; a Go pointer (``replicas``,
``automountServiceAccountToken``), present only when set, is kept as sent, zero or not.

Task model: pure synchronous functions, called from the request handler.
"""

from __future__ import annotations

from typing import Any, Final

from aioinformer._apiserver.objects import StatusError, status_body
from aioinformer.testing._protobuf_machinery import CORE_EVENT, EVENT, LEASE
from aioinformer.testing._protobuf_meta import LOCAL_OBJECT_REFERENCE, METADATA, OBJECT_REFERENCE
from aioinformer.testing._protobuf_schema import SKIP, Field, NotDecoded, Schema, decode_message
from aioinformer.testing._protobuf_services import ENDPOINTS, INGRESS, SERVICE
from aioinformer.testing._protobuf_wire import Malformed, fields, text
from aioinformer.testing._protobuf_workloads import (
    CRON_JOB,
    DAEMON_SET,
    DEPLOYMENT,
    JOB,
    POD,
    REPLICA_SET,
    STATEFUL_SET,
)

__all__ = ["MAGIC", "PROTOBUF", "decode_protobuf_object", "is_protobuf"]

PROTOBUF: Final = "application/vnd.kubernetes.protobuf"
"""The media type of Kubernetes protobuf bodies."""

MAGIC: Final = b"k8s\x00"
"""What every Kubernetes protobuf body starts with."""


_KINDS: Final[dict[tuple[str, str], Schema]] = {
    ("v1", "ConfigMap"): {
        1: METADATA,
        2: Field("data", "string", map=True),
        3: Field("binaryData", "bytes", map=True),
        4: Field("immutable", "bool", optional=True),
    },
    ("v1", "Secret"): {
        1: METADATA,
        2: Field("data", "bytes", map=True),
        3: Field("type", "string"),
        4: Field("stringData", "string", map=True),
        5: Field("immutable", "bool", optional=True),
    },
    ("v1", "Namespace"): {
        1: METADATA,
        2: Field("spec", "message", {1: Field("finalizers", "string", repeated=True)}),
        3: Field("status", "message", {1: Field("phase", "string"), 2: SKIP}),
    },
    ("v1", "ServiceAccount"): {
        1: METADATA,
        2: Field("secrets", "message", OBJECT_REFERENCE, repeated=True),
        3: Field("imagePullSecrets", "message", LOCAL_OBJECT_REFERENCE, repeated=True),
        4: Field("automountServiceAccountToken", "bool", optional=True),
    },
    ("v1", "Pod"): POD,
    ("v1", "Service"): SERVICE,
    ("v1", "Endpoints"): ENDPOINTS,
    ("v1", "Event"): CORE_EVENT,
    ("apps/v1", "Deployment"): DEPLOYMENT,
    ("apps/v1", "ReplicaSet"): REPLICA_SET,
    ("apps/v1", "StatefulSet"): STATEFUL_SET,
    ("apps/v1", "DaemonSet"): DAEMON_SET,
    ("batch/v1", "Job"): JOB,
    ("batch/v1", "CronJob"): CRON_JOB,
    ("networking.k8s.io/v1", "Ingress"): INGRESS,
    ("coordination.k8s.io/v1", "Lease"): LEASE,
    ("events.k8s.io/v1", "Event"): EVENT,
}

_TYPE_META: Final[Schema] = {1: Field("apiVersion", "string"), 2: Field("kind", "string")}


def is_protobuf(content_type: str) -> bool:
    """Whether a Content-Type header names the Kubernetes protobuf media type."""
    return content_type.split(";")[0].strip().lower() == PROTOBUF


def _decoded_kinds() -> list[str]:
    """The kinds whose protobuf bodies are decoded, sorted."""
    return sorted({kind for _, kind in _KINDS})


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
    except (Malformed, NotDecoded) as exc:
        raise _bad_request(f"the protobuf envelope cannot be decoded: {exc}") from exc
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    schema = _KINDS.get((api_version, kind))
    if schema is None:
        raise _unsupported(kind or "object without a kind", "")
    if encoding:
        raise _unsupported(kind, f" (content encoding {encoding!r})")
    try:
        obj = decode_message(raw, schema, kind)
    except NotDecoded as exc:
        raise _unsupported(kind, f" ({exc})") from exc
    except Malformed as exc:
        raise _bad_request(f"the protobuf {kind} cannot be decoded: {exc}") from exc
    return {"apiVersion": api_version, "kind": kind, **obj}


def _envelope(data: bytes) -> tuple[dict[str, Any], bytes, str]:
    """A ``runtime.Unknown``'s type meta, raw object and content encoding (its content
    type, field 4, is always protobuf here and is not read)."""
    type_meta: dict[str, Any] = {}
    raw, encoding = b"", ""
    for number, _, value in fields(data):
        if number not in (1, 2, 3):
            continue
        if not isinstance(value, bytes):
            raise Malformed(f"field {number} of runtime.Unknown is not length-delimited")
        if number == 1:
            type_meta = decode_message(value, _TYPE_META, "runtime.TypeMeta")
        elif number == 2:
            raw = value
        else:
            encoding = text(value, "runtime.Unknown.contentEncoding")
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
