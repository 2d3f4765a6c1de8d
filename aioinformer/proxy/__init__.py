"""The caching proxy: the list/watch API served to many clients from one upstream watch per
resource, with objects optionally rewritten on the way.

Role: a server of the Kubernetes list/watch API for chosen resources, in front of an API
server. Input: an upstream :class:`~aioinformer.client.Client`, the resources to serve, an
optional transform. Output: an HTTP(S) listener that kubectl, client-go programs, the
official Python client and this library's informers use as they would kube-apiserver.

How it works, per resource: a :class:`~aioinformer.reflector.Reflector` (the informer's
list/watch engine, with its relists on 410, backoff and inactivity deadline) writes into
a watch cache, which keeps the transformed objects, each encoded once, and a bounded
history of changes keyed by the upstream resourceVersions (see
:mod:`aioinformer.proxy._cache`). Every downstream LIST is a page of that cache, every
downstream WATCH a reader of its history: N downstream watchers cost one upstream watch,
and each event is encoded once and the same bytes written to every watcher it concerns.

The guarantees and their limits (docs/explanation/proxy.md on the documentation site):

* resourceVersions are the upstream's; a LIST's pages are one consistent snapshot; a
  WATCH resumes from any resourceVersion still in the history (``history_size`` events
  per resource), and an older one gets HTTP 200 and one ``ERROR`` event carrying the 410
  ``Expired`` Status, then the end of the stream, as kube-apiserver v1.36.2 answers.
* After an upstream relist, downstream watchers receive the differences (deletes of
  objects gone meanwhile included) and converge without relisting.
* The transform runs once per object change, before the change enters the history, so
  LIST, GET and WATCH agree.
* Shard selectors (KEP-5866's ``shardSelector``, as kube-apiserver v1.36 serves it behind
  its alpha ``ShardedListAndWatch`` gate) are served from the cache to every client,
  whatever the upstream's version: replicas that split a resource between them work
  against clusters that do not know the parameter.
* A downstream watcher that does not keep up is closed once ``watcher_buffer`` lines are
  queued for it; it never slows the others, and memory stays bounded.
* It is a cache, not etcd: a ``resourceVersion=""`` LIST reads the cache (as
  kube-apiserver's watch cache does for ``"0"``), not a quorum read; field selectors
  are ``metadata.name`` and ``metadata.namespace``; answers are JSON (no Table or
  protobuf); ``/openapi/v3`` names the served operations without schemas; writes are
  refused (405) or forwarded byte for byte (protobuf bodies included), and show once
  they come back through the upstream watch.

Task model: the proxy is a :class:`~aioinformer._kernel.lifecycle.Service`. Its run
(``async with``, :meth:`CachingProxy.start`, or ``run()``) resolves the resources, starts
one reflector task per resource and one bookmark task in a task group
(:class:`~aioinformer._kernel.runner.TaskRunner`), waits until every cache holds its
first list (``cache_sync_timeout``, else :class:`~aioinformer.errors.CacheSyncError`
naming each resource and its last error), then listens and is ready. Stopping
(:meth:`CachingProxy.close`, ``stop()``, leaving the block) ends every downstream watch,
stops listening and cancels the tasks. Should a reflector fail meanwhile, the proxy stops
and raises its error (from the ``async with`` block, cancelling its body). The upstream
client is the caller's: the proxy never closes it.

Example::

    def to_router(endpoints):
        for subset in endpoints.get("subsets", []):
            subset["addresses"] = [{"ip": "10.0.0.1"}]
        return endpoints

    async with Client.from_env() as client, CachingProxy(
        client, resources=["v1/endpoints"], transform=to_router, port=8001
    ) as proxy:
        print("serving at", proxy.url)
        await asyncio.Event().wait()
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import logging
import os
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import yaml
from aiohttp import web

from aioinformer._apiserver.lifecycle import Server
from aioinformer._apiserver.objects import ResourceType
from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.runner import TaskRunner, finish_regardless
from aioinformer.errors import (
    ApiError,
    CacheSyncError,
    TransportError,
    UnsyncedInformer,
    describe_error,
)
from aioinformer.proxy._cache import CacheStatistics, ProxyWatchCache, Transform
from aioinformer.proxy._server import Handler, WritePolicy
from aioinformer.reflector import Reflector, ReflectorOptions, ReflectorState

if TYPE_CHECKING:
    import ssl
    from collections.abc import AsyncIterator, Collection, Sequence

    from aioinformer.client import GVR, Client

__all__ = [
    "CachingProxy",
    "ProxyResourceStatistics",
    "ProxyStatistics",
    "Transform",
    "WritePolicy",
    "generate_token",
]

logger = logging.getLogger("aioinformer.proxy")

_SHUTDOWN_TIMEOUT: Final = 5.0


def generate_token() -> str:
    """A fresh random bearer token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class ProxyResourceStatistics:
    """One served resource, from :meth:`CachingProxy.statistics`."""

    resource: str
    """``pods``, ``deployments.apps``: the resource as messages name it."""
    objects: int
    """Objects downstream sees now (after the transform)."""
    resource_version: str
    """The newest upstream resourceVersion the cache has heard."""
    history: int
    """Events kept in the history."""
    watchers: int
    """Downstream watches open now."""
    events: int
    """Changes recorded since the start."""
    relists: int
    """Upstream relists after the first list (each diffed into events)."""
    slow_watchers_closed: int
    """Downstream watches closed because they fell ``watcher_buffer`` lines behind."""
    transform_errors: int
    """Object changes the transform failed on (those objects are hidden)."""
    upstream_watches: int
    """Watches the reflector opened upstream since the start (one at a time)."""


