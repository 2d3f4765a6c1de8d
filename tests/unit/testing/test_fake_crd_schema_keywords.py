"""The fake's compiled CRD schemas validate each keyword as kube-apiserver v1.36 does:
kube-openapi's checks, turned into field errors by apiextensions, with their reasons,
field paths and messages.

The cases follow kube-openapi's ``validate`` tests and apiextensions'
``pkg/apiserver/validation`` tests, written anew as tables of (schema of ``spec.x``,
value, expected causes)."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer.testing._schema import compile_schema, go_number, schema_errors
from aioinformer.testing._schema_formats import format_check


def causes(schema: dict[str, Any], value: Any) -> list[tuple[str, str, str]]:
    """The causes of a custom object whose ``spec.x`` is ``value``, ``schema`` its schema."""
    root = compile_schema(
        {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"x": schema}}},
        }
    )
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"x": value}}
    return [(e.reason, e.field, e.body()) for e in schema_errors(root, obj)]


def invalid(message: str) -> list[tuple[str, str, str]]:
    return [("FieldValueInvalid", "spec.x", message)]


def type_invalid(message: str) -> list[tuple[str, str, str]]:
    return [("FieldValueTypeInvalid", "spec.x", message)]


CASES = [
    # type
    ({"type": "integer"}, 3, []),
    ({"type": "integer"}, 3.0, []),
    (
        {"type": "integer"},
        "three",
        type_invalid('Invalid value: "string": spec.x in body must be of type integer: "string"'),
    ),
    (
        {"type": "integer"},
        3.5,
        type_invalid('Invalid value: "number": spec.x in body must be of type integer: "number"'),
    ),
    ({"type": "number"}, 3, []),
    (
        {"type": "boolean"},
        1,
        type_invalid('Invalid value: "integer": spec.x in body must be of type boolean: "integer"'),
    ),
    (
        {"type": "string"},
        True,
        type_invalid('Invalid value: "boolean": spec.x in body must be of type string: "boolean"'),
    ),
    (
        {"type": "object"},
        [],
        type_invalid('Invalid value: "array": spec.x in body must be of type object: "array"'),
    ),
    (
        {"type": "array", "items": {"type": "string"}},
        {},
        type_invalid('Invalid value: "object": spec.x in body must be of type array: "object"'),
    ),
    # nullable
    (
        {"type": "string"},
        None,
        type_invalid('Invalid value: "null": spec.x in body must be of type string: "null"'),
    ),
    ({"type": "string", "nullable": True}, None, []),
    (
        {"type": "string", "nullable": True, "enum": ["a"]},
        None,
        [("FieldValueNotSupported", "spec.x", 'Unsupported value: null: supported values: "a"')],
    ),
    # x-kubernetes-int-or-string
    ({"x-kubernetes-int-or-string": True}, 8080, []),
    ({"x-kubernetes-int-or-string": True}, "http", []),
    (
        {"x-kubernetes-int-or-string": True},
        1.5,
        type_invalid(
            'Invalid value: "number": spec.x in body must be of type integer,string: "number"'
        ),
    ),
    # enum
    ({"type": "string", "enum": ["a", "b"]}, "a", []),
    (
        {"type": "string", "enum": ["a", "b"]},
        "c",
        [
            (
                "FieldValueNotSupported",
                "spec.x",
                'Unsupported value: "c": supported values: "a", "b"',
            )
        ],
    ),
    (
        {"type": "integer", "enum": [1, 2]},
        3,
        [("FieldValueNotSupported", "spec.x", 'Unsupported value: 3: supported values: "1", "2"')],
    ),
    ({"type": "integer", "enum": [1, 2]}, 2.0, []),
    (
        {"type": "boolean", "enum": [False]},
        True,
        [
            (
                "FieldValueNotSupported",
                "spec.x",
                'Unsupported value: true: supported values: "false"',
            )
        ],
    ),
    # strings
    ({"type": "string", "maxLength": 3}, "abc", []),
    (
        {"type": "string", "maxLength": 3},
        "abcd",
        [("FieldValueTooLong", "spec.x", "Too long: may not be more than 3 bytes")],
    ),
    (
        {"type": "string", "maxLength": 1},
        "éé",
        [("FieldValueTooLong", "spec.x", "Too long: may not be more than 1 byte")],
    ),
    ({"type": "string", "maxLength": 2}, "éé", []),
    (
        {"type": "string", "minLength": 2},
        "a",
        invalid('Invalid value: "a": spec.x in body should be at least 2 chars long'),
    ),
    (
        {"type": "string", "pattern": "^[a-z]+$"},
        "A1",
        invalid("Invalid value: \"A1\": spec.x in body should match '^[a-z]+$'"),
    ),
    ({"type": "string", "pattern": "[0-9]"}, "abc1", []),
    # formats
    ({"type": "string", "format": "date-time"}, "2026-12-04T21:00:00Z", []),
    ({"type": "string", "format": "date-time"}, "2026-12-04T21:00:00.5+01:00", []),
    (
        {"type": "string", "format": "date-time"},
        "yesterday",
        type_invalid(
            'Invalid value: "yesterday": spec.x in body must be of type date-time: "yesterday"'
        ),
    ),
    (
        {"type": "string", "format": "date"},
        "2026-02-30",
        type_invalid(
            'Invalid value: "2026-02-30": spec.x in body must be of type date: "2026-02-30"'
        ),
    ),
    ({"type": "integer", "format": "int32"}, 2**40, []),
    ({"type": "string", "format": "no-such-format"}, "anything", []),
    # numbers
    (
        {"type": "integer", "multipleOf": 5},
        7,
        invalid("Invalid value: 7: spec.x in body should be a multiple of 5"),
    ),
    ({"type": "number", "multipleOf": 0.1}, 0.3, []),
    (
        {"type": "integer", "maximum": 10},
        11,
        invalid("Invalid value: 11: spec.x in body should be less than or equal to 10"),
    ),
    (
        {"type": "integer", "maximum": 10, "exclusiveMaximum": True},
        10,
        invalid("Invalid value: 10: spec.x in body should be less than 10"),
    ),
    (
        {"type": "integer", "minimum": 1},
        0,
        invalid("Invalid value: 0: spec.x in body should be greater than or equal to 1"),
    ),
    (
        {"type": "number", "minimum": 0.5, "exclusiveMinimum": True},
        0.5,
        invalid("Invalid value: 0.5: spec.x in body should be greater than 0.5"),
    ),
    (
        {"type": "integer", "maximum": 1000000},
        1000001,
        invalid("Invalid value: 1000001: spec.x in body should be less than or equal to 1e+06"),
    ),
    # arrays
    (
        {"type": "array", "items": {"type": "integer"}},
        [1, "two"],
        [
            (
                "FieldValueTypeInvalid",
                "spec.x[1]",
                'Invalid value: "string": spec.x[1] in body must be of type integer: "string"',
            )
        ],
    ),
    (
        {"type": "array", "items": {"type": "string"}, "minItems": 2},
        ["a"],
        invalid("Invalid value: 1: spec.x in body should have at least 2 items"),
    ),
    (
        {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        ["a", "b", "c"],
        [("FieldValueTooMany", "spec.x", "Too many: 3: must have at most 2 items")],
    ),
    (
        {"type": "array", "items": {"type": "string"}, "maxItems": 1},
        ["a", "b"],
        [("FieldValueTooMany", "spec.x", "Too many: 2: must have at most 1 item")],
    ),
    (
        {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        [1, 2, 1],
        invalid('Invalid value: "": spec.x in body shouldn\'t contain duplicates'),
    ),
    ({"type": "array", "items": {"type": "number"}, "uniqueItems": True}, [1, 1.5], []),
    # objects
    (
        {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        {},
        [("FieldValueRequired", "spec.x.name", "Required value")],
    ),
    (
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"a": "1", "b": 2},
        [
            (
                "FieldValueTypeInvalid",
                "spec.x.b",
                'Invalid value: "integer": spec.x.b in body must be of type string: "integer"',
            )
        ],
    ),
    (
        {"type": "object", "minProperties": 2, "required": ["a", "b"]},
        {"a": 1},
        invalid("Invalid value: 1: spec.x in body should have at least 2 properties"),
    ),
    (
        {"type": "object", "maxProperties": 1},
        {"a": 1, "b": 2},
        [("FieldValueTooMany", "spec.x", "Too many: 2: must have at most 1 item")],
    ),
    # compositions
    (
        {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^a"}]},
        "bb",
        [
            (
                "FieldValueInvalid",
                "<nil>",
                'Invalid value: "": "spec.x" must validate at least one schema (anyOf)',
            ),
            ("FieldValueTooLong", "spec.x", "Too long: may not be more than 1 byte"),
        ],
    ),
    ({"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^a"}]}, "ab", []),
    (
        {"type": "integer", "oneOf": [{"minimum": 1}, {"maximum": 10}]},
        5,
        [
            (
                "FieldValueInvalid",
                "<nil>",
                'Invalid value: "": "spec.x" must validate one and only one schema (oneOf). '
                "Found 2 valid alternatives",
            )
        ],
    ),
    ({"type": "integer", "oneOf": [{"minimum": 1}, {"maximum": 0}]}, 5, []),
    (
        {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 3}]},
        5,
        [
            (
                "FieldValueInvalid",
                "spec.x",
                "Invalid value: 5: spec.x in body should be less than or equal to 3",
            ),
            (
                "FieldValueInvalid",
                "<nil>",
                'Invalid value: "": "spec.x" must validate all the schemas (allOf)',
            ),
        ],
    ),
    (
        {"type": "string", "not": {"enum": ["forbidden"]}},
        "forbidden",
        [
            (
                "FieldValueInvalid",
                "<nil>",
                'Invalid value: "": "spec.x" must not validate the schema (not)',
            )
        ],
    ),
    # list types
    (
        {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        ["a", "b", "a"],
        [("FieldValueDuplicate", "spec.x[2]", 'Duplicate value: "a"')],
    ),
    (
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
        [{"name": "a"}, {"name": "b"}, {"name": "a"}],
        [("FieldValueDuplicate", "spec.x[2]", 'Duplicate value: {"name":"a"}')],
    ),
    (
        {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"},
        ["a", "a"],
        [],
    ),
    # embedded resources
    (
        {"type": "object", "x-kubernetes-embedded-resource": True},
        {"apiVersion": "v1"},
        [("FieldValueRequired", "spec.x.kind", "Required value: must not be empty")],
    ),
]


@pytest.mark.parametrize(("schema", "value", "expected"), CASES)
def test_each_keyword_refuses_what_kube_apiserver_refuses_in_its_words(
    schema: dict[str, Any], value: Any, expected: list[tuple[str, str, str]]
) -> None:
    assert causes(schema, value) == expected


def test_errors_of_one_object_come_in_kube_openapis_order() -> None:
    root = compile_schema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "size": {"type": "integer"},
                        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 1},
                    },
                }
            },
        }
    )
    got = schema_errors(root, {"spec": {"tags": ["a", 1], "size": "s"}})
    assert [(e.reason, e.field) for e in got] == [
        ("FieldValueTypeInvalid", "spec.size"),
        ("FieldValueTypeInvalid", "spec.tags[1]"),
        ("FieldValueTooMany", "spec.tags"),
        ("FieldValueRequired", "spec.name"),
    ]


def test_a_failing_property_count_stops_the_objects_other_checks() -> None:
    assert causes(
        {"type": "object", "minProperties": 2, "properties": {"a": {"type": "string"}}},
        {"a": 1},
    ) == invalid("Invalid value: 1: spec.x in body should have at least 2 properties")


def test_errors_under_a_given_root_carry_its_path() -> None:
    node = compile_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
    (error,) = schema_errors(node, {"a": "x"}, "spec.versions[0].default")
    assert (error.field, error.body()) == (
        "spec.versions[0].default.a",
        'Invalid value: "string": a in body must be of type integer: "string"',
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (10, "10"),
        (1.5, "1.5"),
        (100000, "100000"),
        (1000000, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-3, "-3"),
        (0, "0"),
    ],
)
def test_schema_numbers_are_written_as_gos_percent_v_writes_a_float64(
    value: float, text: str
) -> None:
    assert go_number(value) == text


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("date", "2026-12-04", "04/12/2026"),
        ("date-time", "2026-12-04T21:00:00Z", "2026-12-04 21:00"),
        ("datetime", "2026-12-04T21:00:00+0100", "2026-13-04T21:00:00Z"),
        ("duration", "1h30m", "an hour"),
        ("duration", "3 days", "3 fortnights"),
        ("uuid", "0f8fad5b-d9cb-469f-a165-70867728950e", "0f8fad5b"),
        ("uuid4", "0f8fad5b-d9cb-469f-a165-70867728950e", "0f8fad5b-d9cb-369f-a165-70867728950e"),
        ("email", "someone@example.com", "someone"),
        ("hostname", "api.example.com", "-bad-.example"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "fe80::1", "10.0.0.1"),
        ("cidr", "10.0.0.0/8", "10.0.0.0"),
        ("mac", "00:1a:2b:3c:4d:5e", "00:1a:2b"),
        ("byte", "aGVsbG8=", "not base64!"),
        ("uri", "https://example.com/x", "example.com"),
        ("hexcolor", "#ff0000", "red"),
        ("rgbcolor", "rgb(255, 0, 0)", "rgb(256, 0, 0)"),
        ("bsonobjectid", "507f1f77bcf86cd799439011", "507f"),
    ],
)
def test_each_checked_format_accepts_and_refuses_as_strfmt(name: str, good: str, bad: str) -> None:
    check = format_check(name)
    assert check is not None
    assert (check(good), check(bad)) == (True, False)


@pytest.mark.parametrize("name", ["int32", "int64", "float", "double", "k8s-anything"])
def test_formats_kube_apiserver_strips_check_nothing(name: str) -> None:
    assert format_check(name) is None
