"""One client's own writes, until the informer's cache shows them (``_own_writes``): what a
read waits for after a create, update, patch or delete, and for how long, in both cache
modes and with the in-order queue.

A :class:`FakeListerWatcher` plays the server. A write is a change made with
``notify=False``: the server has it (and answered with it) while the open watch has not
delivered it, as a lagging watch; ``drop_watches()`` then ends the watch, and the
reflector's re-watch (after a backoff on the informer's fake clock) replays the change.
Read timeouts run on a fake clock of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer import State
from aioinformer.errors import CacheReadTimeout, InformerStoppedError
from aioinformer.informer import SharedIndexInformer
from aioinformer.labels import parse_field_selector, parse_label_selector
from aioinformer.operator._own_writes import OwnWrites, Scope
from aioinformer.reflector import ReflectorState
from aioinformer.testing import FakeClock, FakeListerWatcher
from tests._support_cache import BACKOFF, relist_after_lost_history, scripted_informer
from tests._support_reflector import reflector_statistics
from tests._support_tasks import settle
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Coroutine

    from aioinformer.informer import CacheMode

TIMEOUT = 10.0


@pytest.fixture(params=[False, True], ids=["delta_fifo", "in_order"])
def in_order(request: pytest.FixtureRequest) -> bool:
    value: bool = request.param
    return value


def cm(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels},
    }


def status(name: str, uid: str | None) -> dict[str, Any]:
    """A delete's ``Success`` Status, as kube-apiserver answers for a ConfigMap."""
    details: dict[str, Any] = {"name": name, "kind": "configmaps"}
    if uid is not None:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "status": "Success", "details": details}


