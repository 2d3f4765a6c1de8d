"""What the fake API server refuses in a written object, as kube-apiserver v1.36 refuses it.

Role: the admission the fake applies to every create and update, over HTTP and through
the test's direct calls alike. Input is a request body (bytes) or a decoded object and
the :class:`~aioinformer._apiserver.objects.ResourceType` it is written to; output is the
object, decoded and checked, or the :class:`~aioinformer._apiserver.objects.StatusError`
kube-apiserver answers with:

* 400 ``BadRequest`` for what its decoder refuses before validation runs: a body that is
  not JSON (``the object provided is unrecognized (must be of type ConfigMap): ...``), a
  body of another kind (``Pod in version "v1" cannot be handled as a ConfigMap: ...``),
  and a field of the wrong JSON type, in the Go decoder's words (``json: cannot unmarshal
  number into Go struct field ObjectMeta.metadata.labels of type string``): labels and
  annotations must be maps of strings, as must a ConfigMap's ``data`` and a Secret's
  ``data`` and ``stringData``;
* 422 ``Invalid`` (``apimachinery`` ``NewInvalid``) with one ``details.causes`` entry per
  field error: a name that is not a DNS-1123 subdomain (a DNS-1123 label for namespaces,
  StatefulSets and Services),
  a missing name without ``generateName`` (``FieldValueRequired``), a label key that is
  not a qualified name or a label value that is not a valid label value (both on
  ``metadata.labels``), and, when the server validates specs, the errors of the kind's
  spec (:data:`SpecRules`, implemented in ``_specs``) after those of its metadata.

The namespace admission (404 for a namespace that does not exist, 403 for one being
deleted) needs the stored namespaces and lives in :func:`admit_namespace`.

Ordering: decoding errors come before validation errors, as on the real server, and
the causes of one 422 come in field order (labels by key).

Task model: pure synchronous functions.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson

from aioinformer._apiserver.objects import ResourceType, StatusError, status_body

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from aioinformer._apiserver.objects import Entry

__all__ = [
    "NULL",
    "FieldError",
    "GoEnum",
    "GoStruct",
    "SpecRules",
    "admit_create",
    "admit_namespace",
    "bad_request",
    "check_types",
    "decode_object",
    "dns_label_errors",
    "dns_subdomain_errors",
    "invalid_error",
    "label_key_errors",
    "label_map_errors",
    "label_value_errors",
    "regex_error",
    "validate_metadata",
]

_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT: Final = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_KEY_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE_FMT: Final = "(" + _KEY_FMT + ")?"
_LABEL_RE: Final = re.compile(_LABEL_FMT)
_SUBDOMAIN_RE: Final = re.compile(_SUBDOMAIN_FMT)
_KEY_RE: Final = re.compile(_KEY_FMT)
_VALUE_RE: Final = re.compile(_VALUE_FMT)

# Fields that must be maps of strings, per resource: (field, Go struct name).
_STRING_MAPS: Final[dict[tuple[str, str], tuple[tuple[str, str], ...]]] = {
    ("", "configmaps"): (("data", "ConfigMap"),),
    ("", "secrets"): (("data", "Secret"), ("stringData", "Secret")),
}


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """A failed-pattern message worded as apimachinery's ``RegexError`` words it."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(length: int, unit: str = "characters") -> str:
    """apimachinery's ``MaxLenError``: ``util/validation`` counts characters, the newer
    ``api/validate/content`` (label keys and values) counts bytes."""
    return f"must be no more than {length} {unit}"


def dns_subdomain_errors(value: str, unit: str = "characters") -> list[str]:
    """What apimachinery's ``IsDNS1123Subdomain`` says of ``value`` (empty: valid)."""
    errors = []
    if len(value.encode()) > 253:
        errors.append(_max_len(253, unit))
    if not _SUBDOMAIN_RE.fullmatch(value):
        errors.append(
            regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                _SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errors


def dns_label_errors(value: str) -> list[str]:
    """What apimachinery's ``IsDNS1123Label`` says of ``value`` (empty: valid)."""
    errors = []
    if len(value.encode()) > 63:
        errors.append(_max_len(63))
    if not _LABEL_RE.fullmatch(value):
        if _SUBDOMAIN_RE.fullmatch(value):
            errors.append("must not contain dots")
        else:
            errors.append(
                regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                    "characters or '-', and must start and end with an alphanumeric character",
                    _LABEL_FMT,
                    "my-name",
                    "123-abc",
                )
            )
    return errors


_DNS1035_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE: Final = re.compile(_DNS1035_FMT)


