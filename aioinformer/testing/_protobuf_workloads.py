"""The protobuf messages of a Pod and of the workloads that template one.

Role: the schemas of ``v1`` Pods, ``apps/v1`` Deployments, ReplicaSets, StatefulSets and
DaemonSets, and ``batch/v1`` Jobs and CronJobs, for ``_protobuf``'s table of kinds: what
``kubectl create deployment``, ``job`` and ``cronjob`` send, and what typed clients
write. Fields are numbered as in ``k8s.io/api``'s ``generated.proto``: the pod spec with
its containers (ports, env, resources, volume mounts), the pod template, each workload's
spec and status, and the label selector they share. A message left out (volumes, probes,
affinity, conditions, a StatefulSet's ``volumeClaimTemplates`` ...) refuses the body
where it appears.

Task model: constants, built once at import; the decoder only reads them.
"""

from __future__ import annotations

from typing import Final

from aioinformer.testing._protobuf_meta import LOCAL_OBJECT_REFERENCE, METADATA, OBJECT_REFERENCE
from aioinformer.testing._protobuf_schema import Field, Schema

__all__ = ["CRON_JOB", "DAEMON_SET", "DEPLOYMENT", "JOB", "POD", "REPLICA_SET", "STATEFUL_SET"]

_LABEL_SELECTOR_REQUIREMENT: Final[Schema] = {
    1: Field("key", "string"),
    2: Field("operator", "string"),
    3: Field("values", "string", repeated=True),
}

_LABEL_SELECTOR: Final[Schema] = {
    1: Field("matchLabels", "string", map=True),
    2: Field("matchExpressions", "message", _LABEL_SELECTOR_REQUIREMENT, repeated=True),
}

_CONTAINER_PORT: Final[Schema] = {
    1: Field("name", "string"),
    2: Field("hostPort", "int"),
    3: Field("containerPort", "int"),
    4: Field("protocol", "string"),
    5: Field("hostIP", "string"),
}

_ENV_VAR: Final[Schema] = {
    1: Field("name", "string"),
    2: Field("value", "string"),
}

_RESOURCE_REQUIREMENTS: Final[Schema] = {
    1: Field("limits", "quantity", map=True),
    2: Field("requests", "quantity", map=True),
}

_VOLUME_MOUNT: Final[Schema] = {
    1: Field("name", "string"),
    2: Field("readOnly", "bool"),
    3: Field("mountPath", "string"),
    4: Field("subPath", "string"),
    5: Field("mountPropagation", "string", optional=True),
    6: Field("subPathExpr", "string"),
    7: Field("recursiveReadOnly", "string", optional=True),
    8: Field("bindMountOptions", "string", repeated=True),
}

_CONTAINER: Final[Schema] = {
    1: Field("name", "string"),
    2: Field("image", "string"),
    3: Field("command", "string", repeated=True),
    4: Field("args", "string", repeated=True),
    5: Field("workingDir", "string"),
    6: Field("ports", "message", _CONTAINER_PORT, repeated=True),
    7: Field("env", "message", _ENV_VAR, repeated=True),
    8: Field("resources", "message", _RESOURCE_REQUIREMENTS),
    9: Field("volumeMounts", "message", _VOLUME_MOUNT, repeated=True),
    13: Field("terminationMessagePath", "string"),
    14: Field("imagePullPolicy", "string"),
    16: Field("stdin", "bool"),
    17: Field("stdinOnce", "bool"),
    18: Field("tty", "bool"),
    20: Field("terminationMessagePolicy", "string"),
    24: Field("restartPolicy", "string", optional=True),
}

_POD_SPEC: Final[Schema] = {
    2: Field("containers", "message", _CONTAINER, repeated=True),
    3: Field("restartPolicy", "string"),
    4: Field("terminationGracePeriodSeconds", "int", optional=True),
    5: Field("activeDeadlineSeconds", "int", optional=True),
    6: Field("dnsPolicy", "string"),
    7: Field("nodeSelector", "string", map=True),
    8: Field("serviceAccountName", "string"),
    9: Field("serviceAccount", "string"),
    10: Field("nodeName", "string"),
    11: Field("hostNetwork", "bool"),
    12: Field("hostPID", "bool"),
    13: Field("hostIPC", "bool"),
    15: Field("imagePullSecrets", "message", LOCAL_OBJECT_REFERENCE, repeated=True),
    16: Field("hostname", "string"),
    17: Field("subdomain", "string"),
    19: Field("schedulerName", "string"),
    20: Field("initContainers", "message", _CONTAINER, repeated=True),
    21: Field("automountServiceAccountToken", "bool", optional=True),
    24: Field("priorityClassName", "string"),
    25: Field("priority", "int", optional=True),
    27: Field("shareProcessNamespace", "bool", optional=True),
    29: Field("runtimeClassName", "string", optional=True),
    30: Field("enableServiceLinks", "bool", optional=True),
    31: Field("preemptionPolicy", "string", optional=True),
    32: Field("overhead", "quantity", map=True),
    35: Field("setHostnameAsFQDN", "bool", optional=True),
    37: Field("hostUsers", "bool", optional=True),
    40: Field("resources", "message", _RESOURCE_REQUIREMENTS, optional=True),
    41: Field("hostnameOverride", "string", optional=True),
}

