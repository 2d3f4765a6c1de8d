"""The fake API server's admission chain: it calls the webhooks stored configurations
register, as kube-apiserver v1.36's admission plugins call them.

Role: what stands between a write request and the store. Input is a request's
:class:`~aioinformer.testing._admission_rules.Attributes` and the write to make (a
function of the object to store, dry or real); output is the stored
:class:`~aioinformer._apiserver.objects.Entry` (or the one a dry run would store), or the
``StatusError`` a webhook's denial or failure answers (see ``_admission_review``).

Ordering, per write: the mutating webhooks, by configuration name then in the
configuration's order, each sent the object as the previous one left it and its JSONPatch
applied; then the object's own validation and defaulting (the write, dry); then the
validating webhooks, sent the object as it would be stored (all of them are called, one
after the other; the first failure answers, as kube-apiserver answers the first of its
parallel calls' failures); then the write, unless the request is a dry run
(``?dryRun=All``). A dry run reaching a webhook whose ``sideEffects`` is not ``None`` or
``NoneOnDryRun`` answers 400. Webhooks are called (``_admission_call``) over HTTPS, trusting
the configuration's ``caBundle`` (the system's roots without one), within
``timeoutSeconds`` of real time (``?timeout=<n>s`` on the URL, as kube-apiserver sends
it); a ``service`` reference is called at ``https://<name>.<namespace>.svc:<port><path>``,
connected where ``_webhook_address`` resolves it (the server's ``webhook_services``
entry, else 127.0.0.1 at the reference's port). Warnings of the webhooks that answered go back to
the client as ``Warning: 299 - "<text>"`` headers (see :func:`collect_warnings`), denials
and failures included. A mutating webhook with ``reinvocationPolicy: IfNeeded`` is
called once more, after the others, when a later webhook changed the object it left.
The chain works in the request's version: the object it is given, the mutated object and
the object validated are in that version, and each webhook is sent them in the version
its invocation names (the request's, or under ``matchPolicy: Equivalent`` the one a rule
names), converted by the ``convert`` the chain is given (the server's conversion
webhooks; a change of apiVersion without one) and converted back after a mutation. The
write itself converts to the storage version (see :class:`Write`), so for a custom
resource a conversion webhook converts, the order is: mutating webhooks in the request's
version, conversion to the storage version and the object's validation (the dry write),
validating webhooks, conversion again and the write. Writes made by the test's direct
calls (``FakeAPIServer.create``, ...) skip admission, as writes to etcd do.

Task model: :meth:`AdmissionChain.write` runs in the request's handler task and awaits
each webhook call in turn; the store is read and written synchronously between the calls,
so a write made meanwhile by another request is seen by the final write (a
resourceVersion precondition then answers 409).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson

from aioinformer._apiserver.objects import ResourceType, StatusError
from aioinformer.testing._admission_call import post_review
from aioinformer.testing._admission_review import (
    Answer,
    CallFailed,
    build_review,
    call_failed,
    denied,
    dry_run_unsupported,
    internal_error,
    read_answer,
    review_version,
)
from aioinformer.testing._admission_rules import Attributes, Invocation, Webhook, should_call
from aioinformer.testing._patch import PatchError, apply_json_patch
from aioinformer.testing._spec_fields import _dict, _dicts
from aioinformer.testing._validation import FieldError, invalid_error
from aioinformer.testing._webhook_configs import MUTATING_TYPE, VALIDATING_TYPE

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from aioinformer._apiserver.objects import Entry
    from aioinformer.testing._requests import Target
    from aioinformer.testing._resources import ResourceRegistry
    from aioinformer.testing._store import Store

__all__ = [
    "AdmissionChain",
    "Admitting",
    "Convert",
    "Write",
    "collect_warnings",
    "relabel",
    "user_groups",
    "warning_header",
    "write_options",
]

logger = logging.getLogger(__name__)


class Write(Protocol):
    """The write a request makes, of ``obj`` (the mutated object, in the request's
    version; ``None`` for a delete): with ``dry_run`` everything the write checks and
    defaults, nothing stored; ``probe`` is the dry run's entry when the real write follows
    one (a create keeps its uid). The entry returned is the object in the request's
    version (a write of a version a conversion webhook converts converts it to the
    storage version for the store and back), but a delete's, which is as stored."""

    async def __call__(
        self, obj: dict[str, Any] | None, /, *, dry_run: bool, probe: Entry | None
    ) -> Entry: ...


