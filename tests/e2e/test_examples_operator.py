"""The controller examples, exercised: the Widget operator, the FastAPI service and its
``/readyz``, and the user-facing test file that shows our pytest fixtures.

The example modules are loaded from ``examples/`` by path (the directory is not a
package); the user-facing test file runs in its own pytest process, as a user runs it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from aioinformer import State
from aioinformer.factory import SharedInformerFactory
from aioinformer.operator.recorder import EventRecorder
from aioinformer.reflector import ReflectorState
from aioinformer.testing import FakeAPIServer
from aioinformer.testing.clock import FakeClock
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from types import ModuleType

    from aioinformer.client import Client

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` as module ``examples_<name>`` (once)."""
    module_name = f"examples_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # pydantic resolves the models' annotations here
    spec.loader.exec_module(module)
    return module


widget_operator = load_example("widget_operator")
fastapi_app = load_example("fastapi_app")


# The truth is on the server, behind socket I/O: a short real sleep between checks lets
# the loop's selector run.
SERVER_POLL = 0.005


def config_maps(server: FakeAPIServer) -> dict[str, dict[str, Any]]:
    return {obj["metadata"]["name"]: obj for obj in server.objects("configmaps", "default")}


async def test_the_sharded_demo_shares_the_widgets_and_hands_a_share_over(
    capsys: pytest.CaptureFixture[str],
) -> None:
    await widget_operator.sharded_demo()
    out = capsys.readouterr().out
    assert "widgets per replica: a: 5, b: 4, c: 3" in out
    assert "each ConfigMap on its Widget's replica: 12" in out
    assert "b stopped; widgets per replica: a: 9, c: 3" in out
    assert "w10 (was b's) edited; its new replica updated its ConfigMap: ('a', 'a')" in out


# -- the operator ------------------------------------------------------------------------


@pytest.fixture
def crd_server(fake_apiserver: FakeAPIServer) -> FakeAPIServer:
    fake_apiserver.register_crd("example.com", "v1", "widgets", "Widget")
    return fake_apiserver


async def test_the_operator_demo_runs_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    await widget_operator.demo()
    out = capsys.readouterr().out
    assert "created: {'bye-config': {'greeting': 'Goodbye', 'size': '2'}, " in out
    assert (
        'refused by the webhook: widgets.example.com "huge" is forbidden: admission webhook'
        ' "vwidget.example.com" denied the request: spec.size must be at most 10, not 50'
    ) in out
    assert "status: {'observedGeneration': 1, 'configMap': 'hello-config'}" in out
    assert "widget edited: {'greeting': 'Hello, world', 'size': '1'}" in out
    assert "ConfigMap edited by hand, repaired: {'greeting': 'Goodbye', 'size': '2'}" in out
    assert "ConfigMap deleted by hand, recreated: ['bye-config', 'hello-config']" in out
    assert "finalizers: ['example.com/cleanup']" in out
    assert "widget deleted, after cleanup: ['hello-config']" in out
    assert "failures: 0" in out
    assert "event: ('bye', 'Deleted', 'deleted ConfigMap bye-config', 1)" in out
    assert "event: ('hello', 'Updated', 'updated ConfigMap hello-config', 1)" in out


async def test_the_operator_on_a_manager_creates_reconciles_finalizes_and_records_events(
    crd_server: FakeAPIServer, kube_client: Client
) -> None:
    crd_server.create(widget_operator.widget("w", "hello"))
    recorder = EventRecorder(kube_client, reporting_controller=widget_operator.REPORTING_CONTROLLER)
    manager, operator = widget_operator.build_manager(kube_client, recorder)
    async with recorder, manager:
        # create -> reconcile: finalizer added, ConfigMap created and owned, status recorded
        await wait_until(
            lambda: widget_operator.widget_status(crd_server, "w").get("configMap") == "w-config",
            poll=SERVER_POLL,
            timeout=10,
        )
        stored = crd_server.get("example.com/v1/widgets", "default", "w")
        assert stored["metadata"]["finalizers"] == [widget_operator.FINALIZER]
        owner = config_maps(crd_server)["w-config"]["metadata"]["ownerReferences"][0]
        assert (owner["name"], owner["uid"]) == ("w", stored["metadata"]["uid"])

        # delete -> the finalizer's cleanup deletes the ConfigMap, then the Widget goes
        crd_server.delete("example.com/v1/widgets", "default", "w")
        await wait_until(
            lambda: widget_operator.widget_names(crd_server) == [], poll=SERVER_POLL, timeout=10
        )
        assert "w-config" not in config_maps(crd_server)
        assert manager.is_leader  # no election configured: the manager runs its controllers
    # The recorder flushed on close: every Event is on the server.
    events = widget_operator.recorded_events(crd_server)
    assert [(name, reason) for name, reason, _, _ in events] == [
        ("w", "Created"),
        ("w", "Deleted"),
    ]
    assert operator.controller.statistics().failures == 0


