"""``python -m aioinformer``: the same as the ``aioinformer`` command (see
:mod:`aioinformer.cli`)."""

from __future__ import annotations

import sys

from aioinformer.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
