"""One object that fails an informer's ``model`` never breaks reads: listers and
``events()`` skip it, ``get()`` raises ``InvalidObjectError`` naming it, handlers are not
called with it, and it is logged once per key and resourceVersion and counted.

Every test runs in both cache modes (the ``cache`` fixture) over a FakeListerWatcher
whose objects the test edits (of dicts, or of CompactEntry objects as from the real client: the
``source_type`` fixture); waits are on the informer's own state, never on time.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import BaseModel, ValidationError

from aioinformer.errors import AioinformerError, InvalidObjectError
from aioinformer.indexer import NAMESPACE_INDEX, Indexer, namespace_index_func
from aioinformer.informer import Lister, SharedIndexInformer
from aioinformer.models import DeletedFinalStateUnknown, KubeObject
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_cache import until_idle

if TYPE_CHECKING:
    from aioinformer.informer import CacheMode, Event


class Spec(BaseModel):
    replicas: int


class Widget(KubeObject):
    spec: Spec


def widget(name: str, replicas: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas},
    }


def names(objs: list[Widget]) -> list[str]:
    return sorted(str(obj.metadata.name) for obj in objs)


def warnings_about(caplog: pytest.LogCaptureFixture, key: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno == logging.WARNING and key in record.getMessage()
    ]


async def test_listers_skip_an_invalid_object_and_get_names_it(
    cache: CacheMode, source_type: type[FakeListerWatcher], caplog: pytest.LogCaptureFixture
) -> None:
    source = source_type(objects=[widget("good", 1), widget("bad", "many")])
    informer = SharedIndexInformer(
        source,
        clock=FakeClock(),
        cache=cache,
        model=Widget,
        indexers={NAMESPACE_INDEX: namespace_index_func},
        name="widgets",
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        lister = informer.lister()
        caplog.set_level(logging.WARNING)
        for _ in range(3):
            assert names(lister.list()) == ["good"]
            assert names(lister.list("default")) == ["good"]
            assert names(lister.by_index(NAMESPACE_INDEX, "default")) == ["good"]
        good = lister.get("good", "default")
        assert good is not None
        assert good.spec.replicas == 1
        with pytest.raises(InvalidObjectError, match="default/bad") as raised:
            lister.get("bad", "default")
        error = raised.value
        assert isinstance(error, AioinformerError)
        assert error.key == "default/bad"
        assert isinstance(error.error, ValidationError)
        assert error.__cause__ is error.error
        bad_version = source.get("default/bad")
        assert bad_version is not None
        assert error.resource_version == bad_version["metadata"]["resourceVersion"]
        # Reported once for all those reads, naming the informer, the key and the model.
        (warning,) = warnings_about(caplog, "default/bad")
        assert "widgets" in warning
        assert "Widget" in warning
        assert informer.statistics().invalid_objects == 1

        # A new version that is still invalid is reported (and counted) once more.
        source.modify(widget("bad", "lots"))
        await until_idle(informer, source)
        assert names(lister.list()) == ["good"]
        assert names(lister.list()) == ["good"]
        assert len(warnings_about(caplog, "default/bad")) == 2
        assert informer.statistics().invalid_objects == 2

        # Once fixed on the server, it reads like any other.
        source.modify(widget("bad", 3))
        await until_idle(informer, source)
        assert names(lister.list()) == ["bad", "good"]
        fixed = lister.get("bad", "default")
        assert fixed is not None
        assert fixed.spec.replicas == 3


def test_a_lister_built_by_hand_skips_invalid_objects_too() -> None:
    indexer: Indexer[Any] = Indexer()
    indexer.add(widget("good", 1))
    indexer.add(widget("bad", None))
    lister = Lister(indexer, model=Widget)
    assert names(lister.list()) == ["good"]
    with pytest.raises(InvalidObjectError, match="default/bad"):
        lister.get("bad", "default")


async def test_events_streams_skip_invalid_objects_and_keep_going(cache: CacheMode) -> None:
    source = FakeListerWatcher(objects=[widget("a", 1), widget("bad", "many")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache, model=Widget)
    seen: list[tuple[str, Any, Any]] = []

    def describe(obj: Any) -> Any:
        if isinstance(obj, DeletedFinalStateUnknown):
            return ("tombstone", obj.key, obj.obj)
        return None if obj is None else (obj.metadata.name, obj.spec.replicas)

    async def consume(stream: Any) -> None:
        event: Event
        async for event in stream:
            seen.append((event.type, describe(event.object), describe(event.old)))

    async with informer:
        stream = informer.events()
        consumer = asyncio.create_task(consume(stream))
        assert await informer.wait_for_sync(timeout=5)
        source.modify(widget("a", "broken"))  # valid -> invalid: skipped
        source.modify(widget("a", 2))  # invalid -> valid: old is None
        source.modify(widget("bad", "still"))  # invalid -> invalid: skipped
        source.delete("default/bad")  # the deletion still arrives, as a bare tombstone
        source.add(widget("c", 5))
        await until_idle(informer, source)
        assert stream.registration.has_synced()
        assert not consumer.done()
        assert seen == [
            ("ADDED", ("a", 1), None),
            ("UPDATED", ("a", 2), None),
            ("DELETED", ("tombstone", "default/bad", None), None),
            ("ADDED", ("c", 5), None),
        ]
        await stream.aclose()
        await consumer
    # Four invalid versions: bad as listed, a broken, bad still, and bad as deleted (a
    # deletion carries a resourceVersion of its own).
    assert informer.statistics().invalid_objects == 4


async def test_handlers_are_not_called_with_invalid_objects(
    cache: CacheMode, source_type: type[FakeListerWatcher]
) -> None:
    source = source_type(objects=[widget("a", 1), widget("bad", "many")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache, model=Widget)
    calls: list[tuple[Any, ...]] = []

    def on_add(obj: Widget, is_in_initial_list: bool) -> None:
        calls.append(("add", obj.metadata.name, obj.spec.replicas))

    async def on_update(old: Widget | None, new: Widget) -> None:
        calls.append(("update", None if old is None else old.spec.replicas, new.spec.replicas))

    def on_delete(obj: Any) -> None:
        assert isinstance(obj, DeletedFinalStateUnknown)
        calls.append(("delete", obj.key, obj.obj))

    registration = informer.add_event_handler(
        on_add=on_add, on_update=on_update, on_delete=on_delete
    )
    async with informer:
        assert await registration.wait_for_sync(timeout=5)
        source.modify(widget("a", "broken"))
        source.modify(widget("a", 2))
        source.delete("default/bad")
        await until_idle(informer, source)
    assert calls == [
        ("add", "a", 1),
        ("update", None, 2),
        ("delete", "default/bad", None),
    ]
    statistics = registration.statistics()
    assert statistics.failed == 0
    # bad as listed, a broken, and bad as deleted (its own resourceVersion).
    assert informer.statistics().invalid_objects == 3


async def test_a_handler_that_raises_invalid_object_error_itself_still_fails(
    cache: CacheMode,
) -> None:
    source = FakeListerWatcher(objects=[widget("a", 1)])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache, model=Widget)
    lister = informer.lister()

    def on_add(obj: Widget, is_in_initial_list: bool) -> None:
        raise InvalidObjectError("default/other", None, ValueError("not this handler's"))

    registration = informer.add_event_handler(on_add=on_add)
    async with informer:
        assert await registration.wait_for_sync(timeout=5)
    assert registration.statistics().failed == 1
    assert names(lister.list()) == ["a"]
