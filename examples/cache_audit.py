"""A cache that audits itself: an informer whose watch lost a DELETE repairs its cache.

Runs against the embedded fake API server, so it needs no cluster::

    python examples/cache_audit.py

The fake server is told to lose the next deletion's watch event, as a faulty
kube-apiserver watch cache has (kubernetes/kubernetes#123072): the Pod is gone from the
server, yet the informer's cache keeps it, and a plain informer would keep it until the
process restarts. With ``audit=CacheAudit(...)`` the informer lists the Pods' metadata
every period, finds the extra key, relists, and the handler gets the delete (a
``DeletedFinalStateUnknown`` tombstone). Meanwhile ``health().live`` is false. The
periods here are a second long so that the example ends quickly; a ``Manager`` audits
every ten minutes by default.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aioinformer import CacheAudit, DeletedFinalStateUnknown, SharedIndexInformer
from aioinformer.errors import CacheDivergence
from aioinformer.testing import FakeAPIServer


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


async def main() -> None:
    # Bookmarks every 0.2 s carry the informer past the lost event, as the real server's
    # (about once a minute) would.
    async with FakeAPIServer(bookmark_interval=0.2) as server, server.client() as client:
        for name in ("web-0", "web-1", "web-2"):
            server.create(pod(name))

        informer = SharedIndexInformer(
            client.resource("pods", namespace="default"),
            audit=CacheAudit(period=1.0, jitter=0.2),
        )
        repaired = asyncio.Event()

        def on_delete(obj: Any) -> None:
            if isinstance(obj, DeletedFinalStateUnknown):
                print(f"on_delete {obj.key} (a tombstone: the delete itself was never seen)")
                repaired.set()

        def on_error(_reflector: object, error: BaseException) -> None:
            if isinstance(error, CacheDivergence):
                print(f"audit found: extra {list(error.extra)}; relisting")
                print(f"live while the cache is wrong: {informer.health().live}")

        informer.add_event_handler(on_delete=on_delete)
        informer.set_watch_error_handler(on_error)

        async with informer:
            if not await informer.wait_for_sync(timeout=10):
                raise SystemExit("the informer did not sync")

            server.faults.drop_watch_events(1, resource="pods", types=("DELETED",))
            server.delete("pods", "default", "web-1")
            await asyncio.sleep(0.5)
            print(
                "server has:",
                sorted(f"default/{o['metadata']['name']}" for o in server.objects("pods")),
            )
            print("cache still has:", informer.indexer.list_keys().count("default/web-1") == 1)

            # The handler hears of it once the relist is in the cache: live again.
            await asyncio.wait_for(repaired.wait(), timeout=20)
            print("cache:", sorted(informer.indexer.list_keys()))
            statistics = informer.statistics().audit
            assert statistics is not None
            print(f"audits: {statistics.audits}, relists asked for: {statistics.relists}")
            print("live again:", informer.health().live)

            report = await informer.audit_cache()  # one more, on demand
            print(f"on demand: {report.outcome.value}, {report.listed} listed")


if __name__ == "__main__":
    asyncio.run(main())
