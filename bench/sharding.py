"""The sharding scenario: one replica against three shards on the same ConfigMaps and the
same churn, then one shard killed.

Role: measures what ``Manager(shard=ShardRing(...))`` promises: each of N
shards costs about 1/N of one unsharded replica, in CPU and in cache memory, and a dead
shard's objects are owned and reconciled elsewhere soon after its Lease expires.
Input: the scenario's params (``objects``, ``rate`` and ``seconds`` of the churn,
``lease_duration``, ``startup_grace``, ``history``, ``failover_timeout``) and a variant:
``singleton``, ``sharded-3`` (label mode) or ``sharded-3-ranges`` (range mode). Output:
flat ``{metric: value}`` figures (see :data:`PROCESS_FIGURES` and :data:`FAILOVER_FIGURES`).

Processes, so that each one's CPU and RSS are its own (read from ``/proc/PID``):

* ``server``: a :class:`~aioinformer.testing.FakeAPIServer` holding ``objects`` ConfigMaps
  (about 1 KiB each, over 50 namespaces), and the shard Leases and the sharder's Lease
  held by their replicas, with ``startup_grace`` seconds of validity: the state a running
  ring leaves behind, so the run measures the ring at work, not its first assignment of
  every object. For ``singleton`` and ``sharded-3`` the ConfigMaps start labelled as the
  sharder labels them for the ring of :data:`IDENTITIES` (the same objects, labels
  included). For ``sharded-3-ranges`` the server applies shard selectors (the
  ``ShardedListAndWatch`` gate), no ConfigMap is labelled, and each shard Lease's slots
  annotation lists the slots a settled ring of :data:`IDENTITIES` gives its shard
  (``slot_owner(slot, IDENTITIES)`` for each of :data:`SLOTS`). On ``churn`` the
  server rewrites one ConfigMap's data at a time, round-robin, at ``rate`` per second for
  ``seconds`` (merge patches: labels are kept), each write at its own time as independent
  writers' changes reach a real server: a replica's CPU follows the number of times it
  wakes up for events as much as the number of events, so writes bunched into ticks
  would flatter the replica that gets them all.
* ``replica`` (one for ``singleton``, one per identity for the sharded variants): a
  :class:`~aioinformer.operator.Manager` with one controller watching ConfigMaps through
  ``manager.informer_for`` (so a shard's informer watches its own objects only). Its
  reconcile reads the object from the lister and writes nothing: the figures are the
  cache's and the events' cost, not writes'. The singleton's Manager has no ``shard=``;
  each shard's has ``shard=ShardRing(...)`` with ``lease_duration`` (renew deadline and
  retry period at 2/3 and 1/6 of it), ``mode="labels"`` for ``sharded-3`` and
  ``mode="ranges", slots=SLOTS`` for ``sharded-3-ranges``. A replica says it is ready
  once its controller has reconciled as many keys as its cache holds (in range mode, once
  it serves every slot it should hold, too).

The measuring side (the worker) starts them, waits until every replica is ready, runs
the churn, then reads each replica's CPU (utime + stime: from its start to the end of
the churn, and over the churn alone), its peak RSS (VmHWM), its RSS growth from just
before its Manager was built to the end of the churn after a full collection (the
cache's share of memory, with the watch and queue state beside it: the interpreter and
imports are left out) and the objects in its cache. A sharded variant then sends SIGKILL
to a shard that does not run the sharder, and measures the seconds until each of its keys
was reconciled by a survivor (each survivor records when it first reconciled each key it
was told to follow; CLOCK_MONOTONIC is shared by every process on Linux), and until the
keys, or the slots, moved: in label mode until every key carries a surviving shard's
label (a watch of the ConfigMaps from just before the kill), in range mode until the
survivors' shard Leases list every slot the killed shard's Lease listed (a watch of the
Leases from just before the kill; a survivor lists a slot once it claims it, and serves
it once the claim held).

Figures: the singleton reports each :data:`PROCESS_FIGURES` name; a sharded variant
reports them per shard as ``<identity>.<name>`` and, under the plain name, the largest
over its shards (the busiest shard, which the targets judge against the singleton), plus
``<identity>.sharder`` (1 for the shard running the sharder) and the
:data:`FAILOVER_FIGURES` of its mode.

Task model: each child runs one event loop (the replica's Manager in ``async with``); the
measuring side is one coroutine that closes every child before it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from bench.children import Child, serve, start_all
from bench.measure import settled_rss
from bench.objects import make_configmap

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine, Sequence

    from aioinformer.operator import ShardRing

__all__ = [
    "FAILOVER_FIGURES",
    "IDENTITIES",
    "PROCESS_FIGURES",
    "RING",
    "SLOTS",
    "VARIANTS",
    "failover_figures_of",
    "main",
    "mode_of",
    "processes_of",
    "settled_slots",
    "sharding_case",
]

VARIANTS: Final = ("singleton", "sharded-3", "sharded-3-ranges")
"""One unsharded replica (the reference), three shards in label mode, three in range
mode."""
IDENTITIES: Final = ("shard-a", "shard-b", "shard-c")
"""The shards of the sharded variants; the first starts holding the sharder's Lease."""
RING: Final = "bench"
SLOTS: Final = 64
"""The slots of the hash space in range mode."""
_LEASE_NAMESPACE: Final = "default"

