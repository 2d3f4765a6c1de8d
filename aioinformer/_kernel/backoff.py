"""Exponential backoff with jitter and a health-based reset.

Role: tells a retrying component how long to wait before its next attempt. It does not
sleep; the caller sleeps ``next_delay()`` seconds on its own clock, so the policy is pure
and its tests need no event loop.

Policy (the one client-go's reflectors use, ``wait.NewExponentialBackoffManager``):

* the first delay is ``initial``; each later one is ``factor`` times the previous, until
  the next would exceed ``cap``, from then on it stays at ``cap``;
* each delay is stretched by a random fraction of itself: ``d + U[0, jitter) * d``, so
  with ``jitter=1.0`` a delay ``d`` becomes a value in ``[d, 2d)``;
* health resets it: when no delay was asked for during ``reset_after`` seconds, the
  component is taken to have been healthy and the sequence starts again at ``initial``.

With the defaults (0.8 s, x2, cap 30 s, jitter 1.0, reset after 2 minutes) a failing
reflector settles at one attempt every 30-60 s instead of hammering the API server.

Example::

    backoff = Backoff(clock=clock, rng=random.Random(7))
    await clock.sleep(backoff.next_delay())
"""

from __future__ import annotations

import random

from aioinformer._kernel.clock import Clock, default_clock

__all__ = ["Backoff"]


class Backoff:
    """Exponential backoff: ``initial`` seconds, times ``factor`` up to ``cap``, with jitter.

    Deterministic when given an ``rng`` (a :class:`random.Random`) and a fake ``clock``.
    Not shared between event loops; one instance belongs to one retrying component.
    """

    __slots__ = (
        "_cap",
        "_clock",
        "_current",
        "_factor",
        "_initial",
        "_jitter",
        "_last_request",
        "_reset_after",
        "_rng",
    )

    def __init__(
        self,
        *,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0:
            raise ValueError(f"initial must be positive, got {initial!r}")
        if cap < initial:
            raise ValueError(f"cap ({cap!r}) must not be below initial ({initial!r})")
        if factor < 1:
            raise ValueError(f"factor must be at least 1, got {factor!r}")
        if jitter < 0:
            raise ValueError(f"jitter must not be negative, got {jitter!r}")
        if reset_after <= 0:
            raise ValueError(f"reset_after must be positive, got {reset_after!r}")
        self._initial = initial
        self._cap = cap
        self._factor = factor
        self._jitter = jitter
        self._reset_after = reset_after
        self._clock: Clock = clock if clock is not None else default_clock
        self._rng = rng if rng is not None else random.Random()
        # The un-jittered delay the next call hands out; initial <= _current <= cap.
        self._current = initial
        # Clock time of the last next_delay() call; None until the first one.
        self._last_request: float | None = None

    @property
    def initial(self) -> float:
        """The first delay of a fresh sequence (before jitter), in seconds."""
        return self._initial

    @property
    def cap(self) -> float:
        """The largest un-jittered delay, in seconds."""
        return self._cap

    def next_delay(self) -> float:
        """The delay before the next attempt, in seconds; advances the sequence.

        Starts over from ``initial`` when the previous call is more than ``reset_after``
        seconds ago.
        """
        now = self._clock.monotonic()
        if self._last_request is not None and now - self._last_request > self._reset_after:
            self.reset()
        self._last_request = now
        delay = self._current
        if delay < self._cap:
            self._current = min(delay * self._factor, self._cap)
        if self._jitter > 0:
            delay += self._rng.random() * self._jitter * delay
        return delay

    def reset(self) -> None:
        """Start the sequence over: the next delay is ``initial`` (plus jitter)."""
        self._current = self._initial

    def __repr__(self) -> str:
        return (
            f"<Backoff next={self._current:g}s initial={self._initial:g}s cap={self._cap:g}s"
            f" factor={self._factor:g} jitter={self._jitter:g}>"
        )
