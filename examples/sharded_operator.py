"""A sharded operator: several replicas share the ConfigMaps, each reconciling about a
third of them, and hand them over when one joins or leaves.

Run it with ``python examples/sharded_operator.py``: it starts the embedded fake API
server and three replicas in this process (timings shortened), and shows:

1. each replica holds a shard Lease of its own; the one holding the ring's sharder Lease
   labels every ConfigMap with its shard, and each replica watches and reconciles only
   its own (it stamps ``example.com/reconciled-by``);
2. replica ``c`` stops (as on SIGTERM): it releases its Lease, and its ConfigMaps move
   at once to ``a`` and ``b``;
3. replica ``d`` joins: the sharder drains the ConfigMaps that are now ``d``'s from their
   shards, each finishes what it was doing and lets go, and ``d`` takes them.

Against a cluster (or any API server), ``python examples/sharded_operator.py --cluster``
runs one replica with ``Client.from_env()``: its identity is ``$POD_NAME`` (default: the
host name), its Leases live in ``$POD_NAMESPACE`` (default ``default``), and
``$LEASE_DURATION`` (seconds, default 15; the renew deadline and retry period follow at
2/3 and 1/6 of it) sets how fast a replica that died is replaced, and ``$SHARD_MODE``
(``auto``, the default, ``labels`` or ``ranges``) how the ring splits the ConfigMaps:
where the API server serves shard selectors (Kubernetes 1.36's ``ShardedListAndWatch``,
or ``aioinformer proxy`` in front of any cluster), ``auto`` gives each replica ranges of
the hash space to watch, handed over through the Leases, and no label is written. Run it
as a Deployment of N replicas. It needs RBAC for ``configmaps`` (list, watch, patch) and ``leases``
(get, list, watch, create, update, delete). Each reconcile is logged with its start and
end on the process's monotonic clock, the record the end-to-end test checks for overlaps.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import socket
import sys
import time
from typing import TYPE_CHECKING, cast

from aioinformer import Client, split_meta_namespace_key
from aioinformer.operator import Controller, Manager, ShardedResource, ShardRing
from aioinformer.testing import FakeAPIServer, eventually

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer import SharedIndexInformer
    from aioinformer.operator.sharding import ShardMode

logger = logging.getLogger("sharded_operator")

RECONCILED_BY = "example.com/reconciled-by"
RING_NAME = "configmaps"


def stamping_controller(
    client: Client, identity: str, config_maps: SharedIndexInformer
) -> Controller:
    """A controller stamping each ConfigMap it reconciles with this replica's name."""
    api = client.resource("configmaps")

    async def reconcile(key: str) -> None:
        logger.info("reconcile start %s %.6f", key, time.monotonic())
        try:
            namespace, name = split_meta_namespace_key(key)
            config_map = config_maps.lister().get(name, namespace=namespace)
            if config_map is None:
                return  # deleted while this shard owned it
            annotations = config_map["metadata"].get("annotations") or {}
            if annotations.get(RECONCILED_BY) != identity:
                patch = {"metadata": {"annotations": {RECONCILED_BY: identity}}}
                await api.patch(name, patch, namespace)
        finally:
            logger.info("reconcile end %s %.6f", key, time.monotonic())

    return Controller("stamp", reconcile, informers=[config_maps], workers=2)


def build_replica(
    client: Client, ring: ShardRing, *, graceful_shutdown_timeout: float = 30.0
) -> Manager:
    """One replica: a Manager holding its shard of ``ring``, one sharded controller."""
    manager = Manager(client, shard=ring, graceful_shutdown_timeout=graceful_shutdown_timeout)
    config_maps = manager.informer_for("configmaps")  # this shard's ConfigMaps only
    manager.add(stamping_controller(client, ring.identity, config_maps))
    return manager


def ring_for(
    identity: str, namespace: str, lease_duration: float, mode: ShardMode = "auto"
) -> ShardRing:
    return ShardRing(
        name=RING_NAME,
        namespace=namespace,
        resources=(ShardedResource("configmaps"),),
        identity=identity,
        lease_duration=lease_duration,
        renew_deadline=lease_duration * 2 / 3,
        retry_period=lease_duration / 6,
        mode=mode,
    )


def stamps(server: FakeAPIServer) -> dict[str, str]:
    return {
        obj["metadata"]["name"]: obj["metadata"].get("annotations", {}).get(RECONCILED_BY, "")
        for obj in server.objects("configmaps", "default")
    }


def shards(server: FakeAPIServer) -> dict[str, str]:
    label = ring_for("x", "default", 15).shard_label
    return {
        obj["metadata"]["name"]: obj["metadata"].get("labels", {}).get(label, "")
        for obj in server.objects("configmaps", "default")
    }


def settled(server: FakeAPIServer, replicas: set[str]) -> bool:
    """Every ConfigMap is assigned to one of ``replicas`` and stamped by it."""
    assigned, stamped = shards(server), stamps(server)
    return all(assigned[name] in replicas and stamped[name] == assigned[name] for name in assigned)


def spread(server: FakeAPIServer) -> str:
    counts = collections.Counter(shards(server).values())
    return ", ".join(f"{replica}: {counts[replica]}" for replica in sorted(counts))


async def demo() -> None:
    """Three replicas, then one leaves and one joins, on the embedded fake API server."""
    async with FakeAPIServer() as server, server.client() as client:
        for index in range(30):
            server.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{index}"}}
            )
        async with contextlib.AsyncExitStack() as stack:
            replicas = {}
            for identity in ("a", "b", "c"):
                replica = build_replica(client, ring_for(identity, "default", 3.0))
                replicas[identity] = await stack.enter_async_context(replica)
            await eventually(lambda: settled(server, {"a", "b", "c"}), timeout=20)
            print("assigned and stamped:", spread(server))
            leases = sorted(lease["metadata"]["name"] for lease in server.objects("leases"))
            print("leases:", ", ".join(leases))

            replicas["c"].stop()  # as on SIGTERM: drains, then releases its Lease
            await eventually(lambda: settled(server, {"a", "b"}), timeout=20)
            print("c stopped; its ConfigMaps moved:", spread(server))

            joining = build_replica(client, ring_for("d", "default", 3.0))
            await stack.enter_async_context(joining)
            await eventually(
                lambda: "d" in shards(server).values() and settled(server, {"a", "b", "d"}),
                timeout=30,
            )
            print("d joined; drained to it:", spread(server))


@contextlib.asynccontextmanager
async def on_cluster() -> AsyncIterator[Manager]:
    """One replica against the cluster ``Client.from_env()`` finds."""
    async with Client.from_env() as client:
        identity = os.environ.get("POD_NAME") or socket.gethostname().lower()
        namespace = os.environ.get("POD_NAMESPACE", "default")
        lease_duration = float(os.environ.get("LEASE_DURATION", "15"))
        mode = os.environ.get("SHARD_MODE", "auto")
        if mode not in ("auto", "labels", "ranges"):
            raise SystemExit(f"SHARD_MODE must be auto, labels or ranges, not {mode!r}")
        yield build_replica(
            client,
            ring_for(identity, namespace, lease_duration, cast("ShardMode", mode)),
            graceful_shutdown_timeout=lease_duration / 2,
        )


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="  [%(name)s] %(message)s", stream=sys.stdout)
    if "--cluster" in argv:
        return Manager.main(on_cluster)
    logging.getLogger().setLevel(logging.WARNING)  # the demo prints what it shows
    asyncio.run(demo())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
