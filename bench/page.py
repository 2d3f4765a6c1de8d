"""The benchmarks page: a results document rendered as ``docs/benchmarks/index.md``, with
its plots as SVG files in ``docs/benchmarks/plots/``.

Role: the documentation's record of the last full run. ``python -m bench`` calls
:func:`write_page` after a full run and on ``--page`` (:mod:`bench.run`); nobody edits the
page by hand, so it can only say what a results document holds. Input: the JSON document
:func:`bench.run.run` returns. Output: the markdown (:func:`page_markdown`) and one SVG per
plot (:func:`plots`), written together by :func:`write_page`.

What the page holds, in order: when, where and how the run was measured, from the
document's ``meta`` (the command too: recorded as ``argv`` by the runs that record it,
rebuilt from the run's settings for older documents); the targets, met or missed; the
plots, each with a line saying what to read from it, beside the tables of the scenarios
that print their own (stages, proxy fan-out, sharding); then the table of every other
figure (:func:`bench.run.render_summary`). A section or a plot whose scenarios are not in
the document is left out, never drawn empty.

The same document gives the same files, byte for byte, with the same matplotlib: the
markdown depends on the document alone, and the plots are drawn from matplotlib's default
settings (a local ``matplotlibrc`` does not apply) with a fixed hash salt for the SVG's
element ids and no date in its metadata. They are drawn on
:class:`~matplotlib.figure.Figure` objects directly, without pyplot's global state, and
matplotlib is imported only to draw: the markdown, and a run that writes no page, do not
need it.
"""

from __future__ import annotations

