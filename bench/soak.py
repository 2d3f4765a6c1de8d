"""``python -m bench.soak``: a chaos soak of one informer under heavy churn and faults.

Role: the long-running counterpart of ``tests/e2e/test_convergence_properties.py`` (not run by
CI). One process holds a :class:`~aioinformer.testing.FakeAPIServer` with ``--objects``
pods and an informer (real client, reflector, DeltaFIFO, indexer, two handlers) watching
them, while a writer churns at ``--rate`` writes per second (creates, updates, label
changes, deletes, keeping the population near ``--objects``) and a fault is injected every
``--fault-interval`` seconds, drawn from everything the fake server can do: watch dropped
cleanly or abruptly, cut mid-line, garbage line, stalled stream, 410 after compaction,
bursts of 429/500/503, latency, connections refused for a while, restarts with and
without a history reset.

Every ``--check-interval`` seconds the soak pauses writes and faults, waits for the
informer to be live again (synced, WATCHING at the server's resourceVersion, nothing
queued) and checks that the cache and the handler's replayed events both equal the
server's objects exactly. It then prints one line: convergence and how long it took,
cache size, events per second, RSS (after a full collection), open sockets, asyncio
tasks and faults injected. RSS should be flat once warm, sockets and tasks should not
grow; the summary at the end says whether they did. Exit status 1 when a check failed.

The informer runs with the library's defaults (0.8-30 s backoff) except for the client's
watch inactivity deadline (``--watch-silence``, 10 s): the default, 120 s, would let one
stalled stream outlast a check. The server sends bookmarks every second (not every 60 s,
kube-apiserver's cadence and the fake's default) to keep quiet watches inside that.

Example::

    python -m bench.soak --minutes 10 --objects 10000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aioinformer.client import Client
from aioinformer.config import Config
from aioinformer.errors import NotFound
from aioinformer.factory import SharedInformerFactory
from aioinformer.indexer import meta_namespace_key
from aioinformer.models import DeletedFinalStateUnknown
from aioinformer.reflector import ReflectorState
from aioinformer.testing.apiserver import ADMIN_TOKEN, FakeAPIServer
from bench.measure import settled_rss

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from aioinformer.informer import SharedIndexInformer

__all__ = ["SoakOptions", "main", "soak"]

NAMESPACES = tuple(f"team-{i}" for i in range(20))
TIERS = ("web", "db", "cache", "batch")


@dataclass(frozen=True, slots=True)
class SoakOptions:
    """What one soak run does; see ``--help`` for each field."""

    minutes: float = 10.0
    objects: int = 10_000
    rate: float = 500.0
    fault_interval: float = 3.0
    check_interval: float = 60.0
    check_timeout: float = 120.0
    watch_silence: float = 10.0
    seed: int = 0


@dataclass(slots=True)
class Replay:
    """A handler replaying every notification into ``state``; counts them."""

    state: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by every notification."""

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.state[meta_namespace_key(obj)] = obj
        self.events += 1
        self.changed.set()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.state[meta_namespace_key(new)] = new
        self.events += 1
        self.changed.set()

    def on_delete(self, obj: Any) -> None:
        key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else meta_namespace_key(obj)
        self.state.pop(key, None)
        self.events += 1
        self.changed.set()


@dataclass(slots=True)
class Sample:
    """One check's figures."""

    minute: float
    converged: bool
    converge_seconds: float
    cache_size: int
    events_per_second: float
    rss_mib: float
    sockets: int
    tasks: int
    watches: int
    faults: int
    detail: str = ""


def open_sockets() -> int:
    """Sockets this process holds open (both the server's and the client's ends)."""
    count = 0
    with contextlib.suppress(OSError):
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                    count += 1
    return count


def _pod(namespace: str, name: str, tier: str, serial: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": name.rsplit("-", 1)[0], "tier": tier},
            "annotations": {"soak/serial": str(serial)},
        },
        "spec": {
            "nodeName": f"node-{serial % 50}",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/app:1.0",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    "env": [{"name": f"VAR_{i}", "value": "x" * 16} for i in range(4)],
                }
            ],
        },
        "status": {"phase": "Running", "podIP": f"10.0.{serial % 256}.{serial % 199}"},
    }


