"""The client's HTTP layer: one aiohttp session with credentials, TLS, limits and timeouts.

Role: send one request to the API server and hand back its 2xx answer. Input: a method,
a path (already quoted), query parameters, a body and the media types. Output: the
response with its body unread (:meth:`HttpSession.stream`) or read and decoded with
orjson (:meth:`HttpSession.request`). A non-2xx answer raises the matching
:class:`~aioinformer.errors.ApiError`, a transport failure a
:class:`~aioinformer.errors.TransportError`, both through :mod:`aioinformer.client._transport`.

* The aiohttp session (pooled keep-alive connections, TLS, proxy) is created lazily on the
  first request, inside the running loop, so a client can be built outside one.
* Credentials come from :class:`~aioinformer.client._auth.Authenticator`; a 401 refreshes
  rotating credentials (token file, exec plugin) and retries the request once.
* Size limits keep a broken or hostile server from filling memory: a body announcing more
  than its limit is refused before it is read, one without a length once what was read
  passes it (:class:`~aioinformer.client._transport.BodyTooLarge`).
* Each request carries its own read deadline (silence between bytes): the request timeout
  for an ordinary answer, whatever the caller asks for a stream (``None``: none at all).
* Each request names the one content coding it accepts (``Accept-Encoding``): ``gzip``
  for an answer read whole (:meth:`HttpSession.request`), what the caller says for a
  stream. aiohttp's own decompression is off for every request: it drops every gzip member
  after the first before aiohttp 3.14, and kube-apiserver 1.37 sends a streaming list as
  one member per event; :func:`read_body` and :mod:`aioinformer.watch` inflate gzip
  themselves (:mod:`aioinformer.client._encoding`), every member of it.
* Every connection has TCP keepalive on (:func:`keepalive_socket`): a peer that vanished
  without closing (a dead NAT entry, a node gone) is found within about 90 s even on a
  silent watch, inside the reflector's own 120 s inactivity deadline.
* With an installed metrics provider that implements
  :class:`~aioinformer._kernel.metrics.RestClientMetricsProvider` (read when the session opens),
  every request sent is counted by status code and method once its response headers
  arrive (``"<error>"`` when it failed first; a cancelled request is not counted), each
  attempt of a retried one included, and a request whose answer is read whole
  (:meth:`HttpSession.request`, not a stream such as a watch) has its duration observed
  under client-go's URL template, as client-go's REST client does.

This is the internal interface :class:`~aioinformer.client.Client` and
:class:`~aioinformer.client.ResourceClient` share; its limits and timeouts are read here,
not from the client. Ordering: none beyond the caller's. Task model: every method runs in
the calling task and spawns nothing. Nothing is logged per request.
"""

from __future__ import annotations

import contextlib
import socket
from typing import TYPE_CHECKING, Any, Final

import aiohttp
import orjson
import yarl

from aioinformer._kernel.clock import default_clock
from aioinformer._objects.view import json_default
from aioinformer.client._auth import Authenticator, Credentials
from aioinformer.client._encoding import GZIP, IDENTITY, body_reader
from aioinformer.client._metrics import NO_REST_CLIENT_METRICS, new_rest_client_metrics
from aioinformer.client._tls import ssl_context
from aioinformer.client._transport import (
    BodyTooLarge,
    BodyUnreadable,
    api_error_from_response,
    map_transport_errors,
)
from aioinformer.client._watch import CHUNK_SIZE, DEFAULT_MAX_LINE_BYTES
from aioinformer.errors import Unauthorized

if TYPE_CHECKING:
    import ssl
    from collections.abc import AsyncIterator, Mapping

    from aiohappyeyeballs import AddrInfoType

    from aioinformer.client._metrics import RestClientMetrics
    from aioinformer.config import Config

__all__ = [
    "DEFAULT_MAX_LIST_BYTES",
    "DEFAULT_MAX_OBJECT_BYTES",
    "JSON",
    "KEEPALIVE_COUNT",
    "KEEPALIVE_IDLE",
    "KEEPALIVE_INTERVAL",
    "KEEPALIVE_USER_TIMEOUT",
    "USER_AGENT",
    "HttpSession",
    "keepalive_socket",
    "read_body",
]

