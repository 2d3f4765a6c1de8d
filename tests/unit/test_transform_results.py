"""A transform is user code too: one that returns something that is not an object
(``None``, a list, a ``str``, a mapping without ``metadata.name``) is a
:class:`TransformError` naming the transform and the key of the object it was given,
handled as a transform that raises is: a watch event is logged and skipped, a list fails
and is retried, and an informer never reports synced on a list it could not cache whole
(nothing of such a list is queued). An exception a transform raises keeps its type and
gains a note naming the transform and the key. Both cache modes, streaming and plain
lists."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer import State
from aioinformer.delta_fifo import DeltaFIFO
from aioinformer.errors import TransformError
from aioinformer.informer import SharedIndexInformer
from aioinformer.real_fifo import RealFIFO
from aioinformer.reflector import ReflectorOptions
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_reflector import reflector_statistics
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.informer import CacheMode


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}}


def hide_mirror(obj: dict[str, Any]) -> Any:
    return None if obj["metadata"]["name"] == "mirror" else obj


def as_list(obj: dict[str, Any]) -> Any:
    return [obj] if obj["metadata"]["name"] == "mirror" else obj


def as_name(obj: dict[str, Any]) -> Any:
    return obj["metadata"]["name"] if obj["metadata"]["name"] == "mirror" else obj


def without_metadata(obj: dict[str, Any]) -> Any:
    return {"spec": {}} if obj["metadata"]["name"] == "mirror" else obj


TRANSFORMS = [
    pytest.param(hide_mirror, "None", id="none"),
    pytest.param(as_list, "a list", id="list"),
    pytest.param(as_name, "a str", id="str"),
    pytest.param(without_metadata, "a dict without metadata.name", id="no-metadata"),
]


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming-list", "list"])
@pytest.mark.parametrize(("transform", "returned"), TRANSFORMS)
async def test_a_listed_object_the_transform_returns_no_object_for_fails_the_list(
    cache: CacheMode, streaming: bool, transform: Any, returned: str
) -> None:
    source = FakeListerWatcher(objects=[pod("web"), pod("mirror"), pod("db")])
    errors: list[BaseException] = []
    informer = SharedIndexInformer(
        source,
        clock=FakeClock(),
        cache=cache,
        transform=transform,
        watch_error_handler=lambda reflector, exc: errors.append(exc),
        reflector=ReflectorOptions(use_watch_list=streaming),
    )
    async with informer:
        await wait_until(lambda: bool(errors))
        # The cache could not take the list whole: nothing of it is applied, nor synced.
        assert not informer.has_synced()
        assert informer.indexer.list_keys() == []
        assert reflector_statistics(informer).last_error is errors[0]
    error = errors[0]
    assert isinstance(error, TransformError)
    assert isinstance(error, TypeError)
    assert (error.transform, error.key) == (transform.__qualname__, "default/mirror")
    assert str(error) == (
        f"transform {transform.__qualname__} returned {returned} for default/mirror, not an "
        "object: a transform must return the object to cache (a mapping with "
        "metadata.name, or a model), e.g. end it with 'return obj'"
    )


@pytest.mark.parametrize(("transform", "returned"), TRANSFORMS)
async def test_a_watch_event_the_transform_returns_no_object_for_is_logged_and_skipped(
    cache: CacheMode, transform: Any, returned: str, caplog: pytest.LogCaptureFixture
) -> None:
    source = FakeListerWatcher(objects=[pod("web")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache=cache, transform=transform)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        with caplog.at_level(logging.ERROR):
            source.add(pod("mirror"))
            source.add(pod("db"))
            await wait_until(lambda: informer.indexer.get_by_key("default/db") is not None)
        assert sorted(informer.indexer.list_keys()) == ["default/db", "default/web"]
        assert informer.state is State.RUNNING
    record = next(r for r in caplog.records if "rejected" in r.getMessage())
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], TransformError)
    assert f"returned {returned} for default/mirror" in str(record.exc_info[1])


async def test_an_exception_a_transform_raises_is_noted_with_the_transform_and_the_key(
    cache: CacheMode,
) -> None:
    def refuse(obj: dict[str, Any]) -> Any:
        raise ValueError("no")

    errors: list[BaseException] = []
    informer = SharedIndexInformer(
        FakeListerWatcher(objects=[pod("web")]),
        clock=FakeClock(),
        cache=cache,
        transform=refuse,
        watch_error_handler=lambda reflector, exc: errors.append(exc),
    )
    async with informer:
        await wait_until(lambda: bool(errors))
    assert isinstance(errors[0], ValueError)  # the transform's own error, unchanged
    assert errors[0].__notes__ == [
        "raised by transform test_an_exception_a_transform_raises_is_noted_with_the_transform"
        "_and_the_key.<locals>.refuse on default/web"
    ]


@pytest.mark.parametrize("fifo_type", [DeltaFIFO, RealFIFO])
async def test_a_replace_whose_transform_fails_on_one_object_queues_none(
    fifo_type: type[DeltaFIFO | RealFIFO],
) -> None:
    def refuse_mirror(obj: dict[str, Any]) -> Any:
        if obj["metadata"]["name"] == "mirror":
            raise ValueError("no")
        return obj

    fifo = fifo_type(transform=refuse_mirror)
    with pytest.raises(ValueError, match="no"):
        await fifo.replace([pod("web"), pod("mirror"), pod("db")], "5")
    assert len(fifo) == 0
    assert not fifo.has_synced()


def with_a_set(obj: dict[str, Any]) -> Any:
    if obj["metadata"]["name"] == "mirror":
        return {**obj, "owners": {"team-a", "team-b"}}
    return obj


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming-list", "list"])
async def test_a_listed_object_the_compact_cache_cannot_encode_fails_the_list(
    streaming: bool,
) -> None:
    # A set is no JSON: the compact cache, which stores each object's JSON, cannot keep
    # it. The list fails where the transform ran, not later in the pop task, where the
    # object could only be dropped from a cache that reported itself synced.
    source = FakeListerWatcher(objects=[pod("web"), pod("mirror"), pod("db")])
    errors: list[BaseException] = []
    informer = SharedIndexInformer(
        source,
        clock=FakeClock(),
        cache="compact",
        transform=with_a_set,
        watch_error_handler=lambda reflector, exc: errors.append(exc),
        reflector=ReflectorOptions(use_watch_list=streaming),
    )
    async with informer:
        await wait_until(lambda: bool(errors))
        assert not informer.has_synced()
        assert informer.indexer.list_keys() == []
    error = errors[0]
    assert isinstance(error, TransformError)
    assert (error.transform, error.key) == ("with_a_set", "default/mirror")
    assert str(error).startswith(
        "transform with_a_set returned an object for default/mirror that the compact cache "
        "cannot encode as JSON ("
    )
    assert str(error).endswith("or use cache='objects'")


async def test_the_objects_cache_keeps_what_the_compact_cache_cannot_encode() -> None:
    source = FakeListerWatcher(objects=[pod("web"), pod("mirror")])
    informer = SharedIndexInformer(source, clock=FakeClock(), cache="objects", transform=with_a_set)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        mirror = informer.indexer.get_by_key("default/mirror")
        assert mirror is not None
        assert mirror["owners"] == {"team-a", "team-b"}
