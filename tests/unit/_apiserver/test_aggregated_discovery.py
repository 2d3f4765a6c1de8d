"""Aggregated discovery: ``/api`` and ``/apis`` as ``apidiscovery.k8s.io/v2`` documents for
a client that prefers them (kubectl, client-go), the classic documents otherwise; what
client-go turns them back into is what the classic documents say."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from aioinformer._apiserver.aggregated import AGGREGATED, aggregated_response, wants_aggregated
from aioinformer._apiserver.discovery import VERBS, discovery_response
from aioinformer._apiserver.objects import ResourceType, StatusError
from aioinformer.testing._resources import BUILTIN_TYPES

KUBECTL_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
WIDGETS = ResourceType(
    "example.com",
    "v1",
    "widgets",
    "Widget",
    namespaced=False,
    singular="widget",
    short_names=("wd",),
    status_subresource=True,
    scale_subresource=True,
)
REGISTRY = [*BUILTIN_TYPES, WIDGETS]


def aggregated(path: str, registry: list[ResourceType] = REGISTRY) -> dict[str, Any]:
    parts = [part for part in path.split("/") if part]
    response = aggregated_response("GET", parts, registry, verbs=VERBS)
    assert response.headers["Content-Type"] == AGGREGATED
    assert isinstance(response.body, bytes)
    document: dict[str, Any] = orjson.loads(response.body)
    return document


def classic(parts: list[str]) -> dict[str, Any]:
    response = discovery_response("GET", parts, REGISTRY, port=1)
    assert isinstance(response.body, bytes)
    document: dict[str, Any] = orjson.loads(response.body)
    return document


def as_classic(version: dict[str, Any], group: str) -> list[dict[str, Any]]:
    """What client-go makes of an aggregated version: the classic resource entries."""
    resources: list[dict[str, Any]] = []
    for r in version["resources"]:
        entry = {
            "name": r["resource"],
            "singularName": r["singularResource"],
            "namespaced": r["scope"] == "Namespaced",
            "kind": r["responseKind"]["kind"],
            "verbs": r["verbs"],
        }
        if "shortNames" in r:
            entry["shortNames"] = r["shortNames"]
        resources.append(entry)
        for sub in r.get("subresources", []):
            kind = sub["responseKind"]
            entry = {
                "name": f"{r['resource']}/{sub['subresource']}",
                "singularName": "",
                "namespaced": r["scope"] == "Namespaced",
                "kind": kind["kind"],
                "verbs": sub["verbs"],
            }
            if (kind["group"], kind["version"]) != (group, version["version"]):
                entry = {**entry, "group": kind["group"], "version": kind["version"]}
            resources.append(entry)
    return resources


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        pytest.param(KUBECTL_ACCEPT, True, id="kubectl"),
        pytest.param(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,"
            "application/json",
            True,
            id="nopeer-profile",
        ),
        pytest.param("application/json", False, id="json"),
        pytest.param("", False, id="none"),
        pytest.param(
            "application/json;q=0.9,"
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            True,
            id="by-quality",
        ),
        pytest.param(
            "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            False,
            id="json-first",
        ),
        pytest.param(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,*/*",
            False,
            id="only-v2beta1",
        ),
        pytest.param(
            "application/vnd.kubernetes.protobuf,"
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=x",
            False,
            id="bad-quality",
        ),
    ],
)
def test_the_aggregated_form_is_chosen_when_the_accept_header_prefers_it(
    accept: str, expected: bool
) -> None:
    assert wants_aggregated(["apis"], accept) is expected
    assert wants_aggregated(["api"], accept) is expected


def test_only_the_two_roots_have_an_aggregated_form() -> None:
    assert not wants_aggregated(["api", "v1"], KUBECTL_ACCEPT)
    assert not wants_aggregated(["apis", "apps", "v1"], KUBECTL_ACCEPT)
    assert not wants_aggregated(["version"], KUBECTL_ACCEPT)


def test_api_holds_the_core_group_as_the_classic_documents_do() -> None:
    document = aggregated("/api")
    assert (document["kind"], document["apiVersion"]) == (
        "APIGroupDiscoveryList",
        "apidiscovery.k8s.io/v2",
    )
    [core] = document["items"]
    assert core["metadata"] == {}
    [v1] = core["versions"]
    assert (v1["version"], v1["freshness"]) == ("v1", "Current")
    assert as_classic(v1, "") == classic(["api", "v1"])["resources"]


def test_apis_holds_every_named_group_as_the_classic_documents_do() -> None:
    document = aggregated("/apis")
    names = [item["metadata"]["name"] for item in document["items"]]
    assert names == [group["name"] for group in classic(["apis"])["groups"]]
    for item in document["items"]:
        name = item["metadata"]["name"]
        versions = [v["version"] for v in item["versions"]]
        group = classic(["apis", name])
        assert versions == [v["version"] for v in group["versions"]]
        assert versions[0] == group["preferredVersion"]["version"]
        for version in item["versions"]:
            listed = classic(["apis", name, version["version"]])["resources"]
            assert as_classic(version, name) == listed


def test_a_custom_resource_carries_its_scope_short_names_and_subresources() -> None:
    [item] = [i for i in aggregated("/apis")["items"] if i["metadata"]["name"] == "example.com"]
    [widget] = item["versions"][0]["resources"]
    assert widget["scope"] == "Cluster"
    assert widget["shortNames"] == ["wd"]
    assert [s["subresource"] for s in widget["subresources"]] == ["status", "scale"]
    assert widget["subresources"][1]["responseKind"] == {
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
    }


def test_a_server_without_core_resources_has_no_core_group() -> None:
    assert aggregated("/api", [WIDGETS])["items"] == []


def test_a_write_to_a_root_is_refused() -> None:
    with pytest.raises(StatusError) as caught:
        aggregated_response("POST", ["apis"], REGISTRY, verbs=VERBS)
    assert caught.value.code == 405