async def test_the_operator_creates_an_owned_config_map_per_widget(
    crd_server: FakeAPIServer, kube_client: Client
) -> None:
    for name in ("a", "b", "c"):
        crd_server.create(widget_operator.widget(name, f"hi {name}", size=2))
    factory = SharedInformerFactory(kube_client)
    operator = widget_operator.WidgetOperator(kube_client, factory, workers=3)
    async with factory, operator.controller:
        await wait_until(lambda: len(config_maps(crd_server)) == 3, poll=SERVER_POLL, timeout=10)
        assert operator.controller.state is State.RUNNING
    for name in ("a", "b", "c"):
        cm = config_maps(crd_server)[f"{name}-config"]
        assert cm["data"] == {"greeting": f"hi {name}", "size": "2"}
        assert cm["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "widget-operator"}
        owner = cm["metadata"]["ownerReferences"][0]
        uid = crd_server.get("example.com/v1/widgets", "default", name)["metadata"]["uid"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Widget",
            name,
            uid,
            True,
        )
        assert crd_server.get("example.com/v1/widgets", "default", name)["status"] == {
            "observedGeneration": 1,
            "configMap": f"{name}-config",
        }
    assert operator.controller.statistics().failures == 0


async def test_the_operator_records_the_generation_it_acted_on_in_the_status(
    crd_server: FakeAPIServer, kube_client: Client
) -> None:
    crd_server.create(widget_operator.widget("w", "hello"))
    factory = SharedInformerFactory(kube_client)
    operator = widget_operator.WidgetOperator(kube_client, factory)

    def status() -> dict[str, Any]:
        found = crd_server.get("example.com/v1/widgets", "default", "w")
        current: dict[str, Any] = found.get("status", {})
        return current

    async with factory, operator.controller:
        await wait_until(
            lambda: status().get("observedGeneration") == 1, poll=SERVER_POLL, timeout=10
        )
        crd_server.patch("example.com/v1/widgets", "default", "w", {"spec": {"size": 3}})
        await wait_until(
            lambda: status().get("observedGeneration") == 2, poll=SERVER_POLL, timeout=10
        )
        assert config_maps(crd_server)["w-config"]["data"]["size"] == "3"
    stored = crd_server.get("example.com/v1/widgets", "default", "w")
    # The status writes went through the status subresource: the spec and generation
    # are the user's alone.
    assert stored["spec"] == {"greeting": "hello", "size": 3}
    assert stored["metadata"]["generation"] == 2
    assert stored["status"] == {"observedGeneration": 2, "configMap": "w-config"}
    status_writes = [
        r
        for r in crd_server.request_log
        if r.method == "PATCH" and r.path.endswith("/widgets/w/status")
    ]
    assert status_writes
    # The one write to the Widget itself added the operator's finalizer.
    main_writes = [
        r for r in crd_server.request_log if r.method in ("PUT", "PATCH") and r.path.endswith("/w")
    ]
    assert len(main_writes) == 1
    assert stored["metadata"]["finalizers"] == [widget_operator.FINALIZER]


async def test_the_operator_restores_a_config_map_patched_by_hand(
    crd_server: FakeAPIServer, kube_client: Client
) -> None:
    crd_server.create(widget_operator.widget("w", "hello"))
    factory = SharedInformerFactory(kube_client)
    operator = widget_operator.WidgetOperator(kube_client, factory)
    async with factory, operator.controller:
        await wait_until(
            lambda: "w-config" in config_maps(crd_server), poll=SERVER_POLL, timeout=10
        )
        crd_server.patch("configmaps", "default", "w-config", {"data": {"greeting": "nope"}})
        await wait_until(
            lambda: config_maps(crd_server)["w-config"]["data"]["greeting"] == "hello",
            poll=SERVER_POLL,
            timeout=10,
        )


async def test_the_operator_requeues_later_when_the_name_is_taken(
    crd_server: FakeAPIServer, kube_client: Client
) -> None:
    crd_server.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w-config"}, "data": {}}
    )
    crd_server.create(widget_operator.widget("w", "hello"))
    factory = SharedInformerFactory(kube_client)
    operator = widget_operator.WidgetOperator(kube_client, factory, recheck_after=120)
    async with factory, operator.controller:
        await wait_until(
            lambda: operator.controller.statistics().requeues == 1, poll=SERVER_POLL, timeout=10
        )
        stats = operator.controller.statistics()
        assert (stats.failures, stats.queue.delayed) == (0, 1)
    assert config_maps(crd_server)["w-config"]["data"] == {}


