"""Work queues for controllers: client-go ``util/workqueue`` semantics on asyncio.

Role: decouple *noticing* that something needs work (informer handlers call ``add``)
from *doing* the work (reconcile workers call ``await get()`` … ``done()``), so that

* an item is queued at most once however often it is added (dedup);
* an item is handed to at most one worker at a time: an item added while a worker holds
  it is remembered ("dirty") and queued again only when that worker calls ``done()``;
* distinct items come out in the order they were first added (FIFO, fair);
* failures are retried later (:class:`DelayingQueue`) and with per-item exponential
  backoff under an overall rate limit (:class:`RateLimitingQueue`).

Input: items (any hashable value; controllers use ``"namespace/name"`` keys).
Output: the same items, handed out by ``get()``.

Life cycle, in the package's one vocabulary (:class:`aioinformer.State`): ``RUNNING`` →
(``shut_down()``) ``STOPPED``, or → (``shut_down_with_drain()``) ``STOPPING`` (draining) →
``STOPPED`` once no item is being processed. Once shut down, ``add`` is ignored, items
still queued are handed out, and then ``get()`` raises :class:`ShutDown`. A queue is not a
:class:`~aioinformer._kernel.lifecycle.Service`: it has no run (client-go's queue has none
either), it works from its construction, with or without ``async with``, and
``shut_down``/``shut_down_with_drain`` keep client-go's names.

Task model: all methods run on one event loop. ``add``, ``done``, ``forget`` and
``shut_down`` are sync and never block. A :class:`DelayingQueue` owns one timer task
that moves due items from its heap into the queue; a queue with metrics owns one task
that refreshes the unfinished-work gauges every 0.5 s. Both start lazily on first use
(with a running loop, as :meth:`~aioinformer._kernel.runner.Running.spawn` helpers), are
cancelled by ``shut_down()`` and awaited by ``aclose()``, ``shut_down_with_drain()`` and
leaving ``async with queue:``, so no task outlives the queue. Time comes from ``clock=``
(tests pass a ``FakeClock``).

Example::

    async with RateLimitingQueue[str](name="pods") as queue:
        queue.add("default/web-0")
        key = await queue.get()
        try:
            await reconcile(key)
        except Exception:
            queue.add_rate_limited(key)     # retried after 5 ms, 10 ms, 20 ms, ...
        else:
            queue.forget(key)               # reset its backoff
        finally:
            queue.done(key)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import heapq
import itertools
import logging
import math
from collections.abc import Callable, Coroutine, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, Self, TypeVar

from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.lifecycle import State
from aioinformer._kernel.metrics import CounterMetric as CounterMetric
from aioinformer._kernel.metrics import GaugeMetric as GaugeMetric
from aioinformer._kernel.metrics import HistogramMetric as HistogramMetric
from aioinformer._kernel.metrics import MetricsProvider as MetricsProvider
from aioinformer._kernel.metrics import SettableGaugeMetric as SettableGaugeMetric
from aioinformer._kernel.metrics import get_metrics_provider as get_metrics_provider
from aioinformer._kernel.metrics import new_queue_metrics
from aioinformer._kernel.metrics import set_metrics_provider as set_metrics_provider
from aioinformer._kernel.runner import Running, first_completed
from aioinformer.errors import QueueEmpty, ShutDown

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "BucketRateLimiter",
    "CounterMetric",
    "DelayingQueue",
    "GaugeMetric",
    "HistogramMetric",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "MetricsProvider",
    "QueueStatistics",
    "RateLimiter",
    "RateLimitingQueue",
    "SettableGaugeMetric",
    "WithMaxWaitRateLimiter",
    "WorkQueue",
    "default_controller_rate_limiter",
    "get_metrics_provider",
    "set_metrics_provider",
]

_log = logging.getLogger(__name__)

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)

_UNFINISHED_WORK_UPDATE_PERIOD: Final = 0.5
"""Seconds between refreshes of the unfinished-work gauges (client-go's period)."""


class _ReadyItems(Protocol[T]):
    """What a :class:`WorkQueue` keeps its ready items in: a ``deque`` (FIFO), or any
    store with the same three operations that hands them out in another order."""

    def append(self, item: T) -> None:
        """Make ``item`` ready; the queue appends each item at most once at a time."""
        ...

    def popleft(self) -> T:
        """Remove and return the item to hand out next; called only when not empty."""
        ...

    def __len__(self) -> int:
        """Items ready to be handed out."""
        ...


@dataclass(frozen=True, slots=True)
class QueueStatistics:
    """A snapshot of a queue, from :meth:`WorkQueue.statistics`."""

    depth: int
    """Items queued and ready to be handed out (``len(queue)``)."""
    processing: int
    """Items handed out whose ``done()`` has not been called yet."""
    delayed: int
    """Items waiting for their ``add_after`` delay to pass (0 for a plain WorkQueue)."""
    waiting_getters: int
    """``get()`` calls suspended because nothing is queued."""
    shutting_down: bool
    """True once ``shut_down()`` or ``shut_down_with_drain()`` was called."""


class WorkQueue(Generic[T]):
    """A deduplicating FIFO of work items with at-most-one-worker-per-item hand-out.

    ``add(item)`` queues ``item`` unless it is already queued; if a worker holds it, the
    add is remembered and the item is queued again at that worker's ``done(item)``.
    ``await get()`` hands out the oldest queued item and marks it as being processed;
    every item handed out must be given back with ``done(item)``.

    Keyword arguments: ``name`` labels metrics and logs (metrics are recorded only for a
    named queue); ``clock`` is the time source; ``metrics_provider`` overrides the
    provider installed with :func:`set_metrics_provider`.
    """

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock = default_clock,
        metrics_provider: MetricsProvider | None = None,
    ) -> None:
        self._name = name
        self._clock = clock
        self._metrics = new_queue_metrics(name, metrics_provider, clock=clock)
        # Items ready to be handed out, oldest first. An item is in `_queue` at most once,
        # and only if it is in `_dirty` and not in `_processing`. Only the three operations
        # of _ReadyItems are used, so a subclass may keep another order (a priority heap).
        self._queue: _ReadyItems[T] = collections.deque()
        # Items that need processing: everything in `_queue`, plus items added while a
        # worker held them (those are in `_processing` and go to `_queue` at `done()`).
        self._dirty: set[T] = set()
        # Items handed out whose done() has not been called.
        self._processing: set[T] = set()
        # Futures of suspended get() calls, oldest first; one is resolved per queued item.
        self._getters: collections.deque[asyncio.Future[None]] = collections.deque()
        # Futures of suspended shut_down_with_drain() calls, resolved when `_processing`
        # becomes empty or the drain is cut short by shut_down().
        self._drainers: list[asyncio.Future[None]] = []
        # RUNNING: accepting adds and handing out items. STOPPING: shut down while
        # shut_down_with_drain() waits for the items being processed. STOPPED: adds are
        # ignored; queued items are still handed out, then get() raises.
        self._state = State.RUNNING
        # Background helpers this queue owns; cancelled at shutdown, reaped by aclose().
        self._tasks: list[Running] = []
        # True once the background tasks were started (needs a running loop).
        self._started = False

    # -- producers -----------------------------------------------------------------------

    def add(self, item: T) -> None:
        """Queue ``item`` for processing; no-op if already queued or shut down."""
        if not self._started:
            self._start()
        if self._state is not State.RUNNING or item in self._dirty:
            return
        self._metrics.add(item)
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        self._wake_getter()

    # -- consumers -----------------------------------------------------------------------

    async def get(self) -> T:
        """Wait for the oldest queued item, mark it as processing and return it.

        Always a checkpoint. Raises :class:`ShutDown` once the queue is shut down and has
        nothing queued. Cancelling a waiting ``get()`` takes nothing from the queue.
        """
        if not self._started:
            self._start()
        await asyncio.sleep(0)
        while not self._queue:
            if self._state is not State.RUNNING:
                raise ShutDown(f"queue {self._name!r} is shut down")
            waiter = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except BaseException:
                waiter.cancel()
                with contextlib.suppress(ValueError):
                    self._getters.remove(waiter)
                # Woken for an item but leaving without it: pass the wake-up on.
                if self._queue and not waiter.cancelled():
                    self._wake_getter()
                raise
        return self._take()

    def get_nowait(self) -> T:
        """Return the oldest queued item at once, marking it as processing.

        Raises :class:`QueueEmpty` when nothing is queued, or :class:`ShutDown` when
        nothing is queued and the queue is shut down.
        """
        if not self._started:
            self._start()
        if not self._queue:
            if self._state is not State.RUNNING:
                raise ShutDown(f"queue {self._name!r} is shut down")
            raise QueueEmpty(f"queue {self._name!r} has no item ready")
        return self._take()

    def done(self, item: T) -> None:
        """Mark ``item`` as processed; requeue it if it was added meanwhile.

        Calling it for an item that is not being processed does nothing.
        """
        if item not in self._processing:
            return
        self._metrics.done(item)
        self._processing.remove(item)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_getter()
        if not self._processing:
            self._wake_drainers()

    # -- shutdown ------------------------------------------------------------------------

    def shut_down(self) -> None:
        """Stop accepting items and wake every waiter; never blocks.

        Queued items are still handed out; after them ``get()`` raises :class:`ShutDown`.
        A ``shut_down_with_drain()`` in progress returns at once. Background tasks are
        cancelled; ``await aclose()`` to wait for them to finish.
        """
        self._state = State.STOPPED
        self._stop()
        self._wake_drainers()

    async def shut_down_with_drain(self) -> None:
        """Shut down, then wait until no item is being processed.

        Returns early if ``shut_down()`` is called meanwhile. Workers keep receiving
        queued items and must keep calling ``done()`` for the drain to finish. Awaits
        the queue's background tasks before returning.
        """
        self._state = State.STOPPING
        self._stop()
        loop = asyncio.get_running_loop()
        while self._processing and self._state is State.STOPPING:
            waiter = loop.create_future()
            self._drainers.append(waiter)
            try:
                await waiter
            finally:
                with contextlib.suppress(ValueError):
                    self._drainers.remove(waiter)
        if self._state is State.STOPPING:
            self._state = State.STOPPED
        await self._join_tasks()

    async def aclose(self) -> None:
        """``shut_down()`` and wait for the queue's background tasks to end."""
        if self._state is State.RUNNING:
            self.shut_down()
        else:
            self._stop()
        await self._join_tasks()

    async def __aenter__(self) -> Self:
        if not self._started:
            self._start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- inspection ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The queue's name (labels metrics); may be empty."""
        return self._name

    @property
    def shutting_down(self) -> bool:
        """True once ``shut_down()`` or ``shut_down_with_drain()`` was called."""
        return self._state is not State.RUNNING

    def __len__(self) -> int:
        """Items queued and ready to be handed out (not those being processed)."""
        return len(self._queue)

    def statistics(self) -> QueueStatistics:
        """A frozen snapshot of the queue's counts."""
        return QueueStatistics(
            depth=len(self._queue),
            processing=len(self._processing),
            delayed=self._delayed_count(),
            waiting_getters=sum(1 for waiter in self._getters if not waiter.done()),
            shutting_down=self._state is not State.RUNNING,
        )

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self._name!r} state={self._state.name} "
            f"depth={len(self._queue)} processing={len(self._processing)}"
            f"{self._repr_extra()}>"
        )

    # -- internals -----------------------------------------------------------------------

    def _take(self) -> T:
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        self._metrics.get(item)
        return item

    def _wake_getter(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_all_getters(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _wake_drainers(self) -> None:
        for waiter in self._drainers:
            if not waiter.done():
                waiter.set_result(None)

    def _delayed_count(self) -> int:
        return 0

    def _repr_extra(self) -> str:
        return ""

    def _start(self) -> None:
        """Start the background tasks, if a loop is running (else try again later)."""
        if self._state is not State.RUNNING:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._started = True
        self._start_tasks()

    def _start_tasks(self) -> None:
        if self._metrics.enabled:
            self._spawn(self._report_unfinished_work, "unfinished-work")

    def _spawn(self, factory: Callable[[], Coroutine[Any, Any, None]], role: str) -> None:
        label = self._name or hex(id(self))
        name = f"{type(self).__name__}[{label}] {role}"
        self._tasks.append(Running.spawn(self._reported(factory, name), name=name))

    async def _reported(self, factory: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
        """Run a helper, logging its failure: nobody awaits its outcome."""
        try:
            await factory()
        except Exception:  # noqa: BLE001 - logged: a helper's failure has no other reader
            _log.exception(
                "queue %r: background task %s failed; delayed items and metrics stall",
                self._name,
                name,
            )

    def _stop(self) -> None:
        self._wake_all_getters()
        for helper in self._tasks:
            helper.cancel()

    async def _join_tasks(self) -> None:
        helpers = list(self._tasks)
        if not helpers:
            await asyncio.sleep(0)
            return
        for helper in helpers:
            await helper.stop()
        self._tasks = [helper for helper in self._tasks if helper not in helpers]

    async def _report_unfinished_work(self) -> None:
        while True:
            await self._clock.sleep(_UNFINISHED_WORK_UPDATE_PERIOD)
            if self.shutting_down:
                return
            self._metrics.update_unfinished_work()


class DelayingQueue(WorkQueue[T]):
    """A :class:`WorkQueue` that can also add an item after a delay.

    ``add_after(item, delay)`` keeps the item in a heap until ``delay`` seconds have
    passed on the queue's clock, then adds it. Items become due earliest first. An
    item already waiting keeps the earlier of its two due times (a later ``add_after``
    never postpones it). A non-positive delay adds at once. One timer task, owned by the
    queue, releases due items; it starts on first use and stops at shutdown, when items
    still waiting are dropped.
    """

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock = default_clock,
        metrics_provider: MetricsProvider | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, metrics_provider=metrics_provider)
        # (due time, sequence, item). The entry of an item whose `_waiting` value is not
        # (due time, sequence) is stale (superseded by an earlier due time): skipped.
        self._heap: list[tuple[float, int, T]] = []
        # item -> (due time, sequence) of its live heap entry; one per waiting item.
        self._waiting: dict[T, tuple[float, int]] = {}
        self._sequence = itertools.count()
        # Resolved to make the timer task look at the heap again (an earlier due time).
        self._timer_wake: asyncio.Future[None] | None = None
        # The due time the timer task sleeps towards; None while it sleeps on no deadline.
        self._timer_deadline: float | None = None

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed; no-op when shut down."""
        if self._state is not State.RUNNING:
            return
        self._metrics.retry()
        if not delay > 0:  # NaN included: it cannot be ordered in the heap
            self.add(item)
            return
        self._add_waiting(item, delay)

    def _add_waiting(self, item: T, delay: float) -> None:
        """Keep ``item`` waiting ``delay`` (> 0) seconds, or less if it already waits less."""
        if not self._started:
            self._start()
        due = self._clock.monotonic() + delay
        current = self._waiting.get(item)
        if current is not None and current[0] <= due:
            return
        entry = (due, next(self._sequence))
        self._waiting[item] = entry
        heapq.heappush(self._heap, (entry[0], entry[1], item))
        if len(self._heap) > 2 * len(self._waiting) + 64:
            self._compact()
        if self._timer_deadline is None or due < self._timer_deadline:
            self._wake_timer()

    def shut_down(self) -> None:
        super().shut_down()
        self._drop_waiting()

    async def shut_down_with_drain(self) -> None:
        self._drop_waiting()
        await super().shut_down_with_drain()

    def _drop_waiting(self) -> None:
        self._heap.clear()
        self._waiting.clear()

    def _delayed_count(self) -> int:
        return len(self._waiting)

    def _repr_extra(self) -> str:
        return f" delayed={len(self._waiting)}"

    def _start_tasks(self) -> None:
        super()._start_tasks()
        self._spawn(self._run_timer, "timer")

    def _compact(self) -> None:
        self._heap = [
            (due, seq, item)
            for due, seq, item in self._heap
            if self._waiting.get(item) == (due, seq)
        ]
        heapq.heapify(self._heap)

    def _wake_timer(self) -> None:
        if self._timer_wake is not None and not self._timer_wake.done():
            self._timer_wake.set_result(None)

    def _release_due(self) -> float | None:
        """Add every due item; return the next due time, or None when none waits."""
        now = self._clock.monotonic()
        heap = self._heap
        while heap:
            due, seq, item = heap[0]
            if self._waiting.get(item) != (due, seq):
                heapq.heappop(heap)
                continue
            if due > now:
                return due
            heapq.heappop(heap)
            self._release(item)
        return None

    def _release(self, item: T) -> None:
        """``item`` is due: stop its wait and add it."""
        del self._waiting[item]
        self.add(item)

    async def _run_timer(self) -> None:
        loop = asyncio.get_running_loop()
        while self._state is State.RUNNING:
            wake: asyncio.Future[None] = loop.create_future()
            self._timer_wake = wake
            deadline = self._release_due()
            self._timer_deadline = deadline
            if deadline is None:
                await wake
                continue
            try:
                first, ended = await first_completed(
                    self._clock.sleep(deadline - self._clock.monotonic()), _resolved(wake)
                )
                if first == 0:
                    ended.result()  # a failing clock ends the timer (and is logged)
            finally:
                self._timer_deadline = None


async def _resolved(future: asyncio.Future[None]) -> None:
    await future


class RateLimiter(Protocol[T_contra]):
    """Decides how long an item waits before it is retried."""

    def when(self, item: T_contra) -> float:
        """Seconds ``item`` should wait now; records a failure of ``item``."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking ``item`` (it succeeded): its next delay starts from scratch."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many failures of ``item`` are on record."""
        ...


class RateLimitingQueue(DelayingQueue[T]):
    """A :class:`DelayingQueue` whose retries wait as long as a :class:`RateLimiter` says.

    ``add_rate_limited(item)`` adds ``item`` after ``rate_limiter.when(item)`` seconds;
    ``forget(item)`` resets its failure count once it succeeds; ``num_requeues(item)``
    reports the count. The default limiter is :func:`default_controller_rate_limiter`
    on the queue's clock.
    """

    def __init__(
        self,
        rate_limiter: RateLimiter[T] | None = None,
        *,
        name: str = "",
        clock: Clock = default_clock,
        metrics_provider: MetricsProvider | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, metrics_provider=metrics_provider)
        self._rate_limiter: RateLimiter[T] = (
            rate_limiter
            if rate_limiter is not None
            else default_controller_rate_limiter(clock=clock)
        )

    @property
    def rate_limiter(self) -> RateLimiter[T]:
        """The limiter deciding retry delays."""
        return self._rate_limiter

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the delay its rate limiter gives; no-op when shut down."""
        if self._state is not State.RUNNING:
            return
        self.add_after(item, self._rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Clear ``item``'s failure record; call it when processing ``item`` succeeded."""
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many times ``item`` was rate-limited since it was last forgotten."""
        return self._rate_limiter.num_requeues(item)


class ItemExponentialFailureRateLimiter(Generic[T]):
    """Per item: ``base_delay * 2**failures``, capped at ``max_delay`` (seconds).

    Each ``when(item)`` counts a failure; ``forget(item)`` resets the count.
    """

    def __init__(self, *, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay < 0 or max_delay < 0:
            raise ValueError("base_delay and max_delay must not be negative")
        self._base_delay = float(base_delay)
        self._max_delay = float(max_delay)
        # item -> failures since it was last forgotten; absent means 0.
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        try:
            backoff = math.ldexp(self._base_delay, exponent)
        except OverflowError:
            return self._max_delay
        return min(backoff, self._max_delay)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)

    def __repr__(self) -> str:
        return (
            f"<ItemExponentialFailureRateLimiter base_delay={self._base_delay} "
            f"max_delay={self._max_delay} tracked={len(self._failures)}>"
        )


class ItemFastSlowRateLimiter(Generic[T]):
    """Per item: ``fast_delay`` for the first ``max_fast_attempts`` failures, then
    ``slow_delay``."""

    def __init__(self, *, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self._fast_delay = float(fast_delay)
        self._slow_delay = float(slow_delay)
        self._max_fast_attempts = max_fast_attempts
        # item -> failures since it was last forgotten; absent means 0.
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        failures = self._failures.get(item, 0) + 1
        self._failures[item] = failures
        return self._fast_delay if failures <= self._max_fast_attempts else self._slow_delay

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)

    def __repr__(self) -> str:
        return (
            f"<ItemFastSlowRateLimiter fast_delay={self._fast_delay} "
            f"slow_delay={self._slow_delay} max_fast_attempts={self._max_fast_attempts}>"
        )


class BucketRateLimiter:
    """An overall token bucket: ``qps`` tokens per second, at most ``burst`` saved up.

    ``when()`` reserves one token and returns how long to wait until it is there, the
    way ``golang.org/x/time/rate``'s ``Reserve().Delay()`` does: the bucket starts full,
    refills continuously, and reservations may drive it negative (later callers wait
    longer). Items are not tracked: ``forget`` does nothing and ``num_requeues`` is 0.
    ``qps=math.inf`` never delays.
    """

    def __init__(self, *, qps: float, burst: int, clock: Clock = default_clock) -> None:
        if not qps > 0:
            raise ValueError(f"qps must be positive, got {qps}")
        if burst < 1 and qps != math.inf:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self._qps = float(qps)
        self._burst = burst
        self._clock = clock
        # Tokens at `_last`; negative when reservations ran ahead. Never above `_burst`.
        self._tokens = float(burst)
        # Clock time `_tokens` was computed at; None before the first reservation.
        self._last: float | None = None

    def when(self, item: object) -> float:
        if self._qps == math.inf:
            return 0.0
        now = self._clock.monotonic()
        tokens = self._tokens
        if self._last is not None:
            elapsed = max(0.0, now - self._last)
            tokens = min(float(self._burst), tokens + elapsed * self._qps)
        tokens -= 1.0
        self._tokens = tokens
        self._last = now
        return 0.0 if tokens >= 0 else -tokens / self._qps

    def forget(self, item: object) -> None:
        pass

    def num_requeues(self, item: object) -> int:
        return 0

    def __repr__(self) -> str:
        return f"<BucketRateLimiter qps={self._qps} burst={self._burst}>"


class MaxOfRateLimiter(Generic[T]):
    """Asks every limiter and waits the longest; ``forget`` goes to all of them."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self._limiters: tuple[RateLimiter[T], ...] = limiters

    @property
    def limiters(self) -> tuple[RateLimiter[T], ...]:
        return self._limiters

    def when(self, item: T) -> float:
        # A list, not a generator: every limiter must record the failure.
        return max([limiter.when(item) for limiter in self._limiters], default=0.0)

    def forget(self, item: T) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max((limiter.num_requeues(item) for limiter in self._limiters), default=0)

    def __repr__(self) -> str:
        return f"<MaxOfRateLimiter {list(self._limiters)!r}>"


class WithMaxWaitRateLimiter(Generic[T]):
    """Wraps a limiter, never waiting longer than ``max_delay`` seconds."""

    def __init__(self, limiter: RateLimiter[T], *, max_delay: float) -> None:
        self._limiter = limiter
        self._max_delay = float(max_delay)

    def when(self, item: T) -> float:
        return min(self._limiter.when(item), self._max_delay)

    def forget(self, item: T) -> None:
        self._limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._limiter.num_requeues(item)

    def __repr__(self) -> str:
        return f"<WithMaxWaitRateLimiter max_delay={self._max_delay} of {self._limiter!r}>"


def default_controller_rate_limiter(*, clock: Clock = default_clock) -> MaxOfRateLimiter[Any]:
    """client-go's default controller limiter.

    Per item, exponential from 5 ms to 1000 s; overall, a 10 qps bucket with a burst of
    100 (which only matters when very many items fail at once).
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(base_delay=0.005, max_delay=1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )
