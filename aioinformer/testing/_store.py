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
in it, so a read at an older version answers 410 ``Expired``. The server compacts when
it starts serving (unless told to keep that history), so the window begins where a
freshly started kube-apiserver's watch cache begins: at the version it started at.

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

import collections
import time
import uuid
from typing import TYPE_CHECKING, Any, Final

from aioinformer._apiserver.objects import (
    Entry,
    ResourceType,
    StatusError,
    object_key,
    status_body,
)
from aioinformer._apiserver.watch import (
    Event,
    ListResult,
    Watcher,
    continue_expired,
    not_found,
    page,
    parse_rv,
    queue_initial,
    read_continue,
    too_large,
    too_old,
)
from aioinformer.testing._managed import UNKNOWN_MANAGER, record_write
from aioinformer.testing._validation import admit_create, check_types, invalid_error
from aioinformer.testing._validation import validate_metadata as _validate_metadata

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from aioinformer.labels import FieldSelector, LabelSelector

__all__ = ["Store"]


_SNAPSHOT_CACHE: Final = 4


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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
        # Asked for every write: true when the watch cache loses its event (a fault).
        self.loses_event: Callable[[Event], bool] | None = None
        # The resourceVersions of the events lost so: never sent to a watch, replays
        # included; lists still show their changes.
        self.lost: set[int] = set()
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
        if self.loses_event is not None and self.loses_event(event):
            self.lost.add(event.rv)
        else:
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
            rv, start = read_continue(continue_, resource_version)
            if rv < self.compacted_rv or rv > self.rv:
                raise continue_expired(self.rv, start)
        else:
            rv = self.read_rv(resource_version, resource_version_match, limit=limit)
        keys, entries = self.snapshot(rt, rv)
        return page(
            keys,
            entries,
            rv,
            namespace=namespace if rt.namespaced else None,
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            start=start,
        )

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
            queue_initial(
                watcher,
                self.snapshot(rt, start_rv)[1],
                start_rv,
                initial_events_end=initial_events_end,
            )
        elif start_rv < self.rv:
            lost = self.lost
            for event in self.history:
                if event.rv > start_rv and event.rt.id == rt.id and event.rv not in lost:
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
