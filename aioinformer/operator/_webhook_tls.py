"""The webhook server's certificates: files reloaded when they change, or a pair made here.

Role: what controller-runtime's ``certwatcher`` does for ``webhook.Server``, and a
self-signed pair for development. :class:`CertificateWatcher` holds the serving
certificate and key read from two files (cert-manager's ``tls.crt`` and ``tls.key``) and
hands the server one :class:`ssl.SSLContext` whose handshake callback gives each new
connection the newest pair: every ``interval`` seconds of the clock (at a handshake, so an
idle server reads nothing) it compares the files' sizes and modification times with those
it loaded and, when they differ, loads them into a fresh context; connections already open
keep the certificate they were made with. A broken pair read again keeps the old one
serving and is logged once per change (:meth:`CertificateWatcher.reload` raises it);
a broken pair at the start fails the start. :func:`make_self_signed` makes a CA and a
serving certificate for given DNS names and IP addresses with the ``cryptography`` package
(``pip install 'aioinformer[webhooks]'``), imported only then.

Errors: :class:`WebhookCertificateError` names the file and what is wrong with it.

Task model: none of its own; the handshake callback runs on the event loop (two ``stat``
calls when a check is due, the files read only when they changed).
"""

from __future__ import annotations

import datetime
import importlib
import ipaddress
import logging
import os
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from aioinformer._kernel.clock import Clock

__all__ = [
    "CertificateWatcher",
    "SelfSignedPair",
    "WebhookCertificateError",
    "make_self_signed",
    "server_context",
]

logger = logging.getLogger(__name__)


class WebhookCertificateError(ValueError):
    """The webhook server's certificate or key file is missing, unreadable, not PEM, or
    the two do not match. At the start it fails the start; on a reload the old pair keeps
    serving. Not retried by the server: the watcher tries again only once the files change."""

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path
        """The file at fault (the certificate's when the two do not match)."""


def server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """A TLS 1.2+ server context serving ``cert_file`` (the chain, leaf first) with
    ``key_file``; :class:`WebhookCertificateError` naming the file at fault."""
    for path in (cert_file, key_file):
        if not path.is_file():
            raise WebhookCertificateError(
                f"webhook certificate file {path} does not exist", path=path
            )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert_file, key_file)
    except ssl.SSLError as exc:
        raise _fault(cert_file, key_file, exc) from exc
    except OSError as exc:
        raise WebhookCertificateError(
            f"cannot read webhook certificate files {cert_file}, {key_file}: {exc}", path=cert_file
        ) from exc
    return context


def _fault(cert_file: Path, key_file: Path, exc: ssl.SSLError) -> WebhookCertificateError:
    """Which of the two files OpenSSL refused, and why, from a second look at the
    certificate alone."""
    try:
        ssl.create_default_context().load_verify_locations(cafile=cert_file)
    except ssl.SSLError as cert_exc:
        return WebhookCertificateError(
            f"webhook certificate file {cert_file} is not a PEM certificate: "
            f"{cert_exc.reason or cert_exc}",
            path=cert_file,
        )
    if exc.reason == "KEY_VALUES_MISMATCH":
        return WebhookCertificateError(
            f"webhook certificate file {cert_file} does not match the key in {key_file}",
            path=cert_file,
        )
    return WebhookCertificateError(
        f"webhook key file {key_file} is not a PEM private key: {exc.reason or exc}",
        path=key_file,
    )


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size, status.st_ino