@dataclass(frozen=True, slots=True)
class ProxyStatistics:
    """The proxy's counters: one entry per served resource, and the requests answered."""

    resources: tuple[ProxyResourceStatistics, ...]
    requests: int

    def __getitem__(self, resource: str) -> ProxyResourceStatistics:
        for entry in self.resources:
            if resource in (entry.resource, entry.resource.split(".", 1)[0]):
                return entry
        raise KeyError(resource)


class CachingProxy(Server):
    """Serves the list/watch API of ``resources`` from watch caches (see the module notes).

    ``resources``: ``"v1/pods"``, ``"apps/v1/deployments"``, a plural (``"pods"``, a CRD's)
    or a :class:`~aioinformer.client.GVR`. ``namespace``: the one namespace served
    (``None``: all); requests for another get 403. ``transform(obj) -> obj | None``:
    rewrites (or, with ``None``, hides) each object. ``tokens``: the bearer tokens accepted
    (``None``: no authentication). ``ssl_context``: serve HTTPS; plain HTTP is refused on
    an address other than loopback. ``writes``: ``"deny"`` (405) or ``"forward"``.
    ``history_size``: events kept per resource. ``bookmark_interval``: seconds between
    BOOKMARKs to watchers that asked. ``watcher_buffer``: lines queued per watcher before
    it is closed. ``flush_interval``: seconds a change may wait so that the changes of
    that span reach each watcher in one write (0: at the next turn of the event loop).
    ``reflector``: the upstream reflectors' settings (a
    :class:`~aioinformer.reflector.ReflectorOptions`).
    """

    def __init__(
        self,
        client: Client,
        *,
        resources: Sequence[str | GVR],
        namespace: str | None = None,
        transform: Transform | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        tokens: Collection[str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        writes: WritePolicy = "deny",
        history_size: int = 10_000,
        bookmark_interval: float = 60.0,
        watcher_buffer: int = 10_000,
        flush_interval: float = 0.005,
        cache_sync_timeout: float = 120.0,
        clock: Clock | None = None,
        reflector: ReflectorOptions | None = None,
    ) -> None:
        if not resources:
            raise ValueError("CachingProxy needs at least one resource to serve")
        if writes not in ("deny", "forward"):
            raise ValueError(f"writes must be 'deny' or 'forward', not {writes!r}")
        if bookmark_interval <= 0:
            raise ValueError(f"bookmark_interval must be positive, not {bookmark_interval}")
        if cache_sync_timeout <= 0:
            raise ValueError(f"cache_sync_timeout must be positive, not {cache_sync_timeout}")
        if flush_interval < 0:
            raise ValueError(f"flush_interval must not be negative, not {flush_interval}")
        if history_size < 1 or watcher_buffer < 1:
            raise ValueError("history_size and watcher_buffer must be at least 1")
        if ssl_context is None and not _is_loopback(host):
            raise ValueError(
                f"refusing to serve plain HTTP on {host!r}: give an ssl_context, or listen "
                "on a loopback address (127.0.0.1, ::1, localhost)"
            )
        if tokens is not None and not all(token.strip() for token in tokens):
            raise ValueError("tokens must not be empty strings")
        self._client = client
        self._specs = tuple(resources)
        self._namespace = namespace
        self._transform = transform
        self._host = host
        self._port = port
        self._tokens = tuple(tokens) if tokens is not None else None
        self._ssl = ssl_context
        self._writes: WritePolicy = writes
        self._history_size = history_size
        self._bookmark_interval = bookmark_interval
        self._watcher_buffer = watcher_buffer
        self._flush_interval = flush_interval
        self._sync_timeout = cache_sync_timeout
        self._clock: Clock = clock if clock is not None else default_clock
        self._options = reflector
        self._caches: dict[tuple[str, str, str], ProxyWatchCache] = {}
        self._reflectors: list[tuple[str, Reflector]] = []
        self._runner: web.ServerRunner | None = None
        self._handler: Handler | None = None
        self._bound_port = 0

    def __repr__(self) -> str:
        where = self.url if self._runner is not None else "not listening"
        return f"<CachingProxy {', '.join(map(str, self._specs))} {where}>"

    # -- lifecycle -------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _serving(self) -> AsyncIterator[None]:
        """Resolve the resources, sync their caches, then listen; on exit, close (see the
        module notes).

        Raises what resolving raises (:class:`~aioinformer.errors.UnknownResourceError`,
        an :class:`~aioinformer.errors.ApiError`), and
        :class:`~aioinformer.errors.CacheSyncError` when a cache did not sync in time;
        nothing is left running then."""
        try:
            async with TaskRunner(name="proxy") as tasks:
                try:
                    await self._start_caches(tasks)
                    await self._wait_synced()
                    await self._listen()
                    yield
                finally:
                    await finish_regardless(self._shut_down())
        except BaseExceptionGroup as group:
            # One reflector failed (or the start did): raise its error, not the group.
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    async def _start_caches(self, tasks: TaskRunner) -> None:
        for spec in self._specs:
            info = await self._client.resolve(spec)
            gvr = info.gvr
            key = (gvr.group, gvr.version, gvr.resource)
            if key in self._caches:
                continue
            rt = ResourceType(
                gvr.group,
                gvr.version,
                gvr.resource,
                info.kind,
                info.namespaced,
                singular=info.singular,
                short_names=info.short_names,
            )
            cache = ProxyWatchCache(
                rt,
                transform=self._transform,
                history_size=self._history_size,
                watcher_buffer=self._watcher_buffer,
                flush_interval=self._flush_interval,
            )
            self._caches[key] = cache
            namespace = self._namespace if info.namespaced else None
            reflector = Reflector(
                self._client.resource(info, namespace),
                cache,
                name=f"proxy {rt.qualified}",
                clock=self._clock,
                options=self._options,
            )
            self._reflectors.append((str(spec), reflector))
        for _, reflector in self._reflectors:
            tasks.start_soon(reflector.run(), name=reflector.name)
        tasks.start_soon(self._bookmarks(), name="bookmarks")

    async def _wait_synced(self) -> None:
        try:
            async with asyncio.timeout(self._sync_timeout):
                for cache in self._caches.values():
                    await cache.synced.wait()
        except TimeoutError:
            unsynced = tuple(
                UnsyncedInformer(
                    name=reflector.name,
                    resource=spec,
                    namespace=self._namespace,
                    state="starting",
                    last_error=reflector.statistics().last_error,
                )
                for (spec, reflector), cache in zip(
                    self._reflectors, self._caches.values(), strict=True
                )
                if not cache.synced.is_set()
            )
            described = "; ".join(entry.describe() for entry in unsynced)
            raise CacheSyncError(
                f"caches did not sync within {self._sync_timeout:g}s: {described}",
                unsynced=unsynced,
                timeout=self._sync_timeout,
            ) from None

    async def _listen(self) -> None:
        handler = self._handler = Handler(
            self._caches,
            client=self._client,
            namespace=self._namespace,
            tokens=self._tokens,
            writes=self._writes,
            clock=self._clock,
            version_info=await self._upstream_version(),
            unready=self.unready,
        )
        runner = web.ServerRunner(
            web.Server(handler, access_log=None), handle_signals=False, shutdown_timeout=0
        )
        await runner.setup()
        self._runner = runner
        site = web.TCPSite(runner, self._host, self._port, ssl_context=self._ssl)
        await site.start()
        # aiohttp names no public accessor for the port picked for port 0.
        server: Any = site._server
        sockets = getattr(server, "sockets", None) or ()
        self._bound_port = handler.port = sockets[0].getsockname()[1] if sockets else self._port

    async def _upstream_version(self) -> dict[str, Any] | None:
        """The upstream's ``/version`` document, served as the proxy's own."""
        try:
            answer = await self._client.request("GET", "/version")
        except (ApiError, TransportError) as exc:
            logger.info("upstream /version unavailable (%s); serving the built-in one", exc)
            return None
        return answer if isinstance(answer, dict) else None

    async def _bookmarks(self) -> None:
        while True:
            await self._clock.sleep(self._bookmark_interval)
            for cache in self._caches.values():
                cache.bookmark_all()

    async def _shut_down(self) -> None:
        """End every downstream watch and stop listening; the run's task group then
        stops the upstream reflectors."""
        for cache in self._caches.values():
            cache.close_all()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- surface ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on (the one picked, when constructed with 0)."""
        return self._bound_port

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` (``https://`` with an ``ssl_context``)."""
        scheme = "https" if self._ssl is not None else "http"
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{scheme}://{host}:{self._bound_port}"

    def unready(self) -> list[str]:
        """Why the proxy is not ready, one line per resource whose upstream reflector is
        backing off or stopped (with its last error); empty when every watch is up.
        ``/readyz`` answers 503 with these lines while there are any."""
        reasons = []
        for spec, reflector in self._reflectors:
            stats = reflector.statistics()
            if stats.state in (ReflectorState.BACKING_OFF, ReflectorState.STOPPED):
                why = describe_error(stats.last_error) if stats.last_error else "no error"
                reasons.append(f"{spec}: {stats.state.value.lower()}: {why}")
        return reasons

    def statistics(self) -> ProxyStatistics:
        """A snapshot of every served resource's counters."""
        entries = []
        for (_, reflector), cache in zip(self._reflectors, self._caches.values(), strict=True):
            stats: CacheStatistics = cache.stats
            entries.append(
                ProxyResourceStatistics(
                    resource=cache.rt.qualified,
                    objects=len(cache),
                    resource_version=str(cache.rv),
                    history=len(cache.history),
                    watchers=len(cache.watchers),
                    events=stats.events,
                    relists=stats.relists,
                    slow_watchers_closed=stats.slow_watchers_closed,
                    transform_errors=stats.transform_errors,
                    upstream_watches=reflector.statistics().watches,
                )
            )
        handler = self._handler
        return ProxyStatistics(tuple(entries), handler.requests if handler is not None else 0)

    def kubeconfig(
        self, token: str | None = None, *, ca_pem: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:
        """A kubeconfig for a downstream client of this proxy: its URL, ``token`` (by
        default the first accepted one, if any) and, for HTTPS, ``ca_pem`` as the
        certificate authority."""
        if token is None and self._tokens:
            token = self._tokens[0]
        cluster: dict[str, Any] = {"server": self.url}
        if ca_pem is not None:
            cluster["certificate-authority-data"] = base64.b64encode(ca_pem.encode()).decode()
        user: dict[str, Any] = {"token": token} if token else {}
        context: dict[str, Any] = {"cluster": "aioinformer-proxy", "user": "aioinformer-proxy"}
        if namespace or self._namespace:
            context["namespace"] = namespace or self._namespace
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "aioinformer-proxy", "cluster": cluster}],
            "users": [{"name": "aioinformer-proxy", "user": user}],
            "contexts": [{"name": "aioinformer-proxy", "context": context}],
            "current-context": "aioinformer-proxy",
            "preferences": {},
        }

    def write_kubeconfig(
        self,
        path: str,
        token: str | None = None,
        *,
        ca_pem: str | None = None,
        namespace: str | None = None,
    ) -> None:
        """Write :meth:`kubeconfig` to ``path`` (created readable by its owner only)."""
        text = yaml.safe_dump(self.kubeconfig(token, ca_pem=ca_pem, namespace=namespace))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
