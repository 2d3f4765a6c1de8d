"""One object that runs an operator: :class:`Manager` (controller-runtime's ``manager.Manager``).

Role: owns an informer factory, the controllers and other runnables reading from it,
optional leader election, and the health and metrics endpoints; starts them in the right
order and stops them gracefully. Input: a :class:`~aioinformer.client.Client` (the
manager never closes it), controllers (:meth:`Manager.add`) and async callables
(:meth:`Manager.add_runnable`). Output: ``run()`` returning after :meth:`Manager.stop`, or
raising the failure that ended it; :meth:`Manager.run_until_signal` turns that into a
process exit code.

Start order (controller-runtime's, with ``EnableWarmup``):

1. the health endpoint (``/healthz`` and ``/livez`` answer 200, ``/readyz`` 503) and the
   metrics endpoint listen, then the webhook server (``manager.webhooks``) when webhooks
   are registered on it, before any informer lists: a conversion webhook must answer
   before a cache reads its custom resources;
2. the factory starts every informer asked for so far, and the manager waits until all
   have synced, at most ``cache_sync_timeout`` seconds; past it, as soon as an informer
   stops unsynced, or as soon as an informer's first list fails in a way no retry alone
   heals (a resource the server does not serve, a 401 or 403, a refused connection;
   ``cache_sync_fail_fast=False`` waits for those to heal instead) ``run()`` raises
   :class:`~aioinformer.errors.CacheSyncError` naming each resource, namespace and last
   error, and nothing else has started: no lease was written, no controller ran;
3. runnables added with ``needs_leader_election=False`` start;
4. with ``leader_election``, the manager campaigns for the Lease only now, with warm
   caches, so a new leader reconciles at once; controllers and leader-only runnables start
   once it leads (without election, at once).

Stop (:meth:`Manager.stop`, cancelling ``run()``, SIGTERM/SIGINT under
:meth:`Manager.run_until_signal`, or a runnable's failure): controllers are asked to stop
and drain their in-flight reconciles, other runnables are cancelled, all within
``graceful_shutdown_timeout`` seconds (then cancelled); the lease is released
(``release_on_cancel``); the factory shuts down; the webhook server and the endpoints
close. A runnable that
raises stops the manager, and ``run()`` raises that error.

Leadership lost (a renewal missed ``renew_deadline``): controllers and leader-only
runnables stop as above, then ``run()`` raises :class:`~aioinformer.errors.LeadershipLost`.
As in controller-runtime, the process is meant to exit (``run_until_signal`` returns 1)
and restart clean, rather than to campaign again with state from its time as leader.

Life cycle: a manager is a :class:`~aioinformer.Service`; its ``state`` goes ``NEW``
(informers, controllers and runnables may be added), ``STARTING`` (endpoints up,
informers started, waiting for every cache to sync), ``RUNNING`` (caches synced: ``run()``
signals readiness here; campaigning or leading, which :attr:`Manager.is_leader` and
:attr:`Manager.elected` tell), ``STOPPING`` (draining controllers, cancelling runnables,
releasing the lease, closing) and ``STOPPED``.

Reconciles read and write through :attr:`Manager.cached_client`: reads from the
manager's informers (one is built and started on first use), writes to the server, and
reads its own writes, deletes included.

Task model: ``run()`` works in the caller's task and owns every task it starts (the
informers', the election's, one child of a runnable group's task runner per runnable);
all have ended when it returns or raises. ``async with manager:`` runs it in a task for
the duration of the block, returning once the endpoints listen and the informers have
started (before they have synced).

Example::

    async with Client.from_env() as client:
        manager = Manager(
            client,
            leader_election=LeaderElection(lease_name="my-operator", lease_namespace="ops"),
            health_address=":8081",
        )
        config_maps = manager.informer_for("configmaps")
        manager.controller("labeler", reconcile, informers=[config_maps])
        exit_code = await manager.run_until_signal()
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import anyio
import orjson

from aioinformer._kernel.clock import default_clock
from aioinformer._kernel.lifecycle import Service, State
from aioinformer._kernel.runner import (
    TaskRunner,
    finish_regardless,
    first_completed,
    is_async_callable,
)
from aioinformer.errors import CacheSyncError, LeadershipLost
from aioinformer.factory import SharedInformerFactory
from aioinformer.operator._endpoints import Answer, HttpEndpoint
from aioinformer.operator._exit_report import report_exit
from aioinformer.operator._manager_ring import RingSeat
from aioinformer.operator._options import DEFAULT_CACHE_AUDIT as DEFAULT_CACHE_AUDIT
from aioinformer.operator._options import LeaderElection as LeaderElection
from aioinformer.operator._options import ManagerOptions as ManagerOptions
from aioinformer.operator._options import default_identity as default_identity
from aioinformer.operator._runnables import Runnable, RunnableGroup
from aioinformer.operator.cached_client import CachedClient
from aioinformer.operator.controller import Controller
from aioinformer.operator.crds import CRDControllers, CRDHost
from aioinformer.operator.leaderelection import LeaderElector, LeaseLock
from aioinformer.operator.webhook import WebhookServer

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine
    from contextlib import AbstractAsyncContextManager
    from typing import Unpack

    from anyio.abc import TaskStatus

    from aioinformer.client import GVR, Client, ResourceInfo
    from aioinformer.health import FactoryHealth
    from aioinformer.informer import SharedIndexInformer
    from aioinformer.operator._options import ManagerKeywords
    from aioinformer.operator._sharder import Sharder
    from aioinformer.operator.controller import Reconcile
    from aioinformer.operator.crds import Setup

__all__ = [
    "DEFAULT_CACHE_AUDIT",
    "LeaderElection",
    "Manager",
    "ManagerHealth",
    "ManagerOptions",
    "default_identity",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class ManagerHealth:
    """A manager's health, from :meth:`Manager.health`: what ``/readyz`` and ``/healthz``
    answer.

    * ``ready``: caches synced, the factory ready (every informer live, see
      :mod:`aioinformer.health`), the manager not stopping, and no started controller has
      stopped. A standby (not leading) is ready: its caches are warm.
    * ``live``: the manager runs (``STARTING`` or ``RUNNING``) and no informer has stopped.
    """

    state: State
    ready: bool
    live: bool
    leader: bool
    """Leading (always true once running without leader election)."""
    controllers: dict[str, str]
    """Each controller's state by name (:class:`~aioinformer.State` values)."""
    factory: FactoryHealth
    shard: dict[str, Any] | None = None
    """With ``shard``: the ring's name, this replica's identity, whether it holds its
    shard Lease and runs the sharder, and the ring's members as its Leases show them."""
    webhooks: dict[str, Any] | None = None
    """With webhooks registered: the webhook server's state, address and paths (a manager
    with webhooks is ready only while its server listens)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready values: the manager's fields and the factory's record."""
        return {
            "ready": self.ready,
            "live": self.live,
            "state": self.state.value,
            "leader": self.leader,
            "controllers": dict(self.controllers),
            **({"shard": dict(self.shard)} if self.shard is not None else {}),
            **({"webhooks": dict(self.webhooks)} if self.webhooks is not None else {}),
            **{k: v for k, v in self.factory.as_dict().items() if k not in ("ready", "live")},
        }


