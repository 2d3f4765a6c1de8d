"""Ready-made informer transforms: functions applied to each object before it is cached.

A transform runs in the DeltaFIFO as each object from a list or watch is queued, so what
it removes never reaches the cache, the handlers or the listers. Pass one as
``SharedIndexInformer(..., transform=fn)``, ``informer.set_transform(fn)`` (before start)
or ``SharedInformerFactory(..., transform=fn)``.

A transform must be quick (it runs on the event loop for every event), must return the
object to cache, and must keep ``metadata.name``, ``metadata.namespace`` and
``metadata.resourceVersion`` (keys and resync detection use them). It may change the
object in place: the decoded object belongs to the informer from then on.

In a compact cache (the default), a transform receives the decoded object and what it
returns is encoded again, unless it accepts the cache's entries as they are: the ones
here do, editing the JSON bytes without decoding them.

Example::

    informer = SharedIndexInformer(lw, transform=strip_managed_fields)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aioinformer._objects.raw import READS_RAW, CompactEntry, without_fields

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["chain", "keep_metadata_only", "strip_managed_fields"]


def strip_managed_fields(obj: Any) -> Any:
    """Drop ``metadata.managedFields`` (server-side-apply bookkeeping).

    managedFields often make up a third or more of an object's JSON and informers rarely
    need them; dropping them lowers the cache's memory accordingly. Raw objects are changed
    in place and returned; a compact cache's entries are edited without being decoded;
    anything else is returned unchanged.
    """
    if type(obj) is dict:
        meta = obj.get("metadata")
        if type(meta) is dict:
            meta.pop("managedFields", None)
    elif type(obj) is CompactEntry:
        return without_fields(obj, metadata=_MANAGED_FIELDS)
    return obj


_MANAGED_FIELDS = ("managedFields",)
_TYPE_AND_METADATA = ("apiVersion", "kind", "metadata")


def keep_metadata_only(obj: Any) -> Any:
    """Keep only ``apiVersion``, ``kind`` and ``metadata`` of a raw object.

    What a ``PartialObjectMetadata`` answer holds. Metadata-only informers apply it, so
    their cache holds the same shape whether or not the server honoured the request for
    ``PartialObjectMetadata`` (the request allows plain JSON as a fallback). Anything that
    is not a raw object (nor a compact cache's entry, edited without being decoded) is
    returned unchanged.
    """
    if type(obj) is dict and len(obj) > 3:
        return {name: obj[name] for name in _TYPE_AND_METADATA if name in obj}
    if type(obj) is CompactEntry:
        return without_fields(obj, keep=_TYPE_AND_METADATA)
    return obj


def chain(*transforms: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """One transform applying ``transforms`` in order (to a compact cache's entries as they
    are when every one of them accepts them)."""

    def chained(obj: Any) -> Any:
        for transform in transforms:
            obj = transform(obj)
        return obj

    if all(getattr(transform, READS_RAW, False) for transform in transforms):
        setattr(chained, READS_RAW, True)
    return chained


# These accept a compact cache's entries as they are: it need not decode for them.
setattr(strip_managed_fields, READS_RAW, True)
setattr(keep_metadata_only, READS_RAW, True)
