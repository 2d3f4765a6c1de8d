"""The FastAPI example's own tests, ``examples/test_fastapi_app.py``, pass in a pytest run
of their own, as a user runs them: Starlette's ``TestClient`` in sync tests against the
fake served from a thread, and httpx's ``AsyncClient`` in an async one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
def test_the_fastapi_example_tests_pass_in_their_own_pytest_run() -> None:
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(EXAMPLES / "test_fastapi_app.py"),
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
        ],
        capture_output=True,
        text=True,
        timeout=90,  # under the test's own 120 s, so a hang reports as this subprocess's
        env=env,
        check=False,
        cwd=EXAMPLES.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout
