"""Handler isolation: one bad handler never costs the others their events or their latency.

Each informer here runs the real stack against the fake API server, with one well-behaved
"probe" handler beside a handler that raises on every event, one blocked forever, and one
that is slow. The probe must see every event, in order, promptly; the bad handlers are
contained: the raising one keeps being called (and is logged by name), the slow one lags
only itself, and stopping the informer cancels the blocked one within a bounded time, as
documented in :mod:`aioinformer.informer` ("handler tasks are cancelled").

Latency bounds are deliberately loose (a shared CI machine), but far below what a
serialised delivery would cost: with a 0.5 s slow handler and 20 events, any coupling
pushes the probe's worst latency toward 10 s, past the 3 s bound within ten events.
The slow handler's delay costs the test nothing: stopping the informer cancels it.
Every case runs in both cache modes (the ``cache`` fixture).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.informer import SharedIndexInformer
from aioinformer.testing.apiserver import FakeAPIServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.informer import CacheMode

EVENTS = 20
SLOW_HANDLER_DELAY = 0.5
PROBE_LATENCY_BOUND = 3.0
"""Far under EVENTS * SLOW_HANDLER_DELAY (10 s), the cost of any head-of-line blocking;
generous for a loaded machine, where one event's latency can reach a second."""
HANG_BOUND = 30.0
"""Seconds a wait may take before the test fails: bounds a hang, asserts no latency."""


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


@dataclass
class Probe:
    """Records when each pod's add arrived, against when the test created it."""

    created: dict[str, float] = field(default_factory=dict)
    arrived: dict[str, float] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    all_arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        name = obj["metadata"]["name"]
        self.arrived[name] = time.monotonic()
        self.order.append(name)
        if len(self.arrived) >= EVENTS:
            self.all_arrived.set()

    def worst_latency(self) -> float:
        return max(self.arrived[name] - self.created[name] for name in self.created)


class Raising:
    def __init__(self) -> None:
        self.calls = 0

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.calls += 1
        raise RuntimeError(f"handler bug #{self.calls}")


class Blocked:
    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.cancelled = False

    async def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


class Slow:
    def __init__(self) -> None:
        self.calls = 0

    async def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.calls += 1
        await asyncio.sleep(SLOW_HANDLER_DELAY)


@pytest.fixture
async def server() -> AsyncIterator[FakeAPIServer]:
    async with FakeAPIServer() as fake:
        yield fake


async def _create_paced(server: FakeAPIServer, probe: Probe) -> None:
    """Create EVENTS pods, one per loop turn plus a short pause, recording each time."""
    for i in range(EVENTS):
        name = f"pod-{i:02d}"
        probe.created[name] = time.monotonic()
        server.create(pod(name))
        await asyncio.sleep(0.005)


async def test_a_probe_keeps_its_latency_beside_raising_blocked_and_slow_handlers(
    server: FakeAPIServer, caplog: pytest.LogCaptureFixture, cache: CacheMode
) -> None:
    caplog.set_level(logging.ERROR)
    probe, raising, blocked, slow = Probe(), Raising(), Blocked(), Slow()
    async with server.client() as client:
        informer = SharedIndexInformer(client.resource("pods", namespace="default"), cache=cache)
        informer.add_event_handler(on_add=raising.on_add, name="raising")
        informer.add_event_handler(on_add=blocked.on_add, name="blocked")
        informer.add_event_handler(on_add=slow.on_add, name="slow")
        informer.add_event_handler(on_add=probe.on_add, name="probe")
        async with informer:
            assert await informer.wait_for_sync(timeout=HANG_BOUND)
            await _create_paced(server, probe)
            async with asyncio.timeout(HANG_BOUND):
                await probe.all_arrived.wait()
            assert blocked.entered.is_set()
            stats = {h.name: h for h in informer.statistics().handlers}
    assert probe.order == sorted(probe.created)
    assert probe.worst_latency() < PROBE_LATENCY_BOUND, probe.worst_latency()
    # The raising handler was called for every event and is named in the log each time.
    assert raising.calls == EVENTS
    assert stats["raising"].failed == EVENTS
    failures = [r for r in caplog.records if "raising" in r.getMessage()]
    assert len(failures) == EVENTS
    # The blocked handler got its first event and nothing since: the rest wait for it.
    assert stats["blocked"].delivered == 1
    assert stats["blocked"].pending == EVENTS - 1
    # The slow one lagged only itself.
    assert slow.calls < EVENTS
    assert stats["probe"].delivered == EVENTS
    assert stats["probe"].failed == 0


