"""A controller's watches: an informer's events in, the keys to reconcile out.

Role: what :meth:`Controller.watch <aioinformer.operator.Controller.watch>` registers
on an informer, and how the controller's wait for its caches sees it afterwards.
:func:`add_watch` puts one handler on the informer that filters each event with the
watch's predicates (an :class:`~aioinformer.operator._event_gate.EventGate`), maps the
object to keys (the controller's key function, or an :data:`EnqueueFunc` such as
:func:`enqueue_owner` for secondary resources) and hands each key to the work queue.
:class:`HandlerSync` is a watch as the sync wait sees it: synced once the handler has
been handed the whole initial list, not merely once the informer has.

Input: the informer, the work queue (a
:class:`~aioinformer.priority_queue.PriorityQueue` gets each key with its priority: the
initial list's and resyncs' low, other events' at 0), the key function or mapping and the
predicates. Output: the handler's
:class:`~aioinformer.informer.HandlerRegistration` (the controller removes it when its
run ends), and keys in the queue as events arrive. A mapping that raises is logged,
naming the controller and the informer, and the event yields no key. A watch with
neither a mapping, predicates, nor a key function other than the default takes the
keys the informer hands out itself: nothing is decoded for it (with a priority queue,
only when its informer does not resync: telling a resync takes both states).

Task model: none of its own; the handlers are synchronous calls on the event loop,
from the informer's dispatch.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from aioinformer._objects.meta import namespace_of, owner_references_of, same_resource_version
from aioinformer.indexer import KeyFunc, meta_namespace_key
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.operator._event_gate import EventGate
from aioinformer.priority_queue import LOW_PRIORITY, PriorityQueue

if TYPE_CHECKING:
    from aioinformer.health import InformerStatistics
    from aioinformer.informer import HandlerRegistration, SharedIndexInformer
    from aioinformer.listwatch import ListerWatcher
    from aioinformer.operator.predicates import Predicate
    from aioinformer.workqueue import RateLimitingQueue

__all__ = ["EnqueueFunc", "HandlerSync", "add_watch", "enqueue_owner"]

# The controller's own logger: these lines are about its watches.
logger = logging.getLogger("aioinformer.operator.controller")

EnqueueFunc = Callable[[Any], Iterable[str]]
"""Maps an informer's object (or a deletion tombstone) to the keys to reconcile."""


def enqueue_owner(kind: str, *, api_version: str | None = None) -> EnqueueFunc:
    """An ``enqueue`` mapping for secondary objects: the key of their controlling owner.

    For an object whose ``metadata.ownerReferences`` holds a reference with
    ``controller: true`` of ``kind`` (and ``api_version``'s group, when given), yields
    ``"namespace/owner-name"`` in the object's namespace. Objects without such an owner
    yield nothing. Deletion tombstones map through the last state they carry.

    Example: a ConfigMap owned by ``Widget`` ``default/hello`` enqueues ``default/hello``,
    so editing or deleting the ConfigMap makes the Widget's reconcile repair it.
    """
    group = api_version.rpartition("/")[0] if api_version is not None else None

    def owner_keys(obj: Any) -> list[str]:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
            if obj is None:
                return []
        namespace = namespace_of(obj)
        keys = []
        for ref in owner_references_of(obj):
            if not ref.get("controller") or ref.get("kind") != kind:
                continue
            if group is not None and str(ref.get("apiVersion", "")).rpartition("/")[0] != group:
                continue
            name = ref.get("name")
            if name:
                keys.append(f"{namespace}/{name}" if namespace else str(name))
        return keys

    owner_keys.__qualname__ = f"enqueue_owner({kind})"
    return owner_keys


