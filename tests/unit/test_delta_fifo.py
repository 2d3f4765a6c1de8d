"""DeltaFIFO, with cases ported from client-go's ``delta_fifo_test.go`` plus the asyncio
specifics: several poppers, close while waiting, cancellation."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.delta_fifo import (
    DeletedFinalStateUnknown,
    Delta,
    DeltaFIFO,
    Deltas,
    DeltasBatch,
    DeltaType,
    FIFOClosedError,
    Requeue,
)
from aioinformer.errors import KeyFuncError
from aioinformer.indexer import Indexer

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

Added, Updated, Deleted, Replaced, Sync = (
    DeltaType.ADDED,
    DeltaType.UPDATED,
    DeltaType.DELETED,
    DeltaType.REPLACED,
    DeltaType.SYNC,
)


@dataclass(frozen=True)
class Obj:
    name: str
    val: Any = None


def obj_key(obj: Obj) -> str:
    return obj.name


class Known:
    """A fixed set of known objects (client-go's literalListerGetter)."""

    def __init__(self, *objs: Obj) -> None:
        self.objs = {obj.name: obj for obj in objs}

    def list_keys(self) -> list[str]:
        return list(self.objs)

    def get_by_key(self, key: str) -> Obj | None:
        return self.objs.get(key)


def tomb(key: str, obj: Any) -> DeletedFinalStateUnknown:
    return DeletedFinalStateUnknown(key, obj)


def fifo(*known: Obj, with_known: bool = True, replaced: bool = False, **kw: Any) -> DeltaFIFO:
    return DeltaFIFO(
        obj_key,
        known_objects=Known(*known) if with_known else None,
        emit_delta_type_replaced=replaced,
        **kw,
    )


def deltas(*pairs: tuple[DeltaType, Any]) -> list[Delta]:
    return [Delta(t, o) for t, o in pairs]


async def pop(f: DeltaFIFO) -> Deltas:
    return await f.pop(lambda d: None)


async def newest(f: DeltaFIFO) -> Any:
    delta = (await pop(f)).newest()
    assert delta is not None
    return delta.object


# -- values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("member", "value"),
    [
        (Added, "Added"),
        (Updated, "Updated"),
        (Deleted, "Deleted"),
        (Replaced, "Replaced"),
        (Sync, "Sync"),
    ],
    ids=str,
)
def test_delta_type_values_are_client_go_spellings(member: DeltaType, value: str) -> None:
    assert member == value
    assert DeltaType(value) is member
    assert member.name == value.upper()


def test_delta_type_has_one_member_per_value() -> None:
    # One spelling per delta type: no alias members beside the upper-case names.
    assert list(DeltaType.__members__) == ["ADDED", "UPDATED", "DELETED", "REPLACED", "SYNC"]


def test_delta_is_frozen_and_compares_by_value() -> None:
    delta = Delta(Added, Obj("a"))
    assert delta == Delta(Added, Obj("a"))
    assert delta != Delta(Updated, Obj("a"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        delta.type = Deleted  # type: ignore[misc]


def test_deltas_newest_and_oldest_are_none_when_empty() -> None:
    assert Deltas().newest() is None
    assert Deltas().oldest() is None
    ds = Deltas(deltas((Added, 1), (Updated, 2)))
    assert ds.oldest() == Delta(Added, 1)
    assert ds.newest() == Delta(Updated, 2)


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        pytest.param(Obj("A"), "A", id="object"),
        pytest.param(tomb("B", None), "B", id="tombstone"),
        pytest.param(Deltas(deltas((Added, Obj("C")))), "C", id="deltas"),
        pytest.param(Deltas(deltas((Deleted, tomb("D", None)))), "D", id="deltas-of-tombstone"),
    ],
)
def test_key_of_understands_objects_tombstones_and_deltas(obj: Any, key: str) -> None:
    assert fifo().key_of(obj) == key


def test_key_of_empty_deltas_raises() -> None:
    with pytest.raises(KeyFuncError):
        fifo().key_of(Deltas())


