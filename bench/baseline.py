"""The raw baseline: the least work any informer must do, written as plainly as possible.

Role: the reference every "ours" figure is divided by. It uses aiohttp and orjson directly:
LIST pages are read whole and decoded once; a watch response is streamed and each line is
decoded with one ``orjson.loads`` and stored in a ``dict`` keyed ``namespace/name`` (a
streaming list is such a watch, read until its initial-events-end bookmark). There is
no queue, no index, no handler dispatch: whatever the informer adds on top of this is its
cost.

Two ways of framing watch lines are offered, because which one is cheaper is a measured
question: ``"chunks"`` splits the raw chunks on ``\\n`` (no line-length limit) and
``"readline"`` uses aiohttp's ``readline`` (capped at 128 KiB per line by aiohttp).

:func:`harness_raw_list` and :func:`harness_raw_watch` are the independent harness's raw
client's LIST and watch loops (``bench-harness/clients/raw_aiohttp.py``), statement for
statement: whether and when the cyclic collector runs depends on what a loop keeps and in
which order it allocates and frees, so the scenarios that stand for the harness's clients
run its own loops. One such detail decides its watch figure: the harness's client keeps
its last LIST page (500 decoded objects) referenced through the watch, so the first
event that replaces each of those objects frees nothing; the collector then runs (about
44 young collections over 50k events) and, once, over the whole cache, which costs about
a third of its watch time. :func:`harness_raw_list` returns that page so that a caller can
keep it the same way, or drop it.

Task model: plain coroutines on the caller's loop; nothing is left running when they return.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import orjson

if TYPE_CHECKING:
    from collections.abc import Callable

    import aiohttp

__all__ = [
    "Framing",
    "RawCache",
    "WatchRun",
    "harness_raw_list",
    "harness_raw_watch",
    "raw_list",
    "raw_watch",
    "raw_watch_list",
]

Framing = Literal["chunks", "readline"]

_INITIAL_EVENTS_END = "k8s.io/initial-events-end"

RawCache = dict[str, dict[str, Any]]
"""``namespace/name`` → the object as decoded."""


@dataclass(slots=True)
class WatchRun:
    """What one :func:`raw_watch` did: events applied and when the first and the last were
    stored (``time.perf_counter()``; 0.0 when no event arrived)."""

    applied: int = 0
    first_at: float = 0.0
    last_at: float = 0.0

    def finish(self, applied: int) -> WatchRun:
        self.applied = applied
        self.last_at = time.perf_counter()
        return self

    @property
    def events_per_second(self) -> float:
        """Steady rate from the first stored event to the last (the first is the start)."""
        span = self.last_at - self.first_at
        return (self.applied - 1) / span if self.applied > 1 and span > 0 else float("nan")


async def raw_list(
    session: aiohttp.ClientSession,
    url: str,
    resource: str,
    *,
    page_size: int | None = 500,
    pause_gc: bool = False,
) -> tuple[RawCache, str]:
    """LIST ``resource`` page by page into a new cache; returns it and the list's RV.

    The first request asks for resourceVersion ``"0"`` as a reflector's first list does.
    ``pause_gc`` disables the cyclic collector for the duration (a technique measured
    against the default).
    """
    cache: RawCache = {}
    params: dict[str, str] = {"resourceVersion": "0"}
    if page_size:
        params["limit"] = str(page_size)
    resource_version = ""
    paused = pause_gc and gc.isenabled()
    if paused:
        gc.disable()
    try:
        while True:
            async with session.get(f"{url}/api/v1/{resource}", params=params) as response:
                response.raise_for_status()
                page = orjson.loads(await response.read())
            for item in page["items"]:
                meta = item["metadata"]
                cache[f"{meta['namespace']}/{meta['name']}"] = item
            metadata = page["metadata"]
            resource_version = metadata["resourceVersion"]
            token = metadata.get("continue")
            if not token:
                break
            params = {"continue": token}
            if page_size:
                params["limit"] = str(page_size)
    finally:
        if paused:
            gc.enable()
    return cache, resource_version


async def raw_watch_list(
    session: aiohttp.ClientSession, url: str, resource: str
) -> tuple[RawCache, str]:
    """Get the state of ``resource`` from a streaming list (a watch with
    ``sendInitialEvents=true``) into a new cache; returns it and the resourceVersion of the
    bookmark that ended the initial events. Lines are framed as ``"chunks"`` does."""
    cache: RawCache = {}
    params = {
        "watch": "1",
        "sendInitialEvents": "true",
        "allowWatchBookmarks": "true",
        "resourceVersionMatch": "NotOlderThan",
        "resourceVersion": "",
        "timeoutSeconds": "600",
    }
    async with session.get(f"{url}/api/v1/{resource}", params=params) as response:
        response.raise_for_status()
        pending = b""
        async for chunk in response.content.iter_any():
            lines = (pending + chunk).split(b"\n") if pending else chunk.split(b"\n")
            pending = lines.pop()
            for line in lines:
                event = orjson.loads(line)
                meta = event["object"]["metadata"]
                if event["type"] == "BOOKMARK":
                    if (meta.get("annotations") or {}).get(_INITIAL_EVENTS_END) == "true":
                        return cache, meta["resourceVersion"]
                    continue
                cache[f"{meta['namespace']}/{meta['name']}"] = event["object"]
    raise RuntimeError("the stream ended before its initial-events-end bookmark")


async def raw_watch(
    session: aiohttp.ClientSession,
    url: str,
    resource: str,
    cache: RawCache,
    *,
    resource_version: str,
    until_resource_version: int,
    framing: Framing = "chunks",
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> WatchRun:
    """Watch from ``resource_version`` and apply events to ``cache`` until the event whose
    resourceVersion is ``until_resource_version``.

    ``on_event(obj)`` is called right after each object is stored (used for latency).
    """
    params = {"watch": "1", "resourceVersion": resource_version, "timeoutSeconds": "600"}
    run = WatchRun()
    applied = 0
    last = str(until_resource_version)
    async with session.get(f"{url}/api/v1/{resource}", params=params) as response:
        response.raise_for_status()
        content = response.content
        if framing == "readline":
            while line := await content.readline():
                obj = orjson.loads(line)["object"]
                meta = obj["metadata"]
                cache[f"{meta['namespace']}/{meta['name']}"] = obj
                applied += 1
                if applied == 1:
                    run.first_at = time.perf_counter()
                if on_event is not None:
                    on_event(obj)
                if meta["resourceVersion"] == last:
                    break
            return run.finish(applied)
        pending = b""
        async for chunk in content.iter_any():
            lines = (pending + chunk).split(b"\n") if pending else chunk.split(b"\n")
            pending = lines.pop()
            for line in lines:
                obj = orjson.loads(line)["object"]
                meta = obj["metadata"]
                cache[f"{meta['namespace']}/{meta['name']}"] = obj
                applied += 1
                if applied == 1:
                    run.first_at = time.perf_counter()
                if on_event is not None:
                    on_event(obj)
                if meta["resourceVersion"] == last:
                    return run.finish(applied)
    return run.finish(applied)


async def harness_raw_watch(
    session: aiohttp.ClientSession,
    url: str,
    resource: str,
    cache: RawCache,
    *,
    resource_version: str,
    events: int,
) -> tuple[int, float]:
    """Watch from ``resource_version`` and apply events to ``cache`` until ``events`` of
    them (not bookmarks) have been applied, re-watching from the last resourceVersion if a
    stream ends first: the harness's ``raw-aiohttp-orjson`` loop (``async for line in
    response.content``, one ``orjson.loads`` per line). Returns the events applied and
    when the last one was (``time.perf_counter()``)."""
    loads = orjson.loads
    rv = resource_version
    n = 0
    while n < events:
        params = {
            "watch": "1",
            "resourceVersion": rv,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "600",
        }
        async with session.get(f"{url}/api/v1/{resource}", params=params) as response:
            response.raise_for_status()
            async for line in response.content:
                if not line.strip():
                    continue
                ev = loads(line)
                t, o = ev["type"], ev["object"]
                md = o["metadata"]
                rv = md["resourceVersion"]
                if t == "BOOKMARK":
                    continue
                if t == "ERROR":
                    raise RuntimeError(o)
                k = f"{md['namespace']}/{md['name']}"
                if t == "DELETED":
                    cache.pop(k, None)
                else:
                    cache[k] = o
                n += 1
                if n >= events:
                    break
    return n, time.perf_counter()


async def harness_raw_list(
    session: aiohttp.ClientSession, url: str, resource: str
) -> tuple[RawCache, str, dict[str, Any]]:
    """LIST ``resource`` 500 per page into a new cache, as the harness's raw client does;
    returns the cache, the list's resourceVersion and the last page as decoded (whose
    items are the cache's objects too: the harness's client keeps it referenced)."""
    loads = orjson.loads
    cache: RawCache = {}
    params = {"limit": "500"}
    while True:
        async with session.get(f"{url}/api/v1/{resource}", params=params) as response:
            response.raise_for_status()
            body: dict[str, Any] = loads(await response.read())
        for o in body["items"]:
            md = o["metadata"]
            cache[f"{md['namespace']}/{md['name']}"] = o
        rv, cont = body["metadata"]["resourceVersion"], body["metadata"].get("continue")
        if not cont:
            break
        params["continue"] = cont
    return cache, rv, body