PROCESS_FIGURES: Final = (
    "cpu_s",
    "startup_cpu_s",
    "churn_cpu_s",
    "peak_rss_mib",
    "rss_mib",
    "cache_mib",
    "cached_objects",
    "reconciles",
)
"""What each replica process reports: CPU seconds from its start to the end of the churn,
of which its start-up (the interpreter and the imports, before any connection), and
over the churn alone; peak and final RSS; RSS growth from before its Manager was built
(after a full collection); the objects in its cache; reconciles run."""
FAILOVER_FIGURES: Final = (
    "failover_s",
    "failover_slots_s",
    "failover_reconciled_s",
    "lost_keys",
    "lost_slots",
    "lease_duration_s",
)
"""What a sharded variant reports of the killed shard: seconds from the SIGKILL until
each of its keys carries a surviving shard's label (``failover_s``, label mode) or until
the survivors' Leases list each of its slots (``failover_slots_s``, range mode), and
until each key was reconciled by a survivor; how many keys it held (and, in range mode,
slots); the Lease duration the ring ran with. Each variant reports those of its mode:
see :func:`failover_figures_of`."""

_MODULE: Final = "bench.sharding"
_TOKEN: Final = "bench-sharding"
"""The bearer token the server accepts (with full rights) and every client sends."""
_POLL: Final = 0.02
_MIB: Final = 1024 * 1024


def processes_of(variant: str) -> tuple[str, ...]:
    """The replica processes of ``variant`` by name: ``("singleton",)`` or the shards'
    identities; :class:`ValueError` for another name."""
    if variant == "singleton":
        return ("singleton",)
    if variant in VARIANTS:
        return IDENTITIES
    raise ValueError(f"not a sharding variant ({', '.join(VARIANTS)}): {variant!r}")


def mode_of(variant: str) -> str | None:
    """The ring mode of ``variant``: ``None`` for the singleton, ``"labels"`` or
    ``"ranges"``; :class:`ValueError` for another name."""
    processes_of(variant)
    if variant == "singleton":
        return None
    return "ranges" if variant.endswith("-ranges") else "labels"


def failover_figures_of(variant: str) -> tuple[str, ...]:
    """The :data:`FAILOVER_FIGURES` ``variant`` reports (none for the singleton)."""
    mode = mode_of(variant)
    if mode is None:
        return ()
    unused = {"failover_slots_s", "lost_slots"} if mode == "labels" else {"failover_s"}
    return tuple(name for name in FAILOVER_FIGURES if name not in unused)


# --- the children -----------------------------------------------------------------------


def _micro_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lease(
    name: str,
    holder: str,
    seconds: int,
    labels: dict[str, str],
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    stamp = _micro_time(datetime.now(UTC))
    meta: dict[str, Any] = {"name": name, "namespace": _LEASE_NAMESPACE, "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": seconds,
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": 0,
        },
    }


def _ring(identity: str, lease_duration: float, mode: str = "labels") -> ShardRing:
    """The ``ShardRing`` of shard ``identity`` in ``mode`` (``"labels"``, or ``"ranges"``
    over :data:`SLOTS` slots): the renew deadline and retry period at 2/3 and 1/6 of
    ``lease_duration``."""
    from aioinformer.operator import ShardedResource, ShardRing

    return ShardRing(
        name=RING,
        namespace=_LEASE_NAMESPACE,
        resources=(ShardedResource("configmaps"),),
        identity=identity,
        lease_duration=lease_duration,
        renew_deadline=lease_duration * 2 / 3,
        retry_period=lease_duration / 6,
        mode="ranges" if mode == "ranges" else "labels",
        slots=SLOTS,
    )


