"""The benchmark suite runs: ``python -m bench --quick`` completes and reports every
scenario, in both cache modes, with the loop-lag, lister and request figures the targets
are judged by; the replay server behaves as the scenarios assume; targets, tables and
probes do what the runner relies on. No figure is judged here; the numbers are only
meaningful on a quiet machine."""

from __future__ import annotations

import asyncio
import gc
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest

from bench import sharding
from bench.baseline import harness_raw_list, harness_raw_watch
from bench.harness import COMPACT_SUFFIX, with_cache_modes
from bench.measure import CollectorWatch, LatencyRecorder, LoopLagProbe
from bench.objects import (
    APP_LABEL,
    EMITTED_ANNOTATION,
    TEAM_LABEL,
    encode_item,
    make_configmap,
    make_harness_pod,
    make_pod,
    object_key,
)
from bench.page import page_markdown
from bench.replay import START_PATH, ReplayConfig, ReplayData, start_replay_server
from bench.run import (
    SCENARIOS,
    Target,
    _selected,
    reference_of,
    render_summary,
    render_table,
)
from bench.scenarios import CASES, _paced_figures, label_index

if TYPE_CHECKING:
    from collections.abc import Callable

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """One ``python -m bench --quick`` of every scenario, read by the tests below (a
    scenario measures the same with or without the others beside it, and the run takes a
    minute or more): the finished process and the JSON it wrote."""
    output = tmp_path_factory.mktemp("bench") / "results.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--output", str(output)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    results: dict[str, Any] = orjson.loads(output.read_bytes())
    return completed, results


