"""The options ``watch`` and ``get`` share: parsed once into :class:`TargetOptions`, checked
once for combinations that make no sense, and resolved once to the namespace a command
reads. Everything here runs in-process; the commands themselves are pinned by the
subprocess tests in ``test_cli.py`` and ``test_cli_get.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioinformer.cli import _target_options, parse_args
from aioinformer.cli._common import TargetOptions
from aioinformer.cli._get import DEFAULT_CHUNK_SIZE, GetOptions
from aioinformer.cli._watch import WatchOptions
from aioinformer.config import Config

FAKE_CONFLICT = "--fake cannot be combined with --kubeconfig or --context"


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (TargetOptions(resource="pods"), None),
        (TargetOptions(resource="pods", fake=True), None),
        (TargetOptions(resource="pods", kubeconfig="k", context="c"), None),
        (TargetOptions(resource="pods", fake=True, kubeconfig="k"), FAKE_CONFLICT),
        (TargetOptions(resource="pods", fake=True, context="c"), FAKE_CONFLICT),
        (GetOptions(resource="pods", fake=True, context="c"), FAKE_CONFLICT),
        (WatchOptions(resource="pods", fake=True, kubeconfig="k"), FAKE_CONFLICT),
    ],
    ids=[
        "nothing-set",
        "fake-alone",
        "cluster-alone",
        "fake-with-kubeconfig",
        "fake-with-context",
        "get-inherits-the-check",
        "watch-inherits-the-check",
    ],
)
def test_fake_never_goes_with_a_kubeconfig_or_a_context(
    options: TargetOptions, problem: str | None
) -> None:
    assert options.usage_error() == problem


@pytest.mark.parametrize(
    ("namespace", "all_namespaces", "expected"),
    [
        (None, False, "from-context"),
        ("team", False, "team"),
        ("", False, "from-context"),
        (None, True, None),
        ("team", True, None),
    ],
    ids=[
        "context-default",
        "explicit-namespace",
        "empty-namespace-falls-back",
        "all-namespaces",
        "all-namespaces-wins",
    ],
)
def test_the_namespace_read_is_explicit_or_the_contexts_or_every_one(
    namespace: str | None, all_namespaces: bool, expected: str | None
) -> None:
    options = TargetOptions(resource="pods", namespace=namespace, all_namespaces=all_namespaces)
    config = Config(host="http://127.0.0.1:1", namespace="from-context")
    assert options.namespace_in(config) == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["get", "pods"],
            GetOptions(resource="pods"),
        ),
        (
            [
                "get",
                "v1/configmaps",
                "a",
                "-n",
                "team",
                "-l",
                "app=web",
                "--field-selector",
                "status.phase=Running",
                "--context",
                "kind",
                "--kubeconfig",
                "/tmp/kc",
                "-o",
                "yaml",
                "--chunk-size",
                "7",
                "b",
            ],
            GetOptions(
                resource="v1/configmaps",
                names=("a", "b"),
                namespace="team",
                label_selector="app=web",
                field_selector="status.phase=Running",
                context="kind",
                kubeconfig="/tmp/kc",
                output="yaml",
                chunk_size=7,
            ),
        ),
        (
            ["get", "pods", "-A", "--fake", "-o", "name"],
            GetOptions(resource="pods", all_namespaces=True, fake=True, output="name"),
        ),
        (
            ["watch", "pods"],
            WatchOptions(resource="pods"),
        ),
        (
            [
                "watch",
                "apps/v1/deployments",
                "-n",
                "team",
                "-l",
                "tier=db",
                "--field-selector",
                "metadata.name=x",
                "--context",
                "kind",
                "--kubeconfig",
                "/tmp/kc",
                "-o",
                "wide",
            ],
            WatchOptions(
                resource="apps/v1/deployments",
                namespace="team",
                label_selector="tier=db",
                field_selector="metadata.name=x",
                context="kind",
                kubeconfig="/tmp/kc",
                output="wide",
            ),
        ),
        (
            ["watch", "pods", "-A", "--fake", "-o", "json"],
            WatchOptions(resource="pods", all_namespaces=True, fake=True, output="json"),
        ),
    ],
    ids=[
        "get-defaults",
        "get-every-option",
        "get-all-namespaces-fake",
        "watch-defaults",
        "watch-every-option",
        "watch-all-namespaces-fake",
    ],
)
def test_parsed_arguments_become_the_commands_options(
    argv: list[str], expected: TargetOptions
) -> None:
    args = parse_args(argv)
    own: dict[str, object] = {"output": args.output}
    if isinstance(expected, GetOptions):
        own |= {"names": tuple(args.names), "chunk_size": args.chunk_size}
    assert _target_options(type(expected), args, **own) == expected


def test_get_pages_like_kubectl_unless_told_otherwise() -> None:
    assert parse_args(["get", "pods"]).chunk_size == DEFAULT_CHUNK_SIZE == 500


# A value argparse takes as a value, not as an option: it must not start with "-".
_values = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12).filter(
    lambda text: not text.startswith("-")
)


@given(
    namespace=_values,
    label_selector=_values,
    field_selector=_values,
    context=_values,
    kubeconfig=_values,
)
def test_every_target_option_reaches_both_commands_unchanged(
    namespace: str, label_selector: str, field_selector: str, context: str, kubeconfig: str
) -> None:
    flags = [
        *("-n", namespace),
        *("-l", label_selector),
        *("--field-selector", field_selector),
        *("--context", context),
        *("--kubeconfig", kubeconfig),
    ]
    target = TargetOptions(
        resource="pods",
        namespace=namespace,
        label_selector=label_selector,
        field_selector=field_selector,
        context=context,
        kubeconfig=kubeconfig,
    )
    for command, kind in (("get", GetOptions), ("watch", WatchOptions)):
        args = parse_args([command, "pods", *flags])
        options = _target_options(kind, args, output=None)
        for name in TargetOptions.__dataclass_fields__:
            assert getattr(options, name) == getattr(target, name), (command, name)
