"""Ready-made informer transforms: functions applied to each object before it is cached.

A transform runs in the DeltaFIFO as each object from a list or watch is queued, so what
it removes never reaches the cache, the handlers or the listers. Pass one as
``SharedIndexInformer(..., transform=fn)``, ``informer.set_transform(fn)`` (before start)
or ``SharedInformerFactory(..., transform=fn)``.

A transform must be quick (it runs on the event loop for every event), must return the
object to cache, and must keep ``metadata.name``, ``metadata.namespace`` and
``metadata.resourceVersion`` (keys and resync detection use them). It may change the
object in place: the decoded object belongs to the informer from then on.

Example::

    informer = SharedIndexInformer(lw, transform=strip_managed_fields)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["chain", "keep_metadata_only", "strip_managed_fields"]


def strip_managed_fields(obj: Any) -> Any:
    """Drop ``metadata.managedFields`` (server-side-apply bookkeeping).

    managedFields often make up a third or more of an object's JSON and informers rarely
    need them; dropping them lowers the cache's memory accordingly. Raw objects are changed
    in place and returned; anything else is returned unchanged.
    """
    if type(obj) is dict:
        meta = obj.get("metadata")
        if type(meta) is dict:
            meta.pop("managedFields", None)
    return obj


def keep_metadata_only(obj: Any) -> Any:
    """Keep only ``apiVersion``, ``kind`` and ``metadata`` of a raw object.

    What a ``PartialObjectMetadata`` answer holds. Metadata-only informers apply it, so
    their cache holds the same shape whether or not the server honoured the request for
    ``PartialObjectMetadata`` (the request allows plain JSON as a fallback). Anything that
    is not a raw object is returned unchanged.
    """
    if type(obj) is dict and len(obj) > 3:
        return {name: obj[name] for name in ("apiVersion", "kind", "metadata") if name in obj}
    return obj


def chain(*transforms: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """One transform applying ``transforms`` in order."""

    def chained(obj: Any) -> Any:
        for transform in transforms:
            obj = transform(obj)
        return obj

    return chained
