"""The sharder: assigns a ring's objects to its live shards, and moves them safely.

Role: the one replica holding the ring's sharder Lease runs a :class:`Sharder` (the
:class:`~aioinformer.operator.Manager` does, ``Manager(shard=...)``). It follows the
ring's shard Leases (full objects: the holder lives in ``spec``), and decides each
object's labels from its desired shard,
:func:`~aioinformer.operator.sharding.rendezvous` of its hash key over the live members:

==============================================  ===========================================
the object's shard label                        what the sharder writes (merge patch,
                                                resourceVersion precondition)
==============================================  ===========================================
the desired shard                               nothing
none, or a shard that is not a member (its      the desired shard, at once (and no drain
Lease released, taken over, or gone)            label)
another live member, ring resource              the drain label; that shard finishes,
                                                removes both labels, and the object is
                                                assigned again
another live member, controlled resource        the desired shard, at once: it follows its
                                                owner, which drains
==============================================  ===========================================

It does not watch the sharded objects (timebertt's "don't watch sharded objects"): its
cost would follow the ring's objects and events. It watches, metadata-only, only the
objects *no shard holds* (``!<shard label>``): new ones, and those a shard just gave up,
assigned as soon as the watch shows them (typically milliseconds). Everything else it
reads in *passes*: a paged metadata-only LIST of every sharded resource, at the start,
after every membership change, and every ``ring.sync_period``, writing what each object
needs with ``workers`` writes at once. A write that meets a 409 reads the object again
and decides again (a few times; a pass leaves the rest to the next).

A member whose Lease was not renewed within its duration (by the sharder's clock, from
when it last saw the Lease change) is taken over: the sharder writes itself as the
holder, with a resourceVersion precondition, which ends the shard's membership (a late
renewal of the shard's fails with 409, so it stops) and starts a pass. A dead shard's
Lease is deleted :data:`~aioinformer.operator.sharding.ORPHAN_AFTER` seconds later.

Task model: :meth:`Sharder.run` owns a :class:`~aioinformer._kernel.runner.TaskRunner`
with the controller assigning unheld objects, one task keeping time over the Leases,
and one running the passes (its writers in a runner of their own).
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
from aioinformer._objects.meta import labels_of, name_of, namespace_of, resource_version_of
from aioinformer.errors import Conflict, NotFound
from aioinformer.indexer import meta_namespace_key
from aioinformer.listwatch import ListOptions
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.operator._metrics import new_sharding_metrics
from aioinformer.operator._resourcelock import LEASES_RESOURCE
from aioinformer.operator.controller import Controller
from aioinformer.operator.sharding import (
    RingMembership,
    ShardRing,
    controller_hash_key,
    object_hash_key,
    rendezvous,
)

if TYPE_CHECKING:
    import anyio.abc

    from aioinformer.client import Client, ResourceInfo
    from aioinformer.factory import SharedInformerFactory
    from aioinformer.informer import SharedIndexInformer

__all__ = ["SHARDER_IDENTITY", "Sharder", "SharderStatistics"]

logger = logging.getLogger(__name__)

SHARDER_IDENTITY: Final = "aioinformer-sharder"
"""The holder the sharder writes into a shard Lease it takes over."""

_PAGE: Final = 500
"""Objects per LIST page of a pass."""
_WRITE_ATTEMPTS: Final = 3
"""Writes of one object's labels before a pass leaves it to the next."""


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
    passes: int
    """Passes over every object done."""


