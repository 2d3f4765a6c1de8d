"""A replica's half of a shard ring: acknowledging drains for the controllers it runs.

Role: in a sharded :class:`~aioinformer.operator.Manager`, every controller watching a
ring resource through the manager's (shard-selected) informer gets a drain guard. When
the sharder labels one of this shard's objects with the drain label:

1. the label's update enqueues the object's key, whatever the controller's predicates
   say (a guard watch of its own);
2. the work queue hands the key over only once a reconcile of it that was running has
   finished (one worker per key at a time);
3. the guard, run before the reconcile, removes the shard and drain labels with a merge
   patch whose resourceVersion is the one the cache shows (a 409, meaning the object
   changed meanwhile, is retried by the controller), and the key is forgotten: the
   controller's reconcile is not called for it again while it is away.

The object then leaves this shard's watch, which reports it as deleted in its new state
(a handler's ``on_delete`` sees an object that ``ring.owns()`` no longer: it moved, it
was not deleted; it still exists, without a deletionTimestamp, so finalizer logic is not
triggered). Should the sharder assign it back, it arrives as an add and is reconciled
again.

Input: the controller, the shard-selected informer of a ring resource and that
resource. Output: a guard the controller runs before each reconcile. Task model: none
of its own; the guard runs on the controller's workers.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from aioinformer._pipeline.meta import resource_version_of
from aioinformer.errors import NotFound
from aioinformer.indexer import split_meta_namespace_key

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from aioinformer.client import GVR, Client, ResourceInfo
    from aioinformer.informer import SharedIndexInformer
    from aioinformer.operator.sharding import ShardRing

__all__ = ["DrainGuard"]

logger = logging.getLogger(__name__)


class DrainGuard:
    """Acknowledges the drains of one ring resource for one controller (see the module
    notes). :meth:`keys` is the enqueue mapping of the guard's watch; :meth:`__call__`
    runs before each reconcile and returns True when the key was handled here."""

    __slots__ = ("_client", "_drained", "_informer", "_key_func", "_resource", "_ring")

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
        """Keys given up and not seen back since."""

    def keys(self, obj: Any) -> Iterable[str]:
        """The key of ``obj`` when the sharder asked for it back, else nothing."""
        if self._ring.draining(obj) and self._ring.owns(obj):
            return (self._key_func(obj),)
        return ()

    async def __call__(self, key: str) -> bool:
        ring = self._ring
        obj = self._informer.indexer.get_by_key(key)
        drained = self._drained
        if key in drained:
            if obj is None:
                drained.discard(key)  # gone from the watch: the move is complete
                return True
            if ring.owns(obj) and not ring.draining(obj):
                drained.discard(key)  # assigned back to this shard
                return False
            return True
        if obj is None or not (ring.owns(obj) and ring.draining(obj)):
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
        drained.add(key)
        logger.info("ring %s: shard %s gave %s up", ring.name, ring.identity, key)
        return True