# -- ported cases -------------------------------------------------------------------------


async def test_two_producers_keep_their_own_order() -> None:
    f = fifo(with_known=False)
    amount = 200

    async def produce(prefix: str) -> None:
        for i in range(amount):
            await f.add(Obj(f"{prefix}{i}", (prefix, i + 1)))
            await asyncio.sleep(0)

    async with asyncio.TaskGroup() as tg:
        tg.create_task(produce("a"))
        tg.create_task(produce("b"))
        last = {"a": 0, "b": 0}
        for _ in range(2 * amount):
            prefix, n = (await newest(f)).val
            assert n > last[prefix]
            last[prefix] = n


async def test_replace_after_a_queued_delete_still_delivers_the_new_object() -> None:
    old, new = Obj("foo", 1), Obj("foo", 2)
    f = fifo(old)
    await f.delete(old)
    await f.replace([new], "")
    assert await pop(f) == deltas((Deleted, old), (Sync, new))


OBJ = Obj("foo", 2)
OBJ_V2 = Obj("foo", 3)


async def _add_replace_empty(f: DeltaFIFO) -> None:
    await f.add(OBJ)
    await f.replace([], "0")


async def _add_replace_replace_empty(f: DeltaFIFO) -> None:
    await f.add(OBJ)
    await f.replace([OBJ], "0")
    await f.replace([], "0")


async def _add_delete_replace_empty(f: DeltaFIFO) -> None:
    await f.add(OBJ)
    await f.delete(OBJ)
    await f.replace([], "0")


async def _add_sync_sync_replace_empty(f: DeltaFIFO) -> None:
    await f.add(OBJ)
    await f.replace([OBJ], "0")
    await f.replace([OBJ], "0")
    await f.replace([], "0")


async def _add_two_empty_replaces(f: DeltaFIFO) -> None:
    await f.add(OBJ)
    await f.replace([], "0")
    await f.replace([], "1")


async def _add_delete_add_replace_empty(f: DeltaFIFO) -> None:
    await f.add(OBJ)
    await f.delete(OBJ)
    await f.add(OBJ_V2)
    await f.replace([], "0")


@pytest.mark.parametrize(
    "with_known", [True, False], ids=["with-known-objects", "no-known-objects"]
)
@pytest.mark.parametrize(
    ("operations", "replaced", "expected"),
    [
        pytest.param(
            _add_replace_empty,
            False,
            deltas((Added, OBJ), (Deleted, tomb("foo", OBJ))),
            id="added-object-is-deleted-on-replace",
        ),
        pytest.param(
            _add_replace_replace_empty,
            True,
            deltas((Added, OBJ), (Replaced, OBJ), (Deleted, tomb("foo", OBJ))),
            id="replaced-object-gets-a-single-delete",
        ),
        pytest.param(
            _add_delete_replace_empty,
            False,
            deltas((Added, OBJ), (Deleted, OBJ)),
            id="deleted-object-gets-no-second-delete",
        ),
        pytest.param(
            _add_sync_sync_replace_empty,
            False,
            deltas((Added, OBJ), (Sync, OBJ), (Sync, OBJ), (Deleted, tomb("foo", OBJ))),
            id="synced-object-gets-a-single-delete",
        ),
        pytest.param(
            _add_two_empty_replaces,
            False,
            deltas((Added, OBJ), (Deleted, tomb("foo", OBJ))),
            id="two-replaces-give-one-delete",
        ),
        pytest.param(
            _add_delete_add_replace_empty,
            False,
            deltas((Added, OBJ), (Deleted, OBJ), (Added, OBJ_V2), (Deleted, tomb("foo", OBJ_V2))),
            id="re-added-object-is-deleted-with-its-newest-state",
        ),
    ],
)
async def test_replace_emits_tombstone_for_object_only_in_queue(
    operations: Callable[[DeltaFIFO], Awaitable[None]],
    replaced: bool,
    expected: list[Delta],
    with_known: bool,
) -> None:
    f = fifo(with_known=with_known, replaced=replaced)
    await operations(f)
    assert await pop(f) == expected
    assert len(f) == 0
    assert f.list_keys() == []


