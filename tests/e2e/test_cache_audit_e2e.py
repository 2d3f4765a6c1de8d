"""Cache audits against the fake API server, in both cache modes: a cache whose watch lost
a DELETE (or an ADDED, or a MODIFIED) is repaired by the audit within one period, handlers
get the tombstone or the change, ``health()`` shows the difference and is live again once
the relist is applied; steady churn gives no false positive; a label-selected, namespaced
informer compares its own set of objects; a Manager audits by default and is not ready
while it repairs.

The server and the informers share one :class:`FakeClock`: periods pass in milliseconds.
The HTTP between them is real, so the drivers advance the clock a step at a time and poll
in between (bounded, in real time).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.audit import AuditOutcome, AuditReport, CacheAudit
from aioinformer.factory import SharedInformerFactory
from aioinformer.informer import SharedIndexInformer
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.operator.manager import Manager
from aioinformer.testing import FakeAPIServer, FakeClock
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.informer import CacheMode

Factory = Callable[..., Awaitable[FakeAPIServer]]

PERIOD = 60.0
AUDIT = CacheAudit(period=PERIOD, jitter=0.2)
BOOKMARKS = 5.0
"""The fake's bookmark interval: what carries a quiet informer past a lost event."""
STEP = 0.5
"""Fake seconds per driver step: less than the reflector's first backoff (0.8 s), so a
state between the audit and its relist is seen."""
POLL = 0.005
RELIST = 5.0
"""Fake seconds an audit's relist may take: the backoff before it (under 1.6 s) and steps."""

CACHE_MODES = pytest.mark.parametrize("cache", ["compact", "objects"])


def configmap(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def versions(objects: list[dict[str, Any]]) -> dict[str, str]:
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
        for o in objects
    }


async def drive(
    clock: FakeClock, condition: Callable[[], bool], *, step: float = STEP, timeout: float = 20.0
) -> None:
    """Advance ``clock`` ``step`` seconds at a time, letting sockets work in between, until
    ``condition()`` holds."""

    async def advance() -> None:
        await clock.advance(step)

    await wait_until(condition, poll=POLL, between=advance, timeout=timeout)


def audits(informer: SharedIndexInformer) -> int:
    statistics = informer.statistics().audit
    return 0 if statistics is None else statistics.audits


def last_report(informer: SharedIndexInformer) -> AuditReport:
    statistics = informer.statistics().audit
    assert statistics is not None
    assert statistics.last is not None
    return statistics.last


def configmaps(
    client: Client, clock: FakeClock, cache: CacheMode, *, audit: CacheAudit | None
) -> SharedIndexInformer:
    """An informer of the ConfigMaps in ``default``."""
    return SharedIndexInformer(
        client.resource("configmaps", namespace="default"), clock=clock, cache=cache, audit=audit
    )


async def started(factory: Factory, clock: FakeClock, *names: str, **options: Any) -> FakeAPIServer:
    server = await factory(clock=clock, bookmark_interval=BOOKMARKS, **options)
    for name in names:
        server.create(configmap(name))
    return server


# -- repairs -------------------------------------------------------------------------


@CACHE_MODES
async def test_a_cache_that_missed_a_delete_is_repaired_by_the_audit_within_one_period(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, cache: CacheMode
) -> None:
    server = await started(fake_apiserver_factory, fake_clock, "a", "b", "c")
    async with server.client() as client:
        informer = configmaps(client, fake_clock, cache, audit=AUDIT)
        deleted: list[Any] = []
        informer.add_event_handler(on_delete=deleted.append)
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            await server.wait_for_watchers(1)
            server.faults.drop_watch_events(1, resource="configmaps")
            lost_at = fake_clock.monotonic()
            server.delete("configmaps", "default", "b")

            await drive(fake_clock, lambda: audits(informer) == 1)
            report = last_report(informer)
            assert report.outcome is AuditOutcome.DIFFERENT
            assert report.extra == ("default/b",)
            assert (report.missing, report.stale) == ((), ())
            health = informer.health()
            assert not health.live
            assert health.audit is not None
            assert health.audit.unrepaired == 1
            assert "default/b" in versions(informer.lister().list())

            await drive(fake_clock, lambda: bool(deleted) and informer.health().live)
            assert fake_clock.monotonic() - lost_at <= AUDIT.longest_delay + RELIST
            (tombstone,) = deleted
            assert isinstance(tombstone, DeletedFinalStateUnknown)
            assert tombstone.key == "default/b"
            assert tombstone.obj["metadata"]["name"] == "b"
            assert versions(informer.lister().list()) == versions(server.objects("configmaps"))
            statistics = informer.statistics()
            assert statistics.reflector is not None
            assert statistics.reflector.relists == 1
            assert server.faults.count("drop_watch_event") == 1


