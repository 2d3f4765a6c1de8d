"""A controller's watches: an informer's events in, the keys to reconcile out.

Role: what :meth:`Controller.watch <aioinformer.operator.Controller.watch>` registers
on an informer, and how the controller's wait for its caches sees it afterwards.
:func:`add_watch` puts one handler on the informer that filters each event with the
watch's predicates (an :class:`~aioinformer.operator._event_gate.EventGate`), maps the
object to keys (the controller's key function, or an :data:`EnqueueFunc` such as
:func:`enqueue_owner` for secondary resources) and hands each key to the work queue.
:class:`HandlerSync` is a watch as the sync wait sees it: synced once the handler has
been handed the whole initial list, not merely once the informer has.

Input: the informer, the queue's ``add``, the key function or mapping and the
predicates. Output: the handler's
:class:`~aioinformer.informer.HandlerRegistration` (the controller removes it when its
run ends), and keys in the queue as events arrive. A mapping that raises is logged,
naming the controller and the informer, and the event yields no key. A watch with
neither a mapping, predicates, nor a key function other than the default takes the
keys the informer hands out itself: nothing is decoded for it.

Task model: none of its own; the handlers are synchronous calls on the event loop,
from the informer's dispatch.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from aioinformer._objects.meta import namespace_of, owner_references_of
from aioinformer.indexer import KeyFunc, meta_namespace_key
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.operator._event_gate import EventGate

if TYPE_CHECKING:
    from aioinformer.health import InformerStatistics
    from aioinformer.informer import HandlerRegistration, SharedIndexInformer
    from aioinformer.listwatch import ListerWatcher
    from aioinformer.operator.predicates import Predicate

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
    add: Callable[[str], None],
    *,
    where: str,
    key_func: KeyFunc,
    enqueue: EnqueueFunc | None,
    predicates: tuple[Predicate, ...],
) -> HandlerRegistration:
    """Register on ``informer`` the handler that ``add``\\ s the keys of its events:
    ``enqueue(obj)``'s, or ``key_func(obj)``, for the events ``predicates`` let through.
    ``where`` (``"controller <name>"``) names the handler and the logs."""
    if enqueue is None and key_func is meta_namespace_key and not predicates:
        # The informer hands over the keys themselves: nothing is decoded for us.
        return informer.add_event_handler(
            on_add=lambda key, is_in_initial_list: add(key),
            on_update=lambda old_key, key: add(key),
            on_delete=add,
            name=where,
            keys_only=True,
        )
    if enqueue is None:

        def keys_of(obj: Any) -> Iterable[str]:
            return (key_func(obj),)

        mapping: EnqueueFunc = keys_of
    else:
        mapping = enqueue

    def handle(obj: Any) -> None:
        try:
            keys = list(mapping(obj))
        except Exception:
            logger.exception("%s: no key for an object of %s", where, informer.name)
            return
        for key in keys:
            add(key)

    gate = EventGate(predicates, where, informer.name) if predicates else None

    def on_add(obj: Any, is_in_initial_list: bool) -> None:
        if gate is None or gate.create(obj):
            handle(obj)

    def on_update(old: Any, new: Any) -> None:
        if gate is None or gate.update(old, new):
            handle(new)

    def on_update_new(_old: Any, new: Any) -> None:
        # Never reads the old state, so a compact cache never decodes it for us.
        handle(new)

    def on_delete(obj: Any) -> None:
        if gate is None or gate.delete(obj):
            handle(obj)

    return informer.add_event_handler(
        on_add=on_add,
        on_update=on_update if gate is not None else on_update_new,
        on_delete=on_delete,
        name=where,
    )


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
