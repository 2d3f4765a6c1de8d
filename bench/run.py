"""``python -m bench``: run the scenarios, print a markdown table, write JSON results.

Role: the orchestrator. For each scenario it starts one replay server (in a child process,
see :mod:`bench.replay`) holding that scenario's bytes, then runs every variant of the
scenario — the raw baseline and aioinformer side by side — each in a fresh worker process
(:mod:`bench.worker`), ``warmup`` untimed rounds then ``repeats`` timed ones. Variants are
interleaved within a round (baseline, ours, baseline, ours, ...) so that drift in machine
load spreads over all of them. Each figure is reported as the median over repeats with its
spread (min-max), and each variant's median is divided by the baseline's median of the same
scenario, measured in the same run on the same bytes.

Output: a markdown table on stdout (progress goes to stderr) and a JSON document at
``--output`` (default ``bench/results/latest.json`` for a full run,
``bench/results/partial.json`` for a ``--quick`` or ``--only`` one) holding the run's
metadata, every sample, the medians, the ratios and the targets with whether each was
met; its metadata records the command's arguments (``argv``). A full run (every scenario,
not ``--quick``) then writes the documentation's benchmarks page from it
(:mod:`bench.page`, into ``--page-dir``, default ``docs/benchmarks``); ``--page`` writes it
from a part of a run, or alone from a results file written earlier without measuring anything.
``--update --only SCENARIO`` re-measures named scenarios into the published results, each
in place of its old entry, and writes the page, which names what was re-measured, when and
at which commit (:func:`merge_update`).

``--quick`` shrinks every scenario (same scenarios, fewer objects and events, one repeat,
no warm-up) so the whole run takes well under a minute; the test suite runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import inspect
import itertools
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import aiohttp
import msgspec
import orjson
import pydantic

from bench import fanout, sharding
from bench.harness import CACHE_MODES, COMPACT_SUFFIX, with_cache_modes
from bench.measure import summarize
from bench.replay import REPO_ROOT, ReplayConfig, ReplayServerProcess, child_env
from bench.worker import RESULT_PREFIX

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

__all__ = [
    "DEFAULT_OUTPUT",
    "PARTIAL_OUTPUT",
    "DEFAULT_PAGE_DIR",
    "medians",
    "OWN_TABLES",
    "SCENARIOS",
    "Metric",
    "Scenario",
    "Target",
    "default_cache_mode",
    "main",
    "reference_of",
    "render_fanout",
    "render_sharding",
    "render_stages",
    "render_summary",
    "render_table",
    "run",
]

DEFAULT_OUTPUT = REPO_ROOT / "bench" / "results" / "latest.json"
"""Where a full run's results go: the published ones, which the results page is made from."""
PARTIAL_OUTPUT = REPO_ROOT / "bench" / "results" / "partial.json"
"""Where a ``--quick`` or ``--only`` run's results go, so that it never replaces a full run's."""
DEFAULT_PAGE_DIR = REPO_ROOT / "docs" / "benchmarks"
"""Where the benchmarks page goes (see :mod:`bench.page`)."""


@dataclass(frozen=True, slots=True)
class Target:
    """A goal for one figure: ``relation`` ``value``, on the ratio to the baseline when
    ``ratio`` is true, else on the figure itself.

    With ``default_cache``, ``variant`` names an ``ours*`` variant without its cache-mode
    suffix, and the goal applies to its run in the library's default cache mode (read from
    ``SharedIndexInformer``'s signature when the run starts): the issue's goals for "the
    default configuration" follow the default wherever it is set.
    """

    variant: str
    metric: str
    relation: Literal["<=", ">="]
    value: float
    ratio: bool
    default_cache: bool = False

    def describe(self) -> str:
        return f"{self.relation} {self.value:g}{'x' if self.ratio else ''}"

    def met(self, measured: float) -> bool:
        return measured <= self.value if self.relation == "<=" else measured >= self.value

    def resolve(self, default_cache: str) -> str:
        """The variant this goal is judged on when the default cache mode is
        ``default_cache``."""
        if not self.default_cache:
            return self.variant
        suffix = next((suffix for mode, suffix in CACHE_MODES if mode == default_cache), "")
        return self.variant + suffix


