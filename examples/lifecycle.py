"""One lifecycle for every long-running part: run it, know when it is ready, stop it.

The informer, the factory, the fake API server and the caching proxy all run once, go
through the states of :class:`aioinformer.State` (``NEW`` → ``STARTING`` → ``RUNNING`` →
``STOPPING`` → ``STOPPED``), and can be run three ways: ``async with part:``, ``await
part.run()`` (with anyio, ``await task_group.start(part.run)`` returns once it is ready),
or, for the factory, client-go's ``start()``/``shutdown()``. Runs against the embedded
fake API server::

    python examples/lifecycle.py
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio

from aioinformer import SharedInformerFactory, State
from aioinformer.informer import SharedIndexInformer
from aioinformer.testing import FakeAPIServer


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


async def main() -> None:
    async with FakeAPIServer() as server, server.client() as client:
        print("server:", server.state.name)
        server.create(pod("web-0"))

        informer = SharedIndexInformer(client.resource("pods", namespace="default"))
        print("informer before its run:", informer.state.name)
        async with anyio.create_task_group() as tasks:
            # Ready means synced: the cache holds the initial list when start() returns.
            await tasks.start(informer.run)
            print("informer ready:", informer.state.name, "cache:", informer.indexer.list_keys())
            informer.stop()
            print("informer asked to stop:", informer.state.name)
        print("informer after its run:", informer.state.name)

        # The factory keeps client-go's verbs beside the same lifecycle.
        factory = SharedInformerFactory(client, namespace="default")
        pods = factory.informer_for("pods")
        await factory.start()
        await factory.wait_for_cache_sync(timeout=10)
        print("factory:", factory.state.name, "| its informer:", pods.state.name)
        await factory.shutdown()
        print("factory after shutdown():", factory.state.name, "| its informer:", pods.state.name)
        assert pods.state is State.STOPPED
    print("server:", server.state.name)


if __name__ == "__main__":
    asyncio.run(main())
