"""``registration.wait_stopped()``: a removed handler awaited until no call of it runs.

A controller for a resource that goes away removes its handlers and must not let go of
what they use while one of their calls still runs. Informers read from in-memory
FakeListerWatchers on a FakeClock; a handler's call is held by an event the test sets.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aioinformer.informer import SharedIndexInformer
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_tasks import settle


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}}


async def test_the_wait_returns_once_the_running_call_has_returned() -> None:
    gate = asyncio.Event()
    calls: list[str] = []

    async def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        calls.append(obj["metadata"]["name"])
        await gate.wait()
        calls.append("returned")

    source = FakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(source, clock=FakeClock())
    registration = informer.add_event_handler(on_add=on_add)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await settle()
        assert calls == ["a"]
        informer.remove_event_handler(registration)
        stopped = asyncio.create_task(registration.wait_stopped())
        await settle()
        assert not stopped.done()  # the call for "a" still runs
        gate.set()
        await asyncio.wait_for(stopped, 5)
        # The call that ran finished; the one queued behind it was dropped.
        assert calls == ["a", "returned"]


async def test_a_handler_never_called_is_stopped_once_removed() -> None:
    informer = SharedIndexInformer(FakeListerWatcher(objects=[]), clock=FakeClock())
    registration = informer.add_event_handler(on_add=lambda obj, initial: None)
    other = informer.add_event_handler(on_update=lambda old, new: None)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        informer.remove_event_handler(registration)
        informer.remove_event_handler(other)
        await asyncio.wait_for(registration.wait_stopped(), 5)
        await asyncio.wait_for(other.wait_stopped(), 5)


async def test_a_handler_removed_before_its_informer_started_is_stopped() -> None:
    informer = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]), clock=FakeClock())
    registration = informer.add_event_handler(on_add=lambda obj, initial: None)
    informer.remove_event_handler(registration)
    await asyncio.wait_for(registration.wait_stopped(), 5)


async def test_the_wait_ends_when_the_informer_stops() -> None:
    gate = asyncio.Event()

    async def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        await gate.wait()

    informer = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]), clock=FakeClock())
    registration = informer.add_event_handler(on_add=on_add)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        stopped = asyncio.create_task(registration.wait_stopped())
        await settle()
        assert not stopped.done()  # not removed: it waits for the informer
    # Stopping the informer cancelled the held call.
    await asyncio.wait_for(stopped, 5)


async def test_a_handler_cannot_wait_for_its_own_stop() -> None:
    errors: list[BaseException] = []
    holder: list[Any] = []

    async def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        try:
            await holder[0].wait_stopped()
        except RuntimeError as error:
            errors.append(error)

    informer = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]), clock=FakeClock())
    holder.append(informer.add_event_handler(on_add=on_add))
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await settle()
    assert len(errors) == 1
    with pytest.raises(RuntimeError, match="cannot wait for its own stop"):
        raise errors[0]
