"""The fake API server's ``drop_watch_events`` fault, over plain HTTP: a watch cache that
loses events (kubernetes/kubernetes#123072). The write is stored and listed; no watch hears
of it, not the open ones, not one opened later from before it; bookmarks move past it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import orjson
import pytest

from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer, FakeClock
from tests._support_objects import pod

PODS = "/api/v1/namespaces/default/pods"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
HEADERS = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
READ_TIMEOUT = 5.0

Factory = Callable[..., Awaitable[FakeAPIServer]]


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(headers=HEADERS) as client_session:
        yield client_session


class Stream:
    """An open watch, read event by event."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> tuple[str, str]:
        """The next event as (type, name), or (``BOOKMARK``, resourceVersion)."""
        async with asyncio.timeout(READ_TIMEOUT):
            line = await self.response.content.readline()
        assert line, "the stream ended"
        event = orjson.loads(line)
        meta = event["object"]["metadata"]
        if event["type"] == "BOOKMARK":
            return "BOOKMARK", meta["resourceVersion"]
        return event["type"], meta["name"]


@pytest.fixture
async def watch(
    session: aiohttp.ClientSession,
) -> AsyncIterator[Callable[..., Awaitable[Stream]]]:
    responses: list[aiohttp.ClientResponse] = []

    async def open_watch(server: FakeAPIServer, path: str = PODS, **params: str) -> Stream:
        response = await session.get(server.url + path, params={"watch": "1", **params})
        responses.append(response)
        return Stream(response)

    yield open_watch
    for response in responses:
        response.close()


async def names(session: aiohttp.ClientSession, server: FakeAPIServer, path: str) -> list[str]:
    async with session.get(server.url + path) as response:
        body = orjson.loads(await response.read())
    return [item["metadata"]["name"] for item in body["items"]]


async def test_a_lost_delete_reaches_no_open_watch_while_lists_and_bookmarks_move_past_it(
    fake_apiserver_factory: Factory,
    fake_clock: FakeClock,
    watch: Callable[..., Awaitable[Stream]],
    session: aiohttp.ClientSession,
) -> None:
    server = await fake_apiserver_factory(clock=fake_clock, bookmark_interval=5.0)
    server.create(pod("a"))
    server.create(pod("b"))
    stream = await watch(
        server, resourceVersion=server.resource_version, allowWatchBookmarks="true"
    )
    await server.wait_for_watchers(1)

    server.faults.drop_watch_events(1, resource="pods")
    server.delete("pods", "default", "a")
    lost_at = server.resource_version
    server.create(pod("c"))
    assert await stream.next() == ("ADDED", "c")
    assert await names(session, server, PODS) == ["b", "c"]
    await fake_clock.advance(5.0)
    assert await stream.next() == ("BOOKMARK", server.resource_version)
    assert int(server.resource_version) > int(lost_at)
    server.delete("pods", "default", "b")  # the fault is spent: this one is heard
    assert await stream.next() == ("DELETED", "b")
    assert [(r.kind, r.detail) for r in server.faults.log] == [
        ("drop_watch_event", f"DELETED default/a at resourceVersion {lost_at}")
    ]


async def test_a_watch_opened_later_from_before_the_loss_never_replays_it(
    fake_apiserver: FakeAPIServer, watch: Callable[..., Awaitable[Stream]]
) -> None:
    fake_apiserver.create(pod("a"))
    before = fake_apiserver.resource_version
    fake_apiserver.faults.drop_watch_events()
    fake_apiserver.delete("pods", "default", "a")
    fake_apiserver.create(pod("b"))
    stream = await watch(fake_apiserver, resourceVersion=before)
    assert await stream.next() == ("ADDED", "b")


async def test_only_count_events_of_the_types_and_resource_asked_for_are_lost(
    fake_apiserver: FakeAPIServer, watch: Callable[..., Awaitable[Stream]]
) -> None:
    start = fake_apiserver.resource_version
    pods = await watch(fake_apiserver, resourceVersion=start)
    configmaps = await watch(fake_apiserver, CONFIGMAPS, resourceVersion=start)
    await fake_apiserver.wait_for_watchers(2)
    fake_apiserver.faults.drop_watch_events(2, resource="pods", types=("ADDED", "MODIFIED"))
    fake_apiserver.create(configmap("x"))  # another resource: heard
    fake_apiserver.create(pod("a"))  # lost
    fake_apiserver.patch("pods", "default", "a", {"metadata": {"labels": {"v": "1"}}})  # lost
    fake_apiserver.create(pod("b"))  # the count is spent: heard
    fake_apiserver.delete("pods", "default", "a")
    assert await configmaps.next() == ("ADDED", "x")
    assert [await pods.next() for _ in range(2)] == [("ADDED", "b"), ("DELETED", "a")]
    assert fake_apiserver.faults.count("drop_watch_event") == 2


async def test_a_streaming_list_after_a_loss_sends_the_stored_state(
    fake_apiserver: FakeAPIServer, watch: Callable[..., Awaitable[Stream]]
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.create(pod("b"))
    fake_apiserver.faults.drop_watch_events()
    fake_apiserver.delete("pods", "default", "a")
    stream = await watch(
        fake_apiserver,
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        allowWatchBookmarks="true",
    )
    assert [await stream.next() for _ in range(2)] == [
        ("ADDED", "b"),
        ("BOOKMARK", fake_apiserver.resource_version),
    ]


@pytest.mark.parametrize(
    ("count", "types", "message"),
    [
        pytest.param(0, ("DELETED",), "count must be at least 1", id="no-count"),
        pytest.param(1, ("BOOKMARK",), "types must be among ADDED, MODIFIED and DELETED", id="bm"),
        pytest.param(1, (), "types must be among ADDED, MODIFIED and DELETED", id="no-types"),
    ],
)
def test_lost_events_are_asked_for_by_count_and_watch_event_type(
    count: int, types: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FakeAPIServer().faults.drop_watch_events(count, types=types)


async def test_clearing_the_faults_disarms_lost_events(
    fake_apiserver: FakeAPIServer, watch: Callable[..., Awaitable[Stream]]
) -> None:
    stream = await watch(fake_apiserver, resourceVersion=fake_apiserver.resource_version)
    await fake_apiserver.wait_for_watchers(1)
    fake_apiserver.faults.drop_watch_events(5)
    fake_apiserver.faults.clear()
    fake_apiserver.create(pod("a"))
    fake_apiserver.delete("pods", "default", "a")
    assert [await stream.next() for _ in range(2)] == [("ADDED", "a"), ("DELETED", "a")]
