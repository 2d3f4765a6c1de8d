"""A CustomResourceDefinition version's ``openAPIV3Schema``, compiled, and the validation of
custom objects against it, as kube-apiserver v1.36 validates them.

Role: the schema half of the fake's custom-resource admission. Input is a structural
schema (already checked by ``_schema_structural``) and, per write, a decoded object;
output is the compiled :class:`Node` tree (built once per definition version, so a
write walks small objects, never the schema's dicts) and the field errors of an
object, in kube-apiserver's words and order (kube-openapi's ``SchemaValidator``, turned
into ``field.Error`` values by apiextensions' ``kubeOpenAPIResultToFieldErrors``):

* per node, in kube-openapi's order: ``type`` (``nullable`` lets ``null`` through;
  ``x-kubernetes-int-or-string`` is ``integer,string``; an integral number passes as an
  ``integer``, an integer as a ``number``), ``anyOf``, ``oneOf``, ``allOf``, ``not``,
  ``maxLength``/``minLength`` (in characters)/``pattern`` (searched, not anchored, as
  Go's ``MatchString``), ``format`` (see ``_schema_formats``), ``multipleOf``,
  ``maximum``/``minimum`` (with ``exclusive*``), ``items``, ``minItems``/``maxItems``,
  ``uniqueItems``, ``enum``, then ``minProperties``/``maxProperties`` (which, failing,
  stop the object's checks), ``additionalProperties``, ``properties`` (in the schema's
  order, where kube-openapi walks a Go map, in an order that varies) and ``required``;
* the messages: ``Invalid value: "string": spec.replicas in body must be of type
  integer: "string"``, ``Required value``, ``Unsupported value: "c": supported values:
  "a", "b"``, ``Too long: may not be more than 3 bytes``, ``Too many: 3: must have at
  most 2 items``, ``Invalid value: 0: spec.size in body should be greater than or equal
  to 1`` and the like; the failure of an ``anyOf``/``oneOf``/``allOf``/``not`` is
  reported as kube-apiserver reports it, on the field ``<nil>`` (``Invalid value: "":
  "spec" must validate at least one schema (anyOf)``), followed, for ``anyOf`` and
  ``oneOf``, by the errors of the alternative that came closest (here: the one with
  the fewest errors, where kube-openapi counts the checks that passed);
* after the schema: ``x-kubernetes-list-type: set`` and ``map`` (duplicates, by value
  or by the ``x-kubernetes-list-map-keys``: ``Duplicate value``) and an
  ``x-kubernetes-embedded-resource``'s required ``apiVersion`` and ``kind``, as
  kube-apiserver's ``listtype`` and ``objectmeta`` passes do.

Left out: ``x-kubernetes-validations`` (CEL rules) are not evaluated; an update is
validated in full, without kube-apiserver's ratcheting of unchanged invalid values;
an embedded resource's ``metadata`` is not validated as ``ObjectMeta``.

Task model: pure synchronous code; a compiled tree is immutable and shared.
"""

from __future__ import annotations

import decimal
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from aioinformer.testing._schema_formats import format_check
from aioinformer.testing._validation import NULL, FieldError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["MISSING", "Node", "compile_schema", "go_number", "schema_errors"]

MISSING: Final = object()
"""A node's ``default`` when it has none (``None`` is the default ``null``)."""

_TYPE_FAIL: Final = "FieldValueTypeInvalid"
_ROOT_FIELD: Final = "<nil>"


