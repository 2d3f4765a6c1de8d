"""The measured cases: one coroutine per (scenario kind, variant), run in a fresh process.

Role: what is timed. Each case connects to a replay server (:mod:`bench.replay`) at ``url``,
does one scenario's work through either the raw baseline (:mod:`bench.baseline`) or
aioinformer's public API (``Client`` → ``SharedIndexInformer``), and returns flat
``{metric: value}`` figures. The runner (:mod:`bench.run`) starts one worker process per
case and repeat (:mod:`bench.worker`), so peak RSS is the case's own. :data:`CASES`
registers them all, every aioinformer case (``ours*``) once per cache mode: under its name
with ``cache="objects"`` and with ``-compact`` appended with ``cache="compact"`` (see
:mod:`bench.harness`); the ``lister`` and ``service`` kinds live in :mod:`bench.service`,
the ``audit`` kind (a cache audit beside the metadata LIST alone) in :mod:`bench.audit`.

Every case that streams events also reports, over the streaming part, the event loop's
longest and 99th-percentile lag and the longest run of the cyclic collector
(:func:`bench.measure.observed`).

Kinds and what they report:

* ``sync`` — seconds from start to synced, peak RSS, resident bytes per cached object (RSS
  growth over the sync divided by the object count) and logical bytes per object (a deep
  walk of a sample of the cache).
  Variants: ``baseline``, ``baseline-gc-paused`` (cyclic GC off during the list), ``ours``
  (cache with a namespace index, no handler), ``ours-1-handler`` (also the time until one
  handler got every initial add), ``ours-strip-managed-fields``, ``ours-model`` (``model=``:
  raw cache, typed reads; also times one typed read of the whole cache) and
  ``ours-model-transform`` (objects validated into models on the way into the cache).
* ``watch-list`` — the ``sync`` figures for the two ways of getting the initial state:
  ``baseline`` (the raw paginated LIST), ``baseline-stream`` (the raw streaming list: one
  watch with ``sendInitialEvents``, read until its initial-events-end bookmark),
  ``ours-list`` (``use_watch_list=False``: paginated LIST) and ``ours-stream``
  (``use_watch_list=True``, the default). Every other kind lists with
  ``use_watch_list=False``, as its baseline does.
* ``watch`` — MODIFIED events per second end to end, after the initial list, through a
  cache with a namespace index and two label indexes and ``handlers`` handlers.
  Variants: ``baseline``, ``baseline-readline`` (aiohttp's readline framing),
  ``baseline-gc-frozen`` (``gc.freeze()`` after the list), ``ours``, ``ours-gc-frozen``
  (``gc.freeze()`` once synced: what the technique would give the informer),
  ``ours-delete-observer`` (plus the delete-only handler a cache-backed client adds to
  an informer it deletes through: what read-your-own-writes costs per event).
* ``controller`` — events per second from the watch into a ``Controller``'s work queue
  (its informer handler enqueues keys, its reconcile does nothing, no index): the
  key-only path. Variants: ``baseline`` (the raw watch loop, every line decoded), ``ours``.
* ``user-watch`` — the independent harness's list+watch clients (``run_peers.py`` in
  ``bench-harness``): MODIFIED events per second from synced to the last event, events per
  CPU second, and the collector's runs per generation and time during the watch. Variants:
  ``baseline`` (its ``raw-aiohttp-orjson``: readline framing), ``baseline-chunks`` (the
  chunk-splitting framing of the other baselines) and ``ours``, whose shape is the
  scenario's ``shape`` parameter: ``"user"`` (its ``aioinformer``: Python index functions
  and a handler reading each object) or ``"controller"`` (its ``aioinformer-keys``:
  built-in label indexes and a ``keys_only`` handler).
* ``latency`` — emit → handler entered (p50/p99/max) at a fixed rate. Variants:
  ``baseline`` (emit → stored in the dict), ``ours``, ``ours-gc-frozen`` (``gc.freeze()``
  once synced), and ``baseline-busy-app`` / ``ours-busy-app``: the same beside the rest
  of a service (:class:`~bench.measure.BusyApplication`, the start-up heap frozen once,
  before the list, as a service might do), so the collector runs on both
  sides as it would in production.
* ``slow-handler`` — one handler sleeping 10 ms per event beside fast ones: the fast ones'
  p99 latency in the first and second half of the run, RSS growth over each half, and
  what the slow handler finished, still has queued and had coalesced. Variants:
  ``baseline`` (each event stored and handed inline to the fast recorders; the slow
  consumer drains a dict of the newest object per key, which bounds it by the key count),
  ``ours`` (the slow handler registered with ``max_pending=1000, overflow="coalesce"``) and
  ``ours-unbounded`` (the same handler with the default unbounded queue: what the bound
  prevents).
* ``decode`` — ``orjson.loads`` over the same watch lines with no I/O: the ceiling.
  Variants: ``orjson-loads`` (a list of lines), ``split-and-loads`` (the stream in 256 KiB
  chunks, framed into lines across chunk borders, then decoded).
* ``placement`` — the raw watch baseline with the replay server in a separate process
  (``server-separate``) or on the measured loop itself (``server-same-loop``).
* ``fanout`` — N raw watchers through a ``CachingProxy`` (``proxy-nN``) or on the upstream
  directly (``direct-nN``), each side in its own processes: see :mod:`bench.fanout`.
* ``sharding`` — one unsharded Manager (``singleton``) against three shards of a ring,
  in label mode (``sharded-3``) and in range mode (``sharded-3-ranges``), on the same
  ConfigMaps and churn, each replica in its own process: CPU, RSS and cache per process,
  then one shard killed: see :mod:`bench.sharding`.
* ``stages`` — CPU µs per event of each stage of the pipeline measured alone, their sum
  beside the whole pipeline, and what a user's choices add: see :mod:`bench.stages`.
  Variants: ``baseline`` (the naive loop's stages), ``ours`` (the library's).

Task model: each case is one coroutine on the worker's loop; everything it starts (sessions,
informers, samplers) is closed before it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from aioinformer.models import KubeObject
from aioinformer.operator._own_writes import OwnWrites, Scope
from bench import fanout, harness, sharding, stages
from bench.audit import audit_baseline, audit_ours
from bench.baseline import (
    Framing,
    harness_raw_list,
    harness_raw_watch,
    raw_list,
    raw_watch,
    raw_watch_list,
)
from bench.measure import (
    BusyApplication,
    LatencyRecorder,
    RssSampler,
    deep_size,
    observed,
    peak_rss,
    percentile,
    settled_rss,
)
from bench.objects import APP_LABEL, TEAM_LABEL, WatchLineTemplate
from bench.replay import ReplayConfig, ReplayData, start_replay_server
from bench.service import lister_baseline, lister_ours, service_baseline, service_ours

if TYPE_CHECKING:
    import aiohttp

    from aioinformer.processor import OverflowPolicy
    from bench.harness import CacheMode

__all__ = ["CASES", "BenchPod", "Case", "label_index", "run_case"]

Case = Callable[[str, dict[str, Any]], Awaitable[dict[str, float]]]
"""``(url, params) -> metrics``."""

_MIB = 1024 * 1024
_SLOW_HANDLER_SECONDS = 0.010
_SIZE_SAMPLE = 200
"""Cached objects whose logical size is walked (evenly spread over the cache)."""


# --- typed access ---------------------------------------------------------------------


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class BenchContainer(_Part):
    name: str
    image: str | None = None


class BenchPodSpec(_Part):
    containers: list[BenchContainer] = Field(default_factory=list)
    node_name: str | None = Field(default=None, alias="nodeName")


class BenchPodStatus(_Part):
    phase: str | None = None
    pod_ip: str | None = Field(default=None, alias="podIP")


class BenchPod(KubeObject):
    """The typed Pod of the ``ours-model`` variant: the fields a controller typically reads
    are declared, the rest is kept as extras (as ``KubeObject`` does)."""

    spec: BenchPodSpec = Field(default_factory=BenchPodSpec)
    status: BenchPodStatus = Field(default_factory=BenchPodStatus)


# --- sync -------------------------------------------------------------------------------


async def _sync_baseline(
    url: str, params: dict[str, Any], *, pause_gc: bool, stream: bool = False
) -> dict[str, float]:
    async with harness.session() as session:
        before = settled_rss()
        started = time.perf_counter()
        if stream:
            cache, _ = await raw_watch_list(session, url, params["resource"])
        else:
            cache, _ = await raw_list(
                session, url, params["resource"], page_size=params["page_size"], pause_gc=pause_gc
            )
        seconds = time.perf_counter() - started
        after = settled_rss()
        objects = len(cache)
    return {
        "seconds": seconds,
        "peak_rss_mib": peak_rss() / _MIB,
        "bytes_per_object": (after - before) / max(1, objects),
        "object_bytes": _sampled_object_bytes(list(cache.values())),
        "objects": float(objects),
    }


def _sampled_object_bytes(objs: list[Any]) -> float:
    """Mean :func:`deep_size` of an evenly spread sample of ``objs``."""
    sample = objs[:: max(1, len(objs) // _SIZE_SAMPLE)]
    return deep_size(sample) / max(1, len(sample))


async def sync_baseline(url: str, params: dict[str, Any]) -> dict[str, float]:
    return await _sync_baseline(url, params, pause_gc=False)


async def sync_baseline_gc_paused(url: str, params: dict[str, Any]) -> dict[str, float]:
    return await _sync_baseline(url, params, pause_gc=True)


async def sync_baseline_stream(url: str, params: dict[str, Any]) -> dict[str, float]:
    return await _sync_baseline(url, params, pause_gc=False, stream=True)


async def _sync_ours(
    url: str,
    params: dict[str, Any],
    *,
    variant: str,
    cache: CacheMode,
    use_watch_list: bool = False,
) -> dict[str, float]:
    from aioinformer.indexer import NAMESPACE_INDEX, namespace_index_func
    from aioinformer.reflector import ReflectorOptions

    resource = params["resource"]
    if variant in ("model", "model-transform") and resource != "pods":
        raise ValueError("the typed variants are defined for pods only")
    options: dict[str, Any] = {
        "indexers": {NAMESPACE_INDEX: namespace_index_func},
        "reflector": ReflectorOptions(use_watch_list=use_watch_list),
    }
    if variant == "strip":
        from aioinformer.transforms import strip_managed_fields

        options["transform"] = strip_managed_fields
    elif variant == "model":
        # Typed access the informer's way: the cache stays raw, reads validate.
        options["model"] = BenchPod
    elif variant == "model-transform":
        # Typed access the other way: validate once, on the way into the cache.
        options["transform"] = BenchPod.model_validate
    delivered = asyncio.Event()
    added = [0]
    figures: dict[str, float] = {}
    async with harness.client(url) as client:
        informer = harness.informer(client, resource, cache=cache, **options)
        if variant == "handler":

            def on_add(_obj: Any, _is_in_initial_list: bool) -> None:
                added[0] += 1
                if added[0] == params["objects"]:
                    delivered.set()

            informer.add_event_handler(on_add=on_add)
        before = settled_rss()
        started = time.perf_counter()
        async with informer:
            if not await informer.wait_for_sync():
                raise RuntimeError("informer did not report synced")
            figures["seconds"] = time.perf_counter() - started
            if variant == "handler":
                await delivered.wait()
                figures["seconds_all_delivered"] = time.perf_counter() - started
            after = settled_rss()
            # Read before anything below decodes the compact cache into fresh dicts.
            peak = peak_rss()
            objects = len(informer.indexer)
            if cache == "objects":
                # The decoded dicts are the cache only in this mode; a compact cache's
                # reads are fresh copies, whose size says nothing about what is cached.
                figures["object_bytes"] = _sampled_object_bytes(informer.indexer.list())
            if variant in ("model", "model-transform"):
                read_started = time.perf_counter()
                typed = informer.lister().list()
                figures["typed_list_seconds"] = time.perf_counter() - read_started
                if not all(isinstance(obj, BenchPod) for obj in typed[:10]):
                    raise RuntimeError("the lister did not return typed objects")
                del typed
    figures.update(
        {
            "peak_rss_mib": peak / _MIB,
            "bytes_per_object": (after - before) / max(1, objects),
            "objects": float(objects),
        }
    )
    return figures


# --- watch throughput ---------------------------------------------------------------------


async def _raw_watch_throughput(
    session: aiohttp.ClientSession,
    url: str,
    params: dict[str, Any],
    framing: Framing,
    *,
    freeze_gc: bool = False,
) -> dict[str, float]:
    resource = params.get("resource", "pods")
    cache, rv = await raw_list(session, url, resource, page_size=500)
    if freeze_gc:
        # Move everything alive now out of the collector's sight: the synced cache is no
        # longer traversed by full collections during the watch.
        gc.freeze()
    last = params["objects"] + params["events"]
    figures: dict[str, float] = {}
    async with observed(figures):
        run = await raw_watch(
            session,
            url,
            resource,
            cache,
            resource_version=rv,
            until_resource_version=last,
            framing=framing,
        )
    if run.applied != params["events"]:
        raise RuntimeError(f"applied {run.applied} of {params['events']} events")
    figures.update({"events_per_s": run.events_per_second, "seconds": run.last_at - run.first_at})
    return figures


async def watch_baseline(url: str, params: dict[str, Any]) -> dict[str, float]:
    async with harness.session() as session:
        return await _raw_watch_throughput(session, url, params, "chunks")


async def watch_baseline_gc_frozen(url: str, params: dict[str, Any]) -> dict[str, float]:
    async with harness.session() as session:
        return await _raw_watch_throughput(session, url, params, "chunks", freeze_gc=True)


async def watch_baseline_readline(url: str, params: dict[str, Any]) -> dict[str, float]:
    async with harness.session() as session:
        return await _raw_watch_throughput(session, url, params, "readline")


async def watch_ours(
    url: str,
    params: dict[str, Any],
    *,
    cache: CacheMode,
    freeze_gc: bool = False,
    delete_observer: bool = False,
) -> dict[str, float]:
    resource = params.get("resource", "pods")
    handlers = params["handlers"]
    last = str(params["objects"] + params["events"])
    counts = [0] * handlers
    finished = asyncio.Event()
    waiting = {"handlers": handlers}
    first_at = [0.0]

    def make_handler(slot: int) -> Callable[[Any, Any], None]:
        def on_update(_old: Any, new: Any) -> None:
            counts[slot] += 1
            if not first_at[0]:
                first_at[0] = time.perf_counter()
            if new["metadata"]["resourceVersion"] == last:
                waiting["handlers"] -= 1
                if not waiting["handlers"]:
                    finished.set()

        on_update.__name__ = f"on_update_{slot}"
        return on_update

    async with harness.client(url) as client:
        informer = harness.informer(
            client, resource, cache=cache, indexers=harness.watch_indexers()
        )
        for slot in range(handlers):
            informer.add_event_handler(on_update=make_handler(slot))
        if delete_observer:
            # What a cache-backed client adds to an informer before its first delete
            # answered with a Status: one more handler, on_delete only.
            OwnWrites(informer, resource=resource, scope=Scope()).delete_sent("bench/none")
        async with informer:
            if not await informer.wait_for_sync():
                raise RuntimeError("informer did not report synced")
            if freeze_gc:
                gc.freeze()
            figures: dict[str, float] = {}
            async with observed(figures):
                await finished.wait()
            seconds = time.perf_counter() - first_at[0]
    # Measured as the baseline is: from the first event a handler got to the last event
    # every handler got, so the initial list's tail is not counted on either side.
    figures.update(
        {
            "events_per_s": (params["events"] - 1) / seconds,
            "seconds": seconds,
            "delivered_per_handler": float(min(counts)),
        }
    )
    return figures


async def watch_ours_gc_frozen(
    url: str, params: dict[str, Any], *, cache: CacheMode
) -> dict[str, float]:
    return await watch_ours(url, params, cache=cache, freeze_gc=True)


# --- the independent harness's client code ---------------------------------------------


def label_index(key: str) -> Callable[[Any], list[str]]:
    """An index function on label ``key`` as a user writes one, and as the independent
    harness's aioinformer client does (``clients/peer_aioinformer.py``): plain Python over
    the object's mapping interface, not the library's ``label_index_func``."""

    def index(o: Any) -> list[str]:
        labels = (o.get("metadata") or {}).get("labels") or {}
        return [labels[key]] if key in labels else []

    return index


async def user_watch_baseline(
    url: str,
    params: dict[str, Any],
    *,
    framing: Framing | None = None,
    keep_last_page: bool = True,
) -> dict[str, float]:
    """The harness's ``raw-aiohttp-orjson`` client: LIST into a dict, then watch from the
    list's resourceVersion, both with its own loops (:func:`~bench.baseline.harness_raw_list`,
    :func:`~bench.baseline.harness_raw_watch`: aiohttp's readline, ``orjson.loads``, the
    dict), its last LIST page kept referenced through the watch as the harness's client
    keeps it, unless not ``keep_last_page``. With ``framing``, the other baselines' watch
    loop framed that way instead. Timed as the harness times it: from the watch request
    to the last event stored."""
    resource = params.get("resource", "pods")
    async with harness.session() as session:
        cache, rv, last_page = await harness_raw_list(session, url, resource)
        if not keep_last_page:
            del last_page
        figures: dict[str, float] = {}
        async with observed(figures):
            started = time.perf_counter()
            if framing is None:
                applied, last_at = await harness_raw_watch(
                    session, url, resource, cache, resource_version=rv, events=params["events"]
                )
            else:
                run = await raw_watch(
                    session,
                    url,
                    resource,
                    cache,
                    resource_version=rv,
                    until_resource_version=params["objects"] + params["events"],
                    framing=framing,
                )
                applied, last_at = run.applied, run.last_at
        if keep_last_page:
            del last_page
    if applied != params["events"]:
        raise RuntimeError(f"applied {applied} of {params['events']} events")
    return _user_watch_figures(figures, applied, last_at - started)


def _user_watch_figures(figures: dict[str, float], events: int, seconds: float) -> dict[str, float]:
    outside = figures["cpu_s"] - figures["gc_ms"] / 1e3
    figures.update(
        {
            "events_per_s": events / seconds,
            "events_per_cpu_s": events / figures["cpu_s"] if figures["cpu_s"] > 0 else 0.0,
            # Whether a collection of the older generations lands inside the watch is an
            # accident of what ran before it (the list, the imports): this one leaves the
            # collector out, so that two runs compare the rest of the work.
            "events_per_cpu_s_outside_gc": events / outside if outside > 0 else 0.0,
            "seconds": seconds,
        }
    )
    return figures


async def user_watch_ours(
    url: str, params: dict[str, Any], *, cache: CacheMode
) -> dict[str, float]:
    """The harness's aioinformer client, in one of its two shapes (``params["shape"]``):

    * ``"user"`` (its ``aioinformer`` row): a namespace index and two label indexes written
      as Python functions (:func:`label_index`), and one handler that reads each object's
      resourceVersion, so every event is handed over as an object;
    * ``"controller"`` (its ``aioinformer-keys`` row): the library's ``label_index_func``
      for the same two labels and a ``keys_only`` handler, what a controller enqueues.

    Timed as the harness times it: from synced (the cache, and the handler's initial list)
    until the handler has counted ``events`` events after the initial list."""
    from aioinformer.indexer import NAMESPACE_INDEX, label_index_func, namespace_index_func

    resource = params.get("resource", "pods")
    events = params["events"]
    seen = [0]
    last_rv: list[str | None] = [None]
    done = asyncio.Event()

    def count() -> None:
        seen[0] += 1
        if seen[0] >= events:
            done.set()

    async with harness.client(url) as client:
        if params["shape"] == "user":
            informer = harness.informer(
                client,
                resource,
                cache=cache,
                indexers={
                    NAMESPACE_INDEX: namespace_index_func,
                    "app": label_index(APP_LABEL),
                    "team": label_index(TEAM_LABEL),
                },
            )

            def on_add(o: Any, is_in_initial_list: bool) -> None:
                if not is_in_initial_list:
                    last_rv[0] = o["metadata"]["resourceVersion"]
                    count()

            def on_update(_old: Any, new: Any) -> None:
                last_rv[0] = new["metadata"]["resourceVersion"]
                count()

            def on_delete(_o: Any) -> None:
                count()

            registration = informer.add_event_handler(
                on_add=on_add, on_update=on_update, on_delete=on_delete
            )
        else:
            informer = harness.informer(
                client,
                resource,
                cache=cache,
                indexers={
                    NAMESPACE_INDEX: namespace_index_func,
                    "app": label_index_func(APP_LABEL),
                    "team": label_index_func(TEAM_LABEL),
                },
            )

            def on_key(_key: str, is_in_initial_list: bool) -> None:
                if not is_in_initial_list:
                    count()

            registration = informer.add_event_handler(
                on_add=on_key,
                on_update=lambda _old, _key: count(),
                on_delete=lambda _key: count(),
                keys_only=True,
            )
        async with informer:
            if not await informer.wait_for_sync():
                raise RuntimeError("informer did not report synced")
            if not await registration.wait_for_sync(timeout=600):
                raise RuntimeError("the handler did not get the initial list")
            figures: dict[str, float] = {}
            async with observed(figures):
                started = time.perf_counter()
                await done.wait()
                seconds = time.perf_counter() - started
    expected = str(params["objects"] + events)
    if params["shape"] == "user" and last_rv[0] != expected:
        raise RuntimeError(f"the last event's resourceVersion was {last_rv[0]}, not {expected}")
    return _user_watch_figures(figures, events, seconds)


# --- key-only controller ------------------------------------------------------------


async def controller_ours(
    url: str, params: dict[str, Any], *, cache: CacheMode
) -> dict[str, float]:
    """Watch → ``Controller`` whose informer handler enqueues keys and whose reconcile does
    nothing: events per second from the informer into the work queue.

    The informer has no index and the controller maps objects with the default key
    function, so nothing on the way needs the whole object.
    """
    from aioinformer.operator.controller import Controller

    resource = params.get("resource", "pods")
    first_watch_add = params["objects"] + 1
    expected = params["objects"] + params["events"]
    adds = [0]
    marks = [0.0, 0.0]
    finished = asyncio.Event()

    def reconcile(_key: str) -> None:
        return None

    async with harness.client(url) as client:
        informer = harness.informer(client, resource, cache=cache)
        controller = Controller("bench", reconcile)
        enqueue = controller.queue.add

        def counted_add(key: str, **options: Any) -> None:
            # Every event reaches the queue through add() (deduplicated inside), so
            # counting its calls counts events through the pipeline, the initial list's
            # adds first. The priority queue, the controller's default, also gets each
            # key's priority (the initial list's low).
            adds[0] += 1
            if adds[0] == first_watch_add:
                marks[0] = time.perf_counter()
            elif adds[0] == expected:
                marks[1] = time.perf_counter()
                finished.set()
            enqueue(key, **options)

        # Installed before watch() binds the queue's add into the informer handler.
        controller.queue.add = counted_add  # type: ignore[method-assign, assignment]
        controller.watch(informer)
        async with informer, controller:
            if not await informer.wait_for_sync():
                raise RuntimeError("informer did not report synced")
            figures: dict[str, float] = {}
            async with observed(figures):
                await finished.wait()
            reconciles = controller.statistics().reconciles
    seconds = marks[1] - marks[0]
    figures.update(
        {
            "events_per_s": (params["events"] - 1) / seconds,
            "seconds": seconds,
            "reconciles": float(reconciles),
        }
    )
    return figures


# --- latency and the slow handler -------------------------------------------------------


async def _raw_paced(
    url: str, params: dict[str, Any], *, slow: bool, busy: bool = False
) -> dict[str, float]:
    """The raw watch at a fixed rate; with ``slow``, the slow-handler scenario's baseline.

    That baseline does the same work as the informer side in the plainest way that keeps
    memory bounded: each event is stored, handed inline to ``handlers`` fast recorders, and
    put in a dict of the newest object per key that one task drains, sleeping 10 ms per
    object (the slow handler). A busy key is thus overwritten rather than queued twice.
    ``busy`` runs a :class:`BusyApplication` beside the stream (see :func:`_busy`).
    """
    _start_up(busy)
    resource = params.get("resource", "pods")
    recorders = [LatencyRecorder() for _ in range(params["handlers"] if slow else 1)]
    newest: dict[str, Any] = {}
    ready = asyncio.Event()
    slow_seen = [0]

    def on_event(obj: dict[str, Any]) -> None:
        for recorder in recorders:
            recorder.record(obj)
        if slow:
            meta = obj["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            # Re-inserting moves the key to the end: the drain order is by newest change.
            newest.pop(key, None)
            newest[key] = obj
            ready.set()

    async def drain() -> None:
        while True:
            await ready.wait()
            while newest:
                key = next(iter(newest))
                del newest[key]
                await asyncio.sleep(_SLOW_HANDLER_SECONDS)
                slow_seen[0] += 1
            ready.clear()

    sampler = RssSampler(period=0.1)
    async with harness.session() as session, asyncio.TaskGroup() as tasks:
        cache, rv = await raw_list(session, url, resource, page_size=500)
        # Ready once listed: a start sent before the watch connects is kept for it.
        await harness.start_stream(url, params)
        last = params["objects"] + params["events"]
        drainer = tasks.create_task(drain()) if slow else None
        observations: dict[str, float] = {}
        async with (
            sampler if slow else contextlib.nullcontext(sampler),
            _busy(busy),
            observed(observations),
        ):
            run = await raw_watch(
                session,
                url,
                resource,
                cache,
                resource_version=rv,
                until_resource_version=last,
                on_event=on_event,
            )
        if drainer is not None:
            drainer.cancel()
    figures = _paced_figures(_steady(recorders), slow=slow)
    figures.update(observations)
    figures["achieved_rate"] = run.events_per_second
    if slow:
        figures.update(sampler.summary())
        figures["slow_handled"] = float(slow_seen[0])
        figures["slow_pending_at_end"] = float(len(newest))
    return figures


_WARMUP_FRACTION = 0.1


def _steady(recorders: list[LatencyRecorder], emitted_since: int = 0) -> list[list[int]]:
    """Each recorder's samples without the first tenth (the stream's start overlaps the end
    of the initial sync on the informer side, and neither side is judged on that) and
    without events emitted before ``emitted_since``: on the informer side, the moment the
    last handler had received the whole initial list, so that a backlog left by the
    initial adds is not taken for the steady state (it is reported on its own)."""
    return [
        recorder.steady(skip_fraction=_WARMUP_FRACTION, emitted_since=emitted_since)
        for recorder in recorders
    ]


def _paced_figures(per_handler: list[list[int]], *, slow: bool) -> dict[str, float]:
    """Latency percentiles pooled over handlers; for the slow-handler scenario (``fast_``
    prefix) also the p99 of each half of the run, split in time per handler before pooling
    (pooling first would mix the handlers' timelines)."""
    prefix = "fast_" if slow else ""
    pooled = [s for samples in per_handler for s in samples]
    figures = {
        f"{prefix}p50_ms": percentile(pooled, 0.50) / 1e6,
        f"{prefix}p99_ms": percentile(pooled, 0.99) / 1e6,
        f"{prefix}max_ms": (max(pooled) / 1e6) if pooled else float("nan"),
    }
    if slow:
        first = [s for samples in per_handler for s in samples[: len(samples) // 2]]
        second = [s for samples in per_handler for s in samples[len(samples) // 2 :]]
        figures["fast_p99_first_half_ms"] = percentile(first, 0.99) / 1e6
        figures["fast_p99_second_half_ms"] = percentile(second, 0.99) / 1e6
    return figures


def _start_up(busy: bool) -> None:
    """With ``busy``, freeze the start-up heap (the imported modules: nothing is listed
    yet), as a long-running service may do once it has started."""
    if busy:
        gc.freeze()


def _busy(busy: bool) -> contextlib.AbstractAsyncContextManager[object]:
    """A :class:`BusyApplication` when ``busy``, else nothing."""
    return BusyApplication() if busy else contextlib.nullcontext()


async def latency_baseline(url: str, params: dict[str, Any]) -> dict[str, float]:
    return await _raw_paced(url, params, slow=False)


async def latency_baseline_busy(url: str, params: dict[str, Any]) -> dict[str, float]:
    return await _raw_paced(url, params, slow=False, busy=True)


async def slow_handler_baseline(url: str, params: dict[str, Any]) -> dict[str, float]:
    return await _raw_paced(url, params, slow=True)


_SLOW_MAX_PENDING = 1_000
"""The slow handler's queue bound in the ``ours`` slow-handler variant (coalescing)."""


async def _ours_paced(
    url: str,
    params: dict[str, Any],
    *,
    slow: OverflowPolicy | Literal["unbounded"] | None,
    cache: CacheMode,
    freeze_gc: bool = False,
    busy: bool = False,
) -> dict[str, float]:
    """The informer at a fixed rate with ``handlers`` fast handlers; ``slow`` adds one
    handler sleeping 10 ms per event, with a queue bounded at ``_SLOW_MAX_PENDING`` under
    that overflow policy, or unbounded. ``freeze_gc`` calls ``gc.freeze()`` once synced;
    ``busy`` runs a :class:`BusyApplication` beside the stream (see :func:`_busy`)."""
    _start_up(busy)
    resource = params.get("resource", "pods")
    fast = params["handlers"]
    last = str(params["objects"] + params["events"])
    recorders = [LatencyRecorder() for _ in range(fast)]
    finished = asyncio.Event()
    waiting = {"handlers": fast}
    slow_seen = [0]
    first_at = [0.0]
    # Per fast handler: initial adds received, and when the last one arrived (ns).
    initial_adds = [0] * fast
    initial_done = [0] * fast
    initial_delivered = asyncio.Event()

    def make_initial(slot: int) -> Callable[[Any, bool], None]:
        def on_add(_obj: Any, _is_in_initial_list: bool) -> None:
            initial_adds[slot] += 1
            if initial_adds[slot] == params["objects"]:
                initial_done[slot] = time.monotonic_ns()
                if all(initial_done):
                    initial_delivered.set()

        return on_add

    def make_fast(recorder: LatencyRecorder) -> Callable[[Any, Any], None]:
        def on_update(_old: Any, new: Any) -> None:
            recorder.record(new)
            if not first_at[0]:
                first_at[0] = time.perf_counter()
            if new["metadata"]["resourceVersion"] == last:
                waiting["handlers"] -= 1
                if not waiting["handlers"]:
                    finished.set()

        return on_update

    async def on_update_slow(_old: Any, _new: Any) -> None:
        await asyncio.sleep(_SLOW_HANDLER_SECONDS)
        slow_seen[0] += 1

    sampler = RssSampler(period=0.1)
    async with harness.client(url) as client:
        informer = harness.informer(
            client, resource, cache=cache, indexers=harness.watch_indexers()
        )
        for slot, recorder in enumerate(recorders):
            informer.add_event_handler(on_add=make_initial(slot), on_update=make_fast(recorder))
        registration = None
        if slow == "unbounded":
            registration = informer.add_event_handler(on_update=on_update_slow)
        elif slow is not None:
            registration = informer.add_event_handler(
                on_update=on_update_slow, max_pending=_SLOW_MAX_PENDING, overflow=slow
            )
        started_ns = time.monotonic_ns()
        async with informer:
            if not await informer.wait_for_sync():
                raise RuntimeError("informer did not report synced")
            if params.get("hold"):
                # Ready once every handler has the initial list: the stream starts then.
                await initial_delivered.wait()
                await harness.start_stream(url, params)
            if freeze_gc:
                gc.freeze()
            observations: dict[str, float] = {}
            async with (
                sampler if slow else contextlib.nullcontext(sampler),
                _busy(busy),
                observed(observations),
            ):
                await finished.wait()
                time_last = time.perf_counter()
            slow_done = slow_seen[0]
            statistics = None if registration is None else registration.statistics()
    # Not every handler got the whole list: nothing can be judged as steady.
    delivered_ns = max(initial_done) if all(initial_done) else time.monotonic_ns()
    steady = _steady(recorders, emitted_since=delivered_ns)
    figures = _paced_figures(steady, slow=slow is not None)
    figures.update(observations)
    figures["initial_delivery_s"] = (delivered_ns - started_ns) / 1e9
    figures["judged_events"] = float(min(len(samples) for samples in steady))
    if statistics is not None:
        figures.update(sampler.summary())
        figures["slow_handled"] = float(slow_done)
        figures["slow_pending_at_end"] = float(statistics.pending)
        figures["slow_coalesced"] = float(statistics.coalesced)
    figures["achieved_rate"] = (params["events"] - 1) / (time_last - first_at[0])
    return figures


async def latency_ours(url: str, params: dict[str, Any], *, cache: CacheMode) -> dict[str, float]:
    return await _ours_paced(url, params, slow=None, cache=cache)


async def latency_ours_gc_frozen(
    url: str, params: dict[str, Any], *, cache: CacheMode
) -> dict[str, float]:
    return await _ours_paced(url, params, slow=None, cache=cache, freeze_gc=True)


async def latency_ours_busy(
    url: str, params: dict[str, Any], *, cache: CacheMode
) -> dict[str, float]:
    return await _ours_paced(url, params, slow=None, cache=cache, busy=True)


async def slow_handler_ours(
    url: str, params: dict[str, Any], *, cache: CacheMode
) -> dict[str, float]:
    return await _ours_paced(url, params, slow="coalesce", cache=cache)


async def slow_handler_ours_unbounded(
    url: str, params: dict[str, Any], *, cache: CacheMode
) -> dict[str, float]:
    return await _ours_paced(url, params, slow="unbounded", cache=cache)


# --- decode ceiling and server placement ----------------------------------------------


_CHUNK_BYTES = 256 * 1024


def _watch_lines(params: dict[str, Any]) -> Iterator[bytes]:
    """The scenario's watch lines, exactly as the replay server sends them."""
    resource = params.get("resource", "pods")
    objects = params["objects"]
    templates = [WatchLineTemplate.for_object(resource, i) for i in range(objects)]
    for event in range(1, params["events"] + 1):
        yield templates[(event - 1) % objects].render(objects + event)


async def decode_loads(_url: str, params: dict[str, Any]) -> dict[str, float]:
    lines = list(_watch_lines(params))
    loads = orjson.loads
    started = time.perf_counter()
    for line in lines:
        loads(line)
    seconds = time.perf_counter() - started
    return {"events_per_s": len(lines) / seconds, "seconds": seconds}


async def decode_split_and_loads(_url: str, params: dict[str, Any]) -> dict[str, float]:
    # The stream cut into 256 KiB chunks at arbitrary offsets, as a socket delivers it;
    # the timed part frames lines across chunk borders the baseline's way, then decodes.
    buffer = b"".join(_watch_lines(params))
    chunks = [buffer[i : i + _CHUNK_BYTES] for i in range(0, len(buffer), _CHUNK_BYTES)]
    del buffer
    loads = orjson.loads
    decoded = 0
    started = time.perf_counter()
    pending = b""
    for chunk in chunks:
        lines = (pending + chunk).split(b"\n") if pending else chunk.split(b"\n")
        pending = lines.pop()
        for line in lines:
            loads(line)
        decoded += len(lines)
    seconds = time.perf_counter() - started
    return {"events_per_s": decoded / seconds, "seconds": seconds}


async def placement_separate(url: str, params: dict[str, Any]) -> dict[str, float]:
    return await watch_baseline(url, params)


async def placement_same_loop(_url: str, params: dict[str, Any]) -> dict[str, float]:
    config = ReplayConfig(
        objects=params["objects"],
        watch_events=params["events"],
        chunk_per_event=params.get("chunk_per_event", False),
    )
    data = ReplayData(config)
    gc.collect()
    async with start_replay_server(data) as url:
        return await watch_baseline(url, params)


_RAW_CASES: dict[tuple[str, str], Case] = {
    ("sync", "baseline"): sync_baseline,
    ("sync", "baseline-gc-paused"): sync_baseline_gc_paused,
    ("watch-list", "baseline"): sync_baseline,
    ("watch-list", "baseline-stream"): sync_baseline_stream,
    ("watch", "baseline"): watch_baseline,
    ("watch", "baseline-readline"): watch_baseline_readline,
    ("watch", "baseline-gc-frozen"): watch_baseline_gc_frozen,
    ("controller", "baseline"): watch_baseline,
    ("user-watch", "baseline"): user_watch_baseline,
    ("user-watch", "baseline-page-dropped"): functools.partial(
        user_watch_baseline, keep_last_page=False
    ),
    ("user-watch", "baseline-chunks"): functools.partial(
        user_watch_baseline, framing="chunks", keep_last_page=False
    ),
    ("latency", "baseline"): latency_baseline,
    ("latency", "baseline-busy-app"): latency_baseline_busy,
    ("slow-handler", "baseline"): slow_handler_baseline,
    ("lister", "baseline"): lister_baseline,
    ("service", "baseline"): service_baseline,
    ("audit", "baseline"): audit_baseline,
    ("audit", "baseline-gc-paused"): functools.partial(audit_baseline, pause_gc=True),
    ("decode", "orjson-loads"): decode_loads,
    ("decode", "split-and-loads"): decode_split_and_loads,
    ("placement", "server-separate"): placement_separate,
    ("placement", "server-same-loop"): placement_same_loop,
    ("stages", "baseline"): functools.partial(stages.stages_case, codec="naive"),
    **{
        ("fanout", variant): functools.partial(fanout.fanout_case, variant=variant)
        for variant in fanout.VARIANTS
    },
    **{
        ("sharding", variant): functools.partial(sharding.sharding_case, variant=variant)
        for variant in sharding.VARIANTS
    },
}
_OURS_CASES: dict[tuple[str, str], Callable[..., Awaitable[dict[str, float]]]] = {
    ("sync", "ours"): functools.partial(_sync_ours, variant="default"),
    ("sync", "ours-strip-managed-fields"): functools.partial(_sync_ours, variant="strip"),
    ("sync", "ours-model"): functools.partial(_sync_ours, variant="model"),
    ("sync", "ours-model-transform"): functools.partial(_sync_ours, variant="model-transform"),
    ("sync", "ours-1-handler"): functools.partial(_sync_ours, variant="handler"),
    ("watch-list", "ours-list"): functools.partial(_sync_ours, variant="default"),
    ("watch-list", "ours-stream"): functools.partial(
        _sync_ours, variant="default", use_watch_list=True
    ),
    ("watch", "ours"): watch_ours,
    ("watch", "ours-gc-frozen"): watch_ours_gc_frozen,
    ("watch", "ours-delete-observer"): functools.partial(watch_ours, delete_observer=True),
    ("controller", "ours"): controller_ours,
    ("user-watch", "ours"): user_watch_ours,
    ("latency", "ours"): latency_ours,
    ("latency", "ours-gc-frozen"): latency_ours_gc_frozen,
    ("latency", "ours-busy-app"): latency_ours_busy,
    ("slow-handler", "ours"): slow_handler_ours,
    ("slow-handler", "ours-unbounded"): slow_handler_ours_unbounded,
    ("lister", "ours"): lister_ours,
    ("service", "ours"): service_ours,
    ("audit", "ours"): audit_ours,
    ("audit", "ours-plain-source"): functools.partial(audit_ours, plain_source=True),
    ("stages", "ours"): stages.stages_ours,
}
"""The aioinformer cases, each taking ``cache=``: registered once per cache mode."""

CASES: dict[tuple[str, str], Case] = {
    **_RAW_CASES,
    **{
        (kind, variant + suffix): functools.partial(case, cache=mode)
        for (kind, variant), case in _OURS_CASES.items()
        for mode, suffix in harness.CACHE_MODES
    },
}
"""Every measurable case, by (kind, variant)."""


async def run_case(kind: str, variant: str, url: str, params: dict[str, Any]) -> dict[str, float]:
    """Run one case and return its figures (raises what the case raises)."""
    return await CASES[kind, variant](url, params)
