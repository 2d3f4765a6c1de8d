"""The ``aioinformer`` command's arguments and formatting, in process: usage errors exit 2
naming the argument, ``-v`` picks the library's log level, and ages are written as kubectl
writes them. Running the command itself is in ``tests/e2e/test_cli.py``.
"""

from __future__ import annotations

import logging

import pytest

from aioinformer.cli import build_parser, log_level
from aioinformer.cli._watch import format_age

# ---------------------------------------------------------------------------------------
# Entry points and arguments


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--pods", "-5"], "--pods"),
        (["demo", "--duration", "0"], "--duration"),
        (["demo", "--churn", "fast"], "--churn"),
        (["watch"], "RESOURCE"),
        (["watch", "pods", "-n", "a", "-A"], "not allowed with"),
        (["watch", "pods", "-o", "yaml"], "invalid choice"),
        ([], "COMMAND"),
    ],
    ids=[
        "negative-pods",
        "zero-duration",
        "non-numeric-churn",
        "watch-without-resource",
        "namespace-and-all-namespaces",
        "unknown-output-format",
        "no-command",
    ],
)
def test_usage_errors_exit_2_naming_the_argument(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc_info:
        build_parser().parse_args(argv)
    assert exc_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        (["demo"], logging.ERROR),
        (["demo", "-v"], logging.INFO),
        (["watch", "pods"], logging.WARNING),
        (["watch", "pods", "-v"], logging.INFO),
        (["watch", "pods", "-vv"], logging.DEBUG),
        (["watch", "pods", "-v", "-v", "-v"], logging.DEBUG),
    ],
    ids=["demo", "demo-v", "watch", "watch-v", "watch-vv", "watch-vvv"],
)
def test_verbosity_picks_the_library_log_level(argv: list[str], level: int) -> None:
    assert log_level(build_parser().parse_args(argv)) == level


# ---------------------------------------------------------------------------------------
# Formatting


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-0.5, "0s"),
        (0, "0s"),
        (45, "45s"),
        (119, "119s"),
        (120, "2m"),
        (192, "3m12s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 3 * 60, "5h3m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (4 * 86400, "4d"),
        (200 * 86400, "200d"),
        (2 * 365 * 86400 + 30 * 86400, "2y30d"),
        (9 * 365 * 86400, "9y"),
    ],
    ids=lambda value: str(value),
)
def test_age_is_written_as_kubectl_writes_it(seconds: float, text: str) -> None:
    assert format_age(seconds) == text
