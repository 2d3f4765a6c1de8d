"""What an informer hands out stays as it was handed out, while the informer runs on.

A handler that keeps the objects it received, and a caller that keeps what a lister
returned, must be able to read them later although the informer has since applied
updates to the same objects. Each cache mode gets there its own way:

* ``cache="compact"``: the cache holds bytes, and every read (lister, indexer, a
  notification) decodes a fresh dict, so nothing the cache holds is ever handed out.
  Mutating what a lister returned changes nothing in the cache: a later read returns
  the server's state again.
* ``cache="objects"``: the cache holds the decoded dicts and hands out those very
  dicts. Updates *replace* a cached dict, never mutate it, so a kept object is a
  snapshot of its time; but lister results *are* the cached objects, so they must be
  treated as read-only.
* ``model=``, in either mode: every read and every handler gets a model of its own.

Input: a fake source whose objects change under a running informer, sending dicts or,
as the real client does for a compact informer, CompactEntry objects.
Output: assertions only. Task model: each test runs one informer in ``async with``.
"""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

from pydantic import Field

from aioinformer.indexer import NAMESPACE_INDEX, namespace_index_func
from aioinformer.informer import SharedIndexInformer
from aioinformer.models import KubeObject
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import Recorder, pod
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.informer import CacheMode

UPDATES = 5


def rv(obj: dict[str, Any]) -> str:
    value = obj["metadata"]["resourceVersion"]
    assert isinstance(value, str)
    return value


