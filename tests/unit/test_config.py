"""Kubeconfig and in-cluster loading: contexts, merging, paths, every failure naming its
file, context and field, and ``Client.from_env()`` end to end over HTTP."""

from __future__ import annotations

import base64
import os
from typing import TYPE_CHECKING, Any

import orjson
import pytest
import yaml
from aiohttp import web

from aioinformer.client import Client
from aioinformer.config import (
    Config,
    ExecConfig,
    load_config,
    load_incluster_config,
    load_kube_config,
)
from aioinformer.errors import ConfigError
from aioinformer.listwatch import ListOptions
from aioinformer.models import KubeConfig
from tests._support_http import DiscoveryServer, json_response, serve

if TYPE_CHECKING:
    from pathlib import Path

CA_PEM = "-----BEGIN CERTIFICATE-----\nTUlJQ2FrZQ==\n-----END CERTIFICATE-----\n"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def kubeconfig(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "dev",
                "cluster": {
                    "server": "https://dev.example:6443",
                    "certificate-authority-data": b64(CA_PEM),
                },
            },
            {
                "name": "prod",
                "cluster": {
                    "server": "https://prod.example",
                    "insecure-skip-tls-verify": True,
                    "tls-server-name": "kube.prod",
                    "proxy-url": "http://proxy:3128",
                },
            },
        ],
        "users": [
            {"name": "alice", "user": {"token": "alice-token"}},
            {"name": "bob", "user": {"username": "bob", "password": "pw"}},
        ],
        "contexts": [
            {"name": "dev", "context": {"cluster": "dev", "user": "alice", "namespace": "team-a"}},
            {"name": "prod", "context": {"cluster": "prod", "user": "bob"}},
        ],
        "current-context": "dev",
    }
    doc.update(overrides)
    return doc


def write(path: Path, doc: Any) -> Path:
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def test_current_context_is_loaded_with_its_namespace_and_ca(tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig())
    config = load_kube_config(path)
    assert config.host == "https://dev.example:6443"
    assert config.namespace == "team-a"
    assert config.token == "alice-token"
    assert config.ca_data == CA_PEM
    assert (config.context, config.source) == ("dev", str(path))


def test_an_explicit_context_overrides_current_context(tmp_path: Path) -> None:
    config = load_kube_config(write(tmp_path / "config", kubeconfig()), context="prod")
    assert config.namespace == "default"
    assert (config.username, config.password) == ("bob", "pw")
    assert config.insecure_skip_tls_verify is True
    assert config.tls_server_name == "kube.prod"
    assert config.proxy_url == "http://proxy:3128"


def test_kubeconfig_env_merges_files_first_definition_wins(tmp_path: Path) -> None:
    first = write(
        tmp_path / "a",
        {
            "clusters": [{"name": "dev", "cluster": {"server": "https://first.example"}}],
            "users": [{"name": "alice", "user": {"token": "first-token"}}],
        },
    )
    second = write(tmp_path / "b", kubeconfig())
    missing = tmp_path / "does-not-exist"
    env = {"KUBECONFIG": os.pathsep.join([str(missing), str(first), "", str(second)])}
    config = load_kube_config(environ=env)
    assert config.host == "https://first.example"
    assert config.token == "first-token"
    assert config.context == "dev"  # current-context from the second file: the first has none
    assert config.source == os.pathsep.join([str(first), str(second)])


def test_current_context_comes_from_the_first_file_setting_it(tmp_path: Path) -> None:
    first = write(tmp_path / "a", {"current-context": "prod"})
    second = write(tmp_path / "b", kubeconfig())
    config = load_kube_config(environ={"KUBECONFIG": f"{first}{os.pathsep}{second}"})
    assert config.context == "prod"


def test_default_path_is_home_dot_kube_config(tmp_path: Path) -> None:
    (tmp_path / ".kube").mkdir()
    write(tmp_path / ".kube" / "config", kubeconfig())
    assert load_kube_config(environ={"HOME": str(tmp_path)}).context == "dev"


