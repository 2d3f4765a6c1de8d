"""The resourceVersion a cache has applied, and the tasks waiting for it to reach one.

Role. A reflector's cursor runs ahead of its cache: events wait in the DeltaFIFO, grouped
by key, before the consumer applies them. :class:`AppliedResourceVersion` follows the
other end. The FIFO numbers every event it is handed (watch events, a list's
``replace``, a resync, a bookmark) with a sequence number and logs it here; once every
event up to some number has been applied (the FIFO works out that point, see
:class:`~aioinformer.delta_fifo.DeltaFIFO`), :meth:`AppliedResourceVersion.advance` moves
:attr:`~AppliedResourceVersion.current` to the newest resourceVersion among them and
wakes the waiters it satisfies.

Input: log entries in sequence order (an object, whose resourceVersion is read only when
it becomes the newest applied one; a resourceVersion string; or ``None`` for an event
that carries none, a resync); ``advance(through)`` calls. Output: ``current``;
:meth:`~AppliedResourceVersion.wait` results.

Ordering and task model. One event loop; nothing suspends but :meth:`wait`. ``advance``
only moves forward in sequence numbers; the resourceVersion it lands on is whatever the
newest applied event carried (a relist to an older list would move it back, as the cache
itself goes back). Waiters are woken by ``advance``, never by polling; ``close`` answers
the rest with False.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from aioinformer._objects.meta import resource_version_of
from aioinformer.resource_version import parse_resource_version

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence

__all__ = ["AppliedReads", "AppliedResourceVersion", "low_water", "wait_applied"]


def _resource_version(obj: Any) -> str | None:
    if type(obj) is dict:  # what the JSON decoder made: skip the generic accessor
        meta = obj.get("metadata")
        if type(meta) is dict:
            rv = meta.get("resourceVersion")
            return rv if type(rv) is str else None
    return resource_version_of(obj)


class AppliedResourceVersion:
    """Applied-through bookkeeping for one FIFO (see the module notes)."""

    __slots__ = (
        "_closed",
        "_current",
        "_current_number",
        "_newest",
        "_order",
        "_waiters",
        "base",
        "log",
    )

    log: deque[Any]
    """Events not yet applied, oldest first: ``log[i]`` has sequence number ``base + i``."""
    base: int
    """The sequence number of ``log[0]``: every event numbered below it has been applied."""

    def __init__(self) -> None:
        self.log = deque()
        self.base = 0
        self._current = ""
        # Read lazily: the pop path only keeps the newest applied entry, and its
        # resourceVersion is looked up (and parsed) when someone asks or waits.
        self._newest: Any = None
        self._current_number: int | None = None
        self._waiters: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._order = itertools.count()
        self._closed = False

    @property
    def current(self) -> str:
        """The newest resourceVersion among the applied events; "" before any."""
        newest = self._newest
        if newest is not None:
            self._newest = None
            rv = newest if type(newest) is str else _resource_version(newest)
            if rv and rv != self._current:
                self._current = rv
                try:
                    self._current_number = parse_resource_version(rv)
                except ValueError:
                    # Opaque resourceVersions: nothing can be said to be reached.
                    self._current_number = None
        return self._current

    def advance(self, through: int) -> None:
        """Every event numbered below ``through`` has been applied."""
        count = through - self.base
        if count <= 0:
            return
        log = self.log
        newest = None
        if count == 1:  # one key popped with one event: the common case
            newest = log.popleft()
        else:
            popleft = log.popleft
            for _ in range(min(count, len(log))):
                entry = popleft()
                if entry is not None:
                    newest = entry
        self.base = through
        if newest is None:
            return
        self._newest = newest
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        self.current  # noqa: B018 - reads the newest entry's resourceVersion
        number = self._current_number
        if number is None:
            return
        waiters = self._waiters
        while waiters and waiters[0][0] <= number:
            woken = heapq.heappop(waiters)[2]
            if not woken.done():
                woken.set_result(True)

    def reached(self, target: int) -> bool:
        """Whether the applied resourceVersion is ``target`` or newer."""
        self.current  # noqa: B018 - reads the newest entry's resourceVersion
        number = self._current_number
        return number is not None and number >= target

    async def wait(self, resource_version: str) -> bool:
        """Wait until the applied resourceVersion is ``resource_version`` or newer: True;
        False once :meth:`close` is called first. :class:`ValueError` if it is not
        comparable. Cancelling a wait (a timeout) leaves nothing behind."""
        target = parse_resource_version(resource_version)
        if self.reached(target) or self._closed:
            return self.reached(target)
        woken: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        entry = (target, next(self._order), woken)
        heapq.heappush(self._waiters, entry)
        try:
            return await woken
        finally:
            # Cancelled (a timeout) or given up on: it is still in the heap.
            if (woken.cancelled() or not woken.done()) and entry in self._waiters:
                self._waiters.remove(entry)
                heapq.heapify(self._waiters)

    def close(self) -> None:
        """No more advances: every waiter gets False."""
        self._closed = True
        waiters, self._waiters = self._waiters, []
        for _, _, woken in waiters:
            if not woken.done():
                woken.set_result(False)


class AppliedReads:
    """What a FIFO with an :class:`AppliedResourceVersion` (its ``_applied``) offers its
    readers; a mixin, listed before the FIFO's waiting base so that ``_on_close`` closes
    the waits too."""

    __slots__ = ()

    _applied: AppliedResourceVersion

    @property
    def last_store_resource_version(self) -> str:
        """The resourceVersion of the newest event processed with every event before it,
        bookmarks included (see the FIFO's module notes); "" before any."""
        return self._applied.current

    async def wait_for_resource_version(self, resource_version: str) -> bool:
        """Wait until :attr:`last_store_resource_version` is ``resource_version`` or newer
        (compared by :func:`~aioinformer.resource_version.compare_resource_versions`), then
        return True; return False if the FIFO is closed first. Raises :class:`ValueError`
        for a resourceVersion that cannot be compared."""
        return await self._applied.wait(resource_version)

    def _on_close(self) -> None:
        self._applied.close()


def low_water(
    next_seq: int,
    first_seq: Mapping[str, int],
    queue: Sequence[str],
    holds: Collection[int],
    out_of_order: set[str],
) -> int:
    """The number of a FIFO's oldest event not yet applied (``next_seq`` if none).

    ``first_seq`` maps each queued key to its oldest queued event's number; the keys of
    ``queue`` are in increasing order of it, so its head is the oldest, except for the keys
    in ``out_of_order`` (put back by a requeue), which are looked at one by one and dropped
    from it once no longer queued. ``holds`` are the oldest numbers of the keys being
    processed.
    """
    low = next_seq
    if queue:
        low = min(low, first_seq[queue[0]])
    if holds:
        low = min(low, *holds)
    for key in list(out_of_order):
        seq = first_seq.get(key)
        if seq is None:
            out_of_order.discard(key)
        else:
            low = min(low, seq)
    return low


class _Applies(Protocol):
    async def wait_for_resource_version(self, resource_version: str) -> bool: ...


async def wait_applied(
    started: asyncio.Event,
    store: Callable[[], _Applies | None],
    resource_version: str,
    timeout: float | None,
) -> bool:
    """An informer's ``wait_for_resource_version``: check ``resource_version`` is
    comparable (:class:`ValueError` at once if not), wait for the informer to have started
    (``started``, after which ``store()`` is its FIFO), then for the FIFO to apply it;
    False on ``timeout`` (seconds, covering both) or once the FIFO is closed."""
    parse_resource_version(resource_version)
    try:
        async with asyncio.timeout(timeout):
            await started.wait()
            fifo = store()
            assert fifo is not None
            return await fifo.wait_for_resource_version(resource_version)
    except TimeoutError:
        return False
