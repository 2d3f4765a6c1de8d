"""The replay server: pre-encoded LIST pages and watch streams served from memory over HTTP.

Role: the API server of every benchmark, built so that it is never the bottleneck. All
object bytes are encoded once at start (:mod:`bench.objects`); a request only joins
prepared byte strings and writes them.

Input: a :class:`ReplayConfig` (how many objects, how many watch events, emit rate).
Output: a loopback HTTP server that answers, for its one resource (``pods`` or
``configmaps``; any other collection is a 404 ``Status``):

* ``GET /api/v1/<resource>`` — a LIST page. ``limit``/``continue`` are honoured; items carry
  no ``apiVersion``/``kind`` (as the real server sends them); object ``i`` has
  resourceVersion ``i + 1`` and the list's resourceVersion is the object count. Asked for
  ``as=PartialObjectMetadataList`` in ``Accept`` (a metadata-only client, a cache audit),
  the page is a ``PartialObjectMetadataList`` whose items are each object's
  ``PartialObjectMetadata`` (encoded on the first such request).
* ``GET /api/v1/<resource>?watch=1&resourceVersion=R`` — the configured MODIFIED events with
  a resourceVersion above ``R``, in order. Event ``e`` (1-based) modifies object
  ``(e - 1) % objects`` (with ``order_seed``, an object drawn at random, as the independent
  harness's server draws them) and has resourceVersion ``objects + e``. With ``rate == 0`` they go
  out as fast as the socket takes them: with ``chunk_per_event``, each event in an HTTP
  chunk of its own, one write per event (as kube-apiserver flushes after every event, and
  as the independent harness's replay server frames them); without it, many
  events per chunk in large writes. With ``rate > 0`` at that many
  per second, each stamped in the ``bench.aioinformer.io/emitted-ns`` annotation with
  ``time.monotonic_ns()`` (CLOCK_MONOTONIC, the same clock in every process on the
  machine) at the moment it is written. After the last event the stream stays open,
  silent, until ``timeoutSeconds`` or the client leaves — a re-watch from the last
  resourceVersion therefore gets nothing, as from a real server. With ``hold``, a paced
  stream sends nothing until ``GET /bench/start`` (one start per stream; a start that
  comes first is kept for the next stream).
* ``GET /api/v1/<resource>?watch=1&sendInitialEvents=true`` — a streaming list: every object
  as an ``ADDED`` event (with ``apiVersion``/``kind``, as kube-apiserver sends them), then a
  ``BOOKMARK`` at the list's resourceVersion annotated ``k8s.io/initial-events-end``, then
  the watch events as above. The ``ADDED`` lines are encoded once, at start, when the
  config asks for them (``initial_events``).
* ``/api``, ``/api/v1``, ``/apis``, ``/version`` — minimal discovery answers.

Task model: one aiohttp application on one event loop. :class:`ReplayServerProcess` runs it
in a child process (``python -m bench.replay``) so its CPU time does not compete with the
measured loop; :func:`start_replay_server` runs it in the caller's loop (used to measure
what that competition costs).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import select
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson
from aiohttp import web

from bench.objects import KINDS, WatchLineTemplate, encode_item

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from bench.objects import Shape

__all__ = [
    "REPO_ROOT",
    "START_PATH",
    "ReplayConfig",
    "ReplayData",
    "ReplayServerProcess",
    "build_app",
    "child_env",
    "main",
    "start_replay_server",
]

_WRITE_BYTES: Final = 256 * 1024
"""Target size of one write in full-speed mode: large enough that per-write overhead is
negligible, small enough that the client starts decoding early."""
INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"
"""The annotation of the bookmark that ends a streaming list's initial events."""
_TICK: Final = 0.001
"""Pacing period of rate-limited streams, in seconds."""
START_PATH: Final = "/bench/start"
"""``GET`` here starts the next (or the waiting) held watch stream."""
REPO_ROOT: Final = Path(__file__).resolve().parent.parent
"""The checkout holding ``bench``: the working directory of every child process."""


