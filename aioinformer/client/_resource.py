"""Requests on one resource type: the real ``ListerWatcher``, plus get/create/update/patch/delete.

Role: turn calls on a resource into requests. Input: a resource (a :class:`GVR`, a string
resolved through discovery, or a :class:`ResourceInfo`), an optional bound namespace, list
options and objects. Output: :class:`~aioinformer.listwatch.ObjectList` pages, a
:class:`~aioinformer.listwatch.WatchEvent` stream (read by :mod:`aioinformer.watch`), and
the decoded answers of single-object requests, as plain dicts.

A LIST page's items get ``apiVersion`` and ``kind`` from the list, in place (the server
leaves them out). ``metadata_only`` asks for ``PartialObjectMetadata`` as client-go's
metadata client does. A watch's events come in stream order; it has a read deadline only
when one is asked for (see :func:`watch_read_timeout`): the inactivity deadline of a
watch belongs to the reflector that consumes it.

Every request goes through the :class:`~aioinformer.client._http.HttpSession` of the
client the resource client was made from: limits and deadlines are read there.
Task model: every method runs in the calling task; a watch is an async generator run by
its consumer (wrapped in a :class:`~aioinformer.watch.WatchStream`), and closing it
closes the connection. Nothing is logged per request.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Final, Literal

from aioinformer._objects.raw import OBJECTS_DECODER
from aioinformer.client._http import JSON, HttpSession
from aioinformer.client._names import GVR, ResourceInfo, check_namespace, check_subresource
from aioinformer.client._transport import map_transport_errors
from aioinformer.client._watch import WatchStream
from aioinformer.client._write_args import check_patch_arguments, object_body
from aioinformer.listwatch import DescribedListerWatcher, ListOptions, ObjectList, SourceInfo

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    import aiohttp
    from pydantic import BaseModel

    from aioinformer.client._discovery import Discovery
    from aioinformer.listwatch import Decoder

__all__ = ["PatchType", "ResourceClient", "watch_read_timeout"]

PatchType = Literal["merge", "strategic", "json", "apply"]

_PATCH_CONTENT_TYPES: Final[Mapping[str, str]] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}
_META_LIST_ACCEPT: Final = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
_META_OBJECT_ACCEPT: Final = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


def watch_read_timeout(explicit: float | None, configured: float | None) -> float | None:
    """The read deadline of one watch: ``explicit`` (the watch's own), else ``configured``
    (the client's ``watch_inactivity_timeout``), else ``None``: no deadline.

    A reflector bounds each watch's silence itself, so the client adds no second,
    competing deadline unless asked; one asked for still applies (a direct user of
    :meth:`ResourceClient.watch` without a reflector).
    """
    return explicit if explicit is not None else configured


class ResourceClient(DescribedListerWatcher):
    """Requests on one resource type, optionally bound to a namespace.

    A ``ListerWatcher`` (``list`` one page, ``watch`` a stream) that declares streaming
    lists (:meth:`describe`: kube-apiserver serves them, and a reflector falls back to
    LIST+WATCH from one that refuses), plus ``get``, ``create``, ``update``, ``patch`` and
    ``delete``, all returning the decoded answer. ``namespace`` (the bound one) ``None``
    means all namespaces for list and watch; single-object requests then use the object's
    namespace or the config's default.
    For a cluster-scoped resource namespaces are ignored.

    ``get``, ``update`` and ``patch`` take ``subresource=``: ``"status"`` writes only the
    status of a resource that has the status subresource (the server ignores everything
    else, as the main resource ignores ``status``); ``"scale"`` reads and writes an
    ``autoscaling/v1`` ``Scale``.

    ``metadata_only=True`` asks the server for ``PartialObjectMetadata`` as client-go's
    metadata client does: ``list`` pages are ``PartialObjectMetadataList`` (each item's
    apiVersion and kind are ``meta.k8s.io/v1`` and ``PartialObjectMetadata``), watch events
    and every single-object answer are ``PartialObjectMetadata``.
    """

    def __init__(
        self,
        http: HttpSession,
        discovery: Discovery,
        resource: str | GVR | ResourceInfo,
        namespace: str | None = None,
        *,
        metadata_only: bool = False,
    ) -> None:
        # What it shares with the Client that made it: the HTTP layer (requests, limits and
        # read deadlines) and discovery's cache, never the client itself.
        self._http = http
        self._discovery = discovery
        self._spec = resource
        self._info: ResourceInfo | None = resource if isinstance(resource, ResourceInfo) else None
        if isinstance(resource, str) and "/" in resource:
            GVR.parse(resource)  # fail fast on a malformed resource string
        self._namespace = None if namespace is None else check_namespace(namespace)
        self._metadata_only = metadata_only

    @property
    def namespace(self) -> str | None:
        """The bound namespace; ``None`` for all namespaces."""
        return self._namespace

    def describe(self) -> SourceInfo:
        """The resource as it was named (``"pods"``, ``"apps/v1/deployments"``), the bound
        namespace, ``metadata_only``, streaming lists supported, and the server's URL."""
        spec = self._spec
        resource = str(spec.gvr) if isinstance(spec, ResourceInfo) else str(spec)
        return SourceInfo(
            resource=resource,
            namespace=self._namespace,
            metadata_only=self._metadata_only,
            watch_list=True,
            server=self._http.config.host,
        )

    def metadata_lister(self) -> ResourceClient:
        """This resource and namespace answered as ``PartialObjectMetadata``, what a cache
        audit lists; itself when it is metadata-only already."""
        if self._metadata_only:
            return self
        return ResourceClient(
            self._http,
            self._discovery,
            self._info if self._info is not None else self._spec,
            self._namespace,
            metadata_only=True,
        )

    async def info(self) -> ResourceInfo:
        """The resolved resource (discovery on first call)."""
        if self._info is None:
            spec = self._spec
            assert not isinstance(spec, ResourceInfo)
            self._info = await self._discovery.resolve(spec)
        return self._info

    def _object_namespace(self, info: ResourceInfo, *candidates: str | None) -> str | None:
        if not info.namespaced:
            return None
        for candidate in candidates:
            if candidate:
                return check_namespace(candidate)
        return self._namespace or self._http.config.namespace

    async def list(self, options: ListOptions | None = None) -> ObjectList:
        """One page of the collection. Each item gets ``apiVersion`` and ``kind`` from the
        list (the server leaves them out), in place, without copying."""
        return await self._list(options, OBJECTS_DECODER)

    async def _list(self, options: ListOptions | None, codec: Decoder) -> ObjectList:
        info = await self.info()
        url, body = await self._http.request_bytes(
            "GET",
            info.collection_path(self._namespace),
            query=(options or ListOptions()).to_query(),
            accept=self._list_accept(),
            max_bytes=self._http.max_list_bytes,
        )
        with map_transport_errors(url):
            return codec.decode_list(body, kind=info.kind, api_version=info.gvr.api_version)

    def _list_accept(self) -> str:
        return _META_LIST_ACCEPT + "," + JSON if self._metadata_only else JSON

    def decoded_with(self, codec: Decoder) -> DescribedListerWatcher:
        """This resource, listed and watched through ``codec``: its items and events'
        objects are what ``codec`` decodes the bytes into (a compact cache's
        :class:`~aioinformer._objects.raw.CompactEntry`, read without building a ``dict``)."""
        return _Decoded(self, codec)

    def watch(
        self, options: ListOptions | None = None, *, inactivity_timeout: float | None = None
    ) -> WatchStream:
        """Open a watch (``?watch=1`` plus ``options``): an async iterator of events whose
        ``opened`` turns true once the server answered 2xx.

        With ``inactivity_timeout`` (or the client's ``watch_inactivity_timeout``), the
        stream raises :class:`WatchTimeout` after that many seconds without a byte;
        without either it has no read deadline, and bounding its silence is the
        consumer's job (a reflector does). Closing the generator, or cancelling its
        consumer, closes the connection. The watch asks for no compression unless the
        client was built with ``watch_compression=True``; a gzip body is read whole
        either way, every member of it.
        """
        return self._watch(options, OBJECTS_DECODER, inactivity_timeout)

    def _watch(
        self, options: ListOptions | None, codec: Decoder, inactivity_timeout: float | None = None
    ) -> WatchStream:
        opts = options or ListOptions()
        deadline = watch_read_timeout(inactivity_timeout, self._http.watch_read_timeout)

        @contextlib.asynccontextmanager
        async def open_response() -> AsyncIterator[aiohttp.ClientResponse]:
            info = await self.info()
            query = opts.to_query()
            query["watch"] = "1"
            # A watch's events are single objects: client-go's metadata client asks for
            # PartialObjectMetadata here (asked for a list, kube-apiserver fails to convert
            # each event and sends the full objects).
            accept = self._object_accept()
            async with self._http.stream(
                "GET",
                info.collection_path(self._namespace),
                read_timeout=deadline,
                query=query,
                accept=accept,
                accept_encoding=self._http.watch_encoding,
            ) as response:
                yield response

        return WatchStream(
            open_response,
            max_line_bytes=self._http.max_object_bytes,
            codec=codec,
            raw_body=True,
        )

    def _object_accept(self) -> str:
        return _META_OBJECT_ACCEPT + "," + JSON if self._metadata_only else JSON

    async def get(
        self, name: str, namespace: str | None = None, *, subresource: str | None = None
    ) -> dict[str, Any]:
        """The object ``name`` (its ``subresource``, e.g. ``"scale"``, when given). Raises
        :class:`NotFound` when absent."""
        info = await self.info()
        ns = self._object_namespace(info, namespace)
        result: dict[str, Any] = await self._http.request(
            "GET", info.object_path(name, ns, subresource), accept=self._object_accept()
        )
        return result

    async def create(
        self,
        obj: Mapping[str, Any] | BaseModel,
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Create ``obj``; its namespace is ``namespace``, else its own, else the bound
        one, else the config's. Raises :class:`AlreadyExists` for a taken name.
        ``dry_run=True`` sends ``dryRun=All``: the server validates and admits the write
        and answers as it would, but stores nothing (so do :meth:`update`, :meth:`patch`
        and :meth:`delete`).

        ``obj`` is one object: a mapping, or a pydantic model such as a ``KubeObject``
        (sent as ``model_dump(mode="json", by_alias=True, exclude_none=True)``). Anything
        else (a list of objects, a manifest's text) raises
        :class:`~aioinformer.errors.NotAnObjectError` saying what to pass, before any
        request."""
        obj = object_body(obj, call="ResourceClient.create")
        info = await self.info()
        meta = obj.get("metadata") or {}
        ns = self._object_namespace(info, namespace, meta.get("namespace"))
        query = _write_query(field_manager, dry_run)
        result: dict[str, Any] = await self._http.request(
            "POST", info.collection_path(ns), query=query, json=obj, accept=self._object_accept()
        )
        return result

    async def update(
        self,
        obj: Mapping[str, Any] | BaseModel,
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Replace ``obj`` (PUT), or with ``subresource="status"`` only its status. With
        ``metadata.resourceVersion`` set, a stale object raises :class:`Conflict`.
        ``obj`` is one object, as for :meth:`create`."""
        obj = object_body(obj, call="ResourceClient.update")
        info = await self.info()
        meta = obj.get("metadata") or {}
        ns = self._object_namespace(info, namespace, meta.get("namespace"))
        query = _write_query(field_manager, dry_run)
        result: dict[str, Any] = await self._http.request(
            "PUT",
            info.object_path(meta.get("name", ""), ns, subresource),
            query=query,
            json=obj,
            accept=self._object_accept(),
        )
        return result

    async def patch(
        self,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Patch ``name``: JSON merge patch, strategic merge patch, JSON patch (a list of
        operations) or server-side apply (needs ``field_manager``; ``force`` takes over
        conflicting fields). ``subresource="status"`` patches only the status.

        The namespace comes after the patch body, unlike :meth:`get`'s: a string where the
        body goes, or a mapping where the namespace goes (``patch(name, namespace,
        body)``), raises :class:`~aioinformer.errors.PatchArgumentsError` giving the call
        to write, before any request."""
        check_patch_arguments(name, patch, namespace)
        content_type = _PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch_type {patch_type!r}")
        if patch_type == "json" and not isinstance(patch, list):
            raise ValueError("a JSON patch is a list of operations")
        if patch_type == "apply" and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        if subresource is not None:
            check_subresource(subresource)
        info = await self.info()
        ns = self._object_namespace(info, namespace)
        query = _write_query(field_manager, dry_run) or {}
        if force is not None:
            query["force"] = "true" if force else "false"
        result: dict[str, Any] = await self._http.request(
            "PATCH",
            info.object_path(name, ns, subresource),
            query=query or None,
            json=patch,
            content_type=content_type,
            accept=self._object_accept(),
        )
        return result

    async def delete(
        self,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete ``name``; returns the object (being deleted) or a ``Status``.
        ``preconditions`` takes ``uid`` and/or ``resourceVersion``."""
        info = await self.info()
        ns = self._object_namespace(info, namespace)
        options: dict[str, Any] = {}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        body = {"apiVersion": "v1", "kind": "DeleteOptions", **options} if options else None
        result: dict[str, Any] = await self._http.request(
            "DELETE", info.object_path(name, ns), query=_write_query(None, dry_run), json=body
        )
        return result

    def __repr__(self) -> str:
        spec = self._info.gvr if self._info is not None else self._spec
        ns = "*" if self._namespace is None else self._namespace
        meta = " metadata-only" if self._metadata_only else ""
        return f"<ResourceClient {spec} ns={ns!r}{meta}>"


class _Decoded(DescribedListerWatcher):
    """A :class:`ResourceClient` whose lists and watches decode with one codec."""

    __slots__ = ("_codec", "_resource")

    def __init__(self, resource: ResourceClient, codec: Decoder) -> None:
        self._resource = resource
        self._codec = codec

    def describe(self) -> SourceInfo:
        return self._resource.describe()

    async def list(self, options: ListOptions) -> ObjectList:
        return await self._resource._list(options, self._codec)

    def watch(self, options: ListOptions) -> WatchStream:
        return self._resource._watch(options, self._codec)

    def decoded_with(self, codec: Decoder) -> DescribedListerWatcher:
        return self._resource.decoded_with(codec)

    def metadata_lister(self) -> DescribedListerWatcher:
        return self._resource.metadata_lister().decoded_with(self._codec)

    def __repr__(self) -> str:
        return f"<{self._resource!r} decoded by {type(self._codec).__name__}>"


def _write_query(field_manager: str | None, dry_run: bool) -> dict[str, str] | None:
    """A write's query: its field manager, and ``dryRun=All`` for a dry run."""
    query: dict[str, str] = {}
    if field_manager:
        query["fieldManager"] = field_manager
    if dry_run:
        query["dryRun"] = "All"
    return query or None
