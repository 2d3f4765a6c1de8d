"""Kubernetes protobuf request bodies, decoded for the kinds kubectl and client-go write.

Role: lets the fake API server take the writes client-go's typed clients encode as
``application/vnd.kubernetes.protobuf``: ``kubectl create configmap``, ``secret``,
``namespace``, ``serviceaccount``, ``deployment``, ``service``, ``job``, ``cronjob`` and
``ingress`` (``kubectl run`` and ``expose`` send JSON), and what other client-go
programs write: Pods, ReplicaSets, StatefulSets, DaemonSets, Endpoints, leader election's
Leases and recorders' Events (both ``v1`` and ``events.k8s.io/v1``).
Input is a request body in that media type; output is the object as the JSON mapping
kube-apiserver would have decoded, or the ``Status`` it answers with: 415
``UnsupportedMediaType`` naming any other kind (send it as JSON), 400 ``BadRequest`` for a
body that is not the envelope.

The wire format, as apimachinery's protobuf serializer writes it: the four bytes
``k8s\\x00``, then a ``runtime.Unknown`` message (field 1 ``typeMeta`` {1 apiVersion,
2 kind}, 2 ``raw``, 3 ``contentEncoding``, 4 ``contentType``) whose ``raw`` is the
object's own message (fields numbered as in ``k8s.io/api``'s ``generated.proto``). The
tables below describe each message generically (field number to JSON name, kind, nested
message, list or map) and name the fields the fake reads; those the server sets itself
(``selfLink``, the timestamps, ``managedFields``) are skipped, as kube-apiserver
overwrites them, and any other field, at any depth (a probe, a volume, a condition),
refuses the body (415) rather than losing it.

A field Go encodes whether set or not (a string, an integer, a boolean, a struct) is left
out when empty or zero, as its ``omitempty`` JSON would be; a Go pointer (``replicas``,
``automountServiceAccountToken``), present only when set, is kept as sent, zero or not.

Task model: pure synchronous functions, called from the request handler.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from aioinformer._apiserver.objects import StatusError, status_body

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["MAGIC", "PROTOBUF", "decode_protobuf_object", "is_protobuf"]

PROTOBUF: Final = "application/vnd.kubernetes.protobuf"
"""The media type of Kubernetes protobuf bodies."""

MAGIC: Final = b"k8s\x00"
"""What every Kubernetes protobuf body starts with."""


@dataclass(frozen=True, slots=True)
class _Field:
    """How one protobuf field maps to JSON: ``name`` in the object (empty for an inline
    message, whose fields join the parent's); ``kind`` one of ``string``, ``int``,
    ``bool``, ``bytes`` (base64 in JSON), ``quantity`` (``resource.Quantity``, a string in
    JSON), ``int_or_string`` (``intstr.IntOrString``), ``time`` (``metav1.Time``, RFC 3339),
    ``micro_time`` (``metav1.MicroTime``, to the microsecond), ``message`` (decoded by
    ``schema``) or ``skip`` (set by the server; dropped).
    ``repeated`` makes it a list, ``map`` a ``map<string, kind>``; ``optional`` marks a Go
    pointer, kept as sent even when zero or empty (a value field is left out then, as its
    ``omitempty`` JSON would be)."""

    name: str
    kind: str
    schema: Mapping[int, _Field] | None = None
    repeated: bool = False
    map: bool = False
    optional: bool = False


_Schema = dict[int, _Field]

_SKIP: Final = _Field("", "skip")

_OWNER_REFERENCE: Final[_Schema] = {
    1: _Field("kind", "string"),
    3: _Field("name", "string"),
    4: _Field("uid", "string"),
    5: _Field("apiVersion", "string"),
    6: _Field("controller", "bool", optional=True),
    7: _Field("blockOwnerDeletion", "bool", optional=True),
}

_OBJECT_META: Final[_Schema] = {
    1: _Field("name", "string"),
    2: _Field("generateName", "string"),
    3: _Field("namespace", "string"),
    4: _SKIP,  # selfLink
    5: _Field("uid", "string"),
    6: _Field("resourceVersion", "string"),
    7: _Field("generation", "int"),
    8: _SKIP,  # creationTimestamp
    9: _SKIP,  # deletionTimestamp
    10: _Field("deletionGracePeriodSeconds", "int", optional=True),
    11: _Field("labels", "string", map=True),
    12: _Field("annotations", "string", map=True),
    13: _Field("ownerReferences", "message", _OWNER_REFERENCE, repeated=True),
    14: _Field("finalizers", "string", repeated=True),
    17: _SKIP,  # managedFields
}

_OBJECT_REFERENCE: Final[_Schema] = {
    1: _Field("kind", "string"),
    2: _Field("namespace", "string"),
    3: _Field("name", "string"),
    4: _Field("uid", "string"),
    5: _Field("apiVersion", "string"),
    6: _Field("resourceVersion", "string"),
    7: _Field("fieldPath", "string"),
}

_METADATA: Final = _Field("metadata", "message", _OBJECT_META)

# -- the workloads kubectl's generators write (create deployment, job, cronjob, service,
# ingress) and the others typed clients do; a message left out below (volumes, probes,
# affinity, conditions ...) is refused where it appears.

_LABEL_SELECTOR_REQUIREMENT: Final[_Schema] = {
    1: _Field("key", "string"),
    2: _Field("operator", "string"),
    3: _Field("values", "string", repeated=True),
}

_LABEL_SELECTOR: Final[_Schema] = {
    1: _Field("matchLabels", "string", map=True),
    2: _Field("matchExpressions", "message", _LABEL_SELECTOR_REQUIREMENT, repeated=True),
}

_CONTAINER_PORT: Final[_Schema] = {
    1: _Field("name", "string"),
    2: _Field("hostPort", "int"),
    3: _Field("containerPort", "int"),
    4: _Field("protocol", "string"),
    5: _Field("hostIP", "string"),
}

_ENV_VAR: Final[_Schema] = {
    1: _Field("name", "string"),
    2: _Field("value", "string"),
}

_RESOURCE_REQUIREMENTS: Final[_Schema] = {
    1: _Field("limits", "quantity", map=True),
    2: _Field("requests", "quantity", map=True),
}

_VOLUME_MOUNT: Final[_Schema] = {
    1: _Field("name", "string"),
    2: _Field("readOnly", "bool"),
    3: _Field("mountPath", "string"),
    4: _Field("subPath", "string"),
    5: _Field("mountPropagation", "string", optional=True),
    6: _Field("subPathExpr", "string"),
    7: _Field("recursiveReadOnly", "string", optional=True),
    8: _Field("bindMountOptions", "string", repeated=True),
}

_CONTAINER: Final[_Schema] = {
    1: _Field("name", "string"),
    2: _Field("image", "string"),
    3: _Field("command", "string", repeated=True),
    4: _Field("args", "string", repeated=True),
    5: _Field("workingDir", "string"),
    6: _Field("ports", "message", _CONTAINER_PORT, repeated=True),
    7: _Field("env", "message", _ENV_VAR, repeated=True),
    8: _Field("resources", "message", _RESOURCE_REQUIREMENTS),
    9: _Field("volumeMounts", "message", _VOLUME_MOUNT, repeated=True),
    13: _Field("terminationMessagePath", "string"),
    14: _Field("imagePullPolicy", "string"),
    16: _Field("stdin", "bool"),
    17: _Field("stdinOnce", "bool"),
    18: _Field("tty", "bool"),
    20: _Field("terminationMessagePolicy", "string"),
    24: _Field("restartPolicy", "string", optional=True),
}

_LOCAL_OBJECT_REFERENCE: Final[_Schema] = {1: _Field("name", "string")}

_POD_SPEC: Final[_Schema] = {
    2: _Field("containers", "message", _CONTAINER, repeated=True),
    3: _Field("restartPolicy", "string"),
    4: _Field("terminationGracePeriodSeconds", "int", optional=True),
    5: _Field("activeDeadlineSeconds", "int", optional=True),
    6: _Field("dnsPolicy", "string"),
    7: _Field("nodeSelector", "string", map=True),
    8: _Field("serviceAccountName", "string"),
    9: _Field("serviceAccount", "string"),
    10: _Field("nodeName", "string"),
    11: _Field("hostNetwork", "bool"),
    12: _Field("hostPID", "bool"),
    13: _Field("hostIPC", "bool"),
    15: _Field("imagePullSecrets", "message", _LOCAL_OBJECT_REFERENCE, repeated=True),
    16: _Field("hostname", "string"),
    17: _Field("subdomain", "string"),
    19: _Field("schedulerName", "string"),
    20: _Field("initContainers", "message", _CONTAINER, repeated=True),
    21: _Field("automountServiceAccountToken", "bool", optional=True),
    24: _Field("priorityClassName", "string"),
    25: _Field("priority", "int", optional=True),
    27: _Field("shareProcessNamespace", "bool", optional=True),
    29: _Field("runtimeClassName", "string", optional=True),
    30: _Field("enableServiceLinks", "bool", optional=True),
    31: _Field("preemptionPolicy", "string", optional=True),
    32: _Field("overhead", "quantity", map=True),
    35: _Field("setHostnameAsFQDN", "bool", optional=True),
    37: _Field("hostUsers", "bool", optional=True),
    40: _Field("resources", "message", _RESOURCE_REQUIREMENTS, optional=True),
    41: _Field("hostnameOverride", "string", optional=True),
}

_POD_TEMPLATE_SPEC: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _POD_SPEC),
}

_ROLLING_UPDATE: Final[_Schema] = {  # a Deployment's and a DaemonSet's
    1: _Field("maxUnavailable", "int_or_string", optional=True),
    2: _Field("maxSurge", "int_or_string", optional=True),
}

_DEPLOYMENT_STRATEGY: Final[_Schema] = {
    1: _Field("type", "string"),
    2: _Field("rollingUpdate", "message", _ROLLING_UPDATE, optional=True),
}

_DEPLOYMENT_SPEC: Final[_Schema] = {
    1: _Field("replicas", "int", optional=True),
    2: _Field("selector", "message", _LABEL_SELECTOR, optional=True),
    3: _Field("template", "message", _POD_TEMPLATE_SPEC),
    4: _Field("strategy", "message", _DEPLOYMENT_STRATEGY),
    5: _Field("minReadySeconds", "int"),
    6: _Field("revisionHistoryLimit", "int", optional=True),
    7: _Field("paused", "bool"),
    9: _Field("progressDeadlineSeconds", "int", optional=True),
}

_DEPLOYMENT_STATUS: Final[_Schema] = {
    1: _Field("observedGeneration", "int"),
    2: _Field("replicas", "int"),
    3: _Field("updatedReplicas", "int"),
    4: _Field("availableReplicas", "int"),
    5: _Field("unavailableReplicas", "int"),
    7: _Field("readyReplicas", "int"),
    8: _Field("collisionCount", "int", optional=True),
    9: _Field("terminatingReplicas", "int", optional=True),
}

_DEPLOYMENT: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _DEPLOYMENT_SPEC),
    3: _Field("status", "message", _DEPLOYMENT_STATUS),
}

_SERVICE_PORT: Final[_Schema] = {
    1: _Field("name", "string"),
    2: _Field("protocol", "string"),
    3: _Field("port", "int"),
    4: _Field("targetPort", "int_or_string"),
    5: _Field("nodePort", "int"),
    6: _Field("appProtocol", "string", optional=True),
}

_SERVICE_SPEC: Final[_Schema] = {
    1: _Field("ports", "message", _SERVICE_PORT, repeated=True),
    2: _Field("selector", "string", map=True),
    3: _Field("clusterIP", "string"),
    4: _Field("type", "string"),
    5: _Field("externalIPs", "string", repeated=True),
    7: _Field("sessionAffinity", "string"),
    8: _Field("loadBalancerIP", "string"),
    9: _Field("loadBalancerSourceRanges", "string", repeated=True),
    10: _Field("externalName", "string"),
    11: _Field("externalTrafficPolicy", "string"),
    12: _Field("healthCheckNodePort", "int"),
    13: _Field("publishNotReadyAddresses", "bool"),
    17: _Field("ipFamilyPolicy", "string", optional=True),
    18: _Field("clusterIPs", "string", repeated=True),
    19: _Field("ipFamilies", "string", repeated=True),
    20: _Field("allocateLoadBalancerNodePorts", "bool", optional=True),
    21: _Field("loadBalancerClass", "string", optional=True),
    22: _Field("internalTrafficPolicy", "string", optional=True),
    23: _Field("trafficDistribution", "string", optional=True),
}

_LOAD_BALANCER_STATUS: Final[_Schema] = {}  # its ingress list, set by controllers, is not read

_SERVICE_STATUS: Final[_Schema] = {1: _Field("loadBalancer", "message", _LOAD_BALANCER_STATUS)}

_SERVICE: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _SERVICE_SPEC),
    3: _Field("status", "message", _SERVICE_STATUS),
}

_JOB_SPEC: Final[_Schema] = {
    1: _Field("parallelism", "int", optional=True),
    2: _Field("completions", "int", optional=True),
    3: _Field("activeDeadlineSeconds", "int", optional=True),
    4: _Field("selector", "message", _LABEL_SELECTOR, optional=True),
    5: _Field("manualSelector", "bool", optional=True),
    6: _Field("template", "message", _POD_TEMPLATE_SPEC),
    7: _Field("backoffLimit", "int", optional=True),
    8: _Field("ttlSecondsAfterFinished", "int", optional=True),
    9: _Field("completionMode", "string", optional=True),
    10: _Field("suspend", "bool", optional=True),
    12: _Field("backoffLimitPerIndex", "int", optional=True),
    13: _Field("maxFailedIndexes", "int", optional=True),
    14: _Field("podReplacementPolicy", "string", optional=True),
    15: _Field("managedBy", "string", optional=True),
}

_JOB_STATUS: Final[_Schema] = {
    2: _Field("startTime", "time", optional=True),
    3: _Field("completionTime", "time", optional=True),
    4: _Field("active", "int"),
    5: _Field("succeeded", "int"),
    6: _Field("failed", "int"),
    7: _Field("completedIndexes", "string"),
    9: _Field("ready", "int", optional=True),
    10: _Field("failedIndexes", "string", optional=True),
    11: _Field("terminating", "int", optional=True),
}

_JOB: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _JOB_SPEC),
    3: _Field("status", "message", _JOB_STATUS),
}

_JOB_TEMPLATE_SPEC: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _JOB_SPEC),
}

_CRON_JOB_SPEC: Final[_Schema] = {
    1: _Field("schedule", "string"),
    2: _Field("startingDeadlineSeconds", "int", optional=True),
    3: _Field("concurrencyPolicy", "string"),
    4: _Field("suspend", "bool", optional=True),
    5: _Field("jobTemplate", "message", _JOB_TEMPLATE_SPEC),
    6: _Field("successfulJobsHistoryLimit", "int", optional=True),
    7: _Field("failedJobsHistoryLimit", "int", optional=True),
    8: _Field("timeZone", "string", optional=True),
}

_CRON_JOB_STATUS: Final[_Schema] = {
    1: _Field("active", "message", _OBJECT_REFERENCE, repeated=True),
    4: _Field("lastScheduleTime", "time", optional=True),
    5: _Field("lastSuccessfulTime", "time", optional=True),
}

_CRON_JOB: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _CRON_JOB_SPEC),
    3: _Field("status", "message", _CRON_JOB_STATUS),
}

_SERVICE_BACKEND_PORT: Final[_Schema] = {
    1: _Field("name", "string"),
    2: _Field("number", "int"),
}

_INGRESS_SERVICE_BACKEND: Final[_Schema] = {
    1: _Field("name", "string"),
    2: _Field("port", "message", _SERVICE_BACKEND_PORT),
}

_INGRESS_BACKEND: Final[_Schema] = {
    4: _Field("service", "message", _INGRESS_SERVICE_BACKEND, optional=True),
}

_INGRESS_TLS: Final[_Schema] = {
    1: _Field("hosts", "string", repeated=True),
    2: _Field("secretName", "string"),
}

_HTTP_INGRESS_PATH: Final[_Schema] = {
    1: _Field("path", "string"),
    2: _Field("backend", "message", _INGRESS_BACKEND),
    3: _Field("pathType", "string", optional=True),
}

_HTTP_INGRESS_RULE_VALUE: Final[_Schema] = {
    1: _Field("paths", "message", _HTTP_INGRESS_PATH, repeated=True),
}

_INGRESS_RULE_VALUE: Final[_Schema] = {
    1: _Field("http", "message", _HTTP_INGRESS_RULE_VALUE, optional=True),
}

_INGRESS_RULE: Final[_Schema] = {
    1: _Field("host", "string"),
    2: _Field("", "message", _INGRESS_RULE_VALUE),
}

_INGRESS_SPEC: Final[_Schema] = {
    1: _Field("defaultBackend", "message", _INGRESS_BACKEND, optional=True),
    2: _Field("tls", "message", _INGRESS_TLS, repeated=True),
    3: _Field("rules", "message", _INGRESS_RULE, repeated=True),
    4: _Field("ingressClassName", "string", optional=True),
}

_INGRESS_STATUS: Final[_Schema] = {
    1: _Field("loadBalancer", "message", _LOAD_BALANCER_STATUS),
}

_INGRESS: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _INGRESS_SPEC),
    3: _Field("status", "message", _INGRESS_STATUS),
}

_REPLICA_SET_SPEC: Final[_Schema] = {
    1: _Field("replicas", "int", optional=True),
    2: _Field("selector", "message", _LABEL_SELECTOR, optional=True),
    3: _Field("template", "message", _POD_TEMPLATE_SPEC),
    4: _Field("minReadySeconds", "int"),
}

_REPLICA_SET_STATUS: Final[_Schema] = {
    1: _Field("replicas", "int"),
    2: _Field("fullyLabeledReplicas", "int"),
    3: _Field("observedGeneration", "int"),
    4: _Field("readyReplicas", "int"),
    5: _Field("availableReplicas", "int"),
    7: _Field("terminatingReplicas", "int", optional=True),
}

_REPLICA_SET: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _REPLICA_SET_SPEC),
    3: _Field("status", "message", _REPLICA_SET_STATUS),
}

_DAEMON_SET_UPDATE_STRATEGY: Final[_Schema] = {
    1: _Field("type", "string"),
    2: _Field("rollingUpdate", "message", _ROLLING_UPDATE, optional=True),
}

_DAEMON_SET_SPEC: Final[_Schema] = {
    1: _Field("selector", "message", _LABEL_SELECTOR, optional=True),
    2: _Field("template", "message", _POD_TEMPLATE_SPEC),
    3: _Field("updateStrategy", "message", _DAEMON_SET_UPDATE_STRATEGY),
    4: _Field("minReadySeconds", "int"),
    6: _Field("revisionHistoryLimit", "int", optional=True),
}

_DAEMON_SET_STATUS: Final[_Schema] = {
    1: _Field("currentNumberScheduled", "int"),
    2: _Field("numberMisscheduled", "int"),
    3: _Field("desiredNumberScheduled", "int"),
    4: _Field("numberReady", "int"),
    5: _Field("observedGeneration", "int"),
    6: _Field("updatedNumberScheduled", "int"),
    7: _Field("numberAvailable", "int"),
    8: _Field("numberUnavailable", "int"),
    9: _Field("collisionCount", "int", optional=True),
}

_DAEMON_SET: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _DAEMON_SET_SPEC),
    3: _Field("status", "message", _DAEMON_SET_STATUS),
}

_ROLLING_UPDATE_STATEFUL_SET_STRATEGY: Final[_Schema] = {
    1: _Field("partition", "int", optional=True),
    2: _Field("maxUnavailable", "int_or_string", optional=True),
}

_STATEFUL_SET_UPDATE_STRATEGY: Final[_Schema] = {
    1: _Field("type", "string"),
    2: _Field("rollingUpdate", "message", _ROLLING_UPDATE_STATEFUL_SET_STRATEGY, optional=True),
}

_STATEFUL_SET_SPEC: Final[_Schema] = {
    1: _Field("replicas", "int", optional=True),
    2: _Field("selector", "message", _LABEL_SELECTOR, optional=True),
    3: _Field("template", "message", _POD_TEMPLATE_SPEC),
    # 4, volumeClaimTemplates (whole PersistentVolumeClaims), is not read.
    5: _Field("serviceName", "string"),
    6: _Field("podManagementPolicy", "string"),
    7: _Field("updateStrategy", "message", _STATEFUL_SET_UPDATE_STRATEGY),
    8: _Field("revisionHistoryLimit", "int", optional=True),
    9: _Field("minReadySeconds", "int"),
    10: _Field(
        "persistentVolumeClaimRetentionPolicy",
        "message",
        {1: _Field("whenDeleted", "string"), 2: _Field("whenScaled", "string")},
        optional=True,
    ),
    11: _Field("ordinals", "message", {1: _Field("start", "int")}, optional=True),
}

_STATEFUL_SET_STATUS: Final[_Schema] = {
    1: _Field("observedGeneration", "int"),
    2: _Field("replicas", "int"),
    3: _Field("readyReplicas", "int"),
    4: _Field("currentReplicas", "int"),
    5: _Field("updatedReplicas", "int"),
    6: _Field("currentRevision", "string"),
    7: _Field("updateRevision", "string"),
    9: _Field("collisionCount", "int", optional=True),
    11: _Field("availableReplicas", "int"),
}

_STATEFUL_SET: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _STATEFUL_SET_SPEC),
    3: _Field("status", "message", _STATEFUL_SET_STATUS),
}

# -- what client-go's machinery writes: leader election's Leases, recorders' Events,
# controllers' Endpoints.

_LEASE_SPEC: Final[_Schema] = {
    1: _Field("holderIdentity", "string", optional=True),
    2: _Field("leaseDurationSeconds", "int", optional=True),
    3: _Field("acquireTime", "micro_time", optional=True),
    4: _Field("renewTime", "micro_time", optional=True),
    5: _Field("leaseTransitions", "int", optional=True),
    6: _Field("strategy", "string", optional=True),
    7: _Field("preferredHolder", "string", optional=True),
}

_ENDPOINT_ADDRESS: Final[_Schema] = {
    1: _Field("ip", "string"),
    2: _Field("targetRef", "message", _OBJECT_REFERENCE, optional=True),
    3: _Field("hostname", "string"),
    4: _Field("nodeName", "string", optional=True),
}

_ENDPOINT_PORT: Final[_Schema] = {
    1: _Field("name", "string"),
    2: _Field("port", "int"),
    3: _Field("protocol", "string"),
    4: _Field("appProtocol", "string", optional=True),
}

_ENDPOINT_SUBSET: Final[_Schema] = {
    1: _Field("addresses", "message", _ENDPOINT_ADDRESS, repeated=True),
    2: _Field("notReadyAddresses", "message", _ENDPOINT_ADDRESS, repeated=True),
    3: _Field("ports", "message", _ENDPOINT_PORT, repeated=True),
}

_EVENT_SOURCE: Final[_Schema] = {1: _Field("component", "string"), 2: _Field("host", "string")}

_EVENT_SERIES: Final[_Schema] = {
    1: _Field("count", "int"),
    2: _Field("lastObservedTime", "micro_time"),
}

_CORE_EVENT: Final[_Schema] = {
    1: _METADATA,
    2: _Field("involvedObject", "message", _OBJECT_REFERENCE),
    3: _Field("reason", "string"),
    4: _Field("message", "string"),
    5: _Field("source", "message", _EVENT_SOURCE),
    6: _Field("firstTimestamp", "time"),
    7: _Field("lastTimestamp", "time"),
    8: _Field("count", "int"),
    9: _Field("type", "string"),
    10: _Field("eventTime", "micro_time"),
    11: _Field("series", "message", _EVENT_SERIES, optional=True),
    12: _Field("action", "string"),
    13: _Field("related", "message", _OBJECT_REFERENCE, optional=True),
    14: _Field("reportingComponent", "string"),
    15: _Field("reportingInstance", "string"),
}

_EVENT: Final[_Schema] = {
    1: _METADATA,
    2: _Field("eventTime", "micro_time"),
    3: _Field("series", "message", _EVENT_SERIES, optional=True),
    4: _Field("reportingController", "string"),
    5: _Field("reportingInstance", "string"),
    6: _Field("action", "string"),
    7: _Field("reason", "string"),
    8: _Field("regarding", "message", _OBJECT_REFERENCE),
    9: _Field("related", "message", _OBJECT_REFERENCE, optional=True),
    10: _Field("note", "string"),
    11: _Field("type", "string"),
    12: _Field("deprecatedSource", "message", _EVENT_SOURCE),
    13: _Field("deprecatedFirstTimestamp", "time"),
    14: _Field("deprecatedLastTimestamp", "time"),
    15: _Field("deprecatedCount", "int"),
}

_IP: Final[_Schema] = {1: _Field("ip", "string")}

_POD_STATUS: Final[_Schema] = {
    1: _Field("phase", "string"),
    3: _Field("message", "string"),
    4: _Field("reason", "string"),
    5: _Field("hostIP", "string"),
    6: _Field("podIP", "string"),
    7: _Field("startTime", "time", optional=True),
    9: _Field("qosClass", "string"),
    11: _Field("nominatedNodeName", "string"),
    12: _Field("podIPs", "message", _IP, repeated=True),
    14: _Field("resize", "string"),
    16: _Field("hostIPs", "message", _IP, repeated=True),
    17: _Field("observedGeneration", "int"),
    19: _Field("allocatedResources", "quantity", map=True),
    20: _Field("resources", "message", _RESOURCE_REQUIREMENTS, optional=True),
}

_POD: Final[_Schema] = {
    1: _METADATA,
    2: _Field("spec", "message", _POD_SPEC),
    3: _Field("status", "message", _POD_STATUS),
}


_KINDS: Final[dict[tuple[str, str], _Schema]] = {
    ("v1", "ConfigMap"): {
        1: _METADATA,
        2: _Field("data", "string", map=True),
        3: _Field("binaryData", "bytes", map=True),
        4: _Field("immutable", "bool", optional=True),
    },
    ("v1", "Secret"): {
        1: _METADATA,
        2: _Field("data", "bytes", map=True),
        3: _Field("type", "string"),
        4: _Field("stringData", "string", map=True),
        5: _Field("immutable", "bool", optional=True),
    },
    ("v1", "Namespace"): {
        1: _METADATA,
        2: _Field("spec", "message", {1: _Field("finalizers", "string", repeated=True)}),
        3: _Field("status", "message", {1: _Field("phase", "string"), 2: _SKIP}),
    },
    ("v1", "ServiceAccount"): {
        1: _METADATA,
        2: _Field("secrets", "message", _OBJECT_REFERENCE, repeated=True),
        3: _Field("imagePullSecrets", "message", _LOCAL_OBJECT_REFERENCE, repeated=True),
        4: _Field("automountServiceAccountToken", "bool", optional=True),
    },
    ("v1", "Pod"): _POD,
    ("v1", "Service"): _SERVICE,
    ("v1", "Endpoints"): {
        1: _METADATA,
        2: _Field("subsets", "message", _ENDPOINT_SUBSET, repeated=True),
    },
    ("v1", "Event"): _CORE_EVENT,
    ("apps/v1", "Deployment"): _DEPLOYMENT,
    ("apps/v1", "ReplicaSet"): _REPLICA_SET,
    ("apps/v1", "StatefulSet"): _STATEFUL_SET,
    ("apps/v1", "DaemonSet"): _DAEMON_SET,
    ("batch/v1", "Job"): _JOB,
    ("batch/v1", "CronJob"): _CRON_JOB,
    ("networking.k8s.io/v1", "Ingress"): _INGRESS,
    ("coordination.k8s.io/v1", "Lease"): {1: _METADATA, 2: _Field("spec", "message", _LEASE_SPEC)},
    ("events.k8s.io/v1", "Event"): _EVENT,
}

_TYPE_META: Final[_Schema] = {1: _Field("apiVersion", "string"), 2: _Field("kind", "string")}


class _Malformed(Exception):
    """The bytes are not a protobuf message (truncated, a bad wire type)."""


class _NotDecoded(Exception):
    """A well-formed message with a field the schema does not know."""


def is_protobuf(content_type: str) -> bool:
    """Whether a Content-Type header names the Kubernetes protobuf media type."""
    return content_type.split(";")[0].strip().lower() == PROTOBUF


def _decoded_kinds() -> list[str]:
    """The kinds whose protobuf bodies are decoded, sorted."""
    return sorted({kind for _, kind in _KINDS})


def decode_protobuf_object(body: bytes) -> dict[str, Any]:
    """The object a protobuf request body carries, as its JSON mapping (with the
    ``apiVersion`` and ``kind`` of its envelope), for the kinds of :data:`_KINDS`.

    Raises :class:`StatusError`: 400 ``BadRequest`` when the body is not the envelope,
    415 ``UnsupportedMediaType`` for another kind, an encoded ``raw`` or a field the fake
    does not decode."""
    if not body.startswith(MAGIC):
        raise _bad_request("the protobuf body does not start with the Kubernetes magic number")
    try:
        type_meta, raw, encoding = _envelope(body[len(MAGIC) :])
    except (_Malformed, _NotDecoded) as exc:
        raise _bad_request(f"the protobuf envelope cannot be decoded: {exc}") from exc
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    schema = _KINDS.get((api_version, kind))
    if schema is None:
        raise _unsupported(kind or "object without a kind", "")
    if encoding:
        raise _unsupported(kind, f" (content encoding {encoding!r})")
    try:
        obj = _message(raw, schema, kind)
    except _NotDecoded as exc:
        raise _unsupported(kind, f" ({exc})") from exc
    except _Malformed as exc:
        raise _bad_request(f"the protobuf {kind} cannot be decoded: {exc}") from exc
    return {"apiVersion": api_version, "kind": kind, **obj}


def _envelope(data: bytes) -> tuple[dict[str, Any], bytes, str]:
    """A ``runtime.Unknown``'s type meta, raw object and content encoding (its content
    type, field 4, is always protobuf here and is not read)."""
    type_meta: dict[str, Any] = {}
    raw, encoding = b"", ""
    for number, _, value in _fields(data):
        if number not in (1, 2, 3):
            continue
        if not isinstance(value, bytes):
            raise _Malformed(f"field {number} of runtime.Unknown is not length-delimited")
        if number == 1:
            type_meta = _message(value, _TYPE_META, "runtime.TypeMeta")
        elif number == 2:
            raw = value
        else:
            encoding = _text(value, "runtime.Unknown.contentEncoding")
    return type_meta, raw, encoding


def _bad_request(message: str) -> StatusError:
    return StatusError(status_body(400, "BadRequest", message))


def _unsupported(kind: str, why: str) -> StatusError:
    """kube-apiserver's 415 words, naming the kind and what to send instead."""
    decoded = ", ".join(_decoded_kinds())
    return StatusError(
        status_body(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types "
            f"include: application/json, {PROTOBUF} (for {decoded}); the fake API server "
            f"does not decode a protobuf {kind}{why}: send it as JSON",
        )
    )


