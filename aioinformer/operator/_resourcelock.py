"""The lock a leader election contends for: the ``ResourceLock`` seam and ``LeaseLock``.

Role: store and fetch a :class:`LeaderElectionRecord` with optimistic concurrency, so that
of several electors writing at once exactly one wins. The elector
(:mod:`aioinformer.operator.leaderelection`) depends only on the :class:`ResourceLock` protocol;
:class:`LeaseLock` implements it over a ``coordination.k8s.io/v1`` Lease, tests implement it
in memory.

Input and output: ``get()`` returns the stored record and its *raw* form, bytes that change
whenever the stored record changes (the elector compares raw forms to notice that another
holder renewed). ``create()`` and ``update()`` write a record; ``update()`` is conditional on
the resourceVersion of the object last read or written through this lock, so a concurrent
writer makes it raise :class:`~aioinformer.errors.Conflict` (409).

Ordering and task model: a lock is used by one elector, from one task, one call at a time;
it keeps the last object it saw between calls and nothing else. It starts no task.

Wire format of a Lease's ``spec`` (all fields optional on the wire)::

    holderIdentity        record.holder_identity          ("" when released)
    leaseDurationSeconds  record.lease_duration_seconds
    acquireTime           record.acquire_time             RFC 3339, microseconds, UTC
    renewTime             record.renew_time               RFC 3339, microseconds, UTC
    leaseTransitions      record.leader_transitions
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final, Protocol

import orjson

__all__ = [
    "LEASES_RESOURCE",
    "LeaderElectionRecord",
    "LeaseLock",
    "ResourceLock",
    "lease_spec_to_record",
    "record_to_lease_spec",
]

LEASES_RESOURCE: Final = "coordination.k8s.io/v1/leases"
"""The resource :class:`LeaseLock` reads and writes."""

_MICRO_TIME_RE: Final = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$"
)


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """Who holds a leader lease, for how long, and since when.

    Only ``holder_identity`` and the fact that the record *changed* drive the election:
    timestamps written by other processes come from other clocks and are never compared
    with ours (an elector measures expiry from the moment *it* saw the record change).
    """

    holder_identity: str = ""
    """Identity of the holder; ``""`` means nobody holds the lease and anyone may take it."""

    lease_duration_seconds: int = 0
    """How long, from when a contender observes this record, it must wait before taking over."""

    acquire_time: datetime | None = None
    """When the current holder acquired the lease (the holder's wall clock), if known."""

    renew_time: datetime | None = None
    """When the holder last renewed (the holder's wall clock), if known."""

    leader_transitions: int = 0
    """How many times the lease changed hands; incremented by each new holder."""


class ResourceLock(Protocol):
    """The storage an elector contends for (client-go's ``resourcelock.Interface``).

    Failures are raised: ``NotFound`` from ``get()`` when no record exists yet,
    ``AlreadyExists`` from ``create()`` when another contender created it first,
    ``Conflict`` from ``update()`` when the record changed since this lock last saw it;
    any other exception counts as a failed attempt too.
    """

    @property
    def identity(self) -> str:
        """This contender's identity, unique among all contenders of the election."""
        ...

    def describe(self) -> str:
        """A short human-readable name of the lock for logs, e.g. ``"kube-system/my-lock"``."""
        ...

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        """Fetch the stored record and its raw form (equal raw forms mean an unchanged record)."""
        ...

    async def create(self, record: LeaderElectionRecord) -> None:
        """Store ``record`` where none exists yet."""
        ...

    async def update(self, record: LeaderElectionRecord) -> None:
        """Replace the stored record, if it is still the version this lock last saw."""
        ...


class _LeaseAPI(Protocol):
    """The part of :class:`aioinformer.client.ResourceClient` a :class:`LeaseLock` uses."""

    async def get(self, name: str) -> Any: ...

    async def create(self, obj: Any) -> Any: ...

    async def update(self, obj: Any) -> Any: ...

    async def patch(self, name: str, body: Any) -> Any: ...


class _ResourceClientFactory(Protocol):
    """The part of :class:`aioinformer.client.Client` a :class:`LeaseLock` uses."""

    def resource(self, resource: str, namespace: str | None = None) -> Any: ...


def _format_micro_time(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_micro_time(text: object) -> datetime | None:
    """Parse an RFC 3339 timestamp with any number of fractional digits; ``None`` if invalid.

    Lenient on purpose: a malformed timestamp written by another client must not stop an
    election, and timestamps never decide one.
    """
    if not isinstance(text, str):
        return None
    match = _MICRO_TIME_RE.match(text)
    if match is None:
        return None
    day, clock, fraction, zone = match.groups()
    try:
        value = datetime.fromisoformat(f"{day}T{clock}")
    except ValueError:
        return None
    if fraction:
        value = value.replace(microsecond=int(fraction[:6].ljust(6, "0")))
    if zone in ("Z", "z"):
        tz = UTC
    else:
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    return value.replace(tzinfo=tz).astimezone(UTC)


def _as_int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def lease_spec_to_record(spec: Mapping[str, Any]) -> LeaderElectionRecord:
    """Read a Lease ``spec`` (as decoded from JSON) into a record; absent fields take defaults."""
    holder = spec.get("holderIdentity")
    return LeaderElectionRecord(
        holder_identity=holder if isinstance(holder, str) else "",
        lease_duration_seconds=_as_int(spec.get("leaseDurationSeconds")),
        acquire_time=_parse_micro_time(spec.get("acquireTime")),
        renew_time=_parse_micro_time(spec.get("renewTime")),
        leader_transitions=_as_int(spec.get("leaseTransitions")),
    )


def record_to_lease_spec(record: LeaderElectionRecord) -> dict[str, Any]:
    """Write a record as a Lease ``spec``; timestamps that are ``None`` are left out."""
    spec: dict[str, Any] = {
        "holderIdentity": record.holder_identity,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "leaseTransitions": record.leader_transitions,
    }
    if record.acquire_time is not None:
        spec["acquireTime"] = _format_micro_time(record.acquire_time)
    if record.renew_time is not None:
        spec["renewTime"] = _format_micro_time(record.renew_time)
    return spec


def _raw_record(record: LeaderElectionRecord) -> bytes:
    # Canonical bytes of what the elector reads, so that changes to parts of the Lease the
    # record does not carry (labels, managedFields) do not count as a renewal.
    return orjson.dumps(record_to_lease_spec(record), option=orjson.OPT_SORT_KEYS)


class LeaseLock:
    """A :class:`ResourceLock` over one ``coordination.k8s.io/v1`` Lease.

    ``client`` is an :class:`aioinformer.client.Client` (anything with
    ``resource(resource, namespace=...)`` returning an object with async ``get(name)``,
    ``create(obj)`` and ``update(obj)``). The Lease is created on first acquisition;
    ``update()`` sends the Lease last read or written, with its resourceVersion, so the
    API server rejects it with 409 if anyone wrote in between. ``labels`` are set on the
    Lease when it is created, and put back by each update (a shard Lease is labelled with
    its ring, see :mod:`aioinformer.operator.sharding`).

    Example::

        lock = LeaseLock(client, "kube-system", "my-controller", identity=socket.gethostname())
    """

    __slots__ = ("_api", "_identity", "_labels", "_lease", "name", "namespace")

    def __init__(
        self,
        client: _ResourceClientFactory,
        namespace: str,
        name: str,
        identity: str,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self._identity = identity
        self._labels = dict(labels or {})
        """Labels the Lease carries (a shard Lease's ring label): set on creation, and put
        back by an update if someone removed them."""
        self._api: _LeaseAPI = client.resource(LEASES_RESOURCE, namespace=namespace)
        # The Lease as last returned by the server (get, create or update); ``update()``
        # sends it back with the new spec, so its resourceVersion is the precondition.
        # ``None`` until the first successful get or create.
        self._lease: dict[str, Any] | None = None

    @property
    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        lease = dict(await self._api.get(self.name))
        self._lease = lease
        spec = lease.get("spec")
        record = lease_spec_to_record(spec if isinstance(spec, Mapping) else {})
        return record, _raw_record(record)

    async def create(self, record: LeaderElectionRecord) -> None:
        created = await self._api.create(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": self._metadata({"name": self.name, "namespace": self.namespace}),
                "spec": record_to_lease_spec(record),
            }
        )
        self._lease = dict(created)

    async def update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise RuntimeError(
                f"lease {self.describe()} was never read nor created through this lock"
            )
        lease = self._lease
        metadata = lease.get("metadata")
        updated = await self._api.update(
            {
                **lease,
                "metadata": self._metadata(metadata if isinstance(metadata, Mapping) else {}),
                "spec": record_to_lease_spec(record),
            }
        )
        self._lease = dict(updated)

    async def annotate(self, annotations: Mapping[str, str]) -> dict[str, Any]:
        """Set ``annotations`` on the Lease (a merge patch, which leaves its spec alone) and
        keep the answer as the Lease last written, so the next renewal carries them and
        its resourceVersion; return it. A shard in range mode lists its slots so."""
        patched = dict(await self._api.patch(self.name, {"metadata": {"annotations": annotations}}))
        self._lease = patched
        return patched

    def _metadata(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """``metadata`` with this lock's labels added."""
        if not self._labels:
            return dict(metadata)
        labels = metadata.get("labels")
        merged = {**(labels if isinstance(labels, Mapping) else {}), **self._labels}
        return {**metadata, "labels": merged}

    def __repr__(self) -> str:
        rv = None
        if self._lease is not None:
            rv = (self._lease.get("metadata") or {}).get("resourceVersion")
        return f"<LeaseLock {self.describe()} identity={self._identity!r} rv={rv!r}>"
