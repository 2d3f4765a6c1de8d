"""Watch-cache building blocks: history events, watchers, paged LIST reads, watch lines.

Role: what a server of the list/watch API keeps between a write and the clients that read
it, shared by the fake API server (``aioinformer.testing``) and the caching proxy
(``aioinformer.proxy``). Input: stored :class:`~aioinformer._apiserver.objects.Entry` values in
resourceVersion order; output: encoded watch lines (each :class:`Change` encodes each of its
forms once, however many watchers send it), LIST pages cut from a sorted snapshot with
kube-apiserver's ``continue`` tokens, and the ``Status`` errors of reads at a
resourceVersion outside what is kept (410 ``Expired``, 504 too large), and the ``ERROR``
line a too-old watch is answered with.

Ordering: a :class:`Watcher` is offered events in resourceVersion order and queues only
those newer than where it started; an update that moves an object into or out of its
selection is queued as ``ADDED`` or ``DELETED``, as kube-apiserver's watch cache does.

Selection: a namespace, label and field selectors, and a shard selector (KEP-5866: the
FNV-1a 64 hash of the object's ``uid`` or ``namespace`` in one of its ranges, read from
the hash the :class:`~aioinformer._apiserver.objects.Entry` keeps), all of which must
pick an object. The hashed fields never change, so an object never moves into or out of
a shard; a LIST page filtered by one echoes it (``shardInfo``) and, as with selectors,
gives no ``remainingItemCount``. Whether a server honours shard selectors at all is its
own choice (see :func:`~aioinformer._apiserver.requests.list_query`).

Task model: plain synchronous code on one event loop; a watcher's ``wake`` event tells
the task that writes its stream that lines are waiting.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from aioinformer._apiserver.objects import (
    Entry,
    ResourceType,
    StatusError,
    needs_object,
    status_body,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from aioinformer.labels import FieldSelector, LabelSelector
    from aioinformer.shard_selector import ShardSelector

__all__ = [
    "CONTINUE_EXPIRED",
    "Change",
    "INITIAL_EVENTS_END",
    "ListResult",
    "Watcher",
    "bookmark_line",
    "continue_expired",
    "decode_continue",
    "encode_continue",
    "error_line",
    "not_found",
    "page",
    "parse_rv",
    "queue_initial",
    "read_continue",
    "too_large",
    "too_old",
]

INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"
"""The annotation of the BOOKMARK that ends a watch's initial events."""


@dataclass(slots=True)
class Change:
    """One change in history: ``entry`` is the new state (for DELETED the last state at
    the deletion's resourceVersion), ``prev`` the state before (``None`` for ADDED)."""

    rv: int
    rt: ResourceType
    type: str
    key: str
    entry: Entry
    prev: Entry | None
    _lines: dict[str, bytes] | None = None

    def line(self, event_type: str | None = None, as_meta: str | None = None) -> bytes:
        """The encoded watch line of this event, as ``event_type`` (default: its own);
        with ``as_meta`` (a ``meta.k8s.io`` apiVersion) the object is its
        ``PartialObjectMetadata``. Each variant is encoded once, however many watchers."""
        kind = event_type or self.type
        if self._lines is None:
            self._lines = {}
        cache_key = kind if as_meta is None else f"{kind} {as_meta}"
        line = self._lines.get(cache_key)
        if line is None:
            obj = self.entry.full(self.rt) if as_meta is None else self.entry.partial(as_meta)
            line = b'{"type":"' + kind.encode() + b'","object":' + obj + b"}\n"
            self._lines[cache_key] = line
        return line


