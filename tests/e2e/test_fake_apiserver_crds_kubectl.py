"""kubectl installs a CustomResourceDefinition on ``FakeAPIServer(tls=True)`` as on a
cluster: ``apply -f crd.yaml``, then ``get widgets`` (kubectl's cached discovery, which
has no ``widgets``, is refreshed on the miss), ``apply`` of a custom object, and ``delete
crd``, after which the server no longer serves the resource."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.e2e.test_fake_apiserver_kubectl import KUBECTL, kubectl, manifest
from tests.unit.testing.test_fake_crds import widget_crd

if TYPE_CHECKING:
    from pathlib import Path

    from aioinformer.testing import FakeAPIServer

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
    pytest.mark.fake_apiserver(tls=True),
]

# A schema that keeps every field: the fake prunes by the schema, as a cluster does.
CRD = widget_crd(
    versions=[
        {
            "name": "v1",
            "served": True,
            "storage": True,
            "schema": {
                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            },
        }
    ]
)
WIDGET = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {"name": "sprocket"},
    "spec": {"size": 3},
}


async def test_kubectl_applies_a_crd_then_gets_and_deletes_its_objects(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    # kubectl learns discovery first, without widgets: its cache must be refreshed.
    code, out, err = await kubectl(fake_apiserver, tmp_path, "get", "configmaps")
    assert code == 0, err

    code, out, err = await kubectl(
        fake_apiserver, tmp_path, "apply", "-f", manifest(tmp_path, "crd.yaml", CRD)
    )
    assert code == 0, err
    assert (
        out.strip() == "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
    )
    code, out, err = await kubectl(
        fake_apiserver,
        tmp_path,
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=10s",
    )
    assert code == 0, err

    code, out, err = await kubectl(fake_apiserver, tmp_path, "get", "widgets")
    assert code == 0, err
    assert "No resources found in default namespace." in err

    code, out, err = await kubectl(
        fake_apiserver, tmp_path, "apply", "-f", manifest(tmp_path, "widget.yaml", WIDGET)
    )
    assert code == 0, err
    assert out.strip() == "widget.example.com/sprocket created"
    code, out, err = await kubectl(fake_apiserver, tmp_path, "get", "wd", "-o", "name")
    assert code == 0, err
    assert out.split() == ["widget.example.com/sprocket"]

    code, out, err = await kubectl(fake_apiserver, tmp_path, "delete", "crd", "widgets.example.com")
    assert code == 0, err
    assert fake_apiserver.objects("customresourcedefinitions") == []
    code, out, err = await kubectl(fake_apiserver, tmp_path, "get", "widgets")
    # kubectl's discovery cache still names widgets; the server no longer serves them.
    assert code != 0
    assert err.startswith("Error from server (NotFound): ")
    assert "the server could not find the requested resource" in err
