"""Controllers that come and go with their CustomResourceDefinition.

Role: an operator often reconciles a custom resource that may not be installed yet when
it starts, or that is removed while it runs (a Helm chart upgraded, a CRD deleted by
hand). A plain controller of it fails to sync, or retries a LIST that answers 404 until
the process stops. ``Manager.add_crd_controllers(name, setup)`` returns a
:class:`CRDControllers` that follows the CustomResourceDefinition called ``name``
(``"widgets.example.com"``), and while it exists runs what ``setup`` builds:

* when the CRD is **established** (its ``Established`` condition is ``"True"``, which
  kube-apiserver sets once it serves the resource), ``setup(scope)`` is called with a
  :class:`CRDScope`; the informers and controllers built through the scope start at once
  and run while the manager leads;
* while the CRD is being deleted (``deletionTimestamp`` set), they keep running: the
  API server deletes every object of the resource first, and a controller with a
  finalizer on them must be there to remove it, or the deletion never ends;
* once the CRD is **gone**, the controllers stop gracefully (in-flight reconciles
  finish, within the manager's ``graceful_shutdown_timeout``), and the informers the
  scope built leave the factory (:meth:`~aioinformer.SharedInformerFactory.remove_informer`,
  awaited: their watches closed and no handler call left running);
* a CRD created again (a new uid, even one the cache saw only after a relist) runs
  ``setup`` again, from scratch.

A failure of ``setup`` or of a controller it built stops the manager, as any controller's
does. The controllers are the leader's (with leader election they run on the replica
that leads) and are not sharded.

Input: the manager, the CRD's name and ``setup``. Output: the controllers while the CRD
is there (:attr:`CRDControllers.controllers`), in the manager's health under their names.
Task model: :meth:`CRDControllers.run` is a runnable of the manager, started once it
leads; it owns a :class:`~aioinformer.operator._runnables.RunnableGroup` per generation of
the CRD, in which the scope's controllers run. The CRD's informer (one object, by a
``metadata.name`` field selector) belongs to the manager's factory, built when
``add_crd_controllers`` is called, so a manager started after waits for it to sync.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from aioinformer._kernel.runner import first_completed
from aioinformer._objects.meta import name_of, uid_of
from aioinformer.operator._runnables import Runnable, RunnableGroup
from aioinformer.operator.controller import Controller

if TYPE_CHECKING:
    from aioinformer._kernel.clock import Clock
    from aioinformer.client import GVR, Client, ResourceInfo
    from aioinformer.factory import InformerKey, SharedInformerFactory
    from aioinformer.informer import SharedIndexInformer
    from aioinformer.operator.cached_client import CachedClient
    from aioinformer.operator.controller import Reconcile

__all__ = ["CRDControllers", "CRDHost", "CRDS_RESOURCE", "CRDScope", "Setup", "crd_established"]

logger = logging.getLogger(__name__)

CRDS_RESOURCE: Final = "apiextensions.k8s.io/v1/customresourcedefinitions"
"""The resource the CustomResourceDefinitions are."""

Setup = Callable[["CRDScope"], Awaitable[None] | None]
"""What builds a CRD's informers and controllers through its :class:`CRDScope`; sync or
async."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CRDHost:
    """What a manager lends the controllers of its CRDs (built by the manager)."""

    client: Client
    cached_client: CachedClient
    factory: SharedInformerFactory
    clock: Clock
    controller_settings: Mapping[str, Any]
    """The keyword arguments every controller of the manager is built with."""
    grace: Callable[[], float]
    """Seconds the controllers get to stop, asked when they stop: the manager's remaining
    deadline when it is stopping, a whole grace period when only the CRD went."""


def crd_established(crd: Any) -> bool:
    """Whether ``crd`` (a CustomResourceDefinition as the API serves it) has the condition
    ``Established`` with status ``"True"``: the API server serves its resource."""
    status = crd.get("status") if isinstance(crd, Mapping) else None
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    if not isinstance(conditions, list):
        return False
    return any(
        isinstance(c, Mapping) and c.get("type") == "Established" and c.get("status") == "True"
        for c in conditions
    )


class CRDScope:
    """What ``setup`` builds with, for one generation of a CRD (one uid): the manager's
    informers and controllers, remembered so that they stop and leave when the CRD goes.

    ``crd`` is the CustomResourceDefinition as the cache showed it when it was
    established (its ``spec.versions`` tell which versions are served)."""

    def __init__(self, host: CRDHost, crd: Mapping[str, Any]) -> None:
        self._host = host
        self.crd = crd
        self.client: Client = host.client
        """The manager's client."""
        self.cached_client: CachedClient = host.cached_client
        """The manager's cache-backed client, as reconciles use it."""
        self._controllers: list[Controller] = []
        self._owned: list[InformerKey] = []
        """Informers built through this scope that the factory did not hold before."""

    def informer_for(
        self, resource: str | GVR | ResourceInfo, **options: Any
    ) -> SharedIndexInformer:
        """The manager factory's informer (``manager.factory.informer_for``, same keywords).
        One the factory did not hold before is this scope's: it leaves the factory when
        the CRD goes. One it already held (shared with the rest of the operator) stays."""
        factory = self._host.factory
        before = set(factory.informers())
        informer = factory.informer_for(resource, **options)
        for key, built in factory.informers().items():
            if built is informer and key not in before:
                self._owned.append(key)
        return informer

    def controller(self, name: str, reconcile: Reconcile, **options: Any) -> Controller:
        """A :class:`~aioinformer.operator.Controller` as ``manager.controller`` builds it
        (the manager's sync settings and clock), run while the CRD is there."""
        controller = Controller(name, reconcile, **{**self._host.controller_settings, **options})
        self.add(controller)
        return controller

    def add(self, controller: Controller) -> None:
        """Run ``controller``, built by hand, while the CRD is there (it keeps the
        manager's clock, as ``Manager.add`` would have it)."""
        if any(c is controller for c in self._controllers):
            raise ValueError(f"controller {controller.name!r} was already added")
        controller._keep_time_of(self._host.clock)
        self._controllers.append(controller)

    @property
    def controllers(self) -> tuple[Controller, ...]:
        """The controllers built or added so far."""
        return tuple(self._controllers)

    @property
    def informers(self) -> tuple[InformerKey, ...]:
        """The keys of the informers this scope built (they leave the factory with it)."""
        return tuple(self._owned)


