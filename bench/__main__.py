"""``python -m bench`` runs the benchmark suite (see :mod:`bench.run`)."""

from __future__ import annotations

from bench.run import main

raise SystemExit(main())
