"""The exception tree and the one place third-party errors are translated."""

from __future__ import annotations

import ast
import errno
import pathlib
import re
import socket
import ssl
import sys
from typing import Any

import aiohttp
import orjson
import pytest

import aioinformer.errors as errors_module
from aioinformer.client._transport import (
    BodyTooLarge,
    api_error_from_response,
    map_tls_config_errors,
    map_transport_errors,
)
from aioinformer.errors import (
    AioinformerError,
    AlreadyExists,
    ApiError,
    BadRequest,
    ConfigError,
    Conflict,
    ConnectionFailed,
    Forbidden,
    Gone,
    MethodNotAllowed,
    NotFound,
    ResourceExpired,
    ServerError,
    TLSVerificationError,
    TooManyRequests,
    TransportError,
    Unauthorized,
    UnprocessableEntity,
    WatchError,
    WatchTimeout,
    api_error_from_status,
)
from aioinformer.models import Status

URL = "https://api.example.test:6443/api/v1/pods"


def status(code: int, reason: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": f"m{code}",
        **extra,
    }


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        pytest.param(400, "BadRequest", BadRequest, id="400"),
        pytest.param(401, "Unauthorized", Unauthorized, id="401"),
        pytest.param(403, "Forbidden", Forbidden, id="403"),
        pytest.param(404, "NotFound", NotFound, id="404"),
        pytest.param(409, "Conflict", Conflict, id="409"),
        pytest.param(409, "AlreadyExists", AlreadyExists, id="409-already-exists"),
        pytest.param(410, "Expired", Gone, id="410-expired"),
        pytest.param(410, "", Gone, id="410-without-reason"),
        pytest.param(422, "Invalid", UnprocessableEntity, id="422"),
        pytest.param(429, "TooManyRequests", TooManyRequests, id="429"),
        pytest.param(500, "InternalError", ServerError, id="500"),
        pytest.param(503, "ServiceUnavailable", ServerError, id="503"),
        pytest.param(504, "Timeout", ServerError, id="504-too-large-rv"),
        pytest.param(405, "MethodNotAllowed", MethodNotAllowed, id="405"),
        pytest.param(406, "NotAcceptable", ApiError, id="other-4xx"),
    ],
)
def test_status_bodies_map_to_the_matching_subclass(
    code: int, reason: str, expected: type[ApiError]
) -> None:
    error = api_error_from_response(code, orjson.dumps(status(code, reason)), {})
    assert type(error) is expected
    assert (error.code, error.reason, error.message) == (code, reason, f"m{code}")
    assert error.status["kind"] == "Status"


def test_resource_expired_is_gone() -> None:
    assert ResourceExpired is Gone


def test_retry_after_header_wins_over_status_details() -> None:
    body = orjson.dumps(status(429, details={"retryAfterSeconds": 2}))
    with_header = api_error_from_response(429, body, {"Retry-After": "5"})
    without = api_error_from_response(429, body, {})
    assert isinstance(with_header, TooManyRequests)
    assert isinstance(without, TooManyRequests)
    assert (with_header.retry_after, without.retry_after) == (5.0, 2.0)


def test_unparsable_retry_after_is_ignored() -> None:
    error = api_error_from_response(429, b"", {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert isinstance(error, TooManyRequests)
    assert error.retry_after is None


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        pytest.param(b"<html>upstream down</html>", "upstream down", id="html"),
        pytest.param(b"", "HTTP 502", id="empty"),
        pytest.param(b'{"kind": "Pod"}', '{"kind": "Pod"}', id="json-not-status"),
    ],
)
def test_non_status_bodies_become_a_synthetic_status(body: bytes, fragment: str) -> None:
    error = api_error_from_response(502, body, {})
    assert type(error) is ServerError
    assert error.code == 502
    assert fragment in error.message


def test_api_error_accepts_a_status_model() -> None:
    model = Status.model_validate(status(404, "NotFound", details={"name": "x", "kind": "pods"}))
    error = NotFound(model)
    assert (error.code, error.reason, error.details["name"]) == (404, "NotFound", "x")
    assert (
        api_error_from_status({"code": 409, "reason": "AlreadyExists"}).__class__ is AlreadyExists
    )


# ----------------------------------------------------------------------------- transport


def connection_key() -> Any:
    class Key:
        host = "api.example.test"
        port = 6443
        ssl = True

    return Key()


def raise_inside(exc: BaseException, *, streaming: bool = False) -> AioinformerError:
    with pytest.raises(AioinformerError) as info, map_transport_errors(URL, streaming=streaming):
        raise exc
    return info.value


