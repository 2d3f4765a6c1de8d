"""Built-in objects go through the fake API server and a typed informer (``model=`` one of
:mod:`aioinformer.k8s`) and come back intact: the lister hands out the model, its typed
fields read what was sent, unknown fields are kept, and dumping it by alias gives exactly
the object the server stores."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.factory import SharedInformerFactory
from aioinformer.k8s import apps_v1, batch_v1, coordination_v1, core_v1, networking_v1

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.models import KubeObject
    from aioinformer.testing import FakeAPIServer


def meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "labels": {"app": "web"}}


TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]
    },
}

# resource -> (model, object, a check of its typed fields)
CASES: dict[str, tuple[type[KubeObject], dict[str, Any], Any]] = {
    "v1/pods": (
        core_v1.Pod,
        {"apiVersion": "v1", "kind": "Pod", **TEMPLATE, "metadata": meta("web-0")},
        lambda o: o.spec.containers[0].ports[0].container_port == 80,
    ),
    "apps/v1/deployments": (
        apps_v1.Deployment,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta("web"),
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                "template": TEMPLATE,
            },
        },
        lambda o: (
            o.spec.strategy.rolling_update.max_surge == "25%"
            and o.spec.selector.match_labels == {"app": "web"}
        ),
    ),
    "v1/services": (
        core_v1.Service,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta("web"),
            "spec": {
                "selector": {"app": "web"},
                "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
            },
        },
        lambda o: o.spec.ports[0].target_port == "http",
    ),
    "v1/configmaps": (
        core_v1.ConfigMap,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta("settings"),
            "data": {"level": "debug"},
        },
        lambda o: o.data == {"level": "debug"},
    ),
    "coordination.k8s.io/v1/leases": (
        coordination_v1.Lease,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta("leader"),
            "spec": {
                "holderIdentity": "a",
                "leaseDurationSeconds": 15,
                "renewTime": "2026-11-23T22:15:01.123456Z",
            },
        },
        lambda o: o.spec.renew_time == "2026-11-23T22:15:01.123456Z",
    ),
    "v1/events": (
        core_v1.Event,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": meta("web-0.1"),
            "involvedObject": {"kind": "Pod", "name": "web-0", "namespace": "default"},
            "reason": "Started",
            "count": 2,
            "type": "Normal",
        },
        lambda o: o.involved_object.name == "web-0" and o.count == 2,
    ),
    "batch/v1/jobs": (
        batch_v1.Job,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta("migrate"),
            "spec": {
                "backoffLimit": 2,
                "template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}},
            },
        },
        lambda o: o.spec.backoff_limit == 2 and o.spec.template.spec.restart_policy == "Never",
    ),
    "networking.k8s.io/v1/ingresses": (
        networking_v1.Ingress,
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": meta("web"),
            "spec": {
                "rules": [
                    {
                        "host": "example.com",
                        "http": {
                            "paths": [
                                {
                                    "path": "/",
                                    "pathType": "Prefix",
                                    "backend": {"service": {"name": "web", "port": {"number": 80}}},
                                }
                            ]
                        },
                    }
                ]
            },
        },
        lambda o: o.spec.rules[0].http.paths[0].backend.service.port.number == 80,
    ),
}


@pytest.mark.parametrize("resource", sorted(CASES))
async def test_a_built_in_object_round_trips_through_a_typed_informer(
    fake_apiserver: FakeAPIServer, kube_client: Client, resource: str
) -> None:
    model, sent, typed_fields_read = CASES[resource]
    sent = {**sent, "futureField": {"added": "in 1.37"}}
    stored = fake_apiserver.create(sent)
    async with SharedInformerFactory(kube_client) as factory:
        informer = factory.informer_for(resource, model=model)
        assert await informer.wait_for_sync(timeout=10)
        got = informer.lister().get(sent["metadata"]["name"], namespace="default")
        assert isinstance(got, model)
        assert typed_fields_read(got)
        assert got.model_extra is not None
        assert got.model_extra["futureField"] == {"added": "in 1.37"}
        assert got.metadata.resource_version == stored["metadata"]["resourceVersion"]
        assert got.model_dump(by_alias=True, exclude_unset=True, mode="json") == stored
        # Without the Nones, the dump is a valid object: the server takes it as a new one.
        dumped = got.model_dump(by_alias=True, exclude_none=True, mode="json")
        assert model.model_validate(dumped) == got
        copy_meta = {"name": "copy", "namespace": "default", "labels": {"app": "web"}}
        created = fake_apiserver.create({**dumped, "metadata": copy_meta})
        # The same object but for its metadata (nested ObjectMetas, such as a pod
        # template's, now hold their empty collections: equal as models).
        assert model.model_validate({**created, "metadata": {}}) == model.model_validate(
            {**stored, "metadata": {}}
        )
