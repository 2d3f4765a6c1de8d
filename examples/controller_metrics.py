"""Reconcile and API request metrics under controller-runtime's and client-go's names.

One call turns every metric on: ``set_metrics_provider(PrometheusMetricsProvider())``,
before the client and the controllers exist; a :class:`~aioinformer.manager.Manager`
with ``metrics_address`` serves them on ``/metrics``. A controller then reports
``controller_runtime_reconcile_total`` (by ``result``), ``_errors_total``,
``_time_seconds``, ``controller_runtime_active_workers`` and
``controller_runtime_max_concurrent_reconciles``, and the client
``rest_client_requests_total`` (by ``code`` and ``method``) and
``rest_client_request_duration_seconds``: the series a Go operator exports, so its
dashboards and alerts work unchanged.

Runs against the embedded fake API server. A controller looks at five ConfigMaps: two
reconcile at once (``success``); ``flaky`` fails once and succeeds on its retry
(``error``, then ``success``); ``stale`` writes from an old copy once, which the server
refuses with a 409 that the controller retries quietly (``requeue``); ``later`` asks to be
looked at again in an hour (``requeue_after``). Then it reads ``/metrics`` and prints the
controller's series and the requests that did not answer 2xx::

    python examples/controller_metrics.py
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp

from aioinformer import set_metrics_provider, split_meta_namespace_key
from aioinformer.contrib.prometheus import PrometheusMetricsProvider
from aioinformer.operator import Controller, Manager, Requeue
from aioinformer.testing import FakeAPIServer, eventually

NAMES = ("app", "db", "flaky", "stale", "later")


def config_map(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"owner": "team-a"},
    }


async def demo() -> None:
    # Before the client and the controllers: each reads the provider as it is created.
    set_metrics_provider(PrometheusMetricsProvider())
    async with FakeAPIServer() as server, server.client() as client:
        for name in NAMES:
            server.create(config_map(name))
        manager = Manager(client, namespace="default", metrics_address="127.0.0.1:0")
        config_maps = manager.informer_for("configmaps")
        api = client.resource("configmaps")
        attempts: dict[str, int] = {}

        async def reconcile(key: str) -> Requeue | None:
            namespace, name = split_meta_namespace_key(key)
            attempts[name] = attempts.get(name, 0) + 1
            first = attempts[name] == 1
            if name == "flaky" and first:
                raise RuntimeError("the upstream it calls is down")
            if name == "stale" and first:
                old = config_map(name)
                old["metadata"]["resourceVersion"] = "1"  # an old copy: the server says 409
                await api.update(old, namespace)
            if name == "later":
                return Requeue(after=3600)
            return None

        controller = Controller("owners", reconcile, informers=[config_maps], workers=2)
        manager.add(controller)
        async with manager:
            # app, db, later once; flaky and stale twice (their retries succeed).
            await eventually(lambda: controller.statistics().reconciles == 7, timeout=10)
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"http://{manager.metrics_address}/metrics") as response,
            ):
                exposition = await response.text()
    set_metrics_provider(None)

    for line in exposition.splitlines():
        if line.startswith(
            (
                "controller_runtime_reconcile_total{",
                "controller_runtime_reconcile_errors_total{",
                "controller_runtime_max_concurrent_reconciles{",
                "controller_runtime_active_workers{",
            )
        ):
            print(line)
        elif line.startswith("rest_client_requests_total{") and 'code="2' not in line:
            labels, value = line.removeprefix("rest_client_requests_total").rsplit(" ", 1)
            code = labels.split('code="')[1].split('"')[0]
            method = labels.split('method="')[1].split('"')[0]
            print(f"requests answered {code} to {method}: {float(value):g}")
    gets = sum(
        float(line.rsplit(" ", 1)[1])
        for line in exposition.splitlines()
        if line.startswith("rest_client_request_duration_seconds_count{") and 'verb="GET"' in line
    )
    print("GET requests timed:", gets > 0)


if __name__ == "__main__":
    logging.basicConfig(level=logging.CRITICAL)  # the failures above are on purpose
    asyncio.run(demo())
