"""The public surface is explicit: every public module lists ``__all__``, sorted, and
everything in it exists."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import aioinformer

PUBLIC_MODULES = sorted(
    name
    for _, name, _ in pkgutil.walk_packages(aioinformer.__path__, "aioinformer.")
    if not any(part.startswith("_") for part in name.split("."))
    and name not in {"aioinformer.__main__", "aioinformer.testing.plugin", "aioinformer.cli"}
)


@pytest.mark.parametrize("module_name", ["aioinformer", *PUBLIC_MODULES])
def test_all_is_sorted_and_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = module.__all__
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert hasattr(module, name), f"{module_name}.{name} is listed but missing"


def test_package_reexports_every_public_class_of_the_core() -> None:
    for module_name in PUBLIC_MODULES:
        # Test doubles and optional integrations are imported by their own path.
        if module_name.startswith(("aioinformer.testing", "aioinformer.contrib")):
            continue
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type):
                assert getattr(aioinformer, name, None) is value, (
                    f"{module_name}.{name} is not re-exported by aioinformer"
                )
