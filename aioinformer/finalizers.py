"""Deprecated: this module moved to :mod:`aioinformer.operator.finalizers`.

Kept for one release, then removed: importing it warns (:class:`DeprecationWarning`) and
gives the new module's names, the same objects. Import from :mod:`aioinformer.operator`
instead.
"""

from __future__ import annotations

from aioinformer._kernel.deprecation import warn_moved_module
from aioinformer.operator.finalizers import *  # noqa: F403
from aioinformer.operator.finalizers import __all__ as __all__

warn_moved_module(__name__)