async def test_the_operators_reconcile_of_a_deleted_widget_cleans_up_through_its_finalizer(
    crd_server: FakeAPIServer, kube_client: Client
) -> None:
    crd_server.create(widget_operator.widget("w", "hello"))
    factory = SharedInformerFactory(kube_client)
    operator = widget_operator.WidgetOperator(kube_client, factory)
    async with factory:
        await factory.wait_for_cache_sync(timeout=10)
        assert await operator.reconcile("default/w") is None
        stored = crd_server.get("example.com/v1/widgets", "default", "w")
        assert stored["metadata"]["finalizers"] == [widget_operator.FINALIZER]
        await wait_until(
            lambda: operator.config_maps.lister().get("w-config", "default") is not None,
            poll=SERVER_POLL,
            timeout=10,
        )
        # The finalizer holds the Widget: deleting it only marks it.
        crd_server.delete("example.com/v1/widgets", "default", "w")
        assert crd_server.get("example.com/v1/widgets", "default", "w")["metadata"][
            "deletionTimestamp"
        ]
        await wait_until(
            lambda: operator.widgets.lister().get("w", "default").metadata.deletion_timestamp,
            poll=SERVER_POLL,
            timeout=10,
        )
        outcome = await operator.reconcile("default/w")
    assert outcome is None
    assert "w-config" not in config_maps(crd_server)
    # Cleanup done, the finalizer removed: the server let the Widget go.
    assert not crd_server.objects("example.com/v1/widgets", "default")


async def test_the_operator_reads_its_own_writes_back_through_a_lagging_watch() -> None:
    # The ConfigMap watch lags: without waiting for its cache, the reconcile the status
    # write wakes would find no ConfigMap, create it again and requeue on AlreadyExists.
    clock = FakeClock()
    async with FakeAPIServer(clock=clock) as server, server.client() as client:
        server.register_crd("example.com", "v1", "widgets", "Widget")
        server.create(widget_operator.widget("w", "hello"))
        server.faults.delay_watch_events(5.0, resource="configmaps")
        factory = SharedInformerFactory(client)
        operator = widget_operator.WidgetOperator(client, factory)

        def status() -> dict[str, Any]:
            return widget_operator.widget_status(server, "w")  # type: ignore[no-any-return]

        async with factory, operator.controller:
            await wait_until(
                lambda: status().get("configMap") == "w-config",
                poll=SERVER_POLL,
                timeout=10,
                between=lambda: clock.advance(1.0),
            )
            await wait_until(
                lambda: (
                    operator.controller.statistics().queue.depth == 0
                    and operator.controller.statistics().queue.processing == 0
                ),
                poll=SERVER_POLL,
                timeout=10,
            )
            stats = operator.controller.statistics()
        creates = [
            r for r in server.request_log if r.method == "POST" and r.path.endswith("/configmaps")
        ]
        assert len(creates) == 1
        assert (stats.requeues, stats.failures) == (0, 0)


# -- the FastAPI service -----------------------------------------------------------------


def pod(name: str, **labels: str) -> dict[str, Any]:
    return fastapi_app.pod(name, **labels)  # type: ignore[no-any-return]


