"""Sync handlers called by the dispatcher itself, and the batch hand-off from the watch to
the handlers.

A sync handler with nothing queued is called from the informer's pop task as a batch is
handed over, with no task woken; its contracts stay: one handler's exception or slowness
never reaches another, the order of each handler's notifications is kept, a slow call
sends what follows to the handler's own task, and a handler may re-enter the informer
(add or remove handlers, read the lister, stop it) from inside the call. The batch tests
check the reader's hand-off where a batch meets the end of the initial list, an ERROR that
ends the watch, and a stop."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from aioinformer.errors import Gone
from aioinformer.informer import SharedIndexInformer
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import CompactFakeListerWatcher, Decodes
from tests._support_wait import wait_until

if TYPE_CHECKING:
    import pytest

    from aioinformer.informer import CacheMode, HandlerRegistration


class HandClock:
    """A clock that moves only when a handler moves it: each call takes what it says."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(0)


def pod(name: str, step: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"step": str(step)}},
    }


def names(objs: list[Any]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objs]


async def synced(informer: SharedIndexInformer, source: FakeListerWatcher) -> None:
    assert await informer.wait_for_sync(timeout=5)
    await source.wait_for_watchers(1)


async def test_a_sync_handler_is_called_from_the_pop_task(cache: CacheMode) -> None:
    source = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(source, cache=cache)
    called_in: list[str] = []

    def on_update(old: Any, new: Any) -> None:
        task = asyncio.current_task()
        assert task is not None
        called_in.append(task.get_name())

    async def on_update_async(old: Any, new: Any) -> None:
        task = asyncio.current_task()
        assert task is not None
        called_in.append(task.get_name())

    informer.add_event_handler(on_update=on_update, name="sync")
    informer.add_event_handler(on_update=on_update_async, name="async")
    async with informer:
        await synced(informer, source)
        source.modify(pod("a", 1))
        await wait_until(lambda: len(called_in) == 2)

    assert sorted(called_in) == ["handler async", "pods pop"]


async def test_a_handler_that_raises_is_logged_and_reaches_no_other(
    cache: CacheMode, caplog: pytest.LogCaptureFixture
) -> None:
    source = FakeListerWatcher(objects=[pod(name) for name in "abc"])
    informer = SharedIndexInformer(source, cache=cache)
    got: list[str] = []
    failing_got: list[str] = []

    def failing(obj: Any, initial: bool) -> None:
        failing_got.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "b":
            raise RuntimeError("handler bug")

    informer.add_event_handler(on_add=failing, name="failing")
    registration = informer.add_event_handler(
        on_add=lambda obj, initial: got.append(obj["metadata"]["name"]), name="steady"
    )
    async with informer:
        await synced(informer, source)
        source.add(pod("d"))
        await wait_until(lambda: len(got) == 4)
        statistics = {handler.name: handler for handler in informer.statistics().handlers}

    assert got == failing_got == ["a", "b", "c", "d"]
    assert statistics["failing"].failed == 1
    assert statistics["steady"].failed == 0
    assert registration.has_synced()  # it had synced when the informer stopped
    assert "event handler failing failed on add" in caplog.text


async def test_a_slow_sync_handler_holds_the_dispatcher_for_one_call_only(
    cache: CacheMode,
) -> None:
    clock = HandClock()
    source = FakeListerWatcher(objects=[pod(name) for name in "abcdef"])
    informer = SharedIndexInformer(source, cache=cache, clock=clock)
    slow_got: list[str] = []
    fast_got: list[str] = []
    fast_task: list[str] = []

    def slow(obj: Any, initial: bool) -> None:
        slow_got.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "b":
            clock.now += 1.0  # far past the 0.1 s a call may hold the loop

    def fast(obj: Any, initial: bool) -> None:
        fast_got.append(obj["metadata"]["name"])
        task = asyncio.current_task()
        assert task is not None
        fast_task.append(task.get_name())

    informer.add_event_handler(on_add=slow, name="slow")
    informer.add_event_handler(on_add=fast, name="fast")
    async with informer:
        await synced(informer, source)
        # The fast handler had the whole initial list from the dispatcher...
        assert fast_got == ["a", "b", "c", "d", "e", "f"]
        assert set(fast_task) == {"pods pop"}
        # ...while the slow one's rest went to its own task after its slow call.
        await wait_until(lambda: len(slow_got) == 6)
        assert slow_got == ["a", "b", "c", "d", "e", "f"]
        stats = {handler.name: handler for handler in informer.statistics().handlers}
        assert stats["slow"].slow_calls == 1
        assert stats["fast"].slow_calls == 0
        # Fast again (its episode ended): called directly once more, in order.
        source.add(pod("g"))
        await wait_until(lambda: slow_got[-1:] == ["g"] and fast_got[-1:] == ["g"])


