"""The proxy fan-out scenario: N downstream watchers over one ``CachingProxy``, beside the same
N watching the upstream directly.

Role: measures what issue 18's proxy promises — one upstream watch whatever N, events
delivered to every watcher with a bounded latency, a small CPU cost per delivered event.
Input: the scenario's params (``objects``, ``rates`` by N, ``warmup``, ``seconds``,
``watchers_per_process``, ``drain_timeout``) and a variant ``proxy-nN`` or ``direct-nN``.
Output: flat ``{metric: value}`` figures (see :data:`FIGURES`).

Processes, so that each one's CPU and RSS are its own (read from ``/proc/PID``):

* ``upstream``: a :class:`~aioinformer.testing.FakeAPIServer` holding ``objects`` Pods; on
  ``start`` it rewrites them round-robin at a fixed rate (MODIFIED events), each carrying
  its write time (``time.monotonic_ns()``: CLOCK_MONOTONIC is shared by every process on
  Linux) in the :data:`~bench.objects.EMITTED_ANNOTATION` annotation;
* ``proxy`` (``proxy-*`` variants only): a :class:`~aioinformer.proxy.CachingProxy` over the
  upstream for ``v1/pods``, with its defaults;
* ``clients`` (one per ``watchers_per_process`` watchers): raw aiohttp watch streams
  (``?watch=1&resourceVersion=RV&allowWatchBookmarks=true``) opened from the same
  resourceVersion before the first write. Each stream's chunks are scanned for the
  annotation's bytes (no decoding): one hit is one event, stamped with the chunk's arrival
  time.

The measuring process (the worker) starts them, waits until every watch is open, starts
the writes, lets ``warmup`` seconds pass, then measures a window of ``seconds``: the CPU
of every process over it (utime + stime) and the latency of every event written in it.
Then the writes stop and every watcher must receive every event written (within
``drain_timeout``): ``delivered_ratio`` is delivered / (events written in the window x N)
and ``watchers_complete`` the fraction of watchers that got them all.

``BENCH_FANOUT_PROFILE=PATH`` (:data:`PROFILE_ENV`) runs the proxy process under cProfile
and writes its statistics to PATH when it ends (each variant overwrites it).

Each child answers one JSON line per JSON command line on stdin (:mod:`bench.children`);
its first line says it is ready. Closing its stdin ends it.

Task model: each child runs one event loop; the measuring side is one coroutine that
closes every child before it returns (killing those that do not exit in time).
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import math
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Final

import aiohttp
import orjson

from bench.children import Child, raise_fd_limit, serve, start_all
from bench.measure import percentile
from bench.objects import EMITTED_ANNOTATION, make_pod

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence

__all__ = ["FIGURES", "PROFILE_ENV", "VARIANTS", "fanout_case", "main", "watchers_of"]

VARIANTS: Final = tuple(
    f"{via}-n{count}" for count in (1, 100, 1000) for via in ("direct", "proxy")
)
"""Each N watched directly (the reference) and through the proxy."""

FIGURES: Final = (
    "p50_ms",
    "p99_ms",
    "max_ms",
    "first_p50_ms",
    "first_p99_ms",
    "spread_p50_ms",
    "spread_p99_ms",
    "events_per_chunk",
    "proxy_cpu_us_per_event",
    "upstream_cpu_us_per_event",
    "proxy_rss_mib",
    "proxy_peak_rss_mib",
    "upstream_watches",
    "delivered_ratio",
    "watchers_complete",
    "slow_watchers_closed",
    "streams_ended",
    "client_cpu_percent",
    "client_cpu_us_per_event",
    "achieved_rate",
)
"""Every figure a case reports (``proxy_*`` ones only through the proxy)."""

PROFILE_ENV: Final = "BENCH_FANOUT_PROFILE"
"""When set, the proxy process runs under cProfile and writes its statistics to this path
(``python -m pstats PATH``): where the proxy's time goes, measured in the run itself."""
_MARKER: Final = b'"' + EMITTED_ANNOTATION.encode() + b'":"'
_MODULE: Final = "bench.fanout"
_TOKEN: Final = "bench-fanout"
"""The bearer token the upstream accepts (with full rights) and every client sends."""
_TICK: Final = 0.001


