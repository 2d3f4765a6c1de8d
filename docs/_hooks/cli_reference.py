"""Write the command-line reference from the argument parser itself, at build time.

In a page, ``<!-- cli-reference -->`` becomes ``aioinformer --help`` and
``<!-- cli-reference: NAME -->`` becomes ``aioinformer NAME --help``, each in a text block,
with the words, options and defaults the parser holds. A page that uses the markers must
name every subcommand, so a new command cannot go undocumented: the build fails, naming
the ones left out, as it does for a marker naming no command.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

from mkdocs.exceptions import PluginError

from aioinformer.cli import build_parser

MARKER = re.compile(r"<!-- cli-reference(?::\s*(?P<name>[\w-]+))?\s*-->")
WIDTH = 88


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help_text(parser: argparse.ArgumentParser) -> str:
    # argparse wraps to the terminal's width, which it reads from COLUMNS.
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        return parser.format_help().rstrip()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def render(markdown: str) -> str:
    """``markdown`` with every marker replaced by the help it names."""
    parser = build_parser()
    parser.prog = "aioinformer"
    commands = _subcommands(parser)
    for name, sub in commands.items():
        sub.prog = f"aioinformer {name}"
    named = {match["name"] for match in MARKER.finditer(markdown) if match["name"]}
    if unknown := named - set(commands):
        raise PluginError(f"cli-reference names no aioinformer command: {sorted(unknown)}")
    if missing := set(commands) - named:
        raise PluginError(f"the CLI reference leaves out aioinformer {sorted(missing)}")

    def help_block(match: re.Match[str]) -> str:
        target = commands[match["name"]] if match["name"] else parser
        return f"```text\n{_help_text(target)}\n```"

    return MARKER.sub(help_block, markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return render(markdown) if MARKER.search(markdown) else markdown
