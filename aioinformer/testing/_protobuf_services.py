"""The protobuf messages of a Service, its Endpoints and an Ingress.

Role: the schemas of ``v1`` Services and Endpoints and ``networking.k8s.io/v1``
Ingresses, for ``_protobuf``'s table of kinds: what ``kubectl create service`` and
``ingress`` send, and what controllers write. Fields are numbered as in ``k8s.io/api``'s
``generated.proto``: a Service's ports and spec, an Ingress's backends, TLS and rules,
the Endpoints' subsets of addresses and ports. The load balancer status both kinds carry
is set by controllers and is not read: any field in it refuses the body.

Task model: module constants, never changed after import.
"""

from __future__ import annotations

from typing import Final

from aioinformer.testing._protobuf_meta import METADATA, OBJECT_REFERENCE
from aioinformer.testing._protobuf_schema import Field, Schema

__all__ = ["ENDPOINTS", "INGRESS", "SERVICE"]

_SERVICE_PORT: Final[Schema] = {
    1: Field("name", "string"),
    2: Field("protocol", "string"),
    3: Field("port", "int"),
    4: Field("targetPort", "int_or_string"),
    5: Field("nodePort", "int"),
    6: Field("appProtocol", "string", optional=True),
}

_SERVICE_SPEC: Final[Schema] = {
    1: Field("ports", "message", _SERVICE_PORT, repeated=True),
    2: Field("selector", "string", map=True),
    3: Field("clusterIP", "string"),
    4: Field("type", "string"),
    5: Field("externalIPs", "string", repeated=True),
    7: Field("sessionAffinity", "string"),
    8: Field("loadBalancerIP", "string"),
    9: Field("loadBalancerSourceRanges", "string", repeated=True),
    10: Field("externalName", "string"),
    11: Field("externalTrafficPolicy", "string"),
    12: Field("healthCheckNodePort", "int"),
    13: Field("publishNotReadyAddresses", "bool"),
    17: Field("ipFamilyPolicy", "string", optional=True),
    18: Field("clusterIPs", "string", repeated=True),
    19: Field("ipFamilies", "string", repeated=True),
    20: Field("allocateLoadBalancerNodePorts", "bool", optional=True),
    21: Field("loadBalancerClass", "string", optional=True),
    22: Field("internalTrafficPolicy", "string", optional=True),
    23: Field("trafficDistribution", "string", optional=True),
}

_LOAD_BALANCER_STATUS: Final[Schema] = {}  # its ingress list, set by controllers, is not read

_SERVICE_STATUS: Final[Schema] = {1: Field("loadBalancer", "message", _LOAD_BALANCER_STATUS)}

SERVICE: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _SERVICE_SPEC),
    3: Field("status", "message", _SERVICE_STATUS),
}

_SERVICE_BACKEND_PORT: Final[Schema] = {
    1: Field("name", "string"),
    2: Field("number", "int"),
}

_INGRESS_SERVICE_BACKEND: Final[Schema] = {
    1: Field("name", "string"),
    2: Field("port", "message", _SERVICE_BACKEND_PORT),
}

_INGRESS_BACKEND: Final[Schema] = {
    4: Field("service", "message", _INGRESS_SERVICE_BACKEND, optional=True),
}

_INGRESS_TLS: Final[Schema] = {
    1: Field("hosts", "string", repeated=True),
    2: Field("secretName", "string"),
}

_HTTP_INGRESS_PATH: Final[Schema] = {
    1: Field("path", "string"),
    2: Field("backend", "message", _INGRESS_BACKEND),
    3: Field("pathType", "string", optional=True),
}

_HTTP_INGRESS_RULE_VALUE: Final[Schema] = {
    1: Field("paths", "message", _HTTP_INGRESS_PATH, repeated=True),
}

_INGRESS_RULE_VALUE: Final[Schema] = {
    1: Field("http", "message", _HTTP_INGRESS_RULE_VALUE, optional=True),
}

_INGRESS_RULE: Final[Schema] = {
    1: Field("host", "string"),
    2: Field("", "message", _INGRESS_RULE_VALUE),
}

_INGRESS_SPEC: Final[Schema] = {
    1: Field("defaultBackend", "message", _INGRESS_BACKEND, optional=True),
    2: Field("tls", "message", _INGRESS_TLS, repeated=True),
    3: Field("rules", "message", _INGRESS_RULE, repeated=True),
    4: Field("ingressClassName", "string", optional=True),
}

_INGRESS_STATUS: Final[Schema] = {
    1: Field("loadBalancer", "message", _LOAD_BALANCER_STATUS),
}

INGRESS: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _INGRESS_SPEC),
    3: Field("status", "message", _INGRESS_STATUS),
}

_ENDPOINT_ADDRESS: Final[Schema] = {
    1: Field("ip", "string"),
    2: Field("targetRef", "message", OBJECT_REFERENCE, optional=True),
    3: Field("hostname", "string"),
    4: Field("nodeName", "string", optional=True),
}

_ENDPOINT_PORT: Final[Schema] = {
    1: Field("name", "string"),
    2: Field("port", "int"),
    3: Field("protocol", "string"),
    4: Field("appProtocol", "string", optional=True),
}

_ENDPOINT_SUBSET: Final[Schema] = {
    1: Field("addresses", "message", _ENDPOINT_ADDRESS, repeated=True),
    2: Field("notReadyAddresses", "message", _ENDPOINT_ADDRESS, repeated=True),
    3: Field("ports", "message", _ENDPOINT_PORT, repeated=True),
}

ENDPOINTS: Final[Schema] = {
    1: METADATA,
    2: Field("subsets", "message", _ENDPOINT_SUBSET, repeated=True),
}
