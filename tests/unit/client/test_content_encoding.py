"""Content codings over HTTP: what each request asks for, and gzip bodies of many members
read whole.

kube-apiserver 1.37 sends a streaming list to a client that accepts gzip as one gzip member
per event; aiohttp before 3.14 reads such a body only up to the end of the first member and
drops the rest without an error. The client therefore asks watches for no compression,
turns aiohttp's decompression off and inflates gzip itself: these tests hold both, through
the public client only, on a loopback server that answers as a compressing server (or
proxy) would, whatever was asked. The reader itself is tested in ``test_gzip_reader.py``.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from aiohttp import web

from aioinformer.client import GVR, Client, ResourceInfo
from aioinformer.codec import codec_for
from aioinformer.config import Config
from aioinformer.errors import Gone, TransportError, WatchError
from aioinformer.listwatch import ListOptions, WatchStreamBase
from tests._support_gzip import CUT, LINES, PER_EVENT, member
from tests._support_http import serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from aioinformer.codec import CacheMode

PODS = ResourceInfo(gvr=GVR("", "v1", "pods"), kind="Pod", namespaced=True)
PATH = "/api/v1/namespaces/default/pods"


class CompressingServer:
    """Answers LISTs and watches of default/pods, compressed as told whatever is asked,
    and records the ``Accept-Encoding`` of every request."""

    def __init__(self) -> None:
        self.app = web.Application()
        self.app.router.add_get(PATH, self._handle)
        self.asked: list[tuple[str, str]] = []
        self.list_body = b""
        self.list_status = 200
        self.watch_writes: list[bytes] = []
        self.coding: str | None = "gzip"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.coding is not None:
            headers["Content-Encoding"] = self.coding
        return headers

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        verb = "watch" if request.query.get("watch") == "1" else "list"
        self.asked.append((verb, request.headers.get("Accept-Encoding", "")))
        if verb == "list":
            return web.Response(
                body=self.list_body, status=self.list_status, headers=self._headers()
            )
        response = web.StreamResponse(headers=self._headers())
        response.enable_chunked_encoding()
        await response.prepare(request)
        for chunk in self.watch_writes:
            await response.write(chunk)
        await response.write_eof()
        return response


@pytest.fixture
async def compressing() -> AsyncIterator[tuple[CompressingServer, Callable[..., Client]]]:
    server = CompressingServer()
    async with serve(server.app) as url, contextlib.AsyncExitStack() as stack:

        def client(**options: Any) -> Client:
            made = Client(Config(host=url, token="t"), **options)
            stack.push_async_callback(made.close)
            return made

        yield server, client


def pod_list(count: int) -> bytes:
    items = [{"metadata": {"name": f"pod-{i}", "resourceVersion": "7"}} for i in range(count)]
    return orjson.dumps({"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": items})


async def names_watched(client: Client, cache: CacheMode) -> list[str]:
    source = client.resource(PODS, "default").decoded_with(codec_for(cache))
    names: list[str] = []
    stream = source.watch(ListOptions(resource_version="5"))
    assert isinstance(stream, WatchStreamBase)
    try:
        async for batch in stream.batches():
            for event in batch:
                obj = event.object
                head = obj if isinstance(obj, dict) else obj.decode()
                names.append(head["metadata"]["name"])
    finally:
        await stream.aclose()
    return names


async def collect_names(client: Client, names: list[str]) -> None:
    """Append the name of every event of a plain watch to ``names``, until it ends."""
    async with contextlib.aclosing(client.resource(PODS, "default").watch()) as events:
        async for event in events:
            names.append(event.object["metadata"]["name"])


@pytest.mark.parametrize("cache", ["compact", "objects"])
async def test_a_watch_asks_for_no_compression_and_reads_every_member_sent_anyway(
    compressing: tuple[CompressingServer, Callable[..., Client]], cache: CacheMode
) -> None:
    server, client = compressing
    # One member per event, as kube-apiserver 1.37 writes a streaming list.
    server.watch_writes = [member(line) for line in LINES]
    names = await names_watched(client(), cache)
    assert names == [f"pod-{i}" for i in range(len(LINES))]
    assert server.asked == [("watch", "identity")]


@pytest.mark.parametrize("cache", ["compact", "objects"])
async def test_a_client_with_watch_compression_asks_gzip_and_reads_every_member(
    compressing: tuple[CompressingServer, Callable[..., Client]], cache: CacheMode
) -> None:
    server, client = compressing
    server.watch_writes = [PER_EVENT[:100], PER_EVENT[100:]]
    names = await names_watched(client(watch_compression=True), cache)
    assert names == [f"pod-{i}" for i in range(len(LINES))]
    assert server.asked == [("watch", "gzip")]


async def test_a_watch_sent_as_is_is_read_as_before(
    compressing: tuple[CompressingServer, Callable[..., Client]],
) -> None:
    server, client = compressing
    server.coding = None
    server.watch_writes = [b"".join(LINES)]
    assert len(await names_watched(client(), "objects")) == len(LINES)


async def test_a_watch_cut_inside_a_member_is_a_watch_error_after_its_events(
    compressing: tuple[CompressingServer, Callable[..., Client]],
) -> None:
    server, client = compressing
    server.watch_writes = [CUT]
    names: list[str] = []
    with pytest.raises(WatchError, match="cannot be read: the gzip body ended"):
        await collect_names(client(), names)
    assert len(names) == len(LINES) - 1


async def test_a_watch_in_a_coding_it_cannot_read_is_a_watch_error_naming_it(
    compressing: tuple[CompressingServer, Callable[..., Client]],
) -> None:
    server, client = compressing
    server.coding = "br"
    server.watch_writes = [b"\x0b\x02\x80"]
    with pytest.raises(WatchError, match="encoded as 'br'"):
        await collect_names(client(), [])


async def test_a_list_asks_for_gzip_and_reads_a_body_of_many_members(
    compressing: tuple[CompressingServer, Callable[..., Client]],
) -> None:
    server, client = compressing
    body = pod_list(300)
    server.list_body = b"".join(member(body[i : i + 1000]) for i in range(0, len(body), 1000))
    page = await client().resource(PODS, "default").list()
    assert [item["metadata"]["name"] for item in page.items] == [f"pod-{i}" for i in range(300)]
    assert server.asked == [("list", "gzip")]


async def test_a_list_that_inflates_past_the_limit_is_refused(
    compressing: tuple[CompressingServer, Callable[..., Client]],
) -> None:
    server, client = compressing
    body = pod_list(3000)
    server.list_body = member(body)
    assert len(server.list_body) < 100_000 < len(body)
    with pytest.raises(TransportError, match="over the limit of 100000 bytes"):
        await client(max_list_bytes=100_000).resource(PODS, "default").list()


async def test_a_list_in_a_coding_it_cannot_read_is_a_transport_error(
    compressing: tuple[CompressingServer, Callable[..., Client]],
) -> None:
    server, client = compressing
    server.coding = "deflate"
    server.list_body = b"x\x9c\x03\x00\x00\x00\x00\x01"
    with pytest.raises(TransportError, match="encoded as 'deflate'"):
        await client().resource(PODS, "default").list()


async def test_a_compressed_error_answer_still_raises_its_status(
    compressing: tuple[CompressingServer, Callable[..., Client]],
) -> None:
    server, client = compressing
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    server.list_status = 410
    server.list_body = member(orjson.dumps(status))
    with pytest.raises(Gone, match="too old"):
        await client().resource(PODS, "default").list()
    # An error body that cannot be read still leaves the status to say what failed.
    server.list_body = b"not gzip at all"
    with pytest.raises(Gone):
        await client().resource(PODS, "default").list()


async def test_a_raw_stream_asks_for_no_compression_and_gets_the_body_as_sent(
    compressing: tuple[CompressingServer, Callable[..., Client]],
) -> None:
    server, client = compressing
    server.list_body = member(b"{}")
    async with client().stream("GET", PATH) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        assert await response.read() == member(b"{}")
    assert server.asked == [("list", "identity")]
