"""How the fake API server's admission chain reaches a webhook: one HTTPS POST.

Role: the transport of ``_admission``. Input is a webhook of a stored configuration and
the ``AdmissionReview`` to send it; output is the body of its 2xx answer, or
:class:`~aioinformer.testing._admission_review.CallFailed` naming what went wrong, worded
as kube-apiserver's client words the common cases (``dial tcp 127.0.0.1:PORT: connect:
connection refused``, ``context deadline exceeded``, ``tls: failed to verify
certificate: ...`` with Python's account of the certificate, a non-2xx answer).

The URL is the configuration's ``url``, or ``https://<name>.<namespace>.svc:<port><path>``
for a ``service`` reference, a name resolved to 127.0.0.1 (the fake has no cluster
network: the webhook listens on the test's machine) and verified as the certificate's
name; kube-apiserver's ``?timeout=<n>s`` is added. The server is verified against the
``caBundle``, or the system's roots without one; the whole call is bounded by
``timeoutSeconds`` of real time, whatever clock the fake runs on.

Task model: :func:`post_review` is awaited by the request's handler task; each call opens
and closes its own ``aiohttp`` session.
"""

from __future__ import annotations

import base64
import socket
import ssl
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
from aiohttp.abc import AbstractResolver, ResolveResult

from aioinformer.testing._admission_review import CallFailed
from aioinformer.testing._spec_fields import _dict

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aioinformer.testing._admission_rules import Webhook

__all__ = ["post_review", "webhook_url"]


class _ServiceResolver(AbstractResolver):
    """Resolves ``<service>.<namespace>.svc`` to 127.0.0.1 (the fake has no cluster
    network: a service's webhook listens on the test's machine) and other names as
    usual."""

    def __init__(self) -> None:
        self._default = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host.endswith(".svc"):
            return [
                {
                    "hostname": host,
                    "host": "127.0.0.1",
                    "port": port,
                    "family": socket.AF_INET,
                    "proto": 0,
                    "flags": socket.AI_NUMERICHOST,
                }
            ]
        return await self._default.resolve(host, port, family)

    async def close(self) -> None:
        await self._default.close()


def webhook_url(spec: Mapping[str, Any]) -> str:
    """Where a webhook is posted to, with kube-apiserver's ``timeout`` parameter."""
    config = _dict(spec.get("clientConfig"))
    url = config.get("url")
    if not isinstance(url, str):
        service = _dict(config.get("service"))
        path = service.get("path") or ""
        host = f"{service.get('name')}.{service.get('namespace')}.svc"
        url = f"https://{host}:{service.get('port', 443)}{path}"
    timeout = spec.get("timeoutSeconds", 10)
    return f"{url}?timeout={timeout}s"


def _ssl_context(spec: Mapping[str, Any]) -> ssl.SSLContext:
    bundle = _dict(spec.get("clientConfig")).get("caBundle")
    if not bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(str(bundle)).decode()
        return ssl.create_default_context(cadata=pem)
    except (ValueError, ssl.SSLError) as exc:
        raise CallFailed(
            f"could not get REST client: unable to load root certificates: {exc}"
        ) from None


async def post_review(hook: Webhook, review: dict[str, Any]) -> bytes:
    """POST the review; the answer's body, or :class:`CallFailed` naming what went wrong
    (in Go's words for the common cases)."""
    url = webhook_url(hook.spec)
    context = _ssl_context(hook.spec)
    connector = aiohttp.TCPConnector(ssl=context, resolver=_ServiceResolver())
    timeout = aiohttp.ClientTimeout(total=hook.timeout)
    try:
        async with (
            aiohttp.ClientSession(connector=connector, timeout=timeout) as session,
            session.post(
                url,
                data=orjson.dumps(review),
                headers={"Content-Type": "application/json", "Accept": "application/json, */*"},
            ) as response,
        ):
            body = await response.read()
            if not 200 <= response.status < 300:
                raise CallFailed(_status_reason(response.status, body))
            return body
    except TimeoutError:
        raise CallFailed(
            f'failed to call webhook: Post "{url}": context deadline exceeded'
        ) from None
    except aiohttp.ClientConnectorCertificateError as exc:
        raise CallFailed(
            f'failed to call webhook: Post "{url}": tls: failed to verify certificate: '
            f"{exc.certificate_error}"
        ) from None
    except aiohttp.ClientConnectorError as exc:
        if isinstance(exc.os_error, ConnectionRefusedError):
            detail = f"dial tcp {exc.host}:{exc.port}: connect: connection refused"
        else:
            detail = str(exc)
        raise CallFailed(f'failed to call webhook: Post "{url}": {detail}') from None
    except aiohttp.ClientError as exc:
        raise CallFailed(f'failed to call webhook: Post "{url}": {exc}') from None


def _status_reason(code: int, body: bytes) -> str:
    """What client-go reports of a webhook's non-2xx answer."""
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status" and status.get("message"):
        return str(status["message"])
    text = body.decode(errors="replace").strip()
    if text:
        return f'an error on the server ("{text}") has prevented the request from succeeding'
    return f"the server responded with the status code {code} but did not return more information"
