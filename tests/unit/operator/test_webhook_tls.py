"""The webhook server's certificates: files read at the start (a broken pair named), read
again when they change (new handshakes get the new pair, a broken new pair leaves the old
one serving, checks paced by the clock), and a self-signed pair for development.

Handshakes run over memory BIOs: real TLS, no sockets."""

from __future__ import annotations

import contextlib
import logging
import ssl
from typing import TYPE_CHECKING, Any

import pytest
import trustme

from aioinformer.operator._webhook_tls import (
    CertificateWatcher,
    WebhookCertificateError,
    make_self_signed,
    server_context,
)
from aioinformer.testing.clock import FakeClock

if TYPE_CHECKING:
    from pathlib import Path


def handshake(
    server: ssl.SSLContext, ca_pem: bytes, hostname: str = "127.0.0.1", *, strict: bool = False
) -> Any:
    """The certificate a client trusting ``ca_pem`` is shown by ``server``; ``strict``:
    verified as Python 3.13's default context does (``VERIFY_X509_STRICT``)."""
    client = ssl.create_default_context(cadata=ca_pem.decode())
    if strict:
        client.verify_flags |= ssl.VERIFY_X509_STRICT
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    tls_client = client.wrap_bio(c_in, c_out, server_hostname=hostname)
    tls_server = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        for side in (tls_client, tls_server):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        try:
            tls_client.do_handshake()
            tls_server.do_handshake()
        except ssl.SSLWantReadError:
            continue
        return tls_client.getpeercert()
    raise AssertionError("the handshake did not finish")


def names_of(cert: Any) -> set[str]:
    return {value for _, value in cert["subjectAltName"]}


def write_pair(directory: Path, ca: trustme.CA, *names: str) -> tuple[Path, Path]:
    issued = ca.issue_cert(*names)
    cert_file, key_file = directory / "tls.crt", directory / "tls.key"
    cert_file.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    key_file.write_bytes(issued.private_key_pem.bytes())
    return cert_file, key_file


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


def test_the_pair_read_at_the_start_serves(tmp_path: Path, ca: trustme.CA) -> None:
    cert_file, key_file = write_pair(tmp_path, ca, "127.0.0.1", "webhook.ops.svc")
    watcher = CertificateWatcher(cert_file, key_file, clock=FakeClock())
    assert names_of(handshake(watcher.context, ca.cert_pem.bytes())) == {
        "127.0.0.1",
        "webhook.ops.svc",
    }
    assert watcher.reload() is False  # unchanged files: nothing read


def test_a_missing_file_at_the_start_is_named(tmp_path: Path) -> None:
    with pytest.raises(WebhookCertificateError, match=r"tls\.crt does not exist") as caught:
        CertificateWatcher(tmp_path / "tls.crt", tmp_path / "tls.key", clock=FakeClock())
    assert caught.value.path == tmp_path / "tls.crt"


def test_a_key_that_is_not_pem_fails_the_start_naming_it(tmp_path: Path, ca: trustme.CA) -> None:
    cert_file, key_file = write_pair(tmp_path, ca, "127.0.0.1")
    key_file.write_text("not a key")
    with pytest.raises(WebhookCertificateError, match="is not a PEM private key") as caught:
        server_context(cert_file, key_file)
    assert caught.value.path == key_file


def test_a_certificate_that_is_not_pem_fails_the_start_naming_it(
    tmp_path: Path, ca: trustme.CA
) -> None:
    cert_file, key_file = write_pair(tmp_path, ca, "127.0.0.1")
    cert_file.write_text("not a certificate")
    with pytest.raises(WebhookCertificateError, match="is not a PEM certificate") as caught:
        server_context(cert_file, key_file)
    assert caught.value.path == cert_file


def test_a_key_of_another_certificate_fails_the_start(tmp_path: Path, ca: trustme.CA) -> None:
    cert_file, key_file = write_pair(tmp_path, ca, "127.0.0.1")
    other = ca.issue_cert("127.0.0.1")
    key_file.write_bytes(other.private_key_pem.bytes())
    with pytest.raises(WebhookCertificateError, match="does not match the key") as caught:
        server_context(cert_file, key_file)
    assert caught.value.path == cert_file


