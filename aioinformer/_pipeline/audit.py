"""The cache audit at work inside an informer: :class:`CacheAuditor` and its hook.

Role. The running half of :mod:`aioinformer.audit`. A :class:`CacheAuditor` lists the
informer's objects (an :class:`~aioinformer.audit.AuditLister`, page by page, at
``resourceVersion=""``), waits until the informer's FIFO has applied that list's
resourceVersion, compares keys and resourceVersions with the cache, and on a difference
asks the reflector for a relist. Input: the informer's pieces, handed over as callables
when the informer starts (its cache, its FIFO's wait, its reflector's relist, the hook
below). Output: :class:`~aioinformer.audit.AuditReport` values, the running
:class:`~aioinformer.audit.CacheAuditStatistics`, log lines, metrics (through a
:class:`~aioinformer._kernel.metrics.CacheAuditMetricsProvider` when one is installed) and the
relist requests.

The hook. "Keys the cache changed meanwhile" are what the informer's pop task applied
while the audit looked: a :class:`KeyRecorder` the informer calls for every key it applies
while one is installed (``None`` otherwise: one ``is not None`` test per key is all an
informer pays between audits). It is installed from the moment the first LIST is sent
until the comparison, and after an audit that found differences, until each key found
different has been applied again (by the relist, or by a later event): that is when the
informer is live again. A key whose deltas are all ``Sync`` (a resync re-offering the
cache) is not a change.

Ordering: an audit reads the cache in one step, without suspending, once the FIFO has
applied the list's resourceVersion: every key not applied since the LIST was sent then holds
what the cache held before, which the server's list must match unless an event was lost.
Audits never overlap (one lock); a new one supersedes the repair tracking of the last.

Task model: :meth:`CacheAuditor.run` is one task of the informer's task group (a stage):
it sleeps a jittered period on the informer's clock, audits, and never ends by itself; an
audit that fails is logged, counted and retried at the next period. Everything else is
synchronous on the informer's loop; the recorder is called from the pop task.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import TYPE_CHECKING, Final

from aioinformer._kernel.clock import CancelAfter
from aioinformer._kernel.gcpolicy import collector_paused
from aioinformer._kernel.metrics import CacheAuditMetricsProvider, get_metrics_provider
from aioinformer._pipeline.meta import meta_namespace_key, resource_version_of
from aioinformer.audit import AuditOutcome, AuditReport, CacheAudit, CacheAuditStatistics
from aioinformer.delta_fifo import DeltaType
from aioinformer.errors import CacheDivergence, InformerStoppedError, describe_error
from aioinformer.listwatch import ListOptions
from aioinformer.resource_version import parse_resource_version

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from aioinformer._kernel.clock import Clock
    from aioinformer._kernel.gcpolicy import GCPolicy
    from aioinformer.audit import AuditLister
    from aioinformer.delta_fifo import Deltas
    from aioinformer.indexer import Indexer

__all__ = ["CacheAuditor", "KeyRecorder"]

logger = logging.getLogger(__name__)

_SYNC: Final = DeltaType.SYNC


class KeyRecorder:
    """The keys an informer applies while an audit, or the repair after it, looks.

    Invariants: ``changed`` is a set exactly while an audit is between its first LIST
    request and its comparison; ``unrepaired`` holds the keys the last comparison found
    different and not applied since; the informer calls :meth:`applied` for every key it
    applies, and :meth:`batch_applied` after each batch, whenever the recorder is
    installed, which the auditor keeps it exactly while either is in use.
    """

    __slots__ = ("_on_repaired", "_repairing", "changed", "unrepaired")

    def __init__(self, on_repaired: Callable[[], None]) -> None:
        self.changed: set[str] | None = None
        self.unrepaired: set[str] = set()
        self._repairing = False
        self._on_repaired = on_repaired

    @property
    def in_use(self) -> bool:
        """Whether an audit or a repair needs the informer to call it."""
        return self.changed is not None or bool(self.unrepaired)

    def applied(self, key: str, deltas: Deltas) -> None:
        """The informer applied ``deltas`` to ``key``."""
        for delta in deltas:
            if delta.type is not _SYNC:
                break
        else:
            return  # a resync: the cache did not change
        changed = self.changed
        if changed is not None:
            changed.add(key)
        if self.unrepaired:
            self.unrepaired.discard(key)

    def batch_applied(self) -> None:
        """The informer finished a batch: tell the auditor once nothing is left to repair."""
        if self._repairing and not self.unrepaired:
            self._repairing = False
            self._on_repaired()

    def await_repair(self, keys: set[str]) -> None:
        """Track ``keys`` (found different) until each has been applied again; replaces
        what was tracked before."""
        self.unrepaired = keys
        self._repairing = bool(keys)


class _AuditMetrics:
    """What an audit's end writes to a :class:`CacheAuditMetricsProvider`'s metrics."""

    __slots__ = ("_differences", "_duration", "_results")

    def __init__(self, provider: CacheAuditMetricsProvider, informer: str) -> None:
        self._results = {
            outcome: provider.new_cache_audits_metric(informer, outcome.value)
            for outcome in AuditOutcome
        }
        self._differences = {
            kind: provider.new_cache_audit_differences_metric(informer, kind)
            for kind in ("missing", "extra", "stale")
        }
        self._duration = provider.new_cache_audit_duration_metric(informer)

    def ended(self, report: AuditReport) -> None:
        self._results[report.outcome].inc()
        for kind, keys in (
            ("missing", report.missing),
            ("extra", report.extra),
            ("stale", report.stale),
        ):
            if keys:
                self._differences[kind].inc(len(keys))
        if report.outcome in (AuditOutcome.CONSISTENT, AuditOutcome.DIFFERENT):
            self._duration.observe(report.seconds)


def _new_metrics(informer: str) -> _AuditMetrics | None:
    provider = get_metrics_provider()
    if not isinstance(provider, CacheAuditMetricsProvider):
        return None
    return _AuditMetrics(provider, informer)


class CacheAuditor:
    """Audits one informer's cache (see the module notes).

    ``name`` is the informer's (logs, metrics); ``config`` the settings and ``periodic``
    whether :meth:`run` audits every period (an informer without ``audit=`` still audits
    on demand). The informer's pieces: ``lister`` (what to list), ``cache`` (its indexer),
    ``synced`` (has it synced), ``applied_resource_version`` and ``wait_applied`` (its
    FIFO's), ``relist`` (its reflector's ``request_relist``), ``install`` (sets or
    clears its hook, a :class:`KeyRecorder`) and ``gc_policy`` (its lists': the
    collector is paused while the audit lists, unless ``"off"``).
    """

    def __init__(
        self,
        *,
        name: str,
        config: CacheAudit,
        periodic: bool,
        lister: AuditLister,
        clock: Clock,
        cache: Indexer[object],
        synced: Callable[[], bool],
        applied_resource_version: Callable[[], str],
        wait_applied: Callable[[str], Awaitable[bool]],
        relist: Callable[[BaseException], None],
        install: Callable[[KeyRecorder | None], None],
        gc_policy: GCPolicy = "pause",
    ) -> None:
        self._name = name
        self._config = config
        self._periodic = periodic
        self._lister = lister
        self._clock = clock
        self._cache = cache
        self._synced = synced
        self._applied_rv = applied_resource_version
        self._wait_applied = wait_applied
        self._relist = relist
        self._install = install
        # A list decodes every object, as the reflector's does; but it keeps none of them,
        # so there is nothing to freeze afterwards.
        self._gc_policy: GCPolicy = "off" if gc_policy == "off" else "pause"
        self._rng = random.Random()
        self._lock = asyncio.Lock()
        self._recorder = KeyRecorder(self._repaired)
        self._metrics = _new_metrics(name)
        self._audits = 0
        self._differences = 0
        self._relists = 0
        self._lagging = 0
        self._failures = 0
        # The LIST requests of the audit in progress (read when it fails).
        self._pages = 0
        self._last: AuditReport | None = None
        # Clock time the last audit ended; None before the first.
        self._ended_at: float | None = None

    @property
    def config(self) -> CacheAudit:
        return self._config

    def statistics(self) -> CacheAuditStatistics:
        """The totals so far (see :class:`~aioinformer.audit.CacheAuditStatistics`)."""
        ended = self._ended_at
        return CacheAuditStatistics(
            period=self._config.period if self._periodic else 0.0,
            audits=self._audits,
            differences=self._differences,
            relists=self._relists,
            lagging=self._lagging,
            failures=self._failures,
            unrepaired=len(self._recorder.unrepaired),
            seconds_since_audit=None if ended is None else self._clock.monotonic() - ended,
            last=self._last,
        )

    @property
    def repairing(self) -> bool:
        """Keys found different are waiting to be applied again."""
        return bool(self._recorder.unrepaired)

    async def run(self) -> None:
        """Audit every jittered period until cancelled, skipping periods before the
        informer has synced. Never ends by itself: a failed audit waits for the next
        period (it was logged and counted).

        An audit due while the last one's differences still wait for the relist (a
        reflector backing off from a failing list, say) would find them again and ask for
        another relist: it waits one more period, then audits anyway, so that a relist
        that did not repair the cache is found and asked for again."""
        postponed = False
        while True:
            await self._clock.sleep(self._config.next_delay(self._rng))
            if not self._synced():
                logger.debug("%s: not synced yet; cache audit skipped", self._name)
                continue
            if self.repairing and not postponed:
                postponed = True
                logger.debug("%s: the last audit's relist is not applied yet; waiting", self._name)
                continue
            postponed = False
            try:
                await self.audit()
            except Exception:  # noqa: BLE001
                # Blind on purpose: audit() logged and counted it; the next period retries.
                pass
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise
                # Let out by the lister although nobody cancelled us: a failure like any
                # other (audit() counted it), never the end of the audits.

    async def audit(self) -> AuditReport:
        """Run one audit now (after any in progress) and return its report; raise what
        made it fail, after counting it."""
        async with self._lock:
            return await self._audit()

    async def _audit(self) -> AuditReport:
        recorder = self._recorder
        recorder.changed = set()
        self._install(recorder)
        self._pages = 0
        started = self._clock.monotonic()
        listed: dict[str, str] = {}
        resource_version = ""
        try:
            with collector_paused(self._gc_policy):
                resource_version = await self._list(listed)
            caught_up = await self._catch_up(resource_version)
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            self._end_window()
            if task is not None and not task.cancelling():
                self._failed(exc, resource_version, len(listed), started)
            raise
        except Exception as exc:
            self._end_window()
            self._failed(exc, resource_version, len(listed), started)
            raise
        if not caught_up:
            self._end_window()
            return self._lagged(resource_version, len(listed), started)
        # From here to the end nothing suspends: the cache is read in one step.
        changed = recorder.changed
        assert changed is not None
        cached = len(self._cache)
        listed_count = len(listed)
        missing, extra, stale = self._compare(listed, resource_version, changed)
        different = bool(missing or extra or stale)
        report = AuditReport(
            outcome=AuditOutcome.DIFFERENT if different else AuditOutcome.CONSISTENT,
            resource_version=resource_version,
            listed=listed_count,
            cached=cached,
            missing=missing,
            extra=extra,
            stale=stale,
            ignored=len(changed),
            pages=self._pages,
            seconds=self._clock.monotonic() - started,
        )
        recorder.changed = None
        recorder.await_repair({*missing, *extra, *stale})
        self._audits += 1
        self._differences += report.differences
        self._ended(report)
        if report.outcome is AuditOutcome.CONSISTENT:
            self._install(None)
            logger.debug(
                "%s: cache audit at resourceVersion %s: consistent (%d listed, %d changed "
                "meanwhile)",
                self._name,
                resource_version,
                listed_count,
                report.ignored,
            )
            return report
        divergence = CacheDivergence(
            resource_version,
            missing=missing,
            extra=extra,
            stale=stale,
            shown=self._config.logged_keys,
        )
        logger.warning("%s: %s; relisting", self._name, divergence)
        self._relists += 1
        self._relist(divergence)
        return report

    async def _list(self, listed: dict[str, str]) -> str:
        """List everything into ``listed`` (key -> resourceVersion); the list's
        resourceVersion."""
        limit = self._config.page_size
        options = ListOptions(resource_version="", limit=limit)
        resource_version = ""
        while True:
            self._pages += 1
            page = await self._lister.list(options)
            if not resource_version:
                resource_version = page.resource_version
            for item in page.items:
                listed[meta_namespace_key(item)] = resource_version_of(item) or ""
            if not page.continue_:
                break
            # A continued list is pinned by its token; a resourceVersion is not allowed.
            options = ListOptions(limit=limit, continue_=page.continue_)
        return resource_version

    async def _catch_up(self, resource_version: str) -> bool:
        """Wait until the cache has applied ``resource_version``: false after
        ``catch_up_timeout``. Raises ``ValueError`` for a resourceVersion that cannot be
        compared (no wait could ever tell), :class:`InformerStoppedError` when the
        informer stops first."""
        parse_resource_version(resource_version)
        try:
            with CancelAfter(self._clock, self._config.catch_up_timeout):
                applied = await self._wait_applied(resource_version)
        except TimeoutError:
            return False
        if not applied:
            raise InformerStoppedError(f"informer {self._name} stopped during a cache audit")
        return True

    def _compare(
        self, listed: dict[str, str], resource_version: str, changed: set[str]
    ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """(missing, extra, stale) keys, sorted, leaving out the ``changed`` ones and any
        whose cached resourceVersion is newer than the list's. Consumes ``listed``."""
        newest = parse_resource_version(resource_version)
        cache = self._cache
        entry_by_key = cache.entry_by_key
        extra: list[str] = []
        stale: list[str] = []
        for key in cache.list_keys():
            listed_rv = listed.pop(key, None)
            if key in changed:
                continue
            cached_rv = resource_version_of(entry_by_key(key)) or ""
            if listed_rv == cached_rv or _newer(cached_rv, newest):
                continue
            (extra if listed_rv is None else stale).append(key)
        missing = [key for key in listed if key not in changed]
        return tuple(sorted(missing)), tuple(sorted(extra)), tuple(sorted(stale))

    def _end_window(self) -> None:
        """The audit ends without a comparison: stop recording what changed, and keep the
        hook only for a repair still in progress."""
        recorder = self._recorder
        recorder.changed = None
        if not recorder.in_use:
            self._install(None)

    def _lagged(self, resource_version: str, listed: int, started: float) -> AuditReport:
        applied = self._applied_rv() or '""'
        self._lagging += 1
        return self._not_compared(
            AuditOutcome.LAGGING,
            f"the cache did not apply resourceVersion {resource_version} within "
            f"{self._config.catch_up_timeout:g}s (it had applied {applied})",
            resource_version,
            listed,
            started,
        )

    def _failed(
        self, error: BaseException, resource_version: str, listed: int, started: float
    ) -> None:
        self._failures += 1
        self._not_compared(
            AuditOutcome.FAILED, describe_error(error), resource_version, listed, started
        )

    def _not_compared(
        self,
        outcome: AuditOutcome,
        why: str,
        resource_version: str,
        listed: int,
        started: float,
    ) -> AuditReport:
        report = AuditReport(
            outcome=outcome,
            resource_version=resource_version,
            listed=listed,
            cached=0,
            pages=self._pages,
            seconds=self._clock.monotonic() - started,
            error=why,
        )
        self._ended(report)
        logger.warning(
            "%s: cache audit %s: %s; the next period tries again",
            self._name,
            "failed" if outcome is AuditOutcome.FAILED else "not compared",
            why,
        )
        return report

    def _ended(self, report: AuditReport) -> None:
        self._last = report
        self._ended_at = self._clock.monotonic()
        if self._metrics is not None:
            self._metrics.ended(report)

    def _repaired(self) -> None:
        """Every key found different has been applied again (called from the pop task)."""
        logger.info("%s: the differences the cache audit found are repaired", self._name)
        if not self._recorder.in_use:
            self._install(None)


def _newer(resource_version: str, than: int) -> bool:
    """Whether ``resource_version`` is comparable and newer than ``than``."""
    try:
        return parse_resource_version(resource_version) > than
    except ValueError:
        return False