def settled_slots(identity: str) -> frozenset[int]:
    """The slots a settled ring of :data:`IDENTITIES` gives ``identity`` in range mode."""
    from aioinformer.operator.sharding import slot_owner

    members = sorted(IDENTITIES)
    return frozenset(slot for slot in range(SLOTS) if slot_owner(slot, members) == identity)


def _seed(server: Any, objects: int, grace: int, mode: str = "labels") -> list[tuple[str, str]]:
    """Store the ConfigMaps (labelled for the ring in label mode) and its Leases held
    (listing their slots in range mode; see the module notes); return each ConfigMap's
    (namespace, name)."""
    from aioinformer.operator.sharding import (
        SLOTS_ANNOTATION,
        format_slots,
        object_hash_key,
        rendezvous,
    )

    ring = _ring(IDENTITIES[0], float(grace), mode)
    ranges = mode == "ranges"
    keys = []
    for index in range(objects):
        config_map = {"apiVersion": "v1", "kind": "ConfigMap", **make_configmap(index)}
        meta = config_map["metadata"]
        for field in ("resourceVersion", "uid", "creationTimestamp"):
            del meta[field]
        if not ranges:
            key = object_hash_key("", "ConfigMap", meta["namespace"], meta["name"])
            meta["labels"][ring.shard_label] = rendezvous(key, IDENTITIES)
        server.create(config_map)
        keys.append((meta["namespace"], meta["name"]))
    for identity in IDENTITIES:
        annotations = {SLOTS_ANNOTATION: format_slots(settled_slots(identity))} if ranges else None
        server.create(_lease(identity, identity, grace, ring.lease_labels, annotations))
    server.create(_lease(ring.sharder_lease, IDENTITIES[0], grace, {}))
    return keys


def _held(server: Any, mode: str) -> dict[str, int]:
    """How many of the seeded ConfigMaps each shard holds in range mode (by the slot of
    each one's uid, which the server chose); none in label mode."""
    if mode != "ranges":
        return {}
    ring = _ring(IDENTITIES[0], 3.0, mode)
    owner_of_slot = {slot: identity for identity in IDENTITIES for slot in settled_slots(identity)}
    held = dict.fromkeys(IDENTITIES, 0)
    for config_map in server.objects("configmaps"):
        held[owner_of_slot[ring.slot_of(config_map)]] += 1
    return held


async def _server(config: dict[str, Any]) -> None:
    from aioinformer.testing.apiserver import FakeAPIServer

    mode = config["mode"]
    gates = {"ShardedListAndWatch": True} if mode == "ranges" else None
    async with FakeAPIServer(
        require_namespaces=False, history_size=config["history"], feature_gates=gates
    ) as server:
        server.add_token(_TOKEN)
        keys = _seed(server, config["objects"], config["startup_grace"], mode)
        held = _held(server, mode)

        async def churn(command: dict[str, Any]) -> dict[str, Any]:
            """Rewrite one ConfigMap's data at a time, ``rate`` per second for ``seconds``,
            each write at its own time."""
            rate, seconds = float(command["rate"]), float(command["seconds"])
            total = int(rate * seconds)
            started = time.monotonic()
            for written in range(total):
                delay = started + written / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                namespace, name = keys[written % len(keys)]
                server.patch("configmaps", namespace, name, {"data": {"REVISION": str(written)}})
            return {"written": total, "seconds": time.monotonic() - started}

        await serve({"url": server.url, "held": held}, {"churn": churn})


class _Followed:
    """Keys a replica was told to follow, and when it first reconciled each since."""

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.first: dict[str, float] = {}
        self._told = 0
        self._order: list[str] = []

    def reconciled(self, key: str) -> None:
        if key in self.keys and key not in self.first:
            self.first[key] = time.monotonic()
            self._order.append(key)

    def news(self) -> dict[str, float]:
        """The first reconciles recorded since the last call."""
        fresh = self._order[self._told :]
        self._told = len(self._order)
        return {key: self.first[key] for key in fresh}


