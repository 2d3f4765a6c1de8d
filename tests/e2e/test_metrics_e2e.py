"""Controller and REST client metrics end to end: ``PrometheusMetricsProvider`` installed
with ``set_metrics_provider`` on a registry of the test's own, then a client, an informer
(its LIST and open watch), a Controller reconciling over it and a few failing requests
against the fake API server; the exposed series must count what the server saw."""

from __future__ import annotations

import asyncio
import os
import socket
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
from prometheus_client import CollectorRegistry

from aioinformer._kernel.metrics import set_metrics_provider
from aioinformer.client import GVR, Client, ResourceInfo
from aioinformer.config import Config
from aioinformer.contrib.prometheus import PrometheusMetricsProvider
from aioinformer.errors import ConnectionFailed, NotFound, Requeue, ServerError
from aioinformer.factory import SharedInformerFactory
from aioinformer.indexer import split_meta_namespace_key
from aioinformer.operator.controller import Controller
from tests._support_metrics import restore_installed_provider  # noqa: F401
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from pathlib import Path

    from aioinformer.testing import FakeAPIServer


def config_map(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"v": "1"},
    }


@pytest.fixture
def registry(restore_installed_provider: None) -> CollectorRegistry:  # noqa: F811
    registry = CollectorRegistry()
    set_metrics_provider(PrometheusMetricsProvider(registry=registry))
    return registry


