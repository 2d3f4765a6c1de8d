"""Bad input from the server or the user never crashes an informer nor corrupts its cache.

The server side is a scripted API server (a small ``aiohttp`` app): each LIST answers the
next scripted body, each WATCH plays the next scripted list of lines and then either ends
or stays open and silent. The informer under test runs the real client, reflector, FIFO and
indexer against it with a :class:`FakeClock`, so backoff never takes real time: the test
moves the clock whenever the reflector is backing off.

After every bad answer the checks are the same: the informer's run task is still alive,
the failure reached ``watch_error_handler`` as an :class:`AioinformerError`, and the cache
holds exactly the well-formed objects the server sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from aiohttp import web

from aioinformer import State
from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.errors import (
    AioinformerError,
    ApiError,
    KeyFuncError,
    SelectorError,
    TransportError,
    WatchError,
)
from aioinformer.indexer import Indexer, meta_namespace_key
from aioinformer.informer import Lister, SharedIndexInformer
from aioinformer.listwatch import ListOptions
from aioinformer.reflector import Reflector, ReflectorOptions, ReflectorState
from aioinformer.testing.clock import FakeClock
from tests._support_http import DiscoveryServer, serve
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

PODS = "/api/v1/namespaces/default/pods"
HOLD = b"<hold the stream open>"
"""Script marker: keep the watch open and silent until the client goes away."""


def pod(name: str, rv: int, *, kind: str = "Pod", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv), **meta},
    }


def event(kind: str, obj: Any) -> bytes:
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


def pod_list(rv: int, *items: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(rv)},
            "items": [
                {k: v for k, v in item.items() if k not in ("kind", "apiVersion")} for item in items
            ],
        }
    )


@dataclass
class Answer:
    """A scripted HTTP answer: status, content type, body."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass
