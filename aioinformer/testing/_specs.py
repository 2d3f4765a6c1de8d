"""What the fake API server refuses in the spec of the kinds users create most, in
kube-apiserver v1.36's words.

Role: the spec half of the fake's admission (``_validation`` holds the metadata half and
the 422 builder). Input is a decoded object and the
:class:`~aioinformer._apiserver.objects.ResourceType` it is written to; output is the
decoder's complaint about a spec field of the wrong JSON type (a 400, raised by
``_validation.check_types``), and the list of :class:`~aioinformer.testing._validation.FieldError`
values kube-apiserver's validation finds, with its field paths and messages
(``pkg/apis/core/validation``, ``pkg/apis/apps/validation``,
``pkg/apis/batch/validation``).

The rules of each kind are in the module that lists them: ``_spec_workloads`` (Pods,
Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs), ``_spec_services`` (Services)
and ``_spec_config`` (ConfigMaps, Secrets), on the field errors and label selectors of
``_spec_fields``; this module sends each kind to its rules, and names the integer fields
the decoder types.

A bad value is shown as apimachinery shows it (see
:class:`~aioinformer.testing._validation.FieldError`): a selector in Go's field order, a
map with its keys sorted.

What kube-apiserver defaults (a port's protocol, a pod's restart policy, a workload's
strategy) is checked only when set; nothing is defaulted into the stored object.

Ordering: errors come in kube-apiserver's order (field by field as its validation
functions walk them), after the metadata's.

Task model: pure synchronous functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from aioinformer.testing._spec_config import _config_map, _secret
from aioinformer.testing._spec_fields import _dict, _dicts, _int, selector_matches
from aioinformer.testing._spec_services import _service
from aioinformer.testing._spec_workloads import (
    _daemon_set,
    _deployment,
    _job,
    _pod_errors,
    _replica_set,
    _stateful_set,
)

if TYPE_CHECKING:
    from aioinformer._apiserver.objects import ResourceType
    from aioinformer.testing._validation import FieldError

__all__ = ["SPEC_RULES", "KubeSpecRules", "selector_matches"]

_SPEC_VALIDATORS: Final[dict[tuple[str, str], Callable[[dict[str, Any]], list[FieldError]]]] = {
    ("", "pods"): _pod_errors,
    ("", "services"): _service,
    ("apps", "deployments"): _deployment,
    ("apps", "replicasets"): _replica_set,
    ("apps", "statefulsets"): _stateful_set,
    ("apps", "daemonsets"): _daemon_set,
    ("batch", "jobs"): _job,
}
_OBJECT_VALIDATORS: Final[
    dict[tuple[str, str], Callable[[Mapping[str, Any]], list[FieldError]]]
] = {
    ("", "configmaps"): _config_map,
    ("", "secrets"): _secret,
}

# Integer fields the decoder types (int32), per resource: (struct, JSON path, getter of
# every value at that path).
_Values: TypeAlias = Callable[[Mapping[str, Any]], list[Any]]


def _container_ports(spec_path: tuple[str, ...], field: str) -> _Values:
    def values(obj: Mapping[str, Any]) -> list[Any]:
        spec: Any = obj
        for part in spec_path:
            spec = _dict(spec).get(part)
        found: list[Any] = []
        for key in ("containers", "initContainers"):
            for container in _dicts(_dict(spec).get(key)):
                found.extend(port.get(field) for port in _dicts(container.get("ports")))
        return found

    return values


def _service_ports(obj: Mapping[str, Any]) -> list[Any]:
    return [port.get("port") for port in _dicts(_dict(obj.get("spec")).get("ports"))]


def _replicas(obj: Mapping[str, Any]) -> list[Any]:
    return [_dict(obj.get("spec")).get("replicas")]


_TEMPLATE: Final = ("spec", "template", "spec")
_INT_FIELDS: Final[dict[tuple[str, str], tuple[tuple[str, str, _Values], ...]]] = {
    ("", "pods"): (
        (
            "ContainerPort",
            "spec.containers.ports.containerPort",
            _container_ports(("spec",), "containerPort"),
        ),
    ),
    ("", "services"): (("ServicePort", "spec.ports.port", _service_ports),),
    ("apps", "deployments"): (
        ("DeploymentSpec", "spec.replicas", _replicas),
        (
            "ContainerPort",
            "spec.template.spec.containers.ports.containerPort",
            _container_ports(_TEMPLATE, "containerPort"),
        ),
    ),
    ("apps", "replicasets"): (
        ("ReplicaSetSpec", "spec.replicas", _replicas),
        (
            "ContainerPort",
            "spec.template.spec.containers.ports.containerPort",
            _container_ports(_TEMPLATE, "containerPort"),
        ),
    ),
    ("apps", "statefulsets"): (
        ("StatefulSetSpec", "spec.replicas", _replicas),
        (
            "ContainerPort",
            "spec.template.spec.containers.ports.containerPort",
            _container_ports(_TEMPLATE, "containerPort"),
        ),
    ),
    ("apps", "daemonsets"): (
        (
            "ContainerPort",
            "spec.template.spec.containers.ports.containerPort",
            _container_ports(_TEMPLATE, "containerPort"),
        ),
    ),
    ("batch", "jobs"): (
        (
            "ContainerPort",
            "spec.template.spec.containers.ports.containerPort",
            _container_ports(_TEMPLATE, "containerPort"),
        ),
    ),
}


def _int32_problem(value: Any, struct: str, path: str) -> str | None:
    """The Go decoder's complaint about ``value`` for an ``int32`` field, if any."""
    if value is None or _int(value) is not None:
        return None
    if isinstance(value, float):
        # Go's decoder takes no fraction, not even ".0", into an integer field.
        shown = f"number {value}"
    elif isinstance(value, str):
        shown = "string"
    elif isinstance(value, bool):
        shown = "bool"
    elif isinstance(value, list):
        shown = "array"
    else:
        shown = "object"
    return f"json: cannot unmarshal {shown} into Go struct field {struct}.{path} of type int32"


class KubeSpecRules:
    """The :class:`~aioinformer.testing._validation.SpecRules` of kube-apiserver v1.36 for
    Pods, Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, Services, ConfigMaps
    and Secrets (see the module docstring); other kinds have none."""

    __slots__ = ()

    def type_problem(self, rt: ResourceType, obj: Mapping[str, Any]) -> str | None:
        """The decoder's complaint about an integer field given another JSON type."""
        for struct, path, values in _INT_FIELDS.get(rt.id, ()):
            for value in values(obj):
                problem = _int32_problem(value, struct, path)
                if problem is not None:
                    return problem
        return None

    def errors(self, rt: ResourceType, obj: Mapping[str, Any]) -> list[FieldError]:
        """The field errors of ``obj``'s spec (or data)."""
        spec_rule = _SPEC_VALIDATORS.get(rt.id)
        if spec_rule is not None:
            return spec_rule(_dict(obj.get("spec")))
        object_rule = _OBJECT_VALIDATORS.get(rt.id)
        return object_rule(obj) if object_rule is not None else []


SPEC_RULES: Final = KubeSpecRules()
"""The rules the fake applies while it validates specs."""
