"""Every test under ``tests/e2e`` is end to end (real HTTP to the fake API server,
subprocesses, pytester, Hypothesis over the whole stack): mark it ``e2e``, so that
``pytest -m "not e2e"`` or ``pytest tests/unit`` is the fast inner loop."""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.e2e)
