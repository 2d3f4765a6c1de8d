"""Deprecated: this module moved to :mod:`aioinformer.operator.retry`.

Kept for one release, then removed: importing it warns (:class:`DeprecationWarning`) and
gives the new module's names, the same objects. Import from :mod:`aioinformer.operator`
instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aioinformer._kernel.deprecation import moved_attribute, warn_moved_module
from aioinformer.operator.retry import *  # noqa: F403
from aioinformer.operator.retry import __all__ as __all__

warn_moved_module(__name__)


if not TYPE_CHECKING:  # type checkers report the old names as missing, as they should

    def __getattr__(name: str) -> object:
        return moved_attribute(__name__, name)
