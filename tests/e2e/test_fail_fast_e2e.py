"""Failing fast over real HTTP: against the fake API server, a resource it does not serve
(a CustomResourceDefinition not installed), a token it refuses (401), one it forbids
(403), and against a port nobody listens on, an informer's ``wait_for_sync``, a factory's
``wait_for_cache_sync`` and a Manager's start raise one ``CacheSyncError`` carrying the
cause, with a timeout far too long to have passed; a wait with ``fail_fast=False`` sees
the informer's retries succeed once the CustomResourceDefinition is registered."""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import TYPE_CHECKING

import pytest

from aioinformer import CacheSyncError, Controller, SharedIndexInformer, SharedInformerFactory
from aioinformer.client import Client
from aioinformer.config import Config, load_kube_config
from aioinformer.errors import ConnectionFailed, Forbidden, Unauthorized, UnknownResourceError
from aioinformer.operator import Manager
from aioinformer.testing import FakeAPIServer, FakeClock, Rule

if TYPE_CHECKING:
    from collections.abc import Callable

# Far longer than any of these tests may take: an error they see is the fast one.
LONG = 3600.0


def refused_port() -> int:
    """A port on 127.0.0.1 that was just free: connections to it are refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def forbidding_client(server: FakeAPIServer) -> Client:
    server.add_token("leases-only", rules=[Rule(verbs=["*"], resources=["leases"])])
    return server.client(token="leases-only")


async def test_an_informer_against_a_refused_port_raises_at_once() -> None:
    port = refused_port()
    async with Client(Config(host=f"http://127.0.0.1:{port}")) as client:
        informer = SharedIndexInformer(client.resource("pods", namespace="default"))
        async with informer:
            with pytest.raises(CacheSyncError) as caught:
                await informer.wait_for_sync(timeout=LONG)
    error = caught.value
    assert isinstance(error.cause, ConnectionFailed)
    assert error.cause.refused
    assert str(error).startswith(
        f"caches cannot sync: pods in default at http://127.0.0.1:{port}: ConnectionFailed: "
        f"connection to http://127.0.0.1:{port}/api"
    )


@pytest.mark.parametrize(
    ("make_client", "resource", "cause"),
    [
        pytest.param(lambda s: s.client(), "widgets", UnknownResourceError, id="crd-missing"),
        pytest.param(lambda s: s.client(token="wrong"), "configmaps", Unauthorized, id="401"),
        pytest.param(forbidding_client, "configmaps", Forbidden, id="403"),
    ],
)
async def test_a_factory_raises_the_cause_at_once(
    fake_apiserver: FakeAPIServer,
    make_client: Callable[[FakeAPIServer], Client],
    resource: str,
    cause: type[Exception],
) -> None:
    async with (
        make_client(fake_apiserver) as client,
        SharedInformerFactory(client, clock=FakeClock()) as factory,
    ):
        informer = factory.informer_for(resource)
        with pytest.raises(CacheSyncError) as from_factory:
            await factory.wait_for_cache_sync(timeout=LONG)
        with pytest.raises(CacheSyncError) as from_informer:
            await informer.wait_for_sync(timeout=LONG)
    for caught in (from_factory, from_informer):
        assert isinstance(caught.value.cause, cause)
        assert str(caught.value).startswith(
            f"caches cannot sync: {resource} (all namespaces) at {fake_apiserver.url}: "
        )


async def test_a_manager_start_raises_the_cause_once_and_at_once(
    fake_apiserver: FakeAPIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    async with fake_apiserver.client() as client:
        manager = Manager(client, cache_sync_timeout=LONG, cache_audit=None)
        widgets = manager.informer_for("widgets")
        manager.add(Controller("widgets", lambda key: None, informers=[widgets]))
        assert await asyncio.wait_for(manager.run_until_signal(), timeout=LONG) == 1
    printed = capsys.readouterr().err
    assert printed.count("CacheSyncError") == 1
    assert (
        f"CacheSyncError: caches cannot sync: widgets (all namespaces) at {fake_apiserver.url}: "
        "UnknownResourceError: the API server has no resource named 'widgets'"
    ) in printed


async def test_a_manager_run_raises_the_typed_error(fake_apiserver: FakeAPIServer) -> None:
    async with forbidding_client(fake_apiserver) as client:
        manager = Manager(client, cache_sync_timeout=LONG, cache_audit=None)
        manager.informer_for("configmaps")
        with pytest.raises(CacheSyncError) as caught:
            await manager.run()
    assert isinstance(caught.value.cause, Forbidden)


async def test_without_fail_fast_a_crd_registered_later_lets_the_wait_succeed(
    fake_apiserver: FakeAPIServer,
) -> None:
    clock = FakeClock()
    async with (
        fake_apiserver.client() as client,
        SharedInformerFactory(client, clock=clock) as factory,
    ):
        informer = factory.informer_for("widgets")
        waiting = asyncio.create_task(factory.wait_for_cache_sync(timeout=LONG, fail_fast=False))
        # The informer backs off after its first failed list; the CRD comes meanwhile.
        await clock.wait_for_sleepers(1)
        assert waiting.done() is False
        fake_apiserver.register_crd("example.com", "v1", "widgets", "Widget")
        await clock.advance(60)
        assert await asyncio.wait_for(waiting, timeout=10) == {informer.name: True}


MAIN = """
import sys