@dataclass(frozen=True, slots=True)
class Metric:
    """One figure a scenario reports, and how to show it."""

    name: str
    label: str
    fmt: str = "{:,.2f}"
    summary: bool = True
    """Shown in the summary table, on stdout and on the results page (``False``: only in
    ``--detailed`` and the JSON)."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """A scenario: one replay server, several variants measured against the baseline."""

    name: str
    kind: str
    title: str
    params: dict[str, Any]
    quick_params: dict[str, Any]
    variants: tuple[str, ...]
    quick_variants: tuple[str, ...]
    metrics: tuple[Metric, ...]
    reference: str | None = "baseline"
    """The variant every other one is divided by (``None``: no ratios)."""
    server: bool = True
    """Whether the scenario needs a replay server."""
    targets: tuple[Target, ...] = field(default=())

    def replay_config(self, params: dict[str, Any]) -> ReplayConfig:
        return ReplayConfig(
            resource=params.get("resource", "pods"),
            objects=params["objects"],
            watch_events=params.get("events", 0),
            rate=params.get("rate", 0.0),
            hold=params.get("hold", False),
            initial_events=params.get("initial_events", False),
            chunk_per_event=params.get("chunk_per_event", False),
            namespaces=params.get("namespaces", 50),
            object_shape=params.get("object_shape", "bench"),
            order_seed=params.get("order_seed"),
        )


_SECONDS = Metric("seconds", "seconds to synced", "{:,.3f}")
_PEAK = Metric("peak_rss_mib", "peak RSS (MiB)", "{:,.1f}")
_PER_OBJECT = Metric("bytes_per_object", "RSS bytes per cached object", "{:,.0f}")
_EPS = Metric("events_per_s", "events/s", "{:,.0f}")
_LOOP = (
    Metric("loop_lag_max_ms", "max loop lag (ms)", "{:,.2f}"),
    Metric("loop_lag_p99_ms", "p99 loop lag (ms)", "{:,.2f}"),
    Metric("gc_longest_ms", "longest collection (ms)", "{:,.2f}"),
)
"""What the event loop went through while events flowed (see ``measure.observed``)."""
_SYNC_METRICS = (
    _SECONDS,
    _PEAK,
    _PER_OBJECT,
    Metric("object_bytes", "logical bytes per cached object", "{:,.0f}", summary=False),
    Metric(
        "seconds_all_delivered", "seconds until a handler got every add", "{:,.3f}", summary=False
    ),
    Metric("typed_list_seconds", "seconds to list the cache typed", "{:,.3f}", summary=False),
)
_SYNC_VARIANTS = with_cache_modes(
    "baseline",
    "ours",
    "ours-1-handler",
    "ours-strip-managed-fields",
    "ours-model",
    "ours-model-transform",
    "baseline-gc-paused",
)
_QUICK_SYNC_VARIANTS = (
    "baseline",
    "ours",
    "ours-compact",
    "ours-1-handler-compact",
    "ours-strip-managed-fields-compact",
    "ours-model-compact",
    "ours-model-transform-compact",
)
_BOTH = with_cache_modes("baseline", "ours")
_FLAT_RSS_MIB = 5.0
"""RSS growth over the second half of the slow-handler run that still counts as flat."""
_PACED = {"handlers": 10, "hold": True}
"""Paced streams start once the measured side is ready (every handler has the initial
list), so that a backlog left by the sync is not measured as steady-state latency."""
_WATCH_BASE = {"objects": 10_000, "events": 100_000, "chunk_per_event": True}
_WATCH_QUICK = {"objects": 1_000, "events": 5_000, "chunk_per_event": True}
"""Full-speed watch streams send one HTTP chunk per event, as kube-apiserver does."""
_HARNESS = {
    "objects": 10_000,
    "events": 50_000,
    "chunk_per_event": True,
    "namespaces": 1,
    "object_shape": "harness",
    "order_seed": 1,
}
_HARNESS_QUICK = {**_HARNESS, "objects": 1_000, "events": 5_000}
"""The independent harness's ``run_peers.py --objects 10000 --events 50000``: its Pods
(``objects.make_harness_pod``), all in one namespace, one HTTP chunk per event, each event
modifying an object drawn at random."""
_COLLECTOR = (
    Metric("gc_gen0", "gen0 collections", "{:,.0f}"),
    Metric("gc_gen1", "gen1 collections", "{:,.0f}"),
    Metric("gc_gen2", "gen2 collections", "{:,.0f}"),
    Metric("gc_ms", "ms in the collector", "{:,.1f}"),
)
"""The cyclic collector's work while events flowed (``measure.CollectorWatch``)."""
_USER_WATCH_METRICS = (
    _EPS,
    Metric("events_per_cpu_s", "events per CPU second", "{:,.0f}"),
    Metric("events_per_cpu_s_outside_gc", "events per CPU second outside the collector", "{:,.0f}"),
    *_COLLECTOR,
    Metric("cpu_s", "CPU s while events flowed", "{:,.2f}", summary=False),
    *_LOOP,
)
_CPU = Metric("cpu_cores", "CPU while events flowed (cores)", "{:,.2f}")
"""The measured process's CPU time over the stream's wall time (``measure.observed``)."""
_LATENCY_METRICS = (
    Metric("p50_ms", "p50 (ms)", "{:,.3f}"),
    Metric("p99_ms", "p99 (ms)", "{:,.3f}"),
    Metric("max_ms", "max (ms)", "{:,.3f}"),
    _CPU,
    *_LOOP,
    Metric("achieved_rate", "achieved events/s", "{:,.0f}", summary=False),
    Metric("initial_delivery_s", "seconds from start to initial list delivered", "{:,.2f}"),
    Metric("judged_events", "events judged (after the initial list)", "{:,.0f}", summary=False),
)
_FANOUT = {
    "objects": 100,
    "rates": {"1": 1_000.0, "100": 1_000.0, "1000": 100.0},
    "drain_timeout": 30.0,
}
"""Fan-out rates by N (events/s): the issue's 1,000/s for N = 1 and 100, 100/s for 1,000."""
_FANOUT_METRICS = (
    Metric("p50_ms", "p50 upstream→downstream (ms)", "{:,.2f}"),
    Metric("p99_ms", "p99 upstream→downstream (ms)", "{:,.2f}"),
    Metric("max_ms", "max upstream→downstream (ms)", "{:,.2f}"),
    Metric("first_p50_ms", "p50 upstream→first watcher (ms)", "{:,.2f}", summary=False),
    Metric("first_p99_ms", "p99 upstream→first watcher (ms)", "{:,.2f}", summary=False),
    Metric("spread_p50_ms", "p50 first→last watcher (ms)", "{:,.2f}", summary=False),
    Metric("spread_p99_ms", "p99 first→last watcher (ms)", "{:,.2f}", summary=False),
    Metric("events_per_chunk", "events per chunk received", "{:,.2f}", summary=False),
    Metric("proxy_cpu_us_per_event", "proxy CPU µs per delivered event", "{:,.2f}"),
    Metric("upstream_cpu_us_per_event", "upstream CPU µs per delivered event", "{:,.2f}"),
    Metric("upstream_watches", "upstream watch connections", "{:,.0f}"),
    Metric("proxy_rss_mib", "proxy RSS (MiB)", "{:,.1f}"),
    Metric("proxy_peak_rss_mib", "proxy peak RSS (MiB)", "{:,.1f}", summary=False),
    Metric("delivered_ratio", "delivered / expected events", "{:,.4f}"),
    Metric("watchers_complete", "watchers that got every event", "{:,.4f}", summary=False),
    Metric("slow_watchers_closed", "slow watchers closed", "{:,.0f}"),
    Metric("streams_ended", "watch streams ended by the server", "{:,.0f}", summary=False),
    Metric("client_cpu_percent", "busiest client process CPU (%)", "{:,.0f}"),
    Metric(
        "client_cpu_us_per_event", "client CPU µs per delivered event", "{:,.2f}", summary=False
    ),
    Metric("achieved_rate", "achieved events/s", "{:,.0f}", summary=False),
)
_SHARDING = {
    "lease_duration": 3.0,
    "startup_grace": 300,
    "history": 200_000,
    "failover_timeout": 300.0,
}
"""The ring's Lease duration (both modes, short so that a failover is quick to see), the
validity of the seeded Leases (longer than any start-up), the server's event history
(more than the churn and a failover write) and the longest a failover may take."""
_SHARDING_METRICS = (
    Metric("cpu_s", "CPU s, start → end of churn", "{:,.2f}"),
    Metric("startup_cpu_s", "of which start-up (interpreter, imports)", "{:,.2f}"),
    Metric("churn_cpu_s", "CPU s over the churn alone", "{:,.2f}"),
    Metric("peak_rss_mib", "peak RSS (MiB)", "{:,.1f}"),
    Metric("rss_mib", "RSS at the end (MiB)", "{:,.1f}", summary=False),
    Metric("cache_mib", "cache: RSS growth from start (MiB)", "{:,.1f}"),
    Metric("cached_objects", "objects cached", "{:,.0f}"),
    Metric("reconciles", "reconciles", "{:,.0f}", summary=False),
    Metric("lost_keys", "keys of the killed shard", "{:,.0f}"),
    Metric("lost_slots", "slots of the killed shard (range mode)", "{:,.0f}"),
    Metric("lease_duration_s", "lease duration (s)", "{:,.1f}"),
    Metric("failover_s", "s from SIGKILL until each carries a live shard's label", "{:,.2f}"),
    Metric(
        "failover_slots_s",
        "s from SIGKILL until the live shards' Leases list each of its slots",
        "{:,.2f}",
    ),
    Metric("failover_reconciled_s", "s from SIGKILL until each was reconciled there", "{:,.2f}"),
    Metric("churn_events", "updates written by the churn", "{:,.0f}", summary=False),
    Metric("churn_rate", "achieved churn (updates/s)", "{:,.0f}", summary=False),
)
"""Per replica process (the first eight; for a sharded variant the busiest shard's under
the plain name, each shard's as ``<identity>.<name>``), then the failover's (each variant
reports those of its mode), then the churn's (see :mod:`bench.sharding`)."""
_PER_EVENT_ADDED = "{:+,.2f}"
_STAGE_METRICS = (
    Metric("frame_us", "1. read and frame"),
    Metric("decode_us", "2. decode"),
    Metric("fifo_us", "3. FIFO: reflector hand-off and pop"),
    Metric("store_us", "4. store and indexes"),
    Metric("dispatch_us", "5. dispatch to one handler"),
    Metric("handler_us", "6. handler call"),
    Metric("stage_sum_us", "sum of the stages"),
    Metric("whole_us", "whole pipeline"),
    Metric("whole_collector_us", "of which the cyclic collector"),
    Metric("whole_events_per_s", "whole pipeline, events/s", "{:,.0f}"),
    Metric("own_index_us", "+ an index function of your own (node name)", _PER_EVENT_ADDED),
    Metric("reads_old_us", "+ a handler reading old too", _PER_EVENT_ADDED),
    Metric("model_us", "+ model=Pod, the handler reading the model", _PER_EVENT_ADDED),
    Metric("keys_only_us", "a keys_only handler instead", _PER_EVENT_ADDED),
)
"""The stage table's rows: CPU µs per event (see :mod:`bench.stages`), and what a user's
choices add to them."""
_COMPACT_MEMORY = Target("ours-compact", "bytes_per_object", "<=", 0.3, ratio=True)
_LOOP_LAG = Target("ours", "loop_lag_max_ms", "<=", 20.0, ratio=False, default_cache=True)

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="sync-pods-10k",
        kind="sync",
        title="initial sync, 10k Pods",
        params={"resource": "pods", "objects": 10_000, "page_size": 500},
        quick_params={"resource": "pods", "objects": 1_000, "page_size": 500},
        variants=_SYNC_VARIANTS,
        quick_variants=_QUICK_SYNC_VARIANTS,
        metrics=_SYNC_METRICS,
        targets=(_COMPACT_MEMORY,),
    ),
    Scenario(
        name="lister-pods-10k",
        kind="lister",
        title="lister reads on a synced 10k-Pod cache",
        params={"objects": 10_000, "page_size": 500, "list_rounds": 3},
        quick_params={"objects": 1_000, "page_size": 500, "list_rounds": 1},
        variants=_BOTH,
        quick_variants=_BOTH,
        metrics=(
            Metric("get_us", "µs per lister.get", "{:,.2f}"),
            Metric("list_us_per_object", "µs per object of lister.list()", "{:,.3f}"),
            _PER_OBJECT,
            _PEAK,
        ),
        targets=(Target("ours-compact", "get_us", "<=", 25.0, ratio=False),),
    ),
    Scenario(
        name="sync-pods-100k",
        kind="sync",
        title="initial sync, 100k Pods",
        params={"resource": "pods", "objects": 100_000, "page_size": 500},
        quick_params={"resource": "pods", "objects": 2_000, "page_size": 500},
        variants=_SYNC_VARIANTS,
        quick_variants=("baseline", "ours-compact"),
        metrics=_SYNC_METRICS,
        targets=(
            Target("ours", "seconds", "<=", 1.0, ratio=True),
            Target("ours", "peak_rss_mib", "<=", 1.1, ratio=True),
            Target("ours-compact", "seconds", "<=", 0.4, ratio=True),
            Target("ours-compact", "peak_rss_mib", "<=", 0.5, ratio=True),
            _COMPACT_MEMORY,
        ),
    ),
    Scenario(
        name="watch-list-pods-100k",
        kind="watch-list",
        title="initial sync, 100k Pods: streaming list vs paginated LIST",
        params={"resource": "pods", "objects": 100_000, "page_size": 500, "initial_events": True},
        quick_params={
            "resource": "pods",
            "objects": 2_000,
            "page_size": 500,
            "initial_events": True,
        },
        variants=(
            "baseline",
            "baseline-stream",
            "ours-list",
            "ours-list-compact",
            "ours-stream",
            "ours-stream-compact",
        ),
        quick_variants=("baseline", "baseline-stream", "ours-list-compact", "ours-stream-compact"),
        metrics=(_SECONDS, _PEAK, _PER_OBJECT),
    ),
    Scenario(
        name="sync-configmaps-10k",
        kind="sync",
        title="initial sync, 10k ConfigMaps",
        params={"resource": "configmaps", "objects": 10_000, "page_size": 500},
        quick_params={"resource": "configmaps", "objects": 1_000, "page_size": 500},
        variants=with_cache_modes("baseline", "ours", "ours-strip-managed-fields"),
        quick_variants=("baseline", "ours-compact"),
        metrics=_SYNC_METRICS,
    ),
    Scenario(
        name="watch-1-handler",
        kind="watch",
        title="watch throughput, 1 handler, 3 indexes",
        params={**_WATCH_BASE, "handlers": 1},
        quick_params={**_WATCH_QUICK, "handlers": 1},
        variants=with_cache_modes(
            "baseline",
            "ours",
            "baseline-readline",
            "baseline-gc-frozen",
            "ours-gc-frozen",
            "ours-delete-observer",
        ),
        quick_variants=_BOTH,
        metrics=(_EPS, *_LOOP),
        targets=(
            Target("ours", "events_per_s", ">=", 0.8, ratio=True),
            Target("ours", "events_per_s", ">=", 2.0, ratio=True, default_cache=True),
        ),
    ),
    Scenario(
        name="watch-10-handlers",
        kind="watch",
        title="watch throughput, 10 handlers, 3 indexes",
        params={**_WATCH_BASE, "handlers": 10},
        quick_params={**_WATCH_QUICK, "handlers": 10},
        variants=_BOTH,
        quick_variants=("baseline", "ours-compact"),
        metrics=(_EPS, *_LOOP),
    ),
    Scenario(
        name="controller-key-only",
        kind="controller",
        title="watch → Controller work queue by key, no index, reconcile does nothing",
        params=dict(_WATCH_BASE),
        quick_params=dict(_WATCH_QUICK),
        variants=_BOTH,
        quick_variants=_BOTH,
        metrics=(_EPS, *_LOOP),
        targets=(
            Target("ours", "events_per_s", ">=", 6.0, ratio=True, default_cache=True),
            Target("ours", "events_per_s", ">=", 100_000.0, ratio=False, default_cache=True),
        ),
    ),
    Scenario(
        name="watch-user-code",
        kind="user-watch",
        title="watch throughput as the independent harness's aioinformer client: your own"
        " index functions, a handler reading each object",
        params={**_HARNESS, "shape": "user"},
        quick_params={**_HARNESS_QUICK, "shape": "user"},
        variants=with_cache_modes("baseline", "ours", "baseline-page-dropped", "baseline-chunks"),
        quick_variants=_BOTH,
        metrics=_USER_WATCH_METRICS,
    ),
    Scenario(
        name="watch-controller-shape",
        kind="user-watch",
        title="watch throughput as the harness's aioinformer-keys client: built-in label"
        " indexes, a keys_only handler",
        params={**_HARNESS, "shape": "controller"},
        quick_params={**_HARNESS_QUICK, "shape": "controller"},
        variants=_BOTH,
        quick_variants=_BOTH,
        metrics=_USER_WATCH_METRICS,
    ),
    Scenario(
        name="stages",
        kind="stages",
        title="CPU µs per event of each stage alone, their sum and the whole, 10k Pods",
        params={"objects": 10_000, "events": 50_000},
        quick_params={"objects": 1_000, "events": 2_000},
        variants=_BOTH,
        quick_variants=_BOTH,
        metrics=_STAGE_METRICS,
    ),
    Scenario(
        name="server-placement",
        kind="placement",
        title="raw watch baseline: replay server in a child process vs on the same loop",
        params=dict(_WATCH_BASE),
        quick_params=dict(_WATCH_QUICK),
        variants=("server-separate", "server-same-loop"),
        quick_variants=("server-separate", "server-same-loop"),
        metrics=(_EPS,),
        reference="server-separate",
    ),
    Scenario(
        name="decode-ceiling",
        kind="decode",
        title="orjson.loads over the watch lines, no I/O",
        params=dict(_WATCH_BASE),
        quick_params=dict(_WATCH_QUICK),
        variants=("orjson-loads", "split-and-loads"),
        quick_variants=("orjson-loads", "split-and-loads"),
        metrics=(_EPS,),
        reference="orjson-loads",
        server=False,
    ),
    Scenario(
        name="latency-5k-per-s-10-handlers",
        kind="latency",
        title="emit → handler latency at 5k events/s, 10 handlers, 10k cache",
        params={**_PACED, "objects": 10_000, "events": 50_000, "rate": 5_000.0},
        quick_params={**_PACED, "objects": 1_000, "events": 5_000, "rate": 5_000.0},
        variants=with_cache_modes(
            "baseline", "ours", "ours-gc-frozen", "baseline-busy-app", "ours-busy-app"
        ),
        quick_variants=_BOTH,
        metrics=_LATENCY_METRICS,
        targets=(
            Target("ours", "p99_ms", "<=", 10.0, ratio=False),
            Target("ours", "p99_ms", "<=", 5.0, ratio=False, default_cache=True),
            Target("ours", "cpu_cores", "<=", 0.5, ratio=False, default_cache=True),
            _LOOP_LAG,
            Target("ours-busy-app", "p99_ms", "<=", 5.0, ratio=False, default_cache=True),
            Target("ours-busy-app", "cpu_cores", "<=", 0.5, ratio=False, default_cache=True),
            Target("ours-busy-app", "loop_lag_max_ms", "<=", 20.0, ratio=False, default_cache=True),
        ),
    ),
    Scenario(
        name="fastapi-under-churn",
        kind="service",
        title="FastAPI reads the lister on the loop of an informer taking 5k events/s",
        params={
            "objects": 10_000,
            "events": 50_000,
            "rate": 5_000.0,
            "handlers": 10,
            "request_interval": 0.005,
            "hold": True,
        },
        quick_params={
            "objects": 1_000,
            "events": 5_000,
            "rate": 5_000.0,
            "handlers": 10,
            "request_interval": 0.005,
            "hold": True,
        },
        variants=_BOTH,
        quick_variants=_BOTH,
        metrics=(
            Metric("request_p50_ms", "request p50 (ms)", "{:,.3f}"),
            Metric("request_p99_ms", "request p99 (ms)", "{:,.3f}"),
            Metric("request_max_ms", "request max (ms)", "{:,.3f}"),
            *_LOOP,
            Metric("requests", "requests", "{:,.0f}", summary=False),
        ),
        targets=(
            Target("ours", "request_p99_ms", "<=", 10.0, ratio=False, default_cache=True),
            _LOOP_LAG,
        ),
    ),
    Scenario(
        name="latency-5k-per-s-100k-cache",
        kind="latency",
        title="emit → handler latency at 5k events/s, 10 handlers, 100k cache",
        params={**_PACED, "objects": 100_000, "events": 50_000, "rate": 5_000.0},
        quick_params={**_PACED, "objects": 2_000, "events": 5_000, "rate": 5_000.0},
        variants=_BOTH,
        quick_variants=("baseline", "ours-compact"),
        metrics=_LATENCY_METRICS,
        targets=(
            Target("ours", "p99_ms", "<=", 10.0, ratio=False, default_cache=True),
            _LOOP_LAG,
        ),
    ),
    Scenario(
        name="slow-handler",
        kind="slow-handler",
        title="one 10 ms handler (coalescing, max_pending=1000) beside 9 fast ones, 1k events/s",
        params={**_PACED, "objects": 10_000, "events": 20_000, "rate": 1_000.0, "handlers": 9},
        quick_params={**_PACED, "objects": 1_000, "events": 2_000, "rate": 2_000.0, "handlers": 9},
        variants=with_cache_modes("baseline", "ours", "ours-unbounded"),
        quick_variants=_BOTH,
        metrics=(
            Metric("fast_p50_ms", "fast p50 (ms)", "{:,.3f}", summary=False),
            Metric("fast_p99_ms", "fast p99 (ms)", "{:,.3f}"),
            Metric("fast_p99_first_half_ms", "fast p99, 1st half (ms)", "{:,.3f}", summary=False),
            Metric("fast_p99_second_half_ms", "fast p99, 2nd half (ms)", "{:,.3f}"),
            *_LOOP,
            Metric("rss_max_mib", "max RSS (MiB)", "{:,.1f}", summary=False),
            Metric(
                "rss_growth_first_half_mib", "RSS growth, 1st half (MiB)", "{:,.1f}", summary=False
            ),
            Metric("rss_growth_second_half_mib", "RSS growth, 2nd half (MiB)", "{:,.1f}"),
            Metric("slow_handled", "events the slow handler finished", "{:,.0f}", summary=False),
            Metric(
                "slow_pending_at_end",
                "queued for the slow handler at the end",
                "{:,.0f}",
                summary=False,
            ),
            Metric(
                "slow_coalesced",
                "notifications coalesced for the slow handler",
                "{:,.0f}",
                summary=False,
            ),
        ),
        targets=(
            # "Flat": the fast handlers keep the latency target in the second half, and the
            # process does not grow by more than a few MiB once every key has been seen.
            Target("ours", "fast_p99_second_half_ms", "<=", 10.0, ratio=False),
            Target("ours", "rss_growth_second_half_mib", "<=", _FLAT_RSS_MIB, ratio=False),
            Target("ours", "fast_p99_ms", "<=", 5.0, ratio=False, default_cache=True),
        ),
    ),
    Scenario(
        name="cache-audit-10k",
        kind="audit",
        title="one cache audit of a synced 10k-Pod cache vs the metadata LIST alone",
        params={"objects": 10_000, "page_size": 500, "audits": 5},
        quick_params={"objects": 1_000, "page_size": 500, "audits": 2},
        variants=with_cache_modes("baseline", "baseline-gc-paused", "ours", "ours-plain-source"),
        quick_variants=_BOTH,
        metrics=(
            Metric("cpu_ms_per_audit", "CPU ms per audit", "{:,.1f}"),
            Metric("ms_per_audit", "ms per audit", "{:,.1f}"),
            Metric("requests_per_audit", "LIST requests per audit", "{:,.0f}"),
        ),
    ),
    Scenario(
        name="sharding-configmaps-30k",
        kind="sharding",
        title="one replica vs three shards, 30k ConfigMaps under churn; then a shard killed",
        params={**_SHARDING, "objects": 30_000, "rate": 500.0, "seconds": 20.0},
        quick_params={**_SHARDING, "objects": 1_500, "rate": 200.0, "seconds": 2.0},
        variants=sharding.VARIANTS,
        quick_variants=sharding.VARIANTS,
        metrics=_SHARDING_METRICS,
        reference="singleton",
        server=False,
        targets=(
            # "Each shard <= 0.4x the singleton": judged on the busiest shard, in each mode.
            Target("sharded-3", "cpu_s", "<=", 0.4, ratio=True),
            Target("sharded-3", "cache_mib", "<=", 0.4, ratio=True),
            Target("sharded-3-ranges", "cpu_s", "<=", 0.4, ratio=True),
            Target("sharded-3-ranges", "cache_mib", "<=", 0.4, ratio=True),
        ),
    ),
    Scenario(
        name="proxy-fanout",
        kind="fanout",
        title="N raw watchers through one CachingProxy vs watching the upstream directly",
        params={**_FANOUT, "warmup": 2.0, "seconds": 10.0, "watchers_per_process": 500},
        quick_params={
            **_FANOUT,
            "rates": {"1": 1_000.0, "100": 500.0, "1000": 100.0},
            "warmup": 0.3,
            "seconds": 1.0,
            # Two client processes even in the quick run, so that path is exercised.
            "watchers_per_process": 50,
        },
        variants=fanout.VARIANTS,
        quick_variants=("direct-n100", "proxy-n100"),
        metrics=_FANOUT_METRICS,
        reference=None,
        server=False,
        targets=(
            Target("proxy-n100", "p99_ms", "<=", 50.0, ratio=False),
            Target("proxy-n1000", "p99_ms", "<=", 100.0, ratio=False),
            *(
                Target(f"proxy-n{n}", "proxy_cpu_us_per_event", "<=", 10.0, ratio=False)
                for n in (1, 100, 1000)
            ),
            *(
                Target(f"proxy-n{n}", "upstream_watches", "<=", 1.0, ratio=False)
                for n in (1, 100, 1000)
            ),
        ),
    ),
)