_POD_TEMPLATE_SPEC: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _POD_SPEC),
}

_IP: Final[Schema] = {1: Field("ip", "string")}

_POD_STATUS: Final[Schema] = {
    1: Field("phase", "string"),
    3: Field("message", "string"),
    4: Field("reason", "string"),
    5: Field("hostIP", "string"),
    6: Field("podIP", "string"),
    7: Field("startTime", "time", optional=True),
    9: Field("qosClass", "string"),
    11: Field("nominatedNodeName", "string"),
    12: Field("podIPs", "message", _IP, repeated=True),
    14: Field("resize", "string"),
    16: Field("hostIPs", "message", _IP, repeated=True),
    17: Field("observedGeneration", "int"),
    19: Field("allocatedResources", "quantity", map=True),
    20: Field("resources", "message", _RESOURCE_REQUIREMENTS, optional=True),
}

POD: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _POD_SPEC),
    3: Field("status", "message", _POD_STATUS),
}


_ROLLING_UPDATE: Final[Schema] = {  # a Deployment's and a DaemonSet's
    1: Field("maxUnavailable", "int_or_string", optional=True),
    2: Field("maxSurge", "int_or_string", optional=True),
}

_DEPLOYMENT_STRATEGY: Final[Schema] = {
    1: Field("type", "string"),
    2: Field("rollingUpdate", "message", _ROLLING_UPDATE, optional=True),
}

_DEPLOYMENT_SPEC: Final[Schema] = {
    1: Field("replicas", "int", optional=True),
    2: Field("selector", "message", _LABEL_SELECTOR, optional=True),
    3: Field("template", "message", _POD_TEMPLATE_SPEC),
    4: Field("strategy", "message", _DEPLOYMENT_STRATEGY),
    5: Field("minReadySeconds", "int"),
    6: Field("revisionHistoryLimit", "int", optional=True),
    7: Field("paused", "bool"),
    9: Field("progressDeadlineSeconds", "int", optional=True),
}

_DEPLOYMENT_STATUS: Final[Schema] = {
    1: Field("observedGeneration", "int"),
    2: Field("replicas", "int"),
    3: Field("updatedReplicas", "int"),
    4: Field("availableReplicas", "int"),
    5: Field("unavailableReplicas", "int"),
    7: Field("readyReplicas", "int"),
    8: Field("collisionCount", "int", optional=True),
    9: Field("terminatingReplicas", "int", optional=True),
}

DEPLOYMENT: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _DEPLOYMENT_SPEC),
    3: Field("status", "message", _DEPLOYMENT_STATUS),
}

_JOB_SPEC: Final[Schema] = {
    1: Field("parallelism", "int", optional=True),
    2: Field("completions", "int", optional=True),
    3: Field("activeDeadlineSeconds", "int", optional=True),
    4: Field("selector", "message", _LABEL_SELECTOR, optional=True),
    5: Field("manualSelector", "bool", optional=True),
    6: Field("template", "message", _POD_TEMPLATE_SPEC),
    7: Field("backoffLimit", "int", optional=True),
    8: Field("ttlSecondsAfterFinished", "int", optional=True),
    9: Field("completionMode", "string", optional=True),
    10: Field("suspend", "bool", optional=True),
    12: Field("backoffLimitPerIndex", "int", optional=True),
    13: Field("maxFailedIndexes", "int", optional=True),
    14: Field("podReplacementPolicy", "string", optional=True),
    15: Field("managedBy", "string", optional=True),
}

_JOB_STATUS: Final[Schema] = {
    2: Field("startTime", "time", optional=True),
    3: Field("completionTime", "time", optional=True),
    4: Field("active", "int"),
    5: Field("succeeded", "int"),
    6: Field("failed", "int"),
    7: Field("completedIndexes", "string"),
    9: Field("ready", "int", optional=True),
    10: Field("failedIndexes", "string", optional=True),
    11: Field("terminating", "int", optional=True),
}

JOB: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _JOB_SPEC),
    3: Field("status", "message", _JOB_STATUS),
}

_JOB_TEMPLATE_SPEC: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _JOB_SPEC),
}

_CRON_JOB_SPEC: Final[Schema] = {
    1: Field("schedule", "string"),
    2: Field("startingDeadlineSeconds", "int", optional=True),
    3: Field("concurrencyPolicy", "string"),
    4: Field("suspend", "bool", optional=True),
    5: Field("jobTemplate", "message", _JOB_TEMPLATE_SPEC),
    6: Field("successfulJobsHistoryLimit", "int", optional=True),
    7: Field("failedJobsHistoryLimit", "int", optional=True),
    8: Field("timeZone", "string", optional=True),
}

