"""The watch cache both servers are built on (the fake API server and the caching proxy),
driven directly: its history window and the 410 past it, ``Exact`` versus ``NotOlderThan``
reads, continue tokens, snapshots, watchers and bookmarks.

Cases follow kube-apiserver's own watch cache tests (``k8s.io/apiserver/pkg/storage/cacher``:
the events window, the marker a list leaves, reads at a resourceVersion, paged lists);
the fake's and the proxy's tests check their wiring to it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from aioinformer._apiserver.objects import Entry, ResourceType, StatusError
from aioinformer._apiserver.watch import Change, Watcher, decode_continue, encode_continue
from aioinformer._apiserver.watchcache import History, WatchCache
from aioinformer.labels import parse_label_selector
from tests._support_watchcache import lines, listed, watch

PODS = ResourceType("", "v1", "pods", "Pod", True)
CONFIGMAPS = ResourceType("", "v1", "configmaps", "ConfigMap", True)


def obj(name: str, rv: int, *, ns: str = "default", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": str(rv)}
    if labels:
        meta["labels"] = dict(labels)
    return {"metadata": meta, "spec": {"rv": rv}}


def new_cache(size: int = 100, rt: ResourceType = PODS) -> WatchCache[Watcher]:
    return WatchCache(rt, History(size), Watcher)


def write(
    cache: WatchCache[Watcher], name: str, rv: int, *, deleted: bool = False, **labels: str
) -> Change:
    """Record the change the server made at ``rv`` and offer it to the watchers."""
    key = f"default/{name}"
    prev = cache.entries.get(key)
    cache.history.rv = max(cache.history.rv, rv)
    entry = Entry(obj(name, rv, **labels), rv)
    if deleted:
        assert prev is not None
        event = cache.record("DELETED", key, entry, prev)
    else:
        event = cache.record("ADDED" if prev is None else "MODIFIED", key, entry, prev)
    cache.deliver(event)
    return event


def state(result: Any) -> dict[str, int]:
    return {entry.name: entry.rv for entry in result.entries}


def status_of(caught: pytest.ExceptionInfo[StatusError]) -> tuple[int, str, str]:
    status = caught.value.status
    return status["code"], status["reason"], status["message"]


# -- the history window --------------------------------------------------------------------


def test_a_loaded_state_has_no_history_before_it_so_only_its_own_version_can_be_watched_from() -> (
    None
):
    cache = new_cache(3)
    cache.load({"default/a": Entry(obj("a", 5), 5), "default/b": Entry(obj("b", 9), 9)}, 9)
    with pytest.raises(StatusError) as caught:
        watch(cache, "8")
    assert status_of(caught) == (410, "Expired", "too old resource version: 8 (9)")
    from_list = watch(cache, "9")
    assert from_list.buffer == []
    write(cache, "c", 12)
    assert lines(from_list) == [("ADDED", "c", "12")]
    assert lines(watch(cache, "9")) == [("ADDED", "c", "12")]


def test_the_window_keeps_the_last_changes_and_a_watch_from_before_it_is_410_expired() -> None:
    cache = new_cache(5)
    for rv in range(1, 8):
        write(cache, f"p{rv}", rv)
    assert (len(cache.history), cache.compacted_rv, cache.rv) == (5, 2, 7)
    with pytest.raises(StatusError) as caught:
        watch(cache, "1")
    assert status_of(caught) == (410, "Expired", "too old resource version: 1 (2)")
    assert [rv for _, _, rv in lines(watch(cache, "2"))] == ["3", "4", "5", "6", "7"]
    assert lines(watch(cache, "6")) == [("ADDED", "p7", "7")]
    assert lines(watch(cache, "7")) == []


def test_an_unset_or_zero_watch_version_starts_at_the_newest_without_replaying() -> None:
    cache = new_cache()
    write(cache, "a", 1)
    write(cache, "a", 2)
    for rv in (None, "", "0"):
        watcher = watch(cache, rv)
        assert (watcher.min_rv, watcher.buffer) == (2, [])


def test_a_watch_version_that_is_not_a_number_is_400_bad_request() -> None:
    cache = new_cache()
    with pytest.raises(StatusError) as caught:
        watch(cache, "abc")
    assert status_of(caught) == (400, "BadRequest", 'invalid resource version "abc"')


def test_compacting_forgets_the_history_up_to_a_version() -> None:
    history = History(10)
    cache = WatchCache(PODS, history, Watcher)
    for rv in range(1, 5):
        write(cache, "a", rv)
    history.compact(2)
    assert (history.compacted_rv, [event.rv for event in history.events]) == (2, [3, 4])
    history.compact()
    assert (history.compacted_rv, len(history)) == (4, 0)
    history.compact(1)
    assert history.compacted_rv == 4


def test_a_history_must_hold_at_least_one_change() -> None:
    with pytest.raises(ValueError, match="history_size must be at least 1, not 0"):
        History(0)


def test_a_deleted_event_carries_the_last_state_and_the_state_before_it() -> None:
    cache = new_cache()
    write(cache, "pod", 9)
    event = write(cache, "pod", 10, deleted=True)
    assert (event.type, event.entry.rv, event.prev is not None and event.prev.rv) == (
        "DELETED",
        10,
        9,
    )
    assert "default/pod" not in cache.entries
    assert lines(watch(cache, "9")) == [("DELETED", "pod", "10")]


def test_a_change_older_than_the_resources_newest_is_recorded_at_the_newest() -> None:
    cache = new_cache()
    write(cache, "a", 10)
    event = write(cache, "b", 7)
    assert (event.rv, event.entry.rv, cache.last_write_rv) == (10, 7, 10)
    assert [e.rv for e in cache.history.events] == [10, 10]


# -- reads at a resourceVersion ------------------------------------------------------------


def filled() -> WatchCache[Watcher]:
    """a@1, b@2, a@3, b deleted @4, c@5, in a window of four changes."""
    cache = new_cache(4)
    write(cache, "a", 1)
    write(cache, "b", 2)
    write(cache, "a", 3)
    write(cache, "b", 4, deleted=True)
    write(cache, "c", 5)
    return cache


def test_exact_reads_the_state_at_that_version_and_not_older_than_reads_the_newest() -> None:
    cache = filled()
    newest = {"a": 3, "c": 5}
    for rv, expected in ((2, {"a": 1, "b": 2}), (3, {"a": 3, "b": 2}), (4, {"a": 3}), (5, newest)):
        exact = listed(cache, resource_version=str(rv), resource_version_match="Exact")
        assert (state(exact), exact.rv) == (expected, rv)
        newer = listed(cache, resource_version=str(rv), resource_version_match="NotOlderThan")
        assert (state(newer), newer.rv) == (newest, 5)
        unset = listed(cache, resource_version=str(rv))
        assert (state(unset), unset.rv) == (newest, 5)


def test_an_unset_or_zero_version_reads_the_newest_state_even_with_a_limit() -> None:
    cache = filled()
    for rv in (None, "", "0"):
        result = listed(cache, resource_version=rv, limit=10)
        assert (state(result), result.rv) == ({"a": 3, "c": 5}, 5)


def test_a_limit_without_a_match_reads_exactly_that_version_as_the_legacy_rule_says() -> None:
    cache = filled()
    result = listed(cache, resource_version="2", limit=10)
    assert (state(result), result.rv) == ({"a": 1, "b": 2}, 2)


def test_an_exact_read_before_the_window_is_410_expired_and_not_older_than_is_served() -> None:
    cache = filled()
    assert cache.compacted_rv == 1
    assert state(listed(cache, resource_version="1", resource_version_match="Exact")) == {"a": 1}
    cache.history.compact(3)
    with pytest.raises(StatusError) as caught:
        listed(cache, resource_version="2", resource_version_match="Exact")
    assert status_of(caught) == (
        410,
        "Expired",
        "The resourceVersion for the provided list is too old.",
    )
    assert listed(cache, resource_version="2", resource_version_match="NotOlderThan").rv == 5


def test_a_version_the_server_has_not_reached_is_504_too_large_with_retry_after() -> None:
    cache = filled()
    for match in (None, "Exact", "NotOlderThan"):
        with pytest.raises(StatusError) as caught:
            listed(cache, resource_version="6", resource_version_match=match)
        assert status_of(caught) == (
            504,
            "Timeout",
            "Timeout: Too large resource version: 6, current: 5",
        )
        assert caught.value.status["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
        assert caught.value.headers == {"Retry-After": "1"}


def test_a_get_answers_the_current_object_or_404_not_found() -> None:
    cache = filled()
    assert cache.get("default", "a").rv == 3
    with pytest.raises(StatusError) as caught:
        cache.get("default", "b")
    assert status_of(caught) == (404, "NotFound", 'pods "b" not found')


# -- paged lists ---------------------------------------------------------------------------


def test_the_pages_of_one_list_read_the_first_pages_snapshot_while_objects_change() -> None:
    cache = new_cache()
    for rv, name in enumerate("abcde", start=1):
        write(cache, name, rv)
    first = listed(cache, limit=2)
    assert (state(first), first.rv, first.remaining) == ({"a": 1, "b": 2}, 5, 3)
    write(cache, "c", 6, deleted=True)
    write(cache, "b", 7)
    write(cache, "f", 8)
    second = listed(cache, limit=2, continue_=first.continue_)
    assert (state(second), second.rv, second.remaining) == ({"c": 3, "d": 4}, 5, 1)
    last = listed(cache, limit=2, continue_=second.continue_)
    assert (state(last), last.continue_, last.remaining) == ({"e": 5}, None, None)
    fresh = listed(cache)
    assert state(fresh) == {"a": 1, "b": 7, "d": 4, "e": 5, "f": 8}


def test_a_selecting_paged_list_does_not_count_what_remains() -> None:
    cache = new_cache()
    for rv, name in enumerate("abcd", start=1):
        write(cache, name, rv, app="web" if name != "b" else "db")
    first = listed(cache, limit=2, label_selector=parse_label_selector("app=web"))
    assert (state(first), first.remaining) == ({"a": 1, "c": 3}, None)
    assert first.continue_ is not None
    rest = listed(
        cache, limit=2, label_selector=parse_label_selector("app=web"), continue_=first.continue_
    )
    assert (state(rest), rest.continue_) == ({"d": 4}, None)


def test_a_continue_token_whose_version_left_the_window_is_410_with_a_token_that_goes_on() -> None:
    cache = new_cache(2)
    for rv, name in enumerate("abc", start=1):
        write(cache, name, rv)
    first = listed(cache, limit=1)
    for rv in (4, 5, 6):
        write(cache, "x", rv)
    with pytest.raises(StatusError) as caught:
        listed(cache, limit=1, continue_=first.continue_)
    code, reason, message = status_of(caught)
    assert (code, reason) == (410, "Expired")
    assert message.startswith("The provided continue parameter is too old")
    inconsistent = caught.value.status["metadata"]["continue"]
    assert decode_continue(inconsistent) == (6, "default/a\x00")
    rest = listed(cache, continue_=inconsistent)
    assert (state(rest), rest.rv) == ({"b": 2, "c": 3, "x": 6}, 6)


def test_a_continue_token_from_a_version_not_reached_is_410_too() -> None:
    cache = filled()
    with pytest.raises(StatusError) as caught:
        listed(cache, continue_=encode_continue(9, "default/a\x00"))
    assert caught.value.code == 410


@pytest.mark.parametrize(
    ("token", "rv", "message"),
    [
        ("not base64 json", None, "continue key is not valid"),
        (encode_continue(3, "default/a\x00"), "3", "specifying resource version is not allowed"),
    ],
    ids=["garbage", "with-a-resource-version"],
)
def test_a_bad_continue_token_or_one_with_a_version_is_400_bad_request(
    token: str, rv: str | None, message: str
) -> None:
    cache = filled()
    with pytest.raises(StatusError) as caught:
        listed(cache, continue_=token, resource_version=rv)
    code, reason, text = status_of(caught)
    assert (code, reason) == (400, "BadRequest")
    assert message in text


# -- snapshots -----------------------------------------------------------------------------


def test_a_past_snapshot_is_rebuilt_once_and_the_newest_four_are_kept() -> None:
    cache = new_cache()
    for rv in range(1, 8):
        write(cache, f"p{rv % 3}", rv)
    at_two = cache.snapshot(2)
    assert at_two[0] == ["default/p1", "default/p2"]
    assert cache.snapshot(2) is at_two
    for rv in (3, 4, 5, 6):
        cache.snapshot(rv)
    assert cache.snapshot(2) is not at_two
    assert cache.snapshot(2) == at_two
    assert cache.snapshot(7) is cache.ordered()


def test_the_current_snapshot_is_sorted_by_key_and_kept_until_a_change() -> None:
    cache = new_cache()
    for rv, name in enumerate("cab", start=1):
        write(cache, name, rv)
    keys, entries = cache.ordered()
    assert keys == ["default/a", "default/b", "default/c"]
    assert [entry.name for entry in entries] == ["a", "b", "c"]
    assert cache.ordered() is cache.ordered()
    before = cache.ordered()
    write(cache, "d", 4)
    assert cache.ordered() is not before


# -- watchers ------------------------------------------------------------------------------


def test_watchers_receive_every_change_in_order_and_are_woken() -> None:
    cache = new_cache()
    first = watch(cache, None)
    second = watch(cache, None)
    assert not first.wake.is_set()
    write(cache, "a", 1)
    write(cache, "a", 2)
    write(cache, "a", 3, deleted=True)
    expected = [("ADDED", "a", "1"), ("MODIFIED", "a", "2"), ("DELETED", "a", "3")]
    assert first.wake.is_set()
    assert lines(first) == expected
    assert lines(second) == expected


def test_a_selecting_watcher_sees_objects_enter_and_leave_its_selection() -> None:
    cache = new_cache()
    watcher = watch(cache, None, label_selector=parse_label_selector("app=web"))
    write(cache, "a", 1, app="db")
    write(cache, "a", 2, app="web")
    write(cache, "a", 3, app="web")
    write(cache, "a", 4, app="db")
    write(cache, "a", 5, deleted=True, app="db")
    assert lines(watcher) == [("ADDED", "a", "2"), ("MODIFIED", "a", "3"), ("DELETED", "a", "4")]


def test_a_namespaced_watcher_sees_only_its_namespace() -> None:
    cache = new_cache()
    watcher = watch(cache, None, namespace="other")
    write(cache, "a", 1)
    key = "other/b"
    cache.history.rv = 2
    cache.deliver(cache.record("ADDED", key, Entry(obj("b", 2, ns="other"), 2), None))
    assert lines(watcher) == [("ADDED", "b", "2")]


def test_a_closed_watcher_is_offered_nothing_more_and_its_writer_is_woken() -> None:
    cache = new_cache()
    watcher = watch(cache, None)
    cache.close_watch(watcher)
    assert (watcher.closed, watcher.wake.is_set(), cache.watchers) == (True, True, [])
    write(cache, "a", 1)
    assert watcher.buffer == []
    cache.close_watch(watcher)


def test_close_all_closes_every_watcher() -> None:
    cache = new_cache()
    watchers = [watch(cache, None) for _ in range(3)]
    cache.close_all()
    assert cache.watchers == []
    assert all(watcher.closed for watcher in watchers)


def test_initial_events_are_the_state_as_added_then_the_initial_events_end_bookmark() -> None:
    cache = filled()
    watcher = watch(cache, None, initial_events=True, initial_events_end=True)
    assert watcher.wake.is_set()
    queued = [orjson.loads(line) for line in watcher.buffer]
    assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in queued] == [
        ("ADDED", "3"),
        ("ADDED", "5"),
        ("BOOKMARK", "5"),
    ]
    assert queued[0]["object"]["kind"] == "Pod"
    assert queued[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    without_end = watch(cache, "0", initial_events=True)
    assert [kind for kind, _, _ in lines(without_end)] == ["ADDED", "ADDED"]


def test_bookmarks_reach_only_watchers_that_asked_at_the_servers_version() -> None:
    cache = filled()
    asked = watch(cache, None, bookmarks=True)
    meta = watch(cache, None, bookmarks=True, as_meta="meta.k8s.io/v1")
    silent = watch(cache, None)
    cache.history.rv = 8
    cache.bookmark_all()
    assert asked.wake.is_set()
    assert lines(asked) == [("BOOKMARK", "", "8")]
    assert orjson.loads(meta.buffer[0])["object"]["kind"] == "PartialObjectMetadata"
    assert silent.buffer == []


# -- one history, several resources --------------------------------------------------------


def test_caches_sharing_a_history_share_its_window_and_see_only_their_own_changes() -> None:
    history = History(3)
    pods = WatchCache(PODS, history, Watcher)
    configmaps = WatchCache(CONFIGMAPS, history, Watcher)
    write(pods, "p", 1)
    write(configmaps, "c", 2)
    write(pods, "p", 3)
    write(configmaps, "c", 4)
    assert (history.compacted_rv, pods.compacted_rv, configmaps.rv) == (1, 1, 4)
    assert lines(watch(pods, "1")) == [("MODIFIED", "p", "3")]
    assert lines(watch(configmaps, "1")) == [("ADDED", "c", "2"), ("MODIFIED", "c", "4")]
    assert state(listed(pods, resource_version="2", resource_version_match="Exact")) == {"p": 1}
    assert state(listed(configmaps, resource_version="3", resource_version_match="Exact")) == {
        "c": 2
    }
    write(configmaps, "c", 5)
    write(configmaps, "c", 6)
    with pytest.raises(StatusError) as caught:
        watch(pods, "2")
    assert status_of(caught) == (410, "Expired", "too old resource version: 2 (3)")
    assert lines(watch(pods, "3")) == []


def test_a_watch_may_be_served_at_another_version_of_the_resource() -> None:
    v2 = ResourceType("", "v2", "pods", "Pod", True)
    cache = filled()
    watcher = watch(cache, None, initial_events=True, initial_events_end=True, rt=v2)
    assert watcher.rt is v2
    assert {orjson.loads(line)["object"]["apiVersion"] for line in watcher.buffer} == {"v2"}
    write(cache, "a", 6)
    assert lines(watch(cache, "5", rt=v2)) == [("MODIFIED", "a", "6")]


def test_a_subclass_may_withhold_changes_from_watches_opened_after_them() -> None:
    class Withholding(WatchCache[Watcher]):
        def replays(self, event: Change) -> bool:
            return event.rv != 2

    cache = Withholding(PODS, History(10), Watcher)
    for rv in (1, 2, 3):
        write(cache, "a", rv)
    assert [rv for _, _, rv in lines(watch(cache, "1"))] == ["3"]
    assert state(listed(cache, resource_version="2", resource_version_match="Exact")) == {"a": 2}


def test_recording_without_delivering_leaves_the_watchers_to_the_caller() -> None:
    cache = new_cache()
    watcher = watch(cache, None)
    cache.history.rv = 1
    event = cache.record("ADDED", "default/a", Entry(obj("a", 1), 1), None)
    assert (watcher.buffer, len(cache), cache.last_write_rv) == ([], 1, 1)
    cache.deliver(event)
    assert lines(watcher) == [("ADDED", "a", "1")]
