"""Waiting for informers' caches to sync, and failing loudly when they do not.

Role: the one wait behind :meth:`SharedInformerFactory.wait_for_cache_sync`, the
:class:`~aioinformer.operator.controller.Controller`'s sync gate and the module-level
:func:`wait_for_cache_sync` (re-exported by :mod:`aioinformer.informer`). It turns "not
synced yet" into a :class:`~aioinformer.errors.CacheSyncError` that names every unsynced
informer's resource, namespace and last error, so an RBAC 403 or an unknown resource is
read in the error, not dug out of retry warnings.

Input: informers (anything shaped like :class:`SyncTarget`, which
:class:`~aioinformer.informer.SharedIndexInformer` is), a timeout in seconds and a clock.
Output: returns once every informer has synced; raises ``CacheSyncError`` when the
timeout passes first, at once when an informer stops unsynced (its run ended: it never
will sync), naming why its run failed when it did (a strict index function's
:class:`~aioinformer.errors.IndexFuncError`, chained as the cause), and at once, with
``fail_fast`` (the default), when an informer's first list failed in a way no retry alone
heals (:func:`~aioinformer.errors.fails_until_fixed`: an unknown resource, a 401 or 403,
a refused connection), naming the resource, namespace, server and that error (the
``cause``; the informer keeps retrying). With ``fail_fast=False`` such an informer is
waited for, as one that may heal (a CustomResourceDefinition installed later). An
informer not started yet (state ``new``) is waited for: its run may be about to begin;
at the timeout it is reported as "never started".

Ordering: when an informer stops and the timeout passes in the same loop turn, the stop
is reported; when the last informer syncs as the timeout passes, the wait succeeds.

Task model: one task per unsynced informer (its ``wait_started()``, then its
``wait_for_sync()``) and one timer task
on the clock, all owned by the wait and reaped before it returns or raises, cancellation
included. This module sits below the informer: it reads informers through the
:class:`SyncTarget` protocol only.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.runner import cancel_and_wait
from aioinformer.errors import CacheSyncError, UnsyncedInformer, describe_error
from aioinformer.listwatch import ListerWatcher, source_info

if TYPE_CHECKING:
    import enum
    from collections.abc import Callable, Sequence

__all__ = ["SyncTarget", "Watched", "blocked_error", "wait_for_cache_sync", "wait_synced"]


class _ReflectorView(Protocol):
    @property
    def last_error(self) -> BaseException | None: ...


class _StatisticsView(Protocol):
    @property
    def reflector(self) -> _ReflectorView | None: ...


class SyncTarget(Protocol):
    """What the wait reads from an informer."""

    @property
    def name(self) -> str: ...

    @property
    def state(self) -> enum.Enum:
        """Its phase; the value is ``"new"``, ``"running"`` or ``"stopped"``."""
        ...

    @property
    def lister_watcher(self) -> ListerWatcher:
        """Its source; what it declares names the resource and namespace waited for."""
        ...

    def has_synced(self) -> bool: ...

    async def wait_started(self) -> None:
        """Return once its run has begun (at once if it has)."""
        ...

    async def wait_for_sync(self, timeout: float | None = None, *, fail_fast: bool = True) -> bool:
        """True once synced, False when it stopped first; raises a ``CacheSyncError``
        with a ``cause`` when ``fail_fast`` and its first list met a failure no retry
        alone heals, and its run's failure when it failed."""
        ...

    def statistics(self) -> _StatisticsView: ...


@dataclass(frozen=True, slots=True)
class Watched:
    """One informer waited for, with where it reads from (for the error message)."""

    informer: SyncTarget
    resource: str
    namespace: str | None
    run_failure: Callable[[], BaseException | None] | None = None
    """Why its run ended, when the owner of that run knows (a factory does)."""
    server: str | None = None
    """The API server its source reads from, when the source says."""

    @classmethod
    def of(cls, informer: SyncTarget) -> Watched:
        """Read the resource, namespace and server off what the informer's source
        declares."""
        info = source_info(informer.lister_watcher)
        return cls(informer, info.resource, info.namespace, server=info.server)

    def record(
        self, failure: BaseException | None = None, *, blocker: BaseException | None = None
    ) -> UnsyncedInformer:
        """The informer as it stands now, for a :class:`CacheSyncError`; ``failure`` is
        what its wait for sync raised (why its run ended), when it raised; ``blocker``
        the failure that keeps it from syncing, when its wait failed fast."""
        informer = self.informer
        state = str(informer.state.value)
        if state == "stopping":
            state = "stopped"  # its run is ending: it will not sync
        reflector = informer.statistics().reflector
        error = reflector.last_error if reflector is not None else None
        if state == "stopped" and self.run_failure is not None:
            error = self.run_failure() or error
        if failure is not None:
            state, error = "stopped", failure
        elif blocker is not None:
            error = blocker
        return UnsyncedInformer(informer.name, self.resource, self.namespace, state, error)

    def where(self) -> str:
        """``"configmaps in kube-system at https://10.0.0.1:6443"``: what and where."""
        place = "(all namespaces)" if self.namespace is None else f"in {self.namespace}"
        server = f" at {self.server}" if self.server else ""
        return f"{self.resource} {place}{server}"


