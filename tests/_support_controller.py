"""Driving a Controller through its retries on a fake clock: ``limiter()`` makes the delays
predictable (1 s, 2 s, 4 s, ... per key), ``retry_until_success()`` runs the controller
while each retry's delay passes, until one reconcile has succeeded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aioinformer.workqueue import ItemExponentialFailureRateLimiter
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.operator.controller import Controller
    from aioinformer.testing.clock import FakeClock


def limiter(base_delay: float = 1.0) -> ItemExponentialFailureRateLimiter[str]:
    """Per-key exponential backoff without the overall bucket: 1 s, 2 s, 4 s, ..."""
    return ItemExponentialFailureRateLimiter(base_delay=base_delay, max_delay=1000.0)


async def retry_until_success(controller: Controller, clock: FakeClock, retries: int) -> None:
    """Run ``controller`` (queued keys included), jump ``clock`` over the delay of each of
    ``retries`` rate-limited retries, and return once a reconcile succeeded and the
    controller has stopped."""
    async with controller:
        for _ in range(retries):
            await clock.wait_for_sleepers(1)
            await clock.advance_to_next()
        await wait_until(lambda: controller.statistics().successes == 1)
