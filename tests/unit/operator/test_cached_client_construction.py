"""The cache-backed client's construction, without a server: its bounds are checked, every
spelling of a resource reads through the factory's one informer for it, and namespaces
default as the factory's (reads and writes over HTTP: ``tests/e2e/test_cached_client.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from aioinformer.factory import SharedInformerFactory
from aioinformer.operator.cached_client import CachedClient, CachedClientStatistics
from tests.unit.operator.test_manager import client as client  # a client never asked anything

if TYPE_CHECKING:
    from aioinformer.client import Client


@pytest.mark.parametrize(
    ("timeout", "sync_timeout", "message"),
    [
        pytest.param(0.0, 1.0, "timeout must be > 0 seconds, got 0", id="timeout-0"),
        pytest.param(-1.5, 1.0, "timeout must be > 0 seconds", id="timeout-negative"),
        pytest.param(1.0, 0.0, "sync_timeout must be > 0 seconds", id="sync-0"),
    ],
)
def test_timeouts_must_be_positive(
    client: Client, timeout: float, sync_timeout: float, message: str
) -> None:
    factory = SharedInformerFactory(client)
    with pytest.raises(ValueError, match=message):
        CachedClient(client, factory, timeout=timeout, sync_timeout=sync_timeout)


def test_every_spelling_of_a_resource_reads_through_the_factorys_one_informer(
    client: Client,
) -> None:
    factory = SharedInformerFactory(client)
    cached = CachedClient(client, factory)
    informers = {
        id(cached.resource(name).informer) for name in ("cm", "configmaps", "v1/configmaps")
    }
    assert len(informers) == 1
    assert list(factory.informers().values()) == [cached.resource("ConfigMap").informer]


def test_a_resource_defaults_to_the_factorys_namespace_unless_given_one(client: Client) -> None:
    cached = CachedClient(client, SharedInformerFactory(client, namespace="team"))
    assert cached.resource("configmaps").namespace == "team"
    assert cached.resource("configmaps").api.namespace == "team"
    assert cached.resource("configmaps", "other").namespace == "other"
    everywhere = CachedClient(client, SharedInformerFactory(client))
    assert everywhere.resource("configmaps").namespace is None


def test_a_new_client_tracks_nothing(client: Client) -> None:
    cached = CachedClient(client, SharedInformerFactory(client), timeout=2.5)
    assert cached.statistics() == CachedClientStatistics(0, 0, 0, 0)
    assert cached.timeout == 2.5
    pods = cached.resource("pods", "default")
    assert repr(pods) == "<CachedResource pods ns='default'>"
    assert repr(cached) == "<CachedClient resources=1 timeout=2.5s>"
