"""Leaving ``async with informer:`` closes the watch connection: the fake API server sees
its watcher go. The in-process cancellation suite is
``tests/unit/test_informer_cancellation.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aioinformer.informer import SharedIndexInformer
from aioinformer.testing import FakeAPIServer, FakeClock
from tests._support_tasks import other_tasks
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client


async def test_leaving_async_with_closes_the_watch_connection_to_the_server(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
    )
    baseline = other_tasks()
    informer = SharedIndexInformer(kube_client.resource("configmaps"), clock=FakeClock())
    async with informer:
        assert await informer.wait_for_sync(timeout=10)
        await fake_apiserver.wait_for_watchers(1)
    # Our side is closed at once; the server notices the closed socket promptly. Only
    # polling sees that: it is socket I/O, not a task event.
    await wait_until(lambda: fake_apiserver.watch_count == 0, poll=0.001, timeout=5)
    leftover = {task for task in other_tasks() - baseline if "informer" in task.get_name()}
    assert leftover == set()
