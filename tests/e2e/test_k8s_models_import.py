"""``import aioinformer`` imports none of the generated models of ``aioinformer.k8s``: only
a fresh interpreter can show it (this session has imported them), so it runs one."""

from __future__ import annotations

import subprocess
import sys


def test_importing_aioinformer_imports_no_generated_model() -> None:
    code = (
        "import sys, aioinformer, aioinformer.k8s\n"
        "print(sorted(m for m in sys.modules if m.startswith('aioinformer.k8s.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
