"""The fake API server's history starts where it started serving, as a freshly started
kube-apiserver's watch cache does: objects stored before ``start()`` are there, but a
WATCH or an ``Exact`` LIST from an older resourceVersion answers 410 ``Expired``, in the
words of kube-apiserver v1.36 (``getAllEventsSinceLocked`` for the watch, the storage's
compaction answer for the list). Reads of the current state are never too old;
``keep_history_before_start`` keeps the older events; ``restart(reset_history=True)``
starts the window again at the restart.

Checked over plain HTTP (status codes and ``Status`` bodies) and through the client and
an informer (what a user meets). Every read is bounded so a regression fails instead of
hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from aioinformer._kernel.backoff import Backoff
from aioinformer.delta_fifo import DeletedFinalStateUnknown
from aioinformer.errors import Gone
from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import ListOptions
from aioinformer.testing import FakeAPIServer
from tests._support_http import Api, status_body
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import ResourceClient

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
SEEDED = ["a", "b", "c"]
READ_TIMEOUT = 5.0
TOO_OLD_LIST = status_body(410, "Expired", "The resourceVersion for the provided list is too old.")


def config_map(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
    }


def too_old_watch(rv: str, oldest: str) -> dict[str, Any]:
    """kube-apiserver's answer to a watch from ``rv`` when its window starts at ``oldest``."""
    return status_body(410, "Expired", f"too old resource version: {rv} ({oldest})")


def names(body: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


@contextlib.asynccontextmanager
async def seeded_server(**options: Any) -> AsyncIterator[tuple[FakeAPIServer, Api]]:
    """A server holding ConfigMaps a, b and c, written through the Python API before it
    started (as a test seeds its state), and plain-HTTP access to it."""
    server = FakeAPIServer(**options)
    for name in SEEDED:
        server.create(config_map(name))
    async with server, aiohttp.ClientSession() as session:
        yield server, Api(session, server.url)


async def watch_params(api: Api, **params: str) -> tuple[int, Any]:
    """Open a watch that is refused or ends by itself; its status and decoded body."""
    async with asyncio.timeout(READ_TIMEOUT):
        code, body, _ = await api.call("GET", CONFIGMAPS, params={"watch": "true", **params})
    return code, body


def expired_answer(rv: str, oldest: str) -> tuple[int, Any]:
    """What a watch from ``rv`` gets once the history starts at ``oldest``: HTTP 200 and
    one ERROR event carrying the 410, as kube-apiserver v1.36.2 answers."""
    return 200, {"type": "ERROR", "object": too_old_watch(rv, oldest)}


async def first_events(
    configmaps: ResourceClient, options: ListOptions, count: int
) -> list[tuple[str, str]]:
    """The first ``count`` events of a watch, as (type, name) pairs (bookmarks: their
    resourceVersion)."""
    events: list[tuple[str, str]] = []
    async with (
        asyncio.timeout(READ_TIMEOUT),
        contextlib.aclosing(configmaps.watch(options)) as stream,
    ):
        async for event in stream:
            meta = event.object["metadata"]
            events.append((event.type, meta.get("name") or meta["resourceVersion"]))
            if len(events) == count:
                break
    return events


# -- before the start: 410 -------------------------------------------------------------------


async def test_a_watch_from_before_the_start_gets_one_error_event_as_kube_apiserver_does() -> None:
    async with seeded_server() as (server, api):
        started_at = server.resource_version
        seeded_rv = server.get("configmaps", "default", "a")["metadata"]["resourceVersion"]
        for rv in ("1", seeded_rv, str(int(started_at) - 1)):
            code, body = await watch_params(api, resourceVersion=rv)
            assert (code, body) == expired_answer(rv, started_at), rv
        # Asking for bookmarks or selectors changes nothing: the version is what is too old.
        code, body = await watch_params(
            api, resourceVersion=seeded_rv, allowWatchBookmarks="true", labelSelector="app=web"
        )
        assert (code, body) == expired_answer(seeded_rv, started_at)


async def test_the_client_raises_gone_for_a_watch_from_before_the_start() -> None:
    async with seeded_server() as (server, _), server.client() as client:
        configmaps = client.resource("configmaps", namespace="default")
        with pytest.raises(Gone) as caught:
            await first_events(configmaps, ListOptions(resource_version="1"), 1)
        assert caught.value.status == too_old_watch("1", server.resource_version)


async def test_a_watch_from_before_the_start_may_answer_410_on_open_instead() -> None:
    async with seeded_server(expired_watch="status") as (server, api):
        started_at = server.resource_version
        code, body = await watch_params(api, resourceVersion="1")
        assert (code, body) == (410, too_old_watch("1", started_at))


async def test_an_exact_list_from_before_the_start_answers_410_expired() -> None:
    async with seeded_server() as (server, api):
        seeded_rv = server.get("configmaps", "default", "a")["metadata"]["resourceVersion"]
        before_start = str(int(server.resource_version) - 1)
        for params in (
            {"resourceVersion": seeded_rv, "resourceVersionMatch": "Exact"},
            {"resourceVersion": before_start, "resourceVersionMatch": "Exact"},
            # A limit without a match makes a non-zero version exact too.
            {"resourceVersion": seeded_rv, "limit": "2"},
        ):
            code, body, _ = await api.call("GET", CONFIGMAPS, params=params)
            assert (code, body) == (410, TOO_OLD_LIST), params


# -- never too old: the current state ---------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"resourceVersion": ""},
        {"resourceVersion": "0"},
        {"resourceVersion": "1", "resourceVersionMatch": "NotOlderThan"},
        {"resourceVersion": "1"},  # NotOlderThan, the legacy way
        {"resourceVersion": "0", "limit": "10"},
    ],
    ids=["unset", "empty", "zero", "not-older-than", "legacy-not-older-than", "zero-with-limit"],
)
async def test_a_list_of_the_current_state_is_never_too_old(params: dict[str, str]) -> None:
    async with seeded_server() as (server, api):
        code, body, _ = await api.call("GET", CONFIGMAPS, params=params)
        assert code == 200
        assert names(body) == SEEDED
        assert body["metadata"]["resourceVersion"] == server.resource_version


