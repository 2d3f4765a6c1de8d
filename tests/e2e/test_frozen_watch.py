"""A frozen watch (the TCP path died without a FIN: no bytes, no bookmarks) over the fake
API server: an informer with default settings notices within 130 s, re-watches from the
resourceVersion it had without a relist, and its cache converges exactly.

The server and the informer share one :class:`FakeClock`, so the two minutes pass in
milliseconds; the HTTP between them is real, so waits for it are polled, bounded.
"""

from __future__ import annotations

from typing import Any

from aioinformer.indexer import meta_namespace_key
from aioinformer.informer import SharedIndexInformer
from aioinformer.testing import FakeAPIServer, FakeClock
from tests._support_reflector import reflector_statistics
from tests._support_wait import wait_until

SOCKET_POLL = 0.005


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


def versions(objects: list[dict[str, Any]]) -> dict[str, str]:
    return {meta_namespace_key(o): o["metadata"]["resourceVersion"] for o in objects}


async def test_a_default_informer_rewatches_a_frozen_watch_within_130s_without_a_relist() -> None:
    clock = FakeClock()
    async with FakeAPIServer(clock=clock) as server, server.client() as client:
        for name in ("a", "b", "c"):
            server.create(configmap(name))
        informer = SharedIndexInformer(client.resource("configmaps"), clock=clock)
        seen: list[tuple[str, str]] = []
        informer.add_event_handler(
            on_add=lambda obj, initial: seen.append(("add", obj["metadata"]["name"])),
            on_update=lambda old, new: seen.append(("update", new["metadata"]["name"])),
            on_delete=lambda obj: seen.append(("delete", meta_namespace_key(obj))),
        )
        async with informer:
            assert await informer.wait_for_sync(timeout=10)
            await server.wait_for_watchers(1)
            await clock.wait_for_sleepers(2)  # the watchdog, and the server's bookmark wait
            synced_rv = server.resource_version
            before = reflector_statistics(informer)
            await wait_until(lambda: len(seen) == 3, poll=SOCKET_POLL, timeout=10)

            frozen_at = clock.monotonic()
            assert server.faults.freeze_watches() == 1
            server.create(configmap("d"))
            server.update(server.get("configmaps", "default", "a") | {"data": {"x": "1"}})
            server.delete("configmaps", "default", "b")

            await clock.advance(115.0)  # silent, but short of the 120 s deadline
            assert reflector_statistics(informer).watches == before.watches
            await clock.advance(130.0 - 115.0)
            await server.faults.wait_for("frozen_watch_closed", timeout=10)
            await wait_until(
                lambda: versions(informer.indexer.list()) == versions(server.objects("configmaps")),
                poll=SOCKET_POLL,
                timeout=10,
            )
            assert clock.monotonic() - frozen_at <= 130.0

            after = reflector_statistics(informer)
            assert after.relists == 0
            assert after.lists == before.lists
            assert after.watches == before.watches + 1
            watch_rvs = [
                r.query.get("resourceVersion")
                for r in server.request_log
                if r.query.get("watch") in ("1", "true")
            ]
            assert watch_rvs[-1] == synced_rv
            await wait_until(lambda: len(seen) == 6, poll=SOCKET_POLL, timeout=10)
            assert sorted(seen[3:]) == [("add", "d"), ("delete", "default/b"), ("update", "a")]
            assert [r.kind for r in server.faults.log] == ["freeze_watch", "frozen_watch_closed"]