async def test_requeue_puts_the_item_back_and_raises_its_error() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("foo", 10))

    def requeue_without_error(d: Deltas) -> None:
        raise Requeue(None)

    await f.pop(requeue_without_error)
    assert f.get_by_key("foo") is not None

    def requeue_with_error(d: Deltas) -> None:
        raise Requeue(ValueError("test error"))

    with pytest.raises(ValueError, match="test error"):
        await f.pop(requeue_with_error)
    assert f.get_by_key("foo") == deltas((Added, Obj("foo", 10)))

    await pop(f)
    assert f.get_by_key("foo") is None


async def test_changes_to_one_key_are_delivered_once_as_one_item() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("foo", 10))
    await f.update(Obj("foo", 12))
    await f.delete(Obj("foo", 15))
    assert f.list() == [Obj("foo", 15)]
    assert f.list_keys() == ["foo"]
    assert (await newest(f)).val == 15
    assert len(f) == 0
    assert f.get(Obj("foo")) is None


async def test_transform_runs_once_per_queued_object_and_never_on_tombstones() -> None:
    seen: list[Any] = []

    def transform(obj: Any) -> Any:
        seen.append(obj)
        assert isinstance(obj, Obj)
        return Obj(obj.name, (obj.val, "t"))

    f = fifo(with_known=False, transform=transform)
    await f.add(Obj("foo", 10))
    await f.add(Obj("bar", 11))
    await f.update(Obj("foo", 12))
    await f.delete(Obj("foo", 15))
    await f.replace([], "")
    await f.add(Obj("bar", 16))
    await f.replace([], "")
    assert f.list_keys() == ["foo", "bar"]
    assert len(seen) == 5

    foo = await pop(f)
    assert foo.newest() == Delta(Deleted, Obj("foo", (15, "t")))
    bar = await pop(f)
    assert bar.newest() == Delta(Deleted, tomb("bar", Obj("bar", (16, "t"))))


async def test_transform_is_not_applied_to_resync() -> None:
    calls: list[Any] = []

    def transform(obj: Any) -> Any:
        calls.append(obj)
        return obj

    f = fifo(Obj("foo", 5), transform=transform)
    await f.resync()
    assert await pop(f) == deltas((Sync, Obj("foo", 5)))
    assert calls == []


async def test_transform_is_applied_to_replace_even_when_emitting_sync() -> None:
    f = fifo(with_known=False, transform=lambda o: Obj(o.name, "t"))
    await f.replace([Obj("a", 1)], "1")
    assert await pop(f) == deltas((Sync, Obj("a", "t")))


async def test_delete_of_unknown_key_is_ignored_without_known_objects() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("foo", 10))
    await f.update(Obj("bar", 15))
    await f.add(Obj("qux", 17))
    await f.delete(Obj("qux", 18))
    await f.delete(Obj("baz", 20))
    assert [(await newest(f)).val for _ in range(3)] == [10, 15, 18]
    assert len(f) == 0


async def test_delete_of_a_known_key_is_queued() -> None:
    f = fifo(Obj("foo", 5), Obj("bar", 6), Obj("baz", 7))
    await f.add(Obj("foo", 10))
    await f.update(Obj("bar", 15))
    await f.delete(Obj("baz", 20))
    assert [(await newest(f)).val for _ in range(3)] == [10, 15, 20]
    assert len(f) == 0


async def test_delete_of_a_key_neither_queued_nor_known_is_ignored() -> None:
    f = fifo(Obj("foo", 5))
    await f.delete(Obj("other", 1))
    assert len(f) == 0


async def test_replace_supersedes_a_queued_add_for_the_same_key() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("foo", 10))
    await f.replace([Obj("foo", 15)], "0")
    assert (await newest(f)).val == 15
    assert len(f) == 0
    assert f.get(Obj("foo")) is None