class ScriptedServer:
    """LISTs answer ``lists`` in order (the last one repeats); WATCHes play ``watches`` in
    order (then hold open); ``requests`` records (verb, query) of each pod request."""

    lists: deque[Answer] = field(default_factory=deque)
    watches: deque[list[bytes] | Answer] = field(default_factory=deque)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        DiscoveryServer().install(app)
        app.router.add_get(PODS, self._pods)
        return app

    async def _pods(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        if query.get("watch") in ("1", "true"):
            self.requests.append(("watch", query))
            return await self._watch(request)
        self.requests.append(("list", query))
        answer = self.lists.popleft() if len(self.lists) > 1 else self.lists[0]
        return web.Response(
            body=answer.body, status=answer.status, content_type=answer.content_type
        )

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        script: list[bytes] | Answer = self.watches.popleft() if self.watches else [HOLD]
        if isinstance(script, Answer):
            return web.Response(
                body=script.body, status=script.status, content_type=script.content_type
            )
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for line in script:
            if line is HOLD:
                await asyncio.Event().wait()  # cancelled when the client disconnects
            await response.write(line)
        await response.write_eof()
        return response

    def count(self, verb: str) -> int:
        return sum(1 for v, _ in self.requests if v == verb)


@dataclass
class Running:
    informer: SharedIndexInformer
    clock: FakeClock
    errors: list[BaseException]

    def cached_keys(self) -> list[str]:
        return sorted(self.informer.indexer.list_keys())

    async def drive(self, until: Callable[[], bool], *, timeout: float = 5.0) -> None:
        """Let the informer run until ``until()`` holds, moving the fake clock past every
        backoff the reflector sleeps out meanwhile (bounded in real time)."""

        async def past_backoff() -> None:
            stats = self.informer.statistics().reflector
            if stats is not None and stats.state is ReflectorState.BACKING_OFF:
                deadline = self.clock.next_deadline()
                if deadline is not None:
                    await self.clock.advance(deadline - self.clock.monotonic())

        # Socket I/O with the scripted server: a short real sleep lets the selector run.
        await wait_until(until, poll=0.001, between=past_backoff, timeout=timeout)


@contextlib.asynccontextmanager
async def running_informer(script: ScriptedServer) -> AsyncIterator[Running]:
    clock = FakeClock()
    errors: list[BaseException] = []
    async with serve(script.app()) as url, Client(Config(host=url, token="t")) as client:
        informer = SharedIndexInformer(
            client.resource("v1/pods", namespace="default"),
            clock=clock,
            # The script answers LISTs and plays WATCHes: no streaming list.
            reflector=ReflectorOptions(use_watch_list=False),
            watch_error_handler=lambda _r, exc: errors.append(exc),
        )
        async with informer:
            yield Running(informer, clock, errors)
            assert informer.state is State.RUNNING, "the informer stopped by itself"


# ---------------------------------------------------------------------------------------
# bad watch events


@dataclass(frozen=True)
class WatchCase:
    id: str
    lines: list[bytes]
    error: type[BaseException] | None
    """What watch_error_handler must have heard, or None for "skipped quietly"."""


WATCH_CASES = [
    WatchCase(
        "object-without-metadata-name",
        [
            event(
                "ADDED",
                {"kind": "Pod", "metadata": {"namespace": "default", "resourceVersion": "11"}},
            )
        ],
        None,
    ),
    WatchCase("object-without-metadata", [event("ADDED", {"kind": "Pod", "spec": {}})], None),
    WatchCase("object-is-not-an-object", [b'{"type":"ADDED","object":[1,2,3]}\n'], WatchError),
    WatchCase("line-is-not-json", [b"<html><body>oops</body></html>\n"], WatchError),
    WatchCase("line-is-json-but-not-an-event", [b'{"kind":"Pod"}\n'], WatchError),
    WatchCase("error-event-without-object", [b'{"type":"ERROR"}\n'], WatchError),
    WatchCase("error-event-without-status", [event("ERROR", {"hello": "world"})], WatchError),
    WatchCase("error-event-with-empty-object", [event("ERROR", {})], WatchError),
    WatchCase("unknown-event-type", [event("EXPLODED", pod("ghost", 12))], None),
    WatchCase("truncated-last-line", [event("ADDED", pod("half", 13))[:20]], WatchError),
]


@pytest.mark.parametrize("case", WATCH_CASES, ids=[c.id for c in WATCH_CASES])
async def test_a_bad_watch_event_leaves_the_cache_intact_and_the_informer_running(
    case: WatchCase,
) -> None:
    script = ScriptedServer()
    script.lists.append(Answer(pod_list(10, pod("a", 5))))
    script.watches.append([*case.lines, event("ADDED", pod("b", 20)), HOLD])
    # After a relist (when the bad line ended the watch), b is in the list.
    script.lists.append(Answer(pod_list(20, pod("a", 5), pod("b", 20))))
    async with running_informer(script) as run:
        await run.drive(lambda: run.cached_keys() == ["default/a", "default/b"])
        await run.drive(lambda: script.count("watch") >= 2 or case.error is None)
        assert run.cached_keys() == ["default/a", "default/b"]
        assert run.informer.has_synced()
        if case.error is None:
            assert script.count("watch") == 1  # skipped in stream, no re-watch needed
        else:
            assert any(isinstance(e, case.error) for e in run.errors), run.errors
    assert all(isinstance(e, AioinformerError) for e in run.errors)


async def test_an_error_event_without_a_status_is_reported_as_a_watch_error() -> None:
    script = ScriptedServer()
    script.lists.append(Answer(pod_list(10)))
    script.watches.append([b'{"type":"ERROR","object":{"message":"nope"}}\n'])
    async with running_informer(script) as run:
        await run.drive(lambda: bool(run.errors))
        assert isinstance(run.errors[0], WatchError)
        assert not isinstance(run.errors[0], ApiError)
        assert "without a Status" in str(run.errors[0])


async def test_a_watch_answering_200_with_an_html_body_is_a_watch_error() -> None:
    script = ScriptedServer()
    script.lists.append(Answer(pod_list(10, pod("a", 5))))
    script.watches.append(Answer(b"<!doctype html><h1>Gateway</h1>\n", content_type="text/html"))
    async with running_informer(script) as run:
        await run.drive(lambda: script.count("watch") >= 2)
        assert any(isinstance(e, WatchError) for e in run.errors)
        assert run.cached_keys() == ["default/a"]


async def test_the_reflector_skips_watch_objects_of_another_kind() -> None:
    script = ScriptedServer()
    script.lists.append(Answer(pod_list(10)))
    script.watches.append(
        [
            event("ADDED", pod("imposter", 11, kind="Secret")),
            event("ADDED", pod("real", 12)),
            HOLD,
        ]
    )
    store = _RecordingStore()
    async with serve(script.app()) as url, Client(Config(host=url, token="t")) as client:
        reflector = Reflector(
            client.resource("v1/pods", namespace="default"),
            store,
            options=ReflectorOptions(
                expected_kind="Pod", expected_api_version="v1", use_watch_list=False
            ),
            clock=FakeClock(),
        )
        task = asyncio.create_task(reflector.run())
        try:
            async with asyncio.timeout(5):
                await store.added.wait()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert store.names() == ["real"]
    # The skipped event moved nothing backwards: the cursor is the newest version.
    assert reflector.last_sync_resource_version == "12"


async def test_an_informer_does_not_cache_watch_objects_of_another_kind() -> None:
    script = ScriptedServer()
    script.lists.append(Answer(pod_list(10, pod("a", 5))))
    script.watches.append(
        [event("ADDED", pod("imposter", 11, kind="Secret")), event("ADDED", pod("b", 12)), HOLD]
    )
    async with running_informer(script) as run:
        await run.drive(lambda: "default/b" in run.cached_keys())
        assert run.cached_keys() == ["default/a", "default/b"]


class _RecordingStore:
    """A reflector store keeping objects by name; ``added`` is set by the first add."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.added = asyncio.Event()

    def names(self) -> list[str]:
        return sorted(self.objects)

    async def add(self, obj: Any) -> None:
        self.objects[obj["metadata"]["name"]] = obj
        self.added.set()

    async def update(self, obj: Any) -> None:
        self.objects[obj["metadata"]["name"]] = obj

    async def delete(self, obj: Any) -> None:
        self.objects.pop(obj["metadata"]["name"], None)

    async def replace(self, objs: list[Any], resource_version: str) -> None:
        self.objects = {o["metadata"]["name"]: o for o in objs}

    async def resync(self) -> None:
        pass


# ---------------------------------------------------------------------------------------
# bad LIST answers


@dataclass(frozen=True)
class ListCase:
    id: str
    answer: Answer
    error: type[BaseException]


LIST_CASES = [
    ListCase(
        "200-with-an-html-body",
        Answer(b"<!doctype html><title>Sign in</title>", content_type="text/html"),
        TransportError,
    ),
    ListCase("200-with-truncated-json", Answer(pod_list(9, pod("a", 5))[:25]), TransportError),
    ListCase("200-with-a-json-array", Answer(b"[1, 2, 3]"), TransportError),
    ListCase(
        "an-item-without-metadata-name",
        Answer(pod_list(9, pod("a", 5), {"metadata": {"namespace": "default"}})),
        KeyFuncError,
    ),
    ListCase(
        "500-with-an-html-body",
        Answer(b"<html>proxy error</html>", status=500, content_type="text/html"),
        ApiError,
    ),
]


@pytest.mark.parametrize("case", LIST_CASES, ids=[c.id for c in LIST_CASES])
async def test_a_bad_list_is_reported_and_retried_without_touching_the_cache(
    case: ListCase,
) -> None:
    script = ScriptedServer()
    script.lists.extend([case.answer, Answer(pod_list(10, pod("a", 5), pod("b", 6)))])
    async with running_informer(script) as run:
        await run.drive(lambda: bool(run.errors))
        assert isinstance(run.errors[0], case.error), run.errors
        assert run.cached_keys() == []
        assert not run.informer.has_synced()
        await run.drive(run.informer.has_synced)
        assert run.cached_keys() == ["default/a", "default/b"]


# ---------------------------------------------------------------------------------------
# huge objects


async def _huge_line(request: web.Request) -> web.StreamResponse:
    """A watch that starts one ADDED line announcing a 1 GiB object and streams 80 MiB of
    it, then stalls: only a size cap on the client's side ends this cleanly."""
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    await response.write(b'{"type":"ADDED","object":{"kind":"ConfigMap","data":{"blob":"')
    block = b"A" * (1 << 20)
    for _ in range(80):
        await response.write(block)
    await asyncio.Event().wait()
    return response


async def test_a_watch_line_announcing_a_gigabyte_object_fails_with_a_clear_error() -> None:
    app = web.Application()
    DiscoveryServer().install(app)
    app.router.add_get(PODS, _huge_line)
    async with serve(app) as url, Client(Config(host=url, token="t")) as client:
        stream = client.resource("v1/pods", namespace="default").watch(ListOptions())
        async with contextlib.aclosing(stream):
            with pytest.raises(TransportError) as caught:
                async with asyncio.timeout(3):
                    await anext(stream)
    assert "bytes" in str(caught.value)


async def test_a_get_announcing_a_gigabyte_body_fails_before_reading_it() -> None:
    async def announce(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "application/json", "Content-Length": str(1 << 30)}
        )
        await response.prepare(request)
        await response.write(b'{"kind":"Pod","metadata":{"name":"x"')
        await asyncio.Event().wait()
        return response

    app = web.Application()
    DiscoveryServer().install(app)
    app.router.add_get(PODS + "/x", announce)
    async with serve(app) as url, Client(Config(host=url, token="t")) as client:
        with pytest.raises(TransportError) as caught:
            async with asyncio.timeout(3):
                await client.resource("v1/pods", namespace="default").get("x")
    assert str(1 << 30) in str(caught.value) or "too large" in str(caught.value).lower()


# ---------------------------------------------------------------------------------------
# bad input from the user


BAD_SELECTORS = ["a in (", "=b", "a==b==c", "a,,b", "!", "a notin b", "x in (a b)"]


@pytest.mark.parametrize("selector", BAD_SELECTORS)
def test_an_invalid_label_selector_given_to_a_lister_is_a_selector_error(selector: str) -> None:
    lister: Lister[Any] = Lister(Indexer(meta_namespace_key))
    with pytest.raises(SelectorError) as caught:
        lister.list(label_selector=selector)
    assert isinstance(caught.value, ValueError)
