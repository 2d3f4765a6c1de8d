"""CustomResourceDefinitions on the fake API server, as kube-apiserver v1.36 serves them.

Role: the fake's stand-in for the apiextensions server and its controllers. Input is
every write of an ``apiextensions.k8s.io/v1`` CustomResourceDefinition (over HTTP or a
test's direct call; the store hands each to :class:`Definitions` as a
:class:`~aioinformer.testing._store.Controller`); output is the definition validated
(422 ``Invalid`` with one ``details.causes`` entry per error, in
``ValidateCustomResourceDefinition``'s words), defaulted and given its ``status``, and
the resource it defines served or no longer served:

* admission: ``metadata.name`` must be ``<spec.names.plural>.<spec.group>``; the group a
  DNS subdomain with a dot; the scope ``Namespaced`` or ``Cluster``; the plural, the
  singular, the kind, the list kind and the short names DNS-1035 labels (the kinds in
  any case); the versions' names unique DNS-1035 labels, exactly one of them the storage
  version; a ``scale`` subresource's ``specReplicasPath`` under ``.spec``, its
  ``statusReplicasPath`` under ``.status``, its ``labelSelectorPath`` (when set) under
  either; ``spec.conversion`` (``_conversion``: the strategy ``None`` or ``Webhook``, a
  webhook's client config and review versions); an update may not change
  the group, the plural, the scope or the kind. A plural already served in the group by
  something else (a built-in, or a ``register_crd`` resource) is refused on
  ``spec.names.plural``, where kube-apiserver would leave the names unaccepted.
  Each version needs a structural ``openAPIV3Schema`` whose defaults validate
  (``_schema_structural`` lists the checks and those left out);
* defaulting, as the v1 API defaults: ``names.singular`` (the kind, lowercased),
  ``names.listKind`` (``<Kind>List``), ``conversion.strategy: None``;
* ``status``: ``conditions`` ``NamesAccepted`` (reason ``NoConflicts``) and
  ``Established`` (``InitialNamesAccepted``), both ``"True"``, each keeping its
  ``lastTransitionTime`` across updates; ``acceptedNames`` (the defaulted names);
  ``storedVersions`` (the storage version, and every one that was before);
* installation: every version with ``served: true`` is served (discovery included) with
  the definition's scope and names and its own ``status`` and ``scale`` subresources (the
  scale read and written at the definition's paths). The versions share one object
  store, as they share one etcd key space: an object written at one version is read at
  every other with that version's ``apiVersion`` and nothing else converted, as
  ``strategy: None`` does (``strategy: Webhook``: ``_converter`` calls the webhook);
* deletion, as kube-apiserver's finalizer controller does it: the delete marks the
  definition with the ``customresourcecleanup.apiextensions.k8s.io`` finalizer and a
  ``Terminating`` condition (``InstanceDeletionInProgress``), then deletes every object
  of the resource (those without finalizers are removed, a ``DELETED`` event each; those
  with finalizers are marked, and removed when their controllers clear them). While any
  remains, the resource is still served but refuses creates (405 ``MethodNotAllowed``);
  once none does, the finalizer is removed (so, without finalizers of the user's, the
  definition is deleted), the open watches of the resource end after the events they
  were sent, and it is no longer served: its versions leave discovery and its URLs
  answer 404 as for an unknown resource. Removing the cleanup finalizer by hand, or
  deleting the definition while it is not installed, removes whatever objects remain at
  once. A definition created again later serves the resource anew, empty;
* custom objects: each version's schema is compiled once, when the definition is
  installed or changed; every create, update and ``status`` write of an object is
  pruned and defaulted by its version's schema (``_schema_defaults``), then validated
  against it (``_schema``: 422 ``Invalid`` with kube-apiserver's causes). The unknown
  fields pruned follow the request's ``fieldValidation``: ``Strict`` refuses the write
  with the decoder's 400 (``Widget in version "v1" cannot be handled as a Widget:
  strict decoding error: unknown field "spec.colour"``), ``Warn`` (kube-apiserver's
  default over HTTP) answers one ``Warning`` header per field (``299 - "unknown field
  \"spec.colour\""``), ``Ignore`` (the test's direct calls) drops them silently; a
  value that is none of these is taken as ``Ignore``, where kube-apiserver refuses it.

Kube-apiserver's controllers do all this asynchronously, within moments; here it is done
within the write, so the answer to a create already shows the definition
``Established`` and the resource served.

Task model: synchronous, called by the store on the server's event loop.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

import orjson

from aioinformer._apiserver.objects import ResourceType, StatusError, status_body
from aioinformer.testing._conversion import conversion_errors, default_conversion
from aioinformer.testing._resources import CRD_TYPE
from aioinformer.testing._schema import compile_schema, schema_errors
from aioinformer.testing._schema_defaults import apply_defaults, prune
from aioinformer.testing._schema_structural import schema_definition_errors
from aioinformer.testing._spec_fields import _invalid, _not_supported, _required
from aioinformer.testing._validation import (
    bad_request,
    dns1035_label_errors,
    dns_subdomain_errors,
    invalid_error,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aioinformer._apiserver.objects import Entry
    from aioinformer.testing._resources import ResourceRegistry
    from aioinformer.testing._schema import Node
    from aioinformer.testing._store import Store
    from aioinformer.testing._validation import FieldError

__all__ = ["CLEANUP_FINALIZER", "Definitions"]

_SCOPES: Final = ("Cluster", "Namespaced")
_IMMUTABLE: Final = "field is immutable"
CLEANUP_FINALIZER: Final = "customresourcecleanup.apiextensions.k8s.io"
"""The finalizer that holds a deleted definition until its objects are gone."""
_CONDITIONS: Final = (
    ("NamesAccepted", "NoConflicts", "no conflicts found"),
    ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _versions(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    versions = spec.get("versions")
    return [_dict(v) for v in versions] if isinstance(versions, list) else []


def _label(field: str, value: str, prefix: str = "") -> list[FieldError]:
    """The one ``FieldValueInvalid`` of a set ``value`` that is no DNS-1035 label."""
    errors = dns1035_label_errors(value.lower() if prefix else value) if value else []
    return [_invalid(field, value, prefix + ",".join(errors))] if errors else []


def _names_errors(names: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateCustomResourceDefinitionNames`` after the spec's required names."""
    errors = [
        _required(f"spec.names.{key}")
        for key in ("plural", "singular", "kind", "listKind")
        if not _str(names.get(key))
    ]
    errors += _label("spec.names.plural", _str(names.get("plural")))
    errors += _label("spec.names.singular", _str(names.get("singular")))
    mixed = "may have mixed case, but should otherwise match: "
    kind, list_kind = _str(names.get("kind")), _str(names.get("listKind"))
    errors += _label("spec.names.kind", kind, mixed)
    errors += _label("spec.names.listKind", list_kind, mixed)
    short_names = names.get("shortNames")
    for i, short in enumerate(short_names if isinstance(short_names, list) else ()):
        errors += _label(f"spec.names.shortNames[{i}]", _str(short)) if short else []
    if kind and kind == list_kind:
        errors.append(
            _invalid("spec.names.listKind", list_kind, "kind and listKind may not be the same")
        )
    return errors


