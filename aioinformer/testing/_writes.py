"""The fake API server's write path: a create, update, patch or delete made into store writes.

Role: what turns one write request, as the routes parsed it, into admitted, converted
store writes. Input is the request's :class:`~aioinformer.testing._requests.Target`, its
decoded body (an object, a patch and its content type, or ``DeleteOptions``), its user, the
options its review carries, its field manager and its ``fieldValidation``; output is the
:class:`~aioinformer._apiserver.objects.Entry` written (the dry run's with ``?dryRun=All``),
in the request's version, or the ``Status`` failure kube-apiserver answers. Answering it is
the routes' task (``_routes``).

Ordering, per write: the body's own checks (name and namespace against the URL; a patch
applied to the stored object); then the admission chain (``_admission``: mutating
webhooks, the store's validation as a dry run, validating webhooks); then the write. A
version of a custom resource that its definition's webhook converts (``_converter``) is
admitted in the request's version (the admission webhooks are sent it, or the version a
rule names under ``matchPolicy: Equivalent``, converted), converted to the storage
version for the store's validation and the write, and the entry written is converted
back. A patch is applied again to a newer object when another write of it landed during
the webhooks' round trips (a 409 ``Conflict``), at most ``_PATCH_CONFLICT_RETRIES``
times, as kube-apiserver's patcher does, unless the patch names a resourceVersion.

Task model: :class:`Writes` runs in the handler task of its request on the server's event
loop; it awaits only the admission webhooks' calls and the conversion webhooks' answers.
:func:`patch_object` and :func:`patched_object` are synchronous (the server's direct
``patch`` uses them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from aioinformer._apiserver.objects import Entry, StatusError, object_key, status_body
from aioinformer.testing._admission import (
    AdmissionChain,
    Admitting,
    Write,
    request_warnings,
    write_options,
)
from aioinformer.testing._managed import UNKNOWN_MANAGER
from aioinformer.testing._patch import PatchError
from aioinformer.testing._requests import (
    PATCH_TYPES,
    Target,
    check_namespace,
    decode_body,
    invalid,
    prepare_new,
)

if TYPE_CHECKING:
    from aiohttp import web

    from aioinformer._apiserver.objects import ResourceType
    from aioinformer.testing._converter import Conversions
    from aioinformer.testing._resources import ResourceRegistry
    from aioinformer.testing._store import Store

__all__ = ["WriteRequest", "Writes", "field_validation", "patch_object", "patched_object"]

_PATCH_CONFLICT_RETRIES: Final = 5
"""kube-apiserver's ``maxRetryWhenPatchConflicts``."""


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """One create, update or patch as the routes parsed it: its URL's target, its user,
    the options its review carries, its field manager and its ``fieldValidation``."""

    target: Target
    user: str
    options: dict[str, Any]
    manager: str
    field_validation: str


