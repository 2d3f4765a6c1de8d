"""Every connection the client opens has TCP keepalive set, read back from the socket of a
real loopback connection: a peer that vanished without closing is found within about 90 s
even while a watch is silent."""

from __future__ import annotations

import asyncio
import socket

import pytest
from aiohttp import web

from aioinformer.client import Client
from aioinformer.client._http import (
    KEEPALIVE_COUNT,
    KEEPALIVE_IDLE,
    KEEPALIVE_INTERVAL,
    KEEPALIVE_USER_TIMEOUT,
)
from aioinformer.config import Config
from tests._support_http import serve


async def open_stream(request: web.Request) -> web.StreamResponse:
    """Headers, then silence: the connection stays with the response while it is read."""
    response = web.StreamResponse()
    response.enable_chunked_encoding()
    await response.prepare(request)
    await asyncio.Event().wait()
    return response


def tcp_option(sock: socket.socket, name: str) -> int | None:
    option = getattr(socket, name, None)
    return None if option is None else sock.getsockopt(socket.IPPROTO_TCP, option)


async def test_a_client_connection_has_tcp_keepalive_finding_a_dead_peer_within_90s() -> None:
    app = web.Application()
    app.router.add_get("/api", open_stream)
    async with (
        serve(app) as url,
        Client(Config(host=url)) as client,
        client.stream("GET", "/api") as response,
    ):
        assert response.connection is not None
        transport = response.connection.transport
        assert transport is not None
        sock = transport.get_extra_info("socket")
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) != 0
        if not hasattr(socket, "TCP_KEEPIDLE"):
            pytest.skip("this platform names the keepalive options differently")
        assert tcp_option(sock, "TCP_KEEPIDLE") == KEEPALIVE_IDLE
        assert tcp_option(sock, "TCP_KEEPINTVL") == KEEPALIVE_INTERVAL
        assert tcp_option(sock, "TCP_KEEPCNT") == KEEPALIVE_COUNT
        assert KEEPALIVE_IDLE + KEEPALIVE_INTERVAL * KEEPALIVE_COUNT <= 90
        if hasattr(socket, "TCP_USER_TIMEOUT"):
            assert tcp_option(sock, "TCP_USER_TIMEOUT") == KEEPALIVE_USER_TIMEOUT
