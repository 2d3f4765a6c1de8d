"""What a sharded controller's reconcile is called for: its own objects, once an object
deleted while it owned it, never an object that moved away; and how a drain is given
up (a patch removing both labels at the cached resourceVersion, then the key forgotten)."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer.errors import Conflict, NotFound
from aioinformer.indexer import meta_namespace_key
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.operator._shard import DrainGuard, ShardView
from aioinformer.operator.sharding import ShardedResource, ShardRing
from tests._support_sharding import GuardedInformer

RING = ShardRing(
    name="cms", namespace="ops", resources=(ShardedResource("configmaps"),), identity="a"
)


def cm(name: str, *, shard: str | None = "a", drain: bool = False, rv: str = "7") -> dict[str, Any]:
    labels: dict[str, str] = {}
    if shard is not None:
        labels[RING.shard_label] = shard
    if drain:
        labels[RING.drain_label] = "true"
    return {
        "metadata": {"name": name, "namespace": "default", "labels": labels, "resourceVersion": rv}
    }


class Client:
    def __init__(self, error: Exception | None = None) -> None:
        self.patches: list[tuple[str, str | None, dict[str, Any]]] = []
        self.error = error

    def resource(self, resource: Any, namespace: str | None = None) -> Client:
        self.namespace = namespace
        return self

    async def patch(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        self.patches.append((name, self.namespace, body))
        if self.error is not None:
            raise self.error
        return {}


def guarded(client: Client | None = None) -> tuple[GuardedInformer, DrainGuard, Client]:
    informer = GuardedInformer()
    client = client or Client()
    view = ShardView(RING, informer)  # type: ignore[arg-type]
    guard = view.guard(client, "configmaps", meta_namespace_key)  # type: ignore[arg-type]
    return informer, guard, client


async def test_an_owned_object_is_reconciled() -> None:
    informer, guard, client = guarded()
    informer.indexer.objects["default/x"] = cm("x")
    assert await guard("default/x") is False
    assert client.patches == []


async def test_an_object_that_moved_away_is_never_reconciled_as_deleted() -> None:
    informer, guard, _ = guarded()
    informer.on_delete(cm("x", shard="b"))  # left the selector: the new state is b's
    assert await guard("default/x") is True
    assert await guard("default/x") is True  # a requeue later on: still not ours


async def test_a_deletion_seen_while_owned_is_reconciled_once() -> None:
    informer, guard, _ = guarded()
    informer.on_delete(cm("x"))
    assert await guard("default/x") is False
    assert await guard("default/x") is True  # a stray requeue after it


async def test_a_missed_deletion_counts_by_the_last_state_known() -> None:
    informer, guard, _ = guarded()
    informer.on_delete(DeletedFinalStateUnknown(key="default/x", obj=cm("x")))
    assert await guard("default/x") is False


async def test_a_drained_object_is_given_up_at_the_cached_version_and_forgotten() -> None:
    informer, guard, client = guarded()
    informer.indexer.objects["default/x"] = cm("x", drain=True, rv="42")
    assert list(guard.keys(informer.indexer.objects["default/x"])) == ["default/x"]
    assert await guard("default/x") is True
    labels = {RING.shard_label: None, RING.drain_label: None}
    assert client.patches == [
        ("x", "default", {"metadata": {"resourceVersion": "42", "labels": labels}})
    ]
    # Until the cache sees it go, and after: no reconcile, no second patch.
    assert await guard("default/x") is True
    del informer.indexer.objects["default/x"]
    assert await guard("default/x") is True
    assert len(client.patches) == 1


async def test_a_drain_that_meets_a_newer_version_fails_for_a_retry() -> None:
    informer, guard, client = guarded(Client(Conflict({"code": 409})))
    informer.indexer.objects["default/x"] = cm("x", drain=True)
    with pytest.raises(Conflict):
        await guard("default/x")
    client.error = None  # the controller's retry, once the cache caught up
    assert await guard("default/x") is True
    assert len(client.patches) == 2


async def test_a_drained_object_already_deleted_is_forgotten() -> None:
    informer, guard, _ = guarded(Client(NotFound({"code": 404})))
    informer.indexer.objects["default/x"] = cm("x", drain=True)
    assert await guard("default/x") is True


async def test_an_object_assigned_back_before_the_cache_saw_it_go_is_reconciled() -> None:
    informer, guard, _ = guarded()
    informer.indexer.objects["default/x"] = cm("x", drain=True)
    assert await guard("default/x") is True
    informer.indexer.objects["default/x"] = cm("x", rv="50")
    assert await guard("default/x") is False


def test_only_a_drain_of_an_owned_object_enqueues() -> None:
    _, guard, _ = guarded()
    assert list(guard.keys(cm("x"))) == []
    assert list(guard.keys(cm("x", shard="b", drain=True))) == []