_CONTROLLER_OK = frozenset({State.NEW, State.STARTING, State.RUNNING})
"""Controller states that keep a manager ready: not started yet (a standby), waiting for
its caches, or running."""

_RUNNING_STATES = frozenset({State.STARTING, State.RUNNING})


class Manager(Service):
    """Runs an operator's informers, controllers and runnables (see the module docstring).

    Built from ``client`` (not closed by the manager) and its options: a
    :class:`ManagerOptions`, the same settings as keywords, or both (the keywords replace
    the object's fields)::

        Manager(client, leader_election=LeaderElection(lease_name="my-operator"))
        Manager(client, ManagerOptions(health_address="0.0.0.0:8081"), cache_sync_timeout=60)

    :class:`ManagerOptions` says what each setting does. Audits are on by default here,
    while a bare informer or factory leaves them off (see ``ManagerOptions.cache_audit``).
    """

    _enters_when: ClassVar[Literal["ready", "started"]] = "started"
    """``async with`` returns once the informers have started, before they have synced."""

    def __init__(
        self,
        client: Client,
        options: ManagerOptions | None = None,
        **keywords: Unpack[ManagerKeywords],
    ) -> None:
        self.options: ManagerOptions = (options or ManagerOptions()).replace(**keywords)
        """What this manager was built with (checked once, in :class:`ManagerOptions`)."""
        options = self.options
        clock = options.clock
        self._client = client
        self._clock = clock if clock is not None else default_clock
        self._factory = SharedInformerFactory(
            client,
            namespace=options.namespace,
            resync_period=options.resync_period,
            label_selector=options.label_selector,
            field_selector=options.field_selector,
            shard_selector=options.shard_selector,
            transform=options.transform,
            clock=clock,
            backoff=options.backoff,
            reflector=options.reflector,
            cache=options.cache,
            slow_handler_thresholds=options.slow_handler_thresholds,
            in_order=options.in_order,
            cache_audit=options.cache_audit,
            strict_indexes=options.strict_indexes,
        )
        self._cached_client = CachedClient(
            client, self._factory, clock=clock, fail_fast=options.cache_sync_fail_fast
        )
        leader_election = options.leader_election
        self._elector: LeaderElector | None = None
        if leader_election is not None:
            lock = LeaseLock(
                client,
                leader_election.lease_namespace,
                leader_election.lease_name,
                leader_election.identity,
            )
            self._elector = LeaderElector(
                lock,
                lease_duration=leader_election.lease_duration,
                renew_deadline=leader_election.renew_deadline,
                retry_period=leader_election.retry_period,
                release_on_cancel=leader_election.release_on_cancel,
                on_started_leading=self._lead,
                clock=clock,
            )
        self._endpoints: list[HttpEndpoint] = []
        self._health_endpoint: HttpEndpoint | None = None
        self._metrics_endpoint: HttpEndpoint | None = None
        if options.health_address is not None:
            ready = self._probe(lambda h: h.ready)
            live = self._probe(lambda h: h.live)
            self._health_endpoint = HttpEndpoint(
                "health",
                options.health_address,
                {"/readyz": ready, "/healthz": live, "/livez": live},
            )
            self._endpoints.append(self._health_endpoint)
        if options.metrics_address is not None:
            self._metrics_endpoint = HttpEndpoint(
                "metrics", options.metrics_address, {"/metrics": _metrics_answer()}
            )
            self._endpoints.append(self._metrics_endpoint)
        self.webhooks = WebhookServer(options.webhook, clock=self._clock)
        """The webhook server (controller-runtime's ``mgr.GetWebhookServer()``): register
        admission and conversion webhooks on it before ``run()``; it listens only when some
        are, from before the informers list until after the controllers stopped."""
        self._controllers: list[Controller] = []
        # The controllers of CustomResourceDefinitions, each run while its CRD is there,
        # and what they are lent of the manager.
        self._crd_gates: list[CRDControllers] = []
        self._crd_host = CRDHost(
            client=client,
            cached_client=self._cached_client,
            factory=self._factory,
            clock=self._clock,
            controller_settings={
                "cache_sync_timeout": options.cache_sync_timeout,
                "cache_sync_fail_fast": options.cache_sync_fail_fast,
            },
            grace=self._crd_grace,
        )
        # Runnables started once the caches synced, and those started once leading (the
        # controllers among them).
        self._unelected = RunnableGroup(
            "manager", on_failure=self._failed, clock=self._clock, grace=self._grace
        )
        self._elected_group = RunnableGroup(
            "manager (leader)", on_failure=self._failed, clock=self._clock, grace=self._grace
        )
        # The sharded controllers: run while this replica holds its shard Lease.
        self._shard_group = RunnableGroup(
            "manager (shard)", on_failure=self._failed, clock=self._clock, grace=self._shard_grace
        )
        self.sharding = asyncio.Event()
        """Set while this replica holds its shard Lease and runs its sharded controllers
        (never without ``shard``); ``await manager.sharding.wait()``."""
        # With ``shard``: the Leases this replica follows and campaigns for in the ring.
        self._seat: RingSeat | None = None
        if options.shard is not None:
            self._seat = RingSeat(
                options, client, self._factory, clock=self._clock, lead_shard=self._lead_shard
            )
        # Set when asked to stop while running (stopped before the start, run() returns
        # at once without serving: Service).
        self._stop_requested = asyncio.Event()
        # The first failure of a runnable; run() raises it once everything has stopped.
        self._failure: BaseException | None = None
        self._synced = False
        # When the graceful stop must be over (clock time), from the start of stopping.
        self._shutdown_deadline: float | None = None
        self.elected = asyncio.Event()
        """Set while this manager leads (at once after sync without leader election);
        ``await manager.elected.wait()``."""

    # -- building --------------------------------------------------------------------------

    @property
    def client(self) -> Client:
        """The client the manager was given."""
        return self._client

    @property
    def cached_client(self) -> CachedClient:
        """The client reconciles read and write through (controller-runtime's
        ``mgr.GetClient()``): reads from the manager's informers, writes to the server,
        and a read after a write of its own waits until the cache shows that write,
        deletes included (see :mod:`aioinformer.operator.cached_client`)."""
        return self._cached_client

    @property
    def factory(self) -> SharedInformerFactory:
        """The informer factory the manager owns: started after the endpoints, shut down
        after the controllers."""
        return self._factory

    def informer_for(
        self, resource: str | GVR | ResourceInfo, **options: Any
    ) -> SharedIndexInformer:
        """``manager.factory.informer_for(...)``: the shared informer for ``resource``. One
        asked for before ``run()`` is waited for before leadership is sought; one asked for
        later starts at once and is not waited for.

        With ``shard``, an informer of a sharded resource (one the ring reconciles, or
        one they control) watches this shard's objects only: the ring's shard label
        selector is added to ``label_selector``."""
        seat = self._seat
        if seat is None:
            return self._factory.informer_for(resource, **options)
        return seat.informer_for(resource, **options)

    def add(self, controller: Controller) -> None:
        """Run ``controller`` while this manager leads (at once without leader election).
        Stopping drains it gracefully; its failure stops the manager. It keeps the
        manager's clock: one built without ``clock=`` takes it, one built with another
        clock raises ``ValueError``.

        With ``shard``, a controller watching a sharded informer of this manager's is
        sharded instead: it runs while this replica holds its shard Lease, on this
        shard's objects, and gives an object up when the sharder drains it (see
        :mod:`aioinformer.operator.sharding`); the others stay leader-elected."""
        if not isinstance(controller, Controller):
            raise TypeError(
                f"Manager.add() takes a Controller, not {type(controller).__name__}; "
                "use add_runnable() for an async callable"
            )
        if any(c is controller for c in self._controllers):
            raise ValueError(f"controller {controller.name!r} was already added")
        self._check_open()
        controller._keep_time_of(self._clock)
        self._controllers.append(controller)
        runnable = Runnable(f"controller {controller.name}", controller.run, controller.stop)
        if self._seat is not None and self._seat.shard_controller(controller):
            self._shard_group.add(runnable)
        else:
            self._elected_group.add(runnable)

    def controller(self, name: str, reconcile: Reconcile, **options: Any) -> Controller:
        """Build a :class:`~aioinformer.operator.Controller` that waits for its informers as
        the manager does (its ``cache_sync_timeout`` and ``cache_sync_fail_fast``),
        :meth:`add` it, and return it: controller-runtime's ``ControllerManagedBy(mgr)``.
        ``options`` are the Controller's keyword arguments; one given here wins over the
        manager's. Like every controller added, it keeps the manager's clock."""
        settings: dict[str, Any] = {
            "cache_sync_timeout": self.options.cache_sync_timeout,
            "cache_sync_fail_fast": self.options.cache_sync_fail_fast,
        }
        controller = Controller(name, reconcile, **{**settings, **options})
        self.add(controller)
        return controller

    def add_crd_controllers(self, crd: str, setup: Setup) -> CRDControllers:
        """Run the controllers ``setup`` builds while the CustomResourceDefinition named
        ``crd`` (``"widgets.example.com"``) is established, and stop them when it goes:
        ``setup(scope)`` (sync or async) builds them with ``scope.informer_for(...)`` and
        ``scope.controller(...)``, once for each CRD seen (each uid). They run while the
        manager leads, not sharded; their failure, or ``setup``'s, stops the manager. See
        :mod:`aioinformer.operator.crds`."""
        self._check_open()
        gate = CRDControllers(self._crd_host, crd, setup)
        self._crd_gates.append(gate)
        self._elected_group.add(Runnable(f"crd {crd}", gate.run))
        return gate

    def add_runnable(
        self,
        fn: Callable[[], Coroutine[Any, Any, Any]],
        *,
        needs_leader_election: bool = True,
        name: str | None = None,
    ) -> None:
        """Run ``await fn()`` as a task: once leading (``needs_leader_election=True``, the
        default), or once the caches synced on every replica. Stopping cancels it; if it
        raises, the manager stops with that error; if it returns, it has simply finished."""
        if not is_async_callable(fn):
            raise TypeError(f"add_runnable() takes an async callable, got {fn!r}")
        self._check_open()
        label = name or getattr(fn, "__qualname__", None) or repr(fn)
        group = self._elected_group if needs_leader_election else self._unelected
        group.add(Runnable(label, fn))

    def _check_open(self) -> None:
        if self.state in (State.STOPPING, State.STOPPED):
            raise RuntimeError("the manager is stopping or stopped: nothing can be added")

    # -- state -----------------------------------------------------------------------------

    @property
    def service_name(self) -> str:
        return "manager"

    @property
    def is_leader(self) -> bool:
        """True while leading (always, once running, without leader election); a
        ``RUNNING`` manager that is not leading is campaigning."""
        return self.elected.is_set()

    @property
    def health_address(self) -> str | None:
        """The health endpoint's bound ``"host:port"`` while it serves, else ``None``."""
        return None if self._health_endpoint is None else self._health_endpoint.address

    @property
    def metrics_address(self) -> str | None:
        """The metrics endpoint's bound ``"host:port"`` while it serves, else ``None``."""
        return None if self._metrics_endpoint is None else self._metrics_endpoint.address

    def health(self) -> ManagerHealth:
        """The manager's health now (see :class:`ManagerHealth`)."""
        factory = self._factory.health()
        watched = [
            *self._controllers,
            *(c for gate in self._crd_gates for c in gate.controllers),
        ]
        controllers = {c.name: c.state.value for c in watched}
        controllers_ok = all(c.state in _CONTROLLER_OK for c in watched)
        state = self.state
        running = state in _RUNNING_STATES
        seat = self._seat
        webhooks = self.webhooks
        serving = webhooks.started or not webhooks.has_handlers
        return ManagerHealth(
            state=state,
            ready=running and self._synced and factory.ready and controllers_ok and serving,
            live=running and factory.live,
            leader=self.is_leader,
            controllers=controllers,
            factory=factory,
            shard=None if seat is None else seat.health(holding=self.sharding.is_set()),
            webhooks=webhooks.health() if webhooks.has_handlers else None,
        )

    @property
    def ring_members(self) -> list[str]:
        """With ``shard``: the ring's members as their Leases show them to this replica
        (each holds its own Lease), sorted; ``[]`` without ``shard``."""
        return [] if self._seat is None else self._seat.membership.members()

    def _probe(self, passed: Callable[[ManagerHealth], bool]) -> Callable[[], Awaitable[Answer]]:
        async def answer() -> Answer:
            health = self.health()
            return Answer(200 if passed(health) else 503, orjson.dumps(health.as_dict()))

        return answer

    def __repr__(self) -> str:
        return (
            f"<Manager state={self.state.name} leader={self.is_leader}"
            f" controllers={len(self._controllers)}"
            f" runnables={len(self._unelected) + len(self._elected_group)}>"
        )

    # -- running ---------------------------------------------------------------------------

    def _request_stop(self) -> None:
        self._stop_requested.set()

    def _grace(self) -> float:
        """Seconds left of ``graceful_shutdown_timeout``, counted from the first call: one
        deadline for all runnables, however many groups they are stopped in."""
        now = self._clock.monotonic()
        if self._shutdown_deadline is None:
            self._shutdown_deadline = now + self.options.graceful_shutdown_timeout
        return max(0.0, self._shutdown_deadline - now)

    def _shard_grace(self) -> float:
        """The grace the sharded controllers get: the manager's one deadline when it stops
        (its shard Lease is released only after them); when the Lease was lost, only what
        is left before the sharder may take it over and another replica reconcile the
        same objects: ``lease_duration - renew_deadline - retry_period``."""
        seat = self._seat
        if seat is None or self._stop_requested.is_set():
            return self._grace()
        ring = seat.ring
        return max(0.0, ring.lease_duration - ring.renew_deadline - ring.retry_period)

    def _crd_grace(self) -> float:
        """The grace a CRD's controllers get: the manager's one deadline once it is
        stopping, a whole period when only their CRD went."""
        if self.state is State.STOPPING:
            return self._grace()
        return self.options.graceful_shutdown_timeout

    def _failed(self, runnable: Runnable, error: BaseException) -> None:
        logger.error("manager: %s failed; stopping", runnable.name, exc_info=error)
        if self._failure is None:
            self._failure = error
        self.stop()

    async def run(self, *, task_status: TaskStatus[None] | None = None) -> None:
        """Start everything in order, run until stopped, stop everything in order.

        Returns after :meth:`stop`; re-raises a cancellation once stopped. Raises
        :class:`~aioinformer.errors.CacheSyncError` when the caches did not sync,
        :class:`~aioinformer.errors.LeadershipLost` when leadership was lost, a runnable's
        error when one failed, ``OSError`` when an endpoint or the webhook server cannot
        listen, :class:`~aioinformer.operator.webhook.WebhookCertificateError` when the
        webhook server's certificate files are missing or broken, and
        ``RuntimeError`` on a second run. ``task_status.started()`` is signalled once the
        caches have synced (the manager is ``RUNNING``; leading or campaigning).
        """
        await super().run(task_status=task_status)

    async def _serve(self, *, task_status: TaskStatus[Any]) -> None:
        try:
            for endpoint in self._endpoints:
                await endpoint.start()
                logger.info("manager: serving %s on %s", endpoint.name, endpoint.address)
            # Before the informers list: a conversion webhook must answer before a cache
            # can read its custom resources.
            await self.webhooks.start()
            if self._seat is not None:
                await self._seat.choose_mode()  # before the informers list
            await self._factory.start()
            self._mark_started()
            if await self._wait_for_sync():
                task_status.started()
                async with self._unelected:
                    lost = await self._operate()
                # Raised here, past the group: a body's error would leave it in a group.
                if lost is not None:
                    raise lost
        finally:
            if self.state is not State.STOPPING:
                self._state = State.STOPPING  # failed or cancelled: the same graceful stop
            self.elected.clear()
            await self._shutdown()
        if self._failure is not None:
            raise self._failure

    async def _wait_for_sync(self) -> bool:
        """True once the caches synced; False when asked to stop first; raises
        :class:`CacheSyncError` when they did not sync in time."""
        stop_requested = self._stop_requested
        first, wait = await first_completed(
            stop_requested.wait(),
            self._factory.wait_for_cache_sync(
                timeout=self.options.cache_sync_timeout, fail_fast=self.options.cache_sync_fail_fast
            ),
        )
        if first == 0:
            return False
        # A CacheSyncError leaves run() as it is, logged once by whoever reports it
        # (run_until_signal writes it out): logging it here too repeated it.
        wait.result()
        self._synced = True
        logger.info("manager: caches synced")
        return not stop_requested.is_set()

    async def _operate(self) -> BaseException | None:
        """From sync to a stop request or a lost Lease (what to raise then), the runnables
        that need no election running: the leader-elected part and, with ``shard``, the
        shard and the sharder campaigns side by side. The first Lease lost stops all."""
        lost: list[BaseException] = []
        campaigns = [self._leader_part()]
        seat = self._seat
        if seat is not None:
            campaigns.append(self._campaign(seat.shard_elector, self._shard_group))
            campaigns.append(self._campaign(seat.sharder_elector, None))
        if len(campaigns) == 1:
            return await campaigns[0]

        async def part(campaign: Coroutine[Any, Any, BaseException | None]) -> None:
            outcome = await campaign
            if outcome is not None:
                lost.append(outcome)
                self._stop_requested.set()  # the other parts stop gracefully

        async with TaskRunner(name="manager") as parts:
            for index, campaign in enumerate(campaigns):
                parts.start_soon(part(campaign), name=f"lease {index}")
            await parts.wait()
        return lost[0] if lost else None

    async def _leader_part(self) -> BaseException | None:
        if self._elector is None:
            self.elected.set()
            async with self._elected_group:
                await self._stop_requested.wait()
            return None
        return await self._campaign(self._elector, self._elected_group)

    async def _campaign(
        self, elector: LeaderElector, group: RunnableGroup | None
    ) -> BaseException | None:
        """Run ``elector`` until a stop request (then drain ``group`` while still holding
        the Lease, so no successor starts before it stopped) or a lost Lease (returned as
        :class:`LeadershipLost`)."""
        stop_requested = self._stop_requested

        async def until_stopped() -> None:
            await stop_requested.wait()
            if group is not None:
                await group.stop()

        first, ended = await first_completed(elector.run(), until_stopped())
        if ended.exception() is not None:
            return ended.exception()
        if first == 0 and self._failure is None and not stop_requested.is_set():
            return LeadershipLost(f"manager {elector.name}: leadership lost")
        return None

    async def _lead(self) -> None:
        """The elector's leader work: run the leader-only runnables until cancelled
        (leadership lost, or the manager stopping), then drain them."""
        self.elected.set()
        logger.info("manager: leading; starting %s runnables", len(self._elected_group))
        try:
            # A lost lease ends the leader work here, and leaving the group drains it;
            # stopping drained it already.
            async with self._elected_group:
                await anyio.sleep_forever()
        finally:
            self.elected.clear()

    async def _lead_shard(self) -> None:
        """The shard Lease's work: run the sharded controllers until cancelled (the Lease
        lost, or the manager stopping), then drain them."""
        self.sharding.set()
        logger.info(
            "manager: holding shard %s; starting %s sharded controllers",
            self._seat.shard_elector.identity if self._seat is not None else "",
            len(self._shard_group),
        )
        seat = self._seat
        try:
            async with self._shard_group:
                if seat is not None and seat.mode == "ranges":
                    # Its slots, beside the controllers: kept until the Lease is lost or
                    # the manager stops, then the group drains the controllers.
                    await seat.slots.run()
                else:
                    await anyio.sleep_forever()
        finally:
            self.sharding.clear()

    @property
    def sharder(self) -> Sharder | None:
        """The ring's sharder while this replica runs it (it holds the sharder Lease)."""
        return None if self._seat is None else self._seat.sharder

    async def _shutdown(self) -> None:
        """What the runnable groups leave behind, stopped in reverse order: the runnables
        that never started, the factory, the endpoints. Runs to the end even if cancelled
        meanwhile (the cancellation is re-raised then)."""
        await self._elected_group.stop()
        await self._shard_group.stop()
        await self._unelected.stop()
        for controller in self._controllers:
            if controller.state is State.NEW:
                # Never started (a standby's): its queue took keys all the same.
                await finish_regardless(controller.queue.aclose())
        await finish_regardless(self._factory.shutdown())
        await finish_regardless(self.webhooks.close())
        for endpoint in reversed(self._endpoints):
            await finish_regardless(endpoint.close())

    # -- processes -------------------------------------------------------------------------

    async def run_until_signal(self) -> int:
        """Run until SIGTERM or SIGINT, then stop gracefully; the process's exit code.

        0 after a signal or :meth:`stop`; 1 when the caches did not sync, leadership was
        lost, or anything failed, with the cause logged and written to stderr (for a
        cache, the resource, namespace and last error of each unsynced informer). Signal
        handlers are installed on the running loop for the duration and removed after.
        """
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, self._on_signal, signum)
                installed.append(signum)
        try:
            await self.run()
        except (CacheSyncError, LeadershipLost) as error:
            report_exit(f"{type(error).__name__}: {error}")
            return 1
        except Exception as error:
            # Blind on purpose: any failure becomes the exit code, its cause on stderr.
            logger.error("manager failed", exc_info=error)
            report_exit(f"manager failed: {type(error).__name__}: {error}")
            return 1
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)
        return 0

    def _on_signal(self, signum: signal.Signals) -> None:
        logger.info("manager: %s received; stopping gracefully", signum.name)
        self.stop()

    @staticmethod
    def main(
        setup: Callable[[], Awaitable[Manager] | AbstractAsyncContextManager[Manager]],
    ) -> int:
        """Build a manager with ``setup()`` in a new event loop and run it until a signal:
        ``sys.exit(Manager.main(setup))``. Returns :meth:`run_until_signal`'s code.

        ``setup`` is an async function returning the manager, or returns an async context
        manager yielding it (``@contextlib.asynccontextmanager``), which is left after the
        manager stopped: the place to close a client it opened. A failure in ``setup`` is
        reported like one in the manager (exit code 1).
        """

        async def go() -> int:
            try:
                made = setup()
                if isinstance(made, contextlib.AbstractAsyncContextManager):
                    async with made as manager:
                        return await manager.run_until_signal()
                manager = await made
            except Exception as error:
                # Blind on purpose: a setup failure becomes the exit code, cause on stderr.
                logger.error("manager setup failed", exc_info=error)
                report_exit(f"manager setup failed: {type(error).__name__}: {error}")
                return 1
            return await manager.run_until_signal()

        return asyncio.run(go())


def _metrics_answer() -> Callable[[], Awaitable[Answer]]:
    """``/metrics`` from prometheus_client's default registry; ``RuntimeError`` now when
    prometheus_client is not installed."""
    try:
        exposition = importlib.import_module("prometheus_client")
    except ImportError as exc:
        raise RuntimeError(
            "metrics_address needs prometheus_client: pip install 'aioinformer[prometheus]'"
        ) from exc

    async def answer() -> Answer:
        body: bytes = exposition.generate_latest(exposition.REGISTRY)
        return Answer(200, body, exposition.CONTENT_TYPE_LATEST)

    return answer
