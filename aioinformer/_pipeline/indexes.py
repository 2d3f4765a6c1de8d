"""Named indexes: the index-function seam, the functions shipped, the check of what a
function returns, and the maps from index values to keys both stores keep.

Role. What :class:`~aioinformer.indexer.Indexer` and its compact twin share about indexes,
apart from storing objects: the :class:`KeyFunc` and :class:`IndexFunc` protocols users
write to, the index functions shipped (:func:`namespace_index_func`,
:func:`label_index_func`), :func:`as_indexers`, which checks an ``indexers=`` argument
before anything is indexed, and :func:`checked_values`, which names what is wrong with
an index function's answer. All of it is public from :mod:`aioinformer.indexer`.

Input: index functions and their answers; an :data:`Index` to change. Output: the checked
functions, the values (packed as :data:`Packed` for the compact store, which keeps them
where the cyclic collector never looks), and each index kept free of empty key sets, so
``list_index_func_values`` never reports a value without objects.

Task model: plain functions, synchronous; nothing here suspends or keeps state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

import msgspec

from aioinformer._objects.meta import describe, labels_of, metadata_of, namespace_of
from aioinformer._objects.raw import CompactEntry
from aioinformer.errors import IndexerArgumentsError, IndexValuesError, KeyFuncError
from aioinformer.models import DeletedFinalStateUnknown

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "NAMESPACE_INDEX",
    "NO_VALUES",
    "Index",
    "IndexFunc",
    "Indexers",
    "KeyFunc",
    "Packed",
    "PackedValues",
    "Several",
    "Unfit",
    "add_key",
    "as_indexers",
    "checked_values",
    "discard_key",
    "discard_key_everywhere",
    "func_name",
    "label_index_func",
    "move_key",
    "namespace_index_func",
    "pack",
    "reads_head_only",
    "split_meta_namespace_key",
    "unpack",
    "values_error",
]


class KeyFunc(Protocol):
    """Maps an object to its store key; raises :class:`KeyFuncError` when it cannot."""

    def __call__(self, obj: Any, /) -> str: ...


class IndexFunc(Protocol):
    """Maps an object to its index values (possibly none, possibly several)."""

    def __call__(self, obj: Any, /) -> list[str]: ...


Indexers: TypeAlias = dict[str, IndexFunc]
"""Index functions by index name."""

Index: TypeAlias = dict[str, dict[str, None]]
"""One index: index value -> keys of the objects producing it, as the keys of a dict (an
insertion-ordered set the garbage collector does not track); never empty."""

NAMESPACE_INDEX = "namespace"
"""The conventional name of the index built by :func:`namespace_index_func`."""


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """Split a key made by :func:`meta_namespace_key` into ``(namespace, name)``.

    A cluster-scoped key gives ``("", name)``. Raises :class:`KeyFuncError` for a key
    with more than one ``/``.
    """
    namespace, sep, name = key.partition("/")
    if not sep:
        return "", key
    if "/" in name:
        raise KeyFuncError(f"unexpected key format: {key!r}")
    return namespace, name


def namespace_index_func(obj: Any) -> list[str]:
    """Index an object by namespace: ``[namespace]``, or ``[""]`` when cluster-scoped.

    Raises :class:`KeyFuncError` for an object without metadata. Reads only the head of a
    compact cache's :class:`~aioinformer._objects.raw.CompactEntry`, so it never decodes one.
    """
    if type(obj) is CompactEntry:
        return [obj.namespace]
    if type(obj) is dict:
        meta = obj.get("metadata")
        if type(meta) is dict:
            return [meta.get("namespace") or ""]
    elif not isinstance(obj, DeletedFinalStateUnknown) and metadata_of(obj) is not None:
        return [namespace_of(obj)]
    raise KeyFuncError(f"object has no metadata: {describe(obj)}")


def label_index_func(label: str) -> IndexFunc:
    """An index function indexing objects by the value of their label ``label`` (no value
    for an object without it): ``indexers={"app": label_index_func("app")}``.

    It reads the labels a compact cache keeps beside each object directly, without even
    the small view a function of your own reading ``obj["metadata"]["labels"]`` gets."""

    def index(obj: Any) -> list[str]:
        labels = labels_of(obj)
        value = labels.get(label) if labels else None
        return [value] if isinstance(value, str) else []

    index.__name__ = index.__qualname__ = f"label_index_func({label!r})"
    index._aioinformer_head_only = True  # type: ignore[attr-defined]
    return index


def as_indexers(indexers: Mapping[str, IndexFunc] | None) -> Indexers:
    """``indexers`` as a new dict of index functions by name (``{}`` for ``None``), checked
    before anything is indexed: anything but a mapping of ``str`` names to callables
    raises :class:`~aioinformer.errors.IndexerArgumentsError` saying what to write (a
    function passed on its own gets ``indexers={"by_team": by_team}``)."""
    given: object = indexers  # typed a mapping, but what callers pass is checked here
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        if callable(given):
            name = func_name(given)
            raise IndexerArgumentsError(
                f"indexers= takes a mapping of index names to index functions, not the "
                f"function {name} itself: write indexers={{{name.rsplit('.', 1)[-1]!r}: "
                f"{name}}}"
            )
        raise IndexerArgumentsError(
            f"indexers= takes a mapping of index names to index functions, not a "
            f"{type(given).__name__}: write indexers={{'by-team': by_team}}"
        )
    checked: Indexers = {}
    for name, func in given.items():
        if not isinstance(name, str):
            raise IndexerArgumentsError(
                f"an index name must be a str, not {name!r}: write indexers={{'by-team': by_team}}"
            )
        if not callable(func):
            raise IndexerArgumentsError(
                f"index {name!r} maps to a {type(func).__name__}, not an index function: "
                f"write indexers={{{name!r}: by_team}}, by_team(obj) returning a list of strings"
            )
        checked[name] = func
    return checked


def func_name(func: Any) -> str:
    return str(getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or func)


def checked_values(func: IndexFunc, values: Any) -> Sequence[str]:
    """``values`` when it is a list (or tuple) of strings, which is what an index function
    returns; else :class:`~aioinformer.errors.IndexValuesError` saying what to return.

    The per-write paths make the same test inline (``type(...) is``) and come here only
    when it fails, so a ``str`` subclass (a ``StrEnum``'s member) passes here, slower."""
    if isinstance(values, list | tuple):
        for value in values:
            if not isinstance(value, str):
                raise values_error(func, values, value)
        return values
    raise values_error(func, values, None)


def values_error(func: IndexFunc, values: Any, bad: Any) -> IndexValuesError:
    name = func_name(func)
    if isinstance(values, str | bytes):
        shown = repr(values)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        what = f"{shown} (of type {type(values).__name__}, which would index each character)"
        hint = f"[{shown}]"
    elif isinstance(values, set | frozenset):
        what, hint = f"a {type(values).__name__}", "sorted(values)"
    elif values is None:
        what, hint = "None", "[] for no value"
    elif isinstance(values, list | tuple):
        what = f"a {type(values).__name__} holding {brief(bad)}"
        hint = "[value] if value is not None else []" if bad is None else "[str(value)]"
    else:
        what, hint = f"a {type(values).__name__}", "[value]"
    return IndexValuesError(
        f"index function {name} returned {what}: return a list of strings, e.g. {hint}"
    )


def brief(value: Any) -> str:
    if value is None:
        return "None"
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f"{shown} (of type {type(value).__name__})"


class Unfit(Exception):
    """An index function's values failed the per-write paths' inline test: the write
    takes the careful path, which says why."""


def add_key(index: Index, value: str, key: str) -> None:
    keys = index.get(value)
    if keys is None:
        index[value] = {key: None}
    else:
        keys[key] = None


def move_key(index: Index, key: str, old: Sequence[str], new: Sequence[str]) -> None:
    """Re-index ``key`` from values ``old`` to values ``new`` (which differ)."""
    if len(old) == 1 and len(new) == 1:
        discard_key(index, old[0], key)
        add_key(index, new[0], key)
        return
    old_set = set(old)
    new_set = set(new)
    for value in old_set - new_set:
        discard_key(index, value, key)
    for value in new_set - old_set:
        add_key(index, value, key)


def discard_key(index: Index, value: str, key: str) -> None:
    keys = index.get(value)
    if keys is None:
        return
    keys.pop(key, None)
    if not keys:
        del index[value]


def discard_key_everywhere(index: Index, key: str) -> None:
    """Remove ``key`` from every value of ``index``: for when its values are not known
    (a function that succeeded on an object fails on it later)."""
    for value in [value for value, keys in index.items() if key in keys]:
        discard_key(index, value, key)


def reads_head_only(func: IndexFunc) -> bool:
    """Whether ``func`` reads only an object's head (namespace, labels), so a CompactEntry
    is passed to it as it is; every other index function gets a read-only view of it."""
    return func is namespace_index_func or getattr(func, "_aioinformer_head_only", False)


class Several(msgspec.Struct, frozen=True, gc=False):
    """An index function's values for one object when there are none or several."""

    values: tuple[str, ...]


Packed: TypeAlias = str | Several
"""One index function's values for one object: the value itself when there is exactly
one (the usual case), else the values in an untracked struct. Either way the tuple that
holds them is one of strings and structs, which the collector untracks at its first look
(a tuple holding tuples may outlive several looks, and be promoted meanwhile)."""

NO_VALUES: Final = Several(())


def pack(values: Sequence[str]) -> Packed:
    """``values`` packed, once found to be a list or tuple of strings (``Unfit``
    otherwise: the careful path says why). Tested inline, as :meth:`Indexer._put` does."""
    if type(values) is list or type(values) is tuple:
        if len(values) == 1:
            value = values[0]
            if type(value) is str:
                return value
        elif not values:
            return NO_VALUES
        else:
            for value in values:
                if type(value) is not str:
                    raise Unfit
            return Several(tuple(values))
    raise Unfit


def unpack(packed: Packed) -> tuple[str, ...]:
    return (packed,) if type(packed) is str else packed.values  # type: ignore[union-attr]


class PackedValues(msgspec.Struct, frozen=True, gc=False):
    """One entry's values in every index, in ``_pairs`` order. A struct the collector
    does not track, so the dict holding them stays untracked too."""

    per_index: tuple[Packed, ...]
