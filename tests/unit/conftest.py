"""The unit suite's time limit: with ``AIOINFORMER_MAX_UNIT_SECONDS`` set (``.ci/run`` sets
it to 1), a unit test whose setup, call or teardown takes longer than that many seconds of
wall time fails, naming the phase and the time, and the run ends with the slowest phase
seen against the limit.

Unset (the default) nothing is checked, so a local run on a busy machine is not failed
for its neighbours' load. A unit test takes milliseconds; what needs real time, real
HTTP, a subprocess or a big Hypothesis budget belongs in ``tests/e2e``. The limit is on
wall time because a real sleep costs the suite as much as work does; CI runs it on an
otherwise idle machine, where the slowest unit test takes about a third of a second.

The hooks here apply to the tests under ``tests/unit`` only (pytest scopes a conftest's
test hooks to its directory). ``tests/e2e/test_unit_time_limit.py`` runs this very file
in a pytester session.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from hypothesis import find, settings
from hypothesis import strategies as st

if TYPE_CHECKING:
    from collections.abc import Generator

LIMIT_VARIABLE = "AIOINFORMER_MAX_UNIT_SECONDS"

_limit_key = pytest.StashKey[float | None]()
_slowest_key = pytest.StashKey[tuple[float, str]]()


def pytest_configure(config: pytest.Config) -> None:
    raw = os.environ.get(LIMIT_VARIABLE, "").strip()
    limit: float | None = None
    if raw:
        try:
            limit = float(raw)
        except ValueError:
            limit = None
        if limit is None or not limit > 0:
            raise pytest.UsageError(
                f"{LIMIT_VARIABLE} must be a number of seconds above 0, not {raw!r}"
            )
    config.stash[_limit_key] = limit
    config.stash[_slowest_key] = (0.0, "")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Pay, once collected and before any test is timed, what the first text strategy of a
    fresh checkout costs: Hypothesis builds its Unicode tables (over a second) and keeps
    them in ``.hypothesis/``, where every later run reads them in milliseconds. Whichever
    test drew text first would otherwise be failed for a cost that is not its own."""
    if session.config.stash.get(_limit_key, None) is None:
        return
    find(st.text(min_size=1), lambda _: True, settings=settings(database=None))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    config = item.config
    limit = config.stash.get(_limit_key, None)
    if limit is None:
        return report
    if report.duration > config.stash[_slowest_key][0]:
        config.stash[_slowest_key] = (report.duration, f"{report.when} of {item.nodeid}")
    if report.passed and report.duration > limit:
        report.outcome = "failed"
        report.longrepr = (
            f"the {report.when} took {report.duration:.2f} s, over the {limit:g} s a unit "
            f"test may take ({LIMIT_VARIABLE}): make it faster (a FakeClock, an event, fewer "
            "objects, a smaller Hypothesis budget) or move it to tests/e2e"
        )
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    limit = config.stash.get(_limit_key, None)
    if limit is None:
        return
    seconds, what = config.stash[_slowest_key]
    terminalreporter.write_line(
        f"unit time limit {limit:g} s ({LIMIT_VARIABLE}); slowest: {seconds:.2f} s, the {what}"
    )
