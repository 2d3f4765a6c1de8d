"""The caching proxy's watch cache serves shard selectors (KEP-5866) from what it holds,
whatever its upstream knows: pages and watchers of a slice, and a fan-out that hashes each
stored object version once however many sharded watchers it reaches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aioinformer._apiserver.objects import ResourceType
from aioinformer.proxy._cache import ProxyWatchCache
from aioinformer.shard_selector import ShardSelector
from tests._support_watchcache import count_hashes, lines, listed, watch

if TYPE_CHECKING:
    import pytest

PODS = ResourceType("", "v1", "pods", "Pod", True)


def pod(name: str, rv: int) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": str(rv)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"n": rv}}


def owner(name: str, selectors: list[ShardSelector]) -> int:
    (index,) = [i for i, s in enumerate(selectors) if s.contains(uid=f"uid-{name}", namespace="")]
    return index


async def test_sharded_watchers_of_the_proxy_each_get_their_slice_and_hash_once_per_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hashed = count_hashes(monkeypatch)
    cache = ProxyWatchCache(PODS)
    await cache.replace([pod(f"p{i}", i + 1) for i in range(8)], "8")
    selectors = ShardSelector.split(4)
    watchers = [watch(cache, "8", shard_selector=s) for s in selectors for _ in range(10)]
    assert hashed == []
    await cache.update(pod("p3", 9))
    await cache.update(pod("p3", 10))
    await cache.delete(pod("p3", 11))
    # The old state of the first update is hashed once too, when first asked.
    assert hashed == ["uid-p3"] * 4
    mine = owner("p3", selectors)
    for index, watcher in enumerate(watchers):
        expected = [("MODIFIED", "p3", "9"), ("MODIFIED", "p3", "10"), ("DELETED", "p3", "11")]
        assert lines(watcher) == (expected if index // 10 == mine else [])


async def test_the_proxys_pages_of_a_split_cover_its_objects_once() -> None:
    cache = ProxyWatchCache(PODS)
    await cache.replace([pod(f"p{i}", i + 1) for i in range(8)], "8")
    seen: list[str] = []
    for selector in ShardSelector.split(3):
        page = listed(cache, shard_selector=selector, limit=2)
        while True:
            assert page.shards is selector
            seen.extend(entry.name for entry in page.entries)
            if page.continue_ is None:
                break
            page = listed(cache, shard_selector=selector, limit=2, continue_=page.continue_)
    assert sorted(seen) == [f"p{i}" for i in range(8)]
