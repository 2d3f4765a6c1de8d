"""A range-mode shard's slot keeper (``aioinformer.operator._slot_keeper``) does no work
for what does not concern its slots: it moves its informers only when the slots served
changed, and a finished reconcile wakes it only while a slot is being let go."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from aioinformer.operator._slot_keeper import SlotKeeper
from aioinformer.operator.sharding import ShardedResource, ShardRing

if TYPE_CHECKING:
    from aioinformer._kernel.clock import Clock
    from aioinformer.factory import SharedInformerFactory
    from aioinformer.informer import SharedIndexInformer
    from aioinformer.operator._resourcelock import LeaseLock
    from aioinformer.operator._shard import SlotGuard
    from aioinformer.operator.controller import Controller


class _Factory:
    """Records each move of an informer's shard selector, as the factory would report it."""

    def __init__(self) -> None:
        self.selected: dict[int, str] = {}
        self.moves = 0

    def reselect(self, informer: Any, *, shard_selector: Any) -> bool:
        text = str(shard_selector)
        if self.selected.get(id(informer)) == text:
            return False
        self.selected[id(informer)] = text
        self.moves += 1
        return True


class _Informer:
    name = "configmaps"


class _Controller:
    def __init__(self) -> None:
        self.told: list[Any] = []

    def _on_reconcile_end(self, told: Any) -> None:
        self.told.append(told)

    def _reconciling(self) -> list[str]:
        return []


def _keeper(factory: _Factory) -> SlotKeeper:
    ring = ShardRing(
        name="r",
        namespace="default",
        resources=(ShardedResource("configmaps"),),
        identity="a",
        mode="ranges",
        slots=8,
    )
    return SlotKeeper(
        ring,
        cast("SharedInformerFactory", factory),
        cast("LeaseLock", object()),
        cast("SharedIndexInformer", object()),
        clock=cast("Clock", object()),
    )


def test_the_informers_move_only_when_the_slots_served_change() -> None:
    factory = _Factory()
    keeper = _keeper(factory)
    first, second = _Informer(), _Informer()
    keeper.add_informer(cast("SharedIndexInformer", first))
    keeper._follow_serving()
    assert factory.moves == 1
    for _ in range(5):
        keeper._follow_serving()
    assert factory.moves == 1  # nothing changed: not even a selector built
    keeper.seat.serving.update({1, 2})
    keeper._follow_serving()
    keeper._follow_serving()
    assert factory.moves == 2
    keeper.add_informer(cast("SharedIndexInformer", second))
    keeper._follow_serving()
    assert factory.moves == 3  # the informer added since is moved to the slots served
    assert factory.selected[id(first)] == factory.selected[id(second)]


def test_a_finished_reconcile_wakes_the_keeper_only_while_a_slot_is_let_go() -> None:
    keeper = _keeper(_Factory())
    controller = _Controller()
    keeper.add_guard(cast("Controller", controller), cast("SlotGuard", object()))
    (told,) = controller.told
    told()
    assert not keeper._wake.is_set()
    keeper.seat.releasing.add(3)
    told()
    assert keeper._wake.is_set()
