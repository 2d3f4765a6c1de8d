"""The shared test helpers: how ``wait_until`` re-checks and what it says when it gives up;
what ``other_tasks`` counts; that ``stop`` insists on a cancelled ending."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aioinformer.testing._eventually import describe
from tests._support_tasks import other_tasks, stop
from tests._support_wait import wait_until


def always_false() -> bool:
    return False


async def test_a_condition_that_already_holds_returns_without_yielding() -> None:
    ran: list[str] = []
    handle = asyncio.get_running_loop().call_soon(ran.append, "other")

    await wait_until(lambda: True)

    assert ran == []
    handle.cancel()


async def test_the_default_re_checks_every_loop_turn_until_another_task_makes_it_hold() -> None:
    flag = asyncio.Event()
    turns = 0

    async def set_after_three_turns() -> None:
        nonlocal turns
        for _ in range(3):
            turns += 1
            await asyncio.sleep(0)
        flag.set()

    task = asyncio.create_task(set_after_three_turns())
    await wait_until(flag.is_set, timeout=1)

    assert turns == 3
    await task


async def test_an_async_condition_is_awaited() -> None:
    answers = iter([False, False, True])
    calls = 0

    async def condition() -> bool:
        nonlocal calls
        calls += 1
        return next(answers)

    await wait_until(condition, timeout=1)

    assert calls == 3


async def test_setting_changed_wakes_the_check_before_the_poll_interval() -> None:
    changed = asyncio.Event()
    state = {"done": False}

    def finish() -> None:
        state["done"] = True
        changed.set()

    asyncio.get_running_loop().call_soon(finish)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await wait_until(lambda: state["done"], changed=changed, poll=30, timeout=60)

    assert loop.time() - started < 30


async def test_between_runs_before_each_re_check() -> None:
    steps: list[int] = []

    async def step() -> None:
        steps.append(len(steps))

    await wait_until(lambda: len(steps) == 3, between=step, timeout=1)

    assert steps == [0, 1, 2]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({}, "gave up after 0.01 s waiting until always_false", id="function-name"),
        pytest.param(
            {"what": "the watch to open"},
            "gave up after 0.01 s waiting until the watch to open",
            id="what-given",
        ),
    ],
)
async def test_giving_up_raises_timeout_error_naming_what_was_awaited(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(TimeoutError) as raised:
        await wait_until(always_false, timeout=0.01, **kwargs)

    assert str(raised.value) == message


async def test_giving_up_on_a_lambda_quotes_its_source() -> None:
    seen: list[str] = []
    with pytest.raises(TimeoutError, match=r"waiting until .*lambda: seen == \[\"ready\"\]"):
        await wait_until(lambda: seen == ["ready"], timeout=0.01)


async def test_giving_up_while_polling_with_changed_still_names_the_condition() -> None:
    with pytest.raises(TimeoutError, match="always_false"):
        await wait_until(always_false, changed=asyncio.Event(), poll=0.001, timeout=0.01)


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        pytest.param(always_false, "always_false", id="function"),
        pytest.param(asyncio.Event().is_set, "Event.is_set", id="bound-method"),
    ],
)
def test_describe_names_a_function_by_its_qualified_name(condition: Any, expected: str) -> None:
    assert describe(condition) == expected


async def test_other_tasks_leaves_out_the_caller_and_sees_a_started_task() -> None:
    assert asyncio.current_task() not in other_tasks()
    before = other_tasks()
    task = asyncio.create_task(asyncio.Event().wait())

    assert other_tasks() - before == {task}
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert other_tasks() == before


async def test_with_changed_and_no_poll_only_setting_changed_wakes_the_check() -> None:
    changed = asyncio.Event()
    checks = 0
    state = {"done": False}

    def condition() -> bool:
        nonlocal checks
        checks += 1
        return state["done"]

    waiter = asyncio.create_task(wait_until(condition, changed=changed, timeout=5))
    for _ in range(20):
        await asyncio.sleep(0)
    assert checks == 1
    state["done"] = True
    changed.set()
    await waiter
    assert checks == 2


async def test_stop_cancels_a_running_task() -> None:
    task = asyncio.create_task(asyncio.Event().wait())
    await asyncio.sleep(0)

    await stop(task)

    assert task.cancelled()


async def test_stop_fails_when_the_task_swallows_the_cancellation() -> None:
    async def swallows() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return

    task = asyncio.create_task(swallows())
    await asyncio.sleep(0)

    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        await stop(task)
