"""Security defaults: TLS verification, secrets kept out of text, 401 and 403 handling.

* TLS verification is on unless the kubeconfig says ``insecure-skip-tls-verify: true``: an
  unknown CA and a certificate for another name are both refused with
  :class:`TLSVerificationError`.
* Tokens, passwords and key material never reach a log record, a ``repr`` or an exception
  message, whatever fails (401, 403, refused connection, broken kubeconfig).
* A 401 refreshes rotating credentials once, then raises :class:`Unauthorized`; an informer
  whose token was revoked backs off between attempts instead of retrying hot.
* A 403 on a namespace reaches ``watch_error_handler`` and ``statistics()``, and the
  informer backs off with growing delays.

Time in the informer tests is a :class:`FakeClock`: requests go over real loopback HTTP,
but every backoff waits on the fake clock, so "no request without time passing" is an
exact check. The informer tests run in both cache modes (the ``cache`` fixture): a
compact informer reads error bodies on its own decoding path.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from aiohttp import web

from aioinformer.client import Client
from aioinformer.config import Config, load_kube_config
from aioinformer.errors import (
    ApiError,
    ConfigError,
    ConnectionFailed,
    Forbidden,
    TLSVerificationError,
    Unauthorized,
)
from aioinformer.informer import SharedIndexInformer
from aioinformer.reflector import ReflectorOptions, ReflectorState
from aioinformer.testing.apiserver import FakeAPIServer, Rule
from aioinformer.testing.clock import FakeClock
from tests._support_http import DiscoveryServer, json_response, serve
from tests._support_tls import Pki, make_pki
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from aioinformer.informer import CacheMode

SECRET_TOKEN = "s3cr3t-token-9f8e7d6c5b4a39281706"
SECRET_PASSWORD = "hunter2-pa55word-0b1c2d3e"


# ---------------------------------------------------------------------------------------
# helpers


def _pod_list_app() -> web.Application:
    async def pods(request: web.Request) -> web.Response:
        return json_response(
            {
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": "7"},
                "items": [],
            }
        )

    app = web.Application()
    DiscoveryServer().install(app)
    app.router.add_get("/api/v1/namespaces/default/pods", pods)
    return app


def _write_kubeconfig(
    directory: Path,
    server: str,
    *,
    user: dict[str, Any],
    cluster_extra: dict[str, Any] | None = None,
) -> Path:
    cluster: dict[str, Any] = {"server": server, **(cluster_extra or {})}
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture(scope="module")
def pki() -> Pki:
    return make_pki()


async def _list_pods(config: Config) -> dict[str, Any]:
    async with Client(config, connect_timeout=5.0, request_timeout=5.0) as client:
        page = await client.resource("v1/pods", namespace="default").list()
        return {"rv": page.resource_version, "items": page.items}


# ---------------------------------------------------------------------------------------
# TLS verification


async def test_tls_verification_is_on_by_default_and_rejects_an_unknown_ca(
    tmp_path: Path, pki: Pki
) -> None:
    async with serve(_pod_list_app(), ssl_context=pki.server_context()) as url:
        config = load_kube_config(_write_kubeconfig(tmp_path, url, user={"token": "t"}))
        assert config.insecure_skip_tls_verify is False
        with pytest.raises(TLSVerificationError):
            await _list_pods(config)


async def test_tls_with_the_kubeconfig_ca_succeeds(tmp_path: Path, pki: Pki) -> None:
    async with serve(_pod_list_app(), ssl_context=pki.server_context()) as url:
        path = _write_kubeconfig(
            tmp_path,
            url,
            user={"token": "t"},
            cluster_extra={"certificate-authority-data": _b64(pki.ca_pem)},
        )
        assert (await _list_pods(load_kube_config(path)))["rv"] == "7"


async def test_tls_rejects_a_trusted_certificate_issued_for_another_host(
    tmp_path: Path, pki: Pki
) -> None:
    context = pki.server_context(names=("api.example.test",))
    async with serve(_pod_list_app(), ssl_context=context) as url:
        path = _write_kubeconfig(
            tmp_path,
            url,
            user={"token": "t"},
            cluster_extra={"certificate-authority-data": _b64(pki.ca_pem)},
        )
        with pytest.raises(TLSVerificationError):
            await _list_pods(load_kube_config(path))


async def test_tls_verification_is_skipped_only_when_the_kubeconfig_says_so(
    tmp_path: Path, pki: Pki
) -> None:
    async with serve(_pod_list_app(), ssl_context=pki.server_context()) as url:
        path = _write_kubeconfig(
            tmp_path, url, user={"token": "t"}, cluster_extra={"insecure-skip-tls-verify": True}
        )
        config = load_kube_config(path)
        assert config.insecure_skip_tls_verify is True
        assert (await _list_pods(config))["rv"] == "7"


async def test_a_tls_failure_is_not_retried_as_a_refused_connection(
    tmp_path: Path, pki: Pki
) -> None:
    async with serve(_pod_list_app(), ssl_context=pki.server_context()) as url:
        config = load_kube_config(_write_kubeconfig(tmp_path, url, user={"token": "t"}))
        with pytest.raises(ConnectionFailed) as caught:
            await _list_pods(config)
    assert isinstance(caught.value, TLSVerificationError)
    assert caught.value.refused is False


# ---------------------------------------------------------------------------------------
# secrets stay out of logs, reprs and exception messages


def _chain(exc: BaseException) -> list[str]:
    """``str`` and ``repr`` of an exception and of every cause and context behind it."""
    texts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return texts


def _assert_no_secret(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text
        assert _b64(secret) not in text


async def test_tokens_never_appear_in_logs_reprs_or_errors(
    tmp_path: Path, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    async with FakeAPIServer() as server:
        path = _write_kubeconfig(
            tmp_path,
            server.url,
            user={
                "token": SECRET_TOKEN,
                "client-certificate-data": _b64(pki.client_cert_pem),
                "client-key-data": _b64(pki.client_key_pem),
            },
        )
        config = load_kube_config(path)
        texts += [repr(config), str(config)]
        async with Client(config) as client:
            texts.append(repr(client))
            pods = client.resource("pods", namespace="default")
            texts.append(repr(pods))
            with pytest.raises(Unauthorized) as unauthorized:
                await pods.list()
            texts += _chain(unauthorized.value)
            server.add_token(
                SECRET_TOKEN, user="alice", rules=[Rule(verbs=["get"], resources=["pods"])]
            )
            with pytest.raises(Forbidden) as forbidden:
                await pods.list()
            texts += _chain(forbidden.value)

            errors: list[BaseException] = []
            clock = FakeClock()
            informer = SharedIndexInformer(
                pods,
                clock=clock,
                watch_error_handler=lambda _r, exc: errors.append(exc),
                reflector=ReflectorOptions(use_watch_list=False),
            )
            async with informer:
                await clock.wait_for_sleepers(1)
                assert errors
                texts += [repr(informer), repr(informer.statistics())]
            texts += [text for e in errors for text in _chain(e)]
        port = server.port
    # Connection refused, with the same credentials.
    async with Client(config, connect_timeout=1.0) as client:
        with pytest.raises(ConnectionFailed) as refused:
            await client.resource("v1/pods", namespace="default").list()
        texts += [*_chain(refused.value), repr(client), f"port {port}"]
    texts.append(caplog.text)
    texts += [repr(record.args) for record in caplog.records]
    everything = "\n".join(texts)
    assert "Unauthorized" in everything  # the checks above did see real failures
    _assert_no_secret(everything, SECRET_TOKEN)
    key_body = "".join(pki.client_key_pem.splitlines()[1:-1])[:40]
    assert key_body not in everything.replace("\n", "")


def test_passwords_and_key_data_never_appear_in_a_config_repr(tmp_path: Path, pki: Pki) -> None:
    path = _write_kubeconfig(
        tmp_path,
        "https://127.0.0.1:6443",
        user={"username": "admin", "password": SECRET_PASSWORD},
        cluster_extra={"certificate-authority-data": _b64(pki.ca_pem)},
    )
    config = load_kube_config(path)
    text = repr(config) + str(config) + repr(Client(config))
    _assert_no_secret(text, SECRET_PASSWORD)
    assert "admin" in text or "Config" in text


def test_a_malformed_secret_in_a_kubeconfig_is_not_quoted_in_the_error(tmp_path: Path) -> None:
    not_base64 = "!!" + SECRET_TOKEN + "!!"
    path = _write_kubeconfig(
        tmp_path,
        "https://127.0.0.1:6443",
        user={"token": "t", "client-key-data": not_base64, "client-certificate-data": not_base64},
    )
    with pytest.raises(ConfigError) as caught:
        load_kube_config(path)
    assert SECRET_TOKEN not in str(caught.value)
    assert "client-" in str(caught.value)


# ---------------------------------------------------------------------------------------
# 401: refresh once, then Unauthorized


@pytest.fixture
async def server() -> AsyncIterator[FakeAPIServer]:
    async with FakeAPIServer() as fake:
        yield fake


def _rejected(server: FakeAPIServer) -> int:
    """Requests the server answered 401 (no account matched the token)."""
    return sum(1 for record in server.request_log if record.user is None)


async def test_a_401_rereads_a_rotated_token_file_and_retries_once(
    server: FakeAPIServer, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("token-aaaa")
    os.utime(token_file, ns=(10**9, 10**9))
    server.add_token("token-aaaa")
    server.add_token("token-bbbb")
    async with Client(Config(host=server.url, token_file=str(token_file))) as client:
        pods = client.resource("v1/pods", namespace="default")
        await pods.list()
        # Rotate so that size and mtime look unchanged: only a 401 makes the client
        # read the file again.
        server.remove_token("token-aaaa")
        token_file.write_text("token-bbbb")
        os.utime(token_file, ns=(10**9, 10**9))
        before = len(server.request_log)
        await pods.list()
    assert [record.user for record in server.request_log[before:]] == [
        None,
        "system:serviceaccount:default:token-bbbb",
    ]


async def test_a_401_with_an_unchanged_token_file_raises_unauthorized_without_retrying(
    server: FakeAPIServer, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("revoked-token")
    async with Client(Config(host=server.url, token_file=str(token_file))) as client:
        with pytest.raises(Unauthorized) as caught:
            await client.resource("v1/pods", namespace="default").list()
    assert caught.value.code == 401
    # The file was read again and held the same token: resending it would be pointless.
    assert len(server.request_log) == _rejected(server) == 1


async def test_a_401_with_a_static_token_is_not_retried(server: FakeAPIServer) -> None:
    async with Client(Config(host=server.url, token="unknown-token")) as client:
        with pytest.raises(Unauthorized):
            await client.resource("v1/pods", namespace="default").list()
    assert len(server.request_log) == _rejected(server) == 1


class ErrorLog:
    """A ``watch_error_handler`` that records errors and lets a test wait for the n-th."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []
        self._changed = asyncio.Event()

    def __call__(self, reflector: object, exc: BaseException) -> None:
        self.errors.append(exc)
        self._changed.set()

    async def wait_for(self, count: int, *, timeout: float = 5.0) -> None:
        await wait_until(
            lambda: len(self.errors) >= count,
            changed=self._changed,
            timeout=timeout,
            what=f"{count} watch errors",
        )


