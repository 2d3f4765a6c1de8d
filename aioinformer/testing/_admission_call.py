"""How the fake API server's admission chain reaches a webhook: one HTTPS POST.

Role: the transport of ``_admission``. Input is a webhook of a stored configuration and
the ``AdmissionReview`` to send it; output is the body of its 2xx answer, or
:class:`~aioinformer.testing._admission_review.CallFailed` naming what went wrong, worded
as kube-apiserver's client words the common cases (``dial tcp 127.0.0.1:PORT: connect:
connection refused``, ``context deadline exceeded``, ``tls: failed to verify
certificate: ...`` with Python's account of the certificate, a non-2xx answer).

The URL is the configuration's ``url``, or for a ``service`` reference
``https://<name>.<namespace>.svc:<port><path>``, connected to where ``_webhook_address``
resolves it (the server's ``webhook_services`` entry, else 127.0.0.1 at the reference's
port) and verified as the certificate's name; kube-apiserver's ``?timeout=<n>s`` is
added. The server is verified against the
``caBundle``, or the system's roots without one; the whole call is bounded by
``timeoutSeconds`` of real time, whatever clock the fake runs on.

Task model: :func:`post_review` is awaited by the request's handler task; each call opens
and closes its own ``aiohttp`` session.
"""

from __future__ import annotations

import base64
import ssl
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

from aioinformer.testing._admission_review import CallFailed
from aioinformer.testing._spec_fields import _dict
from aioinformer.testing._webhook_address import WebhookAddress, service_address, url_address

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aioinformer.testing._admission_rules import Webhook

__all__ = ["post_review", "webhook_address"]


def webhook_address(
    spec: Mapping[str, Any], services: Mapping[tuple[str, str], tuple[str, int]]
) -> WebhookAddress:
    """Where a webhook is posted to (see ``_webhook_address``), with kube-apiserver's
    ``timeout`` parameter."""
    config = _dict(spec.get("clientConfig"))
    query = f"?timeout={spec.get('timeoutSeconds', 10)}s"
    url = config.get("url")
    if isinstance(url, str):
        return url_address(url, query)
    service = _dict(config.get("service"))
    return service_address(
        str(service.get("namespace") or ""),
        str(service.get("name") or ""),
        int(service.get("port") or 443),
        str(service.get("path") or ""),
        query,
        services,
    )


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


async def post_review(
    hook: Webhook,
    review: dict[str, Any],
    services: Mapping[tuple[str, str], tuple[str, int]],
) -> bytes:
    """POST the review (a ``service`` reference resolved through ``services``, see
    ``_webhook_address``); the answer's body, or :class:`CallFailed` naming what went
    wrong (in Go's words for the common cases)."""
    address = webhook_address(hook.spec, services)
    url = address.shown
    context = _ssl_context(hook.spec)
    connector = aiohttp.TCPConnector(ssl=context)
    timeout = aiohttp.ClientTimeout(total=hook.timeout)
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, */*",
        **address.headers(),
    }
    try:
        async with (
            aiohttp.ClientSession(connector=connector, timeout=timeout) as session,
            session.post(
                address.url,
                data=orjson.dumps(review),
                headers=headers,
                server_hostname=address.server_name,
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
