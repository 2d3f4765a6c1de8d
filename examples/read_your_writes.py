"""Read your own writes, deletes included: the Manager's cache-backed client.

Runs against the embedded fake API server, whose watch is made to lag half a second
behind its writes, as a busy API server's can::

    python examples/read_your_writes.py

A reconcile reads from the informers' caches and writes to the server. Run twice in a
row (a second event for the same object often arrives before the cache has caught up
with the first reconcile's write), a reconcile reading the cache directly would create
again what it has just created (and get ``AlreadyExists``), or delete again what it has
just deleted (and get ``NotFound``). ``manager.cached_client`` waits, in each read, until
the cache shows the client's own earlier writes: the second run sees the first one's
result and has nothing to do. Meanwhile the informer's own lister still shows the state
from before.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from aioinformer.operator import Manager
from aioinformer.testing import FakeAPIServer

if TYPE_CHECKING:
    from aioinformer.cached_client import CachedResource

LAG = 0.5
"""Seconds the fake API server holds each watch event back."""


def settings(color: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"},
        "data": {"color": color},
    }


async def ensure_settings(config_maps: CachedResource, color: str) -> str:
    """A level-based reconcile: make the ConfigMap ``settings`` say ``color``."""
    current = await config_maps.get("settings")
    if current is None:
        await config_maps.create(settings(color))
        return "created"
    if current.get("data") != {"color": color}:
        await config_maps.patch("settings", {"data": {"color": color}})
        return "patched"
    return "up to date"


async def remove_settings(config_maps: CachedResource) -> str:
    """A reconcile of the opposite wish: no ConfigMap ``settings``."""
    if await config_maps.get("settings") is None:
        return "already gone"
    await config_maps.delete("settings")
    return "deleted"


def names(objects: list[Any]) -> list[str]:
    return sorted(obj["metadata"]["name"] for obj in objects)


async def demo() -> None:
    async with FakeAPIServer() as server, server.client() as client:
        manager = Manager(client)
        # Asked for before the manager runs: its informer is synced before anything runs.
        config_maps = manager.cached_client.resource("configmaps", "default")
        lister = config_maps.informer.lister()
        async with manager:
            await manager.elected.wait()
            server.faults.delay_watch_events(LAG)

            print("reconcile:", await ensure_settings(config_maps, "blue"))
            print("the informer's cache alone holds:", names(lister.list()))
            print("reconcile again at once:", await ensure_settings(config_maps, "blue"))
            print("reconcile:", await ensure_settings(config_maps, "green"))
            print("reconcile again at once:", await ensure_settings(config_maps, "green"))

            print("remove:", await remove_settings(config_maps))
            print("the informer's cache alone holds:", names(lister.list()))
            print("remove again at once:", await remove_settings(config_maps))
            print("list:", names(await config_maps.list()))

            stats = manager.cached_client.statistics()
            print(f"reads that waited: {stats.waits}, timed out: {stats.timeouts}")


if __name__ == "__main__":
    asyncio.run(demo())
