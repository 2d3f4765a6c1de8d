"""Retrying a write that lost an optimistic-concurrency race (client-go ``util/retry``).

Role: a read-modify-write (``get``, change, ``update``) fails with a 409
:class:`~aioinformer.errors.Conflict` when someone else wrote the object in between (or
the read came from a stale cache). :func:`retry_on_conflict` calls the whole function
again, after a short backoff, until it succeeds, fails otherwise, or the attempts run out;
:func:`on_error` does the same for any error a predicate calls retriable.

Input: an async function (and its positional arguments), a :class:`RetryBackoff` and, for
tests, a clock. Output: the function's result; or the first error that is not retriable;
or, once ``backoff.steps`` attempts all failed retriably, the last of those errors.

Backoff policy (client-go's ``wait.Backoff`` as ``retry`` uses it, here :class:`RetryBackoff`,
named apart from the reflector's :class:`~aioinformer.reflector.Backoff`): at most ``steps``
calls; before call ``n + 1`` it waits ``duration * factor**n`` seconds, stretched by a
random fraction of itself up to ``jitter`` (``d + U[0, jitter) * d``); ``cap`` (when
positive) bounds that base delay. Unlike client-go, reaching ``cap`` does not end the
retries early: ``steps`` alone counts the attempts.

===================  =====  ========  ======  ======  ==================================
backoff              steps  duration  factor  jitter  waits between the attempts
===================  =====  ========  ======  ======  ==================================
``DEFAULT_RETRY``    5      10 ms     1.0     0.1     4 x ~10 ms (concurrent writers)
``DEFAULT_BACKOFF``  4      10 ms     5.0     0.1     ~10, ~50, ~250 ms (a resource under
                                                      active management by controllers)
===================  =====  ========  ======  ======  ==================================

Only :class:`~aioinformer.errors.Conflict` itself is retried by
:func:`retry_on_conflict`, not its subclass
:class:`~aioinformer.errors.AlreadyExists` (also a 409, but a create that cannot succeed
by trying again), as client-go's ``IsConflict`` tells the two apart.

Task model: runs in the caller's task; waits on ``clock`` (the event loop's by default),
so a cancellation ends it at once, and tests pass a ``FakeClock``.

Example::

    async def scale_up() -> dict[str, Any]:
        # read afresh on every attempt: a retry must start from the current state
        deployment = await deployments.get("web", "default")
        deployment["spec"]["replicas"] += 1
        return await deployments.update(deployment)

    updated = await retry_on_conflict(scale_up)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar, TypeVarTuple

from aioinformer._kernel.clock import Clock, default_clock
from aioinformer.errors import AlreadyExists, Conflict

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_RETRY",
    "RetryBackoff",
    "is_conflict",
    "on_error",
    "retry_on_conflict",
]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


@dataclass(frozen=True, slots=True)
class RetryBackoff:
    """How often to try and how long to wait in between (client-go ``wait.Backoff``).

    Raises ``ValueError`` for ``steps < 1`` or a negative ``duration``, ``factor``,
    ``jitter`` or ``cap``.
    """

    steps: int
    """The most calls made, the first included."""
    duration: float
    """Seconds waited before the second call."""
    factor: float = 1.0
    """Each wait's base is ``factor`` times the previous one (``0`` or ``1``: constant)."""
    jitter: float = 0.0
    """Each wait is stretched by up to this fraction of itself, at random."""
    cap: float = 0.0
    """When positive, the most seconds a wait's base may reach (jitter comes on top)."""

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"RetryBackoff.steps must be at least 1, got {self.steps}")
        for field in ("duration", "factor", "jitter", "cap"):
            value = getattr(self, field)
            if not value >= 0:
                raise ValueError(f"RetryBackoff.{field} must be >= 0, got {value}")

    def delays(self, rng: random.Random | None = None) -> list[float]:
        """The ``steps - 1`` waits between the calls, jitter drawn from ``rng`` (the
        :mod:`random` module's by default)."""
        draw = (rng or random).random
        delays = []
        base = self.duration
        for _ in range(self.steps - 1):
            if self.cap > 0:
                base = min(base, self.cap)
            delays.append(base + draw() * self.jitter * base if self.jitter > 0 else base)
            if self.factor != 0:
                base *= self.factor
        return delays


DEFAULT_RETRY: Final = RetryBackoff(steps=5, duration=0.010, factor=1.0, jitter=0.1)
"""For a conflict between several clients changing the same object (client-go
``DefaultRetry``)."""

DEFAULT_BACKOFF: Final = RetryBackoff(steps=4, duration=0.010, factor=5.0, jitter=0.1)
"""For a change to an object that controllers actively manage (client-go
``DefaultBackoff``)."""


def is_conflict(error: BaseException) -> bool:
    """Whether ``error`` is a 409 ``Conflict`` a retry may get past: a failed
    resourceVersion precondition, not ``AlreadyExists`` (client-go ``IsConflict``). What
    :func:`retry_on_conflict` retries, and what a controller requeues quietly."""
    return isinstance(error, Conflict) and not isinstance(error, AlreadyExists)


async def on_error(
    backoff: RetryBackoff,
    retriable: Callable[[Exception], bool],
    fn: Callable[[*Ts], Awaitable[T]],
    *args: *Ts,
    clock: Clock | None = None,
) -> T:
    """Await ``fn(*args)``; while it raises an exception ``retriable`` accepts, wait per
    ``backoff`` on ``clock`` and call it again (client-go ``retry.OnError``).

    Returns ``fn``'s result. Re-raises at once an exception ``retriable`` refuses, and the
    last retriable one once ``backoff.steps`` calls have failed. ``BaseException``\\ s
    that are not ``Exception`` (a cancellation) are never retried.
    """
    clock = clock if clock is not None else default_clock
    for delay in backoff.delays():
        try:
            return await fn(*args)
        except Exception as error:
            if not retriable(error):
                raise
        await clock.sleep(delay)
    return await fn(*args)  # the last attempt: whatever it raises is final


async def retry_on_conflict(
    fn: Callable[[*Ts], Awaitable[T]],
    *args: *Ts,
    backoff: RetryBackoff = DEFAULT_RETRY,
    clock: Clock | None = None,
) -> T:
    """Await ``fn(*args)``, calling it again after each 409
    :class:`~aioinformer.errors.Conflict` per ``backoff`` (client-go
    ``retry.RetryOnConflict``).

    ``fn`` must read the object afresh on every call: the conflict says the state it
    started from is stale. Returns ``fn``'s result; re-raises any other error at once,
    and the last ``Conflict`` once ``backoff.steps`` calls have all hit one.
    """
    return await on_error(backoff, is_conflict, fn, *args, clock=clock)


if not TYPE_CHECKING:  # type checkers report the old names as missing, as they should
    from aioinformer._kernel.moved import moved_names

    __getattr__ = moved_names(__name__)
