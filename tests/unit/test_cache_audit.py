"""Cache audits over a ``FakeListerWatcher`` on a ``FakeClock``, in both cache modes.

The fake loses an event with ``notify=False`` (client-go's ``AddDropWatch``): the change is
in the store, lists show it, no watch hears of it. A bookmark then moves the informer past
it, as the server's next bookmark would. The audit, every period, lists at
``resourceVersion=""``, waits for the cache to apply that list's resourceVersion,
compares, and relists when a key is missing, extra or stale; keys the cache changed
while it looked are left out.
"""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.audit import AuditOutcome, CacheAudit
from aioinformer.errors import CacheDivergence, Forbidden, InformerStoppedError, WatchTimeout
from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import ListOptions, ObjectList
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.reflector import ReflectorOptions, ReflectorState
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from aioinformer.transforms import strip_managed_fields
from tests._support_reflector import reflector_statistics
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer.audit import AuditReport, CacheAuditStatistics
    from aioinformer.informer import CacheMode

PERIOD = 300.0
BACKOFF = 2.0
"""More than the reflector's first backoff delay (0.8 s, up to 1.6 s with jitter)."""

CACHE_MODES = pytest.mark.parametrize("cache", ["compact", "objects"])


def pod(name: str, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def lw() -> FakeListerWatcher:
    return FakeListerWatcher(namespace="ns", objects=[pod("a"), pod("b"), pod("c")])


def audited(
    lw: Any, clock: FakeClock, cache: CacheMode, *, use_watch_list: bool = True, **options: Any
) -> SharedIndexInformer:
    """An informer auditing every ``PERIOD`` exactly; ``options`` are the audit's."""
    audit = CacheAudit(period=PERIOD, jitter=0.0, **options)
    return SharedIndexInformer(
        lw,
        clock=clock,
        cache=cache,
        audit=audit,
        reflector=ReflectorOptions(use_watch_list=use_watch_list),
    )


def lose_delete(lw: FakeListerWatcher, key: str) -> None:
    """Delete ``key`` without telling the watch, then let a bookmark carry the informer
    past the deletion, as the server's next one would."""
    lw.delete(key, notify=False)
    lw.send_bookmark()


async def synced(informer: SharedIndexInformer, lw: FakeListerWatcher) -> None:
    assert await informer.wait_for_sync(timeout=5)
    await lw.wait_for_watchers(1)


def cached_versions(informer: SharedIndexInformer) -> dict[str, str]:
    return {
        o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.lister().list()
    }


def server_versions(lw: FakeListerWatcher) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in lw.objects()}


def audit_figures(informer: SharedIndexInformer) -> CacheAuditStatistics:
    figures = informer.statistics().audit
    assert figures is not None
    return figures


def relists(informer: SharedIndexInformer) -> int:
    """Relists the informer's reflector did."""
    return reflector_statistics(informer).relists


async def next_audit(informer: SharedIndexInformer, clock: FakeClock) -> AuditReport:
    """Move the clock to the next periodic audit and return its report."""
    statistics = informer.statistics().audit
    before = 0 if statistics is None else statistics.audits + statistics.failures
    await clock.advance(PERIOD)

    def audited_once() -> bool:
        now = informer.statistics().audit
        return now is not None and now.audits + now.failures + now.lagging > before

    await wait_until(audited_once)
    report = informer.statistics().audit
    assert report is not None
    assert report.last is not None
    return report.last


async def repaired(informer: SharedIndexInformer, clock: FakeClock) -> None:
    """Sleep out the reflector's backoff before the relist, then wait for the repair."""
    await clock.advance(BACKOFF)

    def done() -> bool:
        audit = informer.statistics().audit
        return audit is not None and not audit.repairing

    await wait_until(done)


# -- finding and repairing -------------------------------------------------------------