async def test_resync_skips_a_key_with_a_queued_delete() -> None:
    f = fifo(Obj("foo", 5))
    await f.delete(Obj("foo", 10))
    await f.resync()
    assert f.get_by_key("foo") == deltas((Deleted, Obj("foo", 10)))


async def test_resync_queues_sync_for_known_objects() -> None:
    f = fifo(Obj("foo", 5))
    await f.resync()
    assert f.get_by_key("foo") == deltas((Sync, Obj("foo", 5)))


async def test_resync_without_known_objects_does_nothing() -> None:
    f = fifo(with_known=False)
    await f.resync()
    assert len(f) == 0


async def test_delete_after_add_of_unknown_key_is_queued() -> None:
    f = fifo()
    await f.add(Obj("foo", 5))
    await f.delete(Obj("foo", 6))
    queued = f.get_by_key("foo")
    assert queued is not None
    assert len(queued) == 2
    assert queued[-1].type is Deleted


KNOWN3 = (Obj("foo", 5), Obj("bar", 6), Obj("baz", 7))


async def _delete_baz(f: DeltaFIFO) -> None:
    await f.delete(Obj("baz", 10))
    await f.replace([Obj("foo", 5)], "0")


async def _add_baz(f: DeltaFIFO) -> None:
    await f.add(Obj("baz", 10))
    await f.replace([Obj("foo", 5)], "0")


async def _delete_and_readd_bar(f: DeltaFIFO) -> None:
    await f.delete(Obj("bar", 6))
    await f.add(Obj("bar", 100))
    await f.replace([Obj("foo", 5)], "0")


async def _replace_twice(f: DeltaFIFO) -> None:
    await f.replace([Obj("bar", 100), Obj("foo", 5)], "0")
    await f.replace([Obj("foo", 5)], "0")


@pytest.mark.parametrize(
    ("known", "operations", "expected"),
    [
        pytest.param(
            KNOWN3,
            _delete_baz,
            [
                deltas((Deleted, Obj("baz", 10))),
                deltas((Sync, Obj("foo", 5))),
                deltas((Deleted, tomb("bar", Obj("bar", 6)))),
            ],
            id="queued-delete-then-known-only-tombstone",
        ),
        pytest.param(
            KNOWN3,
            _add_baz,
            [
                deltas((Added, Obj("baz", 10)), (Deleted, tomb("baz", Obj("baz", 10)))),
                deltas((Sync, Obj("foo", 5))),
                deltas((Deleted, tomb("bar", Obj("bar", 6)))),
            ],
            id="queued-add-is-tombstoned-with-its-queued-state",
        ),
        pytest.param(
            KNOWN3,
            _delete_and_readd_bar,
            [
                deltas(
                    (Deleted, Obj("bar", 6)),
                    (Added, Obj("bar", 100)),
                    (Deleted, tomb("bar", Obj("bar", 100))),
                ),
                deltas((Sync, Obj("foo", 5))),
                deltas((Deleted, tomb("baz", Obj("baz", 7)))),
            ],
            id="tombstone-carries-the-newest-queued-state-over-the-cached-one",
        ),
        pytest.param(
            KNOWN3,
            _replace_twice,
            [
                deltas((Sync, Obj("bar", 100)), (Deleted, tomb("bar", Obj("bar", 100)))),
                deltas((Sync, Obj("foo", 5)), (Sync, Obj("foo", 5))),
                deltas((Deleted, tomb("baz", Obj("baz", 7)))),
            ],
            id="second-replace-tombstones-with-the-listed-state",
        ),
        pytest.param(
            None,
            _add_baz,
            [
                deltas((Added, Obj("baz", 10)), (Deleted, tomb("baz", Obj("baz", 10)))),
                deltas((Sync, Obj("foo", 5))),
            ],
            id="without-known-objects",
        ),
    ],
)
async def test_replace_makes_deletions(
    known: tuple[Obj, ...] | None,
    operations: Callable[[DeltaFIFO], Awaitable[None]],
    expected: list[list[Delta]],
) -> None:
    f = fifo(*(known or ()), with_known=known is not None)
    await operations(f)
    assert [await pop(f) for _ in expected] == expected
    assert len(f) == 0


