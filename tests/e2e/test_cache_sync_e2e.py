"""Sync failures that raise, over real HTTP against the fake API server: an RBAC 403 and
an unknown resource come back as one ``CacheSyncError`` that names each informer's
resource, namespace and the server's own words; a factory never started raises; a
Controller whose informer cannot sync raises out of ``async with`` at its timeout."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from aioinformer import CacheSyncError, Controller, SharedInformerFactory
from aioinformer.errors import Forbidden, UnknownResourceError
from aioinformer.testing import FakeAPIServer, FakeClock, Rule
from tests._support_reflector import reflector_statistics
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.informer import SharedIndexInformer

# Conditions below depend on socket I/O between the real client and server.
SOCKET_POLL = 0.001

USER = "system:serviceaccount:default:reader"
FORBIDDEN_CONFIGMAPS = (
    f'configmaps in kube-system: 403 Forbidden: configmaps is forbidden: User "{USER}" '
    'cannot list resource "configmaps" in API group "" in the namespace "kube-system"'
)


def reader_client(server: FakeAPIServer) -> Client:
    """A client whose user may list and watch configmaps in ``default`` only."""
    server.add_token(
        "reader",
        user=USER,
        rules=[Rule(verbs=["list", "watch"], resources=["configmaps"], namespaces=["default"])],
    )
    return server.client(token="reader")


async def failed_once(*informers: SharedIndexInformer) -> None:
    """Wait until every informer's reflector has failed at least once."""
    await wait_until(
        lambda: all(reflector_statistics(i).last_error is not None for i in informers),
        poll=SOCKET_POLL,
        timeout=10,
    )


async def test_a_403_and_an_unknown_resource_raise_one_error_naming_both(
    fake_apiserver: FakeAPIServer,
) -> None:
    async with (
        reader_client(fake_apiserver) as client,
        SharedInformerFactory(client, clock=FakeClock()) as factory,
    ):
        allowed = factory.informer_for("configmaps", namespace="default")
        denied = factory.informer_for("configmaps", namespace="kube-system")
        unknown = factory.informer_for("widgets")
        assert await allowed.wait_for_sync(timeout=10)
        await failed_once(denied, unknown)
        with pytest.raises(CacheSyncError) as caught:
            await factory.wait_for_cache_sync(timeout=0, fail_fast=False)
    error = caught.value
    assert str(error) == (
        f"caches did not sync within 0s: {FORBIDDEN_CONFIGMAPS}; widgets (all namespaces): "
        "UnknownResourceError: the API server has no resource named 'widgets'"
    )
    assert error.cause is None
    assert [(r.resource, r.namespace, r.state) for r in error.unsynced] == [
        ("configmaps", "kube-system", "starting"),
        ("widgets", None, "starting"),
    ]
    assert isinstance(error.unsynced[0].last_error, Forbidden)
    assert isinstance(error.unsynced[1].last_error, UnknownResourceError)


async def test_success_still_returns_every_informer_synced(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    async with SharedInformerFactory(kube_client) as factory:
        factory.informer_for("pods")
        factory.informer_for("configmaps", namespace="default")
        synced = await factory.wait_for_cache_sync(timeout=10)
    assert synced == {"pods": True, "configmaps ns=default": True}


async def test_a_factory_never_started_raises_saying_how_to_start_it(kube_client: Client) -> None:
    factory = SharedInformerFactory(kube_client)
    factory.informer_for("pods")
    with pytest.raises(RuntimeError, match=r"never started: use 'async with factory:'"):
        await factory.wait_for_cache_sync(timeout=10)
    async with factory:
        pass
    with pytest.raises(RuntimeError, match="has been shut down"):
        await factory.wait_for_cache_sync(timeout=10)


async def test_a_controller_whose_informer_is_forbidden_raises_out_of_async_with(
    fake_apiserver: FakeAPIServer,
) -> None:
    clock = FakeClock()
    forever = asyncio.Event()

    async def reconcile(key: str) -> None:
        raise AssertionError(f"no worker may start before the caches synced: {key}")

    async def serve(factory: SharedInformerFactory) -> None:
        denied = factory.informer_for("configmaps", namespace="kube-system")
        controller = Controller(
            "cms", reconcile, informers=[denied], clock=clock, cache_sync_fail_fast=False
        )
        async with controller:
            await failed_once(denied)
            await clock.wait_for_sleepers(2)  # the sync timeout and the list backoff
            await clock.advance(120)
            await forever.wait()  # the usual body: wait for a stop signal

    async with (
        reader_client(fake_apiserver) as client,
        SharedInformerFactory(client, clock=clock) as factory,
    ):
        with pytest.raises(CacheSyncError, match="within 120s") as caught:
            await serve(factory)
    assert FORBIDDEN_CONFIGMAPS in str(caught.value)
