"""The layout page of the docs (docs/explanation/layout.md), the import contract in
pyproject.toml and the package's rooms (its top-level modules and folders) say the same
thing: every room sits in exactly one layer, and the page's table lists the contract's
layers, top first."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import aioinformer
from aioinformer._kernel.deprecation import MOVED_MODULES

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(aioinformer.__file__).parent


def contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = config["tool"]["importlinter"]["contracts"]
    return [{name.strip() for name in re.split(r"[|:]", layer)} for layer in contract["layers"]]


def page_layers() -> list[set[str]]:
    page = (ROOT / "docs" / "explanation" / "layout.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| ")][1:]
    return [
        {re.sub(r"(/|\.py)$", "", room) for room in re.findall(r"`([^`]+)`", row.split(" | ")[1])}
        for row in rows
    ]


def package_rooms() -> set[str]:
    """The top-level modules and folders, without the shims left at moved modules' old
    paths for one release (they are no rooms: each only re-exports its new module)."""
    shims = {name.rpartition(".")[2] for name in MOVED_MODULES}
    return {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py" and path.stem not in shims)
        or (path.is_dir() and (path / "__init__.py").exists())
    }


def test_every_room_of_the_package_sits_in_exactly_one_layer() -> None:
    layers = contract_layers()
    placed = [room for layer in layers for room in layer]
    assert sorted(placed) == sorted(set(placed)), "a room is in two layers"
    assert set(placed) == package_rooms()


def test_the_layout_page_lists_the_contracts_layers_top_first() -> None:
    assert page_layers() == contract_layers()


def test_the_contract_is_short_enough_to_read_aloud() -> None:
    assert len(contract_layers()) <= 10
