"""The read side of an informer: :class:`Lister` over its cache, :class:`EventStream` over
its notifications.

Role: what users read, as opposed to what the pipeline writes. A :class:`Lister` answers
``get``/``list``/``by_index`` from the informer's :class:`~aioinformer.indexer.Indexer`; an
:class:`EventStream` is the pulled form of a handler, yielding each notification of its
:class:`~aioinformer.processor.ProcessorListener` as an :class:`Event`.
:mod:`aioinformer.informer` builds both and re-exports every name here.

Input: the cache (for listers) and a listener's queue (for streams). Output: the cached
objects (read-only views of a compact cache's entries, the cached ones themselves from
an ``"objects"`` cache), or a pydantic model validated from each when the informer has a
``model``; :class:`Event` records.

One bad object never breaks a read: with a ``model``, an object that does not validate
is skipped by ``list()``/``by_index()`` and by streams (reported once per key and
resourceVersion by the informer's :class:`~aioinformer._pipeline.model_guard.ModelGuard`), and
``get()`` of its key raises :class:`~aioinformer.errors.InvalidObjectError`.

Ordering and staleness: a lister returns what the cache holds now, which may be behind the
server; it never blocks and never goes to the server. A stream yields notifications in the
order they were distributed, like any handler.

Task model: no task of its own. Lister reads are synchronous and atomic with respect to
the informer's pop task; a stream's ``__anext__`` suspends only while its queue is empty.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeVar

from aioinformer._objects.meta import labels_of, namespace_of
from aioinformer._pipeline.model_guard import ModelGuard, converted_deleted, converted_old
from aioinformer.errors import InvalidObjectError
from aioinformer.indexer import NAMESPACE_INDEX, Indexer
from aioinformer.labels import LabelSelector, parse_label_selector
from aioinformer.processor import (
    HandlerRegistration,
    NotificationKind,
    ProcessorListener,
)

if TYPE_CHECKING:
    import builtins
    from collections.abc import Callable
    from types import TracebackType

__all__ = ["Event", "EventStream", "Lister", "NotificationType"]

T = TypeVar("T")

_ADD: Final = NotificationKind.ADD
_UPDATE: Final = NotificationKind.UPDATE

NotificationType = Literal["ADDED", "UPDATED", "DELETED"]
"""What an :class:`Event` reports: the handlers' vocabulary (``on_add``/``on_update``/
``on_delete``), not the wire's. (Not :data:`aioinformer.operator.recorder.EventType`, the
``"Normal"``/``"Warning"`` of a Kubernetes Event.)

