"""A reflector's options: what it is built with, checked once.

Part of :mod:`aioinformer.reflector`: :class:`ReflectorOptions` (every static setting of
a reflector, validated in one place, handed down by an informer or a factory), the defaults
it starts from.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from aioinformer._kernel.gcpolicy import GCPolicy

MIN_WATCH_TIMEOUT: Final = 300.0
"""Lower bound of a watch's ``timeout_seconds``; each watch draws from [min, 2 x min)."""

DEFAULT_WATCH_LIST_RETRIES: Final = 3
"""How many times a failed streaming list is tried again before the reflector falls back
to LIST+WATCH, unless configured otherwise. From a fresh backoff (0.8 s doubling, with
jitter) three retries wait 5.6 to 11.2 s in all, or what the server's Retry-After asks:
long enough to ride out a throttled or restarting server without sending it the full LIST
it can least afford, short enough that a cache still syncs within seconds when streaming
keeps failing."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReflectorOptions:
    """A reflector's static configuration, checked once, here, when it is built.

    An informer or a factory builds one from its keywords and hands the same object down,
    so every setting is validated in this one place. :meth:`replace` gives a copy with
    some fields changed (and checks it again).
    """

    resync_period: float = 0.0
    """Seconds between ``store.resync()`` calls; 0: never. Never negative."""
    page_size: int | None = None
    """Force this LIST page size on every list; ``None`` (or 0): the reflector's rules
    (pages of 500 for the first list, unpaginated relists at a resourceVersion)."""
    use_watch_list: bool = True
    """Get the state from a streaming list (``send_initial_events``) on every list,
    falling back to LIST+WATCH whenever the server refuses or ignores one; ``False``:
    always LIST+WATCH."""
    max_watch_list_retries: int = DEFAULT_WATCH_LIST_RETRIES
    """How many times one list streams again, each after a backoff, when its streaming
    list failed in a way worth retrying (a 429, a refused or lost connection, a stream
    closed before its initial-events-end bookmark) before it falls back to LIST+WATCH;
    3 by default (``DEFAULT_WATCH_LIST_RETRIES``), 0: fall back at once. Never
    negative."""
    watch_inactivity_timeout: float | None = None
    """Seconds of silence after which a watch is closed and re-opened; ``None``:
    ``DEFAULT_WATCH_INACTIVITY_TIMEOUT`` (120 s). Capped at the watch's
    ``timeout_seconds`` plus 30 s. Positive when given."""
    min_watch_timeout: float = MIN_WATCH_TIMEOUT
    """Lower bound of each watch's ``timeout_seconds`` (never below 300 s)."""
    max_internal_error_retry_duration: float = 0.0
    """How long a watch ending in a 500 ``InternalError`` is re-opened at once instead
    of relisting (0: never)."""
    expected_kind: str | None = None
    """Watch events whose object has another ``kind`` are skipped and logged; ``None``:
    adopted from the first list that names one."""
    expected_api_version: str | None = None
    """As ``expected_kind``, for ``apiVersion``."""
    gc_policy: GCPolicy = "pause"
    """What a list does with CPython's cyclic collector: ``"pause"``, ``"freeze"`` or
    ``"off"`` (see :mod:`aioinformer._kernel.gcpolicy`)."""

    def __post_init__(self) -> None:
        if self.resync_period < 0:
            raise ValueError(f"resync_period must not be negative, got {self.resync_period!r}")
        if self.page_size is not None and self.page_size < 0:
            raise ValueError(f"page_size must not be negative, got {self.page_size!r}")
        if self.max_watch_list_retries < 0:
            raise ValueError(
                f"max_watch_list_retries must not be negative, got {self.max_watch_list_retries!r}"
            )
        timeout = self.watch_inactivity_timeout
        if timeout is not None and timeout <= 0:
            raise ValueError(f"watch_inactivity_timeout must be positive, got {timeout!r}")

    def replace(self, **changes: Any) -> ReflectorOptions:
        """A copy with the fields in ``changes`` replaced, or this very object when they
        change nothing; ``None`` values are ignored, so callers can pass their optional
        keywords straight through."""
        given = {k: v for k, v in changes.items() if v is not None and v != getattr(self, k)}
        return dataclasses.replace(self, **given) if given else self
