"""The fake API server's webhook configurations, defaulted and validated as kube-apiserver
v1.36 defaults and validates them.

Role: the store's :class:`~aioinformer.testing._store.Controller` of the two
``admissionregistration.k8s.io/v1`` kinds (cluster-scoped) the admission chain
(``_admission``) reads its webhooks from: ``ValidatingWebhookConfiguration`` and
``MutatingWebhookConfiguration``. Input is a configuration about to be stored (and the
stored one, on an update); output is the same object, defaulted in place, or the 422
``Invalid`` with kube-apiserver's field paths and messages.

Defaults, per webhook: ``failurePolicy: Fail``, ``matchPolicy: Equivalent``,
``namespaceSelector: {}``, ``objectSelector: {}``, ``timeoutSeconds: 10``, a rule's
``scope: "*"``, a service reference's ``port: 443``, and a mutating webhook's
``reinvocationPolicy: Never``.

Validation, per webhook, in kube-apiserver's order: a fully qualified ``name`` (a DNS-1123
subdomain of at least three segments); each rule's ``operations`` (``*``, ``CREATE``,
``UPDATE``, ``DELETE``, ``CONNECT``; ``*`` alone), ``apiGroups`` and ``apiVersions``
(required; ``*`` alone), ``resources`` (required; ``*/*`` alone, no ``x`` beside ``*``,
no ``x/y`` beside ``x/*`` or ``*/y``) and ``scope``; ``failurePolicy``, ``matchPolicy``;
``sideEffects`` required, ``None`` or ``NoneOnDryRun`` (an update may keep another class
when the stored configuration had one); ``timeoutSeconds`` 1..30; the label selectors;
``reinvocationPolicy``; a ``clientConfig`` with exactly one of ``url`` (https, a host, no
user, query or fragment) and ``service`` (name, namespace, a valid port, a path starting
with ``/``); then ``admissionReviewVersions`` (required, no duplicates, DNS-1035 labels,
one of ``v1`` and ``v1beta1``), then the name's uniqueness within the configuration.
``matchConditions`` are stored but neither validated nor evaluated.

Task model: synchronous, called by the store within the write.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from aioinformer._apiserver.objects import ResourceType
from aioinformer.testing._spec_fields import (
    _dict,
    _dicts,
    _duplicate,
    _invalid,
    _not_supported,
    _required,
    _selector_errors,
)
from aioinformer.testing._validation import (
    FieldError,
    dns_subdomain_errors,
    invalid_error,
    regex_error,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aioinformer._apiserver.objects import Entry

__all__ = [
    "MUTATING_TYPE",
    "VALIDATING_TYPE",
    "WEBHOOK_CONFIGURATION_TYPES",
    "WebhookConfigurations",
]

VALIDATING_TYPE: Final = ResourceType(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    False,
    "validatingwebhookconfiguration",
    (),
    False,
    generation=True,
)
"""``admissionregistration.k8s.io/v1`` ValidatingWebhookConfigurations."""

MUTATING_TYPE: Final = ResourceType(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    False,
    "mutatingwebhookconfiguration",
    (),
    False,
    generation=True,
)
"""``admissionregistration.k8s.io/v1`` MutatingWebhookConfigurations."""

WEBHOOK_CONFIGURATION_TYPES: Final = (VALIDATING_TYPE, MUTATING_TYPE)

_OPERATIONS: Final = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES: Final = ("*", "Cluster", "Namespaced")
_FAILURE_POLICIES: Final = ("Fail", "Ignore")
_MATCH_POLICIES: Final = ("Equivalent", "Exact")
_NO_SIDE_EFFECTS: Final = ("None", "NoneOnDryRun")
_SIDE_EFFECTS: Final = ("None", "NoneOnDryRun", "Some", "Unknown")
_REINVOCATION: Final = ("IfNeeded", "Never")
_REVIEW_VERSIONS: Final = ("v1", "v1beta1")
_DNS1035_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE: Final = re.compile(_DNS1035_FMT)
_URL_FORM: Final = "; desired format: https://host[/path]"
_HTTPS_ONLY: Final = "'https' is the only allowed URL scheme"
_TIMEOUT_RANGE: Final = "the timeout value must be between 1 and 30 seconds"
_THREE_SEGMENTS: Final = "should be a domain with at least three segments separated by dots"
_PORT_RANGE: Final = "must be between 1 and 65535, inclusive"


class WebhookConfigurations:
    """Defaults and validates the webhook configurations of one kind as they are written
    (see the module docstring); it keeps no state of its own."""

    def __init__(self, rt: ResourceType) -> None:
        self._rt = rt
        self._mutating = rt == MUTATING_TYPE

    def admit(self, obj: dict[str, Any], old: Mapping[str, Any] | None) -> None:
        """Default ``obj`` in place, then refuse it (the 422) when it is invalid."""
        default_configuration(obj, mutating=self._mutating)
        errors = configuration_errors(obj, old, mutating=self._mutating)
        if errors:
            name = str(_dict(obj.get("metadata")).get("name") or "")
            raise invalid_error(self._rt, name, errors)

    def deleting(self, obj: dict[str, Any]) -> None:
        pass

    def removing(self, entry: Entry) -> None:
        pass

    def written(self, event_type: str, entry: Entry) -> None:
        pass


def default_configuration(obj: dict[str, Any], *, mutating: bool) -> None:
    """kube-apiserver's defaults for every webhook of a configuration, in place."""
    for hook in _dicts(obj.get("webhooks")):
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in _dicts(hook.get("rules")):
            rule.setdefault("scope", "*")
        service = _dict(hook.get("clientConfig")).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