async def test_replace_emits_replaced_deltas_when_asked() -> None:
    f = fifo(*KNOWN3, replaced=True)
    await f.delete(Obj("baz", 10))
    await f.replace([Obj("foo", 6)], "0")
    assert [await pop(f) for _ in range(3)] == [
        deltas((Deleted, Obj("baz", 10))),
        deltas((Replaced, Obj("foo", 6))),
        deltas((Deleted, tomb("bar", Obj("bar", 6)))),
    ]


async def test_replace_of_a_known_object_emits_replaced() -> None:
    f = fifo(Obj("foo", 5), replaced=True)
    await f.replace([Obj("foo", 5)], "0")
    assert await pop(f) == deltas((Replaced, Obj("foo", 5)))


async def test_tombstones_are_never_nested() -> None:
    f = fifo(Obj("foo", 5))
    await f.replace([], "1")
    await f.replace([], "2")
    assert await pop(f) == deltas((Deleted, tomb("foo", Obj("foo", 5))))


async def test_known_key_that_vanished_gets_a_tombstone_without_object() -> None:
    class Flaky(Known):
        def get_by_key(self, key: str) -> Obj | None:
            return None

    f = DeltaFIFO(obj_key, known_objects=Flaky(Obj("foo", 1)))
    await f.replace([], "1")
    assert await pop(f) == deltas((Deleted, tomb("foo", None)))


async def test_resync_does_not_add_sync_behind_a_queued_update() -> None:
    f = fifo(Obj("foo", 5))
    await f.update(Obj("foo", 6))
    await f.resync()
    assert await pop(f) == deltas((Updated, Obj("foo", 6)))
    assert len(f) == 0


async def test_has_synced_waits_for_tombstones_of_the_initial_list() -> None:
    f = fifo(*KNOWN3)
    await f.replace([Obj("foo", 5)], "0")
    flags: list[bool] = []

    def record_initial_list(d: Deltas) -> None:
        flags.append(not f.has_synced())

    expected = [
        deltas((Sync, Obj("foo", 5))),
        deltas((Deleted, tomb("bar", Obj("bar", 6)))),
        deltas((Deleted, tomb("baz", Obj("baz", 7)))),
    ]
    for want in expected:
        assert not f.has_synced()
        got = await f.pop(record_initial_list)
        assert got == want
    assert flags == [True, True, True]
    assert f.has_synced()


async def test_items_added_after_sync_are_not_in_the_initial_list() -> None:
    f = fifo(with_known=False)
    await f.replace([Obj("a")], "1")
    await pop(f)
    await f.add(Obj("b"))
    flags: list[bool] = []
    await f.pop(lambda d: flags.append(not f.has_synced()))
    assert flags == [False]


async def test_a_key_queued_again_keeps_its_place_in_line() -> None:
    f = fifo(with_known=False)
    for name, val in [("foo", 10), ("bar", 1), ("foo", 11), ("foo", 13), ("zab", 30)]:
        await f.add(Obj(name, val))
    assert (await newest(f)).val == 13
    await f.add(Obj("foo", 14))
    assert [(await newest(f)).val for _ in range(3)] == [1, 30, 14]


async def test_requeue_does_not_jump_ahead_of_queued_keys() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("b", 3))

    def requeue(d: Deltas) -> None:
        raise Requeue(None)

    await f.add(Obj("a", 1))
    await f.pop(requeue)
    await f.add(Obj("c", 4))
    assert [(await newest(f)).val for _ in range(3)] == [1, 3, 4]


async def _noop(f: DeltaFIFO) -> None:
    return None


async def _add_a(f: DeltaFIFO) -> None:
    await f.add(Obj("a", 1))


async def _update_a(f: DeltaFIFO) -> None:
    await f.update(Obj("a", 1))


