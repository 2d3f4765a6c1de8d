"""The Manager example, run as a user runs it: the two-replica demo against the embedded
fake API server, and ``--cluster`` against a fake API server through a kubeconfig, stopped
by SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from aioinformer.errors import NotFound
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.testing import FakeAPIServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "manager_operator.py"
POLL = 0.01


def environment(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    env.update(extra)
    return env


def test_the_demo_hands_the_lease_over_and_keeps_checksums_current() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for line in [
        "stamped: {'app-config': '3412958b7967', 'db-config': 'aff27626eb1f'}",
        "replica a /readyz: 200",
        "replica b warm, leading: False",
        "replica a stopped; the lease is now held by 'b'",
        "app-config edited, re-stamped: True",
        "lease after both stopped: ''",
    ]:
        assert line in result.stdout, f"{line!r} not printed:\n{result.stdout}"


def lease_holder(server: FakeAPIServer) -> str | None:
    try:
        lease = server.get("leases", "default", "checksum-operator")
    except NotFound:
        return None
    holder: str = lease["spec"].get("holderIdentity", "")
    return holder


async def test_cluster_mode_stamps_serves_probes_and_exits_0_on_sigterm(
    fake_apiserver: FakeAPIServer, unused_tcp_port: int
) -> None:
    fake_apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app", "namespace": "default"},
            "data": {"value": "blue"},
        }
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLE),
        "--cluster",
        env=environment(
            KUBECONFIG=fake_apiserver.kubeconfig_path(),
            HEALTH_ADDRESS=f"127.0.0.1:{unused_tcp_port}",
        ),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:

        def stamped() -> bool:
            obj = fake_apiserver.get("configmaps", "default", "app")
            return "example.com/checksum" in obj["metadata"].get("annotations", {})

        await wait_until(stamped, timeout=30, poll=POLL)
        assert lease_holder(fake_apiserver)
        async with httpx.AsyncClient() as http:
            ready = await http.get(f"http://127.0.0.1:{unused_tcp_port}/readyz")
        assert ready.status_code == 200
        assert ready.json()["leader"] is True
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()
    assert lease_holder(fake_apiserver) == ""
