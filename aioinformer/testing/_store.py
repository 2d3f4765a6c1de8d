"""The fake API server's storage: tables of objects, one resourceVersion counter, history,
watchers.

Role: what etcd plus the watch cache are to kube-apiserver. Input is writes (create,
update, delete) and reads (list at a resourceVersion, watch from one); output is
pre-encoded JSON bytes, so serving a LIST or a watch event never re-encodes an object.
Everything here is synchronous and runs on the server's event loop: a write, its history
entry and its fan-out to every watcher happen in one step, so a watcher registered in the
same step as a snapshot sees exactly the events after it.

Ordering: resourceVersions are one global, strictly increasing integer counter. History is
one bounded deque of events in resourceVersion order; everything after ``compacted_rv`` is
in it, so a read at an older version answers 410 ``Expired``.

Writes are admitted as kube-apiserver admits them (``_validation``: the namespace must
exist, names and labels must be valid, typed fields must have their type) and record
``managedFields`` (``_managed``). Errors are raised as :class:`StatusError`, carrying the
``Status`` body and HTTP headers the server answers with. The stored-object values
(:class:`ResourceType`, :class:`Entry`) and the ``Status`` builders live in ``_objects``
and are re-exported here.

Task model: no tasks of its own; every method is synchronous and called from the
server's handlers and the test's direct calls on one event loop.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import collections
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from aioinformer.testing._managed import UNKNOWN_MANAGER, record_write
from aioinformer.testing._objects import (
    META_GROUP,
    Entry,
    ResourceType,
    StatusError,
    needs_object,
    object_key,
    partial_object,
    status_body,
)
from aioinformer.testing._validation import admit_create, check_types, invalid_error
from aioinformer.testing._validation import validate_metadata as _validate_metadata

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from aioinformer.labels import FieldSelector, LabelSelector

__all__ = [
    "Entry",
    "Event",
    "META_GROUP",
    "ResourceType",
    "StatusError",
    "Store",
    "Watcher",
    "partial_object",
    "status_body",
]


INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"
_SNAPSHOT_CACHE: Final = 4


@dataclass(slots=True)
class Event:
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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Watcher:
    """One open watch: the filter it applies and the encoded lines waiting to be sent.

    Invariant: ``buffer`` holds lines in resourceVersion order, all newer than ``min_rv``;
    ``wake`` is set whenever ``buffer`` gained a line or the watcher was closed. With
    ``as_meta`` set (a ``meta.k8s.io`` apiVersion) every object in ``buffer`` is a
    ``PartialObjectMetadata`` of that version, bookmarks included.
    """

    __slots__ = (
        "as_meta",
        "buffer",
        "closed",
        "field_selector",
        "fields_need_object",
        "label_selector",
        "min_rv",
        "namespace",
        "rt",
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
    ) -> None:
        self.rt = rt
        self.as_meta = as_meta
        self.namespace = namespace
        self.label_selector = label_selector or None
        self.field_selector = field_selector or None
        self.fields_need_object = needs_object(self.field_selector)
        self.min_rv = min_rv
        self.buffer: list[bytes] = []
        self.closed = False
        self.wake = asyncio.Event()

    def selects(self, entry: Entry) -> bool:
        """Whether ``entry`` passes this watch's namespace and selectors."""
        if self.namespace is not None and entry.namespace != self.namespace:
            return False
        return entry.selected_by(
            self.label_selector, self.field_selector, fields_need_object=self.fields_need_object
        )

    def offer(self, event: Event) -> None:
        """Queue ``event`` if it concerns this watch, translated as the watch cache does:
        an update that moves an object into (out of) the selection is ADDED (DELETED)."""
        if event.rv <= self.min_rv:
            return
        as_meta = self.as_meta
        if self.namespace is None and self.label_selector is None and self.field_selector is None:
            self.buffer.append(event.line(None, as_meta))
            self.wake.set()
            return
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
                return
        elif now:
            line = event.line(None, as_meta)
        else:
            return
        self.buffer.append(line)
        self.wake.set()

    def close(self) -> None:
        """Mark closed and wake the writer, which ends the stream."""
        self.closed = True
        self.wake.set()


