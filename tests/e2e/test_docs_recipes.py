"""The recipes the pages give behave as the pages say, beyond starting and syncing.

``test_docs_examples.py`` runs every program of the pages; a cluster program there is
stopped once its caches synced. Here the finalizer recipe of "Coming from kopf,
controller-runtime or kubernetes_asyncio" (``docs/how-to/coming-from.md``) runs, as a
reader saved it, against a fake API server that is then changed under it: a labelled
ConfigMap gets the finalizer and a backup, removing the label releases both, and a delete
afterwards ends with the object gone, not ``Terminating`` for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import TYPE_CHECKING, Any

from aioinformer import NotFound
from aioinformer.testing import FakeAPIServer, eventually
from tests.e2e.test_docs_examples import DOCS, Block, clean_environment, page_blocks, write_project

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

FINALIZER = "example.com/backup"
WAIT = 20.0
"""Seconds a change may take to show: bounds a failure only, a pass takes milliseconds."""


def finalizer_recipe() -> Block:
    """The page's aioinformer program of "A reconcile with a finalizer"."""
    blocks = page_blocks(DOCS / "how-to" / "coming-from.md")
    (block,) = [b for b in blocks if b.mode == "cluster" and b.name == "backup.py"]
    return block


@contextlib.asynccontextmanager
async def running(block: Block, project: Path, kubeconfig: str) -> AsyncIterator[list[str]]:
    """Run ``block`` with ``KUBECONFIG`` until its caches synced; SIGTERM it on leaving,
    which it must survive with exit 0. Yields the lines it printed so far."""
    write_project(project, block)
    env = clean_environment()
    env["KUBECONFIG"] = kubeconfig
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        block.name,
        cwd=project,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    output: list[str] = []
    synced = asyncio.Event()

    async def read_output() -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            output.append(line.decode(errors="replace"))
            if block.argument in output[-1]:
                synced.set()

    reader = asyncio.create_task(read_output())
    try:
        await asyncio.wait_for(synced.wait(), WAIT)
        yield output
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), WAIT) == 0, "".join(output)
        await asyncio.wait_for(reader, WAIT)
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


def config_map(server: FakeAPIServer, name: str) -> dict[str, Any] | None:
    try:
        return server.get("configmaps", "default", name)
    except NotFound:
        return None


def finalizers(obj: dict[str, Any] | None) -> list[str]:
    return [] if obj is None else list(obj["metadata"].get("finalizers") or [])


async def test_the_finalizer_recipe_lets_an_unlabelled_object_be_deleted(tmp_path: Path) -> None:
    block = finalizer_recipe()
    async with FakeAPIServer() as server:
        server.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings", "labels": {"backup": "true"}},
                "data": {"b": "2"},
            }
        )
        async with running(block, tmp_path / "project", server.kubeconfig_path()) as output:

            def log() -> str:
                return "".join(output)

            await eventually(
                lambda: (
                    FINALIZER in finalizers(config_map(server, "settings"))
                    and config_map(server, "settings-backup") is not None
                ),
                timeout=WAIT,
                message=f"labelled: no finalizer or no backup\n{log()}",
            )
            server.patch("configmaps", "default", "settings", {"metadata": {"labels": None}})
            await eventually(
                lambda: (
                    FINALIZER not in finalizers(config_map(server, "settings"))
                    and config_map(server, "settings-backup") is None
                ),
                timeout=WAIT,
                message=f"unlabelled: the finalizer or the backup stayed\n{log()}",
            )
            server.delete("configmaps", "default", "settings")
            await eventually(
                lambda: config_map(server, "settings") is None,
                timeout=WAIT,
                message=f"deleted: still there (Terminating)\n{log()}",
            )


async def test_the_finalizer_recipe_still_finalizes_a_labelled_object(tmp_path: Path) -> None:
    block = finalizer_recipe()
    async with FakeAPIServer() as server:
        server.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings", "labels": {"backup": "true"}},
                "data": {"b": "2"},
            }
        )
        async with running(block, tmp_path / "project", server.kubeconfig_path()) as output:
            await eventually(
                lambda: config_map(server, "settings-backup") is not None,
                timeout=WAIT,
                message="".join(output),
            )
            server.delete("configmaps", "default", "settings")
            await eventually(
                lambda: (
                    config_map(server, "settings") is None
                    and config_map(server, "settings-backup") is None
                ),
                timeout=WAIT,
                message="".join(output),
            )
