"""``SharedInformerFactory.health()`` over the fake API server: not ready before it
starts, ready once every informer is synced and watching, not live once an informer it
runs has stopped, and live but not ready when shut down."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aioinformer.factory import SharedInformerFactory
from aioinformer.reflector import ReflectorState
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer, FakeClock

# The conditions depend on socket I/O between the client and the server: a short real
# sleep between checks lets the loop's selector run.
SOCKET_POLL = 0.002


def config_map(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"k": "v"},
    }


async def test_a_factory_is_ready_once_started_and_every_informer_is_live(
    fake_apiserver: FakeAPIServer, kube_client: Client, fake_clock: FakeClock
) -> None:
    fake_apiserver.create(config_map("a"))
    factory = SharedInformerFactory(kube_client, namespace="default", clock=fake_clock)
    factory.informer_for("v1/configmaps")
    factory.informer_for("v1/secrets")

    before = factory.health()
    assert (before.started, before.ready, before.live) == (False, False, True)
    assert list(before.informers) == ["v1/configmaps ns=default", "v1/secrets ns=default"]
    assert not any(record.started for record in before.informers.values())

    async with factory:
        await wait_until(lambda: factory.health().ready, poll=SOCKET_POLL, timeout=10)
        health = factory.health()
        assert health.live
        configmaps = health.informers["v1/configmaps ns=default"]
        assert (configmaps.resource, configmaps.namespace) == ("v1/configmaps", "default")
        assert (configmaps.synced, configmaps.live, configmaps.cache_size) == (True, True, 1)
        assert configmaps.state is ReflectorState.WATCHING

        secrets = factory.informer_for("v1/secrets")
        secrets.stop()  # stopped while the factory runs: it will not come back
        await wait_until(lambda: not factory.health().live, poll=SOCKET_POLL, timeout=10)
        health = factory.health()
        assert not health.ready
        assert health.informers["v1/secrets ns=default"].stopped
        assert health.informers["v1/configmaps ns=default"].live

    after = factory.health()
    assert (after.started, after.ready, after.live) == (True, False, True)
    assert not any(record.live for record in after.informers.values())
