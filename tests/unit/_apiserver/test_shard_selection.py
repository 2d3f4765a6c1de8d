"""Shard selectors (KEP-5866) in the server kit both servers share: which stored entries a
selector picks (each entry's hash computed once), LIST pages filtered and echoing it, every
page of a split covering the resource once, watchers and their initial events filtered,
and the request parsing that reads ``shardSelector`` only for a server that serves it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest

from aioinformer._apiserver.objects import Entry, ResourceType, StatusError
from aioinformer._apiserver.requests import Conversion, list_query, list_response, watch_query
from aioinformer._apiserver.watch import Watcher
from aioinformer._apiserver.watchcache import History, WatchCache
from aioinformer.labels import parse_label_selector
from aioinformer.shard_selector import ShardSelector, fnv1a_64, parse_shard_selector
from tests._support_watchcache import count_hashes, lines, listed, watch

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp import web

PODS = ResourceType("", "v1", "pods", "Pod", True)
HALVES = ShardSelector.split(2)
BAD = "shardRange(object.metadata.uid, '0x8000000000000000', '0x0')"
BAD_MESSAGE = (
    "invalid shard selector: shard range start 0x8000000000000000 must be less than end"
    " 0x0000000000000000"
)


def obj(name: str, rv: int, *, ns: str = "default", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "uid": f"uid-{ns}-{name}",
        "resourceVersion": str(rv),
    }
    if labels:
        meta["labels"] = dict(labels)
    return {"metadata": meta}


def filled(count: int = 12) -> WatchCache[Watcher]:
    """``count`` pods over three namespaces, written at resourceVersions 1..count."""
    cache: WatchCache[Watcher] = WatchCache(PODS, History(100), Watcher)
    for i in range(count):
        entry = Entry(obj(f"p{i:02}", i + 1, ns="abc"[i % 3], app="web" if i % 2 else "db"), i + 1)
        cache.history.rv = i + 1
        cache.deliver(cache.record("ADDED", f"{'abc'[i % 3]}/p{i:02}", entry, None))
    return cache


def decoded(response: web.Response) -> Any:
    assert isinstance(response.body, bytes)
    return orjson.loads(response.body)


def in_slice(cache: WatchCache[Watcher], selector: ShardSelector) -> set[str]:
    return {
        entry.name
        for entry in cache.entries.values()
        if selector.contains(uid=entry.uid or "", namespace=entry.namespace or "")
    }


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every value the kit hashes, in order."""
    return count_hashes(monkeypatch)


# -- entries -----------------------------------------------------------------------------


def test_an_entry_is_in_a_shard_as_the_selector_says_and_hashes_each_field_once(
    hashes: list[str],
) -> None:
    entry = Entry(obj("a", 1, ns="team"), 1)
    by_namespace = ShardSelector.split(4, field="object.metadata.namespace")
    for selector in [*HALVES, *by_namespace]:
        expected = selector.contains(uid="uid-team-a", namespace="team")
        for _ in range(3):
            assert entry.in_shard(selector) is expected
    assert hashes == ["uid-team-a", "team"]
    assert sum(entry.in_shard(selector) for selector in HALVES) == 1


def test_a_cluster_scoped_entry_hashes_the_empty_namespace() -> None:
    entry = Entry({"metadata": {"name": "n", "uid": "u1"}}, 1)
    below_empty = parse_shard_selector(
        f"shardRange(object.metadata.namespace, '0x0', '{fnv1a_64(''):#x}')"
    )
    assert not entry.in_shard(below_empty)
    empty = fnv1a_64("")
    assert entry.in_shard(ShardSelector.of((empty, empty + 1), field="object.metadata.namespace"))


def test_ranges_joined_by_or_pick_an_entry_in_any_of_them() -> None:
    entry = Entry(obj("a", 1), 1)
    h = fnv1a_64("uid-default-a")
    miss = (0, h) if h > 0 else (h + 1, h + 2)
    assert not entry.in_shard(ShardSelector.of(miss))
    assert entry.in_shard(ShardSelector.of(miss, (h, h + 1)))


# -- LIST pages ----------------------------------------------------------------------------


def test_a_filtered_list_keeps_the_slice_echoes_the_selector_and_gives_no_remaining_count() -> None:
    cache = filled()
    for selector in HALVES:
        page = listed(cache, shard_selector=selector)
        assert {entry.name for entry in page.entries} == in_slice(cache, selector)
        assert page.shards is selector
        first = listed(cache, shard_selector=selector, limit=1)
        assert (len(first.entries), first.remaining, first.shards) == (1, None, selector)
    assert listed(cache).shards is None


@pytest.mark.parametrize("count", [1, 2, 3, 5])
@pytest.mark.parametrize("limit", [1, 2, 3, 12])
def test_the_pages_of_a_split_cover_every_object_once(count: int, limit: int) -> None:
    cache = filled()
    seen: list[str] = []
    for selector in ShardSelector.split(count):
        token = None
        while True:
            page = listed(cache, shard_selector=selector, limit=limit, continue_=token)
            assert page.shards is selector
            assert len(page.entries) <= limit
            seen.extend(entry.name for entry in page.entries)
            token = page.continue_
            if token is None:
                break
    assert sorted(seen) == sorted(entry.name for entry in cache.entries.values())