class Harness:
    """An informer over a fake source, the client's :class:`OwnWrites` for it, and a
    fake clock for the read timeouts."""

    def __init__(
        self, source: FakeListerWatcher, informer: SharedIndexInformer, informer_clock: FakeClock
    ) -> None:
        self.source = source
        self.informer = informer
        self.informer_clock = informer_clock
        self.clock = FakeClock()
        self.writes = OwnWrites(informer, resource="configmaps", scope=Scope())

    def delete_unseen(self, name: str) -> None:
        """This client deletes ``name``: the server answers with a Status naming its uid,
        the open watch misses the deletion."""
        key = f"default/{name}"
        seen = self.writes.delete_sent(key)
        self.source.delete(key, notify=False)
        self.writes.delete_done(key, seen, status(name, f"uid-{name}"))

    def scoped(self, scope: Scope) -> OwnWrites:
        """The writes of another client, whose informer's cache has ``scope``."""
        return OwnWrites(self.informer, resource="configmaps", scope=scope)

    def cached(self, key: str) -> Any:
        return self.informer.lister().get(*reversed(key.split("/")))

    def read(self, key: str) -> asyncio.Task[None]:
        return self.start(self.writes.wait_for_key(key, timeout=TIMEOUT, clock=self.clock))

    def list(self, namespace: str | None) -> asyncio.Task[None]:
        return self.start(
            self.writes.wait_for_namespace(namespace, timeout=TIMEOUT, clock=self.clock)
        )

    @staticmethod
    def start(wait: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(wait)

    async def catch_up(self) -> None:
        """End the watch: the re-watch replays what it missed."""
        source = self.source
        calls = len(source.watch_calls)
        source.drop_watches()

        def watching() -> bool:
            return len(source.watch_calls) > calls and source.open_watches > 0

        def backing_off() -> bool:
            return reflector_statistics(self.informer).state is ReflectorState.BACKING_OFF

        while not watching():
            await wait_until(lambda: watching() or backing_off())
            if backing_off():
                await self.informer_clock.advance(BACKOFF)

    async def relist(self) -> None:
        """Make the informer relist, as after a compaction."""
        await relist_after_lost_history(self.informer, self.source, self.informer_clock)

    async def expire(self) -> None:
        """Let a read's timeout pass."""
        await self.clock.wait_for_sleepers(1)
        await self.clock.advance(TIMEOUT)


@pytest.fixture
async def harness(cache: CacheMode, in_order: bool) -> AsyncIterator[Harness]:
    source = FakeListerWatcher(resource="configmaps", kind="ConfigMap", objects=[cm("old")])
    clock = FakeClock()
    informer = scripted_informer(source, clock, cache, in_order=in_order)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await source.wait_for_watchers(1)
        yield Harness(source, informer, clock)


async def pending(task: asyncio.Task[None]) -> bool:
    """Whether ``task`` is still waiting once everything runnable has run."""
    await settle()
    return not task.done()


# -- create, update, patch --------------------------------------------------------------


async def test_a_read_of_a_key_this_client_never_wrote_does_not_wait(harness: Harness) -> None:
    harness.source.add(cm("other"), notify=False)
    await harness.writes.wait_for_key("default/other", timeout=TIMEOUT, clock=harness.clock)
    assert harness.writes.waits == 0


async def test_a_get_after_a_create_waits_until_the_cache_applied_its_version(
    harness: Harness,
) -> None:
    answer = harness.source.add(cm("new"), notify=False)
    harness.writes.wrote(answer)
    assert harness.cached("default/new") is None

    read = harness.read("default/new")
    assert await pending(read)
    await harness.catch_up()
    await asyncio.wait_for(read, 5)
    assert (
        harness.cached("default/new")["metadata"]["resourceVersion"]
        == (answer["metadata"]["resourceVersion"])
    )
    assert harness.writes.tracked_versions == 0


async def test_a_read_waits_only_for_the_writes_of_its_own_key(harness: Harness) -> None:
    harness.writes.wrote(harness.source.add(cm("new"), notify=False))
    await harness.writes.wait_for_key("default/old", timeout=TIMEOUT, clock=harness.clock)
    assert harness.writes.tracked_versions == 1


async def test_a_list_waits_for_the_newest_write_in_its_namespace_only(harness: Harness) -> None:
    harness.writes.wrote(harness.source.add(cm("a", "team-a"), notify=False))
    newest = harness.source.add(cm("b", "team-a"), notify=False)
    harness.writes.wrote(newest)

    await harness.writes.wait_for_namespace("team-b", timeout=TIMEOUT, clock=harness.clock)
    in_namespace, everywhere = harness.list("team-a"), harness.list(None)
    assert await pending(in_namespace)
    assert await pending(everywhere)
    await harness.catch_up()
    await asyncio.wait_for(asyncio.gather(in_namespace, everywhere), 5)
    assert harness.informer.last_store_resource_version == newest["metadata"]["resourceVersion"]
    assert {o["metadata"]["name"] for o in harness.informer.lister().list("team-a")} == {"a", "b"}
    assert harness.writes.tracked_versions == 0


async def test_an_update_raises_the_minimum_and_an_older_answer_never_lowers_it(
    harness: Harness,
) -> None:
    first = harness.source.modify(cm("old") | {"data": {"step": "1"}}, notify=False)
    second = harness.source.modify(cm("old") | {"data": {"step": "2"}}, notify=False)
    harness.writes.wrote(second)
    harness.writes.wrote(first)  # an answer that came late

    read = harness.read("default/old")
    await harness.catch_up()
    await asyncio.wait_for(read, 5)
    assert harness.cached("default/old")["data"] == {"step": "2"}


async def test_answers_outside_the_informers_scope_or_without_a_version_are_not_awaited(
    harness: Harness,
) -> None:
    scoped = harness.scoped(
        Scope(
            namespace="default",
            label_selector=parse_label_selector("app=web"),
            field_selector=parse_field_selector("metadata.name!=hidden"),
        )
    )
    scoped.wrote(harness.source.add(cm("elsewhere", "other", app="web"), notify=False))
    scoped.wrote(harness.source.add(cm("unlabelled"), notify=False))
    scoped.wrote(harness.source.add(cm("hidden", app="web"), notify=False))
    scoped.wrote(cm("opaque") | {"metadata": {"name": "opaque", "resourceVersion": "x1"}})
    scoped.wrote({"kind": "Status"})
    assert scoped.tracked_versions == 0
    # A Scale's labels say nothing of its object: it is awaited whatever the selector.
    scale_meta = {"name": "web", "namespace": "default", "resourceVersion": "99"}
    scoped.wrote({"kind": "Scale", "metadata": scale_meta}, check_scope=False)
    scoped.wrote(harness.source.add(cm("shown", app="web"), notify=False))
    assert scoped.tracked_versions == 2


async def test_written_versions_are_dropped_once_applied_so_the_table_stays_small(
    harness: Harness,
) -> None:
    for i in range(500):
        harness.writes.wrote(harness.source.add(cm(f"n{i}")))
        if i % 50 == 49:
            rv = harness.source.resource_version
            await harness.informer.wait_for_resource_version(rv, timeout=5)
    # Pruned whenever the table doubles: never more than twice what is unapplied, or 64.
    assert harness.writes.tracked_versions <= 64
    await harness.writes.wait_for_namespace(None, timeout=TIMEOUT, clock=harness.clock)
    assert harness.writes.tracked_versions == 0


# -- delete -----------------------------------------------------------------------------


async def test_a_delete_answered_with_a_status_is_awaited_until_the_cache_drops_the_uid(
    harness: Harness,
) -> None:
    harness.delete_unseen("old")
    assert harness.writes.tracked_deletions == 1

    get, listing = harness.read("default/old"), harness.list("default")
    assert await pending(get)
    assert await pending(listing)
    assert harness.cached("default/old") is not None  # what a read must not return
    await harness.catch_up()
    await asyncio.wait_for(asyncio.gather(get, listing), 5)
    assert harness.cached("default/old") is None
    assert harness.writes.tracked_deletions == 0


async def test_a_deletion_the_cache_applied_before_the_answer_came_is_not_awaited(
    harness: Harness,
) -> None:
    seen = harness.writes.delete_sent("default/old")
    harness.source.delete("default/old")  # the watch delivers it at once
    await wait_until(lambda: harness.cached("default/old") is None)
    await settle()  # the handler has seen it
    harness.writes.delete_done("default/old", seen, status("old", "uid-old"))
    assert harness.writes.tracked_deletions == 0


async def test_a_delete_of_a_recreated_key_waits_for_its_own_uid(harness: Harness) -> None:
    # Someone deletes and recreates the key; this client deletes the new one. The watch
    # delivers the first two changes, not the third, after the answer came.
    seen = harness.writes.delete_sent("default/old")
    harness.source.delete("default/old")
    harness.source.add(cm("old") | {"metadata": cm("old")["metadata"] | {"uid": "uid-2"}})
    harness.source.delete("default/old", notify=False)
    harness.writes.delete_done("default/old", seen, status("old", "uid-2"))

    read = harness.read("default/old")

    def holds_the_new_one() -> bool:
        cached = harness.cached("default/old")
        return cached is not None and cached["metadata"]["uid"] == "uid-2"

    await wait_until(holds_the_new_one)
    # The deletion of the old uid does not end the wait: the cache holds the new one.
    assert await pending(read)
    await harness.catch_up()
    await asyncio.wait_for(read, 5)
    assert harness.cached("default/old") is None


async def test_a_status_without_a_uid_is_satisfied_by_the_next_deletion_of_the_key(
    harness: Harness,
) -> None:
    seen = harness.writes.delete_sent("default/old")
    harness.source.delete("default/old", notify=False)
    harness.writes.delete_done("default/old", seen, status("old", None))
    read = harness.read("default/old")
    assert await pending(read)
    await harness.catch_up()
    await asyncio.wait_for(read, 5)


async def test_a_relist_dropping_the_object_ends_the_wait_through_its_tombstone(
    harness: Harness,
) -> None:
    harness.delete_unseen("old")
    read = harness.read("default/old")
    assert await pending(read)
    await harness.relist()  # the watch lost its history: the deletion is never streamed
    await asyncio.wait_for(read, 5)
    assert harness.cached("default/old") is None


@pytest.mark.parametrize("marked", [True, False], ids=["finalizers-hold-it", "deleted"])
async def test_a_delete_answered_with_the_object_waits_for_the_answers_version(
    harness: Harness, marked: bool
) -> None:
    seen = harness.writes.delete_sent("default/old")
    if marked:
        # Finalizers hold it: the answer is the object as marked, a MODIFIED event.
        answer = harness.source.modify(
            cm("old") | {"metadata": cm("old")["metadata"] | {"deletionTimestamp": "now"}},
            notify=False,
        )
    else:
        # A Pod's kind of answer: the object as deleted, at the deletion's version.
        answer = harness.source.delete("default/old", notify=False)
    harness.writes.delete_done("default/old", seen, answer)
    assert harness.writes.tracked_deletions == 0
    assert harness.writes.tracked_versions == 1

    read = harness.read("default/old")
    assert await pending(read)
    await harness.catch_up()
    await asyncio.wait_for(read, 5)
    cached = harness.cached("default/old")
    if marked:
        assert cached["metadata"]["deletionTimestamp"] == "now"
    else:
        assert cached is None


async def test_a_failed_delete_leaves_nothing_to_wait_for(harness: Harness) -> None:
    seen = harness.writes.delete_sent("default/old")
    harness.writes.delete_done("default/old", seen, None)
    await harness.writes.wait_for_key("default/old", timeout=TIMEOUT, clock=harness.clock)
    assert harness.writes.waits == 0
    assert harness.writes.tracked_deletions == 0


async def test_a_status_delete_on_a_selective_informer_is_awaited_only_for_a_known_key(
    harness: Harness,
) -> None:
    scoped = harness.scoped(Scope(label_selector=parse_label_selector("app")))
    # Not in the cache and never written: maybe outside the selector, never seen dropped.
    scoped.delete_done("default/stranger", scoped.delete_sent("default/stranger"), status("s", "u"))
    # In the cache: the cache will see it go.
    scoped.delete_done("default/old", scoped.delete_sent("default/old"), status("old", "uid-old"))
    assert scoped.tracked_deletions == 1


# -- timeouts and stops -----------------------------------------------------------------


async def test_a_write_the_cache_never_shows_times_out_naming_the_version(
    harness: Harness,
) -> None:
    answer = harness.source.add(cm("lost"), notify=False)
    harness.writes.wrote(answer)
    read = harness.read("default/lost")
    await harness.expire()
    with pytest.raises(CacheReadTimeout) as raised:
        await read
    error = raised.value
    rv = answer["metadata"]["resourceVersion"]
    assert isinstance(error, TimeoutError)
    assert (error.resource, error.key, error.resource_version, error.uid) == (
        "configmaps",
        "default/lost",
        rv,
        None,
    )
    assert error.applied == harness.informer.last_store_resource_version
    assert error.timeout == TIMEOUT
    assert f"did not reach resourceVersion {rv}" in str(error)
    assert harness.writes.timeouts == 1
    # A live cache reaches it later: the next read waits again.
    assert harness.writes.tracked_versions == 1


async def test_a_deletion_that_timed_out_is_no_longer_awaited(harness: Harness) -> None:
    harness.delete_unseen("old")
    listing = harness.list("default")
    await harness.expire()
    with pytest.raises(CacheReadTimeout) as raised:
        await listing
    error = raised.value
    assert (error.key, error.namespace, error.resource_version, error.uid) == (
        None,
        "default",
        None,
        "uid-old",
    )
    assert "deletion of default/old (uid uid-old)" in str(error)
    assert harness.writes.tracked_deletions == 0
    await harness.writes.wait_for_key("default/old", timeout=TIMEOUT, clock=harness.clock)


async def test_a_read_whose_informer_stops_raises_informer_stopped(
    cache: CacheMode,
) -> None:
    source = FakeListerWatcher(resource="configmaps", kind="ConfigMap")
    informer = SharedIndexInformer(source, cache=cache)
    writes = OwnWrites(informer, resource="configmaps", scope=Scope())
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        writes.wrote(source.add(cm("late"), notify=False))
        read = asyncio.get_running_loop().create_task(
            writes.wait_for_key("default/late", timeout=TIMEOUT, clock=FakeClock())
        )
        assert await pending(read)
    with pytest.raises(InformerStoppedError, match="stopped before its cache reached"):
        await read
    # Nothing more can be observed once it stopped: deletes are sent untracked.
    assert writes.delete_sent("default/late") is None


async def test_a_read_awaiting_a_deletion_of_a_stopped_informer_raises_at_once(
    harness: Harness,
) -> None:
    harness.delete_unseen("old")
    harness.informer.stop()
    await wait_until(lambda: harness.informer.state is State.STOPPED)
    with pytest.raises(InformerStoppedError, match="will not drop what this client deleted"):
        await harness.writes.wait_for_key("default/old", timeout=TIMEOUT, clock=harness.clock)


async def test_a_cancelled_read_leaves_no_waiter_behind(harness: Harness) -> None:
    harness.delete_unseen("old")
    read = harness.read("default/old")
    assert await pending(read)
    read.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await read
    assert harness.writes._waiters == []
    assert harness.writes.tracked_deletions == 1
