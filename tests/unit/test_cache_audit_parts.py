"""The pieces a cache audit is made of: its settings, the error it reports, the hook that
records what the cache applied, the reflector's relist on request, the metrics, and the
sources that can list metadata only."""

from __future__ import annotations

import gc
import random
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._objects.raw import CompactEntry
from aioinformer.audit import AuditOutcome, CacheAudit, KeyRecorder
from aioinformer.client import Client
from aioinformer.codec import CompactCodec
from aioinformer.config import Config
from aioinformer.delta_fifo import Delta, Deltas, DeltaType
from aioinformer.errors import CacheDivergence
from aioinformer.factory import SharedInformerFactory
from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import DescribedListerWatcher, ListOptions, ObjectList, SourceInfo
from aioinformer.reflector import ReflectorOptions
from aioinformer.testing.lister_watcher import FakeListerWatcher
from aioinformer.workqueue import set_metrics_provider
from tests._support_health import clock as clock
from tests._support_health import lw as lw
from tests._support_metrics import RecordedMetric
from tests._support_metrics import restore_installed_provider as restore_installed_provider

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer._kernel.gcpolicy import GCPolicy
    from aioinformer.listwatch import Decoder, WatchEvent
    from aioinformer.testing.clock import FakeClock


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}}


# -- settings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"period": 0}, "CacheAudit.period must be positive", id="period-zero"),
        pytest.param({"period": -5.0}, "CacheAudit.period must be positive", id="period-neg"),
        pytest.param({"jitter": -0.1}, "CacheAudit.jitter must be between 0 and 1", id="jitter"),
        pytest.param({"jitter": 1.5}, "CacheAudit.jitter must be between 0 and 1", id="jitter-big"),
        pytest.param({"page_size": 0}, "CacheAudit.page_size must be at least 1", id="page"),
        pytest.param(
            {"catch_up_timeout": 0}, "CacheAudit.catch_up_timeout must be positive", id="catch-up"
        ),
        pytest.param({"logged_keys": -1}, "CacheAudit.logged_keys must not be negative", id="keys"),
    ],
)
def test_an_audit_setting_out_of_range_is_refused_naming_it(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        CacheAudit(**options)
    with pytest.raises(ValueError, match=message):
        CacheAudit().replace(**options)


def test_the_default_audit_is_every_ten_minutes_with_a_fifth_of_jitter() -> None:
    audit = CacheAudit()
    assert (audit.period, audit.jitter, audit.page_size) == (600.0, 0.2, 500)
    assert audit.longest_delay == pytest.approx(720.0)


def test_each_wait_is_the_period_stretched_by_at_most_the_jitter() -> None:
    audit = CacheAudit(period=100.0, jitter=0.25)
    delays = [audit.next_delay(random.Random(seed)) for seed in range(200)]
    assert all(100.0 <= delay <= 125.0 for delay in delays)
    assert max(delays) - min(delays) > 20.0
    assert CacheAudit(period=100.0, jitter=0.0).next_delay(random.Random()) == 100.0


def test_a_divergence_names_a_few_keys_of_each_kind_and_counts_the_rest() -> None:
    error = CacheDivergence(
        "42",
        missing=("ns/a",),
        extra=tuple(f"ns/x{i}" for i in range(7)),
        stale=(),
        shown=3,
    )
    assert str(error) == (
        "cache audit at resourceVersion 42: 8 keys differ from the server "
        "(missing ns/a; extra ns/x0, ns/x1, ns/x2 and 4 more)"
    )
    assert error.extra == tuple(f"ns/x{i}" for i in range(7))
    assert str(CacheDivergence("7", stale=("b",), shown=0)) == (
        "cache audit at resourceVersion 7: 1 key differs from the server (stale 1 key)"
    )


# -- the hook ------------------------------------------------------------------------


def deltas(*types: DeltaType) -> Deltas:
    return Deltas([Delta(kind, pod("a")) for kind in types])


def test_the_recorder_counts_a_key_the_cache_changed_but_not_a_resync() -> None:
    recorder = KeyRecorder(lambda: None)
    recorder.changed = set()
    recorder.applied("ns/a", deltas(DeltaType.SYNC))
    recorder.applied("ns/b", deltas(DeltaType.SYNC, DeltaType.SYNC))
    assert recorder.changed == set()
    recorder.applied("ns/c", deltas(DeltaType.UPDATED))
    recorder.applied("ns/d", deltas(DeltaType.SYNC, DeltaType.DELETED))
    recorder.applied("ns/e", deltas(DeltaType.REPLACED))
    assert recorder.changed == {"ns/c", "ns/d", "ns/e"}


def test_the_recorder_reports_the_repair_once_every_key_was_applied_again() -> None:
    repaired: list[bool] = []
    recorder = KeyRecorder(lambda: repaired.append(True))
    recorder.await_repair({"ns/a", "ns/b"})
    assert recorder.in_use
    recorder.applied("ns/a", deltas(DeltaType.REPLACED))
    recorder.applied("ns/b", deltas(DeltaType.SYNC))  # a resync repairs nothing
    recorder.batch_applied()
    assert repaired == []
    recorder.applied("ns/b", deltas(DeltaType.DELETED))
    recorder.batch_applied()
    recorder.batch_applied()
    assert repaired == [True]
    assert not recorder.in_use


# -- metrics ---------------------------------------------------------------------------


class AuditMetrics:
    """A provider of the cache audit metrics alone, recording them."""

    def __init__(self) -> None:
        self.metrics: dict[tuple[str, ...], RecordedMetric] = {}

    def _metric(self, *key: str) -> RecordedMetric:
        return self.metrics.setdefault(key, RecordedMetric())

    def new_cache_audits_metric(self, informer: str, result: str) -> RecordedMetric:
        return self._metric("audits", informer, result)

    def new_cache_audit_differences_metric(self, informer: str, kind: str) -> RecordedMetric:
        return self._metric("differences", informer, kind)

    def new_cache_audit_duration_metric(self, informer: str) -> RecordedMetric:
        return self._metric("duration", informer)


@pytest.mark.usefixtures("restore_installed_provider")
async def test_each_audit_is_counted_by_result_and_its_differences_by_kind(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    provider = AuditMetrics()
    set_metrics_provider(provider)
    informer = SharedIndexInformer(lw, clock=clock, name="pods", audit=CacheAudit(period=60.0))
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await lw.wait_for_watchers(1)
        assert (await informer.audit_cache()).outcome is AuditOutcome.CONSISTENT
        lw.delete("ns/a", notify=False)
        lw.add(pod("c"), notify=False)
        lw.add(pod("d"), notify=False)
        lw.send_bookmark()
        assert (await informer.audit_cache()).outcome is AuditOutcome.DIFFERENT
    values = {key: metric.value for key, metric in provider.metrics.items()}
    assert values[("audits", "pods", "consistent")] == 1
    assert values[("audits", "pods", "different")] == 1
    assert values[("audits", "pods", "lagging")] == values[("audits", "pods", "failed")] == 0
    assert values[("differences", "pods", "missing")] == 2
    assert values[("differences", "pods", "extra")] == 1
    assert values[("differences", "pods", "stale")] == 0
    assert len(provider.metrics["duration", "pods"].observations) == 2


# -- sources that list metadata --------------------------------------------------------


def test_a_resource_client_lists_its_objects_as_metadata_for_an_audit() -> None:
    client = Client(Config(host="http://127.0.0.1:1"))
    full = client.resource("pods", namespace="ns")
    metadata = full.metadata_lister()
    assert (metadata.describe().metadata_only, metadata.namespace) == (True, "ns")
    assert not full.describe().metadata_only
    assert metadata.metadata_lister() is metadata


def test_a_factory_informers_audit_lists_metadata_with_its_namespace_and_selectors() -> None:
    client = Client(Config(host="http://127.0.0.1:1"))
    factory = SharedInformerFactory(client, cache_audit=CacheAudit(period=60.0))
    informer = factory.informer_for("pods", namespace="ns", label_selector="app=web")
    source = informer.lister_watcher
    assert isinstance(source, DescribedListerWatcher)
    lister = source.metadata_lister()
    assert repr(lister) == (
        "<<ResourceClient v1/pods ns='ns' metadata-only> label_selector='app=web'"
        " field_selector=None>"
    )
    assert informer.audit == CacheAudit(period=60.0)


def test_a_factory_refuses_one_lister_for_every_informers_audit(lw: FakeListerWatcher) -> None:
    client = Client(Config(host="http://127.0.0.1:1"))
    with pytest.raises(ValueError, match="must not name a lister"):
        SharedInformerFactory(client, cache_audit=CacheAudit(lister=lw))


# -- how an audit lists ----------------------------------------------------------------


class _Recording(FakeListerWatcher):
    """A metadata lister that can also answer compact entries, recording which it was
    asked for and whether the collector ran meanwhile."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.calls: list[tuple[str, bool]] = []

    async def list(self, options: ListOptions) -> ObjectList:
        self.calls.append(("list", gc.isenabled()))
        return await super().list(options)

    def decoded_with(self, codec: Decoder) -> DescribedListerWatcher:
        return _RecordingCompact(self) if isinstance(codec, CompactCodec) else self

    async def list_compact(self, options: ListOptions) -> ObjectList:
        self.calls.append(("list_compact", gc.isenabled()))
        page = await super().list(options)
        page.items = [CompactEntry.from_dict(item) for item in page.items]
        return page


class _RecordingCompact(DescribedListerWatcher):
    def __init__(self, recording: _Recording) -> None:
        self.recording = recording

    def describe(self) -> SourceInfo:
        return self.recording.describe()

    async def list(self, options: ListOptions) -> ObjectList:
        return await self.recording.list_compact(options)

    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        return self.recording.watch(options)


class _WithMetadata(FakeListerWatcher):
    def __init__(self, metadata: FakeListerWatcher, **options: Any) -> None:
        super().__init__(**options)
        self.metadata = metadata

    def metadata_lister(self) -> FakeListerWatcher:
        return self.metadata


@pytest.mark.parametrize(("policy", "collecting"), [("pause", False), ("off", True)])
async def test_an_audit_lists_compact_entries_with_the_collector_paused_unless_told_not_to(
    clock: FakeClock, policy: GCPolicy, collecting: bool
) -> None:
    metadata = _Recording(namespace="ns", objects=[pod("a"), pod("b")])
    source = _WithMetadata(metadata, namespace="ns", objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(
        source, clock=clock, cache="objects", reflector=ReflectorOptions(gc_policy=policy)
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await source.wait_for_watchers(1)
        report = await informer.audit_cache()
    assert (report.outcome, report.listed) == (AuditOutcome.CONSISTENT, 2)
    assert metadata.calls == [("list_compact", collecting)]
    assert gc.isenabled()