def _alone(results: dict[str, Any], name: str) -> tuple[dict[str, Any], str]:
    """One scenario's entry and the table ``python -m bench --only NAME`` prints for it
    (``main`` renders the results of the selected scenarios with ``render_summary``)."""
    (entry,) = [entry for entry in results["scenarios"] if entry["name"] == name]
    return entry, render_summary({**results, "scenarios": [entry]})


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_run_completes_and_writes_every_scenario(
    quick_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    completed, results = quick_run
    assert results["meta"]["mode"] == "quick"
    by_name = {entry["name"]: entry for entry in results["scenarios"]}
    assert set(by_name) == {scenario.name for scenario in SCENARIOS}
    for scenario in SCENARIOS:
        entry = by_name[scenario.name]
        assert list(entry["variants"]) == list(scenario.quick_variants)
        for variant, data in entry["variants"].items():
            assert data["errors"] == [], f"{scenario.name}/{variant}: {data['errors']}"
            medians = {name: stats["median"] for name, stats in data["metrics"].items()}
            assert medians, f"{scenario.name}/{variant} reported nothing"
            reported = [m.name for m in scenario.metrics if medians.get(m.name) is not None]
            assert reported, f"{scenario.name}/{variant} reported none of its table figures"
        divided = {
            variant
            for variant in scenario.quick_variants
            if reference_of(variant, scenario.reference, scenario.quick_variants)
            not in (None, variant)
        }
        assert set(entry["ratios"]) == divided
    table = completed.stdout
    assert table.startswith("| scenario | variant |")
    for scenario in SCENARIOS:
        assert f"| {scenario.name} | " in table
    _check_new_figures(results)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_run_records_its_command_and_renders_as_the_benchmarks_page(
    quick_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]], tmp_path: Path
) -> None:
    completed, results = quick_run
    argv = results["meta"]["argv"]
    assert argv[:2] == ["--quick", "--output"]
    output = Path(argv[2])
    assert orjson.loads(output.read_bytes()) == results
    # A quick run leaves the page alone; asked, it renders the run's results.
    assert "page written" not in completed.stderr
    rendered = subprocess.run(
        [
            *(sys.executable, "-m", "bench", "--page"),
            *("--from-json", str(output), "--page-dir", str(tmp_path)),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    page = (tmp_path / "index.md").read_text(encoding="utf-8")
    assert page == page_markdown(results)
    assert '!!! warning "A quick run"' in page
    for scenario in SCENARIOS:
        assert f"| {scenario.name} | " in page, scenario.name
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page)
    assert sorted(linked) == [
        "plots/fanout.svg",
        "plots/latency.svg",
        "plots/memory.svg",
        "plots/throughput.svg",
    ]
    for link in linked:
        root = ET.parse(tmp_path / link).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg", link


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_fanout_run_serves_every_event_from_one_upstream_watch(
    quick_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    entry, table = _alone(quick_run[1], "proxy-fanout")
    assert list(entry["variants"]) == ["direct-n100", "proxy-n100"]
    medians = {
        variant: {name: stats["median"] for name, stats in data["metrics"].items()}
        for variant, data in entry["variants"].items()
    }
    for variant, figures in medians.items():
        assert entry["variants"][variant]["errors"] == []
        # Nothing lost: every watcher got every event written, none was closed.
        assert figures["delivered_ratio"] == figures["watchers_complete"] == 1.0, variant
        assert figures["streams_ended"] == 0, variant
        assert figures["max_ms"] >= figures["p99_ms"] >= figures["p50_ms"] > 0, variant
        # The first watcher to get an event gets it no later than the median one.
        assert 0 < figures["first_p50_ms"] <= figures["p50_ms"], variant
        assert figures["spread_p99_ms"] >= figures["spread_p50_ms"] >= 0, variant
        assert figures["events_per_chunk"] >= 1, variant
        assert figures["upstream_cpu_us_per_event"] > 0, variant
        assert figures["achieved_rate"] > 0, variant
    assert medians["direct-n100"]["upstream_watches"] == 100
    assert "proxy_cpu_us_per_event" not in medians["direct-n100"]
    proxied = medians["proxy-n100"]
    assert proxied["upstream_watches"] == 1
    assert proxied["slow_watchers_closed"] == 0
    assert proxied["proxy_cpu_us_per_event"] > 0
    assert proxied["proxy_peak_rss_mib"] >= proxied["proxy_rss_mib"] > 0
    assert entry["ratios"]["proxy-n100"]["upstream_watches"] == 0.01
    assert {goal["variant"] for goal in entry["targets"] if goal["met"] is not None} == {
        "proxy-n100"
    }
    assert "| proxy-fanout | 100 @ 500 | upstream watch connections | 100 | 1 (0.01x) |" in table


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_sharding_run_reports_every_process_figure_and_the_failover(
    quick_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    entry, table = _alone(quick_run[1], "sharding-configmaps-30k")
    assert list(entry["variants"]) == list(sharding.VARIANTS)
    medians = {
        variant: {name: stats["median"] for name, stats in data["metrics"].items()}
        for variant, data in entry["variants"].items()
    }
    for variant, data in entry["variants"].items():
        assert data["errors"] == [], variant
    objects = entry["params"]["objects"]
    singleton = medians["singleton"]
    sharded_variants = [v for v in sharding.VARIANTS if v != "singleton"]
    assert sharded_variants == ["sharded-3", "sharded-3-ranges"]
    # The singleton caches every ConfigMap.
    assert singleton["cached_objects"] == objects
    for variant in sharded_variants:
        sharded = medians[variant]
        per_shard = {
            identity: {
                figure: sharded[f"{identity}.{figure}"] for figure in sharding.PROCESS_FIGURES
            }
            for identity in sharding.IDENTITIES
        }
        for figures in (singleton, *per_shard.values()):
            assert figures["cpu_s"] >= figures["churn_cpu_s"] > 0, variant
            assert figures["cpu_s"] > figures["startup_cpu_s"] > 0, variant
            assert figures["peak_rss_mib"] >= figures["rss_mib"] > 0, variant
            assert figures["cache_mib"] > 0, variant
            assert figures["reconciles"] >= figures["cached_objects"] > 0, variant
        # The shards split the ConfigMaps between them.
        assert sum(figures["cached_objects"] for figures in per_shard.values()) == objects
        identities = sharding.IDENTITIES
        assert sorted(sharded[f"{identity}.sharder"] for identity in identities) == [0, 0, 1]
        for figure in sharding.PROCESS_FIGURES:
            assert sharded[figure] == max(figures[figure] for figures in per_shard.values())
        # The churn was the same for every run.
        assert singleton["churn_events"] == sharded["churn_events"] > 0
        # The killed shard's keys moved after its Lease expired, and were reconciled there.
        assert set(sharding.failover_figures_of(variant)) <= sharded.keys(), variant
        assert sharded["lease_duration_s"] == entry["params"]["lease_duration"]
        assert 0 < sharded["lost_keys"] < objects
        assert sharded["failover_reconciled_s"] > 0
    labels, ranges = medians["sharded-3"], medians["sharded-3-ranges"]
    assert labels["failover_s"] >= labels["lease_duration_s"] * 2 / 3
    assert "failover_slots_s" not in labels
    # In range mode the slots moved once the Lease expired: every slot it listed, and
    # each of its keys was reconciled by a survivor after that.
    assert "failover_s" not in ranges
    assert ranges["failover_slots_s"] >= ranges["lease_duration_s"] * 2 / 3
    assert ranges["failover_reconciled_s"] >= ranges["failover_slots_s"]
    victim = next(i for i in reversed(sharding.IDENTITIES) if not ranges[f"{i}.sharder"])
    assert ranges["lost_slots"] == len(sharding.settled_slots(victim)) > 0
    assert ranges["lost_keys"] == ranges[f"{victim}.cached_objects"]
    assert set(entry["ratios"]) == set(sharded_variants)
    assert {
        (goal["variant"], goal["metric"]): goal["met"] is not None for goal in entry["targets"]
    } == {
        (variant, metric): True for variant in sharded_variants for metric in ("cpu_s", "cache_mib")
    }
    assert table.startswith("| scenario | process | CPU s, start → end of churn |")
    processes = ("singleton", "shard-a (sharder)", "shard-b", "shard-c")
    for process in (
        *processes,
        "shard-a (ranges, sharder)",
        "shard-b (ranges)",
        "shard-c (ranges)",
    ):
        assert f"| sharding-configmaps-30k | {process} | " in table, process
    assert "| label mode (`sharded-3`) | range mode (`sharded-3-ranges`) |" in table
    assert "| sharding-configmaps-30k | shard killed: s from SIGKILL until each" in table
    assert (
        "| sharding-configmaps-30k | shard killed: s from SIGKILL until the live shards' Leases"
        " list each of its slots | — | "
    ) in table


_STAGES = ("frame_us", "decode_us", "fifo_us", "store_us", "dispatch_us", "handler_us")
_CHOICES = ("own_index_us", "reads_old_us", "model_us", "keys_only_us")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_stages_run_prints_each_stage_beside_the_whole_pipeline(
    quick_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    entry, table = _alone(quick_run[1], "stages")
    assert list(entry["variants"]) == ["baseline", "ours", "ours-compact"]
    medians = {
        variant: {name: stats["median"] for name, stats in data["metrics"].items()}
        for variant, data in entry["variants"].items()
    }
    for variant, figures in medians.items():
        assert entry["variants"][variant]["errors"] == []
        stages = [figures[name] for name in _STAGES if name in figures]
        assert figures["stage_sum_us"] == pytest.approx(sum(stages)), variant
        assert figures["whole_us"] > 0, variant
        assert figures["whole_events_per_s"] > 0, variant
        assert figures["whole_collector_us"] >= 0, variant
    # The naive loop has no queue, no dispatch and no handler; the codecs have them all.
    assert set(_STAGES) - set(medians["baseline"]) == {"fifo_us", "dispatch_us", "handler_us"}
    assert not set(_CHOICES) & set(medians["baseline"])
    for variant in ("ours", "ours-compact"):
        assert set(_STAGES) | set(_CHOICES) <= set(medians[variant]), variant
    assert table.startswith("| scenario | stage (CPU µs per event) | naive loop |")
    scenario = next(s for s in SCENARIOS if s.name == "stages")
    for metric in scenario.metrics:
        assert f"| stages | {metric.label} | " in table, metric.label
    assert "| stages | 3. FIFO: reflector hand-off and pop | — | " in table


def test_only_runs_the_named_scenarios_in_their_order_and_refuses_unknown_ones() -> None:
    assert [scenario.name for scenario in _selected(["stages", "proxy-fanout"])] == [
        scenario.name for scenario in SCENARIOS if scenario.name in {"stages", "proxy-fanout"}
    ]
    assert list(_selected(None)) == list(SCENARIOS)
    with pytest.raises(SystemExit, match="unknown scenario"):
        list(_selected(["stages", "no-such-scenario"]))


_LOOP_KINDS = {"watch", "controller", "user-watch", "latency", "slow-handler", "service"}
_COLLECTOR_FIGURES = ("gc_gen0", "gc_gen1", "gc_gen2", "gc_ms")


def _check_new_figures(results: dict[str, Any]) -> None:
    """The figures the cache modes are judged by are all there, in both modes."""
    assert results["meta"]["default_cache"] in {"objects", "compact"}
    scenarios_by_name = {scenario.name: scenario for scenario in SCENARIOS}
    for entry in results["scenarios"]:
        scenario = scenarios_by_name[entry["name"]]
        if any(v.startswith("ours") for v in scenario.quick_variants):
            assert any(v.endswith("-compact") for v in entry["variants"]), entry["name"]
        for variant, data in entry["variants"].items():
            medians = {name: stats["median"] for name, stats in data["metrics"].items()}
            if entry["kind"] in _LOOP_KINDS:
                assert medians["loop_lag_max_ms"] >= medians["loop_lag_p99_ms"] >= 0
                # The collector over the stream, per generation, on every side.
                assert all(medians[name] >= 0 for name in _COLLECTOR_FIGURES), variant
            if entry["kind"] == "user-watch":
                assert medians["events_per_s"] > 0
                assert medians["events_per_cpu_s"] > 0
            if entry["kind"] == "lister":
                assert medians["get_us"] > 0
                assert medians["list_us_per_object"] > 0
            if entry["kind"] == "service":
                assert medians["requests"] > 0
                assert medians["request_p99_ms"] >= medians["request_p50_ms"] > 0, variant
        assert len(entry["targets"]) == len(scenario.targets)
        for goal in entry["targets"]:
            assert goal["variant"] in scenario.variants, goal


def test_every_aioinformer_variant_runs_in_both_cache_modes() -> None:
    for scenario in SCENARIOS:
        for variants in (scenario.variants, scenario.quick_variants):
            for variant in variants:
                assert (scenario.kind, variant) in CASES, (scenario.name, variant)
        ours = [v for v in scenario.variants if v.startswith("ours")]
        objects = {v for v in ours if not v.endswith(COMPACT_SUFFIX)}
        compact = {v.removesuffix(COMPACT_SUFFIX) for v in ours if v.endswith(COMPACT_SUFFIX)}
        assert objects == compact, scenario.name


def test_every_target_names_a_variant_and_a_figure_of_its_scenario() -> None:
    for scenario in SCENARIOS:
        metrics = {metric.name for metric in scenario.metrics}
        for target in scenario.targets:
            assert target.metric in metrics, (scenario.name, target)
            for mode in ("objects", "compact"):
                assert target.resolve(mode) in scenario.variants, (scenario.name, target)


def test_default_configuration_targets_follow_the_default_cache_mode() -> None:
    fixed = Target("ours-compact", "get_us", "<=", 25.0, ratio=False)
    default = Target("ours", "p99_ms", "<=", 5.0, ratio=False, default_cache=True)
    assert fixed.resolve("objects") == fixed.resolve("compact") == "ours-compact"
    assert default.resolve("objects") == "ours"
    assert default.resolve("compact") == "ours-compact"
    assert with_cache_modes("baseline", "ours", "ours-gc-frozen") == (
        "baseline",
        "ours",
        "ours-compact",
        "ours-gc-frozen",
        "ours-gc-frozen-compact",
    )


def test_a_variant_is_divided_by_the_baseline_run_under_the_same_condition() -> None:
    variants = ("baseline", "ours", "ours-compact", "baseline-busy-app", "ours-busy-app")
    assert reference_of("ours", "baseline", variants) == "baseline"
    assert reference_of("ours-busy-app", "baseline", variants) == "baseline-busy-app"
    assert reference_of("ours-busy-app-compact", "baseline", variants) == "baseline-busy-app"
    assert reference_of("ours-gc-frozen", "baseline", variants) == "baseline"
    assert reference_of("baseline-busy-app", "baseline", variants) == "baseline"


def test_summary_puts_both_cache_modes_beside_the_baseline() -> None:
    stats = {"median": 10.0, "min": 10.0, "max": 10.0, "samples": [10.0]}
    half = {"median": 5.0, "min": 5.0, "max": 5.0, "samples": [5.0]}
    scenario = next(s for s in SCENARIOS if s.name == "latency-5k-per-s-10-handlers")
    results = {
        "scenarios": [
            {
                "name": scenario.name,
                "reference": "baseline",
                "targets": [
                    {
                        "variant": "ours-compact",
                        "metric": "p99_ms",
                        "goal": "<= 5",
                        "default_cache": True,
                        "measured": 5.0,
                        "met": True,
                    }
                ],
                "ratios": {"ours": {"p99_ms": 1.0}, "ours-compact": {"p99_ms": 0.5}},
                "variants": {
                    "baseline": {"metrics": {"p99_ms": stats}, "errors": []},
                    "ours": {"metrics": {"p99_ms": stats}, "errors": []},
                    "ours-compact": {"metrics": {"p99_ms": half}, "errors": []},
                    "ours-gc-frozen": {"metrics": {}, "errors": ["RuntimeError: boom"]},
                },
            }
        ]
    }
    table = render_summary(results)
    assert table.startswith('| scenario | variant | figure | baseline | cache="objects" |')
    row = f"| {scenario.name} | ours | p99 (ms) | 10.000 | 10.000 (1.00x) | 5.000 (0.50x) |"
    assert f"{row} compact, default <= 5: met |" in table
    assert f"| {scenario.name} | ours-gc-frozen | — |  | error |  |" in table
    assert f"| {scenario.name} | ours-gc-frozen | p50 (ms) |" not in table
    assert f"| {scenario.name} | baseline |" not in table


async def test_loop_lag_probe_sees_a_stall_of_the_loop() -> None:
    stall = 0.03
    async with LoopLagProbe(period=0.001) as probe:
        # Real timers are what the probe measures: this lets it arm its first one.
        await asyncio.sleep(0.002)
        # The stall is the subject: the loop must really be blocked, not suspended.
        deadline = time.perf_counter() + stall
        while time.perf_counter() < deadline:
            pass
        # The probe's overdue timer fires before this later one.
        await asyncio.sleep(0.002)
    figures = probe.summary()
    assert figures["loop_lag_max_ms"] >= stall * 1e3 * 0.9
    assert figures["loop_lag_max_ms"] >= figures["loop_lag_p99_ms"]


def test_steady_latency_leaves_out_the_start_and_events_emitted_before_a_moment() -> None:
    recorder = LatencyRecorder()
    recorder.samples = [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    recorder.emitted = [100, 110, 120, 130, 140, 150, 160, 170, 180, 190]
    assert recorder.steady(skip_fraction=0.1) == [8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert recorder.steady(skip_fraction=0.1, emitted_since=165) == [2, 1, 0]
    assert recorder.steady(skip_fraction=0.0, emitted_since=1_000) == []


def test_collector_watch_counts_full_collections() -> None:
    with CollectorWatch() as watch:
        gc.collect()
    figures = watch.summary()
    assert figures["gc_full_collections"] >= 1
    assert figures["gc_collections"] >= figures["gc_full_collections"]
    assert figures["gc_longest_ms"] >= 0


def test_collector_watch_counts_each_generation_and_the_time_spent() -> None:
    with CollectorWatch() as watch:
        gc.collect(0)
        gc.collect(1)
        gc.collect(2)
    figures = watch.summary()
    # Other collections may run too (allocations in between): at least these.
    assert figures["gc_gen0"] >= 1
    assert figures["gc_gen1"] >= 1
    assert figures["gc_gen2"] >= 1
    assert figures["gc_gen2"] == figures["gc_full_collections"]
    assert figures["gc_gen0"] + figures["gc_gen1"] + figures["gc_gen2"] == figures["gc_collections"]
    assert figures["gc_ms"] >= figures["gc_longest_ms"] >= 0


def test_the_harness_index_function_reads_any_mapping_as_a_user_writes_it() -> None:
    # Handlers and index functions may get read-only mappings rather than dicts.
    index = label_index("team")
    pod = make_pod(3)
    assert index(MappingProxyType(pod)) == [pod["metadata"]["labels"]["team"]]
    assert index(MappingProxyType({"metadata": {"labels": {"app": "x"}}})) == []
    assert index(MappingProxyType({"metadata": None})) == []
    assert index({}) == []


@pytest.mark.parametrize(
    ("make", "low", "high"),
    [
        pytest.param(make_pod, 3_500, 5_500, id="pod-about-4-KiB"),
        pytest.param(make_harness_pod, 3_500, 4_500, id="harness-pod-about-4-KiB"),
        pytest.param(make_configmap, 800, 1_400, id="configmap-about-1-KiB"),
    ],
)
def test_generated_objects_have_realistic_sizes(
    make: Callable[[int], dict[str, Any]], low: int, high: int
) -> None:
    sizes = [len(orjson.dumps(make(i))) for i in range(0, 50_000, 997)]
    assert all(low <= size <= high for size in sizes), sizes


def _containers(value: object) -> int:
    """The dicts and lists in ``value``: what the cyclic collector tracks of a decode."""
    if isinstance(value, dict):
        return 1 + sum(_containers(item) for item in value.values())
    if isinstance(value, list):
        return 1 + sum(_containers(item) for item in value)
    return 0


def test_harness_pods_have_the_harness_generators_shape() -> None:
    # bench-harness/replay_server.py's make_pod: 68 dicts and lists, one container, the
    # labels its clients index (six apps, one team).
    pods = [make_harness_pod(i, namespaces=1) for i in range(12)]
    assert {_containers(pod) for pod in pods} == {68}
    assert {pod["metadata"]["labels"][TEAM_LABEL] for pod in pods} == {"commerce"}
    assert len({pod["metadata"]["labels"][APP_LABEL] for pod in pods}) == 6
    assert {pod["metadata"]["namespace"] for pod in pods} == {"ns-000"}
    assert len({object_key(make_harness_pod(i)) for i in range(5_000)}) == 5_000
    assert encode_item("pods", 9, shape="harness") == encode_item("pods", 9, shape="harness")
    assert _containers(make_pod(0)) > 100


def test_generated_pods_are_deterministic_and_uniquely_keyed() -> None:
    assert encode_item("pods", 42) == encode_item("pods", 42)
    keys = {object_key(make_pod(i)) for i in range(5_000)}
    assert len(keys) == 5_000
    pod = make_pod(7)
    assert pod["metadata"]["managedFields"]
    assert pod["spec"]["containers"]
    assert pod["status"]["phase"] == "Running"


async def _get_json(session: aiohttp.ClientSession, url: str, **params: str) -> dict[str, object]:
    async with session.get(url, params=params) as response:
        response.raise_for_status()
        body: dict[str, object] = orjson.loads(await response.read())
        return body


async def test_replay_list_pages_follow_limit_and_continue() -> None:
    data = ReplayData(ReplayConfig(objects=25))
    async with start_replay_server(data) as url, aiohttp.ClientSession() as session:
        names: list[str] = []
        params = {"resourceVersion": "0", "limit": "10"}
        pages = 0
        while True:
            page = await _get_json(session, f"{url}/api/v1/pods", **params)
            pages += 1
            items = page["items"]
            assert isinstance(items, list)
            assert all("kind" not in item for item in items)
            names.extend(item["metadata"]["name"] for item in items)
            metadata = page["metadata"]
            assert isinstance(metadata, dict)
            assert metadata["resourceVersion"] == "25"
            if not metadata.get("continue"):
                break
            params = {"limit": "10", "continue": metadata["continue"]}
    assert pages == 3
    assert names == [make_pod(i)["metadata"]["name"] for i in range(25)]


async def test_replay_lists_partial_object_metadata_when_asked_for_it() -> None:
    data = ReplayData(ReplayConfig(objects=3))
    accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
    async with (
        start_replay_server(data) as url,
        aiohttp.ClientSession() as session,
        session.get(f"{url}/api/v1/pods", params={"limit": "2"}, headers={"Accept": accept}) as got,
    ):
        page = orjson.loads(await got.read())
    assert (page["kind"], page["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert page["metadata"]["continue"] == "c2"
    first, second = page["items"]
    assert set(first) == {"kind", "apiVersion", "metadata"}
    assert first["kind"] == "PartialObjectMetadata"
    assert first["metadata"] == make_pod(0)["metadata"]
    assert second["metadata"]["resourceVersion"] == "2"


async def _read_lines(response: aiohttp.ClientResponse, count: int) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    while len(events) < count:
        line = await response.content.readline()
        assert line, "the stream ended early"
        events.append(orjson.loads(line))
    return events


async def test_replay_watch_streams_events_after_the_requested_resource_version() -> None:
    data = ReplayData(ReplayConfig(objects=5, watch_events=12))
    async with start_replay_server(data) as url, aiohttp.ClientSession() as session:
        params = {"watch": "1", "resourceVersion": "9", "timeoutSeconds": "1"}
        async with session.get(f"{url}/api/v1/pods", params=params) as response:
            events = await _read_lines(response, 8)
            assert await response.content.read() == b""
    versions = [event["object"]["metadata"]["resourceVersion"] for event in events]  # type: ignore[index]
    assert versions == [str(rv) for rv in range(10, 18)]
    assert {event["type"] for event in events} == {"MODIFIED"}
    first = events[0]["object"]
    assert isinstance(first, dict)
    assert first["kind"] == "Pod"
    assert object_key(first) == object_key(make_pod((10 - 5 - 1) % 5))


async def _watch_chunks(url: str, query: str) -> list[bytes]:
    """The payloads of the HTTP chunks of one watch response, read off the socket (a
    client library would join them), until the stream's last chunk."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        request = f"GET /api/v1/pods?{query} HTTP/1.1\r\nHost: {host}\r\nConnection: close"
        writer.write(request.encode() + b"\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert b"transfer-encoding: chunked" in head.lower()
        chunks: list[bytes] = []
        while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
            chunks.append(await reader.readexactly(size))
            assert await reader.readexactly(2) == b"\r\n"
        return chunks
    finally:
        writer.close()


def test_replay_events_modify_objects_drawn_at_random_with_a_seed() -> None:
    def modified(config: ReplayConfig) -> list[str]:
        data = ReplayData(config)
        return [
            orjson.loads(data.event_line(event))["object"]["metadata"]["name"]
            for event in range(1, 41)
        ]

    in_turn = modified(ReplayConfig(objects=8, watch_events=40))
    assert in_turn == in_turn[:8] * 5
    assert len(set(in_turn)) == 8
    drawn = modified(ReplayConfig(objects=8, watch_events=40, order_seed=1))
    assert drawn == modified(ReplayConfig(objects=8, watch_events=40, order_seed=1))
    assert drawn != in_turn
    assert drawn != modified(ReplayConfig(objects=8, watch_events=40, order_seed=2))
    assert set(drawn) <= set(in_turn)
    # The resourceVersions still rise by one per event.
    data = ReplayData(ReplayConfig(objects=8, watch_events=40, order_seed=1))
    versions = [
        orjson.loads(data.event_line(e))["object"]["metadata"]["resourceVersion"]
        for e in range(1, 41)
    ]
    assert versions == [str(8 + event) for event in range(1, 41)]


@pytest.mark.parametrize("per_event", [True, False], ids=["chunk-per-event", "batched"])
async def test_replay_watch_sends_one_http_chunk_per_event_when_asked(per_event: bool) -> None:
    data = ReplayData(ReplayConfig(objects=5, watch_events=12, chunk_per_event=per_event))
    async with start_replay_server(data) as url:
        chunks = await _watch_chunks(url, "watch=1&resourceVersion=5&timeoutSeconds=1")
    lines = b"".join(chunks).splitlines(keepends=True)
    assert lines == [data.event_line(event) for event in range(1, 13)]
    if per_event:
        # As kube-apiserver flushes: every chunk is exactly one event's line.
        assert chunks == lines
    else:
        assert len(chunks) < len(lines)


async def test_the_harness_raw_loops_list_and_apply_every_event() -> None:
    config = ReplayConfig(
        objects=5, watch_events=12, chunk_per_event=True, namespaces=1, object_shape="harness"
    )
    data = ReplayData(config)
    async with start_replay_server(data) as url, aiohttp.ClientSession() as session:
        cache, rv, last_page = await harness_raw_list(session, url, "pods")
        assert rv == "5"
        assert len(cache) == 5
        # The page the harness's client keeps holds the very objects of the cache.
        assert all(cache[object_key(item)] is item for item in last_page["items"])
        applied, _ = await harness_raw_watch(
            session, url, "pods", cache, resource_version=rv, events=12
        )
    assert applied == 12
    versions = sorted(int(obj["metadata"]["resourceVersion"]) for obj in cache.values())
    assert versions == list(range(13, 18))


async def test_replay_watch_at_a_rate_stamps_the_emit_time() -> None:
    data = ReplayData(ReplayConfig(objects=3, watch_events=20, rate=2_000.0))
    async with start_replay_server(data) as url, aiohttp.ClientSession() as session:
        before = time.monotonic_ns()
        params = {"watch": "1", "resourceVersion": "3", "timeoutSeconds": "1"}
        async with session.get(f"{url}/api/v1/pods", params=params) as response:
            events = await _read_lines(response, 20)
        after = time.monotonic_ns()
    stamps = [
        int(event["object"]["metadata"]["annotations"][EMITTED_ANNOTATION])  # type: ignore[index]
        for event in events
    ]
    assert all(before <= stamp <= after for stamp in stamps)
    assert stamps == sorted(stamps)


async def test_a_held_stream_starts_on_the_signal_even_one_sent_before_the_watch() -> None:
    data = ReplayData(ReplayConfig(objects=3, watch_events=4, rate=2_000.0, hold=True))
    async with start_replay_server(data) as url, aiohttp.ClientSession() as session:
        before = time.monotonic_ns()
        async with session.get(url + START_PATH) as started:
            assert started.status == 200
        params = {"watch": "1", "resourceVersion": "3", "timeoutSeconds": "1"}
        async with session.get(f"{url}/api/v1/pods", params=params) as response:
            events = await _read_lines(response, 4)
    stamps = [
        int(event["object"]["metadata"]["annotations"][EMITTED_ANNOTATION])  # type: ignore[index]
        for event in events
    ]
    assert all(stamp >= before for stamp in stamps)


def test_table_shows_errors_and_ratios() -> None:
    scenario = SCENARIOS[0]
    stats = {"median": 2.0, "min": 1.0, "max": 3.0, "samples": [1.0, 2.0, 3.0]}
    results = {
        "scenarios": [
            {
                "name": scenario.name,
                "targets": [],
                "ratios": {"ours": {"seconds": 0.5}},
                "variants": {
                    "baseline": {"metrics": {"seconds": stats}, "errors": []},
                    "ours": {"metrics": {"seconds": stats}, "errors": []},
                    "ours-model": {"metrics": {}, "errors": ["ValueError: boom | bang"]},
                },
            }
        ]
    }
    table = render_table(results)
    assert f"| {scenario.name} | ours | seconds to synced | 2.000 | 1.000-3.000 | 0.50x |" in table
    assert "error: ValueError: boom \\| bang" in table


async def test_replay_answers_a_404_status_for_a_collection_it_does_not_serve() -> None:
    data = ReplayData(ReplayConfig(objects=2))
    async with (
        start_replay_server(data) as url,
        aiohttp.ClientSession() as session,
        session.get(f"{url}/api/v1/configmaps") as response,
    ):
        assert response.status == 404
        status = orjson.loads(await response.read())
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "NotFound", 404)


def test_slow_handler_halves_are_split_per_handler_before_pooling() -> None:
    # Two handlers of unequal length: pooled first, the halves would cut at the wrong time.
    early_fast = [1_000_000] * 4 + [9_000_000] * 4
    late_slow = [1_000_000] * 2 + [9_000_000] * 2
    figures = _paced_figures([early_fast, late_slow], slow=True)
    assert figures["fast_p99_first_half_ms"] == 1.0
    assert figures["fast_p99_second_half_ms"] == 9.0
    assert figures["fast_p50_ms"] == 1.0


def test_latency_figures_carry_no_prefix_and_no_halves() -> None:
    figures = _paced_figures([[2_000_000, 4_000_000]], slow=False)
    assert figures == {"p50_ms": 2.0, "p99_ms": 4.0, "max_ms": 4.0}


def test_the_watch_encoding_measurement_reads_every_event_each_way() -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.watch_encoding",
            *("--events", "60", "--repeats", "1", "--warmup", "0"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    rows = [line.split(" | ") for line in completed.stdout.splitlines()[2:]]
    assert len(rows) == 6
    # aiohttp before 3.14 inflates only a body's first gzip member: one event.
    whole = tuple(int(part) for part in aiohttp.__version__.split(".")[:2]) >= (3, 14)
    for way, cache, per_event, read, size in rows:
        assert cache in ("compact", "objects")
        assert float(per_event.split()[0]) > 0
        assert int(read) == (60 if whole or "by aiohttp" not in way else 1), way
        if int(read) != 60:
            continue
        # An event compresses to well under half its size; uncompressed it is ~4.7 KiB.
        assert int(size.rstrip(" |")) < 2400 if "gzip" in way else int(size.rstrip(" |")) > 4000