class Convert(Protocol):
    """An object of version ``source`` as version ``desired`` of the same resource has
    it (a CustomResourceDefinition's conversion webhook, or the apiVersion changed)."""

    async def __call__(
        self, obj: dict[str, Any], source: ResourceType, desired: ResourceType, /
    ) -> dict[str, Any]: ...


async def relabel(
    obj: dict[str, Any], source: ResourceType, desired: ResourceType
) -> dict[str, Any]:
    """The conversion of resources no webhook converts: only the apiVersion changes."""
    return {**obj, "apiVersion": desired.api_version, "kind": desired.kind}


_WARNINGS: Final[contextvars.ContextVar[list[str] | None]] = contextvars.ContextVar(
    "aioinformer_fake_admission_warnings", default=None
)
_SIDE_EFFECT_FREE: Final = ("None", "NoneOnDryRun")
_NAMESPACES: Final = ResourceType("", "v1", "namespaces", "Namespace", False)


@contextlib.contextmanager
def collect_warnings() -> Iterator[list[str]]:
    """Gather the webhooks' warnings of the request handled within (each once, in the
    order they came)."""
    warnings: list[str] = []
    token = _WARNINGS.set(warnings)
    try:
        yield warnings
    finally:
        _WARNINGS.reset(token)


def request_warnings() -> list[str]:
    """The list the request handled now gathers its warnings in (the webhooks' and the
    schema's unknown fields), for a part that appends to it; a fresh list outside one."""
    sink = _WARNINGS.get()
    return sink if sink is not None else []


