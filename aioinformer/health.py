"""Whether a cache can be trusted right now: the records behind ``health()``, and the
statistics snapshot an informer gives (:class:`InformerStatistics`).

Role: turns what an informer knows about itself (started, synced, stopped, its
reflector's :class:`~aioinformer.reflector.ReflectorStatistics`) into one frozen
:class:`InformerHealth`, and a set of those into one :class:`FactoryHealth` answering the
two questions a probe asks. ``SharedIndexInformer.health()`` and
``SharedInformerFactory.health()`` return them; :mod:`aioinformer.contrib.fastapi`
serves them as ``/readyz`` and ``/livez``. Input: snapshots. Output: records and their
JSON-ready ``as_dict()``. Pure functions, no tasks, no I/O; cheap enough to call on every
probe (one clock read per informer).

The rules:

* **synced**: the informer's initial list has been popped into its cache.
* **live** (an informer): synced, its reflector is ``WATCHING``, and the server was heard
  from within the *liveness window*: three quarters of the watch's inactivity deadline
  (90 s under a 120 s deadline). Heard means a list answered, a watch started, or
  anything read from the watch stream, ``BOOKMARK`` included (see
  :mod:`aioinformer._pipeline.reflector_status`). A kube-apiserver sends an idle watch a bookmark
  about every 60 s, so a healthy idle watch stays live with room to spare, while a
  frozen stream turns ``live`` false a quarter of a deadline *before* the reflector
  gives up on it and re-watches; the new watch counts as heard, so ``live`` comes back
  with it and stays while the stream talks. ``live`` is false before the first sync,
  while the reflector lists or backs off (the cache is going stale), and after the
  informer stopped. With cache audits (``audit=``, see :mod:`aioinformer.audit`), an
  informer whose last audit found differences is not live either, until every key found
  different has been applied again (by the relist the audit asked for): its cache was
  wrong, and may still be.
* **index errors** do not touch either: an index function that fails on an object leaves
  it out of that index only (see :mod:`aioinformer.indexer`), so the cache is whole and
  the informer stays synced and live, while ``index_errors`` counts the failures,
  ``unindexed`` says how many objects an index lacks now and ``last_index_error`` says the
  latest, and the probes' bodies carry all three. With ``strict_indexes=True`` a failure
  stops the informer instead, which makes it not live (and a factory not live either).
* **ready** (a factory): it has started, is not shutting down, and every informer it
  runs is live. This is what ``/readyz`` reports: take the process out of rotation
  while a cache may be missing changes.
* **live** (a factory): no informer it started has stopped. This is what ``/livez``
  reports: an informer that stopped never comes back (its run failed) and a restart is
  the remedy, while a stale cache heals itself and is no reason to restart. Before it
  starts and once it is shutting down, a factory is live and not ready.

Example::

    health = factory.health()
    if not health.ready:
        for name, informer in health.informers.items():
            print(name, informer.live, informer.seconds_since_heard, informer.last_error)
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from aioinformer.errors import describe_error
from aioinformer.reflector import ReflectorState

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aioinformer._kernel.lifecycle import State
    from aioinformer.audit import CacheAuditStatistics
    from aioinformer.errors import IndexFuncError
    from aioinformer.indexer import IndexerStatistics
    from aioinformer.listwatch import SourceInfo
    from aioinformer.processor import HandlerStatistics
    from aioinformer.reflector import ReflectorStatistics

__all__ = [
    "FactoryHealth",
    "InformerHealth",
    "InformerStatistics",
    "LIVENESS_FRACTION",
]

LIVENESS_FRACTION: Final = 0.75
"""The liveness window as a fraction of the watch's inactivity deadline."""


def _described(error: BaseException | None) -> str | None:
    return None if error is None else describe_error(error)


