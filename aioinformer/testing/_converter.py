"""The fake API server's calls to conversion webhooks, as kube-apiserver v1.36 makes them.

Role: converts a custom resource's objects between the version a request names and the
storage version, for definitions with ``spec.conversion.strategy: Webhook``. Input is a
request's resource type and the objects (a write's body, stored entries, watch lines);
output is the objects converted by the definition's webhook (``ConversionReview`` over
HTTPS, see :mod:`~aioinformer.testing._conversion`), or the 500 kube-apiserver answers
when a conversion fails: reading from storage an ``InternalError`` (``Internal error
occurred: conversion webhook for example.com/v1, Kind=Widget failed: Post
"https://127.0.0.1:8443/convert?timeout=30s": dial tcp 127.0.0.1:8443: connect:
connection refused``), converting a write for storage a 500 with no reason and the
bare message (``conversion webhook for example.com/v1beta1, Kind=Widget failed: ...``).
Admission webhooks whose rule names another version (``matchPolicy: Equivalent``) are
sent the request's object converted to it (:meth:`Conversions.convert`).
Metadata-only reads (``PartialObjectMetadata``) are converted too, as kube-apiserver's
per-version storage decodes every object into the version asked for; metadata-only
watches are not. Definitions with
``strategy: None``, the storage version itself and resources without a definition object
(``register_crd``) are passed through untouched.

The webhook is read from the definition stored in the server (re-read when it changes):
``clientConfig.url``, or a ``service`` resolved as admission webhooks' are
(``_webhook_address``: the server's ``webhook_services`` entry when it lists the
service, else 127.0.0.1 at the reference's port; the certificate checked for
``<name>.<namespace>.svc``). The server is verified
against ``caBundle`` (the system's trust store when empty). One request per conversion:
a LIST page's objects in one review, a single object in one, each watch event in one;
none for an empty list. Each call is bounded by ``timeout`` seconds (kube-apiserver's 30)
for connecting, sending and reading the answer; failures are not retried.

Task model: calls run in the request's handler task on the server's event loop, through
one ``aiohttp`` session the server closes when it stops serving.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import ssl
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import aiohttp
import orjson

from aioinformer._apiserver.objects import Entry, StatusError, status_body
from aioinformer.testing._conversion import (
    ConversionFailure,
    WebhookConfig,
    converted_objects,
    gvk_text,
    review_request,
    webhook_config,
)
from aioinformer.testing._resources import CRD_TYPE
from aioinformer.testing._webhook_address import WebhookAddress, service_address, url_address

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from aioinformer._apiserver.objects import ResourceType
    from aioinformer.testing._store import Store

__all__ = ["CONVERSION_TIMEOUT", "Conversions", "conversion_error"]

logger = logging.getLogger(__name__)

CONVERSION_TIMEOUT: Final = 30.0
"""Seconds kube-apiserver gives a conversion webhook call."""
_HOSTNAME_MISMATCH: Final = 62  # OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH
_OBJECT_EVENTS: Final = frozenset({"ADDED", "MODIFIED", "DELETED"})
# client-go's words for an answer's HTTP status it has no Status body for.
_STATUS_TEXT: Final = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "the server does not allow access to the requested resource",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    415: "the server does not support the provided media type",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: (
        "the server was unable to return a response in the time allotted, but may still "
        "be processing the request"
    ),
}


def conversion_error(message: str, *, to_storage: bool = False) -> StatusError:
    """The 500 a failed conversion answers with (``message``: the conversion's error).

    Reading from storage, kube-apiserver wraps it as an ``InternalError`` whose one cause
    is the message; encoding a write for storage, it passes the bare error on, which
    becomes a 500 with no reason and the message alone."""
    if to_storage:
        body = status_body(500, "", message)
        del body["reason"]  # StatusReasonUnknown is empty, which the JSON leaves out
        return StatusError(body)
    return StatusError(
        status_body(
            500,
            "InternalError",
            f"Internal error occurred: {message}",
            {"causes": [{"message": message}]},
        )
    )


@dataclass(frozen=True, slots=True)
class _Read:
    """What one stored definition says of conversion, as of its ``rv``: its webhook
    (``None``: ``strategy: None``) and its storage version."""

    rv: int
    config: WebhookConfig | None
    storage_version: str


@dataclass(frozen=True, slots=True)
class _Hook:
    """The webhook converting one served version, and its definition's storage version
    as a resource type (what the converted objects are stored and read as)."""

    config: WebhookConfig
    storage: ResourceType


def _go_duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration`` prints it in a request's ``timeout``."""
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms"


class Conversions:
    """The conversion webhooks of one server's definitions (see the module docstring).

    Invariants: ``_read`` maps a definition's name to what was read of it at the
    resourceVersion it carries (a changed definition is read again); ``_contexts`` one
    ``SSLContext`` per CA bundle; ``_session`` is ``None`` until the first call and after
    :meth:`close`.
    """

    def __init__(
        self,
        store: Store,
        *,
        timeout: float = CONVERSION_TIMEOUT,
        services: Mapping[tuple[str, str], tuple[str, int]] | None = None,
    ) -> None:
        self._store = store
        self.timeout = timeout
        # Shared with the server, which the test may add to.
        self.services: Mapping[tuple[str, str], tuple[str, int]] = (
            services if services is not None else {}
        )
        self._read: dict[str, _Read] = {}
        self._contexts: dict[bytes, ssl.SSLContext] = {}
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        """Close the HTTP session and its connections (a later call opens another)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    # -- what needs converting -------------------------------------------------------------

    def _hook(self, rt: ResourceType) -> _Hook | None:
        """The webhook converting ``rt``'s objects, when ``rt`` is not the storage
        version of a definition with ``strategy: Webhook``."""
        if not rt.group:
            return None
        name = f"{rt.plural}.{rt.group}"
        entry = self._store.table(CRD_TYPE).entries.get(name)
        if entry is None:
            return None
        read = self._read.get(name)
        if read is None or read.rv != entry.rv:
            crd = entry.decode()
            versions = (crd.get("spec") or {}).get("versions") or ()
            storage = next((v["name"] for v in versions if v.get("storage") is True), "")
            read = self._read[name] = _Read(entry.rv, webhook_config(crd), storage)
        if read.config is None or read.storage_version == rt.version:
            return None
        return _Hook(read.config, dataclasses.replace(rt, version=read.storage_version))

    def converts(self, rt: ResourceType) -> bool:
        """Whether objects read or written as ``rt`` go through a webhook."""
        return self._hook(rt) is not None

    # -- conversions -----------------------------------------------------------------------

    async def to_storage(
        self, rt: ResourceType, obj: dict[str, Any]
    ) -> tuple[ResourceType, dict[str, Any]]:
        """A write's object sent as ``rt``, converted to the storage version, with the
        resource type to store it as (``rt`` and ``obj`` as they are when no webhook
        converts them)."""
        hook = self._hook(rt)
        if hook is None:
            return rt, obj
        sent = {**obj, "apiVersion": rt.api_version, "kind": rt.kind}
        gvk = gvk_text(rt.api_version, rt.kind)
        [converted] = await self._call(
            hook.config, [sent], hook.storage.api_version, gvk, is_list=False, to_storage=True
        )
        return hook.storage, converted

    async def convert(
        self, obj: dict[str, Any], source: ResourceType, desired: ResourceType
    ) -> dict[str, Any]:
        """An object of version ``source`` as version ``desired`` of the same resource
        has it, in one review (what admission webhooks are sent under ``matchPolicy:
        Equivalent``); only the apiVersion changes when no webhook converts them. A
        failure is the ``InternalError`` of a read's."""
        hook = self._hook(source) or self._hook(desired)
        if hook is None or source.version == desired.version:
            return {**obj, "apiVersion": desired.api_version, "kind": desired.kind}
        sent = {**obj, "apiVersion": source.api_version, "kind": source.kind}
        gvk = gvk_text(source.api_version, source.kind)
        [converted] = await self._call(hook.config, [sent], desired.api_version, gvk, is_list=False)
        return converted

    async def entry(self, rt: ResourceType, entry: Entry) -> Entry:
        """A stored object as version ``rt`` has it."""
        [converted] = await self.entries(rt, [entry], is_list=False)
        return converted

    async def entries(
        self, rt: ResourceType, entries: Sequence[Entry], *, is_list: bool = True
    ) -> list[Entry]:
        """Stored objects as version ``rt`` has them: a list's in one review."""
        hook = self._hook(rt)
        if hook is None or not entries:
            return list(entries)
        storage = hook.storage.api_version
        sent = [{"apiVersion": storage, "kind": rt.kind, **e.decode()} for e in entries]
        gvk = gvk_text(storage, rt.kind + ("List" if is_list else ""))
        converted = await self._call(hook.config, sent, rt.api_version, gvk, is_list=is_list)
        return [Entry(obj, e.rv) for obj, e in zip(converted, entries, strict=True)]

    async def lines(self, rt: ResourceType, lines: list[bytes]) -> list[bytes]:
        """A watch's lines with each event's object as version ``rt`` has it (one review
        per event); bookmarks and errors go as they are."""
        hook = self._hook(rt)
        if hook is None:
            return lines
        storage = hook.storage.api_version
        gvk = gvk_text(storage, rt.kind)
        out = []
        for line in lines:
            event = orjson.loads(line)
            obj = event.get("object") if isinstance(event, dict) else None
            if event.get("type") not in _OBJECT_EVENTS or not isinstance(obj, dict):
                out.append(line)
                continue
            sent = {**obj, "apiVersion": storage}
            [converted] = await self._call(hook.config, [sent], rt.api_version, gvk, is_list=False)
            out.append(orjson.dumps({"type": event["type"], "object": converted}) + b"\n")
        return out

    # -- the call ------------------------------------------------------------------------

    def _context(self, ca_bundle: bytes) -> ssl.SSLContext:
        context = self._contexts.get(ca_bundle)
        if context is None:
            if ca_bundle:
                context = ssl.create_default_context(cadata=ca_bundle.decode("ascii"))
            else:
                context = ssl.create_default_context()
            self._contexts[ca_bundle] = context
        return context

    def _endpoint(self, config: WebhookConfig) -> WebhookAddress:
        """Where the webhook is called (see ``_webhook_address``)."""
        query = f"?timeout={_go_duration(self.timeout)}"
        if config.service is None:
            return url_address(config.url or "", query)
        namespace, name, port, path = config.service
        return service_address(namespace, name, port, path, query, self.services)

    def _session_for_call(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        return self._session

    async def _call(
        self,
        config: WebhookConfig,
        objects: list[dict[str, Any]],
        desired: str,
        gvk: str,
        *,
        is_list: bool,
        to_storage: bool = False,
    ) -> list[dict[str, Any]]:
        """One review of ``objects`` to ``desired``: the converted objects, or the 500
        of kube-apiserver's message (see :func:`conversion_error`)."""
        uid = str(uuid.uuid4())
        review_version = config.review_version
        try:
            answer = await self._post(config, review_request(review_version, uid, desired, objects))
        except ConversionFailure as exc:
            message = f"conversion webhook for {gvk} failed: {exc}"
            logger.debug("%s", message)
            raise conversion_error(message, to_storage=to_storage) from None
        try:
            return converted_objects(
                review_version, uid, answer, objects, desired, gvk, is_list=is_list
            )
        except ConversionFailure as exc:
            logger.debug("%s", exc)
            raise conversion_error(str(exc), to_storage=to_storage) from None

    async def _post(self, config: WebhookConfig, review: dict[str, Any]) -> Any:
        """POST ``review`` and decode the answer; :class:`ConversionFailure` with the
        client's words (after ``conversion webhook for <gvk> failed: ``) otherwise."""
        address = self._endpoint(config)
        shown, server_name = address.shown, address.server_name
        try:
            context = self._context(config.ca_bundle)
        except (ssl.SSLError, ValueError):
            raise ConversionFailure(
                f'Post "{shown}": unable to load root certificates: unable to parse bytes '
                "as PEM block"
            ) from None
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, */*",
            **address.headers(),
        }
        session = self._session_for_call()
        try:
            async with (
                asyncio.timeout(self.timeout),
                session.post(
                    address.url,
                    data=orjson.dumps(review),
                    headers=headers,
                    ssl=context,
                    server_hostname=server_name,
                ) as response,
            ):
                status, body = response.status, await response.read()
        except TimeoutError:
            raise ConversionFailure(
                f'Post "{shown}": context deadline exceeded (Client.Timeout exceeded while '
                "awaiting headers)"
            ) from None
        except aiohttp.ClientConnectorCertificateError as exc:
            raise ConversionFailure(
                f'Post "{shown}": tls: failed to verify certificate: '
                + _x509_words(exc.certificate_error, server_name or exc.host)
            ) from None
        except aiohttp.ClientSSLError as exc:
            raise ConversionFailure(f'Post "{shown}": tls: {exc}') from None
        except aiohttp.ClientConnectorError as exc:
            raise ConversionFailure(
                f'Post "{shown}": dial tcp {exc.host}:{exc.port}: connect: connection refused'
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise ConversionFailure(f'Post "{shown}": {exc}') from None
        if not 200 <= status < 300:
            raise ConversionFailure(_status_message(status, body))
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ConversionFailure(f"couldn't get version/kind; json parse error: {exc}") from None


def _x509_words(error: Exception, host: str) -> str:
    """Go's words for a certificate the CA bundle does not verify."""
    if getattr(error, "verify_code", None) == _HOSTNAME_MISMATCH:
        return f"x509: certificate is not valid for {host}"
    return "x509: certificate signed by unknown authority"


def _status_message(status: int, body: bytes) -> str:
    """What client-go says of a non-2xx answer: the message of a ``Status`` body, else
    its words for the code (a 5xx's with the body's text)."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status" and decoded.get("message"):
        return str(decoded["message"])
    text = _STATUS_TEXT.get(status)
    if text is not None:
        return text
    if status >= 500:
        shown = body.decode(errors="replace").strip() or "unknown"
        return f'an error on the server ("{shown}") has prevented the request from succeeding'
    return f"unexpected response status {status}"
