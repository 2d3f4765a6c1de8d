"""What a range-mode controller's reconcile is called for: objects of the slots its shard
serves, once an object deleted while its slot was served, never one of a slot the shard
does not serve (moved away, or still in the cache until the relist after a move); and
the slot of each key let through, which a shard letting a slot go waits on."""

from __future__ import annotations

import uuid
from typing import Any

from aioinformer.indexer import meta_namespace_key
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.operator._shard import SlotGuard, SlotView
from aioinformer.operator.sharding import ShardedResource, ShardRing
from tests._support_sharding import GuardedInformer

RING = ShardRing(
    name="cms",
    namespace="ops",
    resources=(ShardedResource("configmaps"),),
    identity="a",
    mode="ranges",
    slots=4,
)


def cm(name: str) -> dict[str, Any]:
    # A uid as the API server makes them (random, so its hash spreads over the slots).
    uid = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
    return {"metadata": {"name": name, "namespace": "default", "uid": uid}}


def named_in(slot: int) -> str:
    """A name whose object falls in ``slot``."""
    return next(f"cm-{i}" for i in range(1000) if RING.slot_of(cm(f"cm-{i}")) == slot)


def guarded(serving: set[int]) -> tuple[GuardedInformer, SlotGuard]:
    informer = GuardedInformer()
    view = SlotView(RING, informer, lambda: serving)  # type: ignore[arg-type]
    return informer, view.guard(meta_namespace_key)


async def test_an_object_of_a_served_slot_is_reconciled_and_its_slot_remembered() -> None:
    name = named_in(1)
    informer, guard = guarded({1})
    informer.indexer.objects[f"default/{name}"] = cm(name)
    assert await guard(f"default/{name}") is False
    assert guard.slot_of_key(f"default/{name}") == 1


async def test_an_object_of_a_slot_not_served_is_refused() -> None:
    # Still in the cache after its slot moved, before the relist takes it out.
    name = named_in(2)
    informer, guard = guarded({1})
    informer.indexer.objects[f"default/{name}"] = cm(name)
    assert await guard(f"default/{name}") is True
    assert guard.slot_of_key(f"default/{name}") is None


async def test_a_slot_given_up_refuses_its_keys_at_once() -> None:
    name = named_in(1)
    serving = {1}
    informer, guard = guarded(serving)
    informer.indexer.objects[f"default/{name}"] = cm(name)
    assert await guard(f"default/{name}") is False
    serving.discard(1)
    assert await guard(f"default/{name}") is True
    assert guard.slot_of_key(f"default/{name}") is None


async def test_a_deletion_while_served_is_reconciled_once() -> None:
    name = named_in(3)
    informer, guard = guarded({3})
    informer.on_delete(cm(name))
    assert await guard(f"default/{name}") is False  # the deletion's reconcile
    assert guard.slot_of_key(f"default/{name}") == 3
    assert await guard(f"default/{name}") is True  # gone, and not pending any more


async def test_a_tombstone_of_a_slot_that_moved_is_no_deletion() -> None:
    # The relist after a move reports the slot's objects as deleted, in their last state.
    name = named_in(0)
    informer, guard = guarded({3})
    informer.on_delete(DeletedFinalStateUnknown(f"default/{name}", cm(name)))
    assert await guard(f"default/{name}") is True


async def test_a_tombstone_while_served_is_a_deletion() -> None:
    name = named_in(0)
    informer, guard = guarded({0})
    informer.on_delete(DeletedFinalStateUnknown(f"default/{name}", cm(name)))
    assert await guard(f"default/{name}") is False


async def test_a_deletion_pending_when_its_slot_moves_is_not_reconciled_here() -> None:
    name = named_in(2)
    serving = {2}
    informer, guard = guarded(serving)
    informer.on_delete(cm(name))
    serving.clear()
    assert await guard(f"default/{name}") is True


async def test_an_object_back_in_the_cache_is_no_pending_deletion() -> None:
    name = named_in(1)
    informer, guard = guarded({1})
    informer.on_delete(cm(name))
    informer.indexer.objects[f"default/{name}"] = cm(name)  # created again
    assert await guard(f"default/{name}") is False
    del informer.indexer.objects[f"default/{name}"]
    assert await guard(f"default/{name}") is True  # the old deletion is not replayed
