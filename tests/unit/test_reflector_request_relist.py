"""``Reflector.request_relist``: what a cache audit that found the store differing from the
server asks of the reflector. Watching, the watch ends as after a failed resync (the reason
goes to the error handler) and the next round lists the latest state; between rounds, the
coming list is that relist."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from aioinformer._pipeline.watch_policy import RelistRequested
from aioinformer.errors import CacheDivergence
from aioinformer.reflector import Reflector, ReflectorState
from tests._support_health import clock as clock
from tests._support_health import lw as lw
from tests._support_reflector import RecordingStore
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.testing.clock import FakeClock
    from aioinformer.testing.lister_watcher import FakeListerWatcher


@pytest.fixture
async def watching(lw: FakeListerWatcher, clock: FakeClock) -> AsyncIterator[Reflector]:
    reflector = Reflector(lw, RecordingStore(), clock=clock, use_watch_list=False)
    task = asyncio.ensure_future(reflector.run())
    await lw.wait_for_watchers(1)
    yield reflector
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_relist_asked_for_while_watching_ends_the_watch_and_lists_the_latest_state(
    watching: Reflector, lw: FakeListerWatcher, clock: FakeClock
) -> None:
    reported: list[BaseException] = []
    watching.set_watch_error_handler(lambda _reflector, error: reported.append(error))
    reason = CacheDivergence("2", extra=("ns/z",))
    watching.request_relist(reason)
    await wait_until(lambda: watching.state is ReflectorState.BACKING_OFF)
    assert reported == [reason]
    await clock.advance(2.0)
    await lw.wait_for_list_calls(2)
    assert lw.list_calls[-1].resource_version == ""
    await wait_until(lambda: watching.state is ReflectorState.WATCHING)
    assert watching.statistics().relists == 1


async def test_a_relist_asked_for_between_rounds_is_the_coming_list_at_the_latest_state(
    watching: Reflector, lw: FakeListerWatcher, clock: FakeClock
) -> None:
    lw.drop_watches()
    lw.drop_watches()
    # A watch that ends at once, twice: the reflector relists after a backoff.
    await wait_until(lambda: watching.state is ReflectorState.BACKING_OFF)
    reported: list[BaseException] = []
    watching.set_watch_error_handler(lambda _reflector, error: reported.append(error))
    watching.request_relist(CacheDivergence("2", extra=("ns/z",)))
    await clock.advance(2.0)
    await lw.wait_for_list_calls(2)
    assert lw.list_calls[-1].resource_version == ""
    await wait_until(lambda: watching.state is ReflectorState.WATCHING)
    assert not any(isinstance(error, CacheDivergence) for error in reported)
    assert watching.statistics().relists == 1


async def test_a_relist_asked_for_on_purpose_starts_at_once_without_a_backoff(
    watching: Reflector, lw: FakeListerWatcher, clock: FakeClock
) -> None:
    # A source whose selectors moved: no failure, so no backoff before the relist (the
    # fake clock never moves here).
    reported: list[BaseException] = []
    watching.set_watch_error_handler(lambda _reflector, error: reported.append(error))
    reason = RelistRequested("selectors now s=...")
    watching.request_relist(reason)
    await lw.wait_for_list_calls(2)
    assert lw.list_calls[-1].resource_version == ""
    await wait_until(lambda: watching.state is ReflectorState.WATCHING)
    assert reported == [reason]
    assert watching.statistics().relists == 1