class Watcher:
    """One open watch: the filter it applies and the encoded lines waiting to be sent.

    Invariant: ``buffer`` holds lines in resourceVersion order, all newer than ``min_rv``;
    ``wake`` is set whenever ``buffer`` gained a line or the watcher was closed. With
    ``as_meta`` set (a ``meta.k8s.io`` apiVersion) every object in ``buffer`` is a
    ``PartialObjectMetadata`` of that version, bookmarks included. ``bookmarks``: the
    client asked for BOOKMARK events (``allowWatchBookmarks``). ``selective``: some
    namespace or selector filters what it is sent (set once, at the start).
    """

    __slots__ = (
        "as_meta",
        "bookmarks",
        "buffer",
        "closed",
        "field_selector",
        "fields_need_object",
        "label_selector",
        "min_rv",
        "namespace",
        "rt",
        "selective",
        "shard_selector",
        "wake",
    )

    def __init__(
        self,
        rt: ResourceType,
        *,
        namespace: str | None,
        label_selector: LabelSelector | None,
        field_selector: FieldSelector | None,
        min_rv: int,
        as_meta: str | None = None,
        bookmarks: bool = False,
        shard_selector: ShardSelector | None = None,
    ) -> None:
        self.rt = rt
        self.as_meta = as_meta
        self.bookmarks = bookmarks
        self.namespace = namespace
        self.label_selector = label_selector or None
        self.field_selector = field_selector or None
        self.shard_selector = shard_selector
        self.fields_need_object = needs_object(self.field_selector)
        self.selective = not (
            namespace is None
            and self.label_selector is None
            and self.field_selector is None
            and shard_selector is None
        )
        self.min_rv = min_rv
        self.buffer: list[bytes] = []
        self.closed = False
        self.wake = asyncio.Event()

    def selects(self, entry: Entry) -> bool:
        """Whether ``entry`` passes this watch's namespace and selectors."""
        if self.namespace is not None and entry.namespace != self.namespace:
            return False
        return entry.selected_by(
            self.label_selector,
            self.field_selector,
            fields_need_object=self.fields_need_object,
            shards=self.shard_selector,
        )

    def offer(self, event: Change) -> None:
        """:meth:`queue` ``event`` and, when a line was queued, wake the writer."""
        if self.queue(event):
            self.wake.set()

    def queue(self, event: Change) -> bool:
        """Queue ``event`` if it concerns this watch, translated as the watch cache does
        (an update that moves an object into (out of) the selection is ADDED (DELETED));
        whether a line was queued. The writer is not woken: the caller does that."""
        if event.rv <= self.min_rv:
            return False
        as_meta = self.as_meta
        if not self.selective:
            self.buffer.append(event.line(None, as_meta))
            return True
        now = self.selects(event.entry)
        if event.type == "MODIFIED":
            before = event.prev is not None and self.selects(event.prev)
            if now and before:
                line = event.line(None, as_meta)
            elif now:
                line = event.line("ADDED", as_meta)
            elif before:
                line = event.line("DELETED", as_meta)
            else:
                return False
        elif now:
            line = event.line(None, as_meta)
        else:
            return False
        self.buffer.append(line)
        return True

    def close(self) -> None:
        """Mark closed and wake the writer, which ends the stream."""
        self.closed = True
        self.wake.set()


@dataclass(slots=True)
class ListResult:
    """One LIST page: the stored entries, the list's resourceVersion, the continue token;
    ``shards``, the shard selector that filtered it (which the answer echoes)."""

    entries: list[Entry]
    rv: int
    continue_: str | None
    remaining: int | None
    shards: ShardSelector | None = None

    @property
    def items(self) -> list[bytes]:
        """The page's items encoded as a LIST carries them (no apiVersion/kind)."""
        return [entry.item for entry in self.entries]


def encode_continue(rv: int, start: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str) -> tuple[int, str]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        rv, start, version = data["rv"], data["start"], data["v"]
    except (ValueError, KeyError, TypeError) as exc:
        raise StatusError(
            status_body(400, "BadRequest", f"continue key is not valid: {exc}")
        ) from exc
    if version != "meta.k8s.io/v1" or not isinstance(rv, int) or not isinstance(start, str):
        raise StatusError(
            status_body(400, "BadRequest", "continue key is not valid: incorrect encoded start")
        )
    return rv, start


def too_old(rv: int, compacted: int) -> StatusError:
    """The 410 a read at a compacted resourceVersion gets."""
    return StatusError(status_body(410, "Expired", f"too old resource version: {rv} ({compacted})"))


def too_large(rv: int, current: int) -> StatusError:
    """The 504 a read at a resourceVersion the server has not reached gets."""
    body = status_body(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {rv}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )
    return StatusError(body, {"Retry-After": "1"})


CONTINUE_EXPIRED: Final = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)


