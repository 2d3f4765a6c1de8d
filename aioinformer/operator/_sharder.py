"""The sharder: assigns a ring's objects to its live shards, and moves them safely.

Role: the one replica holding the ring's sharder Lease runs a :class:`Sharder` (the
:class:`~aioinformer.operator.Manager` does, ``Manager(shard=...)``). It watches the
ring's shard Leases (full objects: the holder lives in ``spec``) and every sharded
resource metadata-only, and reconciles each object towards its desired shard,
:func:`~aioinformer.operator.sharding.rendezvous` of its hash key over the live members:

==============================================  ===========================================
the object's shard label                        what the sharder writes (merge patch,
                                                resourceVersion precondition)
==============================================  ===========================================
the desired shard                               nothing
none, or a shard that is not a member (its      the desired shard, at once (and no drain
Lease released, taken over, or gone)            label)
another live member, ring resource              the drain label; that shard finishes,
                                                removes both labels, and the next pass
                                                assigns the object
another live member, controlled resource        the desired shard, at once: it follows its
                                                owner, which drains
==============================================  ===========================================

A member whose Lease was not renewed within its duration (by the sharder's clock, from
when it last saw the Lease change) is taken over: the sharder writes itself as the
holder, with a resourceVersion precondition, which ends the shard's membership (a late
renewal of the shard's fails with 409, so it stops). A dead shard's Lease is deleted
:data:`~aioinformer.operator.sharding.ORPHAN_AFTER` seconds later.

When: every new object and every change of an object's labels or controller reference
(so a new object is assigned as soon as the sharder's watch shows it, typically
milliseconds; other updates do not wake it); every membership change (all objects); and
every ``ring.sync_period`` (all objects again, and a metadata LIST compared with the
cache, which repairs what a watch lost). A failed write is retried with the
controller's rate-limited backoff; a 409 means the object changed, and its next event
brings it back.

Task model: :meth:`Sharder.run` owns a :class:`~aioinformer._kernel.runner.TaskRunner`
with its informers of the sharded resources, the assigning controller and one task
keeping time over the Leases.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.lifecycle import Service
from aioinformer._kernel.runner import TaskRunner, first_completed
from aioinformer._kernel.sync import wait_for_cache_sync
from aioinformer._pipeline.meta import labels_of, name_of, namespace_of, resource_version_of
from aioinformer._pipeline.metric_recorders import new_sharding_metrics
from aioinformer.audit import CacheAudit
from aioinformer.errors import Conflict, NotFound
from aioinformer.indexer import meta_namespace_key
from aioinformer.informer import SharedIndexInformer
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.operator._resourcelock import LEASES_RESOURCE
from aioinformer.operator.controller import Controller
from aioinformer.operator.predicates import Predicate
from aioinformer.operator.sharding import (
    RingMembership,
    ShardRing,
    controller_hash_key,
    object_hash_key,
    rendezvous,
)
from aioinformer.transforms import strip_managed_fields

if TYPE_CHECKING:
    import anyio.abc

    from aioinformer.client import Client, ResourceInfo
    from aioinformer.factory import SharedInformerFactory

__all__ = ["SHARDER_IDENTITY", "Sharder", "SharderStatistics"]

logger = logging.getLogger(__name__)

SHARDER_IDENTITY: Final = "aioinformer-sharder"
"""The holder the sharder writes into a shard Lease it takes over."""


@dataclass(frozen=True, slots=True)
class _Sharded:
    info: ResourceInfo
    controlled: bool
    informer: SharedIndexInformer


@dataclass(frozen=True, slots=True)
class SharderStatistics:
    """What a sharder has done since it started."""

    members: tuple[str, ...]
    """The ring's members now."""
    assignments: int
    """Objects labelled with a shard (first assignments and moves alike)."""
    drains: int
    """Drain labels written (a live shard asked to give an object up)."""
    takeovers: int
    """Expired shard Leases taken over."""
    membership_changes: int
    """Times the set of members changed."""


class _AssignmentMayChange(Predicate):
    """The events that may change an object's assignment: a new object, a change of its
    labels or of its controller reference, and a resync (the periodic pass); never a
    deletion, nor an update of anything else (the sharder wakes for those otherwise)."""

    def delete(self, obj: Any) -> bool:
        return False

    def update(self, old: Any, new: Any) -> bool:
        if old is None or new is None:
            return True
        if resource_version_of(old) == resource_version_of(new):
            return True  # a resync: the periodic pass
        return bool(
            labels_of(old) != labels_of(new) or controller_hash_key(old) != controller_hash_key(new)
        )