async def _delete_unknown(f: DeltaFIFO) -> None:
    await f.delete(Obj("a", 1))


async def _replace_empty(f: DeltaFIFO) -> None:
    await f.replace([], "0")


async def _replace_two(f: DeltaFIFO) -> None:
    await f.replace([Obj("a", 1), Obj("b", 2)], "0")


async def _replace_two_pop_one(f: DeltaFIFO) -> None:
    await _replace_two(f)
    await pop(f)


async def _replace_two_pop_two(f: DeltaFIFO) -> None:
    await _replace_two(f)
    await pop(f)
    await pop(f)


async def _replace_duplicates_pop_one(f: DeltaFIFO) -> None:
    await f.replace([Obj("a", 1), Obj("a", 2)], "0")
    await pop(f)


async def _resync_then_replace(f: DeltaFIFO) -> None:
    await f.resync()
    await f.replace([], "0")


SYNC_CASES = [
    pytest.param(_noop, False, id="nothing-happened"),
    pytest.param(_add_a, True, id="add-before-any-replace"),
    pytest.param(_update_a, True, id="update-before-any-replace"),
    pytest.param(_delete_unknown, True, id="ignored-delete-before-any-replace"),
    pytest.param(_replace_empty, True, id="empty-replace"),
    pytest.param(_replace_two, False, id="replace-not-popped"),
    pytest.param(_replace_two_pop_one, False, id="replace-half-popped"),
    pytest.param(_replace_two_pop_two, True, id="replace-fully-popped"),
    pytest.param(_replace_duplicates_pop_one, True, id="replace-with-duplicate-keys"),
]


@pytest.mark.parametrize(("actions", "synced"), SYNC_CASES)
async def test_has_synced(actions: Callable[[DeltaFIFO], Awaitable[None]], synced: bool) -> None:
    f = fifo(with_known=False)
    await actions(f)
    assert f.has_synced() is synced


@pytest.mark.parametrize(("actions", "synced"), SYNC_CASES)
async def test_wait_synced_returns_exactly_when_has_synced_is_true(
    actions: Callable[[DeltaFIFO], Awaitable[None]], synced: bool
) -> None:
    f = fifo(with_known=False)
    waiter = asyncio.create_task(f.wait_synced())
    await actions(f)
    await asyncio.sleep(0)
    assert waiter.done() is synced
    waiter.cancel()


async def test_wait_synced_wakes_once_the_last_initial_item_has_been_processed() -> None:
    f = fifo(with_known=False)
    await f.replace([Obj("a", 1), Obj("b", 1)], "1")
    seen: list[bool] = []
    waiter = asyncio.create_task(f.wait_synced())

    def process(d: Deltas) -> None:
        seen.append(waiter.done())

    await f.pop(process)
    await f.pop(process)
    await asyncio.sleep(0)
    assert seen == [False, False]
    assert waiter.done()
    await f.wait_synced()  # a one-shot signal: given once, it stays given
    await f.replace([], "2")
    assert f.has_synced()


async def test_has_synced_counts_keys_queued_by_resync_before_the_first_replace() -> None:
    f = fifo(Obj("k", 1))
    await f.resync()
    await f.replace([], "0")
    assert not f.has_synced()
    assert await pop(f) == deltas((Sync, Obj("k", 1)), (Deleted, tomb("k", Obj("k", 1))))
    assert f.has_synced()


# -- asyncio specifics ---------------------------------------------------------------------


async def test_pop_hands_the_deltas_to_process_and_returns_them() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("a", 1))
    seen: list[Deltas] = []
    got = await f.pop(seen.append)
    assert seen == [got] == [deltas((Added, Obj("a", 1)))]


async def test_pop_awaits_an_async_process() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("a", 1))
    done: list[str] = []

    async def process(d: Deltas) -> None:
        await asyncio.sleep(0)
        done.append(d[0].object.name)

    await f.pop(process)
    assert done == ["a"]


