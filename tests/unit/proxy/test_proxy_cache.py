"""The caching proxy's watch cache, driven as its upstream reflector drives it.

The cases follow kube-apiserver's watch cache semantics (history bounded by size, reads
older than it answer 410, LIST pages from one snapshot, selection changes translated to
ADDED/DELETED) plus the proxy's own: the transform, diffed relists, slow watchers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest

from aioinformer._apiserver.objects import ResourceType, StatusError
from aioinformer.labels import parse_label_selector
from aioinformer.proxy._cache import ProxyWatchCache
from tests._support_watchcache import lines, listed, watch

PODS = ResourceType("", "v1", "pods", "Pod", True)


def pod(name: str, rv: int, *, ns: str = "default", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": str(rv)}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"n": rv}}


def names(cache: ProxyWatchCache, **kwargs: Any) -> list[str]:
    return [entry.name for entry in listed(cache, **kwargs).entries]


async def loaded(*objs: dict[str, Any], rv: int = 10, **options: Any) -> ProxyWatchCache:
    cache = ProxyWatchCache(PODS, **options)
    await cache.replace(list(objs), str(rv))
    return cache


async def test_first_list_loads_the_state_without_history() -> None:
    cache = await loaded(pod("a", 3), pod("b", 5), rv=10)
    assert cache.synced.is_set()
    assert (cache.rv, cache.compacted_rv, len(cache.history)) == (10, 10, 0)
    assert names(cache) == ["a", "b"]
    assert cache.get("default", "b").rv == 5


async def test_events_carry_upstream_resource_versions_and_watches_resume_from_any() -> None:
    cache = await loaded(pod("a", 3), rv=10)
    early = watch(cache, "10")
    await cache.add(pod("b", 11))
    await cache.update(pod("a", 12))
    await cache.delete(pod("b", 13))
    assert lines(early) == [("ADDED", "b", "11"), ("MODIFIED", "a", "12"), ("DELETED", "b", "13")]
    late = watch(cache, "11")
    assert lines(late) == [("MODIFIED", "a", "12"), ("DELETED", "b", "13")]
    assert cache.rv == 13


async def test_a_watch_older_than_the_history_is_410_expired() -> None:
    cache = await loaded(pod("a", 3), rv=10, history_size=2)
    for rv in (11, 12, 13):
        await cache.update(pod("a", rv))
    assert cache.compacted_rv == 11
    with pytest.raises(StatusError) as caught:
        watch(cache, "10")
    assert caught.value.code == 410
    assert caught.value.status["reason"] == "Expired"
    assert lines(watch(cache, "11")) == [("MODIFIED", "a", "12"), ("MODIFIED", "a", "13")]


async def test_exact_lists_read_the_past_within_the_history_and_410_before_it() -> None:
    cache = await loaded(pod("a", 3), rv=10, history_size=3)
    await cache.add(pod("b", 11))
    await cache.delete(pod("a", 12))
    assert names(cache, resource_version="10", resource_version_match="Exact") == ["a"]
    assert names(cache, resource_version="11", resource_version_match="Exact") == ["a", "b"]
    assert names(cache, resource_version="11", resource_version_match="NotOlderThan") == ["b"]
    for rv in (13, 14):
        await cache.add(pod(f"c{rv}", rv))
    with pytest.raises(StatusError) as caught:
        names(cache, resource_version="10", resource_version_match="Exact")
    assert caught.value.code == 410


async def test_a_resource_version_the_cache_has_not_reached_is_504_too_large() -> None:
    cache = await loaded(pod("a", 3), rv=10)
    with pytest.raises(StatusError) as caught:
        names(cache, resource_version="20")
    assert caught.value.code == 504
    with pytest.raises(StatusError):
        await cache.wait_fresh(20, 0)
    waiting = asyncio.ensure_future(cache.wait_fresh(20, 60))
    await asyncio.sleep(0)
    assert not waiting.done()
    await cache.bookmark("20")
    await waiting
    assert names(cache, resource_version="20") == ["a"]


async def test_pages_of_one_list_are_one_snapshot_while_objects_change() -> None:
    cache = await loaded(*(pod(f"p{i}", i) for i in range(5)), rv=10)
    first = listed(cache, limit=2)
    assert [e.name for e in first.entries] == ["p0", "p1"]
    assert first.remaining == 3
    await cache.delete(pod("p3", 11))
    await cache.add(pod("p9", 12))
    assert first.continue_ is not None
    rest = names(cache, limit=10, continue_=first.continue_)
    assert rest == ["p2", "p3", "p4"]


async def test_a_continue_token_past_the_history_is_410_with_a_fresh_token() -> None:
    cache = await loaded(*(pod(f"p{i}", i) for i in range(3)), rv=10, history_size=1)
    first = listed(cache, limit=1)
    await cache.add(pod("q", 11))
    await cache.add(pod("r", 12))
    with pytest.raises(StatusError) as caught:
        names(cache, continue_=first.continue_)
    assert caught.value.code == 410
    assert caught.value.status["metadata"]["continue"]


async def test_a_relist_is_diffed_into_events_at_their_own_resource_versions() -> None:
    calls: list[str] = []

    def count(obj: dict[str, Any]) -> dict[str, Any]:
        calls.append(obj["metadata"]["name"])
        return obj

    cache = await loaded(pod("same", 3), pod("changed", 4), pod("gone", 5), rv=10, transform=count)
    watcher = watch(cache, "10")
    calls.clear()
    await cache.replace([pod("same", 3), pod("changed", 14), pod("new", 12)], "20")
    assert lines(watcher) == [
        ("ADDED", "new", "12"),
        ("MODIFIED", "changed", "14"),
        ("DELETED", "gone", "20"),
    ]
    assert sorted(calls) == ["changed", "new"]
    assert names(cache) == ["changed", "new", "same"]
    assert (cache.rv, cache.stats.relists) == (20, 1)
    await cache.replace([pod("same", 3), pod("changed", 14), pod("new", 12)], "25")
    assert lines(watcher) == []


async def test_the_transform_runs_before_the_history_and_none_hides() -> None:
    def rewrite(obj: dict[str, Any]) -> dict[str, Any] | None:
        labels = obj["metadata"].get("labels", {})
        if labels.get("hide"):
            return None
        obj["metadata"]["resourceVersion"] = "999"  # not the transform's to change
        obj["spec"] = {"router": "10.0.0.1"}
        return obj

    cache = await loaded(pod("a", 3), pod("h", 4, hide="1"), rv=10, transform=rewrite)
    assert names(cache) == ["a"]
    entry = cache.get("default", "a")
    assert entry.decode()["spec"] == {"router": "10.0.0.1"}
    assert entry.decode()["metadata"]["resourceVersion"] == "3"
    watcher = watch(cache, "10")
    await cache.update(pod("a", 11, hide="1"))
    await cache.update(pod("h", 12))
    await cache.update(pod("h", 13, hide="1"))
    assert lines(watcher) == [("DELETED", "a", "11"), ("ADDED", "h", "12"), ("DELETED", "h", "13")]
    assert names(cache) == []


async def test_a_failing_or_renaming_transform_hides_the_object_and_logs_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(obj: dict[str, Any]) -> dict[str, Any]:
        if obj["metadata"]["name"] == "boom":
            raise KeyError("subsets")
        if obj["metadata"]["name"] == "rename":
            obj["metadata"]["name"] = "other"
        return obj

    with caplog.at_level(logging.ERROR, logger="aioinformer.proxy"):
        cache = await loaded(pod("boom", 3), pod("rename", 4), pod("ok", 5), transform=broken)
        await cache.update(pod("boom", 11))
    assert names(cache) == ["ok"]
    assert cache.stats.transform_errors == 3
    failures = [r for r in caplog.records if "transform failed" in r.getMessage()]
    assert len(failures) == 2
    assert "default/boom" in failures[0].getMessage()


async def test_selection_changes_are_added_and_deleted_for_a_selecting_watch() -> None:
    cache = await loaded(pod("a", 3, app="web"), rv=10)
    selecting = watch(cache, "10", label_selector=parse_label_selector("app=web"))
    await cache.update(pod("a", 11, app="db"))
    await cache.update(pod("a", 12, app="web"))
    await cache.update(pod("a", 13, app="web"))
    await cache.add(pod("b", 14, app="db"))
    assert lines(selecting) == [
        ("DELETED", "a", "11"),
        ("ADDED", "a", "12"),
        ("MODIFIED", "a", "13"),
    ]


async def test_each_event_is_encoded_once_for_every_watcher() -> None:
    cache = await loaded(rv=10)
    first, second = watch(cache, "10"), watch(cache, "10")
    await cache.add(pod("a", 11))
    assert first.buffer[0] is second.buffer[0]


async def test_a_watcher_that_falls_behind_is_closed_and_aborted_alone() -> None:
    cache = await loaded(rv=10, watcher_buffer=3)
    slow, fast = watch(cache, "10"), watch(cache, "10")
    aborted: list[str] = []
    slow.abort = lambda: aborted.append("slow")
    for rv in range(11, 15):
        await cache.add(pod(f"p{rv}", rv))
        fast.buffer.clear()
    assert slow.closed
    assert not fast.closed
    assert aborted == ["slow"]
    assert cache.watchers == [fast]
    assert cache.stats.slow_watchers_closed == 1
    await cache.add(pod("p15", 15))
    assert lines(fast) == [("ADDED", "p15", "15")]


async def test_bookmarks_go_to_the_watchers_that_asked_at_the_cache_version() -> None:
    cache = await loaded(pod("a", 3), rv=10)
    asked, silent = watch(cache, "10", bookmarks=True), watch(cache, "10")
    await cache.bookmark("17")
    cache.bookmark_all()
    assert lines(asked) == [("BOOKMARK", "", "17")]
    assert silent.buffer == []


async def test_initial_events_end_with_the_initial_events_end_bookmark() -> None:
    cache = await loaded(pod("a", 3), pod("b", 4), rv=10)
    watcher = watch(cache, None, initial_events=True, initial_events_end=True, bookmarks=True)
    queued = [orjson.loads(line) for line in watcher.buffer]
    assert [e["type"] for e in queued] == ["ADDED", "ADDED", "BOOKMARK"]
    end = queued[-1]["object"]["metadata"]
    assert end == {"resourceVersion": "10", "annotations": {"k8s.io/initial-events-end": "true"}}


async def test_a_delete_of_an_object_the_transform_hid_is_not_sent() -> None:
    cache = await loaded(pod("h", 3, hide="1"), rv=10, transform=lambda o: None)
    watcher = watch(cache, "10")
    await cache.delete(pod("h", 11, hide="1"))
    assert lines(watcher) == []
    assert cache.rv == 11


def test_sizes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="history_size"):
        ProxyWatchCache(PODS, history_size=0)
    with pytest.raises(ValueError, match="watcher_buffer"):
        ProxyWatchCache(PODS, watcher_buffer=0)


async def test_writers_are_woken_once_per_flush_for_all_the_changes_since() -> None:
    cache = await loaded(rv=10, flush_interval=0)
    watcher = watch(cache, "10")
    await cache.add(pod("a", 11))
    await cache.add(pod("b", 12))
    assert not watcher.wake.is_set()
    await asyncio.sleep(0)
    assert watcher.wake.is_set()
    assert lines(watcher) == [("ADDED", "a", "11"), ("ADDED", "b", "12")]


async def test_a_flush_hands_an_idle_writers_lines_to_its_connection_at_once() -> None:
    cache = await loaded(rv=10, flush_interval=0)
    taking, backed_up = watch(cache, "10"), watch(cache, "10")
    sent: list[bytes] = []

    def take(data: bytes) -> bool:
        sent.append(data)
        return True

    taking.send = take
    backed_up.send = lambda data: False
    await cache.add(pod("a", 11))
    await cache.add(pod("b", 12))
    await asyncio.sleep(0)
    # One write with both lines, no writer woken, nothing left queued.
    assert [orjson.loads(line)["object"]["metadata"]["name"] for line in sent[0].splitlines()] == [
        "a",
        "b",
    ]
    assert len(sent) == 1
    assert taking.buffer == []
    assert not taking.wake.is_set()
    # A connection that does not take it at once: the lines stay for the writer, woken.
    assert backed_up.wake.is_set()
    assert lines(backed_up) == [("ADDED", "a", "11"), ("ADDED", "b", "12")]


async def test_an_upstream_object_without_a_name_is_skipped_and_counted() -> None:
    cache = await loaded({"kind": "Pod", "metadata": {}}, pod("a", 3), rv=10)
    await cache.add({"kind": "Pod", "metadata": {"name": ""}})
    await cache.delete({"kind": "Pod"})
    assert names(cache) == ["a"]
    assert cache.stats.malformed == 3