import datetime
import math
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from bench.harness import COMPACT_SUFFIX
from bench.run import (
    OWN_TABLES,
    SCENARIOS,
    Metric,
    Scenario,
    medians,
    reference_of,
    render_summary,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["PLOTS_DIR", "Plot", "page_markdown", "plots", "rebuilt_command", "write_page"]

PLOTS_DIR: Final = "plots"
"""Where the plots go, under the page's directory (the page links them relatively)."""

_SALT: Final = "aioinformer-bench"
"""The SVG element ids' hash salt: fixed, so that drawing the same plot twice gives the
same bytes."""

_SIDES: Final = (
    ("raw baseline", "#8c8c8c"),
    ('cache="objects"', "#3b75af"),
    ('cache="compact"', "#ef8636"),
)
"""The three bars of a group, in order: the raw reference, then each cache mode."""


@dataclass(frozen=True, slots=True)
class Plot:
    """One plot of the page."""

    name: str
    """Its file name under :data:`PLOTS_DIR`."""
    alt: str
    """What it shows, as the image's alternative text."""
    caption: str
    """One line under it: what to read from it."""
    draw: Callable[[Figure], object]
    """Draws it on an empty figure."""
    size: tuple[float, float]
    """The figure's width and height in inches."""


@dataclass(frozen=True, slots=True)
class _Bar:
    """One bar of a group: its height (``None``: not measured), the text above it and the
    targets that apply to it, as levels on the same axis."""

    value: float | None
    text: str = ""
    targets: tuple[float, ...] = ()


# --- reading the document -----------------------------------------------------------------


_BY_NAME: Final = {scenario.name: scenario for scenario in SCENARIOS}


def _median(entry: dict[str, Any], variant: str | None, metric: str) -> float | None:
    return None if variant is None else medians(entry, variant).get(metric)


def _ratio(entry: dict[str, Any], variant: str, metric: str) -> float | None:
    ratio: float | None = entry["ratios"].get(variant, {}).get(metric)
    return ratio


def _entries(results: dict[str, Any], *kinds: str) -> list[dict[str, Any]]:
    return [entry for entry in results["scenarios"] if entry["kind"] in kinds]


def _goal(goal: str) -> tuple[float, bool]:
    """A target's ``goal`` as the document writes it (``"<= 0.3x"``, ``">= 100000"``): its
    value, and whether it is a ratio to the reference."""
    value = goal.partition(" ")[2]
    return float(value.removesuffix("x")), value.endswith("x")


def _target_levels(entry: dict[str, Any], variant: str, metric: str) -> tuple[float, ...]:
    """The targets on ``variant``'s ``metric``, as values of the figure itself (a ratio
    target times the reference's median)."""
    levels = []
    for target in entry["targets"]:
        if target["variant"] != variant or target["metric"] != metric:
            continue
        value, ratio = _goal(target["goal"])
        if not ratio:
            levels.append(value)
            continue
        reference = reference_of(variant, entry["reference"], list(entry["variants"]))
        base = _median(entry, reference, metric)
        if base:
            levels.append(value * base)
    return tuple(levels)


def _trio_bars(
    entry: dict[str, Any], family: str, metric: str, text: Callable[[float], str]
) -> list[_Bar]:
    """The three bars of ``family``'s ``metric``: each with its value as ``text`` writes
    it and, for the cache modes, the ratio to the reference under it."""
    reference = reference_of(family, entry["reference"], list(entry["variants"]))
    value = _median(entry, reference, metric)
    bars = [_Bar(value, "" if value is None else text(value))]
    for variant in (family, family + COMPACT_SUFFIX):
        value = _median(entry, variant, metric)
        ratio = _ratio(entry, variant, metric)
        label = "" if value is None else text(value)
        if value is not None and ratio is not None:
            label += f"\n{ratio:.2f}x"
        bars.append(_Bar(value, label, _target_levels(entry, variant, metric)))
    return bars


def _families_beside_their_own_baseline(entry: dict[str, Any]) -> list[str]:
    """``ours`` and every other aioinformer family measured beside a baseline run under
    its own condition (``ours-busy-app`` beside ``baseline-busy-app``)."""
    variants = list(entry["variants"])
    families = []
    for variant in variants:
        if not variant.startswith("ours") or variant.endswith(COMPACT_SUFFIX):
            continue
        reference = reference_of(variant, entry["reference"], variants)
        if variant == "ours" or reference != entry["reference"]:
            families.append(variant)
    return families


# --- drawing --------------------------------------------------------------------------------


def _thousands(value: float) -> str:
    return f"{value / 1000:,.1f}k"


def _milliseconds(value: float) -> str:
    return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def _group_bars(
    axes: Axes, groups: Sequence[tuple[str, Sequence[_Bar]]], *, log: bool = False
) -> bool:
    """Groups of up to three bars (:data:`_SIDES`) side by side, each bar's text above it
    and each of its targets as a black dash across it; whether any target was drawn."""
    from matplotlib.ticker import FuncFormatter

    width = 0.8 / len(_SIDES)
    heights = [level for _, bars in groups for bar in bars for level in (bar.value, *bar.targets)]
    top = max((height for height in heights if height), default=1.0)
    targeted = False
    for position, (_, bars) in enumerate(groups):
        for side, bar in enumerate(bars):
            x = position + (side - (len(_SIDES) - 1) / 2) * width
            if bar.value is None:
                continue
            axes.bar(x, bar.value, width, color=_SIDES[side][1])
            # The text goes above the bar, or above a target it would otherwise cross.
            reach = bar.value * 4 if log else bar.value + top * 0.12
            base = max([bar.value, *(level for level in bar.targets if level <= reach)])
            above = base * 1.15 if log else base + top * 0.015
            axes.text(x, above, bar.text, ha="center", va="bottom", fontsize=7)
            for level in bar.targets:
                axes.hlines(level, x - width / 2, x + width / 2, colors="black", linewidth=2)
                targeted = True
    axes.set_xticks(range(len(groups)), [label for label, _ in groups])
    if log:
        axes.set_yscale("log")
        axes.set_ylim(top=top * 6)
    else:
        axes.set_ylim(top=top * 1.15)
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,g}"))
    axes.spines[["top", "right"]].set_visible(False)
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)
    return targeted