def dns1035_label_errors(value: str) -> list[str]:
    """What apimachinery's ``IsDNS1035Label`` says of ``value`` (empty: valid): a DNS-1123
    label that starts with a letter (a CRD's version names, a webhook's service port name)."""
    errors = []
    if len(value) > 63:
        errors.append(_max_len(63))
    if not _DNS1035_RE.fullmatch(value):
        errors.append(
            regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character",
                _DNS1035_FMT,
                "my-name",
                "abc-123",
            )
        )
    return errors


# Resources whose names are not DNS-1123 subdomains, and what they are instead: namespace,
# StatefulSet (its pods' hostnames) and Service names end up in DNS labels. A new
# Service's name is a DNS-1123 label since v1.36, where RelaxedServiceNameValidation is
# on by default (before, a DNS-1035 label, which may not start with a digit).
_NAME_RULES: Final[dict[tuple[str, str], Callable[[str], list[str]]]] = {
    ("", "namespaces"): dns_label_errors,
    ("apps", "statefulsets"): dns_label_errors,
    ("", "services"): dns_label_errors,
}

_KEY_MESSAGE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)


def label_key_errors(key: str) -> list[str]:
    """What apimachinery's ``IsQualifiedName`` says of a label key (empty: valid)."""
    errors: list[str] = []
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + regex_error(_KEY_MESSAGE, _KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(
                "prefix part " + message for message in dns_subdomain_errors(prefix, "bytes")
            )
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append("name part " + _max_len(63, "bytes"))
    if not _KEY_RE.fullmatch(name):
        errors.append(
            "name part " + regex_error(_KEY_MESSAGE, _KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """What apimachinery's ``IsValidLabelValue`` says of a label value (empty: valid)."""
    errors = []
    if len(value.encode()) > 63:
        errors.append(_max_len(63, "bytes"))
    if not _VALUE_RE.fullmatch(value):
        errors.append(
            regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character",
                _VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errors


class _Null:
    """The bad value ``null`` (a nil map or pointer), as opposed to no value shown."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL"


NULL: Final = _Null()
"""A :class:`FieldError` value rendered ``null``, as Go renders a nil map it complains of."""

# The words apimachinery's ErrorType.String() puts before a cause's value or detail.
_HEADS: Final = {
    "FieldValueRequired": "Required value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "FieldValueTypeInvalid": "Invalid value",
}
# The causes whose message never shows the bad value.
_VALUELESS: Final = frozenset({"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong"})


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field's validation failure, as an apimachinery ``field.Error``: ``reason`` is
    the cause type (``FieldValueRequired``, ``FieldValueInvalid``,
    ``FieldValueDuplicate``, ``FieldValueNotSupported``, ``FieldValueForbidden``,
    ``FieldValueTooLong``, ``FieldValueTooMany``, ``FieldValueTypeInvalid``),
    ``value`` the bad value (``None``: not shown; :data:`NULL`: shown as ``null``),
    ``detail`` the explanation."""

    reason: str
    field: str
    detail: str
    value: Any = None

    def body(self) -> str:
        """The error without its field path, as a ``details.causes[].message``."""
        head = _HEADS[self.reason]
        if self.reason not in _VALUELESS and self.value is not None:
            head += ": " + _render(self.value)
        return f"{head}: {self.detail}" if self.detail else head


class GoEnum(str):
    """A bad value of a named Go string type (``Protocol``, ``RestartPolicy``, a selector
    operator): apimachinery quotes only a plain ``string`` with ``%q``, and writes these
    with ``encoding/json``, which escapes ``<``, ``>`` and ``&``."""

    __slots__ = ()


class GoStruct(dict[str, Any]):
    """A bad value that is a Go struct (a ``LabelSelector``), not a map: ``encoding/json``
    writes a struct's fields in their declaration order, the order this dict's keys are
    given in, where it sorts a map's keys."""

    __slots__ = ()


_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}
# encoding/json escapes these in strings, so that its output is safe to embed in HTML.
_JSON_HTML_ESCAPES: Final = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def _go_quote(value: str) -> str:
    """``value`` as Go's ``%q`` (``strconv.Quote``) writes it: printable characters as
    they are, others as ``\\xHH``, ``\\uHHHH`` or ``\\UHHHHHHHH``."""
    out = ['"']
    for char in value:
        code = ord(char)
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char == " " or (char.isprintable() and not char.isspace()):
            out.append(char)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _go_json_value(value: Any) -> Any:
    """``value`` with its maps' keys sorted and its structs' fields kept in order."""
    if isinstance(value, GoStruct):
        return {key: _go_json_value(item) for key, item in value.items()}
    if isinstance(value, dict):
        return {key: _go_json_value(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_go_json_value(item) for item in value]
    if isinstance(value, GoEnum):
        return str(value)
    return value


def _render(value: Any) -> str:
    """A bad value as apimachinery renders it: Go's ``%q`` (strings), ``%v`` (numbers,
    booleans), ``encoding/json`` for maps, lists and structs (since kubernetes#132314,
    1.34)."""
    if value is NULL:
        return "null"
    if isinstance(value, str) and not isinstance(value, GoEnum):
        return _go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = orjson.dumps(_go_json_value(value)).decode()
    for char, escape in _JSON_HTML_ESCAPES.items():
        text = text.replace(char, escape)
    return text


class SpecRules(Protocol):
    """The validation of a kind's spec, beyond its metadata (``_specs`` implements it;
    the store passes it only while the server validates specs)."""

    def type_problem(self, rt: ResourceType, obj: Mapping[str, Any]) -> str | None:
        """The decoder's complaint about a spec field of the wrong JSON type, if any."""
        ...

    def errors(self, rt: ResourceType, obj: Mapping[str, Any]) -> list[FieldError]:
        """The field errors of ``obj``'s spec (or data), in kube-apiserver's order."""
        ...


def invalid_error(rt: ResourceType, name: str, errors: list[FieldError]) -> StatusError:
    """The 422 ``Invalid`` kube-apiserver answers for ``errors`` (one cause each)."""
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.kind
    details["causes"] = [
        {"reason": error.reason, "message": error.body(), "field": error.field} for error in errors
    ]
    texts = list(dict.fromkeys(f"{error.field}: {error.body()}" for error in errors))
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    qualified = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    message = f"{qualified} {orjson.dumps(name).decode()} is invalid: {joined}"
    return StatusError(status_body(422, "Invalid", message, details))


def bad_request(message: str) -> StatusError:
    """A 400 ``BadRequest`` with ``message``."""
    return StatusError(status_body(400, "BadRequest", message))


def _json_type(value: Any) -> str:
    """The JSON type name Go's decoder uses in its unmarshal errors."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


def _string_map_error(value: Any, field: str) -> str | None:
    """The Go decoder's complaint about ``value`` for a ``map[string]string`` field."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return (
            f"json: cannot unmarshal {_json_type(value)} into Go struct field {field} "
            "of type map[string]string"
        )
    for item in value.values():
        if item is not None and not isinstance(item, str):
            return (
                f"json: cannot unmarshal {_json_type(item)} into Go struct field {field} "
                "of type string"
            )
    return None


def check_types(rt: ResourceType, obj: Mapping[str, Any], specs: SpecRules | None = None) -> None:
    """Refuse, with the decoder's 400, an object whose typed fields have the wrong JSON
    type (metadata, labels, annotations, a ConfigMap's or Secret's data, and with
    ``specs`` the spec fields it checks)."""
    problem: str | None = None
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        problem = (
            f"json: cannot unmarshal {_json_type(meta)} into Go struct field "
            f"{rt.kind}.metadata of type v1.ObjectMeta"
        )
    elif isinstance(meta, dict):
        for key in ("labels", "annotations"):
            problem = problem or _string_map_error(meta.get(key), f"ObjectMeta.metadata.{key}")
    for key, struct in _STRING_MAPS.get(rt.id, ()):
        problem = problem or _string_map_error(obj.get(key), f"{struct}.{key}")
    if problem is None and specs is not None:
        problem = specs.type_problem(rt, obj)
    if problem is not None:
        raise bad_request(
            f"{rt.kind} in version {orjson.dumps(rt.version).decode()} cannot be handled as "
            f"a {rt.kind}: {problem}"
        )


def _summary(body: bytes) -> str:
    """The start of a body as kube-apiserver quotes it in a decoding error."""
    if not body:
        return "<empty>"
    if body[:1] == b"{":
        text = body[:30].decode(errors="replace")
        return text + " ..." if len(body) > 30 else text
    return body[:30].hex() + (" ..." if len(body) > 30 else "")


def decode_object(rt: ResourceType, body: bytes) -> dict[str, Any]:
    """A create or update body decoded as an object of ``rt``, or the decoder's 400: not
    JSON or not an object, another apiVersion or kind, or fields of the wrong type. An
    absent apiVersion and kind default to the URL's, as on the real server."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get "
            f"version/kind; json parse error: {exc} ({_summary(body)})"
        ) from exc
    if not isinstance(obj, dict):
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get "
            f"version/kind; json parse error: json: cannot unmarshal {_json_type(obj)} into "
            f"Go value of type struct {{ APIVersion string "
            f'"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }} '
            f"({_summary(body)})"
        )
    kind = obj.get("kind") or rt.kind
    api_version = obj.get("apiVersion") or rt.api_version
    if not isinstance(kind, str) or not isinstance(api_version, str):
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get "
            f"version/kind; json parse error: json: cannot unmarshal non-string into Go "
            f"struct field .kind of type string ({_summary(body)})"
        )
    if kind != rt.kind or api_version != rt.api_version:
        version = api_version.rpartition("/")[2]
        raise bad_request(
            f"{kind} in version {orjson.dumps(version).decode()} cannot be handled as a "
            f"{rt.kind}: converting ({api_version}.{kind}) to ({rt.kind}): unknown conversion"
        )
    check_types(rt, obj)
    return obj


def validate_metadata(rt: ResourceType, meta: Mapping[str, Any]) -> list[FieldError]:
    """The field errors of an object's name and labels (empty when it is valid): first a
    ``generateName`` that would not make a valid name (its trailing dash masked, as
    apimachinery's ``maskTrailingDash`` masks it), then the name itself."""
    errors: list[FieldError] = []
    check = _NAME_RULES.get(rt.id, dns_subdomain_errors)
    generate = meta.get("generateName")
    if isinstance(generate, str) and generate:
        masked = generate[:-2] + "a" if len(generate) > 1 and generate.endswith("-") else generate
        errors.extend(
            FieldError("FieldValueInvalid", "metadata.generateName", message, generate)
            for message in check(masked)
        )
    name = meta.get("name")
    if not name:
        errors.append(
            FieldError("FieldValueRequired", "metadata.name", "name or generateName is required")
        )
    else:
        errors.extend(
            FieldError("FieldValueInvalid", "metadata.name", message, name)
            for message in check(str(name))
        )
    namespace = meta.get("namespace")
    if rt.namespaced and isinstance(namespace, str) and namespace:
        errors.extend(
            FieldError("FieldValueInvalid", "metadata.namespace", message, namespace)
            for message in dns_label_errors(namespace)
        )
    errors.extend(label_map_errors(meta.get("labels"), "metadata.labels"))
    return errors


def label_map_errors(labels: Any, field: str) -> list[FieldError]:
    """The field errors of a map of labels (or of a selector's ``matchLabels``) at
    ``field``: a key that is not a qualified name, a value that is not a label value."""
    if not isinstance(labels, dict):
        return []
    errors: list[FieldError] = []
    for key in sorted(labels):
        errors.extend(
            FieldError("FieldValueInvalid", field, message, key)
            for message in label_key_errors(key)
        )
        value = labels[key]
        errors.extend(
            FieldError("FieldValueInvalid", field, message, value)
            for message in label_value_errors(str(value))
        )
    return errors


def admit_namespace(
    namespaces: Mapping[str, Entry], rt: ResourceType, namespace: str | None, name: str
) -> None:
    """Refuse a create in a namespace that does not exist (404 ``NotFound`` naming the
    namespace) or is being deleted (403 ``Forbidden``, cause ``NamespaceTerminating``)."""
    if not rt.namespaced or not namespace:
        return
    entry = namespaces.get(namespace)
    if entry is None:
        raise StatusError(
            status_body(
                404,
                "NotFound",
                f'namespaces "{namespace}" not found',
                {"name": namespace, "kind": "namespaces"},
            )
        )
    if entry.deleting:
        details = rt.details(name)
        details["causes"] = [
            {
                "reason": "NamespaceTerminating",
                "message": f"namespace {namespace} is being terminated",
                "field": "metadata.namespace",
            }
        ]
        raise StatusError(
            status_body(
                403,
                "Forbidden",
                f'{rt.qualified} "{name}" is forbidden: unable to create new content in '
                f"namespace {namespace} because it is being terminated",
                details,
            )
        )


def admit_create(
    namespaces: Mapping[str, Entry] | None,
    rt: ResourceType,
    obj: dict[str, Any],
    specs: SpecRules | None = None,
) -> None:
    """Admit a new object in kube-apiserver's order: its fields must have their types,
    its namespace must exist (unless ``namespaces`` is ``None``), then a ``generateName``
    is completed, then the name and labels, and with ``specs`` the spec, are validated
    (one 422). ``obj`` gets its generated name in place."""
    check_types(rt, obj, specs)
    meta = obj["metadata"]
    if namespaces is not None:
        admit_namespace(namespaces, rt, meta.get("namespace"), str(meta.get("name") or ""))
    generate = meta.get("generateName")
    if not meta.get("name") and isinstance(generate, str) and generate:
        meta["name"] = generate + os.urandom(4).hex()[:5]
    errors = validate_metadata(rt, meta)
    if specs is not None:
        errors.extend(specs.errors(rt, obj))
    if errors:
        raise invalid_error(rt, str(meta.get("name") or ""), errors)
