"""Controllers sharded over Leases: the ring, its labels, how objects are assigned, and
which shards are alive.

Role: let several replicas of one operator share its objects, each reconciling about
1/N of them, and hand an object from one replica to another without two ever
reconciling it at once. This module holds the vocabulary every part agrees on: a
:class:`ShardRing` describes the ring (its name, where the shard Leases live, the
sharded resources), :func:`rendezvous` picks a key's shard among the live members,
:class:`RingMembership` tells which members are alive from their Leases. The
:class:`~aioinformer.operator.Manager` runs the two sides with it (``Manager(shard=...)``):
every replica holds its shard Lease and watches only its objects; the replica holding
the ring's sharder Lease also runs the sharder, which assigns objects.

The conventions are those of timebertt/kubernetes-controller-sharding, API
``sharding.timebertt.dev/v1alpha1`` (the ``alpha.sharding.timebertt.dev`` labels), so an
aioinformer shard also runs under that project's sharder:

* each replica holds a ``coordination.k8s.io/v1`` Lease named after its identity, with
  ``holderIdentity`` equal to that name and the label
  ``alpha.sharding.timebertt.dev/controllerring: <ring>``;
* an object is assigned by the label ``shard.alpha.sharding.timebertt.dev/<ring>: <shard>``,
  and a shard watches only ``<that label>=<its identity>``;
* the sharder asks a live shard to give an object up with the label
  ``drain.alpha.sharding.timebertt.dev/<ring>``; the shard finishes the object's running
  reconcile, then removes both labels with a resourceVersion precondition and forgets
  it; the sharder then assigns it anew;
* the hash key of a ring resource's object is ``<group>/<Kind>/<namespace>/<name>``; an
  object of a controlled resource takes its controller owner's key, so it lands with its
  owner (one without a controller reference is not sharded).

Where this differs from that project: it assigns with rendezvous (highest random
weight) hashing instead of a ring of virtual nodes (both move about 1/N of the keys when
a member joins or leaves; rendezvous needs no token table), and instead of answering an
admission webhook the sharder watches, metadata-only, the objects no shard holds and
assigns the rest in passes (a paged metadata LIST at its start, after each membership
change and every sync period), so nothing but the operator itself is installed. A shard's
liveness is judged by when the sharder saw its Lease change, on the sharder's own clock,
never by the timestamps written in it.

Input: Lease objects (dicts as the API serves them) and object metadata. Output:
labels, keys and the live members. Nothing here does I/O or starts a task.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from aioinformer._objects.meta import labels_of, namespace_of, owner_references_of, uid_of
from aioinformer.shard_selector import HASH_SPACE, ShardField, ShardSelector, fnv1a_64

if TYPE_CHECKING:
    from aioinformer.client import GVR

__all__ = [
    "CONVENTIONS",
    "DRAIN_LABEL_PREFIX",
    "ORPHAN_AFTER",
    "RING_LABEL",
    "RingMembership",
    "SHARD_LABEL_PREFIX",
    "SLOTS_ANNOTATION",
    "ShardMode",
    "ShardRing",
    "ShardState",
    "ShardedResource",
    "controller_hash_key",
    "drain_label",
    "format_slots",
    "object_hash_key",
    "parse_slots",
    "rendezvous",
    "shard_label",
    "slot_owner",
    "slot_selector",
    "slots_of_hash",
]

CONVENTIONS: Final = "sharding.timebertt.dev/v1alpha1"
"""The API version of timebertt/kubernetes-controller-sharding whose labels and Lease
rules this module follows."""

RING_LABEL: Final = "alpha.sharding.timebertt.dev/controllerring"
"""The label on a shard Lease naming its ring."""
SHARD_LABEL_PREFIX: Final = "shard.alpha.sharding.timebertt.dev/"
"""Followed by the ring's name: the label holding an object's shard."""
DRAIN_LABEL_PREFIX: Final = "drain.alpha.sharding.timebertt.dev/"
"""Followed by the ring's name: the label asking an object's shard to give it up."""

SLOTS_ANNOTATION: Final = "sharding.aioinformer.dev/slots"
"""In range mode, the annotation on a shard Lease listing the slots its shard holds
(``"0-3,7"``): it watches them, or is about to, or still finishes reconciles of them."""

ShardMode = Literal["auto", "labels", "ranges"]
"""How a ring splits its objects: ``"labels"`` (the sharder labels each object),
``"ranges"`` (each shard watches slots of the hash space, through shard selectors the
API server or the proxy serves) or ``"auto"`` (ranges where they are served)."""

ORPHAN_AFTER: Final = 60.0
"""Seconds a dead shard's Lease stays before the sharder deletes it (that project's
``leaseTTL``)."""

_DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def shard_label(ring: str) -> str:
    """The label key that assigns an object to a shard of ``ring``."""
    return SHARD_LABEL_PREFIX + ring


def drain_label(ring: str) -> str:
    """The label key that asks an object's shard of ``ring`` to give it up."""
    return DRAIN_LABEL_PREFIX + ring