def _legend(figure: Figure, targeted: bool, *extra: Any) -> None:
    """The legend of the bars' sides (and the target dash if one was drawn) above the
    plot, outside the axes."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Patch(color=color, label=label) for label, color in _SIDES]
    if targeted:
        handles.append(Line2D([], [], color="black", linewidth=2, label="target"))
    handles.extend(extra)
    figure.legend(handles=handles, loc="outside upper center", ncols=len(handles), fontsize=8)


def _scenario_bars(
    entries: Sequence[dict[str, Any]], metric: str, label: str, text: Callable[[float], str]
) -> Callable[[Figure], Axes]:
    """Draws one group of bars per scenario of ``entries``: ``metric`` for the reference
    and the two cache modes of ``ours``; gives the axes for more."""

    def draw(figure: Figure) -> Axes:
        axes = figure.add_subplot()
        groups = [(entry["name"], _trio_bars(entry, "ours", metric, text)) for entry in entries]
        targeted = _group_bars(axes, groups)
        axes.set_ylabel(label)
        _legend(figure, targeted)
        return axes

    return draw


def _throughput(results: dict[str, Any]) -> Plot | None:
    entries = _entries(results, "watch", "controller", "user-watch")
    if not entries:
        return None
    (ceiling,) = [
        _median(entry, "orjson-loads", "events_per_s") for entry in _entries(results, "decode")
    ] or [None]
    bars = _scenario_bars(entries, "events_per_s", "events/s", _thousands)

    def draw(figure: Figure) -> None:
        axes = bars(figure)
        if ceiling is not None:
            axes.axhline(ceiling, color="#555555", linestyle=":", linewidth=1)
            axes.text(
                -0.45,
                ceiling,
                f"orjson.loads alone: {_thousands(ceiling)}/s",
                ha="left",
                va="bottom",
                fontsize=7,
                color="#555555",
            )
            axes.set_ylim(top=max(axes.get_ylim()[1], ceiling * 1.1))

    return Plot(
        name="throughput.svg",
        alt="Events per second of the raw loop and of aioinformer in each cache mode",
        caption=(
            "Higher is better. Each group is one scenario: the raw aiohttp + orjson loop, then"
            " aioinformer in each cache mode with its ratio to the raw loop under its figure;"
            " black dashes are the targets"
            + (", the dotted line what decoding the same lines alone allows." if ceiling else ".")
        ),
        draw=draw,
        size=(8.0, 4.2),
    )


_LATENCY_FIGURES: Final = {
    "latency": (("p50_ms", "p50"), ("p99_ms", "p99"), ("max_ms", "max")),
    "service": (("request_p50_ms", "p50"), ("request_p99_ms", "p99"), ("request_max_ms", "max")),
}
"""The percentiles each latency kind reports: emit → handler, or a request's."""


def _latency(results: dict[str, Any]) -> Plot | None:
    panels = [
        (entry, family)
        for entry in _entries(results, *_LATENCY_FIGURES)
        for family in _families_beside_their_own_baseline(entry)
    ]
    if not panels:
        return None
    columns = min(2, len(panels))
    rows = math.ceil(len(panels) / columns)

    def draw(figure: Figure) -> None:
        shared: Axes | None = None
        targeted, top = False, 0.0
        for index, (entry, family) in enumerate(panels, start=1):
            axes = figure.add_subplot(rows, columns, index, sharey=shared)
            shared = shared or axes
            groups = [
                (label, _trio_bars(entry, family, metric, _milliseconds))
                for metric, label in _LATENCY_FIGURES[entry["kind"]]
            ]
            targeted |= _group_bars(axes, groups, log=True)
            top = max(top, axes.get_ylim()[1])
            what = "request" if entry["kind"] == "service" else "emit → handler"
            condition = family.removeprefix("ours").lstrip("-")
            title = entry["name"] + (f", {condition}" if condition else "")
            axes.set_title(f"{title}: {what}", fontsize=9)
        if shared is not None:
            # Shared: the panels' scales are the same, so that they compare at a glance.
            shared.set_ylim(top=top)
        figure.supylabel("milliseconds (log scale)", fontsize=9)
        _legend(figure, targeted)

    return Plot(
        name="latency.svg",
        alt="Latency percentiles of the raw loop and of aioinformer in each cache mode",
        caption=(
            "Lower is better, on a log scale. Each panel is one scenario (and condition):"
            " p50, p99 and max for the raw loop and each cache mode, ratio to the raw loop"
            " under the figure; black dashes are the p99 targets."
        ),
        draw=draw,
        size=(10.0, 3.8 * rows),
    )


def _memory(results: dict[str, Any]) -> Plot | None:
    entries = _entries(results, "sync")
    if not entries:
        return None
    bars = _scenario_bars(entries, "bytes_per_object", "RSS bytes per cached object", _thousands)
    return Plot(
        name="memory.svg",
        alt="RSS bytes per cached object of the raw dict and of each cache mode",
        caption=(
            "Lower is better. RSS after the initial sync minus before, over the objects"
            " cached: the raw loop's dict, then each cache mode with its ratio to the dict;"
            " black dashes are the targets."
        ),
        draw=bars,
        size=(8.0, 4.2),
    )


