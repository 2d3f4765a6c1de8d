"""Optional integrations with third-party libraries.

Each submodule imports its library at import time and is imported only by users who
want it; nothing in the core imports ``aioinformer.contrib``.
"""

from __future__ import annotations

__all__: list[str] = []
