"""Testing a FastAPI app whose lifespan runs informers, against the fake API server.

The app is ``fastapi_app.py`` next to this file: its lifespan starts a
``SharedInformerFactory`` on ``client_factory()``, its endpoints read the caches, and
``/readyz`` answers 200 once every informer is synced and watching. Two ways to test it:

* **Starlette's** ``TestClient``, in plain ``def`` tests. ``TestClient`` runs the app on
  an event loop of a thread of its own and blocks the test while it waits for it, so the
  fake must be served from a thread of its own too: in a sync test the ``fake_apiserver``
  fixture is just that (a ``ThreadedFakeAPIServer``: the same methods, blocking).
  ``fake_apiserver.client`` makes the app a ``Client`` on the app's own loop, and
  ``eventually_sync`` waits for what the app does meanwhile.
* **httpx's** ``AsyncClient`` over ``ASGITransport``, in ``async def`` tests: the app, its
  lifespan and the fake all run on the test's loop, and the test awaits between requests.

``TestClient`` in an ``async def`` test would block the loop that serves the fake: the
fixture fails such a test at once, saying so, instead of letting it hang.

Run it with ``pytest examples/test_fastapi_app.py`` (it needs ``fastapi``, ``httpx`` for
the async tests and ``httpx2`` for Starlette's ``TestClient``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
import pytest_asyncio
from fastapi.testclient import TestClient

from aioinformer.testing import eventually, eventually_sync

sys.path.insert(0, str(Path(__file__).resolve().parent))  # to import the example app
from fastapi_app import create_app, pod

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from aioinformer.testing import FakeAPIServer, ThreadedFakeAPIServer


# -- with Starlette's TestClient: sync tests ------------------------------------------------


@pytest.fixture
def http(fake_apiserver: ThreadedFakeAPIServer) -> Iterator[TestClient]:
    """The app, started (lifespan entered) against the fake, once it is ready."""
    fake_apiserver.create(pod("web-0", app="web"))
    fake_apiserver.create(pod("db-0", app="db"))
    with TestClient(create_app(fake_apiserver.client)) as client:
        eventually_sync(lambda: client.get("/readyz").status_code == 200, timeout=10)
        yield client


def test_the_app_answers_from_its_caches(http: TestClient) -> None:
    assert [p["name"] for p in http.get("/pods").json()] == ["db-0", "web-0"]
    assert [p["name"] for p in http.get("/pods", params={"selector": "app=web"}).json()] == [
        "web-0"
    ]
    assert http.get("/pods/default/db-0").json()["metadata"]["labels"] == {"app": "db"}
    assert http.get("/pods/default/nope").status_code == 404


def test_the_caches_follow_the_server(
    http: TestClient, fake_apiserver: ThreadedFakeAPIServer
) -> None:
    fake_apiserver.create(pod("web-1", app="web"))
    fake_apiserver.delete("pods", "default", "db-0")

    def names() -> list[str]:
        return [p["name"] for p in http.get("/pods").json()]

    eventually_sync(lambda: names() == ["web-0", "web-1"])


def test_readyz_fails_while_the_server_refuses_connections(
    http: TestClient, fake_apiserver: ThreadedFakeAPIServer
) -> None:
    fake_apiserver.faults.refuse_connections()  # every watch is cut, none reconnects
    eventually_sync(lambda: http.get("/readyz").status_code == 503)
    assert http.get("/livez").status_code == 200  # a stale cache is not a dead process
    fake_apiserver.faults.accept_connections()
    eventually_sync(lambda: http.get("/readyz").status_code == 200, timeout=10)


# -- with httpx's AsyncClient: async tests --------------------------------------------------


@pytest_asyncio.fixture
async def async_http(fake_apiserver: FakeAPIServer) -> AsyncIterator[httpx.AsyncClient]:
    """The app, started on the test's loop, behind an httpx client on the ASGI transport."""
    fake_apiserver.create(pod("web-0", app="web"))
    app = create_app(fake_apiserver.client)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://app") as client,
    ):

        async def ready() -> bool:
            return (await client.get("/readyz")).status_code == 200

        await eventually(ready, timeout=10)
        yield client


@pytest.mark.asyncio
async def test_an_async_test_drives_the_app_on_its_own_loop(
    async_http: httpx.AsyncClient, fake_apiserver: FakeAPIServer
) -> None:
    assert [p["name"] for p in (await async_http.get("/pods")).json()] == ["web-0"]
    fake_apiserver.create(pod("web-1", app="web"))

    async def names() -> list[str]:
        return [p["name"] for p in (await async_http.get("/pods")).json()]

    async def both_cached() -> bool:
        return await names() == ["web-0", "web-1"]

    await eventually(both_cached)


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
