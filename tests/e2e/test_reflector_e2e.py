"""End to end: Client → Reflector → DeltaFIFO → Indexer against the fake API server, under
every fault the server can inject.

Each case arms or triggers one fault, churns objects through it, and ends the same way:
the cache equals the server's objects exactly (keys, resourceVersions, contents), the
fault is in the server's fault log (it really happened), and the reflector's reaction is
the documented one (re-watch, relist, backoff, Retry-After).

The pipeline is assembled here rather than through an informer so that the reflector's
knobs can be turned for speed: a 10-50 ms backoff and a 0.5 s watch inactivity deadline,
with server bookmarks every 50 ms keeping healthy watches well inside it. Waits are event
driven: every pop wakes the convergence check, bounded by ``asyncio.timeout``.

Every case runs in both cache modes (the ``cache`` fixture), assembled as the informer
assembles them: ``"objects"`` lists and watches decoded dicts into an :class:`Indexer`;
``"compact"`` lists and watches CompactEntry objects (the client decoded with a compact codec,
``decoded_with(CompactCodec())``) into a
:class:`CompactIndexer`, and the check that the cache holds nothing but CompactEntry objects proves
the faults hit the compact decoding path.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._kernel.backoff import Backoff
from aioinformer._objects.raw import CompactEntry
from aioinformer.client import Client
from aioinformer.codec import CompactCodec
from aioinformer.config import Config
from aioinformer.delta_fifo import DeltaFIFO, Deltas, DeltaType
from aioinformer.errors import ConnectionFailed, Gone, ServerError, TooManyRequests, WatchError
from aioinformer.indexer import CompactIndexer, Indexer, meta_namespace_key
from aioinformer.reflector import Reflector, ReflectorOptions, ReflectorState
from aioinformer.testing.apiserver import ADMIN_TOKEN, FakeAPIServer
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.informer import CacheMode
    from aioinformer.testing._watchstream import ExpiredWatch

CONVERGE_TIMEOUT = 10.0


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def truth(server: FakeAPIServer) -> dict[str, dict[str, Any]]:
    return {meta_namespace_key(obj): obj for obj in server.objects("pods")}


@dataclass
class Pipeline:
    """A reflector feeding a DeltaFIFO whose single consumer applies deltas to an Indexer."""

    server: FakeAPIServer
    reflector: Reflector
    fifo: DeltaFIFO
    indexer: Indexer[Any]
    mode: CacheMode
    errors: list[BaseException] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def apply(self, deltas: Deltas) -> None:
        for delta in deltas:
            if delta.type is DeltaType.DELETED:
                self.indexer.delete(delta.object)
            else:
                self.indexer.update(delta.object)
        self.changed.set()

    async def pop_forever(self) -> None:
        while True:
            await self.fifo.pop(self.apply)

    def cache(self) -> dict[str, dict[str, Any]]:
        return {meta_namespace_key(obj): obj for obj in self.indexer.list()}

    def assert_kept_as_its_mode_keeps(self) -> None:
        """The cache holds CompactEntry objects in compact mode, decoded dicts in objects mode."""
        kept = {type(entry) for entry in self.indexer.entries()}
        assert kept <= ({CompactEntry} if self.mode == "compact" else {dict}), kept

    def converged(self) -> bool:
        return (
            self.fifo.has_synced()
            and len(self.fifo) == 0
            and self.reflector.state is ReflectorState.WATCHING
            and self.cache() == truth(self.server)
        )

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Wait (bounded) for ``condition``; re-checked after every pop, and every 20 ms
        for conditions no pop announces (the reflector's state)."""
        await wait_until(condition, changed=self.changed, poll=0.02, timeout=CONVERGE_TIMEOUT)

    async def wait_converged(self) -> None:
        try:
            await self.wait_until(self.converged)
        except TimeoutError:
            missing = truth(self.server).keys() - self.cache().keys()
            extra = self.cache().keys() - truth(self.server).keys()
            pytest.fail(
                f"no convergence: missing={sorted(missing)} extra={sorted(extra)} "
                f"state={self.reflector!r} errors={self.errors!r}"
            )
        self.assert_kept_as_its_mode_keeps()


