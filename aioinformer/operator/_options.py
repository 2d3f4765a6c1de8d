"""What a :class:`~aioinformer.operator.manager.Manager` is built with: its options, checked
once.

Role: controller-runtime's ``manager.Options``. :class:`ManagerOptions` holds every setting
of a Manager, its own (leader election, endpoints, sync and shutdown deadlines, the clock,
the cache audit, the shard ring, the webhook server) and what its factory gives every
informer (resync, selectors, transform, the cache mode, ...), typed and validated in this one place;
:class:`LeaderElection` is the campaign it runs. A Manager takes an options object, the
same settings as keywords (:class:`ManagerKeywords`, which a type checker checks), or both:
the keywords replace the object's fields.

Re-exported by :mod:`aioinformer.operator.manager` and :mod:`aioinformer.operator`.
"""

from __future__ import annotations

import dataclasses
import socket
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypedDict

from aioinformer.audit import CacheAudit

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Unpack

    from aioinformer._kernel.backoff import Backoff
    from aioinformer._kernel.clock import Clock
    from aioinformer.codec import CacheMode
    from aioinformer.operator.sharding import ShardRing
    from aioinformer.operator.webhook import WebhookOptions
    from aioinformer.processor import SlowHandlerThresholds
    from aioinformer.reflector import ReflectorOptions
    from aioinformer.shard_selector import ShardSelector

__all__ = [
    "DEFAULT_CACHE_AUDIT",
    "LeaderElection",
    "ManagerKeywords",
    "ManagerOptions",
    "default_identity",
]

DEFAULT_CACHE_AUDIT: Final = CacheAudit()
"""How a :class:`Manager`'s informers audit their caches unless told otherwise: every
ten minutes, with up to 20 % jitter (see :mod:`aioinformer.audit`)."""


def default_identity() -> str:
    """``"<hostname>_<random uuid>"``, controller-runtime's default leader identity: unique
    per process even when two replicas share a host name."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElection:
    """How a :class:`Manager` campaigns for leadership: a ``coordination.k8s.io/v1`` Lease
    and client-go's timings (see :class:`~aioinformer.operator.leaderelection.LeaderElector`, which
    checks them: ``lease_duration > renew_deadline > 1.2 * retry_period > 0``)."""

    lease_name: str
    """The Lease's name; every replica of one operator uses the same."""
    lease_namespace: str = "default"
    """The Lease's namespace (controller-runtime: ``LeaderElectionNamespace``)."""
    identity: str = field(default_factory=default_identity)
    """This replica's identity in the Lease; unique per process."""
    lease_duration: float = 15.0
    """Seconds a standby waits, from the last renewal it saw, before taking over."""
    renew_deadline: float = 10.0
    """Seconds the leader keeps retrying a renewal before it gives up leading."""
    retry_period: float = 2.0
    """Seconds between attempts to acquire or renew."""
    release_on_cancel: bool = True
    """Release the Lease on a graceful stop, so a standby takes over at once
    (controller-runtime: ``LeaderElectionReleaseOnCancel``)."""

    def __post_init__(self) -> None:
        if not self.lease_name:
            raise ValueError("LeaderElection.lease_name is empty")
        if not self.lease_namespace:
            raise ValueError("LeaderElection.lease_namespace is empty")


