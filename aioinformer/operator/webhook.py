"""The webhook server: admission and conversion webhooks over HTTPS, as controller-runtime's
``webhook.Server``.

Role: serves the handlers registered on it (:meth:`WebhookServer.validate`,
:meth:`WebhookServer.mutate`, :meth:`WebhookServer.add_conversion`) at their paths, with
aiohttp.web, to kube-apiserver. A :class:`~aioinformer.operator.manager.Manager` has one,
``manager.webhooks`` (controller-runtime's ``mgr.GetWebhookServer()``), which it starts
before its informers list (a conversion webhook must answer before a cache can read its
custom resources) and closes after its controllers stopped; it listens only when something
is registered. It can also run alone: ``async with WebhookServer(options) as server:``.

Input: HTTPS ``POST`` requests with ``Content-Type: application/json`` and an
AdmissionReview v1 or ConversionReview v1 body. Output: the review's answer (200); 400 with
a ``Status`` naming what is wrong for another content type, an empty or undecodable body or
one that is not a review; 405 for another method; 404 for a path nothing is registered at;
500 with the message of a conversion handler that raised (logged with its traceback).
What a handler's outcome answers is :mod:`aioinformer.operator.admission`'s.

Certificates (:class:`WebhookOptions`): ``tls.crt`` and ``tls.key`` from ``cert_dir``
(where cert-manager's Secret is mounted), read again when they change (checked at most every
``cert_reload_interval`` seconds, at a new connection: new connections get the new pair, open
ones keep theirs; a broken new pair leaves the old one serving and is logged); or, with
``self_signed``, a CA and a certificate for those names made at the start (needs
``pip install 'aioinformer[webhooks]'``), whose CA :attr:`WebhookServer.ca_bundle` gives
the generated configuration. A missing or broken pair at the start raises
:class:`WebhookCertificateError` naming the file.

Metrics (controller-runtime's names, label ``webhook`` = the path):
``controller_runtime_webhook_requests_total{webhook,code}``,
``controller_runtime_webhook_latency_seconds{webhook}`` and
``controller_runtime_webhook_requests_in_flight{webhook}``, through the installed metrics
provider (see :mod:`aioinformer.contrib.prometheus`).

Task model: aiohttp's server runs on the caller's event loop, one request handler task per
request (aiohttp's); :meth:`WebhookServer.start` returns once the socket listens,
:meth:`WebhookServer.close` once it and every connection are closed.

Example::

    manager = Manager(client, webhook=WebhookOptions(cert_dir="/certs"))

    @manager.webhooks.validate(group="example.com", version="v1", resource="widgets",
                               kind="Widget")
    def check(request: AdmissionRequest[dict[str, Any]]) -> None:
        if request.object and request.object["spec"].get("size", 0) > 10:
            raise Denied("spec.size must be at most 10")
"""

from __future__ import annotations

import enum
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    Protocol,
    TypedDict,
    TypeVar,
    overload,
    runtime_checkable,
)

import orjson
from aiohttp import web