_CRON_JOB_STATUS: Final[Schema] = {
    1: Field("active", "message", OBJECT_REFERENCE, repeated=True),
    4: Field("lastScheduleTime", "time", optional=True),
    5: Field("lastSuccessfulTime", "time", optional=True),
}

CRON_JOB: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _CRON_JOB_SPEC),
    3: Field("status", "message", _CRON_JOB_STATUS),
}

_REPLICA_SET_SPEC: Final[Schema] = {
    1: Field("replicas", "int", optional=True),
    2: Field("selector", "message", _LABEL_SELECTOR, optional=True),
    3: Field("template", "message", _POD_TEMPLATE_SPEC),
    4: Field("minReadySeconds", "int"),
}

_REPLICA_SET_STATUS: Final[Schema] = {
    1: Field("replicas", "int"),
    2: Field("fullyLabeledReplicas", "int"),
    3: Field("observedGeneration", "int"),
    4: Field("readyReplicas", "int"),
    5: Field("availableReplicas", "int"),
    7: Field("terminatingReplicas", "int", optional=True),
}

REPLICA_SET: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _REPLICA_SET_SPEC),
    3: Field("status", "message", _REPLICA_SET_STATUS),
}

_DAEMON_SET_UPDATE_STRATEGY: Final[Schema] = {
    1: Field("type", "string"),
    2: Field("rollingUpdate", "message", _ROLLING_UPDATE, optional=True),
}

_DAEMON_SET_SPEC: Final[Schema] = {
    1: Field("selector", "message", _LABEL_SELECTOR, optional=True),
    2: Field("template", "message", _POD_TEMPLATE_SPEC),
    3: Field("updateStrategy", "message", _DAEMON_SET_UPDATE_STRATEGY),
    4: Field("minReadySeconds", "int"),
    6: Field("revisionHistoryLimit", "int", optional=True),
}

_DAEMON_SET_STATUS: Final[Schema] = {
    1: Field("currentNumberScheduled", "int"),
    2: Field("numberMisscheduled", "int"),
    3: Field("desiredNumberScheduled", "int"),
    4: Field("numberReady", "int"),
    5: Field("observedGeneration", "int"),
    6: Field("updatedNumberScheduled", "int"),
    7: Field("numberAvailable", "int"),
    8: Field("numberUnavailable", "int"),
    9: Field("collisionCount", "int", optional=True),
}

DAEMON_SET: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _DAEMON_SET_SPEC),
    3: Field("status", "message", _DAEMON_SET_STATUS),
}

_ROLLING_UPDATE_STATEFUL_SET_STRATEGY: Final[Schema] = {
    1: Field("partition", "int", optional=True),
    2: Field("maxUnavailable", "int_or_string", optional=True),
}

_STATEFUL_SET_UPDATE_STRATEGY: Final[Schema] = {
    1: Field("type", "string"),
    2: Field("rollingUpdate", "message", _ROLLING_UPDATE_STATEFUL_SET_STRATEGY, optional=True),
}

_STATEFUL_SET_SPEC: Final[Schema] = {
    1: Field("replicas", "int", optional=True),
    2: Field("selector", "message", _LABEL_SELECTOR, optional=True),
    3: Field("template", "message", _POD_TEMPLATE_SPEC),
    # 4, volumeClaimTemplates (whole PersistentVolumeClaims), is not read.
    5: Field("serviceName", "string"),
    6: Field("podManagementPolicy", "string"),
    7: Field("updateStrategy", "message", _STATEFUL_SET_UPDATE_STRATEGY),
    8: Field("revisionHistoryLimit", "int", optional=True),
    9: Field("minReadySeconds", "int"),
    10: Field(
        "persistentVolumeClaimRetentionPolicy",
        "message",
        {1: Field("whenDeleted", "string"), 2: Field("whenScaled", "string")},
        optional=True,
    ),
    11: Field("ordinals", "message", {1: Field("start", "int")}, optional=True),
}

_STATEFUL_SET_STATUS: Final[Schema] = {
    1: Field("observedGeneration", "int"),
    2: Field("replicas", "int"),
    3: Field("readyReplicas", "int"),
    4: Field("currentReplicas", "int"),
    5: Field("updatedReplicas", "int"),
    6: Field("currentRevision", "string"),
    7: Field("updateRevision", "string"),
    9: Field("collisionCount", "int", optional=True),
    11: Field("availableReplicas", "int"),
}

STATEFUL_SET: Final[Schema] = {
    1: METADATA,
    2: Field("spec", "message", _STATEFUL_SET_SPEC),
    3: Field("status", "message", _STATEFUL_SET_STATUS),
}