class CRDControllers:
    """The controllers of one CustomResourceDefinition, started when it is established and
    stopped when it goes (see the module docstring). Built by
    ``Manager.add_crd_controllers``; :attr:`serving` and :attr:`idle` tell where it is."""

    def __init__(self, host: CRDHost, name: str, setup: Setup) -> None:
        if not isinstance(name, str) or name.count(".") < 2:
            raise ValueError(f"a CustomResourceDefinition is named <plural>.<group>, got {name!r}")
        if not callable(setup):
            raise TypeError(f"setup must be callable with a CRDScope, got {setup!r}")
        self.name = name
        self._host = host
        self._setup = setup
        self._informer = host.factory.informer_for(
            CRDS_RESOURCE,
            namespace=None,
            label_selector=None,
            field_selector=f"metadata.name={name}",
            shard_selector=None,
        )
        self._changed = asyncio.Event()
        self._informer.add_event_handler(
            on_add=lambda _crd, _initial: self._changed.set(),
            on_update=lambda _old, _new: self._changed.set(),
            on_delete=lambda _crd: self._changed.set(),
            name=f"crd {name}",
        )
        self._scope: CRDScope | None = None
        self.generations = 0
        """How many times ``setup`` ran: once per uid of the CRD seen established."""
        self.serving = asyncio.Event()
        """Set while the CRD's controllers run (``setup`` has returned)."""
        self.idle = asyncio.Event()
        """Set while none do: before the CRD is established, and once what ran for it
        has stopped and its informers have left the factory."""
        self.idle.set()

    @property
    def controllers(self) -> tuple[Controller, ...]:
        """The controllers of the CRD's current generation; empty while it is absent."""
        return () if self._scope is None else self._scope.controllers

    def _established_uid(self) -> tuple[str, Mapping[str, Any]] | None:
        """The uid and object of the CRD when the cache shows it established, else None."""
        for crd in self._informer.indexer.list():
            if name_of(crd) == self.name and crd_established(crd):
                uid = uid_of(crd)
                if uid:
                    return uid, crd
        return None

    async def _next_change(self) -> None:
        await self._changed.wait()
        self._changed.clear()

    async def run(self) -> None:
        """Follow the CRD until cancelled: run a generation of controllers for each uid
        seen established, stopping it once that uid is no longer in the cache."""
        try:
            while True:
                seen = self._established_uid()
                if seen is None:
                    await self._next_change()
                    continue
                await self._generation(*seen)
        finally:
            self._scope = None

    async def _generation(self, uid: str, crd: Mapping[str, Any]) -> None:
        """Set up and run the controllers of the CRD with ``uid`` until it is gone (or one
        fails, which is raised), then stop them and take the scope's informers out."""
        host = self._host
        scope = self._scope = CRDScope(host, crd)
        self.generations += 1
        failures: list[BaseException] = []
        failed = asyncio.Event()

        def on_failure(_runnable: Runnable, error: BaseException) -> None:
            failures.append(error)
            failed.set()

        logger.info("crd %s (uid %s): established; setting up its controllers", self.name, uid)
        self.idle.clear()
        try:
            result = self._setup(scope)
            if inspect.isawaitable(result):
                await result
            group = RunnableGroup(
                f"crd {self.name}", on_failure=on_failure, clock=host.clock, grace=host.grace
            )
            for controller in scope.controllers:
                group.add(
                    Runnable(f"controller {controller.name}", controller.run, controller.stop)
                )
            async with group:
                self.serving.set()
                while self._present(uid) and not failed.is_set():
                    await first_completed(self._next_change(), failed.wait())
                self.serving.clear()
                if not failures:
                    logger.info("crd %s (uid %s): gone; stopping its controllers", self.name, uid)
        finally:
            self.serving.clear()
            for key in scope.informers:
                if key in host.factory.informers():
                    await host.factory.remove_informer(key)
            self._scope = None
            self.idle.set()
        if failures:
            raise failures[0]

    def _present(self, uid: str) -> bool:
        """Whether the cache still shows the CRD with ``uid`` (established or not: one
        being deleted keeps its controllers until it is gone)."""
        crds = self._informer.indexer.list()
        return any(name_of(crd) == self.name and uid_of(crd) == uid for crd in crds)

    def __repr__(self) -> str:
        state = "serving" if self.serving.is_set() else "idle"
        return f"<CRDControllers {self.name!r} {state} generations={self.generations}>"
