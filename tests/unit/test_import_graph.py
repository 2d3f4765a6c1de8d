"""The package's import graph has no circle: no module reaches itself through its imports,
type-only imports included (they are what a reader follows too)."""

from __future__ import annotations

import grimp


def test_no_module_imports_itself_through_a_chain_of_imports() -> None:
    graph = grimp.build_graph("aioinformer")
    circles = sorted(
        (importer, *chain)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if (chain := graph.find_shortest_chain(imported, importer))
    )
    assert circles == []
