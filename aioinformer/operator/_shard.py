r"""A replica's half of a shard ring: acknowledging drains, and telling a move from a
deletion, for the controllers it runs.

Role: in a sharded :class:`~aioinformer.operator.Manager`, every controller watching a
ring resource through the manager's (shard-selected) informer gets a guard, run before
each reconcile. What a sharded controller's reconcile is called for:

* an object this shard owns, as usual;
* once, an object deleted while this shard owned it (the watch's last state of it still
  carries this shard's label), so deletion logic runs as it would unsharded;
* **never** an object that moved to another shard. The watch reports an object leaving
  the selector as deleted, in its new state (a handler's ``on_delete`` sees an object
  ``ring.owns()`` no longer: it moved, it still exists, without a deletionTimestamp);
  the guard drops every key of it that is still queued (a requeue, a periodic check)
  until it comes back.

Draining: when the sharder labels one of this shard's objects with the drain label,

1. the label's update enqueues the object's key, whatever the controller's predicates
   say (a guard watch of its own);
2. the work queue hands the key over only once a reconcile of it that was running has
   finished (one worker per key at a time);
3. the guard removes the shard and drain labels with a merge patch whose
   resourceVersion is the one the cache shows (a 409, meaning the object changed
   meanwhile, is retried by the controller), and the key is forgotten: the reconcile is
   not called for it again while it is away.

In range mode (see :mod:`aioinformer.operator._slots`) no label moves: a
:class:`SlotView` and its guards (:class:`SlotGuard`) play these parts with the slot of each
object's hash, and a shard gives a slot up as a whole.

Input: the controller, the shard-selected informer of a ring resource and that
resource. Output: a guard the controller runs before each reconcile. Task model: none
of its own; the guard runs on the controller's workers, the view's handler on the
informer's dispatch.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from aioinformer._objects.meta import resource_version_of
from aioinformer.errors import NotFound
from aioinformer.indexer import split_meta_namespace_key
from aioinformer.models import DeletedFinalStateUnknown

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from aioinformer.client import GVR, Client, ResourceInfo
    from aioinformer.informer import SharedIndexInformer
    from aioinformer.operator.sharding import ShardRing

__all__ = ["DrainGuard", "ShardView", "SlotGuard", "SlotView"]

logger = logging.getLogger(__name__)


class ShardView:
    """One shard-selected informer of a ring resource, as its controllers' guards see it.

    Registered on the informer when it is made, before any controller watches it, so
    that for every event it runs no later than a controller's own handler: each guard
    learns of a deletion seen while this shard owned the object before the key it
    enqueues is reconciled.
    """

    __slots__ = ("_guards", "_registration", "_ring", "informer")

    def __init__(self, ring: ShardRing, informer: SharedIndexInformer) -> None:
        self._ring = ring
        self.informer = informer
        self._guards: list[DrainGuard] = []
        self._registration = informer.add_event_handler(
            on_delete=self._deleted, name=f"shard {ring.identity}"
        )

    def retire(self) -> None:
        """Stop following deletions: the ring took range mode, and no drain guard of this
        view will ever run (their record of deletions would only grow)."""
        self.informer.remove_event_handler(self._registration)
        for guard in self._guards:
            guard._deleted.clear()

    def _deleted(self, obj: Any) -> None:
        last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not self._ring.owns(last):
            return  # moved to another shard: not a deletion
        for guard in self._guards:
            guard.deleted(last)

    def guard(
        self,
        client: Client,
        resource: str | GVR | ResourceInfo,
        key_func: Callable[[Any], str],
    ) -> DrainGuard:
        """A new guard for one controller watching this informer."""
        guard = DrainGuard(self._ring, client, self.informer, resource, key_func)
        self._guards.append(guard)
        return guard


class DrainGuard:
    """Guards one controller's reconciles of one ring resource (see the module notes).
    :meth:`keys` is the enqueue mapping of the guard's watch; :meth:`__call__` runs
    before each reconcile and returns True when the key was handled here."""

    __slots__ = (
        "_client",
        "_deleted",
        "_drained",
        "_informer",
        "_key_func",
        "_resource",
        "_ring",
    )

    def __init__(
        self,
        ring: ShardRing,
        client: Client,
        informer: SharedIndexInformer,
        resource: str | GVR | ResourceInfo,
        key_func: Callable[[Any], str],
    ) -> None:
        self._ring = ring
        self._client = client
        self._informer = informer
        self._resource = resource
        self._key_func = key_func
        self._drained: set[str] = set()
        """Keys given up whose object the cache still shows (the move not seen yet)."""
        self._deleted: set[str] = set()
        """Keys of objects deleted while this shard owned them, not yet reconciled."""

    def deleted(self, obj: Any) -> None:
        """``obj`` was deleted while this shard owned it: its next reconcile runs."""
        self._deleted.add(self._key_func(obj))

    def keys(self, obj: Any) -> Iterable[str]:
        """The key of ``obj`` when the sharder asked for it back, else nothing."""
        if self._ring.draining(obj) and self._ring.owns(obj):
            return (self._key_func(obj),)
        return ()

    async def __call__(self, key: str) -> bool:
        ring = self._ring
        obj = self._informer.indexer.get_by_key(key)
        if obj is None:
            self._drained.discard(key)
            if key in self._deleted:
                self._deleted.discard(key)
                return False  # deleted while ours: reconciled like any deletion
            return True  # moved away, or never ours: not a deletion
        self._deleted.discard(key)  # here again: a deletion no longer pending
        if key in self._drained:
            if ring.owns(obj) and not ring.draining(obj):
                self._drained.discard(key)  # assigned back before the cache saw it go
                return False
            return True  # given up; the cache has not seen it go yet
        if not (ring.owns(obj) and ring.draining(obj)):
            return False
        namespace, name = split_meta_namespace_key(key)
        patch = {
            "metadata": {
                "resourceVersion": resource_version_of(obj),
                "labels": {ring.shard_label: None, ring.drain_label: None},
            }
        }
        api = self._client.resource(self._resource, namespace=namespace or None)
        with contextlib.suppress(NotFound):  # deleted meanwhile: nothing to give up
            await api.patch(name, patch)
        self._drained.add(key)
        logger.info("ring %s: shard %s gave %s up", ring.name, ring.identity, key)
        return True


class SlotView:
    """One range-mode informer of a ring resource, as its controllers' guards see it: the
    informer watches this shard's slots (it moves with them, see
    :mod:`aioinformer.operator._slots`), and ``serving()`` tells which slots are this
    shard's now.

    What a range-mode controller's reconcile is called for, as in label mode: an object
    in a slot this shard serves; once, an object deleted while its slot was served here;
    never one of a slot this shard does not serve (it moved, or its informer still shows
    it until the relist that follows a move). The watch reports the objects of a slot
    that left as deleted, in their last state: the slot tells them from deletions.
    Registered before any controller watches the informer, so for every event it runs no
    later than a controller's own handler."""

    __slots__ = ("_guards", "_ring", "_serving", "informer")

    def __init__(
        self, ring: ShardRing, informer: SharedIndexInformer, serving: Callable[[], set[int]]
    ) -> None:
        self._ring = ring
        self.informer = informer
        self._serving = serving
        self._guards: list[SlotGuard] = []
        informer.add_event_handler(on_delete=self._deleted, name=f"slots {ring.identity}")

    def _deleted(self, obj: Any) -> None:
        last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        slot = self._ring.slot_of(last)
        if slot not in self._serving():
            return  # its slot moved away: not a deletion
        for guard in self._guards:
            guard.deleted(last, slot)

    def guard(self, key_func: Callable[[Any], str]) -> SlotGuard:
        """A new guard for one controller watching this informer."""
        guard = SlotGuard(self._ring, self.informer, self._serving, key_func)
        self._guards.append(guard)
        return guard


