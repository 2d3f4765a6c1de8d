"""Generate ``aioinformer/k8s/*.py``: pydantic models of Kubernetes' built-in kinds.

Input: the structured-merge-diff type schema that client-go generates from the Kubernetes
OpenAPI spec and ships in ``applyconfigurations/internal/internal.go`` (the YAML inside the
``schemaYAML`` literal, or a ``.yaml`` file holding just that YAML). It names every built-in
type with its fields and their types (``scalar``, ``namedType``, ``list``, ``map``), for one
Kubernetes release: take the file from the client-go tag of that release (``v0.36.3`` for
Kubernetes 1.36.3). Nothing of it is committed; only the generated modules are.

Output: one module per API group version (``core_v1``, ``apps_v1``, ...) plus ``meta_v1``
for the shared apimachinery types, written into the output directory. The mapping:

* a type with ``apiVersion``, ``kind`` and an ``ObjectMeta`` ``metadata`` is a *kind*: it
  subclasses :class:`aioinformer.models.KubeObject` with ``apiVersion``/``kind`` defaults;
  ``*List`` kinds are left out (informers and listers hand out items);
* every other map type subclasses ``K8sModel`` (``extra="allow"``, ``populate_by_name``);
* ``ObjectMeta`` is :class:`aioinformer.models.ObjectMeta`, ``Time``/``MicroTime``/
  ``Quantity``/``IntOrString`` the aliases of ``aioinformer.k8s._base``, untyped values
  (``RawExtension``, free-form JSON) ``Any``; the schema's ``numeric`` is ``int`` (the
  built-in APIs carry no floating-point fields);
* every field is optional (``None`` by default), with a snake_case name and its camelCase
  JSON name as validation and serialization alias (so ``__init__`` takes the snake_case
  names, for type checkers too): a cache model must accept whatever the server sends.

Run (from the repository root, with the client-go tag checked out somewhere)::

    python scripts/generate_models.py --version 1.36.3 \\
        --schema /path/to/client-go/applyconfigurations/internal/internal.go \\
        --out aioinformer/k8s
    ruff format aioinformer/k8s

The functions here are importable (``tests/unit/k8s/test_generate_models.py`` runs them on an
embedded sample schema and compares with the expected code).
"""

from __future__ import annotations

import argparse
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "GROUPS",
    "Module",
    "generate",
    "load_schema",
    "main",
    "render_module",
    "snake_case",
]

#: The stable group versions shipped: the schema package of each -> (module, apiVersion).
GROUPS: dict[str, tuple[str, str]] = {
    "io.k8s.api.admissionregistration.v1": (
        "admissionregistration_v1",
        "admissionregistration.k8s.io/v1",
    ),
    "io.k8s.api.apps.v1": ("apps_v1", "apps/v1"),
    "io.k8s.api.autoscaling.v1": ("autoscaling_v1", "autoscaling/v1"),
    "io.k8s.api.autoscaling.v2": ("autoscaling_v2", "autoscaling/v2"),
    "io.k8s.api.batch.v1": ("batch_v1", "batch/v1"),
    "io.k8s.api.certificates.v1": ("certificates_v1", "certificates.k8s.io/v1"),
    "io.k8s.api.coordination.v1": ("coordination_v1", "coordination.k8s.io/v1"),
    "io.k8s.api.core.v1": ("core_v1", "v1"),
    "io.k8s.api.discovery.v1": ("discovery_v1", "discovery.k8s.io/v1"),
    "io.k8s.api.events.v1": ("events_v1", "events.k8s.io/v1"),
    "io.k8s.api.flowcontrol.v1": ("flowcontrol_v1", "flowcontrol.apiserver.k8s.io/v1"),
    "io.k8s.api.networking.v1": ("networking_v1", "networking.k8s.io/v1"),
    "io.k8s.api.node.v1": ("node_v1", "node.k8s.io/v1"),
    "io.k8s.api.policy.v1": ("policy_v1", "policy/v1"),
    "io.k8s.api.rbac.v1": ("rbac_v1", "rbac.authorization.k8s.io/v1"),
    "io.k8s.api.scheduling.v1": ("scheduling_v1", "scheduling.k8s.io/v1"),
    "io.k8s.api.storage.v1": ("storage_v1", "storage.k8s.io/v1"),
    "io.k8s.apimachinery.pkg.apis.meta.v1": ("meta_v1", "meta.k8s.io/v1"),
}

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
#: Types that are not generated: the schema name -> the Python annotation used instead.
_MAPPED: dict[str, str] = {
    _META + "ObjectMeta": "ObjectMeta",
    _META + "Time": "Time",
    _META + "MicroTime": "MicroTime",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "IntOrString",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "Any",
    "__untyped_atomic_": "Any",
    "__untyped_deduced_": "Any",
}
_SCALARS = {"string": "str", "numeric": "int", "boolean": "bool", "untyped": "Any"}
# Names a field may not take: keywords, and attributes of pydantic's BaseModel (a field
# shadowing one is refused or warned about by pydantic).
_RESERVED = frozenset(keyword.kwlist) | {
    "construct",
    "copy",
    "dict",
    "fields",
    "json",
    "model_config",
    "model_fields",
    "parse_obj",
    "parse_raw",
    "schema",
    "schema_json",
    "validate",
}


