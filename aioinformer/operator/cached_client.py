"""Reads from informers' caches, writes to the API server, and reads its own writes.

Role: :class:`CachedClient` is the client an operator's reconcile uses for everything,
as controller-runtime's ``mgr.GetClient()`` is with ``ReadYourOwnWriteConsistencyEnabled``
on. Input: a :class:`~aioinformer.client.Client` and a
:class:`~aioinformer.factory.SharedInformerFactory`. Output: ``cached.resource(...)``,
a :class:`CachedResource` whose reads (``get``, ``list``) come from the cache, as the
lister returns them (plain dicts; the informer's ``model`` when it has one), and whose
writes (``create``, ``update``, ``patch``, ``delete``) go to the API server and return its
answer, as :class:`~aioinformer.client.ResourceClient`'s do.

Read your own writes: a read that follows a write of the same client waits until the
cache holds that write, so a reconcile never reads the state from before its own create,
update, patch or delete. After a create, ``get`` finds the object and ``list`` has it;
after an update or patch they have at least the version written; after a delete, ``get``
returns ``None`` and ``list`` leaves the object out, or, when finalizers keep the object,
shows it marked for deletion. :mod:`aioinformer.operator._own_writes` holds the rules (what a
delete's answer says and how it is awaited). A get waits only for the client's writes of
its key, a list for those in its namespace (all for all namespaces); writes whose answer
came after the read began, and other clients' writes, are not waited for. Writes never
wait.

Reads:

* come from ``factory.informer_for(resource)``, with the factory's namespace and
  selectors: one informer per resource, shared with every other part of the program that
  asks the factory for it. :meth:`CachedClient.resource` builds it (a started factory
  starts it at once), so a resource asked for before the factory starts syncs with the
  rest;
* wait for that informer's initial sync, at most ``sync_timeout`` seconds, then raise
  :class:`~aioinformer.errors.CacheSyncError` saying why (controller-runtime blocks
  likewise); ``RuntimeError`` if the factory has not been started;
* then wait for the client's own writes, at most ``timeout`` seconds, then raise
  :class:`~aioinformer.errors.CacheReadTimeout` naming the resource, the key and the
  resourceVersion or uid awaited. A read with nothing to wait for costs a dict lookup;
* outside the informer's namespace raise :class:`~aioinformer.errors.CacheScopeError`.

Namespaces are those of :class:`~aioinformer.client.ResourceClient`: the one given, else
the object's (for ``create`` and ``update``), else the resource's bound namespace (by
default the factory's, if it has one), else the config's. Task model: no tasks; every
call runs in the caller's task, on one event loop.

Example::

    cached = CachedClient(client, factory)        # or manager.cached_client
    config_maps = cached.resource("configmaps")
    await config_maps.create(settings, "default")
    assert await config_maps.get("settings", "default") is not None   # never stale
    await config_maps.delete("settings", "default")
    assert await config_maps.get("settings", "default") is None
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from aioinformer._kernel.clock import default_clock
from aioinformer.errors import CacheScopeError
from aioinformer.informer import wait_for_cache_sync
from aioinformer.labels import parse_field_selector, parse_label_selector
from aioinformer.operator._own_writes import OwnWrites, Scope

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic import BaseModel

    from aioinformer._kernel.clock import Clock
    from aioinformer.client import GVR, Client, PatchType, ResourceClient, ResourceInfo
    from aioinformer.factory import SharedInformerFactory
    from aioinformer.informer import SharedIndexInformer
    from aioinformer.labels import LabelSelector

__all__ = ["CachedClient", "CachedClientStatistics", "CachedResource"]


@dataclass(frozen=True, slots=True)
class CachedClientStatistics:
    """A snapshot of a :class:`CachedClient`'s read-your-own-writes bookkeeping."""

    tracked_versions: int
    """Objects whose written resourceVersion the next read of them still waits for."""
    tracked_deletions: int
    """Deleted objects (answered with a Status) the cache has not been seen dropping."""
    waits: int
    """Reads that had to wait for one of the client's writes."""
    timeouts: int
    """Reads that raised :class:`~aioinformer.errors.CacheReadTimeout`."""


