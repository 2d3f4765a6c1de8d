"""The pytest plugin, seen from a user's project: the entry point registers it, and its
fixtures work under pytest-asyncio (auto and strict modes) and anyio's plugin.

Each user's suite runs in its own pytest process, as a user's would: the plugin is loaded
through its entry point there, and no state of this session (event loop policy, anyio's
shared test runner, warning filters, pytest-timeout's alarm) reaches into it. A suite that
hangs fails on ``SUITE_TIMEOUT`` with its output, well before this test's own timeout.
"""

from __future__ import annotations

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
    "no-async-plugin": (
        """
def test_it(fake_apiserver):
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
