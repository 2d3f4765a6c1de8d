"""The Kubernetes manifests of the how-to pages are objects a cluster would take.

The pages' ``yaml`` blocks are not run, and kubectl cannot validate them offline (its
validation reads the server's OpenAPI document, which the fake API server does not
serve). So each document is checked two ways: every field it sets must be a field of the
kind's model in :mod:`aioinformer.k8s` (the models keep unknown fields in
``model_extra``, so a misspelled or misplaced field shows up there), and the whole set is
the documents of the kinds the fake API server serves are created there, and it refuses
what kube-apiserver refuses (names, labels, namespaces, field types). It does not serve
the RBAC kinds; those rest on the first check.
"""

from __future__ import annotations

import importlib
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from aioinformer.errors import UnknownResourceError
from aioinformer.testing import FakeAPIServer

ROOT = Path(__file__).resolve().parents[2]
PAGES_WITH_MANIFESTS = ("how-to/cluster.md",)

YAML_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```ya?ml[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def manifests(page: str) -> list[dict[str, Any]]:
    """Every Kubernetes object in the page's yaml blocks (tabs' indented ones included)."""
    text = (ROOT / "docs" / page).read_text()
    documents: list[dict[str, Any]] = []
    for match in YAML_FENCE.finditer(text):
        body = textwrap.dedent(match["body"])
        documents += [doc for doc in yaml.safe_load_all(body) if doc is not None]
    return documents


def model_of(document: dict[str, Any]) -> type[BaseModel]:
    group, _, version = document["apiVersion"].rpartition("/")
    module = importlib.import_module(f"aioinformer.k8s.{(group or 'core').split('.')[0]}_{version}")
    model: type[BaseModel] = getattr(module, document["kind"])
    return model


def unknown_fields(value: Any, path: str = "") -> list[str]:
    """The paths of fields no model declares, anywhere in a validated model tree."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{path}.{name}" for name in value.model_extra or {}]
        for name in type(value).model_fields:
            found += unknown_fields(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += unknown_fields(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += unknown_fields(item, f"{path}[{key!r}]")
    return found


def every_manifest() -> list[tuple[str, int, dict[str, Any]]]:
    return [
        (page, index, document)
        for page in PAGES_WITH_MANIFESTS
        for index, document in enumerate(manifests(page))
    ]


def test_the_cluster_page_shows_the_objects_an_operator_needs() -> None:
    kinds = {document["kind"] for document in manifests("how-to/cluster.md")}
    wanted = {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
    assert wanted | {"Deployment", "Service"} <= kinds


@pytest.mark.parametrize(
    ("page", "index", "document"),
    every_manifest(),
    ids=[f"{page}:{index}:{doc['kind']}" for page, index, doc in every_manifest()],
)
def test_every_field_of_a_manifest_is_a_field_of_its_kind(
    page: str, index: int, document: dict[str, Any]
) -> None:
    model = model_of(document)
    assert unknown_fields(model.model_validate(document), document["kind"]) == []


def test_a_misplaced_field_is_caught() -> None:
    deployment = next(d for d in manifests("how-to/cluster.md") if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"]["httpGet"]["periodSeconds"] = 10  # belongs to the probe
    found = unknown_fields(model_of(deployment).model_validate(deployment), "Deployment")
    assert found == [
        "Deployment.spec.template.spec.containers[0].readiness_probe.http_get.periodSeconds"
    ]


@pytest.mark.parametrize("page", PAGES_WITH_MANIFESTS)
async def test_the_fake_api_server_accepts_every_manifest_of_a_kind_it_serves(page: str) -> None:
    async with FakeAPIServer() as server:
        documents = manifests(page)
        for namespace in {d["metadata"].get("namespace") for d in documents} - {None}:
            server.create_namespace(namespace)
        created: set[tuple[str, str, str | None, str]] = set()
        for document in documents:
            identity = (
                document["apiVersion"],
                document["kind"],
                document["metadata"].get("namespace"),
                document["metadata"]["name"],
            )
            if identity in created:  # the same object shown in two tabs
                continue
            try:
                answer = server.create(document)
            except UnknownResourceError:  # RBAC: not served by the fake
                continue
            assert answer["metadata"]["name"] == document["metadata"]["name"]
            created.add(identity)
        assert {"Deployment", "Service", "ServiceAccount"} <= {kind for _, kind, _, _ in created}
