"""Convergence, as a property: whatever the network does, the informers end up equal to the
server.

A Hypothesis state machine drives the real stack (``Client`` → ``Reflector`` →
``DeltaFIFO`` → ``Indexer`` → handlers, built by a ``SharedInformerFactory``) against the
fake API server, interleaving at random:

* writes: creates, updates, label changes (moving pods in and out of a label selector),
  deletes, delete-and-recreate under the same name, and namespace churn (a namespace and
  its pods appearing or disappearing at once);
* faults: a watch dropped cleanly or abruptly, cut mid-line, sent a garbage line, or
  stalled; 410 after compaction; bursts of 429 (with Retry-After), 500 and 503; request
  latency; connections refused for a while; server restarts with and without a history
  reset;
* pauses of a few milliseconds that let the informers run between steps.

Three informers watch the same pods: all namespaces, one namespace, and a label
selector. After the faults stop (``faults.clear()``, connections accepted again) and every
informer is live (synced, reflector WATCHING at a resourceVersion at least the server's,
nothing queued), the check is exact, per informer:

* the cache equals the server's matching objects (keys, resourceVersions, contents);
* replaying the handler's own event log gives the same objects;
* no delete was reported for an object that exists at the end without a later add;
* every object the handler saw that is gone at the end was reported deleted (as the
  object or a tombstone), or was replaced in an update by a re-created object of the same
  name (a delete and re-create both missed while the watch was down, which client-go
  also reports as an update).

Speed: the informers run on a clock 100 times faster than the loop's (backoff 0.8 s → 8
ms, a 429's Retry-After of 1 s → 10 ms, watch timeouts 3-6 s), the client gives up on a
silent watch after 0.25 s, and the server sends bookmarks every 50 ms. Watch faults arm
the *next* watch opened, so each is followed by a brief refusal of connections, which
ends the open watches and makes every reflector reconnect into the fault.

Profiles (``AIOINFORMER_PROPERTY_PROFILE``, see :mod:`tests._support_properties`):
``quick`` (the default: 10 examples of up to 30 steps), ``ci`` (100, what ``.ci/run``
runs) or ``long`` (1000), e.g.::

    AIOINFORMER_PROPERTY_PROFILE=long pytest tests/e2e/test_convergence_properties.py

The fixed scenario at the end plays every fault kind through the same machine, so that
each is exercised by a convergence check on every run, whatever Hypothesis draws.

Both the machine and the fixed scenario run once per cache mode (the ``cache`` fixture):
the factory builds every informer with ``cache="objects"`` or ``cache="compact"``, and
the checks compare what listers and handlers return, so they hold the two alike. The
fixed scenario also runs with ``in_order=True`` in both modes, and the machine once more
with it, in the compact mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.errors import AlreadyExists, NotFound
from aioinformer.factory import SharedInformerFactory
from aioinformer.indexer import meta_namespace_key
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.reflector import ReflectorOptions, ReflectorState
from aioinformer.testing.apiserver import ADMIN_TOKEN, FakeAPIServer
from tests._support_properties import PROFILE, examples
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.informer import CacheMode, SharedIndexInformer

# ---------------------------------------------------------------------------------------
# settings

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
CONVERGENCE = settings(
    max_examples=examples(100),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=_HEALTH,
)

pytestmark = pytest.mark.timeout(7200 if PROFILE == "long" else 300)

TIME_SCALE = 100.0
"""How much faster than the loop's clock the informers' clock runs."""
CLIENT_WATCH_SILENCE = 0.25
"""Seconds (real) of silence after which the client drops a watch (stalled streams)."""
BOOKMARK_INTERVAL = 0.05
"""Seconds (real) between the server's bookmarks: keeps healthy watches under the above."""
FAULT_TIMEOUT = 10.0
"""Seconds (real) an armed fault may take to hit a request."""
CONVERGE_TIMEOUT = 30.0
"""Seconds (real) allowed for convergence once faults stop; a miss is a failure."""

