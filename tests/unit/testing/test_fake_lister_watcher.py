"""FakeListerWatcher: an in-memory resource that behaves like kube-apiserver for lists and
watches, records every request and fails on cue."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import (
    BadRequest,
    ConnectionFailed,
    Gone,
    ServerError,
    TooManyRequests,
    UnprocessableEntity,
    WatchError,
)
from aioinformer.listwatch import (
    INITIAL_EVENTS_END_ANNOTATION,
    ListerWatcher,
    ListOptions,
    WatchEvent,
)
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_tasks import settle

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def summary(events: list[WatchEvent]) -> list[tuple[str, str, str]]:
    return [
        (e.type, e.object["metadata"].get("name", ""), e.object["metadata"]["resourceVersion"])
        for e in events
    ]


async def take(stream: AsyncIterator[WatchEvent], count: int) -> list[WatchEvent]:
    async with asyncio.timeout(2):
        return [await anext(stream) for _ in range(count)]


async def close(stream: AsyncIterator[WatchEvent]) -> None:
    await stream.aclose()  # type: ignore[attr-defined]


def test_it_implements_the_lister_watcher_protocol() -> None:
    lw: ListerWatcher = FakeListerWatcher()
    assert lw is not None


def test_changes_bump_one_resource_version_counter_and_return_copies() -> None:
    lw = FakeListerWatcher()
    given = pod("a")

    added = lw.add(given)
    modified = lw.modify(pod("a", app="web"))
    lw.add(pod("b"))
    deleted = lw.delete("default/a")

    assert [added["metadata"]["resourceVersion"], modified["metadata"]["resourceVersion"]] == [
        "1",
        "2",
    ]
    assert deleted["metadata"] == {
        "name": "a",
        "namespace": "default",
        "labels": {"app": "web"},
        "resourceVersion": "4",
    }
    assert added["apiVersion"] == "v1"
    assert added["kind"] == "Pod"
    assert "resourceVersion" not in given["metadata"]  # the caller's dict is untouched
    assert lw.resource_version == "4"
    assert [o["metadata"]["name"] for o in lw.objects()] == ["b"]
    added["metadata"]["name"] = "mutated"
    assert lw.get("default/b") is not None
    assert lw.get("default/a") is None


def test_modifying_or_deleting_a_missing_object_raises_key_error() -> None:
    lw = FakeListerWatcher()
    with pytest.raises(KeyError):
        lw.modify(pod("ghost"))
    with pytest.raises(KeyError):
        lw.delete("default/ghost")


def test_an_object_without_a_name_is_refused() -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        FakeListerWatcher().add({"metadata": {}})


async def test_list_returns_sorted_copies_at_the_current_version_and_records_options() -> None:
    lw = FakeListerWatcher(objects=[pod("b"), pod("a"), pod("c", namespace="kube-system")])
    options = ListOptions(resource_version="0")

    page = await lw.list(options)
    options.resource_version = "changed afterwards"

    assert [o["metadata"]["name"] for o in page.items] == ["a", "b", "c"]
    assert page.resource_version == "3"
    assert page.continue_ is None
    assert lw.list_calls == [ListOptions(resource_version="0")]
    assert lw.requests == [("list", ListOptions(resource_version="0"))]
    page.items[0]["metadata"]["name"] = "mutated"
    assert lw.get("default/a") is not None


async def test_list_pages_follow_continue_tokens_over_one_snapshot() -> None:
    lw = FakeListerWatcher(objects=[pod(f"p{i}") for i in range(5)])

    first = await lw.list(ListOptions(limit=2))
    lw.add(pod("p9"))  # after the snapshot: not in this list
    second = await lw.list(ListOptions(limit=2, continue_=first.continue_))
    third = await lw.list(ListOptions(limit=2, continue_=second.continue_))

    names = [o["metadata"]["name"] for page in (first, second, third) for o in page.items]
    assert names == ["p0", "p1", "p2", "p3", "p4"]
    assert (first.continue_, second.continue_, third.continue_) == (
        "continue-1",
        "continue-2",
        None,
    )
    assert (first.remaining_item_count, second.remaining_item_count) == (3, 1)
    assert {first.resource_version, second.resource_version, third.resource_version} == {"5"}


async def test_a_continue_token_from_before_a_compaction_has_expired() -> None:
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    first = await lw.list(ListOptions(limit=1))

    lw.compact()

    with pytest.raises(Gone) as raised:
        await lw.list(ListOptions(limit=1, continue_=first.continue_))
    assert raised.value.reason == "Expired"


async def test_listing_at_a_future_version_is_a_too_large_resource_version() -> None:
    lw = FakeListerWatcher(objects=[pod("a")])

    with pytest.raises(ServerError) as raised:
        await lw.list(ListOptions(resource_version="7"))

    assert raised.value.code == 504
    assert raised.value.reason == "Timeout"
    assert raised.value.details["causes"][0]["reason"] == "ResourceVersionTooLarge"


async def test_a_malformed_resource_version_is_a_bad_request() -> None:
    lw = FakeListerWatcher()

    with pytest.raises(BadRequest, match="invalid resource version"):
        await lw.list(ListOptions(resource_version="yesterday"))
    with pytest.raises(BadRequest):
        await anext(lw.watch(ListOptions(resource_version="yesterday")))


async def test_selectors_and_namespace_filter_lists() -> None:
    lw = FakeListerWatcher(
        namespace="default",
        objects=[pod("a", app="web"), pod("b", app="db"), pod("c", "other", app="web")],
    )

    by_label = await lw.list(ListOptions(label_selector="app=web"))
    by_field = await lw.list(ListOptions(field_selector="metadata.name!=a"))

    assert [o["metadata"]["name"] for o in by_label.items] == ["a"]
    assert [o["metadata"]["name"] for o in by_field.items] == ["b"]


async def test_scripted_list_errors_apply_to_the_next_calls_in_order() -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    busy = TooManyRequests({"message": "busy"}, retry_after=2.0)
    lw.fail_next_list(None, busy)

    assert len((await lw.list(ListOptions())).items) == 1
    with pytest.raises(TooManyRequests) as raised:
        await lw.list(ListOptions())
    assert raised.value is busy
    assert len((await lw.list(ListOptions())).items) == 1


async def test_a_stalled_list_waits_until_cancelled() -> None:
    lw = FakeListerWatcher()
    lw.stall_next_list()

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await lw.list(ListOptions())


async def test_a_watch_replays_the_changes_after_its_version_then_streams_live() -> None:
    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    lw.modify(pod("a", app="x"))  # 3

    stream = lw.watch(ListOptions(resource_version="1"))
    replayed = await take(stream, 2)
    lw.delete("default/b")  # 4
    live = await take(stream, 1)

    assert summary(replayed) == [("ADDED", "b", "2"), ("MODIFIED", "a", "3")]
    assert summary(live) == [("DELETED", "b", "4")]
    assert lw.open_watches == 1
    await close(stream)
    assert lw.open_watches == 0


@pytest.mark.parametrize("rv", [None, "", "0"], ids=["unset", "empty", "zero"])
async def test_a_watch_without_a_version_starts_with_the_current_objects(rv: str | None) -> None:
    lw = FakeListerWatcher(objects=[pod("b"), pod("a")])

    stream = lw.watch(ListOptions(resource_version=rv, allow_watch_bookmarks=True))
    events = await take(stream, 2)

    assert summary(events) == [("ADDED", "a", "2"), ("ADDED", "b", "1")]
    await close(stream)


async def test_a_streaming_list_ends_its_initial_events_with_an_annotated_bookmark() -> None:
    lw = FakeListerWatcher(objects=[pod("a")])

    stream = lw.watch(
        ListOptions(
            resource_version="",
            resource_version_match="NotOlderThan",
            send_initial_events=True,
            allow_watch_bookmarks=True,
        )
    )
    added, bookmark = await take(stream, 2)

    assert added.type == "ADDED"
    assert bookmark.type == "BOOKMARK"
    assert bookmark.object["metadata"] == {
        "resourceVersion": "1",
        "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"},
    }
    await close(stream)


async def test_the_initial_events_end_can_be_held_back_and_sent_by_hand() -> None:
    lw = FakeListerWatcher(objects=[pod("a")], send_initial_events_end=False)
    stream = lw.watch(ListOptions(send_initial_events=True, allow_watch_bookmarks=True))
    await take(stream, 1)

    lw.modify(pod("a", app="x"))
    lw.send_initial_events_end()
    events = await take(stream, 2)

    assert [e.type for e in events] == ["MODIFIED", "BOOKMARK"]
    assert events[1].object["metadata"]["annotations"] == {INITIAL_EVENTS_END_ANNOTATION: "true"}
    await close(stream)


async def test_a_server_without_streaming_lists_refuses_send_initial_events() -> None:
    lw = FakeListerWatcher(supports_watch_list=False)
    stream = lw.watch(ListOptions(send_initial_events=True))

    with pytest.raises(UnprocessableEntity) as raised:
        await anext(stream)
    assert raised.value.reason == "Invalid"


async def test_a_watch_from_before_the_history_gets_an_expired_error_event() -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.add(pod("b"))
    lw.compact()
    lw.add(pod("c"))

    stream = lw.watch(ListOptions(resource_version="1"))
    with pytest.raises(Gone) as raised:
        await anext(stream)

    assert raised.value.code == 410
    assert raised.value.reason == "Expired"
    assert getattr(stream, "opened", None) is True  # an ERROR event, not a failed request
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_a_history_limit_forgets_the_oldest_changes() -> None:
    roomy = FakeListerWatcher(history_limit=2, objects=[pod("a"), pod("b"), pod("c")])
    tight = FakeListerWatcher(history_limit=1, objects=[pod("a"), pod("b"), pod("c")])

    recent = roomy.watch(ListOptions(resource_version="1"))
    forgotten = tight.watch(ListOptions(resource_version="1"))

    assert summary(await take(recent, 2)) == [("ADDED", "b", "2"), ("ADDED", "c", "3")]
    with pytest.raises(Gone) as raised:
        await anext(forgotten)
    assert raised.value.code == 410
    await close(recent)


async def test_a_watch_from_a_future_version_gets_a_too_large_error_event() -> None:
    lw = FakeListerWatcher()
    stream = lw.watch(ListOptions(resource_version="5"))

    with pytest.raises(ServerError) as raised:
        await anext(stream)

    assert raised.value.code == 504
    assert raised.value.details["causes"][0]["reason"] == "ResourceVersionTooLarge"


async def test_objects_moving_across_a_watch_selector_arrive_as_added_and_deleted() -> None:
    lw = FakeListerWatcher(objects=[pod("a", app="web")])
    stream = lw.watch(ListOptions(resource_version="1", label_selector="app=web"))

    lw.modify(pod("a", app="db"))  # leaves the selection
    lw.add(pod("b", app="db"))  # never selected
    lw.modify(pod("b", app="web"))  # enters it
    lw.modify(pod("b", app="web", tier="fe"))  # stays in it
    events = await take(stream, 3)

    assert summary(events) == [("DELETED", "a", "2"), ("ADDED", "b", "4"), ("MODIFIED", "b", "5")]
    await close(stream)


async def test_changes_with_notify_off_never_reach_open_watches() -> None:
    lw = FakeListerWatcher()
    stream = lw.watch(ListOptions(resource_version="0"))
    pending = asyncio.ensure_future(anext(stream))
    await lw.wait_for_watchers(1)

    lw.add(pod("silent"), notify=False)
    lw.add(pod("loud"))

    assert summary([await pending]) == [("ADDED", "loud", "2")]
    await close(stream)


async def test_bookmarks_go_only_to_watches_that_allow_them() -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    with_bookmarks = lw.watch(ListOptions(resource_version="1", allow_watch_bookmarks=True))
    without = lw.watch(ListOptions(resource_version="1"))
    async with asyncio.timeout(1):
        first = asyncio.ensure_future(anext(with_bookmarks))
        second = asyncio.ensure_future(anext(without))
        await lw.wait_for_watchers(2)

        lw.send_bookmark()
        lw.add(pod("b"))
        bookmark = await first
        added = await second

    assert bookmark == WatchEvent(
        "BOOKMARK", {"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": "1"}}
    )
    assert added.type == "ADDED"
    await close(with_bookmarks)
    await close(without)


async def test_drop_watches_ends_streams_and_a_rewatch_continues_where_it_left() -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    stream = lw.watch(ListOptions(resource_version="1"))
    pending = asyncio.ensure_future(anext(stream))
    await lw.wait_for_watchers(1)

    lw.drop_watches()
    lw.add(pod("b"))

    with pytest.raises(StopAsyncIteration):
        await pending
    again = lw.watch(ListOptions(resource_version="1"))
    assert summary(await take(again, 1)) == [("ADDED", "b", "2")]
    await close(again)


async def test_reset_watch_ends_streams_and_expires_their_versions() -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    stream = lw.watch(ListOptions(resource_version="1"))
    pending = asyncio.ensure_future(anext(stream))
    await lw.wait_for_watchers(1)

    lw.add(pod("b"), notify=False)
    lw.reset_watch()

    with pytest.raises(StopAsyncIteration):
        await pending
    again = lw.watch(ListOptions(resource_version="1"))
    with pytest.raises(Gone) as raised:
        await anext(again)
    assert raised.value.code == 410


async def test_scripted_watch_failures_are_raised_on_the_first_read() -> None:
    lw = FakeListerWatcher()
    refused = ConnectionFailed("refused", refused=True)
    lw.fail_next_watch(refused, None)

    failing = lw.watch(ListOptions(resource_version="0"))
    working = lw.watch(ListOptions(resource_version="0"))

    with pytest.raises(ConnectionFailed) as raised:
        await anext(failing)
    assert raised.value is refused
    lw.add(pod("a"))
    assert summary(await take(working, 1)) == [("ADDED", "a", "1")]
    await close(working)
    assert lw.watch_calls == [ListOptions(resource_version="0")] * 2


async def test_an_error_next_watch_sends_one_error_event_then_ends() -> None:
    lw = FakeListerWatcher()
    lw.error_next_watch(TooManyRequests({"message": "slow down"}))

    stream = lw.watch(ListOptions(resource_version="0"))
    with pytest.raises(TooManyRequests) as raised:
        await anext(stream)

    assert raised.value.status == {"message": "slow down", "code": 429}
    assert getattr(stream, "opened", None) is True  # an ERROR event, not a failed request
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_a_stalled_watch_opens_and_never_sends_anything() -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.stall_next_watch()
    stream = lw.watch(ListOptions(resource_version="0"))
    pending = asyncio.ensure_future(anext(stream))
    await lw.wait_for_watchers(1)
    # A plain watch beside the stalled one: once it has delivered the change, the stalled
    # one has had the same chance to, and no real time had to pass.
    beside = lw.watch(ListOptions(resource_version="1"))
    delivered = asyncio.ensure_future(anext(beside))
    await lw.wait_for_watchers(2)

    lw.add(pod("b"))
    async with asyncio.timeout(2):
        assert summary([await delivered]) == [("ADDED", "b", "2")]
    await settle()

    assert not pending.done()
    await close(beside)
    pending.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await pending
    assert lw.open_watches == 0


async def test_send_error_and_break_watches_reach_every_open_stream() -> None:
    lw = FakeListerWatcher()
    one = lw.watch(ListOptions(resource_version="0"))
    two = lw.watch(ListOptions(resource_version="0"))
    first = asyncio.ensure_future(anext(one))
    second = asyncio.ensure_future(anext(two))
    await lw.wait_for_watchers(2)

    lw.send_error({"code": 500, "message": "boom"})
    with pytest.raises(ServerError, match="boom"):
        await first
    with pytest.raises(ServerError, match="boom"):
        await second
    with pytest.raises(StopAsyncIteration):
        await anext(one)
    await close(two)
    assert lw.open_watches == 0

    three = lw.watch(ListOptions(resource_version="0"))
    pending = asyncio.ensure_future(anext(three))
    await lw.wait_for_watchers(1)
    lw.break_watches(WatchError("truncated line"))
    with pytest.raises(WatchError, match="truncated line"):
        async with asyncio.timeout(2):
            await pending
    assert lw.open_watches == 0


async def test_wait_helpers_time_out_when_nothing_happens() -> None:
    lw = FakeListerWatcher()

    with pytest.raises(TimeoutError):
        await lw.wait_for_watchers(1, timeout=0.01)
    with pytest.raises(TimeoutError):
        await lw.wait_for_list_calls(1, timeout=0.01)
    with pytest.raises(TimeoutError):
        await lw.wait_for_watch_calls(1, timeout=0.01)


def test_repr_shows_resource_version_and_counts() -> None:
    lw = FakeListerWatcher(resource="configmaps", namespace="apps", objects=[pod("a", "apps")])

    assert repr(lw) == "<FakeListerWatcher configmaps ns='apps' rv=1 objects=1 watches=0>"


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param([{"metadata": {"name": "a"}}], ("Pod", "v1"), id="defaults"),
        pytest.param(
            [{"kind": "Widget", "apiVersion": "x.io/v1", "metadata": {"name": "a"}}],
            ("Widget", "x.io/v1"),
            id="explicit",
        ),
        pytest.param(
            [{"metadata": {"name": "a"}}, {"kind": "Secret", "metadata": {"name": "b"}}],
            (None, None),
            id="mixed-kinds",
        ),
        pytest.param(
            [{"metadata": {"name": "a"}}, {"apiVersion": "v2", "metadata": {"name": "b"}}],
            (None, None),
            id="mixed-api-versions",
        ),
        pytest.param([], (None, None), id="empty"),
    ],
)
async def test_a_list_names_the_item_kind_only_when_every_object_agrees(
    objects: list[dict[str, Any]], expected: tuple[str | None, str | None]
) -> None:
    lw = FakeListerWatcher(objects=objects)
    page = await lw.list(ListOptions(limit=1))
    assert (page.kind, page.api_version) == expected
