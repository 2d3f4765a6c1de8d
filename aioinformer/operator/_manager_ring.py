"""A manager's seat in a shard ring: the Leases it follows and campaigns for, the
informers it narrows to its shard, and the sharder it runs when it holds that Lease.

Role: a :class:`~aioinformer.operator.Manager` built with ``shard`` keeps one
:class:`RingSeat`. The seat follows the ring's shard Leases into one
:class:`~aioinformer.operator.sharding.RingMembership`, which the sharder this replica
may run shares (and is told about); builds the electors of the two Leases every
replica campaigns for, its own shard's and the ring's sharder's; narrows the manager's
informers of sharded resources to this shard's objects; and tells which controllers
added to the manager are sharded: those watching such an informer, guarded, on a
resource the ring reconciles, by the shard's drain acknowledgement (see
:mod:`aioinformer.operator._shard`).

Input: the manager's options (the ring is their ``shard``), client, factory and clock,
and what the manager runs while it holds its shard Lease. Output: the two electors
(holding the shard Lease runs the manager's sharded controllers; holding the sharder
Lease runs a :class:`~aioinformer.operator._sharder.Sharder`, which stays at hand while
it runs), the shard-selected informers, and the ring's part of the manager's health.

Task model: none of its own. The manager runs both electors beside its leader campaign
and owns their tasks; the Lease handlers run on the Lease informer's dispatch, the
guards on the sharded controllers' workers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from aioinformer._kernel.lifecycle import State
from aioinformer._objects.meta import name_of
from aioinformer.factory import resource_key
from aioinformer.listwatch import ListOptions
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.operator._resourcelock import LEASES_RESOURCE
from aioinformer.operator._shard import ShardView, SlotView
from aioinformer.operator._sharder import Sharder
from aioinformer.operator._slot_keeper import SlotKeeper
from aioinformer.operator.leaderelection import LeaderElector, LeaseLock
from aioinformer.operator.sharding import RingMembership, slot_selector

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from aioinformer._kernel.clock import Clock
    from aioinformer.client import GVR, Client, ResourceInfo
    from aioinformer.factory import SharedInformerFactory
    from aioinformer.informer import SharedIndexInformer
    from aioinformer.operator._options import ManagerOptions
    from aioinformer.operator.controller import Controller
    from aioinformer.operator.sharding import ShardRing

__all__ = ["RingSeat"]


def _asked(resource: str | GVR | ResourceInfo, options: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a request for a sharded informer, before the ring narrows it."""
    return (
        resource_key(resource),
        options.get("namespace", ...),
        options.get("label_selector", ...),
        options.get("field_selector", ...),
        options.get("metadata_only", False),
    )


@dataclass(slots=True)
class _Sharded:
    """An informer of a sharded resource the seat handed out."""

    informer: SharedIndexInformer
    resource: str | GVR | ResourceInfo
    label_selector: str | None
    """The selector asked for, before the ring's own was added."""
    reconciled: bool
    """Whether the ring reconciles the resource (not only follows its owner)."""
    labels: ShardView | None = None
    """In label mode (and "auto"), the view its controllers' drain guards share."""
    slots: SlotView | None = None
    """In range mode (and "auto"), the view its controllers' slot guards share."""


# The manager's own logger: these lines are about its place in the ring.
logger = logging.getLogger("aioinformer.operator.manager")


