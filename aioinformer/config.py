"""Where the API server is and who we are to it: :class:`Config` and its loaders.

Role: turn a kubeconfig file (or several, merged) or the in-cluster service-account
environment into one immutable :class:`Config`, which :class:`aioinformer.client.Client`
consumes. Input: files and environment variables. Output: a ``Config`` whose paths are
absolute and whose base64 fields are decoded; nothing here opens a connection.

Loaders:

* :func:`load_kube_config` reads ``path``, else every file of ``$KUBECONFIG`` merged as
  kubectl merges them (the first file to define a name, or ``current-context``, wins;
  listed files that do not exist are skipped), else ``~/.kube/config``.
* :func:`load_incluster_config` reads ``KUBERNETES_SERVICE_HOST``/``_PORT`` and the
  service-account directory (token, ``ca.crt``, ``namespace``). The token is referenced as
  ``token_file`` so rotated tokens are picked up.
* :func:`load_config` picks one of the two the way ``Client.from_env()`` does.

Every failure raises :class:`~aioinformer.errors.ConfigError` whose message names the
file, the context and the field at fault. Credentials (tokens, passwords, keys,
certificates) never appear in a repr or an error message.

Example::

    config = load_kube_config(context="kind-kind")
    async with Client(config) as client:
        ...
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import pydantic
import yaml

from aioinformer.errors import ConfigError
from aioinformer.models import (
    KubeConfig,
    KubeConfigAuthInfo,
    KubeConfigCluster,
    KubeConfigContext,
    KubeConfigExec,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "Config",
    "ExecConfig",
    "SERVICE_ACCOUNT_DIR",
    "load_config",
    "load_incluster_config",
    "load_kube_config",
]

SERVICE_ACCOUNT_DIR: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where a pod's service-account token, CA bundle and namespace are mounted."""

