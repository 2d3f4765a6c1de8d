"""Reading one watch stream: where a read stops, how it is interrupted, and how its end
is summed up for the watch-end policy."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import Gone, WatchTimeout
from aioinformer.listwatch import INITIAL_EVENTS_END_ANNOTATION, WatchEvent, WatchStreamBase
from aioinformer.reflector import Cursor, TemporaryStore, WatchRead
from aioinformer.testing import FakeClock
from tests._support_reflector import RecordingStore

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


def pod(name: str, rv: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
    }


def initial_events_end(rv: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"resourceVersion": rv, "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"}},
    }


class Scripted:
    """A watch stream yielding ``events``, then raising ``error`` or stalling forever."""

    def __init__(
        self,
        events: list[WatchEvent],
        *,
        error: BaseException | None = None,
        stall: bool = False,
    ) -> None:
        self._events = list(events)
        self._error = error
        self._stall = stall
        self.closed = False

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self

    async def __anext__(self) -> WatchEvent:
        await asyncio.sleep(0)
        if self._events:
            return self._events.pop(0)
        if self._error is not None:
            raise self._error
        if self._stall:
            await asyncio.Event().wait()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self.closed = True


class Declared(WatchStreamBase):
    """A :class:`Scripted` stream declaring whether its request was accepted, and handing
    its events out a read (here: one event) at a time."""

    def __init__(self, scripted: Scripted, *, opened: bool) -> None:
        self.scripted = scripted
        self._opened = opened

    @property
    def opened(self) -> bool:
        return self._opened

    async def batches(self) -> AsyncIterator[list[WatchEvent]]:
        async for event in self.scripted:
            yield [event]

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self.scripted

    async def aclose(self) -> None:
        await self.scripted.aclose()


def read(stream: Scripted | Declared, sink: Any, clock: FakeClock, **kwargs: Any) -> WatchRead:
    return WatchRead(stream, sink, Cursor("1"), name="pods", clock=clock, deadline=10.0, **kwargs)


async def test_a_stream_ending_applies_every_event_and_is_closed() -> None:
    stream = Scripted([WatchEvent("ADDED", pod("a", "2")), WatchEvent("DELETED", pod("a", "3"))])
    store = RecordingStore()

    done, end = await read(stream, store, FakeClock()).run()

    assert not done
    assert store.calls == [("add", "ns/a", "2"), ("delete", "ns/a", "3")]
    assert (end.error, end.opened, end.events, end.timed_out) == (None, True, 2, False)
    assert stream.closed


async def test_a_streaming_list_stops_at_the_initial_events_end_and_leaves_the_stream_open() -> (
    None
):
    stream = Scripted(
        [
            WatchEvent("ADDED", pod("a", "2")),
            WatchEvent("BOOKMARK", initial_events_end("4")),
            WatchEvent("ADDED", pod("b", "5")),
        ]
    )
    temporary = TemporaryStore()
    reader = read(stream, temporary, FakeClock(), until_initial_events_end=True)

    done, end = await reader.run()

    assert done
    assert list(temporary.items) == ["ns/a"]
    assert reader.applied == end.events == 2
    assert not stream.closed


@pytest.mark.parametrize(
    ("opened_attribute", "events", "opened"),
    [
        pytest.param(None, [], False, id="nothing-yielded-failed-request"),
        pytest.param(None, [WatchEvent("ADDED", pod("a", "2"))], True, id="events-yielded"),
        pytest.param(True, [], True, id="stream-declares-it-opened"),
        pytest.param(False, [], False, id="stream-declares-it-did-not"),
    ],
)
async def test_an_error_counts_as_a_failed_request_unless_the_watch_had_opened(
    opened_attribute: bool | None, events: list[WatchEvent], opened: bool
) -> None:
    gone = Gone({"message": "too old"})
    scripted = Scripted(events, error=gone)
    stream = scripted if opened_attribute is None else Declared(scripted, opened=opened_attribute)

    _, end = await read(stream, RecordingStore(), FakeClock()).run()

    assert end.error is gone
    assert end.opened is opened
    assert scripted.closed


async def test_an_attribute_a_plain_stream_happens_to_have_declares_nothing() -> None:
    # Only a WatchStreamBase declares that its request was accepted; nothing is read off
    # another stream.
    scripted = Scripted([], error=Gone({"message": "too old"}))
    scripted.opened = True  # type: ignore[attr-defined]

    _, end = await read(scripted, RecordingStore(), FakeClock()).run()

    assert end.opened is False


async def test_a_silent_stream_times_out_after_its_deadline_without_a_pending_cancel() -> None:
    clock = FakeClock()
    stream = Scripted([], stall=True)
    reader = WatchRead(stream, RecordingStore(), Cursor(), name="pods", clock=clock, deadline=10.0)
    task = asyncio.create_task(reader.run())
    await clock.advance(9.9)
    assert not task.done()

    await clock.advance(0.2)
    done, end = await task

    assert not done
    assert end.timed_out
    assert not end.resync_failed
    assert isinstance(end.error, WatchTimeout)
    assert stream.closed
    assert task.cancelling() == 0
    assert clock.sleepers == 0


async def test_an_interrupt_ends_a_blocked_read_and_one_from_outside_still_cancels() -> None:
    clock = FakeClock()
    failure = RuntimeError("resync failed")
    interrupted = read(Scripted([], stall=True), RecordingStore(), clock)
    cancelled = read(Scripted([], stall=True), RecordingStore(), clock)
    first = asyncio.create_task(interrupted.run())
    second = asyncio.create_task(cancelled.run())
    await clock.settle()

    interrupted.interrupt(failure, resync_failed=True)
    cancelled.interrupt(failure)
    second.cancel()
    _, end = await first

    assert end.error is failure
    assert end.resync_failed
    assert not end.timed_out
    with pytest.raises(asyncio.CancelledError):
        await second