def add_watch(
    informer: SharedIndexInformer,
    queue: RateLimitingQueue[str],
    *,
    where: str,
    key_func: KeyFunc,
    enqueue: EnqueueFunc | None,
    predicates: tuple[Predicate, ...],
) -> HandlerRegistration:
    """Register on ``informer`` the handler that adds to ``queue`` the keys of its events:
    ``enqueue(obj)``'s, or ``key_func(obj)``, for the events ``predicates`` let through.
    ``where`` (``"controller <name>"``) names the handler and the logs.

    A :class:`~aioinformer.priority_queue.PriorityQueue` gets the keys of the initial
    list and of resyncs (an update whose old and new states have the same
    resourceVersion) at :data:`~aioinformer.priority_queue.LOW_PRIORITY`, those of any
    other event at 0 (controller-runtime's ``WithLowPriorityWhenUnchanged``)."""
    add = queue.add
    prioritized = isinstance(queue, PriorityQueue)
    # Whether an update may be a resync, to be told by the states' resourceVersions. An
    # informer created without resync never hands a handler an update of an unchanged
    # object (a relist's unchanged objects reach only the handlers due a resync): then
    # every update is a change, and no state needs to be read to tell.
    resyncs = prioritized and informer.resync_check_period != 0
    if enqueue is None and key_func is meta_namespace_key and not predicates and not resyncs:
        # The informer hands over the keys themselves: nothing is decoded for us.
        return informer.add_event_handler(
            on_add=_initial_low(queue) if isinstance(queue, PriorityQueue) else _initial(add),
            on_update=lambda old_key, key: add(key),
            on_delete=add,
            name=where,
            keys_only=True,
        )
    handle = _key_adder(informer, where, key_func, enqueue, add)
    low = (
        _key_adder(informer, where, key_func, enqueue, _at_low_priority(queue))
        if isinstance(queue, PriorityQueue)
        else handle
    )
    gate = EventGate(predicates, where, informer.name) if predicates else None

    def on_add(obj: Any, is_in_initial_list: bool) -> None:
        if gate is None or gate.create(obj):
            (low if is_in_initial_list else handle)(obj)

    def on_update(old: Any, new: Any) -> None:
        if gate is None or gate.update(old, new):
            (low if resyncs and same_resource_version(old, new) else handle)(new)

    def on_update_new(_old: Any, new: Any) -> None:
        # Never reads the old state, so a compact cache never decodes it for us.
        handle(new)

    def on_delete(obj: Any) -> None:
        if gate is None or gate.delete(obj):
            handle(obj)

    return informer.add_event_handler(
        on_add=on_add,
        on_update=on_update if gate is not None or resyncs else on_update_new,
        on_delete=on_delete,
        name=where,
    )


def _initial(add: Callable[[str], None]) -> Callable[[str, bool], None]:
    """A keys-only ``on_add`` for a FIFO queue."""
    return lambda key, is_in_initial_list: add(key)


def _initial_low(queue: PriorityQueue[str]) -> Callable[[str, bool], None]:
    """A keys-only ``on_add`` putting the initial list's keys at the low priority."""
    add = queue.add
    return lambda key, is_in_initial_list: add(
        key, priority=LOW_PRIORITY if is_in_initial_list else 0
    )


def _at_low_priority(queue: PriorityQueue[str]) -> Callable[[str], None]:
    """``queue.add`` at :data:`~aioinformer.priority_queue.LOW_PRIORITY`."""
    add = queue.add
    return lambda key: add(key, priority=LOW_PRIORITY)


def _key_adder(
    informer: SharedIndexInformer,
    where: str,
    key_func: KeyFunc,
    enqueue: EnqueueFunc | None,
    add: Callable[[str], None],
) -> Callable[[Any], None]:
    """What ``add``\\ s an object's keys: ``enqueue(obj)``'s, or ``key_func(obj)``; a
    mapping that raises is logged and yields no key."""
    if enqueue is None:

        def add_key(obj: Any) -> None:
            try:
                key = key_func(obj)
            except Exception:
                logger.exception("%s: no key for an object of %s", where, informer.name)
                return
            add(key)

        return add_key

    mapping = enqueue

    def add_keys(obj: Any) -> None:
        try:
            keys = list(mapping(obj))
        except Exception:
            logger.exception("%s: no key for an object of %s", where, informer.name)
            return
        for key in keys:
            add(key)

    return add_keys


class _HandlerLag(enum.Enum):
    SYNCED = "synced"
    """The informer synced; its handler has not handled the whole initial list yet."""


class HandlerSync:
    """An informer as the sync wait sees it, synced only once the controller's handler
    on it is: what the wait names in a :class:`~aioinformer.errors.CacheSyncError` stays
    the informer's."""

    __slots__ = ("_informer", "_registration")

    def __init__(self, informer: SharedIndexInformer, registration: HandlerRegistration) -> None:
        self._informer = informer
        self._registration = registration

    @property
    def name(self) -> str:
        return self._informer.name

    @property
    def state(self) -> enum.Enum:
        if self._informer.has_synced():
            # Read only while the handler is unsynced: the error must not say the
            # informer is still listing when it is the handler that lags.
            return _HandlerLag.SYNCED
        return self._informer.state

    @property
    def lister_watcher(self) -> ListerWatcher:
        return self._informer.lister_watcher

    def has_synced(self) -> bool:
        return self._registration.has_synced()

    async def wait_started(self) -> None:
        await self._informer.wait_started()

    async def wait_for_sync(self, timeout: float | None = None, *, fail_fast: bool = True) -> bool:
        # False only when the informer stops first: the controller removes its handlers
        # only after this wait.
        return await self._registration.wait_for_sync(timeout, fail_fast=fail_fast)

    def statistics(self) -> InformerStatistics:
        return self._informer.statistics()
