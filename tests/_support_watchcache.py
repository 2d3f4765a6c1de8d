"""Reading a watch cache the way a server does, for the tests of the shared watch cache
and of the proxy's cache built on it.

Input: a cache (anything with the watch cache's ``list``) or a watcher. Output:
:func:`listed`, one LIST page, and :func:`watch`, a watcher from a resourceVersion, each
with every option at its default unless given; :func:`lines`, the (type, name,
resourceVersion) of each line a watcher has queued; :func:`count_hashes`, every value
the kit hashes for shard selectors from then on.
Nothing here starts a task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from aioinformer._apiserver import objects
from aioinformer.shard_selector import fnv1a_64

if TYPE_CHECKING:
    import pytest

    from aioinformer._apiserver.watch import Watcher


def count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The list every value the server kit hashes for a shard selector is appended to,
    in order, from now until ``monkeypatch`` is undone."""
    hashed: list[str] = []

    def counting(value: str) -> int:
        hashed.append(value)
        return fnv1a_64(value)

    monkeypatch.setattr(objects, "fnv1a_64", counting)
    return hashed


def lines(watcher: Watcher) -> list[tuple[str, str, str]]:
    """(type, name, resourceVersion) of each queued line; empties the queue."""
    out = []
    for line in watcher.buffer:
        event = orjson.loads(line)
        meta = event["object"]["metadata"]
        out.append((event["type"], meta.get("name", ""), meta["resourceVersion"]))
    watcher.buffer.clear()
    return out


def listed(cache: Any, **options: Any) -> Any:
    """A LIST page: every option at its default unless given."""
    given: dict[str, Any] = {
        "namespace": None,
        "label_selector": None,
        "field_selector": None,
        "resource_version": None,
        "resource_version_match": None,
        "limit": None,
        "continue_": None,
    }
    given.update(options)
    return cache.list(**given)


def watch(cache: Any, rv: str | None, **options: Any) -> Any:
    """A watcher from ``rv``: every option at its default unless given."""
    given: dict[str, Any] = {
        "namespace": None,
        "label_selector": None,
        "field_selector": None,
        "resource_version": rv,
        "initial_events": False,
        "initial_events_end": False,
    }
    given.update(options)
    return cache.open_watch(**given)