def _scale_errors(field: str, scale: Mapping[str, Any]) -> list[FieldError]:
    """A version's ``scale`` subresource paths (``field``: its path)."""
    errors: list[FieldError] = []
    rules = (
        ("specReplicasPath", (".spec.",), "should be a json path under .spec"),
        ("statusReplicasPath", (".status.",), "should be a json path under .status"),
    )
    for key, prefixes, detail in rules:
        path = _str(scale.get(key))
        if not path:
            errors.append(_required(f"{field}.{key}"))
        elif not path.startswith(prefixes):
            errors.append(_invalid(f"{field}.{key}", path, detail))
    selector = _str(scale.get("labelSelectorPath"))
    if selector and not selector.startswith((".spec.", ".status.")):
        detail = "should be a json path under either .spec or .status"
        errors.append(_invalid(f"{field}.labelSelectorPath", selector, detail))
    return errors


def _spec_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateCustomResourceDefinition``: the name, then the spec, in its order."""
    spec = _dict(obj.get("spec"))
    names = _dict(spec.get("names"))
    group, plural = _str(spec.get("group")), _str(names.get("plural"))
    errors: list[FieldError] = []
    name = _str(_dict(obj.get("metadata")).get("name"))
    if name != f"{plural}.{group}":
        errors.append(_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        errors.append(_required("spec.group"))
    elif subdomain := dns_subdomain_errors(group):
        errors.append(_invalid("spec.group", group, ",".join(subdomain)))
    elif "." not in group:
        errors.append(_invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = _str(spec.get("scope"))
    if not scope:
        errors.append(_required("spec.scope"))
    elif scope not in _SCOPES:
        errors.append(_not_supported("spec.scope", scope, _SCOPES))
    versions = _versions(spec)
    seen: set[str] = set()
    for i, version in enumerate(versions):
        version_name = _str(version.get("name"))
        if problems := dns1035_label_errors(version_name):
            errors.append(_invalid(f"spec.versions[{i}].name", version_name, ",".join(problems)))
        seen.add(version_name)
        scale = _dict(version.get("subresources")).get("scale")
        if isinstance(scale, dict):
            errors += _scale_errors(f"spec.versions[{i}].subresources.scale", scale)
    raw_versions = spec.get("versions")
    if len(seen) != len(versions):
        errors.append(_invalid("spec.versions", raw_versions, "must contain unique version names"))
    if sum(1 for version in versions if version.get("storage") is True) != 1:
        detail = "must have exactly one version marked as storage version"
        errors.append(_invalid("spec.versions", raw_versions, detail))
    errors += schema_definition_errors(versions)
    errors += _names_errors(names)
    errors += conversion_errors(_dict(spec.get("conversion")))
    return errors


def _update_errors(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateCustomResourceDefinitionSpecUpdate``'s immutable fields (the scope and
    the kind are immutable once established, which a stored definition here always is)."""
    spec, old_spec = _dict(obj.get("spec")), _dict(old.get("spec"))
    names, old_names = _dict(spec.get("names")), _dict(old_spec.get("names"))
    errors = []
    for field, new, before in (
        ("spec.scope", spec.get("scope"), old_spec.get("scope")),
        ("spec.names.kind", names.get("kind"), old_names.get("kind")),
        ("spec.group", spec.get("group"), old_spec.get("group")),
        ("spec.names.plural", names.get("plural"), old_names.get("plural")),
    ):
        if new != before:
            errors.append(_invalid(field, new, _IMMUTABLE))
    return errors


