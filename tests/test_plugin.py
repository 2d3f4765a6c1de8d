"""The pytest plugin, seen from a user's project: the entry point registers it, and its
fixtures work under pytest-asyncio (auto and strict modes) and anyio's plugin."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

pytest_plugins = ["pytester"]

USER_TEST = """
import aiohttp
import orjson
import pytest

from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer

{extra}


{marker}
async def test_create_list_watch_and_fault(fake_apiserver: FakeAPIServer) -> None:
    fake_apiserver.create(
        {{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "a", "namespace": "default"}}}}
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


def test_fake_clock_fixture(fake_clock) -> None:
    assert fake_clock.monotonic() == 0.0
"""


def test_plugin_is_registered_through_the_pytest11_entry_point() -> None:
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("aioinformer") == "aioinformer.testing.plugin"


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
    ],
    ids=["pytest-asyncio-auto", "pytest-asyncio-strict", "anyio"],
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
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", *plugins)
    result.assert_outcomes(passed=3)


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
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