_FANOUT_LINES: Final = (("p50_ms", "p50", "-"), ("p99_ms", "p99", "--"), ("max_ms", "max", ":"))
_FANOUT_SIDES: Final = (("proxy", "through the proxy", "#ef8636"), ("direct", "direct", "#8c8c8c"))


def _fanout(results: dict[str, Any]) -> Plot | None:
    from bench import fanout

    entries = _entries(results, "fanout")
    if not entries:
        return None
    (entry,) = entries
    counts = sorted(
        {count for via, count in map(fanout.watchers_of, entry["variants"]) if via == "proxy"}
    )
    if not counts:
        return None
    rates = entry["params"]["rates"]

    def draw(figure: Figure) -> None:
        from matplotlib.ticker import FuncFormatter

        axes = figure.add_subplot()
        positions = range(len(counts))
        for via, label, color in _FANOUT_SIDES:
            for metric, percentile, style in _FANOUT_LINES:
                points = [
                    (x, _median(entry, f"{via}-n{count}", metric))
                    for x, count in zip(positions, counts, strict=True)
                ]
                shown = [(x, value) for x, value in points if value is not None]
                axes.plot(
                    [x for x, _ in shown],
                    [value for _, value in shown],
                    linestyle=style,
                    marker="o",
                    color=color,
                    label=f"{label}: {percentile}",
                )
        targeted = False
        for x, count in zip(positions, counts, strict=True):
            for level in _target_levels(entry, f"proxy-n{count}", "p99_ms"):
                axes.hlines(level, x - 0.15, x + 0.15, colors="black", linewidth=2)
                targeted = True
        if targeted:
            axes.plot([], [], color="black", linewidth=2, label="p99 target")
        axes.set_xticks(
            positions,
            [
                f"{count:,} watcher{'s' if count > 1 else ''}\n@ {rates[str(count)]:,.0f} events/s"
                for count in counts
            ],
        )
        axes.set_xlim(-0.5, len(counts) - 0.5)
        axes.set_yscale("log")
        axes.set_ylim(top=axes.get_ylim()[1] * 1.5)
        axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,g}"))
        axes.set_ylabel("upstream write → watcher (ms, log scale)")
        axes.spines[["top", "right"]].set_visible(False)
        axes.grid(axis="y", alpha=0.3)
        figure.legend(loc="outside right upper", fontsize=8)

    return Plot(
        name="fanout.svg",
        alt="Fan-out latency percentiles by number of watchers, through the proxy and direct",
        caption=(
            "Lower is better, on a log scale: the latency from an upstream write to each"
            " watcher, p50, p99 and max, with the watchers reading through one CachingProxy"
            " or from the upstream directly; black dashes are the p99 targets."
        ),
        draw=draw,
        size=(9.0, 4.2),
    )


_PLOTS: Final = {
    "throughput": _throughput,
    "latency": _latency,
    "memory": _memory,
    "fanout": _fanout,
}


def plots(results: dict[str, Any]) -> dict[str, Plot]:
    """The page's plots for ``results`` by section, leaving out those whose scenarios it
    does not hold."""
    made = {section: make(results) for section, make in _PLOTS.items()}
    return {section: plot for section, plot in made.items() if plot is not None}


# --- the markdown -------------------------------------------------------------------------


_DEFAULTS: Final = {"quick": (1, 0), "full": (3, 1)}
"""``--repeats`` and ``--warmup`` when not given, by mode (see :func:`bench.run.main`)."""


def rebuilt_command(results: dict[str, Any]) -> list[str]:
    """The arguments after ``python -m bench`` that give a run like ``results``', from
    its settings and scenarios: for documents written before the command was recorded."""
    meta = results["meta"]
    argv = ["--quick"] if meta["mode"] == "quick" else []
    repeats, warmup = _DEFAULTS[meta["mode"]]
    if (meta["repeats"], meta["warmup"]) != (repeats, warmup):
        argv += ["--repeats", str(meta["repeats"]), "--warmup", str(meta["warmup"])]
    if meta["loop"] == "uvloop":
        argv.append("--uvloop")
    names = [entry["name"] for entry in results["scenarios"]]
    if names != [scenario.name for scenario in SCENARIOS]:
        for name in names:
            argv += ["--only", name]
    return argv


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _update_line(update: dict[str, Any]) -> str:
    """The header's line for one ``--update``: which scenarios replaced the run's, when,
    at which commit and with which command."""
    when = datetime.datetime.fromisoformat(update["started_at"]).astimezone(datetime.UTC)
    names = ", ".join(f"`{name}`" for name in update["scenarios"])
    commit = f" at commit `{update['git_commit']}`" if update.get("git_commit") else ""
    command = shlex.join(["python", "-m", "bench", *(update.get("argv") or ())])
    return f"- **Re-measured:** {names} on {when:%Y-%m-%d %H:%M} UTC{commit} (`{command}`)"


