"""What a relist and a resync add to a DeltaFIFO beyond the objects they are given.

Role: the DeltaFIFO's scans of its own queue and of the cache it feeds, which run once
per LIST or resync, never per event. A relist (:meth:`~aioinformer.delta_fifo.DeltaFIFO.replace`)
must also say which keys the LIST no longer holds, so the cache drops them even when
their deletion was never seen on a watch; a resync re-offers each cached object that
has nothing queued.

Input: the FIFO's queued deltas by key, the :class:`KnownObjects` it feeds (its
indexer), the keys the LIST held. Output: the keys and objects to queue, in the order
client-go queues them (queued keys first, in their queue order, then the cache's).

Task model: pure synchronous functions, run by the task that called ``replace`` or
``resync``; nothing suspends between the scan and the queueing of what it found.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from aioinformer.models import DeletedFinalStateUnknown

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator, Mapping, Sequence

__all__ = ["KnownObjects", "relist_tombstones", "unqueued_known"]

logger = logging.getLogger("aioinformer.delta_fifo")


class KnownObjects(Protocol):
    """What the FIFO needs from the cache it feeds (an :class:`Indexer` is one)."""

    def list_keys(self) -> list[str]: ...

    def get_by_key(self, key: str) -> Any | None: ...


def relist_tombstones(
    queued: Mapping[str, Sequence[Any]],
    known: KnownObjects | None,
    listed: Collection[str],
) -> Iterator[DeletedFinalStateUnknown]:
    """A tombstone for every key queued or known but not ``listed``, carrying the newest
    queued state of the object, or else the cached one (``None`` when the cache lost it
    meanwhile). Each item of ``queued`` is a key's deltas, newest last, each with an
    ``object``. The caller may queue each tombstone as it is yielded: one for a queued key
    only adds to that key's deltas, and one that adds a key comes after the queue's keys
    have all been scanned."""
    for key, deltas in queued.items():
        if key in listed:
            continue
        last = deltas[-1].object
        if type(last) is DeletedFinalStateUnknown:
            last = last.obj
        yield DeletedFinalStateUnknown(key, last)
    if known is None:
        return
    for key in known.list_keys():
        if key in listed or key in queued:
            continue
        obj = known.get_by_key(key)
        if obj is None:
            logger.debug("key %s vanished from the known objects during replace", key)
        yield DeletedFinalStateUnknown(key, obj)


def unqueued_known(
    known: KnownObjects,
    queued: Mapping[str, Any],
    key_of: Callable[[Any], str],
) -> Iterator[tuple[str, Any]]:
    """Each cached object whose key has nothing queued, with that key, for a resync to
    re-offer; an object the cache lost meanwhile is skipped. The caller may queue each as
    it is yielded: ``queued`` is only asked whether it holds a key, never iterated."""
    for key in known.list_keys():
        obj = known.get_by_key(key)
        if obj is None:
            logger.debug("key %s vanished from the known objects during resync", key)
            continue
        obj_key = key_of(obj)
        if obj_key not in queued:
            yield obj_key, obj
