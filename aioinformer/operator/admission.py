"""Admission webhooks: the AdmissionReview v1 request, the handlers' answers, the JSONPatch.

Role: the part of controller-runtime's ``pkg/webhook/admission`` that does not touch the
network. :class:`AdmissionRequest` is a review's request, parsed once; a *validating*
handler looks at it and allows (returns ``None``, ``True`` or :class:`Allowed`) or denies
(raises or returns :class:`Denied`); a *mutating* handler gets a mutable deep copy of the
object, edits it, and the answer carries the RFC 6902 JSONPatch from the object sent to
the object edited (:func:`json_patch`), or no patch when nothing changed.
:class:`AdmissionWebhook` is one registered handler with the settings its
``ValidatingWebhookConfiguration`` or ``MutatingWebhookConfiguration`` entry carries
(:class:`Rule`, failure and match policies, side effects, the timeout, selectors), which
:mod:`aioinformer.operator.manifests` writes out; the server of
:mod:`aioinformer.operator.webhook` calls :meth:`AdmissionWebhook.review`.

Input: an AdmissionReview body, decoded. Output: the AdmissionReview answer, a dict.

What the answer says, as controller-runtime's:

* allowed: ``allowed: true``, the handler's warnings, and for a mutating handler
  ``patchType: JSONPatch`` with the base64 patch when it changed the object;
* denied: ``allowed: false`` and ``status`` with the :class:`Denied`'s code (403 unless
  told), reason and message;
* the handler raised anything else: ``allowed: false``, code 500 and the exception's
  message (logged once, with its traceback);
* the handler ran past the registration's ``timeout_seconds``: it is cancelled and the
  answer is ``allowed: false``, code 504, reason ``Timeout`` (kube-apiserver has given up
  by then and applies the ``failure_policy``, so the answer is mostly for the log).

Dry runs: kube-apiserver sends a ``dryRun`` request only to a webhook that declares it
has no side effects (``sideEffects: None`` or ``NoneOnDryRun``, the only values
``admissionregistration.k8s.io/v1`` accepts, so registration refuses others). A handler
registered ``NoneOnDryRun`` must skip its side effects when :attr:`AdmissionRequest.dry_run`
is true.

Typed handlers: with ``model=`` (a pydantic model, such as a
:class:`~aioinformer.models.KubeObject` subclass or one of :mod:`aioinformer.k8s`), the
request's ``object`` and ``old_object`` are model instances, and a mutating handler edits
one; its patch is the difference between the dumps of the parsed original and of the edited
instance, so parsing and dumping alone never yields a patch.

Task model: :meth:`AdmissionWebhook.review` runs the handler in the caller's task (a sync
handler on the event loop: keep it short), within the timeout.
"""

from __future__ import annotations

import base64
import copy
import enum
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeAlias, TypeVar, cast

import orjson

from aioinformer._kernel.clock import CancelAfter, default_clock
from aioinformer._kernel.runner import is_async_callable

if TYPE_CHECKING:
    import builtins
    from collections.abc import Callable, Mapping, Sequence

    from pydantic import BaseModel

    from aioinformer._kernel.clock import Clock

__all__ = [
    "ADMISSION_REVIEW_VERSION",
    "AdmissionRequest",
    "AdmissionWebhook",
    "Allowed",
    "BadReview",
    "Denied",
    "FailurePolicy",
    "MatchPolicy",
    "Operation",
    "ReinvocationPolicy",
    "Rule",
    "Scope",
    "SideEffects",
    "WebhookType",
    "default_webhook_name",
    "default_webhook_path",
    "json_patch",
]

logger = logging.getLogger(__name__)

ADMISSION_REVIEW_VERSION: Final = "admission.k8s.io/v1"
"""The one AdmissionReview version served (``admissionReviewVersions: ["v1"]``)."""