JSON: Final = "application/json"
USER_AGENT: Final = "aioinformer/0.1.0"

DEFAULT_MAX_OBJECT_BYTES: Final = DEFAULT_MAX_LINE_BYTES
"""Largest single-object answer (and watch line) accepted by default: 64 MiB, far above
kube-apiserver's 3 MiB request limit and etcd's object limit of about 1.5 MiB."""
DEFAULT_MAX_LIST_BYTES: Final = 2 * 1024 * 1024 * 1024
"""Largest LIST answer accepted by default: 2 GiB. An unpaginated relist of a large
cluster's Pods runs to hundreds of MiB; a page of 500 objects stays far below this."""

KEEPALIVE_IDLE: Final = 30
"""Seconds a connection may be idle before the first keepalive probe."""
KEEPALIVE_INTERVAL: Final = 10
"""Seconds between unanswered keepalive probes."""
KEEPALIVE_COUNT: Final = 6
"""Unanswered probes after which the connection is dead: found 30 + 6 x 10 = 90 s after
the peer went silent."""
KEEPALIVE_USER_TIMEOUT: Final = 90_000
"""Milliseconds sent data may stay unacknowledged (``TCP_USER_TIMEOUT``, Linux): the same
bound for a peer that vanished while a request was being sent."""


def _set_option(sock: socket.socket, level: int, name: str, value: int) -> None:
    """Set ``socket.<name>`` where this platform has it; skip it where it has not."""
    option = getattr(socket, name, None)
    if option is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(level, option, value)