def _message(data: bytes, schema: Mapping[int, _Field], where: str) -> dict[str, Any]:
    """One message decoded by ``schema``; a field it does not name refuses the body."""
    out: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        field = schema.get(number)
        if field is None:
            raise _NotDecoded(f"field {number} of {where} is not decoded")
        if field.kind == "skip":
            continue
        _set(out, field, wire, value, f"{where}.{field.name}" if field.name else where)
    return out


def _set(out: dict[str, Any], field: _Field, wire: int, value: int | bytes, where: str) -> None:
    """Put one occurrence of ``field`` into ``out``: a list item, a map entry, an inline
    message's fields, or the value (a zero or empty one only for a Go pointer)."""
    if field.map:
        if not isinstance(value, bytes):
            raise _Malformed(f"{where} is not length-delimited (wire type {wire})")
        key, item = _map_entry(value, field, where)
        out.setdefault(field.name, {})[key] = item
        return
    decoded = _value(field, wire, value, where)
    if field.repeated:
        out.setdefault(field.name, []).append(decoded)
    elif not field.name:
        out.update(decoded)
    elif decoded is not None and (field.optional or decoded):
        out[field.name] = decoded


def _value(field: _Field, wire: int, value: int | bytes, where: str) -> Any:
    """One field's value, as JSON has it."""
    kind = field.kind
    if kind in ("int", "bool"):
        if not isinstance(value, int):
            raise _Malformed(f"{where} is not a varint")
        if kind == "bool":
            return bool(value)
        return value - (1 << 64) if value >= 1 << 63 else value
    if not isinstance(value, bytes):
        raise _Malformed(f"{where} is not length-delimited (wire type {wire})")
    if kind == "string":
        return _text(value, where)
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind == "message":
        assert field.schema is not None
        return _message(value, field.schema, where)
    if kind == "quantity":
        return _message(value, _QUANTITY, where).get("string", "")
    if kind == "int_or_string":
        return _int_or_string(_message(value, _INT_OR_STRING, where))
    return _time(_message(value, _TIME, where), micro=kind == "micro_time")


