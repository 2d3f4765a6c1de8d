"""Informers for one slice of a resource (KEP-5866 shard selectors) through the factory:
the selector is checked and normalised before any request, sent with every LIST and
WATCH, and, where the server does not apply it (no ``shardInfo`` in its LIST answer, as
kube-apiserver before 1.36 or with the gate off), applied by the informer itself, so each
replica's cache holds its slice and nothing else after any churn."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer import State
from aioinformer._kernel.backoff import Backoff
from aioinformer.errors import SelectorError
from aioinformer.factory import SharedInformerFactory
from aioinformer.reflector import ReflectorOptions
from aioinformer.shard_selector import ShardSelector
from aioinformer.testing import FakeAPIServer
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.informer import SharedIndexInformer


def configmap(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"v": "0"},
    }


def slice_of(server: FakeAPIServer, selector: ShardSelector) -> set[str]:
    """The keys of the server's ConfigMaps in ``selector``'s slice."""
    return {
        f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        for obj in server.objects("configmaps")
        if selector.contains(uid=obj["metadata"]["uid"], namespace=obj["metadata"]["namespace"])
    }


def cached(informer: SharedIndexInformer) -> set[str]:
    return set(informer.indexer.list_keys())


def test_one_selector_in_two_spellings_is_one_informer(kube_client: Client) -> None:
    selector = ShardSelector.split(2)[0]
    factory = SharedInformerFactory(kube_client)
    first = factory.informer_for("configmaps", shard_selector=selector)
    spelled = str(selector).replace("'", '"').replace(", ", ",")
    assert factory.informer_for("configmaps", shard_selector=spelled) is first
    assert factory.informer_for("configmaps") is not first
    assert first.name == f"configmaps s={selector}"
    defaulted = SharedInformerFactory(kube_client, shard_selector=str(selector))
    assert defaulted.informer_for("configmaps").name == first.name
    assert defaulted.informer_for("configmaps", shard_selector=None).name == "configmaps"


def test_an_invalid_shard_selector_is_refused_before_any_request(kube_client: Client) -> None:
    bad = "shardRange(object.metadata.name, '0x0', '0x1')"
    with pytest.raises(
        SelectorError, match=re.escape('unsupported field path "object.metadata.name"')
    ):
        SharedInformerFactory(kube_client, shard_selector=bad)
    factory = SharedInformerFactory(kube_client)
    with pytest.raises(SelectorError, match="unsupported field path"):
        factory.informer_for("configmaps", shard_selector=bad)
    assert factory.informers() == {}


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming-list", "list-then-watch"])
@pytest.mark.parametrize("cache", ["compact", "objects"])
async def test_split_informers_hold_their_slices_of_a_server_that_ignores_the_selector(
    fake_apiserver: FakeAPIServer,
    kube_client: Client,
    cache: Any,
    streaming: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for namespace in "abc":
        fake_apiserver.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
    for i in range(30):
        fake_apiserver.create(configmap(f"cm-{i}", namespace=("a", "b", "c")[i % 3]))
    selectors = ShardSelector.split(3)
    caplog.set_level(logging.WARNING, logger="aioinformer.factory")
    reflector = ReflectorOptions(use_watch_list=streaming)
    async with SharedInformerFactory(kube_client, cache=cache, reflector=reflector) as factory:
        informers = [factory.informer_for("configmaps", shard_selector=s) for s in selectors]
        await factory.wait_for_cache_sync(timeout=5)
        slices = [slice_of(fake_apiserver, s) for s in selectors]
        assert [cached(informer) for informer in informers] == slices
        assert set().union(*slices) == {f"{'abc'[i % 3]}/cm-{i}" for i in range(30)}
        assert sum(map(len, slices)) == 30  # disjoint

        # Churn through the watches: the slices follow the server's objects.
        for i in range(30, 45):
            fake_apiserver.create(configmap(f"cm-{i}", namespace="a"))
        for i in range(0, 30, 4):
            fake_apiserver.delete("configmaps", "abc"[i % 3], f"cm-{i}")
        for i in range(1, 30, 4):
            obj = fake_apiserver.get("configmaps", "abc"[i % 3], f"cm-{i}")
            obj["data"] = {"v": "1"}
            fake_apiserver.update(obj)

        def converged() -> bool:
            return all(
                cached(informer) == slice_of(fake_apiserver, selector)
                for informer, selector in zip(informers, selectors, strict=True)
            )

        await wait_until(converged, poll=0.001, timeout=10)
        for informer, selector in zip(informers, selectors, strict=True):
            for key in cached(informer):
                namespace, name = key.split("/")
                found = informer.lister().get(name, namespace)
                assert found is not None
                assert selector.contains(uid=found["metadata"]["uid"], namespace=namespace)
    # Each informer says once that it filters for itself.
    notes = [r for r in caplog.records if "did not apply the shard selector" in r.getMessage()]
    assert len(notes) == 3


# -- informers that leave ----------------------------------------------------------------


async def test_a_removed_informer_stops_leaves_the_factory_and_can_be_built_again(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(configmap("a"))
    seen: list[str] = []
    async with SharedInformerFactory(kube_client) as factory:
        config_maps = factory.informer_for("configmaps")
        pods = factory.informer_for("pods")
        registration = config_maps.add_event_handler(
            on_add=lambda obj, initial: seen.append(obj["metadata"]["name"])
        )
        await factory.wait_for_cache_sync(timeout=5)
        await fake_apiserver.wait_for_watchers(2)

        await factory.remove_informer(config_maps)
        assert config_maps.state is State.STOPPED
        assert list(factory.informers().values()) == [pods]
        await registration.wait_stopped()  # its handler's task has ended too
        await wait_until(lambda: fake_apiserver.watch_count == 1, poll=0.001, timeout=5)
        fake_apiserver.create(configmap("b"))
        # The factory's wait and health no longer count it.
        assert await factory.wait_for_cache_sync(timeout=5) == {"pods": True}
        assert list(factory.health().informers) == ["pods"]

        again = factory.informer_for("configmaps")
        assert again is not config_maps
        await factory.wait_for_cache_sync(timeout=5)
        assert sorted(again.indexer.list_keys()) == ["default/a", "default/b"]
        assert seen == ["a"]  # the removed informer's handler saw nothing after it left

        with pytest.raises(ValueError, match="not an informer of this factory"):
            await factory.remove_informer(config_maps)
        key = next(iter(k for k, i in factory.informers().items() if i is pods))
        await factory.remove_informer(key)
        assert list(factory.informers().values()) == [again]
        assert pods.state is State.STOPPED


async def test_an_informer_removed_before_the_factory_starts_never_runs(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    factory = SharedInformerFactory(kube_client)
    config_maps = factory.informer_for("configmaps")
    await factory.remove_informer(config_maps)
    async with factory:
        assert await factory.wait_for_cache_sync(timeout=5) == {}
    assert fake_apiserver.watch_count == 0


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming-list", "list-then-watch"])
@pytest.mark.fake_apiserver(feature_gates={"ShardedListAndWatch": True})
async def test_an_informer_leaves_the_slicing_to_a_server_that_applies_it(
    fake_apiserver: FakeAPIServer,
    kube_client: Client,
    streaming: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for i in range(20):
        fake_apiserver.create(configmap(f"cm-{i}"))
    selectors = ShardSelector.split(2)
    caplog.set_level(logging.WARNING, logger="aioinformer.factory")
    reflector = ReflectorOptions(use_watch_list=streaming)
    async with SharedInformerFactory(kube_client, reflector=reflector) as factory:
        informers = [factory.informer_for("configmaps", shard_selector=s) for s in selectors]
        await factory.wait_for_cache_sync(timeout=5)
        assert [cached(i) for i in informers] == [slice_of(fake_apiserver, s) for s in selectors]
        for i in range(20, 30):
            fake_apiserver.create(configmap(f"cm-{i}"))
        await wait_until(
            lambda: all(
                cached(informer) == slice_of(fake_apiserver, selector)
                for informer, selector in zip(informers, selectors, strict=True)
            ),
            poll=0.001,
            timeout=10,
        )
    assert not [r for r in caplog.records if "did not apply the shard selector" in r.getMessage()]


def test_a_managers_shard_selector_reaches_its_informers(kube_client: Client) -> None:
    from aioinformer.operator import Manager

    selector = ShardSelector.split(2)[1]
    manager = Manager(kube_client, shard_selector=selector)
    assert manager.informer_for("configmaps").name == f"configmaps s={selector}"


# -- informers whose slice moves -----------------------------------------------------------


@pytest.mark.parametrize("gate", [True, False], ids=["server-applies", "informer-applies"])
async def test_a_reselected_informer_relists_into_its_new_slice(gate: bool) -> None:
    # The server applies selectors or not: either way the cache moves to the new slice,
    # the objects that left are deleted as tombstones, those that came are added.
    gates = {"ShardedListAndWatch": gate}
    async with FakeAPIServer(feature_gates=gates) as server, server.client() as client:
        await _reselected(server, client)


async def _reselected(fake_apiserver: FakeAPIServer, kube_client: Client) -> None:
    for i in range(24):
        fake_apiserver.create(configmap(f"cm-{i}"))
    first, second = ShardSelector.split(2)
    both = ShardSelector.of((first.ranges[0].start, second.ranges[0].end))
    added: list[str] = []
    deleted: list[tuple[str, bool]] = []
    quick = lambda: Backoff(initial=0.01, cap=0.05)  # noqa: E731 - a relist needs no wait here
    async with SharedInformerFactory(kube_client, backoff=quick) as factory:
        informer = factory.informer_for("configmaps", shard_selector=first)
        informer.add_event_handler(
            on_add=lambda obj, _initial: added.append(obj["metadata"]["name"]),
            on_delete=lambda obj: deleted.append(
                (getattr(obj, "key", None) or obj["metadata"]["name"], hasattr(obj, "key"))
            ),
        )
        await factory.wait_for_cache_sync(timeout=5)
        assert cached(informer) == slice_of(fake_apiserver, first)

        assert factory.reselect(informer, shard_selector=second)
        assert not factory.reselect(
            informer, shard_selector=str(second)
        )  # the same, spelled as text
        await wait_until(
            lambda: cached(informer) == slice_of(fake_apiserver, second), poll=0.001, timeout=10
        )
        assert informer.statistics().reflector is not None
        assert str(second) in repr(informer.lister_watcher)
        left = slice_of(fake_apiserver, first)
        assert {key for key, _ in deleted} == left
        assert all(tombstone for _, tombstone in deleted)
        assert {f"default/{name}" for name in added} == left | slice_of(fake_apiserver, second)

        # Widened to the whole space: everything, through the next relist.
        factory.reselect(informer, shard_selector=both)
        await wait_until(lambda: len(cached(informer)) == 24, poll=0.001, timeout=10)
        fake_apiserver.create(configmap("cm-late"))
        await wait_until(lambda: len(cached(informer)) == 25, poll=0.001, timeout=10)


async def test_reselect_moves_only_the_factorys_informers_and_checks_the_selectors(
    kube_client: Client,
) -> None:
    factory = SharedInformerFactory(kube_client)
    other = SharedInformerFactory(kube_client).informer_for(
        "configmaps", shard_selector=ShardSelector.split(2)[0]
    )
    with pytest.raises(ValueError, match="not an informer of this factory"):
        factory.reselect(other, shard_selector=ShardSelector.split(2)[1])
    sliced = factory.informer_for("configmaps", shard_selector=ShardSelector.split(2)[0])
    # Before the start: the first list reads the new selectors.
    assert factory.reselect(sliced, shard_selector=ShardSelector.split(2)[1])
    assert not factory.reselect(sliced)
    with pytest.raises(SelectorError):
        factory.reselect(sliced, shard_selector="shardRange(object.metadata.uid, '0x1', '0x0')")
    with pytest.raises(SelectorError):
        factory.reselect(sliced, label_selector="a in (")


async def test_an_informer_of_everything_narrowed_to_a_label_and_a_slice_and_back(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    for i in range(12):
        obj = configmap(f"cm-{i}")
        obj["metadata"]["labels"] = {"team": "a" if i % 2 else "b"}
        fake_apiserver.create(obj)
    quick = lambda: Backoff(initial=0.01, cap=0.05)  # noqa: E731 - a relist needs no wait here
    async with SharedInformerFactory(kube_client, backoff=quick) as factory:
        informer = factory.informer_for("configmaps")
        await factory.wait_for_cache_sync(timeout=5)
        assert len(cached(informer)) == 12
        half = ShardSelector.split(2)[0]
        assert factory.reselect(informer, label_selector="team=a", shard_selector=half)
        wanted = {key for key in slice_of(fake_apiserver, half) if int(key.rsplit("-", 1)[1]) % 2}
        await wait_until(lambda: cached(informer) == wanted, poll=0.001, timeout=10)
        assert factory.informer_for("configmaps") is informer  # its key is as built
        assert factory.reselect(informer, label_selector=None, shard_selector=None)
        await wait_until(lambda: len(cached(informer)) == 12, poll=0.001, timeout=10)


@pytest.mark.parametrize("watch_list", [True, False], ids=["streaming-list", "list"])
async def test_a_reselect_during_the_relist_of_the_previous_one_is_applied(
    watch_list: bool,
) -> None:
    # The list in flight was sent with the selection before: it is committed, and a
    # relist follows at once with the selection as it is now (a streaming list's stream
    # does not go on as the watch).
    gates = {"ShardedListAndWatch": True}
    async with FakeAPIServer(feature_gates=gates) as server, server.client() as client:
        for i in range(24):
            server.create(configmap(f"cm-{i}"))
        first, second = ShardSelector.split(2)
        both = ShardSelector.of((first.ranges[0].start, second.ranges[0].end))
        quick = lambda: Backoff(initial=0.01, cap=0.05)  # noqa: E731 - a relist needs no wait here
        options = ReflectorOptions(use_watch_list=watch_list)
        async with SharedInformerFactory(client, backoff=quick, reflector=options) as factory:
            informer = factory.informer_for("configmaps", shard_selector=first)
            await factory.wait_for_cache_sync(timeout=5)
            server.faults.latency(0.5)  # a slow server: the relist takes a while
            assert factory.reselect(informer, shard_selector=second)
            reflector = informer._reflector
            assert reflector is not None
            await wait_until(lambda: reflector._listing, poll=0.001, timeout=5)
            assert factory.reselect(informer, shard_selector=both)  # while it lists
            server.faults.latency(0)
            await wait_until(lambda: len(cached(informer)) == 24, poll=0.01, timeout=5)
