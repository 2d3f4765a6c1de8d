"""One client's own writes to one resource, until the informer's cache shows them.

Role: the bookkeeping behind :class:`~aioinformer.operator.cached_client.CachedClient`'s
read-your-own-writes (controller-runtime's ``readerconsistency`` handler, kept per
client). One :class:`OwnWrites` per client and informer. Input: the answers of the
client's writes (:meth:`OwnWrites.wrote`, :meth:`OwnWrites.delete_sent` and
:meth:`OwnWrites.delete_done`) and the informer's delete notifications. Output:
:meth:`OwnWrites.wait_for_key` (a ``get``) and :meth:`OwnWrites.wait_for_namespace` (a
``list``), which return once the cache holds every write of this client that the read
concerns, or raise :class:`~aioinformer.errors.CacheReadTimeout` naming what it lacks.

The rules:

* **Create, update, patch** (status and scale included): the answer's resourceVersion
  is the key's minimum. A read of the key, or a list of its namespace, waits until the
  informer's ``last_store_resource_version`` (the newest version the cache has applied
  with everything before it) reaches it: the write is in the cache then, or something
  newer is.
* **A delete answered with an object**: the object is either still stored, marked for
  deletion (finalizers hold it: kube-apiserver answers with it as marked), or gone, for
  the kinds whose API answers with the object as deleted (Pods, Services,
  ServiceAccounts), stamped with the deletion's resourceVersion, which its watchers'
  ``DELETED`` event carries too. Either way its resourceVersion is the minimum, as for a
  write: the cache then shows the object marked, or no longer holds it. Nothing waits for
  a marked object to go, which may take forever.
* **A delete answered with a Status** (ConfigMaps, Secrets, Deployments, custom
  resources...): there is no version to wait for, only the uid in ``details``. Reads of
  the key wait until the informer has delivered that uid's deletion, seen by an
  ``on_delete`` handler this client adds to the informer before it sends its first such
  delete (so a deletion the cache applies while the request is still in flight is caught
  too); the handler runs after the cache applied the deletion.

A list waits for the greatest minimum of the keys in its namespace (all of them for all
namespaces, or for a cluster-scoped resource) and for the deletions awaited there; a get
only for its key. A read waits only for writes whose answer came before it started, and
one deadline bounds the whole wait. Writes never wait.

What the cache never holds is not awaited: an answer outside the informer's scope (its
namespace, label or field selector) is not recorded, nor is a Status-answered delete on
a selective informer when neither the cache nor this client's writes knew the key. A
deletion the cache may still never see (the object was created and deleted while the
watch was down, and a relist skipped it) makes the reads waiting for it time out: the
timeout drops what it waited for, and the error says so.

Memory: a minimum is dropped once a read has seen it reached, and every minimum the cache
has reached is dropped whenever the table doubles past 64 entries, so the table holds
about what the cache has not applied yet. An awaited deletion is dropped once seen or
timed out on; at most :data:`MAX_AWAITED_DELETIONS` are kept (the oldest goes first).

Task model: no task of its own. Waits run in the reading task and are woken, never
polled: ``wait_for_resource_version`` by the FIFO as it applies events, deletion waits by
the handler, which runs in the informer's handler task. All on one event loop.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from aioinformer._kernel.clock import CancelAfter
from aioinformer._kernel.lifecycle import State
from aioinformer._objects.meta import labels_of, meta_namespace_key, namespace_of, uid_of
from aioinformer.errors import CacheReadTimeout, InformerStoppedError
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.resource_version import parse_resource_version

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from aioinformer._kernel.clock import Clock
    from aioinformer.informer import HandlerRegistration, SharedIndexInformer
    from aioinformer.labels import FieldSelector, LabelSelector

__all__ = ["MAX_AWAITED_DELETIONS", "OwnWrites", "Scope"]

logger = logging.getLogger(__name__)

_PRUNE_FLOOR: Final = 64
MAX_AWAITED_DELETIONS: Final = 4096
"""How many Status-answered deletions one client awaits per informer at most."""


@dataclass(frozen=True, slots=True)
class Scope:
    """What an informer's cache can hold: its namespace and selectors."""

    namespace: str | None = None
    """The namespace it watches; ``None`` for all."""
    label_selector: LabelSelector | None = None
    field_selector: FieldSelector | None = None

    @property
    def selective(self) -> bool:
        """Whether selectors leave some objects of the watched namespace out."""
        return bool(self.label_selector) or bool(self.field_selector)

    def holds(self, obj: Mapping[str, Any]) -> bool:
        """Whether an object like ``obj`` (a write's answer) belongs in the cache."""
        if self.namespace is not None and namespace_of(obj) not in ("", self.namespace):
            return False
        labels = self.label_selector
        if labels and not labels.matches(labels_of(obj)):
            return False
        fields = self.field_selector
        return not fields or fields.matches(obj)


