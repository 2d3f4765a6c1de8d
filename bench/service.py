"""What an application sees of the cache: lister read costs, and a web service sharing its
event loop with a busy informer.

Role: measured cases for :mod:`bench.scenarios`' registry (same contract: ``(url, params)
-> {metric: value}``, run in a fresh worker process).

Kinds and what they report:

* ``lister`` — on a synced cache of ``objects`` Pods: microseconds per ``lister.get``
  (every key once, in a fixed shuffled order), microseconds per object of
  ``lister.list()`` (median of ``list_rounds`` calls), resident bytes per cached object
  and peak RSS. Variants: ``baseline`` (a plain ``dict`` filled by the raw LIST, read with
  ``dict.get`` and ``list(d.values())``), ``ours`` and ``ours-compact`` (an informer with a
  namespace index, read through its lister).
* ``service`` — a FastAPI application whose endpoint reads one Pod from the cache, driven
  by an HTTP client on the same loop (``httpx`` over the ASGI transport) that sends one
  request every ``request_interval`` seconds whatever the loop's state (open loop: a
  request due during a stall waits for it), while an informer with three indexes and
  ``handlers`` handlers absorbs a watch at ``rate`` events per second: request latency
  from the moment it was due to its response (p50/p99/max), the loop's lag, the
  collector's runs. Variants: ``baseline`` (the same application over a plain ``dict``
  filled once by the raw LIST, no informer and no watch, for as long as the stream would
  last), ``ours`` and ``ours-compact``.

Task model: each case is one coroutine; the request driver runs in a task group inside
it, and the informer in its ``async with`` block; both end before the case returns.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench import harness
from bench.baseline import raw_list
from bench.measure import observed, peak_rss, percentile, settled_rss

if TYPE_CHECKING:
    from bench.harness import CacheMode

__all__ = ["lister_baseline", "lister_ours", "service_baseline", "service_ours"]

_MIB = 1024 * 1024
_LOOKUP_SEED = 14
"""Seed of the shuffled lookup order (fixed, so every variant reads in the same order)."""
_WARMUP_FRACTION = 0.1
"""Share of the first requests not judged (routes and connections warming up)."""

Read = Callable[[str, str], dict[str, Any] | None]
"""``(namespace, name) -> object or None``: how the service reads its cache."""


def _lookup_order(keys: list[str]) -> list[tuple[str, str]]:
    pairs = [(key.partition("/")[0], key.partition("/")[2]) for key in sorted(keys)]
    random.Random(_LOOKUP_SEED).shuffle(pairs)
    return pairs


def _read_costs(
    get: Callable[[str, str], Any], list_all: Callable[[], list[Any]], keys: list[str], rounds: int
) -> dict[str, float]:
    """Microseconds per ``get(namespace, name)`` over every key, and per object listed."""
    pairs = _lookup_order(keys)
    started = time.perf_counter()
    for namespace, name in pairs:
        if get(namespace, name) is None:
            raise RuntimeError(f"{namespace}/{name} is not cached")
    get_seconds = time.perf_counter() - started
    per_object: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        listed = list_all()
        per_object.append((time.perf_counter() - started) / max(1, len(listed)))
        del listed
    return {
        "get_us": get_seconds / max(1, len(pairs)) * 1e6,
        "list_us_per_object": statistics.median(per_object) * 1e6,
    }


async def lister_baseline(url: str, params: dict[str, Any]) -> dict[str, float]:
    async with harness.session() as session:
        before = settled_rss()
        cache, _ = await raw_list(session, url, "pods", page_size=params["page_size"])
        after = settled_rss()
    peak = peak_rss()

    def get(namespace: str, name: str) -> Any:
        return cache.get(f"{namespace}/{name}")

    figures = _read_costs(get, lambda: list(cache.values()), list(cache), params["list_rounds"])
    figures.update(
        {
            "bytes_per_object": (after - before) / max(1, len(cache)),
            "peak_rss_mib": peak / _MIB,
            "objects": float(len(cache)),
        }
    )
    return figures


async def lister_ours(url: str, params: dict[str, Any], *, cache: CacheMode) -> dict[str, float]:
    from aioinformer.indexer import NAMESPACE_INDEX, namespace_index_func
    from aioinformer.reflector import ReflectorOptions

    async with harness.client(url) as client:
        informer = harness.informer(
            client,
            "pods",
            cache=cache,
            indexers={NAMESPACE_INDEX: namespace_index_func},
            reflector=ReflectorOptions(use_watch_list=False, page_size=params["page_size"]),
        )
        before = settled_rss()
        async with informer:
            if not await informer.wait_for_sync():
                raise RuntimeError("informer did not report synced")
            after = settled_rss()
            peak = peak_rss()
            lister = informer.lister()
            keys = informer.indexer.list_keys()

            def get(namespace: str, name: str) -> Any:
                return lister.get(name, namespace=namespace)

            figures = _read_costs(get, lister.list, keys, params["list_rounds"])
    figures.update(
        {
            "bytes_per_object": (after - before) / max(1, len(keys)),
            "peak_rss_mib": peak / _MIB,
            "objects": float(len(keys)),
        }
    )
    return figures


# --- a web service on the informer's loop -------------------------------------------------


def _app(read: Read) -> Any:
    from fastapi import FastAPI, HTTPException

    app = FastAPI()

    @app.get("/pods/{namespace}/{name}")
    async def get_pod(namespace: str, name: str) -> dict[str, Any]:
        pod = read(namespace, name)
        if pod is None:
            raise HTTPException(status_code=404, detail=f"{namespace}/{name} not found")
        meta = pod["metadata"]
        return {
            "name": meta["name"],
            "resourceVersion": meta["resourceVersion"],
            "phase": pod["status"].get("phase"),
        }

    return app


async def _drive_requests(
    read: Read, keys: list[str], *, interval: float, until: asyncio.Event
) -> dict[str, float]:
    """Send one request every ``interval`` seconds until ``until`` is set; latency counts
    from each request's due time, so a stall delays every request due during it."""
    import httpx

    pairs = _lookup_order(keys)
    latencies: list[float] = []
    failures = [0]
    loop = asyncio.get_running_loop()
    transport = httpx.ASGITransport(app=_app(read))
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:

        async def one(path: str, due: float) -> None:
            response = await client.get(path)
            latencies.append(loop.time() - due)
            if response.status_code != 200:
                failures[0] += 1

        async with asyncio.TaskGroup() as requests:
            due = loop.time()
            sent = 0
            while not until.is_set():
                namespace, name = pairs[sent % len(pairs)]
                requests.create_task(one(f"/pods/{namespace}/{name}", due))
                sent += 1
                due += interval
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
    if failures[0]:
        raise RuntimeError(f"{failures[0]} of {len(latencies)} requests failed")
    judged = latencies[int(len(latencies) * _WARMUP_FRACTION) :]
    return {
        "request_p50_ms": percentile(judged, 0.50) * 1e3,
        "request_p99_ms": percentile(judged, 0.99) * 1e3,
        "request_max_ms": max(judged) * 1e3 if judged else float("nan"),
        "requests": float(len(latencies)),
    }