This is the one mapping from a watch's event types (:mod:`aioinformer.listwatch`):
``ADDED`` and ``DELETED`` keep their names; ``MODIFIED`` becomes ``"UPDATED"``, as does a
relist's or a resync's re-delivery of a cached object; an object a relist no longer finds
arrives as ``"DELETED"`` with a :class:`~aioinformer.models.DeletedFinalStateUnknown`;
``BOOKMARK`` and ``ERROR`` never reach handlers (the reflector consumes them)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One notification, as yielded by :meth:`SharedIndexInformer.events
    <aioinformer.informer.SharedIndexInformer.events>`.

    Not a Kubernetes Event: those are the ``Event`` models of :mod:`aioinformer.k8s`,
    which :mod:`aioinformer.operator.recorder` writes. So that ``aioinformer.Event`` cannot be read
    as one, the package root does not export this class; import it from here or from
    :mod:`aioinformer.informer`."""

    type: NotificationType
    """``"ADDED"``, ``"UPDATED"`` or ``"DELETED"``."""
    object: Any
    """The new object; for ``"DELETED"`` the last state seen, or a tombstone."""
    old: Any = None
    """The previous object, for ``"UPDATED"`` only."""
    is_in_initial_list: bool = False
    """For ``"ADDED"``: the object came with the initial list (or a late snapshot)."""


class Lister(Generic[T]):
    """Read access to an informer's cache.

    Reads never block and never go to the server: they return what the cache holds now,
    which may be behind the server. From a compact cache (the default) every read returns
    read-only views (:class:`~aioinformer._objects.view.ObjectView`), which decode only
    the fields read and refuse changes (``obj.to_dict()`` is a copy to change); from a
    ``cache="objects"`` cache they are the cached objects themselves: treat those as
    read-only. With ``model=``,
    every read validates the returned objects into that model (a fresh copy either way);
    the cache itself stays raw. An object that does not validate is left out of
    ``list()`` and ``by_index()`` (a WARNING names it, once per key and resourceVersion)
    and makes ``get()`` of its key raise :class:`~aioinformer.errors.InvalidObjectError`.
    ``guard`` is the informer's, which counts those objects for its ``statistics()``.

    ``namespace`` is the namespace the informer watches (``None``: all namespaces); it is
    what ``get(name)`` looks in when no namespace is given, so the lister of an informer
    scoped to one namespace finds its objects by name alone.
    """

    __slots__ = ("_guard", "_indexer", "_model", "_namespace")

    def __init__(
        self,
        indexer: Indexer[Any],
        *,
        model: type[T] | None = None,
        guard: ModelGuard[T] | None = None,
        namespace: str | None = None,
    ) -> None:
        self._indexer = indexer
        self._model = model
        self._namespace = namespace or None
        if guard is None and model is not None:
            guard = ModelGuard(model)
        self._guard = guard

    def _out(self, entries: list[Any]) -> list[T]:
        objs = self._indexer.decode_all(entries)
        guard = self._guard
        if guard is None:
            return objs
        validate = guard.validate
        valid: list[T] = []
        for obj in objs:
            try:
                valid.append(validate(obj))
            except InvalidObjectError:
                continue  # reported by the guard; one bad object must not fail the read
        return valid

    def get(self, name: str, namespace: str | None = None) -> T | None:
        """The object called ``name`` (in ``namespace`` for a namespaced resource), or
        ``None`` when the cache does not hold it. With a ``model``, raises
        :class:`~aioinformer.errors.InvalidObjectError` when the cached object does not
        validate into it.

        ``namespace`` ``None`` means the informer's namespace when it watches one (a
        cluster-scoped object of that informer is still found by its name), and
        cluster-scoped otherwise; ``""`` always means cluster-scoped."""
        indexer = self._indexer
        if namespace is None and self._namespace is not None:
            # Keys of namespaced objects always hold a "/", cluster-scoped ones never: at
            # most one of the two lookups can find anything.
            entry = indexer.entry_by_key(f"{self._namespace}/{name}")
            if entry is None:
                entry = indexer.entry_by_key(name)
        else:
            entry = indexer.entry_by_key(f"{namespace}/{name}" if namespace else name)
        if entry is None:
            return None
        obj = indexer.decode(entry)
        if self._guard is None:
            return obj  # type: ignore[no-any-return]
        return self._guard.validate(obj)

    def list(
        self,
        namespace: str | None = None,
        label_selector: str | LabelSelector | None = None,
    ) -> list[T]:
        """The cached objects, optionally only those in ``namespace`` and/or matching
        ``label_selector`` (selector text, parsed here, or a parsed selector).

        ``namespace`` ``None`` and ``""`` both mean all namespaces (``""`` is Kubernetes'
        ``NamespaceAll``), cluster-scoped objects included. Uses the namespace index when
        the informer has one, else scans the cache. A compact cache is filtered on each
        entry's head, and what is returned decodes nothing until read.
        """
        indexer = self._indexer
        if not namespace:
            entries = indexer.entries()
        elif indexer.has_index(NAMESPACE_INDEX):
            entries = indexer.entries_by_index(NAMESPACE_INDEX, namespace)
        else:
            entries = [entry for entry in indexer.entries() if namespace_of(entry) == namespace]
        if label_selector is not None:
            selector = (
                parse_label_selector(label_selector)
                if isinstance(label_selector, str)
                else label_selector
            )
            if not selector.is_empty():
                entries = [entry for entry in entries if selector.matches(labels_of(entry))]
        return self._out(entries)

    def by_index(self, index_name: str, value: str) -> builtins.list[T]:
        """The cached objects whose index ``index_name`` includes ``value``; raises
        ``KeyError`` for an unknown index."""
        return self._out(self._indexer.entries_by_index(index_name, value))

    def __repr__(self) -> str:
        model = "" if self._model is None else f" model={self._model.__name__}"
        namespace = "" if self._namespace is None else f" namespace={self._namespace!r}"
        return f"<Lister items={len(self._indexer)}{namespace}{model}>"


class EventStream:
    """An async iterator of :class:`Event`, fed by its own handler queue.

    Created by :meth:`SharedIndexInformer.events
    <aioinformer.informer.SharedIndexInformer.events>`, registered at that call. Iteration
    ends when the informer stops. ``aclose()`` (or leaving ``async with``) unregisters it;
    so does dropping the last reference to it.
    """

    __slots__ = ("__weakref__", "_listener", "_registration", "_unregister")

    def __init__(
        self,
        listener: ProcessorListener,
        registration: HandlerRegistration,
        *,
        unregister: Callable[[], None],
    ) -> None:
        self._listener = listener
        self._registration = registration
        # Removes the listener from its informer; idempotent.
        self._unregister = unregister

    @property
    def registration(self) -> HandlerRegistration:
        """The stream's handler registration (``has_synced()``, ``statistics()``)."""
        return self._registration

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        listener = self._listener
        convert = listener.convert
        while True:
            notification = await listener.next_notification()
            if notification is None:
                raise StopAsyncIteration
            kind, a, b = notification
            if convert is None:
                if kind == _UPDATE:
                    return Event("UPDATED", b, a)
                if kind == _ADD:
                    return Event("ADDED", a, None, b)
                return Event("DELETED", a)
            # With a model, what does not validate is skipped (an add, an update's new
            # state), or delivered without it (an update's old, a deleted object's last
            # state), as handlers get it: the guard has reported it.
            try:
                if kind == _UPDATE:
                    return Event("UPDATED", convert(b), converted_old(convert, a))
                if kind == _ADD:
                    return Event("ADDED", convert(a), None, b)
            except InvalidObjectError:
                continue
            return Event("DELETED", converted_deleted(convert, a))

    async def aclose(self) -> None:
        """Unregister the stream; iteration then ends. Idempotent."""
        self._unregister()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __del__(self) -> None:
        # A stream abandoned mid-iteration must not keep queueing events forever.
        with contextlib.suppress(Exception):
            self._unregister()


if not TYPE_CHECKING:  # type checkers report the old names as missing, as they should
    from aioinformer._kernel.moved import moved_names

    __getattr__ = moved_names(__name__)
