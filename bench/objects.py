"""Realistic, deterministic Kubernetes objects for the benchmarks, and their wire bytes.

Role: the single source of every byte the benchmarks move. The replay server encodes LIST
pages and watch lines from these objects, and the decode-ceiling scenario rebuilds the very
same lines in-process, so every side of a comparison sees identical bytes.

Output:

* :func:`make_pod` — a Pod of about 4 KiB as the API server returns it: labels, annotations,
  an owner reference, ``managedFields`` from two managers, two containers with probes,
  resources, env and mounts, and a full ``status``.
* :func:`make_harness_pod` — a Pod of about 4 KiB in the shape of the independent
  harness's replay server (``bench-harness/replay_server.py``): one container, no
  ``managedFields`` but the kubelet's, about half the dicts and lists of :func:`make_pod`.
  The scenarios that stand for the harness's clients serve it (``shape="harness"``), since
  what a decode leaves for the cyclic collector grows with the containers decoded.
* :func:`make_configmap` — a ConfigMap of about 1 KiB.
* :class:`WatchLineTemplate` — one watch line (``{"type":"MODIFIED","object":...}``) split
  around two placeholders, the object's ``resourceVersion`` and the emit timestamp
  annotation, so a server fills both per event with a join instead of re-encoding.

Objects are a pure function of ``(index, namespaces)``: no randomness, no clock.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

__all__ = [
    "APP_LABEL",
    "EMITTED_ANNOTATION",
    "KINDS",
    "SHAPES",
    "TEAM_LABEL",
    "Shape",
    "TIER_LABEL",
    "WatchLineTemplate",
    "encode_item",
    "make_configmap",
    "make_harness_pod",
    "make_object",
    "make_pod",
    "object_key",
]

EMITTED_ANNOTATION: Final = "bench.aioinformer.io/emitted-ns"
"""Annotation carrying ``time.monotonic_ns()`` at the moment the server wrote the event."""

APP_LABEL: Final = "app.kubernetes.io/name"
"""Label indexed by the watch scenarios (one of the two label indexes)."""

TIER_LABEL: Final = "tier"
"""Label indexed by the watch scenarios (the other label index)."""

TEAM_LABEL: Final = "team"
"""Label indexed, beside :data:`APP_LABEL`, by the scenarios that run the independent
harness's client code (its Pods carry both)."""

_RV_MARK: Final = b"@@RV@@"
_TS_MARK: Final = b"@@TS@@"

_APPS: Final = (
    "checkout",
    "catalog",
    "payments",
    "search",
    "frontend",
    "recommender",
    "inventory",
    "notifications",
    "auth",
    "reporting",
    "shipping",
    "ledger",
)
_TIERS: Final = ("web", "api", "worker", "cache", "batch")
_TEAMS: Final = ("orders", "platform", "growth", "core", "data")


def _uid(kind_code: int, index: int) -> str:
    digits = f"{kind_code:04x}{index:028x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:32]}"


def _hash(index: int, width: int) -> str:
    # A cheap, stable pseudo-hash so names and IPs look varied without randomness.
    value = (index * 2654435761 + 0x9E3779B9) & 0xFFFFFFFFFFFF
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    chars = []
    for _ in range(width):
        value, digit = divmod(value, len(alphabet))
        chars.append(alphabet[digit])
    return "".join(chars)


