"""Leader election: two replicas share one Lease; when the leader leaves, the other takes over.

Run it with ``python examples/leader_election.py``: it starts the embedded fake API server,
so no cluster is needed. Against a real cluster, build the client with
``Client.from_env()`` and give each replica a unique identity (its pod name, say).

What happens:

1. ``alpha`` acquires the Lease ``default/example-controller`` and leads: the body of
   ``async with elector.leadership():`` is the leader's work.
2. ``beta`` starts, sees ``alpha`` holding a live lease and keeps retrying.
3. ``alpha`` finishes its work; leaving the ``async with`` releases the lease, so ``beta``
   takes over at its next retry instead of waiting for the lease to expire.

Timings are short so that the example finishes in about two seconds; production code keeps
client-go's defaults (15 s lease, 10 s renew deadline, 2 s retry).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aioinformer.operator import LeaderElector, LeaseLock
from aioinformer.testing import FakeAPIServer

if TYPE_CHECKING:
    from aioinformer.client import Client

log = logging.getLogger("leader_election")

NAMESPACE = "default"
LEASE_NAME = "example-controller"
LEASE_DURATION = 1.0
RENEW_DEADLINE = 0.6
RETRY_PERIOD = 0.1


@dataclass
class Outcome:
    """What the run observed: who led, in order, and how long the hand-over took."""

    leaders: list[str] = field(default_factory=list)
    handover_seconds: float = 0.0


async def replica(
    client: Client,
    identity: str,
    outcome: Outcome,
    *,
    work_seconds: float,
    leading: asyncio.Event | None = None,
) -> None:
    """One replica of a controller: wait for leadership, do the work, step down."""
    lock = LeaseLock(client, NAMESPACE, LEASE_NAME, identity)
    elector = LeaderElector(
        lock,
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
        on_new_leader=lambda holder: log.info("%s: the leader is now %r", identity, holder),
    )
    async with elector.leadership():
        log.info("%s: leading", identity)
        outcome.leaders.append(identity)
        if leading is not None:
            leading.set()
        await asyncio.sleep(work_seconds)  # the leader's work; cancelled if the lease is lost
    log.info("%s: done, lease released", identity)


async def main() -> Outcome:
    outcome = Outcome()
    loop = asyncio.get_running_loop()
    async with FakeAPIServer() as server, server.client() as client:
        alpha_leads = asyncio.Event()
        async with asyncio.TaskGroup() as tasks:
            alpha = tasks.create_task(
                replica(client, "alpha", outcome, work_seconds=0.5, leading=alpha_leads)
            )
            await alpha_leads.wait()
            beta_leads = asyncio.Event()
            tasks.create_task(
                replica(client, "beta", outcome, work_seconds=0.2, leading=beta_leads)
            )
            await alpha
            released_at = loop.time()
            await beta_leads.wait()
            outcome.handover_seconds = loop.time() - released_at
        lease = server.get("leases", NAMESPACE, LEASE_NAME)
        log.info(
            "lease after both left: holder=%r transitions=%s",
            lease["spec"]["holderIdentity"],
            lease["spec"]["leaseTransitions"],
        )
    log.info(
        "leaders in order: %s; hand-over took %.3fs", outcome.leaders, outcome.handover_seconds
    )
    return outcome


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    asyncio.run(main())