def go_number(value: float) -> str:
    """A schema number as Go's ``%v`` writes a ``float64``: the shortest digits, with an
    exponent from ``1e+06`` up and below ``0.0001``."""
    sign, digits, exponent = decimal.Decimal(repr(float(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent
    lead = "-" if sign else ""
    if text == "0":
        return lead + "0"
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{lead}{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    if point <= 0:
        return f"{lead}0.{'0' * -point}{text}"
    if point >= len(text):
        return lead + text + "0" * (point - len(text))
    return f"{lead}{text[:point]}.{text[point:]}"


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _canonical(value: Any) -> bytes:
    """A key that tells JSON values apart as Go's ``reflect.DeepEqual`` does (``1`` and
    ``1.0`` differ; maps compare whatever their key order)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _same(a: Any, b: Any) -> bool:
    """``enum`` equality: a number matches a number of the same value, a boolean only a
    boolean, other values by deep equality."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and _canonical(a) == _canonical(b)


@dataclass(frozen=True, slots=True)
class _Fault:
    """One kube-openapi error: ``name`` is its path as kube-openapi writes it (a leading
    dot at the root for required and additional properties), ``kind`` how apiextensions
    turns it into a field error, ``value`` the bad value shown, ``detail`` the message."""

    kind: str
    name: str
    value: Any
    detail: str


def _field(name: str, root: str | None) -> str:
    """The field path of a fault at ``name`` under ``root`` (``None``: the object's root,
    which apiextensions leaves a nil path, printed ``<nil>``)."""
    name = name.removeprefix(".")
    if not name:
        return root or _ROOT_FIELD
    return f"{root}.{name}" if root else name


def _to_field_error(fault: _Fault, root: str | None) -> FieldError:
    if fault.kind == "composite":
        return FieldError("FieldValueInvalid", root or _ROOT_FIELD, fault.detail, "")
    field = _field(fault.name, root)
    if fault.kind == "required":
        return FieldError("FieldValueRequired", field, "")
    if fault.kind in ("FieldValueNotSupported", "FieldValueTooLong", "FieldValueTooMany"):
        return FieldError(fault.kind, field, fault.detail, fault.value)
    if fault.kind == "FieldValueDuplicate":
        return FieldError(fault.kind, field, "", fault.value)
    reason = _TYPE_FAIL if fault.kind == "type" else "FieldValueInvalid"
    return FieldError(reason, field, fault.detail, fault.value)


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class Node:
    """One compiled schema node. Every attribute is read-only once compiled; a keyword
    the schema does not set is ``None`` (or empty), so a check costs nothing unless set.
    ``properties`` keeps the schema's order, which is the order errors come in;
    ``has_lists`` is true iff this node or one below it is a ``set``/``map`` list or an
    embedded resource, so the passes after the schema skip the rest."""

    __slots__ = (
        "additional",
        "all_of",
        "any_of",
        "default",
        "embedded",
        "enum",
        "exclusive_maximum",
        "exclusive_minimum",
        "format",
        "format_name",
        "has_lists",
        "int_or_string",
        "items",
        "list_map_keys",
        "list_type",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "one_of",
        "pattern",
        "preserve_unknown",
        "properties",
        "required",
        "types",
        "unique_items",
    )

    def __init__(self, schema: Mapping[str, Any]) -> None:
        int_or_string = schema.get("x-kubernetes-int-or-string") is True
        declared = schema.get("type")
        self.int_or_string = int_or_string
        self.types: tuple[str, ...] = (
            ("integer", "string")
            if int_or_string
            else ((declared,) if isinstance(declared, str) and declared else ())
        )
        self.nullable: bool = schema.get("nullable") is True
        self.preserve_unknown: bool = schema.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded: bool = schema.get("x-kubernetes-embedded-resource") is True
        self.default: Any = schema.get("default", MISSING)
        self.enum: tuple[Any, ...] | None = (
            tuple(schema["enum"]) if isinstance(schema.get("enum"), list) else None
        )
        self.format_name: str = schema.get("format") or ""
        self.format: Callable[[str], bool] | None = (
            format_check(self.format_name) if self.format_name else None
        )
        self.max_length: int | None = schema.get("maxLength")
        self.min_length: int | None = schema.get("minLength")
        pattern = schema.get("pattern")
        self.pattern: tuple[str, re.Pattern[str]] | None = (
            (pattern, re.compile(pattern)) if isinstance(pattern, str) and pattern else None
        )
        self.multiple_of: float | None = schema.get("multipleOf")
        self.maximum: float | None = schema.get("maximum")
        self.minimum: float | None = schema.get("minimum")
        self.exclusive_maximum: bool = schema.get("exclusiveMaximum") is True
        self.exclusive_minimum: bool = schema.get("exclusiveMinimum") is True
        self.max_items: int | None = schema.get("maxItems")
        self.min_items: int | None = schema.get("minItems")
        self.unique_items: bool = schema.get("uniqueItems") is True
        self.max_properties: int | None = schema.get("maxProperties")
        self.min_properties: int | None = schema.get("minProperties")
        self.required: tuple[str, ...] = tuple(schema.get("required") or ())
        properties = schema.get("properties")
        self.properties: dict[str, Node] = (
            {key: Node(sub) for key, sub in properties.items() if isinstance(sub, dict)}
            if isinstance(properties, dict)
            else {}
        )
        additional = schema.get("additionalProperties")
        self.additional: Node | None = Node(additional) if isinstance(additional, dict) else None
        items = schema.get("items")
        self.items: Node | None = Node(items) if isinstance(items, dict) else None
        self.all_of: tuple[Node, ...] = _nodes(schema.get("allOf"))
        self.any_of: tuple[Node, ...] = _nodes(schema.get("anyOf"))
        self.one_of: tuple[Node, ...] = _nodes(schema.get("oneOf"))
        not_ = schema.get("not")
        self.not_: Node | None = Node(not_) if isinstance(not_, dict) else None
        self.list_type: str = schema.get("x-kubernetes-list-type") or ""
        self.list_map_keys: tuple[str, ...] = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        children = [*self.properties.values(), self.additional, self.items]
        self.has_lists: bool = (
            self.embedded
            or self.list_type in ("set", "map")
            or any(child is not None and child.has_lists for child in children)
        )

    def __repr__(self) -> str:
        return f"<Node type={','.join(self.types) or '-'} properties={list(self.properties)}>"

    # -- kube-openapi's SchemaValidator ------------------------------------------------------

    def check(self, value: Any, path: str, out: list[_Fault]) -> None:
        """Append the faults of ``value`` at ``path`` to ``out``, in kube-openapi's order."""
        if value is None:
            if self.types and not self.nullable:
                detail = f'{path} in body must be of type {",".join(self.types)}: "null"'
                out.append(_Fault("type", path, "null", detail))
            self._check_enum(value, path, out)
            return
        kind = _json_type(value)
        if self.types and kind not in self.types:
            integral = kind == "number" and float(value).is_integer() and "integer" in self.types
            widened = kind == "integer" and "number" in self.types
            if not (integral or widened):
                detail = f'{path} in body must be of type {",".join(self.types)}: "{kind}"'
                out.append(_Fault("type", path, kind, detail))
        if self.any_of or self.one_of or self.all_of or self.not_ is not None:
            self._check_compositions(value, path, out)
        if kind == "string":
            self._check_string(value, path, out)
        elif kind in ("integer", "number"):
            self._check_number(value, path, out)
        elif kind == "array":
            self._check_array(value, path, out)
        self._check_enum(value, path, out)
        if kind == "object":
            self._check_object(value, path, out)

    def _check_compositions(self, value: Any, path: str, out: list[_Fault]) -> None:
        quoted = orjson.dumps(path).decode()
        if self.any_of:
            best: list[_Fault] | None = None
            for alternative in self.any_of:
                faults: list[_Fault] = []
                alternative.check(value, path, faults)
                if not faults:
                    best = None
                    break
                if best is None or len(faults) < len(best):
                    best = faults
            if best is not None:
                detail = f"{quoted} must validate at least one schema (anyOf)"
                out.append(_Fault("composite", path, "", detail))
                out.extend(best)
        if self.one_of:
            valid = 0
            closest: list[_Fault] | None = None
            for alternative in self.one_of:
                faults = []
                alternative.check(value, path, faults)
                if not faults:
                    valid += 1
                elif valid == 0 and (closest is None or len(faults) < len(closest)):
                    closest = faults
            if valid != 1:
                found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
                detail = f"{quoted} must validate one and only one schema (oneOf). {found}"
                out.append(_Fault("composite", path, "", detail))
                if valid == 0 and closest is not None:
                    out.extend(closest)
        if self.all_of:
            passed = 0
            for alternative in self.all_of:
                faults = []
                alternative.check(value, path, faults)
                passed += not faults
                out.extend(faults)
            if passed != len(self.all_of):
                none = ". None validated" if passed == 0 else ""
                detail = f"{quoted} must validate all the schemas (allOf){none}"
                out.append(_Fault("composite", path, "", detail))
        if self.not_ is not None:
            faults = []
            self.not_.check(value, path, faults)
            if not faults:
                detail = f"{quoted} must not validate the schema (not)"
                out.append(_Fault("composite", path, "", detail))

    def _check_string(self, value: str, path: str, out: list[_Fault]) -> None:
        if self.max_length is not None and len(value) > self.max_length:
            detail = f"may not be more than {_plural(self.max_length, 'byte')}"
            out.append(_Fault("FieldValueTooLong", path, value, detail))
        if self.min_length is not None and len(value) < self.min_length:
            detail = f"{path} in body should be at least {self.min_length} chars long"
            out.append(_Fault("invalid", path, value, detail))
        if self.pattern is not None and self.pattern[1].search(value) is None:
            detail = f"{path} in body should match '{self.pattern[0]}'"
            out.append(_Fault("invalid", path, value, detail))
        if self.format is not None and not self.format(value):
            detail = f'{path} in body must be of type {self.format_name}: "{value}"'
            out.append(_Fault("type", path, value, detail))

    def _check_number(self, value: float, path: str, out: list[_Fault]) -> None:
        factor = self.multiple_of
        if factor is not None and factor > 0:
            quotient = decimal.Decimal(repr(value)) / decimal.Decimal(repr(factor))
            if quotient != quotient.to_integral_value():
                detail = f"{path} in body should be a multiple of {go_number(factor)}"
                out.append(_Fault("invalid", path, value, detail))
        if self.maximum is not None and (
            value >= self.maximum if self.exclusive_maximum else value > self.maximum
        ):
            words = "less than" if self.exclusive_maximum else "less than or equal to"
            detail = f"{path} in body should be {words} {go_number(self.maximum)}"
            out.append(_Fault("invalid", path, value, detail))
        if self.minimum is not None and (
            value <= self.minimum if self.exclusive_minimum else value < self.minimum
        ):
            words = "greater than" if self.exclusive_minimum else "greater than or equal to"
            detail = f"{path} in body should be {words} {go_number(self.minimum)}"
            out.append(_Fault("invalid", path, value, detail))

    def _check_array(self, value: list[Any], path: str, out: list[_Fault]) -> None:
        if self.items is not None:
            for i, item in enumerate(value):
                self.items.check(item, f"{path}[{i}]", out)
        size = len(value)
        if self.min_items is not None and size < self.min_items:
            detail = f"{path} in body should have at least {self.min_items} items"
            out.append(_Fault("invalid", path, size, detail))
        if self.max_items is not None and size > self.max_items:
            detail = f"must have at most {_plural(self.max_items, 'item')}"
            out.append(_Fault("FieldValueTooMany", path, size, detail))
        if self.unique_items and len({_canonical(item) for item in value}) != size:
            detail = f"{path} in body shouldn't contain duplicates"
            out.append(_Fault("invalid", path, "", detail))

    def _check_enum(self, value: Any, path: str, out: list[_Fault]) -> None:
        if self.enum is None or any(_same(value, option) for option in self.enum):
            return
        shown = [
            option if isinstance(option, str) else orjson.dumps(option).decode()
            for option in self.enum
        ]
        detail = "supported values: " + ", ".join(orjson.dumps(v).decode() for v in shown)
        out.append(_Fault("FieldValueNotSupported", path, NULL if value is None else value, detail))

    def _check_object(self, value: dict[str, Any], path: str, out: list[_Fault]) -> None:
        size = len(value)
        if self.min_properties is not None and size < self.min_properties:
            detail = f"{path} in body should have at least {self.min_properties} properties"
            out.append(_Fault("invalid", path, size, detail))
            return
        if self.max_properties is not None and size > self.max_properties:
            detail = f"must have at most {_plural(self.max_properties, 'item')}"
            out.append(_Fault("FieldValueTooMany", path, size, detail))
            return
        properties = self.properties
        if self.additional is not None:
            for key, item in value.items():
                if key not in properties:
                    self.additional.check(item, f"{path}.{key}", out)
        for key, node in properties.items():
            if key in value:
                node.check(value[key], _child(path, key), out)
        for key in self.required:
            if key not in value:
                out.append(_Fault("required", f"{path}.{key}", None, ""))

    # -- the passes after the schema ---------------------------------------------------------

    def check_lists(self, value: Any, field: str, out: list[FieldError]) -> None:
        """``listtype.ValidateListSetsAndMaps`` and ``objectmeta``'s embedded-resource
        checks, at field path ``field`` (nothing to walk where the subtree has neither
        set or map lists nor embedded resources)."""
        if not self.has_lists:
            return
        if isinstance(value, dict):
            if self.embedded:
                for key in ("apiVersion", "kind"):
                    if not value.get(key):
                        out.append(FieldError("FieldValueRequired", _child(field, key), _EMPTY))
            for key, item in value.items():
                node = self.properties.get(key, self.additional)
                if node is not None:
                    node.check_lists(item, _child(field, key), out)
        elif isinstance(value, list):
            if self.list_type in ("set", "map"):
                seen: set[bytes] = set()
                for i, item in enumerate(value):
                    keyed = (
                        {k: item.get(k) for k in self.list_map_keys if k in item}
                        if self.list_type == "map" and isinstance(item, dict)
                        else item
                    )
                    canonical = _canonical(keyed)
                    if canonical in seen:
                        out.append(FieldError("FieldValueDuplicate", f"{field}[{i}]", "", keyed))
                    seen.add(canonical)
            if self.items is not None:
                for i, item in enumerate(value):
                    self.items.check_lists(item, f"{field}[{i}]", out)


_EMPTY: Final = "must not be empty"


def _nodes(schemas: Any) -> tuple[Node, ...]:
    if not isinstance(schemas, list):
        return ()
    return tuple(Node(schema) for schema in schemas if isinstance(schema, dict))


def compile_schema(schema: Mapping[str, Any]) -> Node:
    """The compiled tree of a structural ``openAPIV3Schema``."""
    return Node(schema)


def schema_errors(node: Node, value: Any, root: str | None = None) -> list[FieldError]:
    """The field errors of ``value`` against ``node``, ``root`` the field path ``value``
    sits at (``None``: a whole custom object, as kube-apiserver validates it)."""
    faults: list[_Fault] = []
    node.check(value, "", faults)
    errors = [_to_field_error(fault, root) for fault in faults]
    if root is None:
        node.check_lists(value, "", errors)
    return errors
