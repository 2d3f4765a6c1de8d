"""pytest plugin (registered through the ``pytest11`` entry point): aioinformer's test
doubles as fixtures for users' own suites.

Fixtures:

* ``fake_clock`` -- a :class:`FakeClock` at time 0;
* ``fake_apiserver`` -- a started :class:`FakeAPIServer` (options from the
  ``@pytest.mark.fake_apiserver(**options)`` marker), closed after the test;
* ``kube_client`` -- an :class:`aioinformer.client.Client` connected to it as the admin;
* ``fake_apiserver_factory`` -- ``await fake_apiserver_factory(**options)`` starts more
  servers (each closed after the test).

Sync tests: a plain ``def test_...()`` (or a doctest) runs no event loop, so no server
on one could answer it. There the fixtures serve the fake from a thread of its own:
``fake_apiserver`` is a :class:`ThreadedFakeAPIServer` (the same methods, blocking, run
on the server's loop; :meth:`~ThreadedFakeAPIServer.client` makes a ``Client`` for the
loop that enters it, such as an app's lifespan under Starlette's ``TestClient``), and
``fake_apiserver_factory(**options)`` returns started ones without ``await``. No async
plugin is needed. ``kube_client`` is a ``Client`` for it, not entered: the code that
runs a loop enters it there.

Starlette's ``TestClient`` in an async test blocks the test's loop while the app's
lifespan runs on a thread of the client's, so the app could never reach a fake on the
test's loop: entering one there fails the test at once, saying how to write it, whether
the module imports ``TestClient`` at its top or the test in its body (with Starlette
installed, the plugin imports ``starlette.testclient`` before such a test starts).

Which event loop: the server must live on the loop that runs the test, and two plugins
may run async tests. The public fixtures are therefore plain (sync) fixtures that look
at the requesting test and run their async setup and teardown where the test runs:

* a test anyio's plugin runs (marked ``anyio``, so it uses the ``anyio_backend``
  fixture): on anyio's test runner, the one that then runs the test, with or without
  pytest-asyncio installed beside it (in its strict mode). The backend must be
  ``asyncio`` (the server and the client are aiohttp's); ``trio`` fails the test with
  that reason;
* any other async test, which pytest-asyncio runs (auto mode, or ``@pytest.mark.asyncio``
  in strict mode): through private ``pytest_asyncio`` fixtures, so on pytest-asyncio's
  loop, in its strict and auto modes alike.

Known limit: an anyio-marked test in a suite where pytest-asyncio's *auto* mode is on
(or a test marked both ``anyio`` and ``asyncio``) is run by pytest-asyncio on its loop
while anyio's plugin runs every async fixture of that test on anyio's loop. No fixture
can serve both loops, so ours fail such a test at once and say so, instead of letting it
hang on a server bound to the other loop. Use ``asyncio_mode = strict`` beside anyio, or
drop the ``anyio`` marker there. A test that no plugin runs gets a clear error as well.
Fixture loop scopes follow pytest-asyncio's ``asyncio_default_fixture_loop_scope`` (use
``function``, or the tests' own loop scope).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import pytest

from aioinformer.testing._threaded import ThreadedFakeAPIServer
from aioinformer.testing.apiserver import FakeAPIServer
from aioinformer.testing.clock import FakeClock

if TYPE_CHECKING:
    from aioinformer.client import Client

__all__ = [
    "FakeAPIServerFactory",
    "ThreadedFakeAPIServerFactory",
    "fake_apiserver",
    "fake_apiserver_factory",
    "fake_clock",
    "kube_client",
]

FakeAPIServerFactory = Callable[..., Awaitable[FakeAPIServer]]
"""``await factory(**options)``: start a :class:`FakeAPIServer` closed after the test."""

ThreadedFakeAPIServerFactory = Callable[..., ThreadedFakeAPIServer]
"""``factory(**options)`` in a sync test: a started :class:`ThreadedFakeAPIServer`, closed
after the test."""

_AnyFactory: TypeAlias = FakeAPIServerFactory | ThreadedFakeAPIServerFactory

_ASYNCIO_FACTORY: Final = "_aioinformer_asyncio_fake_apiserver_factory"
_ASYNCIO_SERVER: Final = "_aioinformer_asyncio_fake_apiserver"
_ASYNCIO_CLIENT: Final = "_aioinformer_asyncio_kube_client"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fake_apiserver(**options): keyword options for the fake_apiserver fixture's "
        "FakeAPIServer (history_size, keep_history_before_start, bookmark_interval, clock, "
        "too_large_rv_wait, require_namespaces, watch_list, expired_watch, "
        "watch_list_compression, validate_specs, ...)",
    )


# -- the async bodies, shared by both ways of running them ------------------------------------


async def _factory_body() -> AsyncIterator[FakeAPIServerFactory]:
    async with contextlib.AsyncExitStack() as stack:

        async def start(**options: Any) -> FakeAPIServer:
            return await stack.enter_async_context(FakeAPIServer(**options))

        yield start


async def _server_body(
    request: pytest.FixtureRequest, factory: FakeAPIServerFactory
) -> FakeAPIServer:
    return await factory(**_marker_options(request))


async def _client_body(server: FakeAPIServer) -> AsyncIterator[Client]:
    async with server.client() as client:
        yield client


# -- pytest-asyncio's side ------------------------------------------------------------------------

try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - exercised only without pytest-asyncio
    pytest_asyncio = None  # type: ignore[assignment]

if pytest_asyncio is not None:

    @pytest_asyncio.fixture(name=_ASYNCIO_FACTORY)
    async def _asyncio_factory() -> AsyncIterator[FakeAPIServerFactory]:
        async for factory in _factory_body():
            yield factory

    @pytest_asyncio.fixture(name=_ASYNCIO_SERVER)
    async def _asyncio_server(
        request: pytest.FixtureRequest, fake_apiserver_factory: FakeAPIServerFactory
    ) -> FakeAPIServer:
        return await _server_body(request, fake_apiserver_factory)

    @pytest_asyncio.fixture(name=_ASYNCIO_CLIENT)
    async def _asyncio_client(fake_apiserver: FakeAPIServer) -> AsyncIterator[Client]:
        async for client in _client_body(fake_apiserver):
            yield client


# -- sync tests: the fake on a thread of its own ------------------------------------------------


def _is_sync_test(request: pytest.FixtureRequest) -> bool:
    """Whether the requesting test is a plain function, which no event loop runs (a
    doctest, or any other item that is not a Python function, is one too)."""
    node = request.node
    if not isinstance(node, pytest.Function):
        return True
    function = node.obj
    # Hypothesis wraps an async test in a sync one and keeps the original here.
    hypothesis = getattr(function, "hypothesis", None)
    inner = getattr(hypothesis, "inner_test", None)
    if inner is not None:
        function = inner
    return not (inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function))


def _threaded_factory() -> Iterator[ThreadedFakeAPIServerFactory]:
    with contextlib.ExitStack() as stack:

        def start(**options: Any) -> ThreadedFakeAPIServer:
            return stack.enter_context(ThreadedFakeAPIServer(**options))

        yield start


def _marker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("fake_apiserver")
    return dict(marker.kwargs) if marker is not None else {}


_AWAITED_FACTORY: Final = (
    "fake_apiserver_factory, as overridden here, returns an awaitable, which this sync "
    "test cannot await: in a sync test the plugin's factory returns a started "
    "ThreadedFakeAPIServer. Let an override return what the plugin's factory returns, "
    "without awaiting it ('return fake_apiserver_factory(**options)' from a plain def), "
    "and it serves sync and async tests alike"
)


_BLOCKED_LOOP: Final = (
    "starlette's TestClient blocks this async test's event loop, which serves "
    "fake_apiserver: the app's informers could never reach the server and the test would "
    "hang. Write the test as a plain 'def test_...()' (fake_apiserver is then served from "
    "a thread of its own), or keep it async and drive the app with "
    "httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) inside "
    "'async with app.router.lifespan_context(app):'"
)


def _starlette_test_client() -> type[Any] | None:
    """Starlette's ``TestClient`` when Starlette is installed, imported now so that a test
    that imports it in its own body (``from fastapi.testclient import TestClient``) meets
    the guard too; ``None`` without Starlette, or without the HTTP client it needs."""
    if importlib.util.find_spec("starlette") is None:
        return None
    with warnings.catch_warnings():
        # Starlette warns when it finds httpx but not httpx2: that is the test's to see,
        # when it imports TestClient itself, not the fixture's to fail on.
        warnings.simplefilter("ignore")
        try:
            from starlette.testclient import TestClient
        except (ImportError, RuntimeError):  # neither httpx2 nor httpx: no TestClient
            return None
    return TestClient


@contextlib.contextmanager
def _refusing_blocking_test_clients() -> Iterator[None]:
    """While an in-loop fake serves an async test: entering Starlette's ``TestClient``
    on that test's loop fails at once instead of hanging (see the module docstring)."""
    test_client = _starlette_test_client()
    if test_client is None:
        yield
        return
    original = test_client.__enter__

    def enter(self: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop here to block: a thread of the test's own
            return original(self)
        pytest.fail(_BLOCKED_LOOP, pytrace=False)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(test_client, "__enter__", enter)
        yield


# -- choosing the loop ----------------------------------------------------------------------------


def _pytest_asyncio_runs(config: pytest.Config) -> bool:
    """Whether pytest-asyncio is active in this session, however it was loaded: through
    its entry point (named ``asyncio``), ``-p pytest_asyncio.plugin`` or ``pytest_plugins``
    (both named after the module)."""
    plugin = sys.modules.get("pytest_asyncio.plugin")
    return plugin is not None and config.pluginmanager.is_registered(plugin)


def _runs_on_anyio(request: pytest.FixtureRequest) -> bool:
    """Whether anyio's plugin runs the requesting test (its marker adds ``anyio_backend``);
    fails the test when pytest-asyncio claims it as well (see the module docstring)."""
    if "anyio_backend" not in request.fixturenames:
        return False
    if request.node.get_closest_marker("asyncio") is not None and _pytest_asyncio_runs(
        request.config
    ):
        pytest.fail(
            "this anyio test is also run by pytest-asyncio (its auto mode marks every async "
            "test 'asyncio'), and the two plugins put the test and its async fixtures on "
            "different event loops: use asyncio_mode = strict beside anyio",
            pytrace=False,
        )
    return True


@contextlib.contextmanager
def _anyio_runner(request: pytest.FixtureRequest) -> Iterator[Any]:
    """anyio's test runner for the requesting test (the one that runs the test too: anyio
    keeps one runner alive while anything holds it)."""
    from anyio.pytest_plugin import extract_backend_and_options, get_runner

    backend, options = extract_backend_and_options(request.getfixturevalue("anyio_backend"))
    if backend != "asyncio":
        pytest.fail(
            f"aioinformer's fixtures need the asyncio backend; anyio_backend is {backend!r}",
            pytrace=False,
        )
    with get_runner(backend, options) as runner:
        yield runner


def _asyncio_value(request: pytest.FixtureRequest, name: str) -> Any:
    """The value of pytest-asyncio fixture ``name`` (set up on pytest-asyncio's loop)."""
    if not _pytest_asyncio_runs(request.config):
        pytest.fail(
            f"{request.fixturename!r} is an async fixture: run the test with pytest-asyncio "
            "(async test in auto mode, or @pytest.mark.asyncio) or with anyio's plugin "
            "(@pytest.mark.anyio)",
            pytrace=False,
        )
    return request.getfixturevalue(name)


# -- the fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def fake_clock() -> FakeClock:
    """A :class:`FakeClock` at time 0, for components that take ``clock=``."""
    return FakeClock()


@pytest.fixture
def fake_apiserver_factory(request: pytest.FixtureRequest) -> Iterator[_AnyFactory]:
    """A factory starting :class:`FakeAPIServer` instances (``await factory(**options)``;
    in a sync test ``factory(**options)``, a :class:`ThreadedFakeAPIServer`); all are
    closed after the test."""
    if _is_sync_test(request):
        yield from _threaded_factory()
        return
    with _refusing_blocking_test_clients():
        if _runs_on_anyio(request):
            with _anyio_runner(request) as runner:
                yield from runner.run_asyncgen_fixture(_factory_body, {})
        else:
            yield _asyncio_value(request, _ASYNCIO_FACTORY)


@pytest.fixture
def fake_apiserver(
    request: pytest.FixtureRequest, fake_apiserver_factory: _AnyFactory
) -> FakeAPIServer | ThreadedFakeAPIServer:
    """A started :class:`FakeAPIServer` on 127.0.0.1, closed after the test; in a sync
    test a :class:`ThreadedFakeAPIServer` (served from a thread of its own, its methods
    blocking).

    Options come from ``@pytest.mark.fake_apiserver(**options)`` when the test has it.
    """
    if _is_sync_test(request):
        threaded = fake_apiserver_factory(**_marker_options(request))
        if not isinstance(threaded, ThreadedFakeAPIServer):
            if inspect.iscoroutine(threaded):
                threaded.close()
            pytest.fail(_AWAITED_FACTORY, pytrace=False)
        return threaded
    if _runs_on_anyio(request):
        with _anyio_runner(request) as runner:
            server: FakeAPIServer = runner.run_fixture(
                _server_body, {"request": request, "factory": fake_apiserver_factory}
            )
            return server
    result: FakeAPIServer = _asyncio_value(request, _ASYNCIO_SERVER)
    return result


_SYNC_CLIENT_LEFT_OPEN: Final = (
    "kube_client was used on an event loop of this sync test and left open, where "
    "nothing can close it on that loop any more: enter it on the loop that uses it "
    "('async with kube_client:' inside asyncio.run(...))"
)


@pytest.fixture
def kube_client(
    request: pytest.FixtureRequest, fake_apiserver: FakeAPIServer | ThreadedFakeAPIServer
) -> Iterator[Client]:
    """An :class:`aioinformer.client.Client` for ``fake_apiserver`` (admin token).

    In a sync test it is not entered (no loop runs there to own its connections): code
    that runs a loop enters it there (``async with kube_client:``), once. A client used
    there and left open fails the test at teardown, saying so.
    """
    if isinstance(fake_apiserver, ThreadedFakeAPIServer):
        client = fake_apiserver.client()
        yield client
        if client.session is not None:
            pytest.fail(_SYNC_CLIENT_LEFT_OPEN, pytrace=False)
        return
    if _runs_on_anyio(request):
        with _anyio_runner(request) as runner:
            yield from runner.run_asyncgen_fixture(_client_body, {"server": fake_apiserver})
    else:
        yield _asyncio_value(request, _ASYNCIO_CLIENT)
