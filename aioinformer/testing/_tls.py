"""A throwaway certificate authority for the fake API server's HTTPS.

Role: what ``FakeAPIServer(tls=True)`` serves with. Input: nothing but the request for
one; output: a CA made for this server alone (its PEM, for clients to trust) and an
``ssl.SSLContext`` that presents a certificate it issued for ``127.0.0.1`` and
``localhost``. Nothing is written to disk here: kubeconfig files carry the CA as
``certificate-authority-data``.

The certificates come from ``trustme`` (``pip install 'aioinformer[testing]'``), imported
only when a server asks for TLS, so plain-HTTP tests need nothing more.

Task model: synchronous, called once per server before it listens.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

__all__ = ["ServerTls", "make_server_tls"]

_NAMES = ("127.0.0.1", "localhost")
"""What the server certificate is valid for: the address the fake listens on, and the
name some clients put in its place."""


@dataclass(frozen=True, slots=True)
class ServerTls:
    """One server's TLS material: the CA clients trust and the context it serves with."""

    ca_pem: bytes
    """The CA certificate, PEM-encoded: what a client verifies the server against."""
    context: ssl.SSLContext
    """A server-side context presenting the certificate the CA issued."""


def make_server_tls() -> ServerTls:
    """A new CA and a server context with a certificate it issued for 127.0.0.1.

    Raises :class:`ModuleNotFoundError` with the package to install when ``trustme`` is
    missing."""
    try:
        import trustme
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "FakeAPIServer(tls=True) makes its certificates with trustme: "
            "pip install 'aioinformer[testing]' (or trustme)",
            name="trustme",
        ) from exc
    ca = trustme.CA(organization_name="aioinformer fake API server")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*_NAMES).configure_cert(context)
    return ServerTls(ca_pem=ca.cert_pem.bytes(), context=context)
