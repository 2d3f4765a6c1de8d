"""A loopback fake kube-apiserver on ``aiohttp.web``, faithful where informers look.

Role: the real client talks to it over real HTTP, so tests (ours and users') exercise
exactly the code that talks to a cluster. Input is HTTP requests on 127.0.0.1 and the
test's direct calls (``create``, ``compact``, fault injection); output is what
kube-apiserver answers: JSON objects, ``Status`` failures with the same codes, reasons and
details, LIST pages, and watch streams of chunked JSON lines.

Semantics served (see :class:`FakeAPIServer` for the test-facing API):

* one global resourceVersion counter; ``uid``, ``creationTimestamp``, ``generation`` set
  by the server; finalizers hold a deleted object until they are cleared;
* LIST with ``limit``/``continue`` (pages of one consistent snapshot; a token whose
  version was compacted answers 410 ``Expired``), ``resourceVersion`` and
  ``resourceVersionMatch`` (unset = latest, ``0`` = any, ``NotOlderThan``, ``Exact``; a
  version the server has not reached answers 504 ``Timeout`` with cause
  ``ResourceVersionTooLarge``), ``labelSelector`` and ``fieldSelector``;
* WATCH from a resourceVersion: a 200 stream of JSON lines; a version older than the
  bounded history gets one ``ERROR`` event carrying a 410 ``Expired`` Status inside the
  200 stream; ``timeoutSeconds`` ends the stream cleanly; ``allowWatchBookmarks`` adds a
  BOOKMARK every ``bookmark_interval``; ``sendInitialEvents=true`` sends the state as
  ADDED events then the ``k8s.io/initial-events-end`` BOOKMARK; an update that moves an
  object into or out of a watch's selectors arrives as ADDED or DELETED;
* create (409 ``AlreadyExists``), update with a resourceVersion precondition (409
  ``Conflict``), JSON merge, JSON and strategic merge patch, delete answering a
  ``Success`` Status; the ``status`` subresource (writes there change only ``status``,
  writes to the main resource never change it) and the ``scale`` subresource of
  deployments, replica sets, stateful sets and CRDs registered with it (an
  ``autoscaling/v1`` Scale; writes change only ``spec.replicas``);
* metadata-only answers negotiated from ``Accept`` as kube-apiserver does:
  ``as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`` turns a LIST into a
  ``PartialObjectMetadataList`` whose items carry kind and apiVersion,
  ``as=PartialObjectMetadata`` turns a GET, a write's answer and every watch event's
  object (bookmarks included) into a ``PartialObjectMetadata``; a list asked for as an
  object, or an object as a list, answers 406 ``NotAcceptable`` (a watch asked for as a
  list gets the full objects, as the real server's failed per-event conversion does);
* discovery (``/api``, ``/api/v1``, ``/apis``, ``/apis/{group}``,
  ``/apis/{group}/{version}``) and ``/version``, built-ins and runtime-registered CRDs;
* bearer-token authentication (401) and per-token rules (403 with kube-apiserver's
  message).

Task model: one ``aiohttp`` server on the caller's event loop. Watch handlers wait on
their watcher's buffer; a write fans out synchronously to every watcher (see
``_store``), and each handler writes whatever accumulated in one ``write()`` call, so a
burst of events costs one syscall per batch, not per event. Leaving ``async with`` ends
every watch, cancels the server's own timers and closes the listening socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

import orjson
from aiohttp import web

from aioinformer._clock import Clock, default_clock
from aioinformer.errors import SelectorError, api_error_from_status
from aioinformer.labels import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from aioinformer.testing._objects import object_key
from aioinformer.testing._patch import (
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from aioinformer.testing._resources import BUILTIN_RESOURCES, VERBS
from aioinformer.testing._store import (
    META_GROUP,
    Entry,
    ResourceType,
    StatusError,
    Store,
    Watcher,
    bookmark_line,
    status_body,
)

if TYPE_CHECKING:
    from aioinformer.client import Client

__all__ = [
    "ADMIN_TOKEN",
    "FakeAPIServer",
    "FaultRecord",
    "Faults",
    "RequestRecord",
    "Rule",
]

logger = logging.getLogger(__name__)

ADMIN_TOKEN: Final = "aioinformer-fake-admin-token"
"""The bearer token of the fake server's all-powerful user (``system:admin``)."""

_JSON: Final = "application/json"
_META_KINDS: Final = frozenset({"PartialObjectMetadata", "PartialObjectMetadataList"})
_META_VERSIONS: Final = frozenset({"v1", "v1beta1"})
_DEFAULT_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")
_PATCH_TYPES: Final = {
    "application/merge-patch+json": apply_merge_patch,
    "application/strategic-merge-patch+json": apply_strategic_merge_patch,
    "application/json-patch+json": apply_json_patch,
}
_VERSION_INFO: Final = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-aioinformer-fake",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T00:00:00Z",
    "goVersion": "go1.23.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}


# ---------------------------------------------------------------------------------------
# Authorization, request and fault records


@dataclass(frozen=True, slots=True)
class Rule:
    """An allow rule: any of ``verbs`` on any of ``resources`` in any of ``namespaces``.

    ``"*"`` in a field allows everything. ``resources`` are plurals (``"pods"``), with
    ``/status`` for the subresource (``"pods/status"``). ``namespaces`` may contain ``""``
    for cluster-wide requests (listing across namespaces, cluster-scoped resources).
    """

    verbs: Sequence[str]
    resources: Sequence[str]
    namespaces: Sequence[str] = ("*",)

    def allows(self, verb: str, resource: str, namespace: str) -> bool:
        """Whether this rule lets ``verb`` on ``resource`` in ``namespace`` through."""
        return (
            ("*" in self.verbs or verb in self.verbs)
            and ("*" in self.resources or resource in self.resources)
            and ("*" in self.namespaces or namespace in self.namespaces)
        )


