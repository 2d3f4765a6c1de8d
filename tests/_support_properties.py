"""Example budgets for the Hypothesis tests: one switch, ``AIOINFORMER_PROPERTY_PROFILE``.

Each property test states its CI budget (``example_settings(300)``,
``machine_settings(100)``; a plain ``@given`` test without settings gets Hypothesis's 100,
through the profile ``tests/conftest.py`` loads), and the profile scales it (a fixed
``@settings`` of a test's own stays as it is):

- ``quick`` (the default), a tenth of it, at least one example: the inner loop, every
  unit test well under a second on two cores;
- ``ci``, the budget itself: what ``.ci/run`` runs;
- ``long``, ten times it, for a deliberate soak
  (``AIOINFORMER_PROPERTY_PROFILE=long pytest tests/unit -k properties``).

A failing example is kept in Hypothesis's database (``.hypothesis/``) and replayed first
by the next run, whatever its budget. The full-stack convergence machine in ``tests/e2e``
reads the same variable.
"""

from __future__ import annotations

import os

from hypothesis import settings

SCALES = {"quick": 0.1, "ci": 1.0, "long": 10.0}
"""What each profile multiplies a test's CI budget by."""

PROFILE = os.environ.get("AIOINFORMER_PROPERTY_PROFILE", "quick")
if PROFILE not in SCALES:
    raise ValueError(
        f"AIOINFORMER_PROPERTY_PROFILE must be one of {', '.join(SCALES)}, not {PROFILE!r}"
    )


def examples(ci: int) -> int:
    """The examples to run of a test that CI runs ``ci`` of, under this profile."""
    return max(1, round(ci * SCALES[PROFILE]))


def example_settings(ci: int) -> settings:
    """Settings for a ``@given`` test that CI runs ``ci`` examples of; no per-example
    deadline (a loaded machine is not a failure)."""
    return settings(max_examples=examples(ci), deadline=None)


def machine_settings(ci: int, *, steps: int = 40) -> settings:
    """Settings for a state machine that CI runs ``ci`` examples of, each up to ``steps``
    steps; no per-example deadline (a loaded CI machine is not a failure)."""
    return settings(max_examples=examples(ci), stateful_step_count=steps, deadline=None)