@pytest.fixture
async def service(
    fake_apiserver: FakeAPIServer, fake_clock: FakeClock
) -> AsyncIterator[httpx.AsyncClient]:
    """The app, started (lifespan entered) with informers on ``fake_clock``, behind an
    httpx client on the ASGI transport."""
    app = fastapi_app.create_app(fake_apiserver.client, clock=fake_clock)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://service") as http,
    ):
        yield http


async def wait_ready(http: httpx.AsyncClient, status: int = 200) -> dict[str, Any]:
    responses: list[httpx.Response] = []

    async def answers_status() -> bool:
        responses.append(await http.get("/readyz"))
        return responses[-1].status_code == status

    await wait_until(answers_status, poll=SERVER_POLL, timeout=10, what=f"/readyz answers {status}")
    body: dict[str, Any] = responses[-1].json()
    return body


async def test_the_fastapi_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    await fastapi_app.demo()
    out = capsys.readouterr().out
    assert "readyz: 200 True" in out
    assert "pods app=web: ['web-0', 'web-1']" in out
    assert "db-0 labels: {'app': 'db'}" in out
    assert "nope: 404" in out


@pytest.mark.fake_apiserver(clock=FakeClock())
async def test_readyz_is_503_until_the_informers_have_synced(
    fake_apiserver: FakeAPIServer,
) -> None:
    server_clock = fake_apiserver.clock
    assert isinstance(server_clock, FakeClock)
    fake_apiserver.create(pod("web-0"))
    fake_apiserver.faults.latency(5)  # every request waits 5 s of the server's clock
    app = fastapi_app.create_app(fake_apiserver.client)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://service") as http,
    ):
        await server_clock.wait_for_sleepers(1)  # a request hangs in the server
        response = await http.get("/readyz")
        assert response.status_code == 503
        assert response.json()["informers"]["v1/pods"]["synced"] is False
        assert (await http.get("/pods")).json() == []
        assert (await http.get("/livez")).status_code == 200

        fake_apiserver.faults.latency(0)
        await server_clock.advance(5)
        body = await wait_ready(http)
        pods = body["informers"]["v1/pods"]
        # The app's informers run on the loop's clock: how long ago they heard is real.
        since, window = pods.pop("seconds_since_heard"), pods.pop("liveness_window")
        assert 0.0 <= since <= window
        assert pods == {
            "name": "v1/pods",
            "resource": "v1/pods",
            "namespace": None,
            "started": True,
            "stopped": False,
            "synced": True,
            "live": True,
            "state": "WATCHING",
            "last_error": None,
            "relists": 0,
            "watch_restarts": 0,
            "cache_size": 1,
            "index_errors": 0,
            "unindexed": 0,
            "last_index_error": None,
        }
        assert [p["name"] for p in (await http.get("/pods")).json()] == ["web-0"]


async def test_readyz_is_503_while_a_watch_is_down(
    fake_apiserver: FakeAPIServer, service: httpx.AsyncClient, fake_clock: FakeClock
) -> None:
    await wait_ready(service)
    await fake_apiserver.faults.refuse_connections()
    body = await wait_ready(service, status=503)
    states = {name: detail["state"] for name, detail in body["informers"].items()}
    assert ReflectorState.BACKING_OFF.value in states.values()
    assert all(detail["synced"] for detail in body["informers"].values())

    await fake_apiserver.faults.accept_connections()
    await fake_clock.advance(60)  # every backoff runs out; the reflectors watch again
    await wait_ready(service)


async def test_endpoints_answer_from_the_listers(
    fake_apiserver: FakeAPIServer, service: httpx.AsyncClient
) -> None:
    fake_apiserver.create(pod("web-0", app="web"))
    fake_apiserver.create(pod("db-0", app="db"))
    await wait_ready(service)
    await wait_until(lambda: len(fake_apiserver.request_log) > 0, poll=SERVER_POLL, timeout=10)
    requests_before = len(fake_apiserver.request_log)

    listed = (await service.get("/pods", params={"namespace": "default"})).json()
    assert [(p["namespace"], p["name"]) for p in listed] == [
        ("default", "db-0"),
        ("default", "web-0"),
    ]
    selected = (await service.get("/pods", params={"selector": "app=db"})).json()
    assert [p["name"] for p in selected] == ["db-0"]
    one = await service.get("/pods/default/web-0")
    assert one.json()["metadata"]["labels"] == {"app": "web"}
    assert "managedFields" not in one.json()["metadata"]
    assert (await service.get("/pods/default/nope")).status_code == 404
    assert (await service.get("/secrets")).status_code == 404
    assert (await service.get("/pods", params={"selector": "app in (("})).status_code == 400
    assert len(fake_apiserver.request_log) == requests_before  # nothing reached the server

    fake_apiserver.create(pod("web-1", app="web"))  # the watch brings it into the cache

    async def served() -> bool:
        return (await service.get("/pods/default/web-1")).status_code == 200

    await wait_until(served, poll=SERVER_POLL, timeout=10)