@dataclass(frozen=True, slots=True)
class _Account:
    user: str
    rules: tuple[Rule, ...] | None  # None: everything is allowed


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request the server received, in arrival order."""

    method: str
    path: str
    query: Mapping[str, str]
    user: str | None = None


@dataclass(frozen=True, slots=True)
class FaultRecord:
    """One injected fault that took effect: ``kind`` names it, ``path`` is the request
    it hit (``""`` for server-wide faults), ``detail`` says how."""

    kind: str
    path: str
    detail: str
    at: float


@dataclass(slots=True)
class _WatchFault:
    kind: str  # "drop", "drop_abrupt", "close_mid_line", "garbage_line", "stall"
    after: int
    resource: str | None


@dataclass(slots=True)
class _Failure:
    status: int
    retry_after: float | None
    resource: str | None
    verb: str | None
    remaining: int


class Faults:
    """Scriptable misbehaviour of a :class:`FakeAPIServer`; every fault that takes effect
    is appended to :attr:`log`.

    Watch faults (``drop_watch_after``, ``close_mid_line``, ``garbage_line``,
    ``stall_watch``) arm the next watch opened (on ``resource`` when given); each arms one
    watch, and a watch that ends before the fault's turn came hands it on to the next
    one, so an armed fault always takes effect once. Request faults (``fail_next``,
    ``latency``) apply to every request they match. Connection faults
    (``refuse_connections``, ``accept_connections``) are async since they stop and
    restart the listening socket.
    """

    def __init__(self, server: FakeAPIServer) -> None:
        self._server = server
        self.log: list[FaultRecord] = []
        self._watch: list[_WatchFault] = []
        self._failures: list[_Failure] = []
        self._latency = 0.0
        self._changed = asyncio.Event()

    # -- arming --------------------------------------------------------------------------

    def drop_watch_after(
        self, n: int, *, resource: str | None = None, abrupt: bool = False
    ) -> None:
        """End the next watch after ``n`` lines: cleanly (as a server-side timeout does),
        or with ``abrupt=True`` by closing the connection without ending the body."""
        self._watch.append(_WatchFault("drop_abrupt" if abrupt else "drop", n, resource))

    def close_mid_line(self, after: int = 0, *, resource: str | None = None) -> None:
        """After ``after`` lines, send half a line and close the connection."""
        self._watch.append(_WatchFault("close_mid_line", after, resource))

    def garbage_line(self, after: int = 0, *, resource: str | None = None) -> None:
        """After ``after`` lines, send a line that is not JSON, then carry on."""
        self._watch.append(_WatchFault("garbage_line", after, resource))

    def stall_watch(self, after: int = 0, *, resource: str | None = None) -> None:
        """After ``after`` lines, keep the stream open but send nothing more (no events,
        no bookmarks), until the client gives up or the server stops."""
        self._watch.append(_WatchFault("stall", after, resource))

    def fail_next(
        self,
        k: int = 1,
        *,
        status: int = 429,
        retry_after: float | None = 1,
        resource: str | None = None,
        verb: str | None = None,
    ) -> None:
        """Answer the next ``k`` matching requests with ``status`` (429 ``TooManyRequests``
        with Retry-After, 500 ``InternalError``, 503 ``ServiceUnavailable``...)."""
        self._failures.append(_Failure(status, retry_after, resource, verb, k))

    def latency(self, seconds: float) -> None:
        """Delay every request by ``seconds`` (on the server's clock); 0 removes it."""
        self._latency = max(0.0, seconds)

    async def refuse_connections(self, seconds: float | None = None) -> None:
        """Stop listening and drop open connections: connects get ECONNREFUSED. After
        ``seconds`` (on the server's clock) or at :meth:`accept_connections`, listen on
        the same port again."""
        await self._server._stop_listening()
        self.record("refuse_connections", "", "" if seconds is None else f"for {seconds}s")
        if seconds is not None:
            self._server._spawn(self._reopen_after(seconds))

    async def _reopen_after(self, seconds: float) -> None:
        await self._server.clock.sleep(seconds)
        await self.accept_connections()

    async def accept_connections(self) -> None:
        """Listen again after :meth:`refuse_connections` (no-op when listening)."""
        if await self._server._start_listening():
            self.record("accept_connections", "", "")

    def clear(self) -> None:
        """Disarm every pending fault and remove latency (the log is kept)."""
        self._watch.clear()
        self._failures.clear()
        self._latency = 0.0

    # -- records ---------------------------------------------------------------------------

    def record(self, kind: str, path: str, detail: str) -> None:
        self.log.append(FaultRecord(kind, path, detail, time.monotonic()))
        logger.debug("fake apiserver fault %s on %r: %s", kind, path, detail)
        self._changed.set()

    def count(self, kind: str) -> int:
        """How many faults of ``kind`` took effect so far."""
        return sum(1 for record in self.log if record.kind == kind)

    async def wait_for(self, kind: str, count: int = 1, *, timeout: float = 5.0) -> None:
        """Wait (in real time, bounded) until ``count`` faults of ``kind`` took effect."""
        async with asyncio.timeout(timeout):
            while self.count(kind) < count:
                self._changed.clear()
                await self._changed.wait()

    # -- consumption by the server ---------------------------------------------------------

    def _take_watch_fault(self, rt: ResourceType) -> _WatchFault | None:
        for i, fault in enumerate(self._watch):
            if fault.resource is None or fault.resource in (rt.plural, rt.qualified):
                return self._watch.pop(i)
        return None

    def _return_watch_fault(self, fault: _WatchFault) -> None:
        """Re-arm ``fault`` first in line: its watch ended before the fault fired."""
        self._watch.insert(0, fault)

    def _take_failure(self, rt: ResourceType | None, verb: str) -> _Failure | None:
        for failure in self._failures:
            if failure.resource is not None and (
                rt is None or failure.resource not in (rt.plural, rt.qualified)
            ):
                continue
            if failure.verb is not None and failure.verb != verb:
                continue
            failure.remaining -= 1
            if failure.remaining <= 0:
                self._failures.remove(failure)
            return failure
        return None


# ---------------------------------------------------------------------------------------
# The server


@dataclass(slots=True)
class _Target:
    """A parsed resource request path."""

    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


@dataclass(eq=False, slots=True)
class _ActiveWatch:
    watcher: Watcher
    request: web.Request
    done: asyncio.Event = field(default_factory=asyncio.Event)


class FakeAPIServer:
    """A kube-apiserver double listening on 127.0.0.1 (see the module docstring).

    Lifecycle::

        async with FakeAPIServer() as server:
            server.url                  # "http://127.0.0.1:PORT"
            async with server.client() as client: ...   # aioinformer Client, admin token
            server.kubeconfig_path()    # a kubeconfig file for it (removed on exit)

    State, bypassing HTTP (synchronous; watches see the changes at once)::

        server.create(obj)                      # -> stored copy; AlreadyExists
        server.update(obj)                      # RV precondition when set; Conflict
        server.patch("pods", "default", "x", {"metadata": {"labels": {"a": "b"}}})
        server.delete("pods", "default", "x")   # -> last state
        server.get("pods", "default", "x")      # -> copy, NotFound
        server.objects("pods")                  # the truth, for convergence assertions
        server.resource_version                 # the global counter
        server.register_crd("example.com", "v1", "widgets", "Widget", namespaced=True)
        server.compact()                        # older versions now answer 410
        await server.restart(reset_history=True)

    Resources are named by plural (``"pods"``), ``"plural.group"``
    (``"deployments.apps"``) or ``"group/version/plural"`` (``"apps/v1/deployments"``,
    ``"v1/pods"``). Namespaces ``default``, ``kube-system``, ``kube-public`` and
    ``kube-node-lease`` exist from the start; namespaces are not enforced and deleting
    one does not delete its contents.

    Faults (:class:`Faults`) are under :attr:`faults`, e.g.
    ``server.faults.fail_next(2, status=429)``; each fault that took effect is in
    ``server.faults.log``. Every request is in :attr:`request_log`.

    Authentication: every request needs ``Authorization: Bearer <token>``; ``ADMIN_TOKEN``
    may do anything, :meth:`add_token` adds users limited by :class:`Rule` lists.

    Options (keyword-only): ``history_size`` events kept for watches from an older
    version (10 000); ``bookmark_interval`` seconds between BOOKMARKs (1.0; the real
    server sends about one a minute); ``clock`` for bookmark, watch-timeout, latency and
    reconnect timers (the event loop's by default; pass a ``FakeClock`` to drive them);
    ``too_large_rv_wait`` seconds a read at a future resourceVersion waits for it before
    answering 504 (0; the real server waits up to 3).

    Caveats: a single process's double, not a conformance-tested server. Strategic merge
    patch merges lists by ``name``-like keys without schemas; server-side apply, admission,
    validation beyond names, and garbage collection are not modelled.
    """

    def __init__(
        self,
        *,
        history_size: int = 10_000,
        bookmark_interval: float = 1.0,
        clock: Clock | None = None,
        too_large_rv_wait: float = 0.0,
        port: int = 0,
    ) -> None:
        self.clock: Clock = clock if clock is not None else default_clock
        self.bookmark_interval = bookmark_interval
        self.too_large_rv_wait = too_large_rv_wait
        self.faults = Faults(self)
        self.request_log: list[RequestRecord] = []
        self._store = Store(history_size=history_size)
        self._written = asyncio.Event()
        self._store.on_write = self._written.set
        self._resources: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        for rt in BUILTIN_RESOURCES:
            self._add_resource(rt)
        self._accounts: dict[str, _Account] = {ADMIN_TOKEN: _Account("system:admin", None)}
        self._port = port
        self._runner: web.AppRunner | None = None
        self._site: web.SockSite | None = None
        self._watches: set[_ActiveWatch] = set()
        self._watches_changed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._kubeconfigs: list[str] = []
        self._closing = False
        for namespace in _DEFAULT_NAMESPACES:
            self.create(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": namespace},
                    "status": {"phase": "Active"},
                }
            )

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Start serving (``async with`` calls it)."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=1.0,
        )
        await self._runner.setup()
        await self._start_listening()

    async def close(self) -> None:
        """End every watch, stop timers, stop listening, remove kubeconfig files."""
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for active in list(self._watches):
            active.watcher.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._site = None
        for path in self._kubeconfigs:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self._kubeconfigs.clear()

    async def _start_listening(self) -> bool:
        if self._site is not None or self._runner is None:
            return False
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", self._port))
        except OSError:
            sock.close()
            raise
        self._port = sock.getsockname()[1]
        self._site = web.SockSite(self._runner, sock)
        await self._site.start()
        return True

    async def _stop_listening(self) -> None:
        if self._site is not None:
            await self._site.stop()
            self._site = None
        self._drop_connections()

    def _drop_connections(self) -> None:
        for active in list(self._watches):
            active.watcher.close()
            transport = active.request.transport
            if transport is not None:
                transport.abort()
        server = self._runner.server if self._runner is not None else None
        if server is not None:
            for connection in list(server.connections):
                connection.force_close()

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def restart(self, *, reset_history: bool = True) -> None:
        """Simulate an API server restart: drop every connection and watch, then listen
        again. Objects survive (they live in etcd); with ``reset_history`` the watch
        history is lost, so watches and continue tokens from before answer 410."""
        await self._stop_listening()
        if reset_history:
            self._store.compact()
        self.faults.record("restart", "", f"reset_history={reset_history}")
        await self._start_listening()

    def __repr__(self) -> str:
        state = "listening" if self._site is not None else "not listening"
        return (
            f"<FakeAPIServer {self.url} {state} rv={self._store.rv} "
            f"watches={len(self._watches)} history={len(self._store.history)}>"
        )

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1 (stable across restarts)."""
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def resource_version(self) -> str:
        """The newest resourceVersion, as the servers writes it."""
        return str(self._store.rv)

    def client(self, *, token: str = ADMIN_TOKEN) -> Client:
        """An :class:`aioinformer.client.Client` for this server (use ``async with``)."""
        from aioinformer.client import Client
        from aioinformer.config import Config

        return Client(Config(host=self.url, token=token))

    def kubeconfig_path(self, *, token: str = ADMIN_TOKEN, namespace: str = "default") -> str:
        """Write a kubeconfig pointing at this server; the file is removed on exit."""
        import yaml

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "aioinformer-fake", "cluster": {"server": self.url}}],
            "users": [{"name": "aioinformer-fake-user", "user": {"token": token}}],
            "contexts": [
                {
                    "name": "aioinformer-fake",
                    "context": {
                        "cluster": "aioinformer-fake",
                        "user": "aioinformer-fake-user",
                        "namespace": namespace,
                    },
                }
            ],
            "current-context": "aioinformer-fake",
            "preferences": {},
        }
        fd, path = tempfile.mkstemp(prefix="aioinformer-kubeconfig-", suffix=".yaml")
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(config, handle, sort_keys=False)
        self._kubeconfigs.append(path)
        return path

    # -- resources -------------------------------------------------------------------------

    def _add_resource(self, rt: ResourceType) -> None:
        self._resources[(rt.group, rt.version, rt.plural)] = rt
        self._by_kind[(rt.api_version, rt.kind)] = rt

    def register_crd(
        self,
        group: str,
        version: str,
        plural: str,
        kind: str,
        *,
        namespaced: bool = True,
        status_subresource: bool = True,
        scale_subresource: bool = False,
        singular: str | None = None,
        short_names: Iterable[str] = (),
    ) -> None:
        """Serve a custom resource from now on (discovery included).

        ``scale_subresource`` serves ``/scale`` with the usual paths: ``spec.replicas``,
        ``status.replicas`` and ``status.selector``.
        """
        if not group:
            raise ValueError("a custom resource needs an API group")
        self._add_resource(
            ResourceType(
                group,
                version,
                plural,
                kind,
                namespaced,
                singular or kind.lower(),
                tuple(short_names),
                status_subresource,
                scale_subresource=scale_subresource,
            )
        )

    def resolve(self, resource: str) -> ResourceType:
        """The resource named ``pods``, ``deployments.apps`` or ``apps/v1/deployments``."""
        parts = resource.split("/")
        candidates: list[ResourceType]
        if len(parts) == 3:
            candidates = [
                rt
                for rt in self._resources.values()
                if (rt.group, rt.version, rt.plural) == tuple(parts)
            ]
        elif len(parts) == 2:
            candidates = [
                rt
                for rt in self._resources.values()
                if not rt.group and (rt.version, rt.plural) == tuple(parts)
            ]
        else:
            plural, _, group = resource.partition(".")
            candidates = [
                rt
                for rt in self._resources.values()
                if rt.plural == plural and (rt.group == group if group else True)
            ]
            if not group and len(candidates) > 1:
                core = [rt for rt in candidates if not rt.group]
                candidates = core or candidates
        if not candidates:
            raise KeyError(f"the fake API server does not serve {resource!r}")
        return candidates[0]

    def _resource_for(self, obj: Mapping[str, Any]) -> ResourceType:
        api_version = str(obj.get("apiVersion", ""))
        kind = obj.get("kind")
        rt = self._by_kind.get((api_version, str(kind)))
        if rt is not None:
            return rt
        raise KeyError(f"the fake API server does not serve {api_version} {kind}")

    # -- direct state access ---------------------------------------------------------------

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store a new object as a POST would (status kept); return the stored copy.

        Raises :class:`aioinformer.errors.AlreadyExists` for a taken name.
        """
        rt = self._resource_for(obj)
        data = _prepare_new(rt, orjson.loads(orjson.dumps(obj)), None)
        with _as_api_error():
            entry = self._store.create(rt, data)
        return _copy(rt, entry)

    def update(self, obj: Mapping[str, Any], *, subresource: str | None = None) -> dict[str, Any]:
        """Replace an object as a PUT would; a set ``metadata.resourceVersion`` is a
        precondition (:class:`aioinformer.errors.Conflict`)."""
        rt = self._resource_for(obj)
        data = orjson.loads(orjson.dumps(obj))
        if rt.namespaced:
            data["metadata"].setdefault("namespace", "default")
        with _as_api_error():
            entry = self._store.update(rt, data, subresource=subresource)
        return _copy(rt, entry)

    def patch(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Apply a ``merge``, ``strategic`` or ``json`` patch; return the new object."""
        rt = self.resolve(resource)
        content_type = {
            "merge": "application/merge-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "json": "application/json-patch+json",
        }[patch_type]
        with _as_api_error():
            entry = self._patch(
                rt, namespace if rt.namespaced else None, name, patch, content_type, subresource
            )
        return _copy(rt, entry)

    def delete(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        """Delete an object (mark it, if it has finalizers); return its last state."""
        rt = self.resolve(resource)
        with _as_api_error():
            entry = self._store.delete(rt, namespace if rt.namespaced else None, name)
        return _copy(rt, entry)

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        """A copy of one object; :class:`aioinformer.errors.NotFound` when absent."""
        rt = self.resolve(resource)
        with _as_api_error():
            entry = self._store.get(rt, namespace if rt.namespaced else None, name)
        return _copy(rt, entry)

    def objects(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of every object of ``resource`` (in ``namespace``), sorted by key."""
        rt = self.resolve(resource)
        result = []
        for entry in self._store.table(rt).ordered()[1]:
            if namespace is None or entry.namespace == namespace:
                result.append(_copy(rt, entry))
        return result

    def compact(self) -> None:
        """Forget all history: watches and exact reads at older versions answer 410."""
        self._store.compact()

    def add_token(
        self, token: str, *, user: str | None = None, rules: Iterable[Rule] | None = None
    ) -> None:
        """Accept ``token`` for ``user`` (default ``system:serviceaccount:default:<token>``),
        limited to ``rules`` (``None``: everything)."""
        name = user or f"system:serviceaccount:default:{token}"
        self._accounts[token] = _Account(name, None if rules is None else tuple(rules))

    def remove_token(self, token: str) -> None:
        """Stop accepting ``token`` (its requests answer 401 from now on)."""
        self._accounts.pop(token, None)

    async def wait_for_watchers(
        self, count: int = 1, *, resource: str | None = None, timeout: float = 5.0
    ) -> None:
        """Wait (in real time, bounded) until ``count`` watches are open (on ``resource``)."""
        rt = self.resolve(resource) if resource is not None else None
        async with asyncio.timeout(timeout):
            while sum(1 for a in self._watches if rt is None or a.watcher.rt.id == rt.id) < count:
                self._watches_changed.clear()
                await self._watches_changed.wait()

    @property
    def watch_count(self) -> int:
        """How many watch streams are open now."""
        return len(self._watches)

    # -- HTTP ------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        token = _bearer(request)
        account = self._accounts.get(token) if token is not None else None
        self.request_log.append(
            RequestRecord(
                request.method, request.path, query, account.user if account is not None else None
            )
        )
        try:
            latency = self.faults._latency
            if latency > 0:
                self.faults.record("latency", request.path, f"{latency}s")
                await self.clock.sleep(latency)
            if account is None:
                raise StatusError(status_body(401, "Unauthorized", "Unauthorized"))
            parts = [p for p in request.path.split("/") if p]
            if not parts or parts[0] not in ("api", "apis") or _is_discovery(parts):
                failure = self.faults._take_failure(None, "get")
                if failure is not None:
                    return self._fail(request, failure)
                return self._discovery(request, parts)
            target = self._parse_target(parts)
            verb = _verb(request, target)
            failure = self.faults._take_failure(target.rt, verb)
            if failure is not None:
                return self._fail(request, failure)
            self._authorize(account, verb, target)
            return await self._serve(request, verb, target, query)
        except StatusError as exc:
            return _status_response(exc)

    def _fail(self, request: web.Request, failure: _Failure) -> web.Response:
        code = failure.status
        headers: dict[str, str] = {}
        details: dict[str, Any] | None = None
        if code == 429:
            reason, message = "TooManyRequests", "Too many requests, please try again later."
        elif code == 503:
            reason, message = (
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            )
        elif code == 504:
            reason, message = "Timeout", "Timeout: the request timed out"
        elif code >= 500:
            reason, message = "InternalError", "Internal error occurred: injected failure"
        else:
            reason, message = "BadRequest", "injected failure"
        if failure.retry_after is not None and (code == 429 or code >= 500):
            seconds = failure.retry_after
            headers["Retry-After"] = str(int(seconds)) if seconds == int(seconds) else str(seconds)
            details = {"retryAfterSeconds": int(seconds)}
        self.faults.record("fail", request.path, f"{code} {reason}")
        return _status_response(StatusError(status_body(code, reason, message, details), headers))

    def _parse_target(self, parts: list[str]) -> _Target:
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) < 3:
                raise _not_served()
            group, version, rest = parts[1], parts[2], parts[3:]
        namespace: str | None = None
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and (group, version, rest[2]) in self._resources
            and self._resources[(group, version, rest[2])].namespaced
        ):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise _not_served()
        rt = self._resources.get((group, version, rest[0]))
        if rt is None:
            raise _not_served()
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        served = (sub == "status" and rt.status_subresource) or (
            sub == "scale" and rt.scale_subresource
        )
        if sub is not None and not served:
            raise _not_served()
        if rt.namespaced and name is not None and namespace is None:
            raise _not_served()
        if not rt.namespaced and namespace is not None:
            raise _not_served()
        return _Target(rt, namespace, name, sub)

    def _authorize(self, account: _Account, verb: str, target: _Target) -> None:
        if account.rules is None:
            return
        resource = target.rt.plural + (f"/{target.subresource}" if target.subresource else "")
        namespace = target.namespace or ""
        if any(rule.allows(verb, resource, namespace) for rule in account.rules):
            return
        rt = target.rt
        where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        subject = f'{rt.qualified} "{target.name}"' if target.name else rt.qualified
        message = (
            f'{subject} is forbidden: User "{account.user}" cannot {verb} resource '
            f'"{resource}" in API group "{rt.group}" {where}'
        )
        raise StatusError(status_body(403, "Forbidden", message, rt.details(target.name)))

    async def _serve(
        self, request: web.Request, verb: str, target: _Target, query: dict[str, str]
    ) -> web.StreamResponse:
        rt = target.rt
        # As on kube-apiserver, the Accept header is negotiated before anything happens,
        # but a conversion that does not fit the answer (a list as PartialObjectMetadata)
        # fails only when the answer is written, after a write request took effect.
        convert = _negotiate(request.headers.get("Accept", ""))
        if verb == "watch":
            return await self._watch(request, target, query, convert)
        if verb == "list":
            return await self._list(target, query, convert)
        if verb == "deletecollection":
            return await self._delete_collection(target, query, convert)
        if target.subresource == "scale":
            return await self._scale(request, verb, target, convert)
        if verb == "get":
            assert target.name is not None
            entry = self._store.get(rt, target.namespace, target.name)
            return _entry_response(rt, entry, convert)
        body = await request.read()
        if verb == "delete":
            assert target.name is not None
            return self._delete(target, body, convert)
        if verb == "patch":
            assert target.name is not None
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            if content_type not in _PATCH_TYPES:
                raise _unsupported_patch_type()
            patch = _decode_body(body)
            entry = self._patch(
                rt, target.namespace, target.name, patch, content_type, target.subresource
            )
            return _entry_response(rt, entry, convert)
        obj = _decode_body(body)
        if not isinstance(obj, dict):
            raise StatusError(status_body(400, "BadRequest", "the request body must be an object"))
        if verb == "create":
            if target.subresource is not None:
                raise _method_not_allowed()
            obj = _prepare_new(rt, obj, target.namespace)
            if rt.status_subresource and rt.plural != "namespaces":
                obj.pop("status", None)
            return _entry_response(rt, self._store.create(rt, obj), convert, status=201)
        # update
        assert target.name is not None
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            raise _invalid(rt, target.name, "metadata.name", "name is required")
        if meta.get("name") != target.name:
            raise StatusError(
                status_body(
                    400,
                    "BadRequest",
                    "the name of the object "
                    f"({meta.get('name')}) does not match the name on the URL "
                    f"({target.name})",
                )
            )
        _check_namespace(rt, meta, target.namespace)
        entry = self._store.update(rt, obj, subresource=target.subresource)
        return _entry_response(rt, entry, convert)

    def _patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        patch: Any,
        content_type: str,
        subresource: str | None,
    ) -> Entry:
        current = self._store.get(rt, namespace, name)
        apply = _PATCH_TYPES[content_type]
        try:
            target = {"apiVersion": rt.api_version, "kind": rt.kind, **current.decode()}
            patched = apply(target, patch)
        except PatchError as exc:
            raise StatusError(
                status_body(exc.code, "Invalid" if exc.code == 422 else "BadRequest", str(exc))
            ) from exc
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise _invalid(rt, name, "metadata", "the patch removed the metadata")
        meta = patched["metadata"]
        if meta.get("name") != name or meta.get("namespace") != namespace:
            raise _invalid(rt, name, "metadata.name", "field is immutable")
        # The patched object keeps the stored resourceVersion unless the patch set one,
        # which then acts as a precondition, as on the real server.
        return self._store.update(rt, patched, subresource=subresource)

    async def _scale(
        self, request: web.Request, verb: str, target: _Target, convert: _Conversion | None
    ) -> web.Response:
        """The ``scale`` subresource: an ``autoscaling/v1`` Scale read from the object, and
        writes that change only ``spec.replicas`` (the Scale's resourceVersion, when set,
        is a precondition on the object)."""
        rt = target.rt
        assert target.name is not None
        entry = self._store.get(rt, target.namespace, target.name)
        if verb == "get":
            return _scale_response(rt, entry, convert)
        if verb not in ("update", "patch"):
            raise _method_not_allowed()
        body = await request.read()
        current = _scale_of(rt, entry)
        if verb == "patch":
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            apply = _PATCH_TYPES.get(content_type)
            if apply is None:
                raise _unsupported_patch_type()
            try:
                scale = apply(current, _decode_body(body))
            except PatchError as exc:
                raise StatusError(
                    status_body(exc.code, "Invalid" if exc.code == 422 else "BadRequest", str(exc))
                ) from exc
        else:
            scale = _decode_body(body)
        if not isinstance(scale, dict):
            raise StatusError(status_body(400, "BadRequest", "the request body must be an object"))
        raw_meta = scale.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        if meta.get("name", target.name) != target.name:
            raise StatusError(
                status_body(
                    400,
                    "BadRequest",
                    f"the name of the object ({meta.get('name')}) does not match the name on "
                    f"the URL ({target.name})",
                )
            )
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            scale_rt = ResourceType("autoscaling", "v1", "scale", "Scale", rt.namespaced)
            raise _invalid(
                scale_rt, target.name, "spec.replicas", f"{replicas}: must be a non-negative int"
            )
        obj = entry.decode()
        obj.setdefault("spec", {})["replicas"] = replicas
        obj["metadata"]["resourceVersion"] = meta.get("resourceVersion") or str(entry.rv)
        return _scale_response(rt, self._store.update(rt, obj), convert)

    def _delete(self, target: _Target, body: bytes, convert: _Conversion | None) -> web.Response:
        rt = target.rt
        assert target.name is not None
        precondition_rv: str | None = None
        precondition_uid: str | None = None
        if body.strip():
            options = _decode_body(body)
            preconditions = options.get("preconditions") if isinstance(options, dict) else None
            if isinstance(preconditions, dict):
                precondition_rv = preconditions.get("resourceVersion")
                precondition_uid = preconditions.get("uid")
        entry = self._store.delete(
            rt,
            target.namespace,
            target.name,
            precondition_rv=precondition_rv,
            precondition_uid=precondition_uid,
        )
        if entry.deleting and self._exists(rt, entry):
            return _entry_response(rt, entry, convert)
        details = rt.details(target.name)
        details["uid"] = entry.uid
        body_out = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }
        return web.Response(body=orjson.dumps(body_out), content_type=_JSON)

    def _exists(self, rt: ResourceType, entry: Entry) -> bool:
        key = object_key(entry.namespace, entry.name)
        return key in self._store.table(rt).entries

    async def _delete_collection(
        self, target: _Target, query: dict[str, str], convert: _Conversion | None
    ) -> web.Response:
        rt = target.rt
        labels, fields = _selectors(rt, query)
        result = self._store.list(
            rt,
            namespace=target.namespace,
            label_selector=labels,
            field_selector=fields,
            resource_version=None,
            resource_version_match=None,
            limit=None,
            continue_=None,
        )
        deleted = [
            self._store.delete(rt, listed.namespace, listed.name) for listed in result.entries
        ]
        return self._list_response(rt, deleted, self._store.rv, None, None, convert)

    async def _list(
        self, target: _Target, query: dict[str, str], convert: _Conversion | None
    ) -> web.Response:
        rt = target.rt
        labels, fields = _selectors(rt, query)
        limit = _int_param(query, "limit")
        rv = query.get("resourceVersion")
        match = query.get("resourceVersionMatch")
        _validate_rv_match(rv, match, watch=False, send_initial_events=None)
        if rv and self.too_large_rv_wait > 0 and not query.get("continue"):
            await self._wait_for_rv(rv)
        result = self._store.list(
            rt,
            namespace=target.namespace,
            label_selector=labels,
            field_selector=fields,
            resource_version=rv,
            resource_version_match=match,
            limit=limit,
            continue_=query.get("continue") or None,
        )
        return self._list_response(
            rt, result.entries, result.rv, result.continue_, result.remaining, convert
        )

    async def _wait_for_rv(self, text: str) -> None:
        try:
            wanted = int(text)
        except ValueError:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.too_large_rv_wait):
                while self._store.rv < wanted:
                    self._written.clear()
                    await self._written.wait()

    @staticmethod
    def _list_response(
        rt: ResourceType,
        entries: list[Entry],
        rv: int,
        token: str | None,
        remaining: int | None,
        convert: _Conversion | None,
    ) -> web.Response:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if token:
            meta["continue"] = token
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        if convert is None:
            head = {"kind": rt.kind + "List", "apiVersion": rt.api_version, "metadata": meta}
            items = [entry.item for entry in entries]
        elif convert.kind == "PartialObjectMetadataList":
            # Unlike a typed list's, the items of a PartialObjectMetadataList carry their
            # own kind and apiVersion.
            head = {"kind": convert.kind, "apiVersion": convert.api_version, "metadata": meta}
            items = [entry.partial(convert.api_version) for entry in entries]
        else:
            raise _not_acceptable(
                f"you requested {convert.kind}, but the requested object is a list ({rt.kind}List)"
            )
        encoded = orjson.dumps(head)
        body = b"".join((encoded[:-1], b',"items":[', b",".join(items), b"]}"))
        return web.Response(body=body, content_type=_JSON)

    # -- watch -------------------------------------------------------------------------------

    async def _watch(
        self,
        request: web.Request,
        target: _Target,
        query: dict[str, str],
        convert: _Conversion | None,
    ) -> web.StreamResponse:
        rt = target.rt
        labels, fields = _selectors(rt, query)
        rv = query.get("resourceVersion")
        match = query.get("resourceVersionMatch")
        send_initial = _bool_param(query, "sendInitialEvents")
        bookmarks = _bool_param(query, "allowWatchBookmarks") is True
        _validate_rv_match(rv, match, watch=True, send_initial_events=send_initial)
        if send_initial and not bookmarks:
            raise _invalid_options(
                "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting "
                "allowWatchBookmarks=true"
            )
        timeout = _int_param(query, "timeoutSeconds")
        if target.name is not None:
            name_field = parse_field_selector(f"metadata.name={target.name}")
            fields = (
                name_field
                if fields is None
                else FieldSelector(
                    tuple(
                        sorted(fields.requirements + name_field.requirements, key=lambda r: r.field)
                    )
                )
            )
        response = web.StreamResponse(status=200, headers={"Content-Type": _JSON})
        response.enable_chunked_encoding()
        if send_initial:
            initial = True
        elif send_initial is None:
            initial = not rv or rv == "0"
        else:
            initial = False
        try:
            watcher = self._store.open_watch(
                rt,
                namespace=target.namespace,
                label_selector=labels,
                field_selector=fields,
                resource_version=rv,
                initial_events=initial,
                initial_events_end=bool(send_initial),
                # kube-apiserver converts each event's object on its own: asked for
                # PartialObjectMetadataList, the conversion fails and it sends the objects
                # unconverted.
                as_meta=(
                    convert.api_version
                    if convert is not None and convert.kind == "PartialObjectMetadata"
                    else None
                ),
            )
        except StatusError as exc:
            if exc.code != 410:
                raise
            try:
                await response.prepare(request)
                await response.write(
                    b'{"type":"ERROR","object":' + orjson.dumps(exc.status) + b"}\n"
                )
                await response.write_eof()
            except ConnectionError:
                logger.debug("watch client on %s went away before its 410", request.path)
            return response
        active = _ActiveWatch(watcher, request)
        self._watches.add(active)
        self._watches_changed.set()
        try:
            await response.prepare(request)
            await self._stream(request, response, watcher, timeout=timeout, bookmarks=bookmarks)
        except ConnectionError:
            logger.debug("watch client on %s went away", request.path)
        finally:
            self._store.close_watch(watcher)
            self._watches.discard(active)
            self._watches_changed.set()
        return response

    async def _stream(
        self,
        request: web.Request,
        response: web.StreamResponse,
        watcher: Watcher,
        *,
        timeout: int | None,
        bookmarks: bool,
    ) -> None:
        clock = self.clock
        start = clock.monotonic()
        end = start + timeout if timeout else None
        interval = self.bookmark_interval
        next_bookmark = start + interval if bookmarks else None
        fault = self.faults._take_watch_fault(watcher.rt)
        sent = 0
        try:
            while True:
                if end is not None and clock.monotonic() >= end:
                    break
                if watcher.buffer:
                    batch = watcher.buffer
                    watcher.buffer = []
                    if fault is not None and sent + len(batch) >= fault.after:
                        cut = fault.after - sent
                        if cut:
                            await response.write(b"".join(batch[:cut]))
                        sent += cut
                        applied, fault = fault, None
                        outcome = await self._apply_watch_fault(
                            request, response, watcher, applied, batch[cut:]
                        )
                        if outcome == "end":
                            break
                        if outcome == "abort":
                            return
                        continue
                    await response.write(b"".join(batch))
                    sent += len(batch)
                    continue
                if watcher.closed or self._closing:
                    break
                now = clock.monotonic()
                if fault is not None and fault.after <= sent:
                    applied, fault = fault, None
                    outcome = await self._apply_watch_fault(request, response, watcher, applied, [])
                    if outcome == "end":
                        break
                    if outcome == "abort":
                        return
                    continue
                if next_bookmark is not None and now >= next_bookmark:
                    # Everything up to the newest write was offered to this watcher (its
                    # buffer is empty), so that version is safe to resume from.
                    rv = max(self._store.rv, watcher.min_rv)
                    await response.write(bookmark_line(watcher.rt, rv, as_meta=watcher.as_meta))
                    sent += 1
                    next_bookmark = now + interval
                    continue
                deadlines = [d for d in (end, next_bookmark) if d is not None]
                delay = min(deadlines) - now if deadlines else None
                watcher.wake.clear()
                await self._wait(watcher.wake, delay)
        finally:
            if fault is not None:
                # The watch ended before the fault's turn: the next watch gets it.
                self.faults._return_watch_fault(fault)
        if not self._aborted(request):
            await response.write_eof()

    @staticmethod
    def _aborted(request: web.Request) -> bool:
        transport = request.transport
        return transport is None or transport.is_closing()

    async def _apply_watch_fault(
        self,
        request: web.Request,
        response: web.StreamResponse,
        watcher: Watcher,
        fault: _WatchFault,
        rest: list[bytes],
    ) -> str:
        kind = fault.kind
        path = request.path
        if kind == "garbage_line":
            self.faults.record("garbage_line", path, f"after {fault.after} lines")
            await response.write(b"{this is not json at all\n" + b"".join(rest))
            return "continue"
        if kind == "drop":
            self.faults.record("drop_watch", path, f"after {fault.after} lines")
            return "end"
        if kind == "drop_abrupt" or kind == "close_mid_line":
            if kind == "close_mid_line":
                line = rest[0] if rest else b'{"type":"MODIFIED","object":{"kind":"Status"}}\n'
                self.faults.record("close_mid_line", path, f"after {fault.after} lines")
                await response.write(line[: max(1, len(line) // 2)])
            else:
                self.faults.record("drop_watch", path, f"abruptly after {fault.after} lines")
            self._abort(request, watcher)
            return "abort"
        # stall: nothing more on this stream until it is closed from either side
        self.faults.record("stall_watch", path, f"after {fault.after} lines")
        while not watcher.closed and not self._closing:
            watcher.buffer.clear()
            watcher.wake.clear()
            await watcher.wake.wait()
        return "end"

    @staticmethod
    def _abort(request: web.Request, watcher: Watcher) -> None:
        transport = request.transport
        if transport is not None:
            transport.abort()
        watcher.close()

    async def _wait(self, event: asyncio.Event, delay: float | None) -> None:
        if delay is None:
            await event.wait()
            return
        if delay <= 0:
            return
        if self.clock is default_clock:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await event.wait()
            return
        waiter = asyncio.ensure_future(event.wait())
        sleeper = asyncio.ensure_future(self.clock.sleep(delay))
        try:
            await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiter, sleeper):
                task.cancel()
            await asyncio.gather(waiter, sleeper, return_exceptions=True)

    # -- discovery ---------------------------------------------------------------------------

    def _discovery(self, request: web.Request, parts: list[str]) -> web.Response:
        if request.method != "GET":
            raise _method_not_allowed()
        body: dict[str, Any]
        if parts == ["version"]:
            body = dict(_VERSION_INFO)
        elif parts in (["healthz"], ["livez"], ["readyz"]):
            return web.Response(text="ok", content_type="text/plain")
        elif parts == ["api"]:
            body = {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self._port}"}
                ],
            }
        elif parts == ["api", "v1"]:
            body = self._resource_list("", "v1")
        elif parts == ["apis"]:
            body = {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [self._group(g) for g in self._groups()],
            }
        elif len(parts) == 2 and parts[0] == "apis" and parts[1] in self._groups():
            body = {"kind": "APIGroup", "apiVersion": "v1", **self._group(parts[1])}
        elif (
            len(parts) == 3
            and parts[0] == "apis"
            and any(
                (rt.group, rt.version) == (parts[1], parts[2]) for rt in self._resources.values()
            )
        ):
            body = self._resource_list(parts[1], parts[2])
        else:
            raise _not_served()
        return web.Response(body=orjson.dumps(body), content_type=_JSON)

    def _groups(self) -> list[str]:
        return sorted({rt.group for rt in self._resources.values() if rt.group})

    def _group(self, group: str) -> dict[str, Any]:
        versions = sorted(
            {rt.version for rt in self._resources.values() if rt.group == group}, reverse=True
        )
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources: list[dict[str, Any]] = []
        for rt in self._resources.values():
            if (rt.group, rt.version) != (group, version):
                continue
            entry: dict[str, Any] = {
                "name": rt.plural,
                "singularName": rt.singular,
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(VERBS),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            resources.append(entry)
            if rt.status_subresource:
                resources.append(
                    {
                        "name": f"{rt.plural}/status",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": rt.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
            if rt.scale_subresource:
                resources.append(
                    {
                        "name": f"{rt.plural}/scale",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "group": "autoscaling",
                        "version": "v1",
                        "kind": "Scale",
                        "verbs": ["get", "patch", "update"],
                    }
                )
        group_version = f"{group}/{version}" if group else version
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": resources,
        }


# ---------------------------------------------------------------------------------------
# Request helpers


@contextlib.contextmanager
def _as_api_error() -> Iterator[None]:
    try:
        yield
    except StatusError as exc:
        raise api_error_from_status(exc.status) from None


def _copy(rt: ResourceType, entry: Entry) -> dict[str, Any]:
    """A private copy of a stored object, decoded from its stored encoding."""
    result: dict[str, Any] = orjson.loads(entry.full(rt))
    return result


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _is_discovery(parts: list[str]) -> bool:
    if parts[0] == "api":
        return len(parts) <= 2
    return len(parts) <= 3


def _verb(request: web.Request, target: _Target) -> str:
    method = request.method
    if method == "GET":
        if target.name is not None:
            return "get"
        return "watch" if _bool_param(request.query, "watch") else "list"
    if method == "POST" and target.name is None:
        return "create"
    if method == "PUT" and target.name is not None:
        return "update"
    if method == "PATCH" and target.name is not None:
        return "patch"
    if method == "DELETE":
        return "delete" if target.name is not None else "deletecollection"
    raise _method_not_allowed()


def _status_response(exc: StatusError) -> web.Response:
    return web.Response(
        body=orjson.dumps(exc.status), status=exc.code, content_type=_JSON, headers=exc.headers
    )


def _entry_response(
    rt: ResourceType, entry: Entry, convert: _Conversion | None = None, *, status: int = 200
) -> web.Response:
    if convert is None:
        body = entry.full(rt)
    elif convert.kind == "PartialObjectMetadata":
        body = entry.partial(convert.api_version)
    else:
        raise _not_acceptable(
            f"you requested {convert.kind}, but the requested object is not a list ({rt.kind})"
        )
    return web.Response(body=body, status=status, content_type=_JSON)


@dataclass(frozen=True, slots=True)
class _Conversion:
    """What an ``Accept: application/json;as=<kind>;g=meta.k8s.io;v=<version>`` asks for:
    ``kind`` is ``PartialObjectMetadata`` or ``PartialObjectMetadataList``,
    ``api_version`` ``meta.k8s.io/v1`` or ``meta.k8s.io/v1beta1``."""

    kind: str
    api_version: str


def _negotiate(accept: str) -> _Conversion | None:
    """The answer's form for an Accept header, as kube-apiserver negotiates it.

    ``None`` means the resource's own JSON. Media ranges are tried by falling ``q`` (in
    header order for equal ones); a range the fake cannot serve (protobuf, YAML, ``Table``
    or an unknown conversion) is skipped. No servable range answers 406 ``NotAcceptable``.
    """
    if not accept.strip():
        return None
    ranges: list[tuple[float, int, str, dict[str, str]]] = []
    for position, clause in enumerate(accept.split(",")):
        media, *raw_params = (part.strip() for part in clause.split(";"))
        params: dict[str, str] = {}
        for raw in raw_params:
            key, _, value = raw.partition("=")
            params[key.strip()] = value.strip().strip('"')
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 0.0
        if quality > 0:
            ranges.append((-quality, position, media.lower(), params))
    for _, _, media, params in sorted(ranges, key=lambda r: (r[0], r[1])):
        if media not in (_JSON, "application/*", "*/*"):
            continue
        kind = params.get("as")
        if kind is None:
            return None
        version = params.get("v", "")
        if kind in _META_KINDS and params.get("g") == META_GROUP and version in _META_VERSIONS:
            return _Conversion(kind, f"{META_GROUP}/{version}")
    raise _not_acceptable(f"only the following media types are accepted: {_JSON}")


def _not_acceptable(message: str) -> StatusError:
    return StatusError(status_body(406, "NotAcceptable", message))


def _unsupported_patch_type() -> StatusError:
    return StatusError(
        status_body(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types "
            f"include: {', '.join(sorted(_PATCH_TYPES))}",
        ),
    )


def _label_selector_text(selector: Any) -> str:
    """A ``LabelSelector`` object as the selector string a Scale's status carries."""
    if not isinstance(selector, dict):
        return ""
    terms: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        terms.append((key, f"{key}={value}"))
    operators = {"In": "in", "NotIn": "notin"}
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key", ""), expression.get("operator")
        if operator in operators:
            values = ",".join(sorted(expression.get("values") or ()))
            terms.append((key, f"{key} {operators[operator]} ({values})"))
        elif operator == "Exists":
            terms.append((key, key))
        elif operator == "DoesNotExist":
            terms.append((key, "!" + key))
    return ",".join(text for _, text in sorted(terms))


def _scale_of(rt: ResourceType, entry: Entry) -> dict[str, Any]:
    """The ``autoscaling/v1`` Scale of a stored object."""
    obj = entry.decode()
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    scale_meta = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    # The API server defaults a built-in workload's spec.replicas to 1; the fake does not
    # default, so the Scale does. A custom resource without the field reports 0.
    default = 1 if rt.group == "apps" else 0
    scale_status: dict[str, Any] = {"replicas": status.get("replicas", 0)}
    selector = _label_selector_text(spec.get("selector"))
    if not selector and isinstance(status.get("selector"), str):
        selector = status["selector"]
    if selector:
        scale_status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": spec.get("replicas", default)},
        "status": scale_status,
    }


def _scale_response(rt: ResourceType, entry: Entry, convert: _Conversion | None) -> web.Response:
    scale = _scale_of(rt, entry)
    if convert is not None:
        if convert.kind != "PartialObjectMetadata":
            raise _not_acceptable(
                f"you requested {convert.kind}, but the requested object is not a list (Scale)"
            )
        scale = {
            "kind": convert.kind,
            "apiVersion": convert.api_version,
            "metadata": scale["metadata"],
        }
    return web.Response(body=orjson.dumps(scale), content_type=_JSON)


def _not_served() -> StatusError:
    return StatusError(
        status_body(404, "NotFound", "the server could not find the requested resource", {})
    )


def _method_not_allowed() -> StatusError:
    return StatusError(
        status_body(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            {},
        )
    )


def _invalid(rt: ResourceType, name: str | None, path: str, message: str) -> StatusError:
    details = rt.details(name)
    details["kind"] = rt.kind
    details["causes"] = [{"reason": "FieldValueInvalid", "message": message, "field": path}]
    return StatusError(
        status_body(
            422,
            "Invalid",
            f'{rt.kind} "{name or ""}" is invalid: {path}: Invalid value: {message}',
            details,
        )
    )


def _invalid_options(message: str) -> StatusError:
    return StatusError(
        status_body(
            422,
            "Invalid",
            f'ListOptions.meta.k8s.io "" is invalid: {message}',
            {"group": "meta.k8s.io", "kind": "ListOptions"},
        )
    )


def _validate_rv_match(
    rv: str | None, match: str | None, *, watch: bool, send_initial_events: bool | None
) -> None:
    if match not in (None, "", "Exact", "NotOlderThan"):
        raise _invalid_options(
            f'resourceVersionMatch: Unsupported value: "{match}": supported values: '
            '"Exact", "NotOlderThan", ""'
        )
    if watch:
        if send_initial_events is not None and match != "NotOlderThan":
            raise _invalid_options(
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch "
                "unless resourceVersionMatch is set to NotOlderThan"
            )
        if match and send_initial_events is None:
            raise _invalid_options(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch "
                "unless sendInitialEvents is provided"
            )
        return
    if match and not rv:
        raise _invalid_options(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
            "resourceVersion is provided"
        )
    if match == "Exact" and rv == "0":
        raise _invalid_options(
            'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
            'resourceVersion "0"'
        )


def _selectors(
    rt: ResourceType, query: Mapping[str, str]
) -> tuple[LabelSelector | None, FieldSelector | None]:
    labels: LabelSelector | None = None
    fields: FieldSelector | None = None
    try:
        if query.get("labelSelector"):
            labels = parse_label_selector(query["labelSelector"]) or None
        if query.get("fieldSelector"):
            fields = parse_field_selector(query["fieldSelector"]) or None
    except SelectorError as exc:
        raise StatusError(
            status_body(400, "BadRequest", f"unable to parse requirement: {exc}")
        ) from exc
    if fields is not None:
        for name in sorted(fields.fields()):
            if name not in rt.field_labels:
                raise StatusError(
                    status_body(400, "BadRequest", f"field label not supported: {name}")
                )
    return labels, fields


def _int_param(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise StatusError(status_body(400, "BadRequest", f'invalid value for {name}: "{raw}"'))
    return value


def _bool_param(query: Mapping[str, str], name: str) -> bool | None:
    raw = query.get(name)
    if raw is None:
        return None
    return raw.lower() in ("1", "true", "t", "yes")


def _decode_body(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise StatusError(
            status_body(400, "BadRequest", f"the request body is not valid JSON: {exc}")
        ) from exc


def _check_namespace(rt: ResourceType, meta: dict[str, Any], namespace: str | None) -> None:
    if not rt.namespaced:
        meta.pop("namespace", None)
        return
    given = meta.get("namespace")
    if given and given != namespace:
        raise StatusError(
            status_body(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace "
                "sent on the request",
            )
        )
    meta["namespace"] = namespace


def _prepare_new(rt: ResourceType, obj: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """Validate and normalise an object about to be created (names, namespace)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    if rt.namespaced:
        if namespace is None:
            namespace = meta.get("namespace") or "default"
        _check_namespace(rt, meta, namespace)
    else:
        meta.pop("namespace", None)
    name = meta.get("name")
    if not name:
        generate = meta.get("generateName")
        if not generate:
            raise _invalid(rt, None, "metadata.name", "name or generateName is required")
        name = meta["name"] = generate + os.urandom(4).hex()[:5]
    if not isinstance(name, str) or len(name) > 253 or "/" in name or name in (".", ".."):
        raise _invalid(rt, str(name), "metadata.name", f'"{name}": not a valid name')
    meta.pop("resourceVersion", None)
    return obj