def _default(obj: dict[str, Any]) -> None:
    """What the v1 API defaults on a definition, in place."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = _str(names.get("kind"))
        if not names.get("singular") and kind:
            names["singular"] = kind.lower()
        if not names.get("listKind") and kind:
            names["listKind"] = kind + "List"
    default_conversion(spec)


def _status(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> dict[str, Any]:
    """The status the naming and establishing controllers write, keeping the transition
    times of conditions that were already true and every version stored before."""
    spec = _dict(obj.get("spec"))
    names = _dict(spec.get("names"))
    previous = _dict((old or {}).get("status"))
    since = {
        _str(c.get("type")): c.get("lastTransitionTime")
        for c in previous.get("conditions") or ()
        if isinstance(c, dict) and c.get("status") == "True"
    }
    now = _now()
    conditions = [
        {
            "type": kind,
            "status": "True",
            "lastTransitionTime": since.get(kind) or now,
            "reason": reason,
            "message": message,
        }
        for kind, reason, message in _CONDITIONS
    ]
    conditions += [
        c
        for c in previous.get("conditions") or ()
        if isinstance(c, dict) and c.get("type") not in ("NamesAccepted", "Established")
    ]
    accepted = {
        key: names[key]
        for key in ("plural", "singular", "shortNames", "kind", "listKind", "categories")
        if names.get(key)
    }
    stored = [v for v in previous.get("storedVersions") or () if isinstance(v, str)]
    for version in _versions(spec):
        if version.get("storage") is True and version.get("name") not in stored:
            stored.append(version["name"])
    return {"conditions": conditions, "acceptedNames": accepted, "storedVersions": stored}


def version_types(obj: Mapping[str, Any]) -> tuple[tuple[ResourceType, ...], ResourceType]:
    """The resource types of a valid definition: one per served version, and the storage
    version's (served or not), whose ``id`` they all share."""
    spec = _dict(obj.get("spec"))
    names = _dict(spec.get("names"))
    short_names = names.get("shortNames")
    served: list[ResourceType] = []
    storage: ResourceType | None = None
    for version in _versions(spec):
        subresources = _dict(version.get("subresources"))
        scale = subresources.get("scale")
        rt = ResourceType(
            spec["group"],
            version["name"],
            names["plural"],
            names["kind"],
            spec.get("scope") == "Namespaced",
            names["singular"],
            tuple(short_names) if isinstance(short_names, list) else (),
            isinstance(subresources.get("status"), dict),
            scale_subresource=isinstance(scale, dict),
            scale_paths=(
                (
                    scale["specReplicasPath"],
                    scale["statusReplicasPath"],
                    _str(scale.get("labelSelectorPath")),
                )
                if isinstance(scale, dict)
                else None
            ),
            generation=True,
        )
        if version.get("served") is True:
            served.append(rt)
        if version.get("storage") is True:
            storage = rt
    assert storage is not None  # admitted definitions have one
    return tuple(served), storage