class Writes:
    """Makes the write requests of one server into store writes (see the module docstring).

    It owns the admission chain; the store, the resource registry and the conversions are
    the server's, shared by reference, so a webhook configuration or a definition written
    by the test is seen by the next request.
    """

    def __init__(self, store: Store, registry: ResourceRegistry, conversions: Conversions) -> None:
        # Admission webhooks resolve services as conversion webhooks do, and are sent
        # another version of a converted resource through its conversion webhook.
        self._admission = AdmissionChain(
            store, registry, services=conversions.services, convert=conversions.convert
        )
        self._store = store
        self._conversions = conversions

    async def create(self, request: WriteRequest, obj: dict[str, Any]) -> Entry:
        """A create of ``obj``: completed as a new object, admitted, stored."""
        target = request.target
        rt = target.rt
        obj = prepare_new(rt, obj, target.namespace)
        if rt.status_subresource and rt.plural != "namespaces":
            obj.pop("status", None)

        async def create(
            new: dict[str, Any] | None, *, dry_run: bool, probe: Entry | None
        ) -> Entry:
            assert new is not None
            uid = None
            if probe is not None:
                # The object the validating webhooks saw is the one stored: its uid,
                # and the name a generateName was completed to.
                uid = probe.uid
                new["metadata"].setdefault("name", probe.name)
            storage_rt, stored = await self._conversions.to_storage(rt, new)
            entry = self._store.create(
                storage_rt,
                stored,
                manager=request.manager,
                dry_run=dry_run,
                uid=uid,
                field_validation=request.field_validation,
                warnings=request_warnings(),
            )
            return await self._conversions.entry(rt, entry)

        return await self._admitting(request).write("CREATE", obj, None, create)

    async def update(self, request: WriteRequest, obj: dict[str, Any]) -> Entry:
        """An update to ``obj``, whose name and namespace must be the URL's: admitted
        against the stored object, stored."""
        target = request.target
        rt = target.rt
        assert target.name is not None
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = obj["metadata"] = {}
        if meta.get("name") != target.name:
            raise StatusError(
                status_body(
                    400,
                    "BadRequest",
                    "the name of the object "
                    f"({meta.get('name') or ''}) does not match the name on the URL "
                    f"({target.name})",
                )
            )
        check_namespace(rt, meta, target.namespace)
        # A missing object is the store's 404, after the body's own checks.
        current = self._store.table(rt).entries.get(object_key(target.namespace, target.name))
        if current is not None and self._admission.configured():
            # The old object admission webhooks are sent, in the request's version.
            current = await self._conversions.entry(rt, current)
        return await self._admitting(request).write("UPDATE", obj, current, self._updater(request))

    async def patch(self, request: WriteRequest, patch: Any, content_type: str) -> Entry:
        """A patch: the stored object (converted to the request's version when a webhook
        converts it) patched, admitted and written as an update. The admission and
        conversion webhooks' round trips leave room for another write of the object: as
        kube-apiserver's patcher does, the patch is then applied again to the newer
        object, at most ``_PATCH_CONFLICT_RETRIES`` times, unless the patch names a
        resourceVersion (a precondition, whose 409 ``Conflict`` is answered at once)."""
        target = request.target
        rt = target.rt
        assert target.name is not None
        admitting = self._admitting(request)
        update = self._updater(request)
        attempts = 1 if _sets_resource_version(patch) else 1 + _PATCH_CONFLICT_RETRIES
        for attempt in range(attempts):
            stored = self._store.get(rt, target.namespace, target.name)
            current = await self._conversions.entry(rt, stored)
            patched = patched_object(
                current, rt, target.namespace, target.name, patch, content_type
            )
            try:
                return await admitting.write("UPDATE", patched, current, update)
            except StatusError as exc:
                if exc.code != 409 or attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def delete(self, target: Target, body: bytes, user: str, dry_run: list[str]) -> Entry:
        """A delete with the ``DeleteOptions`` of ``body`` (its preconditions and
        ``dryRun``, added to the query's ``dry_run``): admitted, then the store's delete.
        The entry is as stored (marked deleting while finalizers hold it)."""
        rt = target.rt
        assert target.name is not None
        name = target.name
        precondition_rv: str | None = None
        precondition_uid: str | None = None
        options: Any = decode_body(body) if body.strip() else {}
        if not isinstance(options, dict):
            options = {}
        preconditions = options.get("preconditions")
        if isinstance(preconditions, dict):
            precondition_rv = preconditions.get("resourceVersion")
            precondition_uid = preconditions.get("uid")
        if isinstance(options.get("dryRun"), list):
            dry_run = [*dry_run, *options["dryRun"]]
        review_options = write_options("delete", dry_run, {}, options)
        current = self._store.get(rt, target.namespace, name)
        if self._admission.configured():
            # The old object admission webhooks are sent, in the request's version.
            current = await self._conversions.entry(rt, current)

        async def delete(_: dict[str, Any] | None, *, dry_run: bool, probe: Entry | None) -> Entry:
            # As stored: the answer converts the object it carries.
            return self._store.delete(
                rt,
                target.namespace,
                name,
                precondition_rv=precondition_rv,
                precondition_uid=precondition_uid,
                dry_run=dry_run,
            )

        admitting = Admitting(self._admission, target, user, review_options)
        return await admitting.write("DELETE", None, current, delete)

    def _admitting(self, request: WriteRequest) -> Admitting:
        return Admitting(self._admission, request.target, request.user, request.options)

    def _updater(self, request: WriteRequest) -> Write:
        """The store update of an admitted object (after the webhooks' mutations, in the
        request's version): converted to the storage version when a webhook converts it,
        stored, and given back in the request's version."""
        rt = request.target.rt

        async def update(
            new: dict[str, Any] | None, *, dry_run: bool, probe: Entry | None
        ) -> Entry:
            assert new is not None
            storage_rt, stored = await self._conversions.to_storage(rt, new)
            entry = self._store.update(
                storage_rt,
                stored,
                subresource=request.target.subresource,
                manager=request.manager,
                dry_run=dry_run,
                field_validation=request.field_validation,
                warnings=request_warnings(),
            )
            return await self._conversions.entry(rt, entry)

        return update


def patch_object(
    store: Store,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    patch: Any,
    content_type: str,
    subresource: str | None,
    *,
    manager: str = UNKNOWN_MANAGER,
    field_validation: str = "Ignore",
    warnings: list[str] | None = None,
) -> Entry:
    """Apply a patch of ``content_type`` to a stored object and store the result as
    ``manager``'s write; the name and namespace may not change, and a resourceVersion
    the patch sets is a precondition. ``field_validation`` and ``warnings`` are as for
    :meth:`Store.create <aioinformer.testing._store.Store.create>`."""
    current = store.get(rt, namespace, name)
    patched = patched_object(current, rt, namespace, name, patch, content_type)
    # The patched object keeps the stored resourceVersion unless the patch set one,
    # which then acts as a precondition, as on the real server.
    return store.update(
        rt,
        patched,
        subresource=subresource,
        manager=manager,
        field_validation=field_validation,
        warnings=warnings,
    )


def patched_object(
    current: Entry,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    patch: Any,
    content_type: str,
) -> dict[str, Any]:
    """The object ``current`` (as stored, or as version ``rt`` has it when a webhook
    converts it) with a patch of ``content_type`` applied (the 400 or 422 for a patch
    that does not apply, that changes the name or namespace or removes the metadata)."""
    apply = PATCH_TYPES[content_type]
    try:
        target = {"apiVersion": rt.api_version, "kind": rt.kind, **current.decode()}
        patched = apply(target, patch)
    except PatchError as exc:
        raise StatusError(
            status_body(exc.code, "Invalid" if exc.code == 422 else "BadRequest", str(exc))
        ) from exc
    if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
        raise invalid(rt, name, "metadata", "the patch removed the metadata")
    meta = patched["metadata"]
    if meta.get("name") != name or meta.get("namespace") != namespace:
        raise invalid(rt, name, "metadata.name", "field is immutable", meta.get("name"))
    result: dict[str, Any] = patched
    return result


def field_validation(request: web.Request) -> str:
    """The request's directive for unknown fields: kube-apiserver's default is ``Warn``."""
    return request.query.get("fieldValidation") or "Warn"


def _sets_resource_version(patch: Any) -> bool:
    """Whether a patch sets ``metadata.resourceVersion`` (a merge patch's field, or a JSON
    patch operation on its path)."""
    if isinstance(patch, dict):
        meta = patch.get("metadata")
        return isinstance(meta, dict) and meta.get("resourceVersion") is not None
    if isinstance(patch, list):
        return any(
            isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" for op in patch
        )
    return False