_ASSIGNMENT_MAY_CHANGE: Final = _AssignmentMayChange()


class Sharder(Service):
    """Assigns the objects of ``ring`` (see the module notes).

    ``client`` writes the labels and Leases; ``factory`` provides the Lease informer
    (shared with the rest of the manager); the sharded objects of ``namespace`` (``None``:
    all) are followed by informers of the sharder's own; ``workers`` objects are written
    concurrently.
    """

    def __init__(
        self,
        client: Client,
        factory: SharedInformerFactory,
        ring: ShardRing,
        *,
        namespace: str | None = None,
        clock: Clock | None = None,
        workers: int = 8,
        cache_sync_timeout: float = 120.0,
    ) -> None:
        self._client = client
        self._namespace = namespace
        self._factory = factory
        self._ring = ring
        self._clock = clock if clock is not None else default_clock
        self._workers = workers
        self._cache_sync_timeout = cache_sync_timeout
        self._membership = RingMembership()
        self._resources: list[_Sharded] = []
        self._controller: Controller | None = None
        self._leases: SharedIndexInformer | None = None
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._metrics = new_sharding_metrics(ring.name)
        self._assignments = 0
        self._drains = 0
        self._takeovers = 0
        self._changes = 0

    @property
    def service_name(self) -> str:
        return f"sharder {self._ring.name}"

    @property
    def members(self) -> list[str]:
        """The ring's members as this sharder sees them."""
        return self._membership.members()

    def statistics(self) -> SharderStatistics:
        return SharderStatistics(
            members=tuple(self._membership.members()),
            assignments=self._assignments,
            drains=self._drains,
            takeovers=self._takeovers,
            membership_changes=self._changes,
        )

    def _request_stop(self) -> None:
        self._stopping.set()

    # -- running -------------------------------------------------------------------------

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[Any]) -> None:
        ring = self._ring
        factory = self._factory
        leases = self._leases = factory.informer_for(
            LEASES_RESOURCE, namespace=ring.namespace, label_selector=ring.lease_selector
        )
        leases.add_event_handler(
            on_add=lambda lease, _initial: self._lease_seen(lease),
            on_update=lambda _old, lease: self._lease_seen(lease),
            on_delete=self._lease_gone,
            name=self.service_name,
        )
        controller = self._controller = Controller(
            self.service_name,
            self._assign,
            clock=self._clock,
            workers=self._workers,
            cache_sync_timeout=self._cache_sync_timeout,
        )
        for spec in ring.resources:
            for resource, controlled in (
                (spec.resource, False),
                *((owned, True) for owned in spec.controlled),
            ):
                info = await self._client.resolve(resource)
                # Its own informers, not the factory's: only the sharder needs every
                # object, they are freed when it stops, and they keep the metadata it
                # reads (managedFields dropped). Their audit is the periodic pass that
                # catches what a watch lost.
                informer = SharedIndexInformer(
                    self._client.resource(info, self._namespace, metadata_only=True),
                    transform=strip_managed_fields,
                    resync_period=ring.sync_period,
                    clock=self._clock,
                    audit=CacheAudit(period=ring.sync_period),
                    name=f"{self.service_name} {info.gvr.resource}",
                )
                index = len(self._resources)
                self._resources.append(_Sharded(info, controlled, informer))
                controller.watch(
                    informer, enqueue=self._keys_for(index), predicates=[_ASSIGNMENT_MAY_CHANGE]
                )
        await factory.start()
        await wait_for_cache_sync(leases, timeout=self._cache_sync_timeout, clock=self._clock)
        async with TaskRunner(name=self.service_name) as informers:
            for sharded in self._resources:
                informers.start_soon(sharded.informer.run(), name=sharded.informer.name)
            async with TaskRunner(name=self.service_name) as runner:
                await runner.start(controller.run, name="assign")
                async with TaskRunner(name=self.service_name) as timekeeping:
                    timekeeping.start_soon(self._keep_time(), name="leases")
                    self._enqueue_all()
                    task_status.started()
                    await self._stopping.wait()
                # The controller drains its writes in flight within its own drain timeout.
                controller.stop()
                await runner.wait()
            # Leaving the block stops the informers, the controller having stopped.

    def _keys_for(self, index: int) -> Any:
        prefix = f"{index}|"

        def keys(obj: Any) -> tuple[str, ...]:
            return (prefix + meta_namespace_key(obj),)

        return keys

    def _enqueue_all(self) -> None:
        controller = self._controller
        if controller is None:
            return
        for index, sharded in enumerate(self._resources):
            prefix = f"{index}|"
            for key in sharded.informer.indexer.list_keys():
                controller.enqueue(prefix + key)

    # -- membership ----------------------------------------------------------------------

    def _lease_seen(self, lease: Any) -> None:
        if self._membership.observe(lease, self._clock.monotonic()):
            self._members_changed()
        self._wake.set()

    def _lease_gone(self, lease: Any) -> None:
        name = name_of(lease.obj if isinstance(lease, DeletedFinalStateUnknown) else lease)
        if name is not None and self._membership.forget(name):
            self._members_changed()
        self._wake.set()

    def _members_changed(self) -> None:
        self._changes += 1
        members = self._membership.members()
        self._metrics.members(len(members))
        self._metrics.membership_changed()
        logger.info("ring %s: members now %s", self._ring.name, ", ".join(members) or "none")
        self._enqueue_all()

    async def _keep_time(self) -> None:
        """Take over expired shard Leases and delete orphaned ones, each when its time
        comes on the clock."""
        clock = self._clock
        while True:
            self._wake.clear()
            now = clock.monotonic()
            for name in self._membership.expired(now):
                await self._take_over(name)
            for name, resource_version in self._membership.orphaned(now):
                await self._delete_lease(name, resource_version)
            now = clock.monotonic()
            deadline = self._membership.next_deadline(now)
            if deadline is None:
                await self._wake.wait()
            else:
                await first_completed(self._wake.wait(), clock.sleep(deadline - now))

    async def _take_over(self, name: str) -> None:
        leases = self._leases
        assert leases is not None
        lease = leases.indexer.get_by_key(f"{self._ring.namespace}/{name}")
        if lease is None:
            return
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        spec = dict(lease.get("spec") or {})
        spec.update(holderIdentity=SHARDER_IDENTITY, acquireTime=stamp, renewTime=stamp)
        api = self._client.resource(LEASES_RESOURCE, namespace=self._ring.namespace)
        try:
            updated = await api.update({**lease, "spec": spec})
        except (Conflict, NotFound):
            return  # renewed or deleted meanwhile: its next event tells
        except Exception:
            logger.exception(
                "ring %s: taking over the Lease of shard %s failed", self._ring.name, name
            )
            await self._clock.sleep(self._ring.retry_period)
            return
        self._takeovers += 1
        self._metrics.took_over()
        logger.warning(
            "ring %s: shard %s stopped renewing its Lease; its objects move", self._ring.name, name
        )
        self._lease_seen(updated)

    async def _delete_lease(self, name: str, resource_version: str) -> None:
        api = self._client.resource(LEASES_RESOURCE, namespace=self._ring.namespace)
        try:
            await api.delete(name, preconditions={"resourceVersion": resource_version})
        except (Conflict, NotFound):
            return
        except Exception:
            logger.exception(
                "ring %s: deleting the Lease of dead shard %s failed", self._ring.name, name
            )
            await self._clock.sleep(self._ring.retry_period)
            return
        self._membership.forget(name)

    # -- assigning -----------------------------------------------------------------------

    async def _assign(self, key: str) -> None:
        index, _, object_key = key.partition("|")
        sharded = self._resources[int(index)]
        obj = sharded.informer.indexer.get_by_key(object_key)
        if obj is None:
            return
        namespace = namespace_of(obj) or None
        name = name_of(obj)
        if name is None:
            return
        info = sharded.info
        if sharded.controlled:
            hash_key = controller_hash_key(obj)
        else:
            hash_key = object_hash_key(info.gvr.group, info.kind, namespace, name)
        if hash_key is None:
            return
        desired = rendezvous(hash_key, self._membership.members())
        if desired is None:
            return
        ring = self._ring
        labels = labels_of(obj) or {}
        current = labels.get(ring.shard_label)
        if current == desired:
            return
        drain = (
            current is not None and not sharded.controlled and self._membership.is_member(current)
        )
        if drain and ring.drain_label in labels:
            return  # asked already: the shard gives it up, then it is assigned
        new_labels: dict[str, str | None] = (
            {ring.drain_label: "true"}
            if drain
            else {ring.shard_label: desired, ring.drain_label: None}
        )
        patch = {"metadata": {"resourceVersion": resource_version_of(obj), "labels": new_labels}}
        try:
            await self._client.resource(info, namespace=namespace).patch(name, patch)
        except NotFound:
            return
        if drain:
            self._drains += 1
            self._metrics.drained()
        else:
            self._assignments += 1
            self._metrics.assigned()
