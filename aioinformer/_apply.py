"""Applying one key's deltas to the cache and distributing what the handlers hear of them.

Role: the informer's pop task hands each key's :class:`~aioinformer.delta_fifo.Deltas` to
:func:`apply_deltas`, which writes the cache and makes one notification per delta:
``Added``/``Updated``/``Replaced``/``Sync`` become an update when the cache held the
object and an add otherwise, ``Deleted`` becomes a delete; an update whose old and new
entries carry the same resourceVersion is a resync. The informer's
:class:`~aioinformer.codec.Codec` says what the cache stores for each object, what each
notification carries and whether two entries are the same version, so this one function
serves both cache modes.

Input: Deltas popped from a FIFO (objects as the source or a transform gave them, and
tombstones). Output: writes to the codec's store and calls of ``distribute(notification,
is_sync)``.

Ordering: the deltas of one key are applied and distributed in order. All of them share
one key, so it is computed and the cached entry looked up once: each delta's "old" is
what the previous one stored.

Task model: a synchronous function run by the informer's pop task; nothing suspends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from aioinformer.delta_fifo import DeltaType
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.processor import Notification, NotificationKind

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer.codec import Codec
    from aioinformer.delta_fifo import Deltas
    from aioinformer.indexer import Indexer

__all__ = ["apply_deltas"]

_DELETED: Final = DeltaType.DELETED
_ADD: Final = NotificationKind.ADD
_UPDATE: Final = NotificationKind.UPDATE
_DELETE: Final = NotificationKind.DELETE


def apply_deltas(
    deltas: Deltas,
    indexer: Indexer[Any],
    distribute: Callable[[Notification, bool], None],
    codec: Codec,
    *,
    is_in_initial_list: bool,
) -> None:
    """Apply one key's deltas to ``indexer`` (``codec``'s store) and distribute the
    notifications, carried as ``codec`` carries them."""
    first = deltas[0].object
    key = first.key if type(first) is DeletedFinalStateUnknown else codec.key(first)
    old = indexer.entry_by_key(key)
    put = indexer.put_entry
    entry_of = codec.entry
    carry = codec.carry
    for delta in deltas:
        obj = delta.object
        if delta.type is _DELETED:
            indexer.delete_by_key(key)
            distribute(Notification(_DELETE, codec.carry_deleted(obj), None), False)
            old = None
            continue
        entry = entry_of(obj)
        carried = carry(entry, obj)
        put(key, entry, carried)
        if old is None:
            distribute(Notification(_ADD, carried, is_in_initial_list), False)
        elif old is entry:
            # A resync re-delivers the cached entry: one carried object serves old and new.
            distribute(Notification(_UPDATE, carried, carried), True)
        else:
            distribute(Notification(_UPDATE, carry(old), carried), codec.same_version(old, entry))
        old = entry