NAMESPACES = ("ns-0", "ns-1", "ns-2")
NAMES = ("a", "b", "c", "d", "e", "f")
TIERS = ("web", "db", None)
SELECTED_NAMESPACE = "ns-1"
SELECTOR = "tier=web"


class ScaledClock:
    """The loop's clock, running ``TIME_SCALE`` times faster: timeouts and backoffs keep
    their proportions and lose most of their real duration."""

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time() * TIME_SCALE

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) / TIME_SCALE)


# ---------------------------------------------------------------------------------------
# what handlers saw


@dataclass
class Recorder:
    """A handler that logs every notification and replays them into ``state``."""

    changed: asyncio.Event
    """Set on every notification."""
    state: dict[str, dict[str, Any]] = field(default_factory=dict)
    log: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)
    """(kind, key, uid, new uid for updates) per notification, in delivery order."""

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        key = meta_namespace_key(obj)
        self.state[key] = obj
        self.log.append(("add", key, _uid(obj), None))
        self.changed.set()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        key = meta_namespace_key(new)
        self.state[key] = new
        self.log.append(("update", key, _uid(old), _uid(new)))
        self.changed.set()

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            key, last = obj.key, obj.obj
        else:
            key, last = meta_namespace_key(obj), obj
        self.state.pop(key, None)
        self.log.append(("delete", key, _uid(last) if last is not None else None, None))
        self.changed.set()


def _uid(obj: Any) -> str | None:
    uid = obj.get("metadata", {}).get("uid") if isinstance(obj, Mapping) else None
    return uid if isinstance(uid, str) else None


@dataclass
class Watched:
    """One informer under test, the handlers recording for it, and which of the server's
    pods it should hold."""

    name: str
    informer: SharedIndexInformer
    selects: Callable[[dict[str, Any]], bool]
    reenters: bool
    """Whether an object may leave and re-enter the watched set under the same uid (a
    label selector: relabelling moves it out and back); otherwise a delete is final."""
    recorders: list[Recorder] = field(default_factory=list)
    """The handler registered before start, then any added while running."""


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    labels = obj["metadata"].get("labels") or {}
    return dict(labels)


# ---------------------------------------------------------------------------------------
# the world: server, client, factory, informers


