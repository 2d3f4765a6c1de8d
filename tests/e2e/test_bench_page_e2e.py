"""The benchmarks page (:mod:`bench.page`): a results document with every scenario gives
every section and every plot, each plot a valid SVG the page links; a scenario the
document does not hold gives neither; the same document gives the same bytes; and
``python -m bench --page --from-json`` writes it without measuring anything. (The
committed page against the committed results: tests/unit/test_bench_page.py.)

Drawing SVGs with matplotlib takes a second or more, hence e2e."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from bench import fanout, sharding
from bench.page import PLOTS_DIR, page_markdown, plots, write_page
from bench.run import SCENARIOS, _summarize_scenario

if TYPE_CHECKING:
    from bench.run import Scenario

REPO_ROOT = Path(__file__).resolve().parents[2]

_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")
_SECTIONS = {
    "## Throughput": (
        "watch-1-handler",
        "watch-10-handlers",
        "controller-key-only",
        "watch-user-code",
        "watch-controller-shape",
    ),
    "## Latency": (
        "latency-5k-per-s-10-handlers",
        "fastapi-under-churn",
        "latency-5k-per-s-100k-cache",
    ),
    "## Memory per cached object": ("sync-pods-10k", "sync-pods-100k", "sync-configmaps-10k"),
    "## Where the time goes": ("stages",),
    "## Proxy fan-out": ("proxy-fanout",),
    "## Sharding": ("sharding-configmaps-30k",),
}
"""Each section of the page and the scenarios it shows: it is there iff one of them is."""
_PLOT_OF = {
    "## Throughput": "throughput.svg",
    "## Latency": "latency.svg",
    "## Memory per cached object": "memory.svg",
    "## Proxy fan-out": "fanout.svg",
}


def _figures(scenario: Scenario, variant: str, seed: int) -> dict[str, float]:
    """One sample of ``variant``'s figures: every figure its scenario reports, positive,
    different from variant to variant (for sharding, per shard and the failover's too)."""
    names = [metric.name for metric in scenario.metrics]
    if scenario.kind == "sharding" and variant != "singleton":
        for identity in sharding.IDENTITIES:
            names += [f"{identity}.{name}" for name in sharding.PROCESS_FIGURES]
        names += [f"{identity}.sharder" for identity in sharding.IDENTITIES]
    return {name: float(seed + index + 1) for index, name in enumerate(names)}


def _results(*, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """A results document as a full run writes it (through the runner's own summary),
    with made-up figures, for every scenario but ``leave_out``."""
    scenarios = []
    for scenario in SCENARIOS:
        if scenario.name in leave_out:
            continue
        samples = {
            variant: [_figures(scenario, variant, seed)]
            for seed, variant in enumerate(scenario.variants)
        }
        errors: dict[str, list[str]] = {variant: [] for variant in scenario.variants}
        scenarios.append(
            _summarize_scenario(
                scenario,
                scenario.params,
                scenario.variants,
                samples,
                errors,
                60.0,
                default_cache="compact",
            )
        )
    meta = {
        "started_at": "2026-11-27T15:27:02+00:00",
        "mode": "full",
        "repeats": 1,
        "warmup": 0,
        "loop": "asyncio",
        "python": "3.11.7",
        "implementation": "CPython",
        "platform": "Linux-6.18-x86_64",
        "cpus": 2,
        "aiohttp": "3.14.5",
        "orjson": "3.13.0",
        "msgspec": "0.22.0",
        "pydantic": "2.12.0",
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "argv": ["--repeats", "1", "--warmup", "0"],
        "default_cache": "compact",
    }
    return {"meta": meta, "scenarios": scenarios}


def _linked(page: str) -> list[str]:
    return _IMAGE.findall(page)


def _assert_valid_svg(path: Path) -> None:
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg", path
    # Something was drawn: bars or lines are paths.
    assert next(root.iter("{http://www.w3.org/2000/svg}path"), None) is not None, path


@pytest.fixture(scope="module")
def full_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """The page of a document with every scenario (drawn once: the tests below copy it):
    its directory and the files written."""
    directory = tmp_path_factory.mktemp("full")
    return directory, write_page(_results(), directory)


def test_a_document_with_every_scenario_gives_every_section_and_every_plot(
    full_page: tuple[Path, list[Path]],
) -> None:
    tmp_path, written = full_page
    page = (tmp_path / "index.md").read_text(encoding="utf-8")
    assert written[0] == tmp_path / "index.md"
    for heading in (*_SECTIONS, "## Targets", "## Every figure", "## When, where and how"):
        assert f"\n{heading}\n" in page, heading
    links = _linked(page)
    assert sorted(links) == sorted(f"{PLOTS_DIR}/{name}" for name in _PLOT_OF.values())
    assert sorted(written[1:]) == sorted(tmp_path / link for link in links)
    for link in links:
        _assert_valid_svg(tmp_path / link)
    # Every scenario of the document shows, in its section or in the table of the rest.
    for scenario in SCENARIOS:
        assert f"| {scenario.name} | " in page, scenario.name
    # Every target, with its verdict.
    targets = sum(len(scenario.targets) for scenario in SCENARIOS)
    assert page.count(" | met |") + page.count(" | **missed** |") == targets
    assert "- **Command:** `python -m bench --repeats 1 --warmup 0`\n" in page


@pytest.mark.parametrize(
    "heading", [heading for heading in _SECTIONS if heading in _PLOT_OF], ids=str
)
def test_a_section_whose_scenarios_are_absent_is_left_out_with_its_plot(
    full_page: tuple[Path, list[Path]], tmp_path: Path, heading: str
) -> None:
    # Written over a page with every plot: the one no longer linked goes too.
    shutil.copytree(full_page[0], tmp_path, dirs_exist_ok=True)
    results = _results(leave_out=_SECTIONS[heading])
    write_page(results, tmp_path)
    page = (tmp_path / "index.md").read_text(encoding="utf-8")
    assert f"\n{heading}\n" not in page
    name = _PLOT_OF[heading]
    assert f"{PLOTS_DIR}/{name}" not in _linked(page)
    assert not (tmp_path / PLOTS_DIR / name).exists()
    others = set(_PLOT_OF.values()) - {name}
    assert {path.name for path in (tmp_path / PLOTS_DIR).iterdir()} == others
    for scenario in _SECTIONS[heading]:
        assert f"| {scenario} | " not in page, scenario


@pytest.mark.parametrize(
    "heading", [heading for heading in _SECTIONS if heading not in _PLOT_OF], ids=str
)
def test_a_table_whose_scenario_is_absent_is_left_out(heading: str) -> None:
    (scenario,) = _SECTIONS[heading]
    page = page_markdown(_results(leave_out=(scenario,)))
    assert f"\n{heading}\n" not in page
    assert f"| {scenario} | " not in page
    assert f"\n{heading}\n" in page_markdown(_results())


def test_a_document_of_the_tables_alone_has_no_plot_and_no_table_of_the_rest(
    tmp_path: Path,
) -> None:
    own = ("stages", "proxy-fanout", "sharding-configmaps-30k")
    results = _results(leave_out=tuple(s.name for s in SCENARIOS if s.name not in own))
    results["scenarios"] = [e for e in results["scenarios"] if e["name"] != "proxy-fanout"]
    written = write_page(results, tmp_path)
    page = written[0].read_text(encoding="utf-8")
    assert written == [tmp_path / "index.md"]
    assert _linked(page) == []
    assert "\n## Every figure\n" not in page
    assert "\n## Where the time goes\n" in page
    assert "\n## Sharding\n" in page


def test_rendering_the_same_document_twice_gives_the_same_bytes(
    full_page: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    directory, first = full_page
    second = write_page(_results(), tmp_path)
    assert [path.relative_to(directory) for path in first] == [
        path.relative_to(tmp_path) for path in second
    ]
    for one, other in zip(first, second, strict=True):
        assert one.read_bytes() == other.read_bytes(), one.name


def test_a_fanout_run_of_some_watcher_counts_plots_only_those() -> None:
    results = _results()
    (entry,) = [e for e in results["scenarios"] if e["kind"] == "fanout"]
    for variant in fanout.VARIANTS:
        if not variant.endswith("-n100"):
            del entry["variants"][variant]
    assert "fanout" in plots(results)
    del entry["variants"]["proxy-n100"]
    assert "fanout" not in plots(results)


def test_page_from_json_writes_the_page_without_measuring(tmp_path: Path) -> None:
    results = _results(leave_out=("proxy-fanout",))
    source = tmp_path / "results.json"
    source.write_bytes(orjson.dumps(results))
    directory = tmp_path / "site"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--page",
            "--from-json",
            str(source),
            "--page-dir",
            str(directory),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    # Nothing was measured: no scenario's progress, no table.
    assert completed.stdout == ""
    assert "page written to" in completed.stderr
    assert "(repeat 1)" not in completed.stderr
    page = (directory / "index.md").read_text(encoding="utf-8")
    assert page == page_markdown(results)
    assert sorted(path.name for path in (directory / PLOTS_DIR).iterdir()) == [
        "latency.svg",
        "memory.svg",
        "throughput.svg",
    ]


def test_page_from_a_missing_results_file_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "--page", "--from-json", str(missing)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 1
    assert f"cannot read the results file {missing}" in completed.stderr
