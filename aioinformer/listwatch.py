"""The seam between a source of objects and a reflector: ``ListerWatcher``.

A ``ListerWatcher`` lists a resource (one page per call) and opens watches on it. The
real one is :class:`aioinformer.client.ResourceClient`; tests use
:class:`aioinformer.testing.FakeListerWatcher`. Reflectors depend on this protocol only.

Values crossing the seam:

* :class:`ListOptions`: the query of one LIST or WATCH request; unset fields are ``None``
  and are not sent.
* :class:`ObjectList`: one LIST page: ``items`` (raw dicts, each carrying ``apiVersion``
  and ``kind``), the list's ``resource_version`` and the ``continue_`` token, and, when
  the source knows it, the ``kind``/``api_version`` every item has (a reflector expects
  its watch events to be of that kind).
* :class:`WatchEvent`: one decoded watch line: ``type`` is the wire string (``"ADDED"``,
  ``"MODIFIED"``, ``"DELETED"``, ``"BOOKMARK"``), ``object`` the decoded dict.

``watch()`` returns an async generator: iterating it reads the stream, closing it
(``aclose()``, or leaving ``async with contextlib.aclosing(...)``) closes the connection.
An ``ERROR`` event is never yielded: the iterator raises the
:class:`~aioinformer.errors.ApiError` subclass for its ``Status`` (see
:meth:`ListerWatcher.watch`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = [
    "ADDED",
    "BOOKMARK",
    "DELETED",
    "ERROR",
    "INITIAL_EVENTS_END_ANNOTATION",
    "ListOptions",
    "ListerWatcher",
    "MODIFIED",
    "ObjectList",
    "WatchEvent",
    "source_scope",
]

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"
BOOKMARK: Final = "BOOKMARK"
ERROR: Final = "ERROR"
"""The wire type of an error event; a ``ListerWatcher`` raises it instead of yielding it."""

INITIAL_EVENTS_END_ANNOTATION: Final = "k8s.io/initial-events-end"
"""Annotation on the BOOKMARK that ends the initial events of a streaming list."""

_QUERY_NAMES: Final = {
    "resource_version": "resourceVersion",
    "resource_version_match": "resourceVersionMatch",
    "limit": "limit",
    "continue_": "continue",
    "timeout_seconds": "timeoutSeconds",
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "send_initial_events": "sendInitialEvents",
    "label_selector": "labelSelector",
    "field_selector": "fieldSelector",
}


@dataclass(slots=True)
class ListOptions:
    """Options of one LIST or WATCH request, as client-go's ``metav1.ListOptions``.

    All fields are optional; ``None`` means "not sent". Times are in seconds.
    """

    resource_version: str | None = None
    resource_version_match: str | None = None
    limit: int | None = None
    continue_: str | None = None
    timeout_seconds: int | None = None
    allow_watch_bookmarks: bool | None = None
    send_initial_events: bool | None = None
    label_selector: str | None = None
    field_selector: str | None = None

    def to_query(self) -> dict[str, str]:
        """The URL query parameters for these options (unset ones left out)."""
        query: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, bool):
                query[_QUERY_NAMES[f.name]] = "true" if value else "false"
            else:
                query[_QUERY_NAMES[f.name]] = str(value)
        return query


@dataclass(slots=True)
class ObjectList:
    """One LIST page: raw items, the list's resourceVersion and the continue token."""

    items: list[Any] = field(default_factory=list)
    """Decoded ``dict`` items, or, from a compact source (``list_compact``),
    :class:`~aioinformer._raw.RawObject` ones."""
    resource_version: str = ""
    continue_: str | None = None
    remaining_item_count: int | None = None
    kind: str | None = None
    """The ``kind`` of the items (``"Pod"`` for a ``PodList``), ``None`` when unknown;
    items without a ``kind`` of their own were given this one."""
    api_version: str | None = None
    """The ``apiVersion`` of the items, ``None`` when unknown; items without one of
    their own were given this one."""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event: the wire ``type`` string and the decoded ``object``."""

    type: str
    object: Any
    """A decoded ``dict``; from a compact source (``watch_compact``) the object of an
    ``ADDED``/``MODIFIED``/``DELETED`` event is a :class:`~aioinformer._raw.RawObject`."""


class ListerWatcher(Protocol):
    """What a reflector needs from a source: paginated LIST and streaming WATCH."""

    async def list(self, options: ListOptions) -> ObjectList:
        """Return one page of the list described by ``options``."""
        ...

    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        """Open a watch; the returned async generator yields events until the stream
        ends, and closing it closes the connection.

        Errors are raised from the iteration, never yielded: a failed request (say a
        403, or a refused connection) from the first read, and an ``ERROR`` event from
        the read that reaches it, as the :class:`~aioinformer.errors.ApiError` subclass
        for the event's ``Status`` (built by
        :func:`aioinformer.watch.error_from_watch_status`; a ``WatchError`` when the
        event carries no ``Status``). Either way the stream then ends.

        A reflector treats an error on a watch that never opened as a failed request,
        and one on an established watch as the end of that watch. A stream that yielded
        an event was established; before that, a stream may say so with an ``opened``
        attribute that turns true once the server accepted the request (the fake
        lister-watcher has one). Without it, an error before the first event counts as
        a failed request.
        """
        ...


def source_scope(source: object, default_resource: str) -> tuple[str, str | None]:
    """What ``source`` (a lister-watcher) serves, for messages and health records: its
    ``resource`` attribute (``default_resource`` when it has none) and its ``namespace``
    (``None``, all namespaces, when it has none). Only non-empty strings count."""
    resource = getattr(source, "resource", None)
    namespace = getattr(source, "namespace", None)
    return (
        resource if isinstance(resource, str) and resource else default_resource,
        namespace if isinstance(namespace, str) and namespace else None,
    )
