"""The generated models of the built-in kinds (``aioinformer.k8s``): aliases and names both
accepted, unknown fields kept, a read object dumped back exactly, kinds usable wherever a
:class:`KubeObject` is, and typed informers validating only what is read. That ``import
aioinformer`` imports none of it takes a fresh interpreter:
``tests/e2e/test_k8s_models_import.py``."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError, model_validator

from aioinformer.informer import SharedIndexInformer
from aioinformer.k8s import KUBERNETES_VERSION, apps_v1, coordination_v1, core_v1, meta_v1
from aioinformer.models import KubeObject, ObjectMeta
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-0",
        "namespace": "default",
        "uid": "5f0c",
        "resourceVersion": "12",
        "creationTimestamp": "2026-11-23T22:15:01Z",
        "labels": {"app": "web"},
        "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
    },
    "spec": {
        "containers": [
            {
                "name": "web",
                "image": "nginx:1.27",
                "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                "livenessProbe": {"httpGet": {"path": "/", "port": "http"}},
                "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
                "futureContainerField": {"nested": [1, 2]},
            }
        ],
        "nodeName": "node-1",
        "hostIPs": [{"ip": "10.0.0.1"}],
    },
    "status": {
        "phase": "Running",
        "podIPs": [{"ip": "10.1.0.7"}],
        "startTime": "2026-11-23T22:15:02Z",
    },
    "futureTopLevel": True,
}


def test_the_package_names_its_kubernetes_release() -> None:
    assert KUBERNETES_VERSION.startswith("1.36.")


def test_a_pod_reads_by_snake_case_names_with_typed_nested_models() -> None:
    pod = core_v1.Pod.model_validate(POD)
    assert isinstance(pod, KubeObject)
    assert isinstance(pod.metadata, ObjectMeta)
    assert pod.spec is not None
    assert pod.spec.node_name == "node-1"
    container = pod.spec.containers[0] if pod.spec.containers else None
    assert isinstance(container, core_v1.Container)
    assert container.ports is not None
    assert container.ports[0].container_port == 80
    assert container.resources is not None
    assert container.resources.limits == {"cpu": "500m", "memory": "1Gi"}
    assert pod.status is not None
    assert pod.status.pod_ips == [core_v1.PodIP(ip="10.1.0.7")]
    assert pod.status.start_time == "2026-11-23T22:15:02Z"


def test_int_or_string_values_keep_their_json_type() -> None:
    pod = core_v1.Pod.model_validate(POD)
    assert pod.spec is not None
    assert pod.spec.containers is not None
    container = pod.spec.containers[0]
    assert container.liveness_probe is not None
    assert container.liveness_probe.http_get is not None
    assert container.liveness_probe.http_get.port == "http"
    assert container.readiness_probe is not None
    assert container.readiness_probe.http_get is not None
    assert container.readiness_probe.http_get.port == 80


def test_unknown_fields_are_kept_at_every_level() -> None:
    pod = core_v1.Pod.model_validate(POD)
    assert pod.model_extra == {"futureTopLevel": True}
    assert pod.spec is not None
    assert pod.spec.containers is not None
    assert pod.spec.containers[0].model_extra == {"futureContainerField": {"nested": [1, 2]}}
    assert pod.metadata.model_extra is not None
    assert pod.metadata.model_extra["managedFields"] == POD["metadata"]["managedFields"]


def test_a_read_object_dumps_back_exactly_as_it_was_sent() -> None:
    sent = copy.deepcopy(POD)
    pod = core_v1.Pod.model_validate(sent)
    assert pod.model_dump(by_alias=True, exclude_unset=True, mode="json") == POD


def test_dumping_without_nones_gives_the_object_back_with_empty_metadata_defaults() -> None:
    raw = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    dumped = core_v1.ConfigMap.model_validate(raw).model_dump(by_alias=True, exclude_none=True)
    # ObjectMeta defaults its collections to empty ones (the API server treats them alike).
    assert dumped == {
        **raw,
        "metadata": {
            "name": "c",
            "labels": {},
            "annotations": {},
            "ownerReferences": [],
            "finalizers": [],
        },
    }


def test_a_kind_built_in_code_carries_its_api_version_and_kind() -> None:
    deployment = apps_v1.Deployment(
        metadata=ObjectMeta(name="web", namespace="default"),
        spec=apps_v1.DeploymentSpec(
            replicas=2,
            selector=meta_v1.LabelSelector(match_labels={"app": "web"}),
            template=core_v1.PodTemplateSpec(
                spec=core_v1.PodSpec(containers=[core_v1.Container(name="web", image="nginx")])
            ),
        ),
    )
    dumped = deployment.model_dump(by_alias=True, exclude_none=True)
    assert dumped["apiVersion"] == "apps/v1"
    assert dumped["kind"] == "Deployment"
    assert dumped["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert dumped["spec"]["template"]["spec"]["containers"] == [{"name": "web", "image": "nginx"}]
    assert apps_v1.Deployment.model_validate(dumped) == deployment


def test_fields_are_filled_by_alias_or_by_name() -> None:
    by_alias = coordination_v1.LeaseSpec.model_validate(
        {"holderIdentity": "a", "leaseDurationSeconds": 15}
    )
    by_name = coordination_v1.LeaseSpec(holder_identity="a", lease_duration_seconds=15)
    assert by_alias == by_name


def test_a_python_keyword_field_gets_a_trailing_underscore() -> None:
    from aioinformer.k8s import networking_v1

    peer = networking_v1.IPBlock.model_validate({"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]})
    assert peer.except_ == ["10.1.0.0/16"]
    assert peer.model_dump(by_alias=True, exclude_unset=True)["except"] == ["10.1.0.0/16"]


def test_a_value_of_the_wrong_type_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="containerPort"):
        core_v1.ContainerPort.model_validate({"containerPort": "eighty"})


class CountingPod(core_v1.Pod):
    validations: ClassVar[list[str]] = []

    @model_validator(mode="before")
    @classmethod
    def count(cls, data: Any) -> Any:
        cls.validations.append(data["metadata"]["name"])
        return data


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


async def test_a_typed_informer_validates_only_the_objects_read() -> None:
    CountingPod.validations.clear()
    source = FakeListerWatcher(objects=[pod("a"), pod("b"), pod("c")])
    informer = SharedIndexInformer(source, clock=FakeClock(), model=CountingPod)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        assert CountingPod.validations == []
        got = informer.lister().get("b", "default")
        assert isinstance(got, CountingPod)
        assert got.spec is not None
        assert got.spec.containers == [core_v1.Container(name="c", image="busybox")]
        assert CountingPod.validations == ["b"]