async def test_get_by_key_returns_a_copy() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("a", 1))
    copy = f.get_by_key("a")
    assert copy is not None
    copy.clear()
    assert f.get_by_key("a") == deltas((Added, Obj("a", 1)))


async def test_second_delete_is_dropped_but_a_real_delete_replaces_a_tombstone() -> None:
    f = fifo(Obj("a", 0), Obj("b", 0))
    await f.delete(Obj("a", 1))
    await f.delete(Obj("a", 2))
    await f.delete(tomb("b", Obj("b", 1)))
    await f.delete(Obj("b", 2))
    assert f.get_by_key("a") == deltas((Deleted, Obj("a", 1)))
    assert f.get_by_key("b") == deltas((Deleted, Obj("b", 2)))


async def test_pop_waits_for_an_item() -> None:
    f = fifo(with_known=False)
    task = asyncio.create_task(pop(f))
    await asyncio.sleep(0)
    assert not task.done()
    await f.add(Obj("a", 1))
    assert await task == deltas((Added, Obj("a", 1)))


async def test_close_wakes_every_waiting_popper() -> None:
    f = fifo(Obj("foo", 5))
    poppers = [asyncio.create_task(pop(f)) for _ in range(10)]
    await asyncio.sleep(0)
    assert not any(t.done() for t in poppers)
    f.close()
    assert f.is_closed()
    results = await asyncio.gather(*poppers, return_exceptions=True)
    assert all(isinstance(r, FIFOClosedError) for r in results)


async def test_close_lets_poppers_drain_before_raising() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("a", 1))
    await f.add(Obj("b", 2))
    f.close()
    assert [(await newest(f)).name for _ in range(2)] == ["a", "b"]
    with pytest.raises(FIFOClosedError):
        await pop(f)


async def test_several_poppers_each_get_distinct_keys() -> None:
    f = fifo(with_known=False)
    got: list[str] = []

    async def consume() -> None:
        async def process(d: Deltas) -> None:
            got.append(d[0].object.name)
            await asyncio.sleep(0)

        while True:
            try:
                await f.pop(process)
            except FIFOClosedError:
                return

    async with asyncio.TaskGroup() as tg:
        for _ in range(4):
            tg.create_task(consume())
        await asyncio.sleep(0)
        for i in range(100):
            await f.add(Obj(f"k{i}", i))
            if i % 7 == 0:
                await asyncio.sleep(0)
        f.close()
    assert sorted(got) == sorted(f"k{i}" for i in range(100))


async def test_cancelling_a_waiting_pop_loses_nothing() -> None:
    f = fifo(with_known=False)
    task = asyncio.create_task(pop(f))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await f.add(Obj("a", 1))
    assert f.list_keys() == ["a"]
    assert await pop(f) == deltas((Added, Obj("a", 1)))


async def test_a_notified_popper_cancelled_before_it_runs_passes_the_wake_up_on() -> None:
    f = fifo(with_known=False)
    first = asyncio.create_task(pop(f))
    second = asyncio.create_task(pop(f))
    await asyncio.sleep(0)
    await f.add(Obj("a", 1))  # wakes the first waiter only
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, timeout=5) == deltas((Added, Obj("a", 1)))


async def test_cancelling_an_async_process_does_not_put_the_item_back() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("a", 1))
    started = asyncio.Event()

    async def slow(d: Deltas) -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(f.pop(slow))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(f) == 0


async def test_has_synced_stays_false_while_the_last_initial_item_is_processed() -> None:
    f = fifo(with_known=False)
    await f.replace([Obj("a", 1)], "1")
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(d: Deltas) -> None:
        started.set()
        await release.wait()

    task = asyncio.create_task(f.pop(slow))
    await started.wait()
    assert len(f) == 0
    assert not f.has_synced()
    release.set()
    await task
    assert f.has_synced()