def test_new_files_are_served_to_the_next_handshake(tmp_path: Path, ca: trustme.CA) -> None:
    cert_file, key_file = write_pair(tmp_path, ca, "127.0.0.1", "old.example")
    watcher = CertificateWatcher(cert_file, key_file, clock=FakeClock(), interval=0)
    assert "old.example" in names_of(handshake(watcher.context, ca.cert_pem.bytes()))
    write_pair(tmp_path, ca, "127.0.0.1", "new.example")
    assert "new.example" in names_of(handshake(watcher.context, ca.cert_pem.bytes()))
    assert watcher.reloads == 1


def test_a_broken_new_pair_keeps_the_old_one_serving_and_is_logged_once(
    tmp_path: Path, ca: trustme.CA, caplog: pytest.LogCaptureFixture
) -> None:
    cert_file, key_file = write_pair(tmp_path, ca, "127.0.0.1", "old.example")
    watcher = CertificateWatcher(cert_file, key_file, clock=FakeClock(), interval=0)
    key_file.write_bytes(ca.issue_cert("x.example").private_key_pem.bytes())
    with pytest.raises(WebhookCertificateError):
        watcher.reload()
    with caplog.at_level(logging.ERROR, logger="aioinformer.operator._webhook_tls"):
        for _ in range(3):
            assert "old.example" in names_of(handshake(watcher.context, ca.cert_pem.bytes()))
    assert len([r for r in caplog.records if "kept the old certificate" in r.message]) == 1
    write_pair(tmp_path, ca, "127.0.0.1", "fixed.example")  # the next change is tried
    assert "fixed.example" in names_of(handshake(watcher.context, ca.cert_pem.bytes()))


async def test_the_files_are_checked_at_most_once_an_interval(
    tmp_path: Path, ca: trustme.CA
) -> None:
    clock = FakeClock()
    cert_file, key_file = write_pair(tmp_path, ca, "127.0.0.1", "old.example")
    watcher = CertificateWatcher(cert_file, key_file, clock=clock, interval=10)
    handshake(watcher.context, ca.cert_pem.bytes())  # the first check, at 0
    write_pair(tmp_path, ca, "127.0.0.1", "new.example")
    await clock.advance(9)
    assert "old.example" in names_of(handshake(watcher.context, ca.cert_pem.bytes()))
    await clock.advance(1)
    assert "new.example" in names_of(handshake(watcher.context, ca.cert_pem.bytes()))


def test_a_negative_interval_is_refused(tmp_path: Path, ca: trustme.CA) -> None:
    cert_file, key_file = write_pair(tmp_path, ca, "127.0.0.1")
    with pytest.raises(ValueError, match="interval must be >= 0"):
        CertificateWatcher(cert_file, key_file, clock=FakeClock(), interval=-1)


def test_a_self_signed_pair_serves_its_names_trusted_by_its_ca(tmp_path: Path) -> None:
    pytest.importorskip("cryptography", reason="the self-signed pair needs cryptography")
    pair = make_self_signed(("webhook.ops.svc", "127.0.0.1"))
    cert_file, key_file = pair.write(tmp_path, "tls.crt", "tls.key")
    assert key_file.stat().st_mode & 0o077 == 0
    context = server_context(cert_file, key_file)
    # Verified strictly, as Python 3.13 verifies by default: the key identifiers chain it.
    cert = handshake(context, pair.ca_pem, hostname="webhook.ops.svc", strict=True)
    assert cert["subjectAltName"] == (("DNS", "webhook.ops.svc"), ("IP Address", "127.0.0.1"))
    assert names_of(handshake(context, pair.ca_pem, hostname="127.0.0.1")) >= {"127.0.0.1"}
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(context, make_self_signed(("other",)).ca_pem, hostname="webhook.ops.svc")


def test_a_self_signed_pair_needs_a_name() -> None:
    with pytest.raises(ValueError, match="at least one DNS name"):
        make_self_signed(())
