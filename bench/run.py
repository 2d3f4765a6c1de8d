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
``--output`` (default ``bench/results/latest.json``) holding the run's metadata, every
sample, the medians, the ratios and the targets with whether each was met.

``--quick`` shrinks every scenario (same scenarios, fewer objects and events, one repeat,
no warm-up) so the whole run takes well under a minute; the test suite runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import aiohttp
import orjson

from bench.measure import summarize
from bench.replay import REPO_ROOT, ReplayConfig, ReplayServerProcess, child_env
from bench.worker import RESULT_PREFIX

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["SCENARIOS", "Metric", "Scenario", "Target", "main", "render_table", "run"]

DEFAULT_OUTPUT = REPO_ROOT / "bench" / "results" / "latest.json"


@dataclass(frozen=True, slots=True)
class Target:
    """A goal for one figure: ``relation`` ``value``, on the ratio to the baseline when
    ``ratio`` is true, else on the figure itself."""

    variant: str
    metric: str
    relation: Literal["<=", ">="]
    value: float
    ratio: bool

    def describe(self) -> str:
        return f"{self.relation} {self.value:g}{'x' if self.ratio else ''}"

    def met(self, measured: float) -> bool:
        return measured <= self.value if self.relation == "<=" else measured >= self.value


@dataclass(frozen=True, slots=True)
class Metric:
    """One figure a scenario reports, and how to show it."""

    name: str
    label: str
    fmt: str = "{:,.2f}"


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
        )


_SECONDS = Metric("seconds", "seconds to synced", "{:,.3f}")
_PEAK = Metric("peak_rss_mib", "peak RSS (MiB)", "{:,.1f}")
_PER_OBJECT = Metric("bytes_per_object", "RSS bytes per cached object", "{:,.0f}")
_EPS = Metric("events_per_s", "events/s", "{:,.0f}")
_SYNC_METRICS = (
    _SECONDS,
    _PEAK,
    _PER_OBJECT,
    Metric("object_bytes", "logical bytes per cached object", "{:,.0f}"),
    Metric("seconds_all_delivered", "seconds until a handler got every add", "{:,.3f}"),
    Metric("typed_list_seconds", "seconds to list the cache typed", "{:,.3f}"),
)
_SYNC_VARIANTS = (
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
    "ours-1-handler",
    "ours-strip-managed-fields",
    "ours-model",
    "ours-model-transform",
)
_FLAT_RSS_MIB = 5.0
"""RSS growth over the second half of the slow-handler run that still counts as flat."""
_WATCH_BASE = {"objects": 10_000, "events": 200_000}
_WATCH_QUICK = {"objects": 1_000, "events": 10_000}

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
    ),
    Scenario(
        name="sync-pods-100k",
        kind="sync",
        title="initial sync, 100k Pods",
        params={"resource": "pods", "objects": 100_000, "page_size": 500},
        quick_params={"resource": "pods", "objects": 2_000, "page_size": 500},
        variants=_SYNC_VARIANTS,
        quick_variants=("baseline", "ours"),
        metrics=_SYNC_METRICS,
        targets=(
            Target("ours", "seconds", "<=", 1.0, ratio=True),
            Target("ours", "peak_rss_mib", "<=", 1.1, ratio=True),
        ),
    ),
    Scenario(
        name="sync-configmaps-10k",
        kind="sync",
        title="initial sync, 10k ConfigMaps",
        params={"resource": "configmaps", "objects": 10_000, "page_size": 500},
        quick_params={"resource": "configmaps", "objects": 1_000, "page_size": 500},
        variants=("baseline", "ours", "ours-strip-managed-fields"),
        quick_variants=("baseline", "ours"),
        metrics=_SYNC_METRICS,
    ),
    Scenario(
        name="watch-1-handler",
        kind="watch",
        title="watch throughput, 1 handler, 3 indexes",
        params={**_WATCH_BASE, "handlers": 1},
        quick_params={**_WATCH_QUICK, "handlers": 1},
        variants=("baseline", "ours", "baseline-readline", "baseline-gc-frozen", "ours-gc-frozen"),
        quick_variants=("baseline", "ours"),
        metrics=(_EPS,),
        targets=(Target("ours", "events_per_s", ">=", 0.8, ratio=True),),
    ),
    Scenario(
        name="watch-10-handlers",
        kind="watch",
        title="watch throughput, 10 handlers, 3 indexes",
        params={**_WATCH_BASE, "handlers": 10},
        quick_params={**_WATCH_QUICK, "handlers": 10},
        variants=("baseline", "ours"),
        quick_variants=("baseline", "ours"),
        metrics=(_EPS,),
    ),
    Scenario(
        name="latency-5k-per-s-10-handlers",
        kind="latency",
        title="emit → handler latency at 5k events/s, 10 handlers",
        params={"objects": 10_000, "events": 50_000, "rate": 5_000.0, "handlers": 10},
        quick_params={"objects": 1_000, "events": 5_000, "rate": 5_000.0, "handlers": 10},
        variants=("baseline", "ours", "ours-gc-frozen"),
        quick_variants=("baseline", "ours"),
        metrics=(
            Metric("p50_ms", "p50 (ms)", "{:,.3f}"),
            Metric("p99_ms", "p99 (ms)", "{:,.3f}"),
            Metric("max_ms", "max (ms)", "{:,.3f}"),
            Metric("achieved_rate", "achieved events/s", "{:,.0f}"),
        ),
        targets=(Target("ours", "p99_ms", "<=", 10.0, ratio=False),),
    ),
    Scenario(
        name="slow-handler",
        kind="slow-handler",
        title="one 10 ms handler (coalescing, max_pending=1000) beside 9 fast ones, 1k events/s",
        params={"objects": 10_000, "events": 20_000, "rate": 1_000.0, "handlers": 9},
        quick_params={"objects": 1_000, "events": 2_000, "rate": 1_000.0, "handlers": 9},
        variants=("baseline", "ours", "ours-unbounded"),
        quick_variants=("baseline", "ours"),
        metrics=(
            Metric("fast_p50_ms", "fast p50 (ms)", "{:,.3f}"),
            Metric("fast_p99_first_half_ms", "fast p99, 1st half (ms)", "{:,.3f}"),
            Metric("fast_p99_second_half_ms", "fast p99, 2nd half (ms)", "{:,.3f}"),
            Metric("rss_max_mib", "max RSS (MiB)", "{:,.1f}"),
            Metric("rss_growth_first_half_mib", "RSS growth, 1st half (MiB)", "{:,.1f}"),
            Metric("rss_growth_second_half_mib", "RSS growth, 2nd half (MiB)", "{:,.1f}"),
            Metric("slow_handled", "events the slow handler finished", "{:,.0f}"),
            Metric("slow_pending_at_end", "queued for the slow handler at the end", "{:,.0f}"),
            Metric("slow_coalesced", "notifications coalesced for the slow handler", "{:,.0f}"),
        ),
        targets=(
            # "Flat": the fast handlers keep the latency target in the second half, and the
            # process does not grow by more than a few MiB once every key has been seen.
            Target("ours", "fast_p99_second_half_ms", "<=", 10.0, ratio=False),
            Target("ours", "rss_growth_second_half_mib", "<=", _FLAT_RSS_MIB, ratio=False),
        ),
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
)


