"""Shared by the health tests: an informer over a ``FakeListerWatcher`` on a ``FakeClock``
with a 120 s inactivity deadline (so a 90 s liveness window), as fixtures.

Import the fixtures by name (``from tests._support_health import informer as informer``)
for pytest to find them.
"""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer.informer import SharedIndexInformer
from aioinformer.reflector import ReflectorOptions
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher

DEADLINE = 120.0
"""The informers' inactivity deadline, stated rather than left to the default."""
WINDOW = 90.0
"""Their liveness window: three quarters of the deadline."""


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def lw() -> FakeListerWatcher:
    """Pods in namespace ``ns``: ``a`` and ``b``."""
    return FakeListerWatcher(namespace="ns", objects=[pod("a"), pod("b")])


@pytest.fixture
def informer(lw: FakeListerWatcher, clock: FakeClock) -> SharedIndexInformer:
    """Not started."""
    return SharedIndexInformer(
        lw, clock=clock, reflector=ReflectorOptions(watch_inactivity_timeout=DEADLINE)
    )


@pytest.fixture
def list_informer(lw: FakeListerWatcher, clock: FakeClock) -> SharedIndexInformer:
    """Not started; it LISTs, then watches (``use_watch_list=False``), for the cases
    about a list's failure or a watch opened after a list."""
    return SharedIndexInformer(
        lw,
        clock=clock,
        reflector=ReflectorOptions(watch_inactivity_timeout=DEADLINE, use_watch_list=False),
    )
