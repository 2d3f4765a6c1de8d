"""``aioinformer watch``: ``kubectl get -w`` through a shared informer.

Role: print a resource's synced list, then one row per change, for as long as the user
wants, surviving dropped watches and expired resourceVersions the way informers do
(re-watch from the last resourceVersion; relist on 410 Gone, with deletions missed in
between reported from the relist's tombstones). Input: :class:`WatchOptions`. Output:
rows on stdout (a table, ``-o wide``, one JSON event per line with ``-o json``, or
``kind/name`` with ``-o name``); a one-line error on stderr and exit code 1 when the
kubeconfig is unusable, the resource unknown, the namespace forbidden or the server
unreachable.

Ordering: the synced list comes first (sorted by namespace and name), then the events
in the order the informer delivers them; an event the list already showed (same key and
resourceVersion) is not printed twice.

Task model: one ``asyncio.run()``. Before the informer starts, one discovery request and
one ``LIST ?limit=1`` check that the resource exists and may be listed, so those
failures are reported at once instead of retried. The informer's handler writes rows
synchronously; SIGINT/SIGTERM stop the watch and exit 0. With ``--fake`` an embedded fake
API server, seeded with a few pods and config maps, runs on the same loop and changes
something every second or so once the list is printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TextIO

import orjson

from aioinformer._kernel.runner import first_completed
from aioinformer._objects.meta import resource_version_of
from aioinformer._objects.view import json_default
from aioinformer.cli._common import (
    EXIT_OK,
    EXIT_USAGE,
    GAP,
    CommandFailure,
    TargetOptions,
    age_of,
    failure_text,
    format_age,
    kind_prefix,
    labels_text,
    load_cli_config,
    reported_as,
    run_command,
    silence_stdout,
    start_fake_server,
    stop_signals_call,
)
from aioinformer.client import Client, ResourceInfo
from aioinformer.errors import (
    Forbidden,
    Unauthorized,
    UnknownResourceError,
)
from aioinformer.factory import SharedInformerFactory
from aioinformer.indexer import meta_namespace_key
from aioinformer.listwatch import ListOptions
from aioinformer.models import DeletedFinalStateUnknown

if TYPE_CHECKING:
    from collections.abc import Callable


__all__ = ["OutputFormat", "WatchFailure", "WatchOptions", "format_age", "run_watch"]

OutputFormat = Literal["wide", "json", "name"]

_EVENT_WIDTH: Final = len("MODIFIED")


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchOptions(TargetOptions):
    """What ``aioinformer watch`` was asked for: the target, and how to print it."""

    output: OutputFormat | None = None
    """``None`` for the plain table."""


class WatchFailure(CommandFailure):
    """A failure of the watch itself reported as one line (its message) and exit code 1."""


class _Printer:
    """Formats rows for one resource and output format; writes and flushes each line.

    The table's column widths are fixed from the synced list (a longer name later just
    pushes its row's tail right, as a stream cannot re-align what it printed).
    """

    def __init__(
        self,
        info: ResourceInfo,
        output: OutputFormat | None,
        all_namespaces: bool,
        out: TextIO,
        *,
        on_closed: Callable[[], None],
    ) -> None:
        self._info = info
        self._on_closed = on_closed
        # Set when the reader went away (``| head``); nothing is written after that.
        self.closed = False
        self._output = output
        self._show_namespace = all_namespaces and info.namespaced
        self._out = out
        self._namespace_width = len("NAMESPACE")
        self._name_width = len("NAME")
        self._age_width = len("AGE")
        self._kind_prefix = kind_prefix(info)

    def _write(self, line: str) -> None:
        if self.closed:
            return
        try:
            self._out.write(line + "\n")
            self._out.flush()
        except BrokenPipeError:
            self.closed = True
            self._on_closed()

    def list(self, objs: list[Any]) -> None:
        """The synced list: the header (table formats), then one ADDED row per object."""
        if self._output in (None, "wide"):
            for obj in objs:
                meta = obj.get("metadata") or {}
                self._namespace_width = max(self._namespace_width, len(meta.get("namespace", "")))
                self._name_width = max(self._name_width, len(meta.get("name", "")))
            self._write(
                self._row("EVENT", "NAMESPACE", "NAME", "AGE", "RESOURCE-VERSION", "LABELS")
            )
        for obj in objs:
            self.event("ADDED", obj)

    def _row(self, event: str, namespace: str, name: str, age: str, rv: str, labels: str) -> str:
        cells = [(event, _EVENT_WIDTH)]
        if self._show_namespace:
            cells.append((namespace, self._namespace_width))
        cells.append((name, self._name_width))
        if self._output == "wide":
            cells += [(age, self._age_width + 2), (rv, len("RESOURCE-VERSION")), (labels, 0)]
        else:
            cells.append((age, 0))
        return GAP.join(text.ljust(width) for text, width in cells).rstrip()

    def event(self, event: str, obj: Any) -> None:
        """One row: ``event`` is ADDED, MODIFIED or DELETED; ``obj`` may be a tombstone."""
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        meta = obj.get("metadata") or {}
        if self._output == "json":
            self._write(orjson.dumps({"type": event, "object": obj}, default=json_default).decode())
            return
        if self._output == "name":
            self._write(f"{self._kind_prefix}/{meta.get('name', '')}")
            return
        self._write(
            self._row(
                event,
                meta.get("namespace", ""),
                meta.get("name", ""),
                age_of(obj, datetime.datetime.now(datetime.UTC)),
                str(meta.get("resourceVersion", "")),
                labels_text(meta),
            )
        )


class _RowHandler:
    """The informer handler: rows for events after the synced list.

    Until :meth:`listed` is called, events are held back (the list prints first); events
    the list already showed, by key and resourceVersion, are dropped, and so are updates
    that do not change the resourceVersion (a relist re-delivers every object).
    """

    def __init__(self, printer: _Printer) -> None:
        self._printer = printer
        self._shown: dict[str, str] | None = None  # None until the list is printed
        self._held: list[tuple[str, Any]] = []

    def listed(self, objs: list[Any]) -> None:
        self._printer.list(objs)
        self._shown = {meta_namespace_key(obj): _rv(obj) for obj in objs}
        held, self._held = self._held, []
        for event, obj in held:
            self._emit(event, obj)

    def _emit(self, event: str, obj: Any) -> None:
        shown = self._shown
        if shown is None:
            self._held.append((event, obj))
            return
        if event != "DELETED" and shown:
            key = meta_namespace_key(obj)
            if shown.pop(key, None) == _rv(obj):
                return
        elif shown:
            shown.pop(meta_namespace_key(obj), None)
        self._printer.event(event, obj)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if not is_in_initial_list:
            self._emit("ADDED", obj)

    def on_update(self, old: Any, new: Any) -> None:
        # Same resourceVersion: a relist or resync confirming what was shown, not a change.
        if _rv(old) != _rv(new):
            self._emit("MODIFIED", new)

    def on_delete(self, obj: Any) -> None:
        self._emit("DELETED", obj)


def _rv(obj: Any) -> str:
    return resource_version_of(obj) or ""


async def _preflight(client: Client, options: WatchOptions, namespace: str | None) -> ResourceInfo:
    """Resolve the resource and list one object, so that what retrying cannot fix is
    reported now: an unknown resource, a forbidden namespace, bad credentials, a bad
    selector, no server."""
    with reported_as(WatchFailure):
        resource = client.resource(options.resource, namespace)
        info = await resource.info()
        await resource.list(
            ListOptions(
                limit=1,
                label_selector=options.label_selector,
                field_selector=options.field_selector,
            )
        )
    return info


async def _watch(options: WatchOptions, out: TextIO) -> int:
    stop = asyncio.Event()
    listed = asyncio.Event()
    fatal: list[BaseException] = []
    with stop_signals_call(stop.set):
        async with contextlib.AsyncExitStack() as stack:
            if options.fake:
                kubeconfig = await start_fake_server(stack, listed)
                config = load_cli_config(kubeconfig, None)
            else:
                config = load_cli_config(options.kubeconfig, options.context)
            client = await stack.enter_async_context(Client(config))
            namespace = options.namespace_in(config)
            info = await _preflight(client, options, namespace)

            def on_watch_error(reflector: object, exc: BaseException) -> None:
                # What a retry cannot fix ends the watch; the rest the informer retries.
                if isinstance(exc, (Forbidden, Unauthorized, UnknownResourceError)):
                    fatal.append(exc)
                    stop.set()

            factory = SharedInformerFactory(
                client,
                namespace=namespace if info.namespaced else None,
                label_selector=options.label_selector,
                field_selector=options.field_selector,
            )
            informer = factory.informer_for(info)
            informer.set_watch_error_handler(on_watch_error)
            printer = _Printer(info, options.output, namespace is None, out, on_closed=stop.set)
            handler = _RowHandler(printer)
            informer.add_event_handler(handler, name="watch rows")
            async with factory:
                # Failures are judged by on_watch_error, which ends the watch on those a
                # retry cannot fix: the wait itself only waits.
                await first_completed(informer.wait_for_sync(fail_fast=False), stop.wait())
                if informer.has_synced():
                    handler.listed(sorted(informer.indexer.list(), key=meta_namespace_key))
                    listed.set()
                    await stop.wait()
            if printer.closed:
                silence_stdout(out)
        if fatal:
            raise WatchFailure(failure_text(fatal[0]))
        return EXIT_OK


def run_watch(
    options: WatchOptions,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    log_level: int = logging.WARNING,
) -> int:
    """Run ``aioinformer watch``; return the exit code (0 after Ctrl-C or when the reader
    of stdout went away, 1 on a failure reported as one line on ``err``).

    Library log records at ``log_level`` and above (retries, relists) go to ``err``.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    problem = options.usage_error()
    if problem is not None:
        err.write(f"aioinformer: error: {problem}\n")
        return EXIT_USAGE
    return run_command(_watch(options, out), err, log_level)
