"""The pytest plugin, seen from a user's project: the entry point registers it, and its
fixtures work under pytest-asyncio (auto and strict modes) and anyio's plugin.

Each user's suite runs in its own pytest process, as a user's would: the plugin is loaded
through its entry point there, and no state of this session (event loop policy, anyio's
shared test runner, warning filters, pytest-timeout's alarm) reaches into it. A suite that
hangs fails on ``SUITE_TIMEOUT`` with its output, well before this test's own timeout.
"""

from __future__ import annotations

import time

import pytest

pytest_plugins = ["pytester"]

SUITE_TIMEOUT = 90.0
"""Seconds a user's suite may run (about 3 s unloaded): bounds a hang only."""

USER_TEST = """
import asyncio
import contextlib

import aiohttp
import orjson
import pytest

from aioinformer.listwatch import ListOptions
from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer

{extra}


{marker}
async def test_create_list_watch_and_fault(fake_apiserver: FakeAPIServer) -> None:
    fake_apiserver.create(
        {{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "a", "namespace": "default"}},
          "spec": {{"containers": [{{"name": "main", "image": "busybox"}}]}}}}
    )
    headers = {{"Authorization": f"Bearer {{ADMIN_TOKEN}}"}}
    async with aiohttp.ClientSession(headers=headers) as session:
        url = fake_apiserver.url + "/api/v1/namespaces/default/pods"
        async with session.get(url) as response:
            body = orjson.loads(await response.read())
        assert [item["metadata"]["name"] for item in body["items"]] == ["a"]
        fake_apiserver.faults.fail_next(1, status=429)
        async with session.get(url) as response:
            assert response.status == 429
        assert fake_apiserver.faults.count("fail") == 1


{marker}
async def test_factory_starts_independent_servers(fake_apiserver_factory) -> None:
    first = await fake_apiserver_factory()
    second = await fake_apiserver_factory(history_size=5)
    assert first.url != second.url


{marker}
@pytest.mark.fake_apiserver(history_size=7)
async def test_kube_client_lists_and_watches_on_the_tests_loop(fake_apiserver, kube_client) -> None:
    assert fake_apiserver._store.history_size == 7
    pods = kube_client.resource("pods", "default")
    async with asyncio.timeout(5):
        page = await pods.list()
        meta = {{"name": "b", "namespace": "default"}}
        spec = {{"containers": [{{"name": "main", "image": "busybox"}}]}}
        fake_apiserver.create({{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}})
        watch = pods.watch(ListOptions(resource_version=page.resource_version))
        async with contextlib.aclosing(watch) as events:
            async for event in events:
                assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "b")
                break


def test_fake_clock_fixture(fake_clock) -> None:
    assert fake_clock.monotonic() == 0.0
"""


def run_suite(pytester: pytest.Pytester, *options: str) -> pytest.RunResult:
    """Run the suite in ``pytester``'s directory in a pytest subprocess, in file order."""
    return pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", *options, timeout=SUITE_TIMEOUT
    )


ANYIO_BACKEND = """
@pytest.fixture
def anyio_backend():
    return "asyncio"
"""


@pytest.mark.parametrize(
    ("mode", "marker", "extra", "plugins"),
    [
        ("auto", "", "", ["-p", "no:anyio"]),
        ("strict", "@pytest.mark.asyncio", "", ["-p", "no:anyio"]),
        ("strict", "@pytest.mark.anyio", ANYIO_BACKEND, ["-p", "no:asyncio"]),
        ("strict", "@pytest.mark.anyio", ANYIO_BACKEND, []),
    ],
    ids=[
        "pytest-asyncio-auto",
        "pytest-asyncio-strict",
        "anyio-without-pytest-asyncio",
        "anyio-beside-pytest-asyncio-strict",
    ],
)
def test_fixtures_work_in_a_users_suite(
    pytester: pytest.Pytester, mode: str, marker: str, extra: str, plugins: list[str]
) -> None:
    asyncio_options = (
        f"asyncio_mode = {mode}\nasyncio_default_fixture_loop_scope = function\n"
        if "no:asyncio" not in plugins
        else ""
    )
    pytester.makeini(f"[pytest]\n{asyncio_options}filterwarnings = error\n")
    pytester.makepyfile(test_user=USER_TEST.format(marker=marker, extra=extra))
    result = run_suite(pytester, *plugins)
    result.assert_outcomes(passed=4)


