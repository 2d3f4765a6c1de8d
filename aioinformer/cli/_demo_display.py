"""What ``aioinformer demo`` shows while it runs: progress samples, the live display on a
terminal, and plain progress lines elsewhere.

Role: the demo's view. Input: the running informer's :meth:`statistics`, the scenario's
counters (:class:`~aioinformer.cli._demo_scenario.Pods`, its faults) and the phase the
run is in, gathered in :class:`Progress`. Output: a ``rich`` live display refreshed four
times a second on a terminal, or one plain line a second on anything else; single lines
(the summary) through :meth:`Display.print`.

Ordering: each refresh shows one :class:`Sample`, taken at that moment; samples are
shown in the order they were taken.

Task model: :func:`show_periodically` is a coroutine the demo runs as a task and cancels
after the last sample is shown; the rest is synchronous. ``rich`` is imported only when a
display is drawn.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from aioinformer.cli._demo_scenario import APP_INDEX, NODE_INDEX, DemoSettings, Fault, Pods
from aioinformer.indexer import NAMESPACE_INDEX

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from aioinformer.informer import SharedIndexInformer
    from aioinformer.processor import HandlerStatistics

__all__ = ["Display", "Phase", "Progress", "Sample", "fault_text", "show_periodically"]

_TTY_REFRESH: Final = 0.25
_PLAIN_REFRESH: Final = 1.0
_RATE_WINDOW: Final = 2.0


class Phase(enum.Enum):
    """Where the demo is; the display's headline."""

    SYNCING = "initial sync"
    """The informer lists the pods; the progress bar fills."""
    CHURNING = "churning"
    """Pods change at the churn rate; faults are injected on schedule."""
    CONVERGING = "checking convergence"
    """Churn stopped; waiting for cache and handlers to match the server."""
    DONE = "done"
    """The summary is printed."""


@dataclass(frozen=True, slots=True)
class Sample:
    """What one refresh of the display shows, read at one moment."""

    elapsed: float
    phase: Phase
    server_count: int
    initial_count: int
    synced: bool
    sync_seconds: float | None
    cache_size: int
    events: int
    events_per_second: float
    relists: int
    reconnects: int
    handlers: tuple[HandlerStatistics, ...]
    index_sizes: tuple[tuple[str, int], ...]
    faults: tuple[Fault, ...]
    note: str


@dataclass(slots=True)
class Progress:
    """What the display reads; written by the run, sampled by the display task."""

    settings: DemoSettings
    informer: SharedIndexInformer
    pods: Pods
    faults: list[Fault]
    initial_count: int
    started: float
    phase: Phase = Phase.SYNCING
    sync_seconds: float | None = None
    note: str = ""
    # (time, watch events) samples for the events/s window, oldest first.
    _window: collections.deque[tuple[float, int]] = field(default_factory=collections.deque)

    def sample(self) -> Sample:
        now = time.monotonic()
        stats = self.informer.statistics()
        reflector = stats.reflector
        events = reflector.events if reflector is not None else 0
        window = self._window
        window.append((now, events))
        while len(window) > 2 and now - window[0][0] > _RATE_WINDOW:
            window.popleft()
        span = now - window[0][0]
        rate = (events - window[0][1]) / span if span > 0 else 0.0
        indexer = self.informer.indexer
        return Sample(
            elapsed=now - self.started,
            phase=self.phase,
            server_count=self.pods.count,
            initial_count=self.initial_count,
            synced=stats.synced,
            sync_seconds=self.sync_seconds,
            cache_size=stats.cache_size,
            events=events,
            events_per_second=rate,
            relists=reflector.relists if reflector is not None else 0,
            reconnects=max(0, reflector.watches - 1) if reflector is not None else 0,
            handlers=stats.handlers,
            index_sizes=tuple(
                (name, len(indexer.list_index_func_values(name)))
                for name in (NAMESPACE_INDEX, APP_INDEX, NODE_INDEX)
            ),
            faults=tuple(self.faults),
            note=self.note,
        )


def _plain_line(sample: Sample) -> str:
    queues = ",".join(f"{h.name}:{h.pending}" for h in sample.handlers)
    if sample.phase is Phase.SYNCING:
        return (
            f"[{sample.elapsed:5.1f}s] initial sync: cache {sample.cache_size}"
            f"/{sample.initial_count} pods | handler queues {queues}"
        )
    return (
        f"[{sample.elapsed:5.1f}s] {sample.phase.value}: server {sample.server_count}"
        f" | cache {sample.cache_size} | {sample.events_per_second:.0f} events/s"
        f" | handler queues {queues} | relists {sample.relists}"
        f" | reconnects {sample.reconnects}"
    )


