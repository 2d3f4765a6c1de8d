"""Test doubles that are part of the product: a fake clock, a fake ListerWatcher and a
loopback fake API server (also served from a thread of its own, for code that is not
async), the pytest plugin that exposes them as fixtures, and
:func:`eventually` (and :func:`eventually_sync`), the assertion for what happens
asynchronously."""

from __future__ import annotations

from aioinformer.testing._eventually import eventually as eventually
from aioinformer.testing._eventually import eventually_sync as eventually_sync
from aioinformer.testing._threaded import ThreadedFakeAPIServer as ThreadedFakeAPIServer
from aioinformer.testing._threaded import ThreadedFaults as ThreadedFaults
from aioinformer.testing.apiserver import ADMIN_TOKEN as ADMIN_TOKEN
from aioinformer.testing.apiserver import FakeAPIServer as FakeAPIServer
from aioinformer.testing.apiserver import FaultRecord as FaultRecord
from aioinformer.testing.apiserver import Faults as Faults
from aioinformer.testing.apiserver import RequestRecord as RequestRecord
from aioinformer.testing.apiserver import Rule as Rule
from aioinformer.testing.clock import FakeClock as FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher as FakeListerWatcher

__all__ = [
    "ADMIN_TOKEN",
    "FakeAPIServer",
    "FakeClock",
    "FakeListerWatcher",
    "FaultRecord",
    "Faults",
    "RequestRecord",
    "Rule",
    "ThreadedFakeAPIServer",
    "ThreadedFaults",
    "eventually",
    "eventually_sync",
]
