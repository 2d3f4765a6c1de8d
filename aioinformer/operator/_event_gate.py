"""A watch's predicates as a controller's event handlers consult them.

Role: sits between an informer's handler and the controller's key mapping and decides,
with the watch's :mod:`aioinformer.operator.predicates`, whether an event may enqueue keys.

Input: one add, update or delete, with the objects the handler got (a delete may carry a
:class:`~aioinformer.models.DeletedFinalStateUnknown` tombstone). Output: whether every
predicate lets it through. A tombstone is judged by the last state it carries, and let
through when it carries none; a predicate that raises is logged (naming the controller
and the informer) and the event let through, because a reconcile too many is harmless
and one too few leaves an object unreconciled until its next event.

Task model: synchronous calls on the event loop, from the informer's handler.

Example::

    gate = EventGate((generation_changed,), "controller widgets", "widgets")
    if gate.update(old, new):
        enqueue(new)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from aioinformer.models import DeletedFinalStateUnknown

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer.operator.predicates import Predicate

__all__ = ["EventGate"]

# The controller's own logger: these lines are about its watches.
logger = logging.getLogger("aioinformer.operator.controller")


class EventGate:
    """A watch's predicates, as its handlers consult them: a predicate that raises is
    logged and lets the event through."""

    __slots__ = ("_informer", "_predicates", "_where")

    def __init__(self, predicates: tuple[Predicate, ...], where: str, informer: str) -> None:
        self._predicates = predicates
        self._where = where
        self._informer = informer

    def _passes(self, kind: str, check: Callable[[Predicate], bool]) -> bool:
        try:
            return all(check(p) for p in self._predicates)
        except Exception:
            logger.exception(
                "%s: a predicate failed on an %s event of %s; letting the event through",
                self._where,
                kind,
                self._informer,
            )
            return True

    def create(self, obj: Any) -> bool:
        return self._passes("add", lambda p: p.create(obj))

    def update(self, old: Any, new: Any) -> bool:
        return self._passes("update", lambda p: p.update(old, new))

    def delete(self, obj: Any) -> bool:
        if isinstance(obj, DeletedFinalStateUnknown):
            if obj.obj is None:
                return True  # nothing to judge: a missed delete must still be reconciled
            obj = obj.obj
        return self._passes("delete", lambda p: p.delete(obj))
