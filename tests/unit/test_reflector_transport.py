"""How the reflector reads transport failures and how loudly it logs them: a watch the
server answered with 200 is an open watch even before its first event, a builtin
``ConnectionRefusedError`` is a refusal, and routine recoveries (410 → relist) log at INFO
while what a user must look at (403) logs a WARNING."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from aiohttp import web

from aioinformer._kernel.backoff import Backoff
from aioinformer.client import GVR, Client, ResourceInfo
from aioinformer.config import Config
from aioinformer.errors import ConnectionFailed, Forbidden, Gone
from aioinformer.listwatch import ListOptions, ObjectList, WatchEvent
from aioinformer.reflector import Reflector, ReflectorState
from aioinformer.testing import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_http import serve
from tests._support_reflector import RecordingStore, back_off_until_watching
from tests._support_tasks import stop
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Coroutine

    from aioinformer.watch import WatchStream

JSON = "application/json"
PODS = ResourceInfo(gvr=GVR("", "v1", "pods"), kind="Pod", namespaced=True)


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
    }


def spawn(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(coro)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


# ------------------------------------------------------- a watch answered with a 200


class SilentThenGone:
    """Pods at resourceVersion 5; the first watch answers 200, stays silent, and its
    connection is cut when the test says so; later watches stay open and silent."""

    def __init__(self) -> None:
        self.app = web.Application()
        self.app.router.add_get("/api/v1/namespaces/default/pods", self._pods)
        self.lists = 0
        self.watches: list[dict[str, str]] = []
        self.cut = asyncio.Event()

    async def _pods(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "1":
            self.lists += 1
            body = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}}
            return web.Response(body=orjson.dumps(body | {"items": []}), content_type=JSON)
        self.watches.append(dict(request.query))
        response = web.StreamResponse()
        response.content_type = JSON
        await response.prepare(request)
        if len(self.watches) == 1:
            await self.cut.wait()
            assert request.transport is not None
            request.transport.abort()  # no terminating chunk: the path died
        await asyncio.Event().wait()
        return response


class Recording:
    """The client's pods, keeping every watch stream handed out."""

    def __init__(self, client: Client) -> None:
        self._pods = client.resource(PODS, "default")
        self.streams: list[WatchStream] = []

    async def list(self, options: ListOptions) -> ObjectList:
        return await self._pods.list(options)

    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        stream = self._pods.watch(options)
        self.streams.append(stream)
        return stream


async def test_a_watch_that_got_200_and_broke_before_any_event_is_rewatched_without_a_relist(
    clock: FakeClock,
) -> None:
    server = SilentThenGone()
    async with serve(server.app) as url, Client(Config(host=url)) as client:
        source = Recording(client)
        errors: list[BaseException] = []
        reflector = Reflector(
            source,
            RecordingStore(),
            clock=clock,
            watch_error_handler=lambda r, e: errors.append(e),
            use_watch_list=False,
        )
        task = spawn(reflector.run())
        await wait_until(lambda: bool(source.streams) and source.streams[0].opened)
        await clock.advance(90.0)  # silent, as a dead path is until keepalive gives up
        server.cut.set()

        await wait_until(lambda: len(server.watches) == 2)
        assert [w["resourceVersion"] for w in server.watches] == ["5", "5"]
        assert server.lists == 1
        assert len(errors) == 1
        await stop(task)


async def test_a_watch_stream_is_opened_only_by_a_2xx_answer() -> None:
    async def forbidden(request: web.Request) -> web.Response:
        status = {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "no"}
        return web.Response(body=orjson.dumps(status), status=403, content_type=JSON)

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/default/pods", forbidden)
    async with serve(app) as url, Client(Config(host=url)) as client:
        stream = client.resource(PODS, "default").watch(ListOptions())
        assert not stream.opened
        with pytest.raises(Forbidden):
            await anext(stream)
        assert not stream.opened
        await stream.aclose()


# -------------------------------------------------------------------- refusals


async def test_a_builtin_connection_refused_error_backs_off_and_rewatches_without_relisting(
    clock: FakeClock,
) -> None:
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.fail_next_watch(ConnectionRefusedError(111, "Connection refused"))
    errors: list[BaseException] = []
    reflector = Reflector(
        lw,
        RecordingStore(),
        clock=clock,
        backoff=Backoff(initial=0.5, jitter=0.0, clock=clock),
        watch_error_handler=lambda r, e: errors.append(e),
        use_watch_list=False,
    )
    task = spawn(reflector.run())
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    await clock.advance(0.5)
    await lw.wait_for_watchers(1)

    assert len(lw.list_calls) == 1
    assert [o.resource_version for o in lw.watch_calls] == ["1", "1"]
    assert [type(e) for e in errors] == [ConnectionRefusedError]
    await stop(task)


# ------------------------------------------------------------------- log levels


def loudest(caplog: pytest.LogCaptureFixture) -> int:
    return max(
        (r.levelno for r in caplog.records if r.name.startswith("aioinformer")),
        default=logging.NOTSET,
    )


@pytest.mark.parametrize(
    "break_watch",
    [
        pytest.param(
            lambda lw: lw.fail_next_watch(Gone({"message": "too old", "reason": "Expired"})),
            id="watch-request-answered-410",
        ),
        pytest.param(
            lambda lw: lw.error_next_watch(Gone({"message": "too old", "reason": "Expired"})),
            id="watch-ended-by-a-410-event",
        ),
    ],
)
async def test_a_410_handled_by_a_relist_is_logged_at_info(
    clock: FakeClock, caplog: pytest.LogCaptureFixture, break_watch: Any
) -> None:
    caplog.set_level(logging.DEBUG, logger="aioinformer")
    lw = FakeListerWatcher(objects=[pod("a")])
    break_watch(lw)
    reflector = Reflector(lw, RecordingStore(), clock=clock, use_watch_list=False)
    task = spawn(reflector.run())
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)
    await clock.advance_to_next()
    await wait_until(lambda: len(lw.list_calls) == 2 and lw.open_watches == 1)

    assert loudest(caplog) == logging.INFO
    assert any("too old" in r.getMessage() for r in caplog.records)
    await stop(task)


async def test_a_403_is_a_warning(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="aioinformer")
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.fail_next_watch(Forbidden({"message": "pods is forbidden", "reason": "Forbidden"}))
    reflector = Reflector(lw, RecordingStore(), clock=clock, use_watch_list=False)
    task = spawn(reflector.run())
    await wait_until(lambda: reflector.state is ReflectorState.BACKING_OFF)

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith("pods: list and watch failed: ")
    assert "forbidden" in warnings[0]
    await stop(task)


async def test_a_routine_watch_failure_becomes_a_warning_once_it_repeats(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="aioinformer")
    lw = FakeListerWatcher(objects=[pod("a")])
    lw.fail_next_watch(*[ConnectionFailed("refused", refused=True) for _ in range(3)])
    backoff = Backoff(initial=0.5, cap=0.5, jitter=0.0, clock=clock)
    reflector = Reflector(lw, RecordingStore(), clock=clock, backoff=backoff, use_watch_list=False)
    task = spawn(reflector.run())
    await back_off_until_watching(reflector, lw, clock)

    ends = [r.levelno for r in caplog.records if "watch ended with" in r.getMessage()]
    assert ends == [logging.INFO, logging.INFO, logging.WARNING]
    await stop(task)
