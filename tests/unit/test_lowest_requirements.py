"""``scripts/lowest_requirements.py`` writes the lowest-versions job's requirements from
``pyproject.toml``: each runtime dependency at its floor, the test extra's tools beside
them, so that raising a floor moves the job and a dependency without one is refused."""

from __future__ import annotations

import tomllib
from typing import TYPE_CHECKING

import pytest

from scripts import lowest_requirements
from scripts.lowest_requirements import LEFT_OUT, REPO_ROOT, floor_pin

if TYPE_CHECKING:
    from pathlib import Path

PYPROJECT = REPO_ROOT / "pyproject.toml"


def requirement_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_every_runtime_dependency_is_pinned_at_its_floor() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    lines = requirement_lines(lowest_requirements.lowest_requirements(PYPROJECT))
    pins = [line for line in lines if "==" in line]
    expected = [dependency.replace(">=", "==") for dependency in project["dependencies"]]
    assert pins == expected
    assert "aiohttp==3.12" in pins


def test_the_test_tools_come_as_declared_less_those_left_out() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    lines = requirement_lines(lowest_requirements.lowest_requirements(PYPROJECT))
    tools = [line for line in lines if "==" not in line]
    declared = project["optional-dependencies"]["test"]
    assert tools == [tool for tool in declared if tool.split(">=")[0] not in LEFT_OUT]
    assert not any(tool.startswith("kubernetes>=") for tool in tools)
    assert "kubernetes_asyncio>=31" in tools


def write_pyproject(tmp_path: Path, dependencies: list[str]) -> Path:
    path = tmp_path / "pyproject.toml"
    quoted = ", ".join(f'"{dependency}"' for dependency in dependencies)
    path.write_text(
        f'[project]\nname = "x"\ndependencies = [{quoted}]\n'
        '[project.optional-dependencies]\ntest = ["pytest>=8", "kubernetes>=37", "aiohttp>=3"]\n'
    )
    return path


def test_raising_a_floor_moves_the_pin(tmp_path: Path) -> None:
    text = lowest_requirements.lowest_requirements(
        write_pyproject(tmp_path, ["aiohttp>=3.14,<4", "coverage[toml] >= 7.4"])
    )
    # A test tool that is also a runtime dependency stays at the runtime floor.
    assert requirement_lines(text) == ["aiohttp==3.14", "coverage[toml]==7.4", "pytest>=8"]


@pytest.mark.parametrize(
    "dependency", ["aiohttp", "aiohttp==3.12", "aiohttp~=3.12", "aiohttp>3.12", "aiohttp>=3,>=4"]
)
def test_a_dependency_without_one_floor_is_refused(dependency: str) -> None:
    with pytest.raises(ValueError, match="exactly one '>=' floor"):
        floor_pin(dependency)


def test_bounds_above_the_floor_are_dropped_from_the_pin() -> None:
    assert floor_pin("aiohttp>=3.12,<4,!=3.13.1") == "aiohttp==3.12"


def test_the_command_fails_naming_the_dependency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_pyproject(tmp_path, ["orjson"])
    assert lowest_requirements.main(["--pyproject", str(path)]) == 1
    assert "'orjson'" in capsys.readouterr().err
    output = tmp_path / "lowest.txt"
    good = write_pyproject(tmp_path, ["orjson>=3.9"])
    assert lowest_requirements.main(["--pyproject", str(good), "--output", str(output)]) == 0
    assert "orjson==3.9\n" in output.read_text()


def test_ci_installs_what_the_script_writes() -> None:
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert 'scripts/lowest_requirements.py --output "$work/lowest.txt"' in ci
    assert '-m pip install --quiet -r "$work/lowest.txt" -e .' in ci