class _Table:
    """The objects of one resource.

    Invariants: ``last_rv`` is the resourceVersion of the newest write to this resource
    (so its state at any version ``>= last_rv`` is the current one); ``_ordered`` is
    ``None`` or exactly (sorted keys, their entries), dropped by every write.
    """

    __slots__ = ("_ordered", "entries", "last_rv", "watchers")

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.last_rv = 0
        self.watchers: list[Watcher] = []
        self._ordered: tuple[list[str], list[Entry]] | None = None

    def ordered(self) -> tuple[list[str], list[Entry]]:
        """(keys, entries) of the current state, sorted by key (cached until a write)."""
        if self._ordered is None:
            keys = sorted(self.entries)
            entries = self.entries
            self._ordered = (keys, [entries[k] for k in keys])
        return self._ordered

    def put(self, key: str, entry: Entry) -> None:
        self.entries[key] = entry
        self.last_rv = entry.rv
        self._ordered = None

    def pop(self, key: str, rv: int) -> Entry:
        self.last_rv = rv
        self._ordered = None
        return self.entries.pop(key)


@dataclass(slots=True)
class ListResult:
    """One LIST page: the stored entries, the list's resourceVersion, the continue token."""

    entries: list[Entry]
    rv: int
    continue_: str | None
    remaining: int | None

    @property
    def items(self) -> list[bytes]:
        """The page's items encoded as a LIST carries them (no apiVersion/kind)."""
        return [entry.item for entry in self.entries]


def _encode_continue(rv: int, start: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, str]:
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


_CONTINUE_EXPIRED: Final = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)


