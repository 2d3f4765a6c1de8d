"""TLS for the client: the SSL context that trusts the config's CA and presents its cert.

Role: build the ``ssl.SSLContext`` a connection to the API server uses. Input: a
:class:`~aioinformer.config.Config` (CA data or file, client certificate and key as data or
files, ``insecure_skip_tls_verify``), or a client certificate an exec plugin returned.
Output: the context, or :class:`~aioinformer.errors.ConfigError` naming the config and the
material that is not usable (through :func:`aioinformer.client._transport.map_tls_config_errors`;
ssl's message names the failing step, never the key material).

Verification is turned off only when the config says so. ssl loads a certificate chain
only from files, so PEM given as data is written to a private temporary directory (mode
0600) for the duration of the load. Pure apart from that file I/O; no tasks.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from typing import TYPE_CHECKING

from aioinformer.client._transport import map_tls_config_errors
from aioinformer.errors import ConfigError

if TYPE_CHECKING:
    from aioinformer.config import Config

__all__ = ["ssl_context"]


def _load_cert_chain(context: ssl.SSLContext, cert_pem: str, key_pem: str) -> None:
    with tempfile.TemporaryDirectory(prefix="aioinformer-") as directory:
        cert_path = os.path.join(directory, "client.crt")
        key_path = os.path.join(directory, "client.key")
        for path, text in ((cert_path, cert_pem), (key_path, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
        context.load_cert_chain(cert_path, key_path)


def _read_text(path: str | None) -> str:
    if path is None:
        raise ConfigError("a client certificate needs both a certificate and a key")
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def ssl_context(
    config: Config, *, cert_pem: str | None = None, key_pem: str | None = None
) -> ssl.SSLContext:
    """The TLS context for ``config``: its CA only (system roots without one), its client
    certificate (or the given one), and verification off only when the config says so."""
    where = config.source or "config"
    with map_tls_config_errors(where, "certificate authority"):
        if config.ca_data or config.ca_file:
            context = ssl.create_default_context(
                cafile=None if config.ca_data else config.ca_file, cadata=config.ca_data
            )
        else:
            context = ssl.create_default_context()
    if config.insecure_skip_tls_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    with map_tls_config_errors(where, "client certificate or key"):
        if cert_pem and key_pem:
            _load_cert_chain(context, cert_pem, key_pem)
        elif config.cert_data or config.cert_file:
            if config.cert_file and config.key_file and not (config.cert_data or config.key_data):
                context.load_cert_chain(config.cert_file, config.key_file)
            else:
                cert = config.cert_data or _read_text(config.cert_file)
                key = config.key_data or _read_text(config.key_file)
                _load_cert_chain(context, cert, key)
    return context
