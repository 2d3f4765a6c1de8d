"""The checks kube-apiserver v1.36 runs on a CustomResourceDefinition's schemas.

Role: part of the definition's admission in ``_crds``. Input is a definition's
``spec.versions``; output is the 400 ``BadRequest`` of a schema keyword of the wrong
JSON type (the Go decoder's words, raised as :class:`StatusError`), else the field
errors ``ValidateCustomResourceDefinition`` adds for the schemas, each on its path
(``spec.versions[0].schema.openAPIV3Schema.properties[spec].type``):

* ``apiextensions.k8s.io/v1`` requires a schema per version: ``schemas are required``;
* structural (``structuralschema.ValidateStructural``): every node has a ``type``
  (``must not be empty at the root``, ``... for specified object fields``, ``... for
  specified array items``) unless it is ``x-kubernetes-int-or-string`` or
  ``x-kubernetes-preserve-unknown-fields``; the root is an ``object``; an array has
  ``items``; an ``x-kubernetes-embedded-resource`` is an ``object``; the root's
  ``metadata`` may only restrict ``name`` and ``generateName``; ``kind`` and
  ``apiVersion`` there are strings;
* the v1 restrictions: ``additionalProperties`` neither ``false`` nor beside
  ``properties``; no ``uniqueItems: true``; a ``pattern`` that compiles (with Python's
  ``re``, whose error is quoted where Go's ``regexp`` would be); ``x-kubernetes-list-type`` one of
  ``atomic``, ``set``, ``map``, a ``map`` with ``x-kubernetes-list-map-keys``;
* defaults (``structuraldefaulting.ValidateDefaults``): each ``default`` has no field
  its schema would prune (``must not have unknown fields``) and validates against its
  schema (the errors on ``<node>.default``).

Left out: the value-validation restrictions inside ``allOf``/``anyOf``/``oneOf``/``not``
(no ``type``, ``default``, ``nullable`` or new properties there), the checks of
``x-kubernetes-validations`` (CEL) and of ``$ref``/``patternProperties``/
``dependencies`` (refused by kube-apiserver, accepted and ignored here), the
``x-kubernetes-map-type``, a ``type`` beside ``x-kubernetes-int-or-string``, an
``x-kubernetes-embedded-resource`` with neither properties nor preserved unknown fields,
``additionalProperties: true`` (accepted; its object's fields are pruned here), the
``x-kubernetes-list-type`` of a non-array and the cost limits.

Ordering: versions in order; within a schema, a node's children (``items``, then
``properties`` in the schema's order) before the node's own errors, as kube-apiserver
walks it; defaults after the structure.

Task model: pure synchronous functions.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any, Final

from aioinformer._apiserver.objects import StatusError, status_body
from aioinformer.testing._schema import compile_schema, schema_errors
from aioinformer.testing._schema_defaults import prune
from aioinformer.testing._validation import FieldError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["schema_definition_errors"]

_INT_KEYWORDS: Final = (
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
)
_NUMBER_KEYWORDS: Final = ("maximum", "minimum", "multipleOf")
_BOOL_KEYWORDS: Final = (
    "exclusiveMaximum",
    "exclusiveMinimum",
    "uniqueItems",
    "nullable",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
)
_STRING_KEYWORDS: Final = ("type", "format", "pattern", "x-kubernetes-list-type")
_LIST_TYPES: Final = ("atomic", "set", "map")
_METADATA_ONLY: Final = "must not specify anything other than name and generateName"


def _go_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _decode_error(keyword: str, value: Any, go_type: str) -> StatusError:
    return StatusError(
        status_body(
            400,
            "BadRequest",
            'CustomResourceDefinition in version "v1" cannot be handled as a '
            f"CustomResourceDefinition: json: cannot unmarshal {_go_type(value)} into Go "
            f"struct field JSONSchemaProps.spec.versions.schema.openAPIV3Schema.{keyword} "
            f"of type {go_type}",
        )
    )


def _check_keyword_types(schema: Mapping[str, Any]) -> None:
    """Refuse, as the decoder does, keywords of the wrong JSON type, so the compiled
    tree can rely on theirs."""
    for key in _INT_KEYWORDS:
        value = schema.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise _decode_error(key, value, "int64")
    for key in _NUMBER_KEYWORDS:
        value = schema.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise _decode_error(key, value, "float64")
    for key in _BOOL_KEYWORDS:
        value = schema.get(key)
        if value is not None and not isinstance(value, bool):
            raise _decode_error(key, value, "bool")
    for key in _STRING_KEYWORDS:
        value = schema.get(key)
        if value is not None and not isinstance(value, str):
            raise _decode_error(key, value, "string")
    for key, go_type in (("required", "[]string"), ("x-kubernetes-list-map-keys", "[]string")):
        value = schema.get(key)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(item, str) for item in value)
        ):
            raise _decode_error(key, value, go_type)
    for key in ("properties", "items", "not"):
        value = schema.get(key)
        if value is not None and not isinstance(value, dict):
            raise _decode_error(key, value, "v1.JSONSchemaProps")
    additional = schema.get("additionalProperties")
    if additional is not None and not isinstance(additional, dict | bool):
        raise _decode_error("additionalProperties", additional, "v1.JSONSchemaPropsOrBool")


def _walk_types(schema: Mapping[str, Any]) -> None:
    _check_keyword_types(schema)
    for sub in _children(schema):
        _walk_types(sub)


def _children(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    properties = schema.get("properties")
    if isinstance(properties, dict):
        found += [sub for sub in properties.values() if isinstance(sub, dict)]
    for key in ("items", "additionalProperties", "not"):
        if isinstance(schema.get(key), dict):
            found.append(schema[key])
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            found += [sub for sub in schema[key] if isinstance(sub, dict)]
    return found


def _structural(schema: Mapping[str, Any], level: str, path: str) -> list[FieldError]:
    """``validateStructuralInvariants`` and the v1 keyword rules of one node and its
    subtree (``level``: ``root``, ``field`` or ``item``)."""
    errors: list[FieldError] = []
    kind = schema.get("type") or ""
    items = schema.get("items")
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    if kind == "array" and not isinstance(items, dict):
        errors.append(FieldError("FieldValueRequired", f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        errors += _structural(items, "item", f"{path}.items")
    for key, sub in properties.items():
        if isinstance(sub, dict):
            errors += _structural(sub, "field", f"{path}.properties[{key}]")
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        errors += _structural(additional, "field", f"{path}.additionalProperties")
    if additional is not None and (additional is False or isinstance(additional, dict)):
        if properties:
            detail = "additionalProperties and properties are mutual exclusive"
            errors.append(FieldError("FieldValueForbidden", f"{path}.additionalProperties", detail))
        elif additional is False:
            detail = "additionalProperties cannot be set to false"
            errors.append(FieldError("FieldValueForbidden", f"{path}.additionalProperties", detail))
    if schema.get("uniqueItems") is True:
        detail = "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        errors.append(FieldError("FieldValueForbidden", f"{path}.uniqueItems", detail))
    list_type = schema.get("x-kubernetes-list-type")
    if list_type is not None and list_type not in _LIST_TYPES:
        quoted = ", ".join(f'"{option}"' for option in _LIST_TYPES)
        errors.append(
            FieldError(
                "FieldValueNotSupported",
                f"{path}.x-kubernetes-list-type",
                f"supported values: {quoted}",
                list_type,
            )
        )
    if list_type == "map" and not schema.get("x-kubernetes-list-map-keys"):
        errors.append(
            FieldError(
                "FieldValueRequired",
                f"{path}.x-kubernetes-list-map-keys",
                "must not be empty if x-kubernetes-list-type is map",
            )
        )
    embedded = schema.get("x-kubernetes-embedded-resource") is True
    exempt = (
        schema.get("x-kubernetes-int-or-string") is True
        or schema.get("x-kubernetes-preserve-unknown-fields") is True
    )
    if embedded and kind != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        errors.append(
            FieldError("FieldValueInvalid", f"{path}.type", detail, kind)
            if kind
            else FieldError("FieldValueRequired", f"{path}.type", detail)
        )
    elif not kind and not embedded and not exempt:
        where = {
            "root": "at the root",
            "item": "for specified array items",
            "field": "for specified object fields",
        }[level]
        errors.append(
            FieldError("FieldValueRequired", f"{path}.type", f"must not be empty {where}")
        )
    elif level == "root" and kind and kind != "object":
        errors.append(
            FieldError("FieldValueInvalid", f"{path}.type", "must be object at the root", kind)
        )
    checks_metadata = level == "root" or embedded
    metadata = properties.get("metadata")
    if isinstance(metadata, dict) and checks_metadata and metadata.get("type") != "object":
        errors.append(
            FieldError(
                "FieldValueInvalid",
                f"{path}.properties[metadata].type",
                "must be object",
                metadata.get("type") or "",
            )
        )
    if isinstance(metadata, dict) and level == "root" and not _only_names(metadata):
        detail = f"{_METADATA_ONLY}, but metadata is implicitly specified"
        errors.append(FieldError("FieldValueForbidden", f"{path}.properties[metadata]", detail))
    for key in ("kind", "apiVersion"):
        sub = properties.get(key)
        if isinstance(sub, dict) and checks_metadata and sub.get("type") != "string":
            errors.append(
                FieldError(
                    "FieldValueInvalid",
                    f"{path}.properties[{key}].type",
                    "must be string",
                    sub.get("type") or "",
                )
            )
    return errors


def _pattern_errors(schema: Mapping[str, Any], path: str) -> list[FieldError]:
    """The ``pattern`` keywords that do not compile, anywhere in the schema (those of
    ``allOf``/``anyOf``/``oneOf``/``not`` too, which the compiled tree also holds)."""
    errors: list[FieldError] = []
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error as exc:
            detail = f"must be a valid regular expression, but isn't: {exc}"
            errors.append(FieldError("FieldValueInvalid", f"{path}.pattern", detail, pattern))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, sub in properties.items():
            if isinstance(sub, dict):
                errors += _pattern_errors(sub, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties", "not"):
        sub = schema.get(key)
        if isinstance(sub, dict):
            errors += _pattern_errors(sub, f"{path}.{key}")
    for key in ("allOf", "anyOf", "oneOf"):
        subs = schema.get(key)
        for i, sub in enumerate(subs if isinstance(subs, list) else ()):
            if isinstance(sub, dict):
                errors += _pattern_errors(sub, f"{path}.{key}[{i}]")
    return errors


def _only_names(metadata: Mapping[str, Any]) -> bool:
    """Whether a root ``metadata`` schema restricts nothing but ``name``/``generateName``
    (its ``type`` and ``default`` aside)."""
    rest = {key: value for key, value in metadata.items() if key not in ("type", "default")}
    properties = rest.pop("properties", None)
    if properties is not None and (
        not isinstance(properties, dict) or set(properties) - {"name", "generateName"}
    ):
        return False
    return not rest


def _default_errors(schema: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateDefaults`` over one node and its subtree."""
    errors: list[FieldError] = []
    if "default" in schema:
        node = compile_schema(schema)
        value = copy.deepcopy(schema["default"])
        pruned = prune({"value": value}, compile_schema({"properties": {"value": schema}}))
        field = f"{path}.default"
        if pruned:
            shown = " ".join(p.removeprefix("value.") for p in pruned)
            detail = f"must not have unknown fields, got: [{shown}]"
            errors.append(FieldError("FieldValueInvalid", field, detail, schema["default"]))
        else:
            errors += schema_errors(node, value, field)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, sub in properties.items():
            if isinstance(sub, dict):
                errors += _default_errors(sub, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, dict):
            errors += _default_errors(sub, f"{path}.{key}")
    return errors


def schema_definition_errors(versions: list[dict[str, Any]]) -> list[FieldError]:
    """The errors of the definition's version schemas (see the module docstring); a
    keyword of the wrong JSON type raises the decoder's 400 instead."""
    errors: list[FieldError] = []
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}].schema.openAPIV3Schema"
        schema = version.get("schema")
        root = schema.get("openAPIV3Schema") if isinstance(schema, dict) else None
        if not isinstance(root, dict):
            errors.append(FieldError("FieldValueRequired", path, "schemas are required"))
            continue
        _walk_types(root)
        structural = _structural(root, "root", path) + _pattern_errors(root, path)
        errors += structural
        if not structural:
            errors += _default_errors(root, path)
    return errors