def watchers_of(variant: str) -> tuple[str, int]:
    """``("proxy", 100)`` for ``proxy-n100``; :class:`ValueError` for another name."""
    via, _, count = variant.partition("-n")
    if via not in ("proxy", "direct") or not count.isdigit() or int(count) < 1:
        raise ValueError(f"not a fan-out variant (proxy-nN or direct-nN): {variant!r}")
    return via, int(count)


# --- the children -----------------------------------------------------------------------


class _Writer:
    """The upstream's paced writes: every tick, the events due by now, each stamped."""

    def __init__(self, server: Any, objects: int) -> None:
        self._server = server
        self._pods = []
        for index in range(objects):
            pod = {"apiVersion": "v1", "kind": "Pod", **make_pod(index)}
            # No resourceVersion: each write replaces the object unconditionally.
            del pod["metadata"]["resourceVersion"]
            server.create(pod)
            self._pods.append(pod)
        self.emitted = array.array("q")

    async def run(self, rate: float) -> None:
        started = time.monotonic()
        while True:
            due = int((time.monotonic() - started) * rate) - len(self.emitted)
            for _ in range(due):
                pod = self._pods[len(self.emitted) % len(self._pods)]
                stamp = time.monotonic_ns()
                pod["metadata"]["annotations"][EMITTED_ANNOTATION] = str(stamp)
                self._server.update(pod)
                self.emitted.append(stamp)
            await asyncio.sleep(_TICK)


async def _upstream(config: dict[str, Any]) -> None:
    from aioinformer.testing.apiserver import FakeAPIServer

    async with FakeAPIServer(require_namespaces=False) as server, asyncio.TaskGroup() as tasks:
        server.add_token(_TOKEN)
        writer = _Writer(server, config["objects"])
        running: list[asyncio.Task[None]] = []

        async def start(command: dict[str, Any]) -> dict[str, Any]:
            running.append(tasks.create_task(writer.run(command["rate"])))
            return {}

        async def stats(_command: dict[str, Any]) -> dict[str, Any]:
            return {"watch_count": server.watch_count}

        async def stop(command: dict[str, Any]) -> dict[str, Any]:
            for task in running:
                task.cancel()
            first, last = command["window"]
            return {
                "written": len(writer.emitted),
                "in_window": sum(1 for stamp in writer.emitted if first <= stamp < last),
            }

        await serve(
            {"url": server.url, "resource_version": server.resource_version},
            {"start": start, "stats": stats, "stop": stop},
        )
        for task in running:
            task.cancel()


async def _proxy(config: dict[str, Any]) -> None:
    from aioinformer.client import Client
    from aioinformer.config import Config
    from aioinformer.proxy import CachingProxy

    async with (
        Client(Config(host=config["upstream"], token=_TOKEN)) as client,
        CachingProxy(client, resources=["v1/pods"]) as proxy,
    ):

        async def stats(_command: dict[str, Any]) -> dict[str, Any]:
            pods = proxy.statistics()["pods"]
            return {
                "slow_watchers_closed": pods.slow_watchers_closed,
                "upstream_watches": pods.upstream_watches,
                "watchers": pods.watchers,
                "relists": pods.relists,
            }

        await serve({"url": proxy.url}, {"stats": stats})


