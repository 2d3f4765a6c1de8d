"""Small loopback HTTP(S) servers for the client, config and watch tests.

``serve(app)`` runs an ``aiohttp.web`` application on 127.0.0.1 (optionally with TLS) and
yields its base URL; ``discovery_app()`` builds an app answering discovery like a
minimal API server, with request counting so tests can check caching.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
from aiohttp import web

from aioinformer.testing import ADMIN_TOKEN

if TYPE_CHECKING:
    import ssl
    from collections.abc import AsyncIterator, Mapping


@contextlib.asynccontextmanager
async def serve(
    app: web.Application, *, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[str]:
    """Serve ``app`` on 127.0.0.1 with an ephemeral port; yield its base URL."""
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    host, port = runner.addresses[0][:2]
    scheme = "https" if ssl_context is not None else "http"
    try:
        yield f"{scheme}://{host}:{port}"
    finally:
        await runner.cleanup()


def json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=orjson.dumps(data), status=status, content_type="application/json", headers=headers
    )


def status_body(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


CORE_RESOURCES = [
    {
        "name": "pods",
        "singularName": "pod",
        "namespaced": True,
        "kind": "Pod",
        "verbs": ["get", "list", "watch"],
        "shortNames": ["po"],
    },
    {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
    {
        "name": "configmaps",
        "singularName": "configmap",
        "namespaced": True,
        "kind": "ConfigMap",
        "verbs": ["get", "list", "watch"],
        "shortNames": ["cm"],
    },
    {
        "name": "nodes",
        "singularName": "node",
        "namespaced": False,
        "kind": "Node",
        "verbs": ["get", "list", "watch"],
        "shortNames": ["no"],
    },
]

APPS_RESOURCES = [
    {
        "name": "deployments",
        "singularName": "deployment",
        "namespaced": True,
        "kind": "Deployment",
        "verbs": ["get", "list", "watch"],
        "shortNames": ["deploy"],
    },
    {"name": "deployments/scale", "namespaced": True, "kind": "Scale", "verbs": ["get"]},
]


class DiscoveryServer:
    """Discovery of core/v1, apps/v1 and any CRD group added with ``add_group``."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.failing: set[str] = set()
        """Groups whose discovery answers 503, like an aggregated API that is down."""
        self.groups: dict[str, tuple[str, list[dict[str, Any]]]] = {
            "apps": ("v1", APPS_RESOURCES),
        }

    def add_group(self, group: str, version: str, resources: list[dict[str, Any]]) -> None:
        self.groups[group] = (version, resources)

    def install(self, app: web.Application) -> None:
        app.router.add_get("/api", self._api)
        app.router.add_get("/api/v1", self._core)
        app.router.add_get("/apis", self._apis)
        app.router.add_get("/apis/{group}/{version}", self._group_version)

    async def _api(self, request: web.Request) -> web.Response:
        self.hits[request.path] += 1
        return json_response({"kind": "APIVersions", "versions": ["v1"]})

    async def _core(self, request: web.Request) -> web.Response:
        self.hits[request.path] += 1
        return json_response(
            {"kind": "APIResourceList", "groupVersion": "v1", "resources": CORE_RESOURCES}
        )

    async def _apis(self, request: web.Request) -> web.Response:
        self.hits[request.path] += 1
        groups = [
            {
                "name": name,
                "versions": [{"groupVersion": f"{name}/{version}", "version": version}],
                "preferredVersion": {"groupVersion": f"{name}/{version}", "version": version},
            }
            for name, (version, _) in self.groups.items()
        ]
        return json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    async def _group_version(self, request: web.Request) -> web.Response:
        self.hits[request.path] += 1
        group, version = request.match_info["group"], request.match_info["version"]
        if group in self.failing:
            body = status_body(503, "ServiceUnavailable", "the server is currently unable")
            return json_response(body, 503)
        entry = self.groups.get(group)
        if entry is None or entry[0] != version:
            return json_response(status_body(404, "NotFound", "the server could not find it"), 404)
        return json_response(
            {"kind": "APIResourceList", "groupVersion": f"{group}/{version}", "resources": entry[1]}
        )


class Api:
    """Plain-HTTP access to a fake API server: (status, decoded body, headers) per call.

    ``raw`` sends those bytes instead of ``body`` encoded; ``user_agent`` sets the
    User-Agent (the field manager the server records)."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        raw: bytes | None = None,
        params: dict[str, str] | None = None,
        content_type: str = "application/json",
        token: str | None = ADMIN_TOKEN,
        user_agent: str | None = None,
    ) -> tuple[int, Any, dict[str, str]]:
        headers = {"Content-Type": content_type}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if user_agent is not None:
            headers["User-Agent"] = user_agent
        data = raw if raw is not None else orjson.dumps(body) if body is not None else None
        async with self.session.request(
            method, self.url + path, data=data, params=params, headers=headers
        ) as resp:
            payload = await resp.read()
            is_json = payload and resp.content_type == "application/json"
            decoded = orjson.loads(payload) if is_json else payload
            return resp.status, decoded, dict(resp.headers)
