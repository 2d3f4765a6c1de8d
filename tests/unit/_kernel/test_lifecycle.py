"""The one lifecycle: states NEW → STARTING → RUNNING → STOPPING → STOPPED, one run,
``async with`` that returns once ready, and the failure rule (a failed run cancels the
body and its error leaves the block)."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import anyio.abc
import pytest

from aioinformer._kernel.lifecycle import Service, State
from tests._support_tasks import no_task_outlives_the_test, settle  # noqa: F401


class _Service(Service):
    """Ready once ``ready`` is set; fails with ``fail`` once it is set; stops on request."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.fail: BaseException | None = None
        self.failing = asyncio.Event()
        self.stopping = asyncio.Event()
        self.seen: list[State] = []

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[Any]) -> None:
        self.seen.append(self.state)
        await self.ready.wait()
        task_status.started("ready")
        self.seen.append(self.state)
        failing = asyncio.ensure_future(self.failing.wait())
        stopping = asyncio.ensure_future(self.stopping.wait())
        try:
            await asyncio.wait([failing, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            failing.cancel()
            stopping.cancel()
        if self.fail is not None and self.failing.is_set():
            raise self.fail
        self.seen.append(self.state)

    def _request_stop(self) -> None:
        self.stopping.set()


def _state(service: Service) -> State:
    return service.state


async def test_a_run_goes_through_every_state_once() -> None:
    service = _Service()
    assert _state(service) is State.NEW
    service.ready.set()
    async with anyio.create_task_group() as group:
        assert await group.start(service.run) == "ready"
        assert _state(service) is State.RUNNING
        service.stop()
        assert _state(service) is State.STOPPING
        await service.wait_stopped()
    assert service.seen == [State.STARTING, State.RUNNING, State.STOPPING]
    assert _state(service) is State.STOPPED


async def test_a_service_runs_only_once() -> None:
    service = _Service()
    service.ready.set()
    async with service:
        pass
    with pytest.raises(RuntimeError, match="_Service runs only once"):
        await service.run()
    with pytest.raises(RuntimeError, match="runs only once"):
        async with service:
            pass


async def test_stop_after_the_end_does_nothing() -> None:
    service = _Service()
    service.ready.set()
    async with service:
        pass
    service.stop()
    assert _state(service) is State.STOPPED
    assert service.seen == [State.STARTING, State.RUNNING, State.STOPPING]


async def test_stop_before_the_start_makes_its_one_run_return_at_once() -> None:
    """client-go's Run given a closed stop channel: the service never serves, whichever
    way it is started, waiting for its end returns at once, and it still runs only once."""
    for start in ("run", "group", "async with", "in task"):
        service = _Service()
        service.stop()
        service.stop()  # idempotent
        assert _state(service) is State.STOPPED
        await service.wait_stopped()
        if start == "run":
            await service.run()
        elif start == "group":
            async with anyio.create_task_group() as group:
                assert await group.start(service.run) is None
        elif start == "async with":
            async with service as entered:
                assert entered is service
                assert _state(service) is State.STOPPED
        else:
            await service._start_in_task()
        await service.aclose()
        assert service.seen == []  # _serve never ran
        assert _state(service) is State.STOPPED
        with pytest.raises(RuntimeError, match="runs only once"):
            await service.run()


async def test_async_with_returns_once_ready_and_stops_on_leaving() -> None:
    service = _Service()
    entered = asyncio.ensure_future(service.__aenter__())
    await settle()
    assert not entered.done()
    assert _state(service) is State.STARTING
    service.ready.set()
    await entered
    assert _state(service) is State.RUNNING
    await service.__aexit__(None, None, None)
    assert _state(service) is State.STOPPED
    assert service.seen[-1] is State.STOPPING


async def test_a_failed_run_cancels_the_body_and_leaves_the_block_with_its_error() -> None:
    service = _Service()
    service.ready.set()
    service.fail = KeyError("broken")
    reached: list[str] = []

    async def block() -> None:
        async with service:
            service.failing.set()
            await asyncio.Event().wait()  # ended by the failure
            reached.append("after")

    with pytest.raises(KeyError, match="broken"):
        await block()
    assert reached == []
    assert _state(service) is State.STOPPED


async def test_a_failure_outside_the_rule_waits_for_the_block_to_end() -> None:
    class _Narrow(_Service):
        _cancels_body_on = (KeyError,)

    service = _Narrow()
    service.ready.set()
    service.fail = ValueError("later")
    states: list[State] = []

    async def block() -> None:
        async with service:
            service.failing.set()
            await settle()
            states.append(service.state)  # the body went on

    with pytest.raises(ValueError, match="later"):
        await block()
    assert states == [State.STOPPED]


async def test_a_failure_before_ready_is_raised_from_the_start() -> None:
    class _Early(Service):
        async def _serve(self, *, task_status: anyio.abc.TaskStatus[Any]) -> None:
            raise OSError("cannot bind")

        def _request_stop(self) -> None:
            pass

    service = _Early()
    with pytest.raises(OSError, match="cannot bind"):
        async with service:
            pytest.fail("the body must not run")
    assert _state(service) is State.STOPPED


async def test_the_body_error_wins_over_a_clean_stop() -> None:
    service = _Service()
    service.ready.set()
    with pytest.raises(LookupError, match="body"):
        async with service:
            raise LookupError("body")
    assert _state(service) is State.STOPPED


async def test_cancelling_the_body_stops_the_service_and_propagates() -> None:
    service = _Service()
    service.ready.set()

    async def body() -> None:
        async with service:
            await asyncio.Event().wait()

    task = asyncio.ensure_future(body())
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _state(service) is State.STOPPED


# -- started in one place, stopped in another ---------------------------------------------


async def test_a_service_started_in_a_task_is_ready_then_stopped_and_waited_for() -> None:
    service = _Service()
    service.ready.set()
    await service._start_in_task()
    assert _state(service) is State.RUNNING
    assert await service._stop_and_wait() is None
    assert _state(service) is State.STOPPED
    assert service.seen == [State.STARTING, State.RUNNING, State.STOPPING]
    assert await service._stop_and_wait() is None  # idempotent
    with pytest.raises(RuntimeError, match="runs only once"):
        await service._start_in_task()


async def test_stop_and_wait_hands_back_the_failure_of_a_run_started_in_a_task() -> None:
    service = _Service()
    service.ready.set()
    service.fail = ValueError("broken")
    await service._start_in_task()
    service.failing.set()
    failure = await service._stop_and_wait()
    assert isinstance(failure, ValueError)
    assert _state(service) is State.STOPPED


async def test_a_failure_before_ready_is_raised_from_the_start_in_a_task() -> None:
    class _Failing(_Service):
        async def _serve(self, *, task_status: anyio.abc.TaskStatus[Any]) -> None:
            raise ValueError("cannot start")

    service = _Failing()
    with pytest.raises(ValueError, match="cannot start"):
        await service._start_in_task()
    assert _state(service) is State.STOPPED
    assert await service._stop_and_wait() is None


async def test_a_cancelled_stop_and_wait_still_waits_for_the_run_then_reraises() -> None:
    steps: list[str] = []

    class _Slow(_Service):
        def _request_stop(self) -> None:
            pass  # only a cancellation ends it

        async def _serve(self, *, task_status: anyio.abc.TaskStatus[Any]) -> None:
            task_status.started()
            try:
                await asyncio.Event().wait()
            finally:
                await asyncio.sleep(0)
                steps.append("cleaned up")

    service = _Slow()
    await service._start_in_task()
    stopping = asyncio.create_task(service._stop_and_wait())
    await settle()
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    assert steps == ["cleaned up"]
    assert _state(service) is State.STOPPED


async def test_stop_and_wait_on_a_service_run_elsewhere_waits_for_that_run() -> None:
    service = _Service()
    service.ready.set()
    async with service:
        assert await service._stop_and_wait() is None
        assert _state(service) is State.STOPPED


class _EntersAtStart(_Service):
    """Started as soon as it runs, ready only once ``ready`` is set (an informer whose
    body fills its source)."""

    _enters_when = "started"

    def __init__(self, *, marks: bool = True) -> None:
        super().__init__()
        self.marks = marks

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[Any]) -> None:
        if self.marks:
            self._mark_started()
        await super()._serve(task_status=task_status)


async def test_a_service_entered_at_its_start_returns_before_it_is_ready() -> None:
    service = _EntersAtStart()
    async with service:
        assert _state(service) is State.STARTING  # started, not ready
        service.ready.set()
        await settle()
        assert _state(service) is State.RUNNING
    assert _state(service) is State.STOPPED


async def test_a_service_entered_when_ready_waits_for_its_readiness() -> None:
    service = _Service()

    async def ready_soon() -> None:
        await settle()
        assert _state(service) is State.STARTING  # the block has not returned yet
        service.ready.set()

    async with anyio.create_task_group() as group:
        group.start_soon(ready_soon)
        async with service:
            assert _state(service) is State.RUNNING


async def test_readiness_also_releases_a_block_waiting_for_a_start_never_marked() -> None:
    service = _EntersAtStart(marks=False)
    service.ready.set()
    async with service:
        assert _state(service) is State.RUNNING


async def test_aclose_stops_a_service_and_waits_until_its_run_has_ended() -> None:
    service = _Service()
    await service.aclose()  # never started: nothing to wait for, and it never will
    assert _state(service) is State.STOPPED
    running = _Service()
    running.ready.set()
    async with anyio.create_task_group() as group:
        await group.start(running.run)
        await running.aclose()
        assert _state(running) is State.STOPPED
        await running.aclose()  # idempotent


async def test_aclose_raises_what_made_a_run_begun_by_start_fail() -> None:
    service = _Service()
    service.ready.set()
    await service._start_in_task()
    service.fail = ValueError("broken")
    service.failing.set()
    await settle()
    with pytest.raises(ValueError, match="broken"):
        await service.aclose()
    assert _state(service) is State.STOPPED
