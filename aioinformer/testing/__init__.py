"""Test doubles that are part of the product: a fake clock, a fake ListerWatcher and a
loopback fake API server, plus the pytest plugin that exposes them as fixtures."""

from __future__ import annotations

from aioinformer.testing.clock import FakeClock as FakeClock

__all__ = ["FakeClock"]
