"""What the ``aioinformer`` commands share: exit codes, failures, the options naming
what to read (:class:`TargetOptions`), kubeconfig loading, signal handling, the fake
server's seed and churn, and the kubectl-like formatting of ages, labels and names.

Role: one place for the conventions ``watch`` and ``get`` must agree on, so that the
same options mean the same and the same object reads the same in both. Input: parsed
options, objects as the server sends them. Output: strings (cells, one-line error
messages), the namespace a command reads, and a loaded :class:`Config`;
nothing here writes to a stream except :func:`silence_stdout`, :func:`run_command` (its
one-line error) and the log handler that :func:`log_line_handler` makes.

Task model: plain synchronous functions; :func:`run_command` runs a command's coroutine
in its own ``asyncio.run()``; :func:`seed_fake_server` writes to the fake server's store
directly and needs no running request; :func:`start_fake_server` (on a running loop)
starts the server and one churn task, both ended by the exit stack it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import importlib
import logging
import os
import random
import signal
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TextIO

from aioinformer._kernel.runner import Running
from aioinformer.config import Config, load_config, load_kube_config
from aioinformer.errors import AioinformerError, ApiError

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator, Mapping

    from aioinformer.client import ResourceInfo
    from aioinformer.testing.apiserver import FakeAPIServer

__all__ = [
    "DEFAULT_LISTEN",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "GAP",
    "CommandFailure",
    "TargetOptions",
    "import_target",
    "age_of",
    "describe_api_error",
    "failure_text",
    "fake_pod",
    "format_age",
    "kind_prefix",
    "labels_text",
    "library_logging",
    "load_cli_config",
    "log_line_handler",
    "reported_as",
    "run_command",
    "seed_fake_server",
    "silence_stdout",
    "start_fake_server",
    "stop_signals_call",
]

_FAKE_CHURN_INTERVAL: Final = 1.0

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130

DEFAULT_LISTEN: Final = "127.0.0.1:8001"
"""Where ``aioinformer proxy`` listens by default: ``kubectl proxy``'s address."""

GAP: Final = "   "
"""Between table columns, as kubectl's tab writer pads them."""


class CommandFailure(Exception):
    """A failure reported to the user as one line (its message) and exit code 1."""


def import_target(spec: str, error: type[Exception], *, what: str = "module") -> object:
    """The object ``spec`` (``module:attribute``, or ``module:object.attribute``) names,
    imported with the working directory first on ``sys.path``, as ``python -m`` finds a
    user's module. Raises ``error`` with one line saying what went wrong (``what`` names
    the module in it: "the transform's module")."""
    module_name, _, path = spec.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: object = importlib.import_module(module_name)
    except Exception as exc:
        raise error(f"cannot import {what} {module_name!r}: {type(exc).__name__}: {exc}") from exc
    for attribute in path.split("."):
        try:
            target = getattr(target, attribute)
        except AttributeError:
            raise error(f"{module_name!r} has no attribute {path!r}") from None
    return target


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetOptions:
    """Which cluster, namespaces and objects a command reads: what ``watch`` and ``get``
    share (each command's options extend it with its own)."""

    resource: str
    namespace: str | None = None
    """``-n``; ``None`` means the context's namespace (unless ``all_namespaces``)."""
    all_namespaces: bool = False
    label_selector: str | None = None
    field_selector: str | None = None
    context: str | None = None
    kubeconfig: str | None = None
    fake: bool = False
    """Read from an embedded, seeded fake API server instead of a cluster; never together
    with ``kubeconfig`` or ``context``."""

    def usage_error(self) -> str | None:
        """Why these options cannot go together, or ``None`` when they can."""
        if self.fake and (self.kubeconfig or self.context):
            return "--fake cannot be combined with --kubeconfig or --context"
        return None

    def namespace_in(self, config: Config) -> str | None:
        """The namespace to read with ``config`` loaded; ``None`` for every namespace."""
        if self.all_namespaces:
            return None
        return self.namespace or config.namespace


