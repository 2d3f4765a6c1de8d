"""The README's "Testing your controllers" files run as pasted into an empty project.

Each code block the README marks with ``<!-- readme-test: NAME -->`` is written alone into
a fresh temporary directory and run there by ``python -m pytest`` in a subprocess, as a
user's first run would be: no pytest configuration (``-c`` names an empty file, so neither
this repository's ``asyncio_mode = auto`` and ``filterwarnings`` nor any file above the
directory apply), no ``PYTEST_*`` settings inherited, and only the pytest plugins that
``pip install 'aioinformer[testing]'`` installs: plugin autoloading is off and the test
loads the ``pytest11`` entry points of aioinformer and of each package the ``testing``
extra names, read from ``pyproject.toml``. So dropping pytest-asyncio from the extra, or
a block that needs a setting a fresh project lacks, fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

MARKED_BLOCK = re.compile(
    r"<!-- readme-test: (?P<name>[\w-]+) -->\n```python\n(?P<code>.*?)\n```", re.S
)

RUN_TIMEOUT = 120.0
"""Seconds one run may take (about 2 s unloaded): bounds a hang only."""


def readme_blocks() -> dict[str, str]:
    """The README's marked code blocks, by name."""
    return {m["name"]: m["code"] + "\n" for m in MARKED_BLOCK.finditer(README.read_text())}


def extra_requirements() -> list[str]:
    """The distribution names the ``testing`` extra requires."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements: list[str] = project["optional-dependencies"]["testing"]
    return [re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0] for req in requirements]


def extra_plugins() -> list[str]:
    """``-p`` options loading the pytest plugins the ``testing`` extra installs."""
    options: list[str] = []
    # aioinformer's last: it imports pytest_asyncio, which pytest must see first to
    # rewrite its asserts.
    for name in [*extra_requirements(), "aioinformer"]:
        try:
            entry_points = distribution(name).entry_points
        except PackageNotFoundError:  # pragma: no cover - the venv lacks part of the extra
            pytest.fail(f"{name} (of the testing extra) is not installed")
        for ep in entry_points.select(group="pytest11"):
            options += ["-p", ep.value]
    return options


def run_in_empty_project(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir()
    for name, code in files.items():
        (project / name).write_text(code)
    no_config = tmp_path / "empty.ini"
    no_config.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "PYTHONPATH"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(no_config)]
    command += ["--rootdir", str(project), *extra_plugins(), "-rA"]
    return subprocess.run(
        command,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


def test_the_testing_extra_brings_pytest_asyncio_and_anyio() -> None:
    assert {"pytest", "pytest-asyncio", "anyio"} <= set(extra_requirements())
    plugins = extra_plugins()
    assert "aioinformer.testing.plugin" in plugins
    assert "pytest_asyncio.plugin" in plugins
    assert "anyio.pytest_plugin" in plugins


@pytest.mark.parametrize(
    ("block", "passed"), [("pytest-asyncio", 2), ("anyio", 1)], ids=["pytest-asyncio", "anyio"]
)
def test_a_readme_example_passes_alone_in_an_empty_project(
    tmp_path: Path, block: str, passed: int
) -> None:
    code = readme_blocks()[block]
    result = run_in_empty_project(tmp_path, {"test_example.py": code})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"{passed} passed" in output, output
    assert "Warning" not in result.stdout, output
    assert "asyncio: mode=Mode.STRICT" in output, output  # pytest-asyncio's default
    assert f"rootdir: {tmp_path / 'project'}" in output, output


def test_both_readme_examples_pass_side_by_side(tmp_path: Path) -> None:
    blocks = readme_blocks()
    files = {"test_asyncio.py": blocks["pytest-asyncio"], "test_anyio.py": blocks["anyio"]}
    result = run_in_empty_project(tmp_path, files)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout, result.stdout


def test_an_unmarked_async_test_fails_in_an_empty_project(tmp_path: Path) -> None:
    # What the run above guards against: without the mark, strict mode runs no async test.
    code = readme_blocks()["pytest-asyncio"].replace("pytestmark = pytest.mark.asyncio", "")
    result = run_in_empty_project(tmp_path, {"test_example.py": code})
    assert result.returncode != 0
    assert "passed" not in result.stdout.splitlines()[-1], result.stdout
