"""A façade that imports a name's module the first time the name is read (PEP 562).

``import aioinformer`` should cost what an informer needs, not the operator toolkit and the
web server behind its health endpoints. A façade module declares, for each name it
re-exports, the module the name lives in; :func:`lazy_exports` gives it the module-level
``__getattr__`` and ``__dir__`` that import that module on the first read and keep the
object in the façade's namespace, so every later read is a plain attribute lookup and the
name is the very object of its module.

Type checkers do not run this: the façade imports the same names under ``TYPE_CHECKING``,
and ``tests/unit/test_light_import.py`` holds the two lists equal.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping


def lazy_exports(
    module: str,
    homes: Mapping[str, Iterable[str]],
    *,
    otherwise: Callable[[str], object] | None = None,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of façade ``module``, which re-exports the names
    of ``homes`` (a module name → the names taken from it).

    A name of no home goes to ``otherwise`` (the moved names' lookup, for instance), or
    raises ``AttributeError``.
    """
    home_of = {name: home for home, names in homes.items() for name in names}
    namespace = sys.modules[module].__dict__

    def module_getattr(name: str) -> object:
        home = home_of.get(name)
        if home is None:
            if otherwise is not None:
                return otherwise(name)
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def module_dir() -> list[str]:
        return sorted({*namespace, *home_of})

    return module_getattr, module_dir
