"""Both cache modes deliver the same calls, whatever the sequence of changes: a property.

Hypothesis draws a sequence of steps: creates, updates and deletes, each either seen by
the watch or made silently (as a watch that missed them would); resync checks; relists
after a lost history (which find the silent changes, as tombstones, adds and updates);
and handlers added while running. The same sequence plays against an informer with
``cache="objects"`` reading dicts and one with ``cache="compact"`` reading dicts or
CompactEntry objects (as from the real client); the transcripts of the handlers (one of them
``keys_only``) must be equal, call for call.

Each step is followed by a wait until the cache holds what the informer has been told
(the source's state as of the last relist, plus every change the watch saw) and nothing
is queued, so the two runs line up step by step; time moves only by a
:class:`FakeClock`. Budget: 50 examples in CI, scaled by ``AIOINFORMER_PROPERTY_PROFILE``
(see :mod:`tests._support_properties`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from hypothesis import given
from hypothesis import strategies as st

from aioinformer.indexer import meta_namespace_key
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import (
    CompactFakeListerWatcher,
    Recorder,
    pod,
    relist_after_lost_history,
    resource_version_of,
    scripted_informer,
)
from tests._support_properties import example_settings
from tests._support_tasks import settle
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.informer import CacheMode, SharedIndexInformer

Step = tuple[str, str, bool]
"""(what, pod name, seen by the watch)."""

NAMES = ("a", "b", "c")
MAX_HANDLERS = 4

steps = st.lists(
    st.tuples(
        st.sampled_from(["create", "update", "delete", "resync", "relist", "late handler"]),
        st.sampled_from(NAMES),
        st.booleans(),
    ),
    max_size=25,
)


class Told:
    """What the informer has been told: key -> resourceVersion."""

    def __init__(self, source: FakeListerWatcher) -> None:
        self.versions = versions(source.objects())

    def settled(self, informer: SharedIndexInformer) -> bool:
        stats = informer.statistics()
        return (
            stats.fifo_pending == 0
            and all(handler.pending == 0 for handler in stats.handlers)
            and versions(informer.indexer.entries()) == self.versions
        )


def versions(objs: list[Any]) -> dict[str, str | None]:
    return {meta_namespace_key(obj): resource_version_of(obj) for obj in objs}


async def play(
    cache: CacheMode, source_type: type[FakeListerWatcher], script: list[Step]
) -> list[list[tuple[Any, ...]]]:
    clock = FakeClock()
    source = source_type(objects=[pod("a"), pod("b")])
    informer = scripted_informer(source, clock, cache)
    recorders = [Recorder(), Recorder()]
    informer.add_event_handler(recorders[0])
    informer.add_event_handler(recorders[1], keys_only=True, name="keys")
    told = Told(source)
    serial = 0
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        for what, name, seen in script:
            key = f"default/{name}"
            exists = source.get(key) is not None
            serial += 1
            if what == "create" and not exists:
                stored = source.add(pod(name, serial), notify=seen)
            elif what == "update" and exists:
                stored = source.modify(pod(name, serial), notify=seen)
            elif what == "delete" and exists:
                stored = source.delete(key, notify=seen)
            elif what == "resync":
                await clock.advance(1)
                await settle(200)
                continue
            elif what == "relist":
                await relist_after_lost_history(informer, source, clock)
                told = Told(source)
                continue
            elif what == "late handler" and len(recorders) < MAX_HANDLERS:
                recorders.append(Recorder())
                informer.add_event_handler(recorders[-1], name=f"late #{len(recorders)}")
                await settle(200)
                continue
            else:
                continue
            if seen:
                if what == "delete":
                    told.versions.pop(key, None)
                else:
                    told.versions[key] = resource_version_of(stored)
            await wait_until(lambda: told.settled(informer))  # noqa: B023
            await settle(200)
    return [recorder.calls for recorder in recorders]


@example_settings(50)
@given(script=steps, source_type=st.sampled_from([FakeListerWatcher, CompactFakeListerWatcher]))
def test_any_sequence_of_changes_reaches_handlers_alike_in_both_cache_modes(
    script: list[Step], source_type: type[FakeListerWatcher]
) -> None:
    objects = asyncio.run(play("objects", FakeListerWatcher, script))
    compact = asyncio.run(play("compact", source_type, script))
    assert compact == objects