async def test_requeue_after_new_changes_keeps_history_in_order() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("a", 1))
    started, release = asyncio.Event(), asyncio.Event()

    async def slow_then_requeue(d: Deltas) -> None:
        started.set()
        await release.wait()
        raise Requeue(None)

    task = asyncio.create_task(f.pop(slow_then_requeue))
    await started.wait()
    await f.update(Obj("a", 2))
    await f.add(Obj("b", 1))
    release.set()
    await task
    assert f.list_keys() == ["a", "b"]
    assert f.get_by_key("a") == deltas((Added, Obj("a", 1)), (Updated, Obj("a", 2)))


async def test_other_process_errors_propagate_and_drop_the_item() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("a", 1))

    def broken(d: Deltas) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await f.pop(broken)
    assert len(f) == 0


async def pop_one(f: DeltaFIFO) -> None:
    await pop(f)


def take_all(batch: DeltasBatch) -> None:
    for _ in batch:
        pass


async def pop_a_hundred(f: DeltaFIFO) -> None:
    await f.pop_batch(take_all, max_keys=100)


@pytest.mark.parametrize(
    ("take", "calls", "least_ticks"),
    [
        pytest.param(pop_one, 1000, 1000 // 128 - 1, id="pop"),
        # The checkpoint falls due every other batch of 100 keys.
        pytest.param(pop_a_hundred, 10, 4, id="pop_batch"),
    ],
)
async def test_pop_yields_to_other_tasks_during_a_long_backlog(
    take: Callable[[DeltaFIFO], Awaitable[None]], calls: int, least_ticks: int
) -> None:
    f = fifo(with_known=False)
    for i in range(1000):
        await f.add(Obj(f"k{i}", i))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before = ticks
    for _ in range(calls):
        await take(f)
    assert len(f) == 0
    assert ticks - before >= least_ticks
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_fifo_feeding_an_indexer_converges_to_the_last_state() -> None:
    indexer: Indexer[dict[str, Any]] = Indexer()
    f = DeltaFIFO(known_objects=indexer)

    def apply(d: Deltas) -> None:
        for delta in d:
            if delta.type is Deleted:
                indexer.delete(delta.object)
            else:
                indexer.update(delta.object)

    def pod(name: str, rv: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}

    await f.replace([pod("a", "1"), pod("b", "1")], "1")
    await f.update(pod("a", "2"))
    while len(f):
        await f.pop(apply)
    assert f.has_synced()
    await f.replace([pod("a", "3")], "3")
    while len(f):
        await f.pop(apply)
    assert indexer.list() == [pod("a", "3")]


def test_repr_shows_state() -> None:
    f = fifo(with_known=False)
    assert repr(f) == "<DeltaFIFO open queued=0 synced=False waiting=0>"


async def test_a_sync_process_may_return_a_value() -> None:
    f = fifo(with_known=False)
    await f.add(Obj("a", 1))
    assert await f.pop(lambda d: len(d)) == deltas((Added, Obj("a", 1)))  # type: ignore[arg-type,return-value]


def test_configuration_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        DeltaFIFO(obj_key, Known())  # type: ignore[call-arg]


async def test_wait_synced_returns_false_when_the_fifo_is_closed_first() -> None:
    f = fifo(with_known=False)
    await f.replace([Obj("a", 1)], "1")
    waiters = [asyncio.create_task(f.wait_synced()) for _ in range(2)]
    await asyncio.sleep(0)
    waiters[0].cancel()  # one waiter giving up leaves the other waiting
    await asyncio.sleep(0)
    f.close()
    assert await waiters[1] is False
    assert await f.wait_synced() is False


async def test_a_popper_cancelled_while_waiting_leaves_no_trace_and_takes_no_wake_up() -> None:
    f = fifo(with_known=False)
    first = asyncio.create_task(pop(f))
    second = asyncio.create_task(pop(f))
    await asyncio.sleep(0)
    assert "waiting=2" in repr(f)
    first.cancel()
    await f.add(Obj("a", 1))  # in the same turn as the cancellation: the wake-up skips it
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, timeout=5) == deltas((Added, Obj("a", 1)))
    assert "waiting=0" in repr(f)
