"""The benchmarks page's markdown and when ``python -m bench`` writes it: the committed page
is exactly what the committed results give (so the two cannot drift apart), a run records
its command and an older document's is rebuilt from its settings, and only a full run or
``--page`` touches the page. Drawing the plots is left to tests/e2e/test_bench_page_e2e.py."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest

import bench.page
import bench.run
from bench.page import PLOTS_DIR, page_markdown, rebuilt_command
from bench.run import SCENARIOS, main

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

REPO_ROOT = Path(__file__).resolve().parents[2]
PAGE_DIR = REPO_ROOT / "docs" / "benchmarks"


def test_the_committed_page_is_what_the_committed_results_give() -> None:
    results = orjson.loads((REPO_ROOT / "bench" / "results" / "latest.json").read_bytes())
    page = (PAGE_DIR / "index.md").read_text(encoding="utf-8")
    assert page == page_markdown(results), (
        "the page and the results differ: after a full run commit both; after a change to"
        " bench/page.py, re-render: python -m bench --page"
    )
    # Its plots are there, and no other: they are compared by name only, as matplotlib
    # versions draw the same figure differently.
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page)
    assert linked
    assert sorted(linked) == sorted(
        f"{PLOTS_DIR}/{path.name}" for path in (PAGE_DIR / PLOTS_DIR).iterdir()
    )


def _meta(**settings: Any) -> dict[str, Any]:
    return {"mode": "full", "repeats": 3, "warmup": 1, "loop": "asyncio", **settings}


def _named(*names: str) -> list[dict[str, str]]:
    return [{"name": name} for name in names]


_EVERY = _named(*(scenario.name for scenario in SCENARIOS))


@pytest.mark.parametrize(
    ("meta", "scenarios", "argv"),
    [
        pytest.param(_meta(), _EVERY, [], id="full-run-with-defaults"),
        pytest.param(
            _meta(repeats=1, warmup=0),
            _EVERY,
            ["--repeats", "1", "--warmup", "0"],
            id="full-run-of-one-round",
        ),
        pytest.param(_meta(mode="quick", repeats=1, warmup=0), _EVERY, ["--quick"], id="quick-run"),
        pytest.param(
            _meta(loop="uvloop"),
            _named("stages", "proxy-fanout"),
            ["--uvloop", "--only", "stages", "--only", "proxy-fanout"],
            id="some-scenarios-on-uvloop",
        ),
    ],
)
def test_an_older_document_s_command_is_rebuilt_from_its_settings(
    meta: dict[str, Any], scenarios: list[dict[str, str]], argv: list[str]
) -> None:
    assert rebuilt_command({"meta": meta, "scenarios": scenarios}) == argv


class _Calls:
    """What ``main`` did, with the measuring and the drawing replaced: the runs it made
    (their recorded metadata) and the pages it wrote (results, directory)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        self.runs: list[dict[str, Any]] = []
        self.pages: list[tuple[dict[str, Any], Path]] = []
        self.output = tmp_path / "results.json"
        monkeypatch.setattr(bench.run, "run", self._run)
        monkeypatch.setattr(bench.run, "_write_page", self._write_page)

    def _run(self, args: argparse.Namespace) -> dict[str, Any]:
        results: dict[str, Any] = {"meta": bench.run._metadata(args), "scenarios": []}
        self.runs.append(results["meta"])
        return results

    def _write_page(self, results: dict[str, Any], directory: Path) -> None:
        self.pages.append((results, directory))

    def main(self, *argv: str) -> Sequence[Path]:
        assert main([*argv]) == 0
        return [directory for _, directory in self.pages]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> _Calls:
    return _Calls(monkeypatch, tmp_path)


def test_a_run_records_its_command_in_the_results(calls: _Calls) -> None:
    argv = ("--repeats", "1", "--warmup", "0", "--output", str(calls.output), "--no-page")
    calls.main(*argv)
    (meta,) = calls.runs
    assert meta["argv"] == list(argv)
    assert orjson.loads(calls.output.read_bytes())["meta"]["argv"] == list(argv)


def test_a_partial_run_never_replaces_the_published_results(
    calls: _Calls, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(bench.run, "DEFAULT_OUTPUT", tmp_path / "latest.json")
    monkeypatch.setattr(bench.run, "PARTIAL_OUTPUT", tmp_path / "partial.json")
    calls.main("--quick")
    calls.main("--only", "stages")
    assert (tmp_path / "partial.json").exists()
    assert not (tmp_path / "latest.json").exists()
    calls.main("--repeats", "1", "--no-page")
    assert (tmp_path / "latest.json").exists()


def test_a_full_run_writes_the_page(calls: _Calls, tmp_path: Path) -> None:
    assert calls.main("--output", str(calls.output)) == [bench.run.DEFAULT_PAGE_DIR]
    assert calls.main("--output", str(calls.output), "--page-dir", str(tmp_path)) == [
        bench.run.DEFAULT_PAGE_DIR,
        tmp_path,
    ]
    (written, _), _ = calls.pages
    assert written["meta"] == calls.runs[0]


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(("--quick",), id="quick"),
        pytest.param(("--only", "stages"), id="only"),
        pytest.param(("--no-page",), id="no-page"),
    ],
)
def test_a_quick_or_partial_run_leaves_the_page_alone(calls: _Calls, argv: tuple[str, ...]) -> None:
    assert calls.main(*argv, "--output", str(calls.output)) == []
    assert len(calls.runs) == 1


