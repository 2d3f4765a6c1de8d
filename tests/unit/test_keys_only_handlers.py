"""Handlers registered with ``keys_only=True``: keys in, and no decoding paid for them.

A keys-only handler (a controller enqueuing ``namespace/name``) is called exactly like
any other, but with each object's key where the object would be: ``on_add(key,
is_in_initial_list)``, ``on_update(old_key, new_key)``, ``on_delete(key)`` (a tombstone
too). That holds in both cache modes. In ``cache="compact"`` it is also what lets an
event skip the whole-object decode: when every consumer of the informer wants keys only
(and there is no transform and no index function of the user's), nothing but the few
fields the store decodes up front is ever decoded, which the tests check by counting
the calls of :meth:`aioinformer._objects.raw.CompactEntry.decode`. A full handler beside them costs
one decode per event, whose dict all full handlers share; an index function of the
user's costs one per stored object, while the namespace index and label indexes read
heads and cost none. A :class:`Controller` with the default key function registers
keys-only and so decodes nothing either. The decode counts need a source of CompactEntry objects,
as the real client is for a compact informer: a
:class:`~tests._support_cache.CompactFakeListerWatcher` (a source of dicts hands the
handlers its own dicts, with nothing to decode).

Input: a fake source and a :class:`FakeClock`. Output: assertions only.
Task model: each test runs one informer in ``async with``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.indexer import (
    NAMESPACE_INDEX,
    IndexFunc,
    label_index_func,
    namespace_index_func,
)
from aioinformer.informer import SharedIndexInformer
from aioinformer.operator.controller import Controller
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import (
    CompactFakeListerWatcher,
    Decodes,
    Recorder,
    pod,
    relist_after_lost_history,
    scripted_informer,
    until_idle,
)
from tests._support_tasks import settle
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.informer import CacheMode


def initial_objects() -> list[dict[str, Any]]:
    return [pod("a"), pod("b"), pod("node-1", namespace=None)]


async def churn(informer: SharedIndexInformer, source: FakeListerWatcher, clock: FakeClock) -> None:
    """Adds, an update, a delete, a resync, then a relist that finds one object deleted
    (a tombstone) and one created while the watch was down."""
    assert await informer.wait_for_sync(timeout=5)
    source.add(pod("c"))
    source.modify(pod("a", 1))
    source.delete("default/b")
    await until_idle(informer, source)
    await clock.advance(1)  # the resync check
    await settle(200)
    await until_idle(informer, source)
    source.delete("default/c", notify=False)
    source.add(pod("d"), notify=False)
    await relist_after_lost_history(informer, source, clock)


async def test_a_keys_only_handler_receives_keys_in_both_cache_modes(cache: CacheMode) -> None:
    clock = FakeClock()
    source = FakeListerWatcher(objects=initial_objects())
    informer = scripted_informer(source, clock, cache)
    keys, late = Recorder(), Recorder()
    informer.add_event_handler(keys, keys_only=True)
    async with informer:
        await churn(informer, source, clock)
        informer.add_event_handler(late, keys_only=True, name="late")
        await wait_until(lambda: len(late.calls) == 3)
    initial = [c for c in keys.calls if c[0] == "add" and c[2]]
    assert sorted(c[1] for c in initial) == ["default/a", "default/b", "node-1"]
    rest = [c for c in keys.calls if c not in initial]
    assert rest[:3] == [
        ("add", "default/c", False),
        ("update", "default/a", "default/a"),
        ("delete", "default/b"),
    ]
    resyncs = [c for c in rest[3:] if c[0] == "update"]
    assert {c[1] for c in resyncs} == {"default/a", "default/c", "node-1"}
    assert ("delete", "default/c") in rest[3:]  # the relist's tombstone, as its key
    assert ("add", "default/d", False) in rest[3:]
    assert sorted(late.calls) == [
        ("add", "default/a", True),
        ("add", "default/d", True),
        ("add", "node-1", True),
    ]


async def test_keys_only_handlers_cost_no_whole_object_decode_in_compact_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decodes = Decodes(monkeypatch)
    clock = FakeClock()
    source = CompactFakeListerWatcher(objects=initial_objects())
    informer = scripted_informer(source, clock, "compact")
    first, second, late = Recorder(), Recorder(), Recorder()
    informer.add_event_handler(first, keys_only=True)
    informer.add_event_handler(second, keys_only=True)
    async with informer:
        await churn(informer, source, clock)
        informer.add_event_handler(late, keys_only=True, name="late")
        await wait_until(lambda: len(late.calls) == 3)
        assert len(first.calls) >= 10
        assert first.calls == second.calls
        assert decodes.count == 0
        # The counter does see decodes: reading a lister's object past its head is one.
        got = informer.lister().get("a", "default")
        assert got is not None
        assert decodes.count == 0
        assert got["spec"]
        assert decodes.count == 1


async def test_full_handlers_beside_a_keys_only_one_get_views_decoded_only_when_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decodes = Decodes(monkeypatch)
    source = CompactFakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache="compact")
    keys = Recorder()
    informer.add_event_handler(keys, keys_only=True)
    full = [Recorder() for _ in range(3)]
    for number, recorder in enumerate(full):
        informer.add_event_handler(recorder, name=f"full #{number}")
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.add(pod("c"))
        source.modify(pod("a", 1))
        source.delete("default/b")
        await until_idle(informer, source)
        decoded = decodes.count
    # The recorders read nothing: nothing was decoded for them.
    assert decoded == 0
    for first, *others in zip(*(r.calls for r in full), strict=True):
        for position, arg in enumerate(first[1:], start=1):
            if isinstance(arg, Mapping):
                # Each handler its own view, of the same object.
                assert all(other[position] is not arg for other in others), first
                assert all(other[position] == arg for other in others), first
    assert [c[0] for c in full[0].calls] == ["add", "add", "add", "update", "delete"]
    # Three adds, the update's old and new, the delete's last state, in each of three
    # handlers: each view parses its object once, when first read past its head.
    compared = decodes.count
    for recorder in full:
        for call in recorder.calls:
            for arg in call[1:]:
                if isinstance(arg, Mapping):
                    assert arg["spec"] == arg["spec"]
    assert decodes.count - compared == 3 * 6
    assert [c[1] for c in keys.calls] == [
        "default/a",
        "default/b",
        "default/c",
        "default/a",
        "default/b",
    ]


def by_step(obj: Mapping[str, Any]) -> list[str]:
    return [obj["metadata"]["labels"]["step"]]


def by_image(obj: Mapping[str, Any]) -> list[str]:
    return [container["image"] for container in obj["spec"]["containers"]]


@pytest.mark.parametrize(
    ("indexers", "decoded"),
    [
        # An index function of the user's reading labels reads its view's head: no decode.
        pytest.param({"by-step": by_step}, 0, id="user-index-function-of-labels"),
        # One reading the spec parses each object it indexes once.
        pytest.param({"by-step": by_step, "by-image": by_image}, 3, id="user-index-function"),
        # The namespace index and label indexes read the stored head: no decode.
        pytest.param(
            {NAMESPACE_INDEX: namespace_index_func, "by-step": label_index_func("step")},
            0,
            id="head-only-indexes",
        ),
    ],
)
async def test_an_index_costs_a_keys_only_compact_informer_decodes_only_if_it_reads_objects(
    indexers: dict[str, IndexFunc], decoded: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    decodes = Decodes(monkeypatch)
    source = CompactFakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache="compact", indexers=indexers)
    informer.add_event_handler(Recorder(), keys_only=True)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.modify(pod("a", 1))
        await until_idle(informer, source)
        assert informer.indexer.index_keys("by-step", "0") == ["default/b"]
        assert informer.indexer.index_keys("by-step", "1") == ["default/a"]
    assert decodes.count == decoded


async def test_a_controller_over_a_compact_informer_reconciles_keys_without_decoding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decodes = Decodes(monkeypatch)
    source = CompactFakeListerWatcher(objects=[pod("a"), pod("node-1", namespace=None)])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache="compact")
    reconciled: list[str] = []
    controller = Controller("keys", reconciled.append, informers=[informer])
    async with informer, controller:
        assert await informer.wait_for_sync(timeout=5)
        await wait_until(lambda: sorted(reconciled) == ["default/a", "node-1"])
        source.modify(pod("a", 1))
        source.delete("node-1")
        await wait_until(lambda: len(reconciled) == 4)
        await until_idle(informer, source)
    assert sorted(reconciled[2:]) == ["default/a", "node-1"]
    assert decodes.count == 0