async def _replica(config: dict[str, Any]) -> None:
    from aioinformer.client import Client
    from aioinformer.config import Config
    from aioinformer.indexer import split_meta_namespace_key
    from aioinformer.operator import Controller, Manager

    # The interpreter and the imports: every replica process pays this once.
    startup_cpu = time.process_time()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    base_rss = settled_rss()
    identity: str | None = config["identity"]
    mode = config["mode"]
    ring = None if identity is None else _ring(identity, float(config["lease_duration"]), mode)
    # In range mode the informer first lists no slot and moves to the shard's slots once
    # its claims held (a relist): ready once the cache holds the shard's objects.
    expected = int(config["expected"]) if mode == "ranges" else 0
    followed = _Followed()
    reconciles = [0]
    caught_up = asyncio.Event()
    async with Client(Config(host=config["url"], token=_TOKEN)) as client:
        manager = Manager(client, shard=ring, cache_sync_timeout=float(config["sync_timeout"]))
        config_maps = manager.informer_for("configmaps")
        lister = config_maps.lister()

        def reconcile(key: str) -> None:
            reconciles[0] += 1
            namespace, name = split_meta_namespace_key(key)
            lister.get(name, namespace=namespace)  # read as a reconcile does; write nothing
            followed.reconciled(key)
            cached = len(config_maps.indexer)
            if reconciles[0] >= cached >= expected:
                caught_up.set()

        manager.add(Controller("bench", reconcile, informers=[config_maps]))
        async with manager:
            await (manager.sharding if ring is not None else manager.elected).wait()
            await caught_up.wait()  # every key the cache holds has been reconciled

            async def stats(_command: dict[str, Any]) -> dict[str, Any]:
                _dump_profile(identity or "singleton", mode)
                return {
                    "cached_objects": len(config_maps.indexer),
                    "reconciles": reconciles[0],
                    "sharder": manager.sharder is not None,
                    "cache_mib": (settled_rss() - base_rss) / _MIB,
                }

            async def follow(command: dict[str, Any]) -> dict[str, Any]:
                followed.keys.update(command["keys"])
                return {}

            async def reconciled(_command: dict[str, Any]) -> dict[str, Any]:
                return {"first": followed.news()}

            await serve(
                {"startup_cpu_s": startup_cpu},
                {"stats": stats, "follow": follow, "reconciled": reconciled},
            )


_ROLES: Final[dict[str, Callable[[dict[str, Any]], Coroutine[Any, Any, None]]]] = {
    "server": _server,
    "replica": _replica,
}


_PROFILER: list[Any] = []
"""The child's profiler while ``BENCH_SHARDING_PROFILE`` names a folder (else empty)."""