def bookmark_line(
    rt: ResourceType, rv: int, *, initial_events_end: bool = False, as_meta: str | None = None
) -> bytes:
    """A BOOKMARK watch line: only kind, apiVersion and metadata.resourceVersion (the
    kind and apiVersion of ``PartialObjectMetadata`` on a metadata-only watch)."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    if as_meta is None:
        obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
    else:
        obj = {"kind": "PartialObjectMetadata", "apiVersion": as_meta, "metadata": meta}
    return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def error_line(status: dict[str, Any]) -> bytes:
    """An ``ERROR`` watch line carrying ``status``: how kube-apiserver v1.36 answers a
    watch it cannot serve once the stream is open, a resourceVersion too old for its watch
    cache included (HTTP 200, this one line, then the end of the stream)."""
    return orjson.dumps({"type": "ERROR", "object": status}) + b"\n"


def parse_rv(text: str) -> int:
    """A resourceVersion as an integer, or the 400 for one that is not."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise StatusError(status_body(400, "BadRequest", f'invalid resource version "{text}"'))
    return value


def not_found(rt: ResourceType, name: str) -> StatusError:
    return StatusError(
        status_body(404, "NotFound", f'{rt.qualified} "{name}" not found', rt.details(name))
    )


def read_continue(token: str, resource_version: str | None) -> tuple[int, str]:
    """The (resourceVersion, first key) a LIST's ``continue`` token names, or the 400 for
    a token that does not decode or comes with a resourceVersion."""
    if resource_version not in (None, "", "0"):
        raise StatusError(
            status_body(
                400, "BadRequest", "specifying resource version is not allowed when using continue"
            )
        )
    return decode_continue(token)


def continue_expired(current: int, start: str) -> StatusError:
    """The 410 for a ``continue`` token whose snapshot is gone; it carries a token that
    goes on from ``start`` at ``current``, as kube-apiserver's does."""
    inconsistent = encode_continue(current, start)
    return StatusError(
        status_body(410, "Expired", CONTINUE_EXPIRED, list_meta={"continue": inconsistent})
    )


def page(
    keys: Sequence[str],
    entries: Sequence[Entry],
    rv: int,
    *,
    namespace: str | None,
    label_selector: LabelSelector | None,
    field_selector: FieldSelector | None,
    limit: int | None,
    start: str = "",
    shard_selector: ShardSelector | None = None,
) -> ListResult:
    """One LIST page cut from a snapshot (``keys`` sorted, ``entries`` theirs) read at
    ``rv``: the objects of ``namespace`` (all when ``None``) from key ``start`` on that the
    selectors (the shard selector too) pick, at most ``limit`` of them, with the token for
    the rest."""
    lo, hi = 0, len(entries)
    if namespace is not None:
        prefix = namespace + "/"
        lo = bisect.bisect_left(keys, prefix)
        hi = bisect.bisect_left(keys, prefix + "\U0010ffff")
    if start:
        lo = max(lo, bisect.bisect_left(keys, start))
    shards = shard_selector
    filtering = bool(label_selector) or bool(field_selector) or shards is not None
    if not filtering and not limit:
        return ListResult(list(entries[lo:hi]), rv, None, None)
    labels = label_selector or None
    fields = field_selector or None
    decode = needs_object(fields)
    items: list[Entry] = []
    i = lo
    while i < hi:
        entry = entries[i]
        i += 1
        if filtering and not entry.selected_by(
            labels, fields, fields_need_object=decode, shards=shards
        ):
            continue
        items.append(entry)
        if limit and len(items) >= limit:
            break
    if i < hi and limit and len(items) >= limit:
        token = encode_continue(rv, keys[i - 1] + "\x00")
        remaining = None if filtering else hi - i
        return ListResult(items, rv, token, remaining, shards)
    return ListResult(items, rv, None, None, shards)


def queue_initial(
    watcher: Watcher, entries: Sequence[Entry], rv: int, *, initial_events_end: bool
) -> None:
    """Queue ``ADDED`` for each of ``entries`` (the state at ``rv``) that ``watcher``
    selects, then, with ``initial_events_end``, the BOOKMARK that ends them."""
    rt, as_meta = watcher.rt, watcher.as_meta
    added = b'{"type":"ADDED","object":'
    buffer = watcher.buffer
    for entry in entries:
        if watcher.selects(entry):
            if as_meta is None:
                buffer.append(added + rt.prefix + entry.item[1:] + b"}\n")
            else:
                buffer.append(added + entry.partial(as_meta) + b"}\n")
    if initial_events_end:
        buffer.append(bookmark_line(rt, rv, initial_events_end=True, as_meta=as_meta))