@contextlib.asynccontextmanager
async def pipeline(
    server: FakeAPIServer, cache: CacheMode, **reflector_options: Any
) -> AsyncIterator[Pipeline]:
    indexer: Indexer[Any] = (
        CompactIndexer(meta_namespace_key) if cache == "compact" else Indexer(meta_namespace_key)
    )
    fifo = DeltaFIFO(known_objects=indexer.known_objects)
    async with Client(Config(host=server.url, token=ADMIN_TOKEN)) as client:
        options: dict[str, Any] = {
            "backoff": Backoff(initial=0.01, cap=0.05),
            "options": ReflectorOptions(watch_inactivity_timeout=0.5),
        }
        options.update(reflector_options)
        pods = client.resource("pods")
        source = pods.decoded_with(CompactCodec()) if cache == "compact" else pods
        reflector = Reflector(source, fifo, **options)
        pipe = Pipeline(server, reflector, fifo, indexer, cache)
        reflector.set_watch_error_handler(lambda _r, exc: pipe.errors.append(exc))
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(reflector.run()), tg.create_task(pipe.pop_forever())]
            try:
                yield pipe
            finally:
                for task in tasks:
                    task.cancel()
        fifo.close()


def churn(server: FakeAPIServer, round_: int) -> None:
    """Creates, updates (labels and spec), and deletes; synchronous, so all of it is in the
    server's history before any watch sees the first event."""
    server.create_namespace("team-a")
    for i in range(6):
        server.create(pod(f"p{round_}-{i}", "default" if i % 2 else "team-a", app="web"))
    server.patch("pods", "team-a", f"p{round_}-0", {"metadata": {"labels": {"app": "db"}}})
    server.patch("pods", "default", f"p{round_}-1", {"spec": {"priority": round_}})
    server.delete("pods", "team-a", f"p{round_}-2")
    server.delete("pods", "default", f"p{round_}-3")


Step = Callable[[FakeAPIServer], Awaitable[None]]


async def _nothing(server: FakeAPIServer) -> None:
    return None


@dataclass(frozen=True)
class FaultCase:
    id: str
    arm: Callable[[FakeAPIServer], None]
    """Called before the reflector starts: arms faults for its first requests."""
    during: Step
    """Awaited after the initial sync, before the churn."""
    logged: str
    """The fault kind the server must have recorded."""
    error: type[BaseException] | None
    """A failure watch_error_handler must have heard of (None: no requirement)."""
    relists: bool | None = None
    """Whether the reflector must have relisted (None: either)."""
    server_options: dict[str, Any] = field(default_factory=dict)


def _restart(reset_history: bool) -> Step:
    async def step(server: FakeAPIServer) -> None:
        # Writes the reflector cannot see (nobody can connect) before the restart: with
        # the history reset, its next watch starts from a version the server forgot.
        await server.faults.refuse_connections()
        churn(server, 5)
        await server.restart(reset_history=reset_history)

    return step


async def _lose_a_delete_then_reset_history(server: FakeAPIServer) -> None:
    # The watch never hears of this deletion and moves past it: only a relist, here the
    # one a reset history forces, brings the cache back to the truth (a cache audit asks
    # for one when it finds such a difference).
    server.faults.drop_watch_events(1, resource="pods")
    victim = next(iter(truth(server).values()))["metadata"]
    server.delete("pods", victim["namespace"], victim["name"])
    await server.restart(reset_history=True)


async def _freeze(server: FakeAPIServer) -> None:
    await server.wait_for_watchers(1)  # the reflector says WATCHING before its request lands
    assert server.faults.freeze_watches() == 1


