"""The shared informer: a watched, indexed cache of one resource, fanned out to handlers.

Role: :class:`SharedIndexInformer` wires the pipeline together::

    Reflector --list/watch--> DeltaFIFO --one pop task--> Indexer --> SharedProcessor
                                                                       |  one queue and
                                                                       v  task per handler
                                                              on_add / on_update / on_delete

Input: a :class:`~aioinformer.listwatch.ListerWatcher` (a ``client.resource(...)`` or a
fake). Output: the :attr:`SharedIndexInformer.indexer` cache (read it through
:meth:`SharedIndexInformer.lister`) and calls to the registered handlers. The cache is
compact by default (each object's JSON bytes and head, see :mod:`aioinformer.codec`),
or the decoded objects with ``cache="objects"``.

The pop task applies each object's deltas to the cache, then distributes one notification
per delta: ``Added``/``Updated``/``Replaced``/``Sync`` become an update when the cache
held the object and an add otherwise; ``Deleted`` becomes a delete. An update whose old and
new objects have the same resourceVersion is a *resync* and reaches only the handlers due
for a resync at the last check (see :mod:`aioinformer.processor`). This is
:func:`apply_deltas`, at the end of this module: the deltas of one key are applied and
distributed in order, with the key computed and the cached entry looked up once (each
delta's "old" is what the previous one stored), and the informer's
:class:`~aioinformer.codec.Codec` says what the cache stores for each object, what each
notification carries and whether two entries are the same version, so the one function
serves both cache modes. It is synchronous: nothing suspends between two deltas.

Guarantees:

* Ordering: a handler sees the events of one object in the order the server produced them.
  Events of different objects are delivered in the order they were popped, but handlers
  are independent of each other: one may be ahead of another.
* Staleness: the cache (and so a lister) holds what the last popped event said; it lags the
  server by the watch latency and by what still waits in the DeltaFIFO. A relist or resync
  is applied in one step (a read sees all the old state or all the new). A handler may run
  after the cache has moved on: read the cache for the newest state, use the handler's
  arguments for what changed.
* Tombstones: when a relist finds an object gone whose delete event was missed (the watch
  was down), ``on_delete`` receives a :class:`~aioinformer.models.DeletedFinalStateUnknown`
  carrying the key and the last known (possibly stale) object instead of the object.
* Late handlers: a handler added to a running informer first receives a synthetic
  ``on_add(obj, True)`` for every object in the cache at that moment; its registration's
  ``has_synced()`` stays false until those were handed over.
* Audits (``audit=``, see :mod:`aioinformer.audit`): the cache is compared with a list of
  the server's objects every period; a cache that lost an event is relisted, and is not
  live until the keys found different have been applied again.

Task model: the informer is a :class:`~aioinformer._kernel.lifecycle.Service` (states
``NEW`` → ``STARTING`` → ``RUNNING`` once synced → ``STOPPING`` → ``STOPPED``, see
:class:`aioinformer.State`). :meth:`SharedIndexInformer.run` owns a task group
(:class:`~aioinformer._kernel.runner.TaskRunner`) with the reflector, the pop task, the
processor (one task per handler) and, with ``audit=``, the auditor;
:meth:`~SharedIndexInformer.stop` ends it. ``run()`` is ready (anyio's
``task_status.started()``) once synced; ``async with informer:`` starts ``run()`` in a
task and returns once it has started (not synced). Should the informer fail meanwhile (a
stage gone), the block's body is cancelled and the error leaves the block: the cache is
frozen from then on. Leaving the block stops it; either way every task is stopped and
every connection closed before control returns. A handler blocked forever does not hold up
stopping: handler tasks are cancelled. Everything runs on one event loop, and the cache is
only written by the pop task between two suspension points, so reads are consistent.

Example::

    informer = SharedIndexInformer(client.resource("pods", namespace="default"))
    informer.add_event_handler(on_add=lambda pod, initial: print(pod["metadata"]["name"]))
    async with informer:
        await informer.wait_for_sync()
        pod = informer.lister().get("web-0", namespace="default")
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, cast

from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.lifecycle import Service, State
from aioinformer._kernel.metrics import new_handler_metrics, new_queued_deltas_metric
from aioinformer._kernel.runner import TaskRunner, first_completed
from aioinformer._kernel.sync import Watched, blocked_error
from aioinformer._kernel.sync import wait_for_cache_sync as wait_for_cache_sync
from aioinformer._pipeline.handlers import handler_name
from aioinformer._pipeline.metric_recorders import IndexMetrics, new_index_metrics
from aioinformer._pipeline.model_guard import ModelGuard
from aioinformer._pipeline.store_rv import wait_applied
from aioinformer.audit import (
    AuditReport,
    CacheAudit,
    CacheAuditor,
    CacheAuditStatistics,
    KeyRecorder,
)
from aioinformer.codec import CacheMode, CompactCodec, codec_for
from aioinformer.delta_fifo import DEFAULT_BATCH_KEYS, DeltaFIFO, Deltas, DeltaType
from aioinformer.errors import FIFOClosedError, IndexFuncError, InformerStoppedError
from aioinformer.health import InformerHealth, InformerStatistics
from aioinformer.lister import Event as Event
from aioinformer.lister import EventStream as EventStream
from aioinformer.lister import Lister as Lister
from aioinformer.lister import NotificationType as NotificationType
from aioinformer.listwatch import DescribedListerWatcher, source_info
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.processor import (
    MINIMUM_RESYNC_PERIOD,
    Notification,
    NotificationKind,
    OverflowPolicy,
    ProcessorListener,
    SharedProcessor,
    SlowHandlerThresholds,
    determine_resync_period,
)
from aioinformer.processor import EventHandler as EventHandler
from aioinformer.processor import HandlerRegistration as HandlerRegistration
from aioinformer.real_fifo import RealFIFO
from aioinformer.reflector import Reflector, ReflectorOptions

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterable, Mapping

    from anyio.abc import TaskStatus

    from aioinformer._kernel.backoff import Backoff
    from aioinformer.audit import AuditLister
    from aioinformer.codec import Codec
    from aioinformer.indexer import Indexer, IndexFunc
    from aioinformer.listwatch import ListerWatcher

__all__ = [
    "CacheMode",
    "Event",
    "EventHandler",
    "EventStream",
    "HandlerRegistration",
    "InformerStatistics",
    "Lister",
    "NotificationType",
    "SharedIndexInformer",
    "wait_for_cache_sync",
]

logger = logging.getLogger(__name__)

_DELETED: Final = DeltaType.DELETED


class SharedIndexInformer(Service):
    """A list-watched, indexed cache of one resource with any number of event handlers.

    ``resync_period`` (seconds, 0 = never) is the default handler resync period and the
    informer's initial resync check period; an informer created with 0 never resyncs.
    ``indexers`` names index functions maintained from the start; ``transform`` is applied
    to every object before it is cached (see
    :func:`aioinformer.transforms.strip_managed_fields`). A ``transform`` that raises is
    surfaced, never swallowed: on a watch event the error is logged with its traceback
    and that event is skipped (the cache misses the change until the object changes again
    or a relist); on a listed object the whole list fails, goes to the watch error handler
    and is retried after the backoff, so the informer does not sync while the server holds
    an object it cannot transform. A transform returning something that is not an object
    (``None``, a list, a ``str``) is a :class:`~aioinformer.errors.TransformError` naming
    it and the key, handled the same way.

    An index function that fails on an object (raises, or returns something other than a
    list of strings) never costs the object: it is cached, handed to the handlers and
    kept in every other index, and only that index lacks it, until the function succeeds
    on a later version. The failure is logged once per index and key with the exception,
    and counted (``health().index_errors``, ``statistics().index_errors``, the
    ``aioinformer_index_errors_total`` metric); the informer stays synced and live, its
    cache being whole. ``strict_indexes=True`` makes such a failure stop the informer
    instead, as client-go panics: its run raises
    :class:`~aioinformer.errors.IndexFuncError` naming the index, the key and the
    exception, which cancels an ``async with informer:`` body and leaves the block,
    ``wait_for_sync()`` raises it and a factory's ``wait_for_cache_sync()`` names it.

    ``cache`` chooses how objects are kept. ``"compact"`` (the default) keeps each one as
    its JSON bytes as received plus its key, namespace, name, resourceVersion, kind and
    labels: the cyclic garbage collector never walks such a cache, however large, and it
    takes a fraction of the memory. Reads, index functions and handlers receive read-only
    views (:class:`~aioinformer._objects.view.ObjectView`): the head fields are read
    without a decode, any other field is decoded on its first read, changes raise
    :class:`~aioinformer.errors.ReadOnlyObjectError` (``obj.to_dict()`` is a copy to
    change); a ``keys_only`` handler receives keys. ``"objects"`` keeps the
    decoded dicts, as client-go does: reads and handlers get the cached objects
    themselves, to be treated as read-only.

    ``model`` makes listers, handlers and ``events()`` see that pydantic model instead of
    raw dicts (the cache stays raw; each read or delivery validates; an object that fails
    is skipped, logged once and counted, see :mod:`aioinformer._pipeline.model_guard`).
    ``clock`` drives resync timers, the reflector's waits and handler timing (tests pass a
    ``FakeClock``). ``slow_handler_thresholds`` is the default bound of ``add_event_handler``'s.
    ``in_order=True`` queues every watch event on its own, in arrival order (a
    :class:`~aioinformer.real_fifo.RealFIFO`): no per-key coalescing, so the cache and the
    handlers go through every intermediate state; a relist arrives as its differences.

    Passed to the :class:`~aioinformer.reflector.Reflector`: ``watch_error_handler``,
    ``backoff`` (a :class:`~aioinformer._kernel.backoff.Backoff` owned by this informer alone),
    and ``reflector``, a :class:`~aioinformer.reflector.ReflectorOptions` (checked once,
    when it is built) holding every other reflector setting: ``page_size``,
    ``use_watch_list`` (on by default: lists are streamed, with a fallback to
    LIST+WATCH), ``watch_inactivity_timeout``, ``expected_kind``/``expected_api_version``
    (when not given, the reflector adopts the kind of the first list's items, so watch
    events of another kind are never cached), and ``gc_policy``: what lists do with
    CPython's cyclic collector (``"pause"``, the default, defers collection while a list
    is decoded and handed over; ``"freeze"`` also freezes what is alive afterwards,
    fastest but process-wide; ``"off"``), see :mod:`aioinformer._kernel.gcpolicy`. Its
    ``resync_period`` is this informer's ``resync_period``, whatever the options say::

        SharedIndexInformer(lw, reflector=ReflectorOptions(page_size=100, gc_policy="off"))

    ``audit`` (a :class:`~aioinformer.audit.CacheAudit`) makes the informer compare its
    cache with the server every ``audit.period`` seconds and relist when they differ (see
    :mod:`aioinformer.audit`). Off by default, as in client-go: an audit is a LIST of the
    whole resource every period, a load on the server that the building block leaves to
    the application to choose; a :class:`~aioinformer.operator.manager.Manager` turns it on.
    :meth:`audit_cache` runs one audit on demand either way.

    It runs once: ``await informer.run()`` or ``async with informer:``.
    """

    _enters_when: ClassVar[Literal["ready", "started"]] = "started"
    """``async with`` returns once the run has started, not synced (a test's fake is often
    filled in the body); :meth:`wait_for_sync` waits for the rest."""

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        *,
        resync_period: float = 0.0,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Callable[[Any], Any] | None = None,
        name: str | None = None,
        model: type[Any] | None = None,
        clock: Clock | None = None,
        watch_error_handler: Callable[..., Any] | None = None,
        backoff: Backoff | None = None,
        reflector: ReflectorOptions | None = None,
        cache: CacheMode = "compact",
        slow_handler_thresholds: SlowHandlerThresholds | None = None,
        in_order: bool = False,
        audit: CacheAudit | None = None,
        strict_indexes: bool = False,
    ) -> None:
        # How objects are represented along the pipeline, chosen once (raises for an
        # unknown cache mode).
        self._codec = codec = codec_for(cache)
        base = reflector if reflector is not None else ReflectorOptions()
        # The one check of these settings is ReflectorOptions'; the reflector gets this.
        self._reflector_options = base.replace(resync_period=resync_period)
        self._lister_watcher = lister_watcher
        self._source = source_info(lister_watcher)
        # What the informer is called: the name given, else what its source describes.
        # Made unique among running informers when it starts (see _Names).
        self._wanted_name = name or self._source.label
        self.name: str = self._wanted_name
        # The namespace the source watches (None: all), where a lister's get(name) looks.
        self._namespace = self._source.namespace
        self._cache: CacheMode = cache
        self._indexer: Indexer[Any] = codec.new_indexer(indexers, strict=strict_indexes)
        # Counts the index functions' failures, by index; made as the run begins, once the
        # name is final.
        self._index_metrics = IndexMetrics()
        self._clock = clock or default_clock
        self._processor = SharedProcessor(clock=self._clock)
        self._model = model
        # Validates every typed read and delivery, and counts the objects that fail.
        self._guard = ModelGuard(model, source=self.name) if model is not None else None
        self._transform = transform
        self._watch_error_handler = watch_error_handler
        self._backoff = backoff
        self._slow_handler_thresholds = slow_handler_thresholds or SlowHandlerThresholds()
        self._in_order = in_order
        # Audits every period when given; on demand (audit_cache) with the defaults either way.
        self._audit = audit
        # What an audit lists: the configured lister, else the source (as metadata when it
        # can list so); chosen once, here.
        self._audit_lister: AuditLister = _audit_lister(audit, lister_watcher)
        # Built by run() once the FIFO and the reflector exist.
        self._auditor: CacheAuditor | None = None
        # The auditor's hook while an audit or a repair watches what the pop task applies;
        # None otherwise (the per-key cost between audits is the test of this field).
        self._audit_keys: KeyRecorder | None = None

        # The period of the reflector's resync check; only lowered, and only before start
        # (a handler asking for a shorter period than this while running gets this one).
        self._resync_check_period = float(resync_period)
        # What add_event_handler() uses when no resync_period is given.
        self._default_handler_resync_period = float(resync_period)

        # The state (Service): STARTING from run() until synced, RUNNING while synced,
        # STOPPING from stop() or a failure until run() has ended, then STOPPED.
        # Both created by run(); whether the informer has synced is the FIFO's one-shot
        # signal, kept nowhere else.
        self._fifo: DeltaFIFO | RealFIFO | None = None
        self._reflector: Reflector | None = None
        # One-shot signals, never cleared: set as the run begins and as it starts to stop
        # (stop() sets the latter to make run() end).
        self._started = asyncio.Event()
        self._stopping = asyncio.Event()
        # Set once, by the stage that ended by itself or the strict index function that
        # failed: the cache may lack what that stage was applying, so the informer does not
        # count as synced.
        self._failure: Exception | None = None
        # Set by a running factory that has handed this informer to its supervisor: a
        # run is coming, so a wait for sync before it begins waits for it.
        self._run_scheduled = False

    # -- configuration (before start) ------------------------------------------------

    def set_transform(self, transform: Callable[[Any], Any] | None) -> None:
        """Set the function applied to every object before it is cached (and handed to
        handlers). Only before the informer starts: raises ``RuntimeError`` after."""
        self._require_new("set_transform")
        self._transform = transform

    def set_watch_error_handler(self, handler: Callable[..., Any] | None) -> None:
        """Set ``handler(reflector, exc)`` (sync or async), called when a list or watch
        fails. Only before the informer starts: raises ``RuntimeError`` after."""
        self._require_new("set_watch_error_handler")
        self._watch_error_handler = handler

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add index functions; cached objects are indexed at once. Allowed until the
        informer stops (raises :class:`InformerStoppedError` after); a name already in use
        raises ``ValueError``, anything but a mapping of names to functions
        :class:`~aioinformer.errors.IndexerArgumentsError`. A function failing on a cached
        object leaves it out of that index, as on any write; with ``strict_indexes=True``
        this call raises :class:`~aioinformer.errors.IndexFuncError` and adds nothing (the
        informer runs on)."""
        if self._stopped_or_stopping():
            raise InformerStoppedError(f"informer {self.name} has stopped: indexers not added")
        self._indexer.add_indexers(indexers)
        self._index_metrics.track(indexers)

    def _require_new(self, what: str) -> None:
        if self._state is not State.NEW:
            raise RuntimeError(f"{what}() must be called before informer {self.name} starts")

    # -- handlers ----------------------------------------------------------------------

    def add_event_handler(
        self,
        handler: EventHandler | None = None,
        *,
        on_add: Callable[[Any, bool], Any] | None = None,
        on_update: Callable[[Any, Any], Any] | None = None,
        on_delete: Callable[[Any], Any] | None = None,
        resync_period: float | None = None,
        name: str | None = None,
        max_pending: int | None = None,
        overflow: OverflowPolicy = "block",
        keys_only: bool = False,
        run_in_thread: bool = False,
        slow_thresholds: SlowHandlerThresholds | None = None,
    ) -> HandlerRegistration:
        """Register a handler: an object with ``on_add``/``on_update``/``on_delete``
        methods, and/or those callbacks as keywords (a keyword wins over the method).
        Callbacks may be sync or async.

        An ``on_update`` whose code never reads its ``old`` argument receives ``None``
        for it, so no conversion nobody reads is made (a decode in a compact cache, a
        validation with ``model``). ``keys_only=True`` passes each object's key
        (``"namespace/name"``, or ``"name"`` for a cluster-scoped one) in place of the
        object, tombstones included: for a handler that only enqueues keys, which then
        costs no decode (``model`` is not applied to it).

        ``resync_period`` (seconds) defaults to the informer's; below 1 s it is raised to
        1 s, and an informer created without resync gives 0 (never). ``max_pending`` bounds
        the handler's queue, with ``overflow`` ``"block"`` (backpressure) or
        ``"coalesce"`` (newest state per key); see :mod:`aioinformer.processor`.
        ``run_in_thread=True`` runs each sync callback in a worker thread, one at a time
        (``TypeError`` for an async one). A call past ``slow_thresholds`` (default: the
        informer's) is logged once per slow episode (see
        :mod:`aioinformer.processor`).

        Added to a running informer, the handler first receives ``on_add(obj, True)`` for
        each cached object. Raises :class:`InformerStoppedError` once the informer stopped.
        """
        if handler is not None:
            on_add = on_add or getattr(handler, "on_add", None)
            on_update = on_update or getattr(handler, "on_update", None)
            on_delete = on_delete or getattr(handler, "on_delete", None)
        if name is None:
            name = handler_name(handler, on_add, on_update, on_delete)
        return self._register(
            name=name,
            on_add=on_add,
            on_update=on_update,
            on_delete=on_delete,
            resync_period=resync_period,
            max_pending=max_pending,
            overflow=overflow,
            start=True,
            keys_only=keys_only,
            run_in_thread=run_in_thread,
            slow_thresholds=slow_thresholds or self._slow_handler_thresholds,
        )

    def events(
        self,
        *,
        resync_period: float | None = None,
        max_pending: int | None = None,
        overflow: OverflowPolicy = "block",
        name: str = "events",
    ) -> EventStream:
        """Register a handler whose notifications are yielded as :class:`Event` objects.

        Registered at this call (a running informer's cache arrives first as
        ``"ADDED"`` events with ``is_in_initial_list``); iteration ends when the informer
        stops. Unconsumed events queue up, so iterate it or close it (``aclose()``, or
        ``async with informer.events() as stream:``). Raises
        :class:`InformerStoppedError` once the informer stopped.
        """
        registration = self._register(
            name=name,
            on_add=None,
            on_update=None,
            on_delete=None,
            resync_period=resync_period,
            max_pending=max_pending,
            overflow=overflow,
            start=False,
        )
        return EventStream(
            cast("ProcessorListener", registration._listener),
            registration,
            unregister=lambda: self.remove_event_handler(registration),
        )

    def _register(
        self,
        *,
        name: str,
        on_add: Callable[..., Any] | None,
        on_update: Callable[..., Any] | None,
        on_delete: Callable[..., Any] | None,
        resync_period: float | None,
        max_pending: int | None,
        overflow: OverflowPolicy,
        start: bool,
        keys_only: bool = False,
        **options: Any,  # for ProcessorListener: run_in_thread, slow_thresholds
    ) -> HandlerRegistration:
        if self._stopped_or_stopping():
            raise InformerStoppedError(
                f"handler {name} was not added: informer {self.name} has stopped"
            )
        started = self._state is not State.NEW
        requested = float(
            self._default_handler_resync_period if resync_period is None else resync_period
        )
        if requested < 0:
            raise ValueError(f"resync_period must be >= 0, got {requested}")
        if requested > 0:
            if requested < MINIMUM_RESYNC_PERIOD:
                logger.warning(
                    "handler %s: resync period %ss raised to the minimum %ss",
                    name,
                    requested,
                    MINIMUM_RESYNC_PERIOD,
                )
                requested = MINIMUM_RESYNC_PERIOD
            if requested < self._resync_check_period:
                if started:
                    logger.warning(
                        "handler %s: resync period %ss raised to %ss, the check period of "
                        "informer %s, which has already started",
                        name,
                        requested,
                        self._resync_check_period,
                        self.name,
                    )
                    requested = self._resync_check_period
                else:
                    self._resync_check_period = requested
                    self._processor.resync_check_period_changed(requested)
        listener = ProcessorListener(
            name=name,
            on_add=on_add,
            on_update=on_update,
            on_delete=on_delete,
            requested_resync_period=requested,
            resync_period=determine_resync_period(requested, self._resync_check_period),
            upstream_has_synced=self.has_synced,
            max_pending=max_pending,
            overflow=overflow,
            key_func=self._codec.carried_key if overflow == "coalesce" else None,
            convert=self._codec.handler_converter(
                keys_only=keys_only,
                to_model=self._to_model if self._model is not None else None,
            ),
            validates=self._model is not None and not keys_only,
            metrics=new_handler_metrics(self.name, name) if start else None,
            **options,
        )
        if started:
            # Atomic with respect to the pop task (nothing here suspends): the snapshot
            # and the notifications that follow it line up exactly.
            add = listener.add
            carry = self._codec.carry
            for entry in self._indexer.entries():
                add(Notification(NotificationKind.ADD, carry(entry), True))
        self._processor.add_listener(listener, start=start)
        return HandlerRegistration(self, listener)

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        """Unregister a handler and drop its undelivered notifications. A call already
        running is not cancelled: ``await registration.wait_stopped()`` returns once it
        has. Idempotent; a registration of another informer, or any registration once the
        informer stopped, is ignored."""
        if registration._informer is not self:
            return
        self._processor.remove_listener(cast("ProcessorListener", registration._listener))

    def _to_model(self, obj: Any) -> Any:
        guard = self._guard
        assert guard is not None
        if isinstance(obj, DeletedFinalStateUnknown):
            return guard.validate_or_tombstone(obj)
        return guard.validate(obj)

    # -- cache access ------------------------------------------------------------------

    @property
    def indexer(self) -> Indexer[Any]:
        """The cache itself: a :class:`~aioinformer.indexer.CompactIndexer` (reads are views)
        or, with ``cache="objects"``, an :class:`~aioinformer.indexer.Indexer` of the
        decoded objects. Never write to it; prefer :meth:`lister` for reads."""
        return self._indexer

    def lister(self) -> Lister[Any]:
        """A :class:`Lister` over the cache (typed when the informer has a ``model``);
        its ``get(name)`` looks in the informer's namespace when it watches one."""
        return Lister(
            self._indexer, model=self._model, guard=self._guard, namespace=self._namespace
        )

    @property
    def model(self) -> type[Any] | None:
        return self._model

    @property
    def lister_watcher(self) -> ListerWatcher:
        """The source it lists and watches (what it declares names the informer, see
        :func:`~aioinformer.listwatch.source_info`)."""
        return self._lister_watcher

    @property
    def cache(self) -> CacheMode:
        """How the cache keeps objects: ``"compact"`` or ``"objects"``."""
        return self._cache

    @property
    def in_order(self) -> bool:
        """Whether every watch event is delivered on its own, in order (``in_order=``)."""
        return self._in_order

    @property
    def service_name(self) -> str:
        return f"informer {self.name}"

    @property
    def state(self) -> State:
        """Where the informer is in its run: ``STARTING`` until :meth:`has_synced`, then
        ``RUNNING`` (from the very moment it has, ahead of the run's readiness signal)."""
        state = self._state
        if state is State.STARTING and self.has_synced():
            return State.RUNNING
        return state

    def _stopped_or_stopping(self) -> bool:
        """Whether the run has begun to end: no handler may be added from then on."""
        state = self._state
        return state is State.STOPPING or state is State.STOPPED

    @property
    def resync_check_period(self) -> float:
        """How often (seconds) the reflector checks whether a handler is due a resync."""
        return self._resync_check_period

    def _request_relist(self, reason: BaseException) -> None:
        """Relist now, as the source's selection changed (``reason`` says how): the
        objects it no longer lists leave the cache as deletions. Before the reflector
        exists, its first list reads the new selection anyway."""
        reflector = self._reflector
        if reflector is not None:
            reflector.request_relist(reason)

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the reflector last synced to ("" before the first list)."""
        reflector = self._reflector
        return reflector.last_sync_resource_version if reflector is not None else ""

    @property
    def last_store_resource_version(self) -> str:
        """The newest resourceVersion the cache has applied with everything before it,
        bookmarks included ("" before the first list); behind ``last_sync_resource_version``
        while events wait to be applied."""
        return self._fifo.last_store_resource_version if self._fifo is not None else ""

    async def wait_for_resource_version(
        self, resource_version: str, *, timeout: float | None = None
    ) -> bool:
        """Wait until the cache has applied ``resource_version`` or later (a write's, to read
        it back from the lister); False on ``timeout`` or when the informer stops first.
        :class:`ValueError` if it is not comparable (see ``compare_resource_versions``);
        ``RuntimeError`` at once when the informer was never started (it would wait
        forever; as in :meth:`wait_for_sync`)."""
        await self._require_started("waiting for a resourceVersion")
        return await wait_applied(self._started, lambda: self._fifo, resource_version, timeout)

    def has_synced(self) -> bool:
        """True once the initial list has been popped into the cache (and stays true)."""
        fifo = self._fifo
        return fifo is not None and fifo.has_synced() and self._failure is None

    async def wait_started(self) -> None:
        """Return once the informer's run has begun (at once if it has, or has ended):
        what a wait for sync of an informer that something else starts (a factory, a
        Manager) begins with."""
        await self._started.wait()

    async def wait_for_sync(self, timeout: float | None = None, *, fail_fast: bool = True) -> bool:
        """Wait until :meth:`has_synced`; False on ``timeout`` (seconds) or when the
        informer stops first. :func:`wait_for_cache_sync` raises with the reason in every
        case; this raises only where waiting on could not help:

        * :class:`~aioinformer.errors.CacheSyncError`, at once, when the first list failed
          in a way no retry alone heals (:func:`~aioinformer.errors.fails_until_fixed`: a
          resource the server does not serve, a 401 or 403, a refused connection). It
          names the resource, namespace, server and error, which is its ``cause``. The
          informer keeps retrying: with ``fail_fast=False`` the wait goes on until the
          list succeeds (a CustomResourceDefinition installed meanwhile) or ``timeout``.
        * the run's failure (a strict index function that failed, a stage that ended):
          the informer will never sync.
        * ``RuntimeError``, at once, when the informer was never started (``async with
          informer:``, ``run()``, or its factory's start; a run scheduled in a task just
          before the wait counts): it would wait forever. To wait for an informer that
          something else starts later, use :func:`wait_for_cache_sync`.
        """
        await self._require_started("waiting for its cache to sync")
        if self.has_synced():
            return True
        if self._stopped_or_stopping():
            return self._not_synced()
        blocker: BaseException | None = None
        try:
            async with asyncio.timeout(timeout):
                await self._started.wait()
                fifo, reflector = self._fifo, self._reflector
                assert fifo is not None
                assert reflector is not None
                # run() closes the FIFO as it ends: that is "stopped before syncing".
                if not fail_fast:
                    synced = await fifo.wait_synced()
                else:
                    first, wait = await first_completed(
                        fifo.wait_synced(), reflector.wait_sync_blocked()
                    )
                    if first == 1:
                        blocker = wait.result()
                    synced = first == 0 and wait.result()
                if synced and self._failure is None:
                    return True
        except TimeoutError:
            return False
        if blocker is not None:
            # Raised out here: the error is a TimeoutError too, which the timeout's
            # handler above would take for the wait's own timeout.
            watched = Watched.of(self)
            raise blocked_error([watched], watched, blocker) from blocker
        return self._not_synced()

    def _schedule_run(self) -> None:
        """A running factory will start this informer: waits before then wait for it."""
        self._run_scheduled = True

    async def _require_started(self, what: str) -> None:
        """Refuse a wait on an informer never started: nothing would ever end it. A run
        already scheduled (``asyncio.create_task(informer.run())`` just before) has
        begun after one turn of the event loop, and counts as started."""
        if self._state is State.NEW and not self._run_scheduled:
            await asyncio.sleep(0)
        if self._state is State.NEW and not self._run_scheduled:
            raise RuntimeError(
                f"informer {self.name} was never started: use 'async with informer:', "
                f"'await informer.run()' or its factory's start before {what}"
            )

    def _not_synced(self) -> bool:
        """What a wait for sync answers once the informer stopped or failed: its failure
        raised, else False."""
        failure = self._failure
        if failure is not None:
            raise failure
        return False

    @property
    def audit(self) -> CacheAudit | None:
        """The periodic audit's settings (``audit=``); ``None`` when it does not audit."""
        return self._audit

    async def audit_cache(self) -> AuditReport:
        """Compare the cache with the server now (after an audit in progress, if any), and
        relist when they differ, as a periodic audit does (see :mod:`aioinformer.audit`);
        the :class:`~aioinformer.audit.AuditReport`. Raises what made the audit fail (the
        list's error, say), ``RuntimeError`` before the informer has synced and
        :class:`InformerStoppedError` once it stopped."""
        if self._stopped_or_stopping():
            raise InformerStoppedError(f"informer {self.name} has stopped: nothing to audit")
        auditor = self._auditor
        if auditor is None or not self.has_synced():
            raise RuntimeError(f"informer {self.name} has not synced: nothing to audit yet")
        return await auditor.audit()

    def _audit_statistics(self) -> CacheAuditStatistics | None:
        auditor = self._auditor
        if auditor is None:
            return None
        statistics = auditor.statistics()
        # An informer that never audited, and is not set to, has nothing to report.
        if self._audit is None and statistics.last is None:
            return None
        return statistics

    def statistics(self) -> InformerStatistics:
        """A frozen snapshot: state, cache size, FIFO depth, per-handler counters, the
        reflector's statistics, the cache audits' and the index functions' failures."""
        reflector = self._reflector
        indexes = self._indexer.statistics()
        return InformerStatistics(
            name=self.name,
            state=self.state,
            synced=self.has_synced(),
            cache_size=indexes.items,
            fifo_pending=len(self._fifo) if self._fifo is not None else 0,
            last_sync_resource_version=self.last_sync_resource_version,
            handlers=self._processor.statistics(),
            reflector=reflector.statistics() if reflector is not None else None,
            invalid_objects=self._guard.invalid_objects if self._guard is not None else 0,
            audit=self._audit_statistics(),
            index_errors=indexes.index_errors,
            unindexed=indexes.unindexed,
            last_index_error=indexes.last_index_error,
        )

    def health(self) -> InformerHealth:
        """Whether the cache is synced and live, and why not: see :mod:`aioinformer.health`."""
        return InformerHealth.of(
            name=self.name,
            source=self._source,
            started=self._state is not State.NEW,
            stopped=self._stopped_or_stopping(),
            synced=self.has_synced(),
            cache_size=len(self._indexer),
            reflector=self._reflector.statistics() if self._reflector is not None else None,
            audit=self._audit_statistics(),
            indexes=self._indexer.statistics(),
        )

    # -- running -----------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] | None = None) -> None:
        """List, watch and deliver until cancelled (or :meth:`stop`); runs once.

        With anyio, ``await task_group.start(informer.run)`` returns once the informer has
        synced. On exit (cancellation included) every task it started has ended and the
        watch connection is closed; handler calls in flight are cancelled. Once stopping
        has begun, ``add_event_handler()`` and ``events()`` raise
        :class:`InformerStoppedError`. Should one of its tasks end by itself (a stray
        ``CancelledError`` out of an index function, say), the informer logs it, stops
        and raises ``RuntimeError`` rather than carry on with a stage missing.
        """
        await super().run(task_status=task_status)

    async def _serve(self, *, task_status: TaskStatus[Any]) -> None:
        """The run: start the stages, tell ``task_status`` once synced, stop on request.
        ``async with`` returns once started, not synced: it is told before the stages
        begin, so that it resumes ahead of their first step; the state still turns
        RUNNING once synced."""
        self._mark_started()
        fifo, reflector = self._begin()
        try:
            async with TaskRunner(name=self.name) as stages:
                stages.start_soon(self._stage("handlers", self._processor.run()), name="handlers")
                stages.start_soon(self._stage("pop", self._pop_loop(fifo)), name="pop")
                stages.start_soon(self._stage("reflector", reflector.run()), name="reflector")
                if self._audit is not None:
                    assert self._auditor is not None
                    stages.start_soon(self._stage("audit", self._auditor.run()), name="audit")
                try:
                    first, wait = await first_completed(fifo.wait_synced(), self._stopping.wait())
                    if first == 0 and wait.result():
                        task_status.started()
                    await self._stopping.wait()
                finally:
                    # From here on new handlers are refused: their tasks could not start.
                    self._state = State.STOPPING
                    self._stopping.set()
        except BaseExceptionGroup as group:
            ended = group.exceptions[0]
            if len(group.exceptions) == 1 and isinstance(ended, _StageEnded | IndexFuncError):
                # Its own cause kept (an index function's exception), the group's dropped.
                raise ended from ended.__cause__
            raise
        finally:
            self._processor.stop()
            fifo.close()
            _NAMES.release(self.name, self)

    def _begin(self) -> tuple[DeltaFIFO | RealFIFO, Reflector]:
        """Begin the run: schedule the handlers' resyncs, build the FIFO and the reflector."""
        self._take_name()
        indexer = self._indexer
        metrics = self._index_metrics = new_index_metrics(self.name, indexer.get_indexers())
        indexer.report_index_failures(source=f"informer {self.name}", on_failure=metrics.failed)
        self._processor.start(self._clock.monotonic())
        codec = self._codec
        transform = self._transform
        if transform is not None:
            transform = codec.wrap_transform(transform)
        known = self._indexer.known_objects
        fifo = self._fifo = (
            RealFIFO(codec.key, known_objects=known, transform=transform)
            if self._in_order
            else DeltaFIFO(codec.key, known_objects=known, transform=transform, atomic=True)
        )
        reflector = self._reflector = Reflector(
            _decoded(self._lister_watcher, codec),
            fifo,
            name=self.name,
            resync_period=self._resync_check_period,
            watch_error_handler=self._watch_error_handler,
            clock=self._clock,
            should_resync=self._processor.should_resync,
            backoff=self._backoff,
            options=self._reflector_options,
        )
        self._auditor = CacheAuditor(
            name=self.name,
            config=self._audit if self._audit is not None else CacheAudit(),
            periodic=self._audit is not None,
            lister=self._audit_lister,
            clock=self._clock,
            cache=self._indexer,
            synced=self.has_synced,
            applied_resource_version=lambda: fifo.last_store_resource_version,
            wait_applied=fifo.wait_for_resource_version,
            relist=reflector.request_relist,
            install=self._install_audit_keys,
            gc_policy=self._reflector_options.gc_policy,
        )
        self._started.set()
        return fifo, reflector

    def _take_name(self) -> None:
        """Hold the wanted name while running, or a numbered variant of it when another
        running informer holds it, so that no two share a metrics series; the handlers'
        metrics and the model guard follow a change."""
        name = _NAMES.claim(self._wanted_name, self)
        if name == self.name:
            return
        self.name = name
        for listener in self._processor:
            if listener.metrics is not None:
                listener.metrics = new_handler_metrics(name, listener.name)
        if self._guard is not None:
            self._guard.source = name

    def _install_audit_keys(self, recorder: KeyRecorder | None) -> None:
        self._audit_keys = recorder

    async def _stage(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        """Run one stage, which never ends on its own: one that does (a stray
        ``CancelledError`` let out of user code) would leave the informer looking alive
        with a stage gone, so it is turned into an error that stops the informer."""
        try:
            await work
            how = "returned"
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise
            how = "was cancelled"
        failure = self._failure = _StageEnded(
            f"informer {self.name}: task '{self.name} {name}' {how} unexpectedly; "
            "the informer has stopped"
        )
        logger.error("%s", failure)
        raise failure

    async def _pop_loop(self, fifo: DeltaFIFO | RealFIFO) -> None:
        process = self._handle_batch
        processor = self._processor
        queued = new_queued_deltas_metric(self.name)
        while True:
            queued.set(len(fifo))
            # No more keys than the fullest "block" handler has room for.
            max_keys = processor.room(DEFAULT_BATCH_KEYS)
            if not max_keys:
                await processor.wait_for_room()
                continue
            try:
                await fifo.pop_batch(process, max_keys=max_keys)
            except FIFOClosedError:
                return

    def _handle_batch(self, batch: Iterable[tuple[str, Deltas]]) -> None:
        """Apply a batch of keys' deltas; their notifications reach the handlers' queues
        together when the batch ends."""
        handle = self._handle_deltas
        # Only while a cache audit looks; read once per batch.
        recorder = self._audit_keys
        with self._processor.batch():
            for key, deltas in batch:
                if recorder is not None:
                    recorder.applied(key, deltas)
                try:
                    handle(deltas)
                except IndexFuncError as error:
                    # Only a strict indexer raises it: the informer stops, as client-go
                    # panics, rather than run on with a cache its indexes do not cover.
                    self._failure = error
                    logger.error(
                        "informer %s has stopped (strict_indexes=True): %s", self.name, error
                    )
                    raise
                except Exception:
                    # Applying one key's deltas failed (an object without metadata, one the
                    # cache cannot encode): log it and carry on with the other keys.
                    logger.exception("informer %s failed to apply the deltas of %s", self.name, key)
        if recorder is not None:
            recorder.batch_applied()

    def _handle_deltas(self, deltas: Deltas) -> None:
        """Apply one key's deltas to the cache and distribute the notifications.

        Runs without suspending, so the cache, the notifications and a late handler's
        snapshot always line up (see :func:`apply_deltas`).
        """
        fifo = self._fifo
        assert fifo is not None
        apply_deltas(
            deltas,
            self._indexer,
            self._processor.distribute,
            self._codec,
            is_in_initial_list=not fifo.has_synced(),
        )

    def _request_stop(self) -> None:
        """:meth:`stop` (the Service's): make ``run()`` return."""
        self._stopping.set()

    def __repr__(self) -> str:
        return (
            f"<SharedIndexInformer {self.name} state={self.state.name}"
            f" synced={self.has_synced()} items={len(self._indexer)}"
            f" handlers={len(self._processor)}>"
        )


class _StageEnded(RuntimeError):
    """One of the informer's stages ended by itself; the informer stopped."""


class _Names:
    """The names of the running informers. An informer starting under a name another
    running informer holds takes it with a ``#2`` (``#3``, ...) suffix, so that no two
    informers running at once share a log name or a metrics series; a name is free again
    once its informer stops."""

    def __init__(self) -> None:
        # Weak: an informer whose loop was abandoned mid-run must not live on here.
        self._held: weakref.WeakValueDictionary[str, SharedIndexInformer] = (
            weakref.WeakValueDictionary()
        )

    def claim(self, wanted: str, informer: SharedIndexInformer) -> str:
        name = wanted
        number = 1
        while self._held.get(name) not in (None, informer):
            number += 1
            name = f"{wanted} #{number}"
        if name != wanted:
            logger.info("informer name %r is taken by a running informer: using %r", wanted, name)
        self._held[name] = informer
        return name

    def release(self, name: str, informer: SharedIndexInformer) -> None:
        if self._held.get(name) is informer:
            del self._held[name]


_NAMES: Final = _Names()


def _audit_lister(audit: CacheAudit | None, source: ListerWatcher) -> AuditLister:
    """What the informer's audits list: the configured lister, else the source's metadata
    lister when it declares one, else the source itself (full objects, of which only keys
    and resourceVersions are read). An audit reads each item's head only, so it lists
    the source (or its metadata lister) for compact entries wherever the reflector of a
    compact cache would (a third of the CPU of decoded dicts, whatever the informer's
    cache mode); a configured lister is called as it is."""
    if audit is not None and audit.lister is not None:
        return audit.lister
    if isinstance(source, DescribedListerWatcher):
        metadata = source.metadata_lister()
        return (metadata or source).decoded_with(CompactCodec())
    return source


def _decoded(source: ListerWatcher, codec: Codec) -> ListerWatcher:
    """``source`` decoding with ``codec`` when it declares it can (see
    :meth:`~aioinformer.listwatch.DescribedListerWatcher.decoded_with`); else itself,
    whose dicts the codec takes as they come."""
    return source.decoded_with(codec) if isinstance(source, DescribedListerWatcher) else source


# -- applying one key's deltas: the pop task's per-event step ---------------------------

_ADD: Final = NotificationKind.ADD
_UPDATE: Final = NotificationKind.UPDATE
_DELETE: Final = NotificationKind.DELETE


def apply_deltas(
    deltas: Deltas,
    indexer: Indexer[Any],
    distribute: Callable[[Notification, bool], None],
    codec: Codec,
    *,
    is_in_initial_list: bool,
) -> None:
    """Apply one key's deltas to ``indexer`` (``codec``'s store) and distribute the
    notifications, carried as ``codec`` carries them."""
    first = deltas[0].object
    key = first.key if type(first) is DeletedFinalStateUnknown else codec.key(first)
    old = indexer.entry_by_key(key)
    put = indexer.put_entry
    entry_of = codec.entry
    carry = codec.carry
    for delta in deltas:
        obj = delta.object
        if delta.type is _DELETED:
            indexer.delete_by_key(key)
            distribute(Notification(_DELETE, codec.carry_deleted(obj), None), False)
            old = None
            continue
        entry = entry_of(obj)
        carried = carry(entry, obj)
        put(key, entry, carried)
        if old is None:
            distribute(Notification(_ADD, carried, is_in_initial_list), False)
        elif old is entry:
            # A resync re-delivers the cached entry: one carried object serves old and new.
            distribute(Notification(_UPDATE, carried, carried), True)
        else:
            distribute(Notification(_UPDATE, carry(old), carried), codec.same_version(old, entry))
        old = entry


if not TYPE_CHECKING:  # type checkers report the old names as missing, as they should
    from aioinformer._kernel.moved import moved_names

    __getattr__ = moved_names(__name__)