def _log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _run_worker(
    kind: str,
    variants: Sequence[str],
    url: str,
    params: dict[str, Any],
    *,
    loop: str,
    timeout: float,
) -> list[dict[str, Any]]:
    """Run ``variants`` one after the other in one fresh worker process; one outcome each."""
    specs = [
        {"kind": kind, "variant": variant, "url": url, "params": params, "loop": loop}
        for variant in variants
    ]
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "bench.worker", orjson.dumps(specs).decode()],
            cwd=REPO_ROOT,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=timeout * len(specs),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return [{"error": f"timed out after {timeout * len(specs):g} s"}] * len(specs)
    outcomes: list[dict[str, Any]] = [
        orjson.loads(line[len(RESULT_PREFIX) :])
        for line in completed.stdout.splitlines()
        if line.startswith(RESULT_PREFIX)
    ]
    if any("error" in outcome for outcome in outcomes):
        _log(completed.stderr.rstrip())
    if len(outcomes) < len(specs):
        tail = completed.stderr.strip().splitlines()[-1:] or ["no output"]
        missing = {"error": f"worker exited with {completed.returncode}: {tail[0]}"}
        outcomes.extend([missing] * (len(specs) - len(outcomes)))
    return outcomes


_TWINS: Final = (("ours-", "baseline-"), ("proxy-", "direct-"))
"""A measured variant's prefix and the prefix of its reference under the same condition."""


