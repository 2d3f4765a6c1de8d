"""``aioinformer proxy``'s arguments and local inputs, in process: the parser's defaults
and refusals, option combinations that cannot work (exit 2 naming the problem), the
``--transform`` import, the token file, the TLS files and the kubeconfig token chosen.
Serving over HTTP (with ``--fake`` and with kubectl) is in ``tests/e2e/test_cli_proxy.py``
and ``tests/e2e/test_proxy_kubectl.py``.
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.cli import log_level, parse_args
from aioinformer.cli._proxy import (
    ProxyOptions,
    ProxyUsageError,
    _prepare,
    load_tokens,
    load_transform,
    run_proxy,
)
from tests._support_tls import make_pki

if TYPE_CHECKING:
    from pathlib import Path


def _usage_exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as raised:
        parse_args(argv)
    assert raised.value.code == 2
    return capsys.readouterr().err


def test_defaults() -> None:
    args = parse_args(["proxy", "--resource", "v1/pods"])
    assert args.resources == ["v1/pods"]
    assert args.listen == "127.0.0.1:8001"
    assert args.writes == "deny"
    assert args.namespace is None
    assert not args.all_namespaces
    assert (args.history_size, args.watcher_buffer, args.sync_timeout) == (10_000, 10_000, 60.0)
    assert log_level(args) == logging.WARNING
    assert log_level(parse_args(["proxy", "--resource", "pods", "-vv"])) == logging.DEBUG


def test_resources_repeat_in_order() -> None:
    args = parse_args(
        ["proxy", "--resource", "v1/endpoints", "--resource", "apps/v1/deployments", "-A"]
    )
    assert args.resources == ["v1/endpoints", "apps/v1/deployments"]
    assert args.all_namespaces


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["proxy"], "--resource"),
        (["proxy", "--resource", "pods", "-n", "a", "-A"], "not allowed with"),
        (["proxy", "--resource", "pods", "--writes", "allow"], "invalid choice"),
        (["proxy", "--resource", "pods", "--history-size", "0"], "must be 1 or more"),
        (["proxy", "--resource", "pods", "--watcher-buffer", "x"], "not an integer"),
        (["proxy", "--resource", "pods", "--sync-timeout", "0"], "must be more than 0"),
    ],
)
def test_parser_refuses(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert message in _usage_exit(argv, capsys)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"resources": ()}, "at least one --resource"),
        ({"fake": True, "kubeconfig": "k.yaml"}, "--fake cannot be combined"),
        ({"fake": True, "context": "prod"}, "--fake cannot be combined"),
        ({"tls_cert": "c.pem"}, "--tls-cert and --tls-key go together"),
        ({"tls_key": "k.pem"}, "--tls-cert and --tls-key go together"),
        ({"tls_ca": "ca.pem"}, "--tls-ca needs --tls-cert"),
        ({"listen": "8001"}, "--listen must be 'host:port'"),
        ({"listen": "127.0.0.1:99999"}, "--listen must be 'host:port'"),
        ({"transform": "rewrite"}, "--transform must be 'module:function'"),
        ({"transform": ":f"}, "--transform must be 'module:function'"),
    ],
)
def test_options_that_cannot_go_together(options: dict[str, Any], message: str) -> None:
    base: dict[str, Any] = {"resources": ("v1/pods",)}
    problem = ProxyOptions(**{**base, **options}).usage_error()
    assert problem is not None
    assert message in problem
    err = io.StringIO()
    assert run_proxy(ProxyOptions(**{**base, **options}), err=err) == 2
    assert err.getvalue() == f"aioinformer: error: {problem}\n"


def test_sound_options_pass() -> None:
    options = ProxyOptions(
        resources=("v1/pods",), listen="[::1]:0", transform="m:f", tls_cert="c", tls_key="k"
    )
    assert options.usage_error() is None


# ---------------------------------------------------------------------------------------
# --transform


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> None:
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_transform_imported_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(
        tmp_path,
        monkeypatch,
        "proxy_rewrites_a",
        "class Rules:\n"
        "    @staticmethod\n"
        "    def mark(obj):\n"
        "        obj['metadata']['labels'] = {'seen': 'yes'}\n"
        "        return obj\n",
    )
    transform = load_transform("proxy_rewrites_a:Rules.mark")
    assert transform({"metadata": {}}) == {"metadata": {"labels": {"seen": "yes"}}}


@pytest.mark.parametrize(
    ("spec", "source", "message"),
    [
        ("proxy_rewrites_missing:f", None, "cannot import the transform's module"),
        ("proxy_rewrites_b:f", "raise RuntimeError('boom')", "RuntimeError: boom"),
        ("proxy_rewrites_c:nope", "def f(o):\n    return o\n", "has no attribute 'nope'"),
        ("proxy_rewrites_d:VALUE", "VALUE = 3\n", "is not callable"),
    ],
)
def test_transform_that_cannot_load(
    spec: str,
    source: str | None,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if source is not None:
        _module(tmp_path, monkeypatch, spec.partition(":")[0], source)
    with pytest.raises(ProxyUsageError, match=message):
        load_transform(spec)
    err = io.StringIO()
    options = ProxyOptions(resources=("v1/pods",), fake=True, transform=spec)
    assert run_proxy(options, err=err) == 2
    assert message in err.getvalue()


# ---------------------------------------------------------------------------------------
# --token-file


def test_tokens_one_per_line_without_blanks_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# the ingress controller\nabc123\n\n  def456  \n#old\n")
    assert load_tokens(str(path)) == ["abc123", "def456"]


def test_token_file_missing_or_empty(tmp_path: Path) -> None:
    with pytest.raises(ProxyUsageError, match="cannot read --token-file"):
        load_tokens(str(tmp_path / "absent"))
    empty = tmp_path / "empty"
    empty.write_text("# nothing yet\n\n")
    with pytest.raises(ProxyUsageError, match="holds no token"):
        load_tokens(str(empty))


# ---------------------------------------------------------------------------------------
# TLS files and the kubeconfig's token


def _tls_files(tmp_path: Path) -> tuple[str, str, str]:
    pki = make_pki()
    issued = pki.ca.issue_cert("127.0.0.1")
    cert = tmp_path / "tls.crt"
    key = tmp_path / "tls.key"
    ca = tmp_path / "ca.crt"
    cert.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    key.write_bytes(issued.private_key_pem.bytes())
    ca.write_text(pki.ca_pem)
    return str(cert), str(key), str(ca)


def test_https_kubeconfig_gets_a_fresh_token_the_proxy_requires(tmp_path: Path) -> None:
    cert, key, ca = _tls_files(tmp_path)
    base = ProxyOptions(
        resources=("v1/pods",), tls_cert=cert, tls_key=key, tls_ca=ca, write_kubeconfig="kc"
    )
    first = _prepare(base)
    second = _prepare(base)
    assert first.ssl_context is not None
    assert first.ca_pem == (tmp_path / "ca.crt").read_text()
    assert first.kubeconfig_token is not None
    assert len(first.kubeconfig_token) >= 40
    assert first.tokens == [first.kubeconfig_token]
    assert second.kubeconfig_token != first.kubeconfig_token


def test_token_file_gives_the_kubeconfig_its_first_token(tmp_path: Path) -> None:
    cert, key, _ = _tls_files(tmp_path)
    tokens = tmp_path / "tokens"
    tokens.write_text("first\nsecond\n")
    serving = _prepare(
        ProxyOptions(
            resources=("v1/pods",),
            tls_cert=cert,
            tls_key=key,
            token_file=str(tokens),
            write_kubeconfig="kc",
        )
    )
    assert serving.tokens == ["first", "second"]
    assert serving.kubeconfig_token == "first"
    # Without --tls-ca the serving certificate is the CA written for clients.
    assert serving.ca_pem == (tmp_path / "tls.crt").read_text()


def test_plain_http_kubeconfig_requires_no_token(tmp_path: Path) -> None:
    serving = _prepare(ProxyOptions(resources=("v1/pods",), write_kubeconfig="kc"))
    assert serving.tokens is None
    assert serving.kubeconfig_token is None
    assert serving.ssl_context is None
    assert (serving.host, serving.port) == ("127.0.0.1", 8001)


def test_unreadable_certificate_is_a_usage_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("not a certificate\n")
    options = ProxyOptions(resources=("v1/pods",), tls_cert=str(bogus), tls_key=str(bogus))
    with pytest.raises(ProxyUsageError, match="cannot load the TLS certificate or key"):
        _prepare(options)
    err = io.StringIO()
    assert run_proxy(options, err=err) == 2
    assert "cannot load the TLS certificate or key" in err.getvalue()
