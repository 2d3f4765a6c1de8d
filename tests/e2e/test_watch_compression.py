"""Compressed streaming lists end to end: the fake API server compressing them as
kube-apiserver 1.37 does (``watch_list_compression=True``: one gzip member per event, only
for a client that accepts gzip), read on the wire by hand, and read whole by this library's
client, through an informer and a plain watch, in both cache modes; a proxy on the way that
compresses everything anyway; and the caching proxy in front of a compressing server.

aiohttp before 3.14 reads a body of several gzip members only up to the end of the first:
a client that leaves the decoding to it gets a compressed streaming list's first event and
then silence. The raw requests here decode nothing (``auto_decompress=False``) and count the
members with zlib alone.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest

from aioinformer.client import Client
from aioinformer.codec import codec_for
from aioinformer.config import Config
from aioinformer.factory import SharedInformerFactory
from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import ListOptions, WatchStreamBase
from aioinformer.proxy import CachingProxy
from aioinformer.reflector import ReflectorOptions
from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer
from tests._support_gzip import compressing_middlebox, members
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from aioinformer.informer import CacheMode

PODS = "/api/v1/namespaces/default/pods"
STREAMING = {
    "watch": "1",
    "sendInitialEvents": "true",
    "resourceVersionMatch": "NotOlderThan",
    "allowWatchBookmarks": "true",
}
COMPRESSING = pytest.mark.fake_apiserver(watch_list_compression=True)
NOW = "the server's resourceVersion when the test starts"
SOCKET_POLL = 0.001


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def described(line: bytes) -> tuple[str, str]:
    """An event line as (type, name), or (``BOOKMARK``, its annotations' keys)."""
    event = orjson.loads(line)
    meta = event["object"]["metadata"]
    return event["type"], meta.get("name") or ",".join(meta.get("annotations", {}))


@contextlib.asynccontextmanager
async def raw_watch(
    server: FakeAPIServer, accept_encoding: str, params: dict[str, str]
) -> AsyncIterator[aiohttp.ClientResponse]:
    """A watch read as it comes off the wire: nothing decoded."""
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept-Encoding": accept_encoding}
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.get(server.url + PODS, params=params, headers=headers) as response,
    ):
        yield response


async def read_members(response: aiohttp.ClientResponse, raw: bytearray, count: int) -> list[bytes]:
    """Read into ``raw`` until it holds ``count`` whole gzip members; their contents."""
    async with asyncio.timeout(5):
        while len(found := members(bytes(raw))) < count:
            raw += await response.content.readany()
    return found


async def read_lines(response: aiohttp.ClientResponse, count: int) -> list[bytes]:
    async with asyncio.timeout(5):
        return [await response.content.readline() for _ in range(count)]


def client_for(server: FakeAPIServer, **options: Any) -> Client:
    return Client(Config(host=server.url, token=ADMIN_TOKEN), **options)


def watch_requests(server: FakeAPIServer) -> list[str]:
    """The ``Accept-Encoding`` of every pod watch the server received."""
    return [
        record.headers.get("Accept-Encoding", "")
        for record in server.request_log
        if record.path.endswith("/pods") and record.query.get("watch") in ("1", "true")
    ]


# -- on the wire ----------------------------------------------------------------------------


@COMPRESSING
async def test_a_streaming_list_that_accepts_gzip_comes_one_member_per_event(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.create(pod("b"))
    async with raw_watch(fake_apiserver, "gzip, deflate", STREAMING) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        assert response.headers["Vary"] == "Accept-Encoding"
        raw = bytearray()
        initial = await read_members(response, raw, 3)
        fake_apiserver.create(pod("c"))
        everything = await read_members(response, raw, 4)
    assert everything[:3] == initial
    # Each member is exactly one event: the initial ones, the bookmark, a live one after.
    assert all(content.count(b"\n") == 1 and content.endswith(b"\n") for content in everything)
    assert [described(content) for content in everything] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("BOOKMARK", "k8s.io/initial-events-end"),
        ("ADDED", "c"),
    ]


@COMPRESSING
async def test_a_plain_watch_from_the_start_with_bookmarks_is_compressed_too(
    fake_apiserver: FakeAPIServer,
) -> None:
    # kube-apiserver turns it into a streaming list (sendInitialEvents defaulted to true).
    fake_apiserver.create(pod("a"))
    params = {"watch": "1", "allowWatchBookmarks": "true"}
    async with raw_watch(fake_apiserver, "gzip", params) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        found = await read_members(response, bytearray(), 1)
    assert described(found[0]) == ("ADDED", "a")


