"""Every public module has a page in the API reference, and every page is in the site's
navigation: a module added to the package without one fails here, naming it."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import aioinformer
from aioinformer._kernel.deprecation import MOVED_MODULES
from tests._support_docs_hooks import load_hook

ROOT = Path(__file__).resolve().parents[2]
exports = load_hook("exports")

DOCUMENTED_ELSEWHERE = {"aioinformer.cli"}
"""The command's page is written from its argument parser (docs/reference/cli.md)."""

LISTED_NOT_WALKED = {"aioinformer.k8s"}
"""Generated models, one module per API group: the package's page introduces them."""


def public_modules(package: str = "aioinformer") -> set[str]:
    found: set[str] = set()
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        name = f"{package}.{info.name}"
        if info.name.startswith("_") or name in MOVED_MODULES:
            continue  # private, or the shim of a moved module, documented at its new place
        found.add(name)
        if info.ispkg and name not in LISTED_NOT_WALKED | DOCUMENTED_ELSEWHERE:
            found |= public_modules(name)
    return found


def documented_modules() -> dict[str, str]:
    """The module each API page renders, by the page's path under docs/."""
    return {f"reference/api/{page}": module for page, module in exports.api_pages().items()}


def test_every_public_module_has_an_api_page() -> None:
    expected = (public_modules() - DOCUMENTED_ELSEWHERE) | {aioinformer.__name__}
    assert sorted(documented_modules().values()) == sorted(expected)


def test_every_api_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    missing = [page for page in documented_modules() if f": {page}\n" not in nav]
    assert not missing
