"""``ThreadedFakeAPIServer``: the fake served from a thread of its own answers code on
any thread and any loop, its blocking methods are the server's own, a blocked loop fails
a call instead of hanging it, and closing leaves no thread, socket or file behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from aioinformer import SharedIndexInformer
from aioinformer.errors import AlreadyExists, NotFound
from aioinformer.listwatch import ListOptions
from aioinformer.testing import (
    ADMIN_TOKEN,
    Rule,
    ThreadedFakeAPIServer,
    eventually,
)


def pod(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def get_json(url: str, token: str = ADMIN_TOKEN) -> tuple[int, dict[str, Any]]:
    """A blocking GET, as code without a loop makes it."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def server_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("aioinformer fake API server")]


def refuses_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except ConnectionRefusedError:
        return True


def test_a_threaded_server_answers_blocking_http_and_leaves_nothing_behind() -> None:
    fake = ThreadedFakeAPIServer()
    assert fake.state.name == "NEW"
    assert repr(fake) == f"<ThreadedFakeAPIServer {fake.url} NEW>"
    with fake:
        assert fake.state.name == "RUNNING"
        assert "RUNNING" in repr(fake)
        (thread,) = server_threads()
        assert thread.daemon
        assert thread.name == f"aioinformer fake API server {fake.url}"
        fake.create(pod("web-0"))
        status, body = get_json(fake.url + "/api/v1/namespaces/default/pods")
        assert status == 200
        assert [item["metadata"]["name"] for item in body["items"]] == ["web-0"]
        kubeconfig = fake.kubeconfig_path()
        assert os.path.exists(kubeconfig)
        port = fake.port
    assert fake.state.name == "STOPPED"
    assert not thread.is_alive()
    assert server_threads() == []
    assert refuses_connections(port)
    assert not os.path.exists(kubeconfig)
    fake.close()  # idempotent
    with pytest.raises(RuntimeError, match="runs once"):
        fake.start()


def test_options_are_the_servers_and_a_wrong_one_raises_in_the_callers_thread() -> None:
    with pytest.raises(ValueError, match="watch_list must be"):
        ThreadedFakeAPIServer(watch_list="sometimes")
    with ThreadedFakeAPIServer(history_size=7, require_namespaces=False) as fake:
        assert fake.server._store.history_size == 7
        assert fake.require_namespaces is False
        fake.create(pod("a", namespace="nowhere"))
        fake.require_namespaces = True
        with pytest.raises(NotFound):
            fake.create(pod("b", namespace="elsewhere"))


def test_a_start_that_fails_raises_with_the_thread_ended() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        fake = ThreadedFakeAPIServer(port=taken.getsockname()[1])
        with pytest.raises(OSError, match="in use"):
            fake.start()
    assert fake.state.name == "STOPPED"
    assert server_threads() == []
    fake.close()
    with pytest.raises(RuntimeError, match="not serving"):
        fake.create(pod("a"))


