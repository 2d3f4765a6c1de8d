"""The one boundary where aiohttp, ssl and orjson failures become aioinformer errors.

Role: translate what the transport stack raises into the tree of
:mod:`aioinformer.errors`, so that no third-party exception escapes the library. Input: an
exception raised inside one of the blocks below, or a non-2xx HTTP answer (status code,
body, headers). Output: the matching :class:`~aioinformer.errors.AioinformerError`,
chained to its cause with ``raise ... from exc`` (except where the cause could carry key
material, see :func:`map_tls_config_errors`).

* :func:`map_transport_errors`: around every request and every read of a body (the
  client's request path and :mod:`aioinformer.watch`'s stream reader);
* :func:`api_error_from_response`: a non-2xx answer, its ``Status`` body decoded;
* :func:`map_tls_config_errors`: around building a TLS context from a config;
* :class:`BodyTooLarge`: an answer refused for its size before it was read whole;
* :class:`BodyUnreadable`: an answer whose content coding could not be read.

:mod:`aioinformer.errors` keeps the exception tree and the pure ``Status`` → error
functions, and imports nothing third-party; everything that needs aiohttp, ssl or orjson
to recognise a failure is here. This module is private: the names are not part of the
package's public surface.

Ordering: a translation happens where the failure is raised, in the raising task; errors
of the library and cancellation pass through untouched. Task model: none of its own.
"""

from __future__ import annotations

import contextlib
import errno
import ssl
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

from aioinformer._objects.raw import CompactDecodeError
from aioinformer.client._encoding import CompressedBodyError
from aioinformer.errors import (
    AioinformerError,
    ApiError,
    ConfigError,
    ConnectionFailed,
    TLSVerificationError,
    TransportError,
    WatchError,
    WatchTimeout,
    api_error_from_status,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = [
    "BodyTooLarge",
    "BodyUnreadable",
    "api_error_from_response",
    "map_tls_config_errors",
    "map_transport_errors",
]


class BodyTooLarge(TransportError):
    """A response body over its size limit, raised before reading past the limit.

    Apart from :class:`~aioinformer.errors.TransportError` so that the request path can
    still report the status of an error answer whose body is too large to read.
    """


class BodyUnreadable(TransportError):
    """A response body in a content coding the client cannot read: not gzip though it
    says so, cut short inside a gzip member, or a coding it never asks for.

    Apart from :class:`~aioinformer.errors.TransportError` for the same reason as
    :class:`BodyTooLarge`: an error answer's status still says what went wrong.
    """


def _parse_retry_after(headers: Mapping[str, str]) -> float | None:
    raw = headers.get("Retry-After")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        # An HTTP date is legal too; the Status's retryAfterSeconds then decides.
        return None


def api_error_from_response(
    code: int, body: bytes, headers: Mapping[str, str] | None = None
) -> ApiError:
    """Translate a non-2xx HTTP answer into an :class:`~aioinformer.errors.ApiError`.

    ``body`` is decoded as a ``Status`` when it is one; anything else (an HTML error
    page from a proxy, say) becomes a synthetic ``Status`` whose message quotes the
    start of the body.
    """
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
    """Translate aiohttp, ssl, orjson, OS and content-coding errors raised inside the block.

    ``url`` is named in the message (never a header, so no credential can leak into it).
    ``streaming`` marks the block as reading a watch stream: a read timeout there is a
    :class:`~aioinformer.errors.WatchTimeout`, and a broken connection or a compressed
    body that cannot be read a :class:`~aioinformer.errors.WatchError`; elsewhere a read
    timeout is a plain :class:`~aioinformer.errors.TransportError` and an unreadable body
    a :class:`BodyUnreadable`. Cancellation is never translated.
    """
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
    except CompactDecodeError as exc:
        raise TransportError(f"the answer from {url} is not usable: {exc}") from exc
    except CompressedBodyError as exc:
        if streaming:
            raise WatchError(f"watch on {url} sent a body that cannot be read: {exc}") from exc
        raise BodyUnreadable(f"the answer from {url} cannot be read: {exc}") from exc
    except TimeoutError as exc:
        # aiohttp's overall request deadline; asyncio.timeout() scopes outside this block
        # see a CancelledError here, which is not caught.
        raise TransportError(f"request to {url} timed out") from exc


@contextlib.contextmanager
def map_tls_config_errors(where: str, what: str) -> Iterator[None]:
    """Translate a failure to load TLS material into :class:`~aioinformer.errors.ConfigError`.

    ``where`` names the config (its file or ``"in-cluster"``), ``what`` the material
    (``"certificate authority"``, ``"client certificate or key"``). The cause is not
    chained (``from None``): the message already carries ssl's, which names the failing
    step and never the key material.
    """
    try:
        yield
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigError(f"{where}: {what} is not usable: {exc}") from None