CASES = [
    FaultCase(
        "drop-watch-cleanly",
        lambda s: s.faults.drop_watch_after(2),
        _nothing,
        "drop_watch",
        None,
        relists=False,
    ),
    FaultCase(
        "drop-watch-abruptly",
        lambda s: s.faults.drop_watch_after(2, abrupt=True),
        _nothing,
        "drop_watch",
        WatchError,
        relists=False,
    ),
    FaultCase(
        "close-mid-line",
        lambda s: s.faults.close_mid_line(after=3),
        _nothing,
        "close_mid_line",
        WatchError,
        relists=False,
    ),
    FaultCase(
        "garbage-line",
        lambda s: s.faults.garbage_line(after=1),
        _nothing,
        "garbage_line",
        WatchError,
        relists=False,
    ),
    FaultCase(
        "stalled-stream",
        lambda s: s.faults.stall_watch(after=2),
        _nothing,
        "stall_watch",
        WatchError,  # WatchTimeout from the inactivity watchdog
        relists=False,
    ),
    FaultCase(
        "frozen-watch",
        lambda s: None,
        _freeze,
        "freeze_watch",
        WatchError,  # WatchTimeout from the inactivity watchdog
        relists=False,
    ),
    FaultCase(
        "429-burst-on-list-with-retry-after",
        lambda s: s.faults.fail_next(3, status=429, retry_after=0.02, verb="list"),
        _nothing,
        "fail",
        TooManyRequests,
    ),
    FaultCase(
        "429-burst-on-watch-with-retry-after",
        lambda s: s.faults.fail_next(3, status=429, retry_after=0.02, verb="watch"),
        _nothing,
        "fail",
        TooManyRequests,
        relists=False,
    ),
    FaultCase(
        "500-burst-on-list",
        lambda s: s.faults.fail_next(3, status=500, retry_after=None, verb="list"),
        _nothing,
        "fail",
        ServerError,
    ),
    FaultCase(
        "503-burst-on-watch",
        lambda s: s.faults.fail_next(2, status=503, retry_after=None, verb="watch"),
        _nothing,
        "fail",
        ServerError,
    ),
    FaultCase(
        "latency-on-every-request",
        lambda s: s.faults.latency(0.03),
        _nothing,
        "latency",
        None,
        relists=False,
    ),
    FaultCase(
        "lagging-watch",
        lambda s: s.faults.delay_watch_events(0.02),
        _nothing,
        "delay_watch_events",
        None,
        relists=False,
    ),
    FaultCase(
        "server-restart-keeping-history",
        lambda s: None,
        _restart(reset_history=False),
        "restart",
        None,
        relists=False,
    ),
    FaultCase(
        "lost-delete-then-history-reset",
        lambda s: None,
        _lose_a_delete_then_reset_history,
        "drop_watch_event",
        Gone,
        relists=True,
    ),
    FaultCase(
        "server-restart-with-history-reset",
        lambda s: None,
        _restart(reset_history=True),
        "restart",
        Gone,
        relists=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_the_cache_converges_to_the_server_through_a_fault(
    case: FaultCase, cache: CacheMode
) -> None:
    async with FakeAPIServer(bookmark_interval=0.05, **case.server_options) as server:
        churn(server, 0)
        case.arm(server)
        async with pipeline(server, cache, use_watch_list=False) as pipe:
            await pipe.wait_converged()
            relists_before = pipe.reflector.statistics().relists
            await case.during(server)
            churn(server, 1)
            await pipe.wait_converged()
            churn(server, 2)
            await pipe.wait_converged()
            relisted = pipe.reflector.statistics().relists > relists_before
        assert server.faults.count(case.logged) >= 1
        if case.error is not None:
            assert any(isinstance(e, case.error) for e in pipe.errors), pipe.errors
        if case.relists is not None:
            assert relisted is case.relists, pipe.errors
        assert pipe.cache() == truth(server)


async def test_a_refused_connection_backs_off_rewatches_and_converges_without_a_relist(
    cache: CacheMode,
) -> None:
    async with FakeAPIServer(bookmark_interval=0.05) as server:
        churn(server, 0)
        async with pipeline(server, cache, use_watch_list=False) as pipe:
            await pipe.wait_converged()
            await server.faults.refuse_connections()
            churn(server, 1)
            await pipe.wait_until(
                lambda: any(isinstance(e, ConnectionFailed) and e.refused for e in pipe.errors)
            )
            assert pipe.reflector.state is ReflectorState.BACKING_OFF or pipe.errors
            await server.faults.accept_connections()
            await pipe.wait_converged()
            assert pipe.reflector.statistics().relists == 0
        assert server.faults.count("refuse_connections") == 1


@pytest.mark.parametrize("expired_watch", ["error_event", "status"])
async def test_a_watch_from_a_compacted_version_gets_410_and_relists(
    cache: CacheMode, expired_watch: ExpiredWatch
) -> None:
    # A tiny history: the burst below overflows it while the first watch is being dropped,
    # so the re-watch from the last version seen is too old. The 410 comes as
    # kube-apiserver v1.36.2 sends it (an ERROR event in a 200 stream) or on open.
    async with FakeAPIServer(
        bookmark_interval=0.05, history_size=3, expired_watch=expired_watch
    ) as server:
        server.faults.drop_watch_after(1)
        async with pipeline(server, cache, use_watch_list=False) as pipe:
            await pipe.wait_converged()
            for round_ in range(3):
                churn(server, round_)
            await pipe.wait_converged()
            assert pipe.reflector.statistics().relists >= 1
        assert any(isinstance(e, Gone) for e in pipe.errors), pipe.errors


async def test_compaction_then_restart_relists_and_tombstones_objects_deleted_meanwhile(
    cache: CacheMode,
) -> None:
    async with FakeAPIServer(bookmark_interval=0.05) as server:
        churn(server, 0)
        async with pipeline(server, cache) as pipe:
            await pipe.wait_converged()
            await server.faults.refuse_connections()
            # Deleted while nobody watches: only a relist can tell the cache.
            for obj in server.objects("pods"):
                server.delete("pods", obj["metadata"]["namespace"], obj["metadata"]["name"])
            server.create(pod("survivor"))
            server.compact()
            await server.faults.accept_connections()
            await pipe.wait_converged()
            assert sorted(pipe.cache()) == ["default/survivor"]
            assert pipe.reflector.statistics().relists >= 1


async def test_a_paginated_relist_survives_a_500_between_pages(cache: CacheMode) -> None:
    async with FakeAPIServer(bookmark_interval=0.05) as server:
        for round_ in range(4):
            churn(server, round_)
        server.faults.fail_next(1, status=500, retry_after=None, verb="list")
        async with pipeline(server, cache, page_size=3, use_watch_list=False) as pipe:
            await pipe.wait_converged()
            assert pipe.reflector.statistics().lists >= 2
            await server.restart(reset_history=True)
            churn(server, 9)
            await pipe.wait_converged()
        assert any(isinstance(e, ServerError) for e in pipe.errors)


FAULT_METHODS_COVERED = {
    # method of server.faults -> the case ids here that exercise it
    "drop_watch_after": {"drop-watch-cleanly", "drop-watch-abruptly"},
    "close_mid_line": {"close-mid-line"},
    "garbage_line": {"garbage-line"},
    "stall_watch": {"stalled-stream"},
    "freeze_watches": {"frozen-watch"},
    "fail_next": {"429-burst-on-list-with-retry-after", "500-burst-on-list"},
    "latency": {"latency-on-every-request"},
    "delay_watch_events": {"lagging-watch"},
    "drop_watch_events": {"lost-delete-then-history-reset"},
    "refuse_connections": {"refused-connection"},
    "accept_connections": {"refused-connection"},
}
NOT_FAULTS = {"attach_freezer", "clear", "count", "record", "wait_for", "log", "loses"}


def test_every_fault_the_server_can_inject_has_a_case_here() -> None:
    from aioinformer.testing.apiserver import Faults

    public = {name for name in dir(Faults) if not name.startswith("_")} - NOT_FAULTS
    assert public == set(FAULT_METHODS_COVERED), (
        "a fault was added to or removed from FakeAPIServer.faults: cover it here"
    )
    ids = {case.id for case in CASES} | {"refused-connection"}
    for cases in FAULT_METHODS_COVERED.values():
        assert cases <= ids
