"""The fake API server's storage: what etcd plus the watch cache are to kube-apiserver.

Role: the write rules over one :class:`~aioinformer._apiserver.watchcache.WatchCache` per
resource (the watch cache the caching proxy uses too: history, snapshots, paged lists,
resourceVersion rules, watchers), all sharing one
:class:`~aioinformer._apiserver.watchcache.History`. Input is writes (create, update,
delete) and reads (list at a resourceVersion, watch from one); output is pre-encoded JSON
bytes, so serving a LIST or a watch event never re-encodes an object. Everything here is
synchronous and runs on the server's event loop: a write, its history entry and its
fan-out to every watcher happen in one step, so a watcher registered in the same step as a
snapshot sees exactly the events after it.

Ordering: resourceVersions are one global, strictly increasing integer counter, as etcd's
revision is. History is one bounded window of every resource's events in resourceVersion
order; everything after ``compacted_rv`` is in it, so a read at an older version answers
410 ``Expired``. The server compacts when it starts serving (unless told to keep that
history), so the window begins where a freshly started kube-apiserver's watch cache
begins: at the version it started at.

Writes are admitted as kube-apiserver admits them (``_validation``: the namespace must
exist, names and labels must be valid, typed fields must have their type; ``_specs``,
unless ``validate_specs`` is off: the specs of the kinds users create most) and record
``managedFields`` (``_managed``). A resource's :class:`Controller` (the
CustomResourceDefinitions' installer) admits its objects too and acts on every change of
them, within the write. Errors are raised as :class:`StatusError`, carrying the
``Status`` body and HTTP headers the server answers with. The stored-object values
(:class:`ResourceType`, :class:`Entry`) and the ``Status`` builders live in ``_objects``
and are re-exported here.

Task model: no tasks of its own; every method is synchronous and called from the
server's handlers and the test's direct calls on one event loop.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, Final, Protocol

from aioinformer._apiserver.objects import (
    Entry,
    ResourceType,
    StatusError,
    object_key,
    status_body,
)
from aioinformer._apiserver.watch import Change, Watcher, not_found
from aioinformer._apiserver.watchcache import History, HistoryView, WatchCache
from aioinformer.testing._managed import UNKNOWN_MANAGER, record_write
from aioinformer.testing._specs import SPEC_RULES
from aioinformer.testing._validation import admit_create, check_types, invalid_error
from aioinformer.testing._validation import validate_metadata as _validate_metadata

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Unpack

    from aioinformer._apiserver.requests import ListQuery, WatchQuery
    from aioinformer._apiserver.watch import ListResult
    from aioinformer.testing._validation import SpecRules

__all__ = ["Controller", "Store"]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Controller(Protocol):
    """What acts on one resource's writes besides the store, as a kube-apiserver
    controller does, but synchronously, within the write (``_crds`` for
    CustomResourceDefinitions)."""

    def admit(self, obj: dict[str, Any], old: Mapping[str, Any] | None) -> None:
        """Validate and default an object about to be stored (``old``: the stored one, on
        an update of the main resource), in place; raise the 422 to refuse it."""
        ...

    def deleting(self, obj: dict[str, Any]) -> None:
        """A delete is about to mark or remove the stored object ``obj`` (decoded, not yet
        marked); a finalizer added here in place makes it a mark."""
        ...

    def removing(self, entry: Entry) -> None:
        """The object is about to be removed from the store (its DELETED comes next)."""
        ...

    def written(self, event_type: str, entry: Entry) -> None:
        """A change of the object was stored and delivered to the watches."""
        ...


class _Table(WatchCache[Watcher]):
    """The watch cache of one resource (every version of it), in the store's history.

    Invariant: ``lost`` is the store's set of lost events' resourceVersions: a watch
    opened from before one of them is not sent it, as a live watch was not.
    """

    def __init__(self, rt: ResourceType, history: History, lost: set[int]) -> None:
        super().__init__(rt, history, Watcher)
        self.lost = lost

    def replays(self, event: Change) -> bool:
        return event.rv not in self.lost


class Store(HistoryView):
    """Objects of every resource, the global resourceVersion and the bounded history.

    Invariants: ``rv`` is the resourceVersion of the newest write (0 before any);
    ``history`` holds, in order, every event with ``compacted_rv < event.rv <= rv``, of
    every resource; an event evicted from the full window raises ``compacted_rv`` to its
    resourceVersion.
    """

    def __init__(self, *, history_size: int) -> None:
        self.history = History(history_size)
        self._tables: dict[tuple[str, str], _Table] = {}
        self.on_write: Callable[[], None] | None = None
        # Asked for every write: true when the watch cache loses its event (a fault).
        self.loses_event: Callable[[Change], bool] | None = None
        # The resourceVersions of the events lost so: never sent to a watch, replays
        # included; lists still show their changes.
        self.lost: set[int] = set()
        # Creates in a namespace that is not stored (or is being deleted) are refused.
        self.require_namespaces = True
        # Writes of the kinds ``_specs`` knows are refused when their spec is invalid.
        self.validate_specs = True
        # Per resource id: what acts on its writes (the CRDs' installer).
        self.controllers: dict[tuple[str, str], Controller] = {}

    @property
    def specs(self) -> SpecRules | None:
        """The spec rules writes are admitted with (``None`` while specs are not
        validated)."""
        return SPEC_RULES if self.validate_specs else None

    @property
    def history_size(self) -> int:
        """How many events the history keeps."""
        return self.history.size

    # -- tables --------------------------------------------------------------------------

    def table(self, rt: ResourceType) -> _Table:
        table = self._tables.get(rt.id)
        if table is None:
            table = self._tables[rt.id] = _Table(rt, self.history, self.lost)
        return table

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Entry:
        """The current object, or the 404 ``NotFound``."""
        return self.table(rt).get(namespace, name)

    # -- writes --------------------------------------------------------------------------

    def _commit(
        self, rt: ResourceType, event_type: str, key: str, entry: Entry, prev: Entry | None
    ) -> None:
        table = self.table(rt)
        event = table.record(event_type, key, entry, prev, rt=rt)
        if self.loses_event is not None and self.loses_event(event):
            self.lost.add(event.rv)
        else:
            table.deliver(event)
        if self.on_write is not None:
            self.on_write()
        controller = self.controllers.get(rt.id)
        if controller is not None:
            controller.written(event_type, entry)

    def _stamp(self, obj: dict[str, Any]) -> Entry:
        history = self.history
        history.rv += 1
        obj["metadata"]["resourceVersion"] = str(history.rv)
        return Entry(obj, history.rv)

    def create(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        *,
        manager: str = UNKNOWN_MANAGER,
        dry_run: bool = False,
        uid: str | None = None,
    ) -> Entry:
        """Store a new object (``obj`` is owned by the store from here on), admitted as
        kube-apiserver admits it (see ``_validation.admit_create``). ``dry_run``: admit,
        default and answer the object as it would be stored (no resourceVersion), store
        nothing; ``uid``: the uid to give it (a dry run's, so the object admission saw is
        the one stored)."""
        namespaces = self.table(_NAMESPACES).entries if self.require_namespaces else None
        admit_create(namespaces, rt, obj, self.specs)
        controller = self.controllers.get(rt.id)
        if controller is not None:
            controller.admit(obj, None)
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
        meta["uid"] = uid or str(uuid.uuid4())
        meta["creationTimestamp"] = _now()
        if rt.generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        meta.pop("deletionTimestamp", None)
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        meta["managedFields"] = record_write(None, obj, api_version=rt.api_version, manager=manager)
        if dry_run:
            return Entry(obj, self.history.rv)
        entry = self._stamp(obj)
        self._commit(rt, "ADDED", key, entry, None)
        return entry

    def update(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        *,
        subresource: str | None = None,
        manager: str = UNKNOWN_MANAGER,
        dry_run: bool = False,
    ) -> Entry:
        """Replace an object; ``metadata.resourceVersion``, when set, is a precondition.
        ``dry_run``: the object as it would be stored, at the stored resourceVersion,
        nothing stored.

        Server-owned metadata (uid, creationTimestamp, generation) is kept; a main-resource
        update keeps the stored ``status`` of resources with a status subresource, a status
        update changes only ``status``. An object marked for deletion whose finalizers
        become empty is deleted. ``managedFields`` are the server's: ``manager``'s entry
        is recorded, whatever the object carried.
        """
        specs = self.specs
        check_types(rt, obj, specs)
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
            # The name cannot change on update; only new labels need validating. The
            # spec is validated whole, as kube-apiserver validates an update.
            errors = []
            if new_meta.get("labels") != old_meta.get("labels"):
                errors.extend(_validate_metadata(rt, new_meta))
            if specs is not None:
                errors.extend(specs.errors(rt, new))
            if errors:
                raise invalid_error(rt, name, errors)
            controller = self.controllers.get(rt.id)
            if controller is not None:
                controller.admit(new, old)
        new["apiVersion"] = rt.api_version
        new["kind"] = rt.kind
        new["metadata"]["managedFields"] = record_write(
            old_meta.get("managedFields"),
            new,
            api_version=rt.api_version,
            manager=manager,
            subresource=subresource,
        )
        if dry_run:
            new["metadata"]["resourceVersion"] = str(current.rv)
            return Entry(new, current.rv)
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return self._remove(rt, key, new)
        entry = self._stamp(new)
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
        dry_run: bool = False,
    ) -> Entry:
        """Delete an object (or mark it, when it has finalizers); return the last state
        (``dry_run``: the state it would have, nothing changed)."""
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
        controller = self.controllers.get(rt.id)
        if controller is not None and not current.deleting:
            controller.deleting(new)
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
            if dry_run:
                return Entry(new, current.rv)
            entry = self._stamp(new)
            self._commit(rt, "MODIFIED", key, entry, current)
            return entry
        if dry_run:
            return Entry(new, current.rv)
        return self._remove(rt, key, new)

    def _remove(self, rt: ResourceType, key: str, last: dict[str, Any]) -> Entry:
        prev = self.table(rt).entries[key]
        controller = self.controllers.get(rt.id)
        if controller is not None:
            controller.removing(prev)
        entry = self._stamp(last)
        self._commit(rt, "DELETED", key, entry, prev)
        return entry

    def drop(self, rt: ResourceType) -> None:
        """Forget resource ``rt`` (every version of it), as deleting its definition does:
        every object is removed (each a DELETED event at a new resourceVersion, its
        finalizers notwithstanding), then every watch of it ends, after the events it was
        sent. A table made anew for it later starts empty."""
        table = self._tables.get(rt.id)
        if table is None:
            return
        for key, entry in zip(*table.ordered(), strict=True):
            last = entry.decode()
            last["apiVersion"] = rt.api_version
            last["kind"] = rt.kind
            self._commit(rt, "DELETED", key, self._stamp(last), entry)
        table.close_all()
        del self._tables[rt.id]

    # -- history -------------------------------------------------------------------------

    def compact(self, rv: int | None = None) -> None:
        """Forget history up to ``rv`` (default: everything): older reads answer 410."""
        self.history.compact(rv)

    # -- reads and watches: the resource's watch cache -----------------------------------

    def snapshot(self, rt: ResourceType, rv: int) -> tuple[list[str], list[Entry]]:
        """(keys, entries) of the resource as it was at ``rv``, sorted by key (see
        :meth:`~aioinformer._apiserver.watchcache.WatchCache.snapshot`)."""
        return self.table(rt).snapshot(rv)

    def list(
        self, rt: ResourceType, *, namespace: str | None, **query: Unpack[ListQuery]
    ) -> ListResult:
        """One LIST page, following kube-apiserver's resourceVersion rules."""
        return self.table(rt).list(namespace=namespace, **query)

    def open_watch(
        self, rt: ResourceType, *, namespace: str | None, **query: Unpack[WatchQuery]
    ) -> Watcher:
        """Register a watcher of ``rt`` with its first lines already queued (see
        :meth:`~aioinformer._apiserver.watchcache.WatchCache.open_watch`); the 410
        ``Expired`` for a resourceVersion older than the history."""
        return self.table(rt).open_watch(namespace=namespace, rt=rt, **query)

    def close_watch(self, watcher: Watcher) -> None:
        table = self._tables.get(watcher.rt.id)
        if table is None:  # its resource was dropped, which closed it
            watcher.close()
        else:
            table.close_watch(watcher)


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
