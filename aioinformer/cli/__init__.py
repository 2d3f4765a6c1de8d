"""The ``aioinformer`` command: ``demo``, ``watch``, ``get``, ``proxy`` and ``webhook``.

Role: the command-line front door. Input: ``argv``. Output: text on stdout (the demo's
live display and summary, ``watch``'s rows), one-line errors on stderr, and an exit code.

* ``aioinformer demo`` starts the embedded fake API server with generated pods and churn,
  runs a shared informer with indexes and handlers, shows the initial sync, events/s,
  cache size against the server, per-handler queue depths, relists and reconnects, and
  exits 0 only when the cache converged to the server's state (see
  :mod:`aioinformer.cli._demo`).
* ``aioinformer watch RESOURCE`` is ``kubectl get -w`` through an informer: the synced
  list, then one row per event (see :mod:`aioinformer.cli._watch`).
* ``aioinformer get RESOURCE [NAME ...]`` is ``kubectl get``: one paginated LIST (or a
  GET per name) printed as a table, JSON, YAML or names (see :mod:`aioinformer.cli._get`).
* ``aioinformer proxy --resource R ...`` serves the list/watch API of the resources from
  one upstream watch each, to any number of clients, objects rewritten by an optional
  transform (see :mod:`aioinformer.cli._proxy`).
* ``aioinformer webhook manifests module:attribute`` prints the webhook configurations of
  the webhooks registered on an operator's Manager (see :mod:`aioinformer.cli._webhook`).

Exit codes: 0 success; 1 a clear failure reported on one line (bad kubeconfig, unknown
resource, forbidden namespace, a named object not found, unreachable server, a demo that
did not converge); 2 a
command-line usage error; 130 interrupted before anything could be reported.

Task model: each command runs one ``asyncio.run()``; SIGINT and SIGTERM end a command
cleanly (the demo still prints its summary). The core library never imports this package;
a command's module is imported only when that command runs, so ``rich`` is imported only
by the demo, which needs it.
"""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from collections.abc import Sequence

    from aioinformer.cli._common import TargetOptions

__all__ = ["build_parser", "log_level", "main", "parse_args"]

_QUIET: Final = {
    "demo": logging.ERROR,
    "watch": logging.WARNING,
    "get": logging.WARNING,
    "proxy": logging.WARNING,
    "webhook": logging.WARNING,
}

_Target = TypeVar("_Target", bound="TargetOptions")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value


