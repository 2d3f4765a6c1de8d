"""``import aioinformer`` imports no shim of a moved module, nor the deprecation table: the
old names cost nothing until one is used. Only a fresh interpreter can show it (this
session has imported them), so it runs one."""

from __future__ import annotations

import subprocess
import sys

from aioinformer._kernel.deprecation import MOVED_MODULES


def test_importing_aioinformer_imports_no_shim_and_no_deprecation_table() -> None:
    watched = [*MOVED_MODULES, "aioinformer._kernel.deprecation"]
    code = (
        "import sys, warnings\n"
        "warnings.simplefilter('error')\n"
        "import aioinformer\n"
        "from aioinformer import *\n"
        "dir(aioinformer)\n"
        f"print(sorted(m for m in {watched!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
