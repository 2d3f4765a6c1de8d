"""The proxy's HTTP side: the list/watch API answered from watch caches.

Role: one aiohttp handler for every request. Input: a downstream request (kubectl,
client-go, this library, anything that speaks the API); output: what kube-apiserver
v1.36 answers, from the :class:`~aioinformer.proxy._cache.ProxyWatchCache` of the resource
named by the path, or a ``Status`` error. Served: LIST (``limit``/``continue``,
``resourceVersion``/``resourceVersionMatch``, label, field and shard selectors), GET by
name, WATCH (from a resourceVersion, initial events, ``sendInitialEvents`` with the
``k8s.io/initial-events-end`` bookmark, ``allowWatchBookmarks``, ``timeoutSeconds``,
label, field and shard selectors),
discovery for the served resources (aggregated too), ``/version`` (the upstream's), the
health paths, and ``/openapi/v3`` documents for the served resources (whose PATCH
operations, when writes are forwarded, let kubectl leave validation to the upstream).
Writes are refused (405) or forwarded upstream with the proxy's credentials.

Shard selectors (KEP-5866's ``shardSelector``) are always served, from the cache, as
kube-apiserver v1.36 serves them with its ``ShardedListAndWatch`` gate on: each LIST page
echoes the normalised selector (``metadata.shardInfo``), a malformed one answers 500
``InternalError``. The upstream is listed and watched whole, so a sharded client works
through the proxy against a cluster that has no such gate.

Authentication: with tokens configured, every request but the health paths needs
``Authorization: Bearer <one of them>`` (compared in constant time); anything else gets
kube-apiserver's 401 ``Unauthorized``.

Task model: aiohttp runs one task per request. A WATCH's task writes the lines its
watcher queues and ends when the watcher is closed (by ``timeoutSeconds``, the proxy
shutting down, or the cache closing a watcher that fell behind, which also aborts the
connection so a write blocked on a client that does not read ends too).
"""

from __future__ import annotations

import functools
import hmac
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import orjson
from aiohttp import web

from aioinformer._apiserver.aggregated import aggregated_response, wants_aggregated
from aioinformer._apiserver.discovery import VERBS, discovery_response, is_discovery
from aioinformer._apiserver.objects import ResourceType, StatusError, status_body
from aioinformer._apiserver.openapi import is_openapi, openapi_response
from aioinformer._apiserver.requests import (
    JSON,
    bearer,
    bool_param,
    entry_response,
    list_query,
    method_not_allowed,
    negotiate,
    not_served,
    page_response,
    status_response,
    watch_query,
    watch_response,
)
from aioinformer._apiserver.watch import error_line, parse_rv
from aioinformer._kernel.clock import call_later
from aioinformer.errors import ApiError, TransportError

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Collection, Mapping

    from aioinformer._apiserver.requests import Conversion
    from aioinformer._kernel.clock import Clock
    from aioinformer.client import Client
    from aioinformer.proxy._cache import ProxyWatchCache, ProxyWatcher

__all__ = ["Handler", "WritePolicy"]

logger = logging.getLogger("aioinformer.proxy")

WritePolicy = Literal["deny", "forward"]

_READ_VERBS: Final = ("get", "list", "watch")
_HEALTH: Final = (["healthz"], ["livez"], ["readyz"])
_TOO_LARGE_WAIT: Final = 3.0
"""Seconds a read at a resourceVersion the cache has not reached waits for it, as
kube-apiserver's watch cache does, before the 504."""
_DIRECT_LIMIT: Final = 0x10000
"""Bytes a watch connection may have buffered for the flush to still write to it directly
(aiohttp's own threshold for waiting on a drain)."""


def _unauthorized() -> StatusError:
    return StatusError(status_body(401, "Unauthorized", "Unauthorized"))


@dataclass(slots=True)
class _Target:
    cache: ProxyWatchCache
    namespace: str | None
    name: str | None
    subresource: str | None


