"""Example budgets for the Hypothesis state machines of single components.

``AIOINFORMER_PROPERTY_PROFILE`` picks the budget: ``ci`` (the default) keeps the unit
suite under 30 s on two cores; ``long`` runs ten times the examples, for a deliberate soak
(``AIOINFORMER_PROPERTY_PROFILE=long pytest tests/unit -k properties``). The full-stack
convergence machine in ``tests/e2e`` reads the same variable.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE = os.environ.get("AIOINFORMER_PROPERTY_PROFILE", "ci")
if PROFILE not in ("ci", "long"):
    raise ValueError(f"AIOINFORMER_PROPERTY_PROFILE must be 'ci' or 'long', not {PROFILE!r}")


def machine_settings(examples: int, *, steps: int = 40) -> settings:
    """Settings for a state machine: ``examples`` under ``ci``, ten times that under
    ``long``; no per-example deadline (a loaded CI machine is not a failure)."""
    scale = 10 if PROFILE == "long" else 1
    return settings(max_examples=examples * scale, stateful_step_count=steps, deadline=None)
