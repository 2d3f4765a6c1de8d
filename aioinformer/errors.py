"""The exception tree of aioinformer.

Every error the library raises on purpose derives from :class:`AioinformerError`.
Third-party errors (aiohttp, ssl, orjson) never escape: they are translated at one
boundary, :func:`map_transport_errors` / :func:`api_error_from_response`, and chained
with ``raise ... from exc`` so the original cause stays visible::

    AioinformerError
    ├── ConfigError                      kubeconfig / in-cluster config unusable      (not retried)
    ├── KeyFuncError (ValueError)        an object has no usable metadata for a key   (not retried)
    ├── SelectorError (ValueError)       a label or field selector does not parse     (not retried)
    ├── UnknownResourceError             discovery does not know a resource           (not retried)
    ├── FIFOClosedError                  DeltaFIFO.pop() after close() and drain      (terminal)
    ├── InformerStoppedError             handler added to a stopped informer          (terminal)
    ├── Requeue                          "put this item back" signal (FIFO, controller)
    ├── LeadershipLost                   leadership lost inside ``leadership()``      (terminal)
    ├── ShutDown                         WorkQueue.get() on a shut-down, empty queue  (terminal)
    ├── QueueEmpty                       WorkQueue.get_nowait() with nothing ready
    ├── TransportError                   no usable HTTP answer: timeout, bad JSON (reflectors retry)
    │   ├── ConnectionFailed             cannot connect (``refused`` tells refusal apart)
    │   │   └── TLSVerificationError     the server's certificate was rejected        (not retried)
    │   └── WatchError                   a watch stream broke: garbage/truncated line (re-watched)
    │       └── WatchTimeout             silent past the inactivity deadline (re-watched)
    └── ApiError                         the server answered with a non-2xx ``Status``
        ├── BadRequest                   400
        ├── Unauthorized                 401 (credentials refreshed once, then raised)
        ├── Forbidden                    403
        ├── NotFound                     404
        ├── Conflict                     409
        │   └── AlreadyExists            409 with reason AlreadyExists
        ├── Gone (= ResourceExpired)     410, whatever the reason: the reflector relists
        ├── UnprocessableEntity          422
        ├── TooManyRequests              429, ``retry_after`` from the Retry-After header
        └── ServerError                  5xx (504 "Too large resource version" included)

Whether an error is retried is the caller's decision; the notes above describe what the
reflector and client do with them.
"""

from __future__ import annotations

import contextlib
import errno
import ssl
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = [
    "AioinformerError",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "FIFOClosedError",
    "Forbidden",
    "Gone",
    "InformerStoppedError",
    "KeyFuncError",
    "LeadershipLost",
    "NotFound",
    "QueueEmpty",
    "Requeue",
    "ResourceExpired",
    "SelectorError",
    "ServerError",
    "ShutDown",
    "TLSVerificationError",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "UnknownResourceError",
    "UnprocessableEntity",
    "WatchError",
    "WatchTimeout",
    "api_error_from_response",
    "api_error_from_status",
    "map_transport_errors",
]


class AioinformerError(Exception):
    """Base of every error raised by aioinformer on purpose."""


class ConfigError(AioinformerError):
    """Raised when a kubeconfig or the in-cluster environment cannot be used.

    The message names the file, the context and the field at fault. Never retried.
    """


class KeyFuncError(AioinformerError, ValueError):
    """Raised by key functions for an object without usable ``metadata.name``."""


class SelectorError(AioinformerError, ValueError):
    """Raised before any request when a label or field selector does not parse."""


class UnknownResourceError(AioinformerError):
    """Raised when discovery does not know the resource a user asked for."""


class FIFOClosedError(AioinformerError):
    """Raised by ``DeltaFIFO.pop()`` once the FIFO is closed and drained."""


class InformerStoppedError(AioinformerError):
    """Raised by ``add_event_handler()`` on an informer that has stopped."""


class Requeue(AioinformerError):
    """Asks for an item to be put back.

    Raised by a ``DeltaFIFO.pop()`` ``process`` callback with the error that caused it:
    the key goes to the back of the queue and ``pop()`` raises ``err``. A controller's
    reconcile may raise (or return) it with ``after=`` seconds to be retried later.
    """

    def __init__(self, err: BaseException | None = None, *, after: float | None = None) -> None:
        super().__init__(err if err is not None else f"requeue after {after}s")
        self.err = err
        self.after = after