def test_a_shard_selector_combines_with_the_namespace_and_the_label_selector() -> None:
    cache = filled()
    web = parse_label_selector("app=web")
    for selector in HALVES:
        page = listed(cache, namespace="a", label_selector=web, shard_selector=selector)
        expected = {
            entry.name
            for entry in cache.entries.values()
            if entry.namespace == "a"
            and (entry.labels or {}).get("app") == "web"
            and entry.in_shard(selector)
        }
        assert {entry.name for entry in page.entries} == expected


def test_a_list_answer_echoes_the_normalised_selector_on_typed_and_metadata_lists() -> None:
    spelled = "shardRange( object.metadata.uid ,\"0x0\",'0X8000000000000000')"
    selector = parse_shard_selector(spelled)
    entry = Entry(obj("a", 1), 1)
    typed = decoded(list_response(PODS, [entry], 7, None, None, None, shards=selector))
    assert typed["metadata"] == {
        "resourceVersion": "7",
        "shardInfo": {"selector": str(HALVES[0])},
    }
    meta = Conversion("PartialObjectMetadataList", "meta.k8s.io/v1")
    partial = decoded(list_response(PODS, [entry], 7, "t", None, meta, shards=selector))
    assert partial["metadata"] == {
        "resourceVersion": "7",
        "continue": "t",
        "shardInfo": {"selector": str(HALVES[0])},
    }
    plain = decoded(list_response(PODS, [entry], 7, None, None, None))
    assert "shardInfo" not in plain["metadata"]


# -- watches -------------------------------------------------------------------------------


def test_a_sharded_watcher_queues_only_its_slice_and_label_moves_still_translate() -> None:
    cache = filled(0)
    watchers = [watch(cache, "0", shard_selector=selector) for selector in HALVES]
    labelled = [
        watch(cache, "0", shard_selector=s, label_selector=parse_label_selector("app=web"))
        for s in HALVES
    ]
    prev = None
    for rv, app in ((1, "db"), (2, "web"), (3, "db")):
        entry = Entry(obj("a", rv, app=app), rv)
        cache.history.rv = rv
        cache.deliver(
            cache.record("ADDED" if prev is None else "MODIFIED", "default/a", entry, prev)
        )
        prev = entry
    owner = 0 if HALVES[0].contains(uid="uid-default-a", namespace="default") else 1
    assert lines(watchers[owner]) == [
        ("ADDED", "a", "1"),
        ("MODIFIED", "a", "2"),
        ("MODIFIED", "a", "3"),
    ]
    assert lines(watchers[1 - owner]) == []
    assert lines(labelled[owner]) == [("ADDED", "a", "2"), ("DELETED", "a", "3")]
    assert lines(labelled[1 - owner]) == []


def test_initial_events_are_the_slice_then_the_bookmark() -> None:
    cache = filled()
    for selector in HALVES:
        watcher = watch(
            cache, None, initial_events=True, initial_events_end=True, shard_selector=selector
        )
        got = lines(watcher)
        assert got[-1] == ("BOOKMARK", "", "12")
        assert {name for _, name, _ in got[:-1]} == in_slice(cache, selector)


def test_fanning_a_change_out_to_many_sharded_watchers_hashes_it_once(
    hashes: list[str],
) -> None:
    cache = filled(0)
    watchers = [watch(cache, "0", shard_selector=s) for s in ShardSelector.split(50)]
    entry = Entry(obj("a", 1), 1)
    cache.history.rv = 1
    cache.deliver(cache.record("ADDED", "default/a", entry, None))
    assert hashes == ["uid-default-a"]
    assert sum(len(w.buffer) for w in watchers) == 1


# -- requests ------------------------------------------------------------------------------


def listed_shards(query: dict[str, str], served: bool) -> ShardSelector | None:
    return list_query(PODS, query, shard_selectors=served).get("shard_selector")


def watched_shards(query: dict[str, str], served: bool) -> ShardSelector | None:
    options, _ = watch_query(PODS, query, None, name=None, shard_selectors=served)
    return options.get("shard_selector")


READERS = [pytest.param(listed_shards, id="list"), pytest.param(watched_shards, id="watch")]


@pytest.mark.parametrize("read", READERS)
def test_a_server_that_serves_shards_parses_the_parameter_and_others_ignore_it(
    read: Callable[[dict[str, str], bool], ShardSelector | None],
) -> None:
    text = str(HALVES[1]).replace("'", '"')
    assert read({"shardSelector": text}, True) == HALVES[1]
    assert read({"shardSelector": text}, False) is None
    assert read({"shardSelector": BAD}, False) is None
    assert read({"shardSelector": ""}, True) is None
    assert read({}, True) is None


@pytest.mark.parametrize("read", READERS)
def test_a_malformed_selector_is_a_500_internal_error_with_the_parsers_message(
    read: Callable[[dict[str, str], bool], ShardSelector | None],
) -> None:
    with pytest.raises(StatusError) as caught:
        read({"shardSelector": BAD}, True)
    status = caught.value.status
    assert (caught.value.code, status["reason"], status["code"]) == (500, "InternalError", 500)
    assert status["message"] == BAD_MESSAGE
    assert (status["kind"], status["status"]) == ("Status", "Failure")