# -- the user-facing test file -----------------------------------------------------------


@pytest.mark.slow
def test_the_user_facing_example_tests_pass_in_their_own_pytest_run() -> None:
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(EXAMPLES / "test_with_fake_apiserver.py"),
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        capture_output=True,
        text=True,
        timeout=90,  # under the test's own 120 s, so a hang reports as this subprocess's
        env=env,
        check=False,
        cwd=EXAMPLES.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "8 passed" in result.stdout


async def test_readyz_is_503_while_every_watch_is_frozen_and_200_once_rewatched(
    fake_apiserver: FakeAPIServer, service: httpx.AsyncClient, fake_clock: FakeClock
) -> None:
    # Issue 15's acceptance, with default settings: the TCP path of every watch dies
    # without a FIN (no bytes, no bookmarks); the informers' clock is the fake one.
    fake_apiserver.create(pod("web-0"))
    await wait_ready(service)
    await fake_apiserver.wait_for_watchers(2)  # pods and configmaps
    assert fake_apiserver.faults.freeze_watches() == 2
    fake_apiserver.create(pod("web-1"))  # missed while frozen

    await fake_clock.advance(60.0)  # an idle watch's bookmark interval: still live
    assert (await service.get("/readyz")).status_code == 200
    await fake_clock.advance(35.0)  # past the 90 s liveness window, short of the deadline
    response = await service.get("/readyz")
    assert response.status_code == 503
    informers = response.json()["informers"].values()
    assert all(not detail["live"] and detail["synced"] for detail in informers)
    assert all(detail["state"] == ReflectorState.WATCHING.value for detail in informers)
    assert (await service.get("/livez")).status_code == 200  # stale is not dead
    assert [p["name"] for p in (await service.get("/pods")).json()] == ["web-0"]

    await fake_clock.advance(35.0)  # past the 120 s deadline: every watch re-opened
    await fake_apiserver.faults.wait_for("frozen_watch_closed", 2, timeout=10)
    body = await wait_ready(service)
    assert all(detail["watch_restarts"] == 1 for detail in body["informers"].values())
    assert all(detail["relists"] == 0 for detail in body["informers"].values())

    async def web_1_cached() -> bool:
        return [p["name"] for p in (await service.get("/pods")).json()] == ["web-0", "web-1"]

    await wait_until(web_1_cached, poll=SERVER_POLL, timeout=10, what="web-1 in the cache")


async def test_metrics_serves_the_informers_reflector_and_handler_metrics(
    fake_apiserver: FakeAPIServer, service: httpx.AsyncClient
) -> None:
    fake_apiserver.create(pod("web-0"))
    await wait_ready(service)
    response = await service.get("/metrics")
    assert response.status_code == 200
    lines = response.text.splitlines()

    def samples(name: str) -> list[str]:
        return [line for line in lines if line.startswith(name + "{")]

    def total(name: str) -> float:
        return sum(float(line.split()[-1]) for line in samples(name))

    assert len(samples("reflector_lists_total")) == 2  # pods and configmaps
    # Each informer filled its cache once: by a streaming list (the default) or a LIST.
    assert total("reflector_watchLists_total") + total("reflector_lists_total") >= 2
    assert len(samples("aioinformer_reflector_seconds_since_heard")) == 2
    assert samples("aioinformer_informer_queued_deltas")
    # The client the lifespan opened reports its requests: discovery, lists, watches.
    assert total("rest_client_requests_total") >= 2
    assert all('code="200"' in line for line in samples("rest_client_requests_total"))