def test_the_blocking_methods_are_the_servers_own() -> None:
    with ThreadedFakeAPIServer() as fake:
        created = fake.create(pod("a"))
        assert created["metadata"]["resourceVersion"] == fake.resource_version
        with pytest.raises(AlreadyExists):
            fake.create(pod("a"))
        fake.patch("pods", "default", "a", {"metadata": {"labels": {"tier": "front"}}})
        assert fake.get("pods", "default", "a")["metadata"]["labels"]["tier"] == "front"
        current = fake.get("pods", "default", "a")
        current["metadata"]["labels"] = {"app": "db"}
        fake.update(current)
        assert [p["metadata"]["labels"] for p in fake.objects("pods", "default")] == [{"app": "db"}]
        fake.create_namespace("team-a", labels={"team": "a"})
        fake.create(pod("b", namespace="team-a"))
        assert len(fake.objects("pods")) == 2
        fake.delete("pods", "team-a", "b")
        with pytest.raises(NotFound):
            fake.get("pods", "team-a", "b")

        fake.register_crd("example.com", "v1", "widgets", "Widget")
        assert fake.resolve("widgets").kind == "Widget"
        widget = {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
        }
        fake.create(widget)
        status, _ = get_json(fake.url + "/apis/example.com/v1/namespaces/default/widgets/w")
        assert status == 200

        fake.add_token("reader", rules=[Rule(verbs=["get", "list"], resources=["pods"])])
        assert get_json(fake.url + "/api/v1/pods", token="reader")[0] == 200
        assert get_json(fake.url + "/api/v1/configmaps", token="reader")[0] == 403
        fake.remove_token("reader")
        assert get_json(fake.url + "/api/v1/pods", token="reader")[0] == 401
        assert {r.path for r in fake.request_log} >= {"/api/v1/pods", "/api/v1/configmaps"}

        old = fake.resource_version
        fake.compact()
        status, body = get_json(
            fake.url + f"/api/v1/pods?resourceVersion={int(old) - 1}&resourceVersionMatch=Exact"
        )
        assert (status, body["reason"]) == (410, "Expired")


def test_faults_are_blocking_calls_on_the_servers_loop() -> None:
    with ThreadedFakeAPIServer() as fake:
        fake.faults.fail_next(1, status=503)
        assert get_json(fake.url + "/api/v1/pods")[0] == 503
        assert get_json(fake.url + "/api/v1/pods")[0] == 200
        assert fake.faults.count("fail") == 1
        assert [record.kind for record in fake.faults.log] == ["fail"]
        fake.faults.latency(0)
        fake.faults.delay_watch_events(0)
        fake.faults.drop_watch_after(1)
        fake.faults.close_mid_line()
        fake.faults.garbage_line()
        fake.faults.stall_watch()
        fake.faults.drop_watch_events(1, types=["DELETED"])
        fake.faults.clear()
        assert fake.faults.freeze_watches() == 0

        fake.faults.refuse_connections()
        assert refuses_connections(fake.port)
        fake.faults.accept_connections()
        assert get_json(fake.url + "/version")[0] == 200
        fake.faults.wait_for("accept_connections", timeout=1)
        with pytest.raises(TimeoutError):
            fake.faults.wait_for("restart", timeout=0.05)
        fake.restart()
        fake.faults.wait_for("restart")
        assert get_json(fake.url + "/version")[0] == 200


def test_an_informer_on_another_loop_syncs_and_follows() -> None:
    async def follow(fake: ThreadedFakeAPIServer) -> list[str]:
        async with fake.client() as client:
            informer = SharedIndexInformer(client.resource("pods", "default"))
            async with informer:
                assert await informer.wait_for_sync(timeout=5)
                # Blocking calls from a loop: hand them to a worker thread.
                await asyncio.to_thread(fake.wait_for_watchers, 1, resource="pods")
                assert fake.watch_count == 1
                await asyncio.to_thread(fake.create, pod("web-1"))
                await eventually(lambda: informer.lister().get("web-1", namespace="default"))
                return sorted(p["metadata"]["name"] for p in informer.lister().list())

    with ThreadedFakeAPIServer() as fake:
        fake.create(pod("web-0"))
        assert asyncio.run(follow(fake)) == ["web-0", "web-1"]
        with pytest.raises(TimeoutError):
            fake.wait_for_watchers(1, timeout=0.05)
    assert fake._left_running == []


def test_closing_with_watches_open_ends_them_and_leaves_no_task() -> None:
    opened = threading.Event()
    ended: list[str] = []

    async def watch_until_the_server_closes(fake: ThreadedFakeAPIServer) -> None:
        async with fake.client() as client:
            watch = client.resource("pods", "default").watch(ListOptions(resource_version="0"))
            async with contextlib.aclosing(watch) as events:
                async for _ in events:
                    opened.set()
            ended.append("ended")  # closing the server ended the stream, cleanly

    with ThreadedFakeAPIServer() as fake:
        fake.create(pod("a"))
        watcher = threading.Thread(target=asyncio.run, args=(watch_until_the_server_closes(fake),))
        watcher.start()
        assert opened.wait(5)
        fake.wait_for_watchers(1)
    watcher.join(5)
    assert not watcher.is_alive()
    assert ended == ["ended"]
    assert fake._left_running == []
    assert server_threads() == []


