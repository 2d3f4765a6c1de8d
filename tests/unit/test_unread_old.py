"""An ``on_update`` callback that never reads ``old`` receives None for it, so a compact
cache does not decode (nor a typed informer validate) an old object nobody looks at; one
that reads it gets the previous state, in both cache modes."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from aioinformer._objects.raw import CompactEntry
from aioinformer._objects.view import ObjectView
from aioinformer.informer import CacheMode, SharedIndexInformer
from aioinformer.models import KubeObject
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_wait import wait_until


def pod(name: str, phase: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "status": {"phase": phase},
    }


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of every CompactEntry decoded, or read past its head through a view,
    during the test."""
    seen: list[str] = []
    original = CompactEntry.decode
    split = ObjectView._split

    def counting(self: CompactEntry) -> dict[str, Any]:
        seen.append(self.key)
        return original(self)

    def counting_split(view: ObjectView) -> Any:
        if view._fields is None:
            seen.append(view.entry.key)
        return split(view)

    monkeypatch.setattr(CompactEntry, "decode", counting)
    monkeypatch.setattr(ObjectView, "_split", counting_split)
    return seen


async def test_a_compact_cache_does_not_decode_an_old_object_nobody_reads(
    decodes: list[str],
) -> None:
    source = FakeListerWatcher(objects=[pod("a", "Pending")])
    informer = SharedIndexInformer(source, clock=FakeClock())
    received: list[str] = []
    informer.add_event_handler(on_update=lambda _old, new: received.append(new["status"]["phase"]))
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.modify(pod("a", "Running"))
        await wait_until(lambda: len(received) == 1)
    # The new state was read (once), and old was never asked for.
    assert received == ["Running"]
    assert decodes == ["default/a"]


@pytest.mark.parametrize("cache", ["compact", "objects"])
async def test_a_callback_that_reads_old_gets_the_previous_state(
    cache: CacheMode, decodes: list[str]
) -> None:
    source = FakeListerWatcher(objects=[pod("a", "Pending")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache)
    received: list[tuple[str, str]] = []
    informer.add_event_handler(
        on_update=lambda old, new: received.append((old["status"]["phase"], new["status"]["phase"]))
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.modify(pod("a", "Running"))
        await wait_until(lambda: len(received) == 1)
    assert received == [("Pending", "Running")]
    assert decodes == (["default/a", "default/a"] if cache == "compact" else [])


class Pod(KubeObject):
    pass


@pytest.mark.parametrize("cache", ["compact", "objects"])
async def test_a_typed_informer_skips_validating_an_unread_old(
    cache: CacheMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    validated: list[str] = []
    original = Pod.model_validate

    def counting(obj: Any, *args: Any, **kwargs: Any) -> Pod:
        validated.append(obj["status"]["phase"])
        return original(obj, *args, **kwargs)

    monkeypatch.setattr(Pod, "model_validate", counting)
    source = FakeListerWatcher(objects=[pod("a", "Pending")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache, model=Pod)
    received: list[Pod] = []
    informer.add_event_handler(on_update=lambda _old, new: received.append(new))
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.modify(pod("a", "Running"))
        await wait_until(lambda: len(received) == 1)
    assert isinstance(received[0], Pod)
    assert validated == ["Running"]


def test_an_unread_old_is_passed_as_none() -> None:
    """What the callback would see if it looked some other way (a debugger, a frame)."""
    from aioinformer.processor import ProcessorListener

    seen: list[Any] = []

    def on_update(old: Any, new: Any) -> None:
        seen.append(sys._getframe().f_locals["old"])

    listener = ProcessorListener(name="h", on_update=on_update, convert=lambda obj: obj)
    # The frame read counts as reading nothing: f_locals is not a load of "old".
    update = listener._calls[1]
    assert update is not None
    update[0]({"old": True}, {"new": True})
    assert seen == [None]
