"""The ``__getattr__`` a module that lost names since the first release installs (PEP 562).

Kept apart from :mod:`aioinformer._kernel.deprecation` so that installing it costs an
import of this small module only: the table of moved names loads the first time an old
name is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


def moved_names(module: str, *, frames: int = 0) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``module``: each name that moved away from it, for one
    release more, with a ``DeprecationWarning`` naming its new place; ``AttributeError``
    for any other. ``frames``: the calls between the reader and this function, when a
    module's own ``__getattr__`` (a lazy façade's) hands the name on to it."""

    def module_getattr(name: str) -> object:
        if name.startswith("__"):  # the import system asks for ``__path__`` at every import
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        from aioinformer._kernel.deprecation import moved_attribute

        return moved_attribute(module, name, frames=frames)

    return module_getattr
