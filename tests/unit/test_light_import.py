"""Each façade that imports its names lazily (PEP 562) declares the same names for type
checkers and for the import system. What a fresh interpreter loads is checked in
``tests/e2e/test_light_import_e2e.py``, which runs one per check."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys

import pytest

import aioinformer
import aioinformer.operator
from aioinformer._kernel.lazy import lazy_exports


def checked_imports(module: object) -> dict[str, str]:
    """The names a façade imports under ``TYPE_CHECKING``, each to its module."""
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                for alias in statement.names:
                    assert alias.asname == alias.name  # re-exported, as type checkers read it
                    names[alias.name] = str(statement.module)
    return names


@pytest.mark.parametrize("facade", [aioinformer, aioinformer.operator], ids=lambda m: m.__name__)
def test_a_facade_imports_for_type_checkers_the_names_it_loads_lazily(facade: object) -> None:
    homes = vars(facade)["_HOMES"]
    lazily = {name: home for home, names in homes.items() for name in names}
    assert checked_imports(facade) == lazily
    assert set(lazily) <= set(vars(facade)["__all__"])


@pytest.mark.parametrize("facade", [aioinformer, aioinformer.operator], ids=lambda m: m.__name__)
def test_a_lazy_name_is_the_very_object_of_its_module_and_listed_by_dir(facade: object) -> None:
    for home, names in vars(facade)["_HOMES"].items():
        for name in names:
            assert name in dir(facade)
            assert getattr(facade, name) is getattr(importlib.import_module(home), name)


def test_a_name_of_no_home_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Contoller'"):
        getattr(aioinformer.operator, "Contoller")  # noqa: B009 - a typo mypy would refuse


def test_the_first_read_keeps_the_object_so_later_reads_skip_the_lookup() -> None:
    namespace: dict[str, object] = {}
    module = type(sys)("lazy_probe")
    module.__dict__.update(namespace)
    sys.modules["lazy_probe"] = module
    try:
        module_getattr, module_dir = lazy_exports("lazy_probe", {"json": ("dumps",)})
        import json

        assert module_getattr("dumps") is json.dumps
        assert module.__dict__["dumps"] is json.dumps
        assert "dumps" in module_dir()
        with pytest.raises(AttributeError, match="'lazy_probe' has no attribute 'loads'"):
            module_getattr("loads")
        fallback, _ = lazy_exports("lazy_probe", {}, otherwise=lambda name: f"moved {name}")
        assert fallback("loads") == "moved loads"
    finally:
        del sys.modules["lazy_probe"]