class Store:
    """Objects of every resource, the global resourceVersion and the bounded history.

    Invariants: ``rv`` is the resourceVersion of the newest write (0 before any);
    ``history`` holds, in order, every event with ``compacted_rv < event.rv <= rv``;
    an event evicted from the full deque raises ``compacted_rv`` to its resourceVersion.
    """

    def __init__(self, *, history_size: int) -> None:
        self.rv = 0
        self.compacted_rv = 0
        self.history: collections.deque[Event] = collections.deque()
        self.history_size = history_size
        self._tables: dict[tuple[str, str], _Table] = {}
        self._snapshots: collections.OrderedDict[
            tuple[tuple[str, str], int], tuple[list[str], list[Entry]]
        ] = collections.OrderedDict()
        self.on_write: Callable[[], None] | None = None
        # Creates in a namespace that is not stored (or is being deleted) are refused.
        self.require_namespaces = True

    # -- tables --------------------------------------------------------------------------

    def table(self, rt: ResourceType) -> _Table:
        table = self._tables.get(rt.id)
        if table is None:
            table = self._tables[rt.id] = _Table()
        return table

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Entry:
        entry = self.table(rt).entries.get(object_key(namespace, name))
        if entry is None:
            raise not_found(rt, name)
        return entry

    # -- writes --------------------------------------------------------------------------

    def _commit(
        self, rt: ResourceType, event_type: str, key: str, entry: Entry, prev: Entry | None
    ) -> None:
        event = Event(entry.rv, rt, event_type, key, entry, prev)
        history = self.history
        history.append(event)
        if len(history) > self.history_size:
            self.compacted_rv = history.popleft().rv
        for watcher in self.table(rt).watchers:
            watcher.offer(event)
        if self.on_write is not None:
            self.on_write()

    def _stamp(self, obj: dict[str, Any]) -> Entry:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return Entry(obj, self.rv)

    def create(
        self, rt: ResourceType, obj: dict[str, Any], *, manager: str = UNKNOWN_MANAGER
    ) -> Entry:
        """Store a new object (``obj`` is owned by the store from here on), admitted as
        kube-apiserver admits it (see ``_validation.admit_create``)."""
        namespaces = self.table(_NAMESPACES).entries if self.require_namespaces else None
        admit_create(namespaces, rt, obj)
        meta = obj["metadata"]
        name = meta["name"]
        key = object_key(meta.get("namespace"), name)
        table = self.table(rt)
        if key in table.entries:
            raise StatusError(
                status_body(
                    409,
                    "AlreadyExists",
                    f'{rt.qualified} "{name}" already exists',
                    rt.details(name),
                )
            )
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = _now()
        if rt.generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        meta.pop("deletionTimestamp", None)
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        meta["managedFields"] = record_write(None, obj, api_version=rt.api_version, manager=manager)
        entry = self._stamp(obj)
        table.put(key, entry)
        self._commit(rt, "ADDED", key, entry, None)
        return entry

    def update(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        *,
        subresource: str | None = None,
        manager: str = UNKNOWN_MANAGER,
    ) -> Entry:
        """Replace an object; ``metadata.resourceVersion``, when set, is a precondition.

        Server-owned metadata (uid, creationTimestamp, generation) is kept; a main-resource
        update keeps the stored ``status`` of resources with a status subresource, a status
        update changes only ``status``. An object marked for deletion whose finalizers
        become empty is deleted. ``managedFields`` are the server's: ``manager``'s entry
        is recorded, whatever the object carried.
        """
        check_types(rt, obj)
        meta = obj["metadata"]
        name = meta["name"]
        key = object_key(meta.get("namespace"), name)
        table = self.table(rt)
        current = table.entries.get(key)
        if current is None:
            raise not_found(rt, name)
        wanted = meta.get("resourceVersion")
        if wanted not in (None, "") and wanted != str(current.rv):
            raise conflict(rt, name)
        old = current.decode()
        old_meta = old["metadata"]
        if subresource == "status":
            new = dict(old)
            new["metadata"] = dict(old_meta)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
        else:
            new = dict(obj)
            new_meta = dict(meta)
            for owned in _SERVER_OWNED:
                if owned in old_meta:
                    new_meta[owned] = old_meta[owned]
                else:
                    new_meta.pop(owned, None)
            new["metadata"] = new_meta
            if rt.status_subresource:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            if rt.generation and _spec_changed(new, old):
                new_meta["generation"] = int(old_meta.get("generation", 1)) + 1
            # The name cannot change on update; only new labels need validating.
            if new_meta.get("labels") != old_meta.get("labels"):
                errors = _validate_metadata(rt, new_meta)
                if errors:
                    raise invalid_error(rt, name, errors)
        new["apiVersion"] = rt.api_version
        new["kind"] = rt.kind
        new["metadata"]["managedFields"] = record_write(
            old_meta.get("managedFields"),
            new,
            api_version=rt.api_version,
            manager=manager,
            subresource=subresource,
        )
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return self._remove(rt, key, new)
        entry = self._stamp(new)
        table.put(key, entry)
        self._commit(rt, "MODIFIED", key, entry, current)
        return entry

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        precondition_rv: str | None = None,
        precondition_uid: str | None = None,
    ) -> Entry:
        """Delete an object (or mark it, when it has finalizers); return the last state."""
        key = object_key(namespace, name)
        current = self.table(rt).entries.get(key)
        if current is None:
            raise not_found(rt, name)
        if precondition_uid is not None and precondition_uid != current.uid:
            raise StatusError(
                status_body(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {rt.qualified} "{name}": Precondition '
                    f"failed: UID in precondition: {precondition_uid}, UID in object meta: "
                    f"{current.uid}",
                    rt.details(name),
                )
            )
        if precondition_rv is not None and precondition_rv != str(current.rv):
            raise StatusError(
                status_body(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {rt.qualified} "{name}": the '
                    f"ResourceVersion in the precondition ({precondition_rv}) does not match "
                    f"the ResourceVersion in record ({current.rv}). The object might have "
                    "been modified",
                    rt.details(name),
                )
            )
        new = current.decode()
        new["apiVersion"] = rt.api_version
        new["kind"] = rt.kind
        meta = new["metadata"]
        if meta.get("finalizers"):
            if current.deleting:
                return current
            meta["deletionTimestamp"] = _now()
            meta["deletionGracePeriodSeconds"] = 0
            # Marking an object for deletion changes what its controllers must do, so
            # kube-apiserver bumps the generation of kinds that keep one: a controller
            # filtering on generation changes still hears of the deletion.
            if meta.get("generation"):
                meta["generation"] = int(meta["generation"]) + 1
            entry = self._stamp(new)
            self.table(rt).put(key, entry)
            self._commit(rt, "MODIFIED", key, entry, current)
            return entry
        return self._remove(rt, key, new)

    def _remove(self, rt: ResourceType, key: str, last: dict[str, Any]) -> Entry:
        entry = self._stamp(last)
        prev = self.table(rt).pop(key, entry.rv)
        self._commit(rt, "DELETED", key, entry, prev)
        return entry

    # -- history -------------------------------------------------------------------------

    def compact(self, rv: int | None = None) -> None:
        """Forget history up to ``rv`` (default: everything): older reads answer 410."""
        target = self.rv if rv is None else min(rv, self.rv)
        history = self.history
        while history and history[0].rv <= target:
            history.popleft()
        self.compacted_rv = max(self.compacted_rv, target)
        self._snapshots.clear()

    def snapshot(self, rt: ResourceType, rv: int) -> tuple[list[str], list[Entry]]:
        """(keys, entries) of the resource as it was at ``rv``, sorted by key.

        Caller guarantees ``compacted_rv <= rv <= self.rv``. Reconstructed by undoing the
        newer history; the last few reconstructions are cached, since the pages of one
        paginated LIST all read the same version.
        """
        table = self.table(rt)
        if rv >= table.last_rv:
            return table.ordered()
        cache_key = (rt.id, rv)
        cached = self._snapshots.get(cache_key)
        if cached is not None:
            self._snapshots.move_to_end(cache_key)
            return cached
        state = dict(table.entries)
        for event in reversed(self.history):
            if event.rv <= rv:
                break
            if event.rt.id != rt.id:
                continue
            if event.prev is None:
                state.pop(event.key, None)
            else:
                state[event.key] = event.prev
        keys = sorted(state)
        result = (keys, [state[k] for k in keys])
        self._snapshots[cache_key] = result
        while len(self._snapshots) > _SNAPSHOT_CACHE:
            self._snapshots.popitem(last=False)
        return result

    # -- reads ---------------------------------------------------------------------------

    def list(
        self,
        rt: ResourceType,
        *,
        namespace: str | None,
        label_selector: LabelSelector | None,
        field_selector: FieldSelector | None,
        resource_version: str | None,
        resource_version_match: str | None,
        limit: int | None,
        continue_: str | None,
    ) -> ListResult:
        """One LIST page, following kube-apiserver's resourceVersion rules."""
        start = ""
        if continue_:
            if resource_version not in (None, "", "0"):
                raise StatusError(
                    status_body(
                        400,
                        "BadRequest",
                        "specifying resource version is not allowed when using continue",
                    )
                )
            rv, start = _decode_continue(continue_)
            if rv < self.compacted_rv or rv > self.rv:
                inconsistent = _encode_continue(self.rv, start)
                raise StatusError(
                    status_body(
                        410, "Expired", _CONTINUE_EXPIRED, list_meta={"continue": inconsistent}
                    )
                )
        else:
            rv = self.read_rv(resource_version, resource_version_match, limit=limit)
        keys, entries = self.snapshot(rt, rv)
        lo, hi = 0, len(entries)
        if namespace is not None and rt.namespaced:
            prefix = namespace + "/"
            lo = bisect.bisect_left(keys, prefix)
            hi = bisect.bisect_left(keys, prefix + "\U0010ffff")
        if start:
            lo = max(lo, bisect.bisect_left(keys, start))
        filtering = bool(label_selector) or bool(field_selector)
        items: list[Entry] = []
        if not filtering and not limit:
            return ListResult(entries[lo:hi], rv, None, None)
        labels = label_selector or None
        fields = field_selector or None
        decode = needs_object(fields)
        i = lo
        while i < hi:
            entry = entries[i]
            i += 1
            if filtering and not entry.selected_by(labels, fields, fields_need_object=decode):
                continue
            items.append(entry)
            if limit and len(items) >= limit:
                break
        if i < hi and limit and len(items) >= limit:
            token = _encode_continue(rv, keys[i - 1] + "\x00")
            remaining = None if filtering else hi - i
            return ListResult(items, rv, token, remaining)
        return ListResult(items, rv, None, None)

    def read_rv(self, resource_version: str | None, match: str | None, *, limit: int | None) -> int:
        """The resourceVersion a LIST reads at, or the 410/504 kube-apiserver answers."""
        if not resource_version:
            return self.rv
        requested = parse_rv(resource_version)
        if requested == 0:
            return self.rv
        exact = match == "Exact" or (not match and bool(limit))
        if requested > self.rv:
            raise too_large(requested, self.rv)
        if not exact:
            return self.rv
        if requested < self.compacted_rv:
            raise StatusError(
                status_body(410, "Expired", "The resourceVersion for the provided list is too old.")
            )
        return requested

    # -- watches -------------------------------------------------------------------------

    def open_watch(
        self,
        rt: ResourceType,
        *,
        namespace: str | None,
        label_selector: LabelSelector | None,
        field_selector: FieldSelector | None,
        resource_version: str | None,
        initial_events: bool,
        initial_events_end: bool,
        as_meta: str | None = None,
    ) -> Watcher:
        """Register a watcher with its first lines already queued.

        ``initial_events`` queues ADDED for the current state (an unset or ``0``
        resourceVersion, or ``sendInitialEvents``); ``initial_events_end`` then queues the
        ``k8s.io/initial-events-end`` BOOKMARK. A resourceVersion older than the history
        raises the 410 ``Expired`` (the caller answers it, or sends it as an ERROR
        event). ``as_meta`` makes it a metadata-only watch (see :class:`Watcher`).
        """
        if initial_events:
            start_rv = self.rv
        else:
            start_rv = self.rv if not resource_version else parse_rv(resource_version)
            if start_rv == 0:
                start_rv = self.rv
            elif start_rv < self.compacted_rv:
                raise too_old(start_rv, self.compacted_rv)
        watcher = Watcher(
            rt,
            namespace=namespace if rt.namespaced else None,
            label_selector=label_selector,
            field_selector=field_selector,
            min_rv=start_rv,
            as_meta=as_meta,
        )
        if initial_events:
            added = b'{"type":"ADDED","object":'
            for entry in self.snapshot(rt, start_rv)[1]:
                if watcher.selects(entry):
                    if as_meta is None:
                        watcher.buffer.append(added + rt.prefix + entry.item[1:] + b"}\n")
                    else:
                        watcher.buffer.append(added + entry.partial(as_meta) + b"}\n")
            if initial_events_end:
                watcher.buffer.append(
                    bookmark_line(rt, start_rv, initial_events_end=True, as_meta=as_meta)
                )
        elif start_rv < self.rv:
            for event in self.history:
                if event.rv > start_rv and event.rt.id == rt.id:
                    watcher.offer(event)
        if watcher.buffer:
            watcher.wake.set()
        self.table(rt).watchers.append(watcher)
        return watcher

    def close_watch(self, watcher: Watcher) -> None:
        watchers = self.table(watcher.rt).watchers
        if watcher in watchers:
            watchers.remove(watcher)
        watcher.close()


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


def conflict(rt: ResourceType, name: str) -> StatusError:
    return StatusError(
        status_body(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {rt.qualified} "{name}": the object has been '
            "modified; please apply your changes to the latest version and try again",
            rt.details(name),
        )
    )


_NAMESPACES: Final = ResourceType("", "v1", "namespaces", "Namespace", False)
_SERVER_OWNED: Final = ("uid", "creationTimestamp", "generation", "deletionTimestamp")
_NOT_SPEC: Final = frozenset({"metadata", "status", "apiVersion", "kind"})


def _spec_changed(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Whether anything but metadata and status differs (what bumps ``generation``)."""
    for key, value in new.items():
        if key not in _NOT_SPEC and old.get(key) != value:
            return True
    return any(key not in _NOT_SPEC and key not in new for key in old)
