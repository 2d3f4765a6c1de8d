"""Measuring tools shared by the scenarios: memory, latency samples, summaries.

* :func:`current_rss` / :func:`peak_rss` — resident memory of this process, in bytes (the
  peak is the kernel's high-water mark, which is why every measured case runs in a fresh
  process).
* :func:`deep_size` — the logical size of objects (what a cache entry holds).
* :class:`LatencyRecorder` — collects ``monotonic_ns`` differences between the server's
  emit stamp and the moment a handler was entered.
* :class:`RssSampler` — samples :func:`current_rss` on a period while a scenario runs.
* :func:`summarize` / :func:`percentile` — median and spread over repeats, percentiles over
  samples.
"""

from __future__ import annotations

import asyncio
import gc
import math
import os
import resource
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any

from bench.objects import EMITTED_ANNOTATION

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from types import TracebackType

__all__ = [
    "LatencyRecorder",
    "RssSampler",
    "current_rss",
    "deep_size",
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

    __slots__ = ("samples",)

    def __init__(self) -> None:
        self.samples: list[int] = []

    def record(self, obj: Any) -> None:
        now = time.monotonic_ns()
        self.samples.append(now - int(obj["metadata"]["annotations"][EMITTED_ANNOTATION]))


class RssSampler:
    """Samples resident memory every ``period`` seconds while inside ``async with``."""

    def __init__(self, *, period: float = 0.1) -> None:
        self._period = period
        self._task: asyncio.Task[None] | None = None
        self.samples: list[tuple[float, int]] = []
        """``(seconds since start, rss bytes)`` pairs, in time order."""

    async def _run(self) -> None:
        started = time.monotonic()
        while True:
            self.samples.append((time.monotonic() - started, current_rss()))
            await asyncio.sleep(self._period)

    async def __aenter__(self) -> RssSampler:
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
