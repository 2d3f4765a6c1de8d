"""``import aioinformer`` loads what an informer needs and no more: not the operator toolkit,
not aiohttp's web server, not the fake API server or the proxy. Each check runs a fresh
interpreter, so these live beside the other subprocess tests."""

from __future__ import annotations

import subprocess
import sys

# What ``import aioinformer`` may load of the package: the stages, the client, the cache's
# helpers and the kernel. A new module here is a cost every user pays at import.
MAY_LOAD = {
    "aioinformer",
    "aioinformer._kernel",
    "aioinformer._kernel.backoff",
    "aioinformer._kernel.clock",
    "aioinformer._kernel.gcpolicy",
    "aioinformer._kernel.lazy",
    "aioinformer._kernel.lifecycle",
    "aioinformer._kernel.metrics",
    "aioinformer._kernel.moved",
    "aioinformer._kernel.runner",
    "aioinformer._kernel.sync",
    "aioinformer._objects",
    "aioinformer._objects.meta",
    "aioinformer._objects.raw",
    "aioinformer._objects.view",
    "aioinformer._pipeline",
    "aioinformer._pipeline.fifo_producers",
    "aioinformer._pipeline.fifo_waits",
    "aioinformer._pipeline.handlers",
    "aioinformer._pipeline.indexes",
    "aioinformer._pipeline.list_policy",
    "aioinformer._pipeline.metric_recorders",
    "aioinformer._pipeline.model_guard",
    "aioinformer._pipeline.pending",
    "aioinformer._pipeline.reflector_status",
    "aioinformer._pipeline.relist",
    "aioinformer._pipeline.store_rv",
    "aioinformer._pipeline.watch_policy",
    "aioinformer.audit",
    "aioinformer.client",
    "aioinformer.client._auth",
    "aioinformer.client._builtin",
    "aioinformer.client._client",
    "aioinformer.client._discovery",
    "aioinformer.client._encoding",
    "aioinformer.client._http",
    "aioinformer.client._metrics",
    "aioinformer.client._names",
    "aioinformer.client._resource",
    "aioinformer.client._tls",
    "aioinformer.client._transport",
    "aioinformer.client._watch",
    "aioinformer.client._write_args",
    "aioinformer.codec",
    "aioinformer.config",
    "aioinformer.delta_fifo",
    "aioinformer.errors",
    "aioinformer.factory",
    "aioinformer.health",
    "aioinformer.indexer",
    "aioinformer.informer",
    "aioinformer.labels",
    "aioinformer.lister",
    "aioinformer.listwatch",
    "aioinformer.models",
    "aioinformer.processor",
    "aioinformer.real_fifo",
    "aioinformer.reflector",
    "aioinformer.reflector._options",
    "aioinformer.reflector._reflector",
    "aioinformer.reflector._watch_read",
    "aioinformer.resource_version",
    "aioinformer.shard_selector",
    "aioinformer.transforms",
    "aioinformer.watch",
    "aioinformer.workqueue",
}

# Never loaded by ``import aioinformer``, whatever moves inside the package.
NEVER_LOADED = {"aiohttp.web", "aioinformer.operator", "aioinformer.testing", "aioinformer.proxy"}


def loaded_by(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``statement``."""
    script = f"{statement}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return set(done.stdout.split())


def test_importing_the_package_loads_only_what_an_informer_needs() -> None:
    loaded = loaded_by("import aioinformer")
    ours = {name for name in loaded if name.split(".")[0] == "aioinformer"}
    assert sorted(ours - MAY_LOAD) == []
    assert sorted(loaded & NEVER_LOADED) == []


def test_a_name_of_the_operator_toolkit_loads_its_module_only() -> None:
    loaded = loaded_by("from aioinformer.operator import Controller, generation_changed")
    assert {"aioinformer.operator.controller", "aioinformer.operator.predicates"} <= loaded
    assert "aioinformer.operator.manager" not in loaded
    assert "aiohttp.web" not in loaded


def test_asking_for_the_manager_loads_it() -> None:
    loaded = loaded_by("import aioinformer.operator as op\nop.Manager")
    assert "aioinformer.operator.manager" in loaded
