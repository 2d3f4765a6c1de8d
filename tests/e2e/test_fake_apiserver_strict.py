"""The fake API server refuses what kube-apiserver v1.36 refuses, with the same status code,
``reason`` and ``details``: checked on the wire (raw HTTP), through the aioinformer Client
(typed errors) and through the server's direct calls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest

from aioinformer.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    MethodNotAllowed,
    NotFound,
    Unauthorized,
    UnknownResourceError,
    UnprocessableEntity,
)
from aioinformer.listwatch import ListOptions
from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer
from tests._support_http import Api, status_body
from tests._support_objects import deployment, pod_spec

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
KUBECTL = "kubectl/v1.36.2 (linux/amd64) kubernetes/abcdef"
SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')"
)
LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


class Wire(Api):
    """:class:`Api` as kubectl would call: (status, decoded body) per call."""

    async def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        code, decoded, _ = await self.call(
            method, path, body=body, raw=raw, content_type=content_type, user_agent=KUBECTL
        )
        return code, decoded


@pytest.fixture
async def wire(fake_apiserver: FakeAPIServer) -> AsyncIterator[Wire]:
    async with aiohttp.ClientSession() as session:
        yield Wire(session, fake_apiserver.url)


def configmap(name: str | None, namespace: str = "default", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": namespace}
    if name is not None:
        meta["name"] = name
    meta.update(extra.pop("meta", {}))
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, **extra}


# -- 422 Invalid ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        pytest.param("Bad_Name", SUBDOMAIN_RULE, id="uppercase-and-underscore"),
        pytest.param("a b", SUBDOMAIN_RULE, id="space"),
        pytest.param("a" * 300, "must be no more than 253 characters", id="300-characters"),
        pytest.param("-leading-dash", SUBDOMAIN_RULE, id="leading-dash"),
    ],
)
async def test_an_invalid_configmap_name_is_refused_with_422_field_value_invalid(
    wire: Wire, name: str, rule: str
) -> None:
    code, body = await wire.send("POST", CONFIGMAPS, configmap(name))
    cause = f"Invalid value: {orjson.dumps(name).decode()}: {rule}"
    assert code == 422
    assert body == status_body(
        422,
        "Invalid",
        f'ConfigMap "{name}" is invalid: metadata.name: {cause}',
        name=name,
        kind="ConfigMap",
        causes=[{"reason": "FieldValueInvalid", "message": cause, "field": "metadata.name"}],
    )


async def test_a_name_that_is_both_too_long_and_malformed_gets_one_cause_per_rule(
    wire: Wire,
) -> None:
    name = "A" * 254
    code, body = await wire.send("POST", CONFIGMAPS, configmap(name))
    assert code == 422
    causes = body["details"]["causes"]
    assert [cause["message"].rsplit(": ", 1)[-1] for cause in causes] == [
        "must be no more than 253 characters",
        SUBDOMAIN_RULE.rsplit(": ", 1)[-1],
    ]
    assert body["message"].startswith(f'ConfigMap "{name}" is invalid: [metadata.name: ')


async def test_a_namespace_name_must_be_a_dns_label_not_a_subdomain(wire: Wire) -> None:
    namespace: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "a.b"},
    }
    code, body = await wire.send("POST", "/api/v1/namespaces", namespace)
    assert code == 422
    assert body["details"] == {
        "name": "a.b",
        "kind": "Namespace",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "a.b": must not contain dots',
                "field": "metadata.name",
            }
        ],
    }
    namespace["metadata"]["name"] = "Team_A"
    code, body = await wire.send("POST", "/api/v1/namespaces", namespace)
    assert code == 422
    assert body["details"]["causes"][0]["message"] == f'Invalid value: "Team_A": {LABEL_RULE}'


@pytest.mark.parametrize(
    ("path", "kind", "group", "obj"),
    [
        pytest.param(
            "/api/v1/namespaces/default/pods",
            "Pod",
            None,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "Bad_Pod"},
                "spec": pod_spec(),
            },
            id="pod",
        ),
        pytest.param(
            "/apis/apps/v1/namespaces/default/deployments",
            "Deployment",
            "apps",
            {**deployment("web"), "metadata": {"name": "Bad_Deploy"}},
            id="deployment",
        ),
    ],
)
async def test_invalid_names_of_other_kinds_name_their_kind_and_group(
    wire: Wire, path: str, kind: str, group: str | None, obj: dict[str, Any]
) -> None:
    code, body = await wire.send("POST", path, obj)
    name = obj["metadata"]["name"]
    assert code == 422
    assert body["reason"] == "Invalid"
    qualified = f"{kind}.{group}" if group else kind
    assert body["message"].startswith(f'{qualified} "{name}" is invalid: metadata.name: ')
    expected = {"name": name, "kind": kind}
    if group:
        expected["group"] = group
    assert {k: v for k, v in body["details"].items() if k != "causes"} == expected


async def test_a_missing_name_without_generate_name_is_field_value_required(wire: Wire) -> None:
    code, body = await wire.send("POST", CONFIGMAPS, configmap(None))
    message = "Required value: name or generateName is required"
    assert code == 422
    assert body == status_body(
        422,
        "Invalid",
        f'ConfigMap "" is invalid: metadata.name: {message}',
        kind="ConfigMap",
        causes=[{"reason": "FieldValueRequired", "message": message, "field": "metadata.name"}],
    )


async def test_generate_name_still_creates_a_valid_name(wire: Wire) -> None:
    code, body = await wire.send(
        "POST", CONFIGMAPS, configmap(None, meta={"generateName": "settings-"})
    )
    assert code == 201
    assert body["metadata"]["name"].startswith("settings-")
    assert len(body["metadata"]["name"]) == len("settings-") + 5


@pytest.mark.parametrize(
    ("labels", "value", "rule"),
    [
        pytest.param({"app": "has space"}, "has space", LABEL_VALUE_RULE, id="value-space"),
        pytest.param({"app": "x" * 64}, "x" * 64, "must be no more than 63 bytes", id="long"),
        pytest.param(
            {"bad key": "v"},
            "bad key",
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
            "[A-Za-z0-9]')",
            id="key-space",
        ),
        pytest.param(
            {"Example.com/app": "v"},
            "Example.com/app",
            "prefix part " + SUBDOMAIN_RULE,
            id="key-prefix-uppercase",
        ),
    ],
)
async def test_an_invalid_label_is_refused_with_422_on_metadata_labels(
    wire: Wire, labels: dict[str, str], value: str, rule: str
) -> None:
    code, body = await wire.send("POST", CONFIGMAPS, configmap("ok", meta={"labels": labels}))
    cause = f"Invalid value: {orjson.dumps(value).decode()}: {rule}"
    assert code == 422
    assert body["message"] == f'ConfigMap "ok" is invalid: metadata.labels: {cause}'
    assert body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": cause, "field": "metadata.labels"}
    ]


async def test_an_update_that_sets_an_invalid_label_is_refused(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(configmap("cfg"))
    current = fake_apiserver.get("configmaps", "default", "cfg")
    current["metadata"]["labels"] = {"app": "-bad-"}
    code, body = await wire.send("PUT", CONFIGMAPS + "/cfg", current)
    assert code == 422
    assert body["details"]["causes"][0]["field"] == "metadata.labels"
    code, body = await wire.send(
        "PATCH",
        CONFIGMAPS + "/cfg",
        {"metadata": {"labels": {"app": "-bad-"}}},
        content_type="application/merge-patch+json",
    )
    assert (code, body["reason"]) == (422, "Invalid")
    assert "labels" not in fake_apiserver.get("configmaps", "default", "cfg")["metadata"]


# -- 400 BadRequest ------------------------------------------------------------------------


async def test_a_pod_posted_to_the_configmaps_path_is_a_bad_request(wire: Wire) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    code, body = await wire.send("POST", CONFIGMAPS, pod)
    assert code == 400
    assert body == status_body(
        400,
        "BadRequest",
        'Pod in version "v1" cannot be handled as a ConfigMap: converting (v1.Pod) to '
        "(ConfigMap): unknown conversion",
    )


async def test_a_non_string_label_value_is_the_decoders_bad_request(wire: Wire) -> None:
    code, body = await wire.send("POST", CONFIGMAPS, configmap("cfg", meta={"labels": {"n": 3}}))
    assert code == 400
    assert body == status_body(
        400,
        "BadRequest",
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "number into Go struct field ObjectMeta.metadata.labels of type string",
    )


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        pytest.param("text", "cannot unmarshal string into Go struct field ConfigMap.data "
                     "of type map[string]string", id="string"),
        pytest.param(["a"], "cannot unmarshal array into Go struct field ConfigMap.data "
                     "of type map[string]string", id="list"),
        pytest.param({"a": 1}, "cannot unmarshal number into Go struct field ConfigMap.data "
                     "of type string", id="number-value"),
        pytest.param({"a": {"b": "c"}}, "cannot unmarshal object into Go struct field "
                     "ConfigMap.data of type string", id="nested-map"),
    ],
)  # fmt: skip
async def test_configmap_data_that_is_not_a_map_of_strings_is_a_bad_request(
    wire: Wire, data: Any, complaint: str
) -> None:
    code, body = await wire.send("POST", CONFIGMAPS, configmap("cfg", data=data))
    assert code == 400
    assert body["reason"] == "BadRequest"
    assert body["message"] == (
        f'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: {complaint}'
    )


async def test_a_body_that_is_not_json_is_a_bad_request(wire: Wire) -> None:
    code, body = await wire.send("POST", CONFIGMAPS, raw=b"not json")
    assert code == 400
    assert body["reason"] == "BadRequest"
    assert body["message"].startswith(
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
        "version/kind; json parse error: "
    )
    assert body["message"].endswith(f"({b'not json'.hex()})")


async def test_a_put_whose_body_names_another_object_is_a_bad_request(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(configmap("one"))
    fake_apiserver.create(configmap("two"))
    code, body = await wire.send("PUT", CONFIGMAPS + "/one", configmap("two"))
    assert code == 400
    assert body == status_body(
        400,
        "BadRequest",
        "the name of the object (two) does not match the name on the URL (one)",
    )


# -- namespaces ----------------------------------------------------------------------------


async def test_a_create_in_a_namespace_that_does_not_exist_is_not_found(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    code, body = await wire.send(
        "POST", "/api/v1/namespaces/nowhere/configmaps", configmap("cfg", "nowhere")
    )
    assert code == 404
    assert body == status_body(
        404, "NotFound", 'namespaces "nowhere" not found', name="nowhere", kind="namespaces"
    )
    with pytest.raises(NotFound, match='namespaces "nowhere" not found'):
        fake_apiserver.create(configmap("cfg", "nowhere"))
    assert fake_apiserver.objects("configmaps", "nowhere") == []


async def test_the_cluster_namespaces_exist_from_the_start(fake_apiserver: FakeAPIServer) -> None:
    names = [ns["metadata"]["name"] for ns in fake_apiserver.objects("namespaces")]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    for namespace in names:
        fake_apiserver.create(configmap("cfg", namespace))


async def test_a_namespace_created_by_the_helper_or_over_http_admits_creates(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    created = fake_apiserver.create_namespace("team-a", labels={"team": "a"})
    assert created["metadata"]["labels"] == {"team": "a"}
    assert (
        fake_apiserver.create_namespace("team-a")["metadata"]["uid"] == (created["metadata"]["uid"])
    )  # idempotent
    fake_apiserver.create(configmap("cfg", "team-a"))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}}
    assert (await wire.send("POST", "/api/v1/namespaces", namespace))[0] == 201
    code, _ = await wire.send(
        "POST", "/api/v1/namespaces/team-b/configmaps", configmap("cfg", "team-b")
    )
    assert code == 201


async def test_a_namespace_being_deleted_or_gone_refuses_creates(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "leaving", "finalizers": ["example.com/hold"]},
        }
    )
    fake_apiserver.delete("namespaces", None, "leaving")
    code, body = await wire.send(
        "POST", "/api/v1/namespaces/leaving/configmaps", configmap("cfg", "leaving")
    )
    assert code == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'configmaps "cfg" is forbidden: unable to create new content in namespace leaving '
        "because it is being terminated"
    )
    assert body["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": "namespace leaving is being terminated",
            "field": "metadata.namespace",
        }
    ]
    fake_apiserver.patch("namespaces", None, "leaving", {"metadata": {"finalizers": None}})
    with pytest.raises(NotFound):
        fake_apiserver.create(configmap("cfg", "leaving"))


@pytest.mark.fake_apiserver(require_namespaces=False)
async def test_require_namespaces_false_admits_creates_anywhere(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    assert fake_apiserver.require_namespaces is False
    code, _ = await wire.send(
        "POST", "/api/v1/namespaces/anywhere/configmaps", configmap("cfg", "anywhere")
    )
    assert code == 201
    fake_apiserver.create(configmap("other", "elsewhere"))
    fake_apiserver.require_namespaces = True
    with pytest.raises(NotFound):
        fake_apiserver.create(configmap("third", "elsewhere"))


# -- 410 Expired ---------------------------------------------------------------------------


async def test_an_exact_list_at_a_compacted_resource_version_is_expired(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    old = fake_apiserver.create(configmap("cfg"))["metadata"]["resourceVersion"]
    fake_apiserver.create(configmap("cfg2"))
    fake_apiserver.compact()
    code, body = await wire.send(
        "GET", f"{CONFIGMAPS}?resourceVersion={int(old) - 1}&resourceVersionMatch=Exact"
    )
    assert code == 410
    assert body == status_body(
        410, "Expired", "The resourceVersion for the provided list is too old."
    )


async def test_a_watch_from_a_compacted_resource_version_gets_200_and_one_error_event(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(configmap("cfg"))
    fake_apiserver.create(configmap("cfg2"))
    fake_apiserver.compact()
    current = fake_apiserver.resource_version
    async with wire.session.get(
        f"{wire.url}{CONFIGMAPS}?watch=1&resourceVersion=1",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    ) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/json"
        # The whole body arrives: the server ends the stream after the one line.
        body = await resp.read()
    assert body.count(b"\n") == 1
    assert body.endswith(b"\n")
    assert orjson.loads(body) == {
        "type": "ERROR",
        "object": status_body(410, "Expired", f"too old resource version: 1 ({current})"),
    }
    assert fake_apiserver.watch_count == 0


async def test_the_client_raises_gone_for_a_watch_from_a_compacted_resource_version(
    fake_apiserver: FakeAPIServer,
) -> None:
    fake_apiserver.create(configmap("cfg"))
    fake_apiserver.compact()
    async with fake_apiserver.client() as client:
        stream = client.resource("configmaps", "default").watch(
            ListOptions(resource_version="1"), inactivity_timeout=5
        )
        with pytest.raises(Gone) as caught:
            async for _ in stream:
                pass
    assert caught.value.reason == "Expired"


@pytest.mark.fake_apiserver(expired_watch="status")
async def test_a_410_on_open_is_kept_as_an_option(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(configmap("cfg"))
    fake_apiserver.compact()
    current = fake_apiserver.resource_version
    code, body = await wire.send("GET", f"{CONFIGMAPS}?watch=1&resourceVersion=1")
    assert (code, body) == (
        410,
        status_body(410, "Expired", f"too old resource version: 1 ({current})"),
    )
    async with fake_apiserver.client() as client:
        stream = client.resource("configmaps", "default").watch(
            ListOptions(resource_version="1"), inactivity_timeout=5
        )
        with pytest.raises(Gone):
            async for _ in stream:
                pass


def test_an_unknown_expired_watch_option_is_refused() -> None:
    with pytest.raises(ValueError, match="expired_watch"):
        FakeAPIServer(expired_watch="event")  # type: ignore[arg-type]


# -- managedFields and generation ----------------------------------------------------------


async def test_managed_fields_are_set_on_create_and_updated_per_manager(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    code, created = await wire.send(
        "POST", CONFIGMAPS, configmap("cfg", data={"a": "1"}, meta={"labels": {"app": "x"}})
    )
    assert code == 201
    (entry,) = created["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl"
    assert entry["operation"] == "Update"
    assert entry["apiVersion"] == "v1"
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["time"].endswith("Z")
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:data": {".": {}, "f:a": {}},
    }
    async with fake_apiserver.client() as client:
        await client.resource("configmaps", "default").patch(
            "cfg", {"data": {"b": "2"}}, field_manager="my-operator"
        )
    got = fake_apiserver.get("configmaps", "default", "cfg")
    managers = [e["manager"] for e in got["metadata"]["managedFields"]]
    assert managers == ["kubectl", "my-operator"]
    assert got["metadata"]["managedFields"][1]["fieldsV1"]["f:data"] == {
        ".": {},
        "f:a": {},
        "f:b": {},
    }
    code, listed = await wire.send("GET", CONFIGMAPS)
    assert listed["items"][0]["metadata"]["managedFields"] == got["metadata"]["managedFields"]


async def test_a_status_write_is_recorded_with_its_subresource(
    wire: Wire, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(deployment("web"))
    current = fake_apiserver.get("deployments.apps", "default", "web")
    current["status"] = {"replicas": 1}
    code, body = await wire.send(
        "PUT", "/apis/apps/v1/namespaces/default/deployments/web/status", current
    )
    assert code == 200
    status_entry = body["metadata"]["managedFields"][-1]
    assert status_entry["subresource"] == "status"
    assert status_entry["fieldsV1"] == {"f:status": {".": {}, "f:replicas": {}}}


@pytest.mark.parametrize(
    ("api_version", "kind", "has_generation"),
    [
        pytest.param(api_version, kind, has, id=kind)
        for api_version, kind, has in (
            ("v1", "ConfigMap", False),
            ("v1", "Secret", False),
            ("v1", "Namespace", False),
            ("coordination.k8s.io/v1", "Lease", False),
            ("v1", "Pod", True),
            ("apps/v1", "Deployment", True),
        )
    ],
)
async def test_generation_is_set_only_for_kinds_that_have_one(
    fake_apiserver: FakeAPIServer, api_version: str, kind: str, has_generation: bool
) -> None:
    metadata = {"name": "obj"} if kind == "Namespace" else {"name": "obj", "namespace": "default"}
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    if kind == "Pod":
        obj["spec"] = pod_spec()
    elif kind == "Deployment":
        obj["spec"] = deployment("obj")["spec"]
    created = fake_apiserver.create(obj)
    assert ("generation" in created["metadata"]) is has_generation
    # A spec change, still valid where the kind has a validated spec.
    spec = {**created.get("spec", {}), "changed": True}
    updated = fake_apiserver.update(dict(created, spec=spec))
    assert updated["metadata"].get("generation") == (2 if has_generation else None)


# -- injected failures ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reason", "error"),
    [
        pytest.param(400, "BadRequest", BadRequest, id="400"),
        pytest.param(401, "Unauthorized", Unauthorized, id="401"),
        pytest.param(403, "Forbidden", Forbidden, id="403"),
        pytest.param(404, "NotFound", NotFound, id="404"),
        pytest.param(405, "MethodNotAllowed", MethodNotAllowed, id="405"),
        pytest.param(409, "Conflict", Conflict, id="409"),
        pytest.param(410, "Expired", Gone, id="410"),
        pytest.param(422, "Invalid", UnprocessableEntity, id="422"),
    ],
)
async def test_an_injected_failure_carries_the_reason_kube_gives_its_code(
    wire: Wire, fake_apiserver: FakeAPIServer, status: int, reason: str, error: type[ApiError]
) -> None:
    fake_apiserver.faults.fail_next(status=status, resource="configmaps")
    code, body = await wire.send("GET", CONFIGMAPS)
    assert (code, body["reason"], body["code"]) == (status, reason, status)
    fake_apiserver.faults.fail_next(status=status, resource="configmaps")
    async with fake_apiserver.client() as client:
        with pytest.raises(error) as caught:
            await client.resource("configmaps", "default").get("missing")
    assert type(caught.value) is error
    assert caught.value.reason == reason


async def test_an_injected_409_may_say_already_exists(fake_apiserver: FakeAPIServer) -> None:
    fake_apiserver.faults.fail_next(status=409, reason="AlreadyExists", resource="configmaps")
    async with fake_apiserver.client() as client:
        with pytest.raises(AlreadyExists):
            await client.resource("configmaps", "default").create(configmap("cfg"))


# -- direct calls ---------------------------------------------------------------------------


def test_direct_calls_raise_the_public_typed_errors() -> None:
    server = FakeAPIServer()
    with pytest.raises(UnprocessableEntity) as invalid:
        server.create(configmap("Bad_Name"))
    assert invalid.value.reason == "Invalid"
    assert invalid.value.details["causes"][0]["reason"] == "FieldValueInvalid"
    with pytest.raises(BadRequest):
        server.create(configmap("cfg", meta={"labels": {"n": 1}}))
    server.create(configmap("cfg"))
    with pytest.raises(AlreadyExists):
        server.create(configmap("cfg"))
    with pytest.raises(UnprocessableEntity):
        server.patch("configmaps", "default", "cfg", {"metadata": {"labels": {"a": "b c"}}})
    with pytest.raises(BadRequest):
        server.update(configmap("cfg", data="text"))
    with pytest.raises(BadRequest):
        server.update({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})


def test_an_unknown_kind_or_resource_raises_unknown_resource_error() -> None:
    server = FakeAPIServer()
    with pytest.raises(UnknownResourceError, match=r"example\.com/v1 Widget"):
        server.create({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}})
    with pytest.raises(UnknownResourceError, match="widgets"):
        server.get("widgets", "default", "w")
    with pytest.raises(UnknownResourceError):
        server.objects("widgets")
