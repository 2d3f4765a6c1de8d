"""What a cache audit costs: one audit of a synced cache, beside the metadata LIST alone.

Role: measured cases for :mod:`bench.scenarios`' registry (same contract: ``(url, params)
-> {metric: value}``, run in a fresh worker process), for the ``audit`` kind.

Each case does one untimed round (it also makes the replay server encode its
``PartialObjectMetadata`` pages), then ``audits`` timed ones, and reports the medians per
audit: wall milliseconds, CPU milliseconds of this process (``time.process_time``: the
replay server runs in another process), and LIST requests. Variants:

* ``baseline`` — the raw metadata LIST alone: aiohttp and orjson, pages of ``page_size``
  at ``resourceVersion=""`` asking for a ``PartialObjectMetadataList``, each item's key and
  resourceVersion kept in a ``dict``. What any audit must at least do.
  ``baseline-gc-paused`` does it with the cyclic collector disabled, as an audit's list
  runs by default (``gc_policy="pause"``).
* ``ours`` / ``ours-compact`` — an informer synced over ``objects`` Pods (a namespace
  index, no handler), then ``informer.audit_cache()``: the metadata LIST through the
  client, the wait (none: nothing changes), the comparison with the cache.
* ``ours-plain-source`` / ``ours-plain-source-compact`` — the same audit through a source
  of one's own that has only ``list``, over the full resource (``CacheAudit(lister=...)``):
  whole objects, decoded into dicts, of which the keys and resourceVersions are read.

Task model: each case is one coroutine; the informer runs in its ``async with`` block and
has stopped when the case returns.
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import TYPE_CHECKING, Any

import orjson

from bench import harness

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import aiohttp

    from bench.harness import CacheMode

__all__ = ["audit_baseline", "audit_ours"]

_METADATA_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


async def _rounds(params: dict[str, Any], audit: Callable[[], Awaitable[int]]) -> dict[str, float]:
    """One untimed ``audit()``, then ``params["audits"]`` timed ones; medians per audit.
    ``audit()`` returns the LIST requests it made."""
    await audit()
    wall: list[float] = []
    cpu: list[float] = []
    requests: list[float] = []
    for _ in range(params["audits"]):
        started_wall = time.perf_counter()
        started_cpu = time.process_time()
        requests.append(await audit())
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started_wall)
    return {
        "ms_per_audit": statistics.median(wall) * 1e3,
        "cpu_ms_per_audit": statistics.median(cpu) * 1e3,
        "requests_per_audit": statistics.median(requests),
        "objects": float(params["objects"]),
    }


async def _metadata_list(session: aiohttp.ClientSession, url: str, page_size: int) -> int:
    """List every Pod's metadata at ``resourceVersion=""``; the requests it took."""
    versions: dict[str, str] = {}
    params = {"resourceVersion": "", "limit": str(page_size)}
    requests = 0
    while True:
        requests += 1
        async with session.get(
            f"{url}/api/v1/pods", params=params, headers={"Accept": _METADATA_ACCEPT}
        ) as response:
            response.raise_for_status()
            page = orjson.loads(await response.read())
        for item in page["items"]:
            meta = item["metadata"]
            versions[f"{meta['namespace']}/{meta['name']}"] = meta["resourceVersion"]
        token = page["metadata"].get("continue")
        if not token:
            return requests
        params = {"limit": str(page_size), "continue": token}


async def audit_baseline(
    url: str, params: dict[str, Any], *, pause_gc: bool = False
) -> dict[str, float]:
    async with harness.session() as session:

        async def audit() -> int:
            if not pause_gc:
                return await _metadata_list(session, url, params["page_size"])
            gc.disable()
            try:
                return await _metadata_list(session, url, params["page_size"])
            finally:
                gc.enable()

        return await _rounds(params, audit)


class _PlainLister:
    """A lister of one's own: ``list`` and nothing else (no metadata, no compact entries)."""

    def __init__(self, resource: Any) -> None:
        self._resource = resource

    async def list(self, options: Any) -> Any:
        return await self._resource.list(options)


async def audit_ours(
    url: str, params: dict[str, Any], *, cache: CacheMode, plain_source: bool = False
) -> dict[str, float]:
    from aioinformer.audit import AuditOutcome, AuditReport, CacheAudit
    from aioinformer.indexer import NAMESPACE_INDEX, namespace_index_func
    from aioinformer.reflector import ReflectorOptions

    async with harness.client(url) as client:
        lister = _PlainLister(client.resource("v1/pods")) if plain_source else None
        informer = harness.informer(
            client,
            "pods",
            cache=cache,
            indexers={NAMESPACE_INDEX: namespace_index_func},
            reflector=ReflectorOptions(use_watch_list=False, page_size=params["page_size"]),
            audit=CacheAudit(period=3600.0, page_size=params["page_size"], lister=lister),
        )
        async with informer:
            if not await informer.wait_for_sync():
                raise RuntimeError("informer did not report synced")

            async def audit() -> int:
                report: AuditReport = await informer.audit_cache()
                if report.outcome is not AuditOutcome.CONSISTENT:
                    raise RuntimeError(f"the audit of a quiet cache was not consistent: {report}")
                if report.listed != params["objects"]:
                    raise RuntimeError(f"the audit listed {report.listed} objects")
                return report.pages

            return await _rounds(params, audit)