class _Watchers:
    """One client process's watch streams and what they received."""

    def __init__(self, count: int) -> None:
        self.received = [0] * count
        """Events each watcher received."""
        self.emitted = array.array("q")
        self.arrived = array.array("q")
        """Per event received (any watcher): its write time and its arrival time (ns)."""
        self.ended = 0
        """Streams the server ended (a watcher closed as too slow, or a server fault)."""
        self.chunks = 0
        """Chunks that completed at least one line (about one per server write)."""
        self._pending = [b""] * count
        """Per watcher, the start of a line whose end has not arrived yet."""
        self.progress = asyncio.Event()

    def feed(self, slot: int, chunk: bytes, arrived: int) -> None:
        """Record every event that ``chunk`` completes on watcher ``slot``'s stream (a line
        cut by the chunk's end waits for the next chunk)."""
        pending = self._pending[slot]
        cut = chunk.rfind(b"\n")
        if cut < 0:
            self._pending[slot] = pending + chunk
            return
        data = pending + chunk[: cut + 1] if pending else chunk[: cut + 1]
        self._pending[slot] = chunk[cut + 1 :]
        self.chunks += 1
        start = data.find(_MARKER)
        while start >= 0:
            value = start + len(_MARKER)
            end = data.index(b'"', value)
            self.emitted.append(int(data[value:end]))
            self.arrived.append(arrived)
            self.received[slot] += 1
            start = data.find(_MARKER, end)
        self.progress.set()

    async def read(self, slot: int, response: aiohttp.ClientResponse) -> None:
        async with response:
            async for chunk in response.content.iter_any():
                self.feed(slot, chunk, time.monotonic_ns())
        self.ended += 1
        self.progress.set()

    async def drained(self, events: int, timeout: float) -> None:
        """Wait until every watcher received ``events`` events or ``timeout`` passed."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while min(self.received) < events:
                    self.progress.clear()
                    await self.progress.wait()

    def report(self, events: int, first: int, last: int) -> dict[str, Any]:
        """What was received of the events written in ``[first, last)``: every latency
        (µs), and per event its earliest and latest arrival here (ns)."""
        latencies = []
        spans: dict[int, list[int]] = {}
        for emitted, arrived in zip(self.emitted, self.arrived, strict=True):
            if first <= emitted < last:
                latencies.append((arrived - emitted) // 1_000)
                span = spans.setdefault(emitted, [arrived, arrived])
                span[0] = min(span[0], arrived)
                span[1] = max(span[1], arrived)
        return {
            "latencies_us": latencies,
            "spans": [[emitted, *span] for emitted, span in spans.items()],
            "complete": sum(1 for got in self.received if got >= events),
            "ended": self.ended,
            "chunks": self.chunks,
            "events": len(self.emitted),
        }


async def _clients(config: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {_TOKEN}"}
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None)
    async with (
        aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers) as session,
        asyncio.TaskGroup() as tasks,
    ):
        url = config["url"] + "/api/v1/pods"
        async with session.get(url, params={"limit": "1"}) as listed:
            listed.raise_for_status()
            version = orjson.loads(await listed.read())["metadata"]["resourceVersion"]
        params = {
            "watch": "1",
            "resourceVersion": version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "3600",
        }
        watchers = _Watchers(config["watchers"])
        responses = await asyncio.gather(
            *(session.get(url, params=params) for _ in range(config["watchers"]))
        )
        readers = []
        for slot, response in enumerate(responses):
            response.raise_for_status()
            readers.append(tasks.create_task(watchers.read(slot, response)))

        async def report(command: dict[str, Any]) -> dict[str, Any]:
            await watchers.drained(command["events"], command["timeout"])
            return watchers.report(command["events"], *command["window"])

        await serve({"resource_version": version}, {"report": report})
        for reader in readers:
            reader.cancel()


_ROLES: Final[dict[str, Callable[[dict[str, Any]], Coroutine[Any, Any, None]]]] = {
    "upstream": _upstream,
    "proxy": _proxy,
    "clients": _clients,
}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.fanout ROLE '<json config>'``: run one child until stdin closes."""
    args = sys.argv[1:] if argv is None else argv
    role, config = args[0], orjson.loads(args[1])
    raise_fd_limit()
    profile = os.environ.get(PROFILE_ENV)
    if role != "proxy" or not profile:
        asyncio.run(_ROLES[role](config))
        return 0
    import cProfile

    with cProfile.Profile() as profiler:
        asyncio.run(_ROLES[role](config))
    profiler.dump_stats(profile)
    return 0


# --- the measuring side -----------------------------------------------------------------


