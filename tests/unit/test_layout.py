"""The layout page of the docs (docs/explanation/layout.md), the import contract in
pyproject.toml and the package's rooms (its top-level modules and folders) say the same
thing: every room sits in exactly one layer, and the page's table lists the contract's
layers, top first. The package keeps the contract: no import runs back up a layer or
across rooms that share one, and the client reaches no stage of the cache. No hand-written
module grows past 800 lines (those still over it are named, at their length)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest

import aioinformer
from aioinformer._kernel.deprecation import MOVED_MODULES

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(aioinformer.__file__).parent


def contract(kind: str) -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (found,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == kind]
    return dict(found)


def contract_layers() -> list[set[str]]:
    return [{name.strip() for name in re.split(r"[|:]", layer)} for layer in layers_contract()]


def layers_contract() -> list[str]:
    return list(contract("layers")["layers"])


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("aioinformer")


def room_of(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def page_layers() -> list[set[str]]:
    page = (ROOT / "docs" / "explanation" / "layout.md").read_text()
    # The first table of the page, the layers' (another, further down, says what moved).
    table = page[page.index("| layer |") :].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
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
    assert len(contract_layers()) <= 16


def test_every_layer_is_a_layer_its_rooms_independent_of_each_other() -> None:
    # ":" would let a layer's rooms import each other, which is how arrows back up hide.
    assert [layer for layer in layers_contract() if ":" in layer] == []


def test_no_import_runs_back_up_a_layer_or_across_a_layer(graph: grimp.ImportGraph) -> None:
    level = {room: depth for depth, layer in enumerate(contract_layers()) for room in layer}
    ignored = {tuple(rule.split(" -> ")) for rule in contract("layers")["ignore_imports"]}
    wrong = sorted(
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        # a room of the contract (not a moved module's shim) importing another room of
        # its own layer, or of one above
        if (mine := room_of(importer)) in level
        and (theirs := room_of(imported)) in level
        and mine != theirs
        and level[theirs] <= level[mine]
        and (importer, imported) not in ignored
    )
    assert wrong == []


def test_the_client_reaches_no_stage_of_the_cache(graph: grimp.ImportGraph) -> None:
    forbidden = contract("forbidden")
    assert forbidden["source_modules"] == ["aioinformer.client"]
    assert {"aioinformer.codec", "aioinformer.indexer"} <= set(forbidden["forbidden_modules"])
    reached = [
        stage
        for stage in forbidden["forbidden_modules"]
        if graph.chain_exists("aioinformer.client", stage, as_packages=True)
    ]
    assert reached == []


MAX_MODULE_LINES = 800
"""What a reader holds: no hand-written module is longer (generated ones say so on their
first line and are left out)."""

OVER_THE_LIMIT = {
    "aioinformer/informer.py": 1069,
    "aioinformer/processor.py": 1043,
    "aioinformer/reflector/_reflector.py": 802,
}
"""The per-event modules still to be split, at the length they have: one may shrink, not
grow, and a module leaves this table once it is under the limit."""


def test_no_hand_written_module_grows_past_what_a_reader_holds() -> None:
    over = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.startswith("# Generated by"):
            continue
        lines = text.count("\n")
        name = path.relative_to(ROOT).as_posix()
        if lines > MAX_MODULE_LINES:
            over[name] = lines
    grown = {name: n for name, n in over.items() if n > OVER_THE_LIMIT.get(name, MAX_MODULE_LINES)}
    assert not grown, f"split these by concept (at most {MAX_MODULE_LINES} lines): {grown}"
    shrunk = OVER_THE_LIMIT.keys() - over.keys()
    assert not shrunk, f"under the limit now, take them out of OVER_THE_LIMIT: {shrunk}"
