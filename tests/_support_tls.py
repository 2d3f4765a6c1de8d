"""Certificates for TLS tests, made on the fly with trustme (nothing on disk is shared)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import trustme


@dataclass(frozen=True)
class Pki:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM text."""

    ca: trustme.CA
    ca_pem: str
    client_cert_pem: str
    client_key_pem: str

    def server_context(
        self, *, names: tuple[str, ...] = ("127.0.0.1",), require_client_cert: bool = False
    ) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert(*names).configure_cert(context)
        if require_client_cert:
            self.ca.configure_trust(context)
            context.verify_mode = ssl.CERT_REQUIRED
        return context


def make_pki() -> Pki:
    ca = trustme.CA()
    client = ca.issue_cert("alice@example.test", common_name="alice")
    return Pki(
        ca=ca,
        ca_pem=ca.cert_pem.bytes().decode(),
        client_cert_pem=client.cert_chain_pems[0].bytes().decode(),
        client_key_pem=client.private_key_pem.bytes().decode(),
    )
