"""``aioinformer proxy``: serve the list/watch API of chosen resources from one upstream
watch each, to any number of clients, with objects optionally rewritten on the way.

Role: the command-line face of :class:`~aioinformer.proxy.CachingProxy`. Input:
:class:`ProxyOptions`. Output: one line on stdout once every cache has synced
(``serving v1/pods at https://127.0.0.1:8001 (one upstream watch per resource)``), the
library's warnings on stderr, an optional kubeconfig file for the proxy's clients, and
an exit code: 0 after SIGINT/SIGTERM, 130 when one comes before it serves (while it
resolves resources or waits for its caches), 1 for a failure reported on one line (kubeconfig,
an unknown resource, a forbidden namespace, no upstream, caches that do not sync), 2 for
options that cannot work (a transform that does not import, an unreadable token file or
certificate, plain HTTP off loopback).

What is checked before anything listens: the options (:meth:`ProxyOptions.usage_error`),
the ``--transform`` import, the token file, the TLS files; then, upstream, each resource
is resolved and listed once (``limit=1``), so what retrying cannot fix (an unknown
resource, a namespace the credentials may not read, a server that is not there) is
reported at once rather than after ``--sync-timeout``.

Tokens: with ``--token-file`` the proxy accepts exactly those bearer tokens. Without one,
``--write-kubeconfig`` over HTTPS makes a fresh random token, which the proxy then
requires and the written kubeconfig carries; over plain HTTP (loopback only) nothing is
required, as kubectl never sends a token over plain HTTP.

Task model: one ``asyncio.run()``; the proxy's reflectors, bookmark task and HTTP server
run on it, and with ``--fake`` so do an embedded seeded :class:`FakeAPIServer` and its
churn (a change every second or so, once the proxy serves).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import sys
from dataclasses import dataclass
from typing import Literal, TextIO

from aioinformer._kernel.runner import Interruptible
from aioinformer.cli._common import (
    DEFAULT_LISTEN,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CommandFailure,
    import_target,
    load_cli_config,
    reported_as,
    run_command,
    start_fake_server,
    stop_signals_call,
)
from aioinformer.client import Client
from aioinformer.listwatch import ListOptions
from aioinformer.operator._endpoints import parse_address
from aioinformer.proxy import CachingProxy, Transform, generate_token

__all__ = [
    "ProxyFailure",
    "ProxyOptions",
    "ProxyUsageError",
    "load_tokens",
    "load_transform",
    "run_proxy",
]


class ProxyFailure(CommandFailure):
    """A failure of the proxy reported as one line (its message) and exit code 1."""


class ProxyUsageError(Exception):
    """Options that cannot work, reported as one line and exit code 2 before anything
    starts: a transform that does not import, an unreadable token file or certificate."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyOptions:
    """What ``aioinformer proxy`` was asked for."""

    resources: tuple[str, ...]
    """``--resource``, at least one: ``v1/pods``, ``apps/v1/deployments``, a CRD plural."""
    namespace: str | None = None
    """``-n``: the one namespace served (others get 403); ``None``: every namespace."""
    listen: str = DEFAULT_LISTEN
    context: str | None = None
    kubeconfig: str | None = None
    fake: bool = False
    """Serve from an embedded, seeded fake API server with some churn."""
    transform: str | None = None
    """``module:function``, imported with the working directory on ``sys.path``."""
    token_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_ca: str | None = None
    """The CA written into ``--write-kubeconfig``'s file; default: the serving certificate."""
    writes: Literal["deny", "forward"] = "deny"
    write_kubeconfig: str | None = None
    history_size: int = 10_000
    watcher_buffer: int = 10_000
    sync_timeout: float = 60.0

    def usage_error(self) -> str | None:
        """Why these options cannot go together, or ``None`` when they can."""
        if not self.resources:
            return "give at least one --resource to serve"
        if self.fake and (self.kubeconfig or self.context):
            return "--fake cannot be combined with --kubeconfig or --context"
        if (self.tls_cert is None) != (self.tls_key is None):
            return "--tls-cert and --tls-key go together"
        if self.tls_ca is not None and self.tls_cert is None:
            return "--tls-ca needs --tls-cert and --tls-key"
        try:
            parse_address(self.listen, option="--listen")
        except ValueError as exc:
            return str(exc)
        if self.transform is not None:
            module, sep, function = self.transform.partition(":")
            if not sep or not module or not function:
                return f"--transform must be 'module:function', got {self.transform!r}"
        return None


def load_transform(spec: str) -> Transform:
    """The function ``spec`` (``module:function``, or ``module:object.attribute``) names,
    imported with the working directory first on ``sys.path`` (as ``python -m`` would).
    Raises :class:`ProxyUsageError` saying what went wrong."""
    target = import_target(spec, ProxyUsageError, what="the transform's module")
    if not callable(target):
        raise ProxyUsageError(f"--transform {spec!r} is not callable")
    transform: Transform = target
    return transform


