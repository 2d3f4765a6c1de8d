"""``import aioinformer`` loads what an informer needs and no more: not the operator toolkit,
not aiohttp's web server, not the fake API server or the proxy. Each façade that imports its
names lazily (PEP 562) declares the same names for type checkers and for the import system."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys

import pytest

import aioinformer
import aioinformer.operator
from aioinformer._kernel.lazy import lazy_exports

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
    "aioinformer._pipeline",
    "aioinformer._pipeline.fifo_producers",
    "aioinformer._pipeline.fifo_waits",
    "aioinformer._pipeline.handlers",
    "aioinformer._pipeline.list_policy",
    "aioinformer._pipeline.meta",
    "aioinformer._pipeline.metric_recorders",
    "aioinformer._pipeline.model_guard",
    "aioinformer._pipeline.pending",
    "aioinformer._pipeline.raw",
    "aioinformer._pipeline.reflector_status",
    "aioinformer._pipeline.store_rv",
    "aioinformer._pipeline.view",
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


def checked_imports(module: object) -> dict[str, str]:
    """The names a façade imports under ``TYPE_CHECKING``, each to its module."""
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                for alias in statement.names:
                    assert alias.asname == alias.name  # re-exported, as type checkers read it
                    names[alias.name] = str(statement.module)
    return names


@pytest.mark.parametrize("facade", [aioinformer, aioinformer.operator], ids=lambda m: m.__name__)
def test_a_facade_imports_for_type_checkers_the_names_it_loads_lazily(facade: object) -> None:
    homes = vars(facade)["_HOMES"]
    lazily = {name: home for home, names in homes.items() for name in names}
    assert checked_imports(facade) == lazily
    assert set(lazily) <= set(vars(facade)["__all__"])


@pytest.mark.parametrize("facade", [aioinformer, aioinformer.operator], ids=lambda m: m.__name__)
def test_a_lazy_name_is_the_very_object_of_its_module_and_listed_by_dir(facade: object) -> None:
    for home, names in vars(facade)["_HOMES"].items():
        for name in names:
            assert name in dir(facade)
            assert getattr(facade, name) is getattr(importlib.import_module(home), name)


def test_a_name_of_no_home_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Contoller'"):
        getattr(aioinformer.operator, "Contoller")  # noqa: B009 - a typo mypy would refuse


def test_the_first_read_keeps_the_object_so_later_reads_skip_the_lookup() -> None:
    namespace: dict[str, object] = {}
    module = type(sys)("lazy_probe")
    module.__dict__.update(namespace)
    sys.modules["lazy_probe"] = module
    try:
        module_getattr, module_dir = lazy_exports("lazy_probe", {"json": ("dumps",)})
        import json

        assert module_getattr("dumps") is json.dumps
        assert module.__dict__["dumps"] is json.dumps
        assert "dumps" in module_dir()
        with pytest.raises(AttributeError, match="'lazy_probe' has no attribute 'loads'"):
            module_getattr("loads")
        fallback, _ = lazy_exports("lazy_probe", {}, otherwise=lambda name: f"moved {name}")
        assert fallback("loads") == "moved loads"
    finally:
        del sys.modules["lazy_probe"]