@COMPRESSING
@pytest.mark.parametrize(
    ("accept_encoding", "params"),
    [
        pytest.param("identity", STREAMING, id="identity-asked"),
        pytest.param("", STREAMING, id="nothing-asked"),
        pytest.param("deflate, br", STREAMING, id="no-gzip-asked"),
        pytest.param(
            "gzip",
            {"watch": "1", "allowWatchBookmarks": "true", "resourceVersion": NOW},
            id="from-a-version",
        ),
        pytest.param("gzip", {"watch": "1"}, id="without-bookmarks"),
    ],
)
async def test_other_watches_come_as_plain_lines(
    fake_apiserver: FakeAPIServer, accept_encoding: str, params: dict[str, str]
) -> None:
    fake_apiserver.create(pod("a"))
    if params.get("resourceVersion") == NOW:
        params = {**params, "resourceVersion": fake_apiserver.resource_version}
        fake_apiserver.create(pod("b"))
    async with raw_watch(fake_apiserver, accept_encoding, params) as response:
        assert "Content-Encoding" not in response.headers
        line = (await read_lines(response, 1))[0]
    assert described(line)[0] == "ADDED"


async def test_the_fake_compresses_nothing_unless_told(fake_apiserver: FakeAPIServer) -> None:
    fake_apiserver.create(pod("a"))
    async with raw_watch(fake_apiserver, "gzip", STREAMING) as response:
        assert "Content-Encoding" not in response.headers
        assert described((await read_lines(response, 1))[0]) == ("ADDED", "a")
    fake_apiserver.watch_list_compression = True
    async with raw_watch(fake_apiserver, "gzip", STREAMING) as response:
        assert response.headers["Content-Encoding"] == "gzip"


# -- our client -------------------------------------------------------------------------------


async def sync_and_follow(server: FakeAPIServer, client: Client, cache: CacheMode) -> None:
    """An informer syncs from a streaming list of 30 pods, then sees 5 more created."""
    for i in range(30):
        server.create(pod(f"p{i}"))
    informer = SharedIndexInformer(client.resource("v1/pods", namespace="default"), cache=cache)
    async with informer:
        assert await informer.wait_for_sync(timeout=10)
        assert len(informer.lister().list()) == 30
        for i in range(30, 35):
            server.create(pod(f"p{i}"))
        await wait_until(lambda: len(informer.lister().list()) == 35, poll=SOCKET_POLL, timeout=10)
        reflector = informer.statistics().reflector
        assert reflector is not None
        assert reflector.lists == 0


@COMPRESSING
async def test_our_client_asking_gzip_reads_every_event_of_a_compressed_streaming_list(
    fake_apiserver: FakeAPIServer, cache: CacheMode
) -> None:
    async with client_for(fake_apiserver, watch_compression=True) as client:
        await sync_and_follow(fake_apiserver, client, cache)
    assert watch_requests(fake_apiserver) == ["gzip"]


@COMPRESSING
async def test_our_client_asks_a_compressing_server_for_no_compression_by_default(
    fake_apiserver: FakeAPIServer, kube_client: Client, cache: CacheMode
) -> None:
    await sync_and_follow(fake_apiserver, kube_client, cache)
    assert watch_requests(fake_apiserver) == ["identity"]


@COMPRESSING
async def test_a_plain_watch_asking_gzip_reads_every_member(
    fake_apiserver: FakeAPIServer, cache: CacheMode
) -> None:
    # From the start with bookmarks: kube-apiserver makes it a streaming list, compressed.
    for name in ("a", "b", "c"):
        fake_apiserver.create(pod(name))
    async with client_for(fake_apiserver, watch_compression=True) as client:
        source = client.resource("v1/pods", namespace="default").decoded_with(codec_for(cache))
        stream = source.watch(ListOptions(allow_watch_bookmarks=True))
        assert isinstance(stream, WatchStreamBase)
        seen: list[str] = []
        try:
            async with asyncio.timeout(5):
                async for batch in stream.batches():
                    for event in batch:
                        obj = event.object
                        decoded = obj if isinstance(obj, dict) else obj.decode()
                        seen.append(decoded["metadata"]["name"])
                    if len(seen) == 3:
                        fake_apiserver.create(pod("d"))
                    if len(seen) == 4:
                        break
        finally:
            await stream.aclose()
    assert seen == ["a", "b", "c", "d"]
    assert watch_requests(fake_apiserver) == ["gzip"]


# -- a proxy that compresses anyway -----------------------------------------------------------


