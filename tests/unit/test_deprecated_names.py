"""Every name that moved since the first release still works for one release: the old
name gives the new object itself and a ``DeprecationWarning`` that names the new one,
pointing at the caller's line; a moved module's old path is a shim that warns as it is
imported. Star imports and ``dir()`` never warn, and the changelog lists every old name.
(That ``import aioinformer`` imports no shim takes a fresh interpreter:
``tests/e2e/test_deprecated_names_import.py``.)"""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from pathlib import Path

import pytest

from aioinformer._kernel.deprecation import MOVED_MODULES, MOVED_NAMES, moved_attribute

ROOT = Path(__file__).resolve().parents[2]

OLD_NAMES = [
    (module, name, new) for module, names in MOVED_NAMES.items() for name, new in names.items()
]


def resolve(path: str) -> object:
    """The object a dotted path names, found without the deprecation machinery."""
    module, _, rest = path.partition(".NotificationKind.")
    if rest:
        return getattr(importlib.import_module(module).NotificationKind, rest)
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def import_quietly(module: str) -> object:
    """``module``, imported with a shim's own import warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return importlib.import_module(module)


def forget(module: str) -> None:
    """Drop ``module`` from the import system, so that importing it runs it again."""
    sys.modules.pop(module, None)
    parent, _, child = module.rpartition(".")
    vars(sys.modules[parent]).pop(child, None)


@pytest.mark.parametrize(("module", "name", "new"), OLD_NAMES, ids=lambda v: str(v))
def test_an_old_name_gives_the_new_object_and_a_warning_naming_it(
    module: str, name: str, new: str
) -> None:
    old_module = import_quietly(module)
    with pytest.warns(DeprecationWarning, match=re.escape(f"use {new} ")) as record:
        found = getattr(old_module, name)
    assert found is resolve(new)
    assert {warning.filename for warning in record} == {__file__}


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_MODULES.items()))
def test_a_moved_module_warns_on_import_and_gives_the_new_modules_objects(
    old: str, new: str
) -> None:
    forget(old)
    with pytest.warns(DeprecationWarning, match=re.escape(f"use {new} ")) as record:
        shim = importlib.import_module(old)
    assert {warning.filename for warning in record} == {__file__}
    target = importlib.import_module(new)
    assert shim.__all__ == target.__all__
    for name in target.__all__:
        assert getattr(shim, name) is getattr(target, name), name


def test_a_from_import_of_an_old_module_warns_at_the_importing_line() -> None:
    forget("aioinformer.manager")
    with pytest.warns(DeprecationWarning, match="use aioinformer.operator.manager ") as record:
        from aioinformer.manager import Manager
    from aioinformer.operator import Manager as NewManager

    assert Manager is NewManager
    assert {warning.filename for warning in record} == {__file__}


def test_a_name_that_never_moved_is_an_attribute_error_as_python_words_it() -> None:
    import aioinformer

    with pytest.raises(AttributeError, match="module 'aioinformer' has no attribute 'Nope'"):
        aioinformer.Nope  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError, match="cannot import name 'Nope'"):
        from aioinformer import Nope  # type: ignore[attr-defined]  # noqa: F401
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        moved_attribute("aioinformer.informer", "Nope")


@pytest.mark.parametrize("module", sorted(set(MOVED_NAMES) - set(MOVED_MODULES)))
def test_star_imports_and_dir_do_not_warn(module: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        imported = importlib.import_module(module)
        exec(f"from {module} import *", {})
        listed = dir(imported)
    assert not set(MOVED_NAMES[module]) & set(listed)


def test_the_changelog_lists_every_old_name_as_deprecated() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    deprecated = changelog.split("### Deprecated", 1)[1].split("\n### ", 1)[0]
    for module, name, new in OLD_NAMES:
        assert f"`{module}.{name}`" in deprecated, f"{module}.{name}"
        assert f"`{new}`" in deprecated, new
    for old, new in MOVED_MODULES.items():
        assert f"`{old}`" in deprecated, old
        assert f"`{new}`" in deprecated, new
