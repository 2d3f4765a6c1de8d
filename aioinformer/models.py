"""Types of the objects that flow through aioinformer.

Two families, for two paths:

* The hot path carries raw objects: ``dict`` exactly as orjson decoded them, described by
  the TypedDicts here (:class:`RawObject`, :class:`RawMeta`). No validation, no copies.
* Typed access is opt-in: :class:`KubeObject` is a pydantic model users subclass for their
  resources (CRDs included) and pass as ``model=``; :class:`ObjectMeta`, :class:`ListMeta`
  and :class:`Status` model the shared parts. Unknown fields are kept (``extra="allow"``),
  so a model never silently drops what the server sent.

Configuration is modelled here too: :class:`KubeConfig` and its parts parse a kubeconfig
file exactly as written (kebab-case keys as aliases); ``config.py`` resolves a context of it
into a ``Config``. Credentials in these models are left out of their reprs.

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

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "DeletedFinalStateUnknown",
    "KubeConfig",
    "KubeConfigAuthInfo",
    "KubeConfigCluster",
    "KubeConfigContext",
    "KubeConfigExec",
    "KubeConfigExecEnvVar",
    "KubeConfigNamedAuthInfo",
    "KubeConfigNamedCluster",
    "KubeConfigNamedContext",
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


class _KubeConfigModel(BaseModel):
    # kubeconfig keys are kebab-case (and a few camelCase); unknown keys, such as
    # "extensions" or settings of newer kubectl releases, are ignored rather than refused.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class KubeConfigCluster(_KubeConfigModel):
    """A kubeconfig ``cluster``: where the API server is and how to trust it."""

    server: str | None = None
    certificate_authority: str | None = Field(default=None, alias="certificate-authority")
    certificate_authority_data: str | None = Field(
        default=None, alias="certificate-authority-data", repr=False
    )
    """Base64 of the PEM bundle (kept out of reprs, like every credential)."""
    insecure_skip_tls_verify: bool = Field(default=False, alias="insecure-skip-tls-verify")
    tls_server_name: str | None = Field(default=None, alias="tls-server-name")
    proxy_url: str | None = Field(default=None, alias="proxy-url")


class KubeConfigExecEnvVar(_KubeConfigModel):
    """One environment variable given to an exec credential plugin."""

    name: str
    value: str = Field(repr=False)


class KubeConfigExec(_KubeConfigModel):
    """A ``user.exec`` credential plugin (``client.authentication.k8s.io`` v1/v1beta1)."""

    command: str
    args: list[str] | None = None
    env: list[KubeConfigExecEnvVar] | None = None
    api_version: str = Field(alias="apiVersion")
    install_hint: str | None = Field(default=None, alias="installHint")
    provide_cluster_info: bool = Field(default=False, alias="provideClusterInfo")
    interactive_mode: str | None = Field(default=None, alias="interactiveMode")


class KubeConfigAuthInfo(_KubeConfigModel):
    """A kubeconfig ``user``: the credentials. None of them is shown in a repr."""

    client_certificate: str | None = Field(default=None, alias="client-certificate")
    client_certificate_data: str | None = Field(
        default=None, alias="client-certificate-data", repr=False
    )
    client_key: str | None = Field(default=None, alias="client-key")
    client_key_data: str | None = Field(default=None, alias="client-key-data", repr=False)
    token: str | None = Field(default=None, repr=False)
    token_file: str | None = Field(default=None, alias="tokenFile")
    username: str | None = None
    password: str | None = Field(default=None, repr=False)
    exec: KubeConfigExec | None = None
    auth_provider: dict[str, Any] | None = Field(default=None, alias="auth-provider", repr=False)
    """Legacy in-tree auth providers (gcp, azure, oidc): recognised in order to refuse them
    with a clear message; they were removed from kubectl in favour of exec plugins."""


class KubeConfigContext(_KubeConfigModel):
    """A kubeconfig ``context``: a cluster, a user and a default namespace."""

    cluster: str
    user: str | None = None
    namespace: str | None = None


class KubeConfigNamedCluster(_KubeConfigModel):
    """An entry of ``clusters``."""

    name: str
    cluster: KubeConfigCluster


class KubeConfigNamedAuthInfo(_KubeConfigModel):
    """An entry of ``users``."""

    name: str
    user: KubeConfigAuthInfo = Field(default_factory=KubeConfigAuthInfo)


class KubeConfigNamedContext(_KubeConfigModel):
    """An entry of ``contexts``."""

    name: str
    context: KubeConfigContext


class KubeConfig(_KubeConfigModel):
    """One kubeconfig file as written. ``null`` lists are read as empty lists.

    Names are unique within a list in practice; when a name repeats, the first entry wins,
    as kubectl does when it merges files.
    """

    api_version: str | None = Field(default=None, alias="apiVersion")
    kind: str | None = None
    clusters: list[KubeConfigNamedCluster] = Field(default_factory=list)
    users: list[KubeConfigNamedAuthInfo] = Field(default_factory=list)
    contexts: list[KubeConfigNamedContext] = Field(default_factory=list)
    current_context: str | None = Field(default=None, alias="current-context")

    @field_validator("clusters", "users", "contexts", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value


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