MIXED_SUITE = """
import asyncio

import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.asyncio
async def test_on_pytest_asyncio(kube_client, fake_apiserver):
    assert (await kube_client.resource("namespaces").get("default"))["kind"] == "Namespace"


@pytest.mark.anyio
async def test_on_anyio(kube_client, fake_apiserver):
    assert (await kube_client.resource("namespaces").get("default"))["kind"] == "Namespace"
"""


def test_one_suite_can_mix_pytest_asyncio_and_anyio_tests(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = error\n"
    )
    pytester.makepyfile(test_mixed=MIXED_SUITE)
    result = run_suite(pytester)
    result.assert_outcomes(passed=2)


MISUSE = {
    "anyio-under-pytest-asyncio-auto": (
        """
import pytest

@pytest.fixture
def anyio_backend():
    return "asyncio"

@pytest.mark.anyio
async def test_it(fake_apiserver):
    pass
""",
        ["-o", "asyncio_mode=auto"],
        "this anyio test is also run by pytest-asyncio*use asyncio_mode = strict beside anyio",
    ),
    "trio-backend": (
        """
import pytest

@pytest.fixture
def anyio_backend():
    return "trio"

@pytest.mark.anyio
async def test_it(fake_apiserver):
    pass
""",
        [],
        "aioinformer's fixtures need the asyncio backend; anyio_backend is 'trio'",
    ),
    "async-factory-override-in-a-sync-test": (
        """
import pytest

@pytest.fixture
def fake_apiserver_factory(fake_apiserver_factory):
    async def start(**options):
        return await fake_apiserver_factory(history_size=5, **options)
    return start

def test_it(fake_apiserver):
    pass
""",
        [],
        "fake_apiserver_factory, as overridden here, returns an awaitable*without awaiting*",
    ),
    "no-async-plugin": (
        """
async def test_it(fake_apiserver):
    pass
""",
        ["-p", "no:asyncio", "-p", "no:anyio"],
        "'fake_apiserver_factory' is an async fixture: run the test with pytest-asyncio",
    ),
}


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_fixtures_explain_a_test_no_plugin_can_serve(pytester: pytest.Pytester, case: str) -> None:
    source, plugins, message = MISUSE[case]
    pytester.makeini(
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"
        if "no:asyncio" not in plugins
        else "[pytest]\n"
    )
    pytester.makepyfile(test_misuse=source)
    result = run_suite(pytester, *plugins)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*{message}*"])


def test_marker_is_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        """
        [pytest]
        asyncio_mode = auto
        asyncio_default_fixture_loop_scope = function
        addopts = --strict-markers
        """
    )
    pytester.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.fake_apiserver(history_size=7)
        async def test_marked(fake_apiserver):
            assert fake_apiserver._store.history_size == 7
        """
    )
    result = run_suite(pytester)
    result.assert_outcomes(passed=1)


def test_fixtures_see_pytest_asyncio_loaded_by_its_module_name(pytester: pytest.Pytester) -> None:
    # Not through its entry point ("asyncio", blocked here) but as a conftest loads it.
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest('pytest_plugins = ["pytest_asyncio.plugin"]\n')
    pytester.makepyfile(test_user=USER_TEST.format(marker="@pytest.mark.asyncio", extra=""))
    result = run_suite(pytester, "-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(passed=4)


# -- sync tests: the fake on a thread of its own -------------------------------------------

SYNC_USER_TEST = """
import asyncio
import json
import socket
import threading
import urllib.error
import urllib.request

import pytest

from aioinformer import SharedIndexInformer, SharedInformerFactory
from aioinformer.testing import ADMIN_TOKEN, ThreadedFakeAPIServer

POD = {{"apiVersion": "v1", "kind": "Pod",
       "metadata": {{"name": "a", "namespace": "default"}},
       "spec": {{"containers": [{{"name": "main", "image": "busybox"}}]}}}}


