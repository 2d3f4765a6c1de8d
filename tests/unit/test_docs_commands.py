"""The ``aioinformer`` command lines the pages show are ones the parser accepts.

Every command of a ``bash`` block, and every line after a ``$`` prompt of a ``console``
block (the rest is output), that runs ``aioinformer`` (alone or after a ``cd ... &&`` or a
``pip install ... &&``, continued over ``\\`` line ends, comments dropped) is parsed by
the real argument parser, without running it; and every
option a page's table of a command's options names is one that command has. A renamed
or removed option then fails here instead of in a reader's shell.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from aioinformer.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<language>bash|console|sh|shell)\b[^\n]*\n(?P<body>.*?)"
    r"^(?P=indent)```",
    re.M | re.S,
)
PROMPT = "$ "
OPTION_ROW = re.compile(r"^\|\s*`(?P<options>-[^|]*)`\s*\|")
OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


def command_lines(text: str) -> list[str]:
    """The ``aioinformer ...`` commands of the page's shell blocks, one string each."""
    commands: list[str] = []
    for block in SHELL_BLOCK.finditer(text):
        joined = re.sub(r"\\\n\s*", " ", block["body"])
        for line in (line.strip() for line in joined.splitlines()):
            if block["language"] == "console":
                if not line.startswith(PROMPT):
                    continue  # what a command printed
                line = line.removeprefix(PROMPT)
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:1] == ["aioinformer"]:
                    commands.append(shlex.join(words[1:]))
    return commands


def shown_commands() -> list[tuple[str, str]]:
    return [
        (page.relative_to(ROOT).as_posix(), command)
        for page in PAGES
        for command in command_lines(page.read_text())
    ]


def subcommand(name: str) -> argparse.ArgumentParser:
    for action in build_parser()._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            parser: argparse.ArgumentParser = action.choices[name]
            return parser
    raise AssertionError("the parser has no subcommands")


def test_the_pages_show_commands_to_check() -> None:
    pages = {page for page, _ in shown_commands()}
    assert {"README.md", "docs/how-to/proxy.md"} <= pages


@pytest.mark.parametrize(("page", "command"), shown_commands())
def test_a_command_the_pages_show_parses(page: str, command: str) -> None:
    try:
        build_parser().parse_args(shlex.split(command))
    except SystemExit as error:
        raise AssertionError(f"{page}: `aioinformer {command}` does not parse") from error


def test_a_console_blocks_output_is_not_read_as_commands() -> None:
    page = "```console\n$ aioinformer demo --pods 10\naioinformer can't stop: it's fine\n```\n"
    assert command_lines(page) == ["demo --pods 10"]
    assert command_lines("```bash\ncd x && aioinformer get pods  # list\n```\n") == ["get pods"]


def test_a_misspelt_option_fails_to_parse() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["proxy", "--resource", "v1/pods", "--listn", ":1"])


def test_the_options_the_proxy_page_tabulates_are_the_commands_own() -> None:
    known = set(subcommand("proxy")._option_string_actions)
    page = (ROOT / "docs/how-to/proxy.md").read_text()
    tabulated = {
        option
        for line in page.splitlines()
        if (row := OPTION_ROW.match(line))
        for option in OPTION.findall(row["options"])
    }
    assert len(tabulated) > 10
    assert tabulated <= known, sorted(tabulated - known)
