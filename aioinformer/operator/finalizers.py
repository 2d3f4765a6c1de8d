"""Finalizers: run cleanup before the API server lets an object go.

Role: controller-runtime's ``controllerutil.AddFinalizer`` / ``RemoveFinalizer`` /
``ContainsFinalizer`` and its ``pkg/finalizer``, kopf's finalizer handling. An object with
a finalizer is only marked for deletion (``metadata.deletionTimestamp``) when deleted; it
goes once its last finalizer is removed. So a controller adds its finalizer while the
object lives, and once the object is marked, cleans up what it made outside the cluster,
then removes the finalizer.

Input: an object as the informer cache holds it (a dict or a model such as
:class:`~aioinformer.models.KubeObject`). Output: the pure helpers answer or change the
object in memory; :meth:`Finalizer.handle` writes the change to the API server and says
what the reconcile should do next (:class:`FinalizerResult`).

Writes are JSON merge patches carrying ``metadata.resourceVersion`` and the whole new
``metadata.finalizers`` list. The resourceVersion makes the patch conditional: if the
object changed since it was read (another controller added or removed its own finalizer,
a user edited it), the server answers 409 and nothing is written, so no one else's
finalizer is ever dropped and no concurrent change is lost; the
:class:`~aioinformer.errors.Conflict` propagates and the controller retries the key with
the fresh object.

Task model: the helpers are synchronous and pure; :meth:`Finalizer.handle` runs in the
caller's task (the reconcile), ``cleanup`` included.

Example::

    finalizer = Finalizer(client.resource("example.com/v1/widgets"),
                          "example.com/cleanup", release_external_resources)

    async def reconcile(key: str) -> None:
        widget = widgets.get(key)
        if widget is None:
            return
        result = await finalizer.handle(widget)
        if result.stop:          # finalized, or being deleted by others' finalizers
            return
        ...                      # the usual reconcile, the finalizer is in place
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from aioinformer._kernel.runner import is_async_callable
from aioinformer._objects.meta import _field, describe, metadata_of, name_of, namespace_of
from aioinformer._objects.meta import resource_version_of as _resource_version_of
from aioinformer._objects.view import ObjectView
from aioinformer.errors import NotFound, ReadOnlyObjectError
from aioinformer.labels import _DNS1123_SUBDOMAIN_RE, _NAME_RE

if TYPE_CHECKING:
    from aioinformer.client import ResourceClient

__all__ = [
    "Cleanup",
    "Finalizer",
    "FinalizerAction",
    "FinalizerResult",
    "add_finalizer",
    "add_finalizer_patch",
    "check_finalizer_name",
    "finalizers_of",
    "has_finalizer",
    "is_being_deleted",
    "remove_finalizer",
    "remove_finalizer_patch",
]

Cleanup = Callable[[Any], Awaitable[object] | object]
"""``cleanup(obj)``: sync or async; raising keeps the finalizer (the reconcile fails)."""

_MAX_NAME: Final = 63
_MAX_PREFIX: Final = 253


def check_finalizer_name(name: str) -> str:
    """Return ``name`` if it is a domain-qualified finalizer name (``example.com/cleanup``:
    a DNS subdomain, ``/``, then a name of at most 63 alphanumerics, ``-``, ``_`` or ``.``);
    raise ``ValueError`` naming the fault otherwise.

    kube-apiserver also accepts the unqualified built-ins (``kubernetes``, ``orphan``,
    ``foregroundDeletion``); they belong to Kubernetes itself, so a controller may not
    use them here.
    """
    if not isinstance(name, str):
        raise TypeError(f"a finalizer name is a str, not {type(name).__name__}")
    prefix, sep, path = name.partition("/")
    if not sep:
        raise ValueError(
            f"finalizer name {name!r} is not domain-qualified: use the form "
            "'example.com/name', as kube-apiserver requires of non-built-in finalizers"
        )
    if not prefix or len(prefix) > _MAX_PREFIX or not _DNS1123_SUBDOMAIN_RE.match(prefix):
        raise ValueError(
            f"finalizer name {name!r}: the prefix {prefix!r} must be a DNS subdomain "
            "(lowercase alphanumerics, '-' and '.', at most 253 characters)"
        )
    if not path or len(path) > _MAX_NAME or not _NAME_RE.match(path):
        raise ValueError(
            f"finalizer name {name!r}: the part after '/' must be 1 to 63 alphanumerics, "
            "with '-', '_' or '.' inside"
        )
    return name


def finalizers_of(obj: Any) -> list[str]:
    """A copy of the object's ``metadata.finalizers`` (empty when it has none)."""
    return list(_field(metadata_of(obj), "finalizers", "finalizers") or ())


