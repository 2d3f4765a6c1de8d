"""Micro-benchmark of what the controller and REST client metrics cost.

Measures, with ``prometheus_client`` as the backend (a registry of the run's own):

* a :class:`~aioinformer.operator.controller.Controller` reconciling ``--n`` distinct keys with a
  reconcile that does nothing, one worker: with no provider, with the workqueue's metrics
  only, and with the workqueue's and the controller's (``controller_runtime_*``), so the
  difference between the last two is what the reconcile metrics add per reconcile;
* the REST client recorder alone, as the HTTP layer calls it for one request whose answer
  is read whole (answered, then finished: a counter, the URL template, a histogram);
* for scale, one GET of a ConfigMap through the client against the fake API server on
  127.0.0.1, without and with the provider.

Times are CPU time of this process per operation, the best of ``--repeat`` rounds.
Run ``python bench/micro_metrics.py [--n N] [--repeat R]``; it prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from aioinformer._kernel.clock import default_clock
from aioinformer._kernel.metrics import set_metrics_provider
from aioinformer.client._metrics import new_rest_client_metrics
from aioinformer.contrib.prometheus import PrometheusMetricsProvider
from aioinformer.operator.controller import Controller
from aioinformer.testing import FakeAPIServer

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer._kernel.metrics import AnyMetricsProvider, HistogramMetric
    from aioinformer.workqueue import CounterMetric, GaugeMetric, SettableGaugeMetric


class WorkqueueMetricsOnly:
    """The workqueue half of a Prometheus provider: the controller records nothing."""

    def __init__(self, provider: PrometheusMetricsProvider) -> None:
        self._provider = provider

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self._provider.new_depth_metric(name)

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self._provider.new_adds_metric(name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self._provider.new_latency_metric(name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self._provider.new_work_duration_metric(name)

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._provider.new_unfinished_work_seconds_metric(name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._provider.new_longest_running_processor_seconds_metric(name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self._provider.new_retries_metric(name)


async def _reconcile_keys(n: int) -> float:
    done = asyncio.Event()
    count = 0

    def reconcile(_key: str) -> None:
        nonlocal count
        count += 1
        if count == n:
            done.set()

    controller = Controller("bench", reconcile)
    for index in range(n):
        controller.enqueue(f"default/cm-{index}")
    started = time.process_time()
    async with controller:
        await done.wait()
    return (time.process_time() - started) / n


def controller_round(n: int, provider: AnyMetricsProvider | None) -> float:
    set_metrics_provider(provider)
    try:
        return asyncio.run(_reconcile_keys(n))
    finally:
        set_metrics_provider(None)


def recorder_round(n: int, provider: PrometheusMetricsProvider | None) -> float:
    return asyncio.run(_record_requests(n, provider))


async def _record_requests(n: int, provider: PrometheusMetricsProvider | None) -> float:
    # On the loop's clock, as the HTTP layer reads it.
    metrics = new_rest_client_metrics("https://10.0.0.1:6443", provider, clock=default_clock)
    path = "/api/v1/namespaces/default/configmaps/cm-1"
    query = {"fieldManager": "bench"}
    started = time.process_time()
    for _ in range(n):
        begun = metrics.started()
        metrics.answered("GET", 200)
        metrics.finished("GET", path, query, begun)
    return (time.process_time() - started) / n


async def _gets(n: int) -> float:
    async with FakeAPIServer() as server:
        server.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm-1", "namespace": "default"},
            }
        )
        async with server.client() as client:
            config_maps = client.resource("v1/configmaps", namespace="default")
            await config_maps.get("cm-1")  # discovery and the connection, untimed
            started = time.process_time()
            for _ in range(n):
                await config_maps.get("cm-1")
            return (time.process_time() - started) / n


def get_round(n: int, provider: PrometheusMetricsProvider | None) -> float:
    set_metrics_provider(provider)
    try:
        return asyncio.run(_gets(n))
    finally:
        set_metrics_provider(None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="reconciles (default 20000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (best kept)")
    args = parser.parse_args()
    n: int = args.n
    gets = max(1, n // 10)

    def prometheus() -> PrometheusMetricsProvider:
        return PrometheusMetricsProvider(registry=CollectorRegistry())

    rows: list[tuple[str, str, Callable[[], float]]] = [
        ("controller, no provider", "reconcile", lambda: controller_round(n, None)),
        (
            "controller, workqueue metrics only",
            "reconcile",
            lambda: controller_round(n, WorkqueueMetricsOnly(prometheus())),
        ),
        (
            "controller, workqueue + reconcile metrics",
            "reconcile",
            lambda: controller_round(n, prometheus()),
        ),
        ("request recorder, no provider", "request", lambda: recorder_round(n, None)),
        ("request recorder, Prometheus", "request", lambda: recorder_round(n, prometheus())),
        ("GET through the client, no provider", "request", lambda: get_round(gets, None)),
        ("GET through the client, Prometheus", "request", lambda: get_round(gets, prometheus())),
    ]
    best = [float("inf")] * len(rows)
    for _ in range(args.repeat):
        for index, (_, _, run) in enumerate(rows):
            gc.collect()
            best[index] = min(best[index], run())
    print(f"{n} reconciles, {n} recorded requests, {gets} GETs; best of {args.repeat}\n")
    print("| what | per | µs CPU |")
    print("|---|---|---:|")
    for (name, unit, _), seconds in zip(rows, best, strict=True):
        print(f"| {name} | {unit} | {seconds * 1e6:.2f} |")


if __name__ == "__main__":
    main()
