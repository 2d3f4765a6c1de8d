"""The pieces every measured case builds on: sessions, clients, informers, indexes, and the
cache modes each aioinformer variant is measured in.

Role: shared by :mod:`bench.scenarios` and :mod:`bench.service`. Input: a replay server's
URL and a variant's options. Output: open sessions and clients (closed when their
``async with`` block ends) and informers that are not started yet.

Cache modes: every aioinformer variant ``ours*`` runs twice, once per :data:`CACHE_MODES`
entry: ``cache="objects"`` under its plain name (the decoded dicts are the cache) and
``cache="compact"`` under the name plus ``-compact`` (the cache holds each object's JSON
bytes and decodes on read). :func:`with_cache_modes` expands a variant list that way.

Task model: none of its own; everything here is opened and closed by the calling case.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Final, Literal

import aiohttp

from bench.objects import APP_LABEL, TIER_LABEL
from bench.replay import START_PATH

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

__all__ = [
    "CACHE_MODES",
    "COMPACT_SUFFIX",
    "CacheMode",
    "client",
    "informer",
    "session",
    "start_stream",
    "watch_indexers",
    "with_cache_modes",
]

CacheMode = Literal["objects", "compact"]

COMPACT_SUFFIX: Final = "-compact"
"""Appended to an aioinformer variant's name for its ``cache="compact"`` run."""

CACHE_MODES: Final[tuple[tuple[CacheMode, str], ...]] = (
    ("objects", ""),
    ("compact", COMPACT_SUFFIX),
)
"""Each cache mode and the suffix its variants carry."""


def with_cache_modes(*variants: str) -> tuple[str, ...]:
    """``variants`` with every aioinformer one (``ours*``) followed by its compact twin."""
    expanded: list[str] = []
    for variant in variants:
        expanded.append(variant)
        if variant.startswith("ours") and not variant.endswith(COMPACT_SUFFIX):
            expanded.append(variant + COMPACT_SUFFIX)
    return tuple(expanded)


def watch_indexers() -> dict[str, Callable[[Any], list[str]]]:
    """The three indexes of the watch scenarios: namespace and two labels, built the way
    the library recommends (its label index reads only what a compact cache keeps
    decoded)."""
    from aioinformer.indexer import NAMESPACE_INDEX, label_index_func, namespace_index_func

    return {
        NAMESPACE_INDEX: namespace_index_func,
        APP_LABEL: label_index_func(APP_LABEL),
        TIER_LABEL: label_index_func(TIER_LABEL),
    }


@contextlib.asynccontextmanager
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    """The raw baseline's HTTP session (no total timeout: watches are long)."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as opened:
        yield opened


async def start_stream(url: str, params: dict[str, Any]) -> None:
    """Start the replay server's held watch stream, when the scenario holds it."""
    if not params.get("hold"):
        return
    async with session() as opened, opened.get(url + START_PATH) as response:
        response.raise_for_status()


@contextlib.asynccontextmanager
async def client(url: str) -> AsyncIterator[Any]:
    """An aioinformer ``Client`` for the replay server at ``url``."""
    from aioinformer.client import Client
    from aioinformer.config import Config

    async with Client(Config(host=url)) as opened:
        yield opened


def informer(
    client: Any, resource: str, *, cache: CacheMode, reflector: Any = None, **options: Any
) -> Any:
    """A ``SharedIndexInformer`` over ``v1/<resource>`` with that cache mode; it LISTs
    (``use_watch_list=False``) unless ``reflector`` (its ``ReflectorOptions``) says
    otherwise, as the baselines do."""
    from aioinformer.informer import SharedIndexInformer
    from aioinformer.reflector import ReflectorOptions

    if reflector is None:
        reflector = ReflectorOptions(use_watch_list=False)
    return SharedIndexInformer(
        client.resource(f"v1/{resource}"), cache=cache, reflector=reflector, **options
    )