def has_finalizer(obj: Any, name: str) -> bool:
    """Whether ``obj``'s ``metadata.finalizers`` holds ``name``."""
    return name in finalizers_of(obj)


def is_being_deleted(obj: Any) -> bool:
    """Whether ``obj`` is marked for deletion (``metadata.deletionTimestamp`` is set)."""
    return bool(_field(metadata_of(obj), "deletionTimestamp", "deletion_timestamp"))


def _set_finalizers(obj: Any, finalizers: list[str]) -> None:
    if isinstance(obj, ObjectView):
        raise ReadOnlyObjectError("finalizers are changed on a copy")
    if isinstance(obj, MutableMapping):
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
    else:
        meta = metadata_of(obj)
    if isinstance(meta, MutableMapping):
        meta["finalizers"] = finalizers
    elif meta is not None and hasattr(meta, "finalizers"):
        meta.finalizers = finalizers
    else:
        raise TypeError(f"cannot set finalizers on {describe(obj)}")


def add_finalizer(obj: Any, name: str) -> bool:
    """Append ``name`` to ``obj``'s finalizers in memory (a dict or a model); whether it
    was missing. Write the object afterwards (``update``)."""
    finalizers = finalizers_of(obj)
    if name in finalizers:
        return False
    _set_finalizers(obj, [*finalizers, name])
    return True


def remove_finalizer(obj: Any, name: str) -> bool:
    """Remove every ``name`` from ``obj``'s finalizers in memory; whether one was there."""
    finalizers = finalizers_of(obj)
    kept = [value for value in finalizers if value != name]
    if len(kept) == len(finalizers):
        return False
    _set_finalizers(obj, kept)
    return True


def _conditional_patch(obj: Any, finalizers: list[str]) -> dict[str, Any]:
    rv = _resource_version_of(obj)
    if not rv:
        raise ValueError(
            f"{describe(obj)} has no metadata.resourceVersion: a finalizer patch needs the "
            "object as read from the server, so that a concurrent change is not overwritten"
        )
    return {"metadata": {"resourceVersion": rv, "finalizers": finalizers}}


def add_finalizer_patch(obj: Any, name: str) -> dict[str, Any] | None:
    """The JSON merge patch that adds ``name`` to ``obj``'s finalizers, or ``None`` when it
    is there already.

    The patch holds the whole new list and ``obj``'s resourceVersion as a precondition
    (the server answers 409 if the object changed since), so it neither drops a finalizer
    added meanwhile nor overwrites another change. Raises ``ValueError`` for an object
    without a resourceVersion.
    """
    finalizers = finalizers_of(obj)
    if name in finalizers:
        return None
    return _conditional_patch(obj, [*finalizers, name])


def remove_finalizer_patch(obj: Any, name: str) -> dict[str, Any] | None:
    """The JSON merge patch that removes ``name`` from ``obj``'s finalizers, or ``None``
    when it is absent; conditional on ``obj``'s resourceVersion as
    :func:`add_finalizer_patch`."""
    finalizers = finalizers_of(obj)
    if name not in finalizers:
        return None
    return _conditional_patch(obj, [value for value in finalizers if value != name])


