"""Range mode's hand-over through the shard Leases (``aioinformer.operator._slots``): the
slot arithmetic, the claim rules one by one, and a simulated ring whose members join,
leave, crash and see each other's writes late, in which no slot is ever served by two
shards and every slot ends served once membership is stable."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from aioinformer.operator._slots import SlotSeat
from aioinformer.operator.sharding import (
    ShardedResource,
    ShardRing,
    format_slots,
    parse_slots,
    slot_owner,
    slot_selector,
    slots_of_hash,
)
from aioinformer.shard_selector import HASH_SPACE, ShardSelector, fnv1a_64

# -- slot arithmetic ----------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 3, 7, 64, 100])
def test_a_hash_falls_in_the_slot_whose_range_holds_it(count: int) -> None:
    rng = random.Random(count)
    cuts = ShardSelector.split(count)
    for h in [0, 1, HASH_SPACE - 2, *(rng.randrange(HASH_SPACE - 1) for _ in range(300))]:
        slot = slots_of_hash(h, count)
        assert cuts[slot].contains_hash(h)
        assert slot_selector([slot], count).contains_hash(h)
        assert not slot_selector([(slot + 1) % count], count).contains_hash(h) or count == 1


def test_adjacent_slots_make_one_range_and_no_slot_selects_one_hash() -> None:
    selector = slot_selector([5, 0, 1], 8)
    assert [(r.start, r.end) for r in selector.ranges] == [
        (0, HASH_SPACE // 4),
        (HASH_SPACE * 5 // 8, HASH_SPACE * 6 // 8),
    ]
    nothing = slot_selector([], 8, field="object.metadata.namespace")
    assert [(r.field, r.end - r.start) for r in nothing.ranges] == [
        ("object.metadata.namespace", 1)
    ]


def test_the_slots_annotation_round_trips_and_refuses_what_it_cannot_read() -> None:
    assert format_slots([9, 0, 1, 2, 3, 7, 10]) == "0-3,7,9-10"
    assert format_slots([]) == ""
    assert parse_slots("0-3,7,9-10", 64) == frozenset({0, 1, 2, 3, 7, 9, 10})
    assert parse_slots("", 64) == frozenset()
    for unreadable in ["x", "3-1", "64", "1-", "-1", None, 7]:
        assert parse_slots(unreadable, 64) is None


def test_a_ring_object_lands_in_the_slot_of_its_fields_hash() -> None:
    ring = ShardRing(name="r", namespace="ops", resources=(ShardedResource("widgets"),), slots=16)
    obj = {"metadata": {"uid": "u-1", "namespace": "team-a", "name": "w"}}
    assert ring.slot_of(obj) == slots_of_hash(fnv1a_64("u-1"), 16)
    by_namespace = ShardRing(
        name="r",
        namespace="ops",
        resources=(ShardedResource("widgets"),),
        slots=16,
        range_field="object.metadata.namespace",
    )
    assert by_namespace.slot_of(obj) == slots_of_hash(fnv1a_64("team-a"), 16)


def test_range_mode_keeps_controlled_objects_with_their_owner_only_by_namespace() -> None:
    resources = (ShardedResource("deployments.apps", controlled=("replicasets.apps",)),)
    with pytest.raises(ValueError, match=r"range_field='object\.metadata\.namespace'"):
        ShardRing(name="r", namespace="ops", resources=resources, mode="ranges")
    ring = ShardRing(
        name="r",
        namespace="ops",
        resources=resources,
        mode="ranges",
        range_field="object.metadata.namespace",
    )
    assert ring.ranges_keep_owners
    assert not ShardRing(name="r", namespace="ops", resources=resources).ranges_keep_owners
    with pytest.raises(ValueError, match="mode must be"):
        ShardRing(name="r", namespace="ops", resources=resources, mode="sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="slots must be"):
        ShardRing(name="r", namespace="ops", resources=resources, slots=0)


# -- the claim rules ----------------------------------------------------------------------


def seat(identity: str = "a", count: int = 4) -> SlotSeat:
    s = SlotSeat(identity, count)
    s.lease_seen(identity, member=True, slots=frozenset())
    return s


def judging(s: SlotSeat) -> bool:
    return s.awaiting_judgement


def test_a_lone_shard_claims_every_slot_and_serves_once_its_claim_is_judged() -> None:
    a = seat()
    assert a.plan()
    assert a.claimed == {0, 1, 2, 3}
    assert not judging(a)  # nothing written yet
    a.written(a.claimed)
    assert a.serving == set()  # not before the cache has applied the write
    assert a.awaiting_judgement
    assert not a.judge(frozenset({0, 1, 2, 3}), {})
    assert a.serving == {0, 1, 2, 3}
    assert a.settled
    assert not a.plan()


def test_a_claim_another_lease_lists_when_judged_is_withdrawn() -> None:
    a = seat()
    a.plan()
    a.written(a.claimed)
    # b's Lease lists slot 2 in the cache that applied a's write: b came first, or
    # claimed at the same moment; either way a does not serve it.
    assert a.judge(frozenset({0, 1, 2, 3}), {"b": frozenset({2})})
    assert a.serving == {0, 1, 3}
    assert 2 not in a.claimed
    assert a.withdrawals == 1
    assert a.needs_write  # the withdrawal is written next


def test_an_unreadable_annotation_holds_every_slot() -> None:
    a = seat()
    a.lease_seen("b", member=True, slots=None)
    a.plan()
    assert a.claimed == set()
    a.lease_seen("b", member=True, slots=frozenset())
    a.plan()
    a.written(a.claimed)
    assert a.judge(frozenset(a.claimed), {"b": None})
    assert a.serving == set()


def test_a_claim_not_listed_in_the_cache_yet_waits_for_a_later_judgement() -> None:
    a = seat()
    a.plan()
    a.written(a.claimed)
    assert not a.judge(frozenset(), {})  # the cache's own Lease does not list them
    assert a.serving == set()
    assert a.awaiting_judgement


def test_a_slot_another_live_lease_lists_is_not_claimed_until_it_is_let_go() -> None:
    a = seat(count=1)
    a.lease_seen("c", member=True, slots=frozenset({0}))
    a.plan()
    assert a.claimed == set()
    a.lease_seen("c", member=True, slots=frozenset())
    a.plan()
    assert a.claimed == ({0} if slot_owner(0, ["a", "c"]) == "a" else set())


def test_a_claim_made_anew_while_listed_is_written_again() -> None:
    a = seat(count=8)
    a.plan()
    mine = set(a.claimed)
    a.written(mine)
    a.lease_seen("b", member=True, slots=frozenset())
    a.plan()  # b joined: some pending claims are withdrawn...
    a.lease_seen("b", member=False, slots=frozenset())
    a.plan()  # ...and claimed again when b left, though the Lease listed them all along
    assert a.claimed == mine
    assert a.needs_write


def test_a_slot_to_give_up_is_released_only_after_its_reconciles() -> None:
    a = seat(count=8)
    a.plan()
    a.written(a.claimed)
    a.judge(frozenset(a.claimed), {})
    assert a.serving == set(range(8))
    a.lease_seen("b", member=True, slots=frozenset())
    a.plan()
    moving = {s for s in range(8) if slot_owner(s, ["a", "b"]) == "b"}
    assert moving
    assert a.releasing == moving
    assert not a.serving & moving
    assert a.claimed >= moving  # still listed: b must wait
    a.released(moving)
    assert a.plan()
    assert not a.claimed & moving


def test_losing_the_lease_releases_everything() -> None:
    a = seat()
    a.plan()
    a.written(a.claimed)
    a.judge(frozenset(a.claimed), {})
    a.lease_seen("a", member=False, slots=frozenset(a.claimed))
    a.plan()
    assert a.serving == set()
    assert a.releasing == {0, 1, 2, 3}
    a.reset()
    assert (a.claimed, a.serving, a.releasing) == (set(), set(), set())


# -- a simulated ring ---------------------------------------------------------------------


@dataclass
class Lease:
    holder: str
    slots: frozenset[int] | None
    rv: int


@dataclass
class Member:
    seat: SlotSeat
    cursor: int = 0
    """Events of the log delivered so far."""
    write: tuple[frozenset[int], int] | None = None
    """A write whose answer has not come: what it listed, its place in the log."""
    judge_at: int | None = None
    """The place in the log of the last answered write whose claims await judgement."""
    running: bool = True
    draining: set[int] = field(default_factory=set)


class Ring:
    """An API server holding the ring's Leases, with one ordered watch per member, each
    delivered late by a random amount, and writes whose answers come late too."""

    def __init__(self, rng: random.Random, count: int) -> None:
        self.rng = rng
        self.count = count
        self.rv = 0
        self.leases: dict[str, Lease] = {}
        self.log: list[tuple[str, Lease | None]] = []
        self.members: dict[str, Member] = {}

    def put(self, name: str, holder: str, slots: frozenset[int] | None) -> int:
        """Write a Lease; its place in the log."""
        self.rv += 1
        lease = Lease(holder, slots, self.rv)
        self.leases[name] = lease
        self.log.append((name, lease))
        return len(self.log) - 1

    def join(self, name: str) -> None:
        member = self.members[name] = Member(SlotSeat(name, self.count))
        # A new member reads every Lease first (its informer's list), then its own.
        member.cursor = 0
        previous = self.leases.get(name)
        self.put(name, name, previous.slots if previous else frozenset())

    def deliver(self, member: Member) -> None:
        name, lease = self.log[member.cursor]
        member.cursor += 1
        if lease is None:
            member.seat.lease_gone(name)
        else:
            member.seat.lease_seen(name, member=lease.holder == name, slots=lease.slots)

    def answer(self, member: Member) -> None:
        assert member.write is not None
        listed, place = member.write
        member.write = None
        member.seat.written(listed)
        member.judge_at = place

    def judge(self, name: str, member: Member) -> None:
        """Judge with the member's cache once it has applied its write: every change up to
        where its watch is, and, as a cache that coalesces changes per Lease may, some
        later ones too."""
        assert member.judge_at is not None
        assert member.cursor > member.judge_at
        member.judge_at = None
        view: dict[str, Lease] = {}
        for place, (leased, lease) in enumerate(self.log):
            if lease is None or (place >= member.cursor and self.rng.random() < 0.7):
                continue
            view[leased] = lease
        own = view.get(name)
        others = {n: lease.slots for n, lease in view.items() if n != name and lease.holder == n}
        member.seat.judge(own.slots or frozenset() if own else frozenset(), others)

    def act(self, name: str, member: Member) -> None:
        s = member.seat
        if member.write is None and s.plan():
            listed = frozenset(s.claimed)
            member.write = (listed, self.put(name, name, listed))

    def step(self) -> None:
        name = self.rng.choice(sorted(self.members))
        member = self.members[name]
        if not member.running:
            return
        roll = self.rng.random()
        if roll < 0.45 and member.cursor < len(self.log):
            self.deliver(member)
        elif roll < 0.6 and member.write is not None:
            self.answer(member)
        elif roll < 0.7 and member.judge_at is not None and member.cursor > member.judge_at:
            self.judge(name, member)
        elif roll < 0.8 and member.seat.releasing:
            # The reconciles of some released slots end.
            done = {s for s in member.seat.releasing if self.rng.random() < 0.5}
            member.seat.released(done)
        self.act(name, member)

    def check(self) -> None:
        held: dict[int, str] = {}
        for name, member in self.members.items():
            if not member.running:
                continue
            for slot in member.seat.serving | member.seat.releasing:
                assert slot not in held, f"slot {slot} served by {held[slot]} and {name}"
                held[slot] = name

    def settle(self) -> None:
        """Deliver everything, answer every write, end every drain, until nothing moves."""
        for _ in range(200):
            moved = False
            for name, member in sorted(self.members.items()):
                if not member.running:
                    continue
                while member.cursor < len(self.log):
                    self.deliver(member)
                    moved = True
                if member.write is not None:
                    self.answer(member)
                    moved = True
                if member.judge_at is not None and member.cursor > member.judge_at:
                    self.judge(name, member)
                    moved = True
                if member.seat.releasing:
                    member.seat.released(set(member.seat.releasing))
                    moved = True
                before = member.write
                self.act(name, member)
                moved = moved or member.write is not before
                self.check()
            if not moved:
                return
        raise AssertionError("the ring did not settle")


@pytest.mark.parametrize("seed", range(100))
def test_no_slot_is_ever_served_twice_and_all_are_served_once_stable(seed: int) -> None:
    rng = random.Random(seed)
    ring = Ring(rng, count=12)
    names = iter(f"shard-{i}" for i in range(100))
    for _ in range(2):
        ring.join(next(names))
    for _ in range(600):
        roll = rng.random()
        live = [n for n, m in ring.members.items() if m.running]
        if roll < 0.01:
            ring.join(next(names))
        elif roll < 0.015 and len(live) > 1:
            # Leaves gracefully: stops (its reconciles end), then releases its Lease.
            gone = rng.choice(live)
            ring.members[gone].running = False
            ring.members[gone].seat.reset()
            ring.put(gone, "", ring.leases[gone].slots)
        elif roll < 0.02 and len(live) > 1:
            # Crashes: stops at once; its Lease stays held until the sharder takes it over.
            gone = rng.choice(live)
            ring.members[gone].running = False
            ring.members[gone].seat.reset()
        elif roll < 0.025:
            for name, member in ring.members.items():
                lease = ring.leases[name]
                if not member.running and lease.holder == name:
                    ring.put(name, "aioinformer-sharder", lease.slots)
        else:
            ring.step()
        ring.check()
    # Stable membership: the crashed are taken over, everything is delivered.
    for name, member in ring.members.items():
        lease = ring.leases[name]
        if not member.running and lease.holder == name:
            ring.put(name, "aioinformer-sharder", lease.slots)
    ring.settle()
    running = {n: m for n, m in ring.members.items() if m.running}
    served = sorted(slot for m in running.values() for slot in m.seat.serving)
    assert served == list(range(12)), "every slot served exactly once"
    for member in running.values():
        assert member.seat.settled
        assert member.seat.members() == sorted(running)
