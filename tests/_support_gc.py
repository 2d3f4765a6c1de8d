"""Collecting what a test made without walking the whole run's heap: ``only_new_objects()``.

``gc.collect()`` walks every tracked object of the process: late in a run of the suite a
quarter of a million, up to a second on a busy two-core machine, for a test that made a
few hundred. Inside ``with only_new_objects():`` the objects made before it are frozen
(``gc.freeze()``), so a collection there walks only what was made since, and finds a
cycle of those unreachable as before; a frozen object still keeps alive what it refers
to, as it would anyway. Leaving the block unfreezes them. Not for tests of freezing
itself (``aioinformer._kernel.gcpolicy``).
"""

from __future__ import annotations

import contextlib
import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


@contextlib.contextmanager
def only_new_objects() -> Iterator[None]:
    """Within: ``gc.collect()`` looks only at the objects made inside."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