async def test_a_handler_may_add_and_remove_handlers_from_inside_its_call(
    cache: CacheMode,
) -> None:
    source = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(source, cache=cache)
    late_got: list[tuple[str, bool]] = []
    victim_got: list[str] = []
    victim: list[HandlerRegistration] = []

    def adder(old: Any, new: Any) -> None:
        if new["metadata"]["name"] == "a":
            informer.add_event_handler(
                on_add=lambda obj, initial: late_got.append((obj["metadata"]["name"], initial)),
                on_update=lambda old, new: late_got.append((new["metadata"]["name"], False)),
                name="late",
            )
            informer.remove_event_handler(victim[0])

    informer.add_event_handler(on_update=adder, name="adder")
    victim.append(
        informer.add_event_handler(
            on_update=lambda old, new: victim_got.append(new["metadata"]["name"]),
            name="victim",
        )
    )
    async with informer:
        await synced(informer, source)
        # One read brings both: the adder's call on the first adds "late" and removes
        # "victim" while the batch is handed over.
        source.modify(pod("a", 1))
        source.add(pod("b"))
        await wait_until(lambda: len(late_got) == 2)
        handlers = [h.name for h in informer.statistics().handlers]
        source.add(pod("c"))
        await wait_until(lambda: len(late_got) == 3)

    # The late handler's snapshot is the cache with the whole read applied ("a" changed,
    # "b" added), as initial adds; then only what came after: "c". It never had the
    # read's notifications on top of its snapshot.
    assert late_got == [("a", True), ("b", True), ("c", False)]
    # The victim, removed during the read's hand-over, had nothing after it.
    assert victim_got in ([], ["a"])
    assert handlers == ["adder", "late"]


async def test_a_handler_reads_the_lister_with_its_batch_applied(cache: CacheMode) -> None:
    source = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(source, cache=cache)
    seen: list[list[str]] = []

    def on_add(obj: Any, initial: bool) -> None:
        if not initial:
            seen.append(sorted(names(informer.lister().list())))

    informer.add_event_handler(on_add=on_add)
    async with informer:
        await synced(informer, source)
        source.add(pod("b"))
        source.add(pod("c"))
        await wait_until(lambda: len(seen) == 2)

    # Both arrived in one read, applied as one batch before any handler ran.
    assert seen == [["a", "b", "c"], ["a", "b", "c"]]


async def test_a_handler_stopping_the_informer_mid_batch_ends_it_cleanly(
    cache: CacheMode,
) -> None:
    source = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(source, cache=cache)
    got: list[str] = []

    def on_add(obj: Any, initial: bool) -> None:
        got.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "c":
            informer.stop()

    informer.add_event_handler(on_add=on_add)
    run = asyncio.create_task(informer.run())
    await synced(informer, source)
    for name in "bcde":
        source.add(pod(name))
    await asyncio.wait_for(run, timeout=5)

    # The batch that held "c" is handed over whole; nothing after it.
    assert got[:3] == ["a", "b", "c"]
    assert set(got) <= {"a", "b", "c", "d", "e"}
    assert source.open_watches == 0


async def test_handlers_reading_labels_decode_nothing_and_a_body_read_decodes_its_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A source of CompactEntry objects, as the real client is for a compact cache.
    source = CompactFakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(source, cache="compact")
    got: list[str] = []
    specs: list[Any] = []
    for name in ("one", "two"):
        informer.add_event_handler(
            on_update=lambda old, new: got.append(new["metadata"]["labels"]["step"]), name=name
        )
    informer.add_event_handler(
        on_update=lambda old, new: specs.append(new.get("spec")), name="spec"
    )
    async with informer:
        await synced(informer, source)
        decodes = Decodes(monkeypatch)
        for step in range(1, 6):
            source.modify(pod("a", step))
        await wait_until(lambda: len(got) == 10 and len(specs) == 5)

    assert got == [str(step) for step in range(1, 6) for _ in range(2)]
    # Labels come from the head; the one handler reading the spec parses each event once.
    assert decodes.count == 5


# ------------------------------------------------------------------ the batch hand-off


async def test_a_read_across_the_end_of_the_initial_list_applies_both_sides(
    cache: CacheMode,
) -> None:
    source = FakeListerWatcher(objects=[pod("a"), pod("b")], send_initial_events_end=False)
    informer = SharedIndexInformer(source, cache=cache)
    adds: list[tuple[str, bool]] = []
    updates: list[str] = []
    informer.add_event_handler(
        on_add=lambda obj, initial: adds.append((obj["metadata"]["name"], initial)),
        on_update=lambda old, new: updates.append(new["metadata"]["labels"]["step"]),
    )
    async with informer:
        await source.wait_for_watchers(1)
        # Queued behind the initial events, all read at once: a change before the end,
        # the end, and changes after it, which the watch carries on with.
        source.modify(pod("a", 1))
        source.send_initial_events_end()
        source.add(pod("c"))
        source.modify(pod("a", 2))
        await wait_until(lambda: len(adds) == 3 and updates == ["2"])
        assert informer.has_synced()

    assert sorted(adds) == [("a", True), ("b", True), ("c", False)]
    cached = informer.lister().get("a", namespace="default")
    assert cached is not None
    assert cached["metadata"]["labels"]["step"] == "2"


async def test_a_read_ending_in_an_expired_error_applies_its_events_then_relists(
    cache: CacheMode,
) -> None:
    clock = HandClock()
    source = FakeListerWatcher(objects=[pod("a")])
    informer = SharedIndexInformer(source, cache=cache, clock=clock)
    deleted: list[Any] = []
    informer.add_event_handler(on_delete=deleted.append)
    async with informer:
        await synced(informer, source)
        source.add(pod("b"))
        source.delete("default/a", notify=False)  # lost: only the relist will tell
        source.compact()
        source.send_error(Gone({"code": 410, "reason": "Expired", "message": "too old"}))
        await wait_until(lambda: len(deleted) == 1, between=_tick(clock))

    assert sorted(informer.indexer.list_keys()) == ["default/b"]
    reflector = informer.statistics().reflector
    assert reflector is not None
    assert reflector.relists == 1


def _tick(clock: HandClock) -> Any:
    async def tick() -> None:
        clock.now += 0.5  # the reflector's backoff before the relist

    return tick
