"""Backoff: client-go's exponential backoff manager (0.8 s doubling to 30 s, jitter, reset
after two quiet minutes), driven by a fake clock and a seeded random source."""

from __future__ import annotations

import random

import pytest

from aioinformer._kernel.backoff import Backoff
from aioinformer.testing import FakeClock


def test_delays_double_from_initial_until_they_stay_at_the_cap() -> None:
    backoff = Backoff(jitter=0.0, clock=FakeClock())

    delays = [backoff.next_delay() for _ in range(9)]

    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0])


def test_a_delay_landing_exactly_on_the_cap_keeps_it() -> None:
    backoff = Backoff(initial=7.5, cap=30.0, jitter=0.0, clock=FakeClock())

    assert [backoff.next_delay() for _ in range(5)] == [7.5, 15.0, 30.0, 30.0, 30.0]


def test_jitter_stretches_each_delay_by_up_to_its_own_length() -> None:
    backoff = Backoff(clock=FakeClock(), rng=random.Random(1))
    plain = Backoff(jitter=0.0, clock=FakeClock())

    for _ in range(12):
        base = plain.next_delay()
        delay = backoff.next_delay()
        assert base <= delay < 2 * base


def test_the_same_seed_gives_the_same_delays() -> None:
    first = Backoff(clock=FakeClock(), rng=random.Random(42))
    second = Backoff(clock=FakeClock(), rng=random.Random(42))

    assert [first.next_delay() for _ in range(8)] == [second.next_delay() for _ in range(8)]


def test_jitter_draws_from_the_injected_random_source() -> None:
    rng = random.Random(3)
    expected = 0.8 + random.Random(3).random() * 0.8

    assert Backoff(clock=FakeClock(), rng=rng).next_delay() == pytest.approx(expected)


async def test_two_quiet_minutes_start_the_sequence_over() -> None:
    clock = FakeClock()
    backoff = Backoff(jitter=0.0, clock=clock)
    for _ in range(4):
        backoff.next_delay()

    await clock.advance(120.5)

    assert backoff.next_delay() == pytest.approx(0.8)
    assert backoff.next_delay() == pytest.approx(1.6)


async def test_requests_closer_than_the_reset_period_keep_growing() -> None:
    clock = FakeClock()
    backoff = Backoff(jitter=0.0, clock=clock)
    backoff.next_delay()

    await clock.advance(120.0)  # exactly the reset period: not more than it

    assert backoff.next_delay() == pytest.approx(1.6)


def test_reset_starts_the_sequence_over() -> None:
    backoff = Backoff(jitter=0.0, clock=FakeClock())
    for _ in range(10):
        backoff.next_delay()

    backoff.reset()

    assert backoff.next_delay() == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"initial": 0.0}, "initial", id="zero-initial"),
        pytest.param({"initial": 2.0, "cap": 1.0}, "cap", id="cap-below-initial"),
        pytest.param({"factor": 0.5}, "factor", id="shrinking-factor"),
        pytest.param({"jitter": -0.1}, "jitter", id="negative-jitter"),
        pytest.param({"reset_after": 0.0}, "reset_after", id="zero-reset-period"),
    ],
)
def test_nonsensical_settings_are_rejected(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Backoff(**kwargs)  # type: ignore[arg-type]


def test_repr_shows_the_next_delay_and_the_settings() -> None:
    backoff = Backoff(jitter=0.0, clock=FakeClock())
    backoff.next_delay()

    assert repr(backoff) == "<Backoff next=1.6s initial=0.8s cap=30s factor=2 jitter=0>"
