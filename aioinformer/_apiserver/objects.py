"""The stored-object model of a list/watch API server: resource types, stored entries,
``Status`` errors.

Role: the value types the watch cache, the request handling and the watch streams of the
fake API server and the caching proxy share. Input is decoded
objects handed to :class:`Entry` and resource descriptions handed to
:class:`ResourceType`; output is the pre-encoded bytes a LIST item, a watch event or a
``PartialObjectMetadata`` is made of, and :class:`StatusError`, which carries the
``Status`` body and HTTP headers a failed request answers with.

Ordering: none; every value here is immutable once built (an :class:`Entry` is replaced,
never changed, by a write).

Task model: plain synchronous functions and values, safe to use from any task of the
server's event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import orjson

from aioinformer.shard_selector import SHARD_FIELDS, fnv1a_64

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aioinformer.labels import FieldSelector, LabelSelector
    from aioinformer.shard_selector import ShardSelector

__all__ = [
    "META_GROUP",
    "Entry",
    "ResourceType",
    "StatusError",
    "encode_item",
    "needs_object",
    "object_key",
    "partial_object",
    "status_body",
]

_BASE_FIELDS: Final = frozenset({"metadata.name", "metadata.namespace"})
_UID_FIELD: Final = SHARD_FIELDS[0]

META_GROUP: Final = "meta.k8s.io"
"""The API group of ``PartialObjectMetadata`` and ``PartialObjectMetadataList``."""


def status_body(
    code: int,
    reason: str,
    message: str,
    details: Mapping[str, Any] | None = None,
    *,
    list_meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``Status`` failure body shaped exactly as kube-apiserver writes it."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": dict(list_meta or {}),
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        body["details"] = dict(details)
    body["code"] = code
    return body


class StatusError(Exception):
    """A request failed; ``status`` is the ``Status`` body, ``headers`` extra headers."""

    def __init__(self, status: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status.get("message", ""))
        self.status = status
        self.code: int = int(status["code"])
        self.headers: dict[str, str] = dict(headers or {})


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource (a built-in or a registered CRD).

    Invariant: ``prefix`` is the encoded ``{"apiVersion":...,"kind":...,`` opening that
    turns an encoded list item into the full object a watch event carries.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    status_subresource: bool = False
    field_labels: frozenset[str] = _BASE_FIELDS
    scale_subresource: bool = False
    """Serves ``/scale``: an ``autoscaling/v1`` Scale over ``spec.replicas``."""
    scale_paths: tuple[str, str, str] | None = None
    """A custom resource's scale paths, as its definition names them
    (``specReplicasPath``, ``statusReplicasPath``, ``labelSelectorPath`` or ``""``, each
    ``.spec.replicas``-like); ``None``: the built-in workloads' fields."""
    generation: bool = False
    """Objects carry ``metadata.generation`` (workloads, pods, custom resources), bumped
    by a change outside metadata and status; ConfigMaps, Secrets, Namespaces... do not."""
    returns_deleted_object: bool = False
    """A delete that removes an object answers with the object as deleted, stamped with
    the deletion's resourceVersion (kube-apiserver's ``ReturnDeletedObject``: Pods,
    Services, ServiceAccounts...); otherwise with a ``Success`` Status naming its uid."""
    prefix: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        opening = orjson.dumps({"apiVersion": self.api_version, "kind": self.kind})
        object.__setattr__(self, "prefix", opening[:-1] + b",")

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """How messages name the resource: ``pods``, ``deployments.apps``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def id(self) -> tuple[str, str]:
        """Storage identity: (group, plural); versions of one resource share it."""
        return (self.group, self.plural)

    def details(self, name: str | None = None) -> dict[str, Any]:
        """``Status.details`` naming an object of this resource."""
        details: dict[str, Any] = {}
        if name is not None:
            details["name"] = name
        if self.group:
            details["group"] = self.group
        details["kind"] = self.plural
        return details


class Entry:
    """One stored object version: its encoding plus what selectors read.

    Only bytes and a few strings are kept, not the decoded object: bytes are invisible to
    the garbage collector, so a store holding many objects and a long history stays cheap
    to scan. ``decode()`` gives the object back.

    Invariants: ``item`` is the object encoded without ``apiVersion``/``kind`` (a LIST
    item); ``rv``, ``namespace``, ``name`` and ``labels`` equal its metadata; an entry is
    never mutated after it is stored (a write stores a new entry), so ``_metadata``, once
    set, stays the encoding of its ``metadata``, and ``_uid_hash`` and
    ``_namespace_hash``, once set (``-1`` before), the FNV-1a 64 hashes shard selectors
    read of its ``uid`` and ``namespace``: each is computed at most once per entry,
    however many watchers and pages ask.
    """

    __slots__ = (
        "_metadata",
        "_namespace_hash",
        "_uid_hash",
        "deleting",
        "item",
        "labels",
        "name",
        "namespace",
        "rv",
        "uid",
    )

    def __init__(self, obj: Mapping[str, Any], rv: int) -> None:
        meta = obj["metadata"]
        self.item = encode_item(obj)
        self._metadata: bytes | None = None
        self.rv = rv
        self.name: str = meta["name"]
        self.namespace: str | None = meta.get("namespace")
        self.labels: Mapping[str, str] | None = meta.get("labels")
        self.uid: str | None = meta.get("uid")
        self.deleting = bool(meta.get("deletionTimestamp"))
        self._uid_hash = -1
        self._namespace_hash = -1

    def full(self, rt: ResourceType) -> bytes:
        """The object encoded with ``apiVersion`` and ``kind``, as watch events carry it."""
        return rt.prefix + self.item[1:]

    def partial(self, api_version: str) -> bytes:
        """The object as a ``PartialObjectMetadata`` of ``api_version`` (``meta.k8s.io/v1``
        or ``meta.k8s.io/v1beta1``): kind, apiVersion and the whole ``metadata``."""
        metadata = self._metadata
        if metadata is None:
            metadata = self._metadata = orjson.dumps(orjson.loads(self.item).get("metadata", {}))
        return partial_object(api_version, metadata)

    def decode(self) -> dict[str, Any]:
        """A fresh decoded copy of the object (without ``apiVersion``/``kind``)."""
        obj: dict[str, Any] = orjson.loads(self.item)
        return obj

    def in_shard(self, shards: ShardSelector) -> bool:
        """Whether the object's hashed ``uid`` or ``namespace`` (``""`` when it has none:
        a cluster-scoped object's) falls in one of ``shards``' ranges; each hash is
        computed once per stored object."""
        return shards.contains_by(self._hash_of)

    def _hash_of(self, field: str) -> int:
        if field == _UID_FIELD:
            h = self._uid_hash
            if h < 0:
                h = self._uid_hash = fnv1a_64(self.uid or "")
            return h
        h = self._namespace_hash
        if h < 0:
            h = self._namespace_hash = fnv1a_64(self.namespace or "")
        return h

    def selected_by(
        self,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
        *,
        fields_need_object: bool,
        shards: ShardSelector | None = None,
    ) -> bool:
        """Whether the selectors pick this object (decoding it only for unusual fields)."""
        if labels is not None and not labels.matches(self.labels):
            return False
        if shards is not None and not self.in_shard(shards):
            return False
        if fields is None:
            return True
        if fields_need_object:
            return fields.matches(self.decode())
        return fields.matches({"metadata": {"name": self.name, "namespace": self.namespace}})


def partial_object(api_version: str, metadata: bytes) -> bytes:
    """A ``PartialObjectMetadata`` encoding around already-encoded ``metadata``."""
    return (
        b'{"kind":"PartialObjectMetadata","apiVersion":"'
        + api_version.encode()
        + b'","metadata":'
        + metadata
        + b"}"
    )


def needs_object(fields: FieldSelector | None) -> bool:
    """Whether ``fields`` reads more than ``metadata.name``/``metadata.namespace``."""
    return fields is not None and not fields.fields() <= _BASE_FIELDS


def encode_item(obj: Mapping[str, Any]) -> bytes:
    """Encode ``obj`` without ``apiVersion``/``kind``, as a LIST item."""
    return orjson.dumps({k: v for k, v in obj.items() if k != "apiVersion" and k != "kind"})


def object_key(namespace: str | None, name: str) -> str:
    """The storage key: ``namespace/name``, or ``name`` for cluster-scoped objects."""
    return f"{namespace}/{name}" if namespace else name