class Definitions:
    """The definitions of one server and the resources they installed (a
    :class:`~aioinformer.testing._store.Controller` of CustomResourceDefinitions).

    Invariants: ``_installed`` maps the name of every definition whose resource is served
    to the resource types its served versions are served as (all of them in the
    registry) and its storage version's type, whose objects an :class:`_Instances` in the
    store's controllers watches; ``_schemas`` holds, for each of them, the compiled
    schema of every version (served or not) by version name; ``_terminating`` holds
    those of them marked for deletion, whose objects are being deleted.
    """

    def __init__(self, registry: ResourceRegistry, store: Store) -> None:
        self._registry = registry
        self._store = store
        self._installed: dict[str, tuple[tuple[ResourceType, ...], ResourceType]] = {}
        self._schemas: dict[str, dict[str, Node]] = {}
        self._terminating: set[str] = set()

    # -- the store's Controller ----------------------------------------------------------

    def admit(
        self, obj: dict[str, Any], old: Mapping[str, Any] | None, field_validation: str
    ) -> list[str]:
        """Default, validate (the 422) and give ``obj`` its status, in place (unknown
        fields of a definition are kept, so there is nothing to warn of)."""
        _default(obj)
        errors = _spec_errors(obj)
        if old is not None:
            errors += _update_errors(obj, old)
        name = _str(_dict(obj.get("metadata")).get("name"))
        if not errors:
            errors += self._conflicts(name, obj)
        if errors:
            raise invalid_error(CRD_TYPE, name, errors)
        obj["status"] = _status(obj, old)
        return []

    def admit_status(
        self, obj: dict[str, Any], old: Mapping[str, Any], field_validation: str
    ) -> list[str]:
        return []

    def deleting(self, obj: dict[str, Any]) -> None:
        """Hold the definition with the cleanup finalizer while its objects go, marked
        ``Terminating`` as kube-apiserver's delete marks it."""
        if _str(obj["metadata"].get("name")) not in self._installed:
            return
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        status = obj.setdefault("status", {})
        conditions = [
            c for c in status.get("conditions") or () if _dict(c).get("type") != "Terminating"
        ]
        conditions.append(
            {
                "type": "Terminating",
                "status": "True",
                "lastTransitionTime": _now(),
                "reason": "InstanceDeletionInProgress",
                "message": "CustomResource deletion is in progress",
            }
        )
        status["conditions"] = conditions

    def removing(self, entry: Entry) -> None:
        self._uninstall(entry.name)

    def written(self, event_type: str, entry: Entry) -> None:
        if event_type == "DELETED":
            self._uninstall(entry.name)
        elif entry.deleting:
            self._terminate(entry.name)
        else:
            self._install(entry.name, entry.decode())

    # -- what its objects' controller asks -------------------------------------------------

    def schema(self, name: str, version: str) -> tuple[ResourceType, Node] | None:
        """The storage resource type of installed definition ``name`` and the compiled
        schema of its ``version`` (``None``: not installed, or no such version)."""
        installed = self._installed.get(name)
        node = self._schemas.get(name, {}).get(version)
        return None if installed is None or node is None else (installed[1], node)

    def terminating(self, name: str) -> bool:
        """Whether definition ``name`` is deleting its objects."""
        return name in self._terminating

    def finish(self, name: str) -> None:
        """Once a terminating definition has no object left: remove its cleanup
        finalizer (deleting it, unless the user's finalizers hold it) and stop serving
        its resource."""
        installed = self._installed.get(name)
        if name not in self._terminating or installed is None:
            return
        if self._store.table(installed[1]).entries:
            return
        crd = self._store.get(CRD_TYPE, None, name).decode()
        finalizers = crd["metadata"].get("finalizers") or []
        if CLEANUP_FINALIZER in finalizers:
            crd["metadata"]["finalizers"] = [f for f in finalizers if f != CLEANUP_FINALIZER]
            self._store.update(CRD_TYPE, crd, manager="kube-apiserver")
        self._uninstall(name)

    # -- installation ----------------------------------------------------------------------

    def _conflicts(self, name: str, obj: Mapping[str, Any]) -> list[FieldError]:
        """A plural served in the definition's group by something it did not install."""
        spec = _dict(obj.get("spec"))
        group, plural = spec["group"], spec["names"]["plural"]
        own = self._installed.get(name, ((), None))[0]
        for rt in self._registry:
            if (rt.group, rt.plural) == (group, plural) and rt not in own:
                detail = f"is already served in API group {group!r} by another resource"
                return [_invalid("spec.names.plural", plural, detail)]
        return []

    def _install(self, name: str, obj: Mapping[str, Any]) -> None:
        served, storage = version_types(obj)
        before = self._installed.get(name, ((), storage))[0]
        for rt in before:
            if rt not in served:
                self._registry.remove(rt)
        for rt in served:
            self._registry.add(rt)
        self._installed[name] = (served, storage)
        self._schemas[name] = {
            version["name"]: compile_schema(version["schema"]["openAPIV3Schema"])
            for version in _versions(_dict(obj.get("spec")))
        }
        self._store.controllers[storage.id] = _Instances(self, name)

    def _terminate(self, name: str) -> None:
        """Delete every object of the resource (a mark, for those with finalizers)."""
        installed = self._installed.get(name)
        if name in self._terminating or installed is None:
            return
        self._terminating.add(name)
        storage = installed[1]
        for entry in list(self._store.table(storage).entries.values()):
            if not entry.deleting:
                self._store.delete(storage, entry.namespace, entry.name)
        self.finish(name)

    def _uninstall(self, name: str) -> None:
        installed = self._installed.pop(name, None)
        self._schemas.pop(name, None)
        self._terminating.discard(name)
        if installed is None:
            return
        served, storage = installed
        for rt in served:
            self._registry.remove(rt)
        self._store.controllers.pop(storage.id, None)
        self._store.drop(storage)