class Keeper:
    """A handler that keeps every object it is handed, beside a deep copy taken at once."""

    def __init__(self) -> None:
        self.kept: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def keep(self, obj: dict[str, Any]) -> None:
        self.kept.append((obj, copy.deepcopy(obj)))

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.keep(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.keep(old)
        self.keep(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.keep(obj)

    def assert_unchanged(self) -> None:
        for obj, at_receipt in self.kept:
            assert obj == at_receipt


async def test_objects_a_handler_or_a_caller_keeps_do_not_change_as_updates_are_applied(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(
        source, clock=FakeClock(), cache=cache, indexers={NAMESPACE_INDEX: namespace_index_func}
    )
    keeper = Keeper()
    informer.add_event_handler(keeper)
    lister = informer.lister()
    kept_reads: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def keep_reads() -> None:
        reads = [lister.get("a", "default"), informer.indexer.get_by_key("default/b")]
        reads += lister.list() + lister.by_index(NAMESPACE_INDEX, "default")
        for obj in reads:
            assert obj is not None
            kept_reads.append((obj, copy.deepcopy(obj)))

    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        for step in range(1, UPDATES + 1):
            keep_reads()
            source.modify(pod("a", step))
            source.modify(pod("b", step))
            newest = rv(source.get("default/b") or {})
            await wait_until(lambda: rv(lister.get("b", "default") or {}) == newest)  # noqa: B023
        keep_reads()
        source.delete("default/a")
        await wait_until(lambda: lister.get("a", "default") is None)
        await wait_until(lambda: informer.statistics().handlers[0].pending == 0)

    keeper.assert_unchanged()
    for obj, at_read in kept_reads:
        assert obj == at_read
    # The kept objects span every state: they are snapshots, not views of the cache.
    assert len({rv(obj) for obj, _ in kept_reads}) == 2 * (UPDATES + 1)
    assert {obj["metadata"]["labels"]["step"] for obj, _ in keeper.kept} == {
        str(step) for step in range(UPDATES + 1)
    }


async def test_a_handler_suspended_on_an_object_reads_it_unchanged_after_the_cache_moved_on(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    holding = asyncio.Event()
    release = asyncio.Event()
    seen_after: list[tuple[dict[str, Any], dict[str, Any]]] = []

    async def slow_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        at_receipt = copy.deepcopy(obj)
        holding.set()
        await release.wait()
        seen_after.append((obj, at_receipt))

    informer.add_event_handler(on_add=slow_add)
    lister = informer.lister()
    async with informer:
        await holding.wait()
        for step in range(1, UPDATES + 1):
            source.modify(pod("a", step))
        newest = rv(source.get("default/a") or {})
        # The cache applies updates while the handler still holds the first object.
        await wait_until(lambda: rv(lister.get("a", "default") or {}) == newest)
        release.set()
        await wait_until(lambda: len(seen_after) == 1)
    [(obj, at_receipt)] = seen_after
    assert obj == at_receipt
    assert obj["metadata"]["labels"]["step"] == "0"


async def test_in_compact_mode_every_read_is_a_fresh_decode(
    source_type: type[FakeListerWatcher],
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache="compact")
    lister = informer.lister()
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        first, second = lister.get("a", "default"), lister.get("a", "default")
        assert first is not None
        assert first == second
        assert first is not second
        assert first["spec"] is not (second or {})["spec"]
        assert type(first) is dict
        [listed] = lister.list()
        assert listed == first
        assert listed is not first


async def test_mutating_a_compact_lister_result_leaves_the_cache_as_the_server_sent_it(
    source_type: type[FakeListerWatcher],
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(
        source,
        clock=FakeClock(),
        cache="compact",
        indexers={NAMESPACE_INDEX: namespace_index_func},
    )
    handled: list[dict[str, Any]] = []

    def mutate_on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        obj["metadata"]["labels"]["touched-by"] = "handler"
        obj["spec"]["containers"].clear()
        handled.append(obj)

    informer.add_event_handler(on_add=mutate_on_add)
    lister = informer.lister()
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await wait_until(lambda: len(handled) == 1)
        server = source.get("default/a")
        got = lister.get("a", "default")
        assert got == server
        assert got is not None
        got["metadata"]["labels"]["app"] = "mutated"
        got["spec"]["containers"][0]["image"] = "mutated"
        got["status"] = None
        del got["metadata"]["annotations"]
        [listed] = lister.list()
        listed["metadata"]["name"] = "renamed"
        [indexed] = lister.by_index(NAMESPACE_INDEX, "default")
        indexed["spec"].clear()

        assert lister.get("a", "default") == server
        assert informer.indexer.get_by_key("default/a") == server
        assert lister.list() == [server]
        assert lister.by_index(NAMESPACE_INDEX, "default") == [server]
        assert lister.list(label_selector="app=web") == [server]
        assert lister.list(label_selector="app=mutated") == []


async def test_objects_mode_lister_results_are_the_cached_objects_so_treat_them_read_only() -> None:
    """In ``cache="objects"`` a lister hands out the cached dicts themselves (no copy is
    made, for speed): reading them is safe, since updates replace a cached object rather
    than mutate it, but a caller that mutates one corrupts the cache for everyone. Treat
    them as read-only, or use ``cache="compact"``, where every read is a private copy."""
    source = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache="objects")
    lister = informer.lister()
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        got = lister.get("a", "default")
        assert got is not None
        assert got is lister.get("a", "default")
        assert got is informer.indexer.get_by_key("default/a")
        assert lister.list()[0] is got
        source.modify(pod("a", 1))
        await wait_until(lambda: lister.get("a", "default") is not got)
        # Replaced, not mutated: the object read before the update is still step 0.
        assert got["metadata"]["labels"]["step"] == "0"
        assert (lister.get("a", "default") or {})["metadata"]["labels"]["step"] == "1"


class Pod(KubeObject):
    spec: dict[str, Any] = Field(default_factory=dict)


async def test_a_typed_informer_hands_each_reader_and_handler_its_own_model(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache, model=Pod)
    first, second = Recorder(), Recorder()
    informer.add_event_handler(first)
    informer.add_event_handler(second)
    lister = informer.lister()
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await wait_until(lambda: len(first.calls) == len(second.calls) == 1)
        [(_, mine, _)], [(_, theirs, _)] = first.calls, second.calls
        assert mine == theirs
        assert mine is not theirs
        got = lister.get("a", "default")
        assert isinstance(got, Pod)
        assert got is not lister.get("a", "default")
        got.spec.clear()
        mine.spec["changed"] = True
        assert lister.get("a", "default") == theirs
        assert (informer.indexer.get_by_key("default/a") or {})["spec"] == pod("a")["spec"]