def samples(registry: CollectorRegistry, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample called ``name``, by its sorted labels."""
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name == name
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_requests_count_by_code_and_method_and_time_by_verb_and_host(
    fake_apiserver: FakeAPIServer, registry: CollectorRegistry
) -> None:
    fake_apiserver.create(config_map("a"))
    async with fake_apiserver.client() as client:
        host = urlsplit(client.config.host).netloc
        config_maps = client.resource("v1/configmaps", namespace="default")
        factory = SharedInformerFactory(client, namespace="default")
        informer = factory.informer_for("v1/configmaps")
        async with factory:
            assert await informer.wait_for_sync(timeout=10)
            await fake_apiserver.wait_for_watchers(1)
            # Every request so far was a GET answered 200: discovery, the list and the
            # watch, which counted once its headers arrived and is still open.
            gets = [r for r in fake_apiserver.request_log if r.method == "GET"]
            watches = [r for r in gets if r.query.get("watch") in ("1", "true")]
            assert watches
            requests = samples(registry, "rest_client_requests_total")
            assert requests == {(("code", "200"), ("host", host), ("method", "GET")): len(gets)}
            durations = samples(registry, "rest_client_request_duration_seconds_count")
            assert durations == {(("host", host), ("verb", "GET")): len(gets) - len(watches)}

            fake_apiserver.faults.fail_next(status=404, resource="configmaps", verb="get")
            with pytest.raises(NotFound):
                await config_maps.get("a")
            fake_apiserver.faults.fail_next(status=500, resource="configmaps", verb="get")
            with pytest.raises(ServerError):
                await config_maps.get("a")
            await config_maps.create(config_map("b"))
            await config_maps.patch("b", {"data": {"v": "2"}})

    requests = samples(registry, "rest_client_requests_total")
    assert requests[("code", "404"), ("host", host), ("method", "GET")] == 1
    assert requests[("code", "500"), ("host", host), ("method", "GET")] == 1
    assert requests[("code", "201"), ("host", host), ("method", "POST")] == 1
    assert requests[("code", "200"), ("host", host), ("method", "PATCH")] == 1
    durations = samples(registry, "rest_client_request_duration_seconds_count")
    assert durations[("host", host), ("verb", "GET")] == len(gets) - len(watches) + 2
    assert durations[("host", host), ("verb", "POST")] == 1
    assert durations[("host", host), ("verb", "PATCH")] == 1


async def test_a_request_without_an_answer_counts_as_error(registry: CollectorRegistry) -> None:
    port = free_port()  # nothing listens there any more
    config_maps = ResourceInfo(GVR("", "v1", "configmaps"), "ConfigMap", namespaced=True)
    async with Client(Config(host=f"http://127.0.0.1:{port}", token="t")) as client:
        with pytest.raises(ConnectionFailed):
            await client.resource(config_maps).get("a", "default")
    host = f"127.0.0.1:{port}"
    assert samples(registry, "rest_client_requests_total") == {
        (("code", "<error>"), ("host", host), ("method", "GET")): 1
    }
    durations = samples(registry, "rest_client_request_duration_seconds_count")
    assert durations == {(("host", host), ("verb", "GET")): 1}


async def test_a_controller_over_the_fake_reports_controller_runtime_s_series(
    fake_apiserver: FakeAPIServer, registry: CollectorRegistry
) -> None:
    for name in ("ok", "stale", "later", "missing"):
        fake_apiserver.create(config_map(name))
    async with fake_apiserver.client() as client:
        config_maps = client.resource("v1/configmaps")
        factory = SharedInformerFactory(client, namespace="default")
        informer = factory.informer_for("v1/configmaps")
        seen: set[str] = set()

        async def reconcile(key: str) -> Requeue | None:
            namespace, name = split_meta_namespace_key(key)
            first = key not in seen
            seen.add(key)
            if name == "stale" and first:  # a write from an old copy: a real 409
                old = {**config_map(name), "metadata": {**config_map(name)["metadata"]}}
                old["metadata"]["resourceVersion"] = "1"
                await config_maps.update(old, namespace)
            if name == "later" and first:
                return Requeue(after=3600)
            if name == "missing" and first:
                await config_maps.get("does-not-exist", namespace)  # a real 404
            return None

        controller = Controller("configmaps", reconcile, informers=[informer], workers=2)
        async with factory, controller:
            # Each key once; stale and missing once more after their rate-limited retry.
            await wait_until(lambda: controller.statistics().reconciles == 6, timeout=10)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, {"controller": "configmaps", **labels})

    assert value("controller_runtime_reconcile_total", result="success") == 3
    assert value("controller_runtime_reconcile_total", result="error") == 1  # the 404
    assert value("controller_runtime_reconcile_total", result="requeue") == 1  # the 409
    assert value("controller_runtime_reconcile_total", result="requeue_after") == 1
    assert value("controller_runtime_reconcile_errors_total") == 1
    assert value("controller_runtime_reconcile_time_seconds_count") == 6
    assert value("controller_runtime_max_concurrent_reconciles") == 2
    assert value("controller_runtime_active_workers") == 0
    requests = samples(registry, "rest_client_requests_total")
    assert sum(v for k, v in requests.items() if ("code", "409") in k) == 1
    assert sum(v for k, v in requests.items() if ("code", "404") in k) == 1


async def test_a_401_refreshed_and_retried_counts_both_attempts_and_one_duration(
    registry: CollectorRegistry, fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("token-aaaa")
    os.utime(token_file, ns=(10**9, 10**9))
    fake_apiserver.add_token("token-aaaa")
    fake_apiserver.add_token("token-bbbb")
    pods = ResourceInfo(GVR("", "v1", "pods"), "Pod", namespaced=True)
    async with Client(Config(host=fake_apiserver.url, token_file=str(token_file))) as client:
        await client.resource(pods, namespace="default").list()
        # Rotated with the same size and mtime: only the 401 makes the client read it.
        fake_apiserver.remove_token("token-aaaa")
        token_file.write_text("token-bbbb")
        os.utime(token_file, ns=(10**9, 10**9))
        await client.resource(pods, namespace="default").list()
    host = urlsplit(fake_apiserver.url).netloc
    assert samples(registry, "rest_client_requests_total") == {
        (("code", "200"), ("host", host), ("method", "GET")): 2,
        (("code", "401"), ("host", host), ("method", "GET")): 1,
    }
    durations = samples(registry, "rest_client_request_duration_seconds_count")
    assert durations == {(("host", host), ("verb", "GET")): 2}  # two requests, three attempts


async def test_a_request_cancelled_before_its_answer_is_not_counted(
    fake_apiserver: FakeAPIServer, registry: CollectorRegistry
) -> None:
    async with fake_apiserver.client() as client:
        config_maps = client.resource("v1/configmaps", namespace="default")
        await config_maps.info()  # discovery first, answered
        counted = samples(registry, "rest_client_requests_total")
        timed = samples(registry, "rest_client_request_duration_seconds_count")
        fake_apiserver.faults.latency(3600)  # on the server's clock: no answer comes
        sent = len(fake_apiserver.request_log)
        task = asyncio.get_running_loop().create_task(config_maps.get("a"))
        await wait_until(lambda: len(fake_apiserver.request_log) > sent, timeout=10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        fake_apiserver.faults.latency(0)
    assert samples(registry, "rest_client_requests_total") == counted
    assert samples(registry, "rest_client_request_duration_seconds_count") == timed
