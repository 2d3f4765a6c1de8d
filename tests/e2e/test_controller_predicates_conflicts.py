"""A controller over the fake API server: ``generation_changed`` reconciles a custom
resource on a spec change but not on a status or label write, a status write from a stale
cache hits a 409 that is retried quietly (INFO, never ERROR) until it succeeds, and
``retry_on_conflict`` gets a read-modify-write past a concurrent writer."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.factory import SharedInformerFactory
from aioinformer.operator.controller import Controller
from aioinformer.operator.predicates import generation_changed
from aioinformer.operator.retry import retry_on_conflict
from tests._support_tasks import settle
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

WIDGETS = "example.com/v1/widgets"

# The truth is on the server, behind socket I/O: a short real sleep between checks lets
# the loop's selector run.
SERVER_POLL = 0.005


def widget(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 1},
    }


@pytest.fixture
def crd_server(fake_apiserver: FakeAPIServer) -> FakeAPIServer:
    fake_apiserver.register_crd("example.com", "v1", "widgets", "Widget")
    return fake_apiserver


async def test_generation_changed_reconciles_spec_changes_only(
    crd_server: FakeAPIServer, kube_client: Client
) -> None:
    crd_server.create(widget("w"))
    factory = SharedInformerFactory(kube_client)
    widgets = factory.informer_for(WIDGETS)
    updates: list[Any] = []
    widgets.add_event_handler(on_update=lambda old, new: updates.append(new))
    generations: list[int] = []

    async def reconcile(key: str) -> None:
        namespace, _, name = key.partition("/")
        current = widgets.lister().get(name, namespace=namespace)
        assert current is not None
        generations.append(current["metadata"]["generation"])

    controller = Controller(
        "widgets", reconcile, informers=[widgets], predicates=[generation_changed]
    )
    async with factory, controller:
        await wait_until(lambda: generations == [1], poll=SERVER_POLL, timeout=10)
        crd_server.patch(WIDGETS, "default", "w", {"status": {"ready": True}}, subresource="status")
        crd_server.patch(WIDGETS, "default", "w", {"metadata": {"labels": {"tier": "gold"}}})
        # Both writes reached the informer; neither may reach the reconcile.
        await wait_until(lambda: len(updates) == 2, poll=SERVER_POLL, timeout=10)
        await settle(100)
        assert generations == [1]
        crd_server.patch(WIDGETS, "default", "w", {"spec": {"size": 2}})
        await wait_until(lambda: generations == [1, 2], poll=SERVER_POLL, timeout=10)
    assert [u["metadata"]["generation"] for u in updates] == [1, 1, 2]
    assert controller.statistics().reconciles == 2


async def test_a_stale_cache_409_is_retried_quietly_until_the_write_succeeds(
    crd_server: FakeAPIServer, kube_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    crd_server.create(widget("w"))
    factory = SharedInformerFactory(kube_client)
    widgets = factory.informer_for(WIDGETS)
    client = kube_client.resource(WIDGETS, "default")
    written: list[str] = []

    async def reconcile(key: str) -> None:
        namespace, _, name = key.partition("/")
        cached = widgets.lister().get(name, namespace=namespace)
        assert cached is not None
        if not written:
            # Someone else writes first: the cached resourceVersion is stale now.
            crd_server.patch(WIDGETS, namespace, name, {"metadata": {"labels": {"by": "them"}}})
            written.append("theirs")
        status = {"observedGeneration": cached["metadata"]["generation"]}
        await client.update(dict(cached, status=status), subresource="status")
        written.append("ours")

    controller = Controller(
        "stale", reconcile, informers=[widgets], predicates=[generation_changed]
    )
    with caplog.at_level(logging.INFO, logger="aioinformer.operator.controller"):
        async with factory, controller:
            await wait_until(lambda: written[-1:] == ["ours"], poll=SERVER_POLL, timeout=10)
    stored = crd_server.get(WIDGETS, "default", "w")
    assert stored["status"] == {"observedGeneration": 1}
    assert stored["metadata"]["labels"] == {"by": "them"}
    stats = controller.statistics()
    assert stats.conflicts >= 1
    assert (stats.failures, stats.successes) == (0, 1)
    records = [r for r in caplog.records if r.name == "aioinformer.operator.controller"]
    conflicts = [r for r in records if "hit a conflict" in r.getMessage()]
    assert len(conflicts) == stats.conflicts
    assert all(r.levelno == logging.INFO and r.exc_info is None for r in conflicts)
    assert "409 Conflict" in conflicts[0].getMessage()
    assert not [r for r in records if r.levelno >= logging.WARNING]


async def test_retry_on_conflict_gets_a_read_modify_write_past_a_concurrent_writer(
    crd_server: FakeAPIServer, kube_client: Client
) -> None:
    crd_server.create(widget("w"))
    client = kube_client.resource(WIDGETS, "default")
    attempts: list[str] = []

    async def grow() -> dict[str, Any]:
        current = await client.get("w")
        attempts.append(current["metadata"]["resourceVersion"])
        if len(attempts) == 1:  # a concurrent writer between our read and our write
            crd_server.patch(WIDGETS, "default", "w", {"metadata": {"labels": {"x": "y"}}})
        current["spec"]["size"] += 1
        return await client.update(current)

    updated = await retry_on_conflict(grow)
    assert len(attempts) == 2
    assert attempts[0] != attempts[1]
    assert updated["spec"] == {"size": 2}
    assert updated["metadata"]["labels"] == {"x": "y"}
