"""Testing your own controller with aioinformer's pytest fixtures.

Installing aioinformer registers a pytest plugin with these fixtures:

* ``fake_apiserver``: a real HTTP server on 127.0.0.1 that behaves like kube-apiserver
  (LIST/WATCH, resourceVersions, CRDs, merge patches, ``Status`` errors, fault injection),
  started before the test and closed after it;
* ``kube_client``: an ``aioinformer.client.Client`` connected to it;
* ``fake_clock``: a ``FakeClock`` for anything that takes ``clock=``.

So the code under test talks HTTP exactly as it would to a cluster, and the test sets
the scene and checks the outcome on the server (``fake_apiserver.create/patch/delete``,
``fake_apiserver.objects(...)``), not on mocks. The controller tested here is the Widget
operator of ``widget_operator.py`` next to this file. Two styles:

* end to end: run the factory and the controller, change the world, wait until the
  server shows the expected state;
* one reconcile at a time: run only the informers, then ``await operator.reconcile(key)``
  and check exactly what that one call did.

The fake answers as kube-apiserver v1.36 does; its options bring other servers, such as
``watch_list_compression=True`` for 1.37's compressed streaming lists (set per test with
``@pytest.mark.fake_apiserver(...)``).

Run it with ``pytest examples/test_with_fake_apiserver.py`` (or ``python`` on this file).
The tests are ``async def``: pytest-asyncio runs them (``asyncio_mode = "auto"``, or the
``asyncio`` mark set below for strict mode).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from aioinformer.errors import Requeue
from aioinformer.factory import SharedInformerFactory
from aioinformer.testing import eventually

sys.path.insert(0, str(Path(__file__).resolve().parent))  # to import the example operator
from typing import TYPE_CHECKING

from widget_operator import (
    API_VERSION,
    GROUP,
    VERSION,
    WIDGETS,
    WidgetOperator,
    widget,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

pytestmark = pytest.mark.asyncio


def config_map_data(server: FakeAPIServer, name: str) -> dict[str, str] | None:
    """The data of ConfigMap ``default/<name>`` on the server, None when absent."""
    for obj in server.objects("configmaps", "default"):
        if obj["metadata"]["name"] == name:
            data: dict[str, str] = obj.get("data", {})
            return data
    return None


@pytest_asyncio.fixture
async def server(fake_apiserver: FakeAPIServer) -> FakeAPIServer:
    """The fake API server with the Widget CRD installed and one Widget."""
    fake_apiserver.register_crd(GROUP, VERSION, "widgets", "Widget")
    fake_apiserver.create(widget("hello", "Hello"))
    return fake_apiserver


@pytest_asyncio.fixture
async def running_operator(
    server: FakeAPIServer, kube_client: Client
) -> AsyncIterator[WidgetOperator]:
    """The operator, running: informers and controller, stopped after the test."""
    factory = SharedInformerFactory(kube_client)
    operator = WidgetOperator(kube_client, factory)
    async with factory, operator.controller:
        yield operator


# -- end to end ----------------------------------------------------------------------------


async def test_each_widget_gets_its_config_map(
    server: FakeAPIServer, running_operator: WidgetOperator
) -> None:
    await eventually(lambda: config_map_data(server, "hello-config") is not None, timeout=10)
    assert config_map_data(server, "hello-config") == {"greeting": "Hello", "size": "1"}

    cm = server.get("configmaps", "default", "hello-config")
    (owner,) = cm["metadata"]["ownerReferences"]
    assert owner["apiVersion"] == API_VERSION
    assert owner["kind"] == "Widget"
    assert owner["uid"] == server.get(WIDGETS, "default", "hello")["metadata"]["uid"]


async def test_editing_a_widget_updates_its_config_map(
    server: FakeAPIServer, running_operator: WidgetOperator
) -> None:
    await eventually(lambda: config_map_data(server, "hello-config") is not None, timeout=10)
    server.patch(WIDGETS, "default", "hello", {"spec": {"greeting": "Hi", "size": 3}})
    await eventually(
        lambda: config_map_data(server, "hello-config") == {"greeting": "Hi", "size": "3"},
        timeout=10,
    )


async def test_a_config_map_deleted_by_hand_comes_back(
    server: FakeAPIServer, running_operator: WidgetOperator
) -> None:
    await eventually(lambda: config_map_data(server, "hello-config") is not None, timeout=10)
    server.delete("configmaps", "default", "hello-config")
    await eventually(lambda: config_map_data(server, "hello-config") is not None, timeout=10)


async def test_the_operator_catches_up_after_a_restart_that_lost_the_history(
    server: FakeAPIServer, running_operator: WidgetOperator
) -> None:
    # Like kube-apiserver, the fake keeps no watch history from before it (re)started:
    # the informers' watches from their old resourceVersions are answered 410 Expired,
    # so they relist, and the Widget created while the server was down is reconciled.
    await eventually(lambda: config_map_data(server, "hello-config") is not None, timeout=10)
    await server.faults.refuse_connections()
    server.create(widget("late", "Late"))
    await server.restart(reset_history=True)
    await eventually(lambda: config_map_data(server, "late-config") is not None, timeout=10)


@pytest.mark.fake_apiserver(watch_list_compression=True)
async def test_the_operator_works_against_a_server_compressing_its_streams(
    server: FakeAPIServer, running_operator: WidgetOperator
) -> None:
    # kube-apiserver 1.37 sends a streaming list to a client that accepts gzip as one gzip
    # member per event, and so does the fake here. The informers ask for no compression
    # (and would read every member of a compressed stream all the same).
    await eventually(lambda: config_map_data(server, "hello-config") is not None, timeout=10)
    server.create(widget("second", "Bonjour"))
    await eventually(lambda: config_map_data(server, "second-config") is not None, timeout=10)
    watches = [r for r in server.request_log if r.query.get("watch")]
    assert {r.headers.get("Accept-Encoding") for r in watches} == {"identity"}


async def test_a_failed_create_is_retried(server: FakeAPIServer, kube_client: Client) -> None:
    # Fault injection: the first create of a ConfigMap answers 500 InternalError.
    server.faults.fail_next(1, status=500, resource="configmaps", verb="create")
    factory = SharedInformerFactory(kube_client)
    operator = WidgetOperator(kube_client, factory)
    async with factory, operator.controller:
        await eventually(lambda: config_map_data(server, "hello-config") is not None, timeout=10)
    assert operator.controller.statistics().failures == 1


# -- one reconcile at a time ----------------------------------------------------------------


async def test_reconcile_creates_then_does_nothing(
    server: FakeAPIServer, kube_client: Client
) -> None:
    factory = SharedInformerFactory(kube_client)
    operator = WidgetOperator(kube_client, factory)  # its controller is never started
    async with factory:
        await factory.wait_for_cache_sync(timeout=10)  # raises CacheSyncError if not synced
        assert await operator.reconcile("default/hello") is None
        assert config_map_data(server, "hello-config") == {"greeting": "Hello", "size": "1"}

        # The ConfigMap cache catches up; the next reconcile sends nothing.
        await eventually(
            lambda: operator.config_maps.lister().get("hello-config", "default") is not None,
            timeout=10,
        )
        before = len(server.request_log)
        assert await operator.reconcile("default/hello") is None
        assert len(server.request_log) == before


async def test_reconcile_backs_off_from_a_config_map_it_does_not_own(
    server: FakeAPIServer, kube_client: Client
) -> None:
    server.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "hello-config", "namespace": "default"},
            "data": {"someone": "else"},
        }
    )
    factory = SharedInformerFactory(kube_client)
    operator = WidgetOperator(kube_client, factory, recheck_after=60)
    async with factory:
        await factory.wait_for_cache_sync(timeout=10)  # raises CacheSyncError if not synced
        outcome = await operator.reconcile("default/hello")
    assert isinstance(outcome, Requeue)
    assert outcome.after == 60
    assert config_map_data(server, "hello-config") == {"someone": "else"}


if __name__ == "__main__":
    # A fresh interpreter: this one has already imported the test module as __main__.
    sys.exit(
        subprocess.call([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider"])
    )