@CACHE_MODES
async def test_a_cache_in_step_with_the_server_is_found_consistent_and_not_relisted(
    lw: FakeListerWatcher, clock: FakeClock, cache: CacheMode
) -> None:
    informer = audited(lw, clock, cache)
    async with informer:
        await synced(informer, lw)
        report = await next_audit(informer, clock)
        assert report.outcome is AuditOutcome.CONSISTENT
        assert (report.listed, report.cached, report.differences) == (3, 3, 0)
        assert report.resource_version == lw.resource_version
        assert report.pages == 1
        (listed,) = lw.list_calls
        assert listed == ListOptions(resource_version="", limit=500)
        assert relists(informer) == 0
        assert (audit_figures(informer).audits, audit_figures(informer).relists) == (1, 0)
        assert informer.health().live


@CACHE_MODES
async def test_a_lost_delete_is_found_extra_and_repaired_by_a_relist_that_sends_a_tombstone(
    lw: FakeListerWatcher, clock: FakeClock, cache: CacheMode
) -> None:
    informer = audited(lw, clock, cache)
    deleted: list[Any] = []
    informer.add_event_handler(on_delete=deleted.append)
    errors: list[BaseException] = []
    informer.set_watch_error_handler(lambda _reflector, error: errors.append(error))
    async with informer:
        await synced(informer, lw)
        lose_delete(lw, "ns/b")
        await wait_until(lambda: informer.last_store_resource_version == lw.resource_version)
        assert "b" in cached_versions(informer)

        report = await next_audit(informer, clock)
        assert report.outcome is AuditOutcome.DIFFERENT
        assert (report.missing, report.extra, report.stale) == ((), ("ns/b",), ())
        health = informer.health()
        assert not health.live  # the cache is wrong until the relist is applied
        assert health.audit is not None
        assert health.audit.unrepaired == 1

        await repaired(informer, clock)
        assert cached_versions(informer) == server_versions(lw)
        (tombstone,) = deleted
        assert isinstance(tombstone, DeletedFinalStateUnknown)
        assert tombstone.key == "ns/b"
        assert tombstone.obj["metadata"]["name"] == "b"
        # A consistent read, not the last resourceVersion the watch had reached.
        assert lw.watch_calls[-1].resource_version == ""
        assert informer.health().live
        assert relists(informer) == 1
        assert (audit_figures(informer).relists, audit_figures(informer).differences) == (1, 1)
        # Besides the watches re-opened after silent stretches of the fake clock:
        (divergence,) = [e for e in errors if not isinstance(e, WatchTimeout)]
        assert isinstance(divergence, CacheDivergence)
        assert divergence.extra == ("ns/b",)


@CACHE_MODES
async def test_a_lost_add_is_found_missing_and_the_relist_adds_it(
    lw: FakeListerWatcher, clock: FakeClock, cache: CacheMode
) -> None:
    informer = audited(lw, clock, cache)
    added: list[str] = []
    informer.add_event_handler(on_add=lambda obj, _initial: added.append(obj["metadata"]["name"]))
    async with informer:
        await synced(informer, lw)
        lw.add(pod("d"), notify=False)
        lw.send_bookmark()
        report = await next_audit(informer, clock)
        assert (report.missing, report.extra, report.stale) == (("ns/d",), (), ())
        await repaired(informer, clock)
        assert cached_versions(informer) == server_versions(lw)
        assert added[-1] == "d"


@CACHE_MODES
async def test_a_lost_update_is_found_stale_and_the_relist_updates_it(
    lw: FakeListerWatcher, clock: FakeClock, cache: CacheMode
) -> None:
    informer = audited(lw, clock, cache)
    updated: list[tuple[str, str]] = []
    informer.add_event_handler(
        on_update=lambda old, new: updated.append(
            (old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])
        )
    )
    async with informer:
        await synced(informer, lw)
        before = cached_versions(informer)["a"]
        lw.modify(pod("a", tier="web"), notify=False)
        lw.send_bookmark()
        report = await next_audit(informer, clock)
        assert (report.missing, report.extra, report.stale) == ((), (), ("ns/a",))
        await repaired(informer, clock)
        assert cached_versions(informer) == server_versions(lw)
        assert (before, lw.resource_version) in updated


@CACHE_MODES
async def test_an_informer_without_audit_keeps_a_lost_delete(
    lw: FakeListerWatcher, clock: FakeClock, cache: CacheMode
) -> None:
    informer = SharedIndexInformer(lw, clock=clock, cache=cache)
    async with informer:
        await synced(informer, lw)
        lose_delete(lw, "ns/b")
        for _ in range(3):
            await clock.advance(PERIOD)
        await clock.settle()
        assert "b" in cached_versions(informer)
        assert lw.list_calls == []
        assert informer.statistics().audit is None
        assert "cache_audit" not in informer.health().as_dict()