class _Instances:
    """The controller of one installed resource's objects: creates are refused while its
    definition terminates, every write is pruned, defaulted and validated by its
    version's schema, and the removal of the last one lets the definition go."""

    def __init__(self, definitions: Definitions, name: str) -> None:
        self._definitions = definitions
        self._name = name

    def admit(
        self, obj: dict[str, Any], old: Mapping[str, Any] | None, field_validation: str
    ) -> list[str]:
        if old is None and self._definitions.terminating(self._name):
            raise StatusError(
                status_body(
                    405,
                    "MethodNotAllowed",
                    "create not allowed while custom resource definition is terminating",
                )
            )
        return self._apply_schema(obj, field_validation)

    def admit_status(
        self, obj: dict[str, Any], old: Mapping[str, Any], field_validation: str
    ) -> list[str]:
        return self._apply_schema(obj, field_validation)

    def _apply_schema(self, obj: dict[str, Any], field_validation: str) -> list[str]:
        """Prune, default and validate ``obj`` by the schema of its ``apiVersion``; the
        warnings of the unknown fields pruned, under ``Warn``."""
        version = _str(obj.get("apiVersion")).rpartition("/")[2]
        found = self._definitions.schema(self._name, version)
        if found is None:
            return []
        rt, node = found
        unknown = [f"unknown field {orjson.dumps(path).decode()}" for path in prune(obj, node)]
        if unknown and field_validation == "Strict":
            raise bad_request(
                f"{rt.kind} in version {orjson.dumps(rt.version).decode()} cannot be handled "
                f"as a {rt.kind}: strict decoding error: {', '.join(unknown)}"
            )
        apply_defaults(obj, node)
        errors = schema_errors(node, obj)
        if errors:
            raise invalid_error(rt, _str(_dict(obj.get("metadata")).get("name")), errors)
        return unknown if field_validation == "Warn" else []

    def deleting(self, obj: dict[str, Any]) -> None:
        pass

    def removing(self, entry: Entry) -> None:
        pass

    def written(self, event_type: str, entry: Entry) -> None:
        if event_type == "DELETED":
            self._definitions.finish(self._name)
