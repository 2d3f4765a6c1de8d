"""The API client: one aiohttp session, discovery, and per-resource request methods.

Role: everything that speaks HTTP to the API server. Input: a :class:`Config`. Output:
decoded JSON (plain dicts, exactly as orjson produced them), :class:`ObjectList` pages and
:class:`WatchEvent` streams. :class:`ResourceClient` is the real ``ListerWatcher``.

* :class:`Client` owns one ``aiohttp.ClientSession`` (pooled keep-alive connections,
  TLS, proxy). The session is created lazily on the first request, inside the running
  loop, so ``Client.from_env()`` is a plain (sync) constructor and ``async with
  Client.from_env() as client:`` works. ``close()`` closes every connection.
* Credentials come from :class:`aioinformer._auth.Authenticator`; a 401 refreshes
  rotating credentials (token file, exec plugin) and retries the request once.
* Resources are named by a :class:`GVR`, by ``"v1/configmaps"`` / ``"apps/v1/deployments"``,
  or by a bare plural (``"pods"``, a CRD's plural, ``"deployments.apps"``) that discovery
  (``/api``, ``/apis``) resolves; discovery answers are cached per client and refreshed
  once when a name is not found (a CRD installed since).
* Every non-2xx answer raises the matching :class:`~aioinformer.errors.ApiError`; every
  transport failure a :class:`~aioinformer.errors.TransportError`, both through the
  translation boundary ``aioinformer._transport``.

Names and namespaces are validated before they are put in a URL (``ValueError``).
Task model: all methods run in the caller's task; discovery of many group-versions runs
in a short-lived task group. Nothing is logged per request or per event.

Example::

    async with Client.from_env() as client:
        pods = client.resource("pods", namespace="default")
        page = await pods.list(ListOptions(limit=500))
        async with contextlib.aclosing(pods.watch(ListOptions(
                resource_version=page.resource_version))) as events:
            async for event in events:
                print(event.type, event.object["metadata"]["name"])
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import ssl
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Self
from urllib.parse import quote

import aiohttp
import orjson
import yarl

from aioinformer._auth import Authenticator, Credentials
from aioinformer._transport import (
    BodyTooLarge,
    api_error_from_response,
    map_tls_config_errors,
    map_transport_errors,
)
from aioinformer.config import Config, load_config
from aioinformer.errors import (
    ApiError,
    ConfigError,
    NotFound,
    TransportError,
    UnknownResourceError,
)
from aioinformer.listwatch import ListOptions, ObjectList, WatchEvent
from aioinformer.watch import CHUNK_SIZE, DEFAULT_MAX_LINE_BYTES, read_watch_stream

__all__ = [
    "Client",
    "DEFAULT_MAX_LIST_BYTES",
    "DEFAULT_MAX_OBJECT_BYTES",
    "GVR",
    "PatchType",
    "ResourceClient",
    "ResourceInfo",
]

logger = logging.getLogger(__name__)

PatchType = Literal["merge", "strategic", "json", "apply"]

_PATCH_CONTENT_TYPES: Final[Mapping[str, str]] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}
_JSON: Final = "application/json"
_META_LIST_ACCEPT: Final = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
_META_OBJECT_ACCEPT: Final = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
_USER_AGENT: Final = "aioinformer/0.1.0"

DEFAULT_MAX_OBJECT_BYTES: Final = DEFAULT_MAX_LINE_BYTES
"""Largest single-object answer (and watch line) accepted by default: 64 MiB, far above
kube-apiserver's 3 MiB request limit and etcd's object limit of about 1.5 MiB."""
DEFAULT_MAX_LIST_BYTES: Final = 2 * 1024 * 1024 * 1024
"""Largest LIST answer accepted by default: 2 GiB. An unpaginated relist of a large
cluster's Pods runs to hundreds of MiB; a page of 500 objects stays far below this."""

_WATCH_DEADLINE_MARGIN: Final = 30.0
"""Seconds of silence tolerated past a watch's ``timeoutSeconds`` before it is dead."""
_WATCH_DEFAULT_DEADLINE: Final = 330.0
"""Inactivity deadline of a watch without ``timeoutSeconds`` (a re-watch is harmless)."""

