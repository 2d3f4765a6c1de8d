"""Render the package's reStructuredText docstrings as the Markdown the site is written in.

The docstrings are written for ``help()`` and Sphinx-style readers: roles such as
``:class:`~aioinformer.informer.SharedIndexInformer```, literal blocks introduced by ``::``
and simple tables framed by ``===`` rules. This griffe extension rewrites each object's
docstring once, as it is loaded: a role becomes inline code of the name it shows, a
literal block becomes a fenced block (Python when it parses as Python, text otherwise),
and a table becomes a text block, so the reference reads as the source does.
"""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?[a-z]+:`(?P<tilde>~?)(?P<target>[^`<]+?)(?:\s*<(?P<link>[^>]+)>)?`")
TABLE_RULE = re.compile(r"^\s*=+(?:\s+=+)+\s*$")


def _role(match: re.Match[str]) -> str:
    target = match["target"].strip()
    shown = target.rsplit(".", 1)[-1] if match["tilde"] else target
    return f"`{shown}`"


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


def convert(text: str) -> str:
    """The docstring ``text`` in Markdown."""
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
                out.append(ROLE.sub(_role, head))
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
        out.append(ROLE.sub(_role, line))
        index += 1
    return "\n".join(out)


class ReStructuredTextDocstrings(griffe.Extension):
    """Rewrites every loaded object's docstring with :func:`convert`."""

    def on_instance(self, *, obj: griffe.Object, **_: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
