"""The sharding scenario: one replica against three shards on the same ConfigMaps and the
same churn, then one shard killed.

Role: measures what ``Manager(shard=ShardRing(...))`` promises: each of N
shards costs about 1/N of one unsharded replica, in CPU and in cache memory, and a dead
shard's objects are owned and reconciled elsewhere soon after its Lease expires.
Input: the scenario's params (``objects``, ``rate`` and ``seconds`` of the churn,
``lease_duration``, ``startup_grace``, ``history``, ``failover_timeout``) and a variant,
``singleton`` or ``sharded-3``. Output: flat ``{metric: value}`` figures (see
:data:`PROCESS_FIGURES` and :data:`FAILOVER_FIGURES`).

Processes, so that each one's CPU and RSS are its own (read from ``/proc/PID``):

* ``server``: a :class:`~aioinformer.testing.FakeAPIServer` holding ``objects`` ConfigMaps
  (about 1 KiB each, over 50 namespaces). They start labelled as the sharder labels them
  for the ring of :data:`IDENTITIES`, and the shard Leases and the sharder's Lease start
  held by their replicas, with ``startup_grace`` seconds of validity: the state a running
  ring leaves behind. Both variants get the same objects, labels included; the run
  measures the ring at work, not its first assignment of every object. On ``churn`` the
  server rewrites one ConfigMap's data at a time, round-robin, at ``rate`` per second for
  ``seconds`` (merge patches: labels are kept), each write at its own time as independent
  writers' changes reach a real server: a replica's CPU follows the number of times it
  wakes up for events as much as the number of events, so writes bunched into ticks
  would flatter the replica that gets them all.
* ``replica`` (one for ``singleton``, one per identity for ``sharded-3``): a
  :class:`~aioinformer.operator.Manager` with one controller watching ConfigMaps through
  ``manager.informer_for`` (so a shard's informer watches its own objects only). Its
  reconcile reads the object from the lister and writes nothing: the figures are the
  cache's and the events' cost, not writes'. The singleton's Manager has no ``shard=``;
  each shard's has ``shard=ShardRing(...)`` with ``lease_duration`` (renew deadline and
  retry period at 2/3 and 1/6 of it). A replica says it is ready once its controller has
  reconciled as many keys as its cache holds.

The measuring side (the worker) starts them, waits until every replica is ready, runs
the churn, then reads each replica's CPU (utime + stime: from its start to the end of
the churn, and over the churn alone), its peak RSS (VmHWM), its RSS growth from just
before its Manager was built to the end of the churn after a full collection (the
cache's share of memory, with the watch and queue state beside it: the interpreter and
imports are left out) and the objects in its cache. ``sharded-3`` then sends SIGKILL to
a shard that does not run the sharder, and measures the seconds until every one of its
keys carries a surviving shard's label (a watch of the ConfigMaps from just before the
kill) and until each was reconciled by that shard (each survivor records when it first
reconciled each key it was told to follow; CLOCK_MONOTONIC is shared by every process on
Linux).

Figures: the singleton reports each :data:`PROCESS_FIGURES` name; ``sharded-3`` reports
them per shard as ``<identity>.<name>`` and, under the plain name, the largest over its
shards (the busiest shard, which the targets judge against the singleton), plus
``<identity>.sharder`` (1 for the shard running the sharder) and :data:`FAILOVER_FIGURES`.

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
    from collections.abc import Callable, Coroutine, Sequence

    from aioinformer.operator import ShardRing

__all__ = [
    "FAILOVER_FIGURES",
    "IDENTITIES",
    "PROCESS_FIGURES",
    "RING",
    "VARIANTS",
    "main",
    "processes_of",
    "sharding_case",
]

VARIANTS: Final = ("singleton", "sharded-3")
"""One unsharded replica (the reference), and three shards."""
IDENTITIES: Final = ("shard-a", "shard-b", "shard-c")
"""The shards of ``sharded-3``; the first starts holding the sharder's Lease."""
RING: Final = "bench"
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
    "failover_reconciled_s",
    "lost_keys",
    "lease_duration_s",
)
"""What ``sharded-3`` reports of the killed shard: seconds from the SIGKILL until each of
its keys carries a surviving shard's label, and until each was reconciled there; how
many keys it held; the Lease duration the ring ran with."""

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
    if variant == "sharded-3":
        return IDENTITIES
    raise ValueError(f"not a sharding variant ({' or '.join(VARIANTS)}): {variant!r}")


# --- the children -----------------------------------------------------------------------


def _micro_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lease(name: str, holder: str, seconds: int, labels: dict[str, str]) -> dict[str, Any]:
    stamp = _micro_time(datetime.now(UTC))
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": _LEASE_NAMESPACE, "labels": labels},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": seconds,
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": 0,
        },
    }


