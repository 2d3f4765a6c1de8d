"""The compact cache: what it stores, what reads return (read-only views), and a handler
that needs only keys.

Runs against the embedded fake API server, so it needs no cluster::

    python examples/compact_cache.py

An informer's cache is compact by default: each object is kept as its JSON bytes plus the
few fields the pipeline reads, which CPython's garbage collector never walks. Reads and
handler arguments are read-only views (``aioinformer.ObjectView``, a ``Mapping``): the
name, namespace, resourceVersion and labels come from the stored head, any other field is
decoded alone when first read, and changing one raises ``ReadOnlyObjectError``;
``obj.to_dict()`` gives a plain copy to change. A ``keys_only`` handler gets keys and
costs no decode. ``cache="objects"`` keeps decoded dicts instead, as client-go does.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Mapping
from typing import Any

from aioinformer import ObjectView, ReadOnlyObjectError
from aioinformer.informer import SharedIndexInformer
from aioinformer.testing import FakeAPIServer


def pod(name: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


async def main() -> None:
    async with FakeAPIServer() as server, server.client() as client:
        for name, app in (("web-0", "web"), ("web-1", "web"), ("db-0", "db")):
            server.create(pod(name, app))

        informer = SharedIndexInformer(client.resource("pods", namespace="default"))
        print("cache mode:", informer.cache)

        # Only keys: nothing is decoded for this handler (what a Controller does).
        keys: asyncio.Queue[str] = asyncio.Queue()
        informer.add_event_handler(
            on_add=lambda key, _initial: keys.put_nowait(key),
            on_update=lambda _old_key, key: keys.put_nowait(key),
            keys_only=True,
        )

        async with informer:
            if not await informer.wait_for_sync(timeout=10):
                raise SystemExit("the informer did not sync")
            synced = sorted(keys.get_nowait() for _ in range(keys.qsize()))
            print("keys from the initial list:", synced)

            # What is stored: bytes and a head, invisible to the garbage collector.
            entry = informer.indexer.entry_by_key("default/web-0")
            print("stored:", entry)
            print("tracked by the collector:", gc.is_tracked(entry))

            # Reads return read-only views: a Mapping, not a dict. The name and the labels
            # come from the stored head; spec is decoded alone, on this first read.
            lister = informer.lister()
            view = lister.get("web-0", namespace="default")
            assert view is not None
            print("read:", type(view).__name__, isinstance(view, Mapping), isinstance(view, dict))
            assert isinstance(view, ObjectView)
            print("image:", view["spec"]["containers"][0]["image"])

            # Changing a view raises; to_dict() gives a plain dict that is yours to change.
            try:
                view["metadata"]["labels"]["app"] = "changed locally"
            except ReadOnlyObjectError as error:
                print("refused:", type(error).__name__)
            mine = view.to_dict()
            mine["metadata"]["labels"]["app"] = "changed locally"
            cached = lister.get("web-0", namespace="default")
            assert cached is not None
            print("my copy says:", mine["metadata"]["labels"])
            print("cache still says:", cached["metadata"]["labels"])

            # Selectors are matched on the stored labels: nothing is decoded to filter.
            web = lister.list(label_selector="app=web")
            print("app=web:", sorted(p["metadata"]["name"] for p in web))

            server.patch("pods", "default", "db-0", {"metadata": {"labels": {"tier": "data"}}})
            print("key from the watch:", await asyncio.wait_for(keys.get(), timeout=10))


if __name__ == "__main__":
    asyncio.run(main())
