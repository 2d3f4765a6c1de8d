"""A stopped Controller waits until no call of its handlers runs any more.

When ``run()`` returns, the controller's handlers are removed from their informers and
none of their calls is still running (``registration.wait_stopped()``), so nothing of the
controller runs once it is stopped. The controller's own handlers are sync calls on the
loop, over before its run can end; a call that awaits is not, so an informer here makes
its handlers' calls for the object ``held`` wait for an event the test sets before they
call the controller's. The wait never hangs on an informer that never started or that
stopped. Informers read from in-memory FakeListerWatchers on a FakeClock.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer import State
from aioinformer.informer import SharedIndexInformer
from aioinformer.operator.controller import Controller
from aioinformer.testing.clock import FakeClock
from aioinformer.testing.lister_watcher import FakeListerWatcher
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_tasks import settle
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer.informer import HandlerRegistration

# Loop turns enough for a stopped controller with nothing in flight to end its run.
SETTLE_ROUNDS = 100


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}}


class HeldHandlers(SharedIndexInformer):
    """An informer whose handlers' ``on_add`` calls for the object ``held`` wait for
    ``release`` first, then make the handler's call: a call of the controller's handler
    is then still in progress while its run ends. ``returned`` lists the calls done."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.returned: list[str] = []

    def add_event_handler(
        self,
        handler: Any = None,
        *,
        on_add: Callable[[Any, bool], Any] | None = None,
        **kwargs: Any,
    ) -> HandlerRegistration:
        assert handler is None
        assert on_add is not None
        call = on_add

        async def held_on_add(obj: Any, is_in_initial_list: bool) -> None:
            # An object, or its key for a handler that takes keys only.
            name = obj.rpartition("/")[2] if isinstance(obj, str) else obj["metadata"]["name"]
            if name == "held":
                self.entered.set()
                await self.release.wait()
            call(obj, is_in_initial_list)
            self.returned.append(name)

        return super().add_event_handler(on_add=held_on_add, **kwargs)


async def test_run_returns_only_once_a_handler_call_in_progress_has_returned() -> None:
    source = FakeListerWatcher(objects=[pod("a")])
    informer = HeldHandlers(source, clock=FakeClock())
    keys: list[str] = []
    reconciled: list[str] = []

    def mapping(obj: Any) -> list[str]:
        keys.append(obj["metadata"]["name"])
        return [f"default/{obj['metadata']['name']}"]

    controller = Controller("held", reconciled.append, informers=[informer], enqueue=mapping)
    # What the handler had done when the run ended.
    returned_at_the_end: list[list[str]] = []
    async with informer:
        run = asyncio.create_task(controller.run())
        run.add_done_callback(lambda _: returned_at_the_end.append(list(informer.returned)))
        await wait_until(lambda: reconciled == ["default/a"])
        source.add(pod("held"))
        await informer.entered.wait()
        controller.stop()
        await settle(SETTLE_ROUNDS)
        assert not run.done()  # the handler's call for "held" is still in progress
        assert controller.state is State.STOPPING
        informer.release.set()
        await asyncio.wait_for(run, 5)
    assert returned_at_the_end == [["a", "held"]]
    assert keys == ["a", "held"]  # the mapping ran, after the stop
    assert reconciled == ["default/a"]  # so its key was not reconciled
    assert informer.statistics().handlers == ()


async def test_a_cancelled_run_also_waits_for_the_handler_call_in_progress() -> None:
    source = FakeListerWatcher(objects=[pod("a")])
    informer = HeldHandlers(source, clock=FakeClock())
    reconciled: list[str] = []
    controller = Controller("cancelled", reconciled.append, informers=[informer])
    returned_at_the_end: list[list[str]] = []
    async with informer:
        run = asyncio.create_task(controller.run())
        run.add_done_callback(lambda _: returned_at_the_end.append(list(informer.returned)))
        await wait_until(lambda: reconciled == ["default/a"])
        source.add(pod("held"))
        await informer.entered.wait()
        run.cancel()
        await settle(SETTLE_ROUNDS)
        assert not run.done()
        run.cancel()  # a second cancellation cuts the drain short, not this wait
        await settle(SETTLE_ROUNDS)
        assert not run.done()
        informer.release.set()
        with pytest.raises(asyncio.CancelledError):
            await run
    assert returned_at_the_end == [["a", "held"]]


async def test_a_controller_whose_informer_never_started_stops_at_once() -> None:
    informer = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]), clock=FakeClock())
    controller = Controller("unstarted", lambda key: None, informers=[informer])
    run = asyncio.create_task(controller.run())
    await settle()
    assert controller.state is State.STARTING  # waits for an informer nobody runs
    controller.stop()
    await asyncio.wait_for(run, 5)
    assert controller.statistics().state is State.STOPPED


async def test_a_controller_whose_informer_stopped_first_stops_at_once() -> None:
    informer = SharedIndexInformer(FakeListerWatcher(objects=[pod("a")]), clock=FakeClock())
    reconciled: list[str] = []
    controller = Controller("orphan", reconciled.append, informers=[informer])
    run = asyncio.create_task(controller.run())
    async with informer:
        await wait_until(lambda: reconciled == ["default/a"])
    controller.stop()  # its removal is ignored by the stopped informer; nothing runs
    await asyncio.wait_for(run, 5)
    assert controller.state is State.STOPPED


async def test_a_call_cut_short_by_its_informers_stop_is_not_waited_for() -> None:
    source = FakeListerWatcher(objects=[pod("a")])
    informer = HeldHandlers(source, clock=FakeClock())
    reconciled: list[str] = []
    controller = Controller("cut", reconciled.append, informers=[informer])
    run = asyncio.create_task(controller.run())
    async with informer:
        await wait_until(lambda: reconciled == ["default/a"])
        source.add(pod("held"))
        await informer.entered.wait()
    # The informer's stop cancelled the held call: the controller's stop has nothing to
    # wait for (its handler's removal is ignored by the stopped informer).
    controller.stop()
    await asyncio.wait_for(run, 5)
    assert informer.returned == ["a"]