_GROUP_RE: Final = re.compile(r"^(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?)?$")
_VERSION_RE: Final = re.compile(r"^[a-z0-9]+$")
_RESOURCE_RE: Final = re.compile(r"^[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?$")
_NAMESPACE_RE: Final = re.compile(r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$")
_SUBRESOURCE_RE: Final = re.compile(r"^[a-z][a-z0-9]*$")


async def _read_body(response: aiohttp.ClientResponse, limit: int, url: str) -> bytes:
    """The whole body of ``response``, refused with :class:`BodyTooLarge` once it is
    known to exceed ``limit`` bytes: at once when ``Content-Length`` says so, else as
    soon as what was read passes the limit (a chunked or compressed body)."""
    announced = response.content_length
    if announced is not None and announced > limit:
        raise BodyTooLarge(
            f"{url} answered with a body of {announced} bytes, over the limit of {limit} bytes"
        )
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(CHUNK_SIZE):
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(
                f"{url} answered with a body of more than {limit} bytes "
                f"(at least {size} bytes), over the limit of {limit} bytes"
            )
        parts.append(chunk)
    return b"".join(parts)


def _check_namespace(namespace: str) -> str:
    if not isinstance(namespace, str) or len(namespace) > 63 or not _NAMESPACE_RE.match(namespace):
        raise ValueError(f"invalid namespace {namespace!r}: must be a DNS-1123 label")
    return namespace


def _check_subresource(subresource: str) -> str:
    # Subresource names are single lowercase words (status, scale, ephemeralcontainers).
    if not isinstance(subresource, str) or not _SUBRESOURCE_RE.match(subresource):
        raise ValueError(f"invalid subresource {subresource!r}: must be a lowercase word")
    return subresource


def _check_name(name: str) -> str:
    # The API server's own rule for names used as path segments.
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "%" in name:
        raise ValueError(f"invalid object name {name!r}")
    return name


@dataclass(frozen=True, slots=True)
class GVR:
    """A resource type: API group (``""`` for the core group), version and plural."""

    group: str
    version: str
    resource: str

    def __post_init__(self) -> None:
        if not _GROUP_RE.match(self.group):
            raise ValueError(f"invalid API group {self.group!r}")
        if not _VERSION_RE.match(self.version):
            raise ValueError(f"invalid API version {self.version!r}")
        if not _RESOURCE_RE.match(self.resource):
            raise ValueError(f"invalid resource name {self.resource!r}")

    @classmethod
    def parse(cls, text: str) -> GVR:
        """``"v1/pods"`` → ``GVR("", "v1", "pods")``; ``"apps/v1/deployments"`` likewise.

        A bare plural has no version and is not a GVR: resolve it with
        :meth:`Client.resolve` instead. Raises ``ValueError``.
        """
        parts = text.split("/")
        if len(parts) == 2:
            return cls("", parts[0], parts[1])
        if len(parts) == 3:
            return cls(parts[0], parts[1], parts[2])
        raise ValueError(f"{text!r} is not group/version/resource or version/resource")

    @property
    def api_version(self) -> str:
        """``"v1"`` for the core group, ``"group/version"`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.api_version}/{self.resource}"


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """A resource type as discovery describes it: enough to build every URL.

    ``subresources`` lists what discovery announced (``("scale", "status")``); it informs,
    it does not restrict: a request for a subresource not listed is still sent.
    """

    gvr: GVR
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ()
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()

    @property
    def _prefix(self) -> str:
        gvr = self.gvr
        return f"/apis/{gvr.group}/{gvr.version}" if gvr.group else f"/api/{gvr.version}"

    def collection_path(self, namespace: str | None) -> str:
        """The collection URL path; all namespaces when ``namespace`` is ``None`` (or the
        resource is cluster-scoped, where it is ignored)."""
        if self.namespaced and namespace is not None:
            return f"{self._prefix}/namespaces/{_check_namespace(namespace)}/{self.gvr.resource}"
        return f"{self._prefix}/{self.gvr.resource}"

    def object_path(self, name: str, namespace: str | None, subresource: str | None = None) -> str:
        """One object's URL path (of its ``subresource`` when given, e.g. ``"status"``);
        a namespaced resource needs ``namespace``. Raises ``ValueError`` for an invalid
        name or subresource."""
        if self.namespaced and namespace is None:
            raise ValueError(f"{self.gvr} is namespaced: a namespace is needed for {name!r}")
        path = f"{self.collection_path(namespace)}/{quote(_check_name(name), safe='')}"
        if subresource is not None:
            path += "/" + _check_subresource(subresource)
        return path

    def matches(self, word: str) -> bool:
        """Whether ``word`` names this resource (plural, singular, short name or kind)."""
        return (
            word == self.gvr.resource
            or word == self.singular
            or word in self.short_names
            or word == self.kind.lower()
        )


class _Discovery:
    """Discovery answers of one client, cached; resolves resource names to ResourceInfo."""

    def __init__(self, client: Client) -> None:
        self._client = client
        # Serialises loads so concurrent resolutions share one set of requests.
        self._lock = asyncio.Lock()
        self._order: list[str] | None = None
        """Group-versions to search for a bare name: the core group's first, then each
        group's preferred version, in the server's order. ``None`` until loaded."""
        self._group_versions: dict[str, list[str]] = {}
        """group → its versions, preferred first."""
        self._resources: dict[str, list[ResourceInfo]] = {}
        """group-version → its resources (subresources left out)."""

    async def resolve(self, spec: str | GVR) -> ResourceInfo:
        if isinstance(spec, GVR):
            return await self._resolve_gvr(spec)
        if "/" in spec:
            return await self._resolve_gvr(GVR.parse(spec))
        return await self._resolve_word(spec)

    async def _resolve_gvr(self, gvr: GVR) -> ResourceInfo:
        for refresh in (False, True):
            resources = await self._load_group_version(gvr.api_version, refresh=refresh)
            for info in resources or ():
                if info.gvr == gvr:
                    return info
            if resources is None:
                break
        raise UnknownResourceError(f"the API server does not serve {gvr}")

    async def _resolve_word(self, spec: str) -> ResourceInfo:
        word = spec.lower()
        name, _, group = word.partition(".")
        for refresh in (False, True):
            async with self._lock:
                if self._order is None or refresh:
                    await self._load_all()
                order = list(self._order or ())
            if group:
                order = [gv for gv in order if gv.rpartition("/")[0] == group]
            candidates = [info for gv in order for info in self._resources.get(gv, ())]
            for info in candidates:
                if info.gvr.resource == name:
                    return info
            for info in candidates:
                if info.matches(name):
                    return info
        raise UnknownResourceError(f"the API server has no resource named {spec!r}")

    async def _load_all(self) -> None:
        core = await self._client.request("GET", "/api")
        groups = await self._client.request("GET", "/apis")
        order = [str(v) for v in (core.get("versions") or ()) if isinstance(v, str)]
        self._group_versions = {"": list(order)}
        for entry in groups.get("groups") or ():
            name = entry.get("name")
            versions = [v.get("groupVersion") for v in entry.get("versions") or ()]
            preferred = (entry.get("preferredVersion") or {}).get("groupVersion")
            if preferred in versions:
                versions.remove(preferred)
                versions.insert(0, preferred)
            self._group_versions[name] = [v for v in versions if isinstance(v, str)]
            if self._group_versions[name]:
                order.append(self._group_versions[name][0])
        fetched: dict[str, list[ResourceInfo]] = {}

        async def fetch(gv: str) -> None:
            try:
                fetched[gv] = await self._fetch_group_version(gv)
            except (TransportError, ApiError) as exc:
                # An aggregated API that is down (503) must not make every lookup fail;
                # credentials problems already surfaced on /api and /apis.
                logger.debug("discovery of %s failed: %s", gv, exc)

        async with asyncio.TaskGroup() as tasks:
            for gv in order:
                tasks.create_task(fetch(gv))
        self._resources.update(fetched)
        self._order = [gv for gv in order if gv in fetched]
        logger.debug("discovery found %d group-versions", len(self._order))

    async def _load_group_version(self, gv: str, *, refresh: bool) -> list[ResourceInfo] | None:
        if not refresh and gv in self._resources:
            return self._resources[gv]
        try:
            resources = await self._fetch_group_version(gv)
        except NotFound:
            return None
        self._resources[gv] = resources
        return resources

    async def _fetch_group_version(self, gv: str) -> list[ResourceInfo]:
        group, _, version = gv.rpartition("/")
        path = f"/apis/{gv}" if group else f"/api/{version}"
        body = await self._client.request("GET", path)
        entries = body.get("resources") or ()
        subresources: dict[str, list[str]] = {}
        for entry in entries:
            parent, slash, sub = str(entry.get("name", "")).partition("/")
            if slash:
                subresources.setdefault(parent, []).append(sub)
        found: list[ResourceInfo] = []
        for entry in entries:
            name = entry.get("name", "")
            if "/" in name:
                continue  # a subresource (pods/log, deployments/scale, ...), listed above
            try:
                gvr = GVR(group, version, name)
            except ValueError:
                continue
            found.append(
                ResourceInfo(
                    gvr=gvr,
                    kind=str(entry.get("kind", "")),
                    namespaced=bool(entry.get("namespaced", False)),
                    verbs=tuple(entry.get("verbs") or ()),
                    singular=str(entry.get("singularName") or ""),
                    short_names=tuple(entry.get("shortNames") or ()),
                    subresources=tuple(sorted(subresources.get(name, ()))),
                )
            )
        return found


def _load_cert_chain(context: ssl.SSLContext, cert_pem: str, key_pem: str) -> None:
    # ssl only loads a certificate chain from files: write both to a private temporary
    # directory for the duration of the call.
    with tempfile.TemporaryDirectory(prefix="aioinformer-") as directory:
        cert_path = os.path.join(directory, "client.crt")
        key_path = os.path.join(directory, "client.key")
        for path, text in ((cert_path, cert_pem), (key_path, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
        context.load_cert_chain(cert_path, key_path)


def _ssl_context(
    config: Config, *, cert_pem: str | None = None, key_pem: str | None = None
) -> ssl.SSLContext:
    """The TLS context for ``config``: its CA only (system roots without one), its client
    certificate (or the given one), and verification off only when the config says so."""
    where = config.source or "config"
    with map_tls_config_errors(where, "certificate authority"):
        if config.ca_data or config.ca_file:
            context = ssl.create_default_context(
                cafile=None if config.ca_data else config.ca_file, cadata=config.ca_data
            )
        else:
            context = ssl.create_default_context()
    if config.insecure_skip_tls_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    with map_tls_config_errors(where, "client certificate or key"):
        if cert_pem and key_pem:
            _load_cert_chain(context, cert_pem, key_pem)
        elif config.cert_data or config.cert_file:
            if config.cert_file and config.key_file and not (config.cert_data or config.key_data):
                context.load_cert_chain(config.cert_file, config.key_file)
            else:
                cert = config.cert_data or _read_text(config.cert_file)
                key = config.key_data or _read_text(config.key_file)
                _load_cert_chain(context, cert, key)
    return context


def _read_text(path: str | None) -> str:
    if path is None:
        raise ConfigError("a client certificate needs both a certificate and a key")
    with open(path, encoding="utf-8") as handle:
        return handle.read()


class Client:
    """A connection to one API server. Use as ``async with Client(config) as client:``.

    ``request_timeout`` bounds the silence while waiting for an ordinary answer (seconds
    between bytes, so a big LIST is not cut short); ``watch_inactivity_timeout``, when
    set, is the silence after which a watch raises ``WatchTimeout`` (otherwise it is the
    watch's ``timeoutSeconds`` plus 30 s, or 330 s). The HTTP session is opened on first
    use inside the running loop; :meth:`close` (or leaving ``async with``) closes it.

    Size limits keep a broken or hostile server from filling memory: ``max_object_bytes``
    (default 64 MiB, :data:`DEFAULT_MAX_OBJECT_BYTES`) bounds a single-object answer (get,
    create, update, patch, delete, discovery, error bodies) and each watch line;
    ``max_list_bytes`` (default 2 GiB, :data:`DEFAULT_MAX_LIST_BYTES`) bounds one LIST
    answer. A body announcing more (``Content-Length``) is refused before it is read, one
    without a length is read until it passes the limit; either raises
    :class:`~aioinformer.errors.TransportError` naming the size and the limit (a watch
    line, :class:`~aioinformer.errors.WatchError`).
    """

    def __init__(
        self,
        config: Config,
        *,
        request_timeout: float = 60.0,
        connect_timeout: float = 30.0,
        watch_inactivity_timeout: float | None = None,
        max_connections: int = 100,
        user_agent: str = _USER_AGENT,
        max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES,
        max_list_bytes: int = DEFAULT_MAX_LIST_BYTES,
    ) -> None:
        if max_object_bytes <= 0:
            raise ValueError(f"max_object_bytes must be positive, got {max_object_bytes!r}")
        if max_list_bytes <= 0:
            raise ValueError(f"max_list_bytes must be positive, got {max_list_bytes!r}")
        self._config = config
        self._max_object_bytes = max_object_bytes
        self._max_list_bytes = max_list_bytes
        self._request_timeout = request_timeout
        self._connect_timeout = connect_timeout
        self._watch_inactivity_timeout = watch_inactivity_timeout
        self._max_connections = max_connections
        self._user_agent = user_agent
        self._auth = Authenticator(config)
        self._discovery = _Discovery(self)
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        self._https = config.host.startswith("https:")
        # The TLS context for a client certificate an exec plugin returned, and which
        # credentials it was built for (rebuilt when the plugin hands out a new one).
        self._exec_tls: tuple[Credentials, ssl.SSLContext] | None = None

    @classmethod
    def from_env(cls, *, context: str | None = None, **options: Any) -> Client:
        """A client for the environment: in-cluster when running in a pod, kubeconfig
        otherwise (see :func:`aioinformer.config.load_config`). Sync: the session opens on
        first use. ``options`` are :class:`Client`'s keyword arguments."""
        return cls(load_config(context=context), **options)

    @property
    def config(self) -> Config:
        """The configuration this client was built from."""
        return self._config

    @property
    def session(self) -> aiohttp.ClientSession | None:
        """The underlying aiohttp session, or ``None`` before first use / after close."""
        return self._session

    async def __aenter__(self) -> Self:
        self._ensure_session()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the session and every pooled connection. Idempotent."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._session is not None:
            return self._session
        if self._closed:
            raise RuntimeError("this Client is closed")
        ssl_arg: ssl.SSLContext | bool = True
        if self._https:
            ssl_arg = _ssl_context(self._config)
        connector = aiohttp.TCPConnector(ssl=ssl_arg, limit=self._max_connections)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": self._user_agent},
        )
        return self._session

    def _tls_for(self, credentials: Credentials) -> ssl.SSLContext | None:
        if credentials.cert_pem is None or credentials.key_pem is None or not self._https:
            return None
        if self._exec_tls is None or self._exec_tls[0] is not credentials:
            context = _ssl_context(
                self._config, cert_pem=credentials.cert_pem, key_pem=credentials.key_pem
            )
            self._exec_tls = (credentials, context)
        return self._exec_tls[1]

    # -- requests --------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str = _JSON,
        read_timeout: float | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """Send a request; yield the (2xx) response with its body unread.

        Non-2xx answers raise :class:`ApiError` subclasses; a 401 first refreshes
        rotating credentials and retries once. On exit the connection goes back to the
        pool if the body was read to the end, and is closed otherwise.
        """
        session = self._ensure_session()
        url = yarl.URL(self._config.host + path, encoded=True)
        label = str(url)
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self._connect_timeout,
            sock_read=self._request_timeout if read_timeout is None else read_timeout,
        )
        retried = False
        while True:
            credentials = await self._auth.credentials()
            headers = {"Accept": accept}
            if credentials.authorization is not None:
                headers["Authorization"] = credentials.authorization
            if content_type is not None:
                headers["Content-Type"] = content_type
            tls = self._tls_for(credentials)
            extra: dict[str, Any] = {}
            if tls is not None:
                extra["ssl"] = tls
            if self._https and self._config.tls_server_name:
                extra["server_hostname"] = self._config.tls_server_name
            with map_transport_errors(label):
                response = await session.request(
                    method,
                    url,
                    params=query,
                    data=body,
                    headers=headers,
                    timeout=timeout,
                    proxy=self._config.proxy_url,
                    allow_redirects=False,
                    **extra,
                )
            try:
                if response.status == 401 and not retried and self._auth.refreshable:
                    retried = True
                    if await self._auth.refresh(credentials):
                        continue
                if not 200 <= response.status < 300:
                    try:
                        with map_transport_errors(label):
                            payload = await _read_body(response, self._max_object_bytes, label)
                    except BodyTooLarge:
                        # The status still says what went wrong; the body is not needed.
                        payload = b""
                    raise api_error_from_response(response.status, payload, response.headers)
                yield response
                return
            finally:
                if response.content.at_eof():
                    response.release()
                else:
                    response.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        json: Any = None,
        content_type: str | None = None,
        accept: str = _JSON,
        max_bytes: int | None = None,
    ) -> Any:
        """Send a request (``json`` serialised with orjson) and return the decoded answer
        (``None`` for an empty body). ``path`` starts with ``/`` and is already quoted.

        An answer over ``max_bytes`` (default: the client's ``max_object_bytes``) raises
        :class:`TransportError` without being read past the limit."""
        limit = self._max_object_bytes if max_bytes is None else max_bytes
        body = None if json is None else orjson.dumps(json)
        if body is not None and content_type is None:
            content_type = _JSON
        async with self.stream(
            method, path, query=query, body=body, content_type=content_type, accept=accept
        ) as response:
            url = str(response.url.with_query(None))
            with map_transport_errors(url):
                payload = await _read_body(response, limit, url)
                return orjson.loads(payload) if payload else None

    # -- resources -------------------------------------------------------------------

    async def resolve(self, resource: str | GVR) -> ResourceInfo:
        """Resolve a resource name through discovery (cached). Raises
        :class:`UnknownResourceError` naming it when the server does not serve it."""
        return await self._discovery.resolve(resource)

    def resource(
        self,
        resource: str | GVR | ResourceInfo,
        namespace: str | None = None,
        *,
        metadata_only: bool = False,
    ) -> ResourceClient:
        """A :class:`ResourceClient` for ``resource``; sync, discovery runs on first use.

        ``namespace=None`` lists and watches all namespaces. ``metadata_only`` asks for
        ``PartialObjectMetadata`` (only ``metadata`` of each object).
        """
        return ResourceClient(self, resource, namespace, metadata_only=metadata_only)

    def _watch_deadline(self, options: ListOptions, explicit: float | None) -> float:
        if explicit is not None:
            return explicit
        if self._watch_inactivity_timeout is not None:
            return self._watch_inactivity_timeout
        if options.timeout_seconds is not None:
            return options.timeout_seconds + _WATCH_DEADLINE_MARGIN
        return _WATCH_DEFAULT_DEADLINE

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("open" if self._session else "idle")
        context = f" context={self._config.context!r}" if self._config.context else ""
        return f"<Client {self._config.host!r}{context} {state}>"


