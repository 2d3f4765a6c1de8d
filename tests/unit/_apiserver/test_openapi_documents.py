"""``/openapi/v3``: an index of the served group versions and, per group version, a
document whose PATCH operations take ``fieldValidation``, which is what kubectl looks
for before it leaves validation to the server (``create -f``, ``apply``)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from aioinformer._apiserver.discovery import VERBS
from aioinformer._apiserver.objects import ResourceType, StatusError
from aioinformer._apiserver.openapi import is_openapi, openapi_response
from aioinformer.testing._resources import BUILTIN_TYPES

WIDGETS = ResourceType("example.com", "v1", "widgets", "Widget", namespaced=True)


def answer(
    path: str, registry: list[ResourceType], verbs: tuple[str, ...] = VERBS
) -> dict[str, Any]:
    parts = [part for part in path.split("/") if part]
    response = openapi_response("GET", parts, registry, verbs=verbs)
    assert response.content_type == "application/json"
    assert isinstance(response.body, bytes)
    document: dict[str, Any] = orjson.loads(response.body)
    return document


def supports_field_validation(document: dict[str, Any], group: str, kind: str) -> bool:
    """What kubectl checks: some PATCH operation tagged with the kind takes the
    ``fieldValidation`` query parameter."""
    for item in document["paths"].values():
        patch = item.get("patch")
        if patch is None:
            continue
        gvk = patch["x-kubernetes-group-version-kind"]
        if (gvk["group"], gvk["kind"]) != (group, kind):
            continue
        return any(
            p["name"] == "fieldValidation" and p["in"] == "query" for p in patch["parameters"]
        )
    return False


def test_the_index_lists_every_group_version_core_first_with_its_document_url() -> None:
    registry = [*BUILTIN_TYPES, WIDGETS]
    index = answer("/openapi/v3", registry)
    paths = list(index["paths"])
    assert paths[0] == "api/v1"
    assert paths[1:] == sorted(paths[1:])
    assert {"apis/apps/v1", "apis/example.com/v1"} <= set(paths)
    url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/example.com/v1?hash=")


def test_a_document_hash_changes_when_its_group_version_changes() -> None:
    before = answer("/openapi/v3", [*BUILTIN_TYPES])["paths"]
    gadgets = ResourceType("apps", "v1", "gadgets", "Gadget", namespaced=False)
    after = answer("/openapi/v3", [*BUILTIN_TYPES, gadgets])["paths"]
    assert after["apis/apps/v1"] != before["apis/apps/v1"]
    assert after["api/v1"] == before["api/v1"]


def test_a_group_version_document_lets_kubectl_validate_on_the_server() -> None:
    document = answer("/openapi/v3/api/v1", [*BUILTIN_TYPES])
    assert document["openapi"].startswith("3.")
    for kind in ("ConfigMap", "Pod", "Namespace", "Secret"):
        assert supports_field_validation(document, "", kind), kind
    assert "/api/v1/namespaces/{namespace}/configmaps/{name}" in document["paths"]
    namespaces = document["paths"]["/api/v1/namespaces/{name}"]
    assert [p["name"] for p in namespaces["parameters"]] == ["name"]
    assert namespaces["patch"]["operationId"] == "patchCoreV1Namespace"
    assert not any(path.startswith("/apis/") for path in document["paths"])


def test_a_custom_resource_is_in_its_group_version_document() -> None:
    document = answer("/openapi/v3/apis/example.com/v1", [*BUILTIN_TYPES, WIDGETS])
    assert list(document["paths"]) == ["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    patch = document["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["operationId"] == "patchExampleComV1NamespacedWidget"
    assert supports_field_validation(document, "example.com", "Widget")


def test_a_read_only_server_offers_no_write_operations() -> None:
    document = answer("/openapi/v3/api/v1", [*BUILTIN_TYPES], ("get", "list", "watch"))
    operations = {op for item in document["paths"].values() for op in item if op != "parameters"}
    assert operations == {"get"}
    assert not supports_field_validation(document, "", "ConfigMap")


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [
        pytest.param("GET", "/openapi/v3/apis/nothing.example/v1", 404, id="unknown-group"),
        pytest.param("GET", "/openapi/v3/api/v2", 404, id="unknown-version"),
        pytest.param("POST", "/openapi/v3", 405, id="post"),
    ],
)
def test_other_requests_are_refused_as_kube_apiserver_refuses_them(
    method: str, path: str, code: int
) -> None:
    parts = [part for part in path.split("/") if part]
    with pytest.raises(StatusError) as caught:
        openapi_response(method, parts, [*BUILTIN_TYPES], verbs=VERBS)
    assert caught.value.code == code


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/openapi/v3", True), ("/openapi/v3/api/v1", True), ("/openapi/v2", False), ("/api", False)],
)
def test_is_openapi_matches_the_v3_tree_only(path: str, expected: bool) -> None:
    assert is_openapi([part for part in path.split("/") if part]) is expected