def configuration_errors(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, *, mutating: bool
) -> list[FieldError]:
    """The field errors of a (defaulted) configuration; ``old`` relaxes what an update may
    keep, as kube-apiserver's update validation does."""
    old_hooks = _dicts(old.get("webhooks")) if old is not None else []
    strict_side_effects = all(h.get("sideEffects") in _NO_SIDE_EFFECTS for h in old_hooks)
    old_names = [h.get("name") for h in old_hooks]
    unique_names = len(old_names) == len(set(old_names))
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, hook in enumerate(_dicts(obj.get("webhooks"))):
        at = f"webhooks[{i}]"
        errors += _webhook_errors(hook, at, mutating=mutating, strict=strict_side_effects)
        errors += _review_version_errors(hook.get("admissionReviewVersions"), at)
        name = hook.get("name")
        if unique_names and isinstance(name, str) and name:
            if name in seen:
                errors.append(_duplicate(f"{at}.name", name))
            seen.add(name)
    return errors


def _webhook_errors(
    hook: dict[str, Any], at: str, *, mutating: bool, strict: bool
) -> list[FieldError]:
    errors = _qualified_name_errors(hook.get("name"), f"{at}.name")
    for j, rule in enumerate(_dicts(hook.get("rules"))):
        errors += _rule_errors(rule, f"{at}.rules[{j}]")
    errors += _enum_errors(hook, "failurePolicy", _FAILURE_POLICIES, at)
    errors += _enum_errors(hook, "matchPolicy", _MATCH_POLICIES, at)
    allowed = _NO_SIDE_EFFECTS if strict else _SIDE_EFFECTS
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errors.append(_required(f"{at}.sideEffects", f"must specify one of {', '.join(allowed)}"))
    elif side_effects not in allowed:
        errors.append(_not_supported(f"{at}.sideEffects", side_effects, allowed))
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        errors.append(
            _invalid(
                f"{at}.timeoutSeconds",
                timeout,
                "the timeout value must be between 1 and 30 seconds",
            )
        )
    for selector in ("namespaceSelector", "objectSelector"):
        value = hook.get(selector)
        if isinstance(value, dict):
            errors += _selector_errors(value, f"{at}.{selector}")
    if mutating:
        errors += _enum_errors(hook, "reinvocationPolicy", _REINVOCATION, at)
    errors += _client_config_errors(_dict(hook.get("clientConfig")), f"{at}.clientConfig")
    return errors


def _enum_errors(
    hook: Mapping[str, Any], field: str, supported: tuple[str, ...], at: str
) -> list[FieldError]:
    value = hook.get(field)
    if value is not None and value not in supported:
        return [_not_supported(f"{at}.{field}", value, supported)]
    return []


def _qualified_name_errors(name: Any, path: str) -> list[FieldError]:
    """apimachinery's ``IsFullyQualifiedName``."""
    if not isinstance(name, str) or not name:
        return [_required(path)]
    problems = dns_subdomain_errors(name)
    if problems:
        return [_invalid(path, name, ",".join(problems))]
    if len(name.split(".")) < 3:
        return [
            _invalid(
                path, name, "should be a domain with at least three segments separated by dots"
            )
        ]
    return []


def _wildcard_alone(values: list[Any]) -> bool:
    return len(values) > 1 and "*" in values


