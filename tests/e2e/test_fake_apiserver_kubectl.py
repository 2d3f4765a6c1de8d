"""kubectl, a client no one here wrote, against ``FakeAPIServer(tls=True)``.

kubectl reads the fake's own kubeconfig alone: the CA in ``certificate-authority-data``
and the admin token, which kubectl sends only over TLS. What must hold, as against
kube-apiserver: discovery (aggregated, as kubectl asks for it); ``get``; ``create
configmap`` and the other generators, which send protobuf bodies; ``create -f`` and
``apply -f`` with kubectl's default strict validation, which reads ``/openapi/v3`` and
leaves validation to the server; ``run``, ``expose``, ``create job --from``; ``label``,
``annotate``, ``patch``, ``replace``, ``delete``; and a protobuf field the fake does not
decode is refused with a 415 that says to send JSON. The library's own client reaches
the server through the same kubeconfig.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
import yaml

from aioinformer.client import Client
from aioinformer.config import load_kube_config
from aioinformer.listwatch import ListOptions
from tests._support_cli import LINE_TIMEOUT, cli_env

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aioinformer.testing import FakeAPIServer

KUBECTL = shutil.which("kubectl")

pytestmark = [
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
    pytest.mark.fake_apiserver(tls=True),
]


async def kubectl(server: FakeAPIServer, home: Path, *args: str) -> tuple[int, str, str]:
    """Run ``kubectl ARGS`` with the server's kubeconfig; its exit code, stdout, stderr."""
    assert KUBECTL is not None
    env = cli_env()
    env["KUBECONFIG"] = server.kubeconfig_path()
    # kubectl caches discovery and OpenAPI documents under $HOME: one home per test.
    env["HOME"] = str(home)
    process = await asyncio.create_subprocess_exec(
        KUBECTL,
        "--request-timeout=20s",
        *args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    async with asyncio.timeout(LINE_TIMEOUT):
        out, err = await process.communicate()
    return process.returncode or 0, out.decode(), err.decode()


def manifest(tmp_path: Path, name: str, doc: Mapping[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def read_cluster(path: Path) -> dict[str, Any]:
    """The one cluster entry of a kubeconfig file."""
    cluster: dict[str, Any] = yaml.safe_load(path.read_text())["clusters"][0]["cluster"]
    return cluster


async def test_the_kubeconfig_carries_the_ca_and_the_library_client_trusts_it(
    fake_apiserver: FakeAPIServer,
) -> None:
    assert fake_apiserver.url.startswith("https://127.0.0.1:")
    path = Path(fake_apiserver.kubeconfig_path())
    cluster = read_cluster(path)
    assert cluster["server"] == fake_apiserver.url
    assert base64.b64decode(cluster["certificate-authority-data"]) == fake_apiserver.ca_pem
    async with Client(load_kube_config(path)) as client:
        page = await client.resource("v1/namespaces").list(ListOptions())
    assert "kube-system" in [item["metadata"]["name"] for item in page.items]
    async with fake_apiserver.client() as client:
        page = await client.resource("v1/namespaces").list(ListOptions())
    assert page.items


async def test_kubectl_gets_with_the_fakes_own_kubeconfig(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    fake_apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
    )
    code, out, err = await kubectl(fake_apiserver, tmp_path, "get", "pods")
    assert code == 0, err
    assert out.splitlines()[1].split()[0] == "web-0"
    # Aggregated discovery: /api and /apis say everything, no group version is asked.
    asked = {r.path for r in fake_apiserver.request_log}
    assert {"/api", "/apis"} <= asked
    assert "/api/v1" not in asked
    assert not any(path.startswith("/apis/") for path in asked)
    code, out, err = await kubectl(fake_apiserver, tmp_path, "get", "pod", "web-0", "-o", "json")
    assert code == 0, err
    assert orjson.loads(out)["metadata"]["labels"] == {"app": "web"}
    code, out, err = await kubectl(fake_apiserver, tmp_path, "get", "namespaces", "-o", "name")
    assert code == 0, err
    assert "namespace/kube-system" in out.split()
    code, _, err = await kubectl(fake_apiserver, tmp_path, "get", "pod", "nothing")
    assert code == 1
    assert 'pods "nothing" not found' in err


@pytest.mark.parametrize(
    ("args", "resource", "namespace", "name"),
    [
        pytest.param(
            ("create", "configmap", "settings", "--from-literal=mode=blue"),
            "configmaps",
            "default",
            "settings",
            id="configmap",
        ),
        pytest.param(
            ("create", "secret", "generic", "token", "--from-literal=key=s3cr=t"),
            "secrets",
            "default",
            "token",
            id="secret",
        ),
        pytest.param(("create", "namespace", "team-a"), "namespaces", None, "team-a", id="ns"),
        pytest.param(
            ("create", "serviceaccount", "robot"),
            "serviceaccounts",
            "default",
            "robot",
            id="serviceaccount",
        ),
        pytest.param(
            ("create", "deployment", "web", "--image=busybox", "--port=8080", "--replicas=0"),
            "deployments.apps",
            "default",
            "web",
            id="deployment",
        ),
        pytest.param(
            ("create", "service", "clusterip", "web", "--tcp=80:8080"),
            "services",
            "default",
            "web",
            id="service",
        ),
        pytest.param(
            ("create", "job", "once", "--image=busybox"),
            "jobs.batch",
            "default",
            "once",
            id="job",
        ),
        pytest.param(
            ("create", "cronjob", "tick", "--image=busybox", "--schedule=*/1 * * * *"),
            "cronjobs.batch",
            "default",
            "tick",
            id="cronjob",
        ),
        pytest.param(
            ("create", "ingress", "web", "--rule=example.com/api=web:80"),
            "ingresses.networking.k8s.io",
            "default",
            "web",
            id="ingress",
        ),
    ],
)
async def test_kubectl_generators_send_protobuf_the_fake_decodes(
    fake_apiserver: FakeAPIServer,
    tmp_path: Path,
    args: tuple[str, ...],
    resource: str,
    namespace: str | None,
    name: str,
) -> None:
    code, out, err = await kubectl(fake_apiserver, tmp_path, *args)
    assert code == 0, err
    assert "created" in out
    created = fake_apiserver.get(resource, namespace, name)
    assert created["metadata"]["managedFields"][0]["manager"] == "kubectl-create"
    posted = [r for r in fake_apiserver.request_log if r.method == "POST"]
    assert posted[-1].headers["Content-Type"] == "application/vnd.kubernetes.protobuf"
    if resource == "configmaps":
        assert created["data"] == {"mode": "blue"}
    if resource == "secrets":
        assert base64.b64decode(created["data"]["key"]) == b"s3cr=t"
    if resource == "deployments.apps":
        assert created["spec"]["replicas"] == 0
        [container] = created["spec"]["template"]["spec"]["containers"]
        assert container == {
            "name": "busybox",
            "image": "busybox",
            "ports": [{"containerPort": 8080}],
        }
    if resource == "services":
        assert created["spec"]["ports"] == [
            {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}
        ]
    if resource == "cronjobs.batch":
        assert created["spec"]["schedule"] == "*/1 * * * *"
    if resource == "ingresses.networking.k8s.io":
        [path] = created["spec"]["rules"][0]["http"]["paths"]
        assert path["backend"] == {"service": {"name": "web", "port": {"number": 80}}}


async def test_kubectl_run_expose_and_a_job_from_a_cronjob_reach_the_fake(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    # run and expose send JSON; create job --from copies the CronJob's template, in protobuf.
    code, out, err = await kubectl(fake_apiserver, tmp_path, "run", "one", "--image=busybox")
    assert code == 0, err
    assert "pod/one created" in out
    code, _, err = await kubectl(
        fake_apiserver, tmp_path, "create", "deployment", "web", "--image=busybox"
    )
    assert code == 0, err
    code, out, err = await kubectl(
        fake_apiserver, tmp_path, "expose", "deployment", "web", "--port=80", "--target-port=8080"
    )
    assert code == 0, err
    assert "service/web exposed" in out
    assert fake_apiserver.get("services", "default", "web")["spec"]["selector"] == {"app": "web"}
    code, _, err = await kubectl(
        fake_apiserver,
        tmp_path,
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=@daily",
    )
    assert code == 0, err
    code, out, err = await kubectl(
        fake_apiserver, tmp_path, "create", "job", "now", "--from=cronjob/tick"
    )
    assert code == 0, err
    job = fake_apiserver.get("jobs.batch", "default", "now")
    [owner] = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "tick", True)


async def test_kubectl_create_with_a_field_the_fake_does_not_decode_is_told_to_send_json(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    probe = {"exec": {"command": ["true"]}}
    container = {"name": "c", "image": "busybox", "livenessProbe": probe}
    fake_apiserver.create(
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "probed", "namespace": "default"},
            "spec": {
                "schedule": "@daily",
                "jobTemplate": {
                    "spec": {
                        "template": {"spec": {"containers": [container], "restartPolicy": "Never"}}
                    }
                },
            },
        }
    )
    code, _, err = await kubectl(
        fake_apiserver, tmp_path, "create", "job", "now", "--from=cronjob/probed"
    )
    assert code == 1
    assert "does not decode a protobuf Job (field 10 of Job.spec.template" in err
    assert "send it as JSON" in err
    assert fake_apiserver.objects("jobs.batch") == []


async def test_kubectl_create_and_apply_files_validate_on_the_server(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"mode": "blue"},
    }
    path = manifest(tmp_path, "settings.yaml", config_map)
    code, out, err = await kubectl(fake_apiserver, tmp_path, "create", "-f", path)
    assert code == 0, err
    assert "configmap/settings created" in out
    writes = [r for r in fake_apiserver.request_log if r.method in ("POST", "PATCH")]
    assert writes[-1].query["fieldValidation"] == "Strict"
    assert any(r.path == "/openapi/v3/api/v1" for r in fake_apiserver.request_log)

    config_map["data"] = {"mode": "green"}
    config_map["metadata"] = {"name": "settings", "labels": {"tier": "web"}}
    path = manifest(tmp_path, "settings.yaml", config_map)
    code, out, err = await kubectl(fake_apiserver, tmp_path, "apply", "-f", path)
    assert code == 0, err
    assert "configmap/settings configured" in out
    stored = fake_apiserver.get("configmaps", "default", "settings")
    assert stored["data"] == {"mode": "green"}
    assert stored["metadata"]["labels"] == {"tier": "web"}

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    path = manifest(tmp_path, "pod.yaml", pod)
    code, out, err = await kubectl(fake_apiserver, tmp_path, "apply", "-f", path)
    assert code == 0, err
    assert "pod/web created" in out
    assert fake_apiserver.get("pods", "default", "web")["spec"]["containers"][0]["image"] == "nginx"

    code, out, err = await kubectl(fake_apiserver, tmp_path, "delete", "-f", path)
    assert code == 0, err
    assert 'pod "web" deleted' in out
    assert fake_apiserver.objects("pods") == []


async def test_kubectl_labels_and_deletes(fake_apiserver: FakeAPIServer, tmp_path: Path) -> None:
    fake_apiserver.create_namespace("team-a")
    code, _, err = await kubectl(
        fake_apiserver, tmp_path, "-n", "team-a", "create", "configmap", "c", "--from-literal=a=b"
    )
    assert code == 0, err
    code, out, err = await kubectl(
        fake_apiserver, tmp_path, "-n", "team-a", "label", "configmap", "c", "team=edge"
    )
    assert code == 0, err
    assert "configmap/c labeled" in out
    labels = fake_apiserver.get("configmaps", "team-a", "c")["metadata"]["labels"]
    assert labels == {"team": "edge"}
    code, out, err = await kubectl(
        fake_apiserver, tmp_path, "get", "configmaps", "-A", "-l", "team=edge", "-o", "name"
    )
    assert code == 0, err
    assert out.split() == ["configmap/c"]
    code, out, err = await kubectl(fake_apiserver, tmp_path, "label", "namespace", "team-a", "x=y")
    assert code == 0, err
    code, out, err = await kubectl(fake_apiserver, tmp_path, "-n", "team-a", "delete", "cm", "c")
    assert code == 0, err
    assert 'configmap "c" deleted' in out
    assert fake_apiserver.objects("configmaps", "team-a") == []
    code, out, err = await kubectl(fake_apiserver, tmp_path, "delete", "namespace", "team-a")
    assert code == 0, err
    assert 'namespace "team-a" deleted' in out


async def test_kubectl_with_a_token_the_fake_does_not_know_is_unauthorized(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    assert KUBECTL is not None
    env = cli_env()
    env["KUBECONFIG"] = fake_apiserver.kubeconfig_path(token="not-a-token")
    env["HOME"] = str(tmp_path)
    process = await asyncio.create_subprocess_exec(
        KUBECTL, "get", "pods", stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    async with asyncio.timeout(LINE_TIMEOUT):
        _, err = await process.communicate()
    assert process.returncode == 1
    assert "You must be logged in to the server" in err.decode()


async def test_kubectl_annotates_patches_and_replaces(
    fake_apiserver: FakeAPIServer, tmp_path: Path
) -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"mode": "blue"},
    }
    path = manifest(tmp_path, "settings.yaml", config_map)
    code, _, err = await kubectl(fake_apiserver, tmp_path, "create", "-f", path)
    assert code == 0, err
    code, _, err = await kubectl(fake_apiserver, tmp_path, "annotate", "cm", "settings", "note=hi")
    assert code == 0, err
    patch = '{"data": {"size": "3"}}'
    code, _, err = await kubectl(fake_apiserver, tmp_path, "patch", "cm", "settings", "-p", patch)
    assert code == 0, err
    json_patch = '[{"op": "add", "path": "/data/tier", "value": "web"}]'
    code, _, err = await kubectl(
        fake_apiserver, tmp_path, "patch", "cm", "settings", "--type=json", "-p", json_patch
    )
    assert code == 0, err
    stored = fake_apiserver.get("configmaps", "default", "settings")
    assert stored["data"] == {"mode": "blue", "size": "3", "tier": "web"}
    assert stored["metadata"]["annotations"] == {"note": "hi"}

    config_map["data"] = {"mode": "red"}
    path = manifest(tmp_path, "settings.yaml", config_map)
    code, out, err = await kubectl(fake_apiserver, tmp_path, "replace", "-f", path)
    assert code == 0, err
    assert "configmap/settings replaced" in out
    assert fake_apiserver.get("configmaps", "default", "settings")["data"] == {"mode": "red"}
