"""``python -m bench.watch_encoding``: what a compressed watch costs the client, per event.

Role: the measurement behind the client's choice of ``Accept-Encoding`` for watches. A
child process serves one watch of ``--events`` MODIFIED events of a Pod of about 4.7 KiB
(:func:`bench.objects.make_pod`), encoded once at start and written one event per write:
uncompressed to a client that does not accept gzip, else each event as a gzip member of its
own at level 1, as kube-apiserver 1.37 writes a compressed streaming list. This process
reads the stream through the library's client (``Client`` and a ``WatchStream`` decoding
with each cache mode's codec), once asking for no compression and once with
``watch_compression=True``, and, for comparison, with aiohttp decoding the gzip itself
(which reads every member only from aiohttp 3.14 on).

Output: a markdown table on stdout: for each way of reading, the client process's CPU time
per event (``time.process_time``, median over ``--repeats`` runs, its spread in brackets),
the events read, and the bytes per event on the wire (the body as sent, counted by the
server). Progress goes to stderr. The figures are for a quiet machine; loopback hides what
a real network makes of the byte counts.

Task model: one event loop here, the server in a child process whose CPU is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import statistics
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Final

import aiohttp
import orjson
from aiohttp import web

from bench.objects import make_pod
from bench.replay import child_env

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Sequence

    from aioinformer.codec import CacheMode
    from aioinformer.listwatch import WatchStreamBase

__all__ = ["main", "measure"]

PATH: Final = "/api/v1/namespaces/default/pods"
STATS: Final = "/bench/bytes"
READY: Final = "ready"


def event_lines(count: int) -> list[bytes]:
    """``count`` MODIFIED lines, over a thousand distinct Pods."""
    lines = []
    for i in range(count):
        pod = make_pod(i % 1000, resource_version=str(1000 + i))
        pod["apiVersion"], pod["kind"] = "v1", "Pod"
        lines.append(b'{"type":"MODIFIED","object":' + orjson.dumps(pod) + b"}\n")
    return lines


def serve(port: int, events: int) -> None:
    """Serve the watch on 127.0.0.1:``port`` until killed (the child process's body)."""
    plain = event_lines(events)
    members = [gzip.compress(line, compresslevel=1, mtime=0) for line in plain]
    sent = {"bytes": 0}

    async def watch(request: web.Request) -> web.StreamResponse:
        codings = [c.strip() for c in request.headers.get("Accept-Encoding", "").split(",")]
        compress = "gzip" in codings
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        if compress:
            response.headers["Content-Encoding"] = "gzip"
        response.enable_chunked_encoding()
        await response.prepare(request)
        sent["bytes"] = 0
        for body in members if compress else plain:
            await response.write(body)
            sent["bytes"] += len(body)
        await response.write_eof()
        return response

    async def stats(_request: web.Request) -> web.Response:
        return web.json_response(sent)

    app = web.Application()
    app.router.add_get(PATH, watch)
    app.router.add_get(STATS, stats)

    async def run() -> None:
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        print(READY, flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


@contextlib.contextmanager
def server_process(events: int) -> Iterator[str]:
    """Start the server in a child process; yield its URL."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "bench.watch_encoding", "--serve", f"{port}"]
    child = subprocess.Popen(
        [*command, "--events", f"{events}"],
        stdout=subprocess.PIPE,
        env=child_env(),
        text=True,
    )
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != READY:
            raise RuntimeError("the watch server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        child.kill()
        child.wait()


async def _read(stream: WatchStreamBase) -> int:
    count = 0
    try:
        async for batch in stream.batches():
            count += len(batch)
    finally:
        await stream.aclose()
    return count


async def _our_client(url: str, cache: CacheMode, *, gzip_asked: bool) -> int:
    from aioinformer.client import GVR, Client, ResourceInfo
    from aioinformer.codec import codec_for
    from aioinformer.config import Config
    from aioinformer.listwatch import ListOptions, WatchStreamBase

    pods = ResourceInfo(gvr=GVR("", "v1", "pods"), kind="Pod", namespaced=True)
    async with Client(Config(host=url), watch_compression=gzip_asked) as client:
        source = client.resource(pods, "default").decoded_with(codec_for(cache))
        stream = source.watch(ListOptions(resource_version="1"))
        assert isinstance(stream, WatchStreamBase)
        return await _read(stream)


async def _aiohttp_decoding(url: str, cache: CacheMode) -> int:
    from aioinformer.codec import codec_for
    from aioinformer.watch import WatchStream

    async with aiohttp.ClientSession() as session:

        @contextlib.asynccontextmanager
        async def open_response() -> AsyncIterator[aiohttp.ClientResponse]:
            headers = {"Accept-Encoding": "gzip"}
            async with session.get(url + PATH, params={"watch": "1"}, headers=headers) as r:
                yield r

        return await _read(WatchStream(open_response, codec=codec_for(cache)))


WAYS: Final = (
    ("identity", "the client's default: Accept-Encoding: identity"),
    ("gzip", "Client(watch_compression=True): gzip, inflated by the client"),
    ("gzip-aiohttp", f"gzip inflated by aiohttp {aiohttp.__version__} (whole only from 3.14)"),
)


async def measure(
    url: str, way: str, cache: CacheMode, repeats: int
) -> tuple[list[float], int, int]:
    """CPU seconds of each run, the events the last one read, and the bytes it was sent."""
    samples = []
    read = 0
    for _ in range(repeats):
        started = time.process_time()
        if way == "gzip-aiohttp":
            read = await _aiohttp_decoding(url, cache)
        else:
            read = await _our_client(url, cache, gzip_asked=way == "gzip")
        samples.append(time.process_time() - started)
    async with aiohttp.ClientSession() as session, session.get(url + STATS) as answer:
        sent = int((await answer.json())["bytes"])
    return samples, read, sent


async def run(events: int, repeats: int, warmup: int) -> str:
    rows = [
        "| read as | cache | CPU µs per event | events read | bytes per event on the wire |",
        "|---|---|---:|---:|---:|",
    ]
    with server_process(events) as url:
        for way, label in WAYS:
            for cache in ("compact", "objects"):
                print(f"{way} {cache} ...", file=sys.stderr, flush=True)
                if warmup:
                    await measure(url, way, cache, warmup)
                samples, read, sent = await measure(url, way, cache, repeats)
                per_event = [s / max(read, 1) * 1e6 for s in samples]
                spread = f"{min(per_event):.1f}-{max(per_event):.1f}"
                rows.append(
                    f"| {label} | {cache} | {statistics.median(per_event):.1f} ({spread}) | "
                    f"{read} | {sent / max(read, 1):.0f} |"
                )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.watch_encoding", description=__doc__)
    parser.add_argument("--events", type=int, default=10_000, help="events per stream")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per way and cache")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs before them")
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve, args.events)
        return 0
    print(asyncio.run(run(args.events, args.repeats, args.warmup)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