class ResourceClient:
    """Requests on one resource type, optionally bound to a namespace.

    Implements the ``ListerWatcher`` protocol (``list`` one page, ``watch`` a stream) plus
    ``get``, ``create``, ``update``, ``patch`` and ``delete``, all returning the decoded
    answer. ``namespace`` (the bound one) ``None`` means all namespaces for list and watch;
    single-object requests then use the object's namespace or the config's default.
    For a cluster-scoped resource namespaces are ignored.

    ``get``, ``update`` and ``patch`` take ``subresource=``: ``"status"`` writes only the
    status of a resource that has the status subresource (the server ignores everything
    else, as the main resource ignores ``status``); ``"scale"`` reads and writes an
    ``autoscaling/v1`` ``Scale``.

    ``metadata_only=True`` asks the server for ``PartialObjectMetadata`` as client-go's
    metadata client does: ``list`` pages are ``PartialObjectMetadataList`` (each item's
    apiVersion and kind are ``meta.k8s.io/v1`` and ``PartialObjectMetadata``), watch events
    and every single-object answer are ``PartialObjectMetadata``.
    """

    def __init__(
        self,
        client: Client,
        resource: str | GVR | ResourceInfo,
        namespace: str | None = None,
        *,
        metadata_only: bool = False,
    ) -> None:
        self._client = client
        self._spec = resource
        self._info: ResourceInfo | None = resource if isinstance(resource, ResourceInfo) else None
        if isinstance(resource, str) and "/" in resource:
            GVR.parse(resource)  # fail fast on a malformed resource string
        self._namespace = None if namespace is None else _check_namespace(namespace)
        self._metadata_only = metadata_only

    @property
    def namespace(self) -> str | None:
        """The bound namespace; ``None`` for all namespaces."""
        return self._namespace

    async def info(self) -> ResourceInfo:
        """The resolved resource (discovery on first call)."""
        if self._info is None:
            spec = self._spec
            assert not isinstance(spec, ResourceInfo)
            self._info = await self._client.resolve(spec)
        return self._info

    def _object_namespace(self, info: ResourceInfo, *candidates: str | None) -> str | None:
        if not info.namespaced:
            return None
        for candidate in candidates:
            if candidate:
                return _check_namespace(candidate)
        return self._namespace or self._client.config.namespace

    async def list(self, options: ListOptions | None = None) -> ObjectList:
        """One page of the collection. Each item gets ``apiVersion`` and ``kind`` from the
        list (the server leaves them out), in place, without copying."""
        info = await self.info()
        query = (options or ListOptions()).to_query()
        accept = _META_LIST_ACCEPT + "," + _JSON if self._metadata_only else _JSON
        data = await self._client.request(
            "GET",
            info.collection_path(self._namespace),
            query=query,
            accept=accept,
            max_bytes=self._client._max_list_bytes,
        )
        if not isinstance(data, dict):
            raise TransportError(f"LIST of {info.gvr} answered with a non-object")
        items = data.get("items") or []
        api_version = data.get("apiVersion") or info.gvr.api_version
        list_kind = data.get("kind") or ""
        kind = list_kind[:-4] if list_kind.endswith("List") else info.kind
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        meta = data.get("metadata") or {}
        return ObjectList(
            items=items,
            resource_version=meta.get("resourceVersion") or "",
            continue_=meta.get("continue") or None,
            remaining_item_count=meta.get("remainingItemCount"),
            kind=kind or None,
            api_version=api_version,
        )

    def watch(
        self, options: ListOptions | None = None, *, inactivity_timeout: float | None = None
    ) -> AsyncGenerator[WatchEvent, None]:
        """Open a watch (``?watch=1`` plus ``options``); an async generator of events.

        The stream raises :class:`WatchTimeout` after ``inactivity_timeout`` seconds
        without a byte (default: see :class:`Client`). Closing the generator, or
        cancelling its consumer, closes the connection.
        """
        opts = options or ListOptions()
        deadline = self._client._watch_deadline(opts, inactivity_timeout)

        @contextlib.asynccontextmanager
        async def open_response() -> AsyncIterator[aiohttp.ClientResponse]:
            info = await self.info()
            query = opts.to_query()
            query["watch"] = "1"
            # A watch's events are single objects: client-go's metadata client asks for
            # PartialObjectMetadata here (asked for a list, kube-apiserver fails to convert
            # each event and sends the full objects).
            accept = self._object_accept()
            async with self._client.stream(
                "GET",
                info.collection_path(self._namespace),
                query=query,
                accept=accept,
                read_timeout=deadline,
            ) as response:
                yield response

        return read_watch_stream(open_response, max_line_bytes=self._client._max_object_bytes)

    def _object_accept(self) -> str:
        return _META_OBJECT_ACCEPT + "," + _JSON if self._metadata_only else _JSON

    async def get(
        self, name: str, namespace: str | None = None, *, subresource: str | None = None
    ) -> dict[str, Any]:
        """The object ``name`` (its ``subresource``, e.g. ``"scale"``, when given). Raises
        :class:`NotFound` when absent."""
        info = await self.info()
        ns = self._object_namespace(info, namespace)
        result: dict[str, Any] = await self._client.request(
            "GET", info.object_path(name, ns, subresource), accept=self._object_accept()
        )
        return result

    async def create(
        self,
        obj: Mapping[str, Any],
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Create ``obj``; its namespace is ``namespace``, else its own, else the bound
        one, else the config's. Raises :class:`AlreadyExists` for a taken name."""
        info = await self.info()
        meta = obj.get("metadata") or {}
        ns = self._object_namespace(info, namespace, meta.get("namespace"))
        query = {"fieldManager": field_manager} if field_manager else None
        result: dict[str, Any] = await self._client.request(
            "POST", info.collection_path(ns), query=query, json=obj, accept=self._object_accept()
        )
        return result

    async def update(
        self,
        obj: Mapping[str, Any],
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Replace ``obj`` (PUT), or with ``subresource="status"`` only its status. With
        ``metadata.resourceVersion`` set, a stale object raises :class:`Conflict`."""
        info = await self.info()
        meta = obj.get("metadata") or {}
        ns = self._object_namespace(info, namespace, meta.get("namespace"))
        query = {"fieldManager": field_manager} if field_manager else None
        result: dict[str, Any] = await self._client.request(
            "PUT",
            info.object_path(meta.get("name", ""), ns, subresource),
            query=query,
            json=obj,
            accept=self._object_accept(),
        )
        return result

    async def patch(
        self,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool | None = None,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Patch ``name``: JSON merge patch, strategic merge patch, JSON patch (a list of
        operations) or server-side apply (needs ``field_manager``; ``force`` takes over
        conflicting fields). ``subresource="status"`` patches only the status."""
        content_type = _PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch_type {patch_type!r}")
        if patch_type == "json" and not isinstance(patch, list):
            raise ValueError("a JSON patch is a list of operations")
        if patch_type == "apply" and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        if subresource is not None:
            _check_subresource(subresource)
        info = await self.info()
        ns = self._object_namespace(info, namespace)
        query: dict[str, str] = {}
        if field_manager:
            query["fieldManager"] = field_manager
        if force is not None:
            query["force"] = "true" if force else "false"
        result: dict[str, Any] = await self._client.request(
            "PATCH",
            info.object_path(name, ns, subresource),
            query=query or None,
            json=patch,
            content_type=content_type,
            accept=self._object_accept(),
        )
        return result

    async def delete(
        self,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Delete ``name``; returns the object (being deleted) or a ``Status``.
        ``preconditions`` takes ``uid`` and/or ``resourceVersion``."""
        info = await self.info()
        ns = self._object_namespace(info, namespace)
        options: dict[str, Any] = {}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        body = {"apiVersion": "v1", "kind": "DeleteOptions", **options} if options else None
        result: dict[str, Any] = await self._client.request(
            "DELETE", info.object_path(name, ns), json=body
        )
        return result

    def __repr__(self) -> str:
        spec = self._info.gvr if self._info is not None else self._spec
        ns = "*" if self._namespace is None else self._namespace
        meta = " metadata-only" if self._metadata_only else ""
        return f"<ResourceClient {spec} ns={ns!r}{meta}>"