def test_relative_paths_resolve_against_the_defining_file(tmp_path: Path) -> None:
    directory = tmp_path / "conf"
    (directory / "pki").mkdir(parents=True)
    (directory / "pki" / "ca.crt").write_text(CA_PEM)
    (directory / "pki" / "client.crt").write_text("cert")
    (directory / "pki" / "client.key").write_text("key")
    (directory / "token").write_text("file-token")
    doc = kubeconfig(
        clusters=[
            {
                "name": "dev",
                "cluster": {"server": "https://x", "certificate-authority": "pki/ca.crt"},
            }
        ],
        users=[
            {
                "name": "alice",
                "user": {
                    "client-certificate": "pki/client.crt",
                    "client-key": "pki/client.key",
                    "tokenFile": "token",
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "./bin/plugin",
                        "args": ["get-token"],
                        "env": [{"name": "A", "value": "1"}],
                        "provideClusterInfo": True,
                    },
                },
            }
        ],
    )
    config = load_kube_config(write(directory / "config", doc))
    assert config.ca_file == str(directory / "pki" / "ca.crt")
    assert config.cert_file == str(directory / "pki" / "client.crt")
    assert config.key_file == str(directory / "pki" / "client.key")
    assert config.token_file == str(directory / "token")
    assert config.exec == ExecConfig(
        command=str(directory / "bin" / "plugin"),
        args=("get-token",),
        env={"A": "1"},
        api_version="client.authentication.k8s.io/v1beta1",
        provide_cluster_info=True,
    )


def test_bare_exec_command_is_left_for_path_lookup(tmp_path: Path) -> None:
    doc = kubeconfig(
        users=[
            {
                "name": "alice",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "aws-iam-authenticator",
                    }
                },
            }
        ]
    )
    config = load_kube_config(write(tmp_path / "config", doc))
    assert config.exec is not None
    assert config.exec.command == "aws-iam-authenticator"


def user_doc(user: dict[str, Any]) -> dict[str, Any]:
    return kubeconfig(users=[{"name": "alice", "user": user}])


