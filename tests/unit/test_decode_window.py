"""The decode window: handlers that keep up share one decode per object; once the
informer has moved DECODE_WINDOW objects on, an older decode is dropped, and a handler
that lags that far decodes its own (equal) copy."""

from __future__ import annotations

from typing import Any

from aioinformer._compact import DECODE_WINDOW, DecodeWindow
from aioinformer._raw import RawObject, SharedDecode


def entry(index: int) -> RawObject:
    return RawObject.from_dict(
        {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": f"p{index}", "namespace": "ns"}}
    )


def test_a_decode_outlives_the_window_of_newer_objects_and_no_more() -> None:
    window = DecodeWindow()
    first = window.add(SharedDecode(entry(0)))
    decoded = first.get()
    for index in range(1, DECODE_WINDOW):
        window.add(SharedDecode(entry(index)))
    assert first.get() is decoded
    window.add(SharedDecode(entry(DECODE_WINDOW)))
    again = first.get()
    assert again == decoded
    assert again is not decoded


def test_a_decoded_source_object_is_dropped_too_and_decoded_back_equal() -> None:
    obj: dict[str, Any] = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a"}}
    window = DecodeWindow()
    shared = window.add(SharedDecode(RawObject.from_dict(obj), obj))
    for index in range(DECODE_WINDOW):
        window.add(SharedDecode(entry(index)))
    assert shared.get() == obj
    assert shared.get() is not obj


def test_an_object_that_is_not_compact_is_never_dropped() -> None:
    opaque = object()
    window = DecodeWindow()
    shared = window.add(SharedDecode(opaque))
    for index in range(DECODE_WINDOW + 1):
        window.add(SharedDecode(entry(index)))
    assert shared.get() is opaque