async def _wait_started_and_synced(target: SyncTarget, *, fail_fast: bool) -> bool:
    await target.wait_started()
    return await target.wait_for_sync(fail_fast=fail_fast)


def blocked_error(
    watched: Sequence[Watched], blocked: Watched, cause: BaseException
) -> CacheSyncError:
    """The :class:`CacheSyncError` of a wait that failed fast: ``blocked``'s first list
    met ``cause``, which no retry alone heals. The message leads with that informer, its
    server and the error, then names every other informer not synced, as ``unsynced``
    does."""
    parts = [f"{blocked.where()}: {describe_error(cause)}"]
    records = []
    for w in watched:
        if w is blocked:
            records.append(w.record(blocker=cause))
        elif not w.informer.has_synced():
            record = w.record()
            records.append(record)
            parts.append(record.describe())
    return CacheSyncError(
        f"caches cannot sync: {'; '.join(parts)}",
        unsynced=tuple(records),
        timeout=None,
        cause=cause,
    )


def _error(
    watched: Sequence[Watched],
    *,
    timeout: float | None,
    stopped: Watched | None,
    failure: BaseException | None = None,
) -> CacheSyncError:
    unsynced = tuple(
        w.record(failure if w is stopped else None) for w in watched if not w.informer.has_synced()
    )
    details = "; ".join(record.describe() for record in unsynced)
    if stopped is not None:
        head = f"caches did not sync: informer {stopped.informer.name} stopped before it synced"
        return CacheSyncError(f"{head}; {details}", unsynced=unsynced, timeout=None)
    return CacheSyncError(
        f"caches did not sync within {timeout:g}s: {details}", unsynced=unsynced, timeout=timeout
    )


async def wait_synced(
    watched: Sequence[Watched],
    *,
    timeout: float | None,
    clock: Clock = default_clock,
    fail_fast: bool = True,
) -> None:
    """Return once every informer has synced; raise :class:`CacheSyncError` as the module
    docstring says. ``timeout`` (seconds on ``clock``; ``None``: no limit) is checked."""
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be >= 0 or None, got {timeout}")
    pending = {
        asyncio.ensure_future(_wait_started_and_synced(w.informer, fail_fast=fail_fast)): w
        for w in watched
        if not w.informer.has_synced()
    }
    if not pending:
        return
    timer = asyncio.ensure_future(clock.sleep(timeout)) if timeout is not None else None
    try:
        waiting: set[asyncio.Future[Any]] = set(pending)
        if timer is not None:
            waiting.add(timer)
        while True:
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for task, w in pending.items():
                if task not in done:
                    continue
                # An informer whose run failed raises its failure from the wait.
                failure = task.exception()
                if isinstance(failure, CacheSyncError) and failure.cause is not None:
                    cause = failure.cause
                    raise blocked_error(watched, w, cause) from cause
                if failure is not None:
                    raise _error(watched, timeout=None, stopped=w, failure=failure) from failure
                if not task.result():
                    raise _error(watched, timeout=None, stopped=w)
            waiting -= done
            if not waiting - {timer}:
                return
            if timer is not None and timer.done():
                raise _error(watched, timeout=timeout, stopped=None)
    finally:
        await cancel_and_wait(*[task for task in (*pending, timer) if task is not None])


async def wait_for_cache_sync(
    *informers: SyncTarget,
    timeout: float | None = None,
    clock: Clock | None = None,
    fail_fast: bool = True,
) -> None:
    """Wait until every one of ``informers`` has synced, or raise
    :class:`~aioinformer.errors.CacheSyncError` naming those that did not.

    Raises when ``timeout`` seconds pass first (``None``: wait as long as it takes), at
    once when an informer stops before it synced, and at once when an informer's first
    list failed in a way no retry alone heals (an unknown resource, a 401 or 403, a
    refused connection: the error's ``cause``), unless ``fail_fast=False``, which waits
    for the informer to get past it. An informer whose run has not begun yet is waited
    for. ``clock`` times the timeout (default: the event loop's; tests pass a
    ``FakeClock``). The raising counterpart of ``informer.wait_for_sync(timeout) -> bool``,
    like client-go's ``cache.WaitForCacheSync`` but with the reasons::

        async with pods, nodes:
            await wait_for_cache_sync(pods, nodes, timeout=60)
    """
    await wait_synced(
        [Watched.of(informer) for informer in informers],
        timeout=timeout,
        clock=clock or default_clock,
        fail_fast=fail_fast,
    )