def _header(results: dict[str, Any]) -> Iterator[str]:
    meta = results["meta"]
    started = datetime.datetime.fromisoformat(meta["started_at"]).astimezone(datetime.UTC)
    seconds = sum(entry.get("wall_seconds", 0.0) for entry in results["scenarios"])
    recorded = meta.get("argv")
    argv = rebuilt_command(results) if recorded is None else recorded
    command = shlex.join(["python", "-m", "bench", *argv])
    libraries = ", ".join(
        f"{name} {meta[name]}"
        for name in ("aiohttp", "orjson", "msgspec", "pydantic")
        if name in meta
    )
    repeats, warmup = meta["repeats"], meta["warmup"]
    rounds = f"{_plural(repeats, 'timed round')} per variant" + (
        f" after {_plural(warmup, 'warm-up round')}" if warmup else ", no warm-up"
    )
    yield "# Benchmark results"
    yield ""
    yield (
        "This page is written by `python -m bench` from the results of the run described"
        " below (`bench/results/latest.json`); [Benchmark method](method.md) says what each"
        " scenario measures and how."
    )
    yield ""
    if meta["mode"] == "quick":
        yield '!!! warning "A quick run"'
        yield ""
        yield (
            "    These results come from `--quick`: small sizes, one process shared by a"
            " scenario's variants. They show that everything runs, not how fast."
        )
        yield ""
    yield "## When, where and how"
    yield ""
    yield (
        f"- **When:** {started:%Y-%m-%d}, started {started:%H:%M} UTC,"
        f" {seconds / 60:,.0f} minutes of measuring"
    )
    yield f"- **Machine:** {_plural(meta['cpus'], 'CPU')}, `{meta['platform']}`"
    yield f"- **Python:** {meta['implementation']} {meta['python']}, {meta['loop']} event loop"
    yield f"- **Libraries:** {libraries}"
    if meta.get("git_commit"):
        yield f"- **Commit:** `{meta['git_commit']}`"
    yield (
        f'- **Default cache mode:** `"{meta["default_cache"]}"` (the library\'s default when'
        ' the run started: the targets marked "default" are judged on it)'
    )
    yield f"- **Command:** `{command}`" + (
        " (rebuilt from the run's settings: this run did not record its command)"
        if recorded is None
        else ""
    )
    yield f"- **Rounds:** {rounds}; every figure is the median over the timed rounds"
    for update in meta.get("updates", ()):
        yield _update_line(update)
    yield ""
    if meta["mode"] == "full" and repeats == 1:
        yield (
            "One timed round: treat single figures as rough, and compare within a row,"
            " where both sides ran in the same run on the same bytes. Numbers only mean"
            " something on a quiet machine."
        )
    else:
        yield (
            "Compare within a row, where both sides ran in the same run on the same bytes."
            " Numbers only mean something on a quiet machine."
        )
    yield ""


def _metric(scenario: Scenario, name: str) -> Metric:
    for metric in scenario.metrics:
        if metric.name == name:
            return metric
    return Metric(name, name)


_VERDICTS: Final = {True: "met", False: "**missed**", None: "not measured"}


def _targets(results: dict[str, Any]) -> Iterator[str]:
    rows = []
    verdicts: list[bool | None] = []
    for entry in results["scenarios"]:
        scenario = _BY_NAME[entry["name"]]
        for target in entry["targets"]:
            metric = _metric(scenario, target["metric"])
            measured = target["measured"]
            if measured is None:
                shown = "—"
            elif _goal(target["goal"])[1]:
                shown = f"{measured:.2f}x"
            else:
                shown = metric.fmt.format(measured)
            default = " (default cache)" if target["default_cache"] else ""
            verdicts.append(target["met"])
            rows.append(
                f"| {entry['name']} | {target['variant']}{default} | {metric.label} |"
                f" {target['goal']} | {shown} | {_VERDICTS[target['met']]} |"
            )
    if not rows:
        return
    met, missed = verdicts.count(True), verdicts.count(False)
    unmeasured = len(verdicts) - met - missed
    yield "## Targets"
    yield ""
    yield (
        f"{met} of {_plural(len(verdicts), 'target')} met, {missed} missed"
        + (f", {unmeasured} not measured" if unmeasured else "")
        + '. A ratio ("x") is to the reference run beside it (the raw baseline, the direct'
        " watchers or the single replica)."
    )
    yield ""
    yield "| scenario | variant | figure | target | measured | |"
    yield "|---|---|---|---|---:|---|"
    yield from rows
    yield ""