def _groups(watchers: int, per_process: int) -> list[int]:
    """``watchers`` split as evenly as possible over processes of at most ``per_process``."""
    processes = math.ceil(watchers / per_process)
    return [watchers // processes + (i < watchers % processes) for i in range(processes)]


async def fanout_case(_url: str, params: dict[str, Any], *, variant: str) -> dict[str, float]:
    """Run one fan-out variant (``proxy-nN`` or ``direct-nN``); see the module notes."""
    via, count = watchers_of(variant)
    rate = float(params["rates"][str(count)])
    async with contextlib.AsyncExitStack() as stack:
        upstream = await Child.start(_MODULE, "upstream", {"objects": params["objects"]})
        stack.push_async_callback(upstream.close)
        proxy = None
        target = upstream.ready["url"]
        if via == "proxy":
            proxy = await Child.start(_MODULE, "proxy", {"upstream": target})
            stack.push_async_callback(proxy.close)
            target = proxy.ready["url"]
        clients = await start_all(
            stack,
            _MODULE,
            "clients",
            (
                {"url": target, "watchers": size}
                for size in _groups(count, params["watchers_per_process"])
            ),
        )
        await upstream.ask(op="start", rate=rate)
        await asyncio.sleep(params["warmup"])
        measured = [upstream, *clients, *([proxy] if proxy else [])]
        cpu_before = [child.cpu_seconds() for child in measured]
        first = time.monotonic_ns()
        await asyncio.sleep(params["seconds"])
        last = time.monotonic_ns()
        cpu = [
            child.cpu_seconds() - before for child, before in zip(measured, cpu_before, strict=True)
        ]
        watches = (await upstream.ask(op="stats"))["watch_count"]
        proxy_stats = await proxy.ask(op="stats") if proxy else {}
        rss = proxy.rss_mib() if proxy else None
        written = await upstream.ask(op="stop", window=[first, last])
        reports = await asyncio.gather(
            *(
                child.ask(
                    op="report",
                    events=written["written"],
                    window=[first, last],
                    timeout=params["drain_timeout"],
                )
                for child in clients
            )
        )
    return _figures(
        count=count,
        seconds=(last - first) / 1e9,
        in_window=written["in_window"],
        cpu=cpu,
        watches=watches,
        proxy_stats=proxy_stats,
        rss=rss,
        reports=reports,
    )


def _figures(
    *,
    count: int,
    seconds: float,
    in_window: int,
    cpu: list[float],
    watches: int,
    proxy_stats: dict[str, Any],
    rss: tuple[float, float] | None,
    reports: list[dict[str, Any]],
) -> dict[str, float]:
    """The case's figures from what its processes measured; ``cpu`` is the window's CPU
    seconds of the upstream, each client process, then the proxy when there is one."""
    latencies = sorted(us for report in reports for us in report["latencies_us"])
    spans: dict[int, list[int]] = {}
    for report in reports:
        for emitted, earliest, latest in report["spans"]:
            span = spans.setdefault(emitted, [earliest, latest])
            span[0] = min(span[0], earliest)
            span[1] = max(span[1], latest)
    # In whole µs, as the latencies are, so that the two compare exactly.
    firsts = sorted((earliest - emitted) // 1_000 for emitted, (earliest, _) in spans.items())
    spreads = sorted(latest - earliest for earliest, latest in spans.values())
    expected = in_window * count
    client_cpu = cpu[1 : 1 + len(reports)]
    figures = {
        "p50_ms": percentile(latencies, 0.50) / 1e3,
        "p99_ms": percentile(latencies, 0.99) / 1e3,
        "max_ms": (latencies[-1] / 1e3) if latencies else math.nan,
        "first_p50_ms": percentile(firsts, 0.50) / 1e3,
        "first_p99_ms": percentile(firsts, 0.99) / 1e3,
        "spread_p50_ms": percentile(spreads, 0.50) / 1e6,
        "spread_p99_ms": percentile(spreads, 0.99) / 1e6,
        "events_per_chunk": sum(r["events"] for r in reports)
        / max(1, sum(r["chunks"] for r in reports)),
        "upstream_cpu_us_per_event": cpu[0] / max(1, expected) * 1e6,
        "upstream_watches": float(watches),
        "delivered_ratio": len(latencies) / expected if expected else math.nan,
        "watchers_complete": sum(report["complete"] for report in reports) / count,
        "streams_ended": float(sum(report["ended"] for report in reports)),
        "client_cpu_percent": max(client_cpu) / seconds * 100,
        "client_cpu_us_per_event": sum(client_cpu) / max(1, expected) * 1e6,
        "achieved_rate": in_window / seconds,
    }
    if rss is not None:
        figures.update(
            {
                "proxy_cpu_us_per_event": cpu[-1] / max(1, expected) * 1e6,
                "proxy_rss_mib": rss[0],
                "proxy_peak_rss_mib": rss[1],
                "slow_watchers_closed": float(proxy_stats["slow_watchers_closed"]),
                # The proxy's own count agrees with the upstream's unless it re-watched.
                "upstream_watches": float(max(watches, proxy_stats["upstream_watches"])),
            }
        )
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