def warning_header(text: str) -> str:
    """A ``Warning`` header value as kube-apiserver writes it: code 299, agent ``-``, the
    text quoted with ``"`` and ``\\`` escaped."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'


def _warn(texts: tuple[str, ...]) -> None:
    sink = _WARNINGS.get()
    if sink is None:
        return
    for text in texts:
        if text and text not in sink:
            sink.append(text)


class AdmissionChain:
    """The webhooks of the server's stored configurations, called for its writes (see the
    module docstring). Owns nothing: the store and the registry are the server's."""

    def __init__(
        self,
        store: Store,
        registry: ResourceRegistry,
        *,
        services: Mapping[tuple[str, str], tuple[str, int]] | None = None,
        convert: Convert = relabel,
    ) -> None:
        self._store = store
        self._registry = registry
        # Shared with the server, which the test may add to (see ``_webhook_address``).
        self._services: Mapping[tuple[str, str], tuple[str, int]] = (
            services if services is not None else {}
        )
        self._convert = convert

    def configured(self) -> bool:
        """Whether any webhook configuration is stored (without one, no write is sent
        to a webhook, and its old object need not be converted for one)."""
        return any(self._store.table(rt).entries for rt in (MUTATING_TYPE, VALIDATING_TYPE))

    def _webhooks(self, rt: ResourceType) -> list[Webhook]:
        mutating = rt == MUTATING_TYPE
        hooks: list[Webhook] = []
        for entry in self._store.table(rt).ordered()[1]:
            obj = entry.decode()
            name = str(obj["metadata"]["name"])
            hooks.extend(Webhook(name, mutating, spec) for spec in _dicts(obj.get("webhooks")))
        return hooks

    def _invocation(self, hook: Webhook, attrs: Attributes) -> Invocation | None:
        equivalents = [
            other
            for other in self._registry
            if other.group == attrs.rt.group and other.plural == attrs.rt.plural
        ]
        return should_call(
            hook, attrs, namespace_labels=self._namespace_labels, equivalents=equivalents
        )

    def _namespace_labels(self, name: str) -> Mapping[str, str] | None:
        entry = self._store.table(_NAMESPACES).entries.get(name)
        if entry is None:
            return None
        return dict(entry.labels or {})

    async def write(self, attrs: Attributes, write: Write) -> Entry:
        """Admit the request and make its write (see the module docstring); the dry run's
        entry when ``attrs.dry_run``."""
        if attrs.operation == "UPDATE" and attrs.old_object is None:
            # Nothing stored to update: the store's 404, before any webhook.
            return await write(attrs.object, dry_run=attrs.dry_run, probe=None)
        mutating = self._webhooks(MUTATING_TYPE)
        validating = self._webhooks(VALIDATING_TYPE)
        if not attrs.dry_run and not any(
            self._invocation(hook, attrs) for hook in (*mutating, *validating)
        ):
            return await write(attrs.object, dry_run=False, probe=None)
        obj = await self._mutate_all(attrs, mutating)
        probe = await write(_copy(obj), dry_run=True, probe=None)
        validated = attrs.with_object(obj)
        if attrs.operation != "DELETE":
            stored = {"apiVersion": attrs.rt.api_version, "kind": attrs.rt.kind, **probe.decode()}
            validated = attrs.with_object(stored)
        failure: StatusError | None = None
        for hook in validating:
            invocation = self._invocation(hook, validated)
            if invocation is None:
                continue
            try:
                await self._validate(invocation, validated)
            except StatusError as exc:
                failure = failure or exc
        if failure is not None:
            raise failure
        if attrs.dry_run:
            return probe
        return await write(obj, dry_run=False, probe=probe)

    async def _mutate_all(
        self, attrs: Attributes, mutating: list[Webhook]
    ) -> dict[str, Any] | None:
        """The object after every mutating webhook that applies, in order; then, once, those
        with ``reinvocationPolicy: IfNeeded`` whose object a later webhook changed."""
        obj = attrs.object
        changes = 0
        # Per reinvocable webhook called: how many changes there were right after it.
        called: dict[int, int] = {}
        for index, hook in enumerate(mutating):
            current = attrs.with_object(obj)
            invocation = self._invocation(hook, current)
            if invocation is None:
                continue
            mutated = await self._mutate(invocation, current)
            if mutated != obj:
                changes += 1
            obj = mutated
            if hook.spec.get("reinvocationPolicy") == "IfNeeded":
                called[index] = changes
        for index, seen in called.items():
            if changes == seen:
                continue
            current = attrs.with_object(obj)
            invocation = self._invocation(mutating[index], current)
            if invocation is not None:
                obj = await self._mutate(invocation, current)
        return obj

    async def _mutate(self, invocation: Invocation, attrs: Attributes) -> dict[str, Any] | None:
        sent = await self._versioned(invocation, attrs)
        answer = await self._call(invocation, sent)
        if answer is None:
            return attrs.object
        if not answer.allowed:
            raise denied(attrs, invocation.webhook.name, answer.status)
        if not answer.patch:
            return attrs.object
        if attrs.object is None:
            raise internal_error(
                f'admission webhook "{invocation.webhook.name}" attempted to modify the '
                "object, which is not supported for this operation"
            )
        assert sent.object is not None
        try:
            patched = apply_json_patch(sent.object, answer.patch)
        except PatchError as exc:
            raise internal_error(str(exc)) from None
        if not isinstance(patched, dict):
            raise internal_error("the webhook's patch did not leave an object")
        patched["apiVersion"] = invocation.rt.api_version
        patched["kind"] = invocation.rt.kind
        # The patched object goes on in the request's version.
        return await self._as_version(patched, invocation.rt, attrs.rt)

    async def _validate(self, invocation: Invocation, attrs: Attributes) -> None:
        answer = await self._call(invocation, await self._versioned(invocation, attrs))
        if answer is not None and not answer.allowed:
            raise denied(attrs, invocation.webhook.name, answer.status)

    async def _versioned(self, invocation: Invocation, attrs: Attributes) -> Attributes:
        """The request with its objects in the version the webhook is sent
        (``invocation.rt``: the request's own, or the one a rule names under
        ``matchPolicy: Equivalent``, converted as kube-apiserver's dispatcher converts
        it, by the definition's conversion webhook when it has one)."""
        if invocation.rt.version == attrs.rt.version:
            return attrs
        obj, old = attrs.object, attrs.old_object
        return dataclasses.replace(
            attrs,
            object=None if obj is None else await self._as_version(obj, attrs.rt, invocation.rt),
            old_object=(
                None if old is None else await self._as_version(old, attrs.rt, invocation.rt)
            ),
        )

    async def _as_version(
        self, obj: dict[str, Any], source: ResourceType, desired: ResourceType
    ) -> dict[str, Any]:
        if source.version == desired.version:
            return {**obj, "apiVersion": desired.api_version, "kind": desired.kind}
        return await self._convert(obj, source, desired)

    async def _call(self, invocation: Invocation, attrs: Attributes) -> Answer | None:
        """The webhook's answer to the request ``attrs`` (its objects in the version
        the webhook is sent), or ``None`` when its call failed under ``failurePolicy:
        Ignore``."""
        hook = invocation.webhook
        if attrs.dry_run:
            side_effects = hook.spec.get("sideEffects")
            if side_effects is None:
                self._failed(hook, "Webhook SideEffects is nil")
                return None
            if side_effects not in _SIDE_EFFECT_FREE:
                raise dry_run_unsupported(hook.name)
        try:
            version = review_version(hook.spec.get("admissionReviewVersions"))
            uid = str(uuid.uuid4())
            review = build_review(uid, invocation, attrs, version=version)
            body = await post_review(hook, review, self._services)
            answer = read_answer(uid, body, mutating=hook.mutating, version=version)
        except CallFailed as exc:
            self._failed(hook, str(exc))
            return None
        _warn(answer.warnings)
        return answer

    def _failed(self, hook: Webhook, reason: str) -> None:
        if hook.ignores_failures:
            logger.warning("failed calling webhook, failing open %s: %s", hook.name, reason)
            return
        raise call_failed(hook.name, reason)


