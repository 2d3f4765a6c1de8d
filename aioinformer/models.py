"""Types of the objects that flow through aioinformer.

Two families, for two paths:

* The hot path carries raw objects: ``dict`` exactly as orjson decoded them, described by
  the TypedDicts here (:class:`RawObject`, :class:`RawMeta`). No validation, no copies.
* Typed access is opt-in: :class:`KubeObject` is a pydantic model users subclass for their
  resources (CRDs included) and pass as ``model=``; :class:`ObjectMeta`, :class:`ListMeta`
  and :class:`Status` model the shared parts. Unknown fields are kept (``extra="allow"``),
  so a model never silently drops what the server sent.

Also here: :class:`DeletedFinalStateUnknown`, the tombstone a DeltaFIFO emits when an
object vanished while the watch was down (re-exported by ``delta_fifo``).

Example::

    class Widget(KubeObject):
        spec: WidgetSpec

    widget = Widget.model_validate(raw)
    widget.metadata.name
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DeletedFinalStateUnknown",
    "KubeObject",
    "ListMeta",
    "ObjectMeta",
    "OwnerReference",
    "RawList",
    "RawListMeta",
    "RawMeta",
    "RawObject",
    "Status",
    "StatusCause",
    "StatusDetails",
]


class RawMeta(TypedDict, total=False):
    """``metadata`` of a raw object as decoded from JSON."""

    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[dict[str, Any]]
    finalizers: list[str]
    managedFields: list[dict[str, Any]]


class RawObject(TypedDict, total=False):
    """A Kubernetes object as decoded from JSON: every cached object carries both
    ``apiVersion`` and ``kind`` (the client fills them in on LIST items)."""

    apiVersion: str
    kind: str
    metadata: RawMeta
    spec: Any
    status: Any
    data: dict[str, str]


class RawListMeta(TypedDict, total=False):
    """``metadata`` of a LIST answer."""

    resourceVersion: str
    # "continue" is a Python keyword, so it cannot be a TypedDict field name here;
    # read it with raw["metadata"].get("continue").
    remainingItemCount: int


class RawList(TypedDict):
    """A LIST answer as decoded from JSON."""

    apiVersion: str
    kind: str
    metadata: RawListMeta
    items: list[RawObject]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class OwnerReference(_Model):
    """A reference from a dependent object to its owner."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = Field(default=None, alias="blockOwnerDeletion")


class ObjectMeta(_Model):
    """``metadata`` of every persisted object."""

    name: str | None = None
    generate_name: str | None = Field(default=None, alias="generateName")
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = Field(default=None, alias="resourceVersion")
    generation: int | None = None
    creation_timestamp: str | None = Field(default=None, alias="creationTimestamp")
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list, alias="ownerReferences")
    finalizers: list[str] = Field(default_factory=list)


class ListMeta(_Model):
    """``metadata`` of a LIST answer."""

    resource_version: str | None = Field(default=None, alias="resourceVersion")
    continue_: str | None = Field(default=None, alias="continue")
    remaining_item_count: int | None = Field(default=None, alias="remainingItemCount")


class StatusCause(_Model):
    """One cause inside ``Status.details``."""

    reason: str | None = None
    message: str | None = None
    field: str | None = None


class StatusDetails(_Model):
    """``Status.details``: what the failure was about."""

    name: str | None = None
    group: str | None = None
    kind: str | None = None
    uid: str | None = None
    causes: list[StatusCause] = Field(default_factory=list)
    retry_after_seconds: int | None = Field(default=None, alias="retryAfterSeconds")


class Status(_Model):
    """The API server's answer for failures and some deletes (``kind: Status``)."""

    api_version: str = Field(default="v1", alias="apiVersion")
    kind: str = "Status"
    status: str | None = None
    message: str | None = None
    reason: str | None = None
    details: StatusDetails | None = None
    code: int | None = None


class KubeObject(_Model):
    """Base for typed objects: subclass it and add ``spec``/``status`` fields.

    Fields the subclass does not declare are kept as extras, so converting back with
    ``model_dump(by_alias=True, exclude_unset=True)`` round-trips what the server sent.
    """

    api_version: str | None = Field(default=None, alias="apiVersion")
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """Tombstone for an object deleted while its delete event was missed.

    A DeltaFIFO's ``replace()`` emits it for a key that was known (or queued) but is
    absent from the new list: the object is gone, and ``obj`` is the last state seen,
    which may be stale. Delete handlers receive either an object or one of these.
    """

    key: str
    """The object's ``namespace/name`` key."""
    obj: Any
    """The last known state of the object (possibly stale)."""