def get(url):
    request = urllib.request.Request(url, headers={{"Authorization": f"Bearer {{ADMIN_TOKEN}}"}})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, None


@pytest.fixture(autouse=True)
def nothing_left_behind():
    # Set up first, torn down last: after the fake's own teardown.
    before = set(threading.enumerate())
    ports = []
    yield ports
    assert set(threading.enumerate()) <= before
    for port in ports:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()


@pytest.mark.fake_apiserver(history_size=7)
def test_a_sync_test_gets_a_fake_that_answers(fake_apiserver, nothing_left_behind):
    nothing_left_behind.append(fake_apiserver.port)
    assert isinstance(fake_apiserver, ThreadedFakeAPIServer)
    assert fake_apiserver.server._store.history_size == 7
    fake_apiserver.create(POD)
    status, body = get(fake_apiserver.url + "/api/v1/namespaces/default/pods")
    assert status == 200
    assert [item["metadata"]["name"] for item in body["items"]] == ["a"]
    fake_apiserver.faults.fail_next(1, status=429)
    assert get(fake_apiserver.url + "/api/v1/pods")[0] == 429
    assert fake_apiserver.faults.count("fail") == 1


def test_code_on_a_loop_of_its_own_reaches_it(fake_apiserver, nothing_left_behind):
    nothing_left_behind.append(fake_apiserver.port)
    fake_apiserver.create(POD)

    async def cached_names():
        async with fake_apiserver.client() as client:
            informer = SharedIndexInformer(client.resource("pods", "default"))
            async with informer:
                assert await informer.wait_for_sync(timeout=5)
                return [pod["metadata"]["name"] for pod in informer.lister().list()]

    assert asyncio.run(cached_names()) == ["a"]


def test_the_factory_starts_more_without_await(fake_apiserver_factory, nothing_left_behind):
    first = fake_apiserver_factory()
    second = fake_apiserver_factory(require_namespaces=False)
    nothing_left_behind.extend([first.port, second.port])
    assert first.url != second.url
    second.create({{**POD, "metadata": {{"name": "b", "namespace": "anywhere"}}}})
    assert [p["metadata"]["name"] for p in second.objects("pods")] == ["b"]
    assert first.objects("pods") == []


def test_kube_client_is_entered_by_the_loop_that_uses_it(kube_client, fake_apiserver):
    factory = SharedInformerFactory(kube_client)  # building needs no loop
    assert factory.informer_for("pods") is factory.informer_for("pods")

    async def namespace_kind():
        async with kube_client:
            return (await kube_client.resource("namespaces").get("default"))["kind"]

    assert asyncio.run(namespace_kind()) == "Namespace"


{async_test}
"""

ASYNC_BESIDE_SYNC = """
@pytest.mark.asyncio
async def test_an_async_test_beside_them_keeps_the_fake_on_its_loop(fake_apiserver, kube_client):
    assert not isinstance(fake_apiserver, ThreadedFakeAPIServer)
    assert (await kube_client.resource("namespaces").get("default"))["kind"] == "Namespace"
"""


@pytest.mark.parametrize(
    ("ini", "plugins", "async_test", "passed"),
    [
        ("asyncio_mode = auto\n", ["-p", "no:anyio"], ASYNC_BESIDE_SYNC, 5),
        ("asyncio_mode = strict\n", [], ASYNC_BESIDE_SYNC, 5),
        ("", ["-p", "no:asyncio"], "", 4),
        ("", ["-p", "no:asyncio", "-p", "no:anyio"], "", 4),
    ],
    ids=["pytest-asyncio-auto", "pytest-asyncio-strict", "anyio-only", "no-async-plugin"],
)
def test_sync_tests_get_the_fake_on_a_thread_of_its_own(
    pytester: pytest.Pytester, ini: str, plugins: list[str], async_test: str, passed: int
) -> None:
    scope = "asyncio_default_fixture_loop_scope = function\n" if ini else ""
    pytester.makeini(f"[pytest]\n{ini}{scope}filterwarnings = error\n")
    pytester.makepyfile(test_sync_user=SYNC_USER_TEST.format(async_test=async_test))
    result = run_suite(pytester, *plugins)
    result.assert_outcomes(passed=passed)


KUBE_CLIENT_LEFT_OPEN = """
import asyncio