class CertificateWatcher:
    """The serving pair from ``cert_file`` and ``key_file``, reloaded when they change
    (see the module docstring). ``interval`` is how often, in seconds of ``clock``, a
    handshake checks the files; 0 checks at every handshake."""

    def __init__(
        self, cert_file: Path, key_file: Path, *, clock: Clock, interval: float = 10.0
    ) -> None:
        if interval < 0:
            raise ValueError(f"the certificate reload interval must be >= 0, got {interval}")
        self.cert_file = cert_file
        self.key_file = key_file
        self._clock = clock
        self._interval = interval
        self._current = server_context(cert_file, key_file)
        self._stamps = (_stamp(cert_file), _stamp(key_file))
        # The stamps of a broken pair already logged: logged once, tried again on a change.
        self._failed_stamps: tuple[Any, ...] | None = None
        self._next_check: float | None = None
        self.reloads = 0
        """Pairs loaded since the first."""
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        """The context the server listens with: each handshake is handed the newest pair."""
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.context.load_cert_chain(cert_file, key_file)
        self.context.sni_callback = self._on_handshake

    @property
    def current(self) -> ssl.SSLContext:
        """The context of the pair new connections get now."""
        return self._current

    def reload(self) -> bool:
        """Load the files again if they changed since the last load: True when a new pair
        now serves, False when nothing changed. Raises :class:`WebhookCertificateError`
        for a broken pair, which leaves the old one serving."""
        stamps = (_stamp(self.cert_file), _stamp(self.key_file))
        if stamps == self._stamps:
            return False
        context = server_context(self.cert_file, self.key_file)
        self._current = context
        self._stamps = stamps
        self._failed_stamps = None
        self.reloads += 1
        logger.info("webhook server: serving the new certificate from %s", self.cert_file)
        return True

    def _on_handshake(self, connection: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> None:
        now = self._clock.monotonic()
        if self._next_check is None or now >= self._next_check:
            self._next_check = now + self._interval
            try:
                self.reload()
            except WebhookCertificateError as error:
                stamps = (_stamp(self.cert_file), _stamp(self.key_file))
                if stamps != self._failed_stamps:
                    self._failed_stamps = stamps
                    logger.error("webhook server: kept the old certificate: %s", error)
        connection.context = self._current


@dataclass(frozen=True, slots=True)
class SelfSignedPair:
    """A CA and a serving certificate it signed, as PEM bytes."""

    ca_pem: bytes
    """The CA's certificate: a client's trust, a configuration's ``caBundle``."""
    cert_pem: bytes
    key_pem: bytes

    def write(self, directory: Path, cert_name: str, key_name: str) -> tuple[Path, Path]:
        """Write the serving certificate and key into ``directory`` (the key readable by
        its owner only); their paths."""
        cert_file, key_file = directory / cert_name, directory / key_name
        cert_file.write_bytes(self.cert_pem)
        key_file.touch(mode=0o600)
        key_file.write_bytes(self.key_pem)
        return cert_file, key_file


def _cryptography() -> Any:
    try:
        return importlib.import_module("cryptography.x509")
    except ImportError as exc:
        raise RuntimeError(
            "a self-signed webhook certificate needs the cryptography package: "
            "pip install 'aioinformer[webhooks]'"
        ) from exc


def make_self_signed(names: tuple[str, ...], *, days: int = 365) -> SelfSignedPair:
    """A new CA and a certificate it signed for ``names`` (DNS names and IP addresses,
    the first also the subject's common name), valid for ``days``; ECDSA P-256 keys.
    ``RuntimeError`` when ``cryptography`` is not installed; ``ValueError`` for no names."""
    if not names:
        raise ValueError("a self-signed webhook certificate needs at least one DNS name or IP")
    x509 = _cryptography()
    hashes = importlib.import_module("cryptography.hazmat.primitives.hashes")
    ec = importlib.import_module("cryptography.hazmat.primitives.asymmetric.ec")
    serialization = importlib.import_module("cryptography.hazmat.primitives.serialization")
    oid = importlib.import_module("cryptography.x509.oid")

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, "aioinformer webhook CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    alt_names: list[Any] = []
    for name in names:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt_names.append(x509.DNSName(name))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        # The key identifiers a strict verifier (Python 3.13's default
        # VERIFY_X509_STRICT) requires to chain the certificate to its CA.
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return SelfSignedPair(
        ca_pem=ca_cert.public_bytes(pem),
        cert_pem=cert.public_bytes(pem),
        key_pem=key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
