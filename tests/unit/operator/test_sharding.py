"""The sharding vocabulary: the ring's rules, its labels, hash keys, rendezvous
assignment and membership judged from Leases on the observer's clock."""

from __future__ import annotations

import collections
from typing import Any

import pytest

from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.factory import SharedInformerFactory
from aioinformer.operator._sharder import Sharder
from aioinformer.operator.sharding import (
    ORPHAN_AFTER,
    RING_LABEL,
    RingMembership,
    ShardedResource,
    ShardRing,
    ShardState,
    controller_hash_key,
    drain_label,
    object_hash_key,
    rendezvous,
    shard_label,
)
from aioinformer.testing.clock import FakeClock


def ring(**overrides: Any) -> ShardRing:
    options: dict[str, Any] = {
        "name": "widgets",
        "namespace": "ops",
        "resources": (ShardedResource("widgets.example.com"),),
        "identity": "shard-a",
    }
    options.update(overrides)
    return ShardRing(**options)


def lease(
    name: str, holder: str | None = None, *, renew: str = "t0", duration: int = 15, rv: str = "1"
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ops", "resourceVersion": rv},
        "spec": {
            "holderIdentity": name if holder is None else holder,
            "leaseDurationSeconds": duration,
            "renewTime": renew,
            "acquireTime": "t0",
        },
    }


# -- the ring ----------------------------------------------------------------------------


def test_the_labels_follow_the_sharding_timebertt_dev_conventions() -> None:
    r = ring()
    assert shard_label("widgets") == "shard.alpha.sharding.timebertt.dev/widgets"
    assert drain_label("widgets") == "drain.alpha.sharding.timebertt.dev/widgets"
    assert RING_LABEL == "alpha.sharding.timebertt.dev/controllerring"
    assert r.selector == "shard.alpha.sharding.timebertt.dev/widgets=shard-a"
    assert r.lease_selector == "alpha.sharding.timebertt.dev/controllerring=widgets"
    assert r.lease_labels == {RING_LABEL: "widgets"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param({"name": "x" * 64}, "DNS label of at most 63", id="ring-name-too-long"),
        pytest.param({"name": "Widgets"}, "DNS label", id="ring-name-uppercase"),
        pytest.param({"identity": "Pod_1"}, "valid object name", id="identity-invalid"),
        pytest.param({"identity": "p" * 64}, "longer than 63", id="identity-too-long"),
        pytest.param({"resources": ()}, "shards no resource", id="no-resources"),
        pytest.param(
            {"lease_duration": 12, "renew_deadline": 10, "retry_period": 2},
            "must exceed renew_deadline",
            id="lease-too-short",
        ),
        pytest.param({"sync_period": 0}, "sync_period", id="no-sync-period"),
    ],
)
def test_a_ring_that_cannot_work_is_refused_with_the_reason(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ring(**overrides)


def test_a_replica_owns_what_carries_its_shard_label_and_sees_drains() -> None:
    r = ring()
    mine = {"metadata": {"labels": {r.shard_label: "shard-a"}}}
    theirs = {"metadata": {"labels": {r.shard_label: "shard-b"}}}
    draining = {"metadata": {"labels": {r.shard_label: "shard-a", r.drain_label: "true"}}}
    assert r.owns(mine)
    assert not r.owns(theirs)
    assert not r.owns({"metadata": {}})
    assert r.draining(draining)
    assert not r.draining(mine)


# -- hash keys ---------------------------------------------------------------------------


def test_an_object_is_keyed_by_group_kind_namespace_and_name() -> None:
    assert object_hash_key("apps", "Deployment", "ns", "web") == "apps/Deployment/ns/web"
    assert object_hash_key("", "Namespace", None, "ns") == "/Namespace//ns"


def test_a_controlled_object_takes_its_controller_owners_key() -> None:
    replica_set = {
        "metadata": {
            "name": "web-5d8f",
            "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "1"},
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "web",
                    "uid": "2",
                    "controller": True,
                },
            ],
        }
    }
    assert controller_hash_key(replica_set) == object_hash_key("apps", "Deployment", "ns", "web")


@pytest.mark.parametrize(
    "refs",
    [
        pytest.param([], id="no-owner"),
        pytest.param([{"apiVersion": "v1", "kind": "X", "name": "o"}], id="owner-not-controller"),
        pytest.param(
            [{"apiVersion": "", "kind": "X", "name": "o", "controller": True}], id="no-api-version"
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "X", "name": 3, "controller": True}], id="bad-name"
        ),
    ],
)
def test_an_object_without_a_usable_controller_reference_is_not_sharded(
    refs: list[dict[str, Any]],
) -> None:
    assert controller_hash_key({"metadata": {"name": "n", "ownerReferences": refs}}) is None


# -- rendezvous --------------------------------------------------------------------------

KEYS = [object_hash_key("", "ConfigMap", "default", f"cm-{i}") for i in range(3000)]


def test_rendezvous_is_deterministic_and_ignores_member_order() -> None:
    members = ["a", "b", "c"]
    first = [rendezvous(key, members) for key in KEYS]
    assert first == [rendezvous(key, reversed(members)) for key in KEYS]
    assert rendezvous("k", []) is None