def keepalive_socket(addr_info: AddrInfoType) -> socket.socket:
    """A new socket for ``addr_info`` with TCP keepalive on (aiohttp's ``socket_factory``).

    Options a platform lacks are left at its defaults: ``TCP_KEEPIDLE`` (on macOS
    ``TCP_KEEPALIVE``), ``TCP_KEEPINTVL``, ``TCP_KEEPCNT`` and ``TCP_USER_TIMEOUT``.
    """
    family, type_, proto, _, _ = addr_info
    sock = socket.socket(family=family, type=type_, proto=proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    tcp = socket.IPPROTO_TCP
    idle = "TCP_KEEPIDLE" if hasattr(socket, "TCP_KEEPIDLE") else "TCP_KEEPALIVE"
    _set_option(sock, tcp, idle, KEEPALIVE_IDLE)
    _set_option(sock, tcp, "TCP_KEEPINTVL", KEEPALIVE_INTERVAL)
    _set_option(sock, tcp, "TCP_KEEPCNT", KEEPALIVE_COUNT)
    _set_option(sock, tcp, "TCP_USER_TIMEOUT", KEEPALIVE_USER_TIMEOUT)
    return sock


async def read_body(response: aiohttp.ClientResponse, limit: int, url: str) -> bytes:
    """The whole body of ``response`` (read with aiohttp's decompression off), a gzip
    body inflated, every member of it.

    Refused with :class:`BodyTooLarge` once it is known to exceed ``limit`` bytes, as
    sent or once inflated: at once when ``Content-Length`` says so, else as soon as what
    was read passes the limit (a chunked or compressed body). A body in a coding that
    cannot be read raises :class:`~aioinformer.client._encoding.CompressedBodyError`,
    which :func:`map_transport_errors` translates."""
    announced = response.content_length
    if announced is not None and announced > limit:
        raise BodyTooLarge(
            f"{url} answered with a body of {announced} bytes, over the limit of {limit} bytes"
        )
    reader = body_reader(response.headers.get("Content-Encoding"))
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(CHUNK_SIZE):
        for piece in (chunk,) if reader is None else reader.feed(chunk):
            size = _keep(parts, piece, size, limit, url)
    if reader is not None:
        for piece in reader.finish():
            size = _keep(parts, piece, size, limit, url)
    return b"".join(parts)


def _keep(parts: list[bytes], piece: bytes, size: int, limit: int, url: str) -> int:
    """Append ``piece`` to ``parts``, which hold ``size`` bytes; the new size, or
    :class:`BodyTooLarge` once it passes ``limit``."""
    size += len(piece)
    if size > limit:
        raise BodyTooLarge(
            f"{url} answered with a body of more than {limit} bytes "
            f"(at least {size} bytes), over the limit of {limit} bytes"
        )
    parts.append(piece)
    return size


class HttpSession:
    """Requests to one API server over one lazily opened aiohttp session.

    The options are the :class:`~aioinformer.client.Client`'s (validated there) and do not
    change after construction.
    """

    def __init__(
        self,
        config: Config,
        *,
        request_timeout: float,
        connect_timeout: float,
        watch_read_timeout: float | None,
        max_connections: int,
        user_agent: str,
        max_object_bytes: int,
        max_list_bytes: int,
        watch_compression: bool = False,
    ) -> None:
        self.config = config
        self.request_timeout = request_timeout
        """Read deadline of an ordinary request, in seconds between bytes."""
        self.watch_read_timeout = watch_read_timeout
        """Read deadline of a watch unless the watch asks for its own; ``None``: none."""
        self.max_object_bytes = max_object_bytes
        """Limit on a single-object answer, an error body and a watch line; positive."""
        self.max_list_bytes = max_list_bytes
        """Limit on one LIST answer; positive."""
        self.watch_encoding = GZIP if watch_compression else IDENTITY
        """The ``Accept-Encoding`` of a watch: ``identity`` unless compression was asked."""
        self.auth = Authenticator(config)
        self._connect_timeout = connect_timeout
        self._max_connections = max_connections
        self._user_agent = user_agent
        self._https = config.host.startswith("https:")
        self.session: aiohttp.ClientSession | None = None
        """The open session; ``None`` before the first request and after :meth:`close`."""
        self.closed = False
        """Set by :meth:`close`; once set, ``session`` stays ``None``."""
        # The TLS context for a client certificate an exec plugin returned, and which
        # credentials it was built for (rebuilt when the plugin hands out a new one).
        self._exec_tls: tuple[Credentials, ssl.SSLContext] | None = None
        # The request metrics' recorder, chosen when the session opens.
        self._metrics: RestClientMetrics = NO_REST_CLIENT_METRICS

    def ensure_session(self) -> aiohttp.ClientSession:
        """The session, opened now if need be. ``RuntimeError`` once closed; a TLS config
        that cannot be used raises :class:`~aioinformer.errors.ConfigError`."""
        if self.session is not None:
            return self.session
        if self.closed:
            raise RuntimeError("this Client is closed")
        ssl_arg: ssl.SSLContext | bool = True
        if self._https:
            ssl_arg = ssl_context(self.config)
        connector = aiohttp.TCPConnector(
            ssl=ssl_arg, limit=self._max_connections, socket_factory=keepalive_socket
        )
        self.session = aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": self._user_agent},
        )
        self._metrics = new_rest_client_metrics(self.config.host, None, clock=default_clock)
        return self.session

    async def close(self) -> None:
        """Close the session and every pooled connection. Idempotent."""
        self.closed = True
        session, self.session = self.session, None
        if session is not None:
            await session.close()

    def _tls_for(self, credentials: Credentials) -> ssl.SSLContext | None:
        if credentials.cert_pem is None or credentials.key_pem is None or not self._https:
            return None
        if self._exec_tls is None or self._exec_tls[0] is not credentials:
            context = ssl_context(
                self.config, cert_pem=credentials.cert_pem, key_pem=credentials.key_pem
            )
            self._exec_tls = (credentials, context)
        return self._exec_tls[1]

    @contextlib.asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        *,
        read_timeout: float | None,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str = JSON,
        accept_encoding: str = IDENTITY,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """Send a request; yield the (2xx) response with its body unread, as sent.

        ``read_timeout`` bounds the silence between bytes, in seconds; ``None`` sets no
        bound. ``accept_encoding`` is the one content coding asked for (``identity`` or
        ``gzip``); whatever the server sends, aiohttp does not decode it: the reader
        does (:func:`read_body`, :mod:`aioinformer.watch`). Non-2xx answers raise
        :class:`~aioinformer.errors.ApiError` subclasses; a 401 first refreshes rotating
        credentials and retries once. On exit the connection goes back to the pool if the
        body was read to the end, and is closed otherwise.
        """
        session = self.ensure_session()
        url = yarl.URL(self.config.host + path, encoded=True)
        label = str(url)
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self._connect_timeout, sock_read=read_timeout
        )
        retried = False
        while True:
            credentials = await self.auth.credentials()
            headers = {"Accept": accept, "Accept-Encoding": accept_encoding}
            if credentials.authorization is not None:
                headers["Authorization"] = credentials.authorization
            if content_type is not None:
                headers["Content-Type"] = content_type
            tls = self._tls_for(credentials)
            extra: dict[str, Any] = {}
            if tls is not None:
                extra["ssl"] = tls
            if self._https and self.config.tls_server_name:
                extra["server_hostname"] = self.config.tls_server_name
            with map_transport_errors(label):
                try:
                    response = await session.request(
                        method,
                        url,
                        params=query,
                        data=body,
                        headers=headers,
                        timeout=timeout,
                        proxy=self.config.proxy_url,
                        allow_redirects=False,
                        auto_decompress=False,
                        **extra,
                    )
                except Exception:
                    self._metrics.unanswered(method)
                    raise
            self._metrics.answered(method, response.status)
            try:
                if response.status == 401 and not retried and self.auth.refreshable:
                    retried = True
                    if await self.auth.refresh(credentials):
                        continue
                if not 200 <= response.status < 300:
                    try:
                        with map_transport_errors(label):
                            payload = await read_body(response, self.max_object_bytes, label)
                    except (BodyTooLarge, BodyUnreadable):
                        # The status still says what went wrong; the body is not needed.
                        payload = b""
                    error = api_error_from_response(response.status, payload, response.headers)
                    if isinstance(error, Unauthorized):
                        # Which credentials were refused, and where they come from.
                        sent = self.config.describe_credentials()
                        error = Unauthorized(error.status, credentials=sent)
                    raise error
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
        accept: str = JSON,
        max_bytes: int | None = None,
    ) -> Any:
        """Send a request (``json`` serialised with orjson) and return the decoded answer
        (``None`` for an empty body), read within the request timeout. It asks for
        ``gzip``: kube-apiserver compresses answers over 128 KiB, a large LIST's say.

        An answer over ``max_bytes`` (default: ``max_object_bytes``) raises
        :class:`~aioinformer.errors.TransportError` without being read past the limit."""
        body = None if json is None else orjson.dumps(json, default=json_default)
        if body is not None and content_type is None:
            content_type = JSON
        url, payload = await self.request_bytes(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            accept=accept,
            max_bytes=max_bytes,
        )
        with map_transport_errors(url):
            return orjson.loads(payload) if payload else None

    async def request_bytes(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str = JSON,
        max_bytes: int | None = None,
    ) -> tuple[str, bytes]:
        """As :meth:`request`, but return the URL asked (without its query) and the body
        undecoded, for callers that decode it their own way."""
        limit = self.max_object_bytes if max_bytes is None else max_bytes
        self.ensure_session()
        metrics = self._metrics
        started = metrics.started()
        try:
            async with self.stream(
                method,
                path,
                read_timeout=self.request_timeout,
                query=query,
                body=body,
                content_type=content_type,
                accept=accept,
                accept_encoding=GZIP,
            ) as response:
                url = str(response.url.with_query(None))
                with map_transport_errors(url):
                    payload = await read_body(response, limit, url)
        except Exception:
            metrics.finished(method, path, query, started)
            raise
        metrics.finished(method, path, query, started)
        return url, payload
