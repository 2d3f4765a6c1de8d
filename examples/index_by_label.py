"""Index a shared informer's cache by a label and query it, through a factory.

Runs against the embedded fake API server::

    python examples/index_by_label.py

An index maps each object to index values (here: its ``app`` label); the cache keeps them
up to date on every event, so ``by_index`` is a dictionary lookup, not a scan.
``label_index_func("app")`` builds that index function; it reads only the labels a
compact cache keeps beside each object, so indexing decodes nothing. A function of your
own (``tier_index`` below) receives the decoded object.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aioinformer.factory import SharedInformerFactory
from aioinformer.indexer import label_index_func
from aioinformer.testing import FakeAPIServer

BY_APP = "by-app"
BY_TIER = "by-tier"


def tier_index(obj: dict[str, Any]) -> list[str]:
    """Index values of a pod: its ``tier`` label, if it has one."""
    tier = obj["metadata"].get("labels", {}).get("tier")
    return [tier] if tier else []


def pod(name: str, namespace: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def names(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods)


async def main() -> None:
    async with FakeAPIServer() as server, server.client() as client:
        server.create(pod("web-0", "default", "web"))
        server.create(pod("web-1", "kube-system", "web"))
        server.create(pod("db-0", "default", "db"))

        async with SharedInformerFactory(client) as factory:
            informer = factory.informer_for(
                "pods", indexers={BY_APP: label_index_func("app"), BY_TIER: tier_index}
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


if __name__ == "__main__":
    asyncio.run(main())
