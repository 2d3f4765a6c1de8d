"""Cache audits: an informer checking its cache against the server, and repairing it.

Role. A watch can lose an event without anyone noticing: a kube-apiserver whose watch cache
dropped deletes (kubernetes/kubernetes#123072), a proxy or a network middlebox with a bug.
client-go's informers never find out (a resync re-reads the cache, not the server), and the
lost object stays in the cache until the process restarts. An audit finds it: every
``period`` seconds (with jitter) the informer lists its resource at ``resourceVersion=""``
(a consistent read), in pages, metadata only where it can; waits, bounded, until its cache
has applied that list's resourceVersion; and compares the two sets of (key,
resourceVersion), leaving out every key the cache changed while the audit ran. A key the
server has and the cache lacks is *missing*, one the cache has and the server lacks is
*extra*, one whose resourceVersion differs is *stale*. Any difference is logged (a few keys
of each kind), counted (:class:`CacheAuditStatistics`, the informer's ``statistics()`` and
``health()``, the ``aioinformer_cache_audit_*`` metrics) and repaired: the informer relists,
its DeltaFIFO's replace queues the missing objects and tombstones for the extra ones
(handlers get ``on_delete`` with a :class:`~aioinformer.models.DeletedFinalStateUnknown`),
and ``health().live`` stays false until every key found different has been applied again.

What it can see: a list at ``resourceVersion=""`` is as true as the server answering it.
A kube-apiserver that serves consistent lists from its watch cache (1.31 on) answers from
the cache its watches come from: an audit then finds what was lost between that cache and
the informer (a proxy, a broken stream, another replica's correct cache), not an event the
server's own cache lost.

This module holds the values users write and read: :class:`CacheAudit` (the settings),
:class:`AuditReport` (one audit's result), :class:`CacheAuditStatistics` (the running
totals), and the seam an audit lists through, :class:`AuditLister`; and, below them, the
audit as it runs inside the informer (:class:`CacheAuditor`, :class:`KeyRecorder`, not
exported: an informer builds them).

What is compared is what the cache keeps: its keys and each entry's
``metadata.resourceVersion``, after the informer's ``transform`` (which must keep both,
as :mod:`aioinformer.transforms` says; one that rewrites resourceVersions makes every key
stale). A typed informer's ``model`` leaves the cache raw, and the objects a reflector
refuses for their kind (``expected_kind``) are never in a LIST of the resource either.

An informer's own source lists the same set of objects as its watch (same namespace, same
selectors); a source that declares a lister of its objects' metadata
(``DescribedListerWatcher.metadata_lister()`` in :mod:`aioinformer.listwatch`, as
:class:`~aioinformer.client.ResourceClient` and a factory's informers' sources do) is
listed through it, so an audit moves a fraction of the bytes of a full list. Any other
``ListerWatcher`` is listed as it is, full objects, of which only the keys and
resourceVersions are kept.

Example::

    informer = SharedIndexInformer(
        client.resource("pods"), audit=CacheAudit(period=300, jitter=0.2)
    )

The audit at work. A :class:`CacheAuditor` lists the
informer's objects (an :class:`AuditLister`, page by page, at
``resourceVersion=""``), waits until the informer's FIFO has applied that list's
resourceVersion, compares keys and resourceVersions with the cache, and on a difference
asks the reflector for a relist. Input: the informer's pieces, handed over as callables
when the informer starts (its cache, its FIFO's wait, its reflector's relist, the hook
below). Output: :class:`AuditReport` values, the running
:class:`CacheAuditStatistics`, log lines, metrics (through a
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
import dataclasses
import enum
import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from aioinformer._kernel.clock import CancelAfter
from aioinformer._kernel.gcpolicy import collector_paused
from aioinformer._kernel.metrics import CacheAuditMetricsProvider, get_metrics_provider
from aioinformer._objects.meta import meta_namespace_key, resource_version_of
from aioinformer.delta_fifo import DeltaType
from aioinformer.errors import CacheDivergence, InformerStoppedError, describe_error
from aioinformer.listwatch import ListOptions
from aioinformer.resource_version import parse_resource_version

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from aioinformer._kernel.clock import Clock
    from aioinformer._kernel.gcpolicy import GCPolicy
    from aioinformer.delta_fifo import Deltas
    from aioinformer.indexer import Indexer
    from aioinformer.listwatch import ObjectList

__all__ = [
    "AuditLister",
    "AuditOutcome",
    "AuditReport",
    "CacheAudit",
    "CacheAuditStatistics",
    "DEFAULT_AUDIT_PERIOD",
]

DEFAULT_AUDIT_PERIOD: Final = 600.0
"""Seconds between two audits by default: ten minutes (a ``Manager``'s default)."""


class AuditLister(Protocol):
    """What an audit lists through: one page per call, as a ``ListerWatcher`` lists.

    It must serve the informer's set of objects (same resource, namespace and selectors);
    items may be full objects, ``PartialObjectMetadata`` or compact entries: only each
    one's key and ``metadata.resourceVersion`` are read.
    """

    async def list(self, options: ListOptions) -> ObjectList:
        """One LIST page for ``options`` (``limit``/``continue_`` page through it)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheAudit:
    """How an informer audits its cache (see the module notes). Checked when built:
    :class:`ValueError` names a value out of range.

    Pass it as ``SharedIndexInformer(..., audit=CacheAudit(...))``,
    ``SharedInformerFactory(..., cache_audit=...)`` or ``Manager(..., cache_audit=...)``
    (a ``Manager`` audits with ``CacheAudit()`` unless given ``cache_audit=None``).
    """

    period: float = DEFAULT_AUDIT_PERIOD
    """Seconds between two audits, the first counted from the informer's start. Positive."""
    jitter: float = 0.2
    """Each wait is ``period`` stretched by a random fraction of it, up to ``jitter``
    (client-go's ``wait.Jitter``): replicas and informers started together spread their
    LISTs instead of hitting the server at once. From 0 to 1."""
    lister: AuditLister | None = dataclasses.field(default=None, compare=False)
    """What to list; ``None``: the informer's source, through its metadata lister when it
    declares one. Must serve the informer's set of objects."""
    page_size: int = 500
    """Objects per LIST page (``limit``), as a reflector's first list asks. Positive."""
    catch_up_timeout: float = 120.0
    """Seconds to wait for the cache to apply the list's resourceVersion (a quiet
    resource only gets there with the server's next bookmark, about once a minute on
    kube-apiserver). A cache that does not is reported as *lagging*: not compared, not
    relisted (a cache behind its watch catches up by itself; a dead watch is the
    reflector's inactivity deadline's to notice). Positive."""
    logged_keys: int = 5
    """Keys of each kind (missing, extra, stale) named in the log line of an audit that
    found differences; the report and the error carry them all. Not negative."""

    def __post_init__(self) -> None:
        if not self.period > 0:
            raise ValueError(f"CacheAudit.period must be positive (seconds), got {self.period!r}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"CacheAudit.jitter must be between 0 and 1, got {self.jitter!r}")
        if self.page_size < 1:
            raise ValueError(f"CacheAudit.page_size must be at least 1, got {self.page_size!r}")
        if not self.catch_up_timeout > 0:
            raise ValueError(
                f"CacheAudit.catch_up_timeout must be positive (seconds), "
                f"got {self.catch_up_timeout!r}"
            )
        if self.logged_keys < 0:
            raise ValueError(
                f"CacheAudit.logged_keys must not be negative, got {self.logged_keys!r}"
            )

    def replace(self, **changes: Any) -> CacheAudit:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    def next_delay(self, rng: random.Random) -> float:
        """Seconds until the next audit: ``period`` plus up to ``jitter`` of it."""
        return self.period * (1.0 + rng.random() * self.jitter)

    @property
    def longest_delay(self) -> float:
        """The most :meth:`next_delay` can be: what "within one period" means."""
        return self.period * (1.0 + self.jitter)


class AuditOutcome(enum.Enum):
    """How one audit ended."""

    CONSISTENT = "consistent"
    """The cache held what the server listed (keys changed meanwhile left out)."""
    DIFFERENT = "different"
    """Keys were missing, extra or stale: logged, counted, and the informer relists."""
    LAGGING = "lagging"
    """The cache did not apply the list's resourceVersion within ``catch_up_timeout``:
    nothing compared, nothing relisted."""
    FAILED = "failed"
    """The list failed (a 403, a timeout, an expired continue token...): retried at the
    next period."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditReport:
    """One audit's result."""

    outcome: AuditOutcome
    resource_version: str
    """The list's resourceVersion (``""`` when the list failed before answering one)."""
    listed: int
    """Objects the server listed."""
    cached: int
    """Objects in the cache when it was compared (0 when not compared)."""
    missing: tuple[str, ...] = ()
    """Keys the server has and the cache lacks, sorted."""
    extra: tuple[str, ...] = ()
    """Keys the cache has and the server lacks, sorted."""
    stale: tuple[str, ...] = ()
    """Keys whose cached resourceVersion differs from the listed one, sorted."""
    ignored: int = 0
    """Keys the cache applied while the audit ran, left out of the comparison."""
    pages: int = 0
    """LIST requests the audit made."""
    seconds: float = 0.0
    """From the first LIST request to the end of the comparison (on the informer's clock)."""
    error: str | None = None
    """Why the audit failed or lagged (see :func:`~aioinformer.errors.describe_error`)."""

    @property
    def differences(self) -> int:
        """Missing, extra and stale keys together."""
        return len(self.missing) + len(self.extra) + len(self.stale)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready values (the keys of each kind as lists)."""
        return {
            "outcome": self.outcome.value,
            "resource_version": self.resource_version,
            "listed": self.listed,
            "cached": self.cached,
            "missing": list(self.missing),
            "extra": list(self.extra),
            "stale": list(self.stale),
            "ignored": self.ignored,
            "pages": self.pages,
            "seconds": round(self.seconds, 3),
            "error": self.error,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheAuditStatistics:
    """An informer's audits so far, from ``statistics().audit`` and ``health().audit``."""

    period: float
    """The configured period (seconds); 0 when audits only run on demand
    (``audit_cache()`` on an informer without ``audit=``)."""
    audits: int
    """Audits that compared (consistent or different)."""
    differences: int
    """Keys found different, summed over every audit."""
    relists: int
    """Relists the audits asked for (one per audit that found differences)."""
    lagging: int
    """Audits abandoned because the cache did not catch up in time."""
    failures: int
    """Audits that failed (their list did)."""
    unrepaired: int
    """Keys the last audit found different that the cache has not applied again since:
    while there are any, the informer is not live."""
    seconds_since_audit: float | None
    """Seconds since the last audit ended, whatever its outcome; ``None`` before the first."""
    last: AuditReport | None
    """The last audit's report; ``None`` before the first."""

    @property
    def repairing(self) -> bool:
        """Differences were found and are not all repaired yet."""
        return self.unrepaired > 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready values, the last report included."""
        since = self.seconds_since_audit
        return {
            "period": self.period,
            "audits": self.audits,
            "differences": self.differences,
            "relists": self.relists,
            "lagging": self.lagging,
            "failures": self.failures,
            "unrepaired": self.unrepaired,
            "seconds_since_audit": None if since is None else round(since, 3),
            "last": None if self.last is None else self.last.as_dict(),
        }


# -- the audit at work inside an informer ---------------------------------------------

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
