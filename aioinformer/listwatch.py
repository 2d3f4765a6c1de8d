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
Our sources raise the :class:`~aioinformer.errors.ApiError` subclass for an ``ERROR``
event's ``Status`` instead of yielding it (see :meth:`ListerWatcher.watch`); a reflector
treats an ``ERROR`` event a source does yield exactly as that raise.

What a source *is* and what it *can do* is declared, never guessed: a source that
subclasses :class:`DescribedListerWatcher` says, through
:meth:`~DescribedListerWatcher.describe`, what it serves (resource, namespace, selectors:
an informer's name and messages come from there) and whether it supports streaming lists
(:attr:`SourceInfo.watch_list`). A plain ``ListerWatcher``, one that only has ``list`` and
``watch``, declares nothing: it is named after its class and is never asked for a
streaming list, since nothing says its ``watch`` honours ``send_initial_events``
(client-go 1.35's ``DoesClientNotSupportWatchListSemantics``, the other way round: here a
source opts in). :func:`source_info` reads the declaration. A described source may also
offer a lister of its objects' metadata (:meth:`~DescribedListerWatcher.metadata_lister`),
which a cache audit uses instead of listing whole objects.
"""

from __future__ import annotations

import abc
import warnings
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Sequence

__all__ = [
    "ADDED",
    "BOOKMARK",
    "DELETED",
    "Decoder",
    "DescribedListerWatcher",
    "ERROR",
    "EventFailures",
    "INITIAL_EVENTS_END_ANNOTATION",
    "ListOptions",
    "ListerWatcher",
    "MODIFIED",
    "ObjectList",
    "SourceInfo",
    "WatchBatchSink",
    "WatchEvent",
    "WatchStreamBase",
    "source_info",
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
    "shard_selector": "shardSelector",
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
    shard_selector: str | None = None
    """A shard selector (KEP-5866, see :mod:`aioinformer.shard_selector`): the server
    serves only the objects whose hashed uid or namespace falls in its ranges."""

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
    """Decoded ``dict`` items, or what the informer's codec decodes them into (a compact
    cache's :class:`~aioinformer._objects.raw.CompactEntry`, see
    :meth:`DescribedListerWatcher.decoded_with`)."""
    resource_version: str = ""
    continue_: str | None = None
    remaining_item_count: int | None = None
    kind: str | None = None
    """The ``kind`` of the items (``"Pod"`` for a ``PodList``), ``None`` when unknown;
    items without a ``kind`` of their own were given this one."""
    api_version: str | None = None
    """The ``apiVersion`` of the items, ``None`` when unknown; items without one of
    their own were given this one."""
    shard_selector: str | None = None
    """The shard selector the server applied to this page, as it echoes it
    (``metadata.shardInfo.selector``, normalised); ``None`` when it did not say, as a
    server without KEP-5866 (or with its gate off) does not."""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event: the wire ``type`` string and the decoded ``object``."""

    type: str
    object: Any
    """A decoded ``dict``, or, for the objects of ``ADDED``/``MODIFIED``/``DELETED``
    events, what the informer's codec decodes them into (see
    :meth:`DescribedListerWatcher.decoded_with`)."""


class Decoder(Protocol):
    """How a source that reads bytes turns them into what an informer caches.

    A source that reads the server's answers itself (the REST client's
    :class:`~aioinformer.client.ResourceClient`, the watch reader of
    :mod:`aioinformer.watch`) decodes through one: ``dict`` objects by default, or a
    compact cache's entries when an informer asks (:meth:`DescribedListerWatcher.decoded_with`
    with its :class:`aioinformer.codec.Codec`). Declared here, with the seam, so that the
    client knows how to decode without knowing the cache.
    """

    @property
    def event_batch(self) -> int | None:
        """How many decoded events a reader hands on at a time; ``None``: a whole read."""

    def decode_list(self, body: bytes, *, kind: str, api_version: str) -> ObjectList:
        """One LIST answer's page; ``kind``/``api_version`` are the resource's, given to
        items that lack them. A body that is not a list of objects raises
        :class:`~aioinformer._objects.raw.CompactDecodeError` (orjson's error when it is
        not even JSON); the client turns either into a ``TransportError``."""

    def decode_event(self, line: bytes) -> WatchEvent | None:
        """The usual watch line: an ``ADDED``, ``MODIFIED`` or ``DELETED`` event whose
        object is a JSON object (a decoder of dicts takes a bookmark here too, as it
        decodes it whole anyway). ``None`` for anything else, which the reader decodes
        the careful way (errors, garbage, and a compact decoder's bookmarks)."""


