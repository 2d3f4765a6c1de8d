"""``aioinformer webhook manifests``: an operator's webhook configurations, from its code.

Role: imports the user's module, takes the :class:`~aioinformer.operator.manager.Manager`
or :class:`~aioinformer.operator.webhook.WebhookServer` it names (``module:attribute``, or
a function of no arguments returning one, sync or async), and prints what
:func:`~aioinformer.operator.manifests.webhook_manifests` writes for the webhooks
registered on it: YAML documents separated by ``---`` (``-o yaml``, the default, for
``kubectl apply -f -``) or one JSON ``List`` (``-o json``).

Input: :class:`WebhookOptions` from the command line. Output: the documents on stdout;
one line on stderr and exit code 1 when the module does not import, the attribute is
missing or not a server, or the options cannot make a configuration.

Task model: synchronous but for an async factory, run in its own ``asyncio.run()``.
Nothing is served and no cluster is contacted.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson
import yaml

from aioinformer.cli._common import (
    EXIT_FAILURE,
    CommandFailure,
    import_target,
    library_logging,
    log_line_handler,
)
from aioinformer.operator.manager import Manager
from aioinformer.operator.manifests import webhook_manifests
from aioinformer.operator.webhook import WebhookServer

if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["WebhookOptions", "parse_service", "run_webhook_manifests"]

DEFAULT_SERVICE_PORT: Final = 443
"""A Service's port when ``--service`` names none, as kube-apiserver defaults it."""


class WebhookUsageError(CommandFailure):
    """An option or a target the command cannot use."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookOptions:
    """What ``aioinformer webhook manifests`` was asked for."""

    target: str
    """``module:attribute``: a Manager, a WebhookServer, or a function returning one."""
    service: str | None = None
    """``namespace/name[:port]``."""
    url: str | None = None
    ca_bundle: str | None = None
    """A PEM file whose contents become ``caBundle``."""
    name: str | None = None
    output: str = "yaml"


def parse_service(text: str) -> tuple[str, str, int]:
    """``"ops/widget-webhook:8443"`` as ``("ops", "widget-webhook", 8443)``; the port
    defaults to 443. ``ValueError`` for anything else."""
    namespace, slash, rest = text.partition("/")
    name, colon, port_text = rest.partition(":")
    if not slash or not namespace or not name:
        raise ValueError(f"--service must be 'namespace/name[:port]', got {text!r}")
    if not colon:
        return namespace, name, DEFAULT_SERVICE_PORT
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"--service port must be 1..65535, got {port_text!r}")
    return namespace, name, int(port_text)


def _server_of(target: str) -> WebhookServer:
    module_name, sep, path = target.partition(":")
    if not sep or not module_name or not path:
        raise WebhookUsageError(f"the target must be 'module:attribute', got {target!r}")
    found = import_target(target, WebhookUsageError, what="the module")
    server = _as_server(found)
    if server is None and callable(found):
        made = found()
        if inspect.isawaitable(made):
            made = asyncio.run(_awaited(made))
        server = _as_server(made)
    if server is None:
        raise WebhookUsageError(
            f"{target!r} is not a Manager or a WebhookServer, nor a function returning one"
        )
    return server


async def _awaited(made: Any) -> Any:
    return await made


def _as_server(found: object) -> WebhookServer | None:
    if isinstance(found, WebhookServer):
        return found
    return found.webhooks if isinstance(found, Manager) else None


def run_webhook_manifests(
    options: WebhookOptions, *, out: TextIO, err: TextIO, log_level: int = logging.WARNING
) -> int:
    """Print the manifests ``options`` ask for on ``out``; 0, or 1 after one line on
    ``err``. The library's log records at ``log_level`` and above go to ``err``."""
    try:
        with library_logging(log_line_handler(err), log_level):
            documents = _documents(options)
    except CommandFailure as exc:
        err.write(f"aioinformer: error: {exc}\n")
        return EXIT_FAILURE
    if options.output == "json":
        listed = {"apiVersion": "v1", "kind": "List", "items": documents}
        out.write(orjson.dumps(listed, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        out.write(yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True))
    return 0


def _documents(options: WebhookOptions) -> list[dict[str, Any]]:
    try:
        service = parse_service(options.service) if options.service is not None else None
    except ValueError as exc:
        raise WebhookUsageError(str(exc)) from exc
    ca_bundle = None
    if options.ca_bundle is not None:
        try:
            ca_bundle = Path(options.ca_bundle).read_bytes()
        except OSError as exc:
            raise WebhookUsageError(f"cannot read --ca-bundle {options.ca_bundle}: {exc}") from exc
    server = _server_of(options.target)
    try:
        return webhook_manifests(
            server, service=service, url=options.url, ca_bundle=ca_bundle, name=options.name
        )
    except (ValueError, RuntimeError) as exc:
        raise WebhookUsageError(str(exc)) from exc
