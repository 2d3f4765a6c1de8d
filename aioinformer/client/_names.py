"""Resource types and the names that go into a request path.

Role: name what a request is about and turn it into a URL path that cannot escape its
place. Input: a group/version/plural (:class:`GVR`), discovery's description of a resource
(:class:`ResourceInfo`), object names, namespaces and subresources from callers. Output:
URL paths, or ``ValueError`` for a name that is not valid where it would go.

Every name is checked before it is put in a path: a namespace must be a DNS-1123 label,
an object name must not contain ``/`` or ``%`` nor be ``.`` or ``..`` (and is quoted), a
subresource is one lowercase word. Pure values and functions: no I/O, no tasks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

__all__ = [
    "GVR",
    "ResourceInfo",
    "check_namespace",
    "check_subresource",
]

_GROUP_RE: Final = re.compile(r"^(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?)?$")
_VERSION_RE: Final = re.compile(r"^[a-z0-9]+$")
_RESOURCE_RE: Final = re.compile(r"^[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?$")
_NAMESPACE_RE: Final = re.compile(r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$")
_SUBRESOURCE_RE: Final = re.compile(r"^[a-z][a-z0-9]*$")


def check_namespace(namespace: str) -> str:
    """``namespace`` itself when it is a DNS-1123 label; ``ValueError`` otherwise."""
    if not isinstance(namespace, str) or len(namespace) > 63 or not _NAMESPACE_RE.match(namespace):
        raise ValueError(f"invalid namespace {namespace!r}: must be a DNS-1123 label")
    return namespace


def check_subresource(subresource: str) -> str:
    """``subresource`` itself when it is one lowercase word; ``ValueError`` otherwise."""
    # Subresource names are single lowercase words (status, scale, ephemeralcontainers).
    if not isinstance(subresource, str) or not _SUBRESOURCE_RE.match(subresource):
        raise ValueError(f"invalid subresource {subresource!r}: must be a lowercase word")
    return subresource


def _check_name(name: str) -> str:
    # The API server's own rule for names used as path segments.
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "%" in name:
        raise ValueError(f"invalid object name {name!r}")
    return name


@dataclass(frozen=True, slots=True)
class GVR:
    """A resource type: API group (``""`` for the core group), version and plural."""

    group: str
    version: str
    resource: str

    def __post_init__(self) -> None:
        if not _GROUP_RE.match(self.group):
            raise ValueError(f"invalid API group {self.group!r}")
        if not _VERSION_RE.match(self.version):
            raise ValueError(f"invalid API version {self.version!r}")
        if not _RESOURCE_RE.match(self.resource):
            raise ValueError(f"invalid resource name {self.resource!r}")

    @classmethod
    def parse(cls, text: str) -> GVR:
        """``"v1/pods"`` → ``GVR("", "v1", "pods")``; ``"apps/v1/deployments"`` likewise.

        A bare plural has no version and is not a GVR: resolve it with
        :meth:`Client.resolve` instead. Raises ``ValueError``.
        """
        parts = text.split("/")
        if len(parts) == 2:
            return cls("", parts[0], parts[1])
        if len(parts) == 3:
            return cls(parts[0], parts[1], parts[2])
        raise ValueError(f"{text!r} is not group/version/resource or version/resource")

    @property
    def api_version(self) -> str:
        """``"v1"`` for the core group, ``"group/version"`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.api_version}/{self.resource}"


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """A resource type as discovery describes it: enough to build every URL.

    ``subresources`` lists what discovery announced (``("scale", "status")``); it informs,
    it does not restrict: a request for a subresource not listed is still sent.
    """

    gvr: GVR
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ()
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()

    @property
    def _prefix(self) -> str:
        gvr = self.gvr
        return f"/apis/{gvr.group}/{gvr.version}" if gvr.group else f"/api/{gvr.version}"

    def collection_path(self, namespace: str | None) -> str:
        """The collection URL path; all namespaces when ``namespace`` is ``None`` (or the
        resource is cluster-scoped, where it is ignored)."""
        if self.namespaced and namespace is not None:
            return f"{self._prefix}/namespaces/{check_namespace(namespace)}/{self.gvr.resource}"
        return f"{self._prefix}/{self.gvr.resource}"

    def object_path(self, name: str, namespace: str | None, subresource: str | None = None) -> str:
        """One object's URL path (of its ``subresource`` when given, e.g. ``"status"``);
        a namespaced resource needs ``namespace``. Raises ``ValueError`` for an invalid
        name or subresource."""
        if self.namespaced and namespace is None:
            raise ValueError(f"{self.gvr} is namespaced: a namespace is needed for {name!r}")
        path = f"{self.collection_path(namespace)}/{quote(_check_name(name), safe='')}"
        if subresource is not None:
            path += "/" + check_subresource(subresource)
        return path

    def matches(self, word: str) -> bool:
        """Whether ``word`` names this resource (plural, singular, short name or kind)."""
        return (
            word == self.gvr.resource
            or word == self.singular
            or word in self.short_names
            or word == self.kind.lower()
        )
