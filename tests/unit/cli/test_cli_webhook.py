"""``aioinformer webhook manifests``, in process: the user's module imported from the
working directory, its Manager, WebhookServer or factory function found, the documents
printed as YAML or JSON, and every failure one line with exit code 1 (usage errors 2)."""

from __future__ import annotations

import io
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import orjson
import pytest
import yaml

from aioinformer.cli import main, parse_args
from aioinformer.cli._webhook import WebhookOptions, parse_service, run_webhook_manifests

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

OPERATOR = textwrap.dedent(
    """
    from aioinformer.client import Client
    from aioinformer.config import Config
    from aioinformer.operator import Manager
    from aioinformer.operator.webhook import WebhookServer

    manager = Manager(Client(Config(host="http://127.0.0.1:1", token="t")))

    @manager.webhooks.validate(group="example.com", version="v1", resource="widgets", kind="Widget")
    def check(request):
        return None

    server = WebhookServer()
    server.mutate(
        None, lambda obj, request: None, group="", version="v1", resource="pods", kind="Pod"
    )

    def make_server():
        return server

    async def make_manager():
        return manager

    not_a_server = 42
    """
)


@pytest.fixture
def operator_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module of the user's in the working directory, imported by name."""
    name = f"webhook_operator_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(OPERATOR)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield name
    sys.modules.pop(name, None)


def run(options: WebhookOptions) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_webhook_manifests(options, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_a_managers_webhooks_are_printed_as_yaml_documents(operator_module: str) -> None:
    code, out, err = run(
        WebhookOptions(target=f"{operator_module}:manager", service="ops/widget-webhook:8443")
    )
    assert (code, err) == (0, "")
    assert out.startswith("---\n")
    (validating,) = list(yaml.safe_load_all(out))
    assert validating["kind"] == "ValidatingWebhookConfiguration"
    assert validating["webhooks"][0]["clientConfig"]["service"] == {
        "namespace": "ops",
        "name": "widget-webhook",
        "path": "/validate-example-com-v1-widget",
        "port": 8443,
    }


@pytest.mark.parametrize("attribute", ["server", "make_server"])
def test_a_server_or_a_function_returning_one_is_found(
    operator_module: str, attribute: str
) -> None:
    code, out, _ = run(
        WebhookOptions(target=f"{operator_module}:{attribute}", url="https://10.0.0.5:9443")
    )
    assert code == 0
    (mutating,) = list(yaml.safe_load_all(out))
    assert mutating["webhooks"][0]["clientConfig"] == {
        "url": "https://10.0.0.5:9443/mutate--v1-pod"
    }


def test_an_async_factory_is_run_and_json_is_one_list(operator_module: str, tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_bytes(b"PEM")
    code, out, _ = run(
        WebhookOptions(
            target=f"{operator_module}:make_manager",
            service="ops/w",
            ca_bundle=str(tmp_path / "ca.pem"),
            name="widgets",
            output="json",
        )
    )
    assert code == 0
    listed: dict[str, Any] = orjson.loads(out)
    assert listed["kind"] == "List"
    (validating,) = listed["items"]
    assert validating["metadata"] == {"name": "widgets"}
    assert validating["webhooks"][0]["clientConfig"]["caBundle"] == "UEVN"
    assert validating["webhooks"][0]["clientConfig"]["service"]["port"] == 443


@pytest.mark.parametrize(
    ("target", "message"),
    [
        pytest.param(
            "no_such_module_here:manager",
            "cannot import the module 'no_such_module_here'",
            id="module",
        ),
        pytest.param("{module}:nothing", "has no attribute 'nothing'", id="attribute"),
        pytest.param("{module}:not_a_server", "is not a Manager or a WebhookServer", id="type"),
        pytest.param("{module}", "must be 'module:attribute'", id="form"),
    ],
)
def test_a_target_that_is_not_a_server_fails_in_one_line(
    operator_module: str, target: str, message: str
) -> None:
    code, out, err = run(
        WebhookOptions(target=target.format(module=operator_module), service="a/b")
    )
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert message in err


def test_an_unreadable_ca_bundle_fails_in_one_line(operator_module: str, tmp_path: Path) -> None:
    code, _, err = run(
        WebhookOptions(
            target=f"{operator_module}:manager", service="a/b", ca_bundle=str(tmp_path / "none")
        )
    )
    assert code == 1
    assert "cannot read --ca-bundle" in err


def test_a_url_kube_apiserver_cannot_call_fails_in_one_line(operator_module: str) -> None:
    code, _, err = run(WebhookOptions(target=f"{operator_module}:manager", url="http://x"))
    assert code == 1
    assert "https://" in err


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("ops/w", ("ops", "w", 443)), ("ops/w:8443", ("ops", "w", 8443))],
)
def test_a_service_is_namespace_name_and_port(text: str, parsed: tuple[str, str, int]) -> None:
    assert parse_service(text) == parsed


@pytest.mark.parametrize("text", ["w", "/w", "ops/", "ops/w:x", "ops/w:0", "ops/w:70000"])
def test_a_service_of_another_form_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="--service"):
        parse_service(text)


def test_the_parser_wants_a_service_or_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse_args(["webhook", "manifests", "op:manager", "--service", "ops/w"])
    assert (args.target, args.service, args.url, args.output) == (
        "op:manager",
        "ops/w",
        None,
        "yaml",
    )
    for argv in (
        ["webhook", "manifests", "op:manager"],
        ["webhook", "manifests", "op:manager", "--service", "a/b", "--url", "https://x"],
        ["webhook"],
    ):
        with pytest.raises(SystemExit) as raised:
            parse_args(argv)
        assert raised.value.code == 2
    capsys.readouterr()


def test_main_runs_the_command(operator_module: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["webhook", "manifests", f"{operator_module}:manager", "--service", "ops/w"])
    assert code == 0
    assert "ValidatingWebhookConfiguration" in capsys.readouterr().out
