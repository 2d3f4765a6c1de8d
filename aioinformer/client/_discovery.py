"""Discovery: which resources the API server serves, and what a resource name means.

Role: resolve what a user calls a resource into a :class:`ResourceInfo`. Input: a
:class:`GVR`, ``"v1/configmaps"`` / ``"apps/v1/deployments"``, or a bare word (a plural,
singular, short name or kind, optionally ``.group``-qualified, e.g. ``"deployments.apps"``).
Output: the :class:`ResourceInfo`, or :class:`~aioinformer.errors.UnknownResourceError`.

Answers of ``/api``, ``/apis`` and each group-version are cached for the life of the
client and refetched once when a name is not found (a CRD installed since). A bare word
is searched in the core group first, then in each group's preferred version, in the
server's order; an exact plural wins over a singular, short name or kind.

Task model: resolutions run in the calling task; loads are serialised by a lock so that
concurrent resolutions share one set of requests, and the group-versions of a full load
are fetched concurrently in a short-lived task group. A group-version that fails (an
aggregated API that is down) is left out and logged at debug level.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING

from aioinformer._kernel.clock import default_clock
from aioinformer._kernel.runner import TaskRunner
from aioinformer.client._names import GVR, ResourceInfo
from aioinformer.errors import ApiError, NotFound, TransportError, UnknownResourceError

if TYPE_CHECKING:
    from aioinformer.client._http import HttpSession

__all__ = ["Discovery"]

logger = logging.getLogger(__name__)


class Discovery:
    """Discovery answers of one client, cached; resolves resource names to ResourceInfo."""

    def __init__(self, http: HttpSession) -> None:
        self._http = http
        # Serialises loads so concurrent resolutions share one set of requests.
        self._lock = asyncio.Lock()
        self._order: list[str] | None = None
        """Group-versions to search for a bare name: the core group's first, then each
        group's preferred version, in the server's order. ``None`` until loaded."""
        self._group_versions: dict[str, list[str]] = {}
        """group → its versions, preferred first."""
        self._resources: dict[str, list[ResourceInfo]] = {}
        """group-version → its resources (subresources left out)."""

    async def resolve(self, spec: str | GVR) -> ResourceInfo:
        """The resource ``spec`` names; :class:`UnknownResourceError` when none."""
        if isinstance(spec, GVR):
            return await self._resolve_gvr(spec)
        if "/" in spec:
            return await self._resolve_gvr(GVR.parse(spec))
        return await self._resolve_word(spec)

    async def _resolve_gvr(self, gvr: GVR) -> ResourceInfo:
        for refresh in (False, True):
            resources = await self._load_group_version(gvr.api_version, refresh=refresh)
            for info in resources or ():
                if info.gvr == gvr:
                    return info
            if resources is None:
                break
        raise UnknownResourceError(f"the API server does not serve {gvr}")

    async def _resolve_word(self, spec: str) -> ResourceInfo:
        word = spec.lower()
        name, _, group = word.partition(".")
        for refresh in (False, True):
            async with self._lock:
                if self._order is None or refresh:
                    await self._load_all()
                order = list(self._order or ())
            if group:
                order = [gv for gv in order if gv.rpartition("/")[0] == group]
            candidates = [info for gv in order for info in self._resources.get(gv, ())]
            for info in candidates:
                if info.gvr.resource == name:
                    return info
            for info in candidates:
                if info.matches(name):
                    return info
        raise UnknownResourceError(f"the API server has no resource named {spec!r}")

    async def _load_all(self) -> None:
        core = await self._http.request("GET", "/api")
        groups = await self._http.request("GET", "/apis")
        order = [str(v) for v in (core.get("versions") or ()) if isinstance(v, str)]
        self._group_versions = {"": list(order)}
        for entry in groups.get("groups") or ():
            name = entry.get("name")
            versions = [v.get("groupVersion") for v in entry.get("versions") or ()]
            preferred = (entry.get("preferredVersion") or {}).get("groupVersion")
            if preferred in versions:
                versions.remove(preferred)
                versions.insert(0, preferred)
            self._group_versions[name] = [v for v in versions if isinstance(v, str)]
            if self._group_versions[name]:
                order.append(self._group_versions[name][0])
        fetched: dict[str, list[ResourceInfo]] = {}

        async def fetch(gv: str) -> None:
            try:
                fetched[gv] = await self._fetch_group_version(gv)
            except (TransportError, ApiError) as exc:
                # An aggregated API that is down (503) must not make every lookup fail;
                # credentials problems already surfaced on /api and /apis.
                logger.debug("discovery of %s failed: %s", gv, exc)

        async with TaskRunner(name="discovery") as fetches:
            for gv in order:
                fetches.start_soon(fetch(gv), name=gv)
            # Every fetch ends by itself: wait for all of them, cutting none short.
            await fetches.drain(math.inf, default_clock)
        self._resources.update(fetched)
        self._order = [gv for gv in order if gv in fetched]
        logger.debug("discovery found %d group-versions", len(self._order))

    async def _load_group_version(self, gv: str, *, refresh: bool) -> list[ResourceInfo] | None:
        if not refresh and gv in self._resources:
            return self._resources[gv]
        try:
            resources = await self._fetch_group_version(gv)
        except NotFound:
            return None
        self._resources[gv] = resources
        return resources

    async def _fetch_group_version(self, gv: str) -> list[ResourceInfo]:
        group, _, version = gv.rpartition("/")
        path = f"/apis/{gv}" if group else f"/api/{version}"
        body = await self._http.request("GET", path)
        entries = body.get("resources") or ()
        subresources: dict[str, list[str]] = {}
        for entry in entries:
            parent, slash, sub = str(entry.get("name", "")).partition("/")
            if slash:
                subresources.setdefault(parent, []).append(sub)
        found: list[ResourceInfo] = []
        for entry in entries:
            name = entry.get("name", "")
            if "/" in name:
                continue  # a subresource (pods/log, deployments/scale, ...), listed above
            try:
                gvr = GVR(group, version, name)
            except ValueError:
                continue
            found.append(
                ResourceInfo(
                    gvr=gvr,
                    kind=str(entry.get("kind", "")),
                    namespaced=bool(entry.get("namespaced", False)),
                    verbs=tuple(entry.get("verbs") or ()),
                    singular=str(entry.get("singularName") or ""),
                    short_names=tuple(entry.get("shortNames") or ()),
                    subresources=tuple(sorted(subresources.get(name, ()))),
                )
            )
        return found
