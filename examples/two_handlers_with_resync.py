"""Two handlers on one informer: one resyncs every second, the other never does.

Runs against the embedded fake API server for about two seconds::

    python examples/two_handlers_with_resync.py

A resync re-delivers every cached object as ``on_update(old, new)`` with ``old`` and ``new``
at the same resourceVersion, only to the handlers whose resync period is due. It is how a
controller periodically re-checks objects that did not change. Each handler has its own
queue and task: the slow one never holds the other back.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING, Any

from aioinformer.informer import SharedIndexInformer
from aioinformer.testing import FakeAPIServer

if TYPE_CHECKING:
    from collections.abc import Mapping


def configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"key": "value"},
    }


class Auditor:
    """Resyncs every second; counts real changes and resyncs apart."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.resynced = asyncio.Event()

    def on_add(self, obj: Mapping[str, Any], is_in_initial_list: bool) -> None:
        self.counts["added"] += 1

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if old["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]:
            self.counts["resynced"] += 1
            if self.counts["resynced"] >= 4:  # two rounds of two objects
                self.resynced.set()
        else:
            self.counts["changed"] += 1


class SlowNotifier:
    """Never resyncs; takes its time on every event (async)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    async def on_add(self, obj: Mapping[str, Any], is_in_initial_list: bool) -> None:
        await asyncio.sleep(0.01)
        self.counts["added"] += 1

    async def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        await asyncio.sleep(0.01)
        self.counts["updated"] += 1


async def main() -> None:
    async with FakeAPIServer() as server, server.client() as client:
        server.create(configmap("settings"))
        server.create(configmap("features"))

        # The informer's period (seconds) is the default for handlers and enables resync.
        informer = SharedIndexInformer(client.resource("configmaps"), resync_period=1)
        auditor, notifier = Auditor(), SlowNotifier()
        informer.add_event_handler(auditor, resync_period=1)
        informer.add_event_handler(notifier, resync_period=0)

        async with informer:
            await informer.wait_for_sync(timeout=10)
            server.patch("configmaps", "default", "settings", {"data": {"key": "new"}})
            await asyncio.wait_for(auditor.resynced.wait(), timeout=10)
            stats = informer.statistics()

        print("auditor: ", dict(sorted(auditor.counts.items())))
        print("notifier:", dict(sorted(notifier.counts.items())))
        for handler in stats.handlers:
            print(f"{handler.name}: delivered={handler.delivered} resync={handler.resync_period}s")
        assert notifier.counts["updated"] <= 1, "the notifier does not resync"


if __name__ == "__main__":
    asyncio.run(main())
