"""The fan-out benchmark's pieces that need no process: variant names, how watchers are
split over client processes, how a watch stream's chunks are counted and stamped, how the
figures are derived, and how the direct and proxied runs are put side by side."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from bench.fanout import VARIANTS, _figures, _groups, _Watchers, watchers_of
from bench.objects import EMITTED_ANNOTATION
from bench.run import SCENARIOS, reference_of, render_summary


def _line(kind: str, emitted: int | None) -> bytes:
    annotations = {} if emitted is None else {EMITTED_ANNOTATION: str(emitted)}
    obj = {"metadata": {"name": "p", "resourceVersion": "7", "annotations": annotations}}
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


def test_variant_names_give_the_path_and_the_watcher_count() -> None:
    assert watchers_of("proxy-n100") == ("proxy", 100)
    assert watchers_of("direct-n1") == ("direct", 1)
    assert [watchers_of(variant) for variant in VARIANTS][:2] == [("direct", 1), ("proxy", 1)]
    for bad in ("proxy-100", "sideways-n10", "proxy-n0", "direct-nx"):
        with pytest.raises(ValueError, match="not a fan-out variant"):
            watchers_of(bad)


@pytest.mark.parametrize(
    ("watchers", "per_process", "groups"),
    [
        pytest.param(1, 500, [1], id="one"),
        pytest.param(1_000, 500, [500, 500], id="two-full"),
        pytest.param(101, 50, [34, 34, 33], id="uneven"),
        pytest.param(100, 50, [50, 50], id="quick"),
    ],
)
def test_watchers_are_split_evenly_over_client_processes(
    watchers: int, per_process: int, groups: list[int]
) -> None:
    assert _groups(watchers, per_process) == groups


def test_a_line_cut_anywhere_by_chunk_borders_is_counted_once_at_its_completion() -> None:
    stream = _line("MODIFIED", 111) + _line("BOOKMARK", None) + _line("MODIFIED", 222)
    for cut in range(1, len(stream)):
        watchers = _Watchers(2)
        watchers.feed(1, stream[:cut], 1_000)
        watchers.feed(1, stream[cut:], 2_000)
        assert watchers.received == [0, 2], cut
        assert list(watchers.emitted) == [111, 222], cut
        first_complete = cut >= len(_line("MODIFIED", 111))
        assert watchers.arrived[0] == (1_000 if first_complete else 2_000), cut
        assert watchers.arrived[1] == 2_000


def test_the_report_judges_only_events_written_in_the_window() -> None:
    watchers = _Watchers(2)
    for slot in (0, 1):
        watchers.feed(slot, _line("MODIFIED", 1_000_000) + _line("MODIFIED", 2_000_000), 5_000_000)
    watchers.feed(0, _line("MODIFIED", 3_000_000), 6_000_000)
    report = watchers.report(3, 1_500_000, 4_000_000)
    assert sorted(report["latencies_us"]) == [3_000, 3_000, 3_000]
    assert sorted(report["spans"]) == [
        [2_000_000, 5_000_000, 5_000_000],
        [3_000_000, 6_000_000, 6_000_000],
    ]
    assert report["complete"] == 1
    assert report["ended"] == 0
    assert (report["events"], report["chunks"]) == (5, 3)


def test_figures_divide_cpu_by_every_delivered_event_and_count_what_was_lost() -> None:
    # Event 10 (ns) reached the first process's watchers at 1,010 and 2,010 ns and the
    # second's at 3,010; event 20 the first process only, at 3,020.
    reports: list[dict[str, Any]] = [
        {
            "latencies_us": [1_000, 2_000, 3_000],
            "spans": [[10, 1_000_010, 2_000_010], [20, 3_000_020, 3_000_020]],
            "complete": 1,
            "ended": 0,
            "chunks": 2,
            "events": 3,
        },
        {
            "latencies_us": [4_000],
            "spans": [[10, 4_000_010, 4_000_010]],
            "complete": 0,
            "ended": 1,
            "chunks": 1,
            "events": 1,
        },
    ]
    # Two events written in a 2 s window, two watchers: four deliveries expected.
    figures = _figures(
        count=2,
        seconds=2.0,
        in_window=2,
        cpu=[0.4, 0.2, 0.1, 0.08],
        watches=1,
        proxy_stats={"slow_watchers_closed": 1, "upstream_watches": 1},
        rss=(50.0, 60.0),
        reports=reports,
    )
    assert figures["delivered_ratio"] == 1.0
    assert figures["watchers_complete"] == 0.5
    assert figures["upstream_cpu_us_per_event"] == pytest.approx(0.4 / 4 * 1e6)
    assert figures["proxy_cpu_us_per_event"] == pytest.approx(0.08 / 4 * 1e6)
    assert figures["client_cpu_percent"] == pytest.approx(10.0)
    assert figures["client_cpu_us_per_event"] == pytest.approx(0.3 / 4 * 1e6)
    assert figures["max_ms"] == 4.0
    assert figures["p50_ms"] == 2.0
    assert (figures["proxy_rss_mib"], figures["proxy_peak_rss_mib"]) == (50.0, 60.0)
    assert figures["streams_ended"] == figures["slow_watchers_closed"] == 1.0
    assert figures["achieved_rate"] == 1.0
    # Upstream→first watcher: 1 ms for event 10, 3 ms for event 20; first→last: 3 and 0.
    assert (figures["first_p50_ms"], figures["first_p99_ms"]) == (1.0, 3.0)
    assert (figures["spread_p50_ms"], figures["spread_p99_ms"]) == (0.0, 3.0)
    assert figures["events_per_chunk"] == pytest.approx(4 / 3)
    direct = _figures(
        count=2,
        seconds=2.0,
        in_window=2,
        cpu=[0.4, 0.2, 0.1],
        watches=2,
        proxy_stats={},
        rss=None,
        reports=reports,
    )
    assert "proxy_cpu_us_per_event" not in direct
    assert direct["upstream_watches"] == 2.0


def test_a_proxied_run_is_divided_by_the_direct_run_of_the_same_n() -> None:
    assert reference_of("proxy-n100", None, VARIANTS) == "direct-n100"
    assert reference_of("direct-n100", None, VARIANTS) is None
    assert reference_of("proxy-n100", None, ("direct-n1", "proxy-n100")) is None


def test_summary_puts_the_direct_run_beside_the_proxied_one_with_the_targets() -> None:
    scenario = next(s for s in SCENARIOS if s.name == "proxy-fanout")

    def stats(value: float) -> dict[str, Any]:
        return {"median": value, "min": value, "max": value, "samples": [value]}

    entry = {
        "name": scenario.name,
        "kind": "fanout",
        "reference": None,
        "params": scenario.params,
        "variants": {
            "direct-n100": {
                "metrics": {"p99_ms": stats(8.0), "upstream_watches": stats(100.0)},
                "errors": [],
            },
            "proxy-n100": {
                "metrics": {"p99_ms": stats(12.0), "upstream_watches": stats(1.0)},
                "errors": [],
            },
        },
        "ratios": {"proxy-n100": {"p99_ms": 1.5, "upstream_watches": 0.01}},
        "targets": [
            {"variant": "proxy-n100", "metric": "p99_ms", "goal": "<= 50", "met": True},
            {"variant": "proxy-n1000", "metric": "p99_ms", "goal": "<= 100", "met": None},
        ],
    }
    table = render_summary({"scenarios": [entry]})
    # Alone, the fan-out scenario prints its own table only.
    assert table.startswith(
        "| scenario | watchers @ events/s | figure | direct | through the proxy |"
    )
    p99 = "| proxy-fanout | 100 @ 1,000 | p99 upstream→downstream (ms) | 8.00 | 12.00 (1.50x) |"
    assert f"{p99} <= 50: met |" in table
    assert "| proxy-fanout | 100 @ 1,000 | upstream watch connections | 100 | 1 (0.01x) |" in table
    assert "| proxy-fanout | 100 @ 1,000 | p50" not in table