def _strings(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _rule_errors(rule: dict[str, Any], at: str) -> list[FieldError]:
    errors: list[FieldError] = []
    operations = _strings(rule.get("operations"))
    if not operations:
        errors.append(_required(f"{at}.operations"))
    if _wildcard_alone(operations):
        errors.append(
            _invalid(
                f"{at}.operations",
                operations,
                "if '*' is present, must not specify other operations",
            )
        )
    for k, operation in enumerate(operations):
        if operation not in _OPERATIONS:
            errors.append(_not_supported(f"{at}.operations[{k}]", operation, _OPERATIONS))
    groups = _strings(rule.get("apiGroups"))
    if not groups:
        errors.append(_required(f"{at}.apiGroups"))
    if _wildcard_alone(groups):
        errors.append(
            _invalid(
                f"{at}.apiGroups", groups, "if '*' is present, must not specify other API groups"
            )
        )
    versions = _strings(rule.get("apiVersions"))
    if not versions:
        errors.append(_required(f"{at}.apiVersions"))
    if _wildcard_alone(versions):
        errors.append(
            _invalid(
                f"{at}.apiVersions",
                versions,
                "if '*' is present, must not specify other API versions",
            )
        )
    for k, version in enumerate(versions):
        if version == "":
            errors.append(_required(f"{at}.apiVersions[{k}]"))
    errors += _resources_errors(_strings(rule.get("resources")), f"{at}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errors.append(_not_supported(f"{at}.scope", scope, _SCOPES))
    return errors


def _resources_errors(resources: list[Any], path: str) -> list[FieldError]:
    """``validateResources``: subresources allowed, wildcards not mixed."""
    errors: list[FieldError] = []
    if not resources:
        errors.append(_required(path))
    wildcard_sub: set[str] = set()
    wildcard_res: set[str] = set()
    single = double = plain = False
    for i, entry in enumerate(resources):
        if entry == "":
            errors.append(_required(f"{path}[{i}]"))
            continue
        text = str(entry)
        double = double or text == "*/*"
        single = single or text == "*"
        if "/" not in text:
            plain = text != "*"
            continue
        res, sub = text.split("/", 1)
        if res in wildcard_sub:
            errors.append(
                _invalid(f"{path}[{i}]", text, f"if '{res}/*' is present, must not specify {text}")
            )
        if sub in wildcard_res:
            errors.append(
                _invalid(f"{path}[{i}]", text, f"if '*/{sub}' is present, must not specify {text}")
            )
        if sub == "*":
            wildcard_sub.add(res)
        if res == "*":
            wildcard_res.add(sub)
    if len(resources) > 1 and double:
        errors.append(
            _invalid(path, resources, "if '*/*' is present, must not specify other resources")
        )
    if single and plain:
        errors.append(
            _invalid(
                path,
                resources,
                "if '*' is present, must not specify other resources without subresources",
            )
        )
    return errors


def _client_config_errors(config: dict[str, Any], at: str) -> list[FieldError]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [_required(at, "exactly one of url or service is required")]
    if url is not None:
        return _url_errors(str(url), f"{at}.url")
    return _service_errors(_dict(service), f"{at}.service")


def _url_errors(url: str, path: str) -> list[FieldError]:
    """``ValidateWebhookURL`` with https forced."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return [_required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    errors: list[FieldError] = []
    if parts.scheme != "https":
        errors.append(
            _invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM)
        )
    if not parts.netloc:
        errors.append(_invalid(path, parts.netloc, "host must be specified" + _URL_FORM))
    if "@" in parts.netloc:
        user = parts.netloc.rsplit("@", 1)[0]
        errors.append(_invalid(path, user, "user information is not permitted in the URL"))
    if parts.fragment:
        errors.append(_invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errors.append(_invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return errors


def _service_errors(service: dict[str, Any], path: str) -> list[FieldError]:
    """``ValidateWebhookService``."""
    errors: list[FieldError] = []
    if not service.get("name"):
        errors.append(_required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        errors.append(_required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port")
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        errors.append(
            _invalid(
                f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"
            )
        )
    route = service.get("path")
    if isinstance(route, str) and route not in ("", "/"):
        if route == "//":
            errors.append(_invalid(f"{path}.path", route, "segment[0] may not be empty"))
        elif not route.startswith("/"):
            errors.append(_invalid(f"{path}.path", route, "must start with a '/'"))
    return errors


def _review_version_errors(versions: Any, at: str) -> list[FieldError]:
    path = f"{at}.admissionReviewVersions"
    listed = _strings(versions)
    if not listed:
        return [_required(path, f"must specify one of {', '.join(_REVIEW_VERSIONS)}")]
    errors: list[FieldError] = []
    seen: set[Any] = set()
    for i, version in enumerate(listed):
        if version in seen:
            errors.append(_invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        for problem in _dns1035_errors(str(version)):
            errors.append(_invalid(f"{path}[{i}]", version, problem))
    if not seen & set(_REVIEW_VERSIONS):
        errors.append(
            _invalid(path, listed, f"must include at least one of {', '.join(_REVIEW_VERSIONS)}")
        )
    return errors


def _dns1035_errors(value: str) -> list[str]:
    """apimachinery's ``IsDNS1035Label``."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1035_RE.fullmatch(value):
        errors.append(
            regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character",
                _DNS1035_FMT,
                "my-name",
                "abc-123",
            )
        )
    return errors