# -- what is not a difference ----------------------------------------------------------


class _Meanwhile:
    """A lister that, once it has its page, lets ``change`` happen and the informer apply
    it before handing the page over: the cache moves between the LIST and the comparison."""

    def __init__(
        self,
        lw: FakeListerWatcher,
        change: Callable[[], object],
        applied: Callable[[], bool],
    ) -> None:
        self._lw = lw
        self._change = change
        self._applied = applied

    async def list(self, options: ListOptions) -> ObjectList:
        page = await self._lw.list(options)
        self._change()
        await wait_until(self._applied)
        return page


@CACHE_MODES
@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda lw: lw.delete("ns/b"), id="deleted"),
        pytest.param(lambda lw: lw.modify(pod("b", tier="db")), id="updated"),
        pytest.param(lambda lw: lw.add(pod("z")), id="added"),
    ],
)
async def test_a_key_the_cache_changed_between_the_list_and_the_comparison_is_left_out(
    lw: FakeListerWatcher,
    clock: FakeClock,
    cache: CacheMode,
    change: Callable[[FakeListerWatcher], object],
) -> None:
    informer: SharedIndexInformer

    def applied() -> bool:
        return informer.last_store_resource_version == lw.resource_version

    lister = _Meanwhile(lw, lambda: change(lw), applied)
    informer = audited(lw, clock, cache, lister=lister)
    async with informer:
        await synced(informer, lw)
        report = await informer.audit_cache()
        assert report.outcome is AuditOutcome.CONSISTENT, report
        assert report.ignored == 1
        assert cached_versions(informer) == server_versions(lw)


class _Pages:
    """A lister answering fixed pages (one per call, in order)."""

    def __init__(self, *pages: ObjectList) -> None:
        self.pages = list(pages)
        self.calls: list[ListOptions] = []

    async def list(self, options: ListOptions) -> ObjectList:
        self.calls.append(options)
        await asyncio.sleep(0)
        return copy.deepcopy(self.pages[len(self.calls) - 1])


@CACHE_MODES
async def test_a_key_cached_at_a_newer_resource_version_than_the_list_is_not_stale(
    lw: FakeListerWatcher, clock: FakeClock, cache: CacheMode
) -> None:
    # The list was answered from a state older than the cache's (a lagging server cache).
    informer = audited(lw, clock, cache)
    async with informer:
        await synced(informer, lw)
        old = {name: lw.get(f"ns/{name}") for name in "abc"}
        lw.modify(pod("a", tier="web"))
        lw.send_bookmark()
        await wait_until(lambda: informer.last_store_resource_version == lw.resource_version)
        listed_rv = str(int(lw.resource_version) - 1)
        stale_list = _Pages(ObjectList(items=list(old.values()), resource_version=listed_rv))
        informer = audited(lw, clock, cache, lister=stale_list)
    async with informer:
        await synced(informer, lw)
        report = await informer.audit_cache()
        assert report.outcome is AuditOutcome.CONSISTENT
        assert report.resource_version == listed_rv