async def _timer(seconds: float, done: asyncio.Event) -> None:
    await asyncio.sleep(seconds)
    done.set()


async def service_baseline(url: str, params: dict[str, Any]) -> dict[str, float]:
    async with harness.session() as session:
        cache, _ = await raw_list(session, url, "pods", page_size=500)

    def read(namespace: str, name: str) -> dict[str, Any] | None:
        return cache.get(f"{namespace}/{name}")

    stop = asyncio.Event()
    figures: dict[str, float] = {}
    async with observed(figures), asyncio.TaskGroup() as tasks:
        tasks.create_task(_timer(params["events"] / params["rate"], stop))
        figures.update(
            await _drive_requests(
                read, list(cache), interval=params["request_interval"], until=stop
            )
        )
    return figures


async def service_ours(url: str, params: dict[str, Any], *, cache: CacheMode) -> dict[str, float]:
    last = str(params["objects"] + params["events"])
    finished = asyncio.Event()
    waiting = [params["handlers"]]

    def on_update(_old: Any, new: Any) -> None:
        if new["metadata"]["resourceVersion"] == last:
            waiting[0] -= 1
            if not waiting[0]:
                finished.set()

    async with harness.client(url) as client:
        informer = harness.informer(client, "pods", cache=cache, indexers=harness.watch_indexers())
        for slot in range(params["handlers"]):
            informer.add_event_handler(on_update=on_update, name=f"handler-{slot}")
        async with informer:
            if not await informer.wait_for_sync():
                raise RuntimeError("informer did not report synced")
            await harness.start_stream(url, params)
            lister = informer.lister()

            def read(namespace: str, name: str) -> dict[str, Any] | None:
                pod: dict[str, Any] | None = lister.get(name, namespace=namespace)
                return pod

            figures: dict[str, float] = {}
            started = time.perf_counter()
            async with observed(figures):
                figures.update(
                    await _drive_requests(
                        read,
                        informer.indexer.list_keys(),
                        interval=params["request_interval"],
                        until=finished,
                    )
                )
            figures["achieved_rate"] = params["events"] / (time.perf_counter() - started)
    return figures
