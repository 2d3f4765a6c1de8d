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
totals), and the seam an audit lists through, :class:`AuditLister`. The audit itself runs
inside the informer (see :mod:`aioinformer._pipeline.audit`).

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
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    import random

    from aioinformer.listwatch import ListOptions, ObjectList

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
