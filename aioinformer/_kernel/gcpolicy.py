"""What an informer does with CPython's cyclic garbage collector while it lists.

A LIST decodes every object of a resource at once: for 100k Pods, tens of millions of
containers, each new one counted by the collector. Left alone, the collector runs full
collections over that growing heap again and again during the decode, and a 100k-Pod
sync spends most of its time in them. Decoded JSON holds no reference cycles, so there
is nothing for those collections to find.

``GCPolicy`` names the choices:

* ``"pause"`` (the default): the collector is disabled while a list is fetched and handed
  to the store, then enabled again. Collection is only deferred, never skipped.
* ``"freeze"``: as ``"pause"``, then ``gc.freeze()`` before enabling it again, so later
  collections no longer traverse the objects alive at that point (the freshly listed
  cache among them). Fastest by far; the price is process-wide: cyclic garbage that is
  reachable only from frozen objects is never collected, so use it in processes whose
  own objects do not rely on the cyclic collector.
* ``"off"``: the collector is left as it is.

Pauses are counted across informers, so concurrent lists enable the collector once, when
the last one ends; if the application itself disabled the collector, it stays disabled.
"""

from __future__ import annotations

import contextlib
import gc
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["GCPolicy", "collector_paused"]

GCPolicy: TypeAlias = Literal["pause", "freeze", "off"]

_pauses = 0
"""Lists in progress that paused the collector; it is enabled again when this drops to 0."""
_freeze_requested = False
"""A list under the ``"freeze"`` policy ended while others were still running."""


@contextlib.contextmanager
def collector_paused(policy: GCPolicy) -> Iterator[None]:
    """Apply ``policy`` to the block (a list and its hand-over to the store)."""
    global _pauses, _freeze_requested
    if policy == "off" or (_pauses == 0 and not gc.isenabled()):
        yield
        return
    _pauses += 1
    gc.disable()
    try:
        yield
    finally:
        _pauses -= 1
        _freeze_requested = _freeze_requested or policy == "freeze"
        if _pauses == 0:
            if _freeze_requested:
                gc.freeze()
            _freeze_requested = False
            gc.enable()