_EXEC_API_VERSIONS: Final = frozenset(
    {"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}
)
_PROXY_SCHEMES: Final = frozenset({"http", "https"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecConfig:
    """An exec credential plugin: a command that prints an ``ExecCredential``.

    The plugin runs without a terminal (``interactive: false``); its result is cached until
    its ``expirationTimestamp`` and the plugin is run again when the server answers 401.
    """

    command: str
    """The program; a relative path containing a separator was resolved against the
    kubeconfig's directory, a bare name is looked up on ``PATH``."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False, hash=False)
    """Extra environment for the plugin, on top of ours. Kept out of reprs."""
    api_version: str = "client.authentication.k8s.io/v1"
    """``client.authentication.k8s.io/v1`` or ``/v1beta1``; the plugin must answer in it."""
    install_hint: str | None = None
    provide_cluster_info: bool = False
    """Whether ``KUBERNETES_EXEC_INFO`` carries the cluster (server, CA) for the plugin."""

    def __post_init__(self) -> None:
        if not self.command:
            raise ConfigError("exec plugin: 'command' is empty")
        if self.api_version not in _EXEC_API_VERSIONS:
            raise ConfigError(
                f"exec plugin {self.command!r}: apiVersion {self.api_version!r} is not "
                f"supported (use one of {sorted(_EXEC_API_VERSIONS)})"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """How to reach and authenticate to one API server. Immutable.

    ``Config(host="http://127.0.0.1:1234", token="abc")`` is enough; every other field has
    a default. PEM fields (``ca_data``, ``cert_data``, ``key_data``) hold PEM text, already
    decoded from the kubeconfig's base64. ``*_data`` wins over the matching ``*_file``.

    Credentials are chosen in this order: ``token_file`` (re-read whenever the file
    changes), ``token``, ``exec``, then ``username``/``password`` (basic auth). A client
    certificate is used in addition to any of them.
    """

    host: str
    """Base URL, ``https://host:port`` optionally with a path prefix; no trailing slash."""
    namespace: str = "default"
    """The context's namespace: used by requests on one object when none is given."""
    token: str | None = field(default=None, repr=False)
    token_file: str | None = None
    ca_data: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    cert_data: str | None = field(default=None, repr=False)
    cert_file: str | None = None
    key_data: str | None = field(default=None, repr=False)
    key_file: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    exec: ExecConfig | None = None
    insecure_skip_tls_verify: bool = False
    """Skip verification of the server's certificate. Only ever from explicit config."""
    tls_server_name: str | None = None
    """Name to verify the server's certificate against (and send as SNI), if not the host."""
    proxy_url: str | None = None
    """An ``http://`` or ``https://`` proxy (aiohttp supports no SOCKS proxies)."""
    context: str | None = None
    """The kubeconfig context this came from (for messages), ``None`` otherwise."""
    source: str | None = None
    """Where this came from: the kubeconfig path(s) or ``"in-cluster"`` (for messages)."""
    user: str | None = None
    """The kubeconfig user (``users[].name``) of the context, ``None`` otherwise (for
    messages)."""

    def __post_init__(self) -> None:
        parts = urlsplit(self.host)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"{self._where()}: server {self.host!r} is not an http(s) URL")
        if self.host.endswith("/"):
            object.__setattr__(self, "host", self.host.rstrip("/"))
        if (self.cert_data or self.cert_file) and not (self.key_data or self.key_file):
            raise ConfigError(f"{self._where()}: a client certificate is set without its key")
        if (self.key_data or self.key_file) and not (self.cert_data or self.cert_file):
            raise ConfigError(f"{self._where()}: a client key is set without its certificate")
        if self.proxy_url is not None and urlsplit(self.proxy_url).scheme not in _PROXY_SCHEMES:
            raise ConfigError(
                f"{self._where()}: proxy-url scheme of {_redact_url(self.proxy_url)!r} is not "
                "supported (only http and https proxies are)"
            )

    def _where(self) -> str:
        where = self.source or "config"
        return f"{where}: context {self.context!r}" if self.context else where

    @property
    def auth_kinds(self) -> tuple[str, ...]:
        """The kinds of credentials set, e.g. ``("token_file", "client_certificate")``."""
        kinds = []
        if self.token_file:
            kinds.append("token_file")
        if self.token:
            kinds.append("token")
        if self.exec is not None:
            kinds.append("exec")
        if self.username is not None and self.password is not None:
            kinds.append("basic")
        if self.cert_data or self.cert_file:
            kinds.append("client_certificate")
        return tuple(kinds)

    def describe_credentials(self) -> str:
        """Who the requests authenticate as, and where that was configured, without any
        secret: ``"the bearer token of user 'alice', context 'prod' in
        /home/alice/.kube/config"``, ``"the service account token file
        /var/run/secrets/kubernetes.io/serviceaccount/token, in-cluster"``. What a 401
        names, so that the credential at fault can be found."""
        kinds = []
        if self.token_file:
            what = "service account token" if self.source == "in-cluster" else "token"
            kinds.append(f"the {what} file {self.token_file}")
        elif self.token:
            kinds.append("the bearer token")
        elif self.exec is not None:
            kinds.append(f"the exec plugin {os.path.basename(self.exec.command)!r}")
        elif self.username is not None and self.password is not None:
            kinds.append(f"basic auth as {self.username!r}")
        if self.cert_file:
            kinds.append(f"the client certificate {self.cert_file}")
        elif self.cert_data:
            kinds.append("the client certificate data")
        what = " and ".join(kinds) if kinds else "no credentials"
        if self.user:
            what = f"{what} of user {self.user!r}"
        where = []
        if self.context:
            where.append(f"context {self.context!r}")
        if self.source == "in-cluster":
            where.append("in-cluster")
        elif self.source:
            where.append(f"in {self.source}")
        return ", ".join([what, " ".join(where)]) if where else what

    def __repr__(self) -> str:
        extras = ""
        if self.context:
            extras += f" context={self.context!r}"
        if self.insecure_skip_tls_verify:
            extras += " insecure_skip_tls_verify=True"
        if self.proxy_url:
            extras += f" proxy={_redact_url(self.proxy_url)!r}"
        auth = ",".join(self.auth_kinds) or "none"
        return f"<Config host={self.host!r} namespace={self.namespace!r} auth={auth}{extras}>"


def _redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return parts._replace(netloc=f"***@{host}").geturl()


# --------------------------------------------------------------------------- kubeconfig


@dataclass(slots=True)
class _Named:
    """A merged kubeconfig entry and the file that defined it (paths resolve against it)."""

    value: Any
    origin: Path


@dataclass(slots=True)
class _Merged:
    clusters: dict[str, _Named] = field(default_factory=dict)
    users: dict[str, _Named] = field(default_factory=dict)
    contexts: dict[str, _Named] = field(default_factory=dict)
    current_context: str | None = None
    current_context_origin: Path | None = None


def _kubeconfig_paths(
    path: str | os.PathLike[str] | None, environ: Mapping[str, str]
) -> list[Path]:
    if path is not None:
        candidate = Path(path).expanduser()
        if not candidate.exists():
            raise ConfigError(f"{candidate}: kubeconfig file does not exist")
        return [candidate]
    raw = environ.get("KUBECONFIG", "")
    if raw:
        listed: list[Path] = []
        for part in raw.split(os.pathsep):
            if part and Path(part).expanduser() not in listed:
                listed.append(Path(part).expanduser())
        existing = [p for p in listed if p.exists()]
        if not existing:
            raise ConfigError(f"KUBECONFIG={raw!r}: none of the listed kubeconfig files exists")
        return existing
    home = Path(environ.get("HOME") or Path.home())
    default = home / ".kube" / "config"
    if not default.exists():
        raise ConfigError(f"{default}: kubeconfig file does not exist and KUBECONFIG is unset")
    return [default]


def _parse_kubeconfig(path: Path) -> KubeConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read kubeconfig: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: kubeconfig is not UTF-8 text") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path}: kubeconfig does not parse{at}: {problem}") from exc
    if data is None:
        return KubeConfig()
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: kubeconfig is not a mapping (got {type(data).__name__})")
    try:
        return KubeConfig.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        # The input value is left out on purpose: it may be a credential.
        raise ConfigError(f"{path}: field {loc}: {first['msg']}") from None


def _merge(paths: Sequence[Path]) -> _Merged:
    merged = _Merged()
    for path in paths:
        parsed = _parse_kubeconfig(path)
        origin = path.resolve().parent
        for cluster in parsed.clusters:
            merged.clusters.setdefault(cluster.name, _Named(cluster.cluster, origin))
        for user in parsed.users:
            merged.users.setdefault(user.name, _Named(user.user, origin))
        for context in parsed.contexts:
            merged.contexts.setdefault(context.name, _Named(context.context, origin))
        if merged.current_context is None and parsed.current_context:
            merged.current_context = parsed.current_context
            merged.current_context_origin = path
    return merged


def _unreadable(path: Path) -> str | None:
    """Why ``path`` cannot be read (``"cannot read ..."``), or ``None`` when it can."""
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    return None


class _Resolver:
    """Resolves the fields of one context into ``Config`` arguments, naming each failure."""

    def __init__(self, source: str, context: str) -> None:
        self.source = source
        self.context = context

    def fail(self, where: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: context {self.context!r}: {where}: {problem}")

    def path(self, value: str | None, origin: Path, where: str) -> str | None:
        if not value:
            return None
        resolved = Path(value).expanduser()
        if not resolved.is_absolute():
            resolved = origin / resolved
        problem = _unreadable(resolved)
        if problem is not None:
            raise self.fail(where, problem)
        return str(resolved)

    def b64(self, value: str | None, where: str) -> str | None:
        if not value:
            return None
        try:
            return base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            # The value itself is never quoted: it is a credential.
            raise self.fail(where, "is not valid base64-encoded PEM") from None


def load_kube_config(
    path: str | os.PathLike[str] | None = None,
    context: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Load a :class:`Config` from kubeconfig.

    ``path`` names one file; without it, ``$KUBECONFIG`` (several files separated by
    ``os.pathsep``, merged as kubectl merges them) or ``~/.kube/config`` is read.
    ``context`` overrides the ``current-context``. ``environ`` replaces ``os.environ``
    (tests). Raises :class:`ConfigError` naming the file, context and field at fault.
    """
    env = os.environ if environ is None else environ
    paths = _kubeconfig_paths(path, env)
    source = os.pathsep.join(str(p) for p in paths)
    merged = _merge(paths)

    name = context or merged.current_context
    if not name:
        raise ConfigError(f"{source}: no context given and current-context is not set")
    named_context = merged.contexts.get(name)
    if named_context is None:
        raise ConfigError(f"{source}: context {name!r} is not defined in contexts")
    resolver = _Resolver(source, name)
    ctx: KubeConfigContext = named_context.value

    named_cluster = merged.clusters.get(ctx.cluster)
    if named_cluster is None:
        raise resolver.fail("context.cluster", f"cluster {ctx.cluster!r} is not defined")
    cluster: KubeConfigCluster = named_cluster.value
    if not cluster.server:
        raise resolver.fail(f"clusters[{ctx.cluster}].server", "is not set")

    user = KubeConfigAuthInfo()
    user_origin = named_cluster.origin
    if ctx.user:
        named_user = merged.users.get(ctx.user)
        if named_user is None:
            raise resolver.fail("context.user", f"user {ctx.user!r} is not defined")
        user = named_user.value
        user_origin = named_user.origin

    c_at = f"clusters[{ctx.cluster}]"
    u_at = f"users[{ctx.user}]"
    ca_data = resolver.b64(cluster.certificate_authority_data, f"{c_at}.certificate-authority-data")
    ca_file = None
    if ca_data is None:
        ca_file = resolver.path(
            cluster.certificate_authority, named_cluster.origin, f"{c_at}.certificate-authority"
        )
    cert_data = resolver.b64(user.client_certificate_data, f"{u_at}.client-certificate-data")
    cert_file = None
    if cert_data is None:
        cert_file = resolver.path(
            user.client_certificate, user_origin, f"{u_at}.client-certificate"
        )
    key_data = resolver.b64(user.client_key_data, f"{u_at}.client-key-data")
    key_file = None
    if key_data is None:
        key_file = resolver.path(user.client_key, user_origin, f"{u_at}.client-key")
    token_file = resolver.path(user.token_file, user_origin, f"{u_at}.tokenFile")
    exec_config = _exec_config(user.exec, user_origin, resolver, f"{u_at}.exec")

    has_credentials = any(
        (user.token, token_file, exec_config, user.username, cert_data, cert_file)
    )
    if user.auth_provider is not None and not has_credentials:
        provider = user.auth_provider.get("name", "?")
        raise resolver.fail(
            f"{u_at}.auth-provider",
            f"auth provider {provider!r} is not supported; configure an exec plugin instead",
        )
    if (user.username is None) != (user.password is None):
        raise resolver.fail(f"{u_at}", "username and password must be given together")

    return Config(
        host=cluster.server,
        namespace=ctx.namespace or "default",
        token=user.token or None,
        token_file=token_file,
        ca_data=ca_data,
        ca_file=ca_file,
        cert_data=cert_data,
        cert_file=cert_file,
        key_data=key_data,
        key_file=key_file,
        username=user.username,
        password=user.password,
        exec=exec_config,
        insecure_skip_tls_verify=cluster.insecure_skip_tls_verify,
        tls_server_name=cluster.tls_server_name,
        proxy_url=cluster.proxy_url,
        context=name,
        source=source,
        user=ctx.user or None,
    )


def _exec_config(
    spec: KubeConfigExec | None, origin: Path, resolver: _Resolver, where: str
) -> ExecConfig | None:
    if spec is None:
        return None
    command = spec.command
    if os.sep in command and not os.path.isabs(command):
        # kubectl resolves a relative command path against the kubeconfig's directory;
        # a bare name is looked up on PATH when the plugin runs.
        command = str(origin / command)
    if spec.interactive_mode == "Always":
        raise resolver.fail(
            f"{where}.interactiveMode", "'Always' needs a terminal, which a client never has"
        )
    env = {item.name: item.value for item in spec.env or ()}
    try:
        return ExecConfig(
            command=command,
            args=tuple(spec.args or ()),
            env=env,
            api_version=spec.api_version,
            install_hint=spec.install_hint,
            provide_cluster_info=spec.provide_cluster_info,
        )
    except ConfigError as exc:
        raise resolver.fail(where, str(exc)) from None


# --------------------------------------------------------------------------- in-cluster


def load_incluster_config(
    *,
    environ: Mapping[str, str] | None = None,
    service_account_dir: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
) -> Config:
    """Load the :class:`Config` of a pod: its service account, the cluster's CA.

    Needs ``KUBERNETES_SERVICE_HOST`` and ``KUBERNETES_SERVICE_PORT`` and a readable
    ``token`` in ``service_account_dir``; ``ca.crt`` and ``namespace`` are used when
    present. The token is referenced by path, so rotated tokens are read when they change.
    """
    env = os.environ if environ is None else environ
    host = env.get("KUBERNETES_SERVICE_HOST", "")
    port = env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError(
            "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set"
        )
    directory = Path(service_account_dir)
    token_path = directory / "token"
    problem = _unreadable(token_path)
    if problem is not None:
        raise ConfigError(f"in-cluster: token: {problem}")
    ca_path = directory / "ca.crt"
    namespace = "default"
    with contextlib.suppress(OSError):
        namespace = (directory / "namespace").read_text(encoding="utf-8").strip() or "default"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return Config(
        host=f"https://{host}:{port}",
        namespace=namespace,
        token_file=str(token_path),
        ca_file=str(ca_path) if ca_path.exists() else None,
        source="in-cluster",
    )


def _incluster_available(env: Mapping[str, str], service_account_dir: Path) -> bool:
    return bool(
        env.get("KUBERNETES_SERVICE_HOST")
        and env.get("KUBERNETES_SERVICE_PORT")
        and (service_account_dir / "token").exists()
    )


def load_config(
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    service_account_dir: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
) -> Config:
    """The configuration ``Client.from_env()`` uses.

    In-cluster when ``KUBERNETES_SERVICE_HOST``/``_PORT`` are set and the service-account
    token exists (and no ``context`` is asked for); kubeconfig otherwise.
    """
    env = os.environ if environ is None else environ
    if context is None and _incluster_available(env, Path(service_account_dir)):
        return load_incluster_config(environ=env, service_account_dir=service_account_dir)
    return load_kube_config(context=context, environ=env)