async def test_stopping_completes_promptly_with_a_handler_blocked_forever(
    server: FakeAPIServer, cache: CacheMode
) -> None:
    blocked = Blocked()
    server.create(pod("pod-0"))
    async with server.client() as client:
        informer = SharedIndexInformer(client.resource("pods", namespace="default"), cache=cache)
        informer.add_event_handler(on_add=blocked.on_add)
        async with asyncio.timeout(HANG_BOUND):
            async with informer:
                await blocked.entered.wait()
                stopping = time.monotonic()
            stopped_in = time.monotonic() - stopping
    assert blocked.cancelled, "handler tasks are cancelled when the informer stops"
    assert informer.state.name == "STOPPED"
    # Only the stop is timed (not the connect and list before it): waiting for the blocked
    # handler would never end, so any bound tells the two apart; 2 s absorbs loop lag.
    assert stopped_in < 2.0


async def test_stop_returns_promptly_with_a_blocked_handler_and_a_full_queue(
    server: FakeAPIServer, cache: CacheMode
) -> None:
    blocked = Blocked()
    for i in range(50):
        server.create(pod(f"pod-{i}"))
    async with server.client() as client:
        informer = SharedIndexInformer(client.resource("pods", namespace="default"), cache=cache)
        registration = informer.add_event_handler(on_add=blocked.on_add)
        run = asyncio.create_task(informer.run())
        try:
            async with asyncio.timeout(HANG_BOUND):
                await blocked.entered.wait()
                assert await informer.wait_for_sync()
            assert registration.statistics().pending == 49
        finally:
            informer.stop()
            async with asyncio.timeout(2):
                await run
    assert blocked.cancelled


async def test_a_sync_handler_raising_on_every_kind_keeps_receiving_events(
    server: FakeAPIServer, cache: CacheMode
) -> None:
    seen: list[str] = []
    probe_done = asyncio.Event()
    bad_done = asyncio.Event()

    def explode(*args: Any) -> None:
        seen.append("update" if len(args) == 2 and isinstance(args[1], Mapping) else "other")
        if len(seen) == 3:
            bad_done.set()
        raise ValueError("always")

    def probe_delete(obj: Any) -> None:
        probe_done.set()

    server.create(pod("a"))
    async with server.client() as client:
        informer = SharedIndexInformer(client.resource("pods", namespace="default"), cache=cache)
        bad = informer.add_event_handler(
            on_add=explode, on_update=explode, on_delete=explode, name="bad"
        )
        informer.add_event_handler(on_delete=probe_delete, name="probe")
        async with informer:
            assert await informer.wait_for_sync(timeout=HANG_BOUND)
            server.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
            server.delete("pods", "default", "a")
            async with asyncio.timeout(HANG_BOUND):
                await probe_done.wait()
                await bad_done.wait()
            # A sync call is counted as failed before the loop runs anything else.
            assert bad.statistics().delivered == 3
            assert bad.statistics().failed == 3
    assert sorted(seen) == ["other", "other", "update"]  # add, update, delete


async def test_an_unread_events_stream_does_not_hold_back_other_handlers(
    server: FakeAPIServer, cache: CacheMode
) -> None:
    probe = Probe()
    async with server.client() as client:
        informer = SharedIndexInformer(client.resource("pods", namespace="default"), cache=cache)
        informer.add_event_handler(on_add=probe.on_add, name="probe")
        async with informer, informer.events(name="never-read") as stream:
            assert await informer.wait_for_sync(timeout=HANG_BOUND)
            await _create_paced(server, probe)
            async with asyncio.timeout(HANG_BOUND):
                await probe.all_arrived.wait()
            assert stream.registration.statistics().pending == EVENTS
    assert probe.worst_latency() < PROBE_LATENCY_BOUND
