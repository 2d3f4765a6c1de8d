"""``aioinformer demo``: informers against an embedded fake API server, live.

Role: show a newcomer the whole pipeline working, with no cluster. Input: the demo's
settings (pods, churn rate, handlers, duration, seed). Output: a live display on a
terminal (or one plain progress line a second when stdout is not a terminal), then a
summary whose ``cache == server:`` line says whether the informer's cache converged to the
server's state; the exit code is 0 only when it did.

The run, in order:

1. start a :class:`~aioinformer.testing.apiserver.FakeAPIServer` on 127.0.0.1 and create
   the generated pods directly in its store;
2. build a :class:`~aioinformer.factory.SharedInformerFactory` over a real client, a pods
   informer with namespace, ``app`` label and node indexes, and K handlers, each keeping
   its own ``key -> resourceVersion`` view from the events it receives (every third one
   is async and slow, so its queue depth is visible); start it and show the initial sync;
3. for ``duration`` seconds create, update and delete pods at the churn rate; at 30 % of
   the run drop every connection (the watch reconnects from its resourceVersion), at 60 %
   refuse connections for a moment, compact the history and accept again (the re-watch
   gets 410 Gone and the informer relists);
4. stop the churn (at the duration or on the first Ctrl-C), then wait, bounded, until the
   cache, every handler's view and the indexes match the server; print the summary.

Task model: one ``asyncio.run()``; the display, the churn and the fault script are tasks
of one task group; churn and faults are cancelled before the convergence check, the
display after it. The factory, client and server are closed on the way out whatever
happens. SIGINT/SIGTERM end the churn; a second one aborts (exit 130). ``rich`` is
imported only when the demo runs.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import logging
import random
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from aioinformer.cli._common import EXIT_INTERRUPTED, EXIT_OK, library_logging, log_line_handler
from aioinformer.factory import SharedInformerFactory
from aioinformer.indexer import NAMESPACE_INDEX, meta_namespace_key
from aioinformer.informer import SharedIndexInformer
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.processor import HandlerStatistics
from aioinformer.testing.apiserver import FakeAPIServer

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

__all__ = ["DemoSettings", "run_demo"]

logger = logging.getLogger(__name__)

NAMESPACES: Final = ("default", "shop", "payments", "search", "analytics", "platform")
APPS: Final = ("web", "api", "worker", "cache", "batch", "gateway")
NODES: Final = tuple(f"node-{i:02d}" for i in range(1, 13))
APP_INDEX: Final = "app"
NODE_INDEX: Final = "node"

CONVERGENCE_TIMEOUT: Final = 10.0
"""Seconds the demo waits, after the churn stops, for cache and handlers to match."""
SLOW_HANDLER_WORK: Final = 0.001
"""Seconds of simulated work per event in the slow (async) handlers."""
_TICK: Final = 0.05
_TTY_REFRESH: Final = 0.25
_PLAIN_REFRESH: Final = 1.0
_RATE_WINDOW: Final = 2.0
_FAULT_DROP_AT: Final = 0.3
_FAULT_COMPACT_AT: Final = 0.6
_REFUSE_WINDOW: Final = 0.3

EXIT_NOT_CONVERGED: Final = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoSettings:
    """What ``aioinformer demo`` was asked for."""

    pods: int = 2000
    """Pods created before the informer starts."""
    churn: float = 200.0
    """Creates, updates and deletes per second while the demo runs."""
    handlers: int = 3
    """Event handlers registered on the pods informer."""
    duration: float = 20.0
    """Seconds of churn before the convergence check."""
    seed: int | None = None
    """Random seed for the generated pods and churn; ``None`` for a fresh one."""


def app_index(obj: Any) -> list[str]:
    """Index pods by their ``app`` label."""
    app = (obj.get("metadata", {}).get("labels") or {}).get("app")
    return [app] if app else []


def node_index(obj: Any) -> list[str]:
    """Index pods by the node they are bound to."""
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


# ---------------------------------------------------------------------------------------
# The server side: generated pods and churn


class _Pods:
    """Generates pods and applies churn to the server directly (bypassing HTTP, as a
    controller elsewhere would through its own connection).

    Invariant: ``_keys`` lists exactly the pods on the server, ``_slot[key]`` is each
    key's position in ``_keys`` (swap-remove keeps both O(1)).
    """

    def __init__(self, server: FakeAPIServer, rng: random.Random) -> None:
        self._server = server
        self._rng = rng
        self._sequence = 0
        self._keys: list[tuple[str, str]] = []
        self._slot: dict[tuple[str, str], int] = {}
        self.creates = 0
        self.updates = 0
        self.deletes = 0

    @property
    def count(self) -> int:
        """Pods on the server now."""
        return len(self._keys)

    def create(self) -> None:
        rng = self._rng
        self._sequence += 1
        app = rng.choice(APPS)
        namespace = rng.choice(NAMESPACES)
        name = f"{app}-{self._sequence:05d}"
        self._server.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {"app": app, "revision": "1"},
                },
                "spec": {
                    "nodeName": rng.choice(NODES),
                    "containers": [{"name": app, "image": f"registry.example/{app}:1.0"}],
                },
                "status": {"phase": "Running"},
            }
        )
        key = (namespace, name)
        self._slot[key] = len(self._keys)
        self._keys.append(key)
        self.creates += 1

    def update(self) -> None:
        if not self._keys:
            self.create()
            return
        rng = self._rng
        namespace, name = rng.choice(self._keys)
        self.updates += 1
        labels = {"revision": str(self.updates)}
        if rng.random() < 0.2:
            labels["app"] = rng.choice(APPS)  # moves the pod in the app index
        self._server.patch(
            "pods",
            namespace,
            name,
            {
                "metadata": {
                    "labels": labels,
                    "annotations": {"demo.aioinformer.dev/touched": str(self.updates)},
                }
            },
        )

    def delete(self) -> None:
        if not self._keys:
            self.create()
            return
        position = self._rng.randrange(len(self._keys))
        key = self._keys[position]
        last = self._keys.pop()
        if last != key:
            self._keys[position] = last
            self._slot[last] = position
        del self._slot[key]
        self._server.delete("pods", key[0], key[1])
        self.deletes += 1

    def churn_once(self) -> None:
        """One random change: 30 % create, 40 % update, 30 % delete."""
        roll = self._rng.random()
        if roll < 0.3:
            self.create()
        elif roll < 0.7:
            self.update()
        else:
            self.delete()


async def _churn(pods: _Pods, rate: float) -> None:
    """Apply ``rate`` changes per second until cancelled, in small batches per tick."""
    if rate <= 0:
        return
    loop = asyncio.get_running_loop()
    last = loop.time()
    owed = 0.0
    while True:
        await asyncio.sleep(_TICK)
        now = loop.time()
        owed += (now - last) * rate
        last = now
        while owed >= 1.0:
            pods.churn_once()
            owed -= 1.0


@dataclass(slots=True)
class _Fault:
    """One scripted fault and when it took effect."""

    label: str
    at_fraction: float
    happened_at: float | None = None


async def _faults(
    server: FakeAPIServer, pods: _Pods, faults: list[_Fault], started: float, duration: float
) -> None:
    """At their moments, drop the watch, then force a 410 Gone on the re-watch."""
    drop, compaction = faults
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, started + duration * drop.at_fraction - loop.time()))
    # Every connection goes: the watch reconnects from the resourceVersion it reached.
    await server.restart(reset_history=False)
    drop.happened_at = loop.time() - started
    logger.info("demo: dropped every connection at %.1fs", drop.happened_at)
    await asyncio.sleep(max(0.0, started + duration * compaction.at_fraction - loop.time()))
    await server.faults.refuse_connections()
    try:
        # While the watch is away the server moves on (one write at least, so the
        # informer's resourceVersion is behind), then forgets its history: the re-watch
        # gets 410 Gone and the informer must relist.
        pods.update()
        await asyncio.sleep(_REFUSE_WINDOW)
        server.compact()
        compaction.happened_at = loop.time() - started
        logger.info("demo: compacted the history at %.1fs", compaction.happened_at)
    finally:
        await asyncio.shield(server.faults.accept_connections())


# ---------------------------------------------------------------------------------------
# The informer side: handlers that keep their own view


class _Mirror:
    """One handler's own ``key -> resourceVersion`` view, built only from the events it
    receives; at the end it must equal the server's state, so every event arrived, in
    order. With ``work`` (seconds per event) the handler is async and slow."""

    def __init__(self, name: str, *, work: float = 0.0) -> None:
        self.name = name
        self.work = work
        self.view: dict[str, str] = {}

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.view[meta_namespace_key(obj)] = obj["metadata"]["resourceVersion"]

    def on_update(self, old: Any, new: Any) -> None:
        self.view[meta_namespace_key(new)] = new["metadata"]["resourceVersion"]

    def on_delete(self, obj: Any) -> None:
        key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else meta_namespace_key(obj)
        self.view.pop(key, None)

    async def on_add_slowly(self, obj: Any, is_in_initial_list: bool) -> None:
        await asyncio.sleep(self.work)
        self.on_add(obj, is_in_initial_list)

    async def on_update_slowly(self, old: Any, new: Any) -> None:
        await asyncio.sleep(self.work)
        self.on_update(old, new)

    async def on_delete_slowly(self, obj: Any) -> None:
        await asyncio.sleep(self.work)
        self.on_delete(obj)

    def register(self, informer: SharedIndexInformer) -> None:
        if self.work:
            informer.add_event_handler(
                on_add=self.on_add_slowly,
                on_update=self.on_update_slowly,
                on_delete=self.on_delete_slowly,
                name=self.name,
            )
        else:
            informer.add_event_handler(
                on_add=self.on_add,
                on_update=self.on_update,
                on_delete=self.on_delete,
                name=self.name,
            )


def _handler_names(count: int) -> list[str]:
    names = []
    for i in range(count):
        kind = ("mirror", "audit", "slow-audit")[i % 3]
        names.append(kind if i < 3 else f"{kind}-{i // 3 + 1}")
    return names


def _make_handlers(count: int) -> list[_Mirror]:
    """``mirror``, ``audit``, ``slow-audit``, ``mirror-2``, ...: every third one slow."""
    return [
        _Mirror(name, work=SLOW_HANDLER_WORK if i % 3 == 2 else 0.0)
        for i, name in enumerate(_handler_names(count))
    ]


def _cache_view(informer: SharedIndexInformer) -> dict[str, str]:
    return {
        meta_namespace_key(obj): obj["metadata"]["resourceVersion"]
        for obj in informer.indexer.list()
    }


def _index_counts(objs: list[dict[str, Any]]) -> dict[str, collections.Counter[str]]:
    counts: dict[str, collections.Counter[str]] = {
        NAMESPACE_INDEX: collections.Counter(),
        APP_INDEX: collections.Counter(),
        NODE_INDEX: collections.Counter(),
    }
    for obj in objs:
        counts[NAMESPACE_INDEX][obj["metadata"].get("namespace", "")] += 1
        for value in app_index(obj):
            counts[APP_INDEX][value] += 1
        for value in node_index(obj):
            counts[NODE_INDEX][value] += 1
    return counts


def _indexes_match(
    informer: SharedIndexInformer, expected: Mapping[str, Mapping[str, int]]
) -> bool:
    indexer = informer.indexer
    for name, counts in expected.items():
        values = indexer.list_index_func_values(name)
        if sorted(values) != sorted(counts):
            return False
        if any(len(indexer.index_keys(name, value)) != n for value, n in counts.items()):
            return False
    return True


# ---------------------------------------------------------------------------------------
# Progress: what the display shows


class _Phase(enum.Enum):
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
class _Sample:
    elapsed: float
    phase: _Phase
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
    faults: tuple[_Fault, ...]
    note: str


@dataclass(slots=True)
class _Progress:
    """What the display reads; written by the run, sampled by the display task."""

    settings: DemoSettings
    informer: SharedIndexInformer
    pods: _Pods
    faults: list[_Fault]
    initial_count: int
    started: float
    phase: _Phase = _Phase.SYNCING
    sync_seconds: float | None = None
    note: str = ""
    # (time, watch events) samples for the events/s window, oldest first.
    _window: collections.deque[tuple[float, int]] = field(default_factory=collections.deque)

    def sample(self) -> _Sample:
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
        return _Sample(
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


def _plain_line(sample: _Sample) -> str:
    queues = ",".join(f"{h.name}:{h.pending}" for h in sample.handlers)
    if sample.phase is _Phase.SYNCING:
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


def _fault_text(fault: _Fault, duration: float, *, final: bool = False) -> str:
    if fault.happened_at is None:
        state = "not reached" if final else "pending"
        return f"{fault.label} at {duration * fault.at_fraction:.1f}s: {state}"
    return f"{fault.label} at {fault.happened_at:.1f}s: done"


def _render(sample: _Sample, settings: DemoSettings, url: str) -> RenderableType:
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
    if sample.phase is _Phase.CHURNING:
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
    metrics.add_row("faults", " · ".join(_fault_text(f, settings.duration) for f in sample.faults))
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


class _Display:
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

    def show(self, sample: _Sample) -> None:
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


async def _show_periodically(display: _Display, progress: _Progress) -> None:
    interval = _TTY_REFRESH if display.live_mode else _PLAIN_REFRESH
    while True:
        display.show(progress.sample())
        await asyncio.sleep(interval)


# ---------------------------------------------------------------------------------------
# The run


@dataclass(frozen=True, slots=True)
class _Outcome:
    cache_converged: bool
    handlers_agreeing: int
    handler_count: int
    indexes_consistent: bool
    server_count: int
    cache_size: int
    convergence_seconds: float

    @property
    def converged(self) -> bool:
        return (
            self.cache_converged
            and self.handlers_agreeing == self.handler_count
            and self.indexes_consistent
        )


async def _wait_for_convergence(
    informer: SharedIndexInformer, handlers: list[_Mirror], server: FakeAPIServer
) -> _Outcome:
    """After the churn stopped the server's state is fixed: poll (bounded) until the cache,
    every handler's view and the indexes agree with it."""
    truth_objects = server.objects("pods")
    truth = {meta_namespace_key(obj): obj["metadata"]["resourceVersion"] for obj in truth_objects}
    expected_indexes = _index_counts(truth_objects)
    loop = asyncio.get_running_loop()
    begin = loop.time()
    deadline = begin + CONVERGENCE_TIMEOUT
    while True:
        cache = _cache_view(informer)
        cache_ok = cache == truth
        agreeing = sum(1 for h in handlers if h.view == truth)
        indexes_ok = cache_ok and _indexes_match(informer, expected_indexes)
        if (cache_ok and agreeing == len(handlers) and indexes_ok) or loop.time() >= deadline:
            return _Outcome(
                cache_converged=cache_ok,
                handlers_agreeing=agreeing,
                handler_count=len(handlers),
                indexes_consistent=indexes_ok,
                server_count=len(truth),
                cache_size=len(cache),
                convergence_seconds=loop.time() - begin,
            )
        await asyncio.sleep(_TICK)