_QUANTITY: Final[_Schema] = {1: _Field("string", "string")}
"""``resource.Quantity``: its string form."""

_INT_OR_STRING: Final[_Schema] = {
    1: _Field("type", "int"),
    2: _Field("intVal", "int"),
    3: _Field("strVal", "string"),
}
"""``intstr.IntOrString``: type 0 is the integer, 1 the string."""

_TIME: Final[_Schema] = {1: _Field("seconds", "int"), 2: _Field("nanos", "int")}
"""``metav1.Time``: seconds and nanoseconds since the Unix epoch."""


def _int_or_string(decoded: Mapping[str, Any]) -> int | str:
    if decoded.get("type", 0) == 1:
        text: str = decoded.get("strVal", "")
        return text
    number: int = decoded.get("intVal", 0)
    return number


def _time(decoded: Mapping[str, Any], *, micro: bool) -> str | None:
    """RFC 3339 as JSON writes a ``metav1.Time`` (to the second) or a ``MicroTime`` (to the
    microsecond); ``None`` for the zero time, which Go encodes as an empty message."""
    if not decoded:
        return None
    seconds, nanos = decoded.get("seconds", 0), decoded.get("nanos", 0)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=nanos // 1000)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _map_entry(data: bytes, field: _Field, where: str) -> tuple[str, Any]:
    """A ``map<string, ...>`` entry (key 1, value 2), the value decoded as ``field``'s kind."""
    key, item = "", b""
    for number, _, value in _fields(data):
        if not isinstance(value, bytes) or number not in (1, 2):
            raise _Malformed(f"{where} has a map entry that is not (string, value)")
        if number == 1:
            key = _text(value, where)
        else:
            item = value
    return key, _value(field, 2, item, f"{where}[{key}]")


def _text(value: bytes, where: str) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError as exc:
        raise _Malformed(f"{where} is not UTF-8") from exc


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Each ``(field number, wire type, value)`` of a message: an int for varints and
    fixed-width fields, the bytes of a length-delimited one."""
    position = 0
    while position < len(data):
        tag, position = _varint(data, position)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise _Malformed("field number 0")
        if wire == 0:
            value, position = _varint(data, position)
            yield number, wire, value
        elif wire == 2:
            length, position = _varint(data, position)
            end = position + length
            if end > len(data):
                raise _Malformed("a length-delimited field runs past the end")
            yield number, wire, data[position:end]
            position = end
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if position + size > len(data):
                raise _Malformed("a fixed-width field runs past the end")
            yield number, wire, int.from_bytes(data[position : position + size], "little")
            position += size
        else:
            raise _Malformed(f"wire type {wire}")


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """The varint at ``position`` and the position after it."""
    result = shift = 0
    while True:
        if position >= len(data):
            raise _Malformed("a varint runs past the end")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift >= 64:
            raise _Malformed("a varint longer than 10 bytes")
