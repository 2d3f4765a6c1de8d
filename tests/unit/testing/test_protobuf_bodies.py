"""The fake API server decodes the protobuf bodies kubectl's generators send, as
kube-apiserver would, and refuses the rest with a 415 that says to send JSON.

The ``KUBECTL_*`` bodies were captured from kubectl v1.32.4 (``kubectl create configmap
settings --from-literal=mode=blue --from-literal=size=3``, ``create deployment web
--image=busybox``, ``create job fromcron --from=cronjob/tick`` and so on) against the fake;
the others are built here from the documented wire format (the ``k8s\\x00`` magic, a
``runtime.Unknown`` envelope, the object's ``generated.proto`` fields)."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer._apiserver.objects import StatusError
from aioinformer.testing._protobuf import MAGIC, decode_protobuf_object, is_protobuf
from tests._support_protobuf import entry, envelope, field, text

KUBECTL_CONFIGMAP = (
    b'k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x123\n\x18\n\x08settings\x12\x00\x1a\x00"\x00*'
    b'\x002\x008\x00B\x00\x12\x0c\n\x04mode\x12\x04blue\x12\t\n\x04size\x12\x013\x1a\x00"\x00'
)
KUBECTL_SECRET = (
    b'k8s\x00\n\x0c\n\x02v1\x12\x06Secret\x12(\n\x15\n\x05token\x12\x00\x1a\x00"\x00*\x002'
    b'\x008\x00B\x00\x12\r\n\x03key\x12\x06s3cr=t\x1a\x00\x1a\x00"\x00'
)
KUBECTL_NAMESPACE = (
    b'k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x1e\n\x16\n\x06team-a\x12\x00\x1a\x00"\x00*'
    b'\x002\x008\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00"\x00'
)
KUBECTL_SERVICEACCOUNT = (
    b"k8s\x00\n\x14\n\x02v1\x12\x0eServiceAccount\x12\x17\n\x15\n\x05robot\x12\x00\x1a\x00"
    b'"\x00*\x002\x008\x00B\x00\x1a\x00"\x00'
)
KUBECTL_DEPLOYMENT = (
    b"k8s\x00\n\x15\n\x07apps/v1\x12\nDeployment\x12\xaf\x01\n\x1f\n\x03web\x12\x00\x1a"
    b'\x00"\x00*\x002\x008\x00B\x00Z\n\n\x03app\x12\x03web\x12~\x08\x01\x12\x0c\n\n\n\x03'
    b'app\x12\x03web\x1ad\n\x1c\n\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00Z\n\n\x03ap'
    b"p\x12\x03web\x12D\x12&\n\x07busybox\x12\x07busybox*\x00B\x00j\x00r\x00\x80\x01\x00"
    b"\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x002\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82"
    b'\x01\x00\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00"\x02\n\x00(\x008\x00\x1a\x0c\x08\x00'
    b'\x10\x00\x18\x00 \x00(\x008\x00\x1a\x00"\x00'
)
KUBECTL_SERVICE = (
    b'k8s\x00\n\r\n\x02v1\x12\x07Service\x12i\n\x1f\n\x03web\x12\x00\x1a\x00"\x00*\x002'
    b'\x008\x00B\x00Z\n\n\x03app\x12\x03web\x12B\n\x1b\n\x0780-8080\x12\x03TCP\x18P"\x07'
    b'\x08\x00\x10\x90?\x1a\x00(\x00\x12\n\n\x03app\x12\x03web\x1a\x00"\tClusterIP:\x00B'
    b'\x00R\x00Z\x00`\x00h\x00\x1a\x02\n\x00\x1a\x00"\x00'
)
KUBECTL_JOB = (
    b'k8s\x00\n\x0f\n\x08batch/v1\x12\x03Job\x12~\n\x14\n\x04once\x12\x00\x1a\x00"\x00*'
    b'\x002\x008\x00B\x00\x12\\2Z\n\x10\n\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00'
    b"\x12F\x12#\n\x04once\x12\x07busybox*\x00B\x00j\x00r\x00\x80\x01\x00\x88\x01\x00\x90"
    b"\x01\x00\xa2\x01\x00\x1a\x05Never2\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00"
    b'\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00\x1a\x08 \x00(\x000\x00:\x00\x1a\x00"\x00'
)
KUBECTL_CRONJOB = (
    b"k8s\x00\n\x13\n\x08batch/v1\x12\x07CronJob\x12\xa4\x01\n\x14\n\x04tick\x12\x00\x1a"
    b'\x00"\x00*\x002\x008\x00B\x00\x12\x89\x01\n\x0b*/1 * * * *\x1a\x00*x\n\x14\n\x04tic'
    b'k\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00\x12`2^\n\x10\n\x00\x12\x00\x1a\x00"\x00*'
    b"\x002\x008\x00B\x00\x12J\x12#\n\x04tick\x12\x07busybox*\x00B\x00j\x00r\x00\x80\x01"
    b"\x00\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\tOnFailure2\x00B\x00J\x00R\x00X\x00`"
    b'\x00h\x00\x82\x01\x00\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00\x1a\x00\x1a\x00"\x00'
)
KUBECTL_INGRESS = (
    b"k8s\x00\n\x1f\n\x14networking.k8s.io/v1\x12\x07Ingress\x12J\n\x13\n\x03ing\x12\x00"
    b'\x1a\x00"\x00*\x002\x008\x00B\x00\x12/\x1a-\n\x07foo.com\x12"\n \n\x1e\n\x04/bar'
    b'\x12\x0f"\r\n\x04svc1\x12\x05\n\x00\x10\x90?\x1a\x05Exact\x1a\x02\n\x00\x1a\x00"'
    b"\x00"
)
KUBECTL_DEPLOYMENT_PORTS = (
    b"k8s\x00\n\x15\n\x07apps/v1\x12\nDeployment\x12\xea\x01\n#\n\x05multi\x12\x00\x1a"
    b'\x00"\x00*\x002\x008\x00B\x00Z\x0c\n\x03app\x12\x05multi\x12\xb4\x01\x08\x00\x12'
    b'\x0e\n\x0c\n\x03app\x12\x05multi\x1a\x97\x01\n\x1e\n\x00\x12\x00\x1a\x00"\x00*\x002'
    b"\x008\x00B\x00Z\x0c\n\x03app\x12\x05multi\x12u\x123\n\x07busybox\x12\x07busybox*"
    b'\x002\x0b\n\x00\x10\x00\x18\x90?"\x00*\x00B\x00j\x00r\x00\x80\x01\x00\x88\x01\x00'
    b'\x90\x01\x00\xa2\x01\x00\x12"\n\x05nginx\x12\x05nginx*\x00B\x00j\x00r\x00\x80\x01'
    b"\x00\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x002\x00B\x00J\x00R\x00X\x00`\x00h\x00"
    b'\x82\x01\x00\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00"\x02\n\x00(\x008\x00\x1a\x0c\x08'
    b'\x00\x10\x00\x18\x00 \x00(\x008\x00\x1a\x00"\x00'
)
KUBECTL_JOB_FROM_CRONJOB = (
    b"k8s\x00\n\x0f\n\x08batch/v1\x12\x03Job\x12\xf7\x01\n\x88\x01\n\x08fromcron\x12\x00"
    b'\x1a\x00"\x00*\x002\x008\x00B\x00b+\n!cronjob.kubernetes.io/instantiate\x12\x06manu'
    b'aljA\n\x07CronJob\x1a\x04tick"$69231d3e-060a-4118-a36f-2566bbf29c69*\x08batch/v10'
    b'\x01\x12`2^\n\x10\n\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00\x12J\x12#\n\x04tic'
    b"k\x12\x07busybox*\x00B\x00j\x00r\x00\x80\x01\x00\x88\x01\x00\x90\x01\x00\xa2\x01"
    b"\x00\x1a\tOnFailure2\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00\x8a\x01\x00\x9a"
    b'\x01\x00\xc2\x01\x00\x1a\x08 \x00(\x000\x00:\x00\x1a\x00"\x00'
)


def decoded(body: bytes) -> dict[str, Any]:
    return decode_protobuf_object(body)


def refusal(body: bytes) -> dict[str, Any]:
    with pytest.raises(StatusError) as caught:
        decode_protobuf_object(body)
    status: dict[str, Any] = caught.value.status
    return status


# -- what kubectl sends --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            KUBECTL_CONFIGMAP,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings"},
                "data": {"mode": "blue", "size": "3"},
            },
            id="configmap",
        ),
        pytest.param(
            KUBECTL_SECRET,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "token"},
                "data": {"key": "czNjcj10"},
            },
            id="secret",
        ),
        pytest.param(
            KUBECTL_NAMESPACE,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
            id="namespace",
        ),
        pytest.param(
            KUBECTL_SERVICEACCOUNT,
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
            id="serviceaccount",
        ),
        pytest.param(
            KUBECTL_DEPLOYMENT,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "busybox", "image": "busybox"}]},
                    },
                },
            },
            id="deployment",
        ),
        pytest.param(
            KUBECTL_DEPLOYMENT_PORTS,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "multi", "labels": {"app": "multi"}},
                "spec": {
                    # A pointer: zero replicas is kept, as asked (--replicas=0).
                    "replicas": 0,
                    "selector": {"matchLabels": {"app": "multi"}},
                    "template": {
                        "metadata": {"labels": {"app": "multi"}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "busybox",
                                    "image": "busybox",
                                    "ports": [{"containerPort": 8080}],
                                },
                                {"name": "nginx", "image": "nginx"},
                            ]
                        },
                    },
                },
            },
            id="deployment-ports-replicas-0",
        ),
        pytest.param(
            KUBECTL_SERVICE,
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {
                    "ports": [
                        {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}
                    ],
                    "selector": {"app": "web"},
                    "type": "ClusterIP",
                },
            },
            id="service",
        ),
        pytest.param(
            KUBECTL_JOB,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "once"},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "once", "image": "busybox"}],
                            "restartPolicy": "Never",
                        }
                    }
                },
            },
            id="job",
        ),
        pytest.param(
            KUBECTL_JOB_FROM_CRONJOB,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": "fromcron",
                    "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
                    "ownerReferences": [
                        {
                            "kind": "CronJob",
                            "name": "tick",
                            "uid": "69231d3e-060a-4118-a36f-2566bbf29c69",
                            "apiVersion": "batch/v1",
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "tick", "image": "busybox"}],
                            "restartPolicy": "OnFailure",
                        }
                    }
                },
            },
            id="job-from-cronjob",
        ),
        pytest.param(
            KUBECTL_CRONJOB,
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "metadata": {"name": "tick"},
                "spec": {
                    "schedule": "*/1 * * * *",
                    "jobTemplate": {
                        "metadata": {"name": "tick"},
                        "spec": {
                            "template": {
                                "spec": {
                                    "containers": [{"name": "tick", "image": "busybox"}],
                                    "restartPolicy": "OnFailure",
                                }
                            }
                        },
                    },
                },
            },
            id="cronjob",
        ),
        pytest.param(
            KUBECTL_INGRESS,
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": {"name": "ing"},
                "spec": {
                    "rules": [
                        {
                            "host": "foo.com",
                            "http": {
                                "paths": [
                                    {
                                        "path": "/bar",
                                        "backend": {
                                            "service": {"name": "svc1", "port": {"number": 8080}}
                                        },
                                        "pathType": "Exact",
                                    }
                                ]
                            },
                        }
                    ]
                },
            },
            id="ingress",
        ),
    ],
)
def test_kubectl_generator_bodies_decode_to_the_json_kube_apiserver_would_read(
    body: bytes, expected: dict[str, Any]
) -> None:
    assert decoded(body) == expected


def test_a_kind_that_is_not_decoded_answers_415_naming_it_and_asking_for_json() -> None:
    status = refusal(envelope("rbac.authorization.k8s.io/v1", "Role", field(1, text(1, "r"))))
    assert (status["code"], status["reason"]) == (415, "UnsupportedMediaType")
    assert "protobuf Role" in status["message"]
    assert "send it as JSON" in status["message"]
    assert (
        "(for ConfigMap, CronJob, DaemonSet, Deployment, Endpoints, Event, Ingress, Job, "
        "Lease, Namespace, Pod, ReplicaSet, Secret, Service, ServiceAccount, StatefulSet)"
        in status["message"]
    )


# -- fields kubectl's generators leave out, from the wire format ---------------------------


def test_metadata_maps_lists_and_owner_references_decode() -> None:
    owner = (
        text(1, "Deployment")
        + text(3, "web")
        + text(4, "u-1")
        + text(5, "apps/v1")
        + field(6, True)
        + field(7, False)
    )
    meta = (
        text(1, "settings")
        + text(3, "team-a")
        + field(7, 0)
        + field(8, b"")  # creationTimestamp: set by the server, skipped
        + entry(11, "app", b"web")
        + entry(11, "tier", b"front")
        + entry(12, "note", b"a=b")
        + field(13, owner)
        + text(14, "example.com/keep")
        + text(14, "example.com/also")
        + field(17, b"\n\x07kubectl")  # managedFields: set by the server, skipped
    )
    raw = (
        field(1, meta) + entry(2, "mode", b"blue") + entry(3, "blob", b"\x00\xff") + field(4, True)
    )
    assert decoded(envelope("v1", "ConfigMap", raw)) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "settings",
            "namespace": "team-a",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"note": "a=b"},
            "ownerReferences": [
                {
                    "kind": "Deployment",
                    "name": "web",
                    "uid": "u-1",
                    "apiVersion": "apps/v1",
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
            "finalizers": ["example.com/keep", "example.com/also"],
        },
        "data": {"mode": "blue"},
        "binaryData": {"blob": "AP8="},
        "immutable": True,
    }


def test_secret_service_account_and_namespace_fields_decode() -> None:
    secret = field(1, text(1, "s")) + text(3, "Opaque") + entry(4, "plain", b"text")
    assert decoded(envelope("v1", "Secret", secret)) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "type": "Opaque",
        "stringData": {"plain": "text"},
    }
    account = (
        field(1, text(1, "robot"))
        + field(2, text(1, "Secret") + text(3, "robot-token"))
        + field(3, text(1, "registry"))
        + field(4, False)
    )
    assert decoded(envelope("v1", "ServiceAccount", account)) == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "robot"},
        "secrets": [{"kind": "Secret", "name": "robot-token"}],
        "imagePullSecrets": [{"name": "registry"}],
        "automountServiceAccountToken": False,
    }
    namespace = (
        field(1, text(1, "t")) + field(2, text(1, "kubernetes")) + field(3, text(1, "Active"))
    )
    assert decoded(envelope("v1", "Namespace", namespace)) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "t"},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def test_workload_fields_decode_with_quantities_int_or_strings_and_times() -> None:
    container = (
        text(1, "app")
        + text(2, "nginx")
        + text(3, "nginx")
        + text(3, "-g")
        + text(4, "daemon off;")
        + field(6, text(1, "http") + field(3, 80) + text(4, "TCP"))
        + field(7, text(1, "MODE") + text(2, ""))
        + field(8, entry(1, "cpu", text(1, "500m")) + entry(2, "memory", text(1, "64Mi")))
        + field(9, text(1, "data") + field(2, True) + text(3, "/data"))
        + field(16, False)  # stdin: a Go bool, always sent, left out when false
        + field(18, True)
    )
    pod_spec = (
        field(2, container)
        + field(4, 0)  # terminationGracePeriodSeconds: a pointer, kept at zero
        + entry(7, "disk", b"ssd")
        + field(11, False)
        + field(15, text(1, "registry"))
    )
    strategy = text(1, "RollingUpdate") + field(
        2,
        field(1, field(1, 1) + field(2, 0) + text(3, "25%"))
        + field(2, field(1, 0) + field(2, 1) + text(3, "")),
    )
    status = field(1, 3) + field(2, 0)
    spec = field(1, 2) + field(3, field(2, pod_spec)) + field(4, strategy) + field(7, False)
    raw = field(1, text(1, "web")) + field(2, spec) + field(3, status)
    assert decoded(envelope("apps/v1", "Deployment", raw)) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx",
                            "command": ["nginx", "-g"],
                            "args": ["daemon off;"],
                            "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                            "env": [{"name": "MODE"}],
                            "resources": {
                                "limits": {"cpu": "500m"},
                                "requests": {"memory": "64Mi"},
                            },
                            "volumeMounts": [
                                {"name": "data", "readOnly": True, "mountPath": "/data"}
                            ],
                            "tty": True,
                        }
                    ],
                    "terminationGracePeriodSeconds": 0,
                    "nodeSelector": {"disk": "ssd"},
                    "imagePullSecrets": [{"name": "registry"}],
                }
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1},
            },
        },
        "status": {"observedGeneration": 3},
    }


def test_pod_status_times_and_a_service_target_port_by_name_decode() -> None:
    status = (
        text(1, "Running")
        + field(7, field(1, 1_700_000_000) + field(2, 5))
        + field(12, text(1, "10.0.0.7"))
    )
    pod = field(1, text(1, "p")) + field(2, field(2, text(1, "c"))) + field(3, status)
    assert decoded(envelope("v1", "Pod", pod)) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c"}]},
        "status": {
            "phase": "Running",
            "startTime": "2023-11-14T22:13:20Z",
            "podIPs": [{"ip": "10.0.0.7"}],
        },
    }
    port = field(3, 80) + field(4, field(1, 1) + field(2, 0) + text(3, "http"))
    service = field(1, text(1, "s")) + field(2, field(1, port))
    assert decoded(envelope("v1", "Service", service))["spec"] == {
        "ports": [{"port": 80, "targetPort": "http"}]
    }


def test_replica_sets_daemon_sets_and_stateful_sets_decode_their_pod_templates() -> None:
    labels = field(11, text(1, "app") + text(2, "db"))
    pod_template = field(1, labels) + field(2, field(2, text(1, "c") + text(2, "postgres")))
    selector, template = field(2, entry(1, "app", b"db")), field(3, pod_template)
    expected_template = {
        "metadata": {"labels": {"app": "db"}},
        "spec": {"containers": [{"name": "c", "image": "postgres"}]},
    }
    replica_set = field(1, text(1, "rs")) + field(2, field(1, 0) + selector + template)
    assert decoded(envelope("apps/v1", "ReplicaSet", replica_set))["spec"] == {
        "replicas": 0,
        "selector": {"matchLabels": {"app": "db"}},
        "template": expected_template,
    }
    strategy = text(1, "RollingUpdate") + field(2, field(1, field(1, 1) + text(3, "10%")))
    daemon_set = field(1, text(1, "ds")) + field(
        2, field(1, entry(1, "app", b"db")) + field(2, pod_template) + field(3, strategy)
    )
    assert decoded(envelope("apps/v1", "DaemonSet", daemon_set))["spec"] == {
        "selector": {"matchLabels": {"app": "db"}},
        "template": expected_template,
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
    }
    stateful_set = field(1, text(1, "db")) + field(
        2,
        field(1, 3)
        + selector
        + template
        + text(5, "db")
        + field(7, text(1, "RollingUpdate") + field(2, field(1, 0)))
        + field(10, text(1, "Delete"))
        + field(11, field(1, 1)),
    )
    assert decoded(envelope("apps/v1", "StatefulSet", stateful_set))["spec"] == {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "db"}},
        "template": expected_template,
        "serviceName": "db",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"},
        "ordinals": {"start": 1},
    }


def test_leases_events_and_endpoints_decode_with_micro_times() -> None:
    renew = field(1, 1_700_000_000) + field(2, 123_456_789)
    lease = field(1, text(1, "leader")) + field(
        2, text(1, "pod-a") + field(2, 15) + field(4, renew) + field(5, 0)
    )
    assert decoded(envelope("coordination.k8s.io/v1", "Lease", lease))["spec"] == {
        "holderIdentity": "pod-a",
        "leaseDurationSeconds": 15,
        "renewTime": "2023-11-14T22:13:20.123456Z",
        "leaseTransitions": 0,
    }
    regarding = text(1, "Pod") + text(2, "default") + text(3, "web-0")
    event = (
        field(1, text(1, "web-0.1") + text(3, "default"))
        + field(2, renew)
        + text(4, "kubelet")
        + text(7, "Pulled")
        + field(8, regarding)
        + text(10, "pulled")
        + text(11, "Normal")
        + field(12, b"")
        + field(13, b"")  # the zero time: JSON null, left out
        + field(15, 0)
    )
    assert decoded(envelope("events.k8s.io/v1", "Event", event)) == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web-0.1", "namespace": "default"},
        "eventTime": "2023-11-14T22:13:20.123456Z",
        "reportingController": "kubelet",
        "reason": "Pulled",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web-0"},
        "note": "pulled",
        "type": "Normal",
    }
    core = (
        field(1, text(1, "web-0.2"))
        + field(2, regarding)
        + text(3, "Started")
        + field(5, text(1, "kubelet"))
        + field(6, field(1, 1_700_000_000))
        + field(8, 2)
        + field(10, b"")
    )
    assert decoded(envelope("v1", "Event", core)) == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web-0.2"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-0"},
        "reason": "Started",
        "source": {"component": "kubelet"},
        "firstTimestamp": "2023-11-14T22:13:20Z",
        "count": 2,
    }
    address = text(1, "10.0.0.7") + field(2, text(1, "Pod") + text(3, "web-0"))
    subset = field(1, address) + field(3, text(1, "http") + field(2, 80) + text(3, "TCP"))
    endpoints = field(1, text(1, "web")) + field(2, subset)
    assert decoded(envelope("v1", "Endpoints", endpoints))["subsets"] == [
        {
            "addresses": [{"ip": "10.0.0.7", "targetRef": {"kind": "Pod", "name": "web-0"}}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
        }
    ]


def test_a_large_varint_and_a_negative_integer_decode() -> None:
    meta = text(1, "x") + field(10, (1 << 64) - 5) + field(7, 300)
    obj = decoded(envelope("v1", "ConfigMap", field(1, meta)))
    assert obj["metadata"] == {"name": "x", "deletionGracePeriodSeconds": -5, "generation": 300}


# -- refusals -------------------------------------------------------------------------------


def test_a_field_the_fake_does_not_decode_is_refused_rather_than_dropped() -> None:
    status = refusal(envelope("v1", "ConfigMap", field(1, text(1, "x")) + text(9, "surprise")))
    assert status["code"] == 415
    assert "field 9 of ConfigMap is not decoded" in status["message"]


@pytest.mark.parametrize(
    ("kind", "raw", "words"),
    [
        pytest.param(
            "Deployment",
            field(2, field(3, field(2, field(2, text(1, "c") + field(10, b""))))),
            "field 10 of Deployment.spec.template.spec.containers is not decoded",
            id="probe",
        ),
        pytest.param(
            "Pod",
            field(2, field(1, text(1, "data"))),
            "field 1 of Pod.spec is not decoded",
            id="volume",
        ),
        pytest.param(
            "Job",
            field(3, field(1, text(1, "Complete"))),
            "field 1 of Job.status is not decoded",
            id="condition",
        ),
        pytest.param(
            "StatefulSet",
            field(2, field(4, field(1, text(1, "data")))),
            "field 4 of StatefulSet.spec is not decoded",
            id="volume-claim-template",
        ),
        pytest.param(
            "Service",
            field(3, field(1, field(1, text(1, "1.2.3.4")))),
            "field 1 of Service.status.loadBalancer is not decoded",
            id="load-balancer-ingress",
        ),
    ],
)
def test_a_nested_message_the_fake_does_not_decode_is_refused(
    kind: str, raw: bytes, words: str
) -> None:
    api_version = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1"}.get(
        kind, "v1"
    )
    status = refusal(envelope(api_version, kind, raw))
    assert status["code"] == 415
    assert words in status["message"]


def test_an_encoded_raw_object_is_refused_as_unsupported() -> None:
    status = refusal(envelope("v1", "ConfigMap", b"", encoding="gzip"))
    assert status["code"] == 415
    assert "content encoding 'gzip'" in status["message"]


def test_an_envelope_without_a_kind_is_refused_as_unsupported() -> None:
    status = refusal(MAGIC + field(2, b""))
    assert status["code"] == 415
    assert "object without a kind" in status["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        pytest.param(b'{"kind": "ConfigMap"}', "magic number", id="json-not-protobuf"),
        pytest.param(MAGIC + b"\x0a\x10\x0a", "runs past the end", id="truncated-envelope"),
        pytest.param(MAGIC + b"\x0b", "wire type 3", id="group-wire-type"),
        pytest.param(MAGIC + b"\x00\x00", "field number 0", id="field-zero"),
        pytest.param(MAGIC + b"\x08" + b"\xff" * 11, "longer than 10 bytes", id="long-varint"),
        pytest.param(MAGIC + b"\x08\xff", "varint runs past", id="cut-varint"),
        pytest.param(MAGIC + b"\x0d\x00", "fixed-width", id="cut-fixed32"),
        pytest.param(MAGIC + b"\x08\x01", "not length-delimited", id="varint-type-meta"),
    ],
)
def test_a_body_that_is_not_the_envelope_is_a_bad_request(body: bytes, words: str) -> None:
    status = refusal(body)
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    assert words in status["message"]


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        pytest.param(field(1, text(1, "x")) + field(2, 5), "is not length-delimited", id="map"),
        pytest.param(field(1, text(1, "x")) + field(4, b"yes"), "not a varint", id="bool"),
        pytest.param(field(1, field(1, b"\xff")), "not UTF-8", id="utf8"),
        pytest.param(field(1, text(1, "x")) + field(2, field(3, b"")), "map entry", id="entry"),
    ],
)
def test_an_object_with_mistyped_fields_is_a_bad_request(raw: bytes, words: str) -> None:
    status = refusal(envelope("v1", "ConfigMap", raw))
    assert status["code"] == 400
    assert words in status["message"]


def test_fixed_width_fields_of_the_envelope_are_read_past() -> None:
    body = envelope("v1", "Namespace", field(1, text(1, "n"))) + b"\x29" + b"\x00" * 8
    assert decoded(body)["metadata"] == {"name": "n"}


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/vnd.kubernetes.protobuf", True),
        ("Application/VND.Kubernetes.Protobuf; charset=binary", True),
        ("application/json", False),
        ("application/vnd.kubernetes.protobuf;stream=watch", True),
        ("", False),
    ],
)
def test_is_protobuf_reads_the_media_type_only(content_type: str, expected: bool) -> None:
    assert is_protobuf(content_type) is expected