def snake_case(name: str) -> str:
    """``podIPs`` -> ``pod_ips``, ``$ref`` -> ``ref``, ``from`` -> ``from_``: a valid,
    unreserved Python identifier for a JSON field name."""
    text = re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_")
    # A plural acronym is one word: podIPs -> pod_ips, podCIDRs -> pod_cidrs.
    text = re.sub(r"([A-Z]{2,})s(?=[A-Z_]|$)", r"\1S", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text).lower()
    if not text or text[0].isdigit():
        text = "f_" + text
    if text in _RESERVED or text.startswith("model_"):
        text += "_"
    return text


def load_schema(text: str) -> dict[str, dict[str, Any]]:
    """The types of a schema: ``text`` is ``internal.go`` (the YAML is taken out of its
    ``schemaYAML`` literal) or the YAML itself. Returns name -> type definition."""
    match = re.search(r"schemaYAML = typed\.YAMLObject\(`(.*?)`\)", text, re.DOTALL)
    document = yaml.safe_load(match.group(1) if match else text)
    if not isinstance(document, dict) or not isinstance(document.get("types"), list):
        raise ValueError("not a structured-merge-diff schema: no top-level 'types' list")
    return {entry["name"]: entry for entry in document["types"]}


@dataclass
class Module:
    """One generated module: its name, the apiVersion of its kinds, its type names."""

    name: str
    api_version: str
    types: list[str] = field(default_factory=list)


def _package(type_name: str) -> str:
    return type_name.rpartition(".")[0]


