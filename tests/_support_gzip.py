"""Gzip on the wire, for the tests of compressed watches: members counted by hand, and a
middlebox that compresses everything.

Input: raw response bytes (read with aiohttp's decompression off), or a server to stand in
front of. Output: :func:`member` compresses as kube-apiserver does, and :data:`PER_EVENT`
is a streaming list's events so compressed (:data:`CUT`, the same cut short);
:func:`members` splits a gzip body into its members' contents with zlib
alone (not the package's reader, which it checks); :class:`RawInflater` turns a raw body
into text as it arrives, for readers that take lines; :func:`compressing_middlebox` serves
a loopback HTTP proxy that forwards every request to ``upstream`` and answers gzip whatever
was asked, each chunk it forwards a member of its own, as a misbehaving proxy on the way to
a cluster might. Nothing here starts a task but the middlebox's server.

Fixtures: a module that imports :func:`compressed`, :func:`fake_apiserver_factory` and
:func:`kube_client` from here runs each of its tests twice, against fake API servers
answering as v1.36 does and against ones compressing streaming lists as v1.37 does, with
clients that ask them to.
"""

from __future__ import annotations

import contextlib
import gzip
import zlib
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer
from tests._support_http import serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable

    from aioinformer.testing.plugin import FakeAPIServerFactory

_GZIP = 16 + zlib.MAX_WBITS


def member(data: bytes) -> bytes:
    """One gzip member holding ``data``, at kube-apiserver's level."""
    return gzip.compress(data, compresslevel=1, mtime=0)


def event_line(index: int) -> bytes:
    obj = {"metadata": {"name": f"pod-{index}", "resourceVersion": str(10 + index)}}
    return orjson.dumps({"type": "MODIFIED", "object": obj}) + b"\n"


LINES = [event_line(i) for i in range(40)]
"""Forty watch lines, MODIFIED pods ``pod-0`` to ``pod-39``."""
PER_EVENT = b"".join(member(line) for line in LINES)
""":data:`LINES` one gzip member each, as kube-apiserver 1.37 compresses a streaming list."""
CUT = PER_EVENT[: len(PER_EVENT) - len(member(LINES[-1])) // 2]
""":data:`PER_EVENT` cut halfway through its last member: the last event never arrives."""


def members(raw: bytes) -> list[bytes]:
    """The inflated content of each complete gzip member of ``raw``, in order; a member
    cut short at the end is left out."""
    contents: list[bytes] = []
    while raw:
        inflate = zlib.decompressobj(wbits=_GZIP)
        content = inflate.decompress(raw)
        if not inflate.eof:
            break
        contents.append(content)
        raw = inflate.unused_data
    return contents


class RawInflater:
    """Inflates a raw body chunk by chunk when it is gzip (members one after another),
    passes it through when it is not."""

    def __init__(self, compressed: bool) -> None:
        self.compressed = compressed
        self._inflate = zlib.decompressobj(wbits=_GZIP)

    def feed(self, chunk: bytes) -> bytes:
        if not self.compressed:
            return chunk
        out = b""
        while chunk:
            out += self._inflate.decompress(chunk)
            if not self._inflate.eof:
                break
            chunk = self._inflate.unused_data
            self._inflate = zlib.decompressobj(wbits=_GZIP)
        return out


_HOP_BY_HOP = frozenset(
    {"host", "accept-encoding", "content-length", "transfer-encoding", "connection"}
)


@contextlib.asynccontextmanager
async def compressing_middlebox(upstream: str) -> AsyncIterator[str]:
    """Serve a proxy to ``upstream`` that gzips every answer body, each chunk read from
    the upstream a gzip member of its own, whatever the request's ``Accept-Encoding``;
    yield its URL."""
    async with aiohttp.ClientSession(auto_decompress=False) as session:

        async def forward(request: web.Request) -> web.StreamResponse:
            headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
            async with session.request(
                request.method,
                upstream + request.rel_url.raw_path_qs,
                headers=headers,
                data=await request.read() or None,
                allow_redirects=False,
            ) as answer:
                response = web.StreamResponse(
                    status=answer.status,
                    headers={
                        "Content-Type": answer.headers.get("Content-Type", "application/json"),
                        "Content-Encoding": "gzip",
                    },
                )
                response.enable_chunked_encoding()
                await response.prepare(request)
                async for chunk in answer.content.iter_any():
                    await response.write(member(chunk))
                await response.write_eof()
                return response

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", forward)
        async with serve(app) as url:
            yield url


# -- running a module's tests against both wires ------------------------------------------------


@pytest.fixture(params=[False, True], ids=["uncompressed", "compressed"])
def compressed(request: pytest.FixtureRequest) -> bool:
    """Whether the module's fake API servers compress streaming lists as kube-apiserver 1.37
    does and its clients ask them to (import it with :func:`fake_apiserver_factory` and
    :func:`kube_client` into a module to run its tests once per wire)."""
    value: bool = request.param
    return value


@pytest.fixture
def fake_apiserver_factory(
    fake_apiserver_factory: FakeAPIServerFactory, compressed: bool
) -> FakeAPIServerFactory:
    """The plugin's factory, its servers compressing streaming lists when ``compressed``
    (``fake_apiserver`` is made by it too). It returns what the plugin's factory returns,
    unawaited: an awaitable in an async test, a started threaded server in a sync one."""

    def start(**options: Any) -> Awaitable[FakeAPIServer]:
        options.setdefault("watch_list_compression", compressed)
        return fake_apiserver_factory(**options)

    return start


@pytest.fixture
async def kube_client(fake_apiserver: FakeAPIServer, compressed: bool) -> AsyncIterator[Client]:
    """A client for ``fake_apiserver`` whose watches ask for gzip when ``compressed``."""
    config = Config(host=fake_apiserver.url, token=ADMIN_TOKEN)
    async with Client(config, watch_compression=compressed) as client:
        yield client