class World:
    """Everything one example runs against; built and torn down on the example's loop."""

    def __init__(self, cache: CacheMode, *, in_order: bool = False) -> None:
        self.cache: CacheMode = cache
        self.in_order = in_order
        # Namespaces are incidental here: pods go to any generated namespace.
        self.server = FakeAPIServer(bookmark_interval=BOOKMARK_INTERVAL, require_namespaces=False)
        self.client: Client | None = None
        self.factory: SharedInformerFactory | None = None
        self.watched: list[Watched] = []
        self.changed = asyncio.Event()
        """Set by every handler notification."""
        self._serial = itertools.count()

    async def start(self) -> None:
        await self.server.start()
        client = self.client = Client(
            Config(host=self.server.url, token=ADMIN_TOKEN),
            watch_inactivity_timeout=CLIENT_WATCH_SILENCE,
            request_timeout=5.0,
            connect_timeout=1.0,
        )
        for namespace in NAMESPACES[:2]:
            self.create_namespace(namespace)
        # LIST+WATCH: the list faults (error_burst with verb="list") wait for a relist's
        # LIST, which a streaming list would not send.
        factory = self.factory = SharedInformerFactory(
            client,
            clock=ScaledClock(),
            cache=self.cache,
            in_order=self.in_order,
            reflector=ReflectorOptions(use_watch_list=False),
        )
        self.watched = [
            Watched("all", factory.informer_for("pods"), lambda o: True, reenters=False),
            Watched(
                SELECTED_NAMESPACE,
                factory.informer_for("pods", namespace=SELECTED_NAMESPACE),
                lambda o: o["metadata"].get("namespace") == SELECTED_NAMESPACE,
                reenters=False,
            ),
            Watched(
                SELECTOR,
                factory.informer_for("pods", label_selector=SELECTOR),
                lambda o: _labels(o).get("tier") == "web",
                reenters=True,
            ),
        ]
        for watched in self.watched:
            self.add_recorder(watched)
        await factory.start()

    def add_recorder(self, watched: Watched) -> None:
        recorder = Recorder(self.changed)
        number = len(watched.recorders)
        watched.informer.add_event_handler(recorder, name=f"recorder {watched.name} #{number}")
        watched.recorders.append(recorder)

    async def close(self) -> None:
        try:
            if self.factory is not None:
                await self.factory.shutdown()
        finally:
            try:
                if self.client is not None:
                    await self.client.close()
            finally:
                await self.server.close()

    # -- writes (synchronous on the server; watches see them at once) ----------------

    def pods(self) -> list[dict[str, Any]]:
        return self.server.objects("pods")

    def create_pod(self, namespace: str, name: str, tier: str | None) -> None:
        labels = {"tier": tier} if tier else {}
        with contextlib.suppress(AlreadyExists):
            self.server.create(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": namespace, "labels": labels},
                    "spec": {"containers": [{"name": "main", "image": "busybox"}]},
                }
            )

    def create_namespace(self, namespace: str) -> None:
        with contextlib.suppress(AlreadyExists):
            self.server.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        for name in NAMES[:2]:
            self.create_pod(namespace, name, "web")

    def delete_namespace(self, namespace: str) -> None:
        # The fake server does not cascade: delete the pods, then the namespace.
        for pod in self.pods():
            if pod["metadata"]["namespace"] == namespace:
                self.server.delete("pods", namespace, pod["metadata"]["name"])
        with contextlib.suppress(NotFound):
            self.server.delete("namespaces", None, namespace)

    def patch_pod(self, namespace: str, name: str, patch: dict[str, Any]) -> bool:
        try:
            self.server.patch("pods", namespace, name, patch)
        except NotFound:
            return False
        return True

    def serial(self) -> int:
        return next(self._serial)

    # -- faults ----------------------------------------------------------------------

    async def kick_watches(self, *, relist: bool = False) -> None:
        """End every open watch (a refusal of new connections for an instant): armed
        watch faults hit the watches opened next. With ``relist``, a write nobody sees
        and a compaction meanwhile make every informer list again."""
        await self.server.faults.refuse_connections()
        if relist:
            self.server.create(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": f"kick-{self.serial()}"},
                }
            )
            self.server.compact()
        await self.server.faults.accept_connections()

    async def inject(self, logged: str, arm: Callable[[], None], *, relist: bool = False) -> None:
        """Arm a fault, make the informers reconnect into it, and wait (bounded) until the
        server has logged it: a fault still armed at the next convergence check would
        be disarmed unseen."""
        faults = self.server.faults
        before = faults.count(logged)
        arm()
        await self.kick_watches(relist=relist)
        await faults.wait_for(logged, before + 1, timeout=FAULT_TIMEOUT)

    # -- convergence -----------------------------------------------------------------

    def expected(self, watched: Watched) -> dict[str, dict[str, Any]]:
        return {meta_namespace_key(p): p for p in self.pods() if watched.selects(p)}

    def live(self, watched: Watched) -> bool:
        server_rv = int(self.server.resource_version)
        informer = watched.informer
        stats = informer.statistics()
        reflector = stats.reflector
        if not stats.synced or reflector is None or stats.fifo_pending:
            return False
        if reflector.state is not ReflectorState.WATCHING:
            return False
        if int(reflector.last_resource_version or 0) < server_rv:
            return False
        if any(h.pending for h in stats.handlers):
            return False
        expected = self.expected(watched)
        cache = {meta_namespace_key(o): o for o in informer.indexer.list()}
        return cache == expected and all(r.state == expected for r in watched.recorders)

    async def converge(self) -> None:
        """Stop every fault, wait until all informers are live, then check them exactly."""
        self.server.faults.clear()
        await self.server.faults.accept_connections()
        with contextlib.suppress(TimeoutError):  # the checks below say what is wrong
            # Every notification wakes the check; bookmarks and reflector state changes
            # announce nothing, so it also runs every 5 ms.
            await wait_until(
                lambda: all(self.live(w) for w in self.watched),
                changed=self.changed,
                poll=0.005,
                timeout=CONVERGE_TIMEOUT,
            )
        for watched in self.watched:
            self.check(watched)

    def check(self, watched: Watched) -> None:
        name = watched.name
        informer = watched.informer
        expected = self.expected(watched)
        stats = informer.statistics()
        assert stats.synced, f"{name}: never synced: {stats}"
        assert stats.reflector is not None
        assert stats.reflector.state is ReflectorState.WATCHING, f"{name}: {stats.reflector}"
        assert int(stats.reflector.last_resource_version or 0) >= int(
            self.server.resource_version
        ), f"{name}: reflector behind the server: {stats.reflector}"
        cache = {meta_namespace_key(o): o for o in informer.indexer.list()}
        _assert_same(f"{name}: cache", cache, expected)
        for number, recorder in enumerate(watched.recorders):
            self.check_log(f"{name} #{number}", recorder, expected, reenters=watched.reenters)

    @staticmethod
    def check_log(
        name: str, recorder: Recorder, expected: dict[str, dict[str, Any]], *, reenters: bool
    ) -> None:
        _assert_same(f"{name}: handler replay", recorder.state, expected)
        live_uids = {_uid(o) for o in expected.values()}
        last_event: dict[str | None, str] = {}
        superseded: set[str | None] = set()
        deleted: set[str | None] = set()
        for kind, _key, uid, new_uid in recorder.log:
            last_event[uid] = kind
            if kind == "delete":
                deleted.add(uid)
            if kind == "update" and new_uid != uid:
                superseded.add(uid)
                last_event[new_uid] = "add"
        for uid in live_uids:
            assert last_event.get(uid) in ("add", "update"), (
                f"{name}: object {uid} exists but its last notification was {last_event.get(uid)!r}"
            )
        if not reenters:
            wrongly = deleted & live_uids
            assert not wrongly, f"{name}: reported deleted but still there: {wrongly}"
        for uid, kind in last_event.items():
            if uid in live_uids or uid is None:
                continue
            assert kind == "delete" or uid in superseded, (
                f"{name}: object {uid} is gone but its delete was never delivered"
            )


