"""The decode window: handlers that keep up share one decode per object; once
DECODE_WINDOW more objects have been decoded, an older decode is dropped, and a handler
that lags that far decodes its own (equal) copy. Wrappers never decoded cost nothing,
however many the informer hands over at once."""

from __future__ import annotations

import weakref
from typing import Any

from aioinformer._raw import CompactEntry, SharedDecode
from aioinformer.codec import DECODE_WINDOW, DecodeWindow


def entry(index: int) -> CompactEntry:
    return CompactEntry.from_dict(
        {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": f"p{index}", "namespace": "ns"}}
    )


def test_a_decode_outlives_the_window_of_newer_decodes_and_no_more() -> None:
    window = DecodeWindow()
    first = SharedDecode(entry(0), window=window)
    decoded = first.get()
    others = [SharedDecode(entry(index), window=window) for index in range(1, DECODE_WINDOW + 1)]
    for shared in others[:-1]:
        shared.get()
    assert first.get() is decoded
    others[-1].get()
    again = first.get()
    assert again == decoded
    assert again is not decoded


def test_wrappers_never_decoded_do_not_push_a_decode_out() -> None:
    window = DecodeWindow()
    first = SharedDecode(entry(0), window=window)
    decoded = first.get()
    # A batch far larger than the window, none of it decoded yet.
    batch = [SharedDecode(entry(index), window=window) for index in range(10 * DECODE_WINDOW)]
    assert first.get() is decoded
    for shared in batch[:DECODE_WINDOW]:
        shared.get()
    assert first.get() is not decoded


def test_a_decoded_source_object_counts_as_a_decode_and_is_dropped_equal() -> None:
    obj: dict[str, Any] = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a"}}
    window = DecodeWindow()
    shared = SharedDecode(CompactEntry.from_dict(obj), obj, window=window)
    for index in range(DECODE_WINDOW):
        SharedDecode(entry(index), window=window).get()
    assert shared.get() == obj
    assert shared.get() is not obj


def test_an_object_that_is_not_compact_is_never_dropped() -> None:
    opaque = object()
    window = DecodeWindow()
    shared = SharedDecode(opaque, window=window)
    for index in range(DECODE_WINDOW + 1):
        SharedDecode(entry(index), window=window).get()
    assert shared.get() is opaque


def test_the_window_keeps_no_decode_alive_that_no_handler_holds() -> None:
    window = DecodeWindow()
    shared = SharedDecode(entry(0), window=window)
    shared.get()
    held = weakref.ref(shared)
    del shared
    assert held() is None