def test_rendezvous_spreads_keys_about_evenly() -> None:
    counts = collections.Counter(rendezvous(key, ["a", "b", "c"]) for key in KEYS)
    assert set(counts) == {"a", "b", "c"}
    for count in counts.values():
        assert 800 < count < 1200  # 1000 each, give or take a few standard deviations


def test_a_joining_member_takes_only_the_keys_it_now_wins() -> None:
    before = {key: rendezvous(key, ["a", "b", "c"]) for key in KEYS}
    after = {key: rendezvous(key, ["a", "b", "c", "d"]) for key in KEYS}
    moved = [key for key in KEYS if before[key] != after[key]]
    assert all(after[key] == "d" for key in moved)
    assert 600 < len(moved) < 900  # about a quarter


def test_a_leaving_member_gives_up_only_its_own_keys() -> None:
    before = {key: rendezvous(key, ["a", "b", "c"]) for key in KEYS}
    after = {key: rendezvous(key, ["a", "c"]) for key in KEYS}
    moved = [key for key in KEYS if before[key] != after[key]]
    assert moved
    assert all(before[key] == "b" for key in moved)
    assert all(before[key] == after[key] for key in KEYS if before[key] != "b")


# -- membership --------------------------------------------------------------------------


def test_a_held_lease_is_ready_until_its_duration_passes_without_a_change() -> None:
    members = RingMembership()
    assert members.observe(lease("a"), now=100.0) is True
    assert members.state("a", 100.0) is ShardState.READY
    assert members.state("a", 114.9) is ShardState.READY
    assert members.state("a", 115.0) is ShardState.EXPIRED
    assert members.expired(115.0) == ["a"]
    assert members.members() == ["a"]  # expired, not yet taken over: still assigned to
    assert members.next_deadline(100.0) == 115.0


def test_a_renewal_seen_restarts_the_duration_on_the_observers_clock() -> None:
    members = RingMembership()
    members.observe(lease("a", renew="t0"), now=100.0)
    assert members.observe(lease("a", renew="t1", rv="2"), now=110.0) is False
    assert members.state("a", 120.0) is ShardState.READY
    assert members.state("a", 125.0) is ShardState.EXPIRED


def test_the_same_lease_seen_again_is_not_a_renewal() -> None:
    members = RingMembership()
    members.observe(lease("a"), now=100.0)
    members.observe(lease("a", rv="2"), now=110.0)  # labels changed, say: spec the same
    assert members.state("a", 115.0) is ShardState.EXPIRED


def test_a_released_or_taken_over_lease_is_dead_then_orphaned() -> None:
    members = RingMembership()
    members.observe(lease("a"), now=0.0)
    members.observe(lease("b"), now=0.0)
    assert members.observe(lease("a", holder="", renew="t1", rv="5"), now=10.0) is True
    assert members.state("a", 10.0) is ShardState.DEAD
    assert members.members() == ["b"]
    assert not members.is_member("a")
    assert members.observe(lease("b", holder="aioinformer-sharder", renew="t2"), now=11.0)
    assert members.members() == []
    assert members.state("a", 10.0 + ORPHAN_AFTER) is ShardState.ORPHANED
    assert members.orphaned(10.0 + ORPHAN_AFTER) == [("a", "5")]
    assert members.next_deadline(12.0) == 10.0 + ORPHAN_AFTER


def test_a_deleted_lease_leaves_the_ring() -> None:
    members = RingMembership()
    members.observe(lease("a"), now=0.0)
    assert members.forget("a") is True
    assert members.forget("a") is False
    assert members.members() == []
    assert members.state("a", 0.0) is None
    assert members.next_deadline(0.0) is None


def test_a_lease_without_a_name_is_ignored() -> None:
    members = RingMembership()
    assert members.observe({"metadata": {}}, now=0.0) is False
    assert len(members) == 0


# -- one membership for a replica ----------------------------------------------------------


async def test_a_sharder_sharing_its_managers_membership_follows_what_the_manager_tells() -> None:
    # The Manager's one Lease handler feeds the membership and tells its sharder: the
    # sharder adds no handler of its own and sees every member the Manager saw before it.
    async with Client(Config(host="http://127.0.0.1:1", token="t")) as client:
        membership = RingMembership()
        membership.observe(lease("shard-a"), 0.0)
        sharder = Sharder(
            client, SharedInformerFactory(client), ring(), membership=membership, clock=FakeClock()
        )
        assert sharder.members == ["shard-a"]
        sharder.lease_event(membership.observe(lease("shard-b"), 1.0))
        sharder.lease_event(membership.observe(lease("shard-b", renew="t1"), 2.0))
        assert sharder.members == ["shard-a", "shard-b"]
        assert sharder.statistics().membership_changes == 1  # a renewal is no change
        alone = Sharder(client, SharedInformerFactory(client), ring(), clock=FakeClock())
        assert alone.members == []  # one of its own, fed by its own handler when it runs
