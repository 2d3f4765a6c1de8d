"""The ready-made transforms on a compact cache's entries: they edit the JSON bytes
without decoding the object, to exactly what they make of the decoded object, and a
compact informer hands entries to them as they are."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._objects.raw import CompactEntry, decode_list
from aioinformer.codec import CompactCodec
from aioinformer.informer import SharedIndexInformer
from aioinformer.testing.clock import FakeClock
from aioinformer.transforms import chain, keep_metadata_only, strip_managed_fields
from tests._support_cache import CompactFakeListerWatcher, Decodes
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable


def pod(name: str = "a", phase: str = "Running") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "resourceVersion": "3",
            "labels": {"app": "web"},
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": phase},
    }


TRANSFORMS = [
    pytest.param(strip_managed_fields, id="strip-managed-fields"),
    pytest.param(keep_metadata_only, id="keep-metadata-only"),
    pytest.param(chain(strip_managed_fields, keep_metadata_only), id="chain"),
]


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_an_entry_is_edited_to_what_the_decoded_object_becomes(
    transform: Callable[[Any], Any],
) -> None:
    obj = pod()
    edited = transform(CompactEntry.from_dict(obj))
    assert type(edited) is CompactEntry
    assert edited.decode() == transform(copy.deepcopy(obj))
    assert (edited.key, edited.resource_version, edited.labels) == (
        "default/a",
        "3",
        {"app": "web"},
    )


def test_a_list_item_keeps_the_kind_it_is_given_on_decode() -> None:
    item = pod()
    del item["kind"], item["apiVersion"]
    body = b'{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[%s]}' % (
        CompactEntry.from_dict(item).raw
    )
    entry = decode_list(body).items[0]
    stripped = strip_managed_fields(entry)
    assert stripped.decode() == strip_managed_fields(pod())


def test_an_entry_with_nothing_to_drop_is_returned_as_it_is() -> None:
    obj = pod()
    del obj["metadata"]["managedFields"]
    entry = CompactEntry.from_dict(obj)
    assert strip_managed_fields(entry) is entry
    meta_only = CompactEntry.from_dict(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}
    )
    assert keep_metadata_only(meta_only) is meta_only


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_a_compact_informer_hands_these_transforms_entries(
    transform: Callable[[Any], Any],
) -> None:
    assert CompactCodec().wrap_transform(transform) is transform
    own = CompactCodec().wrap_transform(lambda obj: obj)
    # One of the user's own gets the object decoded; what it returns is encoded once,
    # into the entry the store keeps.
    returned = own(CompactEntry.from_dict(pod()))
    assert type(returned) is CompactEntry
    assert returned.decode() == pod()


async def test_a_stripped_compact_cache_decodes_nothing_for_a_keys_only_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decodes = Decodes(monkeypatch)
    source = CompactFakeListerWatcher(objects=[pod("a"), pod("b")])
    informer = SharedIndexInformer(source, clock=FakeClock(), transform=strip_managed_fields)
    keys: list[str] = []
    informer.add_event_handler(
        on_add=lambda key, _initial: keys.append(key),
        on_update=lambda _old, key: keys.append(key),
        keys_only=True,
    )
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.modify(pod("a", phase="Failed"))
        await wait_until(lambda: len(keys) == 3)
        assert decodes.count == 0
        entry = informer.indexer.entry_by_key("default/a")
        assert type(entry) is CompactEntry
        assert b"managedFields" not in entry.raw
        cached = informer.lister().get("a", namespace="default")
    assert cached == strip_managed_fields(pod("a", phase="Failed"))