async def test_an_informer_with_a_revoked_token_backs_off_instead_of_retrying_hot(
    server: FakeAPIServer, cache: CacheMode
) -> None:
    clock = FakeClock()
    log = ErrorLog()
    errors = log.errors
    async with Client(Config(host=server.url, token="revoked")) as client:
        informer = SharedIndexInformer(
            client.resource("v1/pods", namespace="default"),
            clock=clock,
            cache=cache,
            watch_error_handler=log,
            reflector=ReflectorOptions(use_watch_list=False),
        )
        async with informer:
            await clock.wait_for_sleepers(1)
            assert len(errors) == 1
            assert isinstance(errors[0], Unauthorized)
            attempts = len(server.request_log)
            # No time passes: however long the loop runs, nothing is sent.
            for _ in range(50):
                await asyncio.sleep(0)
            assert len(server.request_log) == attempts
            deadline = clock.next_deadline()
            assert deadline is not None
            await clock.advance(deadline - clock.monotonic())
            await log.wait_for(2)
            await clock.wait_for_sleepers(1)
            assert len(server.request_log) > attempts
            assert informer.has_synced() is False


# ---------------------------------------------------------------------------------------
# 403 on a namespace


async def test_a_403_on_a_namespace_reaches_the_error_handler_and_statistics_with_backoff(
    server: FakeAPIServer, cache: CacheMode
) -> None:
    server.add_token("team-a", rules=[Rule(verbs=["*"], resources=["*"], namespaces=["team-a"])])
    clock = FakeClock()
    log = ErrorLog()
    errors = log.errors

    async def handler(reflector: object, exc: BaseException) -> None:
        log(reflector, exc)

    delays: list[float] = []
    async with Client(Config(host=server.url, token="team-a")) as client:
        informer = SharedIndexInformer(
            client.resource("v1/pods", namespace="team-b"),
            clock=clock,
            cache=cache,
            watch_error_handler=handler,
            reflector=ReflectorOptions(use_watch_list=False),
        )
        async with informer:
            for attempt in range(1, 4):
                await clock.wait_for_sleepers(1)
                await log.wait_for(attempt)
                assert len(errors) == attempt
                stats = informer.statistics()
                assert stats.reflector is not None
                assert stats.reflector.state is ReflectorState.BACKING_OFF
                assert isinstance(stats.reflector.last_error, Forbidden)
                assert stats.synced is False
                deadline = clock.next_deadline()
                assert deadline is not None
                delays.append(deadline - clock.monotonic())
                await clock.advance(delays[-1])
    assert all(isinstance(exc, Forbidden) for exc in errors)
    assert "team-b" in str(errors[0])
    assert isinstance(errors[0], ApiError)
    # 0.8 s doubling, each stretched by up to 100 % jitter.
    for n, delay in enumerate(delays):
        assert 0.8 * 2**n <= delay < 0.8 * 2 ** (n + 1)