FailurePolicy: TypeAlias = Literal["Fail", "Ignore"]
"""What kube-apiserver does when the webhook cannot be called or errs: reject the request,
or let it through."""
MatchPolicy: TypeAlias = Literal["Exact", "Equivalent"]
"""Whether a request for another version or group of the same resource (``apps/v1beta1``
for ``apps/v1``) is sent too, converted to the registered one (``Equivalent``)."""
SideEffects: TypeAlias = Literal["None", "NoneOnDryRun"]
"""Whether the handler has side effects; ``NoneOnDryRun``: only when not a dry run."""
ReinvocationPolicy: TypeAlias = Literal["Never", "IfNeeded"]
"""Whether a mutating webhook is called again when a later one changed the object."""
Scope: TypeAlias = Literal["*", "Cluster", "Namespaced"]
"""Which objects a :class:`Rule` matches by scope."""
WebhookType: TypeAlias = Literal["validating", "mutating"]


class Operation(enum.StrEnum):
    """What a request does to the object (``request.operation``)."""

    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    CONNECT = "CONNECT"
    """A ``pods/exec``, ``pods/attach``, ``pods/portforward`` or proxy request."""


class BadReview(ValueError):
    """A body that is not an AdmissionReview v1 with a request: the server answers 400
    with this message. Never retried: the same body fails the same way."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One entry of a webhook's ``rules``: the operations and resources it is called for.

    ``"*"`` matches every group, version, resource or operation; ``"widgets/status"`` a
    subresource, ``"*/*"`` every resource and subresource."""

    operations: tuple[Operation | str, ...] = (Operation.CREATE, Operation.UPDATE)
    """:class:`Operation` values or their names (``"CREATE"``), or ``"*"`` alone."""
    api_groups: tuple[str, ...] = ("*",)
    api_versions: tuple[str, ...] = ("*",)
    resources: tuple[str, ...] = ("*",)
    scope: Scope = "*"

    def __post_init__(self) -> None:
        if not self.operations:
            raise ValueError("a Rule needs at least one operation")
        for op in self.operations:
            if op != "*" and op not in Operation.__members__:
                raise ValueError(
                    f"unknown operation {op!r}: one of CREATE, UPDATE, DELETE, CONNECT"
                )
        for what, values in (
            ("api_groups", self.api_groups),
            ("api_versions", self.api_versions),
            ("resources", self.resources),
        ):
            if not values:
                raise ValueError(f"a Rule needs at least one of {what}")
            if "*" in values and len(values) > 1 and what != "resources":
                raise ValueError(f"{what}: '*' must be alone, got {values!r}")
        if self.scope not in ("*", "Cluster", "Namespaced"):
            raise ValueError(f"scope must be '*', 'Cluster' or 'Namespaced', got {self.scope!r}")

    def as_dict(self) -> dict[str, Any]:
        """The rule as a webhook configuration writes it."""
        return {
            "operations": [str(op) for op in self.operations],
            "apiGroups": list(self.api_groups),
            "apiVersions": list(self.api_versions),
            "resources": list(self.resources),
            "scope": self.scope,
        }


