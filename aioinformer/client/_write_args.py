"""The arguments of the write calls, checked where the client and the fake API server take
them.

Role: turn what a user handed ``create`` or ``update`` into the one object to send, and
stop a ``patch`` whose arguments are out of place, before anything is sent or stored.
Input: the call's arguments and the name of the call, as the user wrote it
(``"ResourceClient.create"``). Output: a mapping, or
:class:`~aioinformer.errors.NotAnObjectError` /
:class:`~aioinformer.errors.PatchArgumentsError` with a message that says what to write
instead. :class:`~aioinformer.client.ResourceClient` and the fake API server's direct
Python API both call these, so one mistake gets one answer from either.

The mistakes caught are the ones a wrong argument order or a wrong idea of the body
makes: a list of objects or a manifest's text given to ``create``; a patch body given
where the namespace goes and a string where the body goes (``patch(name, namespace,
body)``, as ``get(name, namespace)`` takes its namespace). Two strings in swapped places
cannot be told apart from a correct call and are left to the server's answer.

A pydantic model (a :class:`~aioinformer.models.KubeObject`, as typed listers hand out)
is accepted as an object: it is dumped by alias into its JSON form, without the fields
that are ``None`` (so an object built in code keeps its defaulted ``apiVersion`` and
``kind`` and sends no ``null`` for what it never set).

Pure, synchronous functions; the per-event path never calls them.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel

from aioinformer.errors import NotAnObjectError, PatchArgumentsError

__all__ = ["check_fake_patch_arguments", "check_patch_arguments", "object_body"]

_SHORT: Final = reprlib.Repr()
_SHORT.maxlevel = 2
_SHORT.maxdict = _SHORT.maxlist = 2
_SHORT.maxstring = _SHORT.maxother = 40

_EXAMPLE_OBJECT: Final = (
    "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': ..., 'namespace': ...}}"
)


def _short(value: object) -> str:
    return _SHORT.repr(value)


def _kind_of(value: object) -> str:
    if isinstance(value, Mapping):
        return "mapping"
    return type(value).__name__


def object_body(obj: object, *, call: str) -> Mapping[str, Any]:
    """The object ``call`` (``"ResourceClient.create"``, ...) is to send: ``obj`` itself
    when it is a mapping, a pydantic model's JSON form by alias without its ``None``
    fields; :class:`NotAnObjectError` for anything else, saying what to pass."""
    if isinstance(obj, Mapping):
        return obj
    if isinstance(obj, BaseModel):
        body: dict[str, Any] = obj.model_dump(mode="json", by_alias=True, exclude_none=True)
        return body
    verb = call.rpartition(".")[2]
    expected = (
        f"{call}() takes one object: a mapping such as {_EXAMPLE_OBJECT}, or a KubeObject model"
    )
    if isinstance(obj, (list, tuple)):
        items = "1 item" if len(obj) == 1 else f"{len(obj)} items"
        raise NotAnObjectError(
            f"{expected}; it got a {type(obj).__name__} of {items}:"
            f" {verb} each item with a call of its own"
        )
    if isinstance(obj, (str, bytes)):
        raise NotAnObjectError(
            f"{expected}; it got the {type(obj).__name__} {_short(obj)}: decode a manifest's"
            " JSON or YAML text first (orjson.loads, yaml.safe_load) and pass the mapping"
        )
    raise NotAnObjectError(
        f"{expected}; it got a value of type {type(obj).__name__}: {_short(obj)}"
    )


def check_patch_arguments(name: object, patch: object, namespace: object) -> None:
    """Raise :class:`PatchArgumentsError` unless ``ResourceClient.patch(name, patch,
    namespace)`` got a name, a body and a namespace (or ``None``) in their places."""
    signature = "ResourceClient.patch(name, patch, namespace=None)"
    order = (
        f"{signature} takes the name, then the patch body, then the namespace"
        " (get(name, namespace) takes the namespace second)"
    )
    body_is_text = isinstance(patch, (str, bytes))
    namespace_is_body = namespace is not None and not isinstance(namespace, str)
    if body_is_text and namespace_is_body:
        # patch("web", "default", body), or patch("default", "web", body).
        body = _short(namespace)
        message = (
            f"{order}; it got the {type(patch).__name__} {patch!r} where the patch body goes"
            f" and a {_kind_of(namespace)} where the namespace goes. Write"
            f" patch({name!r}, {body}, namespace={patch!r}), or"
            f" patch({patch!r}, {body}, namespace={name!r}) if {patch!r} is the name"
        )
    elif body_is_text and not isinstance(name, str):
        # patch(body, "web", "default"): the body came first.
        message = (
            f"{order}; it got a {_kind_of(name)} where the name goes and the"
            f" {type(patch).__name__} {patch!r} where the patch body goes. Write"
            f" patch({patch!r}, {_short(name)}, namespace={namespace!r})"
        )
    elif body_is_text:
        message = (
            f"{order}; it got the {type(patch).__name__} {patch!r} where the patch body"
            " goes. The body is a mapping (merge, strategic and apply patches) or a list of"
            f" operations (patch_type='json'): patch({name!r}, {{...}}, namespace=...)"
        )
    elif namespace_is_body:
        message = (
            f"{order}; it got a {_kind_of(namespace)} where the namespace goes: the"
            " namespace is a str, or None for the client's own"
        )
    elif not isinstance(name, str):
        message = (
            f"{order}; it got a {_kind_of(name)} where the name goes: the name is the"
            " object's metadata.name, a str"
        )
    else:
        return
    raise PatchArgumentsError(message)


def check_fake_patch_arguments(
    resource: str, namespace: object, name: object, patch: object
) -> None:
    """Raise :class:`PatchArgumentsError` unless ``FakeAPIServer.patch(resource,
    namespace, name, patch)`` got a namespace (or ``None``), a name and a body in their
    places."""
    order = (
        "FakeAPIServer.patch(resource, namespace, name, patch) takes the namespace before"
        " the name, as its get() and delete() do, and the patch body last"
    )
    body_is_text = isinstance(patch, (str, bytes))
    if body_is_text and not isinstance(name, str):
        # The client's order: patch(resource, name, body, namespace).
        message = (
            f"{order}; it got a {_kind_of(name)} where the name goes and the"
            f" {type(patch).__name__} {patch!r} where the patch body goes. Write"
            f" patch({resource!r}, {patch!r}, {namespace!r}, {_short(name)})"
        )
    elif body_is_text:
        message = (
            f"{order}; it got the {type(patch).__name__} {patch!r} where the patch body"
            " goes. The body is a mapping (merge and strategic patches) or a list of"
            f" operations (patch_type='json'): patch({resource!r}, {namespace!r},"
            f" {name!r}, {{...}})"
        )
    elif namespace is not None and not isinstance(namespace, str):
        message = (
            f"{order}; it got a {_kind_of(namespace)} where the namespace goes: the"
            " namespace is a str, or None for a cluster-scoped resource"
        )
    elif not isinstance(name, str):
        message = f"{order}; it got a {_kind_of(name)} where the name goes: the name is a str"
    else:
        return
    raise PatchArgumentsError(message)
