"""``FakeAPIServer(tls=True)``: a CA of its own, a certificate for 127.0.0.1 it issued,
and a kubeconfig that carries both the CA and the token, so that kubectl (which sends no
token over plain HTTP) and the library's client trust the server and authenticate. The
round trips over real sockets are in ``tests/e2e/test_fake_apiserver_kubectl.py``."""

from __future__ import annotations

import os
import ssl
import sys
from typing import TYPE_CHECKING

import pytest

from aioinformer.config import load_kube_config
from aioinformer.testing._tls import make_server_tls
from aioinformer.testing.apiserver import ADMIN_TOKEN, FakeAPIServer

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def kubeconfigs() -> Iterator[list[str]]:
    """Paths to remove after the test (a server that never started keeps its files)."""
    paths: list[str] = []
    yield paths
    for path in paths:
        os.unlink(path)


def handshake(server: ssl.SSLContext, client: ssl.SSLContext, name: str) -> None:
    """A TLS handshake in memory between the two contexts; raises what the client's
    verification raises."""
    server_in, server_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    client_in, client_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    server_side = server.wrap_bio(server_in, server_out, server_side=True)
    client_side = client.wrap_bio(client_in, client_out, server_hostname=name)
    done = {"client": False, "server": False}
    for _ in range(10):
        for side, conn in (("client", client_side), ("server", server_side)):
            if done[side]:
                continue
            try:
                conn.do_handshake()
                done[side] = True
            except ssl.SSLWantReadError:
                pass
        server_in.write(client_out.read())
        client_in.write(server_out.read())
        if all(done.values()):
            return
    raise AssertionError("the handshake did not finish")


def test_the_kubeconfig_carries_the_ca_and_the_token(kubeconfigs: list[str]) -> None:
    server = FakeAPIServer(tls=True)
    assert server.url.startswith("https://127.0.0.1:")
    assert server.ca_pem is not None
    assert server.ca_pem.startswith(b"-----BEGIN CERTIFICATE-----")
    path = server.kubeconfig_path()
    kubeconfigs.append(path)
    config = load_kube_config(path)
    assert config.host == server.url
    assert config.ca_data == server.ca_pem.decode()
    assert config.token == ADMIN_TOKEN
    assert not config.insecure_skip_tls_verify


def test_a_plain_server_writes_no_ca(kubeconfigs: list[str]) -> None:
    server = FakeAPIServer()
    assert server.ca_pem is None
    assert server.url.startswith("http://127.0.0.1:")
    path = server.kubeconfig_path(token="t")
    kubeconfigs.append(path)
    config = load_kube_config(path)
    assert (config.ca_data, config.ca_file, config.token) == (None, None, "t")


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_the_server_certificate_verifies_against_the_ca_for_its_names(name: str) -> None:
    tls = make_server_tls()
    client = ssl.create_default_context(cadata=tls.ca_pem.decode())
    handshake(tls.context, client, name)


def test_another_servers_ca_does_not_verify_it() -> None:
    tls, other = make_server_tls(), make_server_tls()
    assert tls.ca_pem != other.ca_pem
    client = ssl.create_default_context(cadata=other.ca_pem.decode())
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(tls.context, client, "127.0.0.1")


def test_without_trustme_tls_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "trustme", None)
    with pytest.raises(ModuleNotFoundError, match=r"aioinformer\[testing\]"):
        FakeAPIServer(tls=True)
    assert FakeAPIServer().ca_pem is None


def test_a_kubeconfig_written_where_asked_is_for_its_owner_only(tmp_path: Path) -> None:
    server = FakeAPIServer(tls=True)
    wanted = tmp_path / "fake.kubeconfig"
    wanted.write_text("stale")
    wanted.chmod(0o644)
    path = server.kubeconfig_path(path=str(wanted), namespace="team-a")
    assert path == str(wanted)
    assert (wanted.stat().st_mode & 0o777) == 0o600
    config = load_kube_config(path)
    assert (config.host, config.namespace) == (server.url, "team-a")
    fresh = tmp_path / "fresh.kubeconfig"
    server.kubeconfig_path(path=str(fresh))
    assert (fresh.stat().st_mode & 0o777) == 0o600