def _summary_lines(
    settings: DemoSettings, outcome: _Outcome, sample: _Sample, pods: _Pods, interrupted: bool
) -> list[tuple[str, str, bool | None]]:
    """(label, value, good) rows of the summary; ``good`` colours the value."""
    yes_no = {True: "yes", False: "no"}
    rows: list[tuple[str, str, bool | None]] = [
        ("ran for", f"{sample.elapsed:.1f}s" + (" (interrupted)" if interrupted else ""), None),
        (
            "initial sync",
            f"{sample.initial_count} pods in {sample.sync_seconds:.2f}s"
            if sample.sync_seconds is not None
            else "not finished",
            sample.sync_seconds is not None,
        ),
        (
            "churn applied",
            f"{pods.creates - sample.initial_count} created, {pods.updates} updated,"
            f" {pods.deletes} deleted",
            None,
        ),
        ("watch events", f"{sample.events:,}", None),
        ("relists", str(sample.relists), None),
        ("reconnects", str(sample.reconnects), None),
        (
            "faults",
            " · ".join(_fault_text(f, settings.duration, final=True) for f in sample.faults),
            None,
        ),
        ("pods on server", str(outcome.server_count), None),
        ("pods in cache", str(outcome.cache_size), None),
        (
            "handlers agreeing with server",
            f"{outcome.handlers_agreeing}/{outcome.handler_count}",
            outcome.handlers_agreeing == outcome.handler_count,
        ),
        ("indexes consistent", yes_no[outcome.indexes_consistent], outcome.indexes_consistent),
        (
            "cache == server",
            yes_no[outcome.cache_converged]
            + (f" (after {outcome.convergence_seconds:.2f}s)" if outcome.cache_converged else ""),
            outcome.cache_converged,
        ),
    ]
    return rows