def reference_of(variant: str, reference: str | None, variants: Sequence[str]) -> str | None:
    """What ``variant`` is divided by: for ``ours-X`` (either cache mode) the scenario's
    ``baseline-X`` when it has one (the same condition on the raw side), for ``proxy-X``
    the scenario's ``direct-X`` (the same watchers without the proxy), else the
    scenario's ``reference``."""
    family = variant.removesuffix(COMPACT_SUFFIX)
    for measured, raw in _TWINS:
        if family.startswith(measured):
            twin = raw + family.removeprefix(measured)
            if twin in variants:
                return twin
    return reference


def _measure_scenario(
    scenario: Scenario,
    url: str,
    *,
    quick: bool,
    repeats: int,
    warmup: int,
    loop: str,
    timeout: float,
    default_cache: str,
) -> dict[str, Any]:
    params = scenario.quick_params if quick else scenario.params
    variants = scenario.quick_variants if quick else scenario.variants
    samples: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    errors: dict[str, list[str]] = {v: [] for v in variants}
    started = time.monotonic()
    # A quick run shares one worker per round between the variants: its figures are not
    # judged, and a process start costs about a second, most of a quick case.
    batches = [list(variants)] if quick else [[variant] for variant in variants]
    for round_, batch in itertools.product(range(warmup + repeats), batches):
        outcomes = _run_worker(scenario.kind, batch, url, params, loop=loop, timeout=timeout)
        for variant, outcome in zip(batch, outcomes, strict=True):
            label = "warm-up" if round_ < warmup else f"repeat {round_ - warmup + 1}"
            if "error" in outcome:
                _log(f"  {scenario.name} / {variant} ({label}): {outcome['error']}")
            else:
                _log(f"  {scenario.name} / {variant} ({label}): done")
            if round_ < warmup:
                continue
            if "error" in outcome:
                errors[variant].append(outcome["error"])
            else:
                samples[variant].append(outcome["metrics"])
    return _summarize_scenario(
        scenario,
        params,
        variants,
        samples,
        errors,
        time.monotonic() - started,
        default_cache=default_cache,
    )


