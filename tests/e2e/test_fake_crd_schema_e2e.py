"""A CustomResourceDefinition's schema on ``FakeAPIServer(tls=True)``, over HTTP and with
kubectl, as on a cluster: a non-structural schema refuses the definition; an instance
of the wrong type is refused with kube-apiserver's 422 (status code, message, causes,
and what ``kubectl apply`` prints); one without optional fields gets their defaults; one
with unknown fields is refused under kubectl's strict validation and stored without them
under ``--validate=warn``, which prints the server's warning; a status write is validated
too. The
example operator's ``WIDGET_CRD`` installs and its objects validate."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import UnprocessableEntity
from tests.e2e.test_examples_operator import widget_operator
from tests.e2e.test_fake_apiserver_kubectl import KUBECTL, kubectl, manifest
from tests.unit.testing.test_fake_crd_schema import crd, widget

if TYPE_CHECKING:
    from pathlib import Path

    from aioinformer.testing import FakeAPIServer

pytestmark = [pytest.mark.e2e, pytest.mark.fake_apiserver(tls=True)]

CRDS = "apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
TYPE_MESSAGE = (
    'spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
    'integer: "string"'
)
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


async def test_a_definition_with_a_non_structural_schema_is_refused_over_http(
    fake_apiserver: FakeAPIServer,
) -> None:
    untyped = {"type": "object", "properties": {"spec": {"properties": {}}}}
    async with fake_apiserver.client() as client:
        with pytest.raises(UnprocessableEntity) as refused:
            await client.resource(CRDS).create(crd(untyped))
    assert refused.value.message == (
        'CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: '
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: "
        "must not be empty for specified object fields"
    )


async def test_instances_are_validated_defaulted_and_pruned_over_http(
    fake_apiserver: FakeAPIServer,
) -> None:
    async with fake_apiserver.client() as client:
        await client.resource(CRDS).create(crd())
        widgets = client.resource("example.com/v1/widgets")
        with pytest.raises(UnprocessableEntity) as refused:
            await widgets.create(widget(name="w", replicas="string"), namespace="default")
        status = refused.value.status
        assert (status["code"], status["reason"]) == (422, "Invalid")
        assert status["message"] == f'Widget.example.com "w1" is invalid: {TYPE_MESSAGE}'
        assert status["details"]["causes"] == [
            {
                "reason": "FieldValueTypeInvalid",
                "message": TYPE_MESSAGE.removeprefix("spec.replicas: "),
                "field": "spec.replicas",
            }
        ]

        created = await widgets.create(widget(name="w", colour="red"), namespace="default")
        assert created["spec"] == {"name": "w", "replicas": 1, "mode": "safe"}
        got = await client.request("GET", f"{WIDGETS}/w1")
        assert got["spec"] == created["spec"]

        with pytest.raises(UnprocessableEntity) as refused:
            await client.request(
                "PUT", f"{WIDGETS}/w1/status", json={**got, "status": {"ready": "yes"}}
            )
        assert refused.value.details["causes"] == [
            {
                "reason": "FieldValueTypeInvalid",
                "message": 'Invalid value: "string": status.ready in body must be of type '
                'boolean: "string"',
                "field": "status.ready",
            }
        ]
        written = await widgets.patch(
            "w1", {"status": {"ready": True, "extra": 1}}, "default", subresource="status"
        )
        assert written["status"] == {"ready": True}


@needs_kubectl
async def test_kubectl_apply_prints_the_refusal_and_stores_the_defaulted_object(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    code, _, err = await kubectl(
        fake_apiserver, tmp_path, "apply", "-f", manifest(tmp_path, "crd.yaml", crd())
    )
    assert code == 0, err

    bad = manifest(tmp_path, "bad.yaml", widget(name="w", replicas="string"))
    code, out, err = await kubectl(fake_apiserver, tmp_path, "apply", "-f", bad)
    assert code == 1, (out, err)
    assert f'The Widget "w1" is invalid: {TYPE_MESSAGE}' in err

    good = manifest(tmp_path, "good.yaml", widget(name="w"))
    code, out, err = await kubectl(fake_apiserver, tmp_path, "apply", "-f", good)
    assert code == 0, err
    assert out.strip() == "widget.example.com/w1 created"
    code, out, err = await kubectl(
        fake_apiserver, tmp_path, "get", "widget", "w1", "-o", "jsonpath={.spec.replicas}"
    )
    assert (code, out) == (0, "1"), err


@needs_kubectl
async def test_kubectl_apply_refuses_unknown_fields_unless_told_to_warn(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    code, _, err = await kubectl(
        fake_apiserver, tmp_path, "apply", "-f", manifest(tmp_path, "crd.yaml", crd())
    )
    assert code == 0, err
    typo = manifest(tmp_path, "typo.yaml", widget(name="w", colour="red"))
    # kubectl validates strictly by default, leaving it to the server.
    code, out, err = await kubectl(fake_apiserver, tmp_path, "apply", "-f", typo)
    assert code == 1, (out, err)
    assert (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'unknown field "spec.colour"'
    ) in err
    code, out, err = await kubectl(fake_apiserver, tmp_path, "apply", "--validate=warn", "-f", typo)
    assert code == 0, err
    assert 'Warning: unknown field "spec.colour"' in err
    assert out.strip() == "widget.example.com/w1 created"
    (stored,) = fake_apiserver.objects("example.com/v1/widgets")
    assert stored["spec"] == {"name": "w", "replicas": 1, "mode": "safe"}


async def test_the_example_operators_definition_installs_and_its_objects_validate(
    fake_apiserver: FakeAPIServer,
) -> None:
    definition: dict[str, Any] = copy.deepcopy(widget_operator.WIDGET_CRD)
    fake_apiserver.create(definition)
    group = definition["spec"]["group"]
    version = definition["spec"]["versions"][0]["name"]
    obj = {
        "apiVersion": f"{group}/{version}",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"greeting": "Hi", "size": 2},
    }
    assert fake_apiserver.create(obj)["spec"] == {"greeting": "Hi", "size": 2}
    with pytest.raises(UnprocessableEntity) as refused:
        fake_apiserver.create(
            {**obj, "metadata": {"name": "v", "namespace": "default"}, "spec": {"size": 0}}
        )
    assert refused.value.details["causes"][0]["field"] == "spec.size"