class ListerWatcher(Protocol):
    """What a reflector needs from a source: paginated LIST and streaming WATCH."""

    async def list(self, options: ListOptions) -> ObjectList:
        """Return one page of the list described by ``options``."""
        ...

    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        """Open a watch; the returned async generator yields events until the stream
        ends, and closing it closes the connection.

        Errors are raised from the iteration: a failed request (say a 403, or a refused
        connection) from the first read, and an ``ERROR`` event from the read that
        reaches it, as the :class:`~aioinformer.errors.ApiError` subclass for the event's
        ``Status`` (:func:`aioinformer.errors.error_from_watch_status`; a ``WatchError``
        when the event carries no ``Status``). Either way the stream then ends. A source
        adapted from elsewhere may yield the ``ERROR`` event instead (client-go's
        ``watch.Interface`` and most Python clients hand them out): a reflector handles
        that event exactly as the error it stands for, then closes the stream.

        A reflector treats an error on a watch that never opened as a failed request,
        and one on an established watch as the end of that watch. A stream that yielded
        an event was established; before that, a stream may say so with an ``opened``
        attribute that turns true once the server accepted the request (the fake
        lister-watcher has one). Without it, an error before the first event counts as
        a failed request.

        The options a reflector sends a plain source are ``resource_version``,
        ``timeout_seconds`` and ``allow_watch_bookmarks``; a source may ignore the last
        two (bookmarks only advance the resourceVersion). ``send_initial_events`` is sent
        only to a source declaring :attr:`SourceInfo.watch_list`.
        """
        ...


class WatchStreamBase(abc.ABC):
    """A watch stream that declares what a reader may rely on: whether its request was
    accepted (:attr:`opened`) and its events a read at a time (:meth:`batches`).

    What our sources' ``watch()`` returns (:class:`aioinformer.watch.WatchStream`,
    :class:`~aioinformer.testing.FakeListerWatcher`'s streams). A reflector reads such a
    stream by the batch: one hand-over to its store per read of the connection, instead of
    one per event. Any other async iterator of events (a plain source's generator) is read
    one event at a time, and an error before its first event counts as a failed request.
    Iterating the stream itself yields the events one by one.
    """

    __slots__ = ()

    @property
    @abc.abstractmethod
    def opened(self) -> bool:
        """Whether the server accepted the request: from then on an error ends an open
        watch rather than failing the request."""

    @abc.abstractmethod
    def batches(self) -> AsyncIterator[list[WatchEvent]]:
        """The events in stream order, as lists of those one read brought (never
        empty); errors are raised as :meth:`ListerWatcher.watch` says.

        A reflector calls it once per stream, a streaming list's stream carrying on as
        the watch included, and when it stops reading closes what it returned (its
        ``aclose()``, when it has one) before :meth:`aclose`; so an async generator
        method is a valid ``batches()``."""

    @abc.abstractmethod
    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        """The events one by one."""

    def __anext__(self) -> Awaitable[WatchEvent]:
        """The next event (what ``__aiter__`` hands out, one call more per event)."""
        return self.__aiter__().__anext__()

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Stop reading and close the stream (idempotent)."""

    @staticmethod
    async def one_by_one(
        batches: AsyncGenerator[list[WatchEvent], None],
    ) -> AsyncGenerator[WatchEvent, None]:
        """The events of ``batches`` one at a time, closing ``batches`` when closed: what
        a stream's ``__aiter__`` can return over its own :meth:`batches`."""
        try:
            async for batch in batches:
                for event in batch:
                    yield event
        finally:
            await batches.aclose()


EventFailures: TypeAlias = "list[tuple[WatchEvent, Exception]] | None"
"""What :meth:`WatchBatchSink.apply_events` returns: the events it could not take, each
with its error; ``None`` when it took them all."""


