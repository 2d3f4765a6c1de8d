"""A range-mode shard's slots, kept while it holds its shard Lease: claimed and released
through that Lease, watched through its informers' shard selectors.

Role: the I/O around :class:`~aioinformer.operator._slots.SlotSeat`, which decides. A
:class:`SlotKeeper` is fed every Lease of the ring (by the manager's one Lease handler),
and while its shard holds its Lease, :meth:`SlotKeeper.run` loops: plan; narrow or widen
the shard's informers to the slots it serves
(:meth:`~aioinformer.SharedInformerFactory.reselect`, a relist); release the slots it gave
up once no reconcile of them runs in a sharded controller; write the Lease's slots
annotation when it changed; judge the claims once the Lease cache has applied that write.
Guards read :attr:`SlotKeeper.serving` before each reconcile, so a slot given up is
refused at once, before its informer has narrowed.

Input: the ring, the factory, the shard Lease's lock, the informers and the guards of the
sharded controllers. Output: the Lease's annotation and the informers' selectors. Task
model: :meth:`SlotKeeper.run` runs in a task of the manager's shard work, beside the
sharded controllers; the Lease handler and the controllers' workers only set its wake-up.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aioinformer._kernel.runner import first_completed
from aioinformer._objects.meta import name_of, resource_version_of
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.operator._slots import SlotSeat
from aioinformer.operator.sharding import (
    SLOTS_ANNOTATION,
    format_slots,
    parse_slots,
    slot_selector,
)

if TYPE_CHECKING:
    from aioinformer._kernel.clock import Clock
    from aioinformer.factory import SharedInformerFactory
    from aioinformer.informer import SharedIndexInformer
    from aioinformer.operator._resourcelock import LeaseLock
    from aioinformer.operator._shard import SlotGuard
    from aioinformer.operator.controller import Controller
    from aioinformer.operator.sharding import ShardRing
    from aioinformer.shard_selector import ShardSelector

__all__ = ["SlotKeeper"]

# The manager's own logger: these lines are about its place in the ring.
logger = logging.getLogger("aioinformer.operator.manager")


class SlotKeeper:
    """One range-mode shard's slots (see the module docstring)."""

    def __init__(
        self,
        ring: ShardRing,
        factory: SharedInformerFactory,
        lock: LeaseLock,
        leases: SharedIndexInformer,
        *,
        clock: Clock,
    ) -> None:
        self.ring = ring
        self._factory = factory
        self._lock = lock
        self._leases = leases
        self._clock = clock
        self._rng = random.Random()
        self._judge_after: str | None = None
        """The resourceVersion of the last write whose claims await judgement."""
        self.seat = SlotSeat(ring.identity, ring.slots)
        self._informers: list[SharedIndexInformer] = []
        self._guards: list[tuple[Controller, SlotGuard]] = []
        self._wake = asyncio.Event()
        self._followed: frozenset[int] | None = None
        """The slots the informers were last moved to (``None``: not yet, or an informer
        was added since)."""
        self.running = False
        """Whether :meth:`run` runs: this shard holds its Lease."""

    # -- what the manager tells ------------------------------------------------------------

    @property
    def serving(self) -> set[int]:
        """The slots this shard serves now (what its guards let through)."""
        return self.seat.serving

    def selector(self) -> ShardSelector:
        """The shard selector of the slots served (of a single hash value with none)."""
        ring = self.ring
        return slot_selector(self.seat.serving, ring.slots, field=ring.range_field)

    def add_informer(self, informer: SharedIndexInformer) -> None:
        """An informer of a sharded resource: it watches the slots served."""
        self._informers.append(informer)
        self._followed = None

    def add_guard(self, controller: Controller, guard: SlotGuard) -> None:
        """A sharded controller's guard: a slot is released once no reconcile it let
        through for that slot runs in ``controller``."""
        self._guards.append((controller, guard))
        controller._on_reconcile_end(self._reconcile_ended)

    def _reconcile_ended(self) -> None:
        """A worker is done with a key: that matters only while a slot is being let go
        (waking for every reconcile would cost a turn of :meth:`run` per event)."""
        if self.seat.releasing:
            self._wake.set()

    def _read(self, lease: Any) -> tuple[str, bool, frozenset[int] | None] | None:
        """A ring Lease's name, whether its shard holds it, and the slots it lists
        (``None``: unreadable); ``None`` for what is not a Lease."""
        meta = lease.get("metadata") if isinstance(lease, Mapping) else None
        if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
            return None
        name: str = meta["name"]
        spec = lease.get("spec")
        holder = spec.get("holderIdentity") if isinstance(spec, Mapping) else None
        annotations = meta.get("annotations")
        text = annotations.get(SLOTS_ANNOTATION) if isinstance(annotations, Mapping) else None
        return name, holder == name, parse_slots(text, self.ring.slots)

    def lease_seen(self, lease: Any) -> None:
        """A Lease of the ring as its watch shows it."""
        read = self._read(lease)
        if read is not None:
            name, member, slots = read
            self.seat.lease_seen(name, member=member, slots=slots)
            self._wake.set()

    def lease_gone(self, lease: Any) -> None:
        """A Lease of the ring was deleted."""
        name = name_of(lease.obj if isinstance(lease, DeletedFinalStateUnknown) else lease)
        if name is not None:
            self.seat.lease_gone(name)
            self._wake.set()

    # -- while holding the shard Lease ---------------------------------------------------

    async def run(self) -> None:
        """Keep the slots until cancelled (the Lease lost, or the manager stopping); then
        serve nothing. The first write replaces whatever a former run of this shard left
        in its Lease's annotation with what this run claims."""
        seat = self.seat
        seat.reset()
        self._judge_after = None
        self.running = True
        try:
            while True:
                self._wake.clear()
                seat.plan()
                self._follow_serving()
                self._finish_releases()
                if seat.needs_write:
                    await self._write()
                    continue
                judging = self._judging()
                if judging is not None:
                    await self._judge(judging)
                    continue
                await self._wake.wait()
        finally:
            self.running = False
            seat.reset()
            self._follow_serving()

    async def _judge(self, resource_version: str) -> None:
        """Judge the written claims once the Lease cache has applied the write (it then
        holds every claim written before it); after a withdrawal, wait a random moment
        so that two shards that withdrew from each other do not claim again in step."""
        ring = self.ring
        if not await self._leases.wait_for_resource_version(
            resource_version, timeout=ring.retry_period
        ):
            # Not applied yet, or the cache stopped (then the wait returns at once): wait
            # a little before the next turn waits again.
            await first_completed(self._wake.wait(), self._clock.sleep(ring.retry_period))
            return
        self._judge_after = None
        listed: frozenset[int] = frozenset()
        others: dict[str, frozenset[int] | None] = {}
        for lease in self._leases.indexer.list():
            read = self._read(lease)
            if read is None:
                continue
            name, member, slots = read
            if name == ring.identity:
                listed = slots or frozenset()
            elif member:
                others[name] = slots
        if self.seat.judge(listed, others):
            await self._clock.sleep(self._rng.uniform(0, ring.retry_period))

    def _follow_serving(self) -> None:
        """Move the informers to the slots served (a relist where the selector changed);
        nothing to do while the slots served are those the informers were moved to."""
        serving = frozenset(self.seat.serving)
        if serving == self._followed:
            return
        self._followed = serving
        selector = self.selector()
        for informer in self._informers:
            if self._factory.reselect(informer, shard_selector=selector):
                logger.info(
                    "manager: shard %s now watches slots %s of %s",
                    self.ring.identity,
                    format_slots(self.seat.serving) or "none",
                    informer.name,
                )

    def _judging(self) -> str | None:
        """The write whose claims await judgement, if one does."""
        return self._judge_after if self.seat.awaiting_judgement else None

    def _finish_releases(self) -> None:
        """Let go the releasing slots no reconcile of a sharded controller still runs in."""
        busy: set[int] = set()
        for controller, guard in self._guards:
            reconciling = controller._reconciling()
            guard.keep_only(reconciling)
            for key in reconciling:
                slot = guard.slot_of_key(key)
                if slot is not None:
                    busy.add(slot)
        releasing = self.seat.releasing
        if not releasing:
            return
        done = releasing - busy
        if done:
            self.seat.released(done)
            logger.info("manager: shard %s let slots %s go", self.ring.identity, format_slots(done))

    async def _write(self) -> None:
        """List the claimed slots in this shard's Lease; on failure, try again after the
        ring's retry period (a Lease event or a finished reconcile wakes it sooner)."""
        claimed = set(self.seat.claimed)
        try:
            lease = await self._lock.annotate({SLOTS_ANNOTATION: format_slots(claimed)})
        except Exception as exc:  # noqa: BLE001 - any failure is retried; the Lease decides
            logger.warning(
                "manager: shard %s could not list its slots in its Lease: %s",
                self.ring.identity,
                exc,
            )
            await first_completed(self._wake.wait(), self._clock.sleep(self.ring.retry_period))
            return
        self.seat.written(claimed)
        self._judge_after = resource_version_of(lease) or None

    def health(self) -> dict[str, Any]:
        """The slots served, claimed and releasing, as the annotation writes them."""
        seat = self.seat
        return {
            "serving": format_slots(seat.serving),
            "claimed": format_slots(seat.claimed),
            "releasing": format_slots(seat.releasing),
        }