def _assert_same(what: str, actual: dict[str, Any], expected: dict[str, Any]) -> None:
    if actual == expected:
        return
    missing = sorted(expected.keys() - actual.keys())
    extra = sorted(actual.keys() - expected.keys())
    stale = sorted(
        f"{k} rv {actual[k]['metadata'].get('resourceVersion')} != "
        f"{expected[k]['metadata'].get('resourceVersion')}"
        for k in expected.keys() & actual.keys()
        if actual[k] != expected[k]
    )
    raise AssertionError(f"{what} differs: missing={missing} extra={extra} stale={stale}")


# ---------------------------------------------------------------------------------------
# the state machine

namespaces = st.sampled_from(NAMESPACES)
names = st.sampled_from(NAMES)
tiers = st.sampled_from(TIERS)
WATCH_FAULTS = ("drop", "drop_abrupt", "close_mid_line", "garbage_line", "stall")


class ConvergenceMachine(RuleBasedStateMachine):
    """One example: a fresh server, client and informers on a fresh event loop."""

    def __init__(self, cache: CacheMode, *, in_order: bool = False) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.world: World = self.run(self._build(cache, in_order))

    @staticmethod
    async def _build(cache: CacheMode, in_order: bool) -> World:
        world = World(cache, in_order=in_order)
        await world.start()
        return world

    def run(self, coro: Any) -> Any:
        return self.runner.run(coro)

    async def _settle(self) -> None:
        # One loop turn so the write reaches the watch buffers and informers may react.
        await asyncio.sleep(0)

    # -- writes ------------------------------------------------------------------------

    @rule(namespace=namespaces, name=names, tier=tiers)
    def create(self, namespace: str, name: str, tier: str | None) -> None:
        self.world.create_pod(namespace, name, tier)
        self.run(self._settle())

    @rule(namespace=namespaces, name=names)
    def update(self, namespace: str, name: str) -> None:
        self.world.patch_pod(
            namespace, name, {"metadata": {"annotations": {"serial": str(self.world.serial())}}}
        )
        self.run(self._settle())

    @rule(namespace=namespaces, name=names, tier=tiers)
    def relabel(self, namespace: str, name: str, tier: str | None) -> None:
        self.world.patch_pod(namespace, name, {"metadata": {"labels": {"tier": tier}}})
        self.run(self._settle())

    @rule(namespace=namespaces, name=names)
    def delete(self, namespace: str, name: str) -> None:
        with contextlib.suppress(NotFound):
            self.world.server.delete("pods", namespace, name)
        self.run(self._settle())

    @rule(namespace=namespaces, name=names, tier=tiers)
    def delete_and_recreate(self, namespace: str, name: str, tier: str | None) -> None:
        with contextlib.suppress(NotFound):
            self.world.server.delete("pods", namespace, name)
        self.world.create_pod(namespace, name, tier)
        self.run(self._settle())

    @rule(namespace=namespaces)
    def namespace_appears(self, namespace: str) -> None:
        self.world.create_namespace(namespace)
        self.run(self._settle())

    @rule(namespace=namespaces)
    def namespace_disappears(self, namespace: str) -> None:
        self.world.delete_namespace(namespace)
        self.run(self._settle())

    # -- faults ------------------------------------------------------------------------

    @rule(kind=st.sampled_from(WATCH_FAULTS), after=st.integers(0, 3))
    def watch_fault(self, kind: str, after: int) -> None:
        faults = self.world.server.faults
        arms: dict[str, tuple[str, Callable[[], None]]] = {
            "drop": ("drop_watch", lambda: faults.drop_watch_after(after)),
            "drop_abrupt": ("drop_watch", lambda: faults.drop_watch_after(after, abrupt=True)),
            "close_mid_line": ("close_mid_line", lambda: faults.close_mid_line(after)),
            "garbage_line": ("garbage_line", lambda: faults.garbage_line(after)),
            "stall": ("stall_watch", lambda: faults.stall_watch(after)),
        }
        logged, arm = arms[kind]
        self.run(self.world.inject(logged, arm))

    @rule()
    def compaction_410(self) -> None:
        async def step() -> None:
            # Writes nobody sees (connections refused), then compaction: every
            # reflector's next watch starts from a forgotten version.
            await self.world.server.faults.refuse_connections()
            self.world.create_pod("ns-0", f"c-{self.world.serial() % 3}", "web")
            self.world.server.compact()
            await self.world.server.faults.accept_connections()

        self.run(step())

    @rule(
        status=st.sampled_from([429, 500, 503]),
        count=st.integers(1, 4),
        verb=st.sampled_from([None, "list", "watch"]),
    )
    def error_burst(self, status: int, count: int, verb: str | None) -> None:
        retry_after = 1.0 if status == 429 else None  # 1 s of informer time: 10 ms
        faults = self.world.server.faults
        self.run(
            self.world.inject(
                "fail",
                lambda: faults.fail_next(count, status=status, retry_after=retry_after, verb=verb),
                relist=verb == "list",
            )
        )

    @rule(seconds=st.sampled_from([0.001, 0.005, 0.02]))
    def latency(self, seconds: float) -> None:
        faults = self.world.server.faults
        self.run(self.world.inject("latency", lambda: faults.latency(seconds)))

    @rule(seconds=st.sampled_from([0.0, 0.02, 0.08]))
    def refuse_connections_for_a_while(self, seconds: float) -> None:
        async def step() -> None:
            await self.world.server.faults.refuse_connections()
            await asyncio.sleep(seconds)  # the outage's length, not a synchronisation
            await self.world.server.faults.accept_connections()

        self.run(step())

    @rule(reset_history=st.booleans())
    def restart(self, reset_history: bool) -> None:
        self.run(self.world.server.restart(reset_history=reset_history))

    @rule(which=st.integers(0, 2))
    def add_handler_while_running(self, which: int) -> None:
        watched = self.world.watched[which]

        async def step() -> None:
            if len(watched.recorders) < 3:
                self.world.add_recorder(watched)
            await self._settle()

        self.run(step())

    @rule(seconds=st.sampled_from([0.0, 0.001, 0.01, 0.03]))
    def let_informers_run(self, seconds: float) -> None:
        self.run(asyncio.sleep(seconds))

    # -- checks ------------------------------------------------------------------------

    @rule()
    def converge_now(self) -> None:
        self.run(self.world.converge())

    def teardown(self) -> None:
        try:
            self.run(self.world.converge())
        finally:
            try:
                self.run(self.world.close())
            finally:
                self.runner.close()