async def test_an_async_test_may_serve_it_from_a_thread_too() -> None:
    # Blocking calls from the test's loop are brief: the server answers on its own.
    with ThreadedFakeAPIServer() as fake:
        fake.create(pod("a"))
        async with fake.client() as client:
            pods = client.resource("pods", "default")
            page = await pods.list()
            fake.create(pod("b"))
            watch = pods.watch(ListOptions(resource_version=page.resource_version))
            async with contextlib.aclosing(watch) as events:
                async for event in events:
                    assert event.object["metadata"]["name"] == "b"
                    break
    assert server_threads() == []


def test_call_reaches_anything_else_on_the_servers_loop() -> None:
    with ThreadedFakeAPIServer() as fake:
        fake.call(setattr, fake.server, "watch_list", "forbidden")
        assert fake.server.watch_list == "forbidden"
        loop_thread = fake.call(threading.current_thread)
        assert loop_thread is not threading.current_thread()
        assert loop_thread.name.startswith("aioinformer fake API server")

        async def on_the_loop(value: int) -> tuple[int, str]:
            await asyncio.sleep(0)
            # On its own thread a plain call runs in place; an awaitable would block it.
            inner = fake.call(lambda: fake.server.resource_version)
            with pytest.raises(RuntimeError, match="own thread"):
                fake.call(fake.server.restart)
            return value * 2, inner

        doubled, rv = fake.call(on_the_loop, 21)
        assert (doubled, rv) == (42, fake.resource_version)
        with pytest.raises(NotFound):
            fake.call(fake.server.get, "pods", "default", "missing")


def test_a_blocked_loop_fails_the_call_instead_of_hanging_it() -> None:
    release = threading.Event()
    with ThreadedFakeAPIServer(call_timeout=0.1) as fake:
        with pytest.raises(TimeoutError, match="something on it blocks"):
            fake.call(release.wait, 5)
        release.set()
        fake.call_timeout = 5
        assert fake.get("namespaces", None, "default")["kind"] == "Namespace"


def test_a_threaded_fake_over_tls_is_trusted_through_its_kubeconfig_alone() -> None:
    """``tls=True`` on a thread: the kubeconfig carries the CA, so a client loaded from it
    on a loop of its own verifies the server and lists; plain HTTPS without the CA fails."""
    from aioinformer import Client
    from aioinformer.config import load_kube_config

    with ThreadedFakeAPIServer(tls=True) as fake:
        assert fake.url.startswith("https://")
        assert fake.ca_pem is not None
        assert fake.ca_pem.startswith(b"-----BEGIN CERTIFICATE")
        fake.create(pod("web-0"))
        config = load_kube_config(fake.kubeconfig_path())

        async def names() -> list[str]:
            async with Client(config) as client:
                page = await client.resource("pods", namespace="default").list()
                return [item["metadata"]["name"] for item in page.items]

        assert asyncio.run(names()) == ["web-0"]
        with pytest.raises(urllib.error.URLError):
            get_json(fake.url + "/api/v1/namespaces/default/pods")


def test_spec_validation_is_switched_from_the_test_thread() -> None:
    """``validate_specs`` reads and sets the served fake's rule: a Pod without containers is
    refused, then admitted once the rule is off."""
    from aioinformer.errors import UnprocessableEntity

    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"}, "spec": {}}
    with ThreadedFakeAPIServer() as fake:
        assert fake.validate_specs
        with pytest.raises(UnprocessableEntity, match=r"spec\.containers: Required value"):
            fake.create(bare)
        fake.validate_specs = False
        assert not fake.validate_specs
        assert fake.create(bare)["metadata"]["name"] == "bare"