@pytest.mark.parametrize(
    "argv",
    [pytest.param(("--quick",), id="quick"), pytest.param(("--only", "stages"), id="only")],
)
def test_a_quick_or_partial_run_writes_the_page_when_asked(
    calls: _Calls, argv: tuple[str, ...], tmp_path: Path
) -> None:
    directories = calls.main(
        *argv, "--output", str(calls.output), "--page", "--page-dir", str(tmp_path)
    )
    assert directories == [tmp_path]
    assert len(calls.runs) == 1


def test_page_alone_renders_the_latest_results_without_measuring(
    calls: _Calls, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    latest = tmp_path / "latest.json"
    latest.write_bytes(orjson.dumps({"meta": {"mode": "full"}, "scenarios": []}))
    monkeypatch.setattr(bench.run, "DEFAULT_OUTPUT", latest)
    assert calls.main("--page", "--page-dir", str(tmp_path)) == [tmp_path]
    other = tmp_path / "other.json"
    other.write_bytes(orjson.dumps({"meta": {"mode": "quick"}, "scenarios": []}))
    calls.main("--page", "--from-json", str(other))
    assert calls.runs == []
    assert [results["meta"]["mode"] for results, _ in calls.pages] == ["full", "quick"]


def test_page_and_no_page_together_are_refused(calls: _Calls) -> None:
    with pytest.raises(SystemExit):
        main(["--page", "--no-page"])
    assert calls.runs == []
    assert calls.pages == []


def test_a_run_that_would_write_the_page_without_matplotlib_stops_before_measuring(
    calls: _Calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = importlib.util.find_spec

    def without_matplotlib(name: str, package: str | None = None) -> Any:
        return None if name == "matplotlib" else found(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", without_matplotlib)
    with pytest.raises(SystemExit, match=r"needs matplotlib: pip install 'aioinformer\[bench\]'"):
        main(["--output", str(calls.output)])
    assert calls.runs == []
    calls.main("--output", str(calls.output), "--no-page")
    assert len(calls.runs) == 1


def _entry(name: str, figure: float) -> dict[str, Any]:
    return {"name": name, "figure": figure}


def _published(tmp_path: Path) -> Path:
    path = tmp_path / "latest.json"
    meta = {**_meta(repeats=1, warmup=0), "started_at": "2026-12-01T08:00:00+00:00"}
    scenarios = [_entry("stages", 1.0), _entry("proxy-fanout", 2.0)]
    path.write_bytes(orjson.dumps({"meta": meta, "scenarios": scenarios}))
    return path


class _Measures(_Calls):
    """``_Calls`` whose run gives each asked scenario an entry, with the figure 9."""

    def _run(self, args: argparse.Namespace) -> dict[str, Any]:
        results = super()._run(args)
        results["meta"]["started_at"] = "2026-12-04T22:00:00+00:00"
        results["meta"]["git_commit"] = "abc123"
        results["scenarios"] = [_entry(name, 9.0) for name in args.only]
        return results


def test_an_update_replaces_only_the_named_scenarios_and_the_page_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = _Measures(monkeypatch, tmp_path)
    monkeypatch.setattr(bench.run, "render_summary", lambda results: "")
    published = _published(tmp_path)
    calls.main("--update", "--only", "stages", "--output", str(published))
    # Measured as the published run was: its rounds, unless asked otherwise.
    (meta,) = calls.runs
    assert (meta["repeats"], meta["warmup"]) == (1, 0)
    updated = orjson.loads(published.read_bytes())
    assert updated["scenarios"] == [_entry("stages", 9.0), _entry("proxy-fanout", 2.0)]
    assert updated["meta"]["started_at"] == "2026-12-01T08:00:00+00:00"
    (update,) = updated["meta"]["updates"]
    assert update["scenarios"] == ["stages"]
    assert update["git_commit"] == "abc123"
    ((written, _),) = calls.pages
    assert written == updated
    assert bench.page._update_line(update).startswith(
        "- **Re-measured:** `stages` on 2026-12-04 22:00 UTC at commit `abc123`"
        " (`python -m bench --update --only stages --output"
    )


def test_a_new_scenario_is_added_in_the_scenario_order() -> None:
    names = [scenario.name for scenario in SCENARIOS]
    published = {"meta": _meta(), "scenarios": [_entry(names[0], 1.0), _entry(names[2], 1.0)]}
    measured = {
        "meta": {"started_at": "2026-12-04T22:00:00+00:00"},
        "scenarios": [_entry(names[1], 5.0)],
    }
    merged = bench.run.merge_update(published, measured)
    assert [entry["name"] for entry in merged["scenarios"]] == names[:3]
    assert published["scenarios"] == [_entry(names[0], 1.0), _entry(names[2], 1.0)]


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(("--update",), id="no-only"),
        pytest.param(("--update", "--only", "stages", "--quick"), id="quick"),
        pytest.param(("--update", "--only", "stages", "--no-page"), id="no-page"),
        pytest.param(("--update", "--only", "stages", "--uvloop"), id="other-loop"),
    ],
)
def test_an_update_that_would_not_match_the_published_run_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    calls = _Measures(monkeypatch, tmp_path)
    published = _published(tmp_path)
    before = published.read_bytes()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: object())
    with pytest.raises(SystemExit):
        main([*argv, "--output", str(published)])
    assert calls.runs == []
    assert published.read_bytes() == before
