"""The sharded operator example, run as a user runs it (its in-process demo runs with the
other examples): three replica processes against one fake API server through a
kubeconfig. One replica is killed (SIGKILL: its Lease is not released) and its keys are
reconciled elsewhere within the lease duration plus the sharder's reaction; a fourth
joins and takes keys through drains. Both modes: labels the sharder writes, and ranges of
the hash space handed over through the Leases (a server serving shard selectors). Every
reconcile each process logs (start and end on the machine's monotonic clock) is checked:
no key is ever reconciled by two replicas at once."""

from __future__ import annotations

import collections
import itertools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from aioinformer.operator.sharding import (
    SLOTS_ANNOTATION,
    ShardedResource,
    ShardRing,
    parse_slots,
    shard_label,
)
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer.testing import FakeAPIServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sharded_operator.py"
LEASE_DURATION = 3.0
RETRY_PERIOD = LEASE_DURATION / 6
REACTION = {"labels": 2.0, "ranges": 3.0}
"""Seconds allowed beyond the lease duration for the sharder to see the expiry and take
the Lease over, and then, in label mode, to relabel and the new owner to reconcile: a few
retry periods and requests; in range mode, for a survivor to claim the slots, judge its
claim, relist its informer with them and reconcile what came: a request or two more."""
LABEL = shard_label("configmaps")
LINE = re.compile(r"reconcile (start|end) (\S+) (\d+\.\d+)")


def label_owners(server: FakeAPIServer) -> dict[str, tuple[str, str]]:
    """Each ConfigMap's shard label and the replica that last stamped it."""
    return {
        obj["metadata"]["name"]: (
            obj["metadata"].get("labels", {}).get(LABEL, ""),
            obj["metadata"].get("annotations", {}).get("example.com/reconciled-by", ""),
        )
        for obj in server.objects("configmaps", "default")
    }


def settled(server: FakeAPIServer, replicas: set[str], mode: str) -> bool:
    """Every ConfigMap is stamped by its shard, and each of ``replicas`` has some."""
    found = owners_in(mode)(server).values()
    return {shard for shard, _ in found} == replicas and all(
        stamp == shard for shard, stamp in found
    )


def slot_owners(server: FakeAPIServer) -> dict[str, tuple[str, str]]:
    """In range mode: each ConfigMap's shard, the live one whose Lease lists its slot, and
    the replica that last stamped it."""
    ring = ShardRing(
        name="configmaps", namespace="default", resources=(ShardedResource("configmaps"),)
    )
    held: dict[int, str] = {}
    for lease in server.objects("leases", "default"):
        meta = lease["metadata"]
        if lease["spec"].get("holderIdentity") != meta["name"]:
            continue
        text = (meta.get("annotations") or {}).get(SLOTS_ANNOTATION)
        for slot in parse_slots(text, ring.slots) or ():
            held[slot] = meta["name"]
    return {
        obj["metadata"]["name"]: (
            held.get(ring.slot_of(obj), ""),
            obj["metadata"].get("annotations", {}).get("example.com/reconciled-by", ""),
        )
        for obj in server.objects("configmaps", "default")
    }


def owners_in(mode: str) -> Callable[[FakeAPIServer], dict[str, tuple[str, str]]]:
    return label_owners if mode == "labels" else slot_owners


