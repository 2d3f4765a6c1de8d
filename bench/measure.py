"""Measuring tools shared by the scenarios: memory, latency samples, summaries.

* :func:`current_rss` / :func:`peak_rss` — resident memory of this process, in bytes (the
  peak is the kernel's high-water mark, which is why every measured case runs in a fresh
  process).
* :func:`deep_size` — the logical size of objects (what a cache entry holds).
* :class:`LatencyRecorder` — collects ``monotonic_ns`` differences between the server's
  emit stamp and the moment a handler was entered.
* :class:`RssSampler` — samples :func:`current_rss` on a period while a scenario runs.
* :class:`LoopLagProbe` — a small task on the measured loop that asks to wake every
  millisecond and records how late each wake-up was: the longest time the loop could not
  run anything else.
* :class:`CollectorWatch` — counts the cyclic collector's runs (per generation) and their
  durations while inside ``with``.
* :func:`observed` — both of the above over an ``async with`` block.
* :class:`BusyApplication` — the rest of a service sharing the loop: small objects left in
  reference cycles every few milliseconds, so the collector runs as it does in real
  processes and not only when the measured pipeline happens to trigger it.
* :func:`summarize` / :func:`percentile` — median and spread over repeats, percentiles over
  samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import os
import resource
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any, Self

from bench.objects import EMITTED_ANNOTATION

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Sequence
    from types import TracebackType

__all__ = [
    "BusyApplication",
    "CollectorWatch",
    "LatencyRecorder",
    "LoopLagProbe",
    "RssSampler",
    "current_rss",
    "deep_size",
    "observed",
    "peak_rss",
    "percentile",
    "settled_rss",
    "summarize",
]

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def current_rss() -> int:
    """Resident set size of this process now, in bytes."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except OSError:
        return peak_rss()


def settled_rss() -> int:
    """:func:`current_rss` after a full collection, so garbage does not count."""
    gc.collect()
    return current_rss()


def deep_size(objs: Iterable[Any]) -> int:
    """Bytes held by ``objs`` and everything they reach (dicts, lists, strings, model
    instances), each object counted once across the whole walk.

    RSS cannot show what a transform saves after decoding (the freed objects leave holes
    in the allocator's arenas, which are not returned); this logical size can.
    """
    seen: set[int] = set()
    total = 0
    stack: list[Any] = list(objs)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            stack.append(vars(obj))
            for name in ("__pydantic_extra__", "__pydantic_fields_set__"):
                extra = getattr(obj, name, None)
                if extra is not None:
                    stack.append(extra)
    return total


def peak_rss() -> int:
    """The highest resident set size this process has had, in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return int(peak if sys.platform == "darwin" else peak * 1024)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` percentile of ``values`` (nearest rank); NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))
    return float(ordered[rank])


def summarize(samples: Sequence[float]) -> dict[str, Any]:
    """Median, min, max and the samples themselves of one metric over repeats."""
    clean = [s for s in samples if not math.isnan(s)]
    if not clean:
        return {"median": None, "min": None, "max": None, "samples": list(samples)}
    return {
        "median": statistics.median(clean),
        "min": min(clean),
        "max": max(clean),
        "samples": list(samples),
    }


class LatencyRecorder:
    """Latencies (ns) from the emit stamp in an object to the moment :meth:`record` runs.

    ``record`` is called first thing in a handler; it reads the clock before touching the
    object so that parsing the stamp is not counted.
    """

    __slots__ = ("emitted", "samples")

    def __init__(self) -> None:
        self.samples: list[int] = []
        self.emitted: list[int] = []
        """The emit stamp of each sample, in the same order."""

    def record(self, obj: Any) -> None:
        now = time.monotonic_ns()
        emitted = int(obj["metadata"]["annotations"][EMITTED_ANNOTATION])
        self.samples.append(now - emitted)
        self.emitted.append(emitted)

    def steady(self, *, skip_fraction: float, emitted_since: int = 0) -> list[int]:
        """The samples without the first ``skip_fraction`` of them and without those of
        events emitted before ``emitted_since`` (``monotonic_ns``)."""
        start = int(len(self.samples) * skip_fraction)
        return [
            sample
            for sample, emitted in zip(self.samples[start:], self.emitted[start:], strict=True)
            if emitted >= emitted_since
        ]


class _Periodic:
    """A task running :meth:`_run` on the current loop while inside ``async with``."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        raise NotImplementedError

    def _stopped(self) -> None:
        """Called once the task has ended, before ``async with`` is left."""

    async def __aenter__(self) -> Self:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
        self._stopped()