@pytest.mark.parametrize(
    ("doc", "context", "fragments"),
    [
        pytest.param("clusters: [unclosed", None, ["does not parse", "line 1"], id="bad-yaml"),
        pytest.param("- just\n- a list\n", None, ["not a mapping"], id="not-a-mapping"),
        pytest.param({"clusters": "nope"}, None, ["field clusters"], id="wrong-type"),
        pytest.param(
            kubeconfig(**{"current-context": None}),
            None,
            ["current-context is not set"],
            id="no-context",
        ),
        pytest.param(
            kubeconfig(), "staging", ["context 'staging' is not defined"], id="unknown-context"
        ),
        pytest.param(
            kubeconfig(contexts=[{"name": "dev", "context": {"cluster": "gone", "user": "alice"}}]),
            None,
            ["context 'dev'", "context.cluster", "'gone'"],
            id="unknown-cluster",
        ),
        pytest.param(
            kubeconfig(contexts=[{"name": "dev", "context": {"cluster": "dev", "user": "carol"}}]),
            None,
            ["context 'dev'", "context.user", "'carol'"],
            id="unknown-user",
        ),
        pytest.param(
            kubeconfig(
                clusters=[
                    {"name": "dev", "cluster": {"certificate-authority": "/nonexistent/ca.crt"}}
                ]
            ),
            None,
            ["clusters[dev].server", "is not set"],
            id="no-server",
        ),
        pytest.param(
            kubeconfig(
                clusters=[
                    {
                        "name": "dev",
                        "cluster": {
                            "server": "https://x",
                            "certificate-authority": "/nonexistent/ca.crt",
                        },
                    }
                ]
            ),
            None,
            ["context 'dev'", "clusters[dev].certificate-authority", "/nonexistent/ca.crt"],
            id="unreadable-ca",
        ),
        pytest.param(
            user_doc(
                {"client-certificate": "/nonexistent/c.crt", "client-key": "/nonexistent/c.key"}
            ),
            None,
            ["users[alice].client-certificate", "cannot read"],
            id="unreadable-cert",
        ),
        pytest.param(
            user_doc({"tokenFile": "/nonexistent/token"}),
            None,
            ["users[alice].tokenFile"],
            id="unreadable-token-file",
        ),
        pytest.param(
            user_doc({"client-key-data": "!!not base64!!", "client-certificate-data": b64("c")}),
            None,
            ["users[alice].client-key-data", "base64"],
            id="bad-base64",
        ),
        pytest.param(
            user_doc({"auth-provider": {"name": "gcp"}}),
            None,
            ["auth-provider", "'gcp'", "exec"],
            id="auth-provider",
        ),
        pytest.param(
            user_doc(
                {"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}}
            ),
            None,
            ["users[alice].exec", "v1alpha1"],
            id="exec-old-version",
        ),
        pytest.param(
            user_doc(
                {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "x",
                        "interactiveMode": "Always",
                    }
                }
            ),
            None,
            ["interactiveMode"],
            id="exec-interactive",
        ),
        pytest.param(user_doc({"username": "u"}), None, ["username and password"], id="half-basic"),
        pytest.param(
            user_doc({"client-certificate-data": b64("c")}),
            None,
            ["without its key"],
            id="cert-without-key",
        ),
        pytest.param(
            kubeconfig(
                clusters=[
                    {
                        "name": "dev",
                        "cluster": {"server": "https://x", "proxy-url": "socks5://p:1080"},
                    }
                ]
            ),
            None,
            ["proxy-url", "socks5"],
            id="socks-proxy",
        ),
        pytest.param(
            kubeconfig(clusters=[{"name": "dev", "cluster": {"server": "dev.example:6443"}}]),
            None,
            ["context 'dev'", "not an http(s) URL"],
            id="server-not-a-url",
        ),
    ],
)
def test_unusable_kubeconfig_raises_config_error_naming_file_context_and_field(
    tmp_path: Path, doc: Any, context: str | None, fragments: list[str]
) -> None:
    path = write(tmp_path / "config", doc)
    with pytest.raises(ConfigError) as info:
        load_kube_config(path, context=context)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message


def test_credentials_are_not_quoted_in_config_errors(tmp_path: Path) -> None:
    doc = user_doc({"token": ["secret-in-a-list"]})
    with pytest.raises(ConfigError) as info:
        load_kube_config(write(tmp_path / "config", doc))
    assert "users.0.user.token" in str(info.value)
    assert "secret-in-a-list" not in str(info.value)


def test_missing_kubeconfig_files_raise_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_kube_config(tmp_path / "nope")
    with pytest.raises(ConfigError, match="none of the listed"):
        load_kube_config(environ={"KUBECONFIG": str(tmp_path / "nope")})
    with pytest.raises(ConfigError, match="KUBECONFIG is unset"):
        load_kube_config(environ={"HOME": str(tmp_path)})


def test_empty_kubeconfig_has_no_context(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="current-context is not set"):
        load_kube_config(write(tmp_path / "config", ""))


def test_kubeconfig_model_parses_kebab_case_and_hides_credentials() -> None:
    model = KubeConfig.model_validate(
        kubeconfig(users=[{"name": "u", "user": {"token": "tok-123"}}])
    )
    assert model.current_context == "dev"
    assert model.clusters[1].cluster.insecure_skip_tls_verify is True
    assert model.users[0].user.token == "tok-123"
    assert "tok-123" not in repr(model)
    assert KubeConfig.model_validate({"clusters": None}).clusters == []


# ----------------------------------------------------------------------------- in-cluster


def service_account(tmp_path: Path, *, namespace: str | None = "apps") -> Path:
    directory = tmp_path / "sa"
    directory.mkdir()
    (directory / "token").write_text("sa-token")
    (directory / "ca.crt").write_text(CA_PEM)
    if namespace is not None:
        (directory / "namespace").write_text(namespace + "\n")
    return directory