class WatchBatchSink(abc.ABC):
    """A reflector's store that takes a watch's events a batch at a time: one call per read
    of the connection instead of one per event. The informer's FIFOs are such stores; a
    store that is not gets ``add``/``update``/``delete`` (and ``bookmark``) per event."""

    __slots__ = ()

    @abc.abstractmethod
    async def apply_events(self, events: Sequence[WatchEvent]) -> EventFailures:
        """Apply ``ADDED``, ``MODIFIED``, ``DELETED`` and ``BOOKMARK`` events, in order,
        as their per-event methods would, without suspending. An event the store cannot
        take (its transform raised, it has no name) is left out and returned with its
        error, for the reader to report; the others are applied. ``None``: all were."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceInfo:
    """What a source serves and what it supports, as it declares them.

    Returned by :meth:`DescribedListerWatcher.describe`; :func:`source_info` gives the
    one of any source. The informer built on a source takes its name from
    :attr:`label` (unless given ``name=``), and its lister looks up a bare name in
    :attr:`namespace`.
    """

    resource: str
    """What it lists and watches, as a user names it: ``"pods"``,
    ``"apps/v1/deployments"``; a plain source: its class name."""
    namespace: str | None = None
    """The one namespace it serves; ``None``: all namespaces, or a cluster-scoped
    resource."""
    label_selector: str | None = None
    """The label selector it applies to every request, if any."""
    field_selector: str | None = None
    """The field selector it applies to every request, if any."""
    metadata_only: bool = False
    """It serves ``PartialObjectMetadata`` (no spec, no status)."""
    shard_selector: str | None = None
    """The shard selector (KEP-5866) it applies to every request, if any."""
    watch_list: bool = False
    """It supports streaming lists: a ``watch`` with ``send_initial_events=True`` either
    sends the current objects as ``ADDED`` events and then a ``BOOKMARK`` annotated
    :data:`INITIAL_EVENTS_END_ANNOTATION`, as kube-apiserver 1.27+ does, or raises (an
    older server's 422, say). A reflector streams only from a source declaring it, and
    falls back to LIST+WATCH whenever a streaming list fails."""
    server: str | None = None
    """The API server it reads from (``"https://10.0.0.1:6443"``), for messages; ``None``
    when it does not say (a plain source, a fake)."""

    @property
    def label(self) -> str:
        """A readable name: ``"pods"``, ``"apps/v1/deployments ns=default l=app=web"``;
        sources of different resources, namespaces or selectors never share one."""
        parts = [self.resource]
        if self.namespace is not None:
            parts.append(f"ns={self.namespace}")
        if self.label_selector:
            parts.append(f"l={self.label_selector}")
        if self.field_selector:
            parts.append(f"f={self.field_selector}")
        if self.shard_selector:
            parts.append(f"s={self.shard_selector}")
        if self.metadata_only:
            parts.append("metadata-only")
        return " ".join(parts)

    def describe(self) -> str:
        """Deprecated: :attr:`label`. A source's ``describe()`` gives its ``SourceInfo``,
        and this one's gave its label, so ``source.describe().describe()`` read as one
        thing twice; it warns (``DeprecationWarning``) and is removed in the next release."""
        warnings.warn(
            "SourceInfo.describe() is deprecated: use SourceInfo.label (kept for one release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.label


class DescribedListerWatcher(abc.ABC):
    """A :class:`ListerWatcher` that declares what it serves and what it supports.

    Subclass it (our :class:`~aioinformer.client.ResourceClient` and
    :class:`~aioinformer.testing.FakeListerWatcher` do) and implement :meth:`describe`
    besides ``list`` and ``watch``. A source that does not subclass it is a plain
    ``ListerWatcher``: named after its class, never streamed from.

    Example::

        class Widgets(DescribedListerWatcher):
            def describe(self) -> SourceInfo:
                return SourceInfo(resource="widgets", namespace="default")

            async def list(self, options: ListOptions) -> ObjectList: ...

            def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]: ...
    """

    __slots__ = ()

    @abc.abstractmethod
    def describe(self) -> SourceInfo:
        """What this source serves and supports; called when an informer or reflector
        is built on it."""

    @abc.abstractmethod
    async def list(self, options: ListOptions) -> ObjectList:
        """Return one page of the list described by ``options``."""

    @abc.abstractmethod
    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        """Open a watch: see :meth:`ListerWatcher.watch`."""

    def decoded_with(self, codec: Decoder) -> DescribedListerWatcher:
        """This source, its lists' items and its watch events' objects decoded by
        ``codec`` (the informer's :class:`aioinformer.codec.Codec`, which is a
        :class:`Decoder`) from the bytes the server sent; an informer reads its source
        through it. A source that only has decoded dicts to give returns itself (this
        default): the informer's codec takes its dicts as they are, or encodes them as it
        caches them."""
        return self

    def metadata_lister(self) -> DescribedListerWatcher | None:
        """The same objects (resource, namespace, selectors) served as
        ``PartialObjectMetadata``, or ``None`` (this default) when the source cannot serve
        them so. An informer's cache audit lists through it (see :mod:`aioinformer.audit`):
        metadata is a fraction of the bytes of whole objects."""
        return None


def source_info(source: ListerWatcher) -> SourceInfo:
    """What ``source`` declares (:meth:`DescribedListerWatcher.describe`); for a plain
    ``ListerWatcher``, its class name and nothing more: all namespaces, no streaming
    lists."""
    if isinstance(source, DescribedListerWatcher):
        return source.describe()
    return SourceInfo(resource=type(source).__name__)
