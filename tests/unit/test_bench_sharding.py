"""The sharding benchmark's pieces that need no process: variant names, the seeded ring,
which reconciles a survivor reports, how per-shard figures are folded, and the tables."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer.operator.sharding import RING_LABEL, object_hash_key, rendezvous, shard_label
from aioinformer.testing import FakeAPIServer
from bench.run import SCENARIOS, render_summary
from bench.sharding import (
    IDENTITIES,
    PROCESS_FIGURES,
    RING,
    VARIANTS,
    _Followed,
    _process_figures,
    _seed,
    processes_of,
)


def test_variant_names_give_the_replica_processes() -> None:
    assert [processes_of(variant) for variant in VARIANTS] == [
        ("singleton",),
        IDENTITIES,
        IDENTITIES,
    ]
    for bad in ("sharded-4", "singletons", ""):
        with pytest.raises(ValueError, match="not a sharding variant"):
            processes_of(bad)


def test_the_seeded_objects_carry_the_shard_the_sharder_would_write_and_the_leases_are_held() -> (
    None
):
    server = FakeAPIServer(require_namespaces=False)
    keys = _seed(server, 60, grace=120)
    assert len(set(keys)) == 60
    label = shard_label(RING)
    owners = []
    for namespace, name in keys:
        labels = server.get("configmaps", namespace, name)["metadata"]["labels"]
        hash_key = object_hash_key("", "ConfigMap", namespace, name)
        assert labels[label] == rendezvous(hash_key, IDENTITIES)
        owners.append(labels[label])
    assert set(owners) == set(IDENTITIES)
    for identity in IDENTITIES:
        lease = server.get("leases", "default", identity)
        assert lease["spec"]["holderIdentity"] == identity
        assert lease["spec"]["leaseDurationSeconds"] == 120
        assert lease["metadata"]["labels"] == {RING_LABEL: RING}
    sharder = server.get("leases", "default", f"{RING}-sharder")
    assert sharder["spec"]["holderIdentity"] == IDENTITIES[0]


def test_a_survivor_reports_each_followed_key_once_at_its_first_reconcile() -> None:
    followed = _Followed()
    followed.reconciled("ns/before")
    followed.keys.update({"ns/a", "ns/b", "ns/before"})
    followed.reconciled("ns/other")
    followed.reconciled("ns/a")
    first_a = followed.first["ns/a"]
    followed.reconciled("ns/a")
    assert followed.news() == {"ns/a": first_a}
    assert followed.news() == {}
    followed.reconciled("ns/b")
    assert set(followed.news()) == {"ns/b"}
    # Reconciled before it was followed: recorded at its next reconcile only.
    assert "ns/before" not in followed.first


def _measured(scale: float) -> dict[str, float]:
    return {figure: scale * (index + 1) for index, figure in enumerate(PROCESS_FIGURES)}


def test_the_singleton_reports_its_figures_and_the_shards_each_theirs_and_the_busiest() -> None:
    singleton = _measured(1.0)
    assert _process_figures({"singleton": singleton}, "singleton") == singleton
    shards = {"shard-a": _measured(0.5), "shard-b": _measured(0.25), "shard-c": _measured(0.3)}
    shards["shard-b"]["cache_mib"] = 99.0
    figures = _process_figures(shards, "sharded-3")
    assert figures["shard-c.cpu_s"] == shards["shard-c"]["cpu_s"]
    assert figures["cpu_s"] == shards["shard-a"]["cpu_s"]
    assert figures["cache_mib"] == 99.0
    assert set(figures) == set(PROCESS_FIGURES) | {
        f"{name}.{figure}" for name in shards for figure in PROCESS_FIGURES
    }


def _stats(value: float) -> dict[str, Any]:
    return {"median": value, "min": value, "max": value, "samples": [value]}


def test_the_table_puts_each_shard_beside_the_singleton_then_the_targets_and_the_failover() -> None:
    scenario = next(s for s in SCENARIOS if s.kind == "sharding")
    singleton = {"cpu_s": 10.0, "cache_mib": 200.0, "cached_objects": 30_000.0}
    sharded = {
        "cpu_s": 5.0,
        "shard-a.cpu_s": 5.0,
        "shard-b.cpu_s": 3.0,
        "shard-c.cpu_s": 3.5,
        "shard-a.sharder": 1.0,
        "shard-b.sharder": 0.0,
        "shard-c.sharder": 0.0,
        "cache_mib": 70.0,
        "shard-a.cache_mib": 70.0,
        "failover_s": 4.25,
        "lease_duration_s": 3.0,
    }
    entry = {
        "name": scenario.name,
        "kind": "sharding",
        "reference": "singleton",
        "params": scenario.params,
        "ratios": {"sharded-3": {"cpu_s": 0.5, "cache_mib": 0.35}},
        "targets": [
            {
                "variant": "sharded-3",
                "metric": "cpu_s",
                "goal": "<= 0.4x",
                "measured": 0.5,
                "met": False,
            },
            {
                "variant": "sharded-3",
                "metric": "cache_mib",
                "goal": "<= 0.4x",
                "measured": 0.35,
                "met": True,
            },
        ],
        "variants": {
            "singleton": {"metrics": {k: _stats(v) for k, v in singleton.items()}, "errors": []},
            "sharded-3": {"metrics": {k: _stats(v) for k, v in sharded.items()}, "errors": []},
        },
    }
    table = render_summary({"scenarios": [entry]})
    assert table.startswith("| scenario | process | CPU s, start → end of churn |")
    name = scenario.name
    assert f"| {name} | singleton | 10.00 | " in table
    assert f"| {name} | shard-a (sharder) | 5.00 (0.50x) | " in table
    assert f"| {name} | shard-b | 3.00 (0.30x) | " in table
    assert "| 70.0 (0.35x) |" in table
    assert (
        f"| {name} | busiest shard's CPU s, start → end of churn, vs the singleton's"
        " (target <= 0.4x) | 0.50x: missed |"
    ) in table
    assert "(target <= 0.4x) | 0.35x: met |" in table
    assert f"| {name} | shard killed: lease duration (s) | 3.0 |" in table
    assert (
        f"| {name} | shard killed: s from SIGKILL until each carries a live shard's label | 4.25 |"
        in table
    )
    assert "until each was reconciled there" not in table  # not measured, not shown


def test_a_failed_variant_shows_as_an_error_in_each_of_its_rows() -> None:
    scenario = next(s for s in SCENARIOS if s.kind == "sharding")
    entry = {
        "name": scenario.name,
        "kind": "sharding",
        "reference": "singleton",
        "params": scenario.params,
        "ratios": {},
        "targets": [],
        "variants": {
            "singleton": {"metrics": {"cpu_s": _stats(1.0)}, "errors": []},
            "sharded-3": {"metrics": {}, "errors": ["RuntimeError: boom"]},
        },
    }
    table = render_summary({"scenarios": [entry]})
    for identity in IDENTITIES:
        assert f"| {scenario.name} | {identity} | error | " in table
