"""What an informer hands out stays as it was handed out, while the informer runs on.

A handler that keeps the objects it received, and a caller that keeps what a lister
returned, must be able to read them later although the informer has since applied
updates to the same objects. Each cache mode gets there its own way:

* ``cache="compact"``: the cache holds bytes, and every read (lister, indexer, a
  notification) gets a read-only view of its own: every attempt to change one, at any
  depth, raises :class:`~aioinformer.errors.ReadOnlyObjectError` and changes nothing;
  ``to_dict()`` and ``copy.deepcopy`` give plain copies whose changes reach no one.
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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from aioinformer import ObjectView, ReadOnlyObjectError
from aioinformer.indexer import NAMESPACE_INDEX, namespace_index_func
from aioinformer.informer import SharedIndexInformer
from aioinformer.models import KubeObject
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import Recorder, pod
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable

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


async def test_in_compact_mode_every_read_is_a_view_of_its_own(
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
        assert type(first) is ObjectView
        assert isinstance(first, Mapping)
        assert isinstance(first["spec"], dict)
        [listed] = lister.list()
        assert listed == first
        assert listed is not first


def attempts(obj: Any) -> list[Callable[[], object]]:
    """Every way to change a handed-out object in place, at each depth."""
    return [
        lambda: obj["metadata"]["labels"].__setitem__("touched-by", "handler"),
        lambda: obj["metadata"]["labels"].update({"app": "mutated"}),
        lambda: obj["spec"]["containers"].clear(),
        lambda: obj["spec"]["containers"].append({}),
        lambda: obj["spec"]["containers"][0].__setitem__("image", "mutated"),
        lambda: [c.pop("image") for c in obj["spec"]["containers"]],
        lambda: obj.__setitem__("status", None),
        lambda: obj["metadata"].__delitem__("annotations"),
        lambda: obj["metadata"]["annotations"].setdefault("x", "y"),
        lambda: obj["spec"].popitem(),
    ]


async def test_every_change_to_a_compact_read_raises_and_leaves_the_cache_as_the_server_sent_it(
    source_type: type[FakeListerWatcher],
) -> None:
    source = source_type(objects=[pod("a")])
    informer = SharedIndexInformer(
        source,
        clock=FakeClock(),
        cache="compact",
        indexers={NAMESPACE_INDEX: namespace_index_func},
    )
    refused: list[str] = []

    def mutate_on_add(obj: Any, is_in_initial_list: bool) -> None:
        for attempt in attempts(obj):
            try:
                attempt()
            except ReadOnlyObjectError as error:
                refused.append(str(error))

    informer.add_event_handler(on_add=mutate_on_add)
    lister = informer.lister()
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await wait_until(lambda: len(refused) == len(attempts({})))
        assert all("obj.to_dict()" in message for message in refused)
        server = source.get("default/a")
        got = lister.get("a", "default")
        assert got == server
        assert got is not None
        [listed] = lister.list()
        [indexed] = lister.by_index(NAMESPACE_INDEX, "default")
        for obj in (got, listed, indexed):
            for attempt in attempts(obj):
                try:
                    attempt()
                except ReadOnlyObjectError:
                    continue
                raise AssertionError("a change to a compact read went through")
        # A copy changes freely, and reaches no one.
        for copied in (got.to_dict(), copy.deepcopy(got), copy.copy(listed)):
            assert type(copied) is dict
            copied["metadata"]["labels"]["app"] = "mutated"
            copied["spec"]["containers"].clear()
            assert copied != server

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
    them as read-only, or use ``cache="compact"``, where every read is a read-only view."""
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