class Handler:
    """Answers every request of the proxy's listener (see the module notes).

    ``caches`` maps ``(group, version, plural)`` to the resource's watch cache;
    ``namespace`` is the one namespace the caches hold (``None``: all of them).
    """

    def __init__(
        self,
        caches: Mapping[tuple[str, str, str], ProxyWatchCache],
        *,
        client: Client,
        namespace: str | None,
        tokens: Collection[str] | None,
        writes: WritePolicy,
        clock: Clock,
        version_info: dict[str, Any] | None,
        unready: Callable[[], list[str]],
    ) -> None:
        self._caches = caches
        self._unready = unready
        self._client = client
        self._namespace = namespace
        self._tokens = tuple(token.encode() for token in tokens) if tokens is not None else None
        self._writes = writes
        self._clock = clock
        self._version_info = version_info
        self._verbs = _READ_VERBS if writes == "deny" else tuple(sorted({*_READ_VERBS, *VERBS}))
        self.port = 0
        self.requests = 0

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        self.requests += 1
        parts = [part for part in request.path.split("/") if part]
        try:
            if parts in _HEALTH:
                return self._health(parts[0])
            self._authenticate(request)
            served = [cache.rt for cache in self._caches.values()]
            if is_openapi(parts):
                return openapi_response(request.method, parts, served, verbs=self._verbs)
            if wants_aggregated(parts, request.headers.get("Accept", "")):
                return aggregated_response(request.method, parts, served, verbs=self._verbs)
            if not parts or parts[0] not in ("api", "apis") or is_discovery(parts):
                return discovery_response(
                    request.method,
                    parts,
                    served,
                    port=self.port,
                    verbs=self._verbs,
                    version_info=self._version_info,
                )
            if request.method not in ("GET", "HEAD"):
                if self._writes == "forward":
                    return await self._forward(request)
                raise method_not_allowed()
            target = self._target(parts)
            return await self._read(request, target)
        except StatusError as exc:
            return status_response(exc)

    def _health(self, path: str) -> web.Response:
        """``/livez`` and ``/healthz``: the proxy answers. ``/readyz``: and every upstream
        watch is up (503 naming each resource whose reflector is backing off)."""
        if path == "readyz":
            reasons = self._unready()
            if reasons:
                return web.Response(
                    status=503, text="\n".join(reasons) + "\n", content_type="text/plain"
                )
        return web.Response(text="ok", content_type="text/plain")

    def _authenticate(self, request: web.BaseRequest) -> None:
        tokens = self._tokens
        if tokens is None:
            return
        token = bearer(request)
        if token is None:
            raise _unauthorized()
        given = token.encode()
        if not any(hmac.compare_digest(given, accepted) for accepted in tokens):
            raise _unauthorized()

    def _target(self, parts: list[str]) -> _Target:
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            group, version, rest = parts[1], parts[2], parts[3:]
        namespace: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        cache = self._caches.get((group, version, rest[0]))
        if cache is None or len(rest) > 3:
            raise not_served()
        rt = cache.rt
        if namespace is not None and not rt.namespaced:
            raise not_served()
        name = rest[1] if len(rest) > 1 else None
        subresource = rest[2] if len(rest) > 2 else None
        if subresource is not None:
            raise not_served()
        if rt.namespaced and self._namespace is not None and namespace != self._namespace:
            raise _forbidden(rt, name, namespace, self._namespace)
        return _Target(cache, namespace, name, subresource)

    # -- reads -----------------------------------------------------------------------------

    async def _read(self, request: web.BaseRequest, target: _Target) -> web.StreamResponse:
        query = request.query
        convert = negotiate(request.headers.get("Accept", ""))
        cache = target.cache
        if bool_param(query, "watch"):
            return await self._watch(request, target, convert)
        if target.name is not None:
            return entry_response(cache.rt, cache.get(target.namespace, target.name), convert)
        options = list_query(cache.rt, query, shard_selectors=True)
        rv = options["resource_version"]
        if rv and not options["continue_"]:
            await cache.wait_fresh(parse_rv(rv), _TOO_LARGE_WAIT)
        result = cache.list(namespace=target.namespace, **options)
        return page_response(cache.rt, result, convert)

    async def _watch(
        self, request: web.BaseRequest, target: _Target, convert: Conversion | None
    ) -> web.StreamResponse:
        cache = target.cache
        options, timeout = watch_query(
            cache.rt, request.query, convert, name=target.name, shard_selectors=True
        )
        rv = options["resource_version"]
        if rv and rv != "0":
            await cache.wait_fresh(parse_rv(rv), _TOO_LARGE_WAIT)
        response = watch_response()
        try:
            watcher = cache.open_watch(namespace=target.namespace, **options)
        except StatusError as exc:
            if exc.code != 410:
                raise
            # As kube-apiserver v1.36.2: the stream opens, then says the version is gone.
            try:
                await response.prepare(request)
                await response.write(error_line(exc.status))
                await response.write_eof()
            except ConnectionError:
                logger.debug("watch client on %s went away before its 410", request.path)
            return response
        transport = request.transport
        if transport is not None:
            watcher.abort = transport.abort
        timer = call_later(self._clock, timeout, watcher.close) if timeout else None
        try:
            await response.prepare(request)
            await _stream(response, watcher, transport)
        except ConnectionError:
            logger.debug("watch client on %s went away", request.path)
        finally:
            if timer is not None:
                timer.cancel()
            watcher.abort = None
            cache.close_watch(watcher)
        return response

    # -- writes ----------------------------------------------------------------------------

    async def _forward(self, request: web.BaseRequest) -> web.Response:
        """Send a write upstream with the proxy's credentials and answer what it answered:
        the body, its media type (JSON, protobuf, ...), its content coding (the request
        asks for none, but a server may compress anyway) and the status code pass through
        untouched. The cache learns of the change from its upstream watch, like everyone
        else."""
        body = await request.read()
        try:
            async with self._client.stream(
                request.method,
                request.rel_url.raw_path,
                query=dict(request.query),
                body=body or None,
                content_type=request.headers.get("Content-Type"),
                accept=request.headers.get("Accept", JSON),
            ) as answer:
                payload = await answer.read()
                headers = {"Content-Type": answer.headers.get("Content-Type", JSON)}
                coding = answer.headers.get("Content-Encoding")
                if coding is not None:
                    headers["Content-Encoding"] = coding
                return web.Response(body=payload, status=answer.status, headers=headers)
        except ApiError as exc:
            status = exc.status or status_body(exc.code, exc.reason, exc.message)
            return web.Response(
                body=orjson.dumps(status), status=exc.code or 500, content_type=JSON
            )
        except TransportError as exc:
            raise StatusError(
                status_body(503, "ServiceUnavailable", f"the upstream API server: {exc}")
            ) from exc


