"""The fake API server applies a CustomResourceDefinition's ``openAPIV3Schema`` as
kube-apiserver v1.36 does: a non-structural schema or a default that does not validate
refuses the definition; a custom object is pruned, defaulted and validated on create,
update and ``status`` writes, with kube-apiserver's 422 causes.

The cases follow apiextensions' ``structural`` validation, ``defaulting`` and
``pruning`` tests, written anew."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from aioinformer.errors import UnprocessableEntity
from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer
from aioinformer.testing._schema import compile_schema
from aioinformer.testing._schema_defaults import apply_defaults, prune

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

ROOT = "spec.versions[0].schema.openAPIV3Schema"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "maxLength": 8},
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def crd(schema: dict[str, Any] | None = None, **version: Any) -> dict[str, Any]:
    """The definition of ``widgets.example.com`` with ``schema`` as its ``v1`` schema."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": copy.deepcopy(schema or WIDGET_SCHEMA)},
                    "subresources": {"status": {}},
                    **version,
                }
            ],
        },
    }


def widget(object_name: str = "w1", /, **spec: Any) -> dict[str, Any]:
    """Widget ``object_name`` in ``default`` with ``spec``."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": object_name, "namespace": "default"},
        "spec": spec,
    }


def refused(server: FakeAPIServer, obj: dict[str, Any]) -> UnprocessableEntity:
    with pytest.raises(UnprocessableEntity) as raised:
        server.create(obj)
    return raised.value


def definition_causes(schema: dict[str, Any]) -> list[tuple[str, str, str]]:
    error = refused(FakeAPIServer(), crd(schema))
    return [(c["reason"], c["field"], c["message"]) for c in error.details["causes"]]


@pytest.fixture
def server() -> FakeAPIServer:
    server = FakeAPIServer()
    server.create(crd())
    return server


# -- the definition's schema ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(
            {"properties": {"spec": {"type": "object"}}},
            [
                (
                    "FieldValueRequired",
                    f"{ROOT}.type",
                    "Required value: must not be empty at the root",
                )
            ],
            id="root-without-type",
        ),
        pytest.param(
            {"type": "string"},
            [
                (
                    "FieldValueInvalid",
                    f"{ROOT}.type",
                    'Invalid value: "string": must be object at the root',
                )
            ],
            id="root-not-object",
        ),
        pytest.param(
            {"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}},
            [
                (
                    "FieldValueRequired",
                    f"{ROOT}.properties[spec].type",
                    "Required value: must not be empty for specified object fields",
                )
            ],
            id="field-without-type",
        ),
        pytest.param(
            {"type": "object", "properties": {"tags": {"type": "array", "items": {}}}},
            [
                (
                    "FieldValueRequired",
                    f"{ROOT}.properties[tags].items.type",
                    "Required value: must not be empty for specified array items",
                )
            ],
            id="item-without-type",
        ),
        pytest.param(
            {"type": "object", "properties": {"tags": {"type": "array"}}},
            [
                (
                    "FieldValueRequired",
                    f"{ROOT}.properties[tags].items",
                    "Required value: must be specified",
                )
            ],
            id="array-without-items",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
                },
            },
            [
                (
                    "FieldValueForbidden",
                    f"{ROOT}.properties[metadata]",
                    "Forbidden: must not specify anything other than name and generateName, but "
                    "metadata is implicitly specified",
                )
            ],
            id="metadata-beyond-names",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}},
                        "additionalProperties": {"type": "string"},
                    }
                },
            },
            [
                (
                    "FieldValueForbidden",
                    f"{ROOT}.properties[spec].additionalProperties",
                    "Forbidden: additionalProperties and properties are mutual exclusive",
                )
            ],
            id="properties-and-additional-properties",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "t": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
                },
            },
            [
                (
                    "FieldValueForbidden",
                    f"{ROOT}.properties[t].uniqueItems",
                    "Forbidden: uniqueItems cannot be set to true since the runtime complexity "
                    "becomes quadratic",
                )
            ],
            id="unique-items",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "t": {
                        "type": "array",
                        "items": {"type": "object"},
                        "x-kubernetes-list-type": "map",
                    }
                },
            },
            [
                (
                    "FieldValueRequired",
                    f"{ROOT}.properties[t].x-kubernetes-list-map-keys",
                    "Required value: must not be empty if x-kubernetes-list-type is map",
                )
            ],
            id="list-map-without-keys",
        ),
        pytest.param(
            {"type": "object", "properties": {"r": {"type": "integer", "default": "one"}}},
            [
                (
                    "FieldValueTypeInvalid",
                    f"{ROOT}.properties[r].default",
                    'Invalid value: "string":  in body must be of type integer: "string"',
                )
            ],
            id="default-of-the-wrong-type",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "s": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}},
                        "default": {"b": 1},
                    }
                },
            },
            [
                (
                    "FieldValueInvalid",
                    f"{ROOT}.properties[s].default",
                    'Invalid value: {"b":1}: must not have unknown fields, got: [b]',
                )
            ],
            id="default-with-unknown-fields",
        ),
    ],
)
def test_a_schema_kube_apiserver_refuses_refuses_the_definition(
    schema: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    assert definition_causes(schema) == expected


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(
            {"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": True}}},
            id="int-or-string",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"raw": {"x-kubernetes-preserve-unknown-fields": True}},
            },
            id="preserve-unknown-fields",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "metadata": {
                        "type": "object",
                        "properties": {"name": {"type": "string", "maxLength": 5}},
                    }
                },
            },
            id="metadata-name",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"r": {"type": "integer", "default": 3, "minimum": 1}},
            },
            id="valid-default",
        ),
    ],
)
def test_a_structural_schema_is_accepted(schema: dict[str, Any]) -> None:
    FakeAPIServer().create(crd(schema))


def test_a_schema_keyword_of_the_wrong_json_type_is_the_decoders_400() -> None:
    from aioinformer.errors import BadRequest

    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": "3"}}}
    with pytest.raises(BadRequest) as raised:
        FakeAPIServer().create(crd(schema))
    assert "cannot unmarshal string into Go struct field" in raised.value.message
    assert "maxLength of type int64" in raised.value.message


def test_an_update_of_the_definition_applies_its_new_schema(server: FakeAPIServer) -> None:
    server.create(widget(name="short"))
    schema = copy.deepcopy(WIDGET_SCHEMA)
    schema["properties"]["spec"]["properties"]["name"]["maxLength"] = 3
    definition = server.get("customresourcedefinitions", None, "widgets.example.com")
    definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema
    server.update(definition)
    error = refused(server, widget("w2", name="long"))
    assert error.details["causes"][0]["field"] == "spec.name"


# -- custom objects ------------------------------------------------------------------------


def test_an_invalid_object_is_refused_with_kube_apiservers_message_and_causes(
    server: FakeAPIServer,
) -> None:
    error = refused(server, widget(name="w", replicas="string"))
    assert (error.status["code"], error.reason) == (422, "Invalid")
    assert error.message == (
        'Widget.example.com "w1" is invalid: spec.replicas: Invalid value: "string": '
        'spec.replicas in body must be of type integer: "string"'
    )
    assert error.details == {
        "name": "w1",
        "group": "example.com",
        "kind": "Widget",
        "causes": [
            {
                "reason": "FieldValueTypeInvalid",
                "message": 'Invalid value: "string": spec.replicas in body must be of type '
                'integer: "string"',
                "field": "spec.replicas",
            }
        ],
    }
    assert server.objects("example.com/v1/widgets") == []


def test_several_errors_are_listed_in_one_message(server: FakeAPIServer) -> None:
    error = refused(server, widget(replicas=-1, mode="slow"))
    assert error.message == (
        'Widget.example.com "w1" is invalid: [spec.replicas: Invalid value: -1: spec.replicas '
        "in body should be greater than or equal to 0, spec.mode: Unsupported value: "
        '"slow": supported values: "fast", "safe", spec.name: Required value]'
    )


def test_absent_fields_get_their_defaults_and_given_ones_are_kept(server: FakeAPIServer) -> None:
    created = server.create(widget(name="w", mode="fast"))
    assert created["spec"] == {"name": "w", "mode": "fast", "replicas": 1}


def test_unknown_fields_are_pruned_unless_preserved(server: FakeAPIServer) -> None:
    obj = widget(name="w", color="red", extra={"anything": {"goes": True}})
    obj["top"] = 1
    created = server.create(obj)
    assert "top" not in created
    assert created["spec"] == {
        "name": "w",
        "extra": {"anything": {"goes": True}},
        "replicas": 1,
        "mode": "safe",
    }
    assert created["metadata"]["name"] == "w1"


def test_an_update_is_pruned_defaulted_and_validated(server: FakeAPIServer) -> None:
    stored = server.create(widget(name="w"))
    stored["spec"] = {"name": "w", "color": "blue"}
    updated = server.update(stored)
    assert updated["spec"] == {"name": "w", "replicas": 1, "mode": "safe"}
    updated["spec"]["name"] = "much-too-long"
    with pytest.raises(UnprocessableEntity) as raised:
        server.update(updated)
    assert raised.value.details["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 8 bytes",
            "field": "spec.name",
        }
    ]


def test_a_status_write_is_validated_against_the_status_schema(server: FakeAPIServer) -> None:
    stored = server.create(widget(name="w"))
    stored["status"] = {"ready": "yes"}
    with pytest.raises(UnprocessableEntity) as raised:
        server.update(stored, subresource="status")
    assert raised.value.details["causes"][0]["field"] == "status.ready"
    stored["status"] = {"ready": True, "unknown": 1}
    written = server.update(stored, subresource="status")
    assert written["status"] == {"ready": True}


def test_each_version_is_validated_by_its_own_schema() -> None:
    server = FakeAPIServer()
    definition = crd()
    loose = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    definition["spec"]["versions"].append(
        {"name": "v2", "served": True, "storage": False, "schema": {"openAPIV3Schema": loose}}
    )
    server.create(definition)
    created = server.create({**widget(color="red"), "apiVersion": "example.com/v2"})
    assert created["spec"] == {"color": "red"}
    assert refused(server, widget("w2", color="red")).details["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.name"}
    ]


# -- pruning and defaulting, node by node --------------------------------------------------


def test_pruning_keeps_the_objects_own_type_and_metadata_and_names_what_it_drops() -> None:
    node = compile_schema({"type": "object", "properties": {"spec": {"type": "object"}}})
    obj = {
        "apiVersion": "a/v1",
        "kind": "A",
        "metadata": {"name": "n", "x": 1},
        "spec": {"a": 1},
        "b": [],
    }
    assert prune(obj, node) == ["spec.a", "b"]
    assert obj == {"apiVersion": "a/v1", "kind": "A", "metadata": {"name": "n", "x": 1}, "spec": {}}


def test_pruning_keeps_an_embedded_resources_type_and_metadata() -> None:
    node = compile_schema(
        {
            "type": "object",
            "properties": {
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object"}},
                }
            },
        }
    )
    obj = {
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"a": 1}, "spec": {}, "x": 1}
    }
    assert prune(obj, node) == ["template.x"]
    assert obj["template"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"a": 1}, "spec": {}}


def test_pruning_descends_into_items_additional_properties_and_preserved_objects() -> None:
    node = compile_schema(
        {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {
                "list": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"a": {"type": "string"}}},
                },
                "map": {
                    "type": "object",
                    "additionalProperties": {"type": "object", "properties": {}},
                },
            },
        }
    )
    obj = {"kept": {"z": 1}, "list": [{"a": "x", "b": 1}], "map": {"k": {"c": 1}}}
    assert prune(obj, node) == ["list[0].b", "map.k.c"]
    assert obj == {"kept": {"z": 1}, "list": [{"a": "x"}], "map": {"k": {}}}


def test_defaults_apply_within_present_parents_only() -> None:
    node = compile_schema(
        {
            "type": "object",
            "properties": {
                "present": {
                    "type": "object",
                    "properties": {"a": {"type": "integer", "default": 1}},
                },
                "absent": {
                    "type": "object",
                    "properties": {"a": {"type": "integer", "default": 1}},
                },
                "defaulted": {
                    "type": "object",
                    "default": {},
                    "properties": {"a": {"type": "integer", "default": 2}},
                },
            },
        }
    )
    obj: dict[str, Any] = {"present": {}}
    apply_defaults(obj, node)
    assert obj == {"present": {"a": 1}, "defaulted": {"a": 2}}


def test_null_takes_the_default_unless_nullable_and_is_dropped_without_one() -> None:
    node = compile_schema(
        {
            "type": "object",
            "properties": {
                "defaulted": {"type": "string", "default": "d"},
                "nullable": {"type": "string", "nullable": True, "default": "d"},
                "plain": {"type": "string"},
                "items": {"type": "array", "items": {"type": "string", "default": "i"}},
                "map": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "default": "m"},
                },
            },
        }
    )
    obj: dict[str, Any] = {
        "defaulted": None,
        "nullable": None,
        "plain": None,
        "items": [None, "x"],
        "map": {"k": None},
    }
    apply_defaults(obj, node)
    assert obj == {"defaulted": "d", "nullable": None, "items": ["i", "x"], "map": {"k": "m"}}


def test_each_object_gets_its_own_copy_of_a_default() -> None:
    node = compile_schema(
        {"type": "object", "properties": {"s": {"type": "object", "default": {"a": []}}}}
    )
    first: dict[str, Any] = {}
    second: dict[str, Any] = {}
    apply_defaults(first, node)
    apply_defaults(second, node)
    first["s"]["a"].append(1)
    assert second == {"s": {"a": []}}


# -- fieldValidation ------------------------------------------------------------------------

STRICT_MESSAGE = (
    'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
    'unknown field "spec.colour", unknown field "top"'
)
WARNING = '299 - "unknown field \\"spec.colour\\""'


async def write(
    server: FakeAPIServer, method: str, path: str, body: Any, **query: str
) -> tuple[int, Any, list[str]]:
    """Send ``body`` to the server's ``path``; the answer's code, body and warnings."""
    content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": content_type}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, server.url + path, json=body, params=query, headers=headers) as got,
    ):
        return got.status, await got.json(), got.headers.getall("Warning", [])


@pytest.fixture
async def started() -> AsyncIterator[FakeAPIServer]:
    async with FakeAPIServer() as server:
        server.create(crd())
        yield server


async def test_strict_field_validation_refuses_unknown_fields_with_the_decoders_400(
    started: FakeAPIServer,
) -> None:
    obj = {**widget(name="w", colour="red"), "top": 1}
    code, body, _ = await write(started, "POST", WIDGETS, obj, fieldValidation="Strict")
    assert (code, body["reason"], body["message"]) == (400, "BadRequest", STRICT_MESSAGE)
    assert started.objects("example.com/v1/widgets") == []


async def test_field_validation_warns_by_default_and_ignore_is_silent(
    started: FakeAPIServer,
) -> None:
    code, body, warnings = await write(started, "POST", WIDGETS, widget(name="w", colour="red"))
    assert (code, body["spec"], warnings) == (
        201,
        {"name": "w", "replicas": 1, "mode": "safe"},
        [WARNING],
    )
    code, _, warnings = await write(
        started, "POST", WIDGETS, widget("w2", name="w", colour="red"), fieldValidation="Ignore"
    )
    assert (code, warnings) == (201, [])


async def test_patches_and_status_writes_follow_field_validation_too(
    started: FakeAPIServer,
) -> None:
    started.create(widget(name="w"))
    patch = {"spec": {"colour": "red"}}
    code, body, _ = await write(started, "PATCH", f"{WIDGETS}/w1", patch, fieldValidation="Strict")
    assert (code, body["reason"]) == (400, "BadRequest")
    status = {"status": {"ready": True, "shade": "dark"}}
    code, body, warnings = await write(started, "PATCH", f"{WIDGETS}/w1/status", status)
    assert (code, body["status"], warnings) == (
        200,
        {"ready": True},
        ['299 - "unknown field \\"status.shade\\""'],
    )


def test_each_versions_schema_is_compiled_once_not_per_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aioinformer.testing import _crds

    compiled: list[dict[str, Any]] = []

    def counting(schema: dict[str, Any]) -> Any:
        compiled.append(schema)
        return compile_schema(schema)

    monkeypatch.setattr(_crds, "compile_schema", counting)
    server = FakeAPIServer()
    server.create(crd())
    for i in range(3):
        server.create(widget(f"w{i}", name="w"))
    assert len(compiled) == 1


def test_a_pattern_that_does_not_compile_refuses_the_definition() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "a("}}}
    ((reason, field, message),) = definition_causes(schema)
    assert (reason, field) == ("FieldValueInvalid", f"{ROOT}.properties[s].pattern")
    assert message.startswith('Invalid value: "a(": must be a valid regular expression')


def test_a_bad_pattern_inside_a_composition_refuses_the_definition_too() -> None:
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "anyOf": [{"pattern": "["}]}},
    }
    ((_, field, _),) = definition_causes(schema)
    assert field == f"{ROOT}.properties[s].anyOf[0].pattern"