def _copy(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    if obj is None:
        return None
    copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return copied


_OPTIONS_KINDS: Final = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
}
_OPTIONS_RT: Final = {
    verb: ResourceType("meta.k8s.io", "v1", "", kind, False)
    for verb, kind in _OPTIONS_KINDS.items()
}
_QUERY_OPTIONS: Final = ("fieldManager", "fieldValidation")


def write_options(
    verb: str, dry_run: list[str], query: Mapping[str, str], body: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The options a write's review carries (``CreateOptions``, ``UpdateOptions`` for an
    update or a patch, ``DeleteOptions`` with the body's fields for a delete), or the
    422 kube-apiserver answers for a ``dryRun`` other than ``All``."""
    unsupported = [value for value in dry_run if value != "All"]
    if unsupported:
        error = FieldError(
            "FieldValueNotSupported", "dryRun", 'supported values: "All"', list(dry_run)
        )
        raise invalid_error(_OPTIONS_RT[verb], "", [error])
    kind = "UpdateOptions" if verb == "patch" else _OPTIONS_KINDS[verb]
    options: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if verb == "delete":
        options.update({k: v for k, v in (body or {}).items() if k not in ("kind", "apiVersion")})
    elif dry_run:
        options["dryRun"] = list(dry_run)
    for name in _QUERY_OPTIONS:
        if verb != "delete" and query.get(name):
            options[name] = query[name]
    if verb == "delete" and dry_run:
        options["dryRun"] = list(dry_run)
    return options


_MASTERS: Final = ("system:masters", "system:authenticated")


def user_groups(user: str) -> tuple[str, ...]:
    """The groups kube-apiserver's authenticators give ``user``: ``system:masters`` for
    the fake's admin, a service account's groups for one, and ``system:authenticated``."""
    if user == "system:admin":
        return _MASTERS
    if user.startswith("system:serviceaccount:"):
        namespace = user.split(":")[2]
        return (
            "system:serviceaccounts",
            f"system:serviceaccounts:{namespace}",
            "system:authenticated",
        )
    return ("system:authenticated",)


@dataclass(frozen=True, slots=True)
class Admitting:
    """One write request on its way through the chain: its URL's target, its user and the
    options its review carries."""

    chain: AdmissionChain
    target: Target
    user: str
    options: dict[str, Any]

    async def write(
        self,
        operation: str,
        obj: dict[str, Any] | None,
        current: Entry | None,
        write: Write,
    ) -> Entry:
        """Admit ``operation`` of ``obj`` over the stored ``current`` and make ``write``."""
        rt = self.target.rt
        meta = _dict(obj.get("metadata")) if obj is not None else {}
        name = self.target.name or str(meta.get("name") or "")
        namespace = self.target.namespace or ""
        if rt.group == "" and rt.plural == "namespaces" and self.target.name:
            namespace = self.target.name
        elif rt.namespaced and not namespace:
            namespace = str(meta.get("namespace") or "")
        old = None
        if current is not None:
            old = {"apiVersion": rt.api_version, "kind": rt.kind, **current.decode()}
        if obj is not None:
            obj = {**obj, "apiVersion": rt.api_version, "kind": rt.kind}
        attrs = Attributes(
            operation,
            rt,
            self.target.subresource or "",
            name,
            namespace,
            obj,
            old,
            "All" in (self.options.get("dryRun") or ()),
            self.options,
            self.user,
            user_groups(self.user),
        )
        return await self.chain.write(attrs, write)