class CachedClient:
    """Reads from ``factory``'s informers, writes through ``client``, and reads its own
    writes (see the module notes).

    ``timeout`` bounds, in seconds, how long a read waits for the cache to show the
    client's own writes; ``sync_timeout`` how long a read waits for a new informer's
    initial sync. Both are timed on ``clock`` (default: the event loop's; tests pass a
    ``FakeClock``). ``fail_fast`` (default true) makes a read raise
    :class:`~aioinformer.errors.CacheSyncError` at once when its informer's first list
    failed in a way no retry alone heals (a resource the server does not serve, a 401 or
    403, a refused connection); ``False`` waits up to ``sync_timeout`` for a fix, such as a
    CRD installed later. Writes are tracked per client: another ``CachedClient`` over the
    same factory does not wait for them.
    """

    def __init__(
        self,
        client: Client,
        factory: SharedInformerFactory,
        *,
        timeout: float = 10.0,
        sync_timeout: float = 120.0,
        clock: Clock | None = None,
        fail_fast: bool = True,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        if not sync_timeout > 0:
            raise ValueError(f"sync_timeout must be > 0 seconds, got {sync_timeout}")
        self._client = client
        self._factory = factory
        self._timeout = float(timeout)
        self._sync_timeout = float(sync_timeout)
        self._fail_fast = fail_fast
        self._clock = clock if clock is not None else default_clock
        # One record of this client's writes per informer it reads from.
        self._writes: dict[SharedIndexInformer, OwnWrites] = {}

    @property
    def client(self) -> Client:
        """The API client writes go through."""
        return self._client

    @property
    def factory(self) -> SharedInformerFactory:
        """The factory whose informers serve reads."""
        return self._factory

    @property
    def timeout(self) -> float:
        """Seconds a read waits for the cache to show the client's own writes."""
        return self._timeout

    def resource(
        self, resource: str | GVR | ResourceInfo, namespace: str | None = None
    ) -> CachedResource:
        """Reads and writes of ``resource`` (named as ``factory.informer_for`` and
        ``client.resource`` name it: ``"pods"``, ``"apps/v1/deployments"``, a
        :class:`~aioinformer.client.GVR`, a custom resource's plural). ``namespace`` is
        the default namespace of single-object requests (default: the factory's
        namespace, if it has one). Builds the resource's informer, which a started
        factory starts at once; ``RuntimeError`` once the factory has been shut down."""
        informer = self._factory.informer_for(resource)
        writes = self._writes.get(informer)
        if writes is None:
            writes = self._writes[informer] = OwnWrites(
                informer, resource=informer.name, scope=self._scope_of(informer)
            )
        return CachedResource(self, resource, informer, writes, namespace)

    def _scope_of(self, informer: SharedIndexInformer) -> Scope:
        for key, candidate in self._factory.informers().items():
            if candidate is informer:
                return Scope(
                    namespace=key.namespace,
                    label_selector=(
                        parse_label_selector(key.label_selector) if key.label_selector else None
                    ),
                    field_selector=(
                        parse_field_selector(key.field_selector) if key.field_selector else None
                    ),
                )
        raise RuntimeError(f"informer {informer.name} is not one of the factory's")

    async def _wait_synced(self, informer: SharedIndexInformer) -> None:
        if informer.has_synced():
            return
        if not self._factory.health().started:
            raise RuntimeError(
                f"cannot read {informer.name} from the cache: the informer factory has not "
                "been started (use 'async with factory:', or a Manager, which starts it)"
            )
        await wait_for_cache_sync(
            informer, timeout=self._sync_timeout, clock=self._clock, fail_fast=self._fail_fast
        )

    def statistics(self) -> CachedClientStatistics:
        """What the client still waits for, and how often reads waited or timed out."""
        writes = self._writes.values()
        return CachedClientStatistics(
            tracked_versions=sum(w.tracked_versions for w in writes),
            tracked_deletions=sum(w.tracked_deletions for w in writes),
            waits=sum(w.waits for w in writes),
            timeouts=sum(w.timeouts for w in writes),
        )

    def __repr__(self) -> str:
        return f"<CachedClient resources={len(self._writes)} timeout={self._timeout:g}s>"


class CachedResource:
    """Reads of one resource from its informer's cache, writes to the API server; made by
    :meth:`CachedClient.resource`. The signatures are
    :class:`~aioinformer.client.ResourceClient`'s; ``get`` returns ``None`` where the
    server would answer 404, as a lister does."""

    __slots__ = ("_api", "_informer", "_lister", "_namespace", "_owner", "_scope", "_writes")

    def __init__(
        self,
        owner: CachedClient,
        resource: str | GVR | ResourceInfo,
        informer: SharedIndexInformer,
        writes: OwnWrites,
        namespace: str | None,
    ) -> None:
        self._owner = owner
        self._informer = informer
        self._writes = writes
        self._scope = writes.scope
        self._namespace = namespace if namespace is not None else self._scope.namespace
        self._api = owner.client.resource(resource, self._namespace)
        self._lister = informer.lister()

    @property
    def informer(self) -> SharedIndexInformer:
        """The informer whose cache serves the reads."""
        return self._informer

    @property
    def api(self) -> ResourceClient:
        """The resource client the writes go through; its reads go to the server."""
        return self._api

    @property
    def namespace(self) -> str | None:
        """The default namespace of single-object requests (``None``: the config's)."""
        return self._namespace

    def _object_namespace(self, info: ResourceInfo, namespace: str | None) -> str | None:
        """Where a request on one object goes: the namespace given, else the bound one,
        else the config's (``None`` for a cluster-scoped resource), as ResourceClient."""
        if not info.namespaced:
            return None
        return namespace or self._namespace or self._owner.client.config.namespace

    def _check_scope(self, namespace: str | None) -> None:
        watched = self._scope.namespace
        if watched is not None and namespace is not None and namespace != watched:
            raise CacheScopeError(
                f"{self._informer.name}: namespace {namespace!r} is not in the cache, which "
                f"holds namespace {watched!r} only (the factory's namespace)"
            )

    # -- reads -----------------------------------------------------------------------------

    async def get(self, name: str, namespace: str | None = None) -> Any | None:
        """The cached object ``name`` (in ``namespace``, see the module notes), or
        ``None`` when the cache does not hold it, once the cache shows this client's
        writes of it."""
        info = await self._api.info()
        ns = self._object_namespace(info, namespace)
        self._check_scope(ns)
        owner = self._owner
        await owner._wait_synced(self._informer)
        await self._writes.wait_for_key(
            f"{ns}/{name}" if ns else name, timeout=owner._timeout, clock=owner._clock
        )
        return self._lister.get(name, ns or "")

    async def list(
        self,
        namespace: str | None = None,
        label_selector: str | LabelSelector | None = None,
    ) -> list[Any]:
        """The cached objects in ``namespace`` (default: the bound one, else all
        namespaces; ignored for a cluster-scoped resource) matching ``label_selector``,
        once the cache shows this client's writes there. A selector that does not parse
        raises :class:`~aioinformer.errors.SelectorError` before any wait."""
        selector = (
            parse_label_selector(label_selector)
            if isinstance(label_selector, str)
            else label_selector
        )
        info = await self._api.info()
        ns = (namespace or self._namespace) if info.namespaced else None
        self._check_scope(ns)
        owner = self._owner
        await owner._wait_synced(self._informer)
        await self._writes.wait_for_namespace(ns, timeout=owner._timeout, clock=owner._clock)
        return self._lister.list(ns, selector)

    # -- writes ----------------------------------------------------------------------------

    async def create(
        self,
        obj: Mapping[str, Any] | BaseModel,
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Create ``obj`` (see :meth:`ResourceClient.create
        <aioinformer.client.ResourceClient.create>`); later reads wait for it."""
        answer = await self._api.create(obj, namespace, field_manager=field_manager)
        self._writes.wrote(answer)
        return answer

    async def update(
        self,
        obj: Mapping[str, Any] | BaseModel,
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Replace ``obj``, or its ``subresource`` (see :meth:`ResourceClient.update
        <aioinformer.client.ResourceClient.update>`); later reads wait for it."""
        answer = await self._api.update(
            obj, namespace, field_manager=field_manager, subresource=subresource
        )
        self._writes.wrote(answer, check_scope=subresource != "scale")
        return answer

    async def patch(
        self,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Patch ``name`` (see :meth:`ResourceClient.patch
        <aioinformer.client.ResourceClient.patch>`); later reads wait for it."""
        answer = await self._api.patch(
            name,
            patch,
            namespace,
            patch_type=patch_type,
            field_manager=field_manager,
            force=force,
            subresource=subresource,
        )
        self._writes.wrote(answer, check_scope=subresource != "scale")
        return answer

    async def delete(
        self,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Delete ``name`` (see :meth:`ResourceClient.delete
        <aioinformer.client.ResourceClient.delete>`): returns the object (marked for
        deletion, or as deleted) or a ``Status``. Later reads no longer find the object,
        or find it marked when finalizers hold it."""
        info = await self._api.info()
        ns = self._object_namespace(info, namespace)
        key = f"{ns}/{name}" if ns else name
        watched = self._scope.namespace
        in_scope = ns is None or watched is None or ns == watched
        seen = self._writes.delete_sent(key) if in_scope else None
        answer: dict[str, Any] | None = None
        try:
            answer = await self._api.delete(
                name,
                namespace,
                grace_period_seconds=grace_period_seconds,
                propagation_policy=propagation_policy,
                preconditions=preconditions,
            )
        finally:
            self._writes.delete_done(key, seen, answer)
        return answer

    def __repr__(self) -> str:
        ns = "" if self._namespace is None else f" ns={self._namespace!r}"
        return f"<CachedResource {self._informer.name}{ns}>"
