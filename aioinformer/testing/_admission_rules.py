"""Which admission webhooks a request calls, decided as kube-apiserver v1.36 decides it.

Role: the pure half of the fake API server's admission chain (``_admission`` makes the
calls). Input is one request's :class:`Attributes` and one :class:`Webhook` of a stored
configuration; output is the :class:`Invocation` to make (the resource version to send
the object as), or ``None`` when the webhook does not apply, or the ``StatusError``
kube-apiserver answers when it cannot tell.

Rules, in kube-apiserver's order: the ``namespaceSelector`` (a cluster-scoped object
always matches, except a Namespace, which matches on its own labels: the object's on a
create or update, the stored namespace's otherwise; a namespaced object matches on its
namespace's labels, and a namespace that does not exist answers 404 as the
NamespaceLifecycle plugin does, but only when a rule matches), then the
``objectSelector`` (the labels of the object or of the old object), then the ``rules``:
``operations``, ``apiGroups``, ``apiVersions``, ``resources`` (``*``, ``x/*``, ``*/y``,
``*/*``, ``pods/status``) and ``scope`` (``Cluster``: cluster-scoped objects and
Namespaces, ``Namespaced``: the others, ``*``: both). With ``matchPolicy: Equivalent`` a
request that no rule names is matched again against the other served versions of the same
resource (a CustomResourceDefinition's versions), and the webhook is sent the first one a
rule names. The ``admissionregistration.k8s.io`` group is exempt: its objects never reach
a webhook.

Task model: pure synchronous functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from aioinformer._apiserver.objects import StatusError, status_body
from aioinformer.testing._spec_fields import _dict, _dicts, selector_matches

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from aioinformer._apiserver.objects import ResourceType

__all__ = [
    "EXEMPT_GROUP",
    "Attributes",
    "Invocation",
    "Webhook",
    "rule_matches",
    "should_call",
]

EXEMPT_GROUP: Final = "admissionregistration.k8s.io"
"""The API group whose objects kube-apiserver never sends to a webhook (a configuration
that could deny its own removal would lock a cluster)."""


@dataclass(frozen=True, slots=True)
class Attributes:
    """One request as admission sees it (kube-apiserver's ``admission.Attributes``).

    ``operation`` is ``CREATE``, ``UPDATE``, ``DELETE`` or ``CONNECT``; ``namespace`` is
    ``""`` for a cluster-scoped object, but a Namespace's own name on requests whose URL
    names it; ``object`` is ``None`` on a delete, ``old_object`` on a create; both carry
    ``apiVersion`` and ``kind``; ``options`` is the ``CreateOptions``, ``UpdateOptions``
    or ``DeleteOptions`` of the request."""

    operation: str
    rt: ResourceType
    subresource: str
    name: str
    namespace: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    dry_run: bool
    options: dict[str, Any]
    user: str
    groups: tuple[str, ...] = ()

    def with_object(self, obj: dict[str, Any] | None) -> Attributes:
        """The same request, carrying ``obj`` (a mutated or a validated object)."""
        return Attributes(
            self.operation,
            self.rt,
            self.subresource,
            self.name,
            self.namespace,
            obj,
            self.old_object,
            self.dry_run,
            self.options,
            self.user,
            self.groups,
        )


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook of a stored, defaulted configuration: ``spec`` is its entry in the
    configuration's ``webhooks``, ``configuration`` the configuration's name."""

    configuration: str
    mutating: bool
    spec: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def ignores_failures(self) -> bool:
        """``failurePolicy: Ignore``: a failed call lets the request go on."""
        return self.spec.get("failurePolicy") == "Ignore"

    @property
    def timeout(self) -> float:
        """``timeoutSeconds`` (10 by default), in real seconds."""
        value = self.spec.get("timeoutSeconds")
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else 10.0


@dataclass(frozen=True, slots=True)
class Invocation:
    """A webhook to call, and the resource version the object is sent as (``rt``: the
    request's own, or with ``matchPolicy: Equivalent`` the version a rule names)."""

    webhook: Webhook
    rt: ResourceType
    subresource: str


def rule_matches(rule: Mapping[str, Any], attrs: Attributes, rt: ResourceType) -> bool:
    """Whether one ``RuleWithOperations`` names the request (made to ``rt``)."""
    operations = rule.get("operations") or ()
    if "*" not in operations and attrs.operation not in operations:
        return False
    groups = rule.get("apiGroups") or ()
    if "*" not in groups and rt.group not in groups:
        return False
    versions = rule.get("apiVersions") or ()
    if "*" not in versions and rt.version not in versions:
        return False
    if not _scope_matches(rule.get("scope"), attrs, rt):
        return False
    for entry in rule.get("resources") or ():
        resource, _, sub = str(entry).partition("/")
        if resource in ("*", rt.plural) and sub in ("*", attrs.subresource):
            return True
    return False


def _scope_matches(scope: Any, attrs: Attributes, rt: ResourceType) -> bool:
    if scope in (None, "*"):
        return True
    namespace_object = rt.group == "" and rt.plural == "namespaces"
    if scope == "Namespaced":
        return not namespace_object and attrs.namespace != ""
    if scope == "Cluster":
        return namespace_object or attrs.namespace == ""
    return False


def should_call(
    webhook: Webhook,
    attrs: Attributes,
    *,
    namespace_labels: Callable[[str], Mapping[str, str] | None],
    equivalents: Iterable[ResourceType] = (),
) -> Invocation | None:
    """The call ``webhook`` makes for ``attrs``, or ``None`` when it does not apply.

    ``namespace_labels`` gives a stored namespace's labels (``None``: no such namespace);
    ``equivalents`` are the other served versions of the request's resource."""
    if attrs.rt.group == EXEMPT_GROUP:
        return None
    namespace_ok, namespace_error = _namespace_matches(webhook, attrs, namespace_labels)
    if not namespace_ok and namespace_error is None:
        return None
    object_selector = _dict(webhook.spec.get("objectSelector"))
    if object_selector and not (
        _labels_match(object_selector, attrs.object)
        or _labels_match(object_selector, attrs.old_object)
    ):
        return None
    rules = _dicts(webhook.spec.get("rules"))
    invocation: Invocation | None = None
    if any(rule_matches(rule, attrs, attrs.rt) for rule in rules):
        invocation = Invocation(webhook, attrs.rt, attrs.subresource)
    elif webhook.spec.get("matchPolicy", "Equivalent") == "Equivalent":
        others = [rt for rt in equivalents if rt != attrs.rt]
        invocation = next(
            (
                Invocation(webhook, rt, attrs.subresource)
                for rule in rules
                for rt in others
                if rule_matches(rule, attrs, rt)
            ),
            None,
        )
    if invocation is None:
        return None
    if namespace_error is not None:
        raise namespace_error
    return invocation


def _labels_match(selector: Mapping[str, Any], obj: Mapping[str, Any] | None) -> bool:
    if obj is None:
        return False
    labels = _dict(_dict(obj.get("metadata")).get("labels"))
    return selector_matches(selector, labels)


def _namespace_matches(
    webhook: Webhook,
    attrs: Attributes,
    namespace_labels: Callable[[str], Mapping[str, str] | None],
) -> tuple[bool, StatusError | None]:
    """(whether the namespaceSelector matches, the error to answer if a rule matches)."""
    namespace_object = attrs.rt.group == "" and attrs.rt.plural == "namespaces"
    if not attrs.namespace and not namespace_object:
        return True, None
    selector = _dict(webhook.spec.get("namespaceSelector"))
    if not selector:
        return True, None
    if (
        namespace_object
        and not attrs.subresource
        and attrs.operation in ("CREATE", "UPDATE")
        and attrs.object is not None
    ):
        labels: Mapping[str, Any] | None = _dict(_dict(attrs.object.get("metadata")).get("labels"))
    else:
        name = attrs.namespace or attrs.name
        labels = namespace_labels(name)
        if labels is None:
            return False, StatusError(
                status_body(
                    404,
                    "NotFound",
                    f'namespaces "{name}" not found',
                    {"name": name, "kind": "namespaces"},
                )
            )
    return selector_matches(selector, labels or {}), None