def _image(plot: Plot) -> Iterator[str]:
    yield f"![{plot.alt}]({PLOTS_DIR}/{plot.name})"
    yield ""
    yield plot.caption
    yield ""


def _own_table(results: dict[str, Any], kind: str) -> str | None:
    for entry in _entries(results, kind):
        return OWN_TABLES[kind](entry, _BY_NAME[entry["name"]])
    return None


def _sections(results: dict[str, Any]) -> Iterator[str]:
    drawn = plots(results)
    if "throughput" in drawn:
        yield "## Throughput"
        yield ""
        yield from _image(drawn["throughput"])
    if "latency" in drawn:
        yield "## Latency"
        yield ""
        yield from _image(drawn["latency"])
    if "memory" in drawn:
        yield "## Memory per cached object"
        yield ""
        yield from _image(drawn["memory"])
    stages = _own_table(results, "stages")
    if stages is not None:
        yield "## Where the time goes"
        yield ""
        yield (
            "CPU µs per event of each stage of a MODIFIED event's path measured alone, their"
            " sum beside the whole pipeline, and what your choices add"
            " ([what each stage is](method.md#where-the-time-goes))."
        )
        yield ""
        yield stages
        yield ""
    fanout = _own_table(results, "fanout")
    if fanout is not None:
        yield "## Proxy fan-out"
        yield ""
        if "fanout" in drawn:
            yield from _image(drawn["fanout"])
        yield "Direct beside through the proxy, ratio to direct in brackets."
        yield ""
        yield fanout
        yield ""
    sharding = _own_table(results, "sharding")
    if sharding is not None:
        yield "## Sharding"
        yield ""
        yield (
            "Per replica process: the single replica, then each shard with its ratio to it in"
            " brackets, for each ring mode measured (range mode's shards marked as ranges);"
            " then, one column per mode, the targets, the shard killed and how long until its"
            " keys moved."
        )
        yield ""
        yield sharding
        yield ""
    rest = [entry for entry in results["scenarios"] if entry["kind"] not in OWN_TABLES]
    if rest:
        yield "## Every figure"
        yield ""
        yield (
            "One row per figure and variant: the reference's median (the raw baseline, or"
            ' the baseline run under the same condition), then `cache="objects"` and'
            ' `cache="compact"` with their ratio to it in brackets, and the targets.'
        )
        yield ""
        yield render_summary({**results, "scenarios": rest})
        yield ""


def page_markdown(results: dict[str, Any]) -> str:
    """The page for ``results``, as markdown; it links the plots :func:`plots` gives."""
    return "\n".join([*_header(results), *_targets(results), *_sections(results)]).rstrip() + "\n"


def _draw(plot: Plot) -> bytes:
    """``plot`` as SVG, from matplotlib's defaults whatever the local settings."""
    import io

    import matplotlib as mpl
    from matplotlib.figure import Figure

    with mpl.rc_context():
        mpl.rcdefaults()
        mpl.rcParams.update({"svg.hashsalt": _SALT, "svg.fonttype": "path"})
        figure = Figure(figsize=plot.size, layout="constrained")
        plot.draw(figure)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def write_page(results: dict[str, Any], directory: Path) -> list[Path]:
    """Write the page for ``results`` as ``directory/index.md`` and its plots under
    ``directory/plots/``, removing the SVG files there that it no longer links; the
    files written, the page first."""
    pictures = directory / PLOTS_DIR
    pictures.mkdir(parents=True, exist_ok=True)
    page = directory / "index.md"
    page.write_text(page_markdown(results), encoding="utf-8")
    written = [page]
    for plot in plots(results).values():
        path = pictures / plot.name
        path.write_bytes(_draw(plot))
        written.append(path)
    for stale in set(pictures.glob("*.svg")) - set(written):
        stale.unlink()
    return written