def machine_for(cache: CacheMode, *, in_order: bool = False) -> type[ConvergenceMachine]:
    """The machine whose examples build their informers with ``cache`` and ``in_order``
    (Hypothesis builds each example's machine from a class, without arguments)."""

    class Machine(ConvergenceMachine):
        def __init__(self) -> None:
            super().__init__(cache, in_order=in_order)

    return Machine


def test_informers_converge_to_the_server_whatever_the_network_does(cache: CacheMode) -> None:
    run_state_machine_as_test(
        machine_for(cache),
        settings=CONVERGENCE,
    )


def test_in_order_informers_converge_to_the_server_whatever_the_network_does() -> None:
    # One cache mode only: the pipelines differ before the cache, and a third run of the
    # machine costs less than a fourth.
    run_state_machine_as_test(
        machine_for("compact", in_order=True),
        settings=CONVERGENCE,
    )


# ---------------------------------------------------------------------------------------
# every fault kind, every run


Step = Callable[["ConvergenceMachine"], object]


def _play(cache: CacheMode, steps: Iterable[Step], *, in_order: bool) -> ConvergenceMachine:
    machine = ConvergenceMachine(cache, in_order=in_order)
    try:
        for step in steps:
            step(machine)
    finally:
        machine.teardown()
    return machine


