"""Render the package's reStructuredText docstrings as the Markdown the site is written in.

The docstrings are written for ``help()`` and Sphinx-style readers: roles such as
``:class:`~aioinformer.informer.SharedIndexInformer```, literal blocks introduced by ``::``
and simple tables framed by ``===`` rules. This griffe extension rewrites each object's
docstring once the whole package is loaded: a role becomes inline code of the name it
shows, linked to the page that documents that name when there is one; a literal block
becomes a fenced block (Python when it parses as Python, text otherwise), and a table
becomes a text block, so the reference reads as the source does.

A role's name is resolved as Python would in the docstring's own scope (a bare
``WatchStreamBase`` is the one its module defines or imports, a bare ``aclose`` its class's
method), then followed to where it is defined. The link is an optional cross-reference: a
name with no page (a private module, the standard library) stays inline code, without a
warning.
"""

from __future__ import annotations

import ast
import functools
import html
import re
import textwrap
from typing import TYPE_CHECKING, Any

import griffe

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


ROLE = re.compile(r":(?:py:)?[a-z]+:`(?P<tilde>~?)(?P<target>[^`<]+?)(?:\s*<(?P<link>[^>]+)>)?`")
TABLE_RULE = re.compile(r"^\s*=+(?:\s+=+)+\s*$")


def _role(match: re.Match[str], resolve: Callable[[str], str | None] | None = None) -> str:
    target = match["target"].strip()
    shown = target.rsplit(".", 1)[-1] if match["tilde"] else target
    # ``:meth:`shown <target>``` links to its explicit target.
    linked = (match["link"] or target).strip().removeprefix("~")
    identifier = resolve(linked.removesuffix("()")) if resolve is not None else None
    if identifier is None:
        return f"`{shown}`"
    return (
        f'<autoref identifier="{html.escape(identifier)}" optional>'
        f"<code>{html.escape(shown)}</code></autoref>"
    )


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _language(block: str) -> str:
    try:
        ast.parse(block)
    except SyntaxError:
        return "text"
    return "python"


def _fence(lines: list[str], indent: str) -> list[str]:
    block = textwrap.dedent("\n".join(lines)).strip("\n")
    return [
        f"{indent}```{_language(block)}",
        *(indent + row for row in block.split("\n")),
        f"{indent}```",
    ]


def convert(text: str, resolve: Callable[[str], str | None] | None = None) -> str:
    """The docstring ``text`` in Markdown; ``resolve`` gives the identifier a role's name
    links to (``None``: not linked), and without it no role is linked."""
    role = functools.partial(_role, resolve=resolve)
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if TABLE_RULE.match(line):
            # A simple table: its top rule, the header, a rule, the rows, a closing rule.
            end, rules = index, 0
            while end < len(lines) and rules < 3:
                rules += bool(TABLE_RULE.match(lines[end]))
                end += 1
            out += _fence(lines[index:end], " " * _indent(line))
            index = end
            continue
        stripped = line.rstrip()
        if stripped.endswith("::") and not stripped.lstrip().startswith(".."):
            head = stripped[:-2].rstrip() if stripped.endswith(" ::") else stripped[:-1]
            if head.strip():
                out.append(ROLE.sub(role, head))
            base = _indent(line)
            end = index + 1
            block: list[str] = []
            while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > base):
                block.append(lines[end])
                end += 1
            while block and not block[-1].strip():
                block.pop()
                end -= 1
            if block:
                out += ["", *_fence(block, " " * base)]
                index = end
                continue
            index += 1
            continue
        out.append(ROLE.sub(role, line))
        index += 1
    return "\n".join(out)


def identifier(obj: griffe.Object, collection: griffe.ModulesCollection, name: str) -> str | None:
    """The path where ``name``, as written in ``obj``'s docstring, is defined; ``None``
    when it names nothing the loaded packages hold."""
    head, _, rest = name.partition(".")
    try:
        path = obj.resolve(head)
    except griffe.NameResolutionError:
        path = head  # a fully qualified name, or one from outside the package
    try:
        found = collection[f"{path}.{rest}" if rest else path]
        return str(found.final_target.canonical_path if found.is_alias else found.canonical_path)
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _documented(obj: griffe.Object) -> Iterator[griffe.Object]:
    """``obj`` and every object it defines (not what it imports), depth first."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            assert isinstance(member, griffe.Object)
            yield from _documented(member)


class ReStructuredTextDocstrings(griffe.Extension):
    """Rewrites every docstring of a loaded package with :func:`convert`, once the whole
    package is loaded, so that a role may name what its module defines further down."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **_: Any) -> None:
        for obj in _documented(pkg):
            if obj.docstring is not None:
                resolve = functools.partial(identifier, obj, loader.modules_collection)
                obj.docstring.value = convert(obj.docstring.value, resolve)
