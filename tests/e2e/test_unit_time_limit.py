"""The unit suite's time limit (``tests/unit/conftest.py``), run in a pytester session of
its own (an end-to-end test: a session of its own takes about the unit limit itself). With
``AIOINFORMER_MAX_UNIT_SECONDS`` set, a test slower than that fails naming the phase and
the time, a quick one passes; unset, nothing is checked; a value that is not a positive
number is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).parents[1] / "unit" / "conftest.py").read_text()

TESTS = """
import time

import pytest


def test_quick():
    pass


def test_slow_call():
    time.sleep(0.07)


@pytest.fixture
def slow_setup():
    time.sleep(0.07)


def test_slow_setup(slow_setup):
    pass


def test_failing_slowly():
    time.sleep(0.07)
    assert False, "its own failure"
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("AIOINFORMER_MAX_UNIT_SECONDS", raising=False)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_timed=TESTS)
    return pytester


def test_a_test_over_the_limit_fails_naming_the_phase_and_its_time(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIOINFORMER_MAX_UNIT_SECONDS", "0.05")
    result = suite.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=2, errors=1)
    for line in [
        "the setup took 0.* s, over the 0.05 s a unit test may take*",
        "the call took 0.* s, over the 0.05 s a unit test may take*",
        "FAILED test_timed.py::test_slow_call - the call took*",
        "ERROR test_timed.py::test_slow_setup - the setup took*",
        "FAILED test_timed.py::test_failing_slowly - AssertionError: its own failure*",
        "unit time limit 0.05 s (AIOINFORMER_MAX_UNIT_SECONDS); slowest: 0.* s, the *",
    ]:
        result.stdout.fnmatch_lines([line])


def test_without_the_variable_nothing_is_timed(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "no:randomly", "-k", "slow_call or slow_setup")
    result.assert_outcomes(passed=2)
    assert "unit time limit" not in result.stdout.str()


@pytest.mark.parametrize("value", ["one", "0", "-1"])
def test_a_limit_that_is_not_a_positive_number_is_refused(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AIOINFORMER_MAX_UNIT_SECONDS", value)
    result = suite.runpytest("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*AIOINFORMER_MAX_UNIT_SECONDS must be a number of seconds above 0, not '{value}'"]
    )