async def _run(settings: DemoSettings, display: _Display) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    main_task = asyncio.current_task()
    assert main_task is not None
    interrupts = 0
    progress: _Progress | None = None

    def on_signal() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            stop.set()
            note = "interrupted: stopping churn, checking convergence (Ctrl-C again to abort)"
            if progress is not None:
                progress.note = note
            display.note(note)
        else:
            main_task.cancel()

    signals = [signal.SIGINT, signal.SIGTERM]
    for signum in signals:
        loop.add_signal_handler(signum, on_signal)
    try:
        rng = random.Random(settings.seed)
        async with FakeAPIServer(bookmark_interval=1.0) as server:
            display.url = server.url
            pods = _Pods(server, rng)
            for _ in range(settings.pods):
                pods.create()
            handlers = _make_handlers(settings.handlers)
            async with server.client() as client:
                factory = SharedInformerFactory(client)
                informer = factory.informer_for(
                    "pods", indexers={APP_INDEX: app_index, NODE_INDEX: node_index}
                )
                for handler in handlers:
                    handler.register(informer)
                faults = [
                    _Fault("watch drop", _FAULT_DROP_AT),
                    _Fault("410 compaction", _FAULT_COMPACT_AT),
                ]
                progress = _Progress(
                    settings=settings,
                    informer=informer,
                    pods=pods,
                    faults=faults,
                    initial_count=settings.pods,
                    started=time.monotonic(),
                )
                display.start()
                try:
                    outcome, last = await _drive(
                        settings, display, progress, server, factory, informer, handlers, stop
                    )
                finally:
                    display.stop()
        interrupted = interrupts > 0
        for label, value, good in _summary_lines(settings, outcome, last, pods, interrupted):
            style = "" if good is None else ("green" if good else "bold red")
            display.print(f"{label}: {value}", style=style)
        return EXIT_OK if outcome.converged else EXIT_NOT_CONVERGED
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)