class Sharder(Service):
    """Assigns the objects of ``ring`` (see the module notes).

    ``client`` lists the sharded objects of ``namespace`` (``None``: all) and writes the
    labels and Leases; ``factory`` provides the informers of the Leases and of the
    objects no shard holds (shared with the rest of the manager); ``workers`` objects are
    written concurrently. With ``assign=False`` (a ring in range mode) it only takes
    expired shard Leases over and deletes orphaned ones: the shards move their slots
    themselves.
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
        membership: RingMembership | None = None,
        assign: bool = True,
    ) -> None:
        self._client = client
        # False in range mode: the shards hand their slots over themselves, and the
        # sharder only keeps time over the Leases (takeovers, orphans).
        self._assigns = assign
        self._namespace = namespace
        self._factory = factory
        self._ring = ring
        self._clock = clock if clock is not None else default_clock
        self._workers = workers
        self._cache_sync_timeout = cache_sync_timeout
        # The ring's members as the Leases show them. A Manager shares its own, which its
        # one Lease handler feeds (telling this sharder through lease_event()); alone, the
        # sharder keeps one and follows the Leases itself.
        self._follows_leases = membership is None
        self._membership = membership if membership is not None else RingMembership()
        self._resources: list[_Sharded] = []
        self._controller: Controller | None = None
        self._leases: SharedIndexInformer | None = None
        self._wake = asyncio.Event()
        self._pass_due = asyncio.Event()
        self._stopping = asyncio.Event()
        self._metrics = new_sharding_metrics(ring.name)
        self._assignments = 0
        self._drains = 0
        self._takeovers = 0
        self._changes = 0
        self._passes = 0

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
            passes=self._passes,
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
        if self._follows_leases:
            leases.add_event_handler(
                on_add=lambda lease, _initial: self._lease_seen(lease),
                on_update=lambda _old, lease: self._lease_seen(lease),
                on_delete=self._lease_gone,
                name=self.service_name,
            )
        elif self._membership.members():
            self._members_changed()  # the members its owner has seen so far
        if not self._assigns:
            await factory.start()
            await wait_for_cache_sync(leases, timeout=self._cache_sync_timeout, clock=self._clock)
            async with TaskRunner(name=self.service_name) as timekeeping:
                timekeeping.start_soon(self._keep_time(), name="leases")
                task_status.started()
                await self._stopping.wait()
            return
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
                # Only the objects no shard holds: new ones, and those a shard gave up.
                # The assigned ones are read by the passes, never watched, so the
                # sharder's cost does not follow the ring's objects and events.
                informer = factory.informer_for(
                    info,
                    metadata_only=True,
                    label_selector=f"!{ring.shard_label}",
                    resync_period=ring.sync_period,
                )
                index = len(self._resources)
                self._resources.append(_Sharded(info, controlled, informer))
                controller.watch(informer, enqueue=self._keys_for(index))
        await factory.start()
        await wait_for_cache_sync(leases, timeout=self._cache_sync_timeout, clock=self._clock)
        async with TaskRunner(name=self.service_name) as runner:
            await runner.start(controller.run, name="assign")
            async with TaskRunner(name=self.service_name) as timekeeping:
                timekeeping.start_soon(self._keep_time(), name="leases")
                timekeeping.start_soon(self._keep_passing(), name="passes")
                task_status.started()
                await self._stopping.wait()
            # The controller drains its writes in flight within its own drain timeout.
            controller.stop()
            await runner.wait()

    def _keys_for(self, index: int) -> Any:
        prefix = f"{index}|"

        def keys(obj: Any) -> tuple[str, ...]:
            return (prefix + meta_namespace_key(obj),)

        return keys

    # -- membership ----------------------------------------------------------------------

    def lease_event(self, changed: bool) -> None:
        """What the owner of a shared membership tells after each Lease event it applied:
        whether the members changed."""
        if changed:
            self._members_changed()
        self._wake.set()

    def _lease_seen(self, lease: Any) -> None:
        self.lease_event(self._membership.observe(lease, self._clock.monotonic()))

    def _lease_gone(self, lease: Any) -> None:
        name = name_of(lease.obj if isinstance(lease, DeletedFinalStateUnknown) else lease)
        self.lease_event(name is not None and self._membership.forget(name))

    def _members_changed(self) -> None:
        self._changes += 1
        members = self._membership.members()
        self._metrics.members(len(members))
        self._metrics.membership_changed()
        logger.info("ring %s: members now %s", self._ring.name, ", ".join(members) or "none")
        self._pass_due.set()

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

    def _labels_for(self, sharded: _Sharded, obj: Any) -> dict[str, str | None] | None:
        """The labels to write on ``obj`` (see the module notes), ``None`` for none."""
        namespace = namespace_of(obj) or None
        name = name_of(obj)
        if name is None:
            return None
        info = sharded.info
        if sharded.controlled:
            hash_key = controller_hash_key(obj)
        else:
            hash_key = object_hash_key(info.gvr.group, info.kind, namespace, name)
        if hash_key is None:
            return None
        desired = rendezvous(hash_key, self._membership.members())
        if desired is None:
            return None
        ring = self._ring
        labels = labels_of(obj) or {}
        current = labels.get(ring.shard_label)
        if current == desired:
            return None
        if current is not None and not sharded.controlled and self._membership.is_member(current):
            if ring.drain_label in labels:
                return None  # asked already: the shard gives it up, then it is assigned
            return {ring.drain_label: "true"}
        return {ring.shard_label: desired, ring.drain_label: None}

    async def _write(self, sharded: _Sharded, obj: Any) -> None:
        """Write what ``obj`` needs, at its resourceVersion; on a 409, read it again and
        decide again, a few times (it changed meanwhile: a reconcile's write, say)."""
        name = name_of(obj)
        namespace = namespace_of(obj) or None
        if name is None:
            return
        api = self._client.resource(sharded.info, namespace=namespace, metadata_only=True)
        for attempt in range(_WRITE_ATTEMPTS):
            labels = self._labels_for(sharded, obj)
            if labels is None:
                return
            patch = {"metadata": {"resourceVersion": resource_version_of(obj), "labels": labels}}
            try:
                await api.patch(name, patch)
            except NotFound:
                return
            except Conflict:
                if attempt + 1 == _WRITE_ATTEMPTS:
                    raise
                try:
                    obj = await api.get(name)
                except NotFound:
                    return
                continue
            if labels.get(self._ring.drain_label):
                self._drains += 1
                self._metrics.drained()
            else:
                self._assignments += 1
                self._metrics.assigned()
            return

    async def _assign(self, key: str) -> None:
        """The watch's path: an object no shard holds."""
        index, _, object_key = key.partition("|")
        sharded = self._resources[int(index)]
        obj = sharded.informer.indexer.get_by_key(object_key)
        if obj is not None:
            await self._write(sharded, obj)

    async def _keep_passing(self) -> None:
        """Go over every object: at the start, after each membership change, and every
        ``sync_period``; one pass at a time (changes during one bring another)."""
        clock = self._clock
        while True:
            self._pass_due.clear()
            try:
                await self._pass()
            except Exception:
                logger.exception("ring %s: a pass over the objects failed", self._ring.name)
            await first_completed(self._pass_due.wait(), clock.sleep(self._ring.sync_period))

    async def _pass(self) -> None:
        """List every sharded resource metadata-only, a page at a time, and write what each
        object needs, ``workers`` writes at once."""
        if not self._membership.members():
            return
        todo: list[tuple[_Sharded, Any]] = []
        for sharded in self._resources:
            api = self._client.resource(sharded.info, self._namespace, metadata_only=True)
            options = ListOptions(limit=_PAGE)
            while True:
                page = await api.list(options)
                todo.extend(
                    (sharded, obj)
                    for obj in page.items
                    if self._labels_for(sharded, obj) is not None
                )
                if not page.continue_:
                    break
                options = ListOptions(limit=_PAGE, continue_=page.continue_)
        self._passes += 1
        if not todo:
            return
        logger.info("ring %s: a pass relabels %s objects", self._ring.name, len(todo))
        queue = iter(todo)

        async def writer() -> None:
            for sharded, obj in queue:
                try:
                    await self._write(sharded, obj)
                except Exception as error:  # noqa: BLE001 - the next pass retries it
                    logger.warning(
                        "ring %s: relabelling %s failed: %s", self._ring.name, name_of(obj), error
                    )

        async with TaskRunner(name=f"{self.service_name} pass") as writers:
            for index in range(min(self._workers, len(todo))):
                writers.start_soon(writer(), name=f"writer {index}")
            await writers.wait()
