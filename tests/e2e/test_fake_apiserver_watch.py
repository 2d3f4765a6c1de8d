"""Watch streams and fault injection of the fake API server, over plain HTTP.

Time-driven behaviour (bookmarks, ``timeoutSeconds``, latency, timed refusal) runs on a
FakeClock; every read is bounded so a regression fails instead of hanging.

Every test runs twice (``tests._support_gzip``): against servers answering as v1.36 does,
and against servers compressing streaming lists as v1.37 does, read by a session that asks
for gzip and decodes nothing itself (the streams are inflated here, member after member).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer, FakeClock
from tests._support_gzip import RawInflater
from tests._support_gzip import compressed as compressed
from tests._support_gzip import fake_apiserver_factory as fake_apiserver_factory
from tests._support_http import status_body
from tests._support_objects import pod_spec

PODS = "/api/v1/namespaces/default/pods"
HEADERS = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
READ_TIMEOUT = 5.0

Factory = Callable[..., Awaitable[FakeAPIServer]]


def pod(name: str, *, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": pod_spec(),
    }


def inflater(response: aiohttp.ClientResponse) -> RawInflater:
    return RawInflater(response.headers.get("Content-Encoding") == "gzip")


class Watch:
    """One open watch response, read line by line (inflated first when compressed)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self._inflater = inflater(response)
        self._buffer = b""

    async def raw_line(self) -> bytes:
        async with asyncio.timeout(READ_TIMEOUT):
            while b"\n" not in self._buffer:
                chunk = await self.response.content.readany()
                if not chunk:
                    line, self._buffer = self._buffer, b""
                    return line
                self._buffer += self._inflater.feed(chunk)
            line, _, self._buffer = self._buffer.partition(b"\n")
            return line + b"\n"

    async def event(self) -> dict[str, Any] | None:
        """The next event, or ``None`` at the end of the stream."""
        line = await self.raw_line()
        if not line:
            return None
        decoded: dict[str, Any] = orjson.loads(line)
        return decoded

    async def events(self, count: int) -> list[tuple[str, str]]:
        """The next ``count`` events as (type, name or resourceVersion) pairs."""
        result: list[tuple[str, str]] = []
        for _ in range(count):
            event = await self.event()
            assert event is not None, f"stream ended after {len(result)} events"
            meta = event["object"]["metadata"]
            result.append((event["type"], meta.get("name") or meta["resourceVersion"]))
        return result

    async def rest(self) -> bytes:
        async with asyncio.timeout(READ_TIMEOUT):
            rest, self._buffer = self._buffer, b""
            return rest + self._inflater.feed(await self.response.read())


async def collect(response: aiohttp.ClientResponse) -> tuple[bytes, Exception | None]:
    """Every byte of the body that arrived (inflated), and the error that ended it (if
    any)."""
    received = b""
    inflate = inflater(response)
    try:
        async with asyncio.timeout(READ_TIMEOUT):
            async for chunk in response.content.iter_any():
                received += inflate.feed(chunk)
    except aiohttp.ClientPayloadError as exc:
        return received, exc
    return received, None


@pytest.fixture
async def session(compressed: bool) -> AsyncIterator[aiohttp.ClientSession]:
    """Requests as aiohttp makes them (asking for gzip, decoding it) or, against
    compressing servers, asking for gzip and decoding nothing."""
    if compressed:
        headers = {**HEADERS, "Accept-Encoding": "gzip"}
        async with aiohttp.ClientSession(headers=headers, auto_decompress=False) as raw:
            yield raw
        return
    async with aiohttp.ClientSession(headers=HEADERS) as client_session:
        yield client_session


@pytest.fixture
async def watch(
    session: aiohttp.ClientSession, fake_apiserver: FakeAPIServer
) -> AsyncIterator[Callable[..., Awaitable[Watch]]]:
    """Open watches on ``fake_apiserver`` (or ``server=``); all closed after the test."""
    responses: list[aiohttp.ClientResponse] = []

    async def open_watch(
        path: str = PODS, *, server: FakeAPIServer | None = None, **params: str
    ) -> Watch:
        target = server or fake_apiserver
        response = await session.get(target.url + path, params={"watch": "true", **params})
        responses.append(response)
        return Watch(response)

    yield open_watch
    for response in responses:
        response.close()


WatchFactory = Callable[..., Awaitable[Watch]]


