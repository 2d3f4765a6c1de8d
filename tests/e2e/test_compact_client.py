"""The client's compact reads over real HTTP: decoded with a compact codec
(``decoded_with(CompactCodec())``), its lists and watches give CompactEntry objects that decode to
exactly what ``list`` and ``watch`` give, for full objects and for PartialObjectMetadata,
page by page, and a malformed answer raises a clear error."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._objects.raw import CompactEntry
from aioinformer.codec import CompactCodec
from aioinformer.errors import Gone
from aioinformer.listwatch import ListOptions, WatchEvent

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import ResourceClient
    from aioinformer.testing import FakeAPIServer


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "data": {"key": name * 10},
    }


async def events(stream: AsyncIterator[WatchEvent], count: int) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    async with contextlib.aclosing(stream):  # type: ignore[type-var]
        async for event in stream:
            out.append(event)
            if len(out) == count:
                break
    return out


@pytest.mark.parametrize("metadata_only", [False, True], ids=["objects", "metadata-only"])
async def test_compact_pages_decode_to_the_plain_pages(
    fake_apiserver: FakeAPIServer, metadata_only: bool
) -> None:
    for index in range(5):
        fake_apiserver.create(configmap(f"c{index}", app="web"))
    async with fake_apiserver.client() as client:
        resource: ResourceClient = client.resource(
            "configmaps", namespace="default", metadata_only=metadata_only
        )
        options = ListOptions(limit=2)
        plain, compact = [], []
        while True:
            page = await resource.list(options)
            compact_page = await resource.decoded_with(CompactCodec()).list(options)
            assert (compact_page.continue_, compact_page.resource_version) == (
                page.continue_,
                page.resource_version,
            )
            assert (compact_page.kind, compact_page.api_version) == (page.kind, page.api_version)
            plain.extend(page.items)
            compact.extend(compact_page.items)
            if page.continue_ is None:
                break
            options = ListOptions(limit=2, continue_=page.continue_)
    assert all(type(item) is CompactEntry for item in compact)
    assert [item.decode() for item in compact] == plain
    assert [item.key for item in compact] == [f"default/c{index}" for index in range(5)]
    assert all(item.labels == {"app": "web"} for item in compact)


@pytest.mark.parametrize("metadata_only", [False, True], ids=["objects", "metadata-only"])
async def test_compact_watch_events_decode_to_the_plain_events(
    fake_apiserver: FakeAPIServer, metadata_only: bool
) -> None:
    start = fake_apiserver.resource_version
    fake_apiserver.create(configmap("a"))
    fake_apiserver.patch("configmaps", "default", "a", {"data": {"key": "changed"}})
    fake_apiserver.delete("configmaps", "default", "a")
    async with fake_apiserver.client() as client:
        resource = client.resource("configmaps", namespace="default", metadata_only=metadata_only)
        options = ListOptions(resource_version=start)
        plain = await events(resource.watch(options), 3)
        compact = await events(resource.decoded_with(CompactCodec()).watch(options), 3)
    assert [event.type for event in compact] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(type(event.object) is CompactEntry for event in compact)
    assert [(e.type, e.object.decode()) for e in compact] == [(e.type, e.object) for e in plain]


async def test_a_compact_watch_from_a_compacted_version_raises_gone(
    fake_apiserver: FakeAPIServer,
) -> None:
    old = fake_apiserver.resource_version
    fake_apiserver.create(configmap("a"))
    fake_apiserver.compact()
    async with fake_apiserver.client() as client:
        resource = client.resource("configmaps", namespace="default")
        with pytest.raises(Gone):
            await events(
                resource.decoded_with(CompactCodec()).watch(ListOptions(resource_version=old)), 1
            )
