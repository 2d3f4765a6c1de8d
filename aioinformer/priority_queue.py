"""A priority work queue for controllers: controller-runtime's ``priorityqueue`` on asyncio.

Role: the work queue of a controller that must not keep new work waiting behind old work.
When a controller starts, or an informer resyncs, every object's key is queued at once;
with a FIFO an object a user just changed waits behind all of them. Here each add carries
a priority, and the controller (:class:`~aioinformer.operator.controller.Controller`, whose
queue this is by default) adds the keys of the initial list and of resyncs at
:data:`LOW_PRIORITY` (controller-runtime's ``handler.LowPriority``, -100) and those of
real events at the default 0, so an event overtakes the backlog, and raises the priority
of its key when that key is already queued at the low one.

It is a :class:`~aioinformer.workqueue.RateLimitingQueue` in every other respect, with the
same methods, life cycle, metrics and statistics, so a controller can take either:

* an item is queued at most once: adding an item already queued, or waiting for its
  ``add_after`` delay, keeps one entry with the higher of the two priorities and the
  earlier ready time (a plain ``add`` of a waiting item makes it ready now);
* an item is handed to at most one worker at a time: an item added while a worker holds
  it is queued again once that worker calls ``done()``, with the highest priority it was
  added with meanwhile (client-go's dirty/processing rules);
* ``add_rate_limited`` waits as long as the queue's :class:`~aioinformer.workqueue.RateLimiter`
  says (by default :func:`~aioinformer.workqueue.default_controller_rate_limiter`);
  ``forget`` and ``num_requeues`` are the limiter's.

Input: items (any hashable value; controllers use ``"namespace/name"`` keys), each added
with an ``int`` priority (higher first; 0 by default).
Output: the same items, handed out by ``get()`` (or ``get_with_priority()``, which also
says the priority the item was queued with).

Ordering: higher priority first; within one priority, first in, first out by the time the
item became ready: when it was added, when its delay ran out, or when its priority was
raised (it then joins the end of its new priority, as in controller-runtime). An item
re-added while a worker held it keeps the place of that add. In fair mode
(``fair_key=``, e.g. :func:`namespace_of_key`), items of one priority are handed out
round-robin among their tenants (the values of ``fair_key``), first in, first out within
a tenant, as controller-runtime's fair queue does: a tenant that has not been served yet
goes first (the one seen last, first), and a tenant just served goes behind every other
one. A tenant is remembered while it has items queued or held by a worker; one that comes
back after that counts as new. The round-robin order is shared by all priorities.

Cost: ``add``, ``add_after``, ``get`` and ``done`` are O(log n) (amortized: superseded
heap entries are skipped when they come up, and the heap is rebuilt when they outnumber the
live ones); nothing scans the queued items.

Metrics are client-go's seven workqueue metrics under controller-runtime's names
(``workqueue_depth``, ``workqueue_adds_total``, ``workqueue_queue_duration_seconds``,
``workqueue_work_duration_seconds``, ``workqueue_unfinished_work_seconds``,
``workqueue_longest_running_processor_seconds``, ``workqueue_retries_total``), through the
same :class:`~aioinformer.workqueue.MetricsProvider` as every queue, with
controller-runtime's two differences: an add counts (and enters the depth) when the item
becomes ready, not when it starts waiting, and a retry is counted for a delay above 0
only. A provider that also implements :class:`PriorityMetricsProvider` gets the depth per
priority instead of the total (which is their sum), as controller-runtime labels
``workqueue_depth`` with ``priority``.

Task model: as :class:`~aioinformer.workqueue.DelayingQueue`: all methods run on one
event loop and the sync ones never block; one timer task moves items whose delay ran out
to the ready heap, and, with metrics, one task refreshes the unfinished-work gauges. Both
start on first use, are cancelled by ``shut_down()`` and awaited by ``aclose()``,
``shut_down_with_drain()`` and leaving ``async with``. Time comes from ``clock=``. Once
shut down, adds are ignored, items still waiting for their delay are dropped, queued ones
are still handed out, and then ``get()`` raises :class:`~aioinformer.errors.ShutDown`.

Example::

    async with PriorityQueue[str](name="pods", fair_key=namespace_of_key) as queue:
        queue.add("default/web-0", priority=LOW_PRIORITY)   # from the initial list
        queue.add("team-a/api-0")                           # an event: handed out first
        key, priority = await queue.get_with_priority()
        try:
            await reconcile(key)
        except Exception:
            queue.add_rate_limited(key, priority=priority)  # keeps its priority
        else:
            queue.forget(key)
        finally:
            queue.done(key)
"""