class OwnWrites:
    """One client's writes to one informer's resource that reads must wait for.

    Invariants: every value of ``_min_rv`` is a parsed resourceVersion some write of this
    client answered with, greater than any earlier one of that key; ``_deletes`` holds no
    empty set; ``_deleting[key]`` holds one set per delete of ``key`` in flight, and exists
    only while one is.
    """

    __slots__ = (
        "_deletes",
        "_deleting",
        "_informer",
        "_min_rv",
        "_observer",
        "_prune_at",
        "_resource",
        "_scope",
        "_waiters",
        "timeouts",
        "waits",
    )

    def __init__(self, informer: SharedIndexInformer, *, resource: str, scope: Scope) -> None:
        self._informer = informer
        self._resource = resource
        self._scope = scope
        # Object key -> the newest resourceVersion this client wrote it at, until read back.
        self._min_rv: dict[str, int] = {}
        self._prune_at = _PRUNE_FLOOR
        # Object key -> uids it deleted (answered with a Status) that the cache has not
        # been seen dropping; None stands for "whatever it held" (a Status without a uid).
        self._deletes: dict[str, set[str | None]] = {}
        # Object key -> for each delete of it in flight, the uids whose deletion the cache
        # applied meanwhile.
        self._deleting: dict[str, list[set[str | None]]] = {}
        # The on_delete handler, added before the first Status-answered delete is sent.
        self._observer: HandlerRegistration | None = None
        # Reads waiting for a deletion: woken (all) whenever one is seen.
        self._waiters: list[asyncio.Future[None]] = []
        self.waits = 0
        """Reads that had something to wait for."""
        self.timeouts = 0
        """Reads that timed out."""

    @property
    def scope(self) -> Scope:
        """What the informer's cache can hold."""
        return self._scope

    @property
    def tracked_versions(self) -> int:
        """Keys whose written resourceVersion reads still wait for."""
        return len(self._min_rv)

    @property
    def tracked_deletions(self) -> int:
        """Deleted uids reads still wait for."""
        return sum(len(uids) for uids in self._deletes.values())

    # -- writes --------------------------------------------------------------------------

    def wrote(self, answer: Mapping[str, Any], *, check_scope: bool = True) -> None:
        """Record a write's answer (an object): reads of its key wait for its version.
        ``check_scope=False`` for an answer that is not the object itself (a ``Scale``),
        whose labels say nothing of the object's."""
        meta = answer.get("metadata")
        if not isinstance(meta, dict):
            return
        rv = meta.get("resourceVersion")
        name = meta.get("name")
        if not isinstance(rv, str) or not isinstance(name, str) or not name:
            return
        try:
            number = parse_resource_version(rv)
        except ValueError:
            return  # an opaque version cannot be waited for
        if check_scope and not self._scope.holds(answer):
            return
        namespace = meta.get("namespace")
        key = f"{namespace}/{name}" if namespace else name
        min_rv = self._min_rv
        if number > min_rv.get(key, 0):
            min_rv[key] = number
            if len(min_rv) > self._prune_at:
                self._prune()

    def delete_sent(self, key: str) -> set[str | None] | None:
        """A delete of ``key`` is about to be sent: from now on deletions of it that the
        cache applies are noted in the set returned, to hand to :meth:`delete_done`.
        ``None`` when the informer has stopped (nothing is tracked then)."""
        if self._observer is None:
            try:
                self._observer = self._informer.add_event_handler(
                    on_delete=self._deleted,
                    name=f"read-your-writes {self._resource}",
                    resync_period=0,
                )
            except InformerStoppedError:
                return None
        seen: set[str | None] = set()
        self._deleting.setdefault(key, []).append(seen)
        return seen

    def delete_done(
        self, key: str, seen: set[str | None] | None, answer: Mapping[str, Any] | None
    ) -> None:
        """The delete of ``key`` ended: ``answer`` is what it returned (``None`` when it
        failed). An object answer is recorded as a write; a Status answer makes reads of
        ``key`` wait for the deleted uid to leave the cache, unless it already has."""
        if seen is None:
            return
        in_flight = self._deleting[key]
        in_flight.remove(seen)
        if not in_flight:
            del self._deleting[key]
        if answer is None:
            return
        meta = answer.get("metadata")
        if (
            answer.get("kind") != "Status"
            and isinstance(meta, dict)
            and meta.get("resourceVersion")
        ):
            self.wrote(answer)
            return
        details = answer.get("details")
        uid = details.get("uid") if isinstance(details, dict) else None
        if not isinstance(uid, str) or not uid:
            uid = None
        if uid in seen or (uid is None and seen):
            return  # the cache has already dropped it
        if (
            self._scope.selective
            and key not in self._min_rv
            and self._informer.indexer.entry_by_key(key) is None
        ):
            # Out of the selectors, the cache would never hear of the deletion. Only a key
            # the cache holds, or one this client wrote in scope, is known to be in them.
            return
        deletes = self._deletes
        deletes.setdefault(key, set()).add(uid)
        if len(deletes) > MAX_AWAITED_DELETIONS:
            oldest = next(iter(deletes))
            logger.warning(
                "%s: more than %d deletions not yet seen by the cache; no longer waiting for %s",
                self._resource,
                MAX_AWAITED_DELETIONS,
                oldest,
            )
            del deletes[oldest]

    def _deleted(self, obj: Any) -> None:
        """The informer's ``on_delete``: the cache no longer holds ``obj``."""
        if type(obj) is DeletedFinalStateUnknown:
            key = obj.key
            uid = uid_of(obj.obj) if obj.obj is not None else None
        else:
            key = meta_namespace_key(obj)
            uid = uid_of(obj)
        for seen in self._deleting.get(key, ()):
            seen.add(uid)
        awaited = self._deletes.get(key)
        if awaited is None or (uid not in awaited and None not in awaited):
            return
        awaited.discard(uid)
        awaited.discard(None)
        if not awaited:
            del self._deletes[key]
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _prune(self) -> None:
        """Drop the minimums the cache has reached; the next prune at twice the rest."""
        try:
            applied = parse_resource_version(self._informer.last_store_resource_version)
        except ValueError:
            applied = None
        if applied is not None:
            self._min_rv = {key: rv for key, rv in self._min_rv.items() if rv > applied}
        self._prune_at = max(_PRUNE_FLOOR, 2 * len(self._min_rv))

    # -- reads ---------------------------------------------------------------------------

    async def wait_for_key(self, key: str, *, timeout: float, clock: Clock) -> None:
        """Return once the cache holds this client's writes of ``key`` (at once when it
        wrote none the cache lacks); :class:`~aioinformer.errors.CacheReadTimeout` past
        ``timeout`` seconds on ``clock``."""
        rv = self._min_rv.get(key)
        uids = self._deletes.get(key)
        if rv is None and not uids:
            return
        deletions = [(key, uid) for uid in uids] if uids else []
        await self._wait(rv, deletions, timeout=timeout, clock=clock, key=key, namespace=None)
        if rv is not None and self._min_rv.get(key) == rv:
            del self._min_rv[key]

    async def wait_for_namespace(
        self, namespace: str | None, *, timeout: float, clock: Clock
    ) -> None:
        """As :meth:`wait_for_key`, for every key in ``namespace`` (``None``: all)."""
        prefix = None if namespace is None else f"{namespace}/"
        rv = max(
            (v for key, v in self._min_rv.items() if prefix is None or key.startswith(prefix)),
            default=None,
        )
        deletions = [
            (key, uid)
            for key, uids in self._deletes.items()
            if prefix is None or key.startswith(prefix)
            for uid in uids
        ]
        if rv is None and not deletions:
            return
        await self._wait(rv, deletions, timeout=timeout, clock=clock, key=None, namespace=namespace)
        if rv is not None:
            self._min_rv = {
                key: v
                for key, v in self._min_rv.items()
                if v > rv or not (prefix is None or key.startswith(prefix))
            }

    async def _wait(
        self,
        rv: int | None,
        deletions: list[tuple[str, str | None]],
        *,
        timeout: float,
        clock: Clock,
        key: str | None,
        namespace: str | None,
    ) -> None:
        self.waits += 1
        informer = self._informer
        deadline = CancelAfter(clock, timeout)
        try:
            with deadline:
                if rv is not None and not await informer.wait_for_resource_version(str(rv)):
                    raise InformerStoppedError(
                        f"informer {informer.name} stopped before its cache reached "
                        f"resourceVersion {rv} of this client's write"
                    )
                if deletions and informer.state is State.STOPPED:
                    raise InformerStoppedError(
                        f"informer {informer.name} has stopped: its cache will not drop "
                        "what this client deleted"
                    )
                while self._awaited(deletions):
                    waiter = asyncio.get_running_loop().create_future()
                    self._waiters.append(waiter)
                    try:
                        await waiter
                    finally:
                        if waiter in self._waiters:
                            self._waiters.remove(waiter)
        except TimeoutError:
            if not deadline.timed_out:
                raise
            self.timeouts += 1
            raise self._timed_out(rv, deletions, timeout, key, namespace) from None

    def _awaited(self, deletions: Iterable[tuple[str, str | None]]) -> bool:
        deletes = self._deletes
        return any(uid in deletes.get(key, ()) for key, uid in deletions)

    def _timed_out(
        self,
        rv: int | None,
        deletions: list[tuple[str, str | None]],
        timeout: float,
        key: str | None,
        namespace: str | None,
    ) -> CacheReadTimeout:
        """The error for a wait that timed out; drops the deletions it still awaited."""
        applied = self._informer.last_store_resource_version
        try:
            reached = rv is None or parse_resource_version(applied) >= rv
        except ValueError:
            reached = False
        missing = [(k, uid) for k, uid in deletions if uid in self._deletes.get(k, ())]
        for k, uid in missing:
            uids = self._deletes.get(k)
            if uids is not None:
                uids.discard(uid)
                if not uids:
                    del self._deletes[k]
        where = key if key is not None else f"namespace {namespace}" if namespace else "*"
        if not reached:
            lacks = (
                f"did not reach resourceVersion {rv} of this client's write within "
                f"{timeout:g}s (it has applied {applied or 'nothing'})"
            )
        else:
            first_key, first_uid = missing[0] if missing else (where, None)
            lacks = (
                f"did not show this client's deletion of {first_key} (uid "
                f"{first_uid or 'unknown'}) within {timeout:g}s; later reads will not wait "
                "for it"
            )
        return CacheReadTimeout(
            f"{self._resource} {where}: the cache {lacks}",
            resource=self._resource,
            key=key,
            namespace=namespace,
            resource_version=None if reached else str(rv),
            uid=missing[0][1] if reached and missing else None,
            applied=applied,
            timeout=timeout,
        )

    def __repr__(self) -> str:
        return (
            f"<OwnWrites {self._resource} versions={self.tracked_versions}"
            f" deletions={self.tracked_deletions}>"
        )
