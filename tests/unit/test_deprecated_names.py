"""Every name that moved since the first release still works for one release: the old
name gives the new object itself and a ``DeprecationWarning`` that names the new one,
pointing at the caller's line; a moved module's old path is a shim that warns as it is
imported. The old state enums give a stand-in whose every old member is the ``State``
member now meant, and a name with no public successor the object it became, each with a
warning. Star imports and ``dir()`` never warn, and the changelog lists every old name.
(That ``import aioinformer`` imports no shim takes a fresh interpreter:
``tests/e2e/test_deprecated_names_import.py``.)"""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from aioinformer import State
from aioinformer._kernel.deprecation import (
    MOVED_MODULES,
    MOVED_NAMES,
    OLD_STATE_ENUMS,
    RETIRED_NAMES,
    OldStateEnum,
    moved_attribute,
    old_state_enum,
)

ROOT = Path(__file__).resolve().parents[2]

OLD_NAMES = [
    (module, name, new) for module, names in MOVED_NAMES.items() for name, new in names.items()
]

OLD_MEMBERS = [
    (enum, member, old_value, new)
    for enum, members in OLD_STATE_ENUMS.items()
    for member, (old_value, new) in members.items()
]

RETIRED = [
    (module, name, retired.path, retired.instead)
    for module, names in RETIRED_NAMES.items()
    for name, retired in names.items()
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
    if name in OLD_STATE_ENUMS:
        assert found is old_state_enum(name)
        assert list(found) == list(State)
    else:
        assert found is resolve(new)
    assert {warning.filename for warning in record} == {__file__}


def old_enum(name: str) -> OldStateEnum:
    """The old state enum ``name`` as a user meets it, from the first module that had it."""
    module = next(module for module, names in MOVED_NAMES.items() if name in names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        found: OldStateEnum = getattr(import_quietly(module), name)
    return found


@pytest.mark.parametrize(("enum", "member", "old_value", "new"), OLD_MEMBERS, ids=str)
def test_an_old_enum_member_is_the_state_now_meant_and_warns_if_renamed(
    enum: str, member: str, old_value: str, new: str
) -> None:
    old = old_enum(enum)
    if member == new:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert getattr(old, member) is State[new]
            assert old[member] is State[new]
        return
    message = re.escape(f"{enum}.{member} is deprecated: use aioinformer.State.{new} ")
    with pytest.warns(DeprecationWarning, match=message) as by_attribute:
        assert getattr(old, member) is State[new]
    with pytest.warns(DeprecationWarning, match=message) as by_item:
        assert old[member] is State[new]
    assert {warning.filename for warning in [*by_attribute, *by_item]} == {__file__}


@pytest.mark.parametrize(("enum", "member", "old_value", "new"), OLD_MEMBERS, ids=str)
def test_an_old_enum_called_with_an_old_value_gives_the_state_now_meant(
    enum: str, member: str, old_value: str, new: str
) -> None:
    old = old_enum(enum)
    if old_value == State[new].value:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert old(old_value) is State[new]
        return
    with pytest.warns(
        DeprecationWarning, match=re.escape(f"use aioinformer.State.{new} ")
    ) as record:
        assert old(old_value) is State[new]
    assert {warning.filename for warning in record} == {__file__}


@pytest.mark.parametrize("enum", sorted(OLD_STATE_ENUMS))
def test_an_old_enum_stands_for_state_in_checks_and_names_only_its_members(enum: str) -> None:
    old = old_enum(enum)
    as_class: Any = old  # isinstance() takes it, as it takes any __instancecheck__
    for state in State:
        assert isinstance(state, as_class)
        assert state in old
        assert old(state.value) is state
    assert not isinstance("running", as_class)
    assert "running" not in old
    assert len(old) == len(State)
    members = {name: State[new] for name, (_, new) in OLD_STATE_ENUMS[enum].items()}
    assert old.__members__ == members
    assert repr(old) == f"<deprecated {enum}: aioinformer.State>"
    with pytest.raises(AttributeError, match=f"{enum} has no member 'WAITING'"):
        old.WAITING  # noqa: B018
    with pytest.raises(KeyError, match="WAITING"):
        old["WAITING"]
    with pytest.raises(ValueError, match="'nope' is not a valid State"):
        old("nope")


def test_a_mapped_member_has_the_new_name_and_value() -> None:
    """The limit the changelog states: ``ElectorState.LEADING.value`` was ``"LEADING"``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        leading = old_enum("ElectorState").LEADING
    assert (leading.name, leading.value) == ("RUNNING", "running")


def test_every_module_gives_the_same_old_enum() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        found = {
            (name, id(getattr(import_quietly(module), name)))
            for module, names in MOVED_NAMES.items()
            for name in names
            if name in OLD_STATE_ENUMS
        }
    assert len(found) == len(OLD_STATE_ENUMS)


def test_the_changelog_maps_every_renamed_member_as_the_table_does() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    migrating = changelog.split("### Migrating from 0.1.0", 1)[1].split("\n## ", 1)[0]
    rows = {
        line.split("|")[1].strip(): line.split("|")[2].strip()
        for line in migrating.splitlines()
        if line.startswith("| `")
    }
    for enum, member, _, new in OLD_MEMBERS:
        if member == new:
            continue
        (row,) = [old for old in rows if f"`{enum}.{member}`" in old]
        assert f"`State.{new}`" in rows[row], (enum, member)


@pytest.mark.parametrize(("module", "name", "path", "instead"), RETIRED, ids=str)
def test_a_name_with_no_successor_gives_its_object_and_says_what_to_use(
    module: str, name: str, path: str, instead: str
) -> None:
    old_module = importlib.import_module(module)
    message = re.escape(f"{module}.{name} is deprecated and has no public successor: {instead}")
    with pytest.warns(DeprecationWarning, match=message) as record:
        found = getattr(old_module, name)
    assert found is resolve(path)
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


@pytest.mark.parametrize("module", sorted({*MOVED_NAMES, *RETIRED_NAMES} - set(MOVED_MODULES)))
def test_star_imports_and_dir_do_not_warn(module: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        imported = importlib.import_module(module)
        exec(f"from {module} import *", {})
        listed = dir(imported)
    old = {*MOVED_NAMES.get(module, {}), *RETIRED_NAMES.get(module, {})}
    assert not old & set(listed)


def test_the_changelog_lists_every_old_name_as_deprecated() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    deprecated = changelog.split("### Deprecated", 1)[1].split("\n### ", 1)[0]
    for module, name, new in OLD_NAMES:
        assert f"`{module}.{name}`" in deprecated, f"{module}.{name}"
        assert f"`{new}`" in deprecated, new
    for old, new in MOVED_MODULES.items():
        assert f"`{old}`" in deprecated, old
        assert f"`{new}`" in deprecated, new
    removed = changelog.split("### Removed", 1)[1].split("\n### ", 1)[0]
    for module, name, _, _ in RETIRED:
        assert f"`{module}.{name}`" in deprecated, f"{module}.{name}"
        assert f"`{module}.{name}`" not in removed, f"{module}.{name}"