from __future__ import annotations

import heapq
import itertools
from typing import TYPE_CHECKING, Final, Generic, Protocol, TypeVar, runtime_checkable

from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.lifecycle import State
from aioinformer.workqueue import MetricsProvider, RateLimitingQueue, get_metrics_provider

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from aioinformer.workqueue import (
        CounterMetric,
        GaugeMetric,
        HistogramMetric,
        RateLimiter,
        SettableGaugeMetric,
    )

__all__ = [
    "LOW_PRIORITY",
    "PriorityDepthMetric",
    "PriorityMetricsProvider",
    "PriorityQueue",
    "namespace_of_key",
]

T = TypeVar("T", bound="Hashable")

LOW_PRIORITY: Final = -100
"""The priority of keys from an informer's initial list and from its resyncs
(controller-runtime's ``handler.LowPriority``): a controller adds those at this priority,
events at the default 0, so an event's key is handed out before the backlog, and raises
the priority of the same key when it is already queued at this one."""

_Key = tuple[int, int]
"""An item's place: (priority, ready sequence number)."""


def namespace_of_key(key: str) -> str:
    """The namespace of a ``"namespace/name"`` key; ``""`` for a cluster-scoped ``"name"``.

    The usual ``fair_key`` of a :class:`PriorityQueue`: one busy namespace then cannot
    starve the others within a priority.
    """
    namespace, slash, _ = key.partition("/")
    return namespace if slash else ""


class PriorityDepthMetric(Protocol):
    """The depth of a queue per priority, one series per priority (``workqueue_depth``
    labelled with ``priority``). A provider keeps the number of series bounded itself
    (controller-runtime folds them into one beyond 25 priorities)."""

    def inc(self, priority: int) -> None:
        """One more item ready at ``priority``."""
        ...

    def dec(self, priority: int) -> None:
        """One item fewer ready at ``priority``."""
        ...


@runtime_checkable
class PriorityMetricsProvider(Protocol):
    """Optional, beside :class:`~aioinformer.workqueue.MetricsProvider`: a provider that
    implements it gets the depth of each named :class:`PriorityQueue` per priority, and
    then not its total depth (``new_depth_metric`` is not called for it: the total is the
    sum over priorities, and one gauge family labelled with ``priority`` would count
    each item twice). Called once per queue, when it is created."""

    def new_depth_with_priority_metric(self, name: str) -> PriorityDepthMetric:
        """Items ready to be handed out, per priority (``workqueue_depth{priority}``)."""
        ...


class _NoDepthByPriority:
    """The per-priority depth of a queue whose provider does not keep one."""

    __slots__ = ()

    def inc(self, priority: int) -> None:
        pass

    def dec(self, priority: int) -> None:
        pass


