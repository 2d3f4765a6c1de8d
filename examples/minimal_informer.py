"""A minimal informer: watch the pods of one namespace, react to changes, read the cache.

Runs against the embedded fake API server, so it needs no cluster::

    python examples/minimal_informer.py

Against a real cluster, replace the server with ``Client.from_env()`` and drop the
``server.create/patch/delete`` calls.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from aioinformer.informer import SharedIndexInformer
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.testing import FakeAPIServer
from aioinformer.transforms import strip_managed_fields

if TYPE_CHECKING:
    from collections.abc import Mapping


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "demo"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


async def main() -> None:
    async with FakeAPIServer() as server, server.client() as client:
        for name in ("web-0", "web-1", "web-2"):
            server.create(pod(name))

        informer = SharedIndexInformer(
            client.resource("pods", namespace="default"), transform=strip_managed_fields
        )
        gone = asyncio.Event()

        def on_add(obj: Mapping[str, Any], is_in_initial_list: bool) -> None:
            origin = "initial list" if is_in_initial_list else "watch"
            print(f"added   {obj['metadata']['name']} ({origin})")

        def on_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
            labels = new["metadata"].get("labels", {})
            print(f"updated {new['metadata']['name']}: labels {labels}")

        def on_delete(obj: Any) -> None:
            # A tombstone arrives when the delete happened while the watch was down.
            name = obj.key if isinstance(obj, DeletedFinalStateUnknown) else obj["metadata"]["name"]
            print(f"deleted {name}")
            gone.set()

        informer.add_event_handler(on_add=on_add, on_update=on_update, on_delete=on_delete)

        async with informer:
            if not await informer.wait_for_sync(timeout=10):
                raise SystemExit("the informer did not sync")
            lister = informer.lister()
            print("cache:", sorted(p["metadata"]["name"] for p in lister.list()))

            server.patch("pods", "default", "web-1", {"metadata": {"labels": {"tier": "front"}}})
            server.delete("pods", "default", "web-2")
            await asyncio.wait_for(gone.wait(), timeout=10)

            print("cache:", sorted(p["metadata"]["name"] for p in lister.list()))
            web_1 = lister.get("web-1", namespace="default")
            assert web_1 is not None
            print("web-1 labels:", web_1["metadata"]["labels"])


if __name__ == "__main__":
    asyncio.run(main())