def _field_types(definition: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    for entry in definition.get("map", {}).get("fields", []):
        yield entry["type"]


def _is_kind(definition: Mapping[str, Any]) -> bool:
    fields = {entry["name"]: entry["type"] for entry in definition.get("map", {}).get("fields", [])}
    return (
        "apiVersion" in fields
        and "kind" in fields
        and fields.get("metadata", {}).get("namedType") == _META + "ObjectMeta"
    )


def _named(type_ref: Mapping[str, Any]) -> Iterable[str]:
    if "namedType" in type_ref:
        yield type_ref["namedType"]
    for nested in ("list", "map"):
        element = type_ref.get(nested, {}).get("elementType")
        if element is not None:
            yield from _named(element)


def _annotation(type_ref: Mapping[str, Any], here: str) -> str:
    if "namedType" in type_ref:
        name = type_ref["namedType"]
        if name in _MAPPED:
            return _MAPPED[name]
        module = GROUPS[_package(name)][0]
        short = name.rpartition(".")[2]
        return short if module == here else f"{module}.{short}"
    if "scalar" in type_ref and not ("list" in type_ref or "map" in type_ref):
        return _SCALARS[type_ref["scalar"]]
    if "list" in type_ref:
        return f"list[{_annotation(type_ref['list']['elementType'], here)}]"
    if "map" in type_ref:
        return f"dict[str, {_annotation(type_ref['map']['elementType'], here)}]"
    return "Any"


_LINE_LENGTH = 100


def _field_lines(attribute: str, annotation: str, arguments: list[str]) -> list[str]:
    """``attribute: annotation = Field(*arguments)`` laid out as ruff format lays it out:
    on one line, or the arguments on one line of their own, or one per line."""
    start = f"    {attribute}: {annotation} = Field("
    joined = ", ".join(arguments)
    if len(start) + len(joined) + 1 <= _LINE_LENGTH:
        return [f"{start}{joined})"]
    if 8 + len(joined) <= _LINE_LENGTH:
        return [start, f"        {joined}", "    )"]
    return [start, *(f"        {argument}," for argument in arguments), "    )"]


def _class_lines(name: str, definition: Mapping[str, Any], module: Module) -> list[str]:
    short = name.rpartition(".")[2]
    lines: list[str] = []
    if _is_kind(definition):
        lines.append(f"class {short}(KubeObject):")
        lines.append(f'    """{module.api_version} {short}."""')
        lines.append("")
        lines.append("    model_config = _CONFIG")
        lines.extend(
            _field_lines(
                "api_version",
                "str | None",
                [f'default="{module.api_version}"', 'alias="apiVersion"'],
            )
        )
        lines.append(f'    kind: str | None = "{short}"')
        skip = {"apiVersion", "kind", "metadata"}
    else:
        lines.append(f"class {short}(K8sModel):")
        lines.append(f'    """{module.api_version} {short}."""')
        lines.append("")
        skip = set()
    fields = definition.get("map", {}).get("fields", [])
    if not fields and not skip:
        # A map type without declared fields holds free-form keys: all kept as extras.
        return lines
    for entry in fields:
        json_name = entry["name"]
        if json_name in skip:
            continue
        attribute = snake_case(json_name)
        annotation = _annotation(entry["type"], module.name)
        optional = "Any" if annotation == "Any" else f"{annotation} | None"
        if attribute == json_name:
            lines.append(f"    {attribute}: {optional} = None")
        else:
            # Not ``alias``: type checkers would take the alias as the keyword of
            # ``__init__``; this way code builds models by their Python names.
            arguments = [
                "default=None",
                f'validation_alias="{json_name}"',
                f'serialization_alias="{json_name}"',
            ]
            lines.extend(_field_lines(attribute, optional, arguments))
    return lines


def _dependency_order(module: Module, schema: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """``module.types`` with each type after the types of this module its fields name (by
    name otherwise), so that every annotation resolves when its class is created: a
    subclass of a generated kind, in the user's module, then needs nothing rebuilt."""
    members = set(module.types)
    ordered: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in visiting or name in ordered:
            return  # a cycle stays a forward reference, resolved when first used
        visiting.add(name)
        for type_ref in _field_types(schema[name]):
            for dependency in sorted(_named(type_ref)):
                if dependency in members:
                    visit(dependency)
        visiting.discard(name)
        ordered.append(name)

    for name in module.types:
        visit(name)
    return ordered


def render_module(module: Module, schema: Mapping[str, Mapping[str, Any]], version: str) -> str:
    """The source of ``module``: its types in dependency order, imports, ``__all__``."""
    classes = [
        _class_lines(name, schema[name], module) for name in _dependency_order(module, schema)
    ]
    body = "\n\n\n".join("\n".join(lines) for lines in classes)
    used_modules = sorted(
        {
            GROUPS[_package(ref)][0]
            for name in module.types
            for type_ref in _field_types(schema[name])
            for ref in _named(type_ref)
            if ref not in _MAPPED and GROUPS[_package(ref)][0] != module.name
        }
    )
    words = set(re.findall(r"\w+", body))
    # isort's order: the constant first, then the classes.
    base_names = sorted({"_CONFIG"} & words) + sorted(
        {"IntOrString", "K8sModel", "MicroTime", "Quantity", "Time"} & words
    )
    models_names = sorted({"KubeObject", "ObjectMeta"} & words)
    names = sorted(name.rpartition(".")[2] for name in module.types)
    header = [
        "# Generated by scripts/generate_models.py from the Kubernetes "
        f"{version} schema: do not edit.",
        f'"""Models of the Kubernetes {version} ``{module.api_version}`` types.',
        "",
        "Generated: every field optional, snake_case with the camelCase JSON name as alias,",
        'unknown fields kept (``extra="allow"``). See :mod:`aioinformer.k8s`.',
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    if "Any" in words:
        header.append("from typing import Any")
        header.append("")
    if "Field(" in body:
        header.append("from pydantic import Field")
        header.append("")
    if used_modules:
        header.append(f"from aioinformer.k8s import {', '.join(used_modules)}")
    header.append(f"from aioinformer.k8s._base import {', '.join(base_names)}")
    if models_names:
        header.append(f"from aioinformer.models import {', '.join(models_names)}")
    header.append("")
    header.append("__all__ = [")
    header.extend(f'    "{name}",' for name in names)
    header.append("]")
    return "\n".join(header) + "\n\n\n" + body + "\n"


def _modules(schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Module]:
    """The types to generate, per module: every kind of a shipped group (``*List`` kinds
    excepted) and every type reachable from them."""
    roots = [
        name
        for name, definition in schema.items()
        if _package(name) in GROUPS
        and _package(name) != _META.rstrip(".")
        and _is_kind(definition)
        and not name.endswith("List")
    ]
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen or name in _MAPPED:
            continue
        if _package(name) not in GROUPS:
            raise ValueError(f"{name} is referenced but its package is not in GROUPS")
        seen.add(name)
        for type_ref in _field_types(schema[name]):
            pending.extend(_named(type_ref))
    modules: dict[str, Module] = {}
    for name in sorted(seen, key=lambda n: n.rpartition(".")[2]):
        module_name, api_version = GROUPS[_package(name)]
        modules.setdefault(module_name, Module(module_name, api_version)).types.append(name)
    return modules


def generate(schema: Mapping[str, Mapping[str, Any]], version: str) -> dict[str, str]:
    """Module name -> source, for every module with at least one type."""
    return {
        name: render_module(module, schema, version)
        for name, module in sorted(_modules(schema).items())
    }


def main(argv: list[str] | None = None) -> None:
    """Command line: write the generated modules into ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--schema", type=Path, required=True, help="internal.go or its YAML")
    parser.add_argument("--version", required=True, help="Kubernetes version, e.g. 1.36.3")
    parser.add_argument("--out", type=Path, required=True, help="e.g. aioinformer/k8s")
    args = parser.parse_args(argv)
    schema = load_schema(args.schema.read_text(encoding="utf-8"))
    for name, source in generate(schema, args.version).items():
        (args.out / f"{name}.py").write_text(source, encoding="utf-8")


if __name__ == "__main__":
    main()