from aioinformer import Client, Config, Controller
from aioinformer.operator import Manager


async def setup() -> Manager:
    client = Client(Config(host=sys.argv[1]))
    manager = Manager(client, cache_sync_timeout=3600, cache_audit=None)
    pods = manager.informer_for("pods")
    manager.add(Controller("pods", lambda key: None, informers=[pods]))
    return manager


sys.exit(Manager.main(setup))
"""


async def test_manager_main_against_a_refused_port_exits_1_saying_why_once() -> None:
    url = f"http://127.0.0.1:{refused_port()}"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        MAIN,
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 1
    lines = [line for line in err.decode().splitlines() if "CacheSyncError" in line]
    assert lines == [
        f"CacheSyncError: caches cannot sync: pods (all namespaces) at {url}: ConnectionFailed: "
        f"connection to {url}/api/v1 refused: "
        f"Connect call failed ('127.0.0.1', {url.rsplit(':', 1)[1]})"
    ]


async def test_a_401_names_the_user_context_and_kubeconfig(fake_apiserver: FakeAPIServer) -> None:
    path = fake_apiserver.kubeconfig_path(token="not-a-known-token")
    async with Client(load_kube_config(path)) as client:
        with pytest.raises(Unauthorized) as caught:
            await client.resource("configmaps", namespace="default").list()
    assert str(caught.value) == (
        "401 Unauthorized: Unauthorized; credentials sent: the bearer token of user "
        f"'aioinformer-fake-user', context 'aioinformer-fake' in {path}"
    )
    assert "not-a-known-token" not in str(caught.value)


async def test_a_cached_read_fails_fast_unless_the_manager_waits_for_a_fix(
    fake_apiserver: FakeAPIServer,
) -> None:
    """The cached client follows its Manager: failing fast, a read whose list is forbidden
    raises at once; with ``cache_sync_fail_fast=False`` the read waits, and answers once
    RBAC grants the list."""
    from aioinformer.operator.cached_client import CachedClient

    clock = FakeClock()
    async with (
        forbidding_client(fake_apiserver) as client,
        SharedInformerFactory(client, clock=clock) as factory,
    ):
        with pytest.raises(CacheSyncError) as caught:
            await (
                CachedClient(client, factory, clock=clock, sync_timeout=LONG)
                .resource("configmaps", namespace="default")
                .list()
            )
        assert isinstance(caught.value.cause, Forbidden)

    manager = Manager(
        forbidding_client(fake_apiserver),
        clock=clock,
        cache_sync_fail_fast=False,
        cache_audit=None,
    )
    async with manager.client, manager.factory:
        configmaps = manager.cached_client.resource("configmaps", namespace="default")
        reading = asyncio.create_task(configmaps.list())
        await clock.wait_for_sleepers(1)  # the informer backs off after the 403
        await asyncio.wait({reading}, timeout=0.2)  # a read failing fast is done by now
        assert reading.done() is False
        fake_apiserver.add_token("leases-only")  # the same token, now allowed everything
        await clock.advance(60)
        assert await asyncio.wait_for(reading, timeout=10) == []
