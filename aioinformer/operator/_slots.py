"""Range mode's hand-over: which slots of the hash space one shard may watch, decided from
the shard Leases alone.

Role: in range mode (``ShardRing(mode="ranges")``) the hash space is cut into
``ring.slots`` equal ranges. Each shard lists the slots it holds in its own Lease (the
:data:`~aioinformer.operator.sharding.SLOTS_ANNOTATION`), and watches only those, through
a shard selector. A slot belongs to the member :func:`~aioinformer.operator.sharding.slot_owner`
names among the live members; it moves in two steps, each written to a Lease:

1. **release**: a shard that no longer should hold a slot stops serving it at once (its
   guard refuses the slot's keys, its informer narrows), lets the reconciles of it that
   run finish, and only then writes its Lease without the slot;
2. **claim**: the shard that should hold it, once no other live shard's Lease lists it,
   writes its Lease with the slot (a *claim*), and serves it only after seeing that write
   come back on its Lease watch with no other live Lease listing the slot at that point.
   If one does, it withdraws the claim and tries again later.

Why no slot is ever served by two shards: a claim is judged only once this shard's
cache of the Leases has applied the write that made it (its informer's resourceVersion
is at or past the write's), so the cache holds every claim written before it, and maybe
some written after. Of two shards claiming one slot, the later write's judge sees the
earlier claim and withdraws; the earlier one's judge may see the later claim too and
withdraw as well (it then waits a random moment before claiming again), but never serves
beside it. A shard that serves a slot keeps it listed until it has stopped, so a later
claimant waits. A shard is live while it holds its own Lease (as in label mode); one
whose Lease is released or taken over by the sharder holds nothing, and it stopped
before that (its renewal deadline is shorter than the Lease's duration). The order in
which the Lease watch delivers changes does not matter: the judge reads the cache as a
whole, not the events one by one.

Input: every Lease of the ring as the watch delivers them (for the members and the
claims to plan with); the writes of this shard's Lease; the Leases as the cache holds
them once it has applied a write (to judge its claims); the end of a released slot's
reconciles. Output: what this shard's Lease should list (:attr:`SlotSeat.claimed`), what
it serves (:attr:`SlotSeat.serving`), and what it must let go
(:attr:`SlotSeat.releasing`). Nothing here does I/O or starts a task (see
:mod:`aioinformer.operator._manager_ring`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aioinformer.operator.sharding import slot_owner

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["SlotSeat"]


class SlotSeat:
    """The slots of shard ``identity`` in a ring of ``count`` slots (see the module
    docstring). Feed it every Lease of the ring (:meth:`lease_seen`, :meth:`lease_gone`),
    call :meth:`plan` after each change, write :attr:`claimed` to this shard's Lease when
    :meth:`plan` says so and report the write (:meth:`written`), :meth:`judge` the claims
    once the Lease cache has applied it, and report released slots whose reconciles ended
    (:meth:`released`)."""

    __slots__ = (
        "_member",
        "_others",
        "_pending",
        "_wanted",
        "_written",
        "claimed",
        "count",
        "identity",
        "releasing",
        "serving",
        "withdrawals",
    )

    def __init__(self, identity: str, count: int) -> None:
        self.identity = identity
        self.count = count
        self._member = False
        """Whether this shard holds its own Lease, as the watch last showed it."""
        self._others: dict[str, frozenset[int] | None] = {}
        """Every other live member's listed slots (``None``: unreadable, so all)."""
        self.claimed: set[int] = set()
        """The slots this shard's Lease should list: served, releasing, or claimed."""
        self.serving: set[int] = set()
        """Slots whose claim held: watched and reconciled."""
        self.releasing: set[int] = set()
        """Slots no longer served whose reconciles may still run: listed until they end."""
        self._pending: dict[int, bool] = {}
        """Claimed, not yet judged: slot → whether a write of the Lease listed it."""
        self._wanted: tuple[tuple[str, ...], frozenset[int]] = ((), frozenset())
        """The members last planned for, and the slots this shard won among them."""
        self._written: frozenset[int] | None = None
        """What the last write of this shard's Lease listed (``None``: none yet)."""
        self.withdrawals = 0
        """Claims withdrawn because another shard's came first."""

    # -- what the Leases show --------------------------------------------------------------

    def lease_seen(self, name: str, *, member: bool, slots: frozenset[int] | None) -> None:
        """A Lease of the ring as the watch shows it now: ``member`` when it is held by the
        shard it names, ``slots`` its annotation (``None``: missing or unreadable)."""
        if name == self.identity:
            self._member = member
        elif member:
            self._others[name] = slots
        else:
            self._others.pop(name, None)

    def lease_gone(self, name: str) -> None:
        """A Lease of the ring was deleted."""
        if name == self.identity:
            self._member = False
        else:
            self._others.pop(name, None)

    def _contested(self, others: Mapping[str, frozenset[int] | None] | None = None) -> set[int]:
        """Slots some other live member's Lease lists (all of them for an unreadable one)."""
        contested: set[int] = set()
        for slots in (self._others if others is None else others).values():
            if slots is None:
                return set(range(self.count))
            contested |= slots
        return contested

    # -- what this shard does --------------------------------------------------------------

    def members(self) -> list[str]:
        """The live members, this shard among them while it holds its Lease."""
        names = set(self._others)
        if self._member:
            names.add(self.identity)
        return sorted(names)

    def wanted(self) -> set[int]:
        """The slots this shard should hold: those it wins among the live members (none
        while it does not hold its own Lease)."""
        if not self._member:
            return set()
        members = tuple(self.members())
        if self._wanted[0] != members:
            won = (slot for slot in range(self.count) if slot_owner(slot, members) == self.identity)
            self._wanted = (members, frozenset(won))
        return set(self._wanted[1])

    def plan(self) -> bool:
        """Decide from the Leases seen: release served slots this shard no longer should
        hold, withdraw pending claims it no longer wants, claim wanted slots no other
        live Lease lists. True when the Lease is to be written: :attr:`claimed` is not
        what it last listed."""
        wanted = self.wanted()
        for slot in self.serving - wanted:
            self.serving.discard(slot)
            self.releasing.add(slot)
        for slot in [s for s in self._pending if s not in wanted]:
            del self._pending[slot]
            self.claimed.discard(slot)
        contested = self._contested()
        for slot in wanted - self.claimed - contested:
            self.claimed.add(slot)
            self._pending[slot] = False
        return self.needs_write

    @property
    def needs_write(self) -> bool:
        """Whether this shard's Lease does not list :attr:`claimed` yet, or a claim awaits
        a write (one made anew while the Lease already listed it)."""
        if self._written is None or self._written != self.claimed:
            return True
        return not all(self._pending.values())

    @property
    def awaiting_judgement(self) -> bool:
        """Whether a written claim waits for :meth:`judge`."""
        return any(self._pending.values())

    def written(self, claimed: Iterable[int]) -> None:
        """This shard's Lease was written listing ``claimed``: the pending claims among
        them are to be judged once the Lease cache has applied that write."""
        listed = self._written = frozenset(claimed)
        for slot in self._pending:
            if slot in listed:
                self._pending[slot] = True

    def judge(self, listed: frozenset[int], others: Mapping[str, frozenset[int] | None]) -> bool:
        """Settle the written claims, from the Leases as the cache holds them once it has
        applied this shard's last write: ``listed`` what this shard's Lease lists there,
        ``others`` what every other Lease held by its own shard lists (``None``:
        unreadable). A claim another Lease lists too is withdrawn; the rest are served.
        True when one was withdrawn."""
        contested = self._contested(others)
        withdrew = False
        for slot, written in list(self._pending.items()):
            if not written or slot not in listed:
                continue
            del self._pending[slot]
            if slot in contested:
                self.claimed.discard(slot)
                self.withdrawals += 1
                withdrew = True
            else:
                self.serving.add(slot)
        return withdrew

    def released(self, slots: Iterable[int]) -> None:
        """The reconciles of these releasing slots have ended: they leave the Lease at its
        next write (call :meth:`plan`, which reports it)."""
        for slot in slots:
            if slot in self.releasing:
                self.releasing.discard(slot)
                self.claimed.discard(slot)

    def reset(self) -> None:
        """This shard stopped (it lost its Lease, or leaves): it holds, serves and claims
        nothing; the Leases seen stay."""
        self.claimed.clear()
        self.serving.clear()
        self.releasing.clear()
        self._pending.clear()
        self._written = None

    @property
    def settled(self) -> bool:
        """Whether this shard serves exactly what it should, with nothing in between."""
        return not self._pending and not self.releasing and self.serving == self.wanted()

    def __repr__(self) -> str:
        return (
            f"<SlotSeat {self.identity} serving={len(self.serving)}"
            f" pending={len(self._pending)} releasing={len(self.releasing)}>"
        )
