"""The modules a watch event passes through, from the bytes of the stream to a handler.

The path from socket to handler should cross few modules, each one stage. The test runs MODIFIED
events through a synced informer as a server would send them (JSON lines framed and decoded by
the reader of :mod:`aioinformer.watch`, as a client's watch reads them) and notes, with a
profile hook, which ``aioinformer`` modules have a function entered. A module is on the *per-
event* path when a round of ``2n`` events enters it at least ``n`` times more than a round of
``n`` events (at least once per added event); the modules entered once per read of the stream,
per popped batch or per watch (the reflector's :class:`WatchRead`, whose loop over a read's
events calls into the codec and the FIFO, the FIFO's waits, the store's resourceVersion, the
task runner) gain nothing from the longer round, since each round arrives as one read.

The per-event path is the six stages (``client._watch``: framing; ``codec``: decoding;
``delta_fifo``; ``informer``: applying a key's deltas; ``indexer``; ``processor``: the
handler calls) and five modules that are no stage of their own: the vocabulary's
:class:`WatchEvent` (``listwatch``, whose dataclass constructor runs once per decoded
line); the compact entry's decoding (``_objects.raw``: the head of each line, which the
codec calls); the read-only view each handler call gets (``_objects.view``, which the
indexer makes for index functions too, so the module sits below both the indexer and the
codec, and folding it into the codec would close an import circle); the default key
function (``_objects.meta``, which the FIFO calls for every object); and the
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

from aioinformer.informer import SharedIndexInformer
from aioinformer.testing import FakeClock, FakeListerWatcher
from tests._support_wait import wait_until
from tests._support_wire import OnTheWire

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

OBJECTS = 200

PER_EVENT = {
    "aioinformer.client._watch",
    "aioinformer.codec",
    "aioinformer.delta_fifo",
    "aioinformer.informer",
    "aioinformer.indexer",
    "aioinformer.processor",
    "aioinformer.listwatch",
    "aioinformer._objects.raw",
    "aioinformer._objects.view",
    "aioinformer._objects.meta",
    "aioinformer._pipeline.fifo_waits",
}


def pod(index: int, step: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": f"pod-{index}", "namespace": "default"},
        "spec": {"step": step},
    }


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
    helpers = {"aioinformer.listwatch"} | {m for m in per_event if m.startswith("aioinformer._")}
    assert len(per_event - helpers) == 6  # the five stages and the client's watch reader