class LeadershipLost(AioinformerError):
    """Raised on leaving ``async with elector.leadership():`` when leadership was lost inside.

    The body was cancelled when the loss was noticed; this error replaces that cancellation.
    """


class ShutDown(AioinformerError):
    """Raised by ``WorkQueue.get()`` once the queue is shut down and has nothing queued."""


class QueueEmpty(AioinformerError):
    """Raised by ``WorkQueue.get_nowait()`` when no item is ready."""


class TransportError(AioinformerError):
    """The request did not produce an HTTP answer (network, TLS, broken stream)."""


class ConnectionFailed(TransportError):
    """Could not connect to the API server.

    ``refused`` is true when the server actively refused the connection (nothing
    listening), which reflectors treat as "back off and re-watch", not "relist".
    """

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


class TLSVerificationError(ConnectionFailed):
    """The server's certificate failed verification. Never downgraded to insecure."""


class WatchError(TransportError):
    """A watch stream broke: a garbage or truncated line, or the body ended mid-object."""


class WatchTimeout(WatchError):
    """A watch sent no bytes for longer than its inactivity deadline."""


class ApiError(AioinformerError):
    """The API server answered with a non-2xx status.

    Carries the decoded ``Status``: ``code``, ``reason``, ``message`` and ``details``.
    ``ApiError(status)`` accepts the ``Status`` as a dict or a model; use
    :func:`api_error_from_status` to get the subclass matching its code.
    """

    code: int = 0

    def __init__(self, status: Mapping[str, Any] | Any | None = None) -> None:
        if status is None:
            data: dict[str, Any] = {}
        elif isinstance(status, Mapping):
            data = dict(status)
        else:  # a pydantic Status model
            data = status.model_dump(by_alias=True, exclude_none=True)
        self.status: dict[str, Any] = data
        code = data.get("code")
        if isinstance(code, int) and code:
            self.code = code
        self.reason: str = str(data.get("reason") or "")
        self.message: str = str(data.get("message") or "")
        details = data.get("details")
        self.details: dict[str, Any] = dict(details) if isinstance(details, Mapping) else {}
        super().__init__(self._describe())

    def _describe(self) -> str:
        parts = [f"{self.code}"]
        if self.reason:
            parts.append(self.reason)
        text = " ".join(parts)
        return f"{text}: {self.message}" if self.message else text


class BadRequest(ApiError):
    """400: the request was malformed (bad selector, invalid options)."""

    code = 400


class Unauthorized(ApiError):
    """401: credentials missing or rejected (after one refresh of rotating credentials)."""

    code = 401


class Forbidden(ApiError):
    """403: the credentials may not do this (verb, resource or namespace)."""

    code = 403


class NotFound(ApiError):
    """404: the object, or the resource type, does not exist."""

    code = 404


class Conflict(ApiError):
    """409: a resourceVersion precondition failed (optimistic concurrency)."""

    code = 409


class AlreadyExists(Conflict):
    """409 with reason ``AlreadyExists``: create of a name already taken."""


class Gone(ApiError):
    """410: the requested resourceVersion is too old (compacted); relist."""

    code = 410


ResourceExpired = Gone


class UnprocessableEntity(ApiError):
    """422: the object failed validation."""

    code = 422


