"""An index function that fails, end to end over the fake API server and a Manager: the
object stays cached and reconciled, the Manager stays ready, and ``/readyz`` says which
index failed on which object; ``strict_indexes=True`` stops the Manager's start with the
cause named instead."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from aioinformer.errors import CacheSyncError, IndexFuncError
from aioinformer.operator.controller import Controller
from aioinformer.operator.manager import Manager
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

POLL = 0.005


def config_map(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "data": {"k": "v"},
    }


def by_team(obj: dict[str, Any]) -> list[str]:
    return [obj["metadata"]["labels"]["team"]]


def manager_with_index(client: Client, seen: list[str], **options: Any) -> Manager:
    manager = Manager(client, health_address="127.0.0.1:0", **options)
    informer = manager.informer_for("configmaps", indexers={"by-team": by_team})

    async def reconcile(key: str) -> None:
        seen.append(key)

    manager.add(Controller("mirror", reconcile, informers=[informer]))
    return manager


async def readyz(manager: Manager) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(f"http://{manager.health_address}/readyz")


async def test_readyz_stays_ready_and_carries_the_index_errors(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(config_map("shop", team="a"))
    fake_apiserver.create(config_map("mirror"))  # no team label: by_team raises
    seen: list[str] = []
    manager = manager_with_index(kube_client, seen)
    async with manager:
        await asyncio.wait_for(manager.elected.wait(), 5)
        # Both objects are cached and reconciled: the failing index cost neither.
        await wait_until(lambda: sorted(seen) == ["default/mirror", "default/shop"], poll=POLL)
        response = await readyz(manager)
        assert response.status_code == 200
        (informer,) = response.json()["informers"].values()
        assert informer["cache_size"] == 2
        assert (informer["index_errors"], informer["unindexed"]) == (1, 1)
        assert informer["last_index_error"] == (
            "IndexFuncError: index 'by-team' failed on default/mirror: KeyError: 'team'"
        )
        cached = manager.informer_for("configmaps")
        assert cached.indexer.index_keys("by-team", "a") == ["default/shop"]

        # Fixed at the source: the object is indexed again and nothing is unindexed.
        fake_apiserver.patch(
            "configmaps", "default", "mirror", {"metadata": {"labels": {"team": "b"}}}
        )
        await wait_until(
            lambda: cached.indexer.index_keys("by-team", "b") == ["default/mirror"], poll=POLL
        )
        (informer,) = (await readyz(manager)).json()["informers"].values()
        assert (informer["index_errors"], informer["unindexed"]) == (1, 0)


async def test_strict_indexes_stop_the_manager_start_with_the_index_named(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(config_map("mirror"))
    seen: list[str] = []
    manager = manager_with_index(kube_client, seen, strict_indexes=True)
    with pytest.raises(CacheSyncError) as caught:
        await asyncio.wait_for(manager.run(), 10)
    assert "IndexFuncError: index 'by-team' failed on default/mirror: KeyError: 'team'" in str(
        caught.value
    )
    assert isinstance(caught.value.__cause__, IndexFuncError)
    assert seen == []