@pytest.mark.parametrize(
    ("make", "streaming", "expected", "refused"),
    [
        pytest.param(
            lambda: aiohttp.ClientConnectorError(
                connection_key(), ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
            ),
            False,
            ConnectionFailed,
            True,
            id="refused",
        ),
        pytest.param(
            lambda: aiohttp.ClientConnectorError(
                connection_key(), OSError(errno.EHOSTUNREACH, "No route to host")
            ),
            False,
            ConnectionFailed,
            False,
            id="unreachable",
        ),
        pytest.param(
            lambda: aiohttp.ClientConnectorCertificateError(
                connection_key(), ssl.SSLCertVerificationError("certificate verify failed")
            ),
            False,
            TLSVerificationError,
            False,
            id="certificate",
        ),
        pytest.param(
            lambda: ssl.SSLError("bad handshake"), False, TLSVerificationError, False, id="ssl"
        ),
        pytest.param(
            lambda: aiohttp.SocketTimeoutError("t"),
            True,
            WatchTimeout,
            False,
            id="read-timeout-streaming",
        ),
        pytest.param(
            lambda: aiohttp.SocketTimeoutError("t"), False, TransportError, False, id="read-timeout"
        ),
        pytest.param(
            lambda: aiohttp.ConnectionTimeoutError("t"),
            False,
            ConnectionFailed,
            False,
            id="connect-timeout",
        ),
        pytest.param(
            lambda: aiohttp.ClientPayloadError("cut"),
            True,
            WatchError,
            False,
            id="payload-streaming",
        ),
        pytest.param(
            lambda: aiohttp.ServerDisconnectedError(),
            False,
            ConnectionFailed,
            False,
            id="disconnected",
        ),
        pytest.param(
            lambda: ConnectionResetError(errno.ECONNRESET, "reset"),
            True,
            WatchError,
            False,
            id="reset-streaming",
        ),
        pytest.param(
            lambda: ConnectionRefusedError(), False, ConnectionFailed, True, id="os-refused"
        ),
        pytest.param(
            lambda: orjson.JSONDecodeError("bad", "doc", 0), False, TransportError, False, id="json"
        ),
        pytest.param(lambda: TimeoutError(), False, TransportError, False, id="overall-timeout"),
        pytest.param(
            lambda: aiohttp.ClientConnectionError("boom"),
            False,
            ConnectionFailed,
            False,
            id="other-aiohttp",
        ),
    ],
)
def test_transport_errors_are_translated_and_chained(
    make: Any, streaming: bool, expected: type[AioinformerError], refused: bool
) -> None:
    original = make()
    error = raise_inside(original, streaming=streaming)
    assert type(error) is expected
    assert error.__cause__ is original
    assert URL in str(error)
    if isinstance(error, ConnectionFailed):
        assert error.refused is refused


def test_own_errors_and_cancellation_pass_through_untouched() -> None:
    own = NotFound(status(404))
    with pytest.raises(NotFound) as info, map_transport_errors(URL):
        raise own
    assert info.value is own
    with pytest.raises(KeyboardInterrupt), map_transport_errors(URL):
        raise KeyboardInterrupt


def test_real_refused_connection_is_recognised() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    probe = socket.socket()
    try:
        with (
            pytest.raises(ConnectionFailed) as info,
            map_transport_errors(f"http://127.0.0.1:{port}"),
        ):
            probe.connect(("127.0.0.1", port))
    finally:
        probe.close()
    assert info.value.refused


def test_docstring_tree_names_every_exception_class() -> None:
    doc = errors_module.__doc__ or ""
    classes = {
        name
        for name in errors_module.__all__
        if isinstance(getattr(errors_module, name), type)
        and issubclass(getattr(errors_module, name), BaseException)
    }
    drawn = set(re.findall(r"[─ ]([A-Z][A-Za-z]+)", doc))
    assert classes - {"ResourceExpired"} <= drawn


def test_errors_module_imports_nothing_third_party() -> None:
    tree = ast.parse(pathlib.Path(errors_module.__file__ or "").read_text(encoding="utf-8"))
    imported = {
        alias.name.partition(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").partition(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    }
    assert imported - {"__future__", "aioinformer"} <= sys.stdlib_module_names
    # Of the package, only the hook serving the first release's names (an import the
    # layering contract names).
    own = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aioinformer")
    }
    assert own <= {"aioinformer._kernel.moved"}


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: ssl.SSLError("PEM lib"), id="ssl"),
        pytest.param(lambda: FileNotFoundError(2, "No such file", "/no/ca.crt"), id="missing-file"),
        pytest.param(lambda: ValueError("bad cadata"), id="value"),
    ],
)
def test_unusable_tls_material_becomes_a_config_error_without_its_cause(make: Any) -> None:
    with (
        pytest.raises(
            ConfigError, match=r"^kubeconfig: client certificate is not usable: "
        ) as info,
        map_tls_config_errors("kubeconfig", "client certificate"),
    ):
        raise make()
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


def test_tls_config_mapping_lets_other_errors_through() -> None:
    with pytest.raises(KeyError), map_tls_config_errors("kubeconfig", "client certificate"):
        raise KeyError("x")


def test_a_body_too_large_is_a_transport_error() -> None:
    assert issubclass(BodyTooLarge, TransportError)