def _managed_fields(created: str) -> list[dict[str, Any]]:
    spec_fields: dict[str, Any] = {
        "f:metadata": {
            "f:generateName": {},
            "f:labels": {
                ".": {},
                f"f:{APP_LABEL}": {},
                "f:pod-template-hash": {},
                f"f:{TIER_LABEL}": {},
                "f:team": {},
                "f:version": {},
            },
            "f:ownerReferences": {".": {}, 'k:{"uid":"replicaset"}': {}},
        },
        "f:spec": {
            "f:containers": {
                'k:{"name":"app"}': {
                    ".": {},
                    "f:env": {".": {}, 'k:{"name":"LOG_LEVEL"}': {".": {}, "f:name": {}}},
                    "f:image": {},
                    "f:imagePullPolicy": {},
                    "f:livenessProbe": {".": {}, "f:httpGet": {".": {}, "f:path": {}}},
                    "f:name": {},
                    "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': {}},
                    "f:resources": {".": {}, "f:limits": {}, "f:requests": {}},
                },
                'k:{"name":"proxy"}': {".": {}, "f:image": {}, "f:name": {}},
            },
            "f:dnsPolicy": {},
            "f:restartPolicy": {},
            "f:schedulerName": {},
            "f:terminationGracePeriodSeconds": {},
        },
    }
    status_fields: dict[str, Any] = {
        "f:status": {
            "f:conditions": {
                'k:{"type":"ContainersReady"}': {".": {}, "f:status": {}, "f:type": {}},
                'k:{"type":"Initialized"}': {".": {}, "f:status": {}, "f:type": {}},
                'k:{"type":"Ready"}': {".": {}, "f:status": {}, "f:type": {}},
            },
            "f:containerStatuses": {},
            "f:hostIP": {},
            "f:phase": {},
            "f:podIP": {},
            "f:podIPs": {".": {}, 'k:{"ip":"10.0.0.1"}': {".": {}, "f:ip": {}}},
            "f:startTime": {},
        }
    }
    return [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": created,
            "fieldsType": "FieldsV1",
            "fieldsV1": spec_fields,
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": created,
            "fieldsType": "FieldsV1",
            "fieldsV1": status_fields,
            "subresource": "status",
        },
    ]


def make_pod(index: int, *, namespaces: int = 50, resource_version: str = "1") -> dict[str, Any]:
    """The ``index``-th Pod, as found in a LIST answer (no ``apiVersion``/``kind``).

    Pods spread round-robin over ``namespaces`` namespaces named ``ns-000`` onwards.
    """
    app = _APPS[index % len(_APPS)]
    tier = _TIERS[index % len(_TIERS)]
    team = _TEAMS[index % len(_TEAMS)]
    template_hash = _hash(index // 7, 10)
    name = f"{app}-{template_hash}-{_hash(index, 5)}"
    namespace = f"ns-{index % namespaces:03d}"
    created = f"2026-11-{1 + index % 28:02d}T{index % 24:02d}:{index % 60:02d}:{index % 53:02d}Z"
    node = f"node-{index % 97:03d}.pool-a.cluster.internal"
    pod_ip = f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"
    host_ip = f"192.168.{index % 97 // 250}.{index % 97 + 2}"
    image = f"registry.example.com/{team}/{app}:v1.{index % 40}.{index % 9}"
    container_id = f"containerd://{_hash(index, 12)}{_hash(index + 1, 12)}{_hash(index + 2, 12)}"
    return {
        "metadata": {
            "name": name,
            "generateName": f"{app}-{template_hash}-",
            "namespace": namespace,
            "uid": _uid(1, index),
            "resourceVersion": resource_version,
            "creationTimestamp": created,
            "labels": {
                APP_LABEL: app,
                "pod-template-hash": template_hash,
                TIER_LABEL: tier,
                TEAM_LABEL: team,
                "version": f"v1.{index % 40}",
            },
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": created,
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                EMITTED_ANNOTATION: "0",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-{template_hash}",
                    "uid": _uid(2, index // 7),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": _managed_fields(created),
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": image,
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                    "env": [
                        {"name": "LOG_LEVEL", "value": "info"},
                        {
                            "name": "POD_NAME",
                            "valueFrom": {
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}
                            },
                        },
                    ],
                    "resources": {
                        "limits": {"cpu": "1", "memory": "512Mi"},
                        "requests": {"cpu": "250m", "memory": "256Mi"},
                    },
                    "livenessProbe": {
                        "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                        "initialDelaySeconds": 10,
                        "periodSeconds": 10,
                        "timeoutSeconds": 1,
                        "successThreshold": 1,
                        "failureThreshold": 3,
                    },
                    "volumeMounts": [
                        {
                            "name": "kube-api-access",
                            "readOnly": True,
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        }
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                },
                {
                    "name": "proxy",
                    "image": "registry.example.com/platform/proxy:v2.3.1",
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                    "imagePullPolicy": "IfNotPresent",
                },
            ],
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                        ],
                        "defaultMode": 420,
                    },
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": node,
            "schedulerName": "default-scheduler",
            "priority": 0,
            "enableServiceLinks": True,
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": kind, "status": "True", "lastTransitionTime": created}
                for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": host_ip,
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": created,
            "containerStatuses": [
                {
                    "name": container,
                    "state": {"running": {"startedAt": created}},
                    "ready": True,
                    "restartCount": index % 3,
                    "image": image,
                    "imageID": f"{image}@sha256:{_hash(index, 16)}",
                    "containerID": container_id,
                    "started": True,
                }
                for container in ("app", "proxy")
            ],
            "qosClass": "Burstable",
        },
    }