IN_CLUSTER_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def test_in_cluster_config_reads_the_service_account(tmp_path: Path) -> None:
    directory = service_account(tmp_path)
    config = load_incluster_config(environ=IN_CLUSTER_ENV, service_account_dir=directory)
    assert config.host == "https://10.96.0.1:443"
    assert config.namespace == "apps"
    assert config.token is None
    assert config.token_file == str(directory / "token")  # re-read on rotation
    assert config.ca_file == str(directory / "ca.crt")
    assert config.source == "in-cluster"


def test_in_cluster_ipv6_host_is_bracketed_and_namespace_defaults(tmp_path: Path) -> None:
    directory = service_account(tmp_path, namespace=None)
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}
    config = load_incluster_config(environ=env, service_account_dir=directory)
    assert config.host == "https://[fd00::1]:6443"
    assert config.namespace == "default"


@pytest.mark.parametrize(
    ("env", "with_token", "message"),
    [
        pytest.param({}, True, "KUBERNETES_SERVICE_HOST", id="no-env"),
        pytest.param(IN_CLUSTER_ENV, False, "token", id="no-token"),
    ],
)
def test_in_cluster_config_without_its_parts_raises(
    tmp_path: Path, env: dict[str, str], with_token: bool, message: str
) -> None:
    directory = service_account(tmp_path)
    if not with_token:
        (directory / "token").unlink()
    with pytest.raises(ConfigError, match=message):
        load_incluster_config(environ=env, service_account_dir=directory)


def test_load_config_prefers_in_cluster_when_available(tmp_path: Path) -> None:
    directory = service_account(tmp_path)
    kube = write(tmp_path / "config", kubeconfig())
    env = {**IN_CLUSTER_ENV, "KUBECONFIG": str(kube)}
    assert load_config(environ=env, service_account_dir=directory).source == "in-cluster"
    assert load_config(environ=env, service_account_dir=tmp_path / "absent").context == "dev"
    assert load_config(environ=env, service_account_dir=directory, context="prod").context == "prod"


# ----------------------------------------------------------------------------- Config


def test_config_needs_only_a_host() -> None:
    config = Config(host="http://127.0.0.1:1234/", token="abc")
    assert config.host == "http://127.0.0.1:1234"
    assert config.namespace == "default"
    assert (config.ca_data, config.exec, config.insecure_skip_tls_verify) == (None, None, False)
    assert repr(config) == "<Config host='http://127.0.0.1:1234' namespace='default' auth=token>"


def test_config_is_immutable() -> None:
    config = Config(host="http://127.0.0.1:1234")
    with pytest.raises(AttributeError):
        config.host = "http://elsewhere"  # type: ignore[misc]


# ----------------------------------------------------------------------------- from_env


async def test_client_from_env_lists_and_watches_pods_through_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = web.Application()
    DiscoveryServer().install(app)
    seen_auth: list[str | None] = []

    async def pods(request: web.Request) -> web.StreamResponse:
        seen_auth.append(request.headers.get("Authorization"))
        pod = {"metadata": {"name": "web-0", "namespace": "team-a", "resourceVersion": "3"}}
        if request.query.get("watch") == "1":
            response = web.StreamResponse()
            await response.prepare(request)
            await response.write(orjson.dumps({"type": "ADDED", "object": pod}) + b"\n")
            return response
        return json_response(
            {
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": "3"},
                "items": [pod],
            }
        )

    app.router.add_get("/api/v1/namespaces/team-a/pods", pods)
    async with serve(app) as url:
        doc = kubeconfig(clusters=[{"name": "dev", "cluster": {"server": url}}])
        monkeypatch.setenv("KUBECONFIG", str(write(tmp_path / "config", doc)))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        async with Client.from_env() as client:
            pods_client = client.resource("pods", namespace=client.config.namespace)
            page = await pods_client.list(ListOptions())
            events = [
                ev
                async for ev in pods_client.watch(
                    ListOptions(resource_version=page.resource_version)
                )
            ]
    assert [item["kind"] for item in page.items] == ["Pod"]
    assert [(ev.type, ev.object["metadata"]["name"]) for ev in events] == [("ADDED", "web-0")]
    assert seen_auth == ["Bearer alice-token", "Bearer alice-token"]