def _summarize_scenario(
    scenario: Scenario,
    params: dict[str, Any],
    variants: Sequence[str],
    samples: dict[str, list[dict[str, float]]],
    errors: dict[str, list[str]],
    seconds: float,
    *,
    default_cache: str,
) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for variant in variants:
        names = sorted({name for sample in samples[variant] for name in sample})
        summary[variant] = {
            "metrics": {
                name: summarize([s.get(name, float("nan")) for s in samples[variant]])
                for name in names
            },
            "errors": errors[variant],
        }
    ratios: dict[str, dict[str, float]] = {}
    for variant in variants:
        reference = reference_of(variant, scenario.reference, variants)
        if reference is None or reference == variant or reference not in summary:
            continue
        base = summary[reference]["metrics"]
        ratios[variant] = {
            name: stats["median"] / base[name]["median"]
            for name, stats in summary[variant]["metrics"].items()
            if name in base and stats["median"] is not None and base[name]["median"]
        }
    targets = []
    for target in scenario.targets:
        variant = target.resolve(default_cache)
        if target.ratio:
            measured = ratios.get(variant, {}).get(target.metric)
        else:
            stats = summary.get(variant, {}).get("metrics", {}).get(target.metric)
            measured = None if stats is None else stats["median"]
        targets.append(
            {
                "variant": variant,
                "metric": target.metric,
                "goal": target.describe(),
                "default_cache": target.default_cache,
                "measured": measured,
                "met": None if measured is None else target.met(measured),
            }
        )
    return {
        "name": scenario.name,
        "kind": scenario.kind,
        "title": scenario.title,
        "params": params,
        "reference": scenario.reference,
        "variants": summary,
        "ratios": ratios,
        "targets": targets,
        "wall_seconds": seconds,
    }


