"""Index a shared informer's cache by a label and query it, through a factory.

Runs against the embedded fake API server::

    python examples/index_by_label.py

An index maps each object to index values (here: its ``app`` label); the cache keeps them
up to date on every event, so ``by_index`` is a dictionary lookup, not a scan.
``label_index_func("app")`` builds that index function; it reads only the labels a
compact cache keeps beside each object, so indexing decodes nothing. A function of your
own (``tier_index`` below) receives a read-only view of the object (a ``Mapping``), which
reads the labels from the same stored head, so it decodes nothing either.

An index function that fails on an object (``team_index`` below assumes every pod has a
``team`` label) never costs the object: it stays cached and in every other index, only
that index lacks it, and the failure is logged and counted in ``health()``. With
``strict_indexes=True`` such a failure stops the informer instead, and waiting for the
cache says which index failed on which object.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from aioinformer.errors import CacheSyncError
from aioinformer.factory import SharedInformerFactory
from aioinformer.indexer import label_index_func
from aioinformer.testing import FakeAPIServer

if TYPE_CHECKING:
    from collections.abc import Mapping

BY_APP = "by-app"
BY_TIER = "by-tier"
BY_TEAM = "by-team"


def tier_index(obj: Mapping[str, Any]) -> list[str]:
    """Index values of a pod: its ``tier`` label, if it has one."""
    tier = obj["metadata"].get("labels", {}).get("tier")
    return [tier] if tier else []


def team_index(obj: dict[str, Any]) -> list[str]:
    """A mistake to learn from: it assumes every pod has a ``team`` label."""
    return [obj["metadata"]["labels"]["team"]]


def pod(name: str, namespace: str, app: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app, **labels}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def names(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods)


async def main() -> None:
    async with FakeAPIServer() as server, server.client() as client:
        server.create(pod("web-0", "default", "web", team="shop"))
        server.create(pod("web-1", "kube-system", "web", team="ops"))
        server.create(pod("db-0", "default", "db"))  # no team label

        async with SharedInformerFactory(client) as factory:
            informer = factory.informer_for(
                "pods",
                indexers={
                    BY_APP: label_index_func("app"),
                    BY_TIER: tier_index,
                    BY_TEAM: team_index,
                },
            )
            synced = await factory.wait_for_cache_sync(timeout=10)
            print("synced:", synced)

            lister = informer.lister()
            print("app=web:", names(lister.by_index(BY_APP, "web")))
            print("app=db: ", names(lister.by_index(BY_APP, "db")))
            print("apps:   ", sorted(informer.indexer.list_index_func_values(BY_APP)))

            # Relabel db-0: the index follows the change.
            moved = asyncio.Event()
            informer.add_event_handler(on_update=lambda _old, _new: moved.set(), name="relabel")
            relabel = {"metadata": {"labels": {"app": "web", "tier": "cache"}}}
            server.patch("pods", "default", "db-0", relabel)
            await asyncio.wait_for(moved.wait(), timeout=10)
            print("after relabelling db-0:")
            print("app=web:", names(lister.by_index(BY_APP, "web")))
            print("app=db: ", names(lister.by_index(BY_APP, "db")))
            print("tier=cache:", names(lister.by_index(BY_TIER, "cache")))

            # The namespace index comes with every factory informer; selectors also work.
            print("default, app=web:", names(lister.list("default", label_selector="app=web")))

            # team_index fails on db-0 (it has no team label): db-0 is cached all the same,
            # and in every other index. The failure is logged once and counted at each
            # write (the list, the relabelling), and the cache stays live: it is whole.
            print("team=shop:", names(lister.by_index(BY_TEAM, "shop")))
            print("cached:", names(lister.list()))
            health = informer.health()
            print("live:", health.live, "| index errors:", health.index_errors)
            print("last index error:", health.last_index_error)

        # strict_indexes=True: the same mistake stops the informer, and the wait says why.
        async with SharedInformerFactory(client, strict_indexes=True) as strict:
            strict.informer_for("pods", indexers={BY_TEAM: team_index})
            try:
                await strict.wait_for_cache_sync(timeout=10)
            except CacheSyncError as error:
                print("strict:", error.unsynced[0].describe())


if __name__ == "__main__":
    asyncio.run(main())
