"""pytest plugin (registered through the ``pytest11`` entry point): aioinformer's test
doubles as fixtures for users' own suites."""

from __future__ import annotations

import pytest

from aioinformer.testing.clock import FakeClock


@pytest.fixture
def fake_clock() -> FakeClock:
    """A :class:`FakeClock` at time 0, for components that take ``clock=``."""
    return FakeClock()
