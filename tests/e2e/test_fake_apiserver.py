"""The fake API server answers like kube-apiserver: objects, LIST semantics, errors,
discovery and authorization, checked over plain HTTP so it cannot drift."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from aioinformer._apiserver.objects import Entry, ResourceType, StatusError
from aioinformer.errors import AlreadyExists, Conflict, NotFound, UnknownResourceError
from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer, Rule
from aioinformer.testing._store import Store
from tests._support_http import Api

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer._apiserver.watch import Watcher

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def api(fake_apiserver: FakeAPIServer) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(session, fake_apiserver.url)


def pod(name: str, *, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def status(code: int, reason: str, message: str, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


# -- objects ------------------------------------------------------------------------------


async def test_create_sets_server_owned_metadata_and_bumps_the_global_version(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    before = int(fake_apiserver.resource_version)
    code, created, _ = await api.call("POST", PODS, body=pod("a"))
    assert code == 201
    meta = created["metadata"]
    assert created["apiVersion"] == "v1"
    assert created["kind"] == "Pod"
    assert meta["resourceVersion"] == str(before + 1)
    assert meta["generation"] == 1
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z")
    code, other, _ = await api.call(
        "POST", "/api/v1/namespaces/default/configmaps", body={"metadata": {"name": "c"}}
    )
    assert code == 201
    assert other["metadata"]["resourceVersion"] == str(before + 2)
    assert fake_apiserver.resource_version == str(before + 2)


async def test_create_of_a_taken_name_answers_409_already_exists(api: Api) -> None:
    await api.call("POST", PODS, body=pod("a"))
    code, body, _ = await api.call("POST", PODS, body=pod("a"))
    assert code == 409
    assert body == status(
        409, "AlreadyExists", 'pods "a" already exists', {"name": "a", "kind": "pods"}
    )


async def test_get_of_a_missing_object_answers_404_with_the_real_status_shape(api: Api) -> None:
    code, body, _ = await api.call("GET", PODS + "/x")
    assert code == 404
    assert body == status(404, "NotFound", 'pods "x" not found', {"name": "x", "kind": "pods"})


async def test_grouped_resources_are_named_with_their_group_in_errors(api: Api) -> None:
    code, body, _ = await api.call("GET", "/apis/apps/v1/namespaces/default/deployments/d")
    assert code == 404
    assert body["message"] == 'deployments.apps "d" not found'
    assert body["details"] == {"name": "d", "group": "apps", "kind": "deployments"}


async def test_generate_name_creates_a_unique_name(api: Api) -> None:
    body = {"metadata": {"generateName": "web-"}}
    _, first, _ = await api.call("POST", "/api/v1/namespaces/default/configmaps", body=body)
    _, second, _ = await api.call("POST", "/api/v1/namespaces/default/configmaps", body=body)
    assert first["metadata"]["name"].startswith("web-")
    assert first["metadata"]["name"] != second["metadata"]["name"]


async def test_create_without_a_name_answers_422_invalid(api: Api) -> None:
    code, body, _ = await api.call("POST", PODS, body={"metadata": {}})
    assert code == 422
    assert body["reason"] == "Invalid"


async def test_create_in_another_namespace_than_the_url_answers_400(api: Api) -> None:
    code, body, _ = await api.call("POST", PODS, body=pod("a", namespace="other"))
    assert code == 400
    assert "does not match the namespace" in body["message"]


async def test_update_with_a_stale_resource_version_answers_409_conflict(api: Api) -> None:
    _, created, _ = await api.call("POST", PODS, body=pod("a"))
    fresh = dict(created, spec={"containers": [{"name": "main", "image": "nginx"}]})
    code, updated, _ = await api.call("PUT", PODS + "/a", body=fresh)
    assert code == 200
    assert updated["metadata"]["generation"] == 2
    code, body, _ = await api.call("PUT", PODS + "/a", body=created)
    assert code == 409
    assert body == status(
        409,
        "Conflict",
        'Operation cannot be fulfilled on pods "a": the object has been modified; '
        "please apply your changes to the latest version and try again",
        {"name": "a", "kind": "pods"},
    )


async def test_update_without_a_resource_version_is_unconditional(api: Api) -> None:
    _, created, _ = await api.call("POST", PODS, body=pod("a"))
    created["metadata"].pop("resourceVersion")
    created["metadata"]["labels"] = {"changed": "yes"}
    code, updated, _ = await api.call("PUT", PODS + "/a", body=created)
    assert code == 200
    assert updated["metadata"]["labels"] == {"changed": "yes"}
    assert updated["metadata"]["generation"] == 1  # only metadata changed


async def test_status_subresource_changes_only_status_and_main_update_keeps_status(
    api: Api,
) -> None:
    _, created, _ = await api.call("POST", PODS, body=pod("a"))
    with_status = dict(created, status={"phase": "Running"})
    with_status["metadata"] = dict(created["metadata"], labels={"ignored": "yes"})
    code, updated, _ = await api.call("PUT", PODS + "/a/status", body=with_status)
    assert code == 200
    assert updated["status"] == {"phase": "Running"}
    assert updated["metadata"]["labels"] == {}
    assert updated["metadata"]["generation"] == 1
    overwrite = dict(updated, status={"phase": "Failed"})
    _, after, _ = await api.call("PUT", PODS + "/a", body=overwrite)
    assert after["status"] == {"phase": "Running"}


PATCH_CASES = [
    (
        "application/merge-patch+json",
        {"metadata": {"labels": {"app": None, "new": "x"}}},
        {"new": "x"},
    ),
    (
        "application/json-patch+json",
        [{"op": "add", "path": "/metadata/labels/new", "value": "x"}],
        {"app": "web", "new": "x"},
    ),
    (
        "application/strategic-merge-patch+json",
        {"metadata": {"labels": {"new": "x"}}},
        {"app": "web", "new": "x"},
    ),
]


@pytest.mark.parametrize(
    ("content_type", "patch", "labels"), PATCH_CASES, ids=["merge", "json", "strategic"]
)
async def test_patch_types_apply_to_the_stored_object(
    api: Api, content_type: str, patch: Any, labels: dict[str, str]
) -> None:
    await api.call("POST", PODS, body=pod("a", app="web"))
    code, patched, _ = await api.call("PATCH", PODS + "/a", body=patch, content_type=content_type)
    assert code == 200
    assert patched["metadata"]["labels"] == labels


async def test_strategic_merge_patch_merges_containers_by_name(api: Api) -> None:
    await api.call("POST", PODS, body=pod("a"))
    patch = {"spec": {"containers": [{"name": "side", "image": "envoy"}]}}
    _, patched, _ = await api.call(
        "PATCH", PODS + "/a", body=patch, content_type="application/strategic-merge-patch+json"
    )
    assert [c["name"] for c in patched["spec"]["containers"]] == ["main", "side"]
    delete = {"spec": {"containers": [{"name": "main", "$patch": "delete"}]}}
    _, patched, _ = await api.call(
        "PATCH", PODS + "/a", body=delete, content_type="application/strategic-merge-patch+json"
    )
    assert [c["name"] for c in patched["spec"]["containers"]] == ["side"]


async def test_patch_with_a_stale_resource_version_answers_409(api: Api) -> None:
    _, created, _ = await api.call("POST", PODS, body=pod("a"))
    await api.call(
        "PATCH",
        PODS + "/a",
        body={"metadata": {"labels": {"x": "1"}}},
        content_type="application/merge-patch+json",
    )
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}}
    code, body, _ = await api.call(
        "PATCH", PODS + "/a", body=stale, content_type="application/merge-patch+json"
    )
    assert code == 409
    assert body["reason"] == "Conflict"


async def test_failed_json_patch_test_operation_answers_422(api: Api) -> None:
    await api.call("POST", PODS, body=pod("a"))
    patch = [{"op": "test", "path": "/metadata/name", "value": "b"}]
    code, body, _ = await api.call(
        "PATCH", PODS + "/a", body=patch, content_type="application/json-patch+json"
    )
    assert code == 422
    assert body["reason"] == "Invalid"


async def test_patch_with_an_unknown_content_type_answers_415(api: Api) -> None:
    await api.call("POST", PODS, body=pod("a"))
    code, body, _ = await api.call("PATCH", PODS + "/a", body={}, content_type="text/plain")
    assert code == 415
    assert body["reason"] == "UnsupportedMediaType"


async def test_delete_answers_a_success_status_naming_the_uid_and_removes_the_object(
    api: Api,
) -> None:
    configmaps = "/api/v1/namespaces/default/configmaps"
    _, created, _ = await api.call("POST", configmaps, body={"metadata": {"name": "a"}})
    code, body, _ = await api.call("DELETE", configmaps + "/a")
    assert code == 200
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }
    code, _, _ = await api.call("GET", configmaps + "/a")
    assert code == 404
    code, _, _ = await api.call("DELETE", configmaps + "/a")
    assert code == 404


@pytest.mark.parametrize(
    ("path", "body"),
    [
        pytest.param(PODS, pod("a"), id="pods"),
        pytest.param(
            "/api/v1/namespaces/default/services",
            {"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}},
            id="svc",
        ),
        pytest.param(
            "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "a"}}, id="sa"
        ),
    ],
)
async def test_deleting_a_pod_service_or_service_account_answers_the_deleted_object(
    api: Api, fake_apiserver: FakeAPIServer, path: str, body: dict[str, Any]
) -> None:
    # kube-apiserver's registries of these kinds return the deleted object, stamped with
    # the deletion's resourceVersion: the one its watchers' DELETED event carries.
    _, created, _ = await api.call("POST", path, body=body)
    code, deleted, _ = await api.call("DELETE", path + "/a")
    assert code == 200
    assert deleted["kind"] == created["kind"]
    assert deleted["metadata"]["uid"] == created["metadata"]["uid"]
    assert deleted["metadata"]["resourceVersion"] == fake_apiserver.resource_version
    assert int(deleted["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    code, _, _ = await api.call("GET", path + "/a")
    assert code == 404


async def test_delete_with_a_failed_precondition_answers_409(api: Api) -> None:
    await api.call("POST", PODS, body=pod("a"))
    options = {"kind": "DeleteOptions", "preconditions": {"resourceVersion": "1"}}
    code, body, _ = await api.call("DELETE", PODS + "/a", body=options)
    assert code == 409
    assert "does not match the ResourceVersion in record" in body["message"]


async def test_finalizers_hold_a_deleted_object_until_they_are_cleared(api: Api) -> None:
    obj = pod("a")
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    await api.call("POST", PODS, body=obj)
    code, marked, _ = await api.call("DELETE", PODS + "/a")
    assert code == 200
    assert marked["metadata"]["deletionTimestamp"]
    # Marking bumps the generation (Pods keep one), so generation filters see it.
    assert marked["metadata"]["generation"] == 2
    code, again, _ = await api.call("DELETE", PODS + "/a")
    assert code == 200
    assert again["metadata"]["generation"] == 2
    _, current, _ = await api.call("GET", PODS + "/a")
    current["metadata"]["finalizers"] = []
    code, _, _ = await api.call("PUT", PODS + "/a", body=current)
    assert code == 200
    code, _, _ = await api.call("GET", PODS + "/a")
    assert code == 404


async def test_cluster_scoped_resources_have_no_namespace(api: Api) -> None:
    code, created, _ = await api.call(
        "POST", "/api/v1/nodes", body={"metadata": {"name": "n1", "namespace": "ignored"}}
    )
    assert code == 201
    assert "namespace" not in created["metadata"]
    code, _, _ = await api.call("GET", "/api/v1/nodes/n1")
    assert code == 200
    code, _, _ = await api.call("GET", "/api/v1/namespaces/default/nodes/n1")
    assert code == 404


async def test_unknown_paths_answer_404_could_not_find_the_requested_resource(api: Api) -> None:
    for path in ("/api/v1/widgets", "/apis/example.com/v1/widgets", "/api/v1/pods/x/logs"):
        code, body, _ = await api.call("GET", path)
        assert code == 404, path
        assert body == status(
            404, "NotFound", "the server could not find the requested resource", {}
        )


# -- LIST -----------------------------------------------------------------------------------


async def seed(server: FakeAPIServer, count: int, namespace: str = "default") -> None:
    server.create_namespace(namespace)
    for i in range(count):
        server.create(pod(f"p{i:03d}", namespace=namespace, index=str(i), parity=str(i % 2)))


async def test_list_items_carry_no_kind_and_the_list_carries_the_global_version(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    await seed(fake_apiserver, 3)
    code, body, _ = await api.call("GET", PODS)
    assert code == 200
    assert body["kind"] == "PodList"
    assert body["apiVersion"] == "v1"
    assert body["metadata"] == {"resourceVersion": fake_apiserver.resource_version}
    assert [item["metadata"]["name"] for item in body["items"]] == ["p000", "p001", "p002"]
    assert all("kind" not in item and "apiVersion" not in item for item in body["items"])


async def test_list_across_namespaces_and_in_one_namespace(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    await seed(fake_apiserver, 2, "a")
    await seed(fake_apiserver, 3, "b")
    _, everything, _ = await api.call("GET", "/api/v1/pods")
    _, only_b, _ = await api.call("GET", "/api/v1/namespaces/b/pods")
    assert len(everything["items"]) == 5
    assert {item["metadata"]["namespace"] for item in only_b["items"]} == {"b"}
    assert len(only_b["items"]) == 3


async def test_pages_form_one_consistent_snapshot_despite_writes_between_them(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    await seed(fake_apiserver, 5)
    _, first, _ = await api.call("GET", PODS, params={"limit": "2"})
    assert len(first["items"]) == 2
    assert first["metadata"]["remainingItemCount"] == 3
    snapshot_rv = first["metadata"]["resourceVersion"]
    fake_apiserver.delete("pods", "default", "p004")
    fake_apiserver.create(pod("p003a"))
    names = [item["metadata"]["name"] for item in first["items"]]
    token = first["metadata"]["continue"]
    while token:
        _, page, _ = await api.call("GET", PODS, params={"limit": "2", "continue": token})
        assert page["metadata"]["resourceVersion"] == snapshot_rv
        names += [item["metadata"]["name"] for item in page["items"]]
        token = page["metadata"].get("continue")
    assert names == ["p000", "p001", "p002", "p003", "p004"]


async def test_expired_continue_token_answers_410_with_an_inconsistent_token(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    await seed(fake_apiserver, 3)
    _, first, _ = await api.call("GET", PODS, params={"limit": "1"})
    fake_apiserver.create(pod("later"))
    fake_apiserver.compact()
    code, body, _ = await api.call(
        "GET", PODS, params={"limit": "1", "continue": first["metadata"]["continue"]}
    )
    assert code == 410
    assert body["reason"] == "Expired"
    assert body["message"].startswith(
        "The provided continue parameter is too old to display a consistent list result."
    )
    inconsistent = body["metadata"]["continue"]
    _, rest, _ = await api.call("GET", PODS, params={"limit": "10", "continue": inconsistent})
    assert [i["metadata"]["name"] for i in rest["items"]] == ["p001", "p002"]


async def test_continue_with_a_resource_version_answers_400(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    await seed(fake_apiserver, 2)
    _, first, _ = await api.call("GET", PODS, params={"limit": "1"})
    code, body, _ = await api.call(
        "GET", PODS, params={"continue": first["metadata"]["continue"], "resourceVersion": "5"}
    )
    assert code == 400
    assert body["message"] == "specifying resource version is not allowed when using continue"


async def test_garbage_continue_token_answers_400(api: Api) -> None:
    code, body, _ = await api.call("GET", PODS, params={"continue": "not-a-token"})
    assert code == 400
    assert body["reason"] == "BadRequest"


async def test_exact_list_at_an_older_version_serves_that_state(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(pod("a"))
    old_rv = fake_apiserver.resource_version
    fake_apiserver.create(pod("b"))
    fake_apiserver.delete("pods", "default", "a")
    params = {"resourceVersion": old_rv, "resourceVersionMatch": "Exact"}
    _, body, _ = await api.call("GET", PODS, params=params)
    assert body["metadata"]["resourceVersion"] == old_rv
    assert [i["metadata"]["name"] for i in body["items"]] == ["a"]
    # Without a match but with a limit, a non-zero version is exact too.
    _, paged, _ = await api.call("GET", PODS, params={"resourceVersion": old_rv, "limit": "5"})
    assert [i["metadata"]["name"] for i in paged["items"]] == ["a"]
    # NotOlderThan (and the legacy form without limit) serve the latest state.
    _, latest, _ = await api.call("GET", PODS, params={"resourceVersion": old_rv})
    assert [i["metadata"]["name"] for i in latest["items"]] == ["b"]
    assert latest["metadata"]["resourceVersion"] == fake_apiserver.resource_version


async def test_exact_list_at_a_compacted_version_answers_410(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(pod("a"))
    old_rv = fake_apiserver.resource_version
    fake_apiserver.create(pod("b"))
    fake_apiserver.compact()
    params = {"resourceVersion": old_rv, "resourceVersionMatch": "Exact"}
    code, body, _ = await api.call("GET", PODS, params=params)
    assert code == 410
    assert body == status(410, "Expired", "The resourceVersion for the provided list is too old.")


@pytest.mark.parametrize("match", ["", "NotOlderThan", "Exact"])
async def test_list_at_a_too_large_version_answers_504_resource_version_too_large(
    api: Api, fake_apiserver: FakeAPIServer, match: str
) -> None:
    current = int(fake_apiserver.resource_version)
    params = {"resourceVersion": str(current + 10)}
    if match:
        params["resourceVersionMatch"] = match
    code, body, headers = await api.call("GET", PODS, params=params)
    assert code == 504
    assert body["reason"] == "Timeout"
    assert (
        body["message"]
        == f"Timeout: Too large resource version: {current + 10}, current: {current}"
    )
    assert body["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    assert body["details"]["retryAfterSeconds"] == 1
    assert headers["Retry-After"] == "1"


async def test_resource_version_zero_serves_the_current_state(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(pod("a"))
    _, body, _ = await api.call("GET", PODS, params={"resourceVersion": "0"})
    assert [i["metadata"]["name"] for i in body["items"]] == ["a"]


INVALID_OPTIONS = [
    ({"resourceVersionMatch": "Exact"}, "resourceVersionMatch is forbidden unless resourceVersion"),
    (
        {"resourceVersion": "0", "resourceVersionMatch": "Exact"},
        'forbidden for resourceVersion "0"',
    ),
    ({"resourceVersion": "1", "resourceVersionMatch": "Newest"}, "Unsupported value"),
]


@pytest.mark.parametrize(
    ("params", "fragment"), INVALID_OPTIONS, ids=["no-rv", "exact-zero", "unknown"]
)
async def test_invalid_resource_version_match_answers_422(
    api: Api, params: dict[str, str], fragment: str
) -> None:
    code, body, _ = await api.call("GET", PODS, params=params)
    assert code == 422
    assert body["reason"] == "Invalid"
    assert fragment in body["message"]


LABEL_SELECTOR_CASES = [
    ("parity=1", ["p001", "p003"]),
    ("parity==0", ["p000", "p002", "p004"]),
    ("parity!=0", ["extra", "p001", "p003"]),
    ("index in (1,4)", ["p001", "p004"]),
    ("index notin (0,1,2)", ["extra", "p003", "p004"]),
    ("index", ["p000", "p001", "p002", "p003", "p004"]),
    ("!index", ["extra"]),
]


@pytest.mark.parametrize(
    ("selector", "names"), LABEL_SELECTOR_CASES, ids=[c[0] for c in LABEL_SELECTOR_CASES]
)
async def test_label_selector_filters_list(
    api: Api, fake_apiserver: FakeAPIServer, selector: str, names: list[str]
) -> None:
    await seed(fake_apiserver, 5)
    fake_apiserver.create(pod("extra"))
    _, body, _ = await api.call("GET", PODS, params={"labelSelector": selector})
    assert [i["metadata"]["name"] for i in body["items"]] == names


async def test_selectors_combine_with_pagination(api: Api, fake_apiserver: FakeAPIServer) -> None:
    await seed(fake_apiserver, 9)
    names: list[str] = []
    params = {"labelSelector": "parity=0", "limit": "2"}
    while True:
        _, page, _ = await api.call("GET", PODS, params=params)
        assert "remainingItemCount" not in page["metadata"]
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
        params = {"labelSelector": "parity=0", "limit": "2", "continue": token}
    assert names == ["p000", "p002", "p004", "p006", "p008"]


async def test_field_selector_on_name_and_namespace(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    await seed(fake_apiserver, 2, "a")
    await seed(fake_apiserver, 2, "b")
    _, body, _ = await api.call(
        "GET", "/api/v1/pods", params={"fieldSelector": "metadata.namespace=b,metadata.name!=p000"}
    )
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]] == [
        ("b", "p001")
    ]


async def test_unsupported_field_label_answers_400(api: Api) -> None:
    code, body, _ = await api.call("GET", PODS, params={"fieldSelector": "spec.nope=x"})
    assert code == 400
    assert body["message"] == "field label not supported: spec.nope"


async def test_malformed_label_selector_answers_400(api: Api) -> None:
    code, body, _ = await api.call("GET", PODS, params={"labelSelector": "a in ("})
    assert code == 400
    assert body["reason"] == "BadRequest"


async def test_delete_collection_removes_the_selected_objects(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    await seed(fake_apiserver, 4)
    code, body, _ = await api.call("DELETE", PODS, params={"labelSelector": "parity=1"})
    assert code == 200
    assert [i["metadata"]["name"] for i in body["items"]] == ["p001", "p003"]
    assert [o["metadata"]["name"] for o in fake_apiserver.objects("pods")] == ["p000", "p002"]


# -- discovery and CRDs -----------------------------------------------------------------------


async def test_discovery_documents_and_version(api: Api) -> None:
    _, versions, _ = await api.call("GET", "/api")
    assert versions["kind"] == "APIVersions"
    assert versions["versions"] == ["v1"]
    _, core, _ = await api.call("GET", "/api/v1")
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods == {
        "name": "pods",
        "singularName": "pod",
        "namespaced": True,
        "kind": "Pod",
        "verbs": [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
        "shortNames": ["po"],
    }
    assert any(r["name"] == "pods/status" for r in core["resources"])
    _, groups, _ = await api.call("GET", "/apis")
    names = [g["name"] for g in groups["groups"]]
    assert "apps" in names
    assert "coordination.k8s.io" in names
    _, apps, _ = await api.call("GET", "/apis/apps/v1")
    assert apps["groupVersion"] == "apps/v1"
    assert "deployments" in [r["name"] for r in apps["resources"]]
    _, version, _ = await api.call("GET", "/version")
    assert version["major"] == "1"
    assert version["gitVersion"].startswith("v1.")


async def test_registered_crd_is_served_and_discoverable(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.register_crd("example.com", "v1", "widgets", "Widget")
    fake_apiserver.register_crd(
        "example.com", "v1", "clusterwidgets", "ClusterWidget", namespaced=False
    )
    base = "/apis/example.com/v1"
    code, created, _ = await api.call(
        "POST",
        base + "/namespaces/default/widgets",
        body={"metadata": {"name": "w"}, "spec": {"size": 1}},
    )
    assert code == 201
    assert created["apiVersion"] == "example.com/v1"
    assert created["kind"] == "Widget"
    code, _, _ = await api.call("POST", base + "/clusterwidgets", body={"metadata": {"name": "c"}})
    assert code == 201
    _, listed, _ = await api.call("GET", base + "/widgets")
    assert listed["kind"] == "WidgetList"
    _, discovery, _ = await api.call("GET", base)
    assert {r["name"]: r["namespaced"] for r in discovery["resources"]} == {
        "widgets": True,
        "widgets/status": True,
        "clusterwidgets": False,
        "clusterwidgets/status": False,
    }
    _, groups, _ = await api.call("GET", "/apis")
    assert "example.com" in [g["name"] for g in groups["groups"]]


# -- authentication and authorization ---------------------------------------------------------


async def test_missing_or_unknown_token_answers_401(api: Api) -> None:
    for token in (None, "wrong"):
        code, body, _ = await api.call("GET", PODS, token=token)
        assert code == 401
        assert body == status(401, "Unauthorized", "Unauthorized")


async def test_token_rules_allow_and_forbid_like_rbac(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.add_token(
        "reader",
        user="system:serviceaccount:default:reader",
        rules=[Rule(verbs=["list", "watch", "get"], resources=["pods"], namespaces=["default"])],
    )
    code, _, _ = await api.call("GET", PODS, token="reader")
    assert code == 200
    code, body, _ = await api.call("GET", "/api/v1/namespaces/kube-system/pods", token="reader")
    assert code == 403
    assert body == status(
        403,
        "Forbidden",
        'pods is forbidden: User "system:serviceaccount:default:reader" cannot list resource '
        '"pods" in API group "" in the namespace "kube-system"',
        {"kind": "pods"},
    )
    code, body, _ = await api.call("GET", "/api/v1/pods", token="reader")
    assert code == 403
    assert body["message"].endswith("at the cluster scope")
    code, body, _ = await api.call("POST", PODS, body=pod("x"), token="reader")
    assert code == 403
    assert 'cannot create resource "pods"' in body["message"]
    code, body, _ = await api.call(
        "GET", "/apis/apps/v1/namespaces/default/deployments/d", token="reader"
    )
    assert code == 403
    assert body["message"].startswith('deployments.apps "d" is forbidden')
    assert body["details"] == {"name": "d", "group": "apps", "kind": "deployments"}


async def test_request_log_records_method_path_query_and_user(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    await api.call("GET", PODS, params={"limit": "5"})
    record = fake_apiserver.request_log[-1]
    assert (record.method, record.path, dict(record.query), record.user) == (
        "GET",
        PODS,
        {"limit": "5"},
        "system:admin",
    )


# -- direct API and lifecycle -------------------------------------------------------------------


async def test_direct_api_raises_the_library_errors(fake_apiserver: FakeAPIServer) -> None:
    created = fake_apiserver.create(pod("a"))
    with pytest.raises(AlreadyExists):
        fake_apiserver.create(pod("a"))
    stale = dict(created)
    fake_apiserver.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(Conflict):
        fake_apiserver.update(stale)
    assert fake_apiserver.get("pods", "default", "a")["metadata"]["labels"] == {"x": "1"}
    fake_apiserver.delete("pods", "default", "a")
    with pytest.raises(NotFound):
        fake_apiserver.get("pods", "default", "a")


async def test_objects_returns_copies_of_the_truth(fake_apiserver: FakeAPIServer) -> None:
    fake_apiserver.create(pod("a"))
    objects = fake_apiserver.objects("v1/pods")
    objects[0]["metadata"]["name"] = "mutated"
    assert [o["metadata"]["name"] for o in fake_apiserver.objects("pods", "default")] == ["a"]
    assert fake_apiserver.objects("pods", "elsewhere") == []
    names = [o["metadata"]["name"] for o in fake_apiserver.objects("namespaces")]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]


@pytest.mark.parametrize("name", ["deployments", "deployments.apps", "apps/v1/deployments"])
def test_resolve_accepts_plural_qualified_and_group_version_names(name: str) -> None:
    server = FakeAPIServer()
    assert server.resolve(name).kind == "Deployment"
    with pytest.raises(UnknownResourceError, match="gadgets"):
        server.resolve("gadgets")


def read_yaml(path: str) -> Any:
    with open(path) as handle:
        return yaml.safe_load(handle)


def exists(path: str) -> bool:
    return os.path.exists(path)


async def test_kubeconfig_points_at_the_server_and_is_removed_on_exit() -> None:
    async with FakeAPIServer() as server:
        path = server.kubeconfig_path()
        config = read_yaml(path)
        assert config["clusters"][0]["cluster"]["server"] == server.url
        assert config["users"][0]["user"]["token"] == ADMIN_TOKEN
        assert config["current-context"] == config["contexts"][0]["name"]
    assert not exists(path)


async def test_restart_keeps_objects_and_the_port(api: Api, fake_apiserver: FakeAPIServer) -> None:
    fake_apiserver.create(pod("a"))
    port = fake_apiserver.port
    await fake_apiserver.restart()
    assert fake_apiserver.port == port
    code, body, _ = await api.call("GET", PODS + "/a")
    assert code == 200
    assert body["metadata"]["name"] == "a"
    assert fake_apiserver.faults.count("restart") == 1


@pytest.mark.fake_apiserver(history_size=3)
async def test_marker_options_configure_the_fixture(
    fake_apiserver: FakeAPIServer, api: Api
) -> None:
    for i in range(4):
        fake_apiserver.create(pod(f"p{i}"))
    first_rv = int(fake_apiserver.resource_version) - 3
    code, _, _ = await api.call(
        "GET", PODS, params={"resourceVersion": str(first_rv - 1), "resourceVersionMatch": "Exact"}
    )
    assert code == 410
    code, _, _ = await api.call(
        "GET", PODS, params={"resourceVersion": str(first_rv), "resourceVersionMatch": "Exact"}
    )
    assert code == 200


# -- storage invariants -----------------------------------------------------------------------

OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["create", "update", "delete"]), st.sampled_from("abcd")),
    max_size=40,
)


def apply_operation(store: Store, rt: ResourceType, operation: str, name: str) -> Entry:
    obj = {"metadata": {"name": name, "namespace": "ns"}, "data": {"op": operation}}
    if operation == "create":
        return store.create(rt, obj)
    if operation == "update":
        return store.update(rt, obj)
    return store.delete(rt, "ns", name)


def open_plain_watch(store: Store, rt: ResourceType, rv: int) -> Watcher:
    return store.open_watch(
        rt,
        namespace=None,
        label_selector=None,
        field_selector=None,
        resource_version=str(rv),
        initial_events=False,
        initial_events_end=False,
    )


@settings(max_examples=60, deadline=None)
@given(operations=OPERATIONS, history_size=st.integers(min_value=1, max_value=50))
def test_snapshots_and_watch_replays_agree_with_every_recorded_state(
    operations: list[tuple[str, str]], history_size: int
) -> None:
    store = Store(history_size=history_size)
    store.require_namespaces = False  # the store alone: no namespace objects in it
    rt = FakeAPIServer().resolve("configmaps")
    states: dict[int, dict[str, int]] = {0: {}}
    current: dict[str, int] = {}
    for operation, name in operations:
        exists = f"ns/{name}" in current
        if exists == (operation == "create"):
            with pytest.raises(StatusError) as caught:
                apply_operation(store, rt, operation, name)
            assert caught.value.code == (409 if exists else 404)
            continue
        entry = apply_operation(store, rt, operation, name)
        if operation == "delete":
            current.pop(f"ns/{name}")
        else:
            current[f"ns/{name}"] = entry.rv
        states[store.rv] = dict(current)
    assert len(store.history) <= history_size
    for rv, state in states.items():
        if rv < store.compacted_rv:
            if rv:  # "0" means "any version" to a watch, never too old
                with pytest.raises(StatusError) as caught:
                    open_plain_watch(store, rt, rv)
                assert caught.value.code == 410
            continue
        keys, entries = store.snapshot(rt, rv)
        assert dict(zip(keys, (e.rv for e in entries), strict=True)) == state
        if not rv:
            continue
        # Replaying the watch from rv onto that state reaches the current state.
        watcher = open_plain_watch(store, rt, rv)
        replayed = dict(state)
        for line in watcher.buffer:
            event = orjson.loads(line)
            meta = event["object"]["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            if event["type"] == "DELETED":
                replayed.pop(key)
            else:
                replayed[key] = int(meta["resourceVersion"])
        store.close_watch(watcher)
        assert replayed == current


async def test_repr_shows_url_state_and_version(fake_apiserver: FakeAPIServer) -> None:
    text = repr(fake_apiserver)
    assert text.startswith(f"<FakeAPIServer {fake_apiserver.url} listening rv=")
    await fake_apiserver.faults.refuse_connections()
    assert "not listening" in repr(fake_apiserver)
