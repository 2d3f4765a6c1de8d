"""CustomResourceDefinitions on the fake API server: creating one serves the resource it
defines, as kube-apiserver v1.36 does (validated, defaulted, its status written, its
served versions in discovery); updating it changes the versions served; deleting it
removes the resource's objects, ends its watches and stops serving it. A client that
resolved names before the definition existed finds the new resource without restarting.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import ApiError, NotFound, UnknownResourceError, UnprocessableEntity
from aioinformer.listwatch import ListOptions
from aioinformer.testing import FakeAPIServer, ThreadedFakeAPIServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import Client

CRDS = "apiextensions.k8s.io/v1/customresourcedefinitions"
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
STORAGE = "must have exactly one version marked as storage version"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
    "with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name', "
    " or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


SCHEMA = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
"""A schema that keeps every field (the instances here carry fields of their own)."""
SCHEMAS_REQUIRED = "Required value: schemas are required"


def version(
    name: str, *, served: bool = True, storage: bool = False, **more: Any
) -> dict[str, Any]:
    """A version of the definition, with :data:`SCHEMA`."""
    return {"name": name, "served": served, "storage": storage, "schema": SCHEMA, **more}


def widget_crd(**spec: Any) -> dict[str, Any]:
    """The definition of ``widgets.example.com`` (``v1``, namespaced, with status), with
    ``spec`` fields replaced."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": SCHEMA,
                    "subresources": {"status": {}},
                }
            ],
            **spec,
        },
    }


