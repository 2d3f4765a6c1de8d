"""The task helpers' former home, kept so that existing imports keep working.

Role: none of its own; :mod:`aioinformer._runner` holds :func:`is_async_callable`,
:func:`wait_regardless` and :func:`cancel_and_wait` (and the rest of the package's
structured-concurrency helpers). Input, output, ordering and task model: as there.
"""

from __future__ import annotations

from aioinformer._runner import cancel_and_wait as cancel_and_wait
from aioinformer._runner import is_async_callable as is_async_callable
from aioinformer._runner import wait_regardless as wait_regardless

__all__ = ["cancel_and_wait", "is_async_callable", "wait_regardless"]
