"""Credentials for each request: bearer tokens, rotating token files, exec plugins, basic.

Role: given a :class:`~aioinformer.config.Config`, produce the ``Authorization`` header
value (and, for exec plugins that return one, a client certificate) for the next request,
and refresh them when the server answers 401. Input: the config and the files and programs
it names. Output: a :class:`Credentials` record. Task model: called from the client's
request path on the event loop; an exec plugin runs as a subprocess awaited in the
calling task, and at most one run is in flight at a time (later callers wait for it).
Ordering: concurrent requests share that run's result; after a 401, the refreshed
credentials are what every later request gets.

Credentials never reach a log line, a repr or an exception message.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from aioinformer.errors import ConfigError

if TYPE_CHECKING:
    from aioinformer.config import Config, ExecConfig

__all__ = ["Authenticator", "Credentials"]

logger = logging.getLogger(__name__)

_EXEC_OUTPUT_LIMIT = 1 << 20
"""An ExecCredential larger than this is refused (a plugin gone wrong, not a credential)."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """What one request authenticates with. The repr shows only which parts are set."""

    authorization: str | None = field(default=None, repr=False)
    """The full ``Authorization`` header value, or ``None`` for none."""
    cert_pem: str | None = field(default=None, repr=False)
    """A client certificate from an exec plugin (PEM), with ``key_pem``."""
    key_pem: str | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        parts = []
        if self.authorization is not None:
            parts.append(self.authorization.split(" ", 1)[0].lower())
        if self.cert_pem is not None:
            parts.append("client-certificate")
        return f"<Credentials {'+'.join(parts) or 'none'}>"


@dataclass(slots=True)
class _FileToken:
    """A token file's content and the stat signature it was read at."""

    signature: tuple[int, int, int] | None = None
    """(inode, size, mtime_ns) of the file when ``token`` was read; ``None`` before."""
    token: str | None = field(default=None, repr=False)


@dataclass(slots=True)
class _ExecResult:
    credentials: Credentials
    expires_at: float | None
    """Wall-clock expiry (``time.time()`` scale); ``None`` means "until a 401"."""


class Authenticator:
    """Supplies :class:`Credentials` for requests and refreshes them on 401.

    Precedence: ``token_file`` (re-read whenever its inode, size or mtime changes, since
    service-account tokens rotate), ``token``, ``exec`` (cached until the credential's
    expiry, re-run on 401), then basic auth. Client certificates from the config are
    handled by the TLS context, not here.
    """

    def __init__(self, config: Config) -> None:
        self._config = config
        self._file = _FileToken()
        self._exec_result: _ExecResult | None = None
        # Guards exec runs: one plugin process at a time; waiters reuse its result.
        self._exec_lock = asyncio.Lock()
        self._static: Credentials | None = None
        if config.token_file is None and config.exec is None:
            if config.token:
                self._static = Credentials(authorization=f"Bearer {config.token}")
            elif config.username is not None and config.password is not None:
                pair = f"{config.username}:{config.password}".encode()
                basic = base64.b64encode(pair).decode("ascii")
                self._static = Credentials(authorization=f"Basic {basic}")
            else:
                self._static = Credentials()
        elif config.token_file is None and config.token:
            self._static = Credentials(authorization=f"Bearer {config.token}")

    @property
    def refreshable(self) -> bool:
        """Whether a 401 can be answered by fetching new credentials."""
        return self._static is None

    async def credentials(self) -> Credentials:
        """The credentials for the next request."""
        if self._static is not None:
            return self._static
        if self._config.token_file is not None:
            return Credentials(authorization=f"Bearer {self._read_token_file()}")
        return await self._exec_credentials(stale=None)

    async def refresh(self, rejected: Credentials) -> bool:
        """After a 401 for ``rejected``: get fresh credentials; return whether a retry is
        worth it (they differ from, or were re-fetched after, the rejected ones)."""
        if self._static is not None:
            return False
        if self._config.token_file is not None:
            self._file.signature = None
            token = self._read_token_file()
            return rejected.authorization != f"Bearer {token}"
        fresh = await self._exec_credentials(stale=rejected)
        return fresh is not rejected

    # -- token file ------------------------------------------------------------------

    def _read_token_file(self) -> str:
        path = self._config.token_file
        assert path is not None
        try:
            st = os.stat(path)
            signature = (st.st_ino, st.st_size, st.st_mtime_ns)
            if signature != self._file.signature or self._file.token is None:
                with open(path, encoding="utf-8") as handle:
                    token = handle.read().strip()
                if not token:
                    raise ConfigError(f"token file {path} is empty")
                self._file.token = token
                self._file.signature = signature
                logger.debug("read bearer token from %s", path)
        except OSError as exc:
            if self._file.token is not None:
                # Mid-rotation the file may briefly be absent; keep the last token.
                return self._file.token
            raise ConfigError(f"cannot read token file {path}: {exc.strerror or exc}") from None
        return self._file.token

    # -- exec plugin -----------------------------------------------------------------

    async def _exec_credentials(self, *, stale: Credentials | None) -> Credentials:
        async with self._exec_lock:
            current = self._exec_result
            if current is not None:
                expired = current.expires_at is not None and time.time() >= current.expires_at
                rejected = stale is not None and current.credentials is stale
                if not expired and not rejected:
                    return current.credentials
            assert self._config.exec is not None
            self._exec_result = await _run_exec_plugin(self._config.exec, self._config)
            return self._exec_result.credentials

    def __repr__(self) -> str:
        kinds = ",".join(k for k in self._config.auth_kinds if k != "client_certificate")
        return f"<Authenticator {kinds or 'none'}>"