def _git_commit() -> str | None:
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except OSError:
        return None
    return completed.stdout.strip() or None


def _metadata(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "repeats": args.repeats,
        "warmup": args.warmup,
        "loop": "uvloop" if args.uvloop else "asyncio",
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "aiohttp": aiohttp.__version__,
        "orjson": orjson.__version__,
        "msgspec": msgspec.__version__,
        "pydantic": pydantic.VERSION,
        "git_commit": _git_commit(),
        "argv": list(args.argv),
    }


def render_table(results: dict[str, Any]) -> str:
    """The results as one markdown table (medians, spread, ratio to baseline, target)."""
    scenarios_by_name = {s.name: s for s in SCENARIOS}
    lines = [
        "| scenario | variant | figure | median | spread (min-max) | vs reference | target |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for entry in results["scenarios"]:
        scenario = scenarios_by_name[entry["name"]]
        goals = {(t["variant"], t["metric"]): t for t in entry["targets"]}
        for variant, data in entry["variants"].items():
            if data["errors"] and not data["metrics"]:
                error = data["errors"][0].replace("|", "\\|")
                lines.append(f"| {entry['name']} | {variant} | — | error: {error} | | | |")
                continue
            for metric in scenario.metrics:
                stats = data["metrics"].get(metric.name)
                if stats is None or stats["median"] is None:
                    continue
                spread = (
                    f"{metric.fmt.format(stats['min'])}-{metric.fmt.format(stats['max'])}"
                    if len(stats["samples"]) > 1
                    else ""
                )
                ratio = entry["ratios"].get(variant, {}).get(metric.name)
                ratio_text = f"{ratio:.2f}x" if ratio is not None else ""
                goal = goals.get((variant, metric.name))
                goal_text = ""
                if goal is not None:
                    verdict = {True: "met", False: "missed", None: "n/a"}[goal["met"]]
                    goal_text = f"{goal['goal']}: {verdict}"
                lines.append(
                    f"| {entry['name']} | {variant} | {metric.label} | "
                    f"{metric.fmt.format(stats['median'])} | {spread} | {ratio_text} | "
                    f"{goal_text} |"
                )
    return "\n".join(lines)


def _families(variants: Iterable[str]) -> list[str]:
    """The variant names with the compact suffix dropped, in order of first appearance."""
    families: list[str] = []
    for variant in variants:
        family = variant.removesuffix(COMPACT_SUFFIX) if variant.startswith("ours") else variant
        if family not in families:
            families.append(family)
    return families


def _cell(entry: dict[str, Any], variant: str, metric: Metric, *, ratio: bool = True) -> str:
    data = entry["variants"].get(variant)
    if data is None:
        return ""
    stats = data["metrics"].get(metric.name)
    if stats is None or stats["median"] is None:
        return "error" if data["errors"] else ""
    text = metric.fmt.format(stats["median"])
    divided = entry["ratios"].get(variant, {}).get(metric.name) if ratio else None
    return f"{text} ({divided:.2f}x)" if divided is not None else text


def _goal_cell(entry: dict[str, Any], variants: Sequence[str], metric: str) -> str:
    parts = []
    for goal in entry["targets"]:
        if goal["variant"] in variants and goal["metric"] == metric:
            verdict = {True: "met", False: "missed", None: "n/a"}[goal["met"]]
            mode = "compact" if goal["variant"].endswith(COMPACT_SUFFIX) else "objects"
            default = ", default" if goal.get("default_cache") else ""
            parts.append(f"{mode}{default} {goal['goal']}: {verdict}")
    return "; ".join(parts)


def render_summary(results: dict[str, Any]) -> str:
    """The results as the summary table: one row per figure and variant family, the
    reference's median beside the ``cache="objects"`` and ``cache="compact"`` runs (ratio
    to the reference in brackets), and the targets with met or missed."""
    scenarios_by_name = {s.name: s for s in SCENARIOS}
    lines = [
        '| scenario | variant | figure | baseline | cache="objects" | cache="compact" | target |',
        "|---|---|---|---:|---:|---:|---|",
    ]
    own_tables = []
    for entry in results["scenarios"]:
        scenario = scenarios_by_name[entry["name"]]
        if scenario.kind in OWN_TABLES:
            own_tables.append(OWN_TABLES[scenario.kind](entry, scenario))
            continue
        reference = entry["reference"]
        families = _families(entry["variants"])
        has_ours = any(family.startswith("ours") for family in families)
        for family in families:
            if family == reference and has_ours:
                continue
            failed_shown = False
            for metric in (m for m in scenario.metrics if m.summary):
                if family.startswith("ours"):
                    compact = family + COMPACT_SUFFIX
                    base = reference_of(family, reference, list(entry["variants"]))
                    cells = [
                        _cell(entry, base, metric, ratio=False) if base else "",
                        _cell(entry, family, metric),
                        _cell(entry, compact, metric),
                    ]
                    goal = _goal_cell(entry, (family, compact), metric.name)
                else:
                    cells = [_cell(entry, family, metric), "", ""]
                    goal = _goal_cell(entry, (family,), metric.name)
                measured = cells[1:] if family.startswith("ours") else cells
                label = metric.label
                if not any(cell not in ("", "error") for cell in measured):
                    # Nothing measured in this row: a family that failed is shown once.
                    if failed_shown or "error" not in measured:
                        continue
                    failed_shown, label = True, "—"
                    cells = ["", *cells[1:]] if family.startswith("ours") else cells
                lines.append(
                    f"| {entry['name']} | {family} | {label} | {' | '.join(cells)} | {goal} |"
                )
    # A run of scenarios with tables of their own has no row for the cache-mode table.
    tables = ["\n".join(lines)] if len(lines) > 2 or not own_tables else []
    return "\n\n".join([*tables, *own_tables])


def render_fanout(entry: dict[str, Any], scenario: Scenario) -> str:
    """A fan-out scenario's table: per N and figure, the direct run beside the proxied one
    (ratio to the direct run in brackets), and the targets with met or missed."""
    lines = [
        "| scenario | watchers @ events/s | figure | direct | through the proxy | target |",
        "|---|---|---|---:|---:|---|",
    ]
    rates = entry["params"]["rates"]
    for variant in entry["variants"]:
        via, count = fanout.watchers_of(variant)
        if via != "proxy":
            continue
        direct = f"direct-n{count}"
        for metric in (m for m in scenario.metrics if m.summary):
            cells = [_cell(entry, direct, metric, ratio=False), _cell(entry, variant, metric)]
            if not any(cell not in ("", "error") for cell in cells):
                continue
            goals = "; ".join(
                f"{goal['goal']}: {({True: 'met', False: 'missed', None: 'n/a'})[goal['met']]}"
                for goal in entry["targets"]
                if goal["variant"] == variant and goal["metric"] == metric.name
            )
            lines.append(
                f"| {entry['name']} | {count:,} @ {float(rates[str(count)]):,.0f} | "
                f"{metric.label} | {' | '.join(cells)} | {goals} |"
            )
    return "\n".join(lines)


def render_stages(entry: dict[str, Any], scenario: Scenario) -> str:
    """The stage scenario's table: one row per stage and figure, the naive loop beside the
    library's two codecs (ratio to the naive loop in brackets where it has the figure);
    "—" where a side has no such stage."""
    columns = (scenario.reference or "baseline", "ours", "ours" + COMPACT_SUFFIX)
    lines = [
        '| scenario | stage (CPU µs per event) | naive loop | cache="objects" | cache="compact" |',
        "|---|---|---:|---:|---:|",
    ]
    ran = entry["variants"]
    for metric in (m for m in scenario.metrics if m.summary):
        cells = [_cell(entry, variant, metric) for variant in columns]
        if not any(cell not in ("", "error") for cell in cells):
            continue
        shown = [
            cell or ("—" if variant in ran else "")
            for variant, cell in zip(columns, cells, strict=True)
        ]
        lines.append(f"| {entry['name']} | {metric.label} | {' | '.join(shown)} |")
    if len(lines) == 2 and any(data["errors"] for data in ran.values()):
        failed = ["error" if ran.get(variant, {}).get("errors") else "" for variant in columns]
        lines.append(f"| {entry['name']} | — | {' | '.join(failed)} |")
    return "\n".join(lines)


def medians(entry: dict[str, Any], variant: str) -> dict[str, float]:
    """``variant``'s median of every figure it measured (none for a variant not run)."""
    data = entry["variants"].get(variant, {"metrics": {}})
    return {
        name: stats["median"]
        for name, stats in data["metrics"].items()
        if stats["median"] is not None
    }


def render_sharding(entry: dict[str, Any], scenario: Scenario) -> str:
    """The sharding scenario's tables: one row per replica process (the singleton, then
    each shard of each sharded variant, its mode beside its name when that is range mode,
    with its ratio to the singleton in brackets), then, one column per sharded variant,
    the targets with met or missed and what the killed shard's keys went through."""
    columns = [m for m in scenario.metrics if m.summary and m.name in sharding.PROCESS_FIGURES]
    lines = [
        f"| scenario | process | {' | '.join(m.label for m in columns)} |",
        f"|---|---|{'---:|' * len(columns)}",
    ]
    reference = medians(entry, scenario.reference or "singleton")
    for variant, data in entry["variants"].items():
        figures = medians(entry, variant)
        ranges = sharding.mode_of(variant) == "ranges"
        for process in sharding.processes_of(variant):
            prefix = "" if process == "singleton" else f"{process}."
            cells = []
            for metric in columns:
                value = figures.get(prefix + metric.name)
                if value is None:
                    cells.append("error" if data["errors"] else "")
                    continue
                text = metric.fmt.format(value)
                base = reference.get(metric.name) if prefix else None
                cells.append(f"{text} ({value / base:.2f}x)" if base else text)
            roles = [*(["ranges"] if ranges else [])]
            if figures.get(f"{prefix}sharder"):
                roles.append("sharder")
            role = f" ({', '.join(roles)})" if roles else ""
            lines.append(f"| {entry['name']} | {process}{role} | {' | '.join(cells)} |")
    sharded = [variant for variant in entry["variants"] if sharding.mode_of(variant) is not None]
    if not sharded:
        return "\n".join(lines)
    labels = {metric.name: metric.label for metric in scenario.metrics}
    modes = {"labels": "label mode", "ranges": "range mode"}
    facts = [
        "| scenario | figure | "
        + " | ".join(f"{modes[str(sharding.mode_of(v))]} (`{v}`)" for v in sharded)
        + " |",
        f"|---|---|{'---:|' * len(sharded)}",
    ]
    goals: dict[tuple[str, str], dict[str, str]] = {}
    for goal in entry["targets"]:
        verdict = {True: "met", False: "missed", None: "n/a"}[goal["met"]]
        measured = "—" if goal["measured"] is None else f"{goal['measured']:.2f}x"
        goals.setdefault((goal["metric"], goal["goal"]), {})[goal["variant"]] = (
            f"{measured}: {verdict}"
        )
    for (metric_name, goal_text), verdicts in goals.items():
        facts.append(
            f"| {entry['name']} | busiest shard's {labels[metric_name]}, vs the singleton's"
            f" (target {goal_text}) | {' | '.join(verdicts.get(v, '') for v in sharded)} |"
        )
    killed = {variant: medians(entry, variant) for variant in sharded}
    for metric in scenario.metrics:
        if not metric.summary or metric.name not in sharding.FAILOVER_FIGURES:
            continue
        cells = [
            metric.fmt.format(killed[v][metric.name])
            if metric.name in killed[v]
            else ("—" if metric.name not in sharding.failover_figures_of(v) else "")
            for v in sharded
        ]
        if all(cell in ("", "—") for cell in cells):
            continue
        facts.append(f"| {entry['name']} | shard killed: {metric.label} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n\n" + "\n".join(facts)


OWN_TABLES: Final = {
    "fanout": render_fanout,
    "stages": render_stages,
    "sharding": render_sharding,
}
"""The scenario kinds that print a table of their own instead of rows of the summary."""


def _selected(names: Sequence[str] | None) -> Iterator[Scenario]:
    known = {s.name for s in SCENARIOS}
    unknown = set(names or ()) - known
    if unknown:
        raise SystemExit(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    for scenario in SCENARIOS:
        if not names or scenario.name in names:
            yield scenario


def default_cache_mode() -> str:
    """The cache mode a ``SharedIndexInformer`` built without ``cache=`` uses."""
    from aioinformer.informer import SharedIndexInformer

    parameter = inspect.signature(SharedIndexInformer).parameters.get("cache")
    if parameter is None or not isinstance(parameter.default, str):
        return "objects"
    return parameter.default


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure the selected scenarios and return the JSON document."""
    default_cache = default_cache_mode()
    results: dict[str, Any] = {
        "meta": {**_metadata(args), "default_cache": default_cache},
        "scenarios": [],
    }
    # Consecutive scenarios that replay the same bytes share one server.
    with contextlib.ExitStack() as servers:
        serving: tuple[ReplayConfig, str] | None = None
        for scenario in _selected(args.only):
            _log(f"{scenario.name}: {scenario.title}")
            params = scenario.quick_params if args.quick else scenario.params
            url = ""
            if scenario.server:
                config = scenario.replay_config(params)
                if serving is None or serving[0] != config:
                    servers.close()
                    serving = (config, servers.enter_context(ReplayServerProcess(config)))
                url = serving[1]
            results["scenarios"].append(
                _measure_scenario(
                    scenario,
                    url,
                    quick=args.quick,
                    repeats=args.repeats,
                    warmup=args.warmup,
                    loop="uvloop" if args.uvloop else "asyncio",
                    timeout=args.timeout,
                    default_cache=default_cache,
                )
            )
    return results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="aioinformer benchmarks against the raw aiohttp+orjson baseline.",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--repeats", type=int, help="timed rounds (default 3, quick 1)")
    parser.add_argument("--warmup", type=int, help="untimed rounds first (default 1, quick 0)")
    parser.add_argument(
        "--only", action="append", metavar="SCENARIO", help="run only this scenario (repeatable)"
    )
    parser.add_argument("--uvloop", action="store_true", help="run the workers on uvloop")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds allowed per worker process"
    )
    parser.add_argument(
        "--output",
        type=Path,
        help="where to write the JSON results (default bench/results/latest.json for a full"
        " run, bench/results/partial.json for a --quick or --only one)",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument(
        "--detailed",
        action="store_true",
        help="print every variant's figures with their spread instead of the summary table",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        metavar="RESULTS",
        help="measure nothing: print the table (or with --page, write the page) of a results"
        " file written earlier",
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help="re-measure the --only scenarios into the published results"
        " (bench/results/latest.json), each in place of its old figures, and write the page;"
        " the page names what was re-measured, when and at which commit",
    )
    page = parser.add_mutually_exclusive_group()
    page.add_argument(
        "--page",
        action="store_true",
        help="write the benchmarks page: alone or with --from-json from a results file"
        " (default bench/results/latest.json) without measuring anything, with --quick or"
        " --only from this run's results (a full run always writes it)",
    )
    page.add_argument(
        "--no-page", action="store_true", help="a full run that does not write the page"
    )
    parser.add_argument(
        "--page-dir",
        type=Path,
        default=DEFAULT_PAGE_DIR,
        help="where the page and its plots go (default docs/benchmarks)",
    )
    parser.set_defaults(argv=())
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    # Recorded in the results, so that the page can say how they were measured.
    args.argv = argv
    if args.list:
        for scenario in SCENARIOS:
            print(f"{scenario.name:32} {scenario.title}")
        return 0
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    if args.warmup is None:
        args.warmup = 0 if args.quick else 1
    if args.repeats < 1 or args.warmup < 0:
        raise SystemExit("--repeats must be at least 1 and --warmup at least 0")
    if args.uvloop and importlib.util.find_spec("uvloop") is None:
        raise SystemExit("--uvloop needs the uvloop package installed")
    render = render_table if args.detailed else render_summary
    # Only a full run speaks for the library: a part of one writes the page when asked.
    partial = args.quick or bool(args.only)
    if args.page and not partial and args.from_json is None:
        args.from_json = DEFAULT_OUTPUT
    if args.from_json is not None:
        try:
            results = orjson.loads(args.from_json.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise SystemExit(f"cannot read the results file {args.from_json}: {exc}") from exc
        if args.page:
            _write_page(results, args.page_dir)
        else:
            print(render(results))
        return 0
    writes_page = args.page or not (partial or args.no_page)
    if writes_page and importlib.util.find_spec("matplotlib") is None:
        # Said before the run, not after it: a full run takes the better part of an hour.
        raise SystemExit(
            "writing the benchmarks page needs matplotlib: pip install 'aioinformer[bench]'"
            " (or run with --no-page)"
        )
    if args.update:
        return _update(args, render)
    if args.output is None:
        args.output = PARTIAL_OUTPUT if partial else DEFAULT_OUTPUT
    results = run(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2) + b"\n")
    print(render(results))
    _log(f"results written to {args.output}")
    if writes_page:
        _write_page(results, args.page_dir)
    return 0


def _update(args: argparse.Namespace, render: Callable[[dict[str, Any]], str]) -> int:
    """``--update``: measure the ``--only`` scenarios as the published run was measured
    and put them into its results in place of their old entries (see :func:`merge_update`)."""
    if not args.only or args.quick or args.from_json is not None or args.no_page:
        raise SystemExit(
            "--update re-measures named scenarios of the published full run: give --only,"
            " and neither --quick, --from-json nor --no-page"
        )
    published_path = args.output or DEFAULT_OUTPUT
    try:
        published = orjson.loads(published_path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise SystemExit(f"cannot read the published results {published_path}: {exc}") from exc
    meta = published["meta"]
    if meta["mode"] != "full":
        raise SystemExit(f"{published_path} holds a {meta['mode']} run: only a full one is updated")
    if args.uvloop != (meta["loop"] == "uvloop"):
        raise SystemExit(f"{published_path} was measured on {meta['loop']}: pass the same loop")
    # The published run's rounds, unless asked otherwise on purpose.
    if "--repeats" not in args.argv:
        args.repeats = meta["repeats"]
    if "--warmup" not in args.argv:
        args.warmup = meta["warmup"]
    measured = run(args)
    updated = merge_update(published, measured)
    published_path.write_bytes(orjson.dumps(updated, option=orjson.OPT_INDENT_2) + b"\n")
    print(render(measured))
    _log(f"results updated in {published_path}")
    _write_page(updated, args.page_dir)
    return 0


def merge_update(published: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    """``published`` with each scenario of ``measured`` in place of its entry (or added at
    its place in the scenario order when new), and the re-measurement recorded in
    ``meta["updates"]`` (when, at which commit, with which command, which scenarios)."""
    fresh = {entry["name"]: entry for entry in measured["scenarios"]}
    order = {scenario.name: index for index, scenario in enumerate(SCENARIOS)}
    kept = [entry for entry in published["scenarios"] if entry["name"] not in fresh]
    scenarios = sorted(
        [*kept, *fresh.values()], key=lambda entry: order.get(entry["name"], len(order))
    )
    meta = measured["meta"]
    update = {
        "scenarios": list(fresh),
        **{key: meta.get(key) for key in ("started_at", "git_commit", "argv", "repeats", "warmup")},
    }
    updates = [*published["meta"].get("updates", []), update]
    return {**published, "meta": {**published["meta"], "updates": updates}, "scenarios": scenarios}


def _write_page(results: dict[str, Any], directory: Path) -> None:
    # Imported here: bench.page reads this module's scenarios and tables.
    from bench.page import write_page

    written = write_page(results, directory)
    _log(f"page written to {written[0]} with {len(written) - 1} plot(s)")
