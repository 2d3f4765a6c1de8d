"""pytest plugin (registered through the ``pytest11`` entry point): aioinformer's test
doubles as fixtures for users' own suites.

Fixtures:

* ``fake_clock`` -- a :class:`FakeClock` at time 0;
* ``fake_apiserver`` -- a started :class:`FakeAPIServer` (options from the
  ``@pytest.mark.fake_apiserver(**options)`` marker), closed after the test;
* ``kube_client`` -- an :class:`aioinformer.client.Client` connected to it as the admin;
* ``fake_apiserver_factory`` -- ``await fake_apiserver_factory(**options)`` starts more
  servers (each closed after the test).

The async fixtures are ``pytest_asyncio`` fixtures when pytest-asyncio is installed (they
then work in its strict and auto modes), and plain async fixtures otherwise, which anyio's
pytest plugin runs for tests marked ``@pytest.mark.anyio``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.testing.apiserver import FakeAPIServer
from aioinformer.testing.clock import FakeClock

if TYPE_CHECKING:
    from aioinformer.client import Client

try:
    import pytest_asyncio

    _async_fixture: Callable[..., Any] = pytest_asyncio.fixture
except ImportError:  # pragma: no cover - exercised only without pytest-asyncio
    _async_fixture = pytest.fixture

FakeAPIServerFactory = Callable[..., Awaitable[FakeAPIServer]]
"""``await factory(**options)``: start a :class:`FakeAPIServer` closed after the test."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fake_apiserver(**options): keyword options for the fake_apiserver fixture's "
        "FakeAPIServer (history_size, bookmark_interval, clock, too_large_rv_wait)",
    )


@pytest.fixture
def fake_clock() -> FakeClock:
    """A :class:`FakeClock` at time 0, for components that take ``clock=``."""
    return FakeClock()


@_async_fixture
async def fake_apiserver_factory() -> AsyncIterator[FakeAPIServerFactory]:
    """A factory starting :class:`FakeAPIServer` instances; all are closed after the test."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(**options: Any) -> FakeAPIServer:
            return await stack.enter_async_context(FakeAPIServer(**options))

        yield start


@_async_fixture
async def fake_apiserver(
    request: pytest.FixtureRequest, fake_apiserver_factory: FakeAPIServerFactory
) -> FakeAPIServer:
    """A started :class:`FakeAPIServer` on 127.0.0.1, closed after the test.

    Options come from ``@pytest.mark.fake_apiserver(**options)`` when the test has it.
    """
    marker = request.node.get_closest_marker("fake_apiserver")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    return await fake_apiserver_factory(**options)


@_async_fixture
async def kube_client(fake_apiserver: FakeAPIServer) -> AsyncIterator[Client]:
    """An :class:`aioinformer.client.Client` for ``fake_apiserver`` (admin token)."""
    async with fake_apiserver.client() as client:
        yield client
