"""Micro-benchmark of the two core structures against a plain ``dict`` loop.

Measures, on the same pre-built pod-like objects:

* ``dict`` baseline: ``store[key] = obj`` with the key computed by
  :func:`~aioinformer.indexer.meta_namespace_key`;
* ``Indexer`` add, then update, with two indexes (namespace and a label);
* ``DeltaFIFO`` add followed by pop (one consumer applying each item to a dict);
* the two together as an informer's inner loop does them: FIFO add, pop into an
  ``Indexer`` with two indexes.

Each row gives objects per second and the ratio to the ``dict`` baseline (higher is
better; 1.0 would match the baseline). Run ``python bench/micro_structures.py [--n N]``;
it prints a markdown table. Times are CPU time of this process (steadier than wall time
on a shared machine; nothing here waits on I/O), the best of ``--repeat`` rounds, each
round running every row once in turn.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from typing import TYPE_CHECKING, Any

from aioinformer.delta_fifo import DeltaFIFO, Deltas, DeltaType
from aioinformer.indexer import (
    NAMESPACE_INDEX,
    Indexer,
    meta_namespace_key,
    namespace_index_func,
)

if TYPE_CHECKING:
    from collections.abc import Callable


def app_index_func(obj: Any) -> list[str]:
    labels = obj["metadata"].get("labels")
    app = labels.get("app") if labels else None
    return [app] if app else []


INDEXERS = {NAMESPACE_INDEX: namespace_index_func, "app": app_index_func}


def make_objects(n: int, generation: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pod-{i}",
                "namespace": f"ns-{i % 50}",
                "resourceVersion": str(generation * n + i),
                "labels": {"app": f"app-{i % 200}", "tier": "web"},
            },
            "spec": {"nodeName": f"node-{i % 100}"},
        }
        for i in range(n)
    ]


def bench_dict(objs: list[dict[str, Any]], updates: list[dict[str, Any]]) -> float:
    start = time.process_time()
    store: dict[str, Any] = {}
    key = meta_namespace_key
    for obj in objs:
        store[key(obj)] = obj
    for obj in updates:
        store[key(obj)] = obj
    return time.process_time() - start


def bench_indexer(objs: list[dict[str, Any]], updates: list[dict[str, Any]]) -> float:
    start = time.process_time()
    indexer: Indexer[dict[str, Any]] = Indexer(indexers=INDEXERS)
    add = indexer.add
    update = indexer.update
    for obj in objs:
        add(obj)
    for obj in updates:
        update(obj)
    return time.process_time() - start


async def _fifo_round(
    objs: list[dict[str, Any]], updates: list[dict[str, Any]], sink: Any
) -> float:
    """CPU seconds to push every object through a new FIFO into ``sink``, added then
    updated, one pop per write."""
    start = time.process_time()
    fifo = DeltaFIFO()
    add = fifo.add
    update = fifo.update
    pop = fifo.pop
    for obj in objs:
        await add(obj)
        await pop(sink)
    for obj in updates:
        await update(obj)
        await pop(sink)
    return time.process_time() - start


def bench_fifo(objs: list[dict[str, Any]], updates: list[dict[str, Any]]) -> float:
    store: dict[str, Any] = {}

    def sink(deltas: Deltas) -> None:
        obj = deltas[-1].object
        store[meta_namespace_key(obj)] = obj

    return asyncio.run(_fifo_round(objs, updates, sink))


def bench_fifo_into_indexer(objs: list[dict[str, Any]], updates: list[dict[str, Any]]) -> float:
    indexer: Indexer[dict[str, Any]] = Indexer(indexers=INDEXERS)
    deleted = DeltaType.DELETED

    def sink(deltas: Deltas) -> None:
        for delta in deltas:
            if delta.type is deleted:
                indexer.delete(delta.object)
            else:
                indexer.update(delta.object)

    return asyncio.run(_fifo_round(objs, updates, sink))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="objects (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (best kept)")
    args = parser.parse_args()
    n: int = args.n
    objs = make_objects(n, 0)
    updates = make_objects(n, 1)
    ops = 2 * n  # every object is written twice: once added, once updated

    benches: list[tuple[str, Callable[[], float]]] = [
        ("dict assignment (baseline)", lambda: bench_dict(objs, updates)),
        ("Indexer add+update, 2 indexes", lambda: bench_indexer(objs, updates)),
        ("DeltaFIFO add+pop", lambda: bench_fifo(objs, updates)),
        (
            "DeltaFIFO add+pop into Indexer, 2 indexes",
            lambda: bench_fifo_into_indexer(objs, updates),
        ),
    ]
    best = [float("inf")] * len(benches)
    for _ in range(args.repeat):
        for i, (_, run) in enumerate(benches):
            gc.collect()
            best[i] = min(best[i], run())
    baseline = best[0]
    rows = [(name, seconds) for (name, _), seconds in zip(benches, best, strict=True)]
    print(f"{n} objects, each added then updated ({ops} writes); best of {args.repeat}\n")
    print("| structure | writes/s | µs/write | ratio to dict |")
    print("|---|---:|---:|---:|")
    for name, seconds in rows:
        rate = ops / seconds
        print(f"| {name} | {rate:,.0f} | {seconds / ops * 1e6:.2f} | {baseline / seconds:.2f} |")


if __name__ == "__main__":
    main()