class Soak:
    """One run: the server, the informer, the writer, the fault injector, the checks."""

    def __init__(self, options: SoakOptions) -> None:
        self.options = options
        self.rng = random.Random(options.seed)
        self.server = FakeAPIServer(bookmark_interval=1.0)
        for namespace in NAMESPACES:
            self.server.create_namespace(namespace)
        self.keys: list[tuple[str, str]] = []
        self.key_index: dict[tuple[str, str], int] = {}
        self.serial = 0
        self.writes = 0
        self.paused = asyncio.Event()
        self.fault_counts: Counter[str] = Counter()
        self.samples: list[Sample] = []
        self.replay: Replay = Replay()
        self.informer: SharedIndexInformer | None = None

    # -- population ------------------------------------------------------------------

    def _remember(self, key: tuple[str, str]) -> None:
        self.key_index[key] = len(self.keys)
        self.keys.append(key)

    def _forget(self, key: tuple[str, str]) -> None:
        i = self.key_index.pop(key)
        last = self.keys.pop()
        if i < len(self.keys):
            self.keys[i] = last
            self.key_index[last] = i

    def create_one(self) -> None:
        self.serial += 1
        namespace = self.rng.choice(NAMESPACES)
        name = f"app{self.serial % 97}-{self.serial}"
        self.server.create(_pod(namespace, name, self.rng.choice(TIERS), self.serial))
        self._remember((namespace, name))

    def write_one(self) -> None:
        """One random write, keeping the population near ``objects``."""
        self.writes += 1
        target = self.options.objects
        roll = self.rng.random()
        if not self.keys or (roll < 0.2 and len(self.keys) < target * 1.05):
            self.create_one()
            return
        namespace, name = self.rng.choice(self.keys)
        try:
            if roll < 0.4 and len(self.keys) > target * 0.95:
                self.server.delete("pods", namespace, name)
                self._forget((namespace, name))
            elif roll < 0.55:
                tier = self.rng.choice(TIERS)
                self.server.patch("pods", namespace, name, {"metadata": {"labels": {"tier": tier}}})
            else:
                self.serial += 1
                self.server.patch(
                    "pods",
                    namespace,
                    name,
                    {
                        "status": {"phase": self.rng.choice(["Running", "Pending", "Succeeded"])},
                        "metadata": {"annotations": {"soak/serial": str(self.serial)}},
                    },
                )
        except NotFound:
            self._forget((namespace, name))

    async def writer(self) -> None:
        tick = 0.01
        per_tick = self.options.rate * tick
        owed = 0.0
        while True:
            await self.paused.wait()
            owed += per_tick
            while owed >= 1:
                self.write_one()
                owed -= 1
            await asyncio.sleep(tick)

    # -- faults ----------------------------------------------------------------------

    async def kick(self, *, relist: bool = False) -> None:
        await self.server.faults.refuse_connections()
        if relist:
            self.create_one()
            self.server.compact()
        await self.server.faults.accept_connections()

    def fault_menu(self) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
        faults = self.server.faults
        rng = self.rng

        async def armed(arm: Callable[[], None], *, relist: bool = False) -> None:
            arm()
            await self.kick(relist=relist)

        async def refuse() -> None:
            await faults.refuse_connections()
            await asyncio.sleep(rng.uniform(0.5, 3.0))
            await faults.accept_connections()

        async def latency() -> None:
            faults.latency(rng.uniform(0.01, 0.2))
            await asyncio.sleep(rng.uniform(1.0, 3.0))
            faults.latency(0.0)

        return [
            ("drop", lambda: armed(lambda: faults.drop_watch_after(rng.randint(0, 50)))),
            (
                "drop_abrupt",
                lambda: armed(lambda: faults.drop_watch_after(rng.randint(0, 50), abrupt=True)),
            ),
            ("close_mid_line", lambda: armed(lambda: faults.close_mid_line(rng.randint(0, 50)))),
            ("garbage_line", lambda: armed(lambda: faults.garbage_line(rng.randint(0, 50)))),
            ("stall", lambda: armed(lambda: faults.stall_watch(rng.randint(0, 50)))),
            ("compaction_410", lambda: self.kick(relist=True)),
            (
                "429_burst",
                lambda: armed(
                    lambda: faults.fail_next(rng.randint(1, 5), status=429, retry_after=1)
                ),
            ),
            (
                "500_burst",
                lambda: armed(
                    lambda: faults.fail_next(rng.randint(1, 5), status=500, retry_after=None),
                    relist=True,
                ),
            ),
            (
                "503_burst",
                lambda: armed(
                    lambda: faults.fail_next(rng.randint(1, 3), status=503, retry_after=None)
                ),
            ),
            ("latency", latency),
            ("refuse_connections", refuse),
            ("restart_reset", lambda: self.server.restart(reset_history=True)),
            ("restart_keep", lambda: self.server.restart(reset_history=False)),
        ]

    async def injector(self) -> None:
        menu = self.fault_menu()
        while True:
            await self.paused.wait()
            await asyncio.sleep(self.rng.uniform(0.5, 1.5) * self.options.fault_interval)
            if not self.paused.is_set():
                continue
            name, inject = self.rng.choice(menu)
            self.fault_counts[name] += 1
            await inject()

    # -- checks ----------------------------------------------------------------------

    def truth(self) -> dict[str, dict[str, Any]]:
        return {meta_namespace_key(o): o for o in self.server.objects("pods")}

    def live(self) -> bool:
        informer = self.informer
        assert informer is not None
        stats = informer.statistics()
        reflector = stats.reflector
        return (
            stats.synced
            and reflector is not None
            and reflector.state is ReflectorState.WATCHING
            and int(reflector.last_resource_version or 0) >= int(self.server.resource_version)
            and stats.fifo_pending == 0
            and not any(h.pending for h in stats.handlers)
        )

    async def check(self, started: float, events_before: int, since: float) -> Sample:
        """Pause the chaos, wait until live, compare with the server, resume."""
        informer = self.informer
        assert informer is not None
        self.paused.clear()
        self.server.faults.clear()
        await self.server.faults.accept_connections()
        begin = time.monotonic()
        deadline = begin + self.options.check_timeout
        while not self.live() and time.monotonic() < deadline:
            # Notifications wake the check; bookmarks and state changes do not, hence
            # the 50 ms ceiling.
            self.replay.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.05):
                    await self.replay.changed.wait()
        converge_seconds = time.monotonic() - begin
        truth = self.truth()
        cache = {meta_namespace_key(o): o for o in informer.indexer.list()}
        problems = []
        if not self.live():
            problems.append(f"not live: {informer.statistics().reflector}")
        if cache != truth:
            problems.append(f"cache: {_difference(cache, truth)}")
        if self.replay.state != truth:
            problems.append(f"handler replay: {_difference(self.replay.state, truth)}")
        now = time.monotonic()
        sample = Sample(
            minute=(now - started) / 60,
            converged=not problems,
            converge_seconds=converge_seconds,
            cache_size=len(cache),
            events_per_second=(self.replay.events - events_before) / max(1e-9, begin - since),
            rss_mib=settled_rss() / 2**20,
            sockets=open_sockets(),
            tasks=len(asyncio.all_tasks()),
            watches=self.server.watch_count,
            faults=sum(self.fault_counts.values()),
            detail="; ".join(problems),
        )
        self.paused.set()
        return sample

    # -- the run ---------------------------------------------------------------------

    async def run(self) -> list[Sample]:
        options = self.options
        async with self.server:
            for _ in range(options.objects):
                self.create_one()
            client = Client(
                Config(host=self.server.url, token=ADMIN_TOKEN),
                watch_inactivity_timeout=options.watch_silence,
            )
            async with client:
                factory = SharedInformerFactory(client)
                informer = self.informer = factory.informer_for("pods")
                informer.add_event_handler(self.replay, name="replay")
                counted = Counter[str]()
                informer.add_event_handler(
                    on_add=lambda o, _i: counted.update(("add",)),
                    on_update=lambda _o, _n: counted.update(("update",)),
                    on_delete=lambda _o: counted.update(("delete",)),
                    name="counter",
                )
                async with factory:
                    t0 = time.monotonic()
                    synced = await informer.wait_for_sync(timeout=options.check_timeout)
                    _out(
                        f"initial sync of {options.objects} pods: "
                        f"{time.monotonic() - t0:.2f}s (synced={synced})"
                    )
                    _out(_HEADER)
                    self.paused.set()
                    async with asyncio.TaskGroup() as tg:
                        chaos = [tg.create_task(self.writer()), tg.create_task(self.injector())]
                        started = since = time.monotonic()
                        end = started + options.minutes * 60
                        events_before = self.replay.events
                        try:
                            while time.monotonic() < end:
                                await asyncio.sleep(
                                    min(options.check_interval, end - time.monotonic())
                                )
                                sample = await self.check(started, events_before, since)
                                self.samples.append(sample)
                                _out(_row(sample))
                                since = time.monotonic()
                                events_before = self.replay.events
                        finally:
                            for task in chaos:
                                task.cancel()
        return self.samples


