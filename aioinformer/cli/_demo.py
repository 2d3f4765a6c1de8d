"""``aioinformer demo``: informers against an embedded fake API server, live.

Role: show a newcomer the whole pipeline working, with no cluster. Input: the demo's
settings (pods, churn rate, handlers, duration, seed). Output: a live display on a
terminal (or one plain progress line a second when stdout is not a terminal), then a
summary whose ``cache == server:`` line says whether the informer's cache converged to the
server's state; the exit code is 0 only when it did.

The run, in order:

1. start a :class:`~aioinformer.testing.apiserver.FakeAPIServer` on 127.0.0.1 (over
   HTTPS, its kubeconfig written for kubectl, with ``--write-kubeconfig``) and create
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

This module drives the run and checks convergence; what is done to the server (pods,
churn, faults) is :mod:`aioinformer.cli._demo_scenario`, what is shown while it runs is
:mod:`aioinformer.cli._demo_display`.

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
import logging
import random
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from aioinformer._kernel.runner import TaskRunner, first_completed
from aioinformer.cli._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    library_logging,
    log_line_handler,
    stop_signals_call,
)
from aioinformer.cli._demo_display import (
    Display,
    Phase,
    Progress,
    Sample,
    fault_text,
    show_periodically,
)
from aioinformer.cli._demo_scenario import (
    APP_INDEX,
    NODE_INDEX,
    DemoSettings,
    Pods,
    app_index,
    apply_churn,
    inject_faults,
    node_index,
    scripted_faults,
)
from aioinformer.factory import SharedInformerFactory
from aioinformer.indexer import NAMESPACE_INDEX, meta_namespace_key
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.testing.apiserver import FakeAPIServer

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rich.console import Console

    from aioinformer.informer import SharedIndexInformer

__all__ = ["DemoSettings", "run_demo"]

CONVERGENCE_TIMEOUT: Final = 10.0
"""Seconds the demo waits, after the churn stops, for cache and handlers to match."""
SLOW_HANDLER_WORK: Final = 0.001
"""Seconds of simulated work per event in the slow (async) handlers."""
_CONVERGENCE_POLL: Final = 0.05
"""Seconds between two looks at the cache while waiting for convergence."""

EXIT_NOT_CONVERGED: Final = 1


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
        await asyncio.sleep(_CONVERGENCE_POLL)


def _summary_lines(
    settings: DemoSettings, outcome: _Outcome, sample: Sample, pods: Pods, interrupted: bool
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
            " · ".join(fault_text(f, settings.duration, final=True) for f in sample.faults),
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


async def _run(settings: DemoSettings, display: Display) -> int:
    stop = asyncio.Event()
    main_task = asyncio.current_task()
    assert main_task is not None
    interrupts = 0
    progress: Progress | None = None

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

    with stop_signals_call(on_signal):
        rng = random.Random(settings.seed)
        tls = settings.kubeconfig is not None
        async with FakeAPIServer(bookmark_interval=1.0, tls=tls) as server:
            display.url = server.url
            if settings.kubeconfig is not None:
                try:
                    path = server.kubeconfig_path(path=settings.kubeconfig)
                except OSError as exc:
                    print(
                        f"aioinformer: error: cannot write --write-kubeconfig: {exc}",
                        file=sys.stderr,
                    )
                    return EXIT_USAGE
                display.print(f"the demo's server, while it runs: kubectl --kubeconfig {path}")
            pods = Pods(server, rng)
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
                faults = scripted_faults()
                progress = Progress(
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


async def _drive(
    settings: DemoSettings,
    display: Display,
    progress: Progress,
    server: FakeAPIServer,
    factory: SharedInformerFactory,
    informer: SharedIndexInformer,
    handlers: list[_Mirror],
    stop: asyncio.Event,
) -> tuple[_Outcome, Sample]:
    loop = asyncio.get_running_loop()
    async with factory, TaskRunner(name="demo") as shower:
        shower.start_soon(show_periodically(display, progress), name="display")
        sync_started = loop.time()
        await first_completed(informer.wait_for_sync(fail_fast=False), stop.wait())
        if informer.has_synced():
            progress.sync_seconds = loop.time() - sync_started
        if not stop.is_set():
            progress.phase = Phase.CHURNING
            churn_started = loop.time()
            # The churn and the faults run until the time is up or Ctrl-C; one failing
            # ends the block with its error.
            async with TaskRunner(name="demo") as background:
                background.start_soon(apply_churn(progress.pods, settings.churn), name="churn")
                background.start_soon(
                    inject_faults(
                        server, progress.pods, progress.faults, churn_started, settings.duration
                    ),
                    name="faults",
                )
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(settings.duration):
                        await stop.wait()
        progress.phase = Phase.CONVERGING
        outcome = await _wait_for_convergence(informer, handlers, server)
        progress.phase = Phase.DONE
        last = progress.sample()
        display.show(last)
    return outcome, last


def run_demo(
    *,
    pods: int = 2000,
    churn: float = 200.0,
    handlers: int = 3,
    duration: float = 20.0,
    seed: int | None = None,
    kubeconfig: str | None = None,
    console: Console | None = None,
    log_level: int = logging.ERROR,
) -> int:
    """Run the demo; return the exit code (0 only when the cache converged).

    With ``kubeconfig``, the fake API server serves HTTPS from a CA of its own and a
    kubeconfig for it (its URL, CA and admin token) is written there while the demo runs,
    then removed, so that kubectl can watch the same pods.

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
    settings = DemoSettings(
        pods=pods,
        churn=churn,
        handlers=handlers,
        duration=duration,
        seed=seed,
        kubeconfig=kubeconfig,
    )
    display = Display(console or Console(), settings)
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