def test_it(kube_client):
    async def use():
        await kube_client.resource("namespaces").get("default")  # opens, never closes

    asyncio.run(use())
"""


def test_a_kube_client_a_sync_test_left_open_fails_it_at_teardown(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = strict\n")
    pytester.makepyfile(test_left_open=KUBE_CLIENT_LEFT_OPEN)
    result = run_suite(pytester, "-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*kube_client was used on an event loop of this sync test and left open*"]
    )


# -- Starlette's TestClient ----------------------------------------------------------------

TEST_CLIENT_SUITE = """
import contextlib

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from aioinformer import SharedInformerFactory

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "a", "namespace": "default"},
       "spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def make_app(client_factory):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with client_factory() as client, SharedInformerFactory(client) as factory:
            app.state.pods = factory.informer_for("pods")
            await factory.wait_for_cache_sync(timeout=10)
            yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/pods")
    async def pods():
        return sorted(p["metadata"]["name"] for p in app.state.pods.lister().list())

    return app


def test_a_sync_test_drives_the_app_with_test_client(fake_apiserver):
    fake_apiserver.create(POD)
    with TestClient(make_app(fake_apiserver.client)) as http:
        assert http.get("/pods").json() == ["a"]


@pytest.mark.asyncio
async def test_test_client_in_an_async_test_fails_at_once(fake_apiserver):
    with TestClient(make_app(fake_apiserver.client)) as http:
        http.get("/pods")
"""

# The same, with nothing importing Starlette's TestClient before the async test does.
IN_TEST_IMPORT_SUITE = """
import contextlib

import pytest
from fastapi import FastAPI

from aioinformer import SharedInformerFactory


def make_app(client_factory):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with client_factory() as client, SharedInformerFactory(client) as factory:
            factory.informer_for("pods")
            await factory.wait_for_cache_sync(timeout=10)
            yield

    return FastAPI(lifespan=lifespan)


@pytest.mark.asyncio
async def test_test_client_imported_in_the_test(fake_apiserver):
    from fastapi.testclient import TestClient

    with TestClient(make_app(fake_apiserver.client)):
        pass
"""


def test_test_client_works_in_a_sync_test_and_fails_fast_in_an_async_one(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = error\n"
    )
    pytester.makepyfile(test_app=TEST_CLIENT_SUITE)
    result = run_suite(pytester, "-p", "no:anyio")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*starlette's TestClient blocks this async test's event loop, which serves "
            "fake_apiserver*def test_...()*httpx.ASGITransport*"
        ]
    )


def test_test_client_imported_only_inside_an_async_test_fails_at_once(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = error\n"
    )
    pytester.makepyfile(test_app=IN_TEST_IMPORT_SUITE)
    started = time.monotonic()
    result = run_suite(pytester, "-p", "no:anyio")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*starlette's TestClient blocks this async test's event loop, which serves *"]
    )
    result.stdout.no_fnmatch_line("*CacheSyncError*")
    # Without the guard, the lifespan's wait for the caches gives up after its 10 s.
    assert time.monotonic() - started < 10


DOCTEST = """
import json
import urllib.request

from aioinformer.testing import ADMIN_TOKEN


def pods_at(url):
    \"\"\"The names of the pods the server at ``url`` lists, over HTTP.

    >>> fake = getfixture("fake_apiserver")
    >>> _ = fake.create({"apiVersion": "v1", "kind": "Pod",
    ...                  "metadata": {"name": "a", "namespace": "default"},
    ...                  "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    >>> pods_at(fake.url)
    ['a']
    \"\"\"
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    request = urllib.request.Request(url + "/api/v1/pods", headers=headers)
    with urllib.request.urlopen(request, timeout=5) as response:
        return [pod["metadata"]["name"] for pod in json.load(response)["items"]]
"""


def test_a_doctest_gets_the_fake_on_a_thread_of_its_own(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = error\n"
    )
    pytester.makepyfile(user_module=DOCTEST)
    result = run_suite(pytester, "--doctest-modules")
    result.assert_outcomes(passed=1)