_Obj = TypeVar("_Obj")


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionRequest(Generic[_Obj]):
    """An AdmissionReview v1 ``request``, parsed once (see :meth:`from_review`).

    ``object`` and ``old_object`` are dicts, or instances of the handler's ``model``. For
    CREATE only ``object`` is set, for DELETE only ``old_object`` (and ``object`` is
    ``None``), for UPDATE both; CONNECT carries the connect options in ``object``."""

    uid: str
    """The request's identity; the answer repeats it."""
    kind: dict[str, str]
    """The object's group, version and kind as sent (after conversion with
    ``matchPolicy: Equivalent``): ``{"group": "apps", "version": "v1", "kind": "Deployment"}``."""
    resource: dict[str, str]
    """The group, version and resource (plural) of ``kind``."""
    sub_resource: str
    """``"status"``, ``"scale"``, ...; ``""`` for the main resource."""
    request_kind: dict[str, str]
    """The kind the client sent, before any conversion."""
    request_resource: dict[str, str]
    """The resource the client asked for, before any conversion."""
    request_sub_resource: str
    name: str
    """The object's name; ``""`` on a CREATE whose name the server generates."""
    namespace: str
    """The object's namespace; ``""`` for a cluster-scoped one."""
    operation: Operation
    user_info: dict[str, Any]
    """Who asked: ``username``, ``uid``, ``groups``, ``extra``."""
    object: _Obj | None
    old_object: _Obj | None
    dry_run: bool
    """Nothing will be persisted; a handler registered ``NoneOnDryRun`` must skip its side
    effects then."""
    options: dict[str, Any] | None
    """The operation's options (``CreateOptions``, ``UpdateOptions``, ``DeleteOptions``)."""

    @staticmethod
    def from_review(review: builtins.object) -> AdmissionRequest[dict[str, Any]]:
        """Parse an AdmissionReview v1 body. Raises :class:`BadReview` naming what is wrong
        (not a review, another version, no request, no uid, an unknown operation)."""
        if not isinstance(review, dict):
            raise BadReview("the body is not a JSON object")
        if review.get("kind") != "AdmissionReview":
            raise BadReview(f"expected kind AdmissionReview, got {review.get('kind')!r}")
        if review.get("apiVersion") != ADMISSION_REVIEW_VERSION:
            raise BadReview(
                f"expected apiVersion {ADMISSION_REVIEW_VERSION}, got {review.get('apiVersion')!r}"
            )
        request = review.get("request")
        if not isinstance(request, dict):
            raise BadReview("the AdmissionReview has no request")
        uid = request.get("uid")
        if not isinstance(uid, str) or not uid:
            raise BadReview("the AdmissionReview request has no uid")
        operation = request.get("operation")
        if not isinstance(operation, str) or operation not in Operation.__members__:
            raise BadReview(f"unknown operation {operation!r}")
        kind = _gvk(request.get("kind"), "kind")
        resource = _gvk(request.get("resource"), "resource")
        obj = request.get("object")
        old = request.get("oldObject")
        for what, value in (("object", obj), ("oldObject", old)):
            if value is not None and not isinstance(value, dict):
                raise BadReview(f"request.{what} is not an object")
        options = request.get("options")
        return AdmissionRequest(
            uid=uid,
            kind=kind,
            resource=resource,
            sub_resource=str(request.get("subResource") or ""),
            request_kind=_gvk(request.get("requestKind"), "requestKind", default=kind),
            request_resource=_gvk(
                request.get("requestResource"), "requestResource", default=resource
            ),
            request_sub_resource=str(
                request.get("requestSubResource") or request.get("subResource") or ""
            ),
            name=str(request.get("name") or ""),
            namespace=str(request.get("namespace") or ""),
            operation=Operation(operation),
            user_info=dict(request.get("userInfo") or {}),
            object=obj,
            old_object=old,
            dry_run=bool(request.get("dryRun")),
            options=options if isinstance(options, dict) else None,
        )

    def with_objects(self, obj: Any, old: Any) -> AdmissionRequest[Any]:
        """This request carrying ``obj`` and ``old`` instead (typed ones, for a model)."""
        return AdmissionRequest(
            **{name: getattr(self, name) for name in _REQUEST_FIELDS},
            object=obj,
            old_object=old,
        )


_REQUEST_FIELDS: Final = tuple(
    name for name in AdmissionRequest.__dataclass_fields__ if name not in ("object", "old_object")
)


def _gvk(value: object, what: str, *, default: dict[str, str] | None = None) -> dict[str, str]:
    if value is None and default is not None:
        return dict(default)
    if not isinstance(value, dict):
        raise BadReview(f"request.{what} is missing or not an object")
    return {str(k): str(v) for k, v in value.items()}


@dataclass(frozen=True, slots=True)
class Allowed:
    """A handler's "yes", with warnings kube-apiserver passes on to the client
    (``kubectl`` prints them)."""

    warnings: Sequence[str] = ()