async def _stream(
    response: web.StreamResponse, watcher: ProxyWatcher, transport: asyncio.Transport | None
) -> None:
    """Write ``watcher``'s lines as they are queued, until it is closed.

    While this writer is idle, the cache's flush hands lines to the connection itself
    (``watcher.send``): one ``transport.write`` per watcher and flush instead of a task
    switch and a coroutine per watcher. It does so only while the connection's buffer is
    under :data:`_DIRECT_LIMIT`; past it the flush wakes this writer, whose writes wait for
    the connection to drain, and a client that stops reading soon fills its queue and is
    closed (see :mod:`aioinformer.proxy._cache`)."""
    # The first write sends the headers aiohttp holds back; chunks written to the
    # transport directly must come after them.
    await response.write(b"")
    send = functools.partial(_send_chunk, transport) if transport is not None else None
    wake = watcher.wake
    while True:
        batch = watcher.buffer
        if batch:
            watcher.buffer = []
            watcher.send = None
            await response.write(batch[0] if len(batch) == 1 else b"".join(batch))
            continue
        if watcher.closed:
            break
        watcher.send = send
        wake.clear()
        await wake.wait()
    watcher.send = None
    await response.write_eof()


def _send_chunk(transport: asyncio.Transport, data: bytes) -> bool:
    """Write ``data`` as one HTTP/1.1 chunk if the connection takes it at once."""
    if transport.is_closing() or transport.get_write_buffer_size() > _DIRECT_LIMIT:
        return False
    transport.write(b"%x\r\n%b\r\n" % (len(data), data))
    return True


def _forbidden(rt: ResourceType, name: str | None, asked: str | None, served: str) -> StatusError:
    scope = f'in the namespace "{asked}"' if asked else "at the cluster scope"
    return StatusError(
        status_body(
            403,
            "Forbidden",
            f"{rt.qualified} is forbidden: this proxy serves {rt.plural} of the namespace "
            f'"{served}" only, not {scope}',
            rt.details(name),
        )
    )