def widget(name: str, api_version: str = "example.com/v1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeAPIServer, Client]]:
    async with FakeAPIServer() as server, server.client() as client:
        yield server, client


async def test_a_definition_created_over_http_is_established_and_serves_its_resource(
    served: tuple[FakeAPIServer, Client],
) -> None:
    server, client = served
    # Resolved before the definition exists: the client's discovery is loaded now.
    with pytest.raises(UnknownResourceError):
        await client.resolve("widgets")
    created = await client.resource(CRDS).create(widget_crd())

    assert created["spec"]["names"] == {
        "plural": "widgets",
        "kind": "Widget",
        "shortNames": ["wd"],
        "singular": "widget",
        "listKind": "WidgetList",
    }
    assert created["spec"]["conversion"] == {"strategy": "None"}
    assert created["spec"]["versions"][0]["schema"] == SCHEMA
    status = created["status"]
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        ("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
    ]
    assert all(c["lastTransitionTime"] for c in status["conditions"])
    assert status["acceptedNames"] == created["spec"]["names"]
    assert status["storedVersions"] == ["v1"]
    listed = await client.resource("crds").list()
    assert [item["metadata"]["name"] for item in listed.items] == ["widgets.example.com"]

    # Both names resolve through the refreshed discovery, without a new client.
    for name in ("example.com/v1/widgets", "widgets", "wd", "widget"):
        info = await client.resolve(name)
        assert (info.kind, info.namespaced, info.subresources) == ("Widget", True, ("status",))
    widgets = client.resource("widgets", namespace="default")
    await widgets.create(widget("a", size=1))
    assert [item["metadata"]["name"] for item in (await widgets.list()).items] == ["a"]
    assert server.objects("widgets")[0]["metadata"]["generation"] == 1


async def test_discovery_lists_every_served_version_with_the_definitions_names(
    served: tuple[FakeAPIServer, Client],
) -> None:
    server, client = served
    v1beta1 = version("v1beta1")
    unserved = version("v1alpha1", served=False)
    versions = [*widget_crd()["spec"]["versions"], v1beta1, unserved]
    server.create(widget_crd(versions=versions, scope="Cluster"))

    group = await client.request("GET", "/apis/example.com")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1"
    resources = (await client.request("GET", "/apis/example.com/v1"))["resources"]
    assert resources == [
        {
            "name": "widgets",
            "singularName": "widget",
            "namespaced": False,
            "kind": "Widget",
            "verbs": VERBS,
            "shortNames": ["wd"],
        },
        {
            "name": "widgets/status",
            "singularName": "",
            "namespaced": False,
            "kind": "Widget",
            "verbs": ["get", "patch", "update"],
        },
    ]
    beta = (await client.request("GET", "/apis/example.com/v1beta1"))["resources"]
    assert [r["name"] for r in beta] == ["widgets"]  # its own subresources: none
    aggregated = await client.request("GET", "/apis", accept=AGGREGATED)
    (entry,) = [g for g in aggregated["items"] if g["metadata"]["name"] == "example.com"]
    assert [v["version"] for v in entry["versions"]] == ["v1", "v1beta1"]
    assert entry["versions"][0]["resources"][0]["scope"] == "Cluster"
    with pytest.raises(NotFound):
        await client.request("GET", "/apis/example.com/v1alpha1/widgets")

    # The versions share one store: written at one, read at the other as that version.
    server.create({**widget("a", "example.com/v1beta1"), "metadata": {"name": "a"}})
    (item,) = (await client.resource("example.com/v1/widgets").list()).items
    assert item["apiVersion"] == "example.com/v1"


async def test_a_watch_sees_custom_objects_then_their_deletion_and_ends_with_the_definition(
    served: tuple[FakeAPIServer, Client],
) -> None:
    server, client = served
    server.create(widget_crd())
    server.create(widget("a"))
    widgets = client.resource("example.com/v1/widgets", namespace="default")
    events: list[tuple[str, str]] = []

    async def consume() -> None:
        async with contextlib.aclosing(widgets.watch(ListOptions())) as stream:
            async for event in stream:
                events.append((event.type, event.object["metadata"]["name"]))

    watching = asyncio.create_task(consume())
    await server.wait_for_watchers(1, resource="widgets")
    server.create(widget("b"))
    server.delete("customresourcedefinitions", None, "widgets.example.com")
    async with asyncio.timeout(5):
        await watching  # the stream ended: the resource is gone
    # A watch from no resourceVersion starts with the state, as kube-apiserver's does.
    assert events == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a"), ("DELETED", "b")]

    assert server.objects("customresourcedefinitions") == []
    with pytest.raises(UnknownResourceError):
        server.objects("widgets")
    with pytest.raises(NotFound) as refused:
        await client.request("GET", "/apis/example.com/v1/namespaces/default/widgets")
    assert refused.value.status["details"] == {}  # as for a resource never served
    assert "example.com" not in [
        g["name"] for g in (await client.request("GET", "/apis"))["groups"]
    ]

    # A definition made again serves the resource anew, empty.
    await client.resource(CRDS).create(widget_crd())
    assert (await client.resource("widgets", namespace="default").list()).items == []


async def test_a_definition_deleted_over_http_removes_its_resource(
    served: tuple[FakeAPIServer, Client],
) -> None:
    server, client = served
    await client.resource(CRDS).create(widget_crd())
    await client.resource("widgets", namespace="default").create(widget("a"))
    await client.resource(CRDS).delete("widgets.example.com")
    with pytest.raises(NotFound):
        await client.resource(CRDS).get("widgets.example.com")
    with pytest.raises(UnknownResourceError):
        server.resolve("widgets")


async def test_a_definition_held_by_a_finalizer_stops_serving_when_marked(
    served: tuple[FakeAPIServer, Client],
) -> None:
    server, _ = served
    crd = widget_crd()
    crd["metadata"]["finalizers"] = ["example.com/hold"]
    server.create(crd)
    server.create(widget("a"))
    marked = server.delete("customresourcedefinitions", None, "widgets.example.com")
    assert marked["metadata"]["deletionTimestamp"]
    with pytest.raises(UnknownResourceError):
        server.resolve("widgets")
    server.patch(
        "customresourcedefinitions", None, "widgets.example.com", {"metadata": {"finalizers": []}}
    )
    assert server.objects("customresourcedefinitions") == []


async def test_an_object_with_a_finalizer_keeps_its_definition_terminating_until_cleared(
    served: tuple[FakeAPIServer, Client],
) -> None:
    server, client = served
    server.create(widget_crd())
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/cleanup"]
    server.create(held)
    server.create(widget("free"))
    await client.resource(CRDS).delete("widgets.example.com")

    crd = server.get("customresourcedefinitions", None, "widgets.example.com")
    assert crd["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    terminating = crd["status"]["conditions"][-1]
    assert (terminating["type"], terminating["status"], terminating["reason"]) == (
        "Terminating",
        "True",
        "InstanceDeletionInProgress",
    )
    # Still served, for the object's controller to clear its finalizer; no new objects.
    widgets = client.resource("widgets", namespace="default")
    (left,) = (await widgets.list()).items
    assert left["metadata"]["name"] == "held"
    assert left["metadata"]["deletionTimestamp"]
    with pytest.raises(ApiError) as refused:
        await widgets.create(widget("new"))
    assert (refused.value.code, refused.value.reason) == (405, "MethodNotAllowed")
    assert refused.value.message == (
        "create not allowed while custom resource definition is terminating"
    )

    await widgets.patch("held", {"metadata": {"finalizers": None}})
    assert server.objects("customresourcedefinitions") == []
    with pytest.raises(NotFound):
        await client.request("GET", "/apis/example.com/v1/widgets")


async def test_an_update_adds_and_withdraws_served_versions(
    served: tuple[FakeAPIServer, Client],
) -> None:
    server, client = served
    created = server.create(widget_crd())
    first = created["status"]["conditions"][0]["lastTransitionTime"]
    server.create(widget("a"))
    v2 = version("v2", storage=True)
    v1 = version("v1")
    updated = server.patch(
        "customresourcedefinitions", None, "widgets.example.com", {"spec": {"versions": [v1, v2]}}
    )
    assert updated["status"]["storedVersions"] == ["v1", "v2"]
    assert updated["status"]["conditions"][0]["lastTransitionTime"] == first
    (item,) = (await client.resource("example.com/v2/widgets").list()).items
    assert (item["apiVersion"], item["metadata"]["name"]) == ("example.com/v2", "a")
    # v2 has no status subresource: writes there change the status.
    assert (await client.resolve("example.com/v2/widgets")).subresources == ()

    withdrawn = {**v1, "served": False}
    server.patch(
        "customresourcedefinitions",
        None,
        "widgets.example.com",
        {"spec": {"versions": [withdrawn, v2]}},
    )
    with pytest.raises(NotFound):
        await client.request("GET", "/apis/example.com/v1/widgets")
    assert [r["metadata"]["name"] for r in server.objects("example.com/v2/widgets")] == ["a"]
    group = await client.request("GET", "/apis/example.com")
    assert [v["version"] for v in group["versions"]] == ["v2"]


def refusal(crd: dict[str, Any]) -> list[tuple[str, str, str]]:
    server = FakeAPIServer()
    with pytest.raises(UnprocessableEntity) as refused:
        server.create(crd)
    assert server.objects("customresourcedefinitions") == []
    assert refused.value.reason == "Invalid"
    details = refused.value.details
    assert (details["name"], details["group"], details["kind"]) == (
        crd["metadata"]["name"],
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
    )
    return [(c["reason"], c["field"], c["message"]) for c in details["causes"]]


def with_spec(path: str, value: Any) -> dict[str, Any]:
    """The widget definition with the spec field at dotted ``path`` set (``None``:
    removed)."""
    crd = copy.deepcopy(widget_crd())
    *parents, last = path.split(".")
    target = crd["spec"]
    for part in parents:
        target = target[part]
    if value is None:
        del target[last]
    else:
        target[last] = value
    return crd


@pytest.mark.parametrize(
    ("crd", "causes"),
    [
        pytest.param(
            {**widget_crd(), "metadata": {"name": "gadgets.example.com"}},
            [
                (
                    "FieldValueInvalid",
                    "metadata.name",
                    'Invalid value: "gadgets.example.com": must be spec.names.plural+"."'
                    "+spec.group",
                )
            ],
            id="name",
        ),
        pytest.param(
            {**with_spec("group", "example"), "metadata": {"name": "widgets.example"}},
            [
                (
                    "FieldValueInvalid",
                    "spec.group",
                    'Invalid value: "example": should be a domain with at least one dot',
                )
            ],
            id="group-without-dot",
        ),
        pytest.param(
            {**with_spec("group", ""), "metadata": {"name": "widgets"}},
            [
                (
                    "FieldValueInvalid",
                    "metadata.name",
                    'Invalid value: "widgets": must be spec.names.plural+"."+spec.group',
                ),
                ("FieldValueRequired", "spec.group", "Required value"),
            ],
            id="no-group",
        ),
        pytest.param(
            with_spec("scope", "Global"),
            [
                (
                    "FieldValueNotSupported",
                    "spec.scope",
                    'Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
                )
            ],
            id="scope",
        ),
        pytest.param(
            with_spec("names.kind", None),
            [
                ("FieldValueRequired", "spec.names.singular", "Required value"),
                ("FieldValueRequired", "spec.names.kind", "Required value"),
                ("FieldValueRequired", "spec.names.listKind", "Required value"),
            ],
            id="no-kind",
        ),
        pytest.param(
            with_spec("versions", []),
            [("FieldValueInvalid", "spec.versions", f"Invalid value: []: {STORAGE}")],
            id="no-versions",
        ),
        pytest.param(
            with_spec("versions", [{"name": "v1", "served": True, "storage": False}]),
            [
                (
                    "FieldValueInvalid",
                    "spec.versions",
                    'Invalid value: [{"name":"v1","served":true,"storage":false}]: ' + STORAGE,
                ),
                (
                    "FieldValueRequired",
                    "spec.versions[0].schema.openAPIV3Schema",
                    SCHEMAS_REQUIRED,
                ),
            ],
            id="no-storage-version",
        ),
        pytest.param(
            with_spec(
                "versions",
                [
                    {"name": "v1", "served": True, "storage": True},
                    {"name": "v1", "served": True, "storage": False},
                ],
            ),
            [
                (
                    "FieldValueInvalid",
                    "spec.versions",
                    'Invalid value: [{"name":"v1","served":true,"storage":true},{"name":"v1",'
                    '"served":true,"storage":false}]: must contain unique version names',
                ),
                ("FieldValueRequired", "spec.versions[0].schema.openAPIV3Schema", SCHEMAS_REQUIRED),
                ("FieldValueRequired", "spec.versions[1].schema.openAPIV3Schema", SCHEMAS_REQUIRED),
            ],
            id="duplicate-versions",
        ),
        pytest.param(
            with_spec("versions", [{"name": "V1", "served": True, "storage": True}]),
            [
                ("FieldValueInvalid", "spec.versions[0].name", f'Invalid value: "V1": {DNS1035}'),
                ("FieldValueRequired", "spec.versions[0].schema.openAPIV3Schema", SCHEMAS_REQUIRED),
            ],
            id="version-name",
        ),
        pytest.param(
            with_spec(
                "versions",
                [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "subresources": {"scale": {"specReplicasPath": ".status.replicas"}},
                    }
                ],
            ),
            [
                (
                    "FieldValueInvalid",
                    "spec.versions[0].subresources.scale.specReplicasPath",
                    'Invalid value: ".status.replicas": should be a json path under .spec',
                ),
                (
                    "FieldValueRequired",
                    "spec.versions[0].subresources.scale.statusReplicasPath",
                    "Required value",
                ),
                ("FieldValueRequired", "spec.versions[0].schema.openAPIV3Schema", SCHEMAS_REQUIRED),
            ],
            id="scale-paths",
        ),
    ],
)
def test_an_invalid_definition_is_refused_with_kube_apiservers_causes(
    crd: dict[str, Any], causes: list[tuple[str, str, str]]
) -> None:
    assert refusal(crd) == causes


async def test_an_invalid_definition_over_http_answers_422_invalid(
    served: tuple[FakeAPIServer, Client],
) -> None:
    _, client = served
    with pytest.raises(UnprocessableEntity) as refused:
        await client.resource(CRDS).create(with_spec("scope", None))
    assert refused.value.status["code"] == 422
    assert refused.value.message == (
        'CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: '
        "spec.scope: Required value"
    )
    assert refused.value.details["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.scope"}
    ]