def _difference(actual: dict[str, Any], expected: dict[str, Any]) -> str:
    missing = len(expected.keys() - actual.keys())
    extra = len(actual.keys() - expected.keys())
    stale = sum(1 for k in expected.keys() & actual.keys() if actual[k] != expected[k])
    return f"{missing} missing, {extra} extra, {stale} stale"


_HEADER = (
    f"{'min':>5} {'ok':>3} {'conv s':>7} {'cache':>6} {'ev/s':>7} {'RSS MiB':>8} "
    f"{'sockets':>7} {'tasks':>5} {'watches':>7} {'faults':>6}"
)


def _row(s: Sample) -> str:
    row = (
        f"{s.minute:5.1f} {'yes' if s.converged else 'NO':>3} {s.converge_seconds:7.2f} "
        f"{s.cache_size:6d} {s.events_per_second:7.0f} {s.rss_mib:8.1f} {s.sockets:7d} "
        f"{s.tasks:5d} {s.watches:7d} {s.faults:6d}"
    )
    return f"{row}  {s.detail}" if s.detail else row


def _out(line: str) -> None:
    print(line, flush=True)


def summarize(samples: Sequence[Sample], fault_counts: Counter[str]) -> bool:
    """Print the verdict; return whether the run passed."""
    if not samples:
        _out("no checks ran (run longer than --check-interval)")
        return False
    warm = samples[1:] or samples
    rss = [s.rss_mib for s in warm]
    sockets = [s.sockets for s in samples]
    tasks = [s.tasks for s in samples]
    failed = [s for s in samples if not s.converged]
    _out("")
    _out(f"checks: {len(samples)}, converged: {len(samples) - len(failed)}")
    _out(
        f"RSS once warm: {min(rss):.1f}-{max(rss):.1f} MiB "
        f"(first {rss[0]:.1f}, last {rss[-1]:.1f}, growth {rss[-1] - rss[0]:+.1f})"
    )
    _out(f"sockets: {min(sockets)}-{max(sockets)}, tasks: {min(tasks)}-{max(tasks)}")
    _out("faults: " + ", ".join(f"{k}={v}" for k, v in sorted(fault_counts.items())))
    return not failed


