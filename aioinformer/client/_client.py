"""The :class:`Client`: one connection to one API server, and the door to everything else.

Role: the object users build (``Client(config)``, ``Client.from_env()``) and hand to
informers. Input: a :class:`~aioinformer.config.Config` and keyword-only options
(timeouts, size limits, pool size). Output: :class:`~aioinformer.client.ResourceClient`
objects for resources, names resolved through discovery, and raw requests.

The client itself holds no request logic: it validates its options, then owns an
:class:`~aioinformer.client._http.HttpSession` (session, credentials, TLS, limits,
deadlines) and a :class:`~aioinformer.client._discovery.Discovery` cache built on it.
Resource clients it makes share that HTTP layer.

Task model: sync constructor; the HTTP session opens on first use inside the running loop;
every method runs in the calling task. Ordering: none beyond the caller's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from aioinformer.client._discovery import Discovery
from aioinformer.client._http import (
    DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_OBJECT_BYTES,
    JSON,
    USER_AGENT,
    HttpSession,
)
from aioinformer.client._resource import ResourceClient
from aioinformer.config import Config, load_config

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Mapping

    import aiohttp

    from aioinformer.client._names import GVR, ResourceInfo

__all__ = ["Client"]


class Client:
    """A connection to one API server. Use as ``async with Client(config) as client:``.

    ``request_timeout`` bounds the silence while waiting for an ordinary answer (seconds
    between bytes, so a big LIST is not cut short). ``watch_inactivity_timeout``, when
    set, is the silence after which a watch raises ``WatchTimeout``; by default a watch
    has no read deadline, because the reflector reading it owns that deadline (its own
    ``watch_inactivity_timeout``). Set it for watches read without a reflector. The HTTP
    session is opened on first use inside the running loop; :meth:`close` (or leaving
    ``async with``) closes it.

    Size limits keep a broken or hostile server from filling memory: ``max_object_bytes``
    (default 64 MiB, :data:`DEFAULT_MAX_OBJECT_BYTES`) bounds a single-object answer (get,
    create, update, patch, delete, discovery, error bodies) and each watch line;
    ``max_list_bytes`` (default 2 GiB, :data:`DEFAULT_MAX_LIST_BYTES`) bounds one LIST
    answer. A body announcing more (``Content-Length``) is refused before it is read, one
    without a length is read until it passes the limit; either raises
    :class:`~aioinformer.errors.TransportError` naming the size and the limit (a watch
    line, :class:`~aioinformer.errors.WatchError`).

    Compression: an answer read whole (a LIST, a get, a write's answer) asks for gzip,
    which kube-apiserver uses for answers over 128 KiB. A watch asks for none
    (``Accept-Encoding: identity``) unless ``watch_compression=True``: kube-apiserver 1.37
    compresses a streaming list as one gzip member per event, which costs the client some
    12 µs of CPU more per event of a 4.7 KiB Pod (2.5 times an uncompressed stream's in
    the default cache) for a third of the bytes (the figures are on the documentation's
    "When the cache is live" page); turn it on where bandwidth costs more than CPU. Either
    way every member of a gzip body is read, with any aiohttp version: the client inflates
    bodies itself.
    """

    def __init__(
        self,
        config: Config,
        *,
        request_timeout: float = 60.0,
        connect_timeout: float = 30.0,
        watch_inactivity_timeout: float | None = None,
        max_connections: int = 100,
        user_agent: str = USER_AGENT,
        max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES,
        max_list_bytes: int = DEFAULT_MAX_LIST_BYTES,
        watch_compression: bool = False,
    ) -> None:
        if max_object_bytes <= 0:
            raise ValueError(f"max_object_bytes must be positive, got {max_object_bytes!r}")
        if max_list_bytes <= 0:
            raise ValueError(f"max_list_bytes must be positive, got {max_list_bytes!r}")
        self._config = config
        self._http = HttpSession(
            config,
            request_timeout=request_timeout,
            connect_timeout=connect_timeout,
            watch_read_timeout=watch_inactivity_timeout,
            max_connections=max_connections,
            user_agent=user_agent,
            max_object_bytes=max_object_bytes,
            max_list_bytes=max_list_bytes,
            watch_compression=watch_compression,
        )
        """The HTTP layer; :class:`ResourceClient` is handed it."""
        self._discovery = Discovery(self._http)

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
        return self._http.session

    async def __aenter__(self) -> Self:
        self._http.ensure_session()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the session and every pooled connection. Idempotent."""
        await self._http.close()

    # -- requests --------------------------------------------------------------------

    def stream(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str = JSON,
        read_timeout: float | None = None,
    ) -> contextlib.AbstractAsyncContextManager[aiohttp.ClientResponse]:
        """Send a request; yield the (2xx) response with its body unread.

        ``read_timeout`` bounds the silence between bytes (default: ``request_timeout``).
        The request asks for no compression (``Accept-Encoding: identity``) and aiohttp
        decodes nothing: the body is read as the server sent it (check
        ``Content-Encoding`` if a proxy on the way might compress anyway).
        Non-2xx answers raise :class:`ApiError` subclasses; a 401 first refreshes
        rotating credentials and retries once. On exit the connection goes back to the
        pool if the body was read to the end, and is closed otherwise.
        """
        return self._http.stream(
            method,
            path,
            read_timeout=self._http.request_timeout if read_timeout is None else read_timeout,
            query=query,
            body=body,
            content_type=content_type,
            accept=accept,
        )

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        json: Any = None,
        content_type: str | None = None,
        accept: str = JSON,
        max_bytes: int | None = None,
    ) -> Any:
        """Send a request (``json`` serialised with orjson) and return the decoded answer
        (``None`` for an empty body). ``path`` starts with ``/`` and is already quoted.

        An answer over ``max_bytes`` (default: the client's ``max_object_bytes``) raises
        :class:`TransportError` without being read past the limit."""
        return await self._http.request(
            method,
            path,
            query=query,
            json=json,
            content_type=content_type,
            accept=accept,
            max_bytes=max_bytes,
        )

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
        return ResourceClient(
            self._http, self._discovery, resource, namespace, metadata_only=metadata_only
        )

    def __repr__(self) -> str:
        http = self._http
        state = "closed" if http.closed else ("open" if http.session else "idle")
        context = f" context={self._config.context!r}" if self._config.context else ""
        return f"<Client {self._config.host!r}{context} {state}>"