class Denied(Exception):
    """A handler's "no": raise it or return it. ``message`` is what the client is told
    (kube-apiserver prefixes it with ``admission webhook "<name>" denied the request:``);
    ``code`` is the HTTP status it answers with (403 unless told), ``reason`` the
    ``Status`` reason (``Forbidden`` for 403, else empty unless told)."""

    def __init__(
        self,
        message: str,
        *,
        code: int = 403,
        reason: str | None = None,
        warnings: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason if reason is not None else ("Forbidden" if code == 403 else "")
        self.warnings = tuple(warnings)

    def status(self) -> dict[str, Any]:
        """The answer's ``status``, a ``Status`` (the field Go names ``Result``)."""
        status: dict[str, Any] = {"status": "Failure", "code": self.code, "message": self.message}
        if self.reason:
            status["reason"] = self.reason
        return status

    def __repr__(self) -> str:
        return f"Denied({self.message!r}, code={self.code})"


# -- the JSONPatch of a mutation ------------------------------------------------------------


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def json_patch(old: Any, new: Any) -> list[dict[str, Any]]:
    """The RFC 6902 operations that turn ``old`` into ``new`` (JSON values): ``add``,
    ``remove`` and ``replace``, keys escaped (``~0``, ``~1``); lists are compared index by
    index (extra items removed from the end, new ones appended with ``/-``). Equal values
    give ``[]``. Neither argument is changed."""
    ops: list[dict[str, Any]] = []
    _diff(old, new, "", ops)
    return ops


def _diff(old: Any, new: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in new.items():
            child = f"{path}/{_escape(key)}"
            if key in old:
                _diff(old[key], value, child, ops)
            else:
                ops.append({"op": "add", "path": child, "value": copy.deepcopy(value)})
        return
    if isinstance(old, list) and isinstance(new, list):
        common = min(len(old), len(new))
        for index in range(common):
            _diff(old[index], new[index], f"{path}/{index}", ops)
        # From the end, so each index is still the one meant when it is removed.
        for index in range(len(old) - 1, common - 1, -1):
            ops.append({"op": "remove", "path": f"{path}/{index}"})
        for value in new[common:]:
            ops.append({"op": "add", "path": f"{path}/-", "value": copy.deepcopy(value)})
        return
    if type(old) is not type(new) or old != new:
        # bool is an int to Python, never to JSON: True and 1 differ here.
        ops.append({"op": "replace", "path": path, "value": copy.deepcopy(new)})


# -- registration -------------------------------------------------------------------------

Handler: TypeAlias = "Callable[..., Any]"
"""A validating handler ``(request) -> None | bool | Allowed | Denied`` or a mutating one
``(obj, request) -> None | Allowed | Denied``, sync or async."""

_NAME_SEGMENTS: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$"
)
_TIMED_OUT: Final = 504


def default_webhook_path(webhook_type: WebhookType, group: str, version: str, kind: str) -> str:
    """controller-runtime's path for a resource's webhook:
    ``/validate-<group with dots as dashes>-<version>-<kind lowercased>`` (``/mutate-...``);
    the core group is empty: ``/validate--v1-pod``."""
    verb = "validate" if webhook_type == "validating" else "mutate"
    return f"/{verb}-{group.replace('.', '-')}-{version}-{kind.lower()}"


def default_webhook_name(webhook_type: WebhookType, group: str, kind: str) -> str:
    """A fully qualified webhook name for a resource, as kubebuilder writes them:
    ``vwidget.example.com`` (``mwidget...`` for mutating); a group without a dot (``apps``,
    the core group) is qualified with ``.k8s.io`` so the name has the three segments
    kube-apiserver requires: ``vdeployment.apps.k8s.io``, ``vpod.core.k8s.io``."""
    prefix = "v" if webhook_type == "validating" else "m"
    domain = group if "." in group else f"{group or 'core'}.k8s.io"
    return f"{prefix}{kind.lower()}.{domain}"


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionWebhook:
    """One registered admission handler, with what its webhook configuration entry says
    (built by ``WebhookServer.validate`` and ``WebhookServer.mutate``; checked here)."""

    type: WebhookType
    path: str
    """Where the server serves it (``clientConfig.service.path``)."""
    name: str
    """The configuration entry's fully qualified name (``vwidget.example.com``)."""
    handler: Handler = field(repr=False)
    rules: tuple[Rule, ...]
    failure_policy: FailurePolicy = "Fail"
    match_policy: MatchPolicy = "Equivalent"
    side_effects: SideEffects = "None"
    timeout_seconds: int = 10
    """Seconds kube-apiserver waits for an answer (1 to 30); the server cancels the
    handler past it."""
    namespace_selector: Mapping[str, Any] | None = None
    """A label selector (``{"matchLabels": ...}``) on the object's namespace."""
    object_selector: Mapping[str, Any] | None = None
    """A label selector on the object itself."""
    reinvocation_policy: ReinvocationPolicy | None = None
    """Mutating only (``Never`` unless told)."""
    model: builtins.type[BaseModel] | None = None
    """Parse ``object`` and ``old_object`` as this model before calling the handler."""
    clock: Clock = field(default=default_clock, repr=False, compare=False)
    """Times the handler's deadline."""
    is_async: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_async", is_async_callable(self.handler))
        if self.type not in ("validating", "mutating"):
            raise ValueError(f"type must be 'validating' or 'mutating', got {self.type!r}")
        if not callable(self.handler):
            raise TypeError(f"an admission handler must be callable, got {self.handler!r}")
        if not self.path.startswith("/") or "?" in self.path:
            raise ValueError(f"a webhook path starts with '/' and has no query, got {self.path!r}")
        if len(self.name) > 253 or not _NAME_SEGMENTS.match(self.name) or self.name.count(".") < 2:
            raise ValueError(
                f"webhook name {self.name!r} must be a fully qualified domain name with at "
                "least three segments (vwidget.example.com), as kube-apiserver requires"
            )
        if not self.rules:
            raise ValueError(
                f"webhook {self.name}: no rules, so kube-apiserver would never call it"
            )
        if self.failure_policy not in ("Fail", "Ignore"):
            raise ValueError(
                f"failure_policy must be 'Fail' or 'Ignore', got {self.failure_policy!r}"
            )
        if self.match_policy not in ("Exact", "Equivalent"):
            raise ValueError(
                f"match_policy must be 'Exact' or 'Equivalent', got {self.match_policy!r}"
            )
        if self.side_effects not in ("None", "NoneOnDryRun"):
            raise ValueError(
                f"side_effects must be 'None' or 'NoneOnDryRun' (admissionregistration.k8s.io/v1 "
                f"accepts no other: kube-apiserver never sends a dry run to a webhook with side "
                f"effects), got {self.side_effects!r}"
            )
        if isinstance(self.timeout_seconds, bool) or not 1 <= self.timeout_seconds <= 30:
            raise ValueError(f"timeout_seconds must be 1 to 30, got {self.timeout_seconds!r}")
        if self.type == "validating" and self.reinvocation_policy is not None:
            raise ValueError("reinvocation_policy is for mutating webhooks only")
        if self.type == "mutating" and self.reinvocation_policy is None:
            object.__setattr__(self, "reinvocation_policy", "Never")
        if self.reinvocation_policy not in (None, "Never", "IfNeeded"):
            raise ValueError(
                "reinvocation_policy must be 'Never' or 'IfNeeded', "
                f"got {self.reinvocation_policy!r}"
            )

    async def review(self, body: builtins.object) -> dict[str, Any]:
        """The AdmissionReview answer to ``body``. Raises :class:`BadReview` for a body
        that is not a review; a handler's failure is an answer, never raised."""
        request = AdmissionRequest.from_review(body)
        try:
            response = await self._respond(request)
        except Denied as denied:
            response = _denial(denied)
        response["uid"] = request.uid
        return {
            "apiVersion": ADMISSION_REVIEW_VERSION,
            "kind": "AdmissionReview",
            "response": response,
        }

    async def _respond(self, request: AdmissionRequest[dict[str, Any]]) -> dict[str, Any]:
        model = self.model
        raw = request.object
        if model is None:
            original: Any = raw
            typed: AdmissionRequest[Any] = request
        else:
            try:
                original = None if raw is None else model.model_validate(raw)
                old = request.old_object
                typed = request.with_objects(
                    original, None if old is None else model.model_validate(old)
                )
            except ValueError as exc:  # pydantic's ValidationError is one
                raise Denied(
                    f"the object is not a valid {model.__name__}: {exc}",
                    code=400,
                    reason="BadRequest",
                ) from exc
        editable = copy.deepcopy(original)
        args: tuple[Any, ...] = (typed,) if self.type == "validating" else (editable, typed)
        try:
            outcome = await self._call(args)
        except Denied:
            raise
        except Exception as exc:
            logger.error(
                "admission webhook %s (%s): the handler failed", self.name, self.path, exc_info=exc
            )
            return {
                "allowed": False,
                "status": {"status": "Failure", "code": 500, "message": str(exc)},
            }
        if isinstance(outcome, Denied):
            return _denial(outcome)
        if outcome is False:
            return _denial(Denied("denied"))
        response: dict[str, Any] = {"allowed": True}
        if isinstance(outcome, Allowed) and outcome.warnings:
            response["warnings"] = list(outcome.warnings)
        if self.type == "mutating" and original is not None:
            before = raw if model is None else _dump(original)
            after = editable if model is None else _dump(editable)
            ops = json_patch(before, after)
            if ops:
                response["patchType"] = "JSONPatch"
                response["patch"] = base64.b64encode(orjson.dumps(ops)).decode()
        return response

    async def _call(self, args: tuple[Any, ...]) -> Any:
        """The handler's outcome, within the timeout; past it, :class:`Denied` with 504."""
        deadline = CancelAfter(self.clock, self.timeout_seconds)
        try:
            with deadline:
                if self.is_async:
                    return await self.handler(*args)
                return self.handler(*args)
        except TimeoutError:
            if not deadline.timed_out:
                raise
            logger.warning(
                "admission webhook %s (%s): the handler ran past %s s; cancelled",
                self.name,
                self.path,
                self.timeout_seconds,
            )
            raise Denied(
                f"admission webhook {self.name} did not answer within {self.timeout_seconds}s",
                code=_TIMED_OUT,
                reason="Timeout",
            ) from None

    def configuration_entry(self, client_config: Mapping[str, Any]) -> dict[str, Any]:
        """This webhook's entry in its ``ValidatingWebhookConfiguration`` or
        ``MutatingWebhookConfiguration`` (``webhooks[]``), calling ``client_config``."""
        entry: dict[str, Any] = {
            "name": self.name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": dict(client_config),
            "rules": [rule.as_dict() for rule in self.rules],
            "failurePolicy": self.failure_policy,
            "matchPolicy": self.match_policy,
            "sideEffects": self.side_effects,
            "timeoutSeconds": self.timeout_seconds,
            "namespaceSelector": dict(self.namespace_selector or {}),
            "objectSelector": dict(self.object_selector or {}),
        }
        if self.reinvocation_policy is not None:
            entry["reinvocationPolicy"] = self.reinvocation_policy
        return entry


def _denial(denied: Denied) -> dict[str, Any]:
    response: dict[str, Any] = {"allowed": False, "status": denied.status()}
    if denied.warnings:
        response["warnings"] = list(denied.warnings)
    return response


def _dump(model: Any) -> Any:
    return cast("BaseModel", model).model_dump(mode="json", by_alias=True, exclude_unset=True)
