"""List what ``import aioinformer`` gives, each name linked to where the reference documents it.

In a page, ``<!-- aioinformer-exports -->`` becomes a table of ``aioinformer.__all__``: the
name, the public module whose page documents it (the first API page's module that exports
the same object), and the first paragraph of its docstring. A name no public module
exports is documented on the package's own page: ``<!-- aioinformer-package -->`` becomes
the package's entry, with those names as its members. The
build is strict, so a link to a name the reference does not render fails it.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

from griffe_rst import convert

import aioinformer

MARKER = "<!-- aioinformer-exports -->"
PACKAGE_MARKER = "<!-- aioinformer-package -->"
API = Path(__file__).resolve().parents[1] / "reference" / "api"


def api_pages() -> dict[str, str]:
    """The module each API page documents, by the page's file name (the package's page
    names it with ``PACKAGE_MARKER``)."""
    pages: dict[str, str] = {}
    for page in sorted(API.glob("*.md")):
        text = page.read_text().replace(PACKAGE_MARKER, "::: aioinformer")
        (module,) = re.findall(r"^::: ([\w.]+)$", text, re.M)
        pages[page.name] = module
    return pages


def _documented_modules() -> list[Any]:
    names = [name for name in api_pages().values() if name != "aioinformer"]
    return [importlib.import_module(name) for name in names]


def _summary(obj: object) -> str:
    doc = inspect.getdoc(obj) if callable(obj) or inspect.isclass(obj) else None
    if not doc:
        return ""
    first = doc.strip().split("\n\n", 1)[0].replace("\n", " ")
    first = convert(first)
    return first.replace("|", "\\|")


def homes() -> dict[str, str]:
    """The module documenting each exported name: a public one exporting the same object,
    else the package itself."""
    modules = _documented_modules()
    found: dict[str, str] = {}
    for name in aioinformer.__all__:
        obj = getattr(aioinformer, name)
        home = next(
            (m for m in modules if name in getattr(m, "__all__", ()) and getattr(m, name) is obj),
            None,
        )
        found[name] = home.__name__ if home is not None else "aioinformer"
    return found


def render_table() -> str:
    rows = ["| name | documented in | what it is |", "|---|---|---|"]
    for name, where in sorted(homes().items(), key=lambda item: item[0].lower()):
        summary = _summary(getattr(aioinformer, name))
        rows.append(f"| [`{name}`][{where}.{name}] | `{where}` | {summary} |")
    return "\n".join(rows)


def render_package() -> str:
    """The package's own entry: its docstring, and the exports no public module documents."""
    own = sorted(name for name, where in homes().items() if where == "aioinformer")
    members = "".join(f"        - {name}\n" for name in own) or "        []\n"
    return f"::: aioinformer\n    options:\n      members:\n{members}"


def on_page_markdown(markdown: str, **_: Any) -> str:
    if PACKAGE_MARKER in markdown:
        markdown = markdown.replace(PACKAGE_MARKER, render_package())
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, render_table())
    return markdown
