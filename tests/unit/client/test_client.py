"""The Client over real HTTP on 127.0.0.1: auth of every kind, TLS, discovery, paths,
pagination, request bodies, Status errors, and secrets kept out of reprs, errors and logs."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import socket
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from aiohttp import web

from aioinformer.client import GVR, Client, ResourceInfo
from aioinformer.codec import CompactCodec
from aioinformer.config import Config, ExecConfig
from aioinformer.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    ConfigError,
    Conflict,
    ConnectionFailed,
    Forbidden,
    Gone,
    NotFound,
    ServerError,
    TLSVerificationError,
    TooManyRequests,
    TransportError,
    Unauthorized,
    UnknownResourceError,
    UnprocessableEntity,
)
from aioinformer.listwatch import ListOptions
from tests._support_http import DiscoveryServer, json_response, serve, status_body
from tests._support_tls import Pki, make_pki

if TYPE_CHECKING:
    from pathlib import Path

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SECRET_TOKEN = "s3cr3t-token-value-0123456789"
POD_LIST = {
    "kind": "PodList",
    "apiVersion": "v1",
    "metadata": {"resourceVersion": "42"},
    "items": [],
}


class Recorder:
    """An app that records every request and answers from a handler (200 `{}` default)."""

    def __init__(self) -> None:
        self.app = web.Application()
        self.requests: list[dict[str, Any]] = []
        self.discovery = DiscoveryServer()
        self.discovery.install(self.app)
        self.handler: Handler | None = None
        self.app.router.add_route("*", "/{tail:(?!api$|apis$|api/v1$).*}", self._any)

    async def _any(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        self.requests.append(
            {
                "method": request.method,
                "path": request.raw_path.split("?")[0],
                "query": dict(request.query),
                "headers": dict(request.headers),
                "body": orjson.loads(body) if body else None,
                "peercert": peer,
            }
        )
        if self.handler is not None:
            return await self.handler(request)
        return json_response({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "x"}})

    def auth_headers(self) -> list[str | None]:
        return [r["headers"].get("Authorization") for r in self.requests]


@pytest.fixture
async def recorder() -> AsyncIterator[tuple[Recorder, str]]:
    rec = Recorder()
    async with serve(rec.app) as url:
        yield rec, url


@pytest.fixture(scope="module")
def pki() -> Pki:
    return make_pki()


async def get_once(client: Client) -> Any:
    return await client.request("GET", "/api/v1/namespaces/default/pods/x")


# ----------------------------------------------------------------------------- auth


async def test_bearer_token_is_sent_in_the_authorization_header(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    async with Client(Config(host=url, token="abc")) as client:
        await get_once(client)
    assert rec.auth_headers() == ["Bearer abc"]
    assert rec.requests[0]["headers"]["Accept"] == "application/json"


async def test_basic_auth_is_sent_when_username_and_password_are_set(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    async with Client(Config(host=url, username="admin", password="pw")) as client:
        await get_once(client)
    assert rec.auth_headers() == ["Basic " + base64.b64encode(b"admin:pw").decode()]


async def test_no_credentials_sends_no_authorization_header(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        await get_once(client)
    assert rec.auth_headers() == [None]


async def test_token_file_is_reread_when_the_token_rotates(
    recorder: tuple[Recorder, str], tmp_path: Path
) -> None:
    rec, url = recorder
    token_file = tmp_path / "token"
    token_file.write_text("first\n")
    async with Client(Config(host=url, token_file=str(token_file))) as client:
        await get_once(client)
        await get_once(client)
        replacement = tmp_path / "token.new"
        replacement.write_text("second-token")
        os.replace(replacement, token_file)  # how kubelet swaps projected tokens
        await get_once(client)
    assert rec.auth_headers() == ["Bearer first", "Bearer first", "Bearer second-token"]


async def test_token_file_wins_over_a_static_token(
    recorder: tuple[Recorder, str], tmp_path: Path
) -> None:
    rec, url = recorder
    token_file = tmp_path / "token"
    token_file.write_text("from-file")
    async with Client(Config(host=url, token="static", token_file=str(token_file))) as client:
        await get_once(client)
    assert rec.auth_headers() == ["Bearer from-file"]


async def test_unauthorized_answer_rereads_the_token_file_and_retries_once(
    recorder: tuple[Recorder, str], tmp_path: Path
) -> None:
    rec, url = recorder

    accepted = {"Bearer old1"}

    async def check(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") not in accepted:
            return json_response(status_body(401, "Unauthorized", "Unauthorized"), 401)
        return json_response({"kind": "Pod"})

    rec.handler = check
    token_file = tmp_path / "token"
    token_file.write_text("old1")
    async with Client(Config(host=url, token_file=str(token_file))) as client:
        await get_once(client)
        before = token_file.stat()
        # Rewrite in place with the same size and mtime: invisible to the change check,
        # so only the 401 makes the client look again.
        with token_file.open("r+") as handle:
            handle.write("new1")
        os.utime(token_file, ns=(before.st_atime_ns, before.st_mtime_ns))
        accepted = {"Bearer new1"}
        rec.requests.clear()
        result = await get_once(client)
    assert result == {"kind": "Pod"}
    assert rec.auth_headers() == ["Bearer old1", "Bearer new1"]


async def test_unauthorized_static_token_is_raised_without_retry(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder

    async def reject(request: web.Request) -> web.Response:
        return json_response(status_body(401, "Unauthorized", "Unauthorized"), 401)

    rec.handler = reject
    async with Client(Config(host=url, token=SECRET_TOKEN)) as client:
        with pytest.raises(Unauthorized) as info:
            await get_once(client)
    assert len(rec.requests) == 1
    assert SECRET_TOKEN not in str(info.value)
    assert SECRET_TOKEN not in repr(info.value)


# ----------------------------------------------------------------------------- exec


EXEC_PLUGIN = textwrap.dedent(
    """
    import json, os, sys
    state = sys.argv[1]
    with open(state, "a+") as f:
        f.seek(0)
        runs = len(f.read().splitlines()) + 1
        f.write(os.environ["KUBERNETES_EXEC_INFO"] + "\\n")
    if os.environ.get("PLUGIN_FAIL"):
        print("could not reach the identity provider", file=sys.stderr)
        sys.exit(3)
    status = {"token": f"exec-{runs}"}
    if os.environ.get("PLUGIN_EXPIRY"):
        status["expirationTimestamp"] = os.environ["PLUGIN_EXPIRY"]
    if os.environ.get("PLUGIN_CERT"):
        status = {
            "clientCertificateData": open(os.environ["PLUGIN_CERT"]).read(),
            "clientKeyData": open(os.environ["PLUGIN_KEY"]).read(),
        }
    print(json.dumps({
        "apiVersion": os.environ.get("PLUGIN_ANSWER_VERSION", os.environ["PLUGIN_VERSION"]),
        "kind": "ExecCredential",
        "status": status,
    }))
    """
)


def exec_config(
    tmp_path: Path,
    *,
    api_version: str = "client.authentication.k8s.io/v1",
    env: dict[str, str] | None = None,
    provide_cluster_info: bool = False,
) -> ExecConfig:
    script = tmp_path / "plugin.py"
    script.write_text(EXEC_PLUGIN)
    return ExecConfig(
        command=sys.executable,
        args=(str(script), str(tmp_path / "runs.log")),
        env={"PLUGIN_VERSION": api_version, **(env or {})},
        api_version=api_version,
        provide_cluster_info=provide_cluster_info,
    )


def plugin_runs(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "runs.log"
    if not log.exists():
        return []
    return [orjson.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize(
    "api_version", ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]
)
async def test_exec_plugin_token_is_used_and_cached(
    recorder: tuple[Recorder, str], tmp_path: Path, api_version: str
) -> None:
    rec, url = recorder
    config = Config(host=url, exec=exec_config(tmp_path, api_version=api_version))
    async with Client(config) as client:
        await get_once(client)
        await get_once(client)
    assert rec.auth_headers() == ["Bearer exec-1", "Bearer exec-1"]
    runs = plugin_runs(tmp_path)
    assert len(runs) == 1
    assert runs[0]["apiVersion"] == api_version
    assert runs[0]["spec"]["interactive"] is False
    assert "cluster" not in runs[0]["spec"]


async def test_exec_plugin_is_run_again_once_its_credential_expires(
    recorder: tuple[Recorder, str], tmp_path: Path
) -> None:
    rec, url = recorder
    spec = exec_config(tmp_path, env={"PLUGIN_EXPIRY": "2001-01-01T00:00:00Z"})
    async with Client(Config(host=url, exec=spec)) as client:
        await get_once(client)
        await get_once(client)
    assert rec.auth_headers() == ["Bearer exec-1", "Bearer exec-2"]


async def test_exec_plugin_credential_is_kept_until_a_future_expiry(
    recorder: tuple[Recorder, str], tmp_path: Path
) -> None:
    rec, url = recorder
    spec = exec_config(tmp_path, env={"PLUGIN_EXPIRY": "2999-01-01T00:00:00+00:00"})
    async with Client(Config(host=url, exec=spec)) as client:
        await get_once(client)
        await get_once(client)
    assert rec.auth_headers() == ["Bearer exec-1", "Bearer exec-1"]


async def test_exec_plugin_is_rerun_on_unauthorized_and_the_request_retried(
    recorder: tuple[Recorder, str], tmp_path: Path
) -> None:
    rec, url = recorder

    async def second_token_only(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer exec-2":
            return json_response(status_body(401, "Unauthorized", "Unauthorized"), 401)
        return json_response({"kind": "Pod"})

    rec.handler = second_token_only
    async with Client(Config(host=url, exec=exec_config(tmp_path))) as client:
        assert await get_once(client) == {"kind": "Pod"}
        assert await get_once(client) == {"kind": "Pod"}
    assert rec.auth_headers() == ["Bearer exec-1", "Bearer exec-2", "Bearer exec-2"]
    assert len(plugin_runs(tmp_path)) == 2


async def test_exec_plugin_receives_cluster_info_when_asked(
    recorder: tuple[Recorder, str], tmp_path: Path
) -> None:
    _, url = recorder
    spec = exec_config(tmp_path, provide_cluster_info=True)
    async with Client(Config(host=url, exec=spec)) as client:
        await get_once(client)
    assert plugin_runs(tmp_path)[0]["spec"]["cluster"] == {"server": url}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param({"PLUGIN_FAIL": "1"}, "exited with status 3: could not reach", id="exit"),
        pytest.param(
            {"PLUGIN_ANSWER_VERSION": "client.authentication.k8s.io/v1alpha1"},
            "answered in apiVersion",
            id="wrong-version",
        ),
    ],
)
async def test_exec_plugin_failure_raises_config_error(
    recorder: tuple[Recorder, str], tmp_path: Path, env: dict[str, str], message: str
) -> None:
    rec, url = recorder
    async with Client(Config(host=url, exec=exec_config(tmp_path, env=env))) as client:
        with pytest.raises(ConfigError, match=message):
            await get_once(client)
    assert rec.requests == []


async def test_exec_plugin_that_cannot_be_found_names_the_install_hint(
    recorder: tuple[Recorder, str], tmp_path: Path
) -> None:
    _, url = recorder
    spec = ExecConfig(command=str(tmp_path / "missing-plugin"), install_hint="install it")
    async with Client(Config(host=url, exec=spec)) as client:
        with pytest.raises(ConfigError, match=r"cannot be run.*install it"):
            await get_once(client)


# ----------------------------------------------------------------------------- TLS


async def test_https_with_the_right_ca_verifies_the_server(pki: Pki) -> None:
    rec = Recorder()
    async with (
        serve(rec.app, ssl_context=pki.server_context()) as url,
        Client(Config(host=url, ca_data=pki.ca_pem, token="t")) as client,
    ):
        await get_once(client)
    assert rec.auth_headers() == ["Bearer t"]


async def test_https_ca_file_is_used(pki: Pki, tmp_path: Path) -> None:
    rec = Recorder()
    ca_file = tmp_path / "ca.crt"
    ca_file.write_text(pki.ca_pem)
    async with (
        serve(rec.app, ssl_context=pki.server_context()) as url,
        Client(Config(host=url, ca_file=str(ca_file))) as client,
    ):
        await get_once(client)
    assert len(rec.requests) == 1


async def test_wrong_ca_raises_tls_verification_error_and_sends_nothing(pki: Pki) -> None:
    other = make_pki()
    rec = Recorder()
    async with (
        serve(rec.app, ssl_context=pki.server_context()) as url,
        Client(Config(host=url, ca_data=other.ca_pem, token=SECRET_TOKEN)) as client,
    ):
        with pytest.raises(TLSVerificationError) as info:
            await get_once(client)
    assert rec.requests == []
    assert "certificate verify failed" in str(info.value)
    assert SECRET_TOKEN not in str(info.value)


async def test_certificate_for_another_name_is_rejected_unless_tls_server_name_says_so(
    pki: Pki,
) -> None:
    rec = Recorder()
    server = pki.server_context(names=("kube.internal",))
    async with (
        serve(rec.app, ssl_context=server) as url,
        Client(Config(host=url, ca_data=pki.ca_pem)) as client,
    ):
        with pytest.raises(TLSVerificationError):
            await get_once(client)
        config = Config(host=url, ca_data=pki.ca_pem, tls_server_name="kube.internal")
        async with Client(config) as client:
            await get_once(client)
    assert len(rec.requests) == 1


async def test_insecure_skip_tls_verify_connects_to_an_untrusted_server(pki: Pki) -> None:
    rec = Recorder()
    async with (
        serve(rec.app, ssl_context=pki.server_context()) as url,
        Client(Config(host=url, insecure_skip_tls_verify=True)) as client,
    ):
        await get_once(client)
    assert len(rec.requests) == 1


@pytest.mark.parametrize("source", ["data", "file"])
async def test_client_certificate_is_presented_to_the_server(
    pki: Pki, tmp_path: Path, source: str
) -> None:
    rec = Recorder()
    if source == "data":
        config_args: dict[str, Any] = {
            "cert_data": pki.client_cert_pem,
            "key_data": pki.client_key_pem,
        }
    else:
        (tmp_path / "c.crt").write_text(pki.client_cert_pem)
        (tmp_path / "c.key").write_text(pki.client_key_pem)
        config_args = {"cert_file": str(tmp_path / "c.crt"), "key_file": str(tmp_path / "c.key")}
    server = pki.server_context(require_client_cert=True)
    async with (
        serve(rec.app, ssl_context=server) as url,
        Client(Config(host=url, ca_data=pki.ca_pem, **config_args)) as client,
    ):
        await get_once(client)
    subject = dict(pair[0] for pair in rec.requests[0]["peercert"]["subject"])
    assert subject["commonName"] == "alice"


async def test_exec_plugin_client_certificate_is_presented(pki: Pki, tmp_path: Path) -> None:
    rec = Recorder()
    (tmp_path / "c.crt").write_text(pki.client_cert_pem)
    (tmp_path / "c.key").write_text(pki.client_key_pem)
    spec = exec_config(
        tmp_path,
        env={"PLUGIN_CERT": str(tmp_path / "c.crt"), "PLUGIN_KEY": str(tmp_path / "c.key")},
    )
    server = pki.server_context(require_client_cert=True)
    async with (
        serve(rec.app, ssl_context=server) as url,
        Client(Config(host=url, ca_data=pki.ca_pem, exec=spec)) as client,
    ):
        await get_once(client)
    assert rec.requests[0]["headers"].get("Authorization") is None
    subject = dict(pair[0] for pair in rec.requests[0]["peercert"]["subject"])
    assert subject["commonName"] == "alice"


async def test_client_without_its_certificate_is_refused_by_a_server_requiring_one(
    pki: Pki,
) -> None:
    rec = Recorder()
    server = pki.server_context(require_client_cert=True)
    async with (
        serve(rec.app, ssl_context=server) as url,
        Client(Config(host=url, ca_data=pki.ca_pem)) as client,
    ):
        # TLS 1.3 reports the refusal after the handshake: a closed connection.
        with pytest.raises(ConnectionFailed):
            await get_once(client)
    assert rec.requests == []


def test_unusable_client_key_raises_config_error_without_quoting_it(pki: Pki) -> None:
    bogus_key = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"
    config = Config(host="https://127.0.0.1:1", cert_data=pki.client_cert_pem, key_data=bogus_key)
    client = Client(config)
    with pytest.raises(ConfigError, match="client certificate or key") as info:
        client._http.ensure_session()
    assert "bm90IGEga2V5" not in str(info.value)


# ----------------------------------------------------------------------------- connection


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_connection_refused_is_recognisable() -> None:
    async with Client(Config(host=f"http://127.0.0.1:{free_port()}")) as client:
        with pytest.raises(ConnectionFailed) as info:
            await get_once(client)
    assert info.value.refused is True
    assert "refused" in str(info.value)


async def test_closed_client_refuses_new_requests(recorder: tuple[Recorder, str]) -> None:
    _, url = recorder
    client = Client(Config(host=url))
    await get_once(client)
    opened = client.session
    assert opened is not None
    await client.close()
    assert client.session is None
    assert opened.closed
    with pytest.raises(RuntimeError, match="closed"):
        await get_once(client)


# ----------------------------------------------------------------------------- discovery


CRD = [
    {
        "name": "widgets",
        "singularName": "widget",
        "namespaced": True,
        "kind": "Widget",
        "verbs": ["list", "watch"],
        "shortNames": ["wd"],
    },
]


@pytest.mark.parametrize(
    ("spec", "expected", "kind", "namespaced"),
    [
        pytest.param("pods", GVR("", "v1", "pods"), "Pod", True, id="plural"),
        pytest.param("pod", GVR("", "v1", "pods"), "Pod", True, id="singular"),
        pytest.param("po", GVR("", "v1", "pods"), "Pod", True, id="short-name"),
        pytest.param("Pod", GVR("", "v1", "pods"), "Pod", True, id="kind"),
        pytest.param("nodes", GVR("", "v1", "nodes"), "Node", False, id="cluster-scoped"),
        pytest.param(
            "deployments", GVR("apps", "v1", "deployments"), "Deployment", True, id="group"
        ),
        pytest.param(
            "deployments.apps", GVR("apps", "v1", "deployments"), "Deployment", True, id="dotted"
        ),
        pytest.param(
            "v1/configmaps", GVR("", "v1", "configmaps"), "ConfigMap", True, id="core-gvr"
        ),
        pytest.param(
            "apps/v1/deployments", GVR("apps", "v1", "deployments"), "Deployment", True, id="gvr"
        ),
        pytest.param("widgets", GVR("example.com", "v1", "widgets"), "Widget", True, id="crd"),
        pytest.param(
            GVR("example.com", "v1", "widgets"),
            GVR("example.com", "v1", "widgets"),
            "Widget",
            True,
            id="gvr-object",
        ),
    ],
)
async def test_resource_names_resolve_through_discovery(
    recorder: tuple[Recorder, str], spec: str | GVR, expected: GVR, kind: str, namespaced: bool
) -> None:
    rec, url = recorder
    rec.discovery.add_group("example.com", "v1", CRD)
    async with Client(Config(host=url)) as client:
        info = await client.resolve(spec)
    assert (info.gvr, info.kind, info.namespaced) == (expected, kind, namespaced)


async def test_discovery_answers_are_cached(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        await client.resolve("pods")
        await client.resolve("deployments")
        await client.resolve("configmaps")
    assert rec.discovery.hits["/api"] == 1
    assert rec.discovery.hits["/apis"] == 1
    assert rec.discovery.hits["/api/v1"] == 1


async def test_discovery_is_refreshed_once_for_a_crd_installed_later(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        await client.resolve("pods")
        rec.discovery.add_group("example.com", "v1", CRD)
        info = await client.resolve("widgets")
    assert info.gvr == GVR("example.com", "v1", "widgets")
    assert rec.discovery.hits["/apis"] == 2


@pytest.mark.parametrize("spec", ["gizmos", "v1/gizmos", "example.org/v1/gizmos"])
async def test_unknown_resource_raises_naming_it(recorder: tuple[Recorder, str], spec: str) -> None:
    _, url = recorder
    async with Client(Config(host=url)) as client:
        with pytest.raises(UnknownResourceError, match="gizmos"):
            await client.resource(spec).list(ListOptions())


@pytest.mark.parametrize("text", ["pods", "a/b/c/d", "Apps/v1/deployments", "apps/v1/../x"])
def test_gvr_parse_rejects_what_is_not_a_gvr(text: str) -> None:
    with pytest.raises(ValueError, match=r"not group/version|invalid"):
        GVR.parse(text)


def test_gvr_parse_and_str_round_trip() -> None:
    assert GVR.parse("apps/v1/deployments") == GVR("apps", "v1", "deployments")
    assert str(GVR.parse("v1/pods")) == "v1/pods"
    assert GVR("", "v1", "pods").api_version == "v1"


# ----------------------------------------------------------------------------- paths and lists


PODS = ResourceInfo(gvr=GVR("", "v1", "pods"), kind="Pod", namespaced=True)
NODES = ResourceInfo(gvr=GVR("", "v1", "nodes"), kind="Node", namespaced=False)


@pytest.mark.parametrize(
    ("info", "bound", "path"),
    [
        pytest.param(PODS, "team-a", "/api/v1/namespaces/team-a/pods", id="namespaced"),
        pytest.param(PODS, None, "/api/v1/pods", id="all-namespaces"),
        pytest.param(NODES, "team-a", "/api/v1/nodes", id="cluster-scoped-ignores-namespace"),
    ],
)
async def test_list_paths_follow_the_scope(
    recorder: tuple[Recorder, str], info: ResourceInfo, bound: str | None, path: str
) -> None:
    rec, url = recorder

    async def answer(request: web.Request) -> web.Response:
        return json_response(POD_LIST)

    rec.handler = answer
    async with Client(Config(host=url)) as client:
        await client.resource(info, bound).list(ListOptions())
    assert rec.requests[0]["path"] == path


async def test_single_object_requests_default_to_the_config_namespace(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    async with Client(Config(host=url, namespace="home")) as client:
        pods = client.resource(PODS)
        await pods.get("web-0")
        await pods.get("web-0", namespace="other")
        await client.resource(PODS, "bound").get("web-0")
        await client.resource(NODES).get("node-1")
    assert [r["path"] for r in rec.requests] == [
        "/api/v1/namespaces/home/pods/web-0",
        "/api/v1/namespaces/other/pods/web-0",
        "/api/v1/namespaces/bound/pods/web-0",
        "/api/v1/nodes/node-1",
    ]


async def test_names_with_colons_are_quoted_into_one_path_segment(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    roles = ResourceInfo(
        gvr=GVR("rbac.authorization.k8s.io", "v1", "clusterroles"),
        kind="ClusterRole",
        namespaced=False,
    )
    async with Client(Config(host=url)) as client:
        await client.resource(roles).get("system:node")
    assert rec.requests[0]["path"] == (
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Anode"
    )


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../secrets", "100%", "x/../../y"])
async def test_invalid_names_are_refused_before_any_request(
    recorder: tuple[Recorder, str], name: str
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        with pytest.raises(ValueError, match="invalid object name"):
            await client.resource(PODS, "default").get(name)
    assert rec.requests == []


@pytest.mark.parametrize("namespace", ["", "Upper", "a/b", "..", "a_b", "x" * 64, "-lead"])
async def test_invalid_namespaces_are_refused_before_any_request(
    recorder: tuple[Recorder, str], namespace: str
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        with pytest.raises(ValueError, match="invalid namespace"):
            client.resource(PODS, namespace)
        with pytest.raises(ValueError, match="invalid namespace"):
            await client.resource(PODS).get("x", namespace=namespace or "Bad")
    assert rec.requests == []


async def test_list_pages_through_continue_tokens_and_fills_in_kind(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    names = [f"pod-{i}" for i in range(5)]

    async def paged(request: web.Request) -> web.Response:
        limit = int(request.query["limit"])
        start = int(request.query.get("continue", "0"))
        chunk = names[start : start + limit]
        meta: dict[str, Any] = {"resourceVersion": "77"}
        if start + limit < len(names):
            meta["continue"] = str(start + limit)
            meta["remainingItemCount"] = len(names) - start - limit
        items = [{"metadata": {"name": n, "namespace": "default"}} for n in chunk]
        return json_response(
            {"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items}
        )

    rec.handler = paged
    seen: list[str] = []
    pages = 0
    async with Client(Config(host=url)) as client:
        pods = client.resource("pods", "default")
        options = ListOptions(limit=2, resource_version="0", label_selector="app=web")
        while True:
            page = await pods.list(options)
            pages += 1
            assert page.resource_version == "77"
            for item in page.items:
                assert (item["apiVersion"], item["kind"]) == ("v1", "Pod")
                seen.append(item["metadata"]["name"])
            if page.continue_ is None:
                assert page.remaining_item_count is None
                break
            options.continue_ = page.continue_
    assert seen == names
    assert pages == 3
    assert rec.requests[0]["query"] == {
        "limit": "2",
        "resourceVersion": "0",
        "labelSelector": "app=web",
    }
    assert rec.requests[1]["query"]["continue"] == "2"


async def test_list_keeps_kind_already_present_on_items(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder

    async def answer(request: web.Request) -> web.Response:
        items = [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {}}]
        return json_response(
            {
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {},
                "items": items,
            }
        )

    rec.handler = answer
    async with Client(Config(host=url)) as client:
        page = await client.resource(PODS, metadata_only=True).list(ListOptions())
    assert page.items[0]["kind"] == "PartialObjectMetadata"
    assert rec.requests[0]["headers"]["Accept"].startswith(
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    )


async def test_metadata_only_get_asks_for_partial_object_metadata(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        await client.resource(PODS, "default", metadata_only=True).get("x")
    assert rec.requests[0]["headers"]["Accept"].startswith(
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    )


# ----------------------------------------------------------------------------- writes


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "team-a"}}


async def test_create_posts_to_the_objects_namespace(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        await client.resource(PODS).create(POD, field_manager="me")
    req = rec.requests[0]
    assert (req["method"], req["path"], req["body"]) == (
        "POST",
        "/api/v1/namespaces/team-a/pods",
        POD,
    )
    assert req["query"] == {"fieldManager": "me"}
    assert req["headers"]["Content-Type"] == "application/json"


async def test_update_puts_the_object_at_its_name(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        await client.resource(PODS).update(POD)
    req = rec.requests[0]
    assert (req["method"], req["path"]) == ("PUT", "/api/v1/namespaces/team-a/pods/web-0")


async def test_writes_send_dry_run_all_when_asked(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        pods = client.resource(PODS, "team-a")
        await pods.create(POD, dry_run=True)
        await pods.update(POD, dry_run=True, field_manager="me")
        await pods.patch("web-0", {"metadata": {}}, dry_run=True)
        await pods.delete("web-0", dry_run=True)
        await pods.create(POD)
    assert [req["query"] for req in rec.requests] == [
        {"dryRun": "All"},
        {"fieldManager": "me", "dryRun": "All"},
        {"dryRun": "All"},
        {"dryRun": "All"},
        {},
    ]


@pytest.mark.parametrize(
    ("patch_type", "patch", "content_type"),
    [
        pytest.param(
            "merge",
            {"metadata": {"labels": {"a": "b"}}},
            "application/merge-patch+json",
            id="merge",
        ),
        pytest.param(
            "strategic", {"spec": {}}, "application/strategic-merge-patch+json", id="strategic"
        ),
        pytest.param(
            "json", [{"op": "remove", "path": "/x"}], "application/json-patch+json", id="json"
        ),
        pytest.param("apply", POD, "application/apply-patch+yaml", id="apply"),
    ],
)
async def test_patch_sends_the_content_type_of_its_kind(
    recorder: tuple[Recorder, str], patch_type: Any, patch: Any, content_type: str
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        await client.resource(PODS, "team-a").patch(
            "web-0", patch, patch_type=patch_type, field_manager="me", force=True
        )
    req = rec.requests[0]
    assert (req["method"], req["path"]) == ("PATCH", "/api/v1/namespaces/team-a/pods/web-0")
    assert req["headers"]["Content-Type"] == content_type
    assert req["body"] == patch
    assert req["query"] == {"fieldManager": "me", "force": "true"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"patch_type": "apply"}, "field_manager", id="apply-without-manager"),
        pytest.param({"patch_type": "json"}, "list of operations", id="json-not-a-list"),
        pytest.param({"patch_type": "bogus"}, "unknown patch_type", id="unknown-type"),
    ],
)
async def test_patch_misuse_is_refused_before_any_request(
    recorder: tuple[Recorder, str], kwargs: dict[str, Any], message: str
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        with pytest.raises(ValueError, match=message):
            await client.resource(PODS, "a").patch("x", {"a": 1}, **kwargs)
    assert rec.requests == []


async def test_patch_takes_the_namespace_positionally_as_get_and_delete_do(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        pods = client.resource(PODS)
        await pods.get("web-0", "team-a")
        await pods.patch("web-0", {"metadata": {}}, "team-a")
        await pods.patch("web-0", {"metadata": {}}, namespace="team-b")
        await pods.delete("web-0", "team-a")
    assert [(r["method"], r["path"]) for r in rec.requests] == [
        ("GET", "/api/v1/namespaces/team-a/pods/web-0"),
        ("PATCH", "/api/v1/namespaces/team-a/pods/web-0"),
        ("PATCH", "/api/v1/namespaces/team-b/pods/web-0"),
        ("DELETE", "/api/v1/namespaces/team-a/pods/web-0"),
    ]


DEPLOYMENTS = ResourceInfo(gvr=GVR("apps", "v1", "deployments"), kind="Deployment", namespaced=True)
SCALE = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}}


async def _get_status(client: Client) -> None:
    await client.resource(PODS, "team-a").get("web-0", subresource="status")


async def _update_status(client: Client) -> None:
    await client.resource(PODS).update(dict(POD, status={"phase": "Running"}), subresource="status")


async def _patch_status(client: Client) -> None:
    await client.resource(PODS, "team-a").patch(
        "web-0", {"status": {"phase": "Running"}}, subresource="status"
    )


async def _get_scale(client: Client) -> None:
    await client.resource(DEPLOYMENTS, "team-a").get("web", subresource="scale")


async def _update_scale(client: Client) -> None:
    await client.resource(DEPLOYMENTS, "team-a").update(SCALE, subresource="scale")


async def _patch_scale(client: Client) -> None:
    await client.resource(DEPLOYMENTS, "team-a").patch(
        "web", {"spec": {"replicas": 3}}, subresource="scale"
    )


@pytest.mark.parametrize(
    ("call", "method", "path"),
    [
        pytest.param(_get_status, "GET", "/api/v1/namespaces/team-a/pods/web-0/status", id="get"),
        pytest.param(
            _update_status, "PUT", "/api/v1/namespaces/team-a/pods/web-0/status", id="update"
        ),
        pytest.param(
            _patch_status, "PATCH", "/api/v1/namespaces/team-a/pods/web-0/status", id="patch"
        ),
        pytest.param(
            _get_scale,
            "GET",
            "/apis/apps/v1/namespaces/team-a/deployments/web/scale",
            id="get-scale",
        ),
        pytest.param(
            _update_scale,
            "PUT",
            "/apis/apps/v1/namespaces/team-a/deployments/web/scale",
            id="update-scale",
        ),
        pytest.param(
            _patch_scale,
            "PATCH",
            "/apis/apps/v1/namespaces/team-a/deployments/web/scale",
            id="patch-scale",
        ),
    ],
)
async def test_subresource_requests_go_to_the_subresource_path(
    recorder: tuple[Recorder, str],
    call: Callable[[Client], Awaitable[None]],
    method: str,
    path: str,
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        await call(client)
    assert [(r["method"], r["path"]) for r in rec.requests] == [(method, path)]


@pytest.mark.parametrize(
    "subresource", ["", "Status", "status/x", "../status", "sta tus", "1scale", "status%2f"]
)
async def test_invalid_subresources_are_refused_before_any_request(
    recorder: tuple[Recorder, str], subresource: str
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        pods = client.resource(PODS, "team-a")
        with pytest.raises(ValueError, match="invalid subresource"):
            await pods.get("web-0", subresource=subresource)
        with pytest.raises(ValueError, match="invalid subresource"):
            await pods.update(POD, subresource=subresource)
        with pytest.raises(ValueError, match="invalid subresource"):
            await pods.patch("web-0", {}, subresource=subresource)
    assert rec.requests == []


async def test_discovery_records_the_subresources_of_each_resource(
    recorder: tuple[Recorder, str],
) -> None:
    _, url = recorder
    async with Client(Config(host=url)) as client:
        deployments = await client.resolve("deployments")
        pods = await client.resolve("pods")
    assert deployments.subresources == ("scale",)
    assert "scale" not in pods.subresources


async def test_metadata_only_watch_asks_for_partial_object_metadata_events(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder

    async def empty_stream(request: web.Request) -> web.Response:
        return web.Response(body=b"", content_type="application/json")

    rec.handler = empty_stream
    async with Client(Config(host=url)) as client:
        events = [ev async for ev in client.resource(PODS, metadata_only=True).watch()]
    assert events == []
    # A watch's events are single objects: asking for a list would make kube-apiserver
    # send the full objects.
    assert rec.requests[0]["headers"]["Accept"] == (
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
    )


async def test_metadata_only_writes_ask_for_partial_object_metadata(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        pods = client.resource(PODS, metadata_only=True)
        await pods.patch("web-0", {"metadata": {"labels": {"a": "b"}}}, namespace="team-a")
        await pods.update(POD)
        await pods.create(POD)
        await client.resource(PODS).patch("web-0", {}, namespace="team-a")
    accepts = [r["headers"]["Accept"] for r in rec.requests]
    assert [a.split(",")[0] for a in accepts] == [
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        "application/json",
    ]


async def test_delete_sends_delete_options(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    async with Client(Config(host=url)) as client:
        pods = client.resource(PODS, "team-a")
        await pods.delete("web-0")
        await pods.delete(
            "web-0",
            grace_period_seconds=0,
            propagation_policy="Foreground",
            preconditions={"resourceVersion": "9"},
        )
    assert rec.requests[0]["method"] == "DELETE"
    assert rec.requests[0]["body"] is None
    assert rec.requests[1]["body"] == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Foreground",
        "preconditions": {"resourceVersion": "9"},
    }


# ----------------------------------------------------------------------------- Status errors


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        pytest.param(400, "BadRequest", BadRequest, id="400"),
        pytest.param(401, "Unauthorized", Unauthorized, id="401"),
        pytest.param(403, "Forbidden", Forbidden, id="403"),
        pytest.param(404, "NotFound", NotFound, id="404"),
        pytest.param(409, "Conflict", Conflict, id="409"),
        pytest.param(409, "AlreadyExists", AlreadyExists, id="409-already-exists"),
        pytest.param(410, "Expired", Gone, id="410-expired"),
        pytest.param(410, "Gone", Gone, id="410-gone"),
        pytest.param(422, "Invalid", UnprocessableEntity, id="422"),
        pytest.param(500, "InternalError", ServerError, id="500"),
        pytest.param(504, "Timeout", ServerError, id="504"),
        pytest.param(418, "Teapot", ApiError, id="other"),
    ],
)
async def test_status_answers_become_typed_api_errors(
    recorder: tuple[Recorder, str], code: int, reason: str, expected: type[ApiError]
) -> None:
    rec, url = recorder

    async def fail(request: web.Request) -> web.Response:
        body = status_body(code, reason, f'pods "x" {reason}', name="x", kind="pods")
        return json_response(body, code)

    rec.handler = fail
    async with Client(Config(host=url)) as client:
        with pytest.raises(ApiError) as info:
            await client.resource(PODS, "default").get("x")
    error = info.value
    assert type(error) is expected
    assert (error.code, error.reason) == (code, reason)
    assert error.message == f'pods "x" {reason}'
    assert error.details == {"name": "x", "kind": "pods"}


async def test_too_many_requests_carries_retry_after_from_the_header(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder

    async def throttle(request: web.Request) -> web.Response:
        body = status_body(429, "TooManyRequests", "slow down")
        return json_response(body, 429, headers={"Retry-After": "7"})

    rec.handler = throttle
    async with Client(Config(host=url)) as client:
        with pytest.raises(TooManyRequests) as info:
            await client.resource(PODS, "default").list(ListOptions())
    assert info.value.retry_after == 7.0


async def test_non_status_error_body_becomes_a_server_error_quoting_it(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder

    async def proxy_page(request: web.Request) -> web.Response:
        return web.Response(status=502, text="<html>Bad Gateway</html>", content_type="text/html")

    rec.handler = proxy_page
    async with Client(Config(host=url)) as client:
        with pytest.raises(ServerError, match="Bad Gateway") as info:
            await get_once(client)
    assert info.value.code == 502


# ----------------------------------------------------------------------------- secrets


async def test_secrets_never_appear_in_reprs_errors_or_logs(
    recorder: tuple[Recorder, str], pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rec, url = recorder
    key_body = pki.client_key_pem.splitlines()[1]
    cert_body = pki.client_cert_pem.splitlines()[1]

    async def reject(request: web.Request) -> web.Response:
        return json_response(status_body(403, "Forbidden", "forbidden"), 403)

    rec.handler = reject
    token_file = tmp_path / "token"
    token_file.write_text(SECRET_TOKEN)
    config = Config(
        host=url,
        token=SECRET_TOKEN,
        password="hunter2-password",
        username="u",
        cert_data=pki.client_cert_pem,
        key_data=pki.client_key_pem,
        exec=ExecConfig(command="plugin", env={"API_KEY": "plugin-secret-env"}),
        proxy_url="http://user:proxy-secret@127.0.0.1:1",
    )
    plain = Config(host=url, token_file=str(token_file))
    caplog.set_level(logging.DEBUG)
    texts = [repr(config), str(config), repr(config.exec), repr(Client(config))]
    async with Client(plain) as client:
        texts.append(repr(client))
        texts.append(repr(client._http.auth))
        texts.append(repr(await client._http.auth.credentials()))
        with pytest.raises(Forbidden) as info:
            await get_once(client)
        texts += [str(info.value), repr(info.value)]
    texts.append(caplog.text)
    blob = "\n".join(texts)
    for secret in (
        SECRET_TOKEN,
        "hunter2-password",
        key_body,
        cert_body,
        "plugin-secret-env",
        "proxy-secret",
    ):
        assert secret not in blob
    assert "auth=token,exec,basic,client_certificate" in repr(config)


async def test_proxy_url_routes_requests_through_the_proxy() -> None:
    proxy = web.Application()
    seen: list[tuple[str, str, str | None]] = []

    async def forward(request: web.Request) -> web.Response:
        # A forward proxy receives the absolute URL of the API server.
        seen.append((request.url.host or "", request.path, request.headers.get("Authorization")))
        return json_response({"kind": "Pod"})

    proxy.router.add_route("*", "/{tail:.*}", forward)
    async with serve(proxy) as proxy_url:
        config = Config(host="http://kube.invalid:6443", token="t", proxy_url=proxy_url)
        async with Client(config) as client:
            assert await get_once(client) == {"kind": "Pod"}
    assert seen == [("kube.invalid", "/api/v1/namespaces/default/pods/x", "Bearer t")]


async def test_concurrent_requests_share_one_exec_plugin_run(
    recorder: tuple[Recorder, str], tmp_path: Path
) -> None:
    rec, url = recorder
    client = Client(Config(host=url, exec=exec_config(tmp_path)))
    async with client, asyncio.TaskGroup() as tasks:
        for _ in range(5):
            tasks.create_task(get_once(client))
    assert rec.auth_headers() == ["Bearer exec-1"] * 5
    assert len(plugin_runs(tmp_path)) == 1


async def test_a_failing_aggregated_api_does_not_break_discovery(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    rec.discovery.add_group("metrics.k8s.io", "v1beta1", [])
    rec.discovery.add_group("example.com", "v1", CRD)
    rec.discovery.failing.add("metrics.k8s.io")
    async with Client(Config(host=url)) as client:
        info = await client.resolve("widgets")
    assert info.gvr == GVR("example.com", "v1", "widgets")
    assert rec.discovery.hits["/apis/metrics.k8s.io/v1beta1"] == 1


# ------------------------------------------------------------------------ size limits

PODS_INFO = ResourceInfo(gvr=GVR("", "v1", "pods"), kind="Pod", namespaced=True)
SIZE_LIMIT = 4096


def pod_list_of(count: int) -> bytes:
    items = [{"metadata": {"name": f"p{i:04}", "namespace": "default"}} for i in range(count)]
    return orjson.dumps({**POD_LIST, "items": items})


async def chunked(request: web.Request, body: bytes, *, status: int = 200) -> web.StreamResponse:
    """Answer ``body`` without a Content-Length, in 1 KiB pieces."""
    response = web.StreamResponse(status=status, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    for start in range(0, len(body), 1024):
        await response.write(body[start : start + 1024])
    await response.write_eof()
    return response


BIG_POD = orjson.dumps({"kind": "Pod", "metadata": {"name": "x"}, "data": "y" * 10_000})


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
async def test_a_single_object_answer_over_max_object_bytes_is_a_transport_error(
    recorder: tuple[Recorder, str], framing: str
) -> None:
    rec, url = recorder

    async def big(request: web.Request) -> web.StreamResponse:
        if framing == "chunked":
            return await chunked(request, BIG_POD)
        return web.Response(body=BIG_POD, content_type="application/json")

    rec.handler = big
    async with Client(Config(host=url, token="t"), max_object_bytes=SIZE_LIMIT) as client:
        with pytest.raises(TransportError, match=f"over the limit of {SIZE_LIMIT} bytes") as caught:
            await client.resource(PODS_INFO, namespace="default").get("x")
    if framing == "content-length":
        assert str(len(BIG_POD)) in str(caught.value)
    assert "yyyy" not in str(caught.value)


async def test_a_list_is_held_to_max_list_bytes_not_max_object_bytes(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder
    body = pod_list_of(200)
    assert SIZE_LIMIT < len(body) < 4 * SIZE_LIMIT

    async def answer(request: web.Request) -> web.StreamResponse:
        return await chunked(request, body)

    rec.handler = answer
    config = Config(host=url, token="t")
    async with Client(config, max_object_bytes=SIZE_LIMIT, max_list_bytes=4 * SIZE_LIMIT) as c:
        page = await c.resource(PODS_INFO, namespace="default").list()
    assert len(page.items) == 200
    async with Client(config, max_list_bytes=SIZE_LIMIT) as c:
        with pytest.raises(TransportError, match=f"limit of {SIZE_LIMIT} bytes"):
            await c.resource(PODS_INFO, namespace="default").list()


async def test_an_error_answer_over_the_limit_still_raises_the_error_of_its_status(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder

    async def failing(request: web.Request) -> web.StreamResponse:
        return await chunked(request, b"<html>" + b"x" * 10_000 + b"</html>", status=503)

    rec.handler = failing
    async with Client(Config(host=url, token="t"), max_object_bytes=SIZE_LIMIT) as client:
        with pytest.raises(ServerError) as caught:
            await client.resource(PODS_INFO, namespace="default").get("x")
    assert caught.value.code == 503


@pytest.mark.parametrize("option", ["max_object_bytes", "max_list_bytes"])
def test_size_limits_must_be_positive(option: str) -> None:
    limits: dict[str, Any] = {option: 0}
    with pytest.raises(ValueError, match=option):
        Client(Config(host="http://127.0.0.1:1"), **limits)


async def test_a_list_page_names_the_kind_and_api_version_of_its_items(
    recorder: tuple[Recorder, str],
) -> None:
    rec, url = recorder

    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(body=pod_list_of(2), content_type="application/json")

    rec.handler = answer
    async with Client(Config(host=url, token="t")) as client:
        page = await client.resource(PODS_INFO, namespace="default").list()
    assert (page.kind, page.api_version) == ("Pod", "v1")
    assert {(i["kind"], i["apiVersion"]) for i in page.items} == {("Pod", "v1")}


@pytest.mark.parametrize(
    ("body", "plain_error", "compact_error"),
    [
        pytest.param(b"{not json", "not valid JSON", "not usable", id="garbage"),
        pytest.param(b'{"items": 3}', "not usable", "not usable", id="items-not-a-list"),
        pytest.param(b'{"items": [1]}', "not usable", "not usable", id="item-not-an-object"),
    ],
)
async def test_a_malformed_list_is_a_transport_error_in_both_decoders(
    recorder: tuple[Recorder, str], body: bytes, plain_error: str, compact_error: str
) -> None:
    rec, url = recorder

    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="application/json")

    rec.handler = answer
    async with Client(Config(host=url, token="t")) as client:
        pods = client.resource(PODS_INFO, namespace="default")
        with pytest.raises(TransportError, match=compact_error) as caught:
            await pods.decoded_with(CompactCodec()).list(ListOptions())
        assert "/api/v1/namespaces/default/pods" in str(caught.value)
        if plain_error:
            with pytest.raises(TransportError, match=plain_error):
                await pods.list()


async def test_a_compact_list_is_held_to_max_list_bytes(recorder: tuple[Recorder, str]) -> None:
    rec, url = recorder
    body = pod_list_of(200)

    async def answer(request: web.Request) -> web.StreamResponse:
        return await chunked(request, body)

    rec.handler = answer
    async with Client(Config(host=url, token="t"), max_list_bytes=SIZE_LIMIT) as c:
        resource = c.resource(PODS_INFO, namespace="default").decoded_with(CompactCodec())
        with pytest.raises(TransportError, match=f"limit of {SIZE_LIMIT} bytes"):
            await resource.list(ListOptions())