class RingSeat:
    """One replica's part in ``ring``, as its manager runs it (see the module docstring).

    Built when the manager is: it asks ``factory`` for the ring's Lease informer at once,
    so the Leases are among the caches the manager waits for."""

    def __init__(
        self,
        options: ManagerOptions,
        client: Client,
        factory: SharedInformerFactory,
        *,
        clock: Clock,
        lead_shard: Callable[[], Coroutine[Any, Any, None]],
    ) -> None:
        ring = options.shard
        assert ring is not None
        self.ring: ShardRing = ring
        self._options = options
        self._client = client
        self._factory = factory
        self._clock = clock
        # Each sharded resource's key, and whether the ring reconciles it (not only
        # follows its owner); informers of them watch this shard's objects only.
        self._sharded: dict[str, bool] = {}
        # Sharded informers handed out: id -> what the ring keeps of each; and by what
        # was asked for, as their selectors move away from the keys they were built with.
        self._sharded_informers: dict[int, _Sharded] = {}
        self._handed: dict[tuple[Any, ...], SharedIndexInformer] = {}
        # Labels or ranges; None while "auto" has not asked the server yet.
        self.mode: Literal["labels", "ranges"] | None = None if ring.mode == "auto" else ring.mode
        # The sharder, from the first time this replica held the sharder Lease on.
        self._sharder: Sharder | None = None
        # Every replica follows the ring's Leases (full objects: the holder is in the
        # spec), the sharder's informer shared with it.
        self.membership = RingMembership()
        leases = factory.informer_for(
            LEASES_RESOURCE, namespace=ring.namespace, label_selector=ring.lease_selector
        )
        leases.add_event_handler(
            on_add=lambda lease, _initial: self._lease_seen(lease),
            on_update=lambda _old, lease: self._lease_seen(lease),
            on_delete=self._lease_gone,
            name="manager ring members",
        )
        for spec in ring.resources:
            self._sharded[resource_key(spec.resource)] = True
            for owned in spec.controlled:
                self._sharded.setdefault(resource_key(owned), False)
        shard_lock = LeaseLock(
            client, ring.namespace, ring.identity, ring.identity, labels=ring.lease_labels
        )
        self.shard_elector = self._elector(shard_lock, lead_shard)
        """Campaigns for this replica's own shard Lease; holding it runs ``lead_shard()``."""
        self.sharder_elector = self._elector(
            LeaseLock(client, ring.namespace, ring.sharder_lease, ring.identity),
            self._run_sharder,
        )
        """Campaigns for the ring's sharder Lease; holding it runs the sharder."""
        self.slots = SlotKeeper(ring, factory, shard_lock, leases, clock=clock)
        """In range mode, this shard's slots: kept while it holds its shard Lease."""

    def _elector(
        self, lock: LeaseLock, work: Callable[[], Coroutine[Any, Any, None]]
    ) -> LeaderElector:
        """An elector on one of the ring's Leases, with the ring's timings, releasing the
        Lease on a graceful stop (so the sharder moves a leaving shard's objects at once)."""
        ring = self.ring
        return LeaderElector(
            lock,
            lease_duration=ring.lease_duration,
            renew_deadline=ring.renew_deadline,
            retry_period=ring.retry_period,
            release_on_cancel=True,
            on_started_leading=work,
            clock=self._clock,
        )

    # The ring's one Lease handler: it feeds the one membership, which the sharder this
    # replica runs (while it holds the sharder Lease) shares and is told about.

    def _lease_seen(self, lease: Any) -> None:
        self._members_seen(self.membership.observe(lease, self._clock.monotonic()))
        self.slots.lease_seen(lease)

    def _lease_gone(self, lease: Any) -> None:
        name = name_of(lease.obj if isinstance(lease, DeletedFinalStateUnknown) else lease)
        self._members_seen(name is not None and self.membership.forget(name))
        self.slots.lease_gone(lease)

    def _members_seen(self, changed: bool) -> None:
        if changed:
            members = self.membership.members()
            logger.info("manager: ring members now %s", ", ".join(members) or "none")
        if self._sharder is not None:
            self._sharder.lease_event(changed)

    # -- what the manager hands out --------------------------------------------------------

    def informer_for(
        self, resource: str | GVR | ResourceInfo, **options: Any
    ) -> SharedIndexInformer:
        """The factory's informer for ``resource``; for a sharded resource, narrowed to this
        shard: by the ring's shard label selector added to ``label_selector`` (label mode,
        and "auto" until the ring knows), or by the shard selector of its slots (range
        mode, none until it holds some)."""
        sharded = self._sharded.get(resource_key(resource))
        if sharded is None:
            return self._factory.informer_for(resource, **options)
        ring = self.ring
        wanted = options.get("label_selector")
        asked = _asked(resource, options)
        handed = self._handed.get(asked)
        if handed is not None:
            # The one handed out before, whose selectors moved since (its key kept the
            # ones it was built with): asking again means the same informer.
            indexers = options.get("indexers")
            if indexers:
                existing = handed.indexer.get_indexers()
                handed.add_indexers({n: f for n, f in indexers.items() if n not in existing})
            return handed
        if self.mode == "ranges":
            informer = self._factory.informer_for(
                resource, **{**options, "shard_selector": self.slots.selector()}
            )
        else:
            selector = ring.selector if not wanted else f"{wanted},{ring.selector}"
            informer = self._factory.informer_for(
                resource, **{**options, "label_selector": selector}
            )
        if id(informer) not in self._sharded_informers:
            entry = _Sharded(informer, resource, wanted, reconciled=sharded)
            if sharded and self.mode != "ranges":
                entry.labels = ShardView(ring, informer)
            if sharded and self.mode != "labels":
                entry.slots = SlotView(ring, informer, lambda: self.slots.serving)
            if self.mode == "ranges":
                self.slots.add_informer(informer)
            self._sharded_informers[id(informer)] = entry
            self._handed[asked] = informer
        return informer

    async def choose_mode(self) -> Literal["labels", "ranges"]:
        """Settle "auto" before the informers list: ranges when the ring keeps controlled
        objects with their owners that way and the server applies a shard selector to a
        LIST of every ring resource (its answer echoes ``shardInfo``), labels otherwise.
        The informers handed out so far move to the mode chosen."""
        ring = self.ring
        mode = self.mode
        if mode is None:
            mode = "labels"
            if ring.ranges_keep_owners:
                served = [await self._serves_shards(spec.resource) for spec in ring.resources]
                mode = "ranges" if all(served) else "labels"
            logger.info(
                "manager: ring %s shards by %s (%s)",
                ring.name,
                mode,
                "the server applies shard selectors"
                if mode == "ranges"
                else "shard selectors are not served here, or resources it controls need labels",
            )
            self.mode = mode
            if mode == "ranges":
                for entry in self._sharded_informers.values():
                    self._factory.reselect(
                        entry.informer,
                        label_selector=entry.label_selector,
                        shard_selector=self.slots.selector(),
                    )
                    self.slots.add_informer(entry.informer)
                    if entry.labels is not None:
                        entry.labels.retire()
        return mode

    async def _serves_shards(self, resource: str | GVR) -> bool:
        everything = slot_selector(range(1), 1, field=self.ring.range_field)
        api = self._client.resource(resource, namespace=self._options.namespace)
        page = await api.list(ListOptions(limit=1, shard_selector=str(everything)))
        return page.shard_selector is not None

    def shard_controller(self, controller: Controller) -> bool:
        """Whether ``controller`` is sharded: it watches a shard-selected informer of the
        manager's. Then each of its watches of a resource the ring reconciles gets a guard:
        in label mode the drain acknowledgement, in range mode the slot check (in "auto",
        both, the one of the mode chosen deciding); a controlled resource follows its
        owner, with no guard of its own."""
        sharded = [
            self._sharded_informers[id(informer)]
            for informer in controller.informers
            if id(informer) in self._sharded_informers
        ]
        if not sharded:
            return False
        for entry in sharded:
            by_labels = by_slots = None
            if entry.labels is not None:
                by_labels = entry.labels.guard(self._client, entry.resource, controller.key_func)
                controller.watch(entry.informer, enqueue=by_labels.keys)
            if entry.slots is not None:
                by_slots = entry.slots.guard(controller.key_func)
                self.slots.add_guard(controller, by_slots)
            if by_labels is not None or by_slots is not None:
                controller._add_guard(self._guard(by_labels, by_slots))
        return True

    def _guard(self, by_labels: Any, by_slots: Any) -> Callable[[str], Coroutine[Any, Any, bool]]:
        """The guard of the ring's mode, as it is when the key comes."""

        async def guard(key: str) -> bool:
            chosen = by_slots if self.mode == "ranges" else by_labels
            return False if chosen is None else bool(await chosen(key))

        return guard

    # -- the sharder Lease's work ----------------------------------------------------------

    async def _run_sharder(self) -> None:
        """The sharder Lease's work: assign the ring's objects until cancelled (in range
        mode, only take expired shard Leases over and delete orphaned ones)."""
        ring = self.ring
        sharder = self._sharder = Sharder(
            self._client,
            self._factory,
            ring,
            namespace=self._options.namespace,
            clock=self._clock,
            cache_sync_timeout=self._options.cache_sync_timeout,
            membership=self.membership,
            assign=self.mode != "ranges",
        )
        logger.info("manager: running the sharder of ring %s", ring.name)
        await sharder.run()

    # -- state -----------------------------------------------------------------------------

    @property
    def sharder(self) -> Sharder | None:
        """The ring's sharder while this replica runs it (it holds the sharder Lease)."""
        sharder = self._sharder
        return sharder if sharder is not None and sharder.state is State.RUNNING else None

    def health(self, *, holding: bool) -> dict[str, Any]:
        """The ring's name, this replica's identity, whether it holds its shard Lease
        (``holding``, as the manager knows) and runs the sharder, and the ring's members
        as its Leases show them."""
        ring = self.ring
        health: dict[str, Any] = {
            "ring": ring.name,
            "identity": ring.identity,
            "mode": self.mode or "auto",
            "holding": holding,
            "sharder": self.sharder is not None,
            "members": self.membership.members(),
        }
        if self.mode == "ranges":
            health["slots"] = self.slots.health()
        return health
