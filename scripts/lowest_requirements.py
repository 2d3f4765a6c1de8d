"""The requirements of CI's lowest-versions job, written from ``pyproject.toml``.

``python scripts/lowest_requirements.py`` prints a pip requirements file: every runtime
dependency (``[project].dependencies``) pinned at the floor the package declares
(``aiohttp>=3.12`` becomes ``aiohttp==3.12``, which pip reads as 3.12.0), then the test
tools of the ``test`` extra as declared, which pip resolves to versions that work beside
those pins, less the few the job leaves out (:data:`LEFT_OUT`, each with its reason).
``.ci/run`` installs the file into a fresh Python 3.11 virtual environment beside the
package (``--no-deps`` for the package: the pins stand for its dependencies) and runs the
unit suite and the pipeline's end-to-end tests there, so a floor that no longer works
fails CI, and raising a floor in ``pyproject.toml`` moves the job with it.

A runtime dependency without a ``>=`` floor, or with a floor that is not the lowest bound
it allows, is refused: the job could not say what the lowest version is. Options:
``--pyproject PATH`` (default: the repository's), ``--output PATH`` (default: stdout).
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path
from typing import Final

__all__ = ["LEFT_OUT", "floor_pin", "lowest_requirements", "main"]

REPO_ROOT: Final = Path(__file__).resolve().parents[1]

LEFT_OUT: Final = {
    "kubernetes": (
        "the official client requires aiohttp>=3.14.3; only the proxy's and the docs' "
        "end-to-end tests use it, and the job runs neither"
    ),
}
"""Test tools the job does not install, by project name, and why."""

_REQUIREMENT: Final = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*?)\s*$")


def _split(requirement: str) -> tuple[str, str, list[str]]:
    """A requirement's name, its extras (with brackets) and its version clauses."""
    if ";" in requirement:
        raise ValueError(f"{requirement!r}: environment markers are not supported here")
    match = _REQUIREMENT.match(requirement)
    if match is None:
        raise ValueError(f"{requirement!r} is not a requirement this script can read")
    name, extras, specifier = match.groups()
    clauses = [clause.strip() for clause in specifier.split(",") if clause.strip()]
    return name, extras or "", clauses


def floor_pin(requirement: str) -> str:
    """``requirement`` pinned at its ``>=`` floor: ``"aiohttp>=3.12,<4"`` gives
    ``"aiohttp==3.12"``. Raises ``ValueError`` when it has no floor, or bounds that
    allow versions below it (``!=``, ``<`` or ``==`` clauses say nothing of the lowest
    version; ``~=`` and ``>`` are refused too: write the floor as ``>=``)."""
    name, extras, clauses = _split(requirement)
    floors = [clause[2:].strip() for clause in clauses if clause.startswith(">=")]
    others = [clause for clause in clauses if not clause.startswith((">=", "<", "!="))]
    if len(floors) != 1 or others:
        raise ValueError(
            f"{requirement!r}: a runtime dependency needs exactly one '>=' floor (and at "
            "most '<' or '!=' bounds) for the lowest-versions job to pin"
        )
    return f"{name}{extras}=={floors[0]}"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lowest_requirements(pyproject: Path) -> str:
    """The requirements file's text for the project ``pyproject`` describes."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    pins = [floor_pin(requirement) for requirement in project["dependencies"]]
    pinned = {_normal(_split(pin)[0]) for pin in pins}
    left_out = {_normal(name) for name in LEFT_OUT}
    tools = []
    for requirement in project["optional-dependencies"]["test"]:
        name = _normal(_split(requirement)[0])
        if name not in left_out and name not in pinned:
            tools.append(requirement)
    lines = [
        "# Written by scripts/lowest_requirements.py from pyproject.toml: do not edit.",
        "# The runtime dependencies, each at the floor the package declares:",
        *pins,
        "# The test extra's tools, resolved beside them:",
        *tools,
        "# Left out of the test extra:",
        *(f"#   {name}: {why}" for name, why in LEFT_OUT.items()),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python scripts/lowest_requirements.py",
        description="Print the lowest-versions job's requirements, from pyproject.toml.",
    )
    parser.add_argument("--pyproject", type=Path, default=REPO_ROOT / "pyproject.toml")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    try:
        text = lowest_requirements(args.pyproject)
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