def parse_args(argv: Sequence[str] | None = None) -> SoakOptions:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    defaults = SoakOptions()
    parser.add_argument("--minutes", type=float, default=defaults.minutes, help="run time")
    parser.add_argument("--objects", type=int, default=defaults.objects, help="pod population")
    parser.add_argument("--rate", type=float, default=defaults.rate, help="writes per second")
    parser.add_argument(
        "--fault-interval",
        type=float,
        default=defaults.fault_interval,
        help="mean seconds between faults",
    )
    parser.add_argument(
        "--check-interval",
        type=float,
        default=defaults.check_interval,
        help="seconds between checks",
    )
    parser.add_argument(
        "--check-timeout", type=float, default=defaults.check_timeout, help="convergence deadline"
    )
    parser.add_argument(
        "--watch-silence", type=float, default=defaults.watch_silence, help="client watch deadline"
    )
    parser.add_argument("--seed", type=int, default=defaults.seed)
    # One option per field, each stored under the field's name.
    return SoakOptions(**vars(parser.parse_args(argv)))


async def soak(options: SoakOptions) -> bool:
    """Run one soak; print a line per check and the summary; return whether it passed."""
    run = Soak(options)
    samples = await run.run()
    gc.collect()
    return summarize(samples, run.fault_counts)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    _out(f"soak: {options}")
    return 0 if asyncio.run(soak(options)) else 1


if __name__ == "__main__":
    sys.exit(main())