class SlotGuard:
    """Guards one controller's reconciles of one ring resource in range mode (see
    :class:`SlotView`): :meth:`__call__` runs before each reconcile and returns True when
    the key is not this shard's to reconcile; :meth:`slot_of_key` tells the slot of a key
    it let through, so a shard letting a slot go waits for those reconciles."""

    __slots__ = ("_deleted", "_informer", "_key_func", "_passed", "_ring", "_serving")

    def __init__(
        self,
        ring: ShardRing,
        informer: SharedIndexInformer,
        serving: Callable[[], set[int]],
        key_func: Callable[[Any], str],
    ) -> None:
        self._ring = ring
        self._informer = informer
        self._serving = serving
        self._key_func = key_func
        self._deleted: dict[str, int] = {}
        """Keys of objects deleted while their slot was served here → that slot."""
        self._passed: dict[str, int] = {}
        """Keys let through → their slot (kept until the key is guarded again)."""

    def deleted(self, obj: Any, slot: int) -> None:
        """``obj`` was deleted while its slot was served here: its next reconcile runs."""
        self._deleted[self._key_func(obj)] = slot

    def slot_of_key(self, key: str) -> int | None:
        """The slot of ``key`` when this guard last let it through, else ``None``."""
        return self._passed.get(key)

    def keep_only(self, reconciling: Iterable[str]) -> None:
        """Forget the slots of keys let through whose reconcile has ended: only those
        running matter to a slot let go."""
        running = set(reconciling)
        for key in [k for k in self._passed if k not in running]:
            del self._passed[key]

    async def __call__(self, key: str) -> bool:
        serving = self._serving()
        obj = self._informer.indexer.get_by_key(key)
        if obj is None:
            slot = self._deleted.pop(key, None)
            if slot is None or slot not in serving:
                self._passed.pop(key, None)
                return True  # moved away, or never here: not a deletion
        else:
            self._deleted.pop(key, None)  # here again: a deletion no longer pending
            slot = self._ring.slot_of(obj)
            if slot not in serving:
                self._passed.pop(key, None)
                return True
        self._passed[key] = slot
        return False
