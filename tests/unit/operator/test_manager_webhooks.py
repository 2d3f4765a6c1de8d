"""A Manager's webhook server without an API server: always there, built from the
``webhook`` option on the manager's clock, in the manager's health only once something is
registered, and not ready before it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.operator.manager import Manager, ManagerOptions
from aioinformer.operator.webhook import WebhookOptions, WebhookServerState
from aioinformer.testing.clock import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    # Never sent a request: nothing here runs the manager.
    async with Client(Config(host="http://127.0.0.1:1", token="t")) as client:
        yield client


def test_every_manager_has_a_webhook_server_with_controller_runtimes_defaults(
    client: Client,
) -> None:
    manager = Manager(client)
    assert manager.webhooks.state is WebhookServerState.NEW
    assert manager.webhooks.options == WebhookOptions()
    assert manager.webhooks.options.address == ":9443"
    assert not manager.webhooks.has_handlers


def test_the_webhook_option_builds_the_server(client: Client) -> None:
    options = WebhookOptions(address="127.0.0.1:0", cert_dir="/certs")
    manager = Manager(client, ManagerOptions(webhook=options))
    assert manager.webhooks.options is options
    assert manager.options.replace(webhook=None).webhook is None


async def test_the_server_reads_the_managers_clock(client: Client) -> None:
    clock = FakeClock(start=100.0)
    manager = Manager(client, clock=clock)
    assert manager.webhooks._clock is clock


def test_health_shows_the_server_once_something_is_registered(client: Client) -> None:
    manager = Manager(client)
    assert manager.health().webhooks is None
    assert "webhooks" not in manager.health().as_dict()
    manager.webhooks.validate(
        None, lambda request: None, group="example.com", version="v1", resource="widgets"
    )
    health = manager.health()
    assert health.webhooks == {
        "state": "new",
        "address": None,
        "paths": ["/validate-example-com-v1-widgets"],
    }
    assert health.as_dict()["webhooks"]["state"] == "new"
    assert not health.ready
