"""Every example runs: each ``examples/*.py`` is executed as ``python examples/x.py``
(against the embedded fake API server) and must exit 0, printing what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# What an example must print, beyond exiting 0 (examples not listed: exit status only).
EXPECTED_OUTPUT: dict[str, list[str]] = {
    "minimal_informer.py": [
        "added   web-0 (initial list)",
        "updated web-1: labels {'app': 'demo', 'tier': 'front'}",
        "deleted web-2",
        "cache: ['web-0', 'web-1']",
    ],
    "index_by_label.py": [
        "synced: {'pods': True}",
        "app=web: ['default/db-0', 'default/web-0', 'kube-system/web-1']",
        "default, app=web: ['default/db-0', 'default/web-0']",
        "tier=cache: ['default/db-0']",
        "team=shop: ['default/web-0']",
        "cached: ['default/db-0', 'default/web-0', 'kube-system/web-1']",
        "live: True | index errors: 2",
        "last index error: IndexFuncError: index 'by-team' failed on default/db-0: "
        "KeyError: 'team'",
        "strict: pods (all namespaces): stopped before it synced: IndexFuncError: index "
        "'by-team' failed on default/db-0: KeyError: 'team'",
    ],
    "compact_cache.py": [
        "cache mode: compact",
        "keys from the initial list: ['default/db-0', 'default/web-0', 'default/web-1']",
        "tracked by the collector: False",
        "read: ObjectView True False",
        "image: busybox",
        "refused: ReadOnlyObjectError",
        "my copy says: {'app': 'changed locally'}",
        "cache still says: {'app': 'web'}",
        "app=web: ['web-0', 'web-1']",
        "key from the watch: default/db-0",
    ],
    "typed_pods.py": [
        "cached  web-0: image=nginx:1.27 limits={'memory': '128Mi'} node=node-1",
        "cached  web-1: image=nginx:1.27 limits={'memory': '256Mi'} node=node-1",
        "updated web-1 labels {'app': 'web', 'tier': 'front'}",
        "type: Pod | apiVersion: v1",
    ],
    "rewrite_endpoints.py": [
        "upstream shop/web: 10.1.0.10:8080 10.1.0.11:8080",
        "served   default/kubernetes: 172.18.0.2:6443",
        "served   shop/web: 10.0.0.100:8443 (backends 10.1.0.10:8080,10.1.0.11:8080)",
        "served   shop/api: 10.0.0.100:8443 (backends 10.1.1.20:8080)",
        "watch   modified shop/web: 10.0.0.100:8443 "
        "(backends 10.1.0.10:8080,10.1.0.11:8080,10.1.0.12:8080)",
        "watch   added shop/batch: 10.0.0.100:8443 (backends 10.1.2.30:8080)",
        "watch   deleted shop/api",
        "ingress cache: ['default/kubernetes', 'shop/batch', 'shop/web']",
        "upstream watches: 1, changes served: 3",
        "upstream unchanged: shop/web: 10.1.0.10:8080 10.1.0.11:8080 10.1.0.12:8080",
    ],
    "read_your_writes.py": [
        "reconcile: created",
        "the informer's cache alone holds: []",
        "reconcile again at once: up to date",
        "reconcile: patched",
        "remove: deleted",
        "the informer's cache alone holds: ['settings']",
        "remove again at once: already gone",
        "list: []",
        "reads that waited: 3, timed out: 0",
    ],
    "own_lister_watcher.py": [
        "informer: PodsOverHTTP",
        "synced: ['default/web-0', 'default/web-1', 'default/web-2']",
        "deleted while away: default/web-2",
        "cache: ['default/web-0', 'default/web-1', 'default/web-3']",
        "relists: 1 | last error: Gone",
    ],
    "cache_audit.py": [
        "server has: ['default/web-0', 'default/web-2']",
        "cache still has: True",
        "audit found: extra ['default/web-1']; relisting",
        "live while the cache is wrong: False",
        "on_delete default/web-1 (a tombstone: the delete itself was never seen)",
        "cache: ['default/web-0', 'default/web-2']",
        "live again: True",
        "on demand: consistent, 2 listed",
    ],
    "controller_metrics.py": [
        'controller_runtime_reconcile_total{controller="owners",result="error"} 1.0',
        'controller_runtime_reconcile_total{controller="owners",result="requeue_after"} 1.0',
        'controller_runtime_reconcile_total{controller="owners",result="requeue"} 1.0',
        'controller_runtime_reconcile_total{controller="owners",result="success"} 4.0',
        'controller_runtime_reconcile_errors_total{controller="owners"} 1.0',
        'controller_runtime_active_workers{controller="owners"} 0.0',
        'controller_runtime_max_concurrent_reconciles{controller="owners"} 2.0',
        "requests answered 409 to PUT: 1",
        "GET requests timed: True",
    ],
    "lifecycle.py": [
        "server: RUNNING",
        "informer before its run: NEW",
        "informer ready: RUNNING cache: ['default/web-0']",
        "informer asked to stop: STOPPING",
        "informer after its run: STOPPED",
        "factory: RUNNING | its informer: RUNNING",
        "factory after shutdown(): STOPPED | its informer: STOPPED",
        "server: STOPPED",
    ],
    "sharded_operator.py": [
        "assigned and stamped: a: 11, b: 11, c: 8",
        "leases: a, b, c, configmaps-sharder",
        "c stopped; its ConfigMaps moved: a: 16, b: 14",
        "d joined; drained to it: a: 14, b: 9, d: 7",
    ],
    "two_handlers_with_resync.py": [
        "auditor:  {'added': 2, 'changed': 1, 'resynced': 4}",
        "notifier: {'added': 2, 'updated': 1}",
    ],
}


def test_the_examples_with_expected_output_exist() -> None:
    present = {path.name for path in EXAMPLES.glob("*.py")}
    assert set(EXPECTED_OUTPUT) <= present


# Example test files (``test_*.py``) are pytest modules, run by their own test.
SCRIPTS = sorted(path.name for path in EXAMPLES.glob("*.py") if not path.name.startswith("test_"))


@pytest.mark.slow
@pytest.mark.parametrize("example", SCRIPTS, ids=lambda name: name[:-3])
def test_example_runs_against_the_fake_api_server(example: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / example)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for line in EXPECTED_OUTPUT.get(example, []):
        assert line in result.stdout, f"{line!r} not printed:\n{result.stdout}"
