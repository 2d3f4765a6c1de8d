"""The seam both FIFOs open to subclasses: their per-event producers.

Role. A watch hands a FIFO its events a read at a time, through ``apply_events`` (the
:class:`~aioinformer.listwatch.WatchBatchSink` path): one call per read, no per-event
method call, one wake-up of a waiting popper. A subclass that overrides a per-event
producer (``add``, ``update``, ``delete`` or ``bookmark``: to record the calls, as
client-go's tests do, or to filter events by not calling ``super()``) must still see
every event, so a FIFO decides once, as it is built, which path its ``apply_events``
takes: :func:`overridden_producers` tells, and :func:`apply_one_by_one` is the path a FIFO
with an override takes instead of its batch loop.

Input: the FIFO's class and its base's own producers, captured when the base was defined
(:func:`producers_of`); later, the events of each read. Output: the names overridden; the
events a producer raised on, with their errors, as ``apply_events`` returns them.

Ordering and task model. Events are handed to the producers one at a time, in stream
order, each awaited before the next, on the caller's task; a producer that suspends
suspends ``apply_events`` with it. ``replace`` and ``resync`` need no such choice: the
reflector always calls them, and so they always see every call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Protocol

from aioinformer._objects.meta import resource_version_of
from aioinformer.listwatch import ADDED, BOOKMARK, DELETED, MODIFIED

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from aioinformer.listwatch import EventFailures, WatchEvent

__all__ = ["PRODUCERS", "apply_one_by_one", "overridden_producers", "producers_of"]

PRODUCERS: Final = ("add", "update", "delete", "bookmark")
"""The producers ``apply_events`` stands in for, one per watch event type."""


class _Producers(Protocol):
    async def add(self, obj: Any) -> None: ...

    async def update(self, obj: Any) -> None: ...

    async def delete(self, obj: Any) -> None: ...

    async def bookmark(self, resource_version: str) -> None: ...


def producers_of(cls: type) -> dict[str, Callable[..., Any]]:
    """``cls``'s own producers, by name: what a subclass's are compared with."""
    return {name: vars(cls)[name] for name in PRODUCERS}


def overridden_producers(cls: type, plain: dict[str, Callable[..., Any]]) -> tuple[str, ...]:
    """The producers of ``cls`` that are not the ``plain`` ones (:func:`producers_of` its
    base), in :data:`PRODUCERS` order; empty for the base itself."""
    return tuple(name for name, function in plain.items() if getattr(cls, name) is not function)


async def apply_one_by_one(fifo: _Producers, events: Sequence[WatchEvent]) -> EventFailures:
    """Hand each event to the producer of its type, in order, as ``apply_events`` would
    apply it; return the events whose producer raised, with the errors (``None``: none).
    An event of another type is returned with a ``ValueError``."""
    failures: EventFailures = None
    for event in events:
        kind = event.type
        obj = event.object
        try:
            if kind == MODIFIED:
                await fifo.update(obj)
            elif kind == ADDED:
                await fifo.add(obj)
            elif kind == DELETED:
                await fifo.delete(obj)
            elif kind == BOOKMARK:
                await fifo.bookmark(resource_version_of(obj) or "")
            else:
                raise ValueError(f"a FIFO takes no watch event of type {kind!r}")
        except Exception as exc:  # noqa: BLE001
            # Blind on purpose: the reader reports it; the batch goes on without it.
            if failures is None:
                failures = []
            failures.append((event, exc))
    return failures
