"""aioinformer's benchmark suite: ``python -m bench`` (``--quick`` for a short run).

A replay server (:mod:`bench.replay`) serves pre-encoded, realistic objects
(:mod:`bench.objects`) over loopback HTTP; each scenario (:mod:`bench.scenarios`) runs the
raw aiohttp+orjson baseline (:mod:`bench.baseline`) and aioinformer on the same bytes in
fresh worker processes (:mod:`bench.worker`); :mod:`bench.run` prints a markdown table and
writes ``bench/results/latest.json``.
"""

from __future__ import annotations

__all__: list[str] = []
