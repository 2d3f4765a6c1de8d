"""``aioinformer demo --write-kubeconfig PATH``: the demo's fake API server serves HTTPS
and kubectl, reading PATH alone, sees the pods the demo churns; the file is gone when the
demo ends, and a PATH that cannot be written is a usage error."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest
import yaml

from tests._support_cli import LINE_TIMEOUT, cli_env, started_cli

if TYPE_CHECKING:
    from pathlib import Path

KUBECTL = shutil.which("kubectl")


def read_kubeconfig(path: Path) -> dict[str, object]:
    config: dict[str, object] = yaml.safe_load(path.read_text())
    return config


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
async def test_kubectl_lists_the_demos_pods_through_the_written_kubeconfig(
    tmp_path: Path,
) -> None:
    assert KUBECTL is not None
    kubeconfig = tmp_path / "demo.kubeconfig"
    async with started_cli(
        "demo", "--pods", "40", "--churn", "20", "--duration", "600",
        "--write-kubeconfig", str(kubeconfig),
    ) as running:  # fmt: skip
        line = await running.read_until(lambda line: "kubectl --kubeconfig" in line)
        assert line.strip().endswith(f"kubectl --kubeconfig {kubeconfig}")
        await running.read_until(lambda line: "churning:" in line)
        cluster = read_kubeconfig(kubeconfig)["clusters"]
        assert isinstance(cluster, list)
        assert cluster[0]["cluster"]["server"].startswith("https://127.0.0.1:")
        assert (kubeconfig.stat().st_mode & 0o777) == 0o600
        env = cli_env()
        env["HOME"] = str(tmp_path)
        process = await asyncio.create_subprocess_exec(
            KUBECTL, "--kubeconfig", str(kubeconfig), "get", "pods", "-o", "name",
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        async with asyncio.timeout(LINE_TIMEOUT):
            out, err = await process.communicate()
        assert process.returncode == 0, err.decode()
        names = out.decode().split()
        assert names
        assert all(name.startswith("pod/") for name in names)
        code, rest, err_text = await running.interrupt()
    assert code == 0, rest + err_text
    assert not kubeconfig.exists()


async def test_a_kubeconfig_path_that_cannot_be_written_is_a_usage_error(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-such-dir" / "demo.kubeconfig"
    async with started_cli(
        "demo", "--pods", "5", "--duration", "600", "--write-kubeconfig", str(missing)
    ) as running:
        line = await running.failure_line(code=2)
    assert line.startswith("aioinformer: error: cannot write --write-kubeconfig: ")
    assert "No such file or directory" in line