class TooManyRequests(ApiError):
    """429: throttled. ``retry_after`` (seconds) comes from the Retry-After header."""

    code = 429

    def __init__(
        self, status: Mapping[str, Any] | Any | None = None, *, retry_after: float | None = None
    ) -> None:
        super().__init__(status)
        if retry_after is None:
            raw = self.details.get("retryAfterSeconds")
            retry_after = float(raw) if isinstance(raw, int | float) else None
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx: the server failed (including 504 for a too-large resourceVersion)."""

    code = 500


_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: UnprocessableEntity,
    429: TooManyRequests,
}


def api_error_from_status(
    status: Mapping[str, Any], *, code: int | None = None, retry_after: float | None = None
) -> ApiError:
    """Build the :class:`ApiError` subclass matching a ``Status`` (or an HTTP ``code``)."""
    data = dict(status)
    if code is not None and not data.get("code"):
        data["code"] = code
    raw_code = data.get("code")
    value = raw_code if isinstance(raw_code, int) else (code or 0)
    if value == 409 and data.get("reason") == "AlreadyExists":
        return AlreadyExists(data)
    cls = _BY_CODE.get(value)
    if cls is TooManyRequests:
        return TooManyRequests(data, retry_after=retry_after)
    if cls is not None:
        return cls(data)
    if value >= 500:
        return ServerError(data)
    return ApiError(data)


def _parse_retry_after(headers: Mapping[str, str]) -> float | None:
    raw = headers.get("Retry-After")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None


def api_error_from_response(
    code: int, body: bytes, headers: Mapping[str, str] | None = None
) -> ApiError:
    """Translate a non-2xx HTTP answer into an :class:`ApiError`.

    ``body`` is decoded as a ``Status`` when it is one; anything else (an HTML error
    page from a proxy, say) becomes a synthetic ``Status`` whose message quotes the
    start of the body.
    """
    import orjson  # local: errors.py stays importable without the transport stack

    headers = headers or {}
    try:
        decoded = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        status: dict[str, Any] = decoded
    else:
        snippet = body[:200].decode("utf-8", "replace").strip()
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "message": snippet or f"HTTP {code}",
        }
    return api_error_from_status(status, code=code, retry_after=_parse_retry_after(headers))


@contextlib.contextmanager
def map_transport_errors(url: str, *, streaming: bool = False) -> Iterator[None]:
    """Translate aiohttp, ssl, orjson and OS errors raised inside the block.

    The one place where third-party transport errors become ours. ``url`` is named in
    the message (never a header, so no credential can leak into it). ``streaming`` marks
    the block as reading a watch stream: a read timeout there is a :class:`WatchTimeout`
    and a broken connection a :class:`WatchError`; elsewhere a read timeout is a plain
    :class:`TransportError`. Cancellation is never translated.
    """
    import aiohttp  # local: keeps errors.py at the bottom of the import graph
    import orjson

    try:
        yield
    except AioinformerError:
        raise
    except aiohttp.ClientConnectorCertificateError as exc:
        raise TLSVerificationError(
            f"TLS verification of {url} failed: {exc.certificate_error}"
        ) from exc
    except aiohttp.ClientSSLError as exc:
        raise TLSVerificationError(f"TLS handshake with {url} failed: {exc}") from exc
    except aiohttp.ClientConnectorError as exc:
        refused = isinstance(exc.os_error, ConnectionRefusedError) or (
            exc.os_error.errno == errno.ECONNREFUSED
        )
        what = "refused" if refused else "failed"
        raise ConnectionFailed(
            f"connection to {url} {what}: {exc.os_error.strerror or exc}", refused=refused
        ) from exc
    except aiohttp.ConnectionTimeoutError as exc:
        raise ConnectionFailed(f"connecting to {url} timed out") from exc
    except aiohttp.ServerTimeoutError as exc:
        if streaming:
            raise WatchTimeout(f"no data from {url} within the inactivity deadline") from exc
        raise TransportError(f"no answer from {url} within the read timeout") from exc
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
        if streaming:
            raise WatchError(f"connection to {url} broke mid-stream: {exc}") from exc
        raise ConnectionFailed(f"connection to {url} broke before a full answer: {exc}") from exc
    except aiohttp.ClientError as exc:
        raise ConnectionFailed(f"request to {url} failed: {exc}") from exc
    except ssl.SSLError as exc:
        raise TLSVerificationError(f"TLS error talking to {url}: {exc}") from exc
    except ConnectionRefusedError as exc:
        raise ConnectionFailed(f"connection to {url} refused", refused=True) from exc
    except (ConnectionResetError, BrokenPipeError) as exc:
        if streaming:
            raise WatchError(f"connection to {url} was reset: {exc}") from exc
        raise ConnectionFailed(f"connection to {url} was reset: {exc}") from exc
    except orjson.JSONDecodeError as exc:
        # The body is not quoted: it may hold Secret data.
        raise TransportError(f"the answer from {url} is not valid JSON: {exc.msg}") from exc
    except TimeoutError as exc:
        # aiohttp's overall request deadline; asyncio.timeout() scopes outside this block
        # see a CancelledError here, which is not caught.
        raise TransportError(f"request to {url} timed out") from exc