def child_env() -> dict[str, str]:
    """This process's environment with :data:`REPO_ROOT` first on ``PYTHONPATH``, so that
    ``python -m bench.<module>`` resolves in a child started from it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


@dataclass(frozen=True, slots=True)
class ReplayConfig:
    """What one replay server serves. Plain values only: it crosses a process boundary."""

    resource: str = "pods"
    """``"pods"`` or ``"configmaps"``: the resource whose LIST and watch are replayed."""
    objects: int = 10_000
    """Objects in the LIST; also the number of distinct objects the watch events modify."""
    watch_events: int = 0
    """MODIFIED events in the watch stream (after the LIST's resourceVersion)."""
    rate: float = 0.0
    """Events per second of the watch stream; 0 sends at full speed."""
    hold: bool = False
    """Whether a paced watch stream waits for ``GET /bench/start`` before its first event
    (see :data:`START_PATH`), so that each side starts it once it is ready."""
    namespaces: int = 50
    """Objects spread round-robin over this many namespaces."""
    object_shape: Shape = "bench"
    """Whose Pods: the bench's (``"bench"``) or the independent harness's (``"harness"``,
    :func:`bench.objects.make_harness_pod`)."""
    initial_events: bool = False
    """Whether streaming lists are served (their lines are encoded at start)."""
    chunk_per_event: bool = False
    """Whether a full-speed watch stream sends each event as an HTTP chunk of its own
    (one write per event, as kube-apiserver flushes), rather than many events per
    chunk in writes of about 256 KiB. The client's framing work is per chunk received, so
    the watch throughput scenarios use it: it is what a client meets in production."""
    order_seed: int | None = None
    """With a seed, each watch event modifies an object drawn from ``random.Random(seed)``
    (as the independent harness's server does, whose default seed is 1) rather than the
    objects in turn. Which objects an update replaces, and so which memory it frees, is
    part of what a client's collector and allocator meet."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class ReplayData:
    """Every byte the server will send, encoded once.

    Invariant: ``len(items) == config.objects``; ``templates`` is empty when the config has
    no watch events, else it holds one template per object.
    """

    __slots__ = ("_metadata_items", "added_lines", "config", "items", "order", "templates")

    def __init__(self, config: ReplayConfig) -> None:
        if config.resource not in KINDS:
            raise ValueError(f"unknown resource {config.resource!r}")
        self.config = config
        self.items: list[bytes] = [
            encode_item(config.resource, i, namespaces=config.namespaces, shape=config.object_shape)
            for i in range(config.objects)
        ]
        self.templates: list[WatchLineTemplate] = (
            [
                WatchLineTemplate.for_object(
                    config.resource, i, namespaces=config.namespaces, shape=config.object_shape
                )
                for i in range(config.objects)
            ]
            if config.watch_events
            else []
        )
        self.order: list[int] | None = None
        """Per event, the object it modifies, when the config draws them at random."""
        if config.order_seed is not None and self.templates:
            draw = random.Random(config.order_seed).randrange
            self.order = [draw(config.objects) for _ in range(config.watch_events)]
        head = b'{"type":"ADDED","object":{"apiVersion":"v1","kind":"%b",' % (
            KINDS[config.resource].encode()
        )
        # An item is a JSON object: its opening brace gives way to the event's head.
        self.added_lines: list[bytes] = (
            [b"%b%b}\n" % (head, item[1:]) for item in self.items] if config.initial_events else []
        )
        self._metadata_items: list[bytes] | None = None

    @property
    def metadata_items(self) -> list[bytes]:
        """Each item as a ``PartialObjectMetadata``, as kube-apiserver lists them."""
        if self._metadata_items is None:
            self._metadata_items = [
                b'{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":'
                + orjson.dumps(orjson.loads(item)["metadata"])
                + b"}"
                for item in self.items
            ]
        return self._metadata_items

    @property
    def list_resource_version(self) -> int:
        return self.config.objects

    @property
    def last_resource_version(self) -> int:
        return self.config.objects + self.config.watch_events

    def list_page(self, start: int, limit: int | None, *, metadata: bool = False) -> bytes:
        """The LIST answer holding items ``start`` onwards, at most ``limit`` of them (as a
        ``PartialObjectMetadataList`` with ``metadata``)."""
        items = self.metadata_items if metadata else self.items
        stop = len(items) if not limit else min(len(items), start + limit)
        list_meta: dict[str, Any] = {"resourceVersion": str(self.list_resource_version)}
        if stop < len(items):
            list_meta["continue"] = f"c{stop}"
            list_meta["remainingItemCount"] = len(items) - stop
        head = orjson.dumps(
            {
                "kind": "PartialObjectMetadataList"
                if metadata
                else KINDS[self.config.resource] + "List",
                "apiVersion": "meta.k8s.io/v1" if metadata else "v1",
                "metadata": list_meta,
            }
        )
        return b"".join((head[:-1], b',"items":[', b",".join(items[start:stop]), b"]}"))

    def initial_events_end_line(self) -> bytes:
        """The bookmark that ends a streaming list's initial events."""
        return (
            orjson.dumps(
                {
                    "type": "BOOKMARK",
                    "object": {
                        "apiVersion": "v1",
                        "kind": KINDS[self.config.resource],
                        "metadata": {
                            "resourceVersion": str(self.list_resource_version),
                            "annotations": {INITIAL_EVENTS_END: "true"},
                        },
                    },
                }
            )
            + b"\n"
        )

    def event_line(self, event: int, emitted_ns: int = 0) -> bytes:
        """The line of 1-based event ``event``."""
        order = self.order
        index = order[(event - 1) % len(order)] if order else (event - 1) % len(self.templates)
        return self.templates[index].render(self.config.objects + event, emitted_ns)


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.Response(status=code, body=orjson.dumps(body), content_type="application/json")


def _json(body: Any) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")


def build_app(data: ReplayData) -> web.Application:
    """The aiohttp application serving ``data``."""
    resource = data.config.resource

    async def api(_request: web.Request) -> web.Response:
        return _json({"kind": "APIVersions", "versions": ["v1"]})

    async def api_v1(_request: web.Request) -> web.Response:
        return _json(
            {
                "kind": "APIResourceList",
                "groupVersion": "v1",
                "resources": [
                    {
                        "name": name,
                        "singularName": name[:-1],
                        "namespaced": True,
                        "kind": kind_name,
                        "verbs": ["get", "list", "watch"],
                    }
                    for name, kind_name in KINDS.items()
                ],
            }
        )

    async def apis(_request: web.Request) -> web.Response:
        return _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": []})

    async def version(_request: web.Request) -> web.Response:
        return _json({"major": "1", "minor": "32", "gitVersion": "v1.32.0-replay"})

    async def collection(request: web.Request) -> web.StreamResponse:
        if request.match_info["resource"] != resource:
            requested = request.match_info["resource"]
            return _status(404, "NotFound", f"this server replays {resource}, not {requested}")
        query = request.query
        if query.get("watch") in ("1", "true"):
            return await _watch(request)
        continue_ = query.get("continue", "")
        try:
            start = int(continue_[1:]) if continue_ else 0
            limit = int(query.get("limit", "0")) or None
        except ValueError:
            return _status(400, "BadRequest", "malformed limit or continue")
        metadata = "as=PartialObjectMetadataList" in request.headers.get("Accept", "")
        body = data.list_page(start, limit, metadata=metadata)
        return web.Response(body=body, content_type="application/json")

    async def _watch(request: web.Request) -> web.StreamResponse:
        rv_text = request.query.get("resourceVersion", "")
        try:
            since = int(rv_text) if rv_text else 0
        except ValueError:
            return _status(400, "BadRequest", f"invalid resourceVersion {rv_text!r}")
        timeout = float(request.query.get("timeoutSeconds", "0") or 0)
        first = max(1, since - data.list_resource_version + 1)
        response = web.StreamResponse()
        response.content_type = "application/json"
        response.enable_chunked_encoding()
        streaming_list = request.query.get("sendInitialEvents") == "true"
        if streaming_list and not data.added_lines:
            return _status(422, "Invalid", "sendInitialEvents: this replay serves no streams")
        await response.prepare(request)
        deadline = time.monotonic() + timeout if timeout > 0 else None
        # A client that leaves makes the next write fail; that simply ends the stream.
        with contextlib.suppress(ConnectionResetError):
            if streaming_list:
                await _initial_events(response)
            if data.config.rate > 0:
                if data.config.hold:
                    await start.wait()
                    start.clear()
                await _paced(response, first)
            else:
                await _full_speed(response, first)
            # Stay open and silent, as a real server does when nothing changes.
            if deadline is None:
                await asyncio.Event().wait()
            else:
                await asyncio.sleep(max(0.0, deadline - time.monotonic()))
            await response.write_eof()
        return response

    async def _initial_events(response: web.StreamResponse) -> None:
        lines = data.added_lines
        step = max(1, _WRITE_BYTES // max(1, len(lines[0])))
        for start_at in range(0, len(lines), step):
            await response.write(b"".join(lines[start_at : start_at + step]))
        await response.write(data.initial_events_end_line())

    async def _full_speed(response: web.StreamResponse, first: int) -> None:
        if data.config.chunk_per_event:
            # One write per event: aiohttp frames each write as one HTTP chunk, hands it to
            # the transport at once and waits for the socket to drain after every 64 KiB
            # (the harness's server drains after every 128 KiB of such chunks).
            for event in range(first, data.config.watch_events + 1):
                await response.write(data.event_line(event))
            return
        batch: list[bytes] = []
        size = 0
        for event in range(first, data.config.watch_events + 1):
            line = data.event_line(event)
            batch.append(line)
            size += len(line)
            if size >= _WRITE_BYTES:
                await response.write(b"".join(batch))
                batch.clear()
                size = 0
        if batch:
            await response.write(b"".join(batch))

    async def _paced(response: web.StreamResponse, first: int) -> None:
        rate = data.config.rate
        total = data.config.watch_events
        started = time.monotonic()
        event = first
        while event <= total:
            due = min(total, first - 1 + int((time.monotonic() - started) * rate) + 1)
            if due >= event:
                now_ns = time.monotonic_ns()
                chunk = b"".join(data.event_line(e, now_ns) for e in range(event, due + 1))
                await response.write(chunk)
                event = due + 1
            await asyncio.sleep(_TICK)

    app = web.Application()
    # Set by GET START_PATH, cleared by the held stream it starts: one start per stream,
    # whether it comes before the watch request or after.
    start = asyncio.Event()

    async def start_stream(_request: web.Request) -> web.Response:
        start.set()
        return _json({"started": True})

    app.router.add_get(START_PATH, start_stream)
    app.router.add_get("/api", api)
    app.router.add_get("/api/v1", api_v1)
    app.router.add_get("/apis", apis)
    app.router.add_get("/version", version)
    app.router.add_get("/api/v1/{resource}", collection)
    return app


@contextlib.asynccontextmanager
async def start_replay_server(data: ReplayData) -> AsyncIterator[str]:
    """Serve ``data`` on 127.0.0.1 in the running loop; yields the base URL."""
    runner = web.AppRunner(
        build_app(data), access_log=None, handle_signals=False, shutdown_timeout=0.1
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def _serve(config: ReplayConfig) -> None:
    # The child's life: encode, listen, print the URL, serve until stdin reaches EOF (the
    # parent closing its end of the pipe, or dying, is the stop signal).
    data = ReplayData(config)
    async with start_replay_server(data) as url:
        sys.stdout.write(url + "\n")
        sys.stdout.flush()
        loop = asyncio.get_running_loop()
        closed = asyncio.Event()
        stdin = sys.stdin.fileno()

        def on_readable() -> None:
            if not os.read(stdin, 4096):
                closed.set()

        loop.add_reader(stdin, on_readable)
        try:
            await closed.wait()
        finally:
            loop.remove_reader(stdin)


class ReplayServerProcess:
    """A replay server in a child process; ``with`` it to get the URL, leave to stop it.

    The child is ``python -m bench.replay '<config json>'``. Example::

        with ReplayServerProcess(ReplayConfig(objects=10_000)) as url:
            ...  # GET f"{url}/api/v1/pods"
    """

    def __init__(self, config: ReplayConfig, *, start_timeout: float = 300.0) -> None:
        self.config = config
        self._start_timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def __enter__(self) -> str:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.replay", orjson.dumps(self.config.to_json()).decode()],
            cwd=REPO_ROOT,
            env=child_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self._process = process
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], self._start_timeout)
        line = process.stdout.readline() if ready else b""
        if not line.startswith(b"http://"):
            self.__exit__(None, None, None)
            raise RuntimeError("replay server did not start")
        self.url = line.decode().strip()
        return self.url

    def __exit__(self, *exc_info: object) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.terminate()
            process.wait(5)
        if process.stdout is not None:
            process.stdout.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.replay '<config json>'``: serve until stdin closes."""
    args = sys.argv[1:] if argv is None else argv
    config = ReplayConfig(**orjson.loads(args[0])) if args else ReplayConfig()
    asyncio.run(_serve(config))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
