"""What the fake API server refuses in the spec of a Service, in kube-apiserver v1.36's
words.

Role: the rules :data:`~aioinformer.testing._specs.SPEC_RULES` applies to Services
(``ValidateService``, ``pkg/apis/core/validation``). Input is the Service's ``spec``
(empty when absent or not an object); output is the list of field errors
kube-apiserver's validation finds, with its field paths and messages:

* **Service**: ``ports`` required (unless headless or ExternalName); an ExternalName's
  ``externalName`` required, a DNS-1123 subdomain; each port's ``name`` a DNS-1123
  label, required and unique once there are two ports, ``port`` 1..65535, ``protocol``
  TCP, UDP or SCTP, ``targetPort`` a port number or an IANA service name (defaulted to
  ``port``), ``appProtocol`` a qualified name; ``selector`` valid labels;
  ``sessionAffinity`` ClientIP or None; ``type`` one of the four; no ``nodePort`` on a
  ClusterIP Service; ``externalTrafficPolicy`` Cluster or Local, and only on a Service
  reachable from outside; ``internalTrafficPolicy`` Cluster or Local.

Task model: pure synchronous functions.
"""

from __future__ import annotations

from typing import Any, Final

from aioinformer.testing._spec_fields import (
    _PROTOCOLS,
    _dicts,
    _duplicate,
    _int,
    _invalid,
    _not_supported,
    _port_name_errors,
    _port_num_errors,
    _required,
)
from aioinformer.testing._validation import (
    FieldError,
    GoEnum,
    dns_label_errors,
    dns_subdomain_errors,
    label_key_errors,
    label_map_errors,
)

_SERVICE_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_AFFINITIES: Final = ("ClientIP", "None")
_TRAFFIC_POLICIES: Final = ("Cluster", "Local")


def _service(spec: dict[str, Any]) -> list[FieldError]:
    """``ValidateService``'s checks of ports, selector, session affinity, type and traffic
    policies."""
    errors: list[FieldError] = []
    service_type = spec.get("type") or "ClusterIP"
    cluster_ips = spec.get("clusterIPs") if isinstance(spec.get("clusterIPs"), list) else []
    first_ip = cluster_ips[0] if cluster_ips else spec.get("clusterIP")
    headless = service_type == "ClusterIP" and first_ip == "None"
    ports = _dicts(spec.get("ports"))
    if not ports and not headless and service_type != "ExternalName":
        errors.append(_required("spec.ports"))
    if service_type == "ExternalName":
        errors.extend(_external_name_errors(spec.get("externalName")))
    names: set[str] = set()
    for i, port in enumerate(ports):
        errors.extend(_service_port_errors(port, f"spec.ports[{i}]", len(ports) > 1, names))
    if isinstance(spec.get("selector"), dict):
        errors.extend(label_map_errors(spec["selector"], "spec.selector"))
    errors.extend(_session_affinity_errors(spec))
    if spec.get("type") and service_type not in _SERVICE_TYPES:
        errors.append(_not_supported("spec.type", service_type, _SERVICE_TYPES))
    if service_type == "ClusterIP":
        errors.extend(
            FieldError(
                "FieldValueForbidden",
                f"spec.ports[{i}].nodePort",
                "may not be used when `type` is 'ClusterIP'",
            )
            for i, port in enumerate(ports)
            if _int(port.get("nodePort"))
        )
    errors.extend(_traffic_policy_errors(spec, service_type))
    return errors


def _session_affinity_errors(spec: dict[str, Any]) -> list[FieldError]:
    """``sessionAffinity`` ClientIP or None (the default, under which kube-apiserver drops
    a ``sessionAffinityConfig`` before validating)."""
    affinity = spec.get("sessionAffinity")
    if affinity and affinity not in _AFFINITIES:
        return [_not_supported("spec.sessionAffinity", affinity, _AFFINITIES)]
    return []


def _traffic_policy_errors(spec: dict[str, Any], service_type: str) -> list[FieldError]:
    """``externalTrafficPolicy`` only for a Service reachable from outside (NodePort,
    LoadBalancer, or with external IPs), Cluster or Local; ``internalTrafficPolicy``
    Cluster or Local."""
    errors: list[FieldError] = []
    external = spec.get("externalTrafficPolicy")
    reachable = service_type in ("NodePort", "LoadBalancer") or (
        service_type == "ClusterIP" and bool(spec.get("externalIPs"))
    )
    if external and not reachable:
        errors.append(
            _invalid(
                "spec.externalTrafficPolicy",
                GoEnum(external),
                "may only be set for externally-accessible services",
            )
        )
    elif external and external not in _TRAFFIC_POLICIES:
        errors.append(_not_supported("spec.externalTrafficPolicy", external, _TRAFFIC_POLICIES))
    internal = spec.get("internalTrafficPolicy")
    if internal and internal not in _TRAFFIC_POLICIES:
        errors.append(_not_supported("spec.internalTrafficPolicy", internal, _TRAFFIC_POLICIES))
    return errors


def _external_name_errors(value: Any) -> list[FieldError]:
    """An ExternalName Service's ``externalName``: required, a DNS-1123 subdomain (a CNAME,
    so a trailing dot is allowed)."""
    name = value.removesuffix(".") if isinstance(value, str) else ""
    if not name:
        return [_required("spec.externalName")]
    return [_invalid("spec.externalName", name, message) for message in dns_subdomain_errors(name)]


def _service_port_errors(
    port: dict[str, Any], path: str, require_name: bool, names: set[str]
) -> list[FieldError]:
    errors: list[FieldError] = []
    name = port.get("name")
    if require_name and not name:
        errors.append(_required(f"{path}.name"))
    elif name:
        errors.extend(
            _invalid(f"{path}.name", name, message) for message in dns_label_errors(str(name))
        )
        if name in names:
            errors.append(_duplicate(f"{path}.name", name))
        names.add(str(name))
    number = _int(port.get("port")) or 0
    errors.extend(_invalid(f"{path}.port", number, message) for message in _port_num_errors(number))
    protocol = port.get("protocol")
    if protocol and protocol not in _PROTOCOLS:
        errors.append(_not_supported(f"{path}.protocol", protocol, _PROTOCOLS))
    # kube-apiserver defaults an unset (0 or "") targetPort to the port.
    target = port.get("targetPort")
    if target in (None, 0, ""):
        target = number
    if isinstance(target, str):
        errors.extend(
            _invalid(f"{path}.targetPort", target, message) for message in _port_name_errors(target)
        )
    elif (target_number := _int(target)) is not None:
        errors.extend(
            _invalid(f"{path}.targetPort", target_number, message)
            for message in _port_num_errors(target_number)
        )
    app_protocol = port.get("appProtocol")
    if isinstance(app_protocol, str):
        errors.extend(
            _invalid(f"{path}.appProtocol", app_protocol, message)
            for message in label_key_errors(app_protocol)
        )
    return errors
