"""An operator on :class:`~aioinformer.operator.manager.Manager`: stamps every ConfigMap with a
checksum of its data, with two replicas sharing one Lease and a health endpoint.

Run it with ``python examples/manager_operator.py``: it starts the embedded fake API
server, so no cluster is needed, and shows:

1. replica ``a`` warms its cache, takes the Lease and annotates every ConfigMap with
   ``example.com/checksum`` (the SHA-256 of its data); ``/readyz`` answers 200;
2. replica ``b`` warms its cache too, but only campaigns: its controller does not run;
3. replica ``a`` stops (as on SIGTERM): its controller drains, the Lease is released, and
   ``b`` takes over at its next retry and keeps the checksums current.

Against a real cluster, ``python examples/manager_operator.py --cluster`` uses
``Client.from_env()``, the Lease ``checksum-operator`` in ``$POD_NAMESPACE`` (default
``default``), serves probes on ``$HEALTH_ADDRESS`` (default ``:8081``), and runs until
SIGTERM or Ctrl-C (exit code 0; 1 with the cause on stderr when the ConfigMaps cannot be
listed, or leadership is lost).
It needs RBAC for ``configmaps`` (list, watch, patch) and ``leases`` (get, create, update).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

import aiohttp

from aioinformer import Client, split_meta_namespace_key
from aioinformer.operator import LeaderElection, Manager
from aioinformer.testing import FakeAPIServer, eventually

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer import SharedIndexInformer
    from aioinformer.operator import Reconcile

logger = logging.getLogger("manager_operator")

CHECKSUM = "example.com/checksum"
LEASE = "checksum-operator"


def checksum(config_map: dict[str, Any]) -> str:
    """The SHA-256 of a ConfigMap's ``data``, keys sorted."""
    data = json.dumps(config_map.get("data") or {}, sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()


def checksum_reconcile(client: Client, config_maps: SharedIndexInformer) -> Reconcile:
    """A reconcile keeping each ConfigMap's checksum annotation equal to its data's."""
    api = client.resource("configmaps")

    async def reconcile(key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        config_map = config_maps.lister().get(name, namespace=namespace)
        if config_map is None:
            return  # deleted: nothing to stamp
        wanted = checksum(config_map)
        if config_map["metadata"].get("annotations", {}).get(CHECKSUM) == wanted:
            return
        patch = {"metadata": {"annotations": {CHECKSUM: wanted}}}
        await api.patch(name, patch, namespace)
        logger.info("stamped %s with %s", key, wanted[:12])

    return reconcile


def build_manager(
    client: Client,
    *,
    election: LeaderElection,
    health_address: str | None = None,
) -> Manager:
    """The operator: one informer, one controller, leader election, probes."""
    manager = Manager(client, leader_election=election, health_address=health_address)
    config_maps = manager.informer_for("configmaps")
    # Built by the manager: its clock and its cache-sync settings, added at once.
    manager.controller(
        "checksum", checksum_reconcile(client, config_maps), informers=[config_maps], workers=2
    )
    return manager


def stamps(server: FakeAPIServer) -> dict[str, str]:
    """Each ConfigMap's checksum annotation on the server (short), by name."""
    return {
        obj["metadata"]["name"]: obj["metadata"].get("annotations", {}).get(CHECKSUM, "")[:12]
        for obj in server.objects("configmaps", "default")
    }


def fresh(server: FakeAPIServer) -> bool:
    """Every ConfigMap's annotation matches its data."""
    return all(
        obj["metadata"].get("annotations", {}).get(CHECKSUM) == checksum(obj)
        for obj in server.objects("configmaps", "default")
    )


async def demo() -> None:
    """Two replicas against the embedded fake API server (timings shortened)."""
    timings: dict[str, Any] = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}
    async with FakeAPIServer() as server, server.client() as client:
        for name, value in (("app-config", "blue"), ("db-config", "primary")):
            server.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": "default"},
                    "data": {"value": value},
                }
            )
        first = build_manager(
            client,
            election=LeaderElection(lease_name=LEASE, identity="a", **timings),
            health_address="127.0.0.1:0",
        )
        second = build_manager(
            client, election=LeaderElection(lease_name=LEASE, identity="b", **timings)
        )
        async with first:
            await first.elected.wait()  # a replica leads only once its cache is warm
            await eventually(lambda: fresh(server), timeout=10)
            print("stamped:", stamps(server))
            async with second:
                async with aiohttp.ClientSession() as http:
                    await eventually(lambda: first.health().ready, timeout=10)
                    async with http.get(f"http://{first.health_address}/readyz") as response:
                        print("replica a /readyz:", response.status)
                await eventually(lambda: second.health().ready, timeout=10)
                print("replica b warm, leading:", second.is_leader)
                first.stop()  # as on SIGTERM: drain, release the Lease
                await second.elected.wait()
                holder = server.get("leases", "default", LEASE)["spec"]["holderIdentity"]
                print("replica a stopped; the lease is now held by", repr(holder))
                before = stamps(server)["app-config"]
                server.patch("configmaps", "default", "app-config", {"data": {"value": "green"}})
                await eventually(lambda: fresh(server), timeout=10)
                print("app-config edited, re-stamped:", before != stamps(server)["app-config"])
        lease = server.get("leases", "default", LEASE)
        print("lease after both stopped:", repr(lease["spec"].get("holderIdentity", "")))


@contextlib.asynccontextmanager
async def on_cluster() -> AsyncIterator[Manager]:
    """The operator against the cluster ``Client.from_env()`` finds."""
    async with Client.from_env() as client:
        namespace = os.environ.get("POD_NAMESPACE", "default")
        yield build_manager(
            client,
            election=LeaderElection(lease_name=LEASE, lease_namespace=namespace),
            health_address=os.environ.get("HEALTH_ADDRESS", ":8081"),
        )


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="  [%(name)s] %(message)s", stream=sys.stdout)
    if "--cluster" in argv:
        return Manager.main(on_cluster)
    asyncio.run(demo())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