class RssSampler(_Periodic):
    """Samples resident memory every ``period`` seconds while inside ``async with``."""

    def __init__(self, *, period: float = 0.1) -> None:
        super().__init__()
        self._period = period
        self.samples: list[tuple[float, int]] = []
        """``(seconds since start, rss bytes)`` pairs, in time order."""

    async def _run(self) -> None:
        started = time.monotonic()
        while True:
            self.samples.append((time.monotonic() - started, current_rss()))
            await asyncio.sleep(self._period)

    def _stopped(self) -> None:
        self.samples.append((self.samples[-1][0] if self.samples else 0.0, current_rss()))

    def summary(self) -> dict[str, float]:
        """RSS at start, at end and at most (MiB), and its growth over each half."""
        if not self.samples:
            return {}
        values = [rss for _, rss in self.samples]
        half = values[len(values) // 2]
        mib = 1024 * 1024
        return {
            "rss_start_mib": values[0] / mib,
            "rss_end_mib": values[-1] / mib,
            "rss_max_mib": max(values) / mib,
            "rss_growth_first_half_mib": (half - values[0]) / mib,
            "rss_growth_second_half_mib": (values[-1] - half) / mib,
        }


class BusyApplication(_Periodic):
    """Leaves ``objects`` small dicts, each in a reference cycle with a list, as garbage
    every ``period`` seconds while inside ``async with``.

    Requests, exceptions with tracebacks, closures and futures leave such cycles behind in
    any service, and only the cyclic collector frees them, so they make it run: about
    every 700 objects net of frees for the youngest generation, and the older ones in
    proportion. A pipeline that frees one object per object it keeps would otherwise
    never trigger a collection in a quiet benchmark, and then stall in a real process.
    """

    def __init__(self, *, period: float = 0.002, objects: int = 50) -> None:
        super().__init__()
        self._period = period
        self._objects = objects
        self.ticks = 0

    async def _run(self) -> None:
        while True:
            for index in range(self._objects):
                node: dict[str, Any] = {"index": index, "refs": []}
                node["refs"].append(node)
            self.ticks += 1
            await asyncio.sleep(self._period)


class LoopLagProbe(_Periodic):
    """How late the event loop wakes a task that sleeps ``period`` seconds at a time, while
    inside ``async with``.

    A wake-up due at ``t`` that runs at ``t + lag`` means the loop was busy for ``lag``:
    every other callback, request or handler that became ready then waited as long. The
    probe's own cost is one timer and one task step per period.
    """

    def __init__(self, *, period: float = 0.001) -> None:
        super().__init__()
        self._period = period
        self.lags: list[float] = []
        """Lateness of every wake-up, in seconds, in time order."""

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        period = self._period
        lags = self.lags
        while True:
            due = loop.time() + period
            await asyncio.sleep(period)
            lags.append(max(0.0, loop.time() - due))

    def summary(self) -> dict[str, float]:
        """The longest and the 99th-percentile lag, in ms."""
        return {
            "loop_lag_max_ms": max(self.lags) * 1e3 if self.lags else math.nan,
            "loop_lag_p99_ms": percentile(self.lags, 0.99) * 1e3,
        }


class CollectorWatch:
    """The cyclic collector's runs while inside ``with``: how many, how many were full
    (oldest generation), the longest one, and per generation how many and how long they
    took in all. Uses ``gc.callbacks``, as the independent harness does (its
    ``watch_gc_runs`` / ``watch_gc_s``)."""

    def __init__(self) -> None:
        self.collections = 0
        self.full_collections = 0
        self.longest = 0.0
        self.per_generation = [0, 0, 0]
        """Collections of generation 0, 1 and 2."""
        self.seconds = 0.0
        """Time spent in all of them."""
        self._started_at = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started_at = time.perf_counter()
            return
        took = time.perf_counter() - self._started_at
        self.longest = max(self.longest, took)
        self.seconds += took
        self.collections += 1
        generation = info.get("generation", 0)
        if 0 <= generation < len(self.per_generation):
            self.per_generation[generation] += 1
        if generation == 2:
            self.full_collections += 1

    def __enter__(self) -> CollectorWatch:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc_info: object) -> None:
        gc.callbacks.remove(self._callback)

    def summary(self) -> dict[str, float]:
        gen0, gen1, gen2 = self.per_generation
        return {
            "gc_collections": float(self.collections),
            "gc_full_collections": float(self.full_collections),
            "gc_longest_ms": self.longest * 1e3,
            "gc_gen0": float(gen0),
            "gc_gen1": float(gen1),
            "gc_gen2": float(gen2),
            "gc_ms": self.seconds * 1e3,
        }


@contextlib.asynccontextmanager
async def observed(figures: dict[str, float]) -> AsyncIterator[None]:
    """Watch the loop's lag, the collector's runs and the process's CPU over the block;
    their figures are added to ``figures`` when it ends.

    ``cpu_s`` is the process's CPU time (user and system, every thread) over the block,
    ``cpu_cores`` that over the block's wall time: the share of one core the measured side
    used while events flowed. The replay server runs in its own process, so it is not
    counted; the lag probe's own wake-ups are, on both sides alike.
    """
    probe = LoopLagProbe()
    collector = CollectorWatch()
    cpu_started = time.process_time()
    wall_started = time.perf_counter()
    with collector:
        async with probe:
            yield
    wall = time.perf_counter() - wall_started
    figures.update(probe.summary())
    figures.update(collector.summary())
    cpu = time.process_time() - cpu_started
    figures["cpu_s"] = cpu
    figures["cpu_cores"] = cpu / wall if wall > 0 else 0.0