def _ring(identity: str, lease_duration: float) -> ShardRing:
    """The ``ShardRing`` of shard ``identity``: the renew deadline and retry period at
    2/3 and 1/6 of ``lease_duration``."""
    from aioinformer.operator import ShardedResource, ShardRing

    return ShardRing(
        name=RING,
        namespace=_LEASE_NAMESPACE,
        resources=(ShardedResource("configmaps"),),
        identity=identity,
        lease_duration=lease_duration,
        renew_deadline=lease_duration * 2 / 3,
        retry_period=lease_duration / 6,
    )


def _seed(server: Any, objects: int, grace: int) -> list[tuple[str, str]]:
    """Store the ConfigMaps, labelled for the ring, and its Leases held (see the module
    notes); return each ConfigMap's (namespace, name)."""
    from aioinformer.operator.sharding import object_hash_key, rendezvous

    ring = _ring(IDENTITIES[0], float(grace))
    keys = []
    for index in range(objects):
        config_map = {"apiVersion": "v1", "kind": "ConfigMap", **make_configmap(index)}
        meta = config_map["metadata"]
        for field in ("resourceVersion", "uid", "creationTimestamp"):
            del meta[field]
        key = object_hash_key("", "ConfigMap", meta["namespace"], meta["name"])
        meta["labels"][ring.shard_label] = rendezvous(key, IDENTITIES)
        server.create(config_map)
        keys.append((meta["namespace"], meta["name"]))
    for identity in IDENTITIES:
        server.create(_lease(identity, identity, grace, ring.lease_labels))
    server.create(_lease(ring.sharder_lease, IDENTITIES[0], grace, {}))
    return keys


async def _server(config: dict[str, Any]) -> None:
    from aioinformer.testing.apiserver import FakeAPIServer

    async with FakeAPIServer(require_namespaces=False, history_size=config["history"]) as server:
        server.add_token(_TOKEN)
        keys = _seed(server, config["objects"], config["startup_grace"])

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

        await serve({"url": server.url}, {"churn": churn})


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
    ring = None if identity is None else _ring(identity, float(config["lease_duration"]))
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
            if reconciles[0] >= len(config_maps.indexer):
                caught_up.set()

        manager.add(Controller("bench", reconcile, informers=[config_maps]))
        async with manager:
            await (manager.sharding if ring is not None else manager.elected).wait()
            await caught_up.wait()  # every key the cache holds has been reconciled

            async def stats(_command: dict[str, Any]) -> dict[str, Any]:
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.sharding ROLE '<json config>'``: run one child until stdin closes."""
    import orjson

    args = sys.argv[1:] if argv is None else argv
    asyncio.run(_ROLES[args[0]](orjson.loads(args[1])))
    return 0


# --- the measuring side -----------------------------------------------------------------


async def sharding_case(_url: str, params: dict[str, Any], *, variant: str) -> dict[str, float]:
    """Run one sharding variant (``singleton`` or ``sharded-3``); see the module notes."""
    names = processes_of(variant)
    async with contextlib.AsyncExitStack() as stack:
        server = await Child.start(
            _MODULE,
            "server",
            {
                "objects": params["objects"],
                "history": params["history"],
                "startup_grace": params["startup_grace"],
            },
        )
        stack.push_async_callback(server.close)
        url = server.ready["url"]
        replicas = await start_all(
            stack,
            _MODULE,
            "replica",
            (
                {
                    "url": url,
                    "identity": None if name == "singleton" else name,
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
        if variant == "sharded-3":
            for name, stat in zip(names, stats, strict=True):
                figures[f"{name}.sharder"] = 1.0 if stat["sharder"] else 0.0
            victim = max(i for i, stat in enumerate(stats) if not stat["sharder"])
            figures.update(
                await _failover(
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
        for child in survivors.values():
            await child.ask(op="follow", keys=sorted(lost))

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

        async def reconciled() -> float:
            """When the last lost key was first reconciled by a survivor."""
            first: dict[str, float] = {}
            while not lost <= first.keys():
                await asyncio.sleep(_POLL)
                for child in survivors.values():
                    for key, stamp in (await child.ask(op="reconciled"))["first"].items():
                        first[key] = min(stamp, first.get(key, stamp))
            return max(first[key] for key in lost)

        killed = time.monotonic()
        await replicas[victim].kill()
        async with asyncio.timeout(params["failover_timeout"]):
            moved_at, reconciled_at = await asyncio.gather(moved(), reconciled())
    return {
        "failover_s": moved_at - killed,
        "failover_reconciled_s": reconciled_at - killed,
        "lost_keys": float(len(lost)),
        "lease_duration_s": float(params["lease_duration"]),
    }


if __name__ == "__main__":
    raise SystemExit(main())