def load_tokens(path: str) -> list[str]:
    """The bearer tokens in ``path``: one per line, blank lines and ``#`` comments skipped.
    Raises :class:`ProxyUsageError` when it cannot be read or holds no token."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProxyUsageError(f"cannot read --token-file: {exc}") from exc
    tokens = [line.strip() for line in lines]
    tokens = [token for token in tokens if token and not token.startswith("#")]
    if not tokens:
        raise ProxyUsageError(f"--token-file {path!r} holds no token")
    return tokens


def _server_tls(options: ProxyOptions) -> tuple[ssl.SSLContext | None, str | None]:
    """The serving TLS context and the CA PEM for written kubeconfigs, or ``(None,
    None)`` for plain HTTP."""
    if options.tls_cert is None or options.tls_key is None:
        return None, None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(options.tls_cert, options.tls_key)
        with open(options.tls_ca or options.tls_cert, encoding="ascii") as handle:
            ca_pem = handle.read()
    except (OSError, ssl.SSLError, UnicodeDecodeError) as exc:
        raise ProxyUsageError(f"cannot load the TLS certificate or key: {exc}") from exc
    return context, ca_pem


@dataclass(frozen=True, slots=True)
class _Serving:
    """Everything the options resolve to before the upstream is contacted."""

    transform: Transform | None
    tokens: list[str] | None
    kubeconfig_token: str | None
    ssl_context: ssl.SSLContext | None
    ca_pem: str | None
    host: str
    port: int


def _prepare(options: ProxyOptions) -> _Serving:
    """Resolve the local inputs; raises :class:`ProxyUsageError`."""
    transform = load_transform(options.transform) if options.transform else None
    tokens = load_tokens(options.token_file) if options.token_file else None
    ssl_context, ca_pem = _server_tls(options)
    kubeconfig_token = tokens[0] if tokens else None
    if options.write_kubeconfig and tokens is None and ssl_context is not None:
        kubeconfig_token = generate_token()
        tokens = [kubeconfig_token]
    host, port = parse_address(options.listen, option="--listen")
    return _Serving(transform, tokens, kubeconfig_token, ssl_context, ca_pem, host, port)


async def _preflight(client: Client, options: ProxyOptions) -> None:
    """Resolve each resource and list one object in the served namespace, so that what a
    retry cannot fix is reported now."""
    with reported_as(ProxyFailure):
        for spec in options.resources:
            info = await client.resolve(spec)
            namespace = options.namespace if info.namespaced else None
            await client.resource(info, namespace).list(ListOptions(limit=1))


async def _serve(options: ProxyOptions, serving: _Serving, out: TextIO) -> int:
    start = Interruptible()
    ended = await start.run(_start_and_serve(options, serving, out, start))
    return EXIT_INTERRUPTED if ended is None else ended


async def _start_and_serve(
    options: ProxyOptions, serving: _Serving, out: TextIO, start: Interruptible
) -> int:
    stop = asyncio.Event()
    serving_now = False

    def on_signal() -> None:
        # Before the proxy serves (resolving, syncing: possibly long), a signal abandons
        # the start; once it serves, it ends the run cleanly.
        if serving_now:
            stop.set()
        else:
            start.interrupt()

    with stop_signals_call(on_signal):
        async with contextlib.AsyncExitStack() as stack:
            started = asyncio.Event()
            if options.fake:
                kubeconfig = await start_fake_server(stack, started)
                config = load_cli_config(kubeconfig, None)
            else:
                config = load_cli_config(options.kubeconfig, options.context)
            client = await stack.enter_async_context(Client(config))
            proxy = _proxy(options, serving, client)
            await _preflight(client, options)
            with reported_as(ProxyFailure):
                try:
                    await stack.enter_async_context(proxy)
                except OSError as exc:
                    raise ProxyFailure(f"cannot listen on {options.listen}: {exc}") from exc
            where = ""
            if options.write_kubeconfig:
                _write_kubeconfig(proxy, options, serving)
                where = f"; clients' kubeconfig: {options.write_kubeconfig}"
            served = ", ".join(options.resources)
            out.write(f"serving {served} at {proxy.url} (one upstream watch per resource){where}\n")
            out.flush()
            serving_now = True
            started.set()
            await stop.wait()
        return EXIT_OK


def _proxy(options: ProxyOptions, serving: _Serving, client: Client) -> CachingProxy:
    """The proxy the options describe (not started); raises :class:`ProxyUsageError`
    for what it refuses (plain HTTP off loopback)."""
    try:
        return CachingProxy(
            client,
            resources=options.resources,
            namespace=options.namespace,
            transform=serving.transform,
            host=serving.host,
            port=serving.port,
            tokens=serving.tokens,
            ssl_context=serving.ssl_context,
            writes=options.writes,
            history_size=options.history_size,
            watcher_buffer=options.watcher_buffer,
            cache_sync_timeout=options.sync_timeout,
        )
    except ValueError as exc:
        raise ProxyUsageError(str(exc)) from exc


def _write_kubeconfig(proxy: CachingProxy, options: ProxyOptions, serving: _Serving) -> None:
    assert options.write_kubeconfig is not None
    try:
        proxy.write_kubeconfig(
            options.write_kubeconfig,
            serving.kubeconfig_token,
            ca_pem=serving.ca_pem,
            namespace=options.namespace,
        )
    except OSError as exc:
        raise ProxyFailure(f"cannot write --write-kubeconfig: {exc}") from exc


def run_proxy(
    options: ProxyOptions,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    log_level: int = logging.WARNING,
) -> int:
    """Run ``aioinformer proxy`` until SIGINT/SIGTERM; return the exit code (see the module
    notes). Library log records at ``log_level`` and above go to ``err``."""
    out = out or sys.stdout
    err = err or sys.stderr
    problem = options.usage_error()
    if problem is None:
        try:
            serving = _prepare(options)
        except ProxyUsageError as exc:
            problem = str(exc)
    if problem is not None:
        err.write(f"aioinformer: error: {problem}\n")
        return EXIT_USAGE
    try:
        return run_command(_serve(options, serving, out), err, log_level)
    except ProxyUsageError as exc:
        err.write(f"aioinformer: error: {exc}\n")
        return EXIT_USAGE