@dataclass(frozen=True, slots=True, kw_only=True)
class InformerHealth:
    """One informer's health, from ``SharedIndexInformer.health()``: see the module's
    rules for ``synced`` and ``live``."""

    name: str
    """The informer's name."""
    resource: str
    """The resource its source serves (the source's ``resource``; else the name)."""
    namespace: str | None
    """The namespace its source is bound to; ``None`` for all namespaces."""
    started: bool
    """``run()`` has begun."""
    stopped: bool
    """``run()`` has ended: the cache will not change again."""
    synced: bool
    """The initial list is in the cache."""
    live: bool
    """Synced, watching, and heard from the server within ``liveness_window``."""
    state: ReflectorState
    """The reflector's state (``STOPPED`` before the informer starts)."""
    seconds_since_heard: float | None
    """Seconds since the server was last heard from; ``None`` before the first list."""
    liveness_window: float | None
    """Three quarters of the inactivity deadline in force, while watching; else ``None``."""
    last_error: str | None
    """The reflector's most recent list or watch failure (see :func:`describe_error`),
    kept after it recovered; ``None`` if it never failed."""
    relists: int
    """Full lists after the first one."""
    watch_restarts: int
    """Watches re-opened without a relist."""
    cache_size: int
    """Objects in the cache."""
    audit: CacheAuditStatistics | None = None
    """The cache audits' figures when the informer audits (``audit=``), else ``None``."""
    index_errors: int = 0
    """Index function calls that failed (raised, or returned something other than a list
    of strings) since the informer was made; each left one object out of one index."""
    unindexed: int = 0
    """Objects an index lacks now because its function fails on them (once per index)."""
    last_index_error: str | None = None
    """The latest index function failure, naming the index, the key and the exception
    (see :func:`describe_error`); ``None`` if none."""

    @classmethod
    def of(
        cls,
        *,
        name: str,
        source: SourceInfo,
        started: bool,
        stopped: bool,
        synced: bool,
        cache_size: int,
        reflector: ReflectorStatistics | None,
        audit: CacheAuditStatistics | None = None,
        indexes: IndexerStatistics | None = None,
    ) -> InformerHealth:
        """Apply the rules to one informer's snapshot; ``source`` is what its
        lister-watcher declares (:func:`~aioinformer.listwatch.source_info`), ``indexes``
        its cache's :meth:`~aioinformer.indexer.Indexer.statistics`."""
        resource, namespace = source.resource, source.namespace
        state = ReflectorState.STOPPED if reflector is None else reflector.state
        since = None if reflector is None else reflector.seconds_since_heard
        deadline = None if reflector is None else reflector.inactivity_deadline
        window = None if deadline is None else deadline * LIVENESS_FRACTION
        live = (
            synced
            and not stopped
            and state is ReflectorState.WATCHING
            and since is not None
            and window is not None
            and since <= window
            and (audit is None or not audit.repairing)
        )
        return cls(
            name=name,
            resource=resource,
            namespace=namespace,
            started=started,
            stopped=stopped,
            synced=synced,
            live=live,
            state=state,
            seconds_since_heard=since,
            liveness_window=window,
            last_error=_described(None if reflector is None else reflector.last_error),
            relists=0 if reflector is None else reflector.relists,
            watch_restarts=0 if reflector is None else reflector.watch_restarts,
            cache_size=cache_size,
            audit=audit,
            index_errors=0 if indexes is None else indexes.index_errors,
            unindexed=0 if indexes is None else indexes.unindexed,
            last_index_error=None if indexes is None else _described(indexes.last_index_error),
        )

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready values (the state by name, seconds to the
        millisecond); ``cache_audit`` only when the informer audits."""
        since = self.seconds_since_heard
        record: dict[str, Any] = {
            "name": self.name,
            "resource": self.resource,
            "namespace": self.namespace,
            "started": self.started,
            "stopped": self.stopped,
            "synced": self.synced,
            "live": self.live,
            "state": self.state.value,
            "seconds_since_heard": None if since is None else round(since, 3),
            "liveness_window": self.liveness_window,
            "last_error": self.last_error,
            "relists": self.relists,
            "watch_restarts": self.watch_restarts,
            "cache_size": self.cache_size,
            "index_errors": self.index_errors,
            "unindexed": self.unindexed,
            "last_index_error": self.last_index_error,
        }
        if self.audit is not None:
            record["cache_audit"] = self.audit.as_dict()
        return record


@dataclass(frozen=True, slots=True, kw_only=True)
class FactoryHealth:
    """The health of a set of informers, from ``SharedInformerFactory.health()`` (or
    :meth:`of` for informers of your own): see the module's rules for ``ready`` and
    ``live``."""

    started: bool
    """The factory (or every informer given to :meth:`of`) has started."""
    ready: bool
    """Started, not shutting down, and every informer live: serve traffic."""
    live: bool
    """No started informer has stopped (or it is shutting down): no restart needed."""
    informers: Mapping[str, InformerHealth]
    """Each informer's record, by name, in the order they were built (read-only)."""

    @classmethod
    def of(
        cls,
        informers: Mapping[str, InformerHealth],
        *,
        started: bool | None = None,
        stopping: bool = False,
    ) -> FactoryHealth:
        """Aggregate ``informers``. ``started``: whether their owner has started (default:
        whether every one of them has); ``stopping``: their owner is shutting down, so
        stopped informers are expected."""
        records = dict(informers)
        if started is None:
            started = all(record.started for record in records.values())
        return cls(
            started=started,
            ready=started and not stopping and all(r.live for r in records.values()),
            live=stopping or not any(r.started and r.stopped for r in records.values()),
            informers=MappingProxyType(records),
        )

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready values: what ``/readyz`` and ``/livez`` answer."""
        return {
            "ready": self.ready,
            "live": self.live,
            "started": self.started,
            "informers": {name: record.as_dict() for name, record in self.informers.items()},
        }


@dataclass(frozen=True, slots=True)
class InformerStatistics:
    """A snapshot of an informer's state and counters."""

    name: str
    state: State
    """Where the informer is in its run (``STARTING`` until synced)."""
    synced: bool
    """``has_synced()`` at the time of the snapshot."""
    cache_size: int
    """Objects in the cache."""
    fifo_pending: int
    """Keys waiting in the DeltaFIFO; with ``in_order=True``, events, relists and resyncs
    waiting in the RealFIFO."""
    last_sync_resource_version: str
    handlers: tuple[HandlerStatistics, ...]
    """One record per registered handler (``events()`` streams included)."""
    reflector: ReflectorStatistics | None
    """The reflector's statistics, or ``None`` before ``run()``."""
    invalid_objects: int = 0
    """With ``model=``: distinct object versions (key and resourceVersion) that did not
    validate into the model, each logged once and skipped by reads; 0 without a model."""
    audit: CacheAuditStatistics | None = None
    """The cache audits' figures when the informer audits (``audit=``) or was audited on
    demand, else ``None``."""
    index_errors: int = 0
    """Index function calls that failed since the informer was made (see
    :class:`~aioinformer.indexer.IndexerStatistics`)."""
    unindexed: int = 0
    """Objects an index lacks now because its function fails on them (once per index)."""
    last_index_error: IndexFuncError | None = None
    """The latest index function failure; ``None`` if none."""


if not TYPE_CHECKING:  # type checkers report the old names as missing, as they should
    from aioinformer._kernel.moved import moved_names

    __getattr__ = moved_names(__name__)
