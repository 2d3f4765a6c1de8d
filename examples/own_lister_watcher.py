"""Your own ListerWatcher: a source you write yourself, under an informer with its defaults.

Runs against the embedded fake API server, so it needs no cluster::

    python examples/own_lister_watcher.py

A ``ListerWatcher`` is two methods: ``list(options)`` returns one page, ``watch(options)``
an async iterator of events. This one talks to the API server with plain aiohttp, the way
a hand-written watch loop does: it sends the resourceVersion, page and timeout it is asked
for, reads the stream line by line, and hands an ``ERROR`` event out as an event instead
of raising it. It declares nothing more, so the informer lists and watches it (it never
asks it for a streaming list, which it would not know how to serve), and acts on its
``ERROR`` events as on the errors they carry: here a 410 after the server lost its watch
history, which makes the informer relist and report the pod deleted meanwhile.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

from aioinformer.errors import WatchError, api_error_from_status
from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import ListOptions, ObjectList, WatchEvent
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class PodsOverHTTP:
    """The pods of one namespace, listed and watched over plain HTTP."""

    def __init__(self, session: aiohttp.ClientSession, url: str, namespace: str) -> None:
        self._session = session
        self._url = f"{url}/api/v1/namespaces/{namespace}/pods"

    async def list(self, options: ListOptions) -> ObjectList:
        query = {"resourceVersion": options.resource_version or ""}
        if options.limit:
            query["limit"] = str(options.limit)
        if options.continue_:
            query = {"limit": query.get("limit", "500"), "continue": options.continue_}
        async with self._session.get(self._url, params=query) as response:
            body = orjson.loads(await response.read())
        if response.status != 200:
            raise api_error_from_status(body, code=response.status)
        for item in body["items"]:
            item.setdefault("apiVersion", "v1")
            item.setdefault("kind", "Pod")
        return ObjectList(
            items=body["items"],
            resource_version=body["metadata"]["resourceVersion"],
            continue_=body["metadata"].get("continue") or None,
        )

    async def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        query = {"watch": "1", "resourceVersion": options.resource_version or ""}
        if options.timeout_seconds:
            query["timeoutSeconds"] = str(options.timeout_seconds)
        async with self._session.get(self._url, params=query) as response:
            if response.status != 200:
                raise api_error_from_status(orjson.loads(await response.read()))
            pending = b""
            try:
                async for chunk in response.content.iter_any():  # no line-length limit
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if line.strip():
                            event = orjson.loads(line)
                            yield WatchEvent(event["type"], event["object"])  # ERROR included
            except aiohttp.ClientError as exc:
                # A broken stream: the reflector watches again from where it was.
                raise WatchError(f"the watch broke: {exc}") from exc


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


async def main() -> None:
    # The fake reports an expired watch as an ERROR event in the stream, as kube-apiserver
    # v1.36.2 does.
    async with FakeAPIServer() as server:
        for name in ("web-0", "web-1", "web-2"):
            server.create(pod(name))
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            informer = SharedIndexInformer(PodsOverHTTP(session, server.url, "default"))
            deleted: asyncio.Queue[Any] = asyncio.Queue()
            informer.add_event_handler(on_delete=deleted.put_nowait)
            async with informer:
                if not await informer.wait_for_sync(timeout=10):
                    raise SystemExit("the informer did not sync")
                print("informer:", informer.name)
                print("synced:", sorted(informer.indexer.list_keys()))
                created = server.create(pod("web-3"))
                rv = created["metadata"]["resourceVersion"]
                await informer.wait_for_resource_version(rv, timeout=10)
                print("watched:", sorted(informer.indexer.list_keys()))

                # The watch goes quiet, a pod is deleted, and the server restarts without
                # its history: the watch resumed from the old resourceVersion gets a 410,
                # as an ERROR event in the stream, which the source hands out as it is.
                server.faults.freeze_watches()
                server.delete("pods", "default", "web-2")
                await server.restart(reset_history=True)

                gone = await asyncio.wait_for(deleted.get(), timeout=10)
                missed = isinstance(gone, DeletedFinalStateUnknown)
                print("deleted while away:", gone.key if missed else gone["metadata"]["name"])
                print("cache:", sorted(informer.indexer.list_keys()))
            stats = informer.statistics().reflector
            assert stats is not None
            print("relists:", stats.relists, "| last error:", type(stats.last_error).__name__)


if __name__ == "__main__":
    asyncio.run(main())
