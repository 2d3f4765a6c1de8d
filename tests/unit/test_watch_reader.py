"""The watch-stream reader: line framing across any chunking, huge lines, ERROR events,
garbage and truncation, the inactivity deadline, and connections closed on cancel/close."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from aioinformer.client import GVR, Client, ResourceInfo
from aioinformer.client._resource import watch_read_timeout
from aioinformer.config import Config
from aioinformer.errors import (
    AioinformerError,
    ApiError,
    Gone,
    NotFound,
    ServerError,
    TooManyRequests,
    WatchError,
    WatchTimeout,
)
from aioinformer.listwatch import ListOptions, WatchEvent
from aioinformer.watch import WatchStreamDecoder, error_from_watch_status
from tests._support_http import serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

PODS = ResourceInfo(gvr=GVR("", "v1", "pods"), kind="Pod", namespaced=True)


def event(kind: str, name: str, rv: str = "1", **extra: Any) -> dict[str, Any]:
    obj = {"metadata": {"name": name, "resourceVersion": rv}, **extra}
    return {"type": kind, "object": obj}


def line(data: dict[str, Any]) -> bytes:
    return orjson.dumps(data) + b"\n"


STREAM = [event("ADDED", "a"), event("MODIFIED", "b", "2"), event("DELETED", "c", "3")]
STREAM_BYTES = b"".join(line(e) for e in STREAM)


def decode_all(chunks: list[bytes]) -> tuple[list[WatchEvent], WatchStreamDecoder]:
    decoder = WatchStreamDecoder(url="test")
    events: list[WatchEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    return events, decoder


def as_wire(events: list[WatchEvent]) -> list[dict[str, Any]]:
    return [{"type": e.type, "object": e.object} for e in events]


# ----------------------------------------------------------------------------- framing


def split_every(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([STREAM_BYTES], id="one-chunk"),
        pytest.param(split_every(STREAM_BYTES, 1), id="byte-by-byte"),
        pytest.param(split_every(STREAM_BYTES, 7), id="seven-byte-chunks"),
        pytest.param(
            [line(STREAM[0])[:-1], b"\n" + line(STREAM[1]), line(STREAM[2])], id="newline-leads"
        ),
        pytest.param([line(STREAM[0]), b"", line(STREAM[1]) + line(STREAM[2])], id="empty-chunk"),
        pytest.param(
            [b"\n\n" + line(STREAM[0]) + b"\r\n" + line(STREAM[1]), line(STREAM[2])],
            id="blank-lines",
        ),
    ],
)
def test_events_are_framed_the_same_whatever_the_chunking(chunks: list[bytes]) -> None:
    events, decoder = decode_all(chunks)
    decoder.finish()
    assert decoder.failure is None
    assert as_wire(events) == STREAM


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM_BYTES)), max_size=12))
def test_any_split_points_give_the_same_events(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(STREAM_BYTES)]
    chunks = [STREAM_BYTES[a:b] for a, b in itertools.pairwise(points)]
    events, decoder = decode_all(chunks)
    decoder.finish()
    assert as_wire(events) == STREAM


def test_a_three_megabyte_line_passes_in_many_chunks() -> None:
    big = event("ADDED", "big", data={"blob": "x" * (3 * 1024 * 1024)})
    events, decoder = decode_all(split_every(line(big) + line(STREAM[0]), 64 * 1024))
    decoder.finish()
    assert as_wire(events) == [big, STREAM[0]]


def test_events_are_plain_dicts_typed_by_their_wire_string() -> None:
    events, _ = decode_all([STREAM_BYTES])
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(type(e.object) is dict for e in events)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        pytest.param(b"{not json\n", "not JSON", id="garbage"),
        pytest.param(b'["type", "object"]\n', "not an event", id="array"),
        pytest.param(b'{"type": "ADDED"}\n', "not an event", id="no-object"),
        pytest.param(b'{"type": "ADDED", "object": [1]}\n', "malformed", id="object-not-a-dict"),
        pytest.param(b'{"type": 3, "object": {}}\n', "malformed", id="type-not-a-string"),
    ],
)
def test_bad_lines_fail_with_watch_error_after_the_good_ones(bad: bytes, message: str) -> None:
    events, decoder = decode_all([line(STREAM[0]) + bad + line(STREAM[1])])
    assert as_wire(events) == [STREAM[0]]
    assert isinstance(decoder.failure, WatchError)
    assert message in str(decoder.failure)
    assert list(decoder.feed(line(STREAM[2]))) == []


def test_garbage_line_content_is_not_quoted_in_the_error() -> None:
    _, decoder = decode_all([b'{"type":"ADDED","object":{"data":{"password":"hunter2"}}\n'])
    assert decoder.failure is not None
    assert "hunter2" not in str(decoder.failure)


def test_body_ending_mid_line_is_a_truncation() -> None:
    events, decoder = decode_all([line(STREAM[0]) + line(STREAM[1])[:20]])
    assert as_wire(events) == [STREAM[0]]
    with pytest.raises(WatchError, match="middle of a line"):
        decoder.finish()


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(
            {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
            Gone,
            id="410-expired",
        ),
        pytest.param({"kind": "Status", "code": 410, "reason": "Gone"}, Gone, id="410-gone"),
        pytest.param(
            {"kind": "Status", "code": 500, "reason": "InternalError"}, ServerError, id="500"
        ),
        pytest.param(
            {"kind": "Status", "code": 429, "details": {"retryAfterSeconds": 3}},
            TooManyRequests,
            id="429",
        ),
        pytest.param({"code": 404, "reason": "NotFound"}, NotFound, id="code-without-kind"),
    ],
)
def test_error_events_become_the_matching_api_error(
    status: dict[str, Any], expected: type[ApiError]
) -> None:
    events, decoder = decode_all([line(STREAM[0]) + line({"type": "ERROR", "object": status})])
    assert as_wire(events) == [STREAM[0]]
    assert type(decoder.failure) is expected
    assert isinstance(decoder.failure, ApiError)
    assert decoder.failure.code == status["code"]


def test_error_event_without_a_status_is_a_watch_error() -> None:
    error = error_from_watch_status({"message": "no code"}, url="u")
    assert type(error) is WatchError


# ----------------------------------------------------------------------------- over HTTP


class WatchServer:
    """Serves ``/api/v1/namespaces/default/pods?watch=1`` from a script of writes."""

    def __init__(self) -> None:
        self.app = web.Application()
        self.app.router.add_get("/api/v1/namespaces/default/pods", self._watch)
        self.writes: list[bytes] = []
        self.then: Callable[[], Any] | None = None
        self.queries: list[dict[str, str]] = []
        self.accepts: list[str] = []
        self.disconnected = asyncio.Event()
        self.status = 200

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        self.queries.append(dict(request.query))
        self.accepts.append(request.headers.get("Accept", ""))
        if self.status != 200:
            body = {"kind": "Status", "code": self.status, "reason": "Expired", "message": "old"}
            return web.Response(
                body=orjson.dumps(body), status=self.status, content_type="application/json"
            )
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        try:
            for chunk in self.writes:
                await response.write(chunk)
            if self.then is not None:
                await self.then()
        finally:
            if request.transport is None or request.transport.is_closing():
                self.disconnected.set()
        return response


@pytest.fixture
async def watch_server() -> AsyncIterator[tuple[WatchServer, Client]]:
    server = WatchServer()
    async with serve(server.app) as url, Client(Config(host=url)) as client:
        yield server, client


async def collect(client: Client, **kwargs: Any) -> list[dict[str, Any]]:
    pods = client.resource(PODS, "default")
    seen: list[dict[str, Any]] = []
    async with contextlib.aclosing(pods.watch(ListOptions(resource_version="5"), **kwargs)) as it:
        async for ev in it:
            seen.append({"type": ev.type, "object": ev.object})
    return seen


async def test_watch_streams_events_and_sends_watch_query(
    watch_server: tuple[WatchServer, Client],
) -> None:
    server, client = watch_server
    server.writes = [STREAM_BYTES[:10], STREAM_BYTES[10:]]
    assert await collect(client) == STREAM
    assert server.queries == [{"resourceVersion": "5", "watch": "1"}]


async def test_watch_passes_a_three_megabyte_object(
    watch_server: tuple[WatchServer, Client],
) -> None:
    server, client = watch_server
    big = event("MODIFIED", "big", data={"blob": "y" * (3 * 1024 * 1024)})
    payload = line(big)
    server.writes = [payload[:1000], payload[1000:], line(STREAM[0])]
    assert await collect(client) == [big, STREAM[0]]


async def test_watch_error_event_raises_gone(watch_server: tuple[WatchServer, Client]) -> None:
    server, client = watch_server
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    server.writes = [line(STREAM[0]) + line({"type": "ERROR", "object": status})]
    pods = client.resource(PODS, "default")
    seen: list[str] = []

    async def consume() -> None:
        async with contextlib.aclosing(pods.watch(ListOptions())) as events:
            async for ev in events:
                seen.append(ev.object["metadata"]["name"])

    with pytest.raises(Gone, match="too old"):
        await consume()
    assert seen == ["a"]


async def test_watch_refused_with_a_status_raises_before_any_event(
    watch_server: tuple[WatchServer, Client],
) -> None:
    server, client = watch_server
    server.status = 410
    with pytest.raises(Gone):
        await collect(client)


async def test_watch_garbage_line_raises_watch_error(
    watch_server: tuple[WatchServer, Client],
) -> None:
    server, client = watch_server
    server.writes = [line(STREAM[0]), b"<html>oops</html>\n"]
    with pytest.raises(WatchError, match="not JSON"):
        await collect(client)


async def test_watch_body_cut_mid_line_raises_watch_error(
    watch_server: tuple[WatchServer, Client],
) -> None:
    server, client = watch_server
    server.writes = [line(STREAM[0]), line(STREAM[1])[:15]]
    with pytest.raises(WatchError, match="middle of a line"):
        await collect(client)


async def test_silent_watch_raises_watch_timeout(
    watch_server: tuple[WatchServer, Client],
) -> None:
    server, client = watch_server
    server.writes = [line(STREAM[0])]
    server.then = asyncio.Event().wait  # then silence, connection held open
    seen: list[str] = []
    pods = client.resource(PODS, "default")

    async def consume() -> None:
        async with contextlib.aclosing(pods.watch(ListOptions(), inactivity_timeout=0.2)) as events:
            async for ev in events:
                seen.append(ev.type)

    # The outer bound only turns a deadline that never fires into a failure, not a hang.
    async with asyncio.timeout(10):
        with pytest.raises(WatchTimeout):
            await consume()
    assert seen == ["ADDED"]
    async with asyncio.timeout(10):
        await server.disconnected.wait()


async def test_cancelling_the_consumer_closes_the_connection(
    watch_server: tuple[WatchServer, Client],
) -> None:
    server, client = watch_server
    server.writes = [line(STREAM[0])]
    server.then = asyncio.Event().wait
    first = asyncio.Event()
    pods = client.resource(PODS, "default")

    async def consume() -> None:
        async for _ in pods.watch(ListOptions()):
            first.set()

    task = asyncio.create_task(consume())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with asyncio.timeout(10):
        await server.disconnected.wait()
    assert client.session is not None
    connector = client.session.connector
    assert connector is not None
    assert len(connector._acquired) == 0  # nothing left checked out of the pool


async def test_closing_the_generator_closes_the_connection(
    watch_server: tuple[WatchServer, Client],
) -> None:
    server, client = watch_server
    server.writes = [STREAM_BYTES]
    server.then = asyncio.Event().wait
    events = client.resource(PODS, "default").watch(ListOptions())
    first = await anext(events)
    assert first.type == "ADDED"
    await events.aclose()
    async with asyncio.timeout(10):
        await server.disconnected.wait()


@pytest.mark.parametrize(
    ("explicit", "configured", "expected"),
    [
        pytest.param(None, None, None, id="none-by-default"),
        pytest.param(5.0, None, 5.0, id="the-watch-asks"),
        pytest.param(None, 12.0, 12.0, id="the-client-asks"),
        pytest.param(5.0, 12.0, 5.0, id="the-watch-wins-over-the-client"),
    ],
)
def test_a_watch_has_a_read_deadline_only_when_one_is_asked_for(
    explicit: float | None, configured: float | None, expected: float | None
) -> None:
    assert watch_read_timeout(explicit, configured) == expected


async def silent_watch(**options: Any) -> tuple[list[str], BaseException | None]:
    """One event, then a connection held open in silence for 0.3 s, watched by a
    client built with ``options``: the events seen and what ended the watch (``None``
    when it was still open after that). The silence is timed from the first event, so a
    slow connect on a loaded machine does not eat into it."""
    server = WatchServer()
    server.writes = [line(STREAM[0])]
    server.then = asyncio.Event().wait
    seen: list[str] = []
    async with serve(server.app) as url, Client(Config(host=url), **options) as client:
        pods = client.resource(PODS, "default")
        async with contextlib.aclosing(pods.watch(ListOptions(timeout_seconds=1))) as events:
            stream = aiter(events)
            try:
                async with asyncio.timeout(10):
                    seen.append((await anext(stream)).type)
                async with asyncio.timeout(0.3):
                    async for ev in stream:
                        seen.append(ev.type)
            except TimeoutError:
                return seen, None
            except WatchTimeout as exc:
                return seen, exc
    return seen, None


async def test_a_silent_watch_stays_open_past_the_request_timeout_by_default() -> None:
    # The request timeout does not bound the read (timeoutSeconds is the server's to keep,
    # and the reflector bounds the silence itself), here six times over.
    seen, ended = await silent_watch(request_timeout=0.05)
    assert (seen, ended) == (["ADDED"], None)


async def test_the_clients_watch_inactivity_timeout_still_applies_when_set() -> None:
    seen, ended = await silent_watch(request_timeout=30.0, watch_inactivity_timeout=0.1)
    assert seen == ["ADDED"]
    assert isinstance(ended, WatchTimeout)


async def test_connection_dropped_mid_stream_raises_watch_error(
    watch_server: tuple[WatchServer, Client],
) -> None:
    server, client = watch_server
    server.writes = [line(STREAM[0]), line(STREAM[1])[:15]]
    captured: list[web.Request] = []

    async def abort() -> None:
        # No terminating chunk: the body is cut, as when an apiserver or proxy dies.
        transport = captured[0].transport
        assert transport is not None
        transport.abort()
        await asyncio.Event().wait()

    original = server._watch

    async def capturing(request: web.Request) -> web.StreamResponse:
        captured.append(request)
        return await original(request)

    server._watch = capturing  # type: ignore[method-assign]
    server.then = abort
    seen: list[str] = []

    async def consume() -> None:
        async for ev in client.resource(PODS, "default").watch(ListOptions()):
            seen.append(ev.type)

    with pytest.raises(WatchError):
        await consume()
    assert seen == ["ADDED"]


async def test_watch_sends_every_list_option_and_metadata_accept(
    watch_server: tuple[WatchServer, Client],
) -> None:
    server, client = watch_server
    server.writes = [line({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}})]
    options = ListOptions(
        resource_version="7",
        timeout_seconds=290,
        allow_watch_bookmarks=True,
        label_selector="app=web",
        field_selector="metadata.name=x",
    )
    pods = client.resource(PODS, "default", metadata_only=True)
    events = [ev async for ev in pods.watch(options)]
    assert [(ev.type, ev.object["metadata"]["resourceVersion"]) for ev in events] == [
        ("BOOKMARK", "9")
    ]
    assert server.queries == [
        {
            "resourceVersion": "7",
            "timeoutSeconds": "290",
            "allowWatchBookmarks": "true",
            "labelSelector": "app=web",
            "fieldSelector": "metadata.name=x",
            "watch": "1",
        }
    ]
    assert server.accepts[0].startswith("application/json;as=PartialObjectMetadata;")


# ------------------------------------------------------------------------- line size cap

LIMIT = 100
SMALL = line(event("ADDED", "a"))  # well under LIMIT bytes
BIG = line(event("ADDED", "b" * 100))  # over LIMIT bytes

assert len(SMALL) <= LIMIT < len(BIG) - 1


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([SMALL + BIG], id="whole-line-in-one-chunk"),
        pytest.param([SMALL, BIG[:40], BIG[40:]], id="line-across-two-chunks"),
        pytest.param([SMALL, *split_every(BIG[:-1], 5)], id="unfinished-line-in-small-chunks"),
        pytest.param([SMALL + BIG[:10], BIG[10:]], id="line-started-after-an-event"),
    ],
)
def test_a_line_over_the_limit_fails_naming_its_size_and_the_limit(chunks: list[bytes]) -> None:
    decoder = WatchStreamDecoder(url="test", max_line_bytes=LIMIT)
    events: list[WatchEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    assert [e.object["metadata"]["name"] for e in events] == ["a"]
    assert isinstance(decoder.failure, WatchError)
    assert f"limit of {LIMIT} bytes" in str(decoder.failure)
    assert "bbbb" not in str(decoder.failure)
    decoder.finish()  # nothing buffered is reported as a truncated line


def test_an_unfinished_line_is_refused_as_soon_as_it_passes_the_limit() -> None:
    decoder = WatchStreamDecoder(url="test", max_line_bytes=LIMIT)
    assert list(decoder.feed(b"x" * LIMIT)) == []
    # Read into a declared local: mypy would keep decoder.failure narrowed to None past the
    # feed() that sets it.
    failure: AioinformerError | None = decoder.failure
    assert failure is None
    assert list(decoder.feed(b"x")) == []
    assert isinstance(decoder.failure, WatchError)
    assert f"at least {LIMIT + 1} bytes" in str(decoder.failure)


def test_a_line_exactly_at_the_limit_is_decoded() -> None:
    body = line(event("ADDED", "c"))[:-1]
    decoder = WatchStreamDecoder(url="test", max_line_bytes=len(body))
    events = [*decoder.feed(body[:9]), *decoder.feed(body[9:] + b"\n"), *decoder.feed(body)]
    events.extend(decoder.feed(b"\n"))
    assert [e.object["metadata"]["name"] for e in events] == ["c", "c"]
    assert decoder.failure is None


def test_the_line_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_line_bytes"):
        WatchStreamDecoder(max_line_bytes=0)


async def test_the_client_holds_watch_lines_to_its_max_object_bytes() -> None:
    async def watch(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(SMALL + BIG)
        await asyncio.Event().wait()
        return response

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/default/pods", watch)
    async with serve(app) as url, Client(Config(host=url, token="t"), max_object_bytes=LIMIT) as c:
        stream = c.resource(PODS, namespace="default").watch(ListOptions())
        async with contextlib.aclosing(stream):
            async with asyncio.timeout(5):
                first = await anext(stream)
                with pytest.raises(WatchError, match=f"limit of {LIMIT} bytes"):
                    await anext(stream)
    assert first.object["metadata"]["name"] == "a"