@CACHE_MODES
async def test_without_an_audit_a_cache_that_missed_a_delete_keeps_the_object(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, cache: CacheMode
) -> None:
    server = await started(fake_apiserver_factory, fake_clock, "a", "b")
    async with server.client() as client:
        informer = configmaps(client, fake_clock, cache, audit=None)
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            await server.wait_for_watchers(1)
            server.faults.drop_watch_events(1)
            server.delete("configmaps", "default", "b")
            later = fake_clock.monotonic() + 2 * AUDIT.longest_delay
            await drive(fake_clock, lambda: fake_clock.monotonic() >= later, step=BOOKMARKS)
            assert informer.last_store_resource_version == server.resource_version
            assert "default/b" in versions(informer.lister().list())
            assert informer.health().live


@CACHE_MODES
@pytest.mark.parametrize("lost", ["ADDED", "MODIFIED"])
async def test_a_cache_that_missed_an_add_or_an_update_is_repaired_within_one_period(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, cache: CacheMode, lost: str
) -> None:
    server = await started(fake_apiserver_factory, fake_clock, "a", "b")
    async with server.client() as client:
        informer = configmaps(client, fake_clock, cache, audit=AUDIT)
        seen: list[tuple[str, str, str]] = []
        informer.add_event_handler(
            on_add=lambda obj, _initial: seen.append(
                ("add", obj["metadata"]["name"], obj["metadata"]["resourceVersion"])
            ),
            on_update=lambda _old, new: seen.append(
                ("update", new["metadata"]["name"], new["metadata"]["resourceVersion"])
            ),
        )
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            await server.wait_for_watchers(1)
            server.faults.drop_watch_events(1, types=(lost,))
            lost_at = fake_clock.monotonic()
            if lost == "ADDED":
                written = server.create(configmap("c"))
            else:
                written = server.update(server.get("configmaps", "default", "a") | {"data": {}})
            name = written["metadata"]["name"]
            expected = ("add" if lost == "ADDED" else "update", name)

            await drive(fake_clock, lambda: audits(informer) == 1)
            report = last_report(informer)
            difference = report.missing if lost == "ADDED" else report.stale
            assert difference == (f"default/{name}",)
            assert not informer.health().live

            await drive(fake_clock, lambda: informer.health().live)
            assert fake_clock.monotonic() - lost_at <= AUDIT.longest_delay + RELIST
            assert (*expected, written["metadata"]["resourceVersion"]) in seen
            assert versions(informer.lister().list()) == versions(server.objects("configmaps"))


# -- no false positives ----------------------------------------------------------------


