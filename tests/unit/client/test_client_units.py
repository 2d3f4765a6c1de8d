"""The client package's own units: path building in ``_names`` (no name escapes its
segment) and the read deadlines the HTTP layer sets (request timeout for an ordinary
answer, none for a stream unless asked)."""

from __future__ import annotations

import asyncio
from urllib.parse import unquote

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from aioinformer.client import GVR, Client, ResourceInfo
from aioinformer.client._names import check_namespace, check_subresource
from aioinformer.config import Config
from aioinformer.errors import TransportError
from tests._support_http import serve

PODS = ResourceInfo(gvr=GVR("", "v1", "pods"), kind="Pod", namespaced=True)
WIDGETS = ResourceInfo(gvr=GVR("example.com", "v1", "widgets"), kind="Widget", namespaced=False)


@given(st.text(min_size=1, max_size=40))
def test_an_accepted_object_name_is_exactly_one_path_segment(name: str) -> None:
    try:
        path = PODS.object_path(name, "default")
    except ValueError:
        assert name in (".", "..") or "/" in name or "%" in name
        return
    prefix = "/api/v1/namespaces/default/pods/"
    assert path.startswith(prefix)
    segment = path.removeprefix(prefix)
    assert "/" not in segment
    assert unquote(segment) == name


@pytest.mark.parametrize(
    ("namespace", "accepted"),
    [
        pytest.param("default", True, id="plain"),
        pytest.param("kube-system", True, id="dash"),
        pytest.param("a" * 63, True, id="63-characters"),
        pytest.param("a" * 64, False, id="64-characters"),
        pytest.param("Default", False, id="upper-case"),
        pytest.param("-lead", False, id="leading-dash"),
        pytest.param("a/b", False, id="slash"),
        pytest.param("", False, id="empty"),
    ],
)
def test_namespaces_must_be_dns_labels(namespace: str, accepted: bool) -> None:
    if accepted:
        assert check_namespace(namespace) == namespace
    else:
        with pytest.raises(ValueError, match="DNS-1123"):
            check_namespace(namespace)


@pytest.mark.parametrize(
    ("subresource", "accepted"),
    [
        pytest.param("status", True, id="status"),
        pytest.param("ephemeralcontainers", True, id="long-word"),
        pytest.param("Status", False, id="upper-case"),
        pytest.param("status/x", False, id="slash"),
        pytest.param("", False, id="empty"),
    ],
)
def test_subresources_must_be_one_lowercase_word(subresource: str, accepted: bool) -> None:
    if accepted:
        assert check_subresource(subresource) == subresource
    else:
        with pytest.raises(ValueError, match="lowercase word"):
            check_subresource(subresource)


def test_a_cluster_scoped_resource_ignores_the_namespace() -> None:
    assert WIDGETS.collection_path("default") == "/apis/example.com/v1/widgets"
    assert WIDGETS.object_path("w", None, "status") == "/apis/example.com/v1/widgets/w/status"


async def stalled(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    response.content_type = "application/json"
    await response.prepare(request)
    await response.write(b"{")
    await asyncio.Event().wait()
    return response


async def test_an_ordinary_request_is_held_to_the_request_timeout() -> None:
    app = web.Application()
    app.router.add_get("/api", stalled)
    async with serve(app) as url, Client(Config(host=url), request_timeout=0.2) as client:
        async with asyncio.timeout(10):
            with pytest.raises(TransportError, match="read timeout"):
                await client.request("GET", "/api")


async def test_client_stream_defaults_its_read_deadline_to_the_request_timeout() -> None:
    app = web.Application()
    app.router.add_get("/api", stalled)
    loop = asyncio.get_running_loop()
    async with (
        serve(app) as url,
        Client(Config(host=url), request_timeout=0.2) as client,
        client.stream("GET", "/api") as response,
    ):
        started = loop.time()
        # The caller reads the body itself, so aiohttp's own read timeout reaches it.
        with pytest.raises(TimeoutError):
            await response.content.read()
        assert loop.time() - started < 5.0