from aioinformer._kernel.clock import default_clock
from aioinformer.operator._endpoints import parse_address
from aioinformer.operator._metrics import WebhookMetrics, new_webhook_metrics
from aioinformer.operator._webhook_tls import CertificateWatcher, SelfSignedPair, make_self_signed
from aioinformer.operator._webhook_tls import WebhookCertificateError as WebhookCertificateError
from aioinformer.operator.admission import (
    AdmissionWebhook,
    BadReview,
    FailurePolicy,
    MatchPolicy,
    Operation,
    ReinvocationPolicy,
    Rule,
    Scope,
    SideEffects,
    WebhookType,
    default_webhook_name,
    default_webhook_path,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence
    from types import TracebackType
    from typing import Unpack

    from pydantic import BaseModel

    from aioinformer._kernel.clock import Clock

__all__ = [
    "AdmissionSettings",
    "ConversionHandler",
    "DEFAULT_CERT_DIR",
    "WebhookCertificateError",
    "WebhookOptions",
    "WebhookServer",
    "WebhookServerState",
]

logger = logging.getLogger(__name__)

DEFAULT_CERT_DIR: Final = Path(tempfile.gettempdir()) / "k8s-webhook-server" / "serving-certs"
"""Where the certificate files are read from unless told: controller-runtime's default,
``/tmp/k8s-webhook-server/serving-certs``."""

_F = TypeVar("_F", bound="Callable[..., Any]")


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookOptions:
    """How a :class:`WebhookServer` listens and what it serves with (the Manager's
    ``webhook`` option; controller-runtime's ``webhook.Options``)."""

    address: str = ":9443"
    """``"host:port"`` to listen on (``":9443"``: every interface, controller-runtime's
    port; port 0 picks a free one)."""
    cert_dir: str | Path | None = None
    """The directory holding the certificate and key; ``None``: :data:`DEFAULT_CERT_DIR`
    (unless ``self_signed``)."""
    cert_name: str = "tls.crt"
    """The certificate file's name in ``cert_dir`` (the chain, leaf first)."""
    key_name: str = "tls.key"
    """The private key file's name in ``cert_dir``."""
    self_signed: tuple[str, ...] = ()
    """For development: serve a certificate for these DNS names and IP addresses, signed
    by a CA made at the start (:attr:`WebhookServer.ca_bundle`), instead of ``cert_dir``'s
    files. Needs ``cryptography`` (``pip install 'aioinformer[webhooks]'``)."""
    cert_reload_interval: float = 10.0
    """At most how often, in seconds of the clock, a new connection checks whether the
    files changed; 0: at every connection."""

    def __post_init__(self) -> None:
        parse_address(self.address, option="webhook address")
        if self.self_signed and self.cert_dir is not None:
            raise ValueError("webhook options: give cert_dir or self_signed, not both")
        if self.cert_reload_interval < 0:
            raise ValueError(f"cert_reload_interval must be >= 0, got {self.cert_reload_interval}")
        for name in (self.cert_name, self.key_name):
            if not name or "/" in name:
                raise ValueError(f"a certificate file name has no '/', got {name!r}")


class AdmissionSettings(TypedDict, total=False):
    """The keywords of :meth:`WebhookServer.validate` and :meth:`WebhookServer.mutate`:
    those of :meth:`WebhookServer.register`, which says what each does."""

    group: str
    version: str
    resource: str
    kind: str
    operations: Sequence[Operation | str]
    scope: Scope
    rules: Sequence[Rule]
    name: str
    failure_policy: FailurePolicy
    match_policy: MatchPolicy
    side_effects: SideEffects
    timeout_seconds: int
    namespace_selector: Mapping[str, Any] | None
    object_selector: Mapping[str, Any] | None
    reinvocation_policy: ReinvocationPolicy | None
    model: type[BaseModel] | None


@runtime_checkable
class ConversionHandler(Protocol):
    """What :meth:`WebhookServer.add_conversion` serves: a CRD's conversion webhook
    (see :mod:`aioinformer.operator.conversion`)."""

    crd_name: str
    """The CustomResourceDefinition converted, ``"widgets.example.com"``."""

    async def review(self, review: Mapping[str, Any]) -> dict[str, Any]:
        """The ConversionReview v1 answer to ``review``. Never raises for a bad request:
        it answers ``response.result.status: Failure``."""
        ...


class WebhookServerState(enum.Enum):
    """Where a :class:`WebhookServer` is in its life."""

    NEW = "new"
    """Handlers may be registered; not listening."""
    IDLE = "idle"
    """Started with nothing registered, so not listening; nothing more can be registered."""
    SERVING = "serving"
    """Listening; handlers registered now are served at once."""
    CLOSED = "closed"
    """Closed; it does not start again."""


@dataclass(frozen=True, slots=True)
class _Route:
    """A path's handler and its recorder."""

    answer: Callable[[Any], Awaitable[dict[str, Any]]]
    metrics: WebhookMetrics


class WebhookServer:
    """Serves admission and conversion webhooks over HTTPS (see the module docstring)."""

    def __init__(
        self, options: WebhookOptions | None = None, *, clock: Clock | None = None
    ) -> None:
        self.options: WebhookOptions = options if options is not None else WebhookOptions()
        """What this server was built with."""
        self._host, self._port = parse_address(self.options.address, option="webhook address")
        self._clock = clock if clock is not None else default_clock
        self._admission: dict[str, AdmissionWebhook] = {}
        self._conversions: dict[str, ConversionHandler] = {}
        self._routes: dict[str, _Route] = {}
        self._state = WebhookServerState.NEW
        self._runner: web.AppRunner | None = None
        self._bound: str | None = None
        self._watcher: CertificateWatcher | None = None
        self._self_signed: SelfSignedPair | None = None
        # The self-signed pair's files, removed on close.
        self._scratch: Path | None = None

    # -- registration -----------------------------------------------------------------

    @overload
    def validate(
        self,
        path: str | None = None,
        handler: None = None,
        /,
        **settings: Unpack[AdmissionSettings],
    ) -> Callable[[_F], _F]: ...
    @overload
    def validate(
        self, path: str | None, handler: _F, /, **settings: Unpack[AdmissionSettings]
    ) -> AdmissionWebhook: ...
    def validate(
        self,
        path: str | None = None,
        handler: Callable[..., Any] | None = None,
        /,
        **settings: Unpack[AdmissionSettings],
    ) -> Callable[[_F], _F] | AdmissionWebhook:
        """Register a validating handler at ``path``: ``handler(request)``, sync or async,
        allows by returning ``None``, ``True`` or :class:`~aioinformer.operator.admission.Allowed`
        and denies by raising or returning :class:`~aioinformer.operator.admission.Denied`.
        As a decorator without ``handler`` (the function is returned as it is), or called
        with it (the registration is returned). ``settings`` are :meth:`register`'s."""
        if handler is not None:
            return self.register("validating", handler, path=path, **settings)

        def decorate(fn: _F) -> _F:
            self.register("validating", fn, path=path, **settings)
            return fn

        return decorate

    @overload
    def mutate(
        self,
        path: str | None = None,
        handler: None = None,
        /,
        **settings: Unpack[AdmissionSettings],
    ) -> Callable[[_F], _F]: ...
    @overload
    def mutate(
        self, path: str | None, handler: _F, /, **settings: Unpack[AdmissionSettings]
    ) -> AdmissionWebhook: ...
    def mutate(
        self,
        path: str | None = None,
        handler: Callable[..., Any] | None = None,
        /,
        **settings: Unpack[AdmissionSettings],
    ) -> Callable[[_F], _F] | AdmissionWebhook:
        """Register a mutating handler at ``path``: ``handler(obj, request)``, sync or async,
        edits ``obj`` (a deep copy of ``request.object``, a model instance with ``model=``)
        in place; the answer carries the JSONPatch of its edits. It may deny as a
        validating handler does. Decorator and call forms as :meth:`validate`."""
        if handler is not None:
            return self.register("mutating", handler, path=path, **settings)

        def decorate(fn: _F) -> _F:
            self.register("mutating", fn, path=path, **settings)
            return fn

        return decorate

    def register(
        self,
        webhook_type: WebhookType,
        handler: Callable[..., Any],
        *,
        path: str | None = None,
        group: str | None = None,
        version: str | None = None,
        resource: str | None = None,
        kind: str | None = None,
        operations: Sequence[Operation | str] = (Operation.CREATE, Operation.UPDATE),
        scope: Scope = "*",
        rules: Sequence[Rule] | None = None,
        name: str | None = None,
        failure_policy: FailurePolicy = "Fail",
        match_policy: MatchPolicy = "Equivalent",
        side_effects: SideEffects = "None",
        timeout_seconds: int = 10,
        namespace_selector: Mapping[str, Any] | None = None,
        object_selector: Mapping[str, Any] | None = None,
        reinvocation_policy: ReinvocationPolicy | None = None,
        model: type[BaseModel] | None = None,
    ) -> AdmissionWebhook:
        """Register an admission ``handler`` and return its registration.

        What it is called for: ``rules`` (a sequence of
        :class:`~aioinformer.operator.admission.Rule`), or one rule from ``group``
        (``""`` for the core group), ``version``, ``resource`` (the plural, or
        ``"widgets/status"``), ``operations`` and ``scope``. ``path`` defaults to
        controller-runtime's ``/validate-<group-with-dashes>-<version>-<kind>`` (needs
        ``kind``, else the resource's name stands in), ``name`` to
        ``vwidget.example.com``; the other settings are the configuration's (see
        :class:`~aioinformer.operator.admission.AdmissionWebhook`). Raises ``ValueError``
        for a setting kube-apiserver refuses (side effects other than ``None`` or
        ``NoneOnDryRun``, a timeout outside 1..30, a name that is not fully qualified),
        for a path already taken, or with neither ``rules`` nor a resource; ``RuntimeError``
        once the server started idle or closed."""
        if self._state in (WebhookServerState.IDLE, WebhookServerState.CLOSED):
            raise RuntimeError(
                f"the webhook server is {self._state.value}: register webhooks before it starts"
            )
        if rules is None:
            if group is None or version is None or resource is None:
                raise ValueError(
                    "an admission webhook needs rules=[Rule(...)] or group=, version= and resource="
                )
            rules = [
                Rule(
                    operations=tuple(operations),
                    api_groups=(group,),
                    api_versions=(version,),
                    resources=(resource,),
                    scope=scope,
                )
            ]
        elif group is not None or version is not None or resource is not None:
            raise ValueError("give rules= or group=/version=/resource=, not both")
        first = rules[0] if rules else None
        term = kind or (first.resources[0].split("/")[0] if first else "")
        if (path is None or name is None) and (
            first is None or "*" in (first.api_groups[0], first.api_versions[0], term)
        ):
            raise ValueError("give path= and name= for a webhook whose rule has wildcards")
        group_name = first.api_groups[0] if first else ""
        webhook = AdmissionWebhook(
            type=webhook_type,
            path=path
            if path is not None
            else default_webhook_path(
                webhook_type, group_name, first.api_versions[0] if first else "", term
            ),
            name=name if name is not None else default_webhook_name(webhook_type, group_name, term),
            handler=handler,
            rules=tuple(rules),
            failure_policy=failure_policy,
            match_policy=match_policy,
            side_effects=side_effects,
            timeout_seconds=timeout_seconds,
            namespace_selector=namespace_selector,
            object_selector=object_selector,
            reinvocation_policy=reinvocation_policy,
            model=model,
        )
        self._check_free(webhook.path)
        if any(w.name == webhook.name and w.type == webhook_type for w in self._admission.values()):
            raise ValueError(f"a {webhook_type} webhook named {webhook.name!r} is registered")
        self._admission[webhook.path] = webhook
        self._routes[webhook.path] = _Route(
            webhook.review, new_webhook_metrics(webhook.path, clock=self._clock)
        )
        return webhook

    def add_conversion(self, handler: ConversionHandler, path: str = "/convert") -> None:
        """Serve ``handler``'s ConversionReviews at ``path``. A handler with a ``check()``
        (a :class:`~aioinformer.operator.conversion.Conversion`) is checked now, so a version
        converted one way only fails here rather than on every review. ``ValueError`` for a
        path taken or not starting with ``/``; ``RuntimeError`` once started idle or closed."""
        if self._state in (WebhookServerState.IDLE, WebhookServerState.CLOSED):
            raise RuntimeError(
                f"the webhook server is {self._state.value}: register webhooks before it starts"
            )
        if not isinstance(handler, ConversionHandler):
            raise TypeError(
                f"add_conversion() takes a ConversionHandler (crd_name and async review()), "
                f"got {handler!r}"
            )
        if not path.startswith("/") or "?" in path:
            raise ValueError(f"a webhook path starts with '/' and has no query, got {path!r}")
        self._check_free(path)
        check = getattr(handler, "check", None)
        if callable(check):
            check()
        self._conversions[path] = handler
        self._routes[path] = _Route(handler.review, new_webhook_metrics(path, clock=self._clock))

    def _check_free(self, path: str) -> None:
        if path in self._routes:
            raise ValueError(f"the webhook path {path} is already served")

    @property
    def admission_webhooks(self) -> list[AdmissionWebhook]:
        """The admission handlers registered, in registration order."""
        return list(self._admission.values())

    @property
    def conversions(self) -> dict[str, ConversionHandler]:
        """The conversion handlers registered, by path."""
        return dict(self._conversions)

    @property
    def has_handlers(self) -> bool:
        """Something is registered: the server listens when started."""
        return bool(self._routes)

    # -- certificates -----------------------------------------------------------------

    @property
    def ca_bundle(self) -> bytes | None:
        """With ``self_signed``: the CA's PEM, which the configuration's ``caBundle``
        carries (made on first use, once per server); else ``None`` (cert-manager's CA
        injector fills ``caBundle``, or pass it to
        :func:`~aioinformer.operator.manifests.webhook_manifests`)."""
        if not self.options.self_signed:
            return None
        return self._pair().ca_pem

    def _pair(self) -> SelfSignedPair:
        if self._self_signed is None:
            self._self_signed = make_self_signed(self.options.self_signed)
        return self._self_signed

    @property
    def cert_files(self) -> tuple[Path, Path]:
        """The certificate and key files served (the self-signed pair's once started)."""
        if self._watcher is not None:
            return self._watcher.cert_file, self._watcher.key_file
        cert_dir = Path(self.options.cert_dir) if self.options.cert_dir else DEFAULT_CERT_DIR
        return cert_dir / self.options.cert_name, cert_dir / self.options.key_name

    @property
    def certificates(self) -> CertificateWatcher | None:
        """The certificate files' watcher while serving: its ``reload()`` checks them now."""
        return self._watcher

    # -- running ----------------------------------------------------------------------

    @property
    def state(self) -> WebhookServerState:
        return self._state

    @property
    def address(self) -> str | None:
        """The bound ``"host:port"`` while serving (the real port when 0 was asked)."""
        return self._bound

    @property
    def started(self) -> bool:
        """Listening (controller-runtime's ``StartedChecker``): what ``/readyz`` needs of a
        server with handlers."""
        return self._state is WebhookServerState.SERVING

    def health(self) -> dict[str, Any]:
        """The server's state for ``Manager.health()``: state, address and paths."""
        return {
            "state": self._state.value,
            "address": self._bound,
            "paths": sorted(self._routes),
        }

    async def start(self) -> None:
        """Listen, or with nothing registered, do nothing more than become ``IDLE``.
        Raises :class:`WebhookCertificateError` for a missing or broken pair,
        ``RuntimeError`` for ``self_signed`` without ``cryptography`` or a second start,
        ``OSError`` when the address cannot be bound."""
        if self._state is not WebhookServerState.NEW:
            raise RuntimeError(f"the webhook server is {self._state.value}; it starts once")
        if not self._routes:
            self._state = WebhookServerState.IDLE
            return
        cert_file, key_file = self.cert_files
        if self.options.self_signed:
            self._scratch = Path(tempfile.mkdtemp(prefix="aioinformer-webhook-"))
            cert_file, key_file = self._pair().write(
                self._scratch, self.options.cert_name, self.options.key_name
            )
        try:
            self._watcher = CertificateWatcher(
                cert_file, key_file, clock=self._clock, interval=self.options.cert_reload_interval
            )
            app = web.Application(client_max_size=8 * 1024 * 1024)
            app.router.add_route("*", "/{path:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
            await runner.setup()
            try:
                site = web.TCPSite(
                    runner, self._host, self._port, ssl_context=self._watcher.context
                )
                await site.start()
            except BaseException:
                await runner.cleanup()
                raise
        except BaseException:
            self._remove_scratch()
            self._watcher = None
            raise
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        port = sockets[0].getsockname()[1] if sockets else self._port
        self._bound = f"{self._host}:{port}"
        self._state = WebhookServerState.SERVING
        logger.info(
            "webhook server: serving %s on %s", ", ".join(sorted(self._routes)), self._bound
        )

    async def close(self) -> None:
        """Stop listening and close every connection; ``CLOSED``. Idempotent."""
        self._state = WebhookServerState.CLOSED
        runner, self._runner = self._runner, None
        self._bound = None
        try:
            if runner is not None:
                await runner.cleanup()
        finally:
            self._remove_scratch()

    def _remove_scratch(self) -> None:
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    async def __aenter__(self) -> WebhookServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- requests ---------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        route = self._routes.get(request.path)
        if route is None:
            return _status(404, "NotFound", f"no webhook is served at {request.path}")
        started = route.metrics.started()
        code = 500
        try:
            response = await self._answer(route, request)
            code = response.status
            return response
        finally:
            route.metrics.finished(started, code)

    async def _answer(self, route: _Route, request: web.Request) -> web.Response:
        if request.method != "POST":
            return _status(405, "MethodNotAllowed", f"{request.method} is not allowed: use POST")
        if request.content_type != "application/json":
            return _status(
                400,
                "BadRequest",
                f"Content-Type {request.content_type or '(none)'} is not allowed: "
                "use application/json",
            )
        body = await request.read()
        if not body:
            return _status(400, "BadRequest", "the request body is empty")
        try:
            review = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return _status(400, "BadRequest", f"the request body is not JSON: {exc}")
        if not isinstance(review, dict):
            return _status(400, "BadRequest", "the request body is not a JSON object")
        try:
            answer = await route.answer(review)
        except BadReview as exc:
            return _status(400, "BadRequest", str(exc))
        except Exception as exc:
            # Blind on purpose: a conversion handler that broke its promise never to raise
            # answers 500 with its message, not aiohttp's traceback page.
            logger.error("webhook %s: the handler raised", request.path, exc_info=exc)
            return _status(500, "InternalError", f"{type(exc).__name__}: {exc}")
        return web.Response(body=orjson.dumps(answer), content_type="application/json")

    def __repr__(self) -> str:
        return (
            f"<WebhookServer state={self._state.name}"
            f" address={self._bound or self.options.address!r}"
            f" paths={sorted(self._routes)}>"
        )


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    return web.Response(status=code, body=orjson.dumps(body), content_type="application/json")