def _log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _run_worker(
    kind: str, variant: str, url: str, params: dict[str, Any], *, loop: str, timeout: float
) -> dict[str, Any]:
    spec = {"kind": kind, "variant": variant, "url": url, "params": params, "loop": loop}
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "bench.worker", orjson.dumps(spec).decode()],
            cwd=REPO_ROOT,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:g} s"}
    for line in reversed(completed.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            outcome: dict[str, Any] = orjson.loads(line[len(RESULT_PREFIX) :])
            if "error" in outcome:
                _log(completed.stderr.rstrip())
            return outcome
    tail = completed.stderr.strip().splitlines()[-1:] or ["no output"]
    return {"error": f"worker exited with {completed.returncode}: {tail[0]}"}


def _measure_scenario(
    scenario: Scenario, *, quick: bool, repeats: int, warmup: int, loop: str, timeout: float
) -> dict[str, Any]:
    params = scenario.quick_params if quick else scenario.params
    variants = scenario.quick_variants if quick else scenario.variants
    samples: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    errors: dict[str, list[str]] = {v: [] for v in variants}
    server: contextlib.AbstractContextManager[str] = (
        ReplayServerProcess(scenario.replay_config(params))
        if scenario.server
        else contextlib.nullcontext("")
    )
    started = time.monotonic()
    with server as url:
        for round_ in range(warmup + repeats):
            for variant in variants:
                outcome = _run_worker(
                    scenario.kind, variant, url, params, loop=loop, timeout=timeout
                )
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
        scenario, params, variants, samples, errors, time.monotonic() - started
    )


def _summarize_scenario(
    scenario: Scenario,
    params: dict[str, Any],
    variants: Sequence[str],
    samples: dict[str, list[dict[str, float]]],
    errors: dict[str, list[str]],
    seconds: float,
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
    reference = scenario.reference
    if reference is not None and reference in summary:
        base = summary[reference]["metrics"]
        for variant in variants:
            if variant == reference:
                continue
            ratios[variant] = {
                name: stats["median"] / base[name]["median"]
                for name, stats in summary[variant]["metrics"].items()
                if name in base and stats["median"] is not None and base[name]["median"]
            }
    targets = []
    for target in scenario.targets:
        if target.ratio:
            measured = ratios.get(target.variant, {}).get(target.metric)
        else:
            stats = summary.get(target.variant, {}).get("metrics", {}).get(target.metric)
            measured = None if stats is None else stats["median"]
        targets.append(
            {
                "variant": target.variant,
                "metric": target.metric,
                "goal": target.describe(),
                "measured": measured,
                "met": None if measured is None else target.met(measured),
            }
        )
    return {
        "name": scenario.name,
        "kind": scenario.kind,
        "title": scenario.title,
        "params": params,
        "reference": reference,
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
        "git_commit": _git_commit(),
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


def _selected(names: Sequence[str] | None) -> Iterator[Scenario]:
    known = {s.name for s in SCENARIOS}
    unknown = set(names or ()) - known
    if unknown:
        raise SystemExit(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    for scenario in SCENARIOS:
        if not names or scenario.name in names:
            yield scenario


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure the selected scenarios and return the JSON document."""
    results: dict[str, Any] = {"meta": _metadata(args), "scenarios": []}
    for scenario in _selected(args.only):
        _log(f"{scenario.name}: {scenario.title}")
        results["scenarios"].append(
            _measure_scenario(
                scenario,
                quick=args.quick,
                repeats=args.repeats,
                warmup=args.warmup,
                loop="uvloop" if args.uvloop else "asyncio",
                timeout=args.timeout,
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
        "--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the JSON results"
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
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
    results = run(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2) + b"\n")
    print(render_table(results))
    _log(f"results written to {args.output}")
    return 0