class FinalizerAction(enum.Enum):
    """What :meth:`Finalizer.handle` did."""

    ADDED = "added"
    """The object lives and lacked the finalizer: it was added (one write). Reconcile on,
    or return and let the write's event bring the key back."""
    PRESENT = "present"
    """The object lives and has the finalizer: nothing written. Reconcile on."""
    FINALIZED = "finalized"
    """The object is being deleted: cleanup ran and the finalizer was removed (or the
    object was gone already). Stop reconciling."""
    DELETING = "deleting"
    """The object is being deleted and this finalizer is not on it (removed earlier, or
    never added): nothing to do. Stop reconciling."""


@dataclass(frozen=True, slots=True)
class FinalizerResult:
    """The outcome of :meth:`Finalizer.handle`.

    ``object`` is the object as written (the server's answer) after ``ADDED`` or
    ``FINALIZED``, the object handed in after ``PRESENT`` or ``DELETING``, and ``None``
    when the object was gone (404) when the finalizer was removed.
    """

    action: FinalizerAction
    object: Any

    @property
    def stop(self) -> bool:
        """Whether the reconcile should stop: the object is on its way out."""
        return self.action in (FinalizerAction.FINALIZED, FinalizerAction.DELETING)

    @property
    def resource_version(self) -> str | None:
        """The resourceVersion of ``object`` (for ``wait_for_resource_version``)."""
        return None if self.object is None else _resource_version_of(self.object)


class Finalizer:
    """One controller's finalizer on one resource: added while objects live, ``cleanup``
    run and the finalizer removed once they are marked for deletion.

    ``resource_client`` writes the patches (``client.resource("example.com/v1/widgets")``);
    ``name`` is the domain-qualified finalizer name (``ValueError`` otherwise, see
    :func:`check_finalizer_name`); ``cleanup(obj)`` (sync or async, told apart once, here)
    releases what the object holds outside the cluster. It may run more than once for
    one object (a failed removal is retried), so it must be idempotent.
    """

    def __init__(self, resource_client: ResourceClient, name: str, cleanup: Cleanup) -> None:
        self._resources = resource_client
        self.name: Final = check_finalizer_name(name)
        self._cleanup = cleanup
        self._cleanup_is_async = is_async_callable(cleanup)

    async def handle(self, obj: Any) -> FinalizerResult:
        """Bring the finalizer on ``obj`` (as read from the cache) where it belongs; see
        :class:`FinalizerAction` for the four outcomes.

        Raises what ``cleanup`` raises (the finalizer stays, the reconcile is retried), and
        :class:`~aioinformer.errors.Conflict` when ``obj`` is stale (the controller retries
        with the fresh object). A 404 while removing counts as finalized.
        """
        if not is_being_deleted(obj):
            patch = add_finalizer_patch(obj, self.name)
            if patch is None:
                return FinalizerResult(FinalizerAction.PRESENT, obj)
            return FinalizerResult(FinalizerAction.ADDED, await self._patch(obj, patch))
        patch = remove_finalizer_patch(obj, self.name)
        if patch is None:
            return FinalizerResult(FinalizerAction.DELETING, obj)
        if self._cleanup_is_async:
            await self._cleanup(obj)  # type: ignore[misc]
        else:
            self._cleanup(obj)
        try:
            written = await self._patch(obj, patch)
        except NotFound:
            written = None
        return FinalizerResult(FinalizerAction.FINALIZED, written)

    async def _patch(self, obj: Any, patch: Mapping[str, Any]) -> dict[str, Any]:
        name = name_of(obj)
        if not name:
            raise ValueError(f"{describe(obj)} has no metadata.name")
        return await self._resources.patch(
            name, dict(patch), patch_type="merge", namespace=namespace_of(obj) or None
        )

    def __repr__(self) -> str:
        return f"<Finalizer {self.name!r} on {self._resources!r}>"