@pytest.mark.parametrize("use_watch_list", [True, False], ids=["streaming-list", "list-watch"])
async def test_through_a_proxy_that_compresses_everything_every_event_arrives(
    fake_apiserver: FakeAPIServer, cache: CacheMode, use_watch_list: bool
) -> None:
    async with (
        compressing_middlebox(fake_apiserver.url) as url,
        Client(Config(host=url, token=ADMIN_TOKEN)) as client,
    ):
        for i in range(20):
            fake_apiserver.create(pod(f"p{i}"))
        async with SharedInformerFactory(
            client,
            namespace="default",
            cache=cache,
            reflector=ReflectorOptions(use_watch_list=use_watch_list, page_size=7),
        ) as factory:
            informer = factory.informer_for("v1/pods")
            assert all((await factory.wait_for_cache_sync(timeout=10)).values())
            assert len(informer.lister().list()) == 20
            await fake_apiserver.wait_for_watchers(1)
            for i in range(20, 25):
                fake_apiserver.create(pod(f"p{i}"))
            await wait_until(
                lambda: len(informer.lister().list()) == 25, poll=SOCKET_POLL, timeout=10
            )
        # Discovery, the LIST pages and a create's answer came compressed too.
        created = await client.resource("v1/pods", namespace="default").create(pod("late"))
        assert created["metadata"]["name"] == "late"


# -- the caching proxy ------------------------------------------------------------------------


@pytest.mark.parametrize("upstream_gzip", [False, True], ids=["identity-upstream", "gzip-upstream"])
async def test_the_caching_proxy_reads_a_compressing_server_and_answers_uncompressed(
    upstream_gzip: bool,
) -> None:
    async with (
        FakeAPIServer(watch_list_compression=True) as server,
        client_for(server, watch_compression=upstream_gzip) as upstream,
        CachingProxy(upstream, resources=["v1/pods"]) as proxy,
    ):
        for name in ("a", "b"):
            server.create(pod(name))
        # The proxy writes its streams as they are, whatever its clients accept.
        async with (
            aiohttp.ClientSession(auto_decompress=False) as session,
            session.get(
                proxy.url + PODS, params=STREAMING, headers={"Accept-Encoding": "gzip"}
            ) as response,
        ):
            assert "Content-Encoding" not in response.headers
            lines = await read_lines(response, 3)
        assert [described(line) for line in lines] == [
            ("ADDED", "a"),
            ("ADDED", "b"),
            ("BOOKMARK", "k8s.io/initial-events-end"),
        ]
    assert watch_requests(server) == ["gzip" if upstream_gzip else "identity"]


async def test_the_caching_proxy_forwards_a_compressed_answer_with_its_coding(
    fake_apiserver: FakeAPIServer,
) -> None:
    async with (
        compressing_middlebox(fake_apiserver.url) as url,
        Client(Config(host=url, token=ADMIN_TOKEN)) as upstream,
        CachingProxy(upstream, resources=["v1/pods"], writes="forward") as proxy,
        aiohttp.ClientSession(proxy.url) as session,
        session.post(PODS, json=pod("w")) as created,
    ):
        assert created.status == 201
        assert created.headers["Content-Encoding"] == "gzip"
        body = await created.json()
    assert body["metadata"]["name"] == "w"
    assert fake_apiserver.get("pods", "default", "w")["metadata"]["name"] == "w"


# -- faults inside a compressed stream --------------------------------------------------------


FAULTS: dict[str, tuple[str, Callable[[FakeAPIServer, int], None]]] = {
    "close-mid-line": ("close_mid_line", lambda s, after: s.faults.close_mid_line(after=after)),
    "garbage-line": ("garbage_line", lambda s, after: s.faults.garbage_line(after=after)),
    "drop-abruptly": (
        "drop_watch",
        lambda s, after: s.faults.drop_watch_after(after, abrupt=True),
    ),
}


@COMPRESSING
@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize(
    "after", [1, 5], ids=["among-the-initial-events", "after-the-initial-events"]
)
async def test_a_fault_inside_a_compressed_streaming_list_is_recovered_from(
    fake_apiserver: FakeAPIServer, cache: CacheMode, fault: str, after: int
) -> None:
    for name in ("a", "b", "c"):
        fake_apiserver.create(pod(name))
    # Three initial events and the bookmark make four lines; the fifth is the live "d".
    kind, arm = FAULTS[fault]
    arm(fake_apiserver, after)
    async with client_for(fake_apiserver, watch_compression=True) as client:
        informer = SharedIndexInformer(client.resource("v1/pods", namespace="default"), cache=cache)
        async with informer:
            assert await informer.wait_for_sync(timeout=10)
            fake_apiserver.create(pod("d"))
            await fake_apiserver.faults.wait_for(kind, timeout=10)
            fake_apiserver.create(pod("e"))
            names = {"a", "b", "c", "d", "e"}
            await wait_until(
                lambda: {o["metadata"]["name"] for o in informer.lister().list()} == names,
                poll=SOCKET_POLL,
                timeout=10,
            )
    assert fake_apiserver.faults.count(kind) == 1
    assert watch_requests(fake_apiserver)[0] == "gzip"