def format_age(seconds: float) -> str:
    """A duration as kubectl's AGE column writes it: ``45s``, ``3m12s``, ``17m``, ``5h3m``,
    ``30h``, ``3d4h``, ``200d``, ``2y30d``, ``9y``; ``<invalid>`` for a time well in the
    future (clock skew up to a second reads as ``0s``)."""
    if seconds < -1:
        return "<invalid>"
    total = max(0, int(seconds))
    if total < 120:
        return f"{total}s"
    minutes = total // 60
    if minutes < 10:
        rest = total % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years = days // 365
    if years < 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def age_of(obj: Mapping[str, Any], now: datetime.datetime) -> str:
    """The AGE cell of ``obj`` at ``now`` (aware); ``<unknown>`` without a readable
    ``creationTimestamp``."""
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    if not stamp:
        return "<unknown>"
    try:
        created = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return format_age((now - created).total_seconds())


def labels_text(meta: Mapping[str, Any]) -> str:
    """The LABELS cell: ``k=v`` pairs sorted by key and joined by commas, or ``<none>``."""
    labels = meta.get("labels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def kind_prefix(info: ResourceInfo) -> str:
    """What ``-o name`` writes before the slash: ``pod``, ``deployment.apps``."""
    kind = info.kind.lower()
    return f"{kind}.{info.gvr.group}" if info.gvr.group else kind


def describe_api_error(exc: ApiError) -> str:
    """As kubectl says it: ``error from server (Forbidden): pods is forbidden: ...``."""
    return f"error from server ({exc.reason or exc.code}): {exc.message or exc}"


def failure_text(exc: BaseException) -> str:
    """The line a failure is reported as: kubectl's wording for an API error, the message
    of anything else."""
    return describe_api_error(exc) if isinstance(exc, ApiError) else str(exc)


@contextlib.contextmanager
def reported_as(failure: type[CommandFailure]) -> Iterator[None]:
    """Inside, a library error or a ``ValueError`` is raised again as ``failure`` carrying
    the line to print (see :func:`failure_text`)."""
    try:
        yield
    except (AioinformerError, ValueError) as exc:
        raise failure(failure_text(exc)) from exc


def run_command(main: Coroutine[Any, Any, int], err: TextIO, log_level: int) -> int:
    """Run ``main`` in a new event loop with the library's log records at ``log_level``
    and above on ``err``; return its exit code, or 1 after printing a
    :class:`CommandFailure` on ``err`` as one line, or 130 after Ctrl-C."""
    try:
        with library_logging(log_line_handler(err), log_level):
            return asyncio.run(main)
    except CommandFailure as exc:
        err.write(f"aioinformer: error: {exc}\n")
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


@contextlib.contextmanager
def stop_signals_call(callback: Callable[[], None]) -> Iterator[None]:
    """While inside (on a running loop), SIGINT and SIGTERM call ``callback`` instead of
    interrupting; the loop's previous handling is restored on leaving."""
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    for signum in signals:
        loop.add_signal_handler(signum, callback)
    try:
        yield
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)


def load_cli_config(kubeconfig: str | None, context: str | None) -> Config:
    """The configuration for ``--kubeconfig`` and ``--context`` (kubeconfig or in-cluster
    as the library finds it when neither is given). Raises :class:`CommandFailure`."""
    try:
        if kubeconfig is not None:
            return load_kube_config(kubeconfig, context)
        return load_config(context=context)
    except AioinformerError as exc:
        raise CommandFailure(f"cannot load kubeconfig: {exc}") from exc
    except OSError as exc:
        raise CommandFailure(f"cannot read kubeconfig: {exc}") from exc