def _dump_profile(name: str, mode: str) -> None:
    """Write the child's profile so far to ``$BENCH_SHARDING_PROFILE/<mode>-<name>.prof``."""
    if _PROFILER:
        import os

        profiler = _PROFILER.pop()
        profiler.disable()
        profiler.dump_stats(
            os.path.join(os.environ["BENCH_SHARDING_PROFILE"], f"{mode}-{name}.prof")
        )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.sharding ROLE '<json config>'``: run one child until stdin closes
    (a replica under cProfile while ``BENCH_SHARDING_PROFILE`` names a folder)."""
    import os

    import orjson

    args = sys.argv[1:] if argv is None else argv
    if args[0] == "replica" and os.environ.get("BENCH_SHARDING_PROFILE"):
        import cProfile

        _PROFILER.append(cProfile.Profile())
        _PROFILER[0].enable()
    asyncio.run(_ROLES[args[0]](orjson.loads(args[1])))
    return 0


# --- the measuring side -----------------------------------------------------------------


async def sharding_case(_url: str, params: dict[str, Any], *, variant: str) -> dict[str, float]:
    """Run one sharding variant (see :data:`VARIANTS` and the module notes)."""
    names = processes_of(variant)
    mode = mode_of(variant) or "labels"
    async with contextlib.AsyncExitStack() as stack:
        server = await Child.start(
            _MODULE,
            "server",
            {
                "objects": params["objects"],
                "history": params["history"],
                "startup_grace": params["startup_grace"],
                "mode": mode,
            },
        )
        stack.push_async_callback(server.close)
        url = server.ready["url"]
        held = server.ready["held"]
        replicas = await start_all(
            stack,
            _MODULE,
            "replica",
            (
                {
                    "url": url,
                    "identity": None if name == "singleton" else name,
                    "mode": mode,
                    "expected": held.get(name, 0),
                    "lease_duration": params["lease_duration"],
                    "sync_timeout": params["startup_grace"],
                }
                for name in names
            ),
        )
        before = [child.cpu_seconds() for child in replicas]
        churned = await server.ask(op="churn", rate=params["rate"], seconds=params["seconds"])
        cpu = [child.cpu_seconds() for child in replicas]
        rss = [child.rss_mib() for child in replicas]
        stats = [await child.ask(op="stats") for child in replicas]
        per_process = {
            name: {
                "cpu_s": cpu[i],
                "startup_cpu_s": float(replicas[i].ready["startup_cpu_s"]),
                "churn_cpu_s": cpu[i] - before[i],
                "rss_mib": rss[i][0],
                "peak_rss_mib": rss[i][1],
                "cache_mib": float(stats[i]["cache_mib"]),
                "cached_objects": float(stats[i]["cached_objects"]),
                "reconciles": float(stats[i]["reconciles"]),
            }
            for i, name in enumerate(names)
        }
        figures = _process_figures(per_process, variant)
        figures["churn_events"] = float(churned["written"])
        figures["churn_rate"] = churned["written"] / max(churned["seconds"], 1e-9)
        if variant != "singleton":
            for name, stat in zip(names, stats, strict=True):
                figures[f"{name}.sharder"] = 1.0 if stat["sharder"] else 0.0
            victim = max(i for i, stat in enumerate(stats) if not stat["sharder"])
            failover = _failover_ranges if mode == "ranges" else _failover
            figures.update(
                await failover(
                    url,
                    dict(zip(names, replicas, strict=True)),
                    names[victim],
                    params,
                )
            )
    return figures


def _process_figures(per_process: dict[str, dict[str, float]], variant: str) -> dict[str, float]:
    """The singleton's figures as they are; each shard's under ``<identity>.<name>``, and
    the busiest shard's (the largest value of each) under the plain name."""
    if variant == "singleton":
        return dict(per_process["singleton"])
    figures = {
        f"{name}.{figure}": value
        for name, measured in per_process.items()
        for figure, value in measured.items()
    }
    for figure in PROCESS_FIGURES:
        figures[figure] = max(measured[figure] for measured in per_process.values())
    return figures


async def _failover(
    url: str, replicas: dict[str, Child], victim: str, params: dict[str, Any]
) -> dict[str, float]:
    """Kill ``victim`` and time its keys' move to the survivors (see the module notes)."""
    from aioinformer.client import Client
    from aioinformer.config import Config
    from aioinformer.listwatch import ListOptions
    from aioinformer.operator.sharding import shard_label

    label = shard_label(RING)
    survivors = {name: child for name, child in replicas.items() if name != victim}
    async with Client(Config(host=url, token=_TOKEN)) as client:
        api = client.resource("configmaps")
        page = await api.list(ListOptions(label_selector=f"{label}={victim}"))
        lost = {f"{obj['metadata']['namespace']}/{obj['metadata']['name']}" for obj in page.items}
        if not lost:
            raise RuntimeError(f"shard {victim} holds no ConfigMap: nothing to fail over")

        async def moved() -> float:
            """When the last lost key was seen with a survivor's label."""
            pending = set(lost)
            options = ListOptions(resource_version=page.resource_version)
            async with contextlib.aclosing(api.watch(options)) as events:
                async for event in events:
                    meta = event.object.get("metadata", {}) if event.type != "BOOKMARK" else {}
                    key = f"{meta.get('namespace')}/{meta.get('name')}"
                    if key in pending and (meta.get("labels") or {}).get(label) in survivors:
                        pending.discard(key)
                        if not pending:
                            return time.monotonic()
            raise RuntimeError("the watch ended before every lost key moved")

        moved_s, reconciled_s = await _kill_and_time(
            replicas[victim], survivors, lost, moved, params["failover_timeout"]
        )
    return {
        "failover_s": moved_s,
        "failover_reconciled_s": reconciled_s,
        "lost_keys": float(len(lost)),
        "lease_duration_s": float(params["lease_duration"]),
    }


