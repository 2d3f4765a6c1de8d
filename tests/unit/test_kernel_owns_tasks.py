"""Every task of the package is started, raced and reaped through the kernel.

Outside ``aioinformer/_kernel/``, no module may call ``asyncio.create_task``,
``create_task`` on a loop, ``asyncio.ensure_future`` or ``asyncio.wait``, or use
``asyncio.TaskGroup``: components start their children with
:class:`~aioinformer._kernel.runner.TaskRunner`, race with ``first_completed``, reap with
``cancel_and_wait``/``finish_regardless``, and run alone with ``Running``. The check reads
the syntax trees, so docstrings and comments may still name these calls.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

import aioinformer

KNOWN_SITES: frozenset[str] = frozenset()
"""Sites allowed to start tasks by hand outside the kernel, as ``"path:line what"``:
none. The test fails on any site, and on an entry no longer found."""

_FORBIDDEN_ASYNCIO = frozenset({"create_task", "ensure_future", "wait", "TaskGroup"})
"""Names of ``asyncio`` that start, race or group tasks."""

_MAY_HOLD_A_SITE = re.compile(
    r"create_task|ensure_future|TaskGroup|asyncio\.wait\b|\bfrom asyncio import\b"
    r"|\bimport asyncio as\b"
)
"""A source without any of these has no site (each way of naming the calls spells one of
them: ``asyncio.wait`` is reached as such, by a name imported from asyncio, or through an
alias of the module), so only the others are parsed: parsing the whole package is what
took the time. A bare ``wait`` would let in every ``event.wait()``."""

_PACKAGE = Path(aioinformer.__file__).parent
_ROOT = _PACKAGE.parent


def task_sites(source: str) -> list[tuple[int, str]]:
    """Each line of ``source`` that starts, races or groups tasks by hand, with what it
    uses: ``asyncio.X`` for the module's names (as attributes, or imported from it under
    any alias), ``create_task`` for the method of a loop or any other object."""
    tree = ast.parse(source)
    imported: dict[str, str] = {}
    modules = {"asyncio"}
    sites: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(
                alias.asname or alias.name for alias in node.names if alias.name == "asyncio"
            )
        elif isinstance(node, ast.ImportFrom) and node.module == "asyncio":
            for alias in node.names:
                if alias.name in _FORBIDDEN_ASYNCIO:
                    imported[alias.asname or alias.name] = alias.name
                    sites.append((node.lineno, f"asyncio.{alias.name}"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            value = node.value
            if isinstance(value, ast.Name) and value.id in modules:
                if node.attr in _FORBIDDEN_ASYNCIO:
                    sites.append((node.lineno, f"asyncio.{node.attr}"))
            elif node.attr == "create_task":
                sites.append((node.lineno, "create_task"))
        elif isinstance(node, ast.Name) and node.id in imported:
            sites.append((node.lineno, f"asyncio.{imported[node.id]}"))
    return sorted(set(sites))


@functools.cache
def _package_sites() -> frozenset[str]:
    found: set[str] = set()
    for path in sorted(_PACKAGE.rglob("*.py")):
        relative = path.relative_to(_ROOT).as_posix()
        if relative.startswith("aioinformer/_kernel/"):
            continue
        source = path.read_text(encoding="utf-8")
        if not _MAY_HOLD_A_SITE.search(source):
            continue
        for line, what in task_sites(source):
            found.add(f"{relative}:{line} {what}")
    return frozenset(found)


def test_no_module_outside_the_kernel_starts_races_or_groups_tasks_by_hand() -> None:
    unexpected = sorted(_package_sites() - KNOWN_SITES)
    assert not unexpected, (
        "start, race and reap tasks through aioinformer._kernel.runner (TaskRunner, "
        "first_completed, cancel_and_wait, finish_regardless, Running), not by hand:\n  "
        + "\n  ".join(unexpected)
    )


def test_every_allowed_site_still_exists() -> None:
    gone = sorted(KNOWN_SITES - _package_sites())
    assert not gone, "remove these entries from KNOWN_SITES:\n  " + "\n  ".join(gone)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import asyncio\nasyncio.create_task(f())\n", [(2, "asyncio.create_task")]),
        ("import asyncio as aio\naio.ensure_future(f())\n", [(2, "asyncio.ensure_future")]),
        ("import asyncio\nawait asyncio.wait(tasks)\n", [(2, "asyncio.wait")]),
        ("import asyncio\nasyncio.TaskGroup()\n", [(2, "asyncio.TaskGroup")]),
        ("loop.create_task(f())\n", [(1, "create_task")]),
        (
            "asyncio.get_running_loop().create_task(f())\n",
            [(1, "create_task")],
        ),
        (
            "from asyncio import TaskGroup as TG\nTG()\n",
            [(1, "asyncio.TaskGroup"), (2, "asyncio.TaskGroup")],
        ),
        (
            "from asyncio import wait, sleep\nawait wait(tasks)\nawait sleep(1)\n",
            [(1, "asyncio.wait"), (2, "asyncio.wait")],
        ),
        ("import asyncio\nawait asyncio.wait_for(f(), 1)\nasyncio.sleep(0)\n", []),
        ('"""asyncio.create_task in a docstring is fine"""\n', []),
    ],
)
def test_the_check_finds_each_way_of_starting_a_task_by_hand(
    source: str, expected: list[tuple[int, str]]
) -> None:
    assert task_sites(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "import asyncio\nasyncio.create_task(f())\n",
        "import asyncio as aio\naio.ensure_future(f())\n",
        "import asyncio as aio\nawait aio.wait(tasks)\n",
        "from asyncio import wait as w\nawait w(tasks)\n",
        "from asyncio import (\n    sleep,\n    wait,\n)\nawait wait(tasks)\n",
        "import asyncio\nawait asyncio.wait(tasks)\n",
        "import asyncio\nasyncio.TaskGroup()\n",
        "loop.create_task(f())\n",
    ],
)
def test_the_quick_filter_keeps_every_source_the_check_finds_a_site_in(source: str) -> None:
    assert task_sites(source)
    assert _MAY_HOLD_A_SITE.search(source)


def uncancel_sites(source: str) -> list[int]:
    """The lines of ``source`` that call ``uncancel()`` on anything: taking a cancellation
    back is how edge and level cancellation get mixed by hand."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "uncancel"
    )


def test_no_module_outside_the_kernel_takes_a_cancellation_back() -> None:
    found = [
        f"{path.relative_to(_ROOT).as_posix()}:{line}"
        for path in sorted(_PACKAGE.rglob("*.py"))
        if not path.relative_to(_PACKAGE).as_posix().startswith("_kernel/")
        and "uncancel" in (source := path.read_text(encoding="utf-8"))
        for line in uncancel_sites(source)
    ]
    assert not found, (
        "interrupt a run through aioinformer._kernel.runner.Interruptible, which takes its "
        "own cancellation back, instead of cancel() and uncancel() by hand:\n  "
        + "\n  ".join(found)
    )
    assert uncancel_sites("task.uncancel()\n'uncancel() in a string'\n") == [1]