def fake_pod(name: str, namespace: str, app: str) -> dict[str, Any]:
    """A small running pod labelled ``app=<app>``, for the fake server."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": {"containers": [{"name": app, "image": f"registry.example/{app}:1.0"}]},
        "status": {"phase": "Running"},
    }


def _fake_endpoints(name: str, sequence: int) -> dict[str, Any]:
    """The ``default/<name>`` Endpoints object: two addresses that move on with
    ``sequence``, port 8080."""
    addresses = [{"ip": f"10.1.{(sequence + i) % 250}.{i + 10}"} for i in range(2)]
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "subsets": [{"addresses": addresses, "ports": [{"name": "http", "port": 8080}]}],
    }


def seed_fake_server(server: FakeAPIServer) -> None:
    """What ``--fake`` starts with: three pods, two config maps and two Endpoints in
    ``default``, two pods in ``kube-system``."""
    for name, namespace, app in (
        ("web-0", "default", "web"),
        ("web-1", "default", "web"),
        ("api-0", "default", "api"),
        ("coredns-0", "kube-system", "coredns"),
        ("metrics-0", "kube-system", "metrics"),
    ):
        server.create(fake_pod(name, namespace, app))
    for name in ("settings", "feature-flags"):
        server.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default"},
                "data": {"revision": "1"},
            }
        )
    for name in ("web", "api"):
        server.create(_fake_endpoints(name, 0))


async def _fake_churn(server: FakeAPIServer, started: asyncio.Event) -> None:
    """Once ``started`` is set, every second or so: a pod created, a pod relabelled or a
    pod deleted (in ``default``, keeping three to eight), the ``web`` Endpoints' addresses
    moved and a config map touched."""
    rng = random.Random()
    sequence = 0
    await started.wait()
    while True:
        await asyncio.sleep(_FAKE_CHURN_INTERVAL)
        sequence += 1
        pods = server.objects("pods", "default")
        roll = rng.random()
        if len(pods) < 3 or (roll < 0.35 and len(pods) < 8):
            server.create(fake_pod(f"worker-{sequence}", "default", "worker"))
        elif roll < 0.7:
            name = rng.choice(pods)["metadata"]["name"]
            server.patch("pods", "default", name, {"metadata": {"labels": {"rev": str(sequence)}}})
        else:
            server.delete("pods", "default", rng.choice(pods)["metadata"]["name"])
        server.update(_fake_endpoints("web", sequence))
        server.patch("configmaps", "default", "settings", {"data": {"revision": str(sequence)}})


async def start_fake_server(stack: contextlib.AsyncExitStack, started: asyncio.Event) -> str:
    """Start a fake API server seeded by :func:`seed_fake_server` on ``stack``, changing
    things once ``started`` is set (see :func:`_fake_churn`); return its kubeconfig path."""
    from aioinformer.testing.apiserver import FakeAPIServer

    server = await stack.enter_async_context(FakeAPIServer())
    seed_fake_server(server)
    churn = Running.spawn(_fake_churn(server, started), name="fake churn")
    stack.push_async_callback(churn.stop)
    return server.kubeconfig_path()


def silence_stdout(out: TextIO) -> None:
    """After the reader of stdout went away, point it at /dev/null so that the
    interpreter's final flush does not complain about the broken pipe."""
    if out is sys.stdout:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)


def log_line_handler(err: TextIO) -> logging.Handler:
    """A handler writing each log record to ``err`` as an ``aioinformer: LEVEL: message``
    line."""
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("aioinformer: %(levelname)s: %(message)s"))
    return handler


@contextlib.contextmanager
def library_logging(handler: logging.Handler, level: int) -> Iterator[None]:
    """While inside, the library's log records at ``level`` and above go to ``handler``;
    the logger is restored on leaving."""
    package_logger = logging.getLogger("aioinformer")
    previous_level = package_logger.level
    package_logger.addHandler(handler)
    package_logger.setLevel(level)
    try:
        yield
    finally:
        package_logger.removeHandler(handler)
        package_logger.setLevel(previous_level)