@dataclass(frozen=True, slots=True)
class ShardedResource:
    """One resource a ring shards, with the resources its objects control.

    ``resource`` (as :meth:`~aioinformer.client.Client.resource` takes it: ``"widgets"``,
    ``"example.com/v1/widgets"``, a ``GVR``) is reconciled by the ring's controllers; its
    objects are assigned by their own key. ``controlled`` are resources whose objects
    carry a controller reference to one of them (a Deployment's ReplicaSets): each is
    assigned with its owner, and moved with it without a drain of its own.
    """

    resource: str | GVR
    controlled: tuple[str | GVR, ...] = ()


def _default_identity() -> str:
    import socket

    return socket.gethostname().lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardRing:
    """A ring of shards: what ``Manager(shard=...)`` runs (see the module notes).

    ``name`` names the ring (a DNS label of at most 63 characters: it ends the shard and
    drain label keys); ``namespace`` holds the shard Leases and the sharder's Lease;
    ``resources`` are what the ring shards. ``identity`` names this replica: its shard
    Lease and the value of the shard label on its objects (default: the host name, a
    pod's name in a cluster); it must be a valid object name. ``lease_duration``,
    ``renew_deadline`` and ``retry_period`` are the shard Lease's timings as for leader
    election; here ``lease_duration`` must exceed ``renew_deadline + retry_period``, the
    longest a shard that stopped renewing may still run its controllers, because the
    sharder moves a silent shard's objects once its Lease is ``lease_duration`` old.
    ``sync_period`` is how often the sharder goes over every object again (its
    periodic pass, catching anything a watch missed).

    ``mode`` chooses how objects are split (:data:`ShardMode`): by labels the sharder
    writes, or by ranges of the hash space each shard watches through a shard selector
    (KEP-5866), handed over through the shard Leases; ``"auto"``, the default, takes ranges
    when the API server (or the proxy in front of it) serves shard selectors for every
    ring resource, and labels otherwise. In range mode the space is cut into ``slots``
    equal ranges, each held by one shard at a time, and objects are hashed on
    ``range_field``: an object's uid, or its namespace, which a ring whose resources
    control others needs (an object's controller is in its namespace, so it lands with
    it; by uid it would not).
    """

    name: str
    namespace: str
    resources: tuple[ShardedResource, ...]
    identity: str = field(default_factory=_default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    sync_period: float = 300.0
    mode: ShardMode = "auto"
    slots: int = 64
    range_field: ShardField = "object.metadata.uid"

    def __post_init__(self) -> None:
        if len(self.name) > 63 or not _DNS_LABEL.match(self.name):
            raise ValueError(
                f"ring name {self.name!r} must be a DNS label of at most 63 characters"
                " (it ends the shard and drain label keys)"
            )
        if len(self.identity) > 253 or not _DNS_SUBDOMAIN.match(self.identity):
            raise ValueError(
                f"shard identity {self.identity!r} must be a valid object name (lowercase"
                " DNS subdomain): it names the shard's Lease"
            )
        if len(self.identity) > 63:
            raise ValueError(
                f"shard identity {self.identity!r} is longer than 63 characters: it is the"
                " value of the shard label"
            )
        if not self.resources:
            raise ValueError(f"ring {self.name!r} shards no resource")
        if not self.lease_duration > self.renew_deadline + self.retry_period:
            raise ValueError(
                f"lease_duration ({self.lease_duration}) must exceed renew_deadline +"
                f" retry_period ({self.renew_deadline} + {self.retry_period}): a shard"
                " may run that long after its last renewal"
            )
        if not self.sync_period > 0:
            raise ValueError(f"sync_period must be > 0, got {self.sync_period}")
        if self.mode not in ("auto", "labels", "ranges"):
            raise ValueError(f"mode must be 'auto', 'labels' or 'ranges', got {self.mode!r}")
        if not 1 <= self.slots <= 4096:
            raise ValueError(f"slots must be between 1 and 4096, got {self.slots}")
        if self.range_field not in ("object.metadata.uid", "object.metadata.namespace"):
            raise ValueError(
                f"range_field must be object.metadata.uid or object.metadata.namespace,"
                f" got {self.range_field!r}"
            )
        if self.mode == "ranges" and not self.ranges_keep_owners:
            raise ValueError(
                f"ring {self.name!r} shards resources its objects control: in range mode"
                " they land with their controller only when hashed by namespace"
                " (range_field='object.metadata.namespace')"
            )

    @property
    def ranges_keep_owners(self) -> bool:
        """Whether range mode keeps every controlled object with its controller: no ring
        resource controls others, or objects are hashed by namespace."""
        if self.range_field == "object.metadata.namespace":
            return True
        return not any(spec.controlled for spec in self.resources)

    def slot_of(self, obj: Any) -> int:
        """The slot ``obj`` falls in, in range mode: where its ``range_field``'s hash lies."""
        if self.range_field == "object.metadata.uid":
            value = uid_of(obj) or ""
        else:
            value = namespace_of(obj) or ""
        return slots_of_hash(fnv1a_64(value), self.slots)

    @property
    def shard_label(self) -> str:
        """The label key that assigns an object to a shard of this ring."""
        return shard_label(self.name)

    @property
    def drain_label(self) -> str:
        """The label key that asks a shard of this ring to give an object up."""
        return drain_label(self.name)

    @property
    def selector(self) -> str:
        """The label selector of this replica's objects."""
        return f"{self.shard_label}={self.identity}"

    @property
    def labels(self) -> dict[str, str]:
        """The shard label of this replica: put it on an object this replica creates and
        controls, so the object is in its own cache at once (the sharder would label it
        so anyway, moments later)."""
        return {self.shard_label: self.identity}

    @property
    def lease_selector(self) -> str:
        """The label selector of this ring's shard Leases."""
        return f"{RING_LABEL}={self.name}"

    @property
    def lease_labels(self) -> dict[str, str]:
        """The labels of a shard Lease of this ring."""
        return {RING_LABEL: self.name}

    @property
    def sharder_lease(self) -> str:
        """The Lease the replicas elect the sharder with."""
        return f"{self.name}-sharder"

    def owns(self, obj: Any) -> bool:
        """Whether ``obj`` is assigned to this replica. A handler's ``on_delete`` for an
        object that still exists but moved to another shard sees it False (the watch
        reports an object leaving the selector as deleted, in its new state)."""
        labels = labels_of(obj) or {}
        return labels.get(self.shard_label) == self.identity

    def draining(self, obj: Any) -> bool:
        """Whether the sharder asked this ring's shard to give ``obj`` up."""
        labels = labels_of(obj) or {}
        return self.drain_label in labels


def object_hash_key(group: str, kind: str, namespace: str | None, name: str) -> str:
    """The hash key of an object of a ring resource: ``group/Kind/namespace/name``."""
    return f"{group}/{kind}/{namespace or ''}/{name}"


def controller_hash_key(obj: Any) -> str | None:
    """The hash key of ``obj``'s controller owner (``None`` without a usable controller
    reference): the owner's key, so the object lands on the owner's shard."""
    namespace = namespace_of(obj)
    for ref in owner_references_of(obj):
        if not ref.get("controller"):
            continue
        api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            return None
        if not (api_version and kind and name):
            return None
        group = api_version.rpartition("/")[0]
        return object_hash_key(group, kind, namespace, name)
    return None


def _weight(member: str, key: str) -> int:
    digest = hashlib.blake2b(f"{member}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rendezvous(key: str, members: Iterable[str]) -> str | None:
    """The member ``key`` belongs to: the one with the highest weight for it (rendezvous
    hashing; ties, vanishingly rare, go to the greater name). ``None`` without members.

    Adding a member moves only the keys it now wins; removing one moves only its keys,
    each to the member that was second for it.
    """
    best: tuple[int, str] | None = None
    for member in members:
        candidate = (_weight(member, key), member)
        if best is None or candidate > best:
            best = candidate
    return None if best is None else best[1]


def slots_of_hash(h: int, count: int) -> int:
    """The slot of the hash ``h`` when the space is cut into ``count`` equal ranges (the
    cuts of :meth:`ShardSelector.split`)."""
    slot = h * count // HASH_SPACE
    # A cut rounds down: step back while the slot starts above h.
    while slot > 0 and HASH_SPACE * slot // count > h:
        slot -= 1
    return slot


def slot_owner(slot: int, members: Iterable[str]) -> str | None:
    """The member that should hold ``slot``: rendezvous hashing over the members, as for
    an object's key, so a member joining or leaving moves only about 1/N of the slots."""
    return rendezvous(f"slot/{slot}", members)


_NOTHING: Final = ShardSelector.of((HASH_SPACE - 2, HASH_SPACE - 1))
"""A selector of one hash value: what a shard holding no slot watches (the guard
refuses whatever it may show)."""


def slot_selector(
    slots: Iterable[int], count: int, *, field: ShardField = "object.metadata.uid"
) -> ShardSelector:
    """The shard selector of ``slots`` (of ``count``), adjacent slots joined into one
    range; with no slot, a range of a single hash value, as a shard selector selects at
    least one."""
    ordered = sorted(set(slots))
    if not ordered:
        return ShardSelector.of(*((r.start, r.end) for r in _NOTHING.ranges), field=field)
    bounds: list[tuple[int, int]] = []
    for slot in ordered:
        start = HASH_SPACE * slot // count
        end = HASH_SPACE * (slot + 1) // count if slot + 1 < count else HASH_SPACE - 1
        if bounds and bounds[-1][1] == start:
            bounds[-1] = (bounds[-1][0], end)
        else:
            bounds.append((start, end))
    return ShardSelector.of(*bounds, field=field)


def format_slots(slots: Iterable[int]) -> str:
    """``slots`` as the slots annotation writes them: sorted, runs as ``a-b``
    (``"0-3,7"``); ``""`` for none."""
    ordered = sorted(set(slots))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_slots(text: object, count: int) -> frozenset[int] | None:
    """The slots a slots annotation lists; ``None`` when it is not one (a slot out of
    ``[0, count)`` included), which a reader takes as holding every slot: it waits
    rather than risk two shards on one slot."""
    if not isinstance(text, str):
        return None
    slots: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            return None
        low, high = int(first), int(last) if dash else int(first)
        if not 0 <= low <= high < count:
            return None
        slots.update(range(low, high + 1))
    return frozenset(slots)


class ShardState(enum.Enum):
    """A shard as the sharder judges it from its Lease."""

    READY = "ready"
    """Held by the shard and renewed within its duration."""
    EXPIRED = "expired"
    """Held by the shard but not renewed within its duration: about to be taken over."""
    DEAD = "dead"
    """Released by the shard or taken over by the sharder: its objects move at once."""
    ORPHANED = "orphaned"
    """Dead for :data:`ORPHAN_AFTER` seconds: its Lease is deleted."""


@dataclass(slots=True)
class _Seen:
    holder: str
    duration: float
    spec: tuple[Any, ...]
    resource_version: str
    since: float
    """Clock time the spec was last seen to change."""


def _spec_of(lease: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = lease.get("spec")
    return spec if isinstance(spec, Mapping) else {}


class RingMembership:
    """The ring's shards as their Leases show them, judged on the observer's clock.

    :meth:`observe` every Lease of the ring as it is added or updated (with the clock's
    time), :meth:`forget` one deleted. A Lease held by the shard it names is READY
    until ``leaseDurationSeconds`` after the observer last saw its spec change (a
    renewal), EXPIRED after that; one held by anyone else (released, or taken over by
    the sharder) is DEAD, and ORPHANED :data:`ORPHAN_AFTER` seconds after that change.
    :meth:`members` are the shards objects may be assigned to: READY and EXPIRED ones (an
    expired shard keeps its objects until the sharder has taken its Lease over).
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}

    def observe(self, lease: Mapping[str, Any], now: float) -> bool:
        """Record ``lease`` as seen at ``now``; True if the set of members changed."""
        meta = lease.get("metadata")
        if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
            return False
        name: str = meta["name"]
        spec = _spec_of(lease)
        holder = spec.get("holderIdentity")
        duration = spec.get("leaseDurationSeconds")
        fingerprint = (holder, duration, spec.get("renewTime"), spec.get("acquireTime"))
        before = self._member(name)
        seen = self._seen.get(name)
        rv = meta.get("resourceVersion")
        if seen is None or seen.spec != fingerprint:
            self._seen[name] = _Seen(
                holder=holder if isinstance(holder, str) else "",
                duration=float(duration) if isinstance(duration, int | float) else 15.0,
                spec=fingerprint,
                resource_version=rv if isinstance(rv, str) else "",
                since=now,
            )
        elif isinstance(rv, str):
            seen.resource_version = rv
        return before != self._member(name)

    def forget(self, name: str) -> bool:
        """Drop a deleted Lease; True if it was a member."""
        was = self._member(name)
        self._seen.pop(name, None)
        return was

    def _member(self, name: str) -> bool:
        seen = self._seen.get(name)
        return seen is not None and seen.holder == name

    def state(self, name: str, now: float) -> ShardState | None:
        """``name``'s state at ``now``; ``None`` for a Lease never seen."""
        seen = self._seen.get(name)
        if seen is None:
            return None
        if seen.holder != name:
            return ShardState.ORPHANED if now >= seen.since + ORPHAN_AFTER else ShardState.DEAD
        if now >= seen.since + seen.duration:
            return ShardState.EXPIRED
        return ShardState.READY

    def members(self) -> list[str]:
        """The shards objects may be assigned to, sorted."""
        return sorted(name for name in self._seen if self._member(name))

    def is_member(self, name: str) -> bool:
        """Whether ``name`` holds its own Lease (READY or EXPIRED)."""
        return self._member(name)

    def expired(self, now: float) -> list[str]:
        """Members whose Lease has not been renewed within its duration at ``now``."""
        return [name for name in self.members() if self.state(name, now) is ShardState.EXPIRED]

    def orphaned(self, now: float) -> list[tuple[str, str]]:
        """Dead Leases due for deletion at ``now``, with the resourceVersion last seen."""
        return [
            (name, seen.resource_version)
            for name, seen in sorted(self._seen.items())
            if seen.holder != name and now >= seen.since + ORPHAN_AFTER
        ]

    def next_deadline(self, now: float) -> float | None:
        """The next clock time at which some state changes by time alone (a member
        expires, a dead Lease becomes orphaned); ``None`` if none will."""
        deadlines: list[float] = []
        for name, seen in self._seen.items():
            if seen.holder == name:
                deadline = seen.since + seen.duration
            else:
                deadline = seen.since + ORPHAN_AFTER
            if deadline > now:
                deadlines.append(deadline)
        return min(deadlines) if deadlines else None

    def __len__(self) -> int:
        return len(self._seen)