class _NoTotalDepth:
    """A provider's workqueue metrics but the total depth: a queue whose provider keeps
    the depth per priority records only that one (the total is its sum), as
    controller-runtime does, so that one gauge family does not count each item twice."""

    __slots__ = ("_provider",)

    def __init__(self, provider: MetricsProvider) -> None:
        self._provider = provider

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _NoGauge()

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self._provider.new_adds_metric(name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self._provider.new_latency_metric(name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self._provider.new_work_duration_metric(name)

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._provider.new_unfinished_work_seconds_metric(name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._provider.new_longest_running_processor_seconds_metric(name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self._provider.new_retries_metric(name)


class _NoGauge:
    __slots__ = ()

    def inc(self) -> None:
        pass

    def dec(self) -> None:
        pass


class _ReadyHeap(Generic[T]):
    """The ready items, highest priority first, then by ready sequence number.

    ``append`` pushes the item's current place from the queue's table; a place pushed
    earlier for the same item is superseded (skipped when it comes up).
    """

    __slots__ = ("_heap", "_live", "_places")

    def __init__(self, places: dict[T, _Key]) -> None:
        self._places = places
        # (-priority, sequence, item); sequence numbers are unique, so items are never
        # compared. An entry whose place is not the item's `_live` one is superseded.
        self._heap: list[tuple[int, int, T]] = []
        # item -> the place of its live entry, for every ready item.
        self._live: dict[T, _Key] = {}

    def append(self, item: T) -> None:
        place = self._places[item]
        if self._live.get(item) == place:
            return
        self._live[item] = place
        heapq.heappush(self._heap, (-place[0], place[1], item))
        if len(self._heap) > 2 * len(self._live) + 64:
            self._heap = [(-p, seq, it) for it, (p, seq) in self._live.items()]
            heapq.heapify(self._heap)

    def popleft(self) -> T:
        heap = self._heap
        live = self._live
        while True:
            neg_priority, seq, item = heapq.heappop(heap)
            if live.get(item) == (-neg_priority, seq):
                del live[item]
                return item

    def release(self, item: T) -> None:
        """``item`` left the queue (its worker is done and it is not queued again)."""

    def __len__(self) -> int:
        return len(self._live)


class _Level(Generic[T]):
    """The ready items of one priority in fair mode: a FIFO heap per tenant, and the
    tenants that have items, by their place in the round-robin."""

    __slots__ = ("buckets", "listed", "size", "tenants")

    def __init__(self) -> None:
        # tenant -> heap of (sequence, item); entries whose place is not live are stale.
        self.buckets: dict[Hashable, list[tuple[int, T]]] = {}
        # heap of (round-robin position, tenant); an entry is stale unless `listed` holds
        # its position for the tenant. Positions are unique, so tenants are never compared.
        self.tenants: list[tuple[int, Hashable]] = []
        # tenant -> position of its live entry in `tenants`.
        self.listed: dict[Hashable, int] = {}
        # Live items at this priority.
        self.size = 0


class _FairReady(Generic[T]):
    """The ready items in fair mode: the highest priority first; within it, the tenant
    first in the round-robin, and its oldest item."""

    __slots__ = (
        "_back",
        "_fair_key",
        "_front",
        "_level_heap",
        "_levels",
        "_live",
        "_members",
        "_places",
        "_position",
        "_tenant_of",
    )

    def __init__(self, places: dict[T, _Key], fair_key: Callable[[T], Hashable]) -> None:
        self._places = places
        self._fair_key = fair_key
        self._live: dict[T, _Key] = {}
        # priority -> its level, for every level that has an entry in `_level_heap`.
        self._levels: dict[int, _Level[T]] = {}
        # -priority of every level in `_levels`, once each.
        self._level_heap: list[int] = []
        # tenant -> round-robin position (smaller first), for every tenant remembered.
        self._position: dict[Hashable, int] = {}
        # Positions handed out: new tenants count down from -1, served ones up from 1.
        self._front = itertools.count(-1, -1)
        self._back = itertools.count(1)
        # item -> its tenant, for items ready or held by a worker; tenant -> how many.
        self._tenant_of: dict[T, Hashable] = {}
        self._members: dict[Hashable, int] = {}

    def append(self, item: T) -> None:
        place = self._places[item]
        old = self._live.get(item)
        if old == place:
            return
        if old is not None:
            self._levels[old[0]].size -= 1
        self._live[item] = place
        if item in self._tenant_of:
            tenant = self._tenant_of[item]
        else:
            tenant = self._fair_key(item)
            self._tenant_of[item] = tenant
            self._members[tenant] = self._members.get(tenant, 0) + 1
            if tenant not in self._position:
                self._position[tenant] = next(self._front)
        priority, seq = place
        level = self._levels.get(priority)
        if level is None:
            level = self._levels[priority] = _Level()
            heapq.heappush(self._level_heap, -priority)
        level.size += 1
        heapq.heappush(level.buckets.setdefault(tenant, []), (seq, item))
        position = self._position[tenant]
        if level.listed.get(tenant) != position:
            level.listed[tenant] = position
            heapq.heappush(level.tenants, (position, tenant))

    def popleft(self) -> T:
        while True:
            priority = -self._level_heap[0]
            level = self._levels[priority]
            if level.size:
                return self._take_from(level, priority)
            heapq.heappop(self._level_heap)
            del self._levels[priority]

    def _take_from(self, level: _Level[T], priority: int) -> T:
        live = self._live
        tenants = level.tenants
        while True:
            listed_at, tenant = tenants[0]
            if level.listed.get(tenant) != listed_at:
                heapq.heappop(tenants)
                continue
            position = self._position.get(tenant)
            if position is not None and position != listed_at:
                # Served at another priority since it was listed here: it moved back.
                level.listed[tenant] = position
                heapq.heapreplace(tenants, (position, tenant))
                continue
            bucket = level.buckets[tenant]
            while bucket and live.get(bucket[0][1]) != (priority, bucket[0][0]):
                heapq.heappop(bucket)
            if not bucket:
                heapq.heappop(tenants)
                del level.listed[tenant]
                del level.buckets[tenant]
                continue
            _, item = heapq.heappop(bucket)
            del live[item]
            level.size -= 1
            served = next(self._back)
            self._position[tenant] = served
            level.listed[tenant] = served
            heapq.heapreplace(tenants, (served, tenant))
            return item

    def release(self, item: T) -> None:
        """``item`` left the queue; forget its tenant once that has nothing left here."""
        tenant = self._tenant_of.pop(item)
        left = self._members[tenant] - 1
        if left:
            self._members[tenant] = left
        else:
            del self._members[tenant]
            del self._position[tenant]

    def __len__(self) -> int:
        return len(self._live)


class PriorityQueue(RateLimitingQueue[T]):
    """A deduplicating, rate-limiting work queue that hands out higher priorities first.

    ``add(item, priority=p)`` queues ``item`` at priority ``p`` (0 by default; higher is
    handed out first) or, if it is already queued or waiting, raises its priority to
    ``p`` when that is higher. ``add_after`` and ``add_rate_limited`` take the same
    ``priority``. Within a priority items come out in the order they became ready, or, with
    ``fair_key``, round-robin among the tenants ``fair_key(item)`` names (see the module's
    Ordering). ``await get()`` hands out the next item; ``get_with_priority()`` also
    returns the priority it was queued with (a controller re-adds a failed key with it).
    Every item handed out must be given back with ``done(item)``.

    Keyword arguments, as :class:`~aioinformer.workqueue.RateLimitingQueue`'s:
    ``rate_limiter`` (default :func:`~aioinformer.workqueue.default_controller_rate_limiter`
    on ``clock``), ``name`` (labels metrics and logs; metrics only for a named queue),
    ``clock`` and ``metrics_provider``; and ``fair_key``.
    """

    def __init__(
        self,
        rate_limiter: RateLimiter[T] | None = None,
        *,
        fair_key: Callable[[T], Hashable] | None = None,
        name: str = "",
        clock: Clock = default_clock,
        metrics_provider: MetricsProvider | None = None,
    ) -> None:
        # `object`: any provider may also implement the optional protocol.
        provider: object = (
            metrics_provider if metrics_provider is not None else get_metrics_provider()
        )
        by_priority = (
            provider
            if name
            and isinstance(provider, PriorityMetricsProvider)
            and isinstance(provider, MetricsProvider)
            else None
        )
        if by_priority is not None:
            metrics_provider = _NoTotalDepth(by_priority)
        super().__init__(rate_limiter, name=name, clock=clock, metrics_provider=metrics_provider)
        # item -> (priority, ready sequence) of every item queued, waiting for its delay,
        # or re-added while a worker holds it (`_dirty`). The sequence of a waiting item
        # is given when its delay runs out.
        self._places: dict[T, _Key] = {}
        self._sequence_of_ready = itertools.count()
        self._ready: _ReadyHeap[T] | _FairReady[T] = (
            _ReadyHeap(self._places) if fair_key is None else _FairReady(self._places, fair_key)
        )
        self._queue = self._ready
        # item -> the priority it was handed out with, while a worker holds it.
        self._held: dict[T, int] = {}
        self._fair_key = fair_key
        self._depth_by_priority: PriorityDepthMetric = (
            _NoDepthByPriority()
            if by_priority is None
            else by_priority.new_depth_with_priority_metric(name)
        )

    # -- producers -----------------------------------------------------------------------

    def add(self, item: T, *, priority: int = 0) -> None:
        """Queue ``item`` at ``priority``; an item already queued keeps one entry, at the
        higher priority, and one waiting for its delay becomes ready now. No-op once shut
        down."""
        if self._state is not State.RUNNING:
            return
        place = self._places.get(item)
        if place is None:
            self._make_ready(item, priority)
        elif item in self._dirty:
            if priority > place[0]:
                self._raise(item, place[0], priority)
        else:  # waiting for its delay
            del self._waiting[item]
            self._make_ready(item, max(priority, place[0]))

    def add_after(self, item: T, delay: float, *, priority: int = 0) -> None:
        """Add ``item`` at ``priority`` once ``delay`` seconds have passed (at once for a
        delay of 0 or less). An item already queued stays ready, one already waiting keeps
        the earlier time; either way it takes the higher priority. No-op once shut down."""
        if self._state is not State.RUNNING:
            return
        if not delay > 0:  # NaN included: it cannot be ordered in the heap
            self.add(item, priority=priority)
            return
        self._metrics.retry()
        place = self._places.get(item)
        if place is not None and item in self._dirty:
            if priority > place[0]:
                self._raise(item, place[0], priority)
            return
        if place is None or priority > place[0]:
            self._places[item] = (priority, -1)
        self._add_waiting(item, delay)

    def add_rate_limited(self, item: T, *, priority: int = 0) -> None:
        """Add ``item`` at ``priority`` after the delay its rate limiter gives (which
        counts a failure of it); no-op once shut down."""
        if self._state is not State.RUNNING:
            return
        self.add_after(item, self._rate_limiter.when(item), priority=priority)

    # -- consumers -----------------------------------------------------------------------

    async def get_with_priority(self) -> tuple[T, int]:
        """``await get()``, and the priority the item was queued with."""
        item = await self.get()
        return item, self._held[item]

    def done(self, item: T) -> None:
        """Mark ``item`` as processed; queue it again, at the highest priority it was added
        with meanwhile, if it was added while being processed. Calling it for an item that
        is not being processed does nothing."""
        if item not in self._processing:
            return
        del self._held[item]
        super().done(item)
        if item not in self._dirty:
            self._ready.release(item)

    # -- inspection ----------------------------------------------------------------------

    @property
    def fair_key(self) -> Callable[[T], Hashable] | None:
        """The function naming an item's tenant in fair mode, or ``None``."""
        return self._fair_key

    def priority_of(self, item: T) -> int | None:
        """The priority ``item`` is queued (or waiting) at, or ``None`` when it is neither
        (an item a worker holds, and not added since, is neither)."""
        place = self._places.get(item)
        return None if place is None else place[0]

    # -- internals -----------------------------------------------------------------------

    def _make_ready(self, item: T, priority: int) -> None:
        self._places[item] = (priority, next(self._sequence_of_ready))
        super().add(item)  # counts the add: the item is new to `_dirty`
        self._depth_by_priority.inc(priority)

    def _raise(self, item: T, old: int, new: int) -> None:
        """Move ready ``item`` from priority ``old`` to the end of the higher ``new``."""
        self._places[item] = (new, next(self._sequence_of_ready))
        self._depth_by_priority.dec(old)
        self._depth_by_priority.inc(new)
        if item not in self._processing:
            self._ready.append(item)

    def _release(self, item: T) -> None:
        del self._waiting[item]
        self._make_ready(item, self._places[item][0])

    def _take(self) -> T:
        item = super()._take()
        priority = self._held[item] = self._places.pop(item)[0]
        self._depth_by_priority.dec(priority)
        return item

    def _drop_waiting(self) -> None:
        for item in self._waiting:
            del self._places[item]
        super()._drop_waiting()

    def _repr_extra(self) -> str:
        return super()._repr_extra() + (" fair" if self._fair_key is not None else "")