@CACHE_MODES
async def test_steady_churn_while_the_cache_lags_gives_no_false_difference(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, cache: CacheMode
) -> None:
    server = await started(fake_apiserver_factory, fake_clock, *(f"c{i}" for i in range(20)))
    audit = CacheAudit(period=20.0, jitter=0.2)
    async with server.client() as client:
        informer = configmaps(client, fake_clock, cache, audit=audit)
        reports: dict[int, AuditReport] = {}
        writes = 0

        async def churn() -> None:
            nonlocal writes
            writes += 1
            name = f"c{writes % 20}"
            if writes % 3 == 0:
                server.delete("configmaps", "default", name)
                server.create(configmap(name))
            else:
                server.patch("configmaps", "default", name, {"data": {"n": str(writes)}})
            statistics = informer.statistics().audit
            if statistics is not None and statistics.last is not None:
                reports[statistics.audits + statistics.lagging] = statistics.last
            await fake_clock.advance(STEP)

        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            await server.wait_for_watchers(1)
            # From now on every event reaches the informer two seconds late: each audit's
            # list is ahead of the cache, which catches up while the churn goes on.
            server.faults.delay_watch_events(2.0, resource="configmaps")
            await wait_until(lambda: audits(informer) >= 5, poll=POLL, between=churn, timeout=30)
            statistics = informer.statistics().audit
            assert statistics is not None
            assert (statistics.differences, statistics.relists, statistics.failures) == (0, 0, 0)
            assert statistics.lagging == 0
            assert all(r.outcome is AuditOutcome.CONSISTENT for r in reports.values())
            assert any(r.ignored > 0 for r in reports.values()), reports
            rounds = informer.statistics().reflector
            assert rounds is not None
            assert rounds.relists == 0


# -- scope -----------------------------------------------------------------------------


@CACHE_MODES
async def test_a_selected_namespaced_informer_audits_exactly_its_own_objects(
    fake_apiserver_factory: Factory, fake_clock: FakeClock, cache: CacheMode
) -> None:
    server = await started(fake_apiserver_factory, fake_clock)
    server.create_namespace("other")
    for namespace in ("default", "other"):
        for name, app in (("w1", "web"), ("w2", "web"), ("w3", "web"), ("d1", "db")):
            server.create(configmap(name, namespace, app=app))
    async with server.client() as client:
        factory = SharedInformerFactory(client, clock=fake_clock, cache=cache, cache_audit=AUDIT)
        informer = factory.informer_for("configmaps", namespace="default", label_selector="app=web")
        deleted: list[Any] = []
        informer.add_event_handler(on_delete=deleted.append)
        async with factory:
            await factory.wait_for_cache_sync(timeout=5)
            await server.wait_for_watchers(1)
            server.faults.drop_watch_events(1)
            server.delete("configmaps", "default", "w2")
            server.delete("configmaps", "other", "w1")  # outside: heard, and not ours

            await drive(fake_clock, lambda: audits(informer) == 1)
            report = last_report(informer)
            assert (report.listed, report.cached) == (2, 3)
            assert (report.missing, report.extra, report.stale) == ((), ("default/w2",), ())

            await drive(fake_clock, lambda: informer.health().live)
            assert [t.key for t in deleted] == ["default/w2"]
            assert sorted(versions(informer.lister().list())) == ["default/w1", "default/w3"]


# -- the Manager -----------------------------------------------------------------------


async def test_a_manager_audits_by_default_and_is_not_ready_while_it_repairs(
    fake_apiserver_factory: Factory, fake_clock: FakeClock
) -> None:
    server = await started(fake_apiserver_factory, fake_clock, "a", "b")

    async def run(client: Client) -> None:
        manager = Manager(client, clock=fake_clock, cache_audit=AUDIT)
        informer = manager.informer_for("configmaps")
        assert informer.audit == AUDIT
        async with manager:
            await wait_until(lambda: manager.health().ready, poll=POLL, timeout=5)
            await server.wait_for_watchers(1)
            server.faults.drop_watch_events(1)
            server.delete("configmaps", "default", "a")
            await drive(fake_clock, lambda: audits(informer) == 1)
            health = manager.health()
            assert not health.ready
            assert health.live
            record = health.as_dict()["informers"][informer.name]
            assert record["cache_audit"]["last"]["extra"] == ["default/a"]
            await drive(fake_clock, lambda: manager.health().ready)
            assert "default/a" not in versions(informer.lister().list())

    async with server.client() as client:
        await run(client)
        default = Manager(client)
        assert default.informer_for("configmaps").audit == CacheAudit()
        assert Manager(client, cache_audit=None).informer_for("secrets").audit is None