_HARNESS_APPS: Final = ("checkout", "payments", "catalog", "frontend", "search", "cart")
_HARNESS_TS: Final = "2026-11-01T12:00:00Z"


def _hex(index: int, salt: str, digits: int) -> str:
    """``digits`` hex digits that look random and depend only on ``(index, salt)``."""
    return hashlib.blake2b(f"{salt}:{index}".encode(), digest_size=32).hexdigest()[:digits]


def _harness_uid(index: int, salt: str) -> str:
    h = _hex(index, salt, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def make_harness_pod(
    index: int, *, namespaces: int = 50, resource_version: str = "1"
) -> dict[str, Any]:
    """The ``index``-th Pod in the independent harness's shape (its ``make_pod``, field for
    field, with hashes of the index where it draws random hex), as found in a LIST answer.

    Labels: ``app.kubernetes.io/name`` (six apps), ``team`` (one team), and the others the
    harness sets; the emit-time annotation stands where the harness's MODIFIED events
    carry their sequence annotation.
    """
    app = _HARNESS_APPS[index % len(_HARNESS_APPS)]
    ts = _HARNESS_TS
    rs = _hex(index, "rs", 10)
    name = f"{app}-{rs}-{_hex(index, 'name', 5)}"
    vol = f"kube-api-access-{_hex(index, 'vol', 5)}"
    node = f"ip-10-{index // 250 % 256}-{index % 250}-7.eu-west-1.compute.internal"
    image = f"registry.example.com/shop/{app}:1.{index % 40}.3"
    pod_ip = f"10.{100 + index // 65536 % 100}.{index // 256 % 256}.{index % 256}"
    host_ip = f"10.0.{index % 200}.7"
    probe = {
        "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
        "initialDelaySeconds": 10,
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    return {
        "metadata": {
            "name": name,
            "generateName": f"{app}-{rs}-",
            "namespace": f"ns-{index % namespaces:03d}",
            "uid": _harness_uid(index, "uid"),
            "resourceVersion": resource_version,
            "creationTimestamp": ts,
            "labels": {
                APP_LABEL: app,
                "app.kubernetes.io/instance": f"{app}-prod",
                "app.kubernetes.io/component": "server",
                "app.kubernetes.io/part-of": "shop",
                "pod-template-hash": rs,
                TEAM_LABEL: "commerce",
            },
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": ts,
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "checksum/config": _hex(index, "config", 16),
                EMITTED_ANNOTATION: "0",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-{rs}",
                    "uid": _harness_uid(index, "owner"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": ts,
                    "fieldsType": "FieldsV1",
                    "subresource": "status",
                    "fieldsV1": {
                        "f:status": {
                            "f:conditions": {},
                            "f:containerStatuses": {},
                            "f:hostIP": {},
                            "f:phase": {},
                            "f:podIP": {},
                            "f:startTime": {},
                        }
                    },
                }
            ],
        },
        "spec": {
            "volumes": [
                {
                    "name": vol,
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                }
            ],
            "containers": [
                {
                    "name": app,
                    "image": image,
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                    "env": [
                        {"name": "LOG_LEVEL", "value": "info"},
                        {
                            "name": "POD_NAME",
                            "valueFrom": {
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}
                            },
                        },
                    ],
                    "resources": {
                        "limits": {"cpu": "500m", "memory": "512Mi"},
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                    },
                    "volumeMounts": [
                        {
                            "name": vol,
                            "readOnly": True,
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        }
                    ],
                    "readinessProbe": probe,
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "nodeName": node,
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": f"node.kubernetes.io/{taint}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for taint in ("not-ready", "unreachable")
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}
                for kind in (
                    "PodReadyToStartContainers",
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                )
            ],
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": ts,
            "containerStatuses": [
                {
                    "name": app,
                    "state": {"running": {"startedAt": ts}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": image,
                    "imageID": f"registry.example.com/shop/{app}@sha256:"
                    + _hex(index, "image", 64),
                    "containerID": "containerd://" + _hex(index, "container", 64),
                    "started": True,
                }
            ],
            "qosClass": "Burstable",
        },
    }


def make_configmap(
    index: int, *, namespaces: int = 50, resource_version: str = "1"
) -> dict[str, Any]:
    """The ``index``-th ConfigMap (about 1 KiB), as found in a LIST answer."""
    app = _APPS[index % len(_APPS)]
    created = f"2026-11-{1 + index % 28:02d}T{index % 24:02d}:{index % 60:02d}:00Z"
    return {
        "metadata": {
            "name": f"{app}-config-{_hash(index, 6)}",
            "namespace": f"ns-{index % namespaces:03d}",
            "uid": _uid(3, index),
            "resourceVersion": resource_version,
            "creationTimestamp": created,
            "labels": {APP_LABEL: app, TIER_LABEL: _TIERS[index % len(_TIERS)]},
            "annotations": {EMITTED_ANNOTATION: "0"},
            "managedFields": [
                {
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": created,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:application.yaml": {}}},
                }
            ],
        },
        "data": {
            "application.yaml": (
                f"server:\n  port: 8080\n  name: {app}\nlogging:\n  level: info\n"
                f"features:\n  cache: true\n  shard: {index % 16}\n"
                "database:\n  pool: 20\n  timeout: 5s\n  host: db.internal\n"
                + "".join(f"flag_{k}: {'on' if (index + k) % 2 else 'off'}\n" for k in range(16))
            ),
            "LOG_FORMAT": "json",
            "REGION": f"region-{index % 4}",
        },
    }


