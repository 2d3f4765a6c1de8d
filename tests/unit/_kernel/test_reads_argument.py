"""reads_argument: whether a callback's code can read one of its arguments, decided
conservatively (anything it cannot prove unread counts as read), on every supported
Python version's bytecode."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from aioinformer._kernel.runner import reads_argument


def reads_old(old: Any, new: Any) -> Any:
    return old["x"], new


def ignores_old(_old: Any, new: Any) -> Any:
    return new


def reads_both_in_one_expression(old: Any, new: Any) -> Any:
    return old is new


def reads_old_in_a_comprehension(old: Any, new: Any) -> Any:
    return [item for item in old if item in new]


def captures_old(old: Any, new: Any) -> Any:
    def later() -> Any:
        return old

    return later, new


def reads_old_via_locals(old: Any, new: Any) -> Any:
    return locals()["new"]


def reads_old_in_an_fstring(old: Any, new: Any) -> str:
    return f"{old}->{new}"


def only_deletes_old(old: Any, new: Any) -> Any:
    del old
    return new


def rebinds_old_before_reading(old: Any, new: Any) -> Any:
    old = new
    return [old]


def star_args(*args: Any) -> Any:
    return args[-1]


def reads_old_conditionally(old: Any, new: Any) -> Any:
    if new is None:
        return old
    return new


async def async_ignores_old(_old: Any, new: Any) -> Any:
    return new


async def async_reads_old(old: Any, new: Any) -> Any:
    return old


class Handler:
    def on_update(self, old: Any, new: Any) -> Any:
        return new

    def on_update_reading(self, old: Any, new: Any) -> Any:
        return old

    def __call__(self, old: Any, new: Any) -> Any:
        return new


CASES = [
    pytest.param(reads_old, True, id="reads"),
    pytest.param(ignores_old, False, id="never-reads"),
    pytest.param(reads_both_in_one_expression, True, id="reads-beside-another"),
    pytest.param(reads_old_in_a_comprehension, True, id="comprehension"),
    pytest.param(captures_old, True, id="captured-by-a-closure"),
    pytest.param(reads_old_via_locals, True, id="locals"),
    pytest.param(reads_old_in_an_fstring, True, id="f-string"),
    pytest.param(only_deletes_old, False, id="only-deleted"),
    # Rebinding is not worth telling apart: the parameter's name is loaded, so it counts.
    pytest.param(rebinds_old_before_reading, True, id="rebound-then-read"),
    pytest.param(star_args, True, id="star-args"),
    pytest.param(reads_old_conditionally, True, id="conditional"),
    pytest.param(async_ignores_old, False, id="async-never-reads"),
    pytest.param(async_reads_old, True, id="async-reads"),
    pytest.param(lambda _old, new: new, False, id="lambda-never-reads"),
    pytest.param(lambda old, new: (old, new), True, id="lambda-reads"),
    pytest.param(Handler().on_update, False, id="bound-method-never-reads"),
    pytest.param(Handler().on_update_reading, True, id="bound-method-reads"),
    pytest.param(Handler(), True, id="callable-object"),
    pytest.param(functools.partial(ignores_old), True, id="partial"),
    pytest.param(print, True, id="builtin"),
]


@pytest.mark.parametrize(("fn", "expected"), CASES)
def test_the_first_argument_is_read_unless_provably_not(fn: Any, expected: bool) -> None:
    assert reads_argument(fn, 0) is expected


def test_a_position_past_the_named_parameters_counts_as_read() -> None:
    assert reads_argument(ignores_old, 5) is True


def test_the_second_argument_is_judged_on_its_own() -> None:
    assert reads_argument(ignores_old, 1) is True
    assert reads_argument(lambda old, _new: old, 1) is False