def fault_text(fault: Fault, duration: float, *, final: bool = False) -> str:
    if fault.happened_at is None:
        state = "not reached" if final else "pending"
        return f"{fault.label} at {duration * fault.at_fraction:.1f}s: {state}"
    return f"{fault.label} at {fault.happened_at:.1f}s: done"


def _render(sample: Sample, settings: DemoSettings, url: str) -> RenderableType:
    from rich.console import Group
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    header = Text.assemble(
        ("aioinformer demo", "bold cyan"),
        f"  against the embedded fake API server at {url}\n",
        (
            f"{settings.pods} pods · churn {settings.churn:g}/s · {settings.handlers} handlers"
            f" · {settings.duration:g}s · Ctrl-C stops",
            "dim",
        ),
    )
    total = max(sample.initial_count, 1)
    done = sample.initial_count if sample.synced else min(sample.cache_size, total)
    sync = Table.grid(padding=(0, 1))
    sync.add_row(
        Text("initial sync", style="bold"),
        ProgressBar(total=total, completed=done, width=40),
        Text(
            f"{done}/{sample.initial_count} pods"
            + (f" in {sample.sync_seconds:.2f}s" if sample.sync_seconds is not None else ""),
            style="green" if sample.synced else "yellow",
        ),
    )
    metrics = Table.grid(padding=(0, 2))
    metrics.add_column(style="bold")
    metrics.add_column()
    phase = sample.phase.value
    if sample.phase is Phase.CHURNING:
        phase += f" ({sample.elapsed:.1f}s of {settings.duration:g}s)"
    metrics.add_row("phase", Text(phase, style="magenta"))
    delta = sample.server_count - sample.cache_size
    metrics.add_row(
        "cache / server",
        Text(
            f"{sample.cache_size} / {sample.server_count} pods"
            + (
                ""
                if delta == 0
                else f"  (behind by {delta})"
                if delta > 0
                else f"  ({-delta} ahead)"
            ),
            style="green" if delta == 0 else "yellow",
        ),
    )
    metrics.add_row(
        "events/s", f"{sample.events_per_second:,.0f}  ({sample.events:,} watch events)"
    )
    metrics.add_row("relists", str(sample.relists))
    metrics.add_row("reconnects", str(sample.reconnects))
    metrics.add_row(
        "indexes", " · ".join(f"{name}: {size} values" for name, size in sample.index_sizes)
    )
    metrics.add_row("faults", " · ".join(fault_text(f, settings.duration) for f in sample.faults))
    handlers = Table(title=None, show_edge=False, pad_edge=False, box=None)
    handlers.add_column("handler", style="bold")
    handlers.add_column("delivered", justify="right")
    handlers.add_column("queue depth", justify="right")
    handlers.add_column("failed", justify="right")
    for h in sample.handlers:
        handlers.add_row(
            h.name,
            f"{h.delivered:,}",
            Text(str(h.pending), style="yellow" if h.pending else "green"),
            str(h.failed),
        )
    parts: list[RenderableType] = [header, Text(), sync, Text(), metrics, Text(), handlers]
    if sample.note:
        parts += [Text(), Text(sample.note, style="italic")]
    return Group(*parts)


class Display:
    """The live display (a terminal) or plain progress lines (anything else)."""

    def __init__(self, console: Console, settings: DemoSettings) -> None:
        self.console = console
        self._settings = settings
        self.live_mode = console.is_terminal and not console.is_dumb_terminal
        self._live: Any = None
        self.url = ""

    def start(self) -> None:
        if self.live_mode:
            from rich.live import Live

            self._live = Live(console=self.console, auto_refresh=False, transient=False)
            self._live.start()

    def show(self, sample: Sample) -> None:
        if self._live is not None:
            self._live.update(_render(sample, self._settings, self.url), refresh=True)
        else:
            self.console.print(_plain_line(sample), markup=False, highlight=False, soft_wrap=True)

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def print(self, text: str, *, style: str = "") -> None:
        """One line, as is (no markup); ``style`` applies on a terminal only."""
        from rich.text import Text

        line = Text(text, style=style if self.live_mode else "")
        self.console.print(line, highlight=False, soft_wrap=True)

    def note(self, text: str) -> None:
        """A remark: in the live display's footer, or as its own line."""
        if self._live is None:
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)


async def show_periodically(display: Display, progress: Progress) -> None:
    interval = _TTY_REFRESH if display.live_mode else _PLAIN_REFRESH
    while True:
        display.show(progress.sample())
        await asyncio.sleep(interval)