async def test_a_resync_while_an_audit_looks_does_not_hide_a_difference(
    clock: FakeClock,
) -> None:
    lw = FakeListerWatcher(namespace="ns", objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(
        lw,
        clock=clock,
        resync_period=1.0,
        audit=CacheAudit(period=PERIOD, jitter=0.0, catch_up_timeout=60.0),
    )
    informer.add_event_handler(on_add=lambda *_: None, resync_period=1.0)
    async with informer:
        await synced(informer, lw)
        lw.delete("ns/b", notify=False)
        audit = asyncio.ensure_future(informer.audit_cache())
        # The list is at the deletion; the cache is not: the audit waits, resyncs meanwhile.
        await wait_until(lambda: len(lw.list_calls) == 1)
        for _ in range(5):
            await clock.advance(1.0)
        assert not audit.done()
        lw.send_bookmark()
        report = await audit
        assert report.extra == ("ns/b",)


# -- pages, lagging, failures ----------------------------------------------------------


@CACHE_MODES
async def test_an_audit_pages_through_the_list_with_its_page_size(
    clock: FakeClock, cache: CacheMode
) -> None:
    lw = FakeListerWatcher(namespace="ns", objects=[pod(f"p{i}") for i in range(5)])
    informer = audited(lw, clock, cache, page_size=2)
    async with informer:
        await synced(informer, lw)
        report = await informer.audit_cache()
        assert (report.outcome, report.listed, report.pages) == (AuditOutcome.CONSISTENT, 5, 3)
        first, second, third = lw.list_calls
        assert first == ListOptions(resource_version="", limit=2)
        assert second.resource_version is None
        assert second.continue_ is not None
        assert (second.limit, third.limit) == (2, 2)


@CACHE_MODES
async def test_a_cache_that_does_not_reach_the_lists_resource_version_in_time_is_lagging(
    lw: FakeListerWatcher, clock: FakeClock, cache: CacheMode
) -> None:
    ahead = _Pages(ObjectList(items=lw.objects(), resource_version="1000"))
    informer = audited(lw, clock, cache, lister=ahead, catch_up_timeout=30.0)
    async with informer:
        await synced(informer, lw)
        audit = asyncio.ensure_future(informer.audit_cache())
        await wait_until(lambda: len(ahead.calls) == 1)
        await clock.advance(29.0)
        assert not audit.done()
        await clock.advance(1.0)
        report = await audit
        assert report.outcome is AuditOutcome.LAGGING
        assert report.error is not None
        assert "did not apply resourceVersion 1000 within 30s" in report.error
        assert (audit_figures(informer).lagging, audit_figures(informer).relists) == (1, 0)
        assert relists(informer) == 0
        assert informer.health().live


@CACHE_MODES
async def test_a_failed_audit_is_counted_and_the_next_period_audits_again(
    lw: FakeListerWatcher, clock: FakeClock, cache: CacheMode
) -> None:
    informer = audited(lw, clock, cache)
    async with informer:
        await synced(informer, lw)
        lw.fail_next_list(Forbidden({"code": 403, "reason": "Forbidden", "message": "no"}))
        report = await next_audit(informer, clock)
        assert report.outcome is AuditOutcome.FAILED
        assert report.error == "403 Forbidden: no"
        assert informer.health().live
        report = await next_audit(informer, clock)
        assert report.outcome is AuditOutcome.CONSISTENT
        assert (audit_figures(informer).failures, audit_figures(informer).audits) == (1, 1)


async def test_a_failing_on_demand_audit_raises_what_made_it_fail(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = audited(lw, clock, "compact")
    async with informer:
        await synced(informer, lw)
        lw.fail_next_list(Forbidden({"code": 403, "reason": "Forbidden", "message": "no"}))
        with pytest.raises(Forbidden):
            await informer.audit_cache()
        assert audit_figures(informer).failures == 1


class _StrayCancel:
    """A lister that lets out a ``CancelledError`` nobody asked for, once."""

    def __init__(self, lw: FakeListerWatcher) -> None:
        self._lw = lw
        self.calls = 0

    async def list(self, options: ListOptions) -> ObjectList:
        self.calls += 1
        if self.calls == 1:
            raise asyncio.CancelledError
        return await self._lw.list(options)


async def test_a_stray_cancellation_from_the_lister_fails_one_audit_not_the_informer(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    lister = _StrayCancel(lw)
    informer = audited(lw, clock, "compact", lister=lister)
    async with informer:
        await synced(informer, lw)
        report = await next_audit(informer, clock)
        assert report.outcome is AuditOutcome.FAILED
        assert report.error == "CancelledError"
        report = await next_audit(informer, clock)
        assert report.outcome is AuditOutcome.CONSISTENT
        assert informer.health().live


# -- schedule and sources --------------------------------------------------------------


async def test_audits_come_every_period_stretched_by_at_most_the_jitter(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    audit = CacheAudit(period=100.0, jitter=0.5)
    informer = SharedIndexInformer(lw, clock=clock, audit=audit)
    async with informer:
        await synced(informer, lw)
        times: list[float] = []
        while len(times) < 10:
            # From one timer to the next: an audit's list is seen at the time it was due.
            await clock.advance_to_next()
            await clock.settle()
            if len(lw.list_calls) > len(times):
                times.append(clock.monotonic())
        gaps = [later - earlier for earlier, later in zip([0.0, *times], times, strict=False)]
        assert all(100.0 <= gap <= 150.0 for gap in gaps), gaps
        assert max(gaps) - min(gaps) > 1.0  # jittered, not a fixed tick


class _MetadataSource(FakeListerWatcher):
    """A source that declares a metadata lister (as a ``ResourceClient`` does)."""

    def __init__(self, metadata: FakeListerWatcher, **options: Any) -> None:
        super().__init__(**options)
        self.metadata = metadata

    def metadata_lister(self) -> FakeListerWatcher:
        return self.metadata


async def test_a_source_with_a_metadata_lister_is_audited_through_it(clock: FakeClock) -> None:
    metadata = FakeListerWatcher(
        namespace="ns",
        api_version="meta.k8s.io/v1",
        kind="PartialObjectMetadata",
        objects=[{"metadata": {"name": "a", "namespace": "ns"}}],
    )
    source = _MetadataSource(metadata, namespace="ns", objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=clock, audit=CacheAudit(period=PERIOD))
    async with informer:
        await synced(informer, source)
        report = await informer.audit_cache()
        assert (report.outcome, report.listed) == (AuditOutcome.CONSISTENT, 1)
        assert len(metadata.list_calls) == 1
        assert source.list_calls == []


async def test_a_configured_lister_wins_over_the_sources_metadata_lister(clock: FakeClock) -> None:
    unused = FakeListerWatcher(namespace="ns")
    source = _MetadataSource(unused, namespace="ns", objects=[pod("a")])
    chosen = _Pages(ObjectList(items=source.objects(), resource_version="1"))
    audit = CacheAudit(period=PERIOD, lister=chosen)
    informer = SharedIndexInformer(source, clock=clock, audit=audit)
    async with informer:
        await synced(informer, source)
        await informer.audit_cache()
        assert (len(chosen.calls), len(unused.list_calls)) == (1, 0)


@CACHE_MODES
async def test_the_audit_compares_what_the_transform_left_in_the_cache(
    clock: FakeClock, cache: CacheMode
) -> None:
    managed = {"managedFields": [{"manager": "kubectl", "operation": "Update"}]}
    lw = FakeListerWatcher(
        namespace="ns",
        objects=[{**pod(name), "metadata": {**pod(name)["metadata"], **managed}} for name in "ab"],
    )
    informer = SharedIndexInformer(
        lw, clock=clock, cache=cache, transform=strip_managed_fields, audit=CacheAudit()
    )
    async with informer:
        await synced(informer, lw)
        report = await informer.audit_cache()
        assert report.outcome is AuditOutcome.CONSISTENT
        assert all("managedFields" not in o["metadata"] for o in informer.lister().list())


async def test_an_audit_needs_a_synced_informer_and_refuses_a_stopped_one(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = audited(lw, clock, "compact")
    with pytest.raises(RuntimeError, match="has not synced"):
        await informer.audit_cache()
    async with informer:
        await synced(informer, lw)
    with pytest.raises(InformerStoppedError):
        await informer.audit_cache()


async def test_health_and_statistics_carry_the_audit_figures(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = audited(lw, clock, "compact")
    async with informer:
        await synced(informer, lw)
        assert informer.health().as_dict()["cache_audit"] == {
            "period": PERIOD,
            "audits": 0,
            "differences": 0,
            "relists": 0,
            "lagging": 0,
            "failures": 0,
            "unrepaired": 0,
            "seconds_since_audit": None,
            "last": None,
        }
        lose_delete(lw, "ns/c")
        await next_audit(informer, clock)
        record = informer.health().as_dict()
        assert record["live"] is False
        assert record["last_error"].startswith("CacheDivergence: cache audit at resourceVersion")
        audit = record["cache_audit"]
        assert (audit["audits"], audit["differences"], audit["unrepaired"]) == (1, 1, 1)
        assert audit["seconds_since_audit"] == 0.0
        assert audit["last"] == {
            "outcome": "different",
            "resource_version": lw.resource_version,
            "listed": 2,
            "cached": 3,
            "missing": [],
            "extra": ["ns/c"],
            "stale": [],
            "ignored": 0,
            "pages": 1,
            "seconds": 0.0,
            "error": None,
        }
        await repaired(informer, clock)
        record = informer.health().as_dict()
        assert record["live"] is True
        assert record["cache_audit"]["unrepaired"] == 0


async def test_the_informer_stays_not_live_while_the_relist_that_repairs_it_fails(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = audited(lw, clock, "compact", use_watch_list=False)
    async with informer:
        await synced(informer, lw)
        lose_delete(lw, "ns/a")
        forbidden = Forbidden({"code": 403, "reason": "Forbidden", "message": "no"})
        # The audit's list goes through; the relists after it are refused twice.
        lw.fail_next_list(None, forbidden, forbidden)
        await next_audit(informer, clock)
        # The first list, the audit's, then the two refused relists:
        while len(lw.list_calls) < 4:
            assert not informer.health().live
            await clock.advance(0.5)
            await clock.settle()
        assert not informer.health().live
        await wait_until(lambda: informer.health().live, between=lambda: clock.advance(0.5))
        assert len(lw.list_calls) == 5
        assert cached_versions(informer) == server_versions(lw)


async def test_the_informer_is_not_live_while_the_relist_waits_to_be_applied(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = audited(lw, clock, "compact")
    gate = asyncio.Event()

    async def held(_old: Any, _new: Any) -> None:
        await gate.wait()

    # A handler with room for one notification: while it is held, the pop task waits.
    informer.add_event_handler(on_update=held, max_pending=1)
    async with informer:
        await synced(informer, lw)
        lw.modify(pod("a", tier="web"))
        lw.modify(pod("c", tier="web"))
        await wait_until(lambda: informer.statistics().handlers[0].pending == 1)
        lose_delete(lw, "ns/b")
        await next_audit(informer, clock)
        await clock.advance(BACKOFF)
        await wait_until(lambda: informer.statistics().fifo_pending > 0)
        health = informer.health()
        # Watching again, and heard from just now; but the relist is not in the cache yet.
        assert health.state is ReflectorState.WATCHING
        assert health.seconds_since_heard is not None
        assert health.liveness_window is not None
        assert health.seconds_since_heard <= BACKOFF < health.liveness_window
        assert "b" in cached_versions(informer)
        assert not health.live
        gate.set()
        await wait_until(lambda: informer.health().live)
        assert "b" not in cached_versions(informer)


async def test_an_audit_due_while_the_last_relist_is_pending_waits_one_period(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = audited(lw, clock, "compact", use_watch_list=False)
    async with informer:
        await synced(informer, lw)
        lose_delete(lw, "ns/b")
        lw.fail_next_list(None)  # the audit's list goes through,
        lw.stall_next_list()  # the relist it asks for never answers
        await next_audit(informer, clock)
        await clock.advance(BACKOFF)
        await wait_until(lambda: len(lw.list_calls) == 3)  # first list, audit, relist
        await clock.advance(PERIOD)
        await clock.settle()
        assert len(lw.list_calls) == 3
        assert audit_figures(informer).audits == 1
        report = await next_audit(informer, clock)
        assert report.extra == ("ns/b",)
        assert (audit_figures(informer).audits, audit_figures(informer).relists) == (2, 2)
        assert not informer.health().live


async def test_an_in_order_informer_is_audited_and_repaired_the_same_way(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    informer = SharedIndexInformer(
        lw, clock=clock, in_order=True, audit=CacheAudit(period=PERIOD, jitter=0.0)
    )
    deleted: list[Any] = []
    informer.add_event_handler(on_delete=deleted.append)
    async with informer:
        await synced(informer, lw)
        lose_delete(lw, "ns/c")
        report = await next_audit(informer, clock)
        assert report.extra == ("ns/c",)
        await repaired(informer, clock)
        assert [t.key for t in deleted] == ["ns/c"]
        assert cached_versions(informer) == server_versions(lw)
        assert informer.health().live