@pytest.mark.parametrize(
    "options",
    [
        ListOptions(),
        ListOptions(resource_version="0"),
        ListOptions(
            resource_version="1",
            resource_version_match="NotOlderThan",
            send_initial_events=True,
            allow_watch_bookmarks=True,
        ),
    ],
    ids=["unset", "zero", "send-initial-events-from-1"],
)
async def test_a_watch_that_starts_with_the_current_state_is_never_too_old(
    options: ListOptions,
) -> None:
    async with seeded_server() as (server, _), server.client() as client:
        configmaps = client.resource("configmaps", namespace="default")
        events = await first_events(configmaps, options, len(SEEDED))
        assert events == [("ADDED", name) for name in SEEDED]


# -- from the start on: served ---------------------------------------------------------------


async def test_a_watch_from_the_start_on_replays_what_happened_since() -> None:
    async with seeded_server() as (server, _), server.client() as client:
        started_at = server.resource_version
        server.create(config_map("d"))
        after_d = server.resource_version
        server.patch("configmaps", "default", "a", {"metadata": {"labels": {"x": "1"}}})
        server.delete("configmaps", "default", "b")
        configmaps = client.resource("configmaps", namespace="default")
        since_start = await first_events(configmaps, ListOptions(resource_version=started_at), 3)
        assert since_start == [("ADDED", "d"), ("MODIFIED", "a"), ("DELETED", "b")]
        since_d = await first_events(configmaps, ListOptions(resource_version=after_d), 2)
        assert since_d == [("MODIFIED", "a"), ("DELETED", "b")]


async def test_an_exact_list_from_the_start_on_serves_the_state_at_that_version() -> None:
    async with seeded_server() as (server, api):
        started_at = server.resource_version
        server.create(config_map("d"))
        after_d = server.resource_version
        server.delete("configmaps", "default", "a")
        for rv, expected in ((started_at, SEEDED), (after_d, [*SEEDED, "d"])):
            params = {"resourceVersion": rv, "resourceVersionMatch": "Exact"}
            code, body, _ = await api.call("GET", CONFIGMAPS, params=params)
            assert code == 200
            assert names(body) == expected
            assert body["metadata"]["resourceVersion"] == rv


# -- the knob ---------------------------------------------------------------------------------


async def test_keep_history_before_start_replays_the_seeded_objects() -> None:
    async with (
        seeded_server(keep_history_before_start=True) as (server, api),
        server.client() as client,
    ):
        configmaps = client.resource("configmaps", namespace="default")
        events = await first_events(configmaps, ListOptions(resource_version="1"), len(SEEDED))
        assert events == [("ADDED", name) for name in SEEDED]
        seeded_rv = server.get("configmaps", "default", "a")["metadata"]["resourceVersion"]
        params = {"resourceVersion": seeded_rv, "resourceVersionMatch": "Exact"}
        code, body, _ = await api.call("GET", CONFIGMAPS, params=params)
        assert code == 200
        assert names(body) == ["a"]


