"""Every task of the operator wing starts through the kernel: none of its modules creates
tasks, waits on them with ``asyncio.wait`` or opens a task group of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import aioinformer.operator

OPERATOR = Path(aioinformer.operator.__file__).parent
BANNED = frozenset({"create_task", "ensure_future", "TaskGroup"})


def banned_uses(source: str) -> list[str]:
    """``create_task``, ``ensure_future``, ``TaskGroup`` under any owner, and
    ``asyncio.wait`` (not ``wait_for``), with their line numbers."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if node.attr in BANNED or (owner == "asyncio" and node.attr == "wait"):
                found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom) and node.module == "asyncio":
            found.extend(
                (node.lineno, alias.name)
                for alias in node.names
                if alias.name in BANNED or alias.name == "wait"
            )
    return [f"{line}: {name}" for line, name in sorted(found)]


@pytest.mark.parametrize("path", sorted(OPERATOR.glob("*.py")), ids=lambda path: path.name)
def test_no_operator_module_starts_or_waits_on_tasks_by_itself(path: Path) -> None:
    assert banned_uses(path.read_text()) == []


def test_the_check_finds_each_banned_use() -> None:
    source = (
        "import asyncio\n"
        "from asyncio import ensure_future\n"
        "asyncio.get_running_loop().create_task(f())\n"
        "await asyncio.wait(tasks)\n"
        "asyncio.TaskGroup()\n"
        "await asyncio.wait_for(f(), 1)\n"
    )
    assert banned_uses(source) == [
        "2: ensure_future",
        "3: create_task",
        "4: wait",
        "5: TaskGroup",
    ]
