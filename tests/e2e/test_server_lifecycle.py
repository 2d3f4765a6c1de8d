"""The servers' one lifecycle: the fake API server and the caching proxy run once, are
ready once they listen, and close the same way from ``close()``, ``stop()`` and the end
of an ``async with`` block, whoever cancels whom."""

from __future__ import annotations

import asyncio

import aiohttp
import anyio
import pytest

from aioinformer import State
from aioinformer.proxy import CachingProxy
from aioinformer.testing import FakeAPIServer


async def answers(url: str) -> bool:
    async with aiohttp.ClientSession() as http:
        try:
            async with http.get(f"{url}/version"):
                return True
        except aiohttp.ClientConnectionError:
            return False


async def test_start_and_close_run_the_server_once() -> None:
    server = FakeAPIServer()
    states = [server.state]
    await server.start()
    states.append(server.state)
    assert await answers(server.url)
    with pytest.raises(RuntimeError, match="FakeAPIServer runs only once"):
        await server.start()
    await server.close()
    await server.close()  # idempotent
    states.append(server.state)
    assert states == [State.NEW, State.RUNNING, State.STOPPED]
    assert not await answers(server.url)


async def test_closing_inside_the_block_stops_the_server_and_the_block_ends_quietly() -> None:
    async with FakeAPIServer() as server:
        assert await answers(server.url)
        await server.close()
        assert server.state is State.STOPPED
        assert not await answers(server.url)


async def test_run_is_ready_once_the_server_listens_and_stop_ends_it() -> None:
    server = FakeAPIServer()
    async with anyio.create_task_group() as task_group:
        await task_group.start(server.run)
        assert await answers(server.url)
        server.stop()
    assert server.state is State.STOPPED
    assert not await answers(server.url)


async def test_a_proxy_closed_inside_its_block_stops_listening() -> None:
    async with FakeAPIServer() as server, server.client() as upstream:
        async with CachingProxy(upstream, resources=["v1/configmaps"]) as proxy:
            url = proxy.url
            assert await answers(url)
            await proxy.close()
            assert proxy.state is State.STOPPED
        assert not await answers(url)


async def test_a_proxy_whose_close_is_cancelled_inside_its_block_still_stops() -> None:
    async with FakeAPIServer() as server, server.client() as upstream:
        proxy = CachingProxy(upstream, resources=["v1/configmaps"])
        async with proxy:
            url = proxy.url
            closing = asyncio.create_task(proxy.close())
            await asyncio.sleep(0)
            closing.cancel()
            with pytest.raises(asyncio.CancelledError):
                await closing
        assert proxy.state is State.STOPPED
        assert not await answers(url)
