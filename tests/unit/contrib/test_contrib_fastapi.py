"""``aioinformer.contrib.fastapi``: ``/readyz`` and ``/livez`` over httpx's ASGI transport,
for a FastAPI and a Starlette app, from every kind of source; a silent stream on a
``FakeClock`` turns ``/readyz`` 503 and the re-watch turns it 200 again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.applications import Starlette

from aioinformer.contrib.fastapi import HealthSource, health_of, health_router, health_routes
from aioinformer.informer import SharedIndexInformer
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_health import DEADLINE, WINDOW
from tests._support_health import clock as clock
from tests._support_health import informer as informer
from tests._support_health import list_informer as list_informer
from tests._support_health import lw as lw

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.testing.clock import FakeClock


def client_for(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app")


def fastapi_app(source: HealthSource, **paths: str) -> FastAPI:
    app = FastAPI()
    app.include_router(health_router(source, **paths))
    return app


@pytest.fixture
async def http(informer: SharedIndexInformer) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(fastapi_app(informer)) as client:
        yield client


async def statuses(http: httpx.AsyncClient) -> tuple[int, int]:
    return (await http.get("/readyz")).status_code, (await http.get("/livez")).status_code


async def test_no_source_yet_is_not_ready_and_live() -> None:
    async with client_for(fastapi_app(lambda: None)) as http:
        ready = await http.get("/readyz")
        assert ready.status_code == 503
        assert ready.json() == {"ready": False, "live": True, "started": False, "informers": {}}
        assert (await http.get("/livez")).status_code == 200


async def test_readyz_is_503_until_synced_then_200_and_both_say_why(
    http: httpx.AsyncClient, informer: SharedIndexInformer, lw: FakeListerWatcher
) -> None:
    assert await statuses(http) == (503, 200)  # not started: not ready, nothing failed
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await lw.wait_for_watchers(1)
        response = await http.get("/readyz")
        assert response.status_code == 200
        body = response.json()
        assert (body["ready"], body["live"], body["started"]) == (True, True, True)
        assert body["informers"] == {informer.name: informer.health().as_dict()}
        assert await statuses(http) == (200, 200)
    # Stopped: the cache will never change again, and the liveness probe says so.
    assert await statuses(http) == (503, 503)
    assert (await http.get("/livez")).json()["informers"][informer.name]["stopped"] is True


async def test_a_silent_stream_turns_readyz_503_before_the_rewatch_and_200_after(
    list_informer: SharedIndexInformer, lw: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = list_informer
    lw.stall_next_watch()
    async with informer, client_for(fastapi_app({"pods": informer})) as http:
        assert await informer.wait_for_sync(timeout=5)
        await lw.wait_for_watchers(1)
        assert await statuses(http) == (200, 200)

        await clock.advance(WINDOW + 1.0)
        response = await http.get("/readyz")
        assert response.status_code == 503
        detail = response.json()["informers"]["pods"]
        assert (detail["live"], detail["state"], detail["seconds_since_heard"]) == (
            False,
            "WATCHING",
            WINDOW + 1.0,
        )
        assert (await http.get("/livez")).status_code == 200  # stale is no reason to restart

        await clock.advance(DEADLINE - WINDOW)
        await lw.wait_for_watch_calls(2)
        await lw.wait_for_watchers(1)
        response = await http.get("/readyz")
        assert response.status_code == 200
        assert response.json()["informers"]["pods"]["watch_restarts"] == 1


async def test_starlette_apps_get_the_same_routes_at_the_paths_asked_for(
    informer: SharedIndexInformer, lw: FakeListerWatcher
) -> None:
    app = Starlette(routes=health_routes(informer, readyz="/ready", livez="/alive"))
    async with informer, client_for(app) as http:
        assert await informer.wait_for_sync(timeout=5)
        await lw.wait_for_watchers(1)
        assert (await http.get("/ready")).status_code == 200
        assert (await http.get("/alive")).status_code == 200
        assert (await http.get("/readyz")).status_code == 404
        assert (await http.post("/ready")).status_code == 405


async def test_a_mapping_is_started_only_when_every_informer_is(
    informer: SharedIndexInformer, clock: FakeClock
) -> None:
    other = SharedIndexInformer(FakeListerWatcher(resource="configmaps"), clock=clock)
    async with informer:
        health = health_of({"pods": informer, "configmaps": other})
        assert (health.started, health.ready, health.live) == (False, False, True)
        assert list(health.informers) == ["pods", "configmaps"]


def test_anything_else_is_refused_with_what_a_source_may_be() -> None:
    with pytest.raises(TypeError, match="a health source is a SharedInformerFactory"):
        health_of(lambda: 42)  # type: ignore[arg-type, return-value]