async def _kill_and_time(
    victim: Child,
    survivors: dict[str, Child],
    lost: set[str],
    moved: Callable[[], Awaitable[float]],
    timeout: float,
) -> tuple[float, float]:
    """Have ``survivors`` follow ``lost``, kill ``victim``, and give the seconds from the
    kill until ``moved()`` returned (the ring's own sign of the move) and until each of
    ``lost`` was first reconciled by a survivor; both within ``timeout``."""
    for child in survivors.values():
        await child.ask(op="follow", keys=sorted(lost))
    killed = time.monotonic()
    await victim.kill()
    async with asyncio.timeout(timeout):
        moved_at, reconciled_at = await asyncio.gather(moved(), _first_reconciles(survivors, lost))
    return moved_at - killed, reconciled_at - killed


async def _first_reconciles(survivors: dict[str, Child], lost: set[str]) -> float:
    """When the last of ``lost`` was first reconciled by one of ``survivors``."""
    first: dict[str, float] = {}
    while not lost <= first.keys():
        await asyncio.sleep(_POLL)
        for child in survivors.values():
            for key, stamp in (await child.ask(op="reconciled"))["first"].items():
                first[key] = min(stamp, first.get(key, stamp))
    return max(first[key] for key in lost)


async def _failover_ranges(
    url: str, replicas: dict[str, Child], victim: str, params: dict[str, Any]
) -> dict[str, float]:
    """Kill ``victim`` and time its slots' and keys' move to the survivors in range mode
    (see the module notes)."""
    from aioinformer.client import Client
    from aioinformer.config import Config
    from aioinformer.listwatch import ListOptions
    from aioinformer.operator.sharding import (
        RING_LABEL,
        SLOTS_ANNOTATION,
        parse_slots,
        slot_selector,
    )

    survivors = {name: child for name, child in replicas.items() if name != victim}

    def listed(lease: dict[str, Any]) -> frozenset[int]:
        """The slots a Lease lists while held by its own shard (none otherwise)."""
        meta = lease.get("metadata") or {}
        if (lease.get("spec") or {}).get("holderIdentity") != meta.get("name"):
            return frozenset()
        annotations = meta.get("annotations") or {}
        return parse_slots(annotations.get(SLOTS_ANNOTATION), SLOTS) or frozenset()

    async with Client(Config(host=url, token=_TOKEN)) as client:
        leases = client.resource("leases", namespace=_LEASE_NAMESPACE)
        ring_leases = f"{RING_LABEL}={RING}"
        held = await leases.list(ListOptions(label_selector=ring_leases))
        slots_of = {lease["metadata"]["name"]: listed(lease) for lease in held.items}
        victim_slots = slots_of.get(victim, frozenset())
        if not victim_slots:
            raise RuntimeError(f"shard {victim} lists no slot: nothing to fail over")
        selector = str(slot_selector(victim_slots, SLOTS))
        page = await client.resource("configmaps").list(ListOptions(shard_selector=selector))
        lost = {f"{obj['metadata']['namespace']}/{obj['metadata']['name']}" for obj in page.items}
        if not lost:
            raise RuntimeError(f"shard {victim} holds no ConfigMap: nothing to fail over")

        async def moved() -> float:
            """When the survivors' Leases last came to list every slot of the victim."""
            current = {name: slots for name, slots in slots_of.items() if name in survivors}
            options = ListOptions(
                resource_version=held.resource_version, label_selector=ring_leases
            )
            async with contextlib.aclosing(leases.watch(options)) as events:
                async for event in events:
                    if event.type == "BOOKMARK":
                        continue
                    name = (event.object.get("metadata") or {}).get("name")
                    if name not in survivors:
                        continue
                    current[name] = frozenset() if event.type == "DELETED" else listed(event.object)
                    if victim_slots <= frozenset().union(*current.values()):
                        return time.monotonic()
            raise RuntimeError("the watch ended before every slot of the killed shard moved")

        moved_s, reconciled_s = await _kill_and_time(
            replicas[victim], survivors, lost, moved, params["failover_timeout"]
        )
    return {
        "failover_slots_s": moved_s,
        "failover_reconciled_s": reconciled_s,
        "lost_keys": float(len(lost)),
        "lost_slots": float(len(victim_slots)),
        "lease_duration_s": float(params["lease_duration"]),
    }


if __name__ == "__main__":
    raise SystemExit(main())
