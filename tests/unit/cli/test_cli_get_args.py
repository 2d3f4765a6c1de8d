"""``aioinformer get``'s arguments, in process: combinations that make no sense exit 2
naming the problem, names are collected wherever they appear, ``-v`` picks the log level.
Running the command against a fake API server is in ``tests/e2e/test_cli_get.py``.
"""

from __future__ import annotations

import logging
import re

import pytest

from aioinformer.cli import log_level, main, parse_args

# ---------------------------------------------------------------------------------------
# Arguments (in process: nothing here reaches a server)


def _exit_code(argv: list[str]) -> int | str | None:
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["get"], "you must specify the type of resource to get"),
        (["get", "pods", "-o", "table"], "invalid choice"),
        (["get", "pods", "--chunk-size", "-1"], "--chunk-size"),
        (["get", "pods", "-n", "a", "-A"], "not allowed with"),
        (["get", "pods", "web-0", "--bogus"], "unrecognized arguments: --bogus"),
        (["watch", "pods", "extra"], "unrecognized arguments: extra"),
        (["get", "pods", "web-0", "-A"], "cannot be retrieved by name across all namespaces"),
        (["get", "pods", "web-0", "-l", "app=web"], "selectors cannot be combined with NAME"),
        (
            ["get", "pods", "web-0", "--field-selector", "metadata.name=x"],
            "selectors cannot be combined with NAME",
        ),
        (["get", "pods", "--fake", "--context", "prod"], "--fake cannot be combined"),
    ],
    ids=[
        "no-resource",
        "unknown-output-format",
        "negative-chunk-size",
        "namespace-and-all-namespaces",
        "unknown-option-after-a-name",
        "watch-takes-no-names",
        "name-across-all-namespaces",
        "name-with-label-selector",
        "name-with-field-selector",
        "fake-with-a-context",
    ],
)
def test_usage_errors_exit_2_naming_the_problem(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit_code(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


def test_get_without_a_resource_shows_examples_and_asks_for_no_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _exit_code(["get"]) == 2
    err = capsys.readouterr().err
    assert "aioinformer get: error: you must specify the type of resource to get" in err
    assert "  aioinformer get pods web-0 -n shop" in err
    assert "NAME" not in err.split("error:", 1)[1]


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["get", "pods"], []),
        (["get", "pods", "a", "b"], ["a", "b"]),
        (["get", "pods", "-n", "team", "a", "b"], ["a", "b"]),
        (["get", "pods", "a", "-o", "json", "b"], ["a", "b"]),
    ],
    ids=["none", "after-the-resource", "after-options", "around-options"],
)
def test_names_are_collected_wherever_they_appear(argv: list[str], names: list[str]) -> None:
    args = parse_args(argv)
    assert args.names == names
    assert args.resource == "pods"


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        (["get", "pods"], logging.WARNING),
        (["get", "pods", "-v"], logging.INFO),
        (["get", "pods", "-vv"], logging.DEBUG),
    ],
    ids=["quiet", "v", "vv"],
)
def test_get_verbosity_picks_the_library_log_level(argv: list[str], level: int) -> None:
    assert log_level(parse_args(argv)) == level


def test_help_names_the_get_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(["--help"]) == 0
    assert re.search(r"^\s+get\s+like kubectl get", capsys.readouterr().out, re.MULTILINE)