@dataclass(frozen=True, slots=True, kw_only=True)
class ManagerOptions:
    """Every setting of a :class:`~aioinformer.operator.manager.Manager`, checked when it is
    built; :meth:`replace` gives a copy with some changed (checked again).

    Example::

        options = ManagerOptions(
            leader_election=LeaderElection(lease_name="my-operator", lease_namespace="ops"),
            health_address="0.0.0.0:8081",
            cache_sync_timeout=60,
        )
        manager = Manager(client, options)
    """

    namespace: str | None = None
    """The factory's default namespace; ``None``: all."""
    leader_election: LeaderElection | None = None
    """How the Manager campaigns; ``None``: every replica runs its controllers."""
    health_address: str | None = None
    """Where ``/readyz``, ``/healthz`` and ``/livez`` are served (``"host:port"``, port 0
    for a free one); ``None``: not served."""
    metrics_address: str | None = None
    """Where ``/metrics`` is served, as ``health_address``; needs ``prometheus_client``
    (``pip install 'aioinformer[prometheus]'``): without it the Manager raises
    ``RuntimeError`` saying so. It serves the default registry; install
    :class:`aioinformer.contrib.prometheus.PrometheusMetricsProvider` with
    :func:`aioinformer.set_metrics_provider` before building informers to fill it."""
    cache_sync_timeout: float = 120.0
    """Seconds of the clock the informers have to sync at the start. Positive."""
    cache_sync_fail_fast: bool = True
    """The start raises at once when an informer's first list meets an unknown resource,
    a 401 or 403, or a refused connection; false: it waits for them to heal (a
    CustomResourceDefinition installed after the operator), up to
    ``cache_sync_timeout``; the cached client's reads alike."""
    graceful_shutdown_timeout: float = 30.0
    """One deadline, in seconds from the start of stopping, for every runnable together.
    Never negative."""
    clock: Clock | None = None
    """For the election, the shutdown deadline, the factory's informers, the cached
    client and every controller added (their queues, rate limiters and drains);
    ``None``: the event loop's (tests pass a ``FakeClock``)."""
    cache_audit: CacheAudit | None = DEFAULT_CACHE_AUDIT
    """How every informer audits its cache (by default every ten minutes with 20 % jitter,
    each a paged metadata-only LIST); ``None`` turns audits off. On here, while a bare
    informer or factory leaves them off: an operator acts on what its cache says, and a
    cache that silently lost a deletion (kubernetes/kubernetes#123072) would keep it acting
    on an object that is gone until the process restarts; the audit finds and repairs that
    within a period, and ``/readyz`` answers 503 meanwhile."""
    shard: ShardRing | None = None
    """Shard the controllers of the ring's resources across replicas (see
    :mod:`aioinformer.operator.sharding`); ``None``: no sharding."""
    webhook: WebhookOptions | None = None
    """How ``manager.webhooks`` listens and with which certificate (see
    :class:`~aioinformer.operator.webhook.WebhookOptions`); ``None``: its defaults
    (``":9443"``, the files of controller-runtime's ``cert_dir``). It listens only when a
    webhook is registered."""

    # What the factory gives every informer (see SharedInformerFactory).
    resync_period: float = 0.0
    """Seconds between resyncs of every informer; 0: never."""
    label_selector: str | None = None
    """A label selector every informer's list and watch carries."""
    field_selector: str | None = None
    """A field selector every informer's list and watch carries."""
    shard_selector: str | ShardSelector | None = None
    """A shard selector (KEP-5866) every informer's list and watch carries: this replica's
    fixed slice of every resource (see :class:`~aioinformer.factory.SharedInformerFactory`)."""
    transform: Callable[[Any], Any] | None = None
    """What every informer applies to an object before caching it."""
    backoff: Callable[[], Backoff] | None = None
    """Makes each informer's relist backoff; ``None``: the reflector's default."""
    reflector: ReflectorOptions | None = None
    """The reflector options every informer gets."""
    cache: CacheMode = "compact"
    """How informers keep their caches: ``"compact"`` (read-only views) or ``"objects"``
    (dicts)."""
    slow_handler_thresholds: SlowHandlerThresholds | None = None
    """When a handler call counts as slow; ``None``: the processor's defaults."""
    in_order: bool = False
    """Deliver each informer's events in the order they came (a RealFIFO)."""
    strict_indexes: bool = False
    """A failing index function refuses the write and fails the informer."""

    def __post_init__(self) -> None:
        if not self.cache_sync_timeout > 0:
            raise ValueError(f"cache_sync_timeout must be > 0, got {self.cache_sync_timeout}")
        if self.graceful_shutdown_timeout < 0:
            raise ValueError(
                f"graceful_shutdown_timeout must be >= 0, got {self.graceful_shutdown_timeout}"
            )
        if self.cache not in ("compact", "objects"):
            raise ValueError(f"cache must be 'compact' or 'objects', got {self.cache!r}")

    def replace(self, **changes: Unpack[ManagerKeywords]) -> ManagerOptions:
        """A copy with the fields in ``changes`` replaced (``None`` included: it means
        what it says, ``cache_audit=None`` turns audits off), or this very object when
        there are none."""
        return dataclasses.replace(self, **changes) if changes else self


class ManagerKeywords(TypedDict, total=False):
    """:class:`ManagerOptions`' fields as keywords of ``Manager(...)``, for type checkers
    (``tests/unit/operator/test_manager_options.py`` holds the two equal)."""

    namespace: str | None
    leader_election: LeaderElection | None
    health_address: str | None
    metrics_address: str | None
    cache_sync_timeout: float
    cache_sync_fail_fast: bool
    graceful_shutdown_timeout: float
    clock: Clock | None
    cache_audit: CacheAudit | None
    shard: ShardRing | None
    webhook: WebhookOptions | None
    resync_period: float
    label_selector: str | None
    field_selector: str | None
    shard_selector: str | ShardSelector | None
    transform: Callable[[Any], Any] | None
    backoff: Callable[[], Backoff] | None
    reflector: ReflectorOptions | None
    cache: CacheMode
    slow_handler_thresholds: SlowHandlerThresholds | None
    in_order: bool
    strict_indexes: bool
