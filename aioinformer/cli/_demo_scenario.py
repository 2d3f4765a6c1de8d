"""What ``aioinformer demo`` does to its fake API server: the settings, the generated
pods, the churn and the scripted faults.

Role: the demo's scenario, the side a controller elsewhere would play. Input:
:class:`DemoSettings` and a seeded :class:`random.Random`. Output: writes straight into a
:class:`~aioinformer.testing.apiserver.FakeAPIServer`'s store (no HTTP), counted in
:class:`Pods`, and the moments the faults took effect, in :class:`Fault` records.

Ordering: changes are applied one at a time, in the order the random source picks them;
the watch drop always comes before the compaction.

Task model: :func:`apply_churn` and :func:`inject_faults` are coroutines the demo runs as tasks
of its task group until it cancels them; everything else is synchronous.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import random

    from aioinformer.testing.apiserver import FakeAPIServer

__all__ = [
    "APPS",
    "APP_INDEX",
    "NAMESPACES",
    "NODES",
    "NODE_INDEX",
    "DemoSettings",
    "Fault",
    "Pods",
    "app_index",
    "apply_churn",
    "inject_faults",
    "node_index",
    "scripted_faults",
]

logger = logging.getLogger(__name__)

NAMESPACES: Final = ("default", "shop", "payments", "search", "analytics", "platform")
APPS: Final = ("web", "api", "worker", "cache", "batch", "gateway")
NODES: Final = tuple(f"node-{i:02d}" for i in range(1, 13))
APP_INDEX: Final = "app"
NODE_INDEX: Final = "node"

_TICK: Final = 0.05
_FAULT_DROP_AT: Final = 0.3
_FAULT_COMPACT_AT: Final = 0.6
_REFUSE_WINDOW: Final = 0.3


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoSettings:
    """What ``aioinformer demo`` was asked for."""

    pods: int = 2000
    """Pods created before the informer starts."""
    churn: float = 200.0
    """Creates, updates and deletes per second while the demo runs."""
    handlers: int = 3
    """Event handlers registered on the pods informer."""
    duration: float = 20.0
    """Seconds of churn before the convergence check."""
    seed: int | None = None
    """Random seed for the generated pods and churn; ``None`` for a fresh one."""
    kubeconfig: str | None = None
    """Where to write a kubeconfig for the demo's server while it runs, which then serves
    HTTPS so that kubectl authenticates; ``None``: plain HTTP, no kubeconfig."""


def app_index(obj: Any) -> list[str]:
    """Index pods by their ``app`` label."""
    app = (obj.get("metadata", {}).get("labels") or {}).get("app")
    return [app] if app else []


def node_index(obj: Any) -> list[str]:
    """Index pods by the node they are bound to."""
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


class Pods:
    """Generates pods and applies churn to the server directly (bypassing HTTP, as a
    controller elsewhere would through its own connection).

    Invariant: ``_keys`` lists exactly the pods on the server, ``_slot[key]`` is each
    key's position in ``_keys`` (swap-remove keeps both O(1)).
    """

    def __init__(self, server: FakeAPIServer, rng: random.Random) -> None:
        self._server = server
        self._rng = rng
        # The server, as a cluster does, refuses pods in a namespace that does not exist.
        for namespace in NAMESPACES:
            server.create_namespace(namespace)
        self._sequence = 0
        self._keys: list[tuple[str, str]] = []
        self._slot: dict[tuple[str, str], int] = {}
        self.creates = 0
        self.updates = 0
        self.deletes = 0

    @property
    def count(self) -> int:
        """Pods on the server now."""
        return len(self._keys)

    def create(self) -> None:
        rng = self._rng
        self._sequence += 1
        app = rng.choice(APPS)
        namespace = rng.choice(NAMESPACES)
        name = f"{app}-{self._sequence:05d}"
        self._server.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {"app": app, "revision": "1"},
                },
                "spec": {
                    "nodeName": rng.choice(NODES),
                    "containers": [{"name": app, "image": f"registry.example/{app}:1.0"}],
                },
                "status": {"phase": "Running"},
            }
        )
        key = (namespace, name)
        self._slot[key] = len(self._keys)
        self._keys.append(key)
        self.creates += 1

    def update(self) -> None:
        if not self._keys:
            self.create()
            return
        rng = self._rng
        namespace, name = rng.choice(self._keys)
        self.updates += 1
        labels = {"revision": str(self.updates)}
        if rng.random() < 0.2:
            labels["app"] = rng.choice(APPS)  # moves the pod in the app index
        self._server.patch(
            "pods",
            namespace,
            name,
            {
                "metadata": {
                    "labels": labels,
                    "annotations": {"demo.aioinformer.dev/touched": str(self.updates)},
                }
            },
        )

    def delete(self) -> None:
        if not self._keys:
            self.create()
            return
        position = self._rng.randrange(len(self._keys))
        key = self._keys[position]
        last = self._keys.pop()
        if last != key:
            self._keys[position] = last
            self._slot[last] = position
        del self._slot[key]
        self._server.delete("pods", key[0], key[1])
        self.deletes += 1

    def churn_once(self) -> None:
        """One random change: 30 % create, 40 % update, 30 % delete."""
        roll = self._rng.random()
        if roll < 0.3:
            self.create()
        elif roll < 0.7:
            self.update()
        else:
            self.delete()


async def apply_churn(pods: Pods, rate: float) -> None:
    """Apply ``rate`` changes per second until cancelled, in small batches per tick."""
    if rate <= 0:
        return
    loop = asyncio.get_running_loop()
    last = loop.time()
    owed = 0.0
    while True:
        await asyncio.sleep(_TICK)
        now = loop.time()
        owed += (now - last) * rate
        last = now
        while owed >= 1.0:
            pods.churn_once()
            owed -= 1.0


@dataclass(slots=True)
class Fault:
    """One scripted fault and when it took effect."""

    label: str
    at_fraction: float
    happened_at: float | None = None


def scripted_faults() -> list[Fault]:
    """What :func:`inject_faults` does, in order, none of it done yet: the watch drop at
    30 % of the run, the compaction at 60 %."""
    return [Fault("watch drop", _FAULT_DROP_AT), Fault("410 compaction", _FAULT_COMPACT_AT)]


async def inject_faults(
    server: FakeAPIServer, pods: Pods, faults: list[Fault], started: float, duration: float
) -> None:
    """At their moments, drop the watch, then force a 410 Gone on the re-watch."""
    drop, compaction = faults
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, started + duration * drop.at_fraction - loop.time()))
    # Every connection goes: the watch reconnects from the resourceVersion it reached.
    await server.restart(reset_history=False)
    drop.happened_at = loop.time() - started
    logger.info("demo: dropped every connection at %.1fs", drop.happened_at)
    await asyncio.sleep(max(0.0, started + duration * compaction.at_fraction - loop.time()))
    await server.faults.refuse_connections()
    try:
        # While the watch is away the server moves on (one write at least, so the
        # informer's resourceVersion is behind), then forgets its history: the re-watch
        # gets 410 Gone and the informer must relist.
        pods.update()
        await asyncio.sleep(_REFUSE_WINDOW)
        server.compact()
        compaction.happened_at = loop.time() - started
        logger.info("demo: compacted the history at %.1fs", compaction.happened_at)
    finally:
        await asyncio.shield(server.faults.accept_connections())