# -- events -----------------------------------------------------------------------------------


async def test_watch_from_a_version_streams_later_changes_with_full_objects(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    fake_apiserver.create(pod("a"))
    rv = fake_apiserver.resource_version
    fake_apiserver.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    stream = await watch(resourceVersion=rv)
    first = await stream.event()
    assert first is not None
    assert first["type"] == "MODIFIED"
    assert first["object"]["apiVersion"] == "v1"
    assert first["object"]["kind"] == "Pod"
    assert first["object"]["metadata"]["labels"] == {"x": "1"}
    fake_apiserver.delete("pods", "default", "a")
    deleted = await stream.event()
    assert deleted is not None
    assert deleted["type"] == "DELETED"
    assert deleted["object"]["metadata"]["resourceVersion"] == fake_apiserver.resource_version
    fake_apiserver.create(pod("b"))
    assert await stream.events(1) == [("ADDED", "b")]


async def test_a_deleted_pod_answers_with_the_version_its_deleted_event_carries(
    fake_apiserver: FakeAPIServer, watch: WatchFactory, session: aiohttp.ClientSession
) -> None:
    fake_apiserver.create(pod("a"))
    stream = await watch(resourceVersion=fake_apiserver.resource_version)
    async with session.delete(fake_apiserver.url + PODS + "/a") as response:
        assert response.status == 200
        answer = await response.json()
    event = await stream.event()
    assert event is not None
    assert event["type"] == "DELETED"
    assert answer["kind"] == "Pod"
    assert answer["metadata"]["resourceVersion"] == event["object"]["metadata"]["resourceVersion"]
    assert answer["metadata"]["uid"] == event["object"]["metadata"]["uid"]


async def test_watch_without_a_version_starts_with_the_current_state(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.create(pod("b"))
    for version in ({}, {"resourceVersion": "0"}):
        stream = await watch(**version)
        assert await stream.events(2) == [("ADDED", "a"), ("ADDED", "b")]
    fake_apiserver.create(pod("c"))
    assert await stream.events(1) == [("ADDED", "c")]


def compacted_version(server: FakeAPIServer) -> str:
    """A resourceVersion the server's history no longer holds."""
    server.create(pod("a"))
    old = server.resource_version
    server.create(pod("b"))
    server.compact()
    return str(int(old) - 1)


async def test_watch_from_a_compacted_version_gets_one_error_event_in_a_200_stream(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    old = compacted_version(fake_apiserver)
    stream = await watch(resourceVersion=old)
    assert stream.response.status == 200
    event = await stream.event()
    assert event == {
        "type": "ERROR",
        "object": status_body(
            410, "Expired", f"too old resource version: {old} ({fake_apiserver.resource_version})"
        ),
    }
    assert await stream.event() is None


@pytest.mark.fake_apiserver(expired_watch="status")
async def test_watch_from_a_compacted_version_may_answer_410_expired_on_open(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    old = compacted_version(fake_apiserver)
    stream = await watch(resourceVersion=old)
    assert stream.response.status == 410
    assert orjson.loads(await stream.rest()) == status_body(
        410, "Expired", f"too old resource version: {old} ({fake_apiserver.resource_version})"
    )


@pytest.mark.fake_apiserver(history_size=2)
async def test_history_is_bounded_so_old_versions_expire(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    start = fake_apiserver.resource_version
    for name in ("a", "b", "c"):
        fake_apiserver.create(pod(name))
    expired = await watch(resourceVersion=start)
    assert (await expired.event() or {}).get("type") == "ERROR"
    recent = await watch(resourceVersion=str(int(fake_apiserver.resource_version) - 2))
    assert await recent.events(2) == [("ADDED", "b"), ("ADDED", "c")]


async def test_watch_from_a_future_version_waits_for_it(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    future = int(fake_apiserver.resource_version) + 2
    stream = await watch(resourceVersion=str(future))
    await fake_apiserver.wait_for_watchers(1)
    for name in ("a", "b", "c"):
        fake_apiserver.create(pod(name))
    assert await stream.events(1) == [("ADDED", "c")]


async def test_send_initial_events_ends_with_the_initial_events_end_bookmark(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.create(pod("b"))
    rv = fake_apiserver.resource_version
    stream = await watch(
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        allowWatchBookmarks="true",
    )
    assert await stream.events(2) == [("ADDED", "a"), ("ADDED", "b")]
    assert await stream.event() == {
        "type": "BOOKMARK",
        "object": {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {
                "resourceVersion": rv,
                "annotations": {"k8s.io/initial-events-end": "true"},
            },
        },
    }
    fake_apiserver.create(pod("c"))
    assert await stream.events(1) == [("ADDED", "c")]


WATCH_OPTION_ERRORS = [
    ({"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"}, "allowWatchBookmarks"),
    (
        {"sendInitialEvents": "true", "allowWatchBookmarks": "true"},
        "sendInitialEvents is forbidden",
    ),
    ({"resourceVersionMatch": "NotOlderThan", "resourceVersion": "1"}, "resourceVersionMatch is"),
]


@pytest.mark.parametrize(
    ("params", "fragment"), WATCH_OPTION_ERRORS, ids=["no-bookmarks", "no-match", "match-only"]
)
async def test_invalid_watch_options_answer_422_before_streaming(
    watch: WatchFactory, params: dict[str, str], fragment: str
) -> None:
    stream = await watch(**params)
    assert stream.response.status == 422
    body = orjson.loads(await stream.rest())
    assert body["reason"] == "Invalid"
    assert fragment in body["message"]


async def test_bookmarks_arrive_every_interval_with_only_the_resource_version(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, watch: WatchFactory
) -> None:
    server = await fake_apiserver_factory(clock=fake_clock, bookmark_interval=5.0)
    stream = await watch(
        server=server, resourceVersion=server.resource_version, allowWatchBookmarks="true"
    )
    await fake_clock.wait_for_sleepers(1)
    server.create(pod("a"))
    assert await stream.events(1) == [("ADDED", "a")]
    await fake_clock.wait_for_sleepers(1)
    await fake_clock.advance(5.0)
    assert await stream.event() == {
        "type": "BOOKMARK",
        "object": {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": server.resource_version},
        },
    }


async def test_no_bookmarks_unless_allowed(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, watch: WatchFactory
) -> None:
    server = await fake_apiserver_factory(clock=fake_clock, bookmark_interval=1.0)
    stream = await watch(server=server, resourceVersion=server.resource_version, timeoutSeconds="3")
    await fake_clock.wait_for_sleepers(1)
    await fake_clock.advance(3.0)
    assert await stream.rest() == b""


async def test_timeout_seconds_ends_the_stream_cleanly(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, watch: WatchFactory
) -> None:
    server = await fake_apiserver_factory(clock=fake_clock)
    stream = await watch(
        server=server, resourceVersion=server.resource_version, timeoutSeconds="30"
    )
    await fake_clock.wait_for_sleepers(1)
    server.create(pod("a"))
    assert await stream.events(1) == [("ADDED", "a")]
    await fake_clock.wait_for_sleepers(1)
    await fake_clock.advance(29.0)
    server.create(pod("b"))
    assert await stream.events(1) == [("ADDED", "b")]
    await fake_clock.wait_for_sleepers(1)
    await fake_clock.advance(1.0)
    assert await stream.event() is None
    await fake_clock.settle()
    assert server.watch_count == 0


async def test_selector_changes_turn_updates_into_added_and_deleted(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    fake_apiserver.create(pod("a", app="web"))
    stream = await watch(resourceVersion=fake_apiserver.resource_version, labelSelector="app=web")
    fake_apiserver.create(pod("b", app="db"))
    fake_apiserver.patch("pods", "default", "a", {"metadata": {"labels": {"app": "db"}}})
    fake_apiserver.patch("pods", "default", "b", {"metadata": {"labels": {"app": "web"}}})
    fake_apiserver.patch("pods", "default", "b", {"metadata": {"labels": {"v": "2"}}})
    assert await stream.events(3) == [("DELETED", "a"), ("ADDED", "b"), ("MODIFIED", "b")]


async def test_watch_filters_by_namespace_and_field_selector(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    rv = fake_apiserver.resource_version
    by_name = await watch(resourceVersion=rv, fieldSelector="metadata.name=b")
    everywhere = await watch("/api/v1/pods", resourceVersion=rv)
    fake_apiserver.create_namespace("other")
    fake_apiserver.create(pod("a", namespace="other"))
    fake_apiserver.create(pod("a"))
    fake_apiserver.create(pod("b"))
    assert await by_name.events(1) == [("ADDED", "b")]
    assert await everywhere.events(3) == [("ADDED", "a"), ("ADDED", "a"), ("ADDED", "b")]


async def test_restart_with_history_reset_cuts_watches_and_expires_old_versions(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    fake_apiserver.create(pod("a"))
    rv = fake_apiserver.resource_version
    stream = await watch(resourceVersion=rv)
    await fake_apiserver.wait_for_watchers(1)
    fake_apiserver.create(pod("b"))
    await fake_apiserver.restart(reset_history=True)
    with pytest.raises(aiohttp.ClientPayloadError):
        await stream.rest()
    again = await watch(resourceVersion=rv)
    assert again.response.status == 200
    event = await again.event()
    assert event is not None
    assert (event["type"], event["object"]["reason"]) == ("ERROR", "Expired")


# -- faults -----------------------------------------------------------------------------------


async def test_drop_watch_after_n_events_ends_the_stream_cleanly(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    for name in ("a", "b", "c"):
        fake_apiserver.create(pod(name))
    fake_apiserver.faults.drop_watch_after(2)
    stream = await watch()
    assert await stream.events(2) == [("ADDED", "a"), ("ADDED", "b")]
    assert await stream.event() is None
    assert [f.kind for f in fake_apiserver.faults.log] == ["drop_watch"]
    # Only the next watch is affected.
    assert await (await watch()).events(3) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]


async def test_a_watch_ending_before_its_fault_fires_hands_the_fault_to_the_next_watch(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, watch: WatchFactory
) -> None:
    server = await fake_apiserver_factory(clock=fake_clock)
    server.create(pod("a"))
    server.faults.drop_watch_after(1)
    # The first watch takes the fault but ends (its timeout) without sending a line.
    first = await watch(server=server, resourceVersion=server.resource_version, timeoutSeconds="2")
    await fake_clock.wait_for_sleepers(1)
    await fake_clock.advance(2.0)
    assert await first.rest() == b""
    assert server.faults.count("drop_watch") == 0
    # The fault is still owed: the next watch is dropped after one line.
    second = await watch(server=server)
    assert await second.events(1) == [("ADDED", "a")]
    assert await second.event() is None
    assert server.faults.count("drop_watch") == 1


async def test_abrupt_drop_breaks_the_chunked_body(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.faults.drop_watch_after(1, abrupt=True)
    stream = await watch()
    assert await stream.events(1) == [("ADDED", "a")]
    with pytest.raises(aiohttp.ClientPayloadError):
        await stream.raw_line()


async def test_close_mid_line_sends_half_a_line_then_breaks(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.create(pod("b"))
    fake_apiserver.faults.close_mid_line(after=1)
    stream = await watch()
    assert await stream.events(1) == [("ADDED", "a")]
    with pytest.raises(aiohttp.ClientPayloadError):
        await stream.rest()
    assert fake_apiserver.faults.count("close_mid_line") == 1


async def test_close_mid_line_leaves_a_truncated_line(
    fake_apiserver: FakeAPIServer, session: aiohttp.ClientSession
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.faults.close_mid_line()
    async with session.get(fake_apiserver.url + PODS, params={"watch": "1"}) as response:
        received, error = await collect(response)
    assert isinstance(error, aiohttp.ClientPayloadError)
    assert received
    assert not received.endswith(b"\n")
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(received)


async def test_garbage_line_is_sent_and_the_stream_carries_on(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.faults.garbage_line(after=1)
    stream = await watch()
    assert await stream.events(1) == [("ADDED", "a")]
    garbage = await stream.raw_line()
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(garbage)
    fake_apiserver.create(pod("b"))
    assert await stream.events(1) == [("ADDED", "b")]


async def test_stalled_watch_sends_no_bytes_until_the_server_stops(
    fake_apiserver_factory: Factory, session: aiohttp.ClientSession
) -> None:
    server = await fake_apiserver_factory()
    server.create(pod("a"))
    server.faults.stall_watch()
    async with session.get(server.url + PODS, params={"watch": "1"}) as response:
        await server.faults.wait_for("stall_watch")
        server.create(pod("b"))
        await server.close()
        assert await response.read() == b""


async def test_freeze_silences_the_open_watches_while_later_ones_work(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, watch: WatchFactory
) -> None:
    server = await fake_apiserver_factory(clock=fake_clock, bookmark_interval=5.0)
    server.create(pod("a"))
    rv = server.resource_version
    frozen = await watch(
        server=server, resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds="30"
    )
    await server.wait_for_watchers(1)
    configmaps = await watch(
        "/api/v1/namespaces/default/configmaps", server=server, resourceVersion=rv
    )
    await server.wait_for_watchers(2)

    assert server.faults.freeze_watches(resource="pods") == 1
    server.create(pod("b"))
    await fake_clock.advance(60.0)  # past two bookmarks and timeoutSeconds
    fresh = await watch(server=server, resourceVersion=rv)
    assert await fresh.events(1) == [("ADDED", "b")]
    server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    assert await configmaps.events(1) == [("ADDED", "c")]

    frozen.response.close()  # the client gives up on the silent stream
    await server.faults.wait_for("frozen_watch_closed")
    assert [(r.kind, r.path) for r in server.faults.log] == [
        ("freeze_watch", PODS),
        ("frozen_watch_closed", PODS),
    ]


async def test_a_frozen_watch_sends_nothing_and_never_ends_cleanly(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, session: aiohttp.ClientSession
) -> None:
    server = await fake_apiserver_factory(clock=fake_clock, bookmark_interval=1.0)
    params = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "5"}
    async with session.get(server.url + PODS, params=params) as response:
        await server.wait_for_watchers(1)
        assert server.faults.freeze_watches() == 1
        server.create(pod("a"))
        await fake_clock.advance(10.0)
        await server.close()
        received, error = await collect(response)
    assert received == b""
    assert isinstance(error, aiohttp.ClientPayloadError)


def test_the_default_bookmark_interval_is_kube_apiservers_minute() -> None:
    assert FakeAPIServer().bookmark_interval == 60.0


async def test_watch_faults_can_target_one_resource(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.faults.drop_watch_after(0, resource="configmaps")
    assert await (await watch()).events(1) == [("ADDED", "a")]
    assert await (await watch("/api/v1/namespaces/default/configmaps")).event() is None


@pytest.mark.parametrize(
    ("code", "reason"),
    [(429, "TooManyRequests"), (500, "InternalError"), (503, "ServiceUnavailable")],
)
async def test_fail_next_answers_k_requests_with_a_status_then_recovers(
    fake_apiserver: FakeAPIServer, session: aiohttp.ClientSession, code: int, reason: str
) -> None:
    fake_apiserver.faults.fail_next(2, status=code, retry_after=3)
    for _ in range(2):
        async with session.get(fake_apiserver.url + PODS) as response:
            assert response.status == code
            assert response.headers["Retry-After"] == "3"
            body = orjson.loads(await response.read())
            assert body["reason"] == reason
            assert body["code"] == code
            assert body["details"] == {"retryAfterSeconds": 3}
    async with session.get(fake_apiserver.url + PODS) as response:
        assert response.status == 200
    assert [f.detail for f in fake_apiserver.faults.log] == [f"{code} {reason}"] * 2


async def test_fail_next_can_target_a_resource_and_verb(
    fake_apiserver: FakeAPIServer, session: aiohttp.ClientSession
) -> None:
    fake_apiserver.faults.fail_next(1, status=500, resource="pods", verb="watch")
    async with session.get(fake_apiserver.url + PODS) as response:
        assert response.status == 200
    async with session.get(
        fake_apiserver.url + "/api/v1/namespaces/default/configmaps",
        params={"watch": "1", "timeoutSeconds": "0"},
    ) as response:
        assert response.status == 200
    async with session.get(fake_apiserver.url + PODS, params={"watch": "1"}) as response:
        assert response.status == 500


async def test_latency_delays_requests_on_the_server_clock(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, session: aiohttp.ClientSession
) -> None:
    server = await fake_apiserver_factory(clock=fake_clock)
    server.faults.latency(2.0)

    async def get() -> int:
        async with session.get(server.url + PODS) as response:
            return response.status

    request = asyncio.ensure_future(get())
    await fake_clock.wait_for_sleepers(1)
    assert not request.done()
    await fake_clock.advance(2.0)
    async with asyncio.timeout(READ_TIMEOUT):
        assert await request == 200
    assert server.faults.count("latency") == 1
    server.faults.latency(0)
    assert await get() == 200
    assert server.faults.count("latency") == 1


async def test_refused_connections_fail_to_connect_until_accepted_again(
    fake_apiserver: FakeAPIServer, session: aiohttp.ClientSession
) -> None:
    await fake_apiserver.faults.refuse_connections()
    with pytest.raises(aiohttp.ClientConnectorError) as caught:
        async with session.get(fake_apiserver.url + PODS):
            pass
    assert isinstance(caught.value.os_error, ConnectionRefusedError)
    await fake_apiserver.faults.accept_connections()
    async with session.get(fake_apiserver.url + PODS) as response:
        assert response.status == 200
    assert [f.kind for f in fake_apiserver.faults.log] == [
        "refuse_connections",
        "accept_connections",
    ]


async def test_timed_refusal_ends_on_the_server_clock(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, session: aiohttp.ClientSession
) -> None:
    server = await fake_apiserver_factory(clock=fake_clock)
    await server.faults.refuse_connections(10.0)
    await fake_clock.wait_for_sleepers(1)
    with pytest.raises(aiohttp.ClientConnectorError):
        async with session.get(server.url + PODS):
            pass
    await fake_clock.advance(10.0)
    await server.faults.wait_for("accept_connections")
    async with session.get(server.url + PODS) as response:
        assert response.status == 200


async def test_refusing_connections_cuts_open_watches(
    fake_apiserver: FakeAPIServer, watch: WatchFactory
) -> None:
    stream = await watch(resourceVersion=fake_apiserver.resource_version)
    await fake_apiserver.wait_for_watchers(1)
    await fake_apiserver.faults.refuse_connections()
    with pytest.raises(aiohttp.ClientPayloadError):
        await stream.raw_line()
    await fake_apiserver.faults.accept_connections()


async def test_clear_disarms_pending_faults(
    fake_apiserver: FakeAPIServer, session: aiohttp.ClientSession
) -> None:
    fake_apiserver.faults.fail_next(5)
    fake_apiserver.faults.drop_watch_after(0)
    fake_apiserver.faults.clear()
    async with session.get(fake_apiserver.url + PODS) as response:
        assert response.status == 200
    assert fake_apiserver.faults.log == []


@pytest.mark.slow
@pytest.mark.fake_apiserver(history_size=60_000)
async def test_ten_thousand_pods_list_and_a_fifty_thousand_event_watch_arrive_whole(
    fake_apiserver: FakeAPIServer, session: aiohttp.ClientSession, watch: WatchFactory
) -> None:
    for i in range(10_000):
        fake_apiserver.create(pod(f"p{i:05d}", app=f"a{i % 7}"))
    async with session.get(fake_apiserver.url + PODS) as response:
        listed = orjson.loads(await response.read())
    assert len(listed["items"]) == 10_000
    start = fake_apiserver.resource_version
    objects = fake_apiserver.objects("pods")
    for i in range(50_000):
        obj = objects[i % 10_000]
        obj["metadata"]["labels"]["generation"] = str(i)
        obj["metadata"].pop("resourceVersion", None)
        fake_apiserver.update(obj)
    stream = await watch(resourceVersion=start)
    lines = 0
    async with asyncio.timeout(60):
        async for chunk in stream.response.content.iter_any():
            lines += chunk.count(b"\n")
            if lines >= 50_000:
                break
    assert lines == 50_000


async def test_a_client_gone_before_its_410_is_written_is_not_logged_as_a_server_error(
    fake_apiserver: FakeAPIServer,
    session: aiohttp.ClientSession,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_apiserver.create(pod("a"))
    old = fake_apiserver.resource_version
    fake_apiserver.create(pod("b"))
    fake_apiserver.compact()
    # The client's connection drops just as the server starts its answer: the first
    # attempt to send the watch's headers fails as it does on a reset socket.
    original = web.StreamResponse.prepare
    dropped: list[str] = []

    async def prepare(self: web.StreamResponse, request: web.BaseRequest) -> Any:
        if request.query.get("watch") and not dropped:
            dropped.append(request.path)
            raise ConnectionResetError("connection reset by peer")
        return await original(self, request)

    monkeypatch.setattr(web.StreamResponse, "prepare", prepare)
    with caplog.at_level(logging.ERROR):
        async with asyncio.timeout(READ_TIMEOUT):
            response = await session.get(
                fake_apiserver.url + PODS,
                params={"watch": "true", "resourceVersion": str(int(old) - 1)},
            )
            response.close()
    assert dropped == [PODS]
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