def _exec_info(spec: ExecConfig, config: Config) -> str:
    payload: dict[str, Any] = {
        "apiVersion": spec.api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    if spec.provide_cluster_info:
        cluster: dict[str, Any] = {"server": config.host}
        if config.ca_data:
            cluster["certificate-authority-data"] = base64.b64encode(
                config.ca_data.encode()
            ).decode("ascii")
        if config.tls_server_name:
            cluster["tls-server-name"] = config.tls_server_name
        if config.insecure_skip_tls_verify:
            cluster["insecure-skip-tls-verify"] = True
        if config.proxy_url:
            cluster["proxy-url"] = config.proxy_url
        payload["spec"]["cluster"] = cluster
    return orjson.dumps(payload).decode()


async def _run_exec_plugin(spec: ExecConfig, config: Config) -> _ExecResult:
    name = os.path.basename(spec.command)
    env = dict(os.environ)
    env.update(spec.env)
    env["KUBERNETES_EXEC_INFO"] = _exec_info(spec, config)
    logger.debug("running exec credential plugin %s", name)
    try:
        process = await asyncio.create_subprocess_exec(
            spec.command,
            *spec.args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
    except OSError as exc:
        hint = f" ({spec.install_hint.strip()})" if spec.install_hint else ""
        raise ConfigError(
            f"exec plugin {spec.command!r} cannot be run: {exc.strerror or exc}{hint}"
        ) from None
    try:
        stdout, stderr = await process.communicate()
    except BaseException:
        # Cancelled while the plugin runs: do not leave the process behind.
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await asyncio.shield(process.wait())
        raise
    if process.returncode != 0:
        detail = stderr.decode("utf-8", "replace").strip().splitlines()
        last = f": {detail[-1][:200]}" if detail else ""
        raise ConfigError(f"exec plugin {name!r} exited with status {process.returncode}{last}")
    return _parse_exec_output(stdout, spec, name)


def _parse_exec_output(stdout: bytes, spec: ExecConfig, name: str) -> _ExecResult:
    if len(stdout) > _EXEC_OUTPUT_LIMIT:
        raise ConfigError(f"exec plugin {name!r} printed more than {_EXEC_OUTPUT_LIMIT} bytes")
    try:
        data = orjson.loads(stdout)
    except orjson.JSONDecodeError:
        raise ConfigError(f"exec plugin {name!r} did not print an ExecCredential") from None
    if not isinstance(data, dict) or data.get("kind") != "ExecCredential":
        raise ConfigError(f"exec plugin {name!r} did not print an ExecCredential")
    if data.get("apiVersion") != spec.api_version:
        raise ConfigError(
            f"exec plugin {name!r} answered in apiVersion {data.get('apiVersion')!r}, "
            f"expected {spec.api_version!r}"
        )
    status = data.get("status")
    if not isinstance(status, dict):
        raise ConfigError(f"exec plugin {name!r}: ExecCredential has no status")
    token = status.get("token")
    cert = status.get("clientCertificateData")
    key = status.get("clientKeyData")
    if not token and not (cert and key):
        raise ConfigError(
            f"exec plugin {name!r}: ExecCredential status has neither a token nor a "
            "client certificate and key"
        )
    if bool(cert) != bool(key):
        raise ConfigError(f"exec plugin {name!r}: client certificate and key come together")
    expires_at: float | None = None
    raw_expiry = status.get("expirationTimestamp")
    if raw_expiry:
        try:
            expires_at = datetime.fromisoformat(str(raw_expiry).replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise ConfigError(
                f"exec plugin {name!r}: expirationTimestamp {raw_expiry!r} is not RFC 3339"
            ) from None
    credentials = Credentials(
        authorization=f"Bearer {token}" if token else None,
        cert_pem=str(cert) if cert else None,
        key_pem=str(key) if key else None,
    )
    return _ExecResult(credentials=credentials, expires_at=expires_at)
