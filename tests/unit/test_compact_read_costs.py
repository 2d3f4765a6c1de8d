"""A compact cache's reads decode only what their caller reads.

Every read of a compact cache returns a read-only view per object, which decodes nothing
until a field past the head is read, and then that object only: a namespace or a label
selector is matched on each entry's stored head, the namespace index is kept from heads,
reading names, resourceVersions and labels decodes nothing, and counting or listing keys
decodes nothing. The tests count what parses an object's bytes
(:class:`~tests._support_cache.Decodes`) around each read of a synced informer fed
CompactEntry objects, as the real client feeds it.

Input: a :class:`~tests._support_cache.CompactFakeListerWatcher`. Output: assertions only.
Task model: each test runs one informer in ``async with``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.indexer import NAMESPACE_INDEX, namespace_index_func
from aioinformer.informer import SharedIndexInformer
from aioinformer.testing.clock import FakeClock
from tests._support_cache import CompactFakeListerWatcher, Decodes, pod, until_idle

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from aioinformer.lister import Lister


def web(name: str, namespace: str) -> dict[str, Any]:
    obj = pod(name, namespace=namespace)
    obj["metadata"]["labels"]["tier"] = "web"
    return obj


OBJECTS = [
    web("a", "team-a"),
    pod("b", namespace="team-a"),
    web("c", "team-b"),
    pod("d", namespace="team-b"),
    pod("node-1", namespace=None),
]


@pytest.fixture(params=[False, True], ids=["scanned", "namespace-indexed"])
async def informer(request: pytest.FixtureRequest) -> AsyncIterator[SharedIndexInformer]:
    indexers = {NAMESPACE_INDEX: namespace_index_func} if request.param else None
    informer = SharedIndexInformer(
        CompactFakeListerWatcher(objects=OBJECTS),
        clock=FakeClock(),
        cache="compact",
        indexers=indexers,
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        yield informer


@pytest.mark.parametrize(
    ("read", "returned"),
    [
        pytest.param(lambda lister: [lister.get("a", "team-a")], 1, id="get"),
        pytest.param(lambda lister: [lister.get("z", "team-a")], 0, id="get-missing"),
        pytest.param(lambda lister: lister.list(), 5, id="list-all"),
        pytest.param(lambda lister: lister.list("team-a"), 2, id="list-namespace"),
        pytest.param(lambda lister: lister.list(label_selector="tier=web"), 2, id="list-labels"),
        pytest.param(
            lambda lister: lister.list("team-b", label_selector="tier=web"),
            1,
            id="list-namespace-and-labels",
        ),
        pytest.param(lambda lister: lister.list(label_selector="tier=db"), 0, id="list-no-match"),
    ],
)
async def test_a_lister_read_decodes_exactly_the_objects_whose_body_is_read(
    informer: SharedIndexInformer,
    read: Callable[[Lister[Any]], list[Any]],
    returned: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decodes = Decodes(monkeypatch)
    found = [obj for obj in read(informer.lister()) if obj is not None]
    assert len(found) == returned
    heads = [
        (obj["metadata"]["name"], obj["metadata"]["resourceVersion"], obj["kind"]) for obj in found
    ]
    assert all(heads)
    assert decodes.count == 0
    assert all(obj["spec"] for obj in found)
    assert all(obj["spec"] for obj in found)  # decoded once per view
    assert decodes.count == returned


async def test_counting_and_listing_keys_decode_nothing(
    informer: SharedIndexInformer, monkeypatch: pytest.MonkeyPatch
) -> None:
    decodes = Decodes(monkeypatch)
    indexer = informer.indexer
    assert len(indexer) == len(OBJECTS)
    assert sorted(indexer.list_keys())[:2] == ["node-1", "team-a/a"]
    assert informer.statistics().cache_size == len(OBJECTS)
    assert indexer.entry_by_key("team-a/a") is not None
    assert decodes.count == 0


async def test_the_namespace_index_is_read_from_heads(monkeypatch: pytest.MonkeyPatch) -> None:
    decodes = Decodes(monkeypatch)
    source = CompactFakeListerWatcher(objects=OBJECTS)
    informer = SharedIndexInformer(
        source,
        clock=FakeClock(),
        cache="compact",
        indexers={NAMESPACE_INDEX: namespace_index_func},
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.modify(pod("a", 1, namespace="team-a"))
        source.delete("team-b/d")
        await until_idle(informer, source)
        index_keys = informer.indexer.index_keys
        assert index_keys(NAMESPACE_INDEX, "team-a") == ["team-a/a", "team-a/b"]
        assert index_keys(NAMESPACE_INDEX, "team-b") == ["team-b/c"]
        assert index_keys(NAMESPACE_INDEX, "") == ["node-1"]
    assert decodes.count == 0