class Replicas:
    def __init__(self, server: FakeAPIServer, logs: Path, mode: str = "labels") -> None:
        self.kubeconfig = server.kubeconfig_path()
        self.logs = logs
        self.mode = mode
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.killed_at: dict[str, float] = {}

    def start(self, identity: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env.update(
            KUBECONFIG=self.kubeconfig,
            POD_NAME=identity,
            POD_NAMESPACE="default",
            LEASE_DURATION=str(LEASE_DURATION),
            SHARD_MODE=self.mode,
        )
        with (self.logs / f"{identity}.log").open("wb") as log:
            self.processes[identity] = subprocess.Popen(
                [sys.executable, str(EXAMPLE), "--cluster"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )

    def kill(self, identity: str) -> None:
        self.processes[identity].kill()
        self.killed_at[identity] = time.monotonic()
        self.processes[identity].wait(10)

    def stop_all(self) -> dict[str, int]:
        codes = {}
        for identity, process in self.processes.items():
            if identity in self.killed_at:
                continue
            process.send_signal(signal.SIGTERM)
        for identity, process in self.processes.items():
            if identity not in self.killed_at:
                codes[identity] = process.wait(30)
        return codes

    def intervals(self) -> dict[str, list[tuple[float, float, str]]]:
        """Each key's reconciles as (start, end, replica); one still running when its
        process was killed ends at the kill."""
        by_key: dict[str, list[tuple[float, float, str]]] = collections.defaultdict(list)
        for identity in self.processes:
            open_starts: dict[str, float] = {}
            text = (self.logs / f"{identity}.log").read_text(errors="replace")
            for kind, key, stamp in LINE.findall(text):
                if kind == "start":
                    open_starts[key] = float(stamp)
                elif key in open_starts:
                    by_key[key].append((open_starts.pop(key), float(stamp), identity))
            end = self.killed_at.get(identity, time.monotonic())
            for key, start in open_starts.items():
                by_key[key].append((start, end, identity))
        return by_key


def overlaps(by_key: dict[str, list[tuple[float, float, str]]]) -> list[str]:
    found = []
    for key, spans in by_key.items():
        spans.sort()
        for (start, end, who), (next_start, _, next_who) in itertools.pairwise(spans):
            if who != next_who and next_start < end:
                found.append(f"{key}: {who} [{start}, {end}] and {next_who} from {next_start}")
    return found


@pytest.mark.parametrize(
    "mode",
    [
        "labels",
        pytest.param(
            "ranges",
            marks=pytest.mark.fake_apiserver(feature_gates={"ShardedListAndWatch": True}),
        ),
    ],
)
async def test_three_processes_share_the_keys_survive_a_kill_and_drain_to_a_join(
    fake_apiserver: FakeAPIServer, tmp_path: Path, mode: str
) -> None:
    for index in range(30):
        fake_apiserver.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{index}"}}
        )
    owners = owners_in(mode)
    replicas = Replicas(fake_apiserver, tmp_path, mode)
    try:
        for identity in ("a", "b", "c"):
            replicas.start(identity)
        await wait_until(
            lambda: settled(fake_apiserver, {"a", "b", "c"}, mode), timeout=60, poll=0.05
        )
        sharder = fake_apiserver.get("leases", "default", "configmaps-sharder")["spec"][
            "holderIdentity"
        ]
        victim = next(i for i in ("a", "b", "c") if i != sharder)
        lost = {name for name, (shard, _) in owners(fake_apiserver).items() if shard == victim}
        assert lost
        survivors = {"a", "b", "c"} - {victim}

        replicas.kill(victim)
        await wait_until(
            lambda: all(owners(fake_apiserver)[name][1] in survivors for name in lost),
            timeout=30,
            poll=0.02,
        )
        took = time.monotonic() - replicas.killed_at[victim]
        assert took <= LEASE_DURATION + REACTION[mode], f"keys moved {took:.2f}s after the kill"
        assert settled(fake_apiserver, survivors, mode)

        replicas.start("d")
        await wait_until(
            lambda: (
                any(shard == "d" for shard, _ in owners(fake_apiserver).values())
                and settled(fake_apiserver, survivors | {"d"}, mode)
            ),
            timeout=60,
            poll=0.05,
        )
    finally:
        codes = replicas.stop_all()
    assert all(code == 0 for code in codes.values()), codes
    assert overlaps(replicas.intervals()) == []
    reconciled = {key for key, spans in replicas.intervals().items() if spans}
    assert {f"default/cm-{index}" for index in range(30)} <= reconciled
