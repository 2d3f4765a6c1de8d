"""``aioinformer get``: ``kubectl get`` through :class:`aioinformer.client.ResourceClient`.

Role: print a resource's objects once and exit. Input: :class:`GetOptions`. Output on
stdout: a table (NAME and AGE, NAMESPACE first with ``-A``; ``-o wide`` adds
RESOURCE-VERSION and LABELS), a ``v1`` ``List`` document with ``-o json`` or ``-o yaml``
(the object itself when exactly one NAME was asked for, as kubectl does), or one
``kind/name`` line per object with ``-o name``. On stderr: ``No resources found ...``
when a table would be empty (as kubectl, nothing for the machine-readable formats), and
one line per failure with exit code 1 (unusable kubeconfig, unknown resource, forbidden
namespace, a named object that does not exist, an unreachable server).

Ordering: objects in the server's order (namespace, then name), pages in sequence; named
objects in the order they were named. Nothing is printed until every page arrived, so a
table's columns fit every row and a failure on a later page prints no partial output.

Task model: one ``asyncio.run()``. Without NAMEs: one LIST fetched in pages of
``chunk_size`` objects (``limit``/``continue``, each page asked for after the previous
one arrived; 0 asks for everything at once). With NAMEs: one GET per name, in turn; a
name that does not exist is reported and the others still printed. With ``--fake`` an
embedded fake API server seeded with a few pods and config maps runs on the same loop.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TextIO

import orjson
import yaml

from aioinformer._objects.view import json_default, thaw
from aioinformer.cli._common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    GAP,
    CommandFailure,
    TargetOptions,
    age_of,
    describe_api_error,
    kind_prefix,
    labels_text,
    load_cli_config,
    reported_as,
    run_command,
    seed_fake_server,
    silence_stdout,
)
from aioinformer.client import Client, ResourceClient, ResourceInfo
from aioinformer.errors import NotFound
from aioinformer.listwatch import ListOptions

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["DEFAULT_CHUNK_SIZE", "GetOptions", "GetOutputFormat", "Listing", "render", "run_get"]

GetOutputFormat = Literal["wide", "json", "yaml", "name"]

DEFAULT_CHUNK_SIZE: Final = 500
"""Objects per LIST page unless ``--chunk-size`` says otherwise: kubectl's default."""