def test_a_plural_served_already_is_refused_and_immutable_fields_stay() -> None:
    server = FakeAPIServer()
    server.register_crd("example.com", "v1", "widgets", "Widget")
    with pytest.raises(UnprocessableEntity, match=r"already served in API group 'example\.com'"):
        server.create(widget_crd())

    other = FakeAPIServer()
    other.create(widget_crd())
    with pytest.raises(UnprocessableEntity) as refused:
        other.patch(
            "customresourcedefinitions",
            None,
            "widgets.example.com",
            {"spec": {"scope": "Cluster", "group": "a.b"}},
        )
    fields = [c["field"] for c in refused.value.details["causes"]]
    assert "spec.scope" in fields
    assert "spec.group" in fields
    assert other.resolve("widgets").namespaced


async def test_the_scale_subresource_reads_and_writes_the_definitions_paths(
    served: tuple[FakeAPIServer, Client],
) -> None:
    server, client = served
    scale = {
        "specReplicasPath": ".spec.size",
        "statusReplicasPath": ".status.ready",
        "labelSelectorPath": ".status.selector",
    }
    scaled = version("v1", storage=True, subresources={"scale": scale})
    server.create(widget_crd(versions=[scaled]))
    server.create({**widget("a", size=2), "status": {"ready": 1, "selector": "app=a"}})
    path = "/apis/example.com/v1/namespaces/default/widgets/a/scale"
    got = await client.request("GET", path)
    assert (got["spec"], got["status"]) == ({"replicas": 2}, {"replicas": 1, "selector": "app=a"})
    await client.request(
        "PATCH",
        path,
        json={"spec": {"replicas": 5}},
        content_type="application/merge-patch+json",
    )
    assert server.get("widgets", "default", "a")["spec"] == {"size": 5}


def test_the_threaded_fake_installs_a_definition_it_is_given() -> None:
    with ThreadedFakeAPIServer() as fake:
        fake.create(widget_crd())
        fake.create(widget("a"))
        assert [w["metadata"]["name"] for w in fake.objects("widgets")] == ["a"]
        fake.delete("customresourcedefinitions", None, "widgets.example.com")
        with pytest.raises(UnknownResourceError):
            fake.objects("widgets")
