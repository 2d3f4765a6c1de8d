"""The documentation site's build hooks (docs/_hooks), loaded for tests as mkdocs loads
them: each by its path, with its folder importable while it runs (they import each other
by name)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

HOOKS = Path(__file__).resolve().parents[1] / "docs" / "_hooks"


def load_hook(name: str) -> ModuleType:
    """The hook module ``docs/_hooks/NAME.py``."""
    spec = importlib.util.spec_from_file_location(f"docs_hooks_{name}", HOOKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    saved = sys.path.copy()
    sys.path.insert(0, str(HOOKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module
