"""Measured cases in a fresh process: ``python -m bench.worker '<json spec>'``.

Input: a JSON object ``{"kind", "variant", "url", "params", "loop"}`` as the only argument
(``loop`` is ``"asyncio"`` or ``"uvloop"``), or a JSON list of such objects, run one after
the other, each on a new event loop. Output: one line per spec on stdout, in order,
``RESULT `` followed by ``{"metrics": {...}}`` or ``{"error": "..."}``. A fresh process per
case keeps each case's peak RSS its own and keeps one case's garbage out of the next one's
timing; the runner shares a process between cases only in ``--quick`` runs, whose figures
are not judged.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import traceback
from typing import Any

import orjson

from bench.scenarios import run_case

__all__ = ["RESULT_PREFIX", "main"]

RESULT_PREFIX = "RESULT "


def _run(spec: dict[str, Any]) -> dict[str, float]:
    coroutine = run_case(spec["kind"], spec["variant"], spec["url"], spec["params"])
    if spec.get("loop", "asyncio") == "uvloop":
        # An optional extra: imported by name so the suite runs without it installed.
        uvloop = importlib.import_module("uvloop")
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coroutine)
    return asyncio.run(coroutine)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    loaded = orjson.loads(args[0])
    for spec in loaded if isinstance(loaded, list) else [loaded]:
        try:
            outcome: dict[str, Any] = {"metrics": _run(spec)}
        except Exception as exc:  # noqa: BLE001
            # Blind on purpose: reported to the parent process as the case's error.
            traceback.print_exc(file=sys.stderr)
            outcome = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(RESULT_PREFIX + orjson.dumps(outcome).decode() + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