def _watch_fault_round(kind: str) -> list[Step]:
    return [
        lambda m: m.watch_fault(kind, 1),
        lambda m: m.update("ns-0", "a"),
        lambda m: m.relabel("ns-1", "c", "web" if kind != "stall" else "db"),
        lambda m: m.converge_now(),
    ]


@pytest.mark.parametrize("in_order", [False, True], ids=["coalescing", "in-order"])
def test_every_fault_kind_is_survived_with_exact_convergence(
    cache: CacheMode, in_order: bool
) -> None:
    steps: list[Step] = [
        lambda m: m.create("ns-0", "c", "web"),
        lambda m: m.create("ns-1", "c", "db"),
    ]
    for kind in WATCH_FAULTS:
        steps += _watch_fault_round(kind)
    steps += [
        lambda m: m.compaction_410(),
        lambda m: m.delete("ns-0", "a"),
        lambda m: m.converge_now(),
        lambda m: m.error_burst(429, 3, "watch"),
        lambda m: m.error_burst(500, 3, "list"),
        lambda m: m.error_burst(503, 2, None),
        lambda m: m.create("ns-2", "f", "web"),
        lambda m: m.add_handler_while_running(2),
        lambda m: m.converge_now(),
        lambda m: m.latency(0.005),
        lambda m: m.delete_and_recreate("ns-1", "c", "web"),
        lambda m: m.refuse_connections_for_a_while(0.02),
        lambda m: m.namespace_disappears("ns-1"),
        lambda m: m.converge_now(),
        lambda m: m.restart(True),
        lambda m: m.namespace_appears("ns-2"),
        lambda m: m.restart(False),
        lambda m: m.relabel("ns-2", "a", "db"),
    ]
    machine = _play(cache, steps, in_order=in_order)
    logged = {record.kind for record in machine.world.server.faults.log}
    assert {
        "drop_watch",
        "close_mid_line",
        "garbage_line",
        "stall_watch",
        "fail",
        "latency",
        "refuse_connections",
        "restart",
    } <= logged
