"""``EventHandler`` means what its docstring says: a handler object may leave out the
methods it does not need, at run time (for ``mypy --strict``, see
``tests/e2e/test_event_handler_types_mypy.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

from aioinformer.informer import EventHandler, SharedIndexInformer
from aioinformer.testing.lister_watcher import FakeListerWatcher


class OnlyAdds:
    def __init__(self) -> None:
        self.added: list[str] = []

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.added.append(obj["metadata"]["name"])


def test_a_partial_handler_is_an_event_handler_at_run_time() -> None:
    assert isinstance(OnlyAdds(), EventHandler)
    assert not isinstance(object(), EventHandler)


async def test_a_handler_with_only_on_add_receives_adds_and_skips_the_rest() -> None:
    source = FakeListerWatcher()
    source.add({"metadata": {"name": "a", "namespace": "ns"}})
    informer = SharedIndexInformer(source)
    handler = OnlyAdds()
    registration = informer.add_event_handler(handler)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.add({"metadata": {"name": "b", "namespace": "ns"}})
        source.delete("ns/a")
        for _ in range(1000):
            if registration.statistics().delivered == 3:
                break
            await asyncio.sleep(0)
    assert handler.added == ["a", "b"]
    assert registration.statistics().failed == 0
