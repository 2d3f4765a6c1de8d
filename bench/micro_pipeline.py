"""Micro-benchmark of the informer's hand-offs: DeltaFIFO -> pop -> cache -> handlers.

Drives the path one informer's events take after the reflector, without a network: a
producer task writes a LIST of ``--n`` pod-like objects into a :class:`DeltaFIFO`
(``replace``), then ``--updates`` updates of every object, a watch chunk of ``--chunk``
events at a time with a yield to the event loop between chunks. A consumer task pops the
FIFO, applies each object's deltas to an :class:`Indexer` and distributes one notification
per delta through a :class:`SharedProcessor` to 1 or 10 handlers, each a
:class:`ProcessorListener` with its own delivery task calling a sync callback that only
counts. The round ends when every handler has received every notification.

Consumers:

* ``pop``: one key per ``DeltaFIFO.pop`` call and one ``distribute`` per notification,
  the informer's classic loop;
* ``pop_batch``: up to ``--max-keys`` ready keys per ``DeltaFIFO.pop_batch`` call (fewer
  when a ``"block"`` handler has less room, ``SharedProcessor.room``), each applied with
  the key the FIFO hands out rather than a recomputed one, their notifications handed to
  every handler's queue at once (``SharedProcessor.batch()``). Rows for it appear only
  when the imported aioinformer has ``pop_batch``, so the same file measures an older
  checkout too: copy it out and run it with ``PYTHONPATH`` set to that checkout.

Each row gives FIFO events per second (the LIST's objects plus the updates, each counted
once however many handlers receive it), notifications delivered per second (events times
handlers) and the ratio to the first row with the same handler count. Times are CPU time
of this process (nothing waits on I/O), the best of ``--repeat`` rounds, each round running
every row once in turn. The last column is the longest a 1 ms timer fired late while the
pipeline ran (wall time, the worst round): how long the consumer held the event loop; the
counts of the cyclic collector's youngest- and oldest-generation collections in the last
round close the row (a batch that held its keys' deltas to the end would raise both).
Run ``python bench/micro_pipeline.py [--n N] [--updates U] [--max-keys K]``; it prints a
markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from aioinformer.delta_fifo import DeletedFinalStateUnknown, DeltaFIFO, Deltas, DeltaType
from aioinformer.indexer import Indexer, meta_namespace_key
from aioinformer.processor import (
    Notification,
    NotificationKind,
    ProcessorListener,
    SharedProcessor,
)
from bench.micro_structures import make_objects

if TYPE_CHECKING:
    from collections.abc import Callable

_DELETED = DeltaType.DELETED
ADD = NotificationKind.ADD
UPDATE = NotificationKind.UPDATE
DELETE = NotificationKind.DELETE


def make_apply(
    fifo: DeltaFIFO, indexer: Indexer[Any], processor: SharedProcessor
) -> Callable[..., None]:
    """The informer's per-key step: apply one key's deltas to the cache and distribute a
    notification per delta (an update with an unchanged resourceVersion is a resync)."""

    def apply(deltas: Deltas, key: str | None = None) -> None:
        is_in_initial_list = not fifo.has_synced()
        distribute = processor.distribute
        if key is None:
            first = deltas[0].object
            key = (
                first.key if type(first) is DeletedFinalStateUnknown else meta_namespace_key(first)
            )
        old = indexer.get_by_key(key)
        for delta in deltas:
            obj = delta.object
            if delta.type is _DELETED:
                indexer.delete_by_key(key)
                distribute(Notification(DELETE, obj, None), False)
                old = None
            elif old is not None:
                indexer.put_by_key(key, obj)
                is_sync = old["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
                distribute(Notification(UPDATE, old, obj), is_sync)
                old = obj
            else:
                indexer.put_by_key(key, obj)
                distribute(Notification(ADD, obj, is_in_initial_list), False)
                old = obj

    return apply


async def _consume_one_key_at_a_time(
    fifo: DeltaFIFO, processor: SharedProcessor, apply: Any
) -> None:
    while True:
        await fifo.pop(apply)
        if not processor.has_room():
            await processor.wait_for_room()


async def _consume_in_batches(
    fifo: DeltaFIFO, processor: SharedProcessor, apply: Any, max_keys: int
) -> None:
    batch: Any = processor.batch  # type: ignore[attr-defined,unused-ignore]

    def apply_batch(deltas_batch: Any) -> None:
        with batch():
            for key, deltas in deltas_batch:
                apply(deltas, key)

    pop_batch: Any = fifo.pop_batch  # type: ignore[attr-defined,unused-ignore]
    room: Any = processor.room  # type: ignore[attr-defined,unused-ignore]
    while True:
        keys = room(max_keys)
        if not keys:
            await processor.wait_for_room()
            continue
        await pop_batch(apply_batch, max_keys=keys)


async def pipeline_round(
    initial: list[dict[str, Any]],
    updates: list[dict[str, Any]],
    *,
    handlers: int,
    consumer: str,
    chunk: int,
    max_keys: int,
    max_pending: int | None,
) -> tuple[float, float, tuple[int, int]]:
    """CPU seconds from the LIST entering the FIFO until every handler has been called
    for every event, and the longest the event loop was late for a 1 ms timer meanwhile
    (not counting the ``replace`` call itself, the same for every consumer), and how many
    youngest- and oldest-generation collections the cyclic collector ran."""
    indexer: Indexer[Any] = Indexer(meta_namespace_key)
    fifo = DeltaFIFO(known_objects=indexer)
    processor = SharedProcessor()
    expected = len(initial) + len(updates)
    done = asyncio.Event()
    remaining = [handlers]

    def counting_handler() -> Callable[[Any, Any], None]:
        count = 0

        def on_event(a: Any, b: Any) -> None:
            nonlocal count
            count += 1
            if count == expected:
                remaining[0] -= 1
                if not remaining[0]:
                    done.set()

        return on_event

    for i in range(handlers):
        on_event = counting_handler()
        processor.add_listener(
            ProcessorListener(
                name=f"handler-{i}", on_add=on_event, on_update=on_event, max_pending=max_pending
            )
        )
    apply = make_apply(fifo, indexer, processor)
    if consumer == "pop":
        consume = _consume_one_key_at_a_time(fifo, processor, apply)
    else:
        consume = _consume_in_batches(fifo, processor, apply, max_keys)
    lag = [0.0]
    collections = [0, 0, 0]

    def count_collection(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections[info["generation"]] += 1

    async def probe_lag() -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.001)
            lag[0] = max(lag[0], time.perf_counter() - started - 0.001)

    gc.callbacks.append(count_collection)
    start = time.process_time()
    async with asyncio.TaskGroup() as tasks:
        running = [tasks.create_task(processor.run()), tasks.create_task(consume)]
        await fifo.replace(initial, "0")
        running.append(tasks.create_task(probe_lag()))
        update = fifo.update
        for offset in range(0, len(updates), chunk):
            for obj in updates[offset : offset + chunk]:
                await update(obj)
            await asyncio.sleep(0)
        await done.wait()
        elapsed = time.process_time() - start
        gc.callbacks.remove(count_collection)
        for task in running:
            task.cancel()
    return elapsed, lag[0], (collections[0], collections[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="objects (default 10000)")
    parser.add_argument("--updates", type=int, default=10, help="updates per object (10)")
    parser.add_argument("--chunk", type=int, default=100, help="events per watch chunk (100)")
    parser.add_argument("--max-keys", type=int, default=1000, help="keys per batch (1000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (best kept)")
    args = parser.parse_args()
    initial = make_objects(args.n, 0)
    updates = [
        obj for generation in range(1, args.updates + 1) for obj in make_objects(args.n, generation)
    ]
    events = len(initial) + len(updates)

    def run(
        handlers: int, consumer: str, max_pending: int | None
    ) -> tuple[float, float, tuple[int, int]]:
        return asyncio.run(
            pipeline_round(
                initial,
                updates,
                handlers=handlers,
                consumer=consumer,
                chunk=args.chunk,
                max_keys=args.max_keys,
                max_pending=max_pending,
            )
        )

    rows: list[tuple[str, int, Callable[[], tuple[float, float, tuple[int, int]]]]] = []
    consumers = ("pop", "pop_batch") if hasattr(DeltaFIFO, "pop_batch") else ("pop",)
    for handlers in (1, 10):
        for max_pending in (None, 1000):
            for consumer in consumers:
                bound = "unbounded" if max_pending is None else f'max_pending={max_pending} "block"'
                name = f"{handlers} handler{'s' if handlers > 1 else ''}, {bound}, {consumer}"
                rows.append((name, handlers, partial(run, handlers, consumer, max_pending)))

    best = [float("inf")] * len(rows)
    worst_lag = [0.0] * len(rows)
    collected = [(0, 0)] * len(rows)
    for _ in range(args.repeat):
        for i, (_, _, measure) in enumerate(rows):
            gc.collect()
            seconds, lag, collected[i] = measure()
            best[i] = min(best[i], seconds)
            worst_lag[i] = max(worst_lag[i], lag)
    print(
        f"{args.n} objects listed, then {args.updates} updates of each in chunks of "
        f"{args.chunk} ({events} events), batches of up to {args.max_keys} keys; "
        f"best of {args.repeat} (max loop lag: worst of {args.repeat})\n"
    )
    print(
        "| pipeline | events/s | notifications/s | µs/event | ratio | max loop lag ms "
        "| collections young/full |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    first: dict[int, float] = {}
    for (name, handlers, _), seconds, lag, (young, full) in zip(
        rows, best, worst_lag, collected, strict=True
    ):
        first.setdefault(handlers, seconds)
        print(
            f"| {name} | {events / seconds:,.0f} | {events * handlers / seconds:,.0f} "
            f"| {seconds / events * 1e6:.2f} | {first[handlers] / seconds:.2f} "
            f"| {lag * 1e3:.1f} | {young}/{full} |"
        )


if __name__ == "__main__":
    main()
