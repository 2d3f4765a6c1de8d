"""The modules a watch event passes through, from the bytes of the stream to a handler.

The path from socket to handler should cross few modules, each one stage. The
test runs MODIFIED events through a synced informer as a server would send them (JSON lines
framed and decoded by :mod:`aioinformer.watch`, as a client's watch reads them) and notes,
with a profile hook, which ``aioinformer`` modules have a function entered. A module is on
the *per-event* path when a round of ``2n`` events enters it at least ``n`` times more than a
round of ``n`` events (at least once per added event); the modules entered once per read
of the stream, per popped batch or per watch (the reflector's :class:`WatchRead`, whose
loop over a read's events calls into the codec and the FIFO, the FIFO's waits, the store's
resourceVersion, the task runner) gain nothing from the longer round, since each round
arrives as one read.

The per-event path is the six stages (``watch``: framing; ``codec``: decoding;
``delta_fifo``; ``informer``: applying a key's deltas; ``indexer``; ``processor``: the
handler calls) and five modules that are no stage of their own: the vocabulary's
:class:`WatchEvent` (``listwatch``, whose dataclass constructor runs once per decoded
line); the compact entry's decoding (``_pipeline.raw``: the head of each line, which the
codec calls); the read-only view each handler call gets (``_pipeline.view``, which the
indexer makes for index functions too, so the module sits below both the indexer and the
codec, and folding it into the codec would close an import circle); the default key
function (``_pipeline.meta``, which the FIFO calls for every object); and the
base class the two FIFOs share (``_pipeline.fifo_waits``, whose ``has_synced()`` the
informer asks once per popped key, client-go's *isInInitialList*).

Input: a :class:`FakeListerWatcher` whose watch is re-encoded as JSON lines. Output:
assertions only. Task model: one informer in ``async with``; no task of the test's own.
"""

from __future__ import annotations

import collections
import contextlib
import sys
from typing import TYPE_CHECKING, Any

import orjson
import yarl

from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import DescribedListerWatcher, WatchStreamBase
from aioinformer.testing import FakeClock, FakeListerWatcher
from aioinformer.watch import WatchStream
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from types import FrameType

    from aioinformer.codec import Codec
    from aioinformer.listwatch import ListOptions, ObjectList, SourceInfo

OBJECTS = 200

PER_EVENT = {
    "aioinformer.watch",
    "aioinformer.codec",
    "aioinformer.delta_fifo",
    "aioinformer.informer",
    "aioinformer.indexer",
    "aioinformer.processor",
    "aioinformer.listwatch",
    "aioinformer._pipeline.raw",
    "aioinformer._pipeline.view",
    "aioinformer._pipeline.meta",
    "aioinformer._pipeline.fifo_waits",
}


def pod(index: int, step: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": f"pod-{index}", "namespace": "default"},
        "spec": {"step": step},
    }


class _Body:
    """A response body whose chunks are the fake watch's reads, one JSON line per event."""

    def __init__(self, stream: WatchStreamBase) -> None:
        self._stream = stream

    async def iter_chunked(self, size: int) -> AsyncIterator[bytes]:
        async for batch in self._stream.batches():
            yield b"".join(
                orjson.dumps({"type": event.type, "object": event.object}) + b"\n"
                for event in batch
            )


class _Response:
    url = yarl.URL("http://127.0.0.1/api/v1/pods")

    def __init__(self, stream: WatchStreamBase) -> None:
        self.content = _Body(stream)


class OnTheWire(DescribedListerWatcher):
    """``fake``'s lists as they are, its watches sent through the wire reader."""

    def __init__(self, fake: FakeListerWatcher, codec: Codec | None = None) -> None:
        self.fake = fake
        self.codec = codec

    def describe(self) -> SourceInfo:
        return self.fake.describe()

    def decoded_with(self, codec: Codec) -> DescribedListerWatcher:
        return OnTheWire(self.fake, codec)

    async def list(self, options: ListOptions) -> ObjectList:
        return await self.fake.list(options)

    def watch(self, options: ListOptions) -> WatchStream:
        inner = self.fake.watch(options)
        assert isinstance(inner, WatchStreamBase)

        @contextlib.asynccontextmanager
        async def open_response() -> AsyncIterator[Any]:
            try:
                yield _Response(inner)
            finally:
                await inner.aclose()

        assert self.codec is not None
        return WatchStream(open_response, codec=self.codec)


@contextlib.contextmanager
def entered_modules() -> Iterator[collections.Counter[str]]:
    """Count the function entries (generator resumptions included) per ``aioinformer``
    module, test doubles aside, while the block runs."""
    counts: collections.Counter[str] = collections.Counter()

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if module.startswith("aioinformer.") and not module.startswith("aioinformer.testing"):
                counts[module] += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield counts
    finally:
        sys.setprofile(previous)


async def test_a_modified_event_enters_the_six_stages_and_five_helpers_on_its_way() -> None:
    fake = FakeListerWatcher(objects=[pod(i) for i in range(OBJECTS)])
    informer = SharedIndexInformer(OnTheWire(fake), clock=FakeClock(), cache="compact")
    seen: list[Any] = []
    informer.add_event_handler(on_update=lambda old, new: seen.append(new["spec"]["step"]))

    async def modify(events: int, step: int) -> collections.Counter[str]:
        """Send ``events`` MODIFIED events of distinct objects in one read of the stream
        and wait for the handler to have them all."""
        seen.clear()
        with entered_modules() as counts:
            for index in range(events):
                fake.modify(pod(index, step))
            await wait_until(lambda: len(seen) == events, what=f"{events} updates handled")
        assert seen == [step] * events
        return counts

    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await modify(1, 1)  # the watch is open and read
        short = await modify(OBJECTS // 2, 2)
        long = await modify(OBJECTS, 3)

    per_event = {module for module in long if long[module] - short[module] >= OBJECTS // 2}
    assert per_event == PER_EVENT, {module: long[module] - short[module] for module in long}
    stages = per_event - {"aioinformer.listwatch"} - {m for m in per_event if "._" in m}
    assert len(stages) == 6
