"""What the sharded-manager tests share: a record of every replica's reconciles that
catches two replicas reconciling one key at once, and replicas that each talk to the
server with a token of their own, so that a test can cut one off."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from aioinformer.client import Client
    from aioinformer.operator import Manager
    from aioinformer.testing import FakeAPIServer


class Reconciles:
    """Every replica's reconciles: who reconciled each key, and any overlap (a reconcile
    that starts while another replica's reconcile of the same key runs)."""

    def __init__(self) -> None:
        self.running: dict[str, str] = {}
        self.by_replica: dict[str, list[str]] = {}
        self.violations: list[tuple[str, str, str]] = []
        self.hold: tuple[str, asyncio.Event] | None = None
        """A key whose reconciles wait for the event (a slow, or hung, reconcile)."""

    def reconciler(self, identity: str) -> Any:
        async def reconcile(key: str) -> None:
            other = self.running.get(key)
            if other is not None and other != identity:
                self.violations.append((key, other, identity))
            self.running[key] = identity
            try:
                await asyncio.sleep(0)
                if self.hold is not None and self.hold[0] == key:
                    await self.hold[1].wait()
                await asyncio.sleep(0)
                self.by_replica.setdefault(identity, []).append(key)
            finally:
                if self.running.get(key) == identity:
                    del self.running[key]

        return reconcile

    def last_owner(self) -> dict[str, str]:
        owners: dict[str, str] = {}
        for identity, keys in self.by_replica.items():
            for key in keys:
                owners[key] = identity  # order across replicas is not kept: see callers
        return owners

    def seen(self, identity: str) -> set[str]:
        return set(self.by_replica.get(identity, []))

    def everyone(self) -> set[str]:
        return {key for keys in self.by_replica.values() for key in keys}


@contextlib.asynccontextmanager
async def cut_off_able(
    server: FakeAPIServer,
    identities: tuple[str, ...],
    build: Callable[[Client, str], Manager],
) -> AsyncIterator[tuple[dict[str, Manager], dict[str, asyncio.Task[None]]]]:
    """Replicas ``build(client, identity)`` running (``manager.run()`` in a task each),
    each on a client with the token ``token-<identity>``, which
    ``server.remove_token(...)`` cuts off. Every replica is stopped and awaited on exit."""
    for identity in identities:
        server.add_token(f"token-{identity}")
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            i: await stack.enter_async_context(server.client(token=f"token-{i}"))
            for i in identities
        }
        managers = {i: build(clients[i], i) for i in identities}
        runs = {i: asyncio.create_task(m.run()) for i, m in managers.items()}
        try:
            yield managers, runs
        finally:
            for manager in managers.values():
                manager.stop()
            for run in runs.values():
                with contextlib.suppress(Exception):
                    await run


class Cache:
    """Just what a shard's guard reads of an informer's indexer."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}

    def get_by_key(self, key: str) -> dict[str, Any] | None:
        return self.objects.get(key)


class GuardedInformer:
    """Just what a shard's view and guards use of an informer: its cache, and the one
    ``on_delete`` handler the view registers."""

    def __init__(self) -> None:
        self.indexer = Cache()
        self.on_delete: Any = None

    def add_event_handler(self, **callbacks: Any) -> None:
        self.on_delete = callbacks["on_delete"]
