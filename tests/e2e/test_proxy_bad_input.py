"""Bad downstream input gets the answers kube-apiserver gives: for each malformed request,
the caching proxy's status code and ``Status`` body (reason, code, message) equal what the
fake API server, which answers as kube-apiserver v1.36 does, says to the same request.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from aioinformer.proxy import CachingProxy
from aioinformer.testing import FakeAPIServer
from aioinformer.testing.apiserver import ADMIN_TOKEN
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"

BAD_REQUESTS = {
    "limit not a number": f"{CONFIGMAPS}?limit=abc",
    "negative limit": f"{CONFIGMAPS}?limit=-1",
    "timeoutSeconds not a number": f"{CONFIGMAPS}?watch=1&timeoutSeconds=x",
    "resourceVersion not a number": f"{CONFIGMAPS}?resourceVersion=abc",
    "watch resourceVersion not a number": f"{CONFIGMAPS}?watch=1&resourceVersion=abc",
    "unknown resourceVersionMatch": f"{CONFIGMAPS}?resourceVersion=1&resourceVersionMatch=Bogus",
    "resourceVersionMatch without resourceVersion": f"{CONFIGMAPS}?resourceVersionMatch=Exact",
    "label selector that does not parse": f"{CONFIGMAPS}?labelSelector=a%20in%20(b",
    "field selector that does not parse": f"{CONFIGMAPS}?fieldSelector=metadata.name",
    "unsupported field selector": f"{CONFIGMAPS}?fieldSelector=spec.nodeName%3Dn1",
    "continue token that does not decode": f"{CONFIGMAPS}?limit=1&continue=garbage",
    "sendInitialEvents without bookmarks": f"{CONFIGMAPS}?watch=1&sendInitialEvents=true"
    "&resourceVersionMatch=NotOlderThan",
    "unknown resource": "/api/v1/namespaces/default/widgets",
    "unknown group": "/apis/nope.example.com/v1/things",
    "unknown object": f"{CONFIGMAPS}/absent",
    "resourceVersion from the future": f"{CONFIGMAPS}?resourceVersion=999999"
    "&resourceVersionMatch=NotOlderThan",
}


@pytest.fixture
async def server() -> AsyncIterator[FakeAPIServer]:
    async with FakeAPIServer() as server:
        for i in range(3):
            server.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{i}", "namespace": "default"},
                }
            )
        yield server


@contextlib.asynccontextmanager
async def proxy_of(server: FakeAPIServer, **options: Any) -> AsyncIterator[CachingProxy]:
    async with (
        server.client() as upstream,
        CachingProxy(upstream, resources=["v1/configmaps"], **options) as proxy,
    ):
        yield proxy


async def answer(http: aiohttp.ClientSession, url: str, token: str | None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with http.get(url, headers=headers) as response:
        body = await response.json(content_type=None)
        return response.status, body


def status_of(body: Any) -> dict[str, Any]:
    return {key: body.get(key) for key in ("kind", "status", "reason", "code", "message")}


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
async def test_bad_requests_get_the_api_servers_answers(case: str, server: FakeAPIServer) -> None:
    path = BAD_REQUESTS[case]
    async with proxy_of(server) as proxy, aiohttp.ClientSession() as http:
        fake_code, fake_body = await answer(http, server.url + path, ADMIN_TOKEN)
        proxy_code, proxy_body = await answer(http, proxy.url + path, None)
    assert 400 <= fake_code < 600, fake_body
    assert (proxy_code, status_of(proxy_body)) == (fake_code, status_of(fake_body))


@pytest.mark.parametrize("token", [None, "wrong", ""])
async def test_missing_or_wrong_tokens_are_unauthorized_as_upstream(
    token: str | None, server: FakeAPIServer
) -> None:
    async with proxy_of(server, tokens=["right"]) as proxy, aiohttp.ClientSession() as http:
        fake_code, fake_body = await answer(http, server.url + CONFIGMAPS, token)
        proxy_code, proxy_body = await answer(http, proxy.url + CONFIGMAPS, token)
        assert (await answer(http, proxy.url + CONFIGMAPS, "right"))[0] == 200
        # Health needs no token; everything else does, discovery included.
        async with http.get(proxy.url + "/healthz") as health:
            assert health.status == 200
        assert (await answer(http, proxy.url + "/api", token))[0] == 401
    assert fake_code == 401
    assert (proxy_code, status_of(proxy_body)) == (fake_code, status_of(fake_body))


async def test_writes_denied_with_the_api_servers_method_not_allowed(
    server: FakeAPIServer,
) -> None:
    async with proxy_of(server) as proxy, aiohttp.ClientSession() as http:
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            path = CONFIGMAPS if method == "POST" else f"{CONFIGMAPS}/cm-0"
            async with http.request(method, proxy.url + path, json={}) as response:
                assert response.status == 405
                body = await response.json()
            assert status_of(body) == {
                "kind": "Status",
                "status": "Failure",
                "reason": "MethodNotAllowed",
                "code": 405,
                "message": "the server does not allow this method on the requested resource",
            }
    assert len(server.objects("configmaps")) == 3