def _positive_count(text: str) -> int:
    value = _count(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {text!r}")
    return value


def _positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value


def _add_verbose(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="show the library's log on stderr: -v retries and relists, -vv everything",
    )


def _add_target(parser: argparse.ArgumentParser, *, verb: str) -> None:
    """The options saying which cluster, namespaces and objects: shared by watch and get."""
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", help="the namespace (default: the context's)")
    scope.add_argument(
        "-A", "--all-namespaces", action="store_true", help=f"{verb} every namespace"
    )
    parser.add_argument("-l", "--selector", metavar="SELECTOR", help="label selector")
    parser.add_argument("--field-selector", metavar="F", help="field selector")
    parser.add_argument("--context", help="kubeconfig context to use")
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig file to use")


def _target_options(kind: type[_Target], args: argparse.Namespace, **own: Any) -> _Target:
    """``kind`` (a command's options) from what :func:`_add_target`, RESOURCE and
    ``--fake`` parsed, plus the command's ``own`` options."""
    return kind(
        resource=args.resource,
        namespace=args.namespace,
        all_namespaces=args.all_namespaces,
        label_selector=args.selector,
        field_selector=args.field_selector,
        context=args.context,
        kubeconfig=args.kubeconfig,
        fake=args.fake,
        **own,
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``aioinformer`` argument parser (subcommands ``demo``, ``watch``, ``get``,
    ``proxy`` and ``webhook``)."""
    parser = argparse.ArgumentParser(
        prog="aioinformer",
        description=(
            "asyncio-native Kubernetes informers: a live demo, kubectl-like watch and get, "
            "a caching list/watch proxy"
        ),
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser(
        "demo",
        help="run informers against an embedded fake API server with churn and faults",
        description=(
            "Start an embedded fake API server with generated pods, run a shared pods "
            "informer (namespace, label and node indexes) with several handlers while pods "
            "are created, updated and deleted, drop the watch and compact the history on "
            "the way, and check that the cache converges to the server's state."
        ),
    )
    demo.add_argument("--pods", type=_count, default=2000, metavar="N", help="initial pods (2000)")
    demo.add_argument(
        "--churn",
        type=_rate,
        default=200.0,
        metavar="RATE",
        help="creates/updates/deletes per second (200)",
    )
    demo.add_argument("--handlers", type=_count, default=3, metavar="K", help="event handlers (3)")
    demo.add_argument(
        "--duration",
        type=_positive_number,
        default=20.0,
        metavar="S",
        help="seconds of churn before the convergence check (20)",
    )
    demo.add_argument("--seed", type=int, default=None, help="random seed, for a reproducible run")
    demo.add_argument(
        "--write-kubeconfig",
        metavar="PATH",
        help="serve the fake API server over HTTPS (a CA of its own) and write a kubeconfig "
        "for it to PATH while the demo runs, for kubectl (which sends no token over plain "
        "HTTP): kubectl --kubeconfig PATH get pods -w",
    )
    _add_verbose(demo)

    watch = commands.add_parser(
        "watch",
        help="like kubectl get -w, through an informer",
        description=(
            "Print the synced list of RESOURCE, then one row per change, through a shared "
            "informer that survives reconnects and expired resource versions. Ctrl-C stops."
        ),
    )
    watch.add_argument(
        "resource", metavar="RESOURCE", help="pods, v1/configmaps, apps/v1/deployments, ..."
    )
    _add_target(watch, verb="watch")
    watch.add_argument(
        "-o",
        "--output",
        choices=("wide", "json", "name"),
        default=None,
        help="wide: more columns; json: one JSON event per line; name: kind/name",
    )
    watch.add_argument(
        "--fake",
        action="store_true",
        help="watch an embedded fake API server seeded with a few objects and some churn",
    )
    _add_verbose(watch)

    get = commands.add_parser(
        "get",
        help="like kubectl get: list a resource, or get objects by name, once",
        description=(
            "Print RESOURCE's objects (or the NAMEd ones) once: one LIST fetched in pages "
            "of --chunk-size objects, or one GET per name."
        ),
    )
    # Optional here so that a missing RESOURCE gets the message of _no_resource, not
    # argparse's, which asks for a NAME as well.
    get.add_argument(
        "resource",
        metavar="RESOURCE",
        nargs="?",
        help="pods, v1/configmaps, apps/v1/deployments, ...",
    )
    get.add_argument("names", metavar="NAME", nargs="*", help="objects to get by name")
    get.set_defaults(usage_error=get.error)
    _add_target(get, verb="list")
    get.add_argument(
        "-o",
        "--output",
        choices=("wide", "json", "yaml", "name"),
        default=None,
        help="wide: more columns; json, yaml: a v1 List; name: kind/name",
    )
    get.add_argument(
        "--fake",
        action="store_true",
        help="read from an embedded fake API server seeded with a few objects",
    )
    get.add_argument(
        "--chunk-size",
        type=_count,
        default=500,
        metavar="N",
        help="objects per LIST page; 0 fetches everything in one answer (500)",
    )
    _add_verbose(get)
    _add_proxy(commands)
    return parser


def _add_proxy(commands: Any) -> None:
    from aioinformer.cli._common import DEFAULT_LISTEN

    proxy = commands.add_parser(
        "proxy",
        help="serve the list/watch API of resources from one upstream watch each",
        description=(
            "Serve LIST, GET and WATCH of each --resource (and discovery) from an informer's "
            "cache fed by one upstream watch, to any number of clients (kubectl, client-go "
            "programs, informers), objects optionally rewritten by --transform. Writes are "
            "refused (405) or forwarded upstream. Prints one line once the caches are "
            "synced; Ctrl-C or SIGTERM stops."
        ),
    )
    proxy.add_argument(
        "--resource",
        dest="resources",
        action="append",
        required=True,
        metavar="R",
        help="a resource to serve (repeatable): v1/pods, v1/endpoints, apps/v1/deployments, "
        "a CRD's plural",
    )
    scope = proxy.add_mutually_exclusive_group()
    scope.add_argument(
        "-n", "--namespace", help="serve only this namespace (others get 403 Forbidden)"
    )
    scope.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="serve every namespace (the default)",
    )
    proxy.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"where to listen; port 0 picks a free one ({DEFAULT_LISTEN}); plain HTTP only "
        "on loopback",
    )
    proxy.add_argument("--context", help="the upstream's kubeconfig context")
    proxy.add_argument("--kubeconfig", metavar="PATH", help="the upstream's kubeconfig file")
    proxy.add_argument(
        "--fake",
        action="store_true",
        help="serve from an embedded fake API server seeded with pods, config maps and "
        "endpoints, changing every second",
    )
    proxy.add_argument(
        "--transform",
        metavar="MODULE:FUNCTION",
        help="rewrite each object with FUNCTION(obj) -> obj or None (None hides it); MODULE "
        "is imported with the working directory on the path",
    )
    proxy.add_argument(
        "--token-file",
        metavar="PATH",
        help="accept only these bearer tokens (one per line; # comments); anything else gets 401",
    )
    proxy.add_argument("--tls-cert", metavar="PATH", help="serve HTTPS with this certificate")
    proxy.add_argument("--tls-key", metavar="PATH", help="the certificate's private key")
    proxy.add_argument(
        "--tls-ca",
        metavar="PATH",
        help="the CA written into --write-kubeconfig's file (default: the certificate)",
    )
    proxy.add_argument(
        "--writes",
        choices=("deny", "forward"),
        default="deny",
        help="deny: writes get 405 MethodNotAllowed; forward: sent upstream with the "
        "proxy's credentials (deny)",
    )
    proxy.add_argument(
        "--write-kubeconfig",
        metavar="PATH",
        help="write a kubeconfig for the proxy's clients; over HTTPS without --token-file "
        "it carries a fresh random token the proxy then requires (kubectl sends no token "
        "over plain HTTP)",
    )
    proxy.add_argument(
        "--history-size",
        type=_positive_count,
        default=10_000,
        metavar="N",
        help="watch events kept per resource; older resourceVersions get 410 (10000)",
    )
    proxy.add_argument(
        "--watcher-buffer",
        type=_positive_count,
        default=10_000,
        metavar="N",
        help="events queued for a slow watcher before it is closed (10000)",
    )
    proxy.add_argument(
        "--sync-timeout",
        type=_positive_number,
        default=60.0,
        metavar="S",
        help="seconds the caches may take to sync before the proxy gives up (60)",
    )
    _add_verbose(proxy)
    _add_webhook(commands)


def _add_webhook(commands: Any) -> None:
    webhook = commands.add_parser(
        "webhook",
        help="an operator's admission and conversion webhooks: their manifests",
        description="Work with the webhooks an operator's Manager registers.",
    )
    actions = webhook.add_subparsers(dest="webhook_command", metavar="ACTION", required=True)
    manifests = actions.add_parser(
        "manifests",
        help="print the webhook configurations of the registered webhooks",
        description=(
            "Import MODULE, take the Manager or WebhookServer ATTRIBUTE names (or call the "
            "function it names), and print the ValidatingWebhookConfiguration and "
            "MutatingWebhookConfiguration of the webhooks registered on it, and a "
            "CustomResourceDefinition patch per conversion webhook, for kubectl apply."
        ),
    )
    manifests.add_argument(
        "target", metavar="MODULE:ATTRIBUTE", help="where the Manager is: my_operator:manager"
    )
    reach = manifests.add_mutually_exclusive_group(required=True)
    reach.add_argument(
        "--service",
        metavar="NS/NAME[:PORT]",
        help="the Service kube-apiserver calls the webhooks through (port 443 unless given)",
    )
    reach.add_argument(
        "--url", metavar="URL", help="the https:// address kube-apiserver calls instead"
    )
    manifests.add_argument(
        "--ca-bundle",
        metavar="FILE",
        help="a PEM file to trust the server with (caBundle); default: the self-signed CA, "
        "if any, else none (cert-manager's CA injector fills it)",
    )
    manifests.add_argument(
        "--name",
        help="the configurations' name (default: validating-webhook-configuration and "
        "mutating-webhook-configuration)",
    )
    manifests.add_argument(
        "-o", "--output", choices=("yaml", "json"), default="yaml", help="yaml (default) or json"
    )
    _add_verbose(manifests)


_NO_RESOURCE = """you must specify the type of resource to get, for example:
  aioinformer get pods                          pods in the context's namespace
  aioinformer get pods web-0 -n shop            one pod by name
  aioinformer get apps/v1/deployments -A -o wide
  aioinformer get configmaps --fake             from an embedded fake API server
'kubectl api-resources' lists the resources a cluster serves"""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``argv`` (default ``sys.argv[1:]``) as the command does; usage errors exit 2.

    ``get``'s NAMEs may follow options (``get pods -n team web-0``), as kubectl allows:
    argparse matches the optional NAME list before the options and leaves later words
    over, so those are taken as NAMEs here.
    """
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "get" and args.resource is None:
        args.usage_error(_NO_RESOURCE)
    if extra and args.command == "get" and not any(word.startswith("-") for word in extra):
        args.names = [*args.names, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def log_level(args: argparse.Namespace) -> int:
    """The library log level for parsed arguments: quiet by default (the demo's faults
    are on purpose; ``watch`` shows warnings), INFO with ``-v``, DEBUG with ``-vv``."""
    verbosity: int = args.verbose
    if verbosity == 0:
        return _QUIET[args.command]
    return logging.INFO if verbosity == 1 else logging.DEBUG


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command in ``argv`` (default ``sys.argv[1:]``); return its exit code.

    Usage errors exit through argparse (code 2).
    """
    args = parse_args(argv)
    level = log_level(args)
    if args.command == "demo":
        from aioinformer.cli._demo import run_demo

        return run_demo(
            pods=args.pods,
            churn=args.churn,
            handlers=args.handlers,
            duration=args.duration,
            seed=args.seed,
            kubeconfig=args.write_kubeconfig,
            log_level=level,
        )
    if args.command == "get":
        from aioinformer.cli._get import GetOptions, run_get

        options = _target_options(
            GetOptions,
            args,
            names=tuple(args.names),
            output=args.output,
            chunk_size=args.chunk_size,
        )
        return run_get(options, log_level=level)
    if args.command == "proxy":
        from aioinformer.cli._proxy import ProxyOptions, run_proxy

        return run_proxy(
            ProxyOptions(
                resources=tuple(args.resources),
                namespace=args.namespace,
                listen=args.listen,
                context=args.context,
                kubeconfig=args.kubeconfig,
                fake=args.fake,
                transform=args.transform,
                token_file=args.token_file,
                tls_cert=args.tls_cert,
                tls_key=args.tls_key,
                tls_ca=args.tls_ca,
                writes=args.writes,
                write_kubeconfig=args.write_kubeconfig,
                history_size=args.history_size,
                watcher_buffer=args.watcher_buffer,
                sync_timeout=args.sync_timeout,
            ),
            log_level=level,
        )
    if args.command == "webhook":
        import sys

        from aioinformer.cli._webhook import WebhookOptions, run_webhook_manifests

        webhook_options = WebhookOptions(
            target=args.target,
            service=args.service,
            url=args.url,
            ca_bundle=args.ca_bundle,
            name=args.name,
            output=args.output,
        )
        return run_webhook_manifests(
            webhook_options, out=sys.stdout, err=sys.stderr, log_level=level
        )
    from aioinformer.cli._watch import WatchOptions, run_watch

    return run_watch(_target_options(WatchOptions, args, output=args.output), log_level=level)
