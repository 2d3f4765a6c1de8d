"""What an informer does with an index function that gets an object wrong, in both cache
modes: the object stays cached, handed to the handlers and in every other index, and the
failure is counted in ``health()``, ``statistics()`` and the metrics, the informer staying
synced and live; ``strict_indexes=True`` stops the informer with an
:class:`IndexFuncError` instead, which its run, ``async with``, ``wait_for_sync`` and
``wait_for_cache_sync`` report. The factory and the Manager pass ``strict_indexes`` on."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer import State
from aioinformer.errors import (
    CacheSyncError,
    IndexerArgumentsError,
    IndexFuncError,
    IndexValuesError,
)
from aioinformer.factory import SharedInformerFactory
from aioinformer.informer import SharedIndexInformer, wait_for_cache_sync
from aioinformer.operator.manager import Manager
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from aioinformer.workqueue import set_metrics_provider
from tests._support_metrics import RecordingProvider
from tests._support_metrics import restore_installed_provider as restore_installed_provider
from tests._support_wait import wait_until
from tests.unit.operator.test_manager import client as client  # a client never asked anything

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.informer import CacheMode


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "labels": labels}}


def by_team(obj: dict[str, Any]) -> list[str]:
    return [obj["metadata"]["labels"]["team"]]


def informer_of(source: FakeListerWatcher, cache: CacheMode, **options: Any) -> SharedIndexInformer:
    return SharedIndexInformer(
        source,
        name="pods",
        clock=FakeClock(),
        cache=cache,
        indexers={"by-team": by_team},
        **options,
    )


def index_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "failed on" in r.getMessage()]


# -- lenient, the default ----------------------------------------------------------------


@pytest.mark.parametrize("in_order", [False, True], ids=["delta-fifo", "real-fifo"])
async def test_an_object_its_index_function_fails_on_is_cached_delivered_and_reported(
    cache: CacheMode, in_order: bool, caplog: pytest.LogCaptureFixture
) -> None:
    source = FakeListerWatcher(objects=[pod("web", team="a"), pod("mirror")])
    informer = informer_of(source, cache, in_order=in_order)
    added: list[str] = []
    informer.add_event_handler(on_add=lambda obj, initial: added.append(obj["metadata"]["name"]))
    with caplog.at_level(logging.ERROR):
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            await source.wait_for_watchers(1)
            await wait_until(lambda: len(added) == 2)
            assert sorted(informer.indexer.list_keys()) == ["default/mirror", "default/web"]
            mirror = informer.lister().get("mirror", namespace="default")
            assert mirror is not None
            assert mirror["metadata"]["name"] == "mirror"
            assert informer.indexer.index_keys("by-team", "a") == ["default/web"]
            assert sorted(added) == ["mirror", "web"]
            health = informer.health()
            # The cache is whole: the informer is synced and live, and says what failed.
            assert (health.synced, health.live) == (True, True)
            assert (health.index_errors, health.unindexed) == (1, 1)
            assert health.last_index_error == (
                "IndexFuncError: index 'by-team' failed on default/mirror: KeyError: 'team'"
            )
            body = health.as_dict()
            assert (body["index_errors"], body["unindexed"]) == (1, 1)
            assert body["last_index_error"] == health.last_index_error
            statistics = informer.statistics()
            assert (statistics.index_errors, statistics.unindexed) == (1, 1)
            assert isinstance(statistics.last_index_error, IndexFuncError)
            assert statistics.cache_size == 2
    assert index_logs(caplog) == [
        "informer pods: index 'by-team' failed on default/mirror: KeyError: 'team'; the "
        "object is cached, absent from that index until its function succeeds on it"
    ]


async def test_a_hot_object_failing_an_index_is_logged_once_and_counted_at_each_event(
    cache: CacheMode, caplog: pytest.LogCaptureFixture
) -> None:
    source = FakeListerWatcher(objects=[pod("mirror")])
    informer = informer_of(source, cache)
    with caplog.at_level(logging.ERROR):
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            for version in range(5):
                source.modify(pod("mirror", version=str(version)))
            await wait_until(lambda: informer.health().index_errors == 6)
            assert len(index_logs(caplog)) == 1
            # Fixed, then broken again: logged again.
            source.modify(pod("mirror", team="b"))
            await wait_until(lambda: informer.indexer.index_keys("by-team", "b") != [])
            assert informer.health().unindexed == 0
            source.modify(pod("mirror"))
            await wait_until(lambda: informer.health().index_errors == 7)
            assert len(index_logs(caplog)) == 2
            assert informer.indexer.get_by_key("default/mirror") is not None


async def test_index_failures_are_counted_per_informer_and_index_in_the_metrics(
    cache: CacheMode, restore_installed_provider: None
) -> None:
    provider = RecordingProvider()
    set_metrics_provider(provider)
    source = FakeListerWatcher(objects=[pod("a"), pod("b"), pod("c", team="x")])
    informer = informer_of(source, cache)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        assert provider.value("aioinformer_index_errors_total", "pods", "by-team") == 2
        informer.add_indexers({"by-owner": lambda obj: [obj["metadata"]["labels"]["owner"]]})
        assert provider.value("aioinformer_index_errors_total", "pods", "by-owner") == 3
        informer.add_indexers({"fine": lambda obj: []})
        source.modify(pod("a", version="2"))
        await wait_until(lambda: informer.health().index_errors == 7)
    assert provider.series("aioinformer_index_errors_total") == {
        ("pods", "by-team"): provider.metric("aioinformer_index_errors_total", "pods", "by-team"),
        ("pods", "by-owner"): provider.metric("aioinformer_index_errors_total", "pods", "by-owner"),
        ("pods", "fine"): provider.metric("aioinformer_index_errors_total", "pods", "fine"),
    }
    assert provider.value("aioinformer_index_errors_total", "pods", "by-team") == 3
    assert provider.value("aioinformer_index_errors_total", "pods", "by-owner") == 4
    assert provider.value("aioinformer_index_errors_total", "pods", "fine") == 0


async def test_an_index_function_returning_a_str_is_told_what_to_return(
    cache: CacheMode,
) -> None:
    def team_as_str(obj: dict[str, Any]) -> list[str]:
        return obj["metadata"]["labels"]["team"]  # type: ignore[no-any-return]

    source = FakeListerWatcher(objects=[pod("web", team="abc")])
    informer = SharedIndexInformer(
        source, clock=FakeClock(), cache=cache, indexers={"team": team_as_str}
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        assert informer.indexer.list_index_func_values("team") == []
        assert informer.indexer.list_keys() == ["default/web"]
        error = informer.statistics().last_index_error
        assert error is not None
        assert isinstance(error.error, IndexValuesError)
        assert "return a list of strings, e.g. ['abc']" in str(error)


def test_indexers_given_a_function_is_a_type_error_saying_what_to_pass(cache: CacheMode) -> None:
    with pytest.raises(IndexerArgumentsError, match=r"write indexers=\{'by_team': by_team\}"):
        SharedIndexInformer(FakeListerWatcher(), cache=cache, indexers=by_team)  # type: ignore[arg-type]
    informer = SharedIndexInformer(FakeListerWatcher(), cache=cache)
    with pytest.raises(TypeError, match=r"write indexers=\{'by_team': by_team\}"):
        informer.add_indexers(by_team)  # type: ignore[arg-type]


# -- strict_indexes=True -----------------------------------------------------------------


@pytest.mark.parametrize("in_order", [False, True], ids=["delta-fifo", "real-fifo"])
async def test_a_strict_informer_stops_with_the_error_naming_the_index_the_key_and_the_cause(
    cache: CacheMode, in_order: bool
) -> None:
    source = FakeListerWatcher(objects=[pod("web", team="a"), pod("mirror")])
    informer = informer_of(source, cache, strict_indexes=True, in_order=in_order)
    run = asyncio.create_task(informer.run())
    with pytest.raises(IndexFuncError) as waited:
        await asyncio.wait_for(informer.wait_for_sync(), timeout=5)
    with pytest.raises(IndexFuncError) as ran:
        await asyncio.wait_for(run, timeout=5)
    assert ran.value is waited.value
    assert str(ran.value) == "index 'by-team' failed on default/mirror: KeyError: 'team'"
    assert isinstance(ran.value.__cause__, KeyError)
    assert informer.state is State.STOPPED
    assert not informer.has_synced()
    health = informer.health()
    assert (health.stopped, health.live, health.index_errors) == (True, False, 1)
    # A wait begun after the failure reports it too.
    with pytest.raises(IndexFuncError):
        await informer.wait_for_sync()


async def test_a_strict_index_failure_cancels_the_async_with_body_with_its_error(
    cache: CacheMode,
) -> None:
    source = FakeListerWatcher(objects=[pod("web", team="a")])
    informer = informer_of(source, cache, strict_indexes=True)
    reached: list[str] = []

    async def body() -> None:
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            # After sync: a watch event the index function fails on stops the informer.
            source.add(pod("mirror"))
            await asyncio.sleep(5)
            reached.append("past the sleep")

    with pytest.raises(IndexFuncError, match="index 'by-team' failed on default/mirror"):
        await body()
    assert reached == []
    assert informer.state is State.STOPPED
    assert source.open_watches == 0


async def test_wait_for_cache_sync_names_a_strict_index_failure(cache: CacheMode) -> None:
    source = FakeListerWatcher(objects=[pod("mirror")])
    informer = informer_of(source, cache, strict_indexes=True)
    run = asyncio.create_task(informer.run())
    with pytest.raises(CacheSyncError) as caught:
        await asyncio.wait_for(wait_for_cache_sync(informer, timeout=60), timeout=5)
    assert "stopped before it synced: IndexFuncError: index 'by-team' failed on" in str(
        caught.value
    )
    assert isinstance(caught.value.__cause__, IndexFuncError)
    assert [record.state for record in caught.value.unsynced] == ["stopped"]
    assert caught.value.unsynced[0].last_error is caught.value.__cause__
    with pytest.raises(IndexFuncError):
        await run


async def test_a_strict_informer_refuses_an_index_added_later_and_runs_on(
    cache: CacheMode,
) -> None:
    source = FakeListerWatcher(objects=[pod("web", team="a")])
    informer = informer_of(source, cache, strict_indexes=True)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        with pytest.raises(IndexFuncError, match="index 'owner' failed on default/web"):
            informer.add_indexers({"owner": lambda obj: [obj["metadata"]["labels"]["owner"]]})
        assert sorted(informer.indexer.get_indexers()) == ["by-team"]
        source.add(pod("db", team="b"))
        await wait_until(lambda: informer.indexer.index_keys("by-team", "b") == ["default/db"])
        assert informer.state is State.RUNNING


# -- the factory and the Manager take what informers take --------------------------------


async def test_a_factory_refuses_indexers_given_a_function_before_building_anything(
    client: Client,
) -> None:
    factory = SharedInformerFactory(client)
    with pytest.raises(IndexerArgumentsError, match=r"write indexers=\{'by_team': by_team\}"):
        factory.informer_for("pods", indexers=by_team)  # type: ignore[arg-type]
    assert factory.informers() == {}


async def test_strict_indexes_reaches_every_informer_of_a_factory_and_of_a_manager(
    client: Client,
) -> None:
    assert SharedInformerFactory(client, strict_indexes=True).informer_for("pods").indexer.strict
    assert not SharedInformerFactory(client).informer_for("pods").indexer.strict
    manager = Manager(client, strict_indexes=True)
    assert manager.informer_for("configmaps").indexer.strict