_MAKERS: Final = {"pods": make_pod, "configmaps": make_configmap}
KINDS: Final = {"pods": "Pod", "configmaps": "ConfigMap"}
"""The resources objects are generated for, and the kind of each."""

Shape = Literal["bench", "harness"]
"""Whose objects: the bench's own (:func:`make_pod`) or, for Pods, the independent
harness's (:func:`make_harness_pod`; ConfigMaps have one shape)."""
SHAPES: Final[tuple[Shape, ...]] = ("bench", "harness")


def make_object(
    resource: str,
    index: int,
    *,
    namespaces: int = 50,
    resource_version: str = "1",
    shape: Shape = "bench",
) -> dict[str, Any]:
    """The ``index``-th object of ``resource`` (``"pods"`` or ``"configmaps"``)."""
    make = make_harness_pod if shape == "harness" and resource == "pods" else _MAKERS[resource]
    return make(index, namespaces=namespaces, resource_version=resource_version)


def object_key(obj: dict[str, Any]) -> str:
    """``namespace/name``, the key every cache in the benchmarks uses."""
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def encode_item(
    resource: str, index: int, *, namespaces: int = 50, shape: Shape = "bench"
) -> bytes:
    """The LIST-item bytes of object ``index``; its resourceVersion is ``index + 1``."""
    return orjson.dumps(
        make_object(
            resource, index, namespaces=namespaces, resource_version=str(index + 1), shape=shape
        )
    )


@dataclass(frozen=True, slots=True)
class WatchLineTemplate:
    """One encoded watch line split around its two variable fields.

    ``head + rv + middle + emitted + tail`` is a complete line ending in ``\\n``, where
    ``rv`` is the decimal resourceVersion and ``emitted`` the decimal emit timestamp.
    """

    head: bytes
    """Everything before the resourceVersion's digits."""
    middle: bytes
    """Everything between the resourceVersion and the emit timestamp."""
    tail: bytes
    """Everything after the emit timestamp, newline included."""

    @classmethod
    def for_object(
        cls, resource: str, index: int, *, namespaces: int = 50, shape: Shape = "bench"
    ) -> WatchLineTemplate:
        obj = make_object(
            resource, index, namespaces=namespaces, resource_version="@@RV@@", shape=shape
        )
        obj["apiVersion"] = "v1"
        obj["kind"] = KINDS[resource]
        obj["metadata"]["annotations"][EMITTED_ANNOTATION] = "@@TS@@"
        line = orjson.dumps({"type": "MODIFIED", "object": obj}) + b"\n"
        head, rest = line.split(_RV_MARK)
        middle, tail = rest.split(_TS_MARK)
        return cls(head=head, middle=middle, tail=tail)

    def render(self, resource_version: int, emitted_ns: int = 0) -> bytes:
        """The complete line for one event."""
        return b"%b%d%b%d%b" % (self.head, resource_version, self.middle, emitted_ns, self.tail)