async def _drive(
    settings: DemoSettings,
    display: _Display,
    progress: _Progress,
    server: FakeAPIServer,
    factory: SharedInformerFactory,
    informer: SharedIndexInformer,
    handlers: list[_Mirror],
    stop: asyncio.Event,
) -> tuple[_Outcome, _Sample]:
    loop = asyncio.get_running_loop()
    async with factory, asyncio.TaskGroup() as tasks:
        shower = tasks.create_task(_show_periodically(display, progress))
        sync_started = loop.time()
        sync_wait = asyncio.ensure_future(informer.wait_for_sync())
        stop_wait = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([sync_wait, stop_wait], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop_wait.cancel()
            sync_wait.cancel()
        if informer.has_synced():
            progress.sync_seconds = loop.time() - sync_started
        background: list[asyncio.Task[None]] = []
        if not stop.is_set():
            progress.phase = _Phase.CHURNING
            churn_started = loop.time()
            background = [
                tasks.create_task(_churn(progress.pods, settings.churn)),
                tasks.create_task(
                    _faults(
                        server, progress.pods, progress.faults, churn_started, settings.duration
                    )
                ),
            ]
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(settings.duration):
                    await stop.wait()
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        for task in background:
            if not task.cancelled() and (error := task.exception()) is not None:
                raise error
        progress.phase = _Phase.CONVERGING
        outcome = await _wait_for_convergence(informer, handlers, server)
        progress.phase = _Phase.DONE
        last = progress.sample()
        display.show(last)
        shower.cancel()
    return outcome, last


def run_demo(
    *,
    pods: int = 2000,
    churn: float = 200.0,
    handlers: int = 3,
    duration: float = 20.0,
    seed: int | None = None,
    console: Console | None = None,
    log_level: int = logging.ERROR,
) -> int:
    """Run the demo; return the exit code (0 only when the cache converged).

    Library log records at ``log_level`` and above are shown (above the live display on
    a terminal); the injected faults make the library log retries and relists at INFO.
    Needs ``rich`` (the ``cli`` extra); without it, prints one line saying so and returns 1.
    """
    try:
        from rich.console import Console
        from rich.logging import RichHandler
    except ImportError:
        print(
            "aioinformer: error: the demo needs rich: pip install 'aioinformer[cli]'",
            file=sys.stderr,
        )
        return EXIT_NOT_CONVERGED
    settings = DemoSettings(pods=pods, churn=churn, handlers=handlers, duration=duration, seed=seed)
    display = _Display(console or Console(), settings)
    log_handler: logging.Handler
    if display.live_mode:
        log_handler = RichHandler(console=display.console, show_path=False)
    else:
        log_handler = log_line_handler(sys.stderr)
    with library_logging(log_handler, log_level):
        try:
            return asyncio.run(_run(settings, display))
        except (asyncio.CancelledError, KeyboardInterrupt):
            display.print("aioinformer: demo aborted")
            return EXIT_INTERRUPTED