@pytest.mark.parametrize(
    "expected",
    [
        pytest.param((410, TOO_OLD_LIST), id="default"),
        pytest.param(
            (200, ["default"]),
            id="kept",
            marks=pytest.mark.fake_apiserver(keep_history_before_start=True),
        ),
    ],
)
async def test_the_fixtures_server_keeps_the_history_from_before_its_start_only_if_marked_to(
    fake_apiserver: FakeAPIServer, expected: tuple[int, Any]
) -> None:
    # The default namespaces were created before the fixture started the server.
    async with aiohttp.ClientSession() as session:
        api = Api(session, fake_apiserver.url)
        params = {"resourceVersion": "1", "resourceVersionMatch": "Exact"}
        code, body, _ = await api.call("GET", "/api/v1/namespaces", params=params)
    assert (code, names(body) if code == 200 else body) == expected


# -- restarts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("keep_history_before_start", [False, True])
async def test_a_restart_with_a_reset_history_starts_the_window_again_at_the_restart(
    keep_history_before_start: bool,
) -> None:
    async with seeded_server(keep_history_before_start=keep_history_before_start) as (
        server,
        api,
    ):
        server.create(config_map("d"))
        served_rv = server.resource_version  # a version from before the restart
        server.create(config_map("e"))
        await server.restart(reset_history=True)
        restarted_at = server.resource_version
        code, body = await watch_params(api, resourceVersion=served_rv)
        assert (code, body) == expired_answer(served_rv, restarted_at)
        params = {"resourceVersion": served_rv, "resourceVersionMatch": "Exact"}
        code, body, _ = await api.call("GET", CONFIGMAPS, params=params)
        assert (code, body) == (410, TOO_OLD_LIST)
        # The objects survived, and the restart's version is the oldest one served.
        params = {"resourceVersion": restarted_at, "resourceVersionMatch": "Exact"}
        code, body, _ = await api.call("GET", CONFIGMAPS, params=params)
        assert code == 200
        assert names(body) == [*SEEDED, "d", "e"]


async def test_a_restart_keeping_its_history_still_serves_versions_from_before_it() -> None:
    async with seeded_server() as (server, _), server.client() as client:
        started_at = server.resource_version
        server.create(config_map("d"))
        await server.restart(reset_history=False)
        configmaps = client.resource("configmaps", namespace="default")
        assert await first_events(configmaps, ListOptions(resource_version=started_at), 1) == [
            ("ADDED", "d")
        ]
        # The window still starts where the server first started serving.
        with pytest.raises(Gone):
            await first_events(configmaps, ListOptions(resource_version="1"), 1)


# -- an informer -------------------------------------------------------------------------------


# The re-watch after the restart is too old: kube-apiserver v1.36.2 says so with an ERROR
# event in a 200 stream (the default); other servers answer HTTP 410 on open.
@pytest.mark.parametrize("expired_watch", ["error_event", "status"])
async def test_an_informer_syncs_the_seeded_objects_and_relists_through_a_restart(
    expired_watch: Any,
) -> None:
    async with (
        seeded_server(expired_watch=expired_watch) as (server, _),
        server.client() as client,
    ):
        heard: list[BaseException] = []
        deleted: list[Any] = []
        informer = SharedIndexInformer(
            client.resource("configmaps", namespace="default"),
            backoff=Backoff(initial=0.01, cap=0.05),
            watch_error_handler=lambda _reflector, exc: heard.append(exc),
        )
        informer.add_event_handler(on_delete=deleted.append)

        def cached() -> list[str]:
            return sorted(obj["metadata"]["name"] for obj in informer.lister().list())

        async with informer:
            assert await informer.wait_for_sync(timeout=READ_TIMEOUT)
            assert cached() == SEEDED
            server.create(config_map("d"))
            await wait_until(lambda: cached() == [*SEEDED, "d"], poll=0.005)
            # While nobody can connect: changes the informer's watch never carries, then a
            # restart that forgets them, so its re-watch is from a version too old.
            await server.faults.refuse_connections()
            server.delete("configmaps", "default", "a")
            server.create(config_map("e"))
            await server.restart(reset_history=True)
            await wait_until(lambda: cached() == ["b", "c", "d", "e"], poll=0.005)
            stats = informer.statistics().reflector
            assert stats is not None
            assert stats.relists >= 1
        assert any(isinstance(exc, Gone) for exc in heard), heard
        # Only the relist could tell: the deletion arrives as a tombstone.
        assert [(type(obj), obj.key) for obj in deleted] == [
            (DeletedFinalStateUnknown, "default/a")
        ]