_YAML_DUMPER: Final[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass(frozen=True, slots=True, kw_only=True)
class GetOptions(TargetOptions):
    """What ``aioinformer get`` was asked for: the target, and how to fetch and print it.

    ``names`` never go together with ``all_namespaces`` (a name is looked up in one
    namespace) nor with the selectors.
    """

    names: tuple[str, ...] = ()
    """Objects to GET by name; empty: LIST the collection."""
    output: GetOutputFormat | None = None
    """``None`` for the plain table."""
    chunk_size: int = DEFAULT_CHUNK_SIZE
    """The ``limit`` of each LIST page, 0 or more; 0 fetches the collection in one answer."""


@dataclass(slots=True, kw_only=True)
class Listing:
    """What the server answered: the resource, the objects found, and what it said about
    named objects it does not have."""

    info: ResourceInfo
    items: list[dict[str, Any]] = field(default_factory=list)
    """Objects in print order; each carries ``apiVersion`` and ``kind``."""
    not_found: list[str] = field(default_factory=list)
    """One message per requested name the server does not have, in request order."""
    pages: int = 0
    """LIST requests it took (0 for GETs by name)."""


def _usage_error(options: GetOptions) -> str | None:
    if (problem := options.usage_error()) is not None:
        return problem
    if options.names and options.all_namespaces:
        return "a resource cannot be retrieved by name across all namespaces"
    if options.names and (options.label_selector or options.field_selector):
        return "selectors cannot be combined with NAME: name the objects or select them"
    if options.chunk_size < 0:
        return f"--chunk-size must be 0 or more, not {options.chunk_size}"
    return None


async def _list_all(resource: ResourceClient, options: GetOptions, listing: Listing) -> None:
    token: str | None = None
    while True:
        page = await resource.list(
            ListOptions(
                limit=options.chunk_size or None,
                continue_=token,
                label_selector=options.label_selector,
                field_selector=options.field_selector,
            )
        )
        listing.pages += 1
        listing.items.extend(page.items)
        token = page.continue_
        if not token:
            return


async def _get_named(resource: ResourceClient, names: Sequence[str], listing: Listing) -> None:
    for name in names:
        try:
            obj = await resource.get(name)
        except NotFound as exc:
            listing.not_found.append(describe_api_error(exc))
            continue
        obj.setdefault("apiVersion", listing.info.gvr.api_version)
        obj.setdefault("kind", listing.info.kind)
        listing.items.append(obj)


async def _fetch(client: Client, options: GetOptions, namespace: str | None) -> Listing:
    """Resolve the resource, then LIST it in pages or GET each name. Raises
    :class:`CommandFailure` with the line to print for anything but a missing name."""
    with reported_as(CommandFailure):
        resource = client.resource(options.resource, namespace)
        listing = Listing(info=await resource.info())
        if options.names:
            await _get_named(resource, options.names, listing)
        else:
            await _list_all(resource, options, listing)
    return listing


def _table(listing: Listing, *, wide: bool, show_namespace: bool) -> list[str]:
    header = ["NAME", "AGE"]
    if wide:
        header += ["RESOURCE-VERSION", "LABELS"]
    if show_namespace:
        header.insert(0, "NAMESPACE")
    rows = [header]
    now = datetime.datetime.now(datetime.UTC)
    for obj in listing.items:
        meta = obj.get("metadata") or {}
        row = [str(meta.get("name", "")), age_of(obj, now)]
        if wide:
            row += [str(meta.get("resourceVersion", "")), labels_text(meta)]
        if show_namespace:
            row.insert(0, str(meta.get("namespace", "")))
        rows.append(row)
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    return [
        GAP.join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _document(listing: Listing, *, single: bool) -> dict[str, Any]:
    if single and len(listing.items) == 1:
        return listing.items[0]
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": listing.items,
        "metadata": {"resourceVersion": ""},
    }


def render(
    listing: Listing, output: GetOutputFormat | None, *, all_namespaces: bool, single: bool
) -> str:
    """The text ``get`` prints for ``listing`` in ``output`` (``None``: the table), every
    line ending in a newline; ``""`` when a table or ``-o name`` has nothing to show.

    ``single`` (exactly one NAME was asked for) makes ``json`` and ``yaml`` print the
    object itself rather than a ``List`` of one.
    """
    if output == "json":
        document = _document(listing, single=single)
        flags = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
        return orjson.dumps(document, option=flags, default=json_default).decode()
    if output == "yaml":
        # YAML's safe dumper knows plain dicts and lists only: a cache's views are copied.
        text: str = yaml.dump(
            thaw(_document(listing, single=single)),
            Dumper=_YAML_DUMPER,
            sort_keys=True,
            default_flow_style=False,
            allow_unicode=True,
        )
        return text
    if output == "name":
        prefix = kind_prefix(listing.info)
        return "".join(
            f"{prefix}/{(obj.get('metadata') or {}).get('name', '')}\n" for obj in listing.items
        )
    if not listing.items:
        return ""
    show_namespace = all_namespaces and listing.info.namespaced
    lines = _table(listing, wide=output == "wide", show_namespace=show_namespace)
    return "".join(line + "\n" for line in lines)


def _nothing_found(info: ResourceInfo, namespace: str | None) -> str:
    if info.namespaced and namespace is not None:
        return f"No resources found in {namespace} namespace."
    return "No resources found"


async def _get(options: GetOptions, out: TextIO, err: TextIO) -> int:
    async with contextlib.AsyncExitStack() as stack:
        if options.fake:
            from aioinformer.testing.apiserver import FakeAPIServer

            server = await stack.enter_async_context(FakeAPIServer())
            seed_fake_server(server)
            config = load_cli_config(server.kubeconfig_path(), None)
        else:
            config = load_cli_config(options.kubeconfig, options.context)
        client = await stack.enter_async_context(Client(config))
        namespace = options.namespace_in(config)
        listing = await _fetch(client, options, namespace)
    text = ""
    if listing.items or not listing.not_found:
        text = render(
            listing,
            options.output,
            all_namespaces=options.all_namespaces,
            single=len(options.names) == 1,
        )
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        silence_stdout(out)
    for message in listing.not_found:
        err.write(f"aioinformer: error: {message}\n")
    if listing.not_found:
        return EXIT_FAILURE
    if not text and options.output in (None, "wide"):
        err.write(_nothing_found(listing.info, namespace) + "\n")
    return EXIT_OK


def run_get(
    options: GetOptions,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    log_level: int = logging.WARNING,
) -> int:
    """Run ``aioinformer get``; return the exit code: 0 when everything asked for was
    printed (or there was nothing), 1 after a failure reported on ``err`` (one line, one
    per missing name), 2 for options that cannot go together.

    Library log records at ``log_level`` and above go to ``err``.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    problem = _usage_error(options)
    if problem is not None:
        err.write(f"aioinformer: error: {problem}\n")
        return EXIT_USAGE
    return run_command(_get(options, out, err), err, log_level)
