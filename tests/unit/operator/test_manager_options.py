"""A Manager's options: one dataclass, checked once, taken as an object, as keywords or both;
its keywords are typed (a TypedDict of the same fields), and what the factory gets of them
reaches every informer."""

from __future__ import annotations

import dataclasses
import inspect
from typing import TYPE_CHECKING

import pytest

from aioinformer.audit import CacheAudit
from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.factory import SharedInformerFactory
from aioinformer.operator import ManagerOptions
from aioinformer.operator._options import ManagerKeywords
from aioinformer.operator.manager import DEFAULT_CACHE_AUDIT, LeaderElection, Manager
from aioinformer.testing.clock import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

MANAGER_ONLY = {
    "leader_election",
    "health_address",
    "metrics_address",
    "cache_sync_timeout",
    "cache_sync_fail_fast",
    "graceful_shutdown_timeout",
    "shard",
    "webhook",
}


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    # Never sent a request: nothing here starts an informer.
    async with Client(Config(host="http://127.0.0.1:1", token="t")) as client:
        yield client


def test_the_keywords_are_the_options_fields_with_the_same_types() -> None:
    fields = {field.name: field.type for field in dataclasses.fields(ManagerOptions)}
    keywords = {
        name: getattr(hint, "__forward_arg__", hint)
        for name, hint in ManagerKeywords.__annotations__.items()
    }
    assert keywords == fields
    assert ManagerKeywords.__total__ is False


def test_every_factory_setting_has_the_factorys_name_and_default() -> None:
    factory = inspect.signature(SharedInformerFactory).parameters
    for field in dataclasses.fields(ManagerOptions):
        if field.name in MANAGER_ONLY:
            assert field.name not in factory, field.name
            continue
        assert field.name in factory, field.name
        if field.name != "cache_audit":  # on for a Manager, off for a bare factory
            assert field.default == factory[field.name].default, field.name
    assert ManagerOptions().cache_audit is DEFAULT_CACHE_AUDIT
    assert set(factory) - {field.name for field in dataclasses.fields(ManagerOptions)} == {"client"}


async def test_keywords_replace_the_fields_of_the_options_given(client: Client) -> None:
    election = LeaderElection(lease_name="ops")
    base = ManagerOptions(leader_election=election, cache_sync_timeout=60)
    manager = Manager(client, base, cache_sync_timeout=5, cache_audit=None)
    assert manager.options == dataclasses.replace(base, cache_sync_timeout=5, cache_audit=None)
    assert Manager(client, base).options is base
    assert Manager(client).options == ManagerOptions()


async def test_what_the_factory_gets_reaches_its_informers(client: Client) -> None:
    audit = CacheAudit(period=60)
    clock = FakeClock()
    manager = Manager(
        client, cache="objects", in_order=True, cache_audit=audit, resync_period=30, clock=clock
    )
    informer = manager.factory.informer_for("configmaps")
    assert (informer.cache, informer.in_order, informer.audit) == ("objects", True, audit)
    assert informer.resync_check_period == 30
    assert Manager(client, cache_audit=None).factory.informer_for("configmaps").audit is None


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"cache_sync_timeout": 0}, "cache_sync_timeout must be > 0"),
        ({"graceful_shutdown_timeout": -1}, "graceful_shutdown_timeout must be >= 0"),
        ({"cache": "dicts"}, "cache must be 'compact' or 'objects'"),
    ],
    ids=["sync-timeout", "shutdown-timeout", "cache-mode"],
)
async def test_a_bad_setting_is_refused_when_the_options_are_built(
    client: Client, keywords: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ManagerOptions(**keywords)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        Manager(client, **keywords)  # type: ignore[arg-type]


async def test_an_unknown_keyword_is_a_type_error_naming_it(client: Client) -> None:
    # mypy --strict refuses the call too (the ignore would be reported unused otherwise).
    with pytest.raises(TypeError, match="resync_perod"):
        Manager(client, resync_perod=30)  # type: ignore[call-arg]
