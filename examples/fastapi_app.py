"""A FastAPI service answering from informer caches, with an honest ``/readyz``.

* The informers live in the app's lifespan: they start with the app (one LIST and one
  WATCH per resource, shared by every request) and stop with it, closing their
  connections. Startup does not wait for them to sync: ``/readyz`` tells when to send
  traffic.
* Endpoints read listers only: no request ever reaches the API server, so they are fast
  and cannot overload it. The answers are a cache, a watch latency behind the cluster.
  What a lister returns is a read-only view (:class:`aioinformer.ObjectView`, a
  ``Mapping``): the list endpoint reads a few fields of each, which decodes nothing, and
  the get endpoint answers with the object's JSON as the server sent it
  (``obj.to_json()``), without decoding it at all.
* ``/readyz`` and ``/livez`` come from :func:`aioinformer.contrib.fastapi.health_router`.
  ``/readyz`` answers 200 only while every informer is *live*: synced, watching, and
  heard from the server (an event or a bookmark) within three quarters of its watch's
  inactivity deadline. While a watch is down (backing off, relisting) or its stream has
  gone silent, the cache may be missing changes and it answers 503, with each informer's
  state, seconds since it was heard and last error, so a load balancer takes the pod
  out of rotation until the reflector has re-watched. ``/livez`` answers 503 only once
  an informer has stopped for good: a stale cache heals itself and is no reason for the
  kubelet to restart the pod.
* ``/metrics`` serves the Prometheus metrics of the informers (lists, watches, seconds
  since each reflector heard from the server, handler latency, ...) from a registry of
  the app's own; the lifespan installs the provider before the informers exist, as it
  must, and uninstalls it as the app stops.

Runs against the embedded fake API server, driving the app in-process through httpx::

    python examples/fastapi_app.py

Its tests, ``test_fastapi_app.py`` next to this file, drive it with Starlette's
``TestClient`` in sync tests (the fake served from a thread of its own) and with httpx
in an async one::

    pytest examples/test_fastapi_app.py

Serve it for real (a kubeconfig or in-cluster credentials, any ASGI server)::

    uvicorn examples.fastapi_app:app
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from aioinformer import set_metrics_provider
from aioinformer.client import Client
from aioinformer.contrib.fastapi import health_router
from aioinformer.contrib.prometheus import PrometheusMetricsProvider
from aioinformer.factory import SharedInformerFactory
from aioinformer.testing import FakeAPIServer
from aioinformer.transforms import strip_managed_fields

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from aioinformer import Clock
    from aioinformer.informer import SharedIndexInformer

RESOURCES = {"pods": "v1/pods", "configmaps": "v1/configmaps"}
"""The informers the app runs: URL name -> resource."""


def summary(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "namespace": meta.get("namespace"),
        "name": meta["name"],
        "resourceVersion": meta.get("resourceVersion"),
        "labels": meta.get("labels", {}),
    }


def create_app(
    client_factory: Callable[[], Client] = Client.from_env,
    *,
    namespace: str | None = None,
    clock: Clock | None = None,
) -> FastAPI:
    """The app. ``client_factory`` is called at startup (``Client.from_env`` by
    default); ``namespace`` limits the informers to one namespace; ``clock`` drives the
    informers' timers (tests pass a ``FakeClock``)."""

    registry = CollectorRegistry()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Reflectors and handlers pick the installed provider up as they are created.
        set_metrics_provider(PrometheusMetricsProvider(registry=registry))
        try:
            async with client_factory() as client:
                factory = SharedInformerFactory(
                    client, namespace=namespace, transform=strip_managed_fields, clock=clock
                )
                app.state.informers = {
                    name: factory.informer_for(resource) for name, resource in RESOURCES.items()
                }
                app.state.factory = factory
                async with factory:
                    yield
        finally:
            set_metrics_provider(None)

    app = FastAPI(title="aioinformer cache service", lifespan=lifespan)
    # The factory is built in the lifespan, after the routes: the router asks for it on
    # each probe, and reports "not started" until it exists.
    app.include_router(health_router(lambda: getattr(app.state, "factory", None)))

    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        # Declared before the catch-all /{resource} route below, so it wins.
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    def informer_of(request: Request, resource: str) -> SharedIndexInformer:
        informers: dict[str, SharedIndexInformer] = request.app.state.informers
        informer = informers.get(resource)
        if informer is None:
            raise HTTPException(status_code=404, detail=f"no informer for {resource!r}")
        return informer

    @app.get("/{resource}")
    async def list_objects(
        request: Request,
        resource: str,
        namespace: str | None = None,
        selector: str | None = None,
    ) -> list[dict[str, Any]]:
        lister = informer_of(request, resource).lister()
        try:
            objs = lister.list(namespace=namespace, label_selector=selector)
        except ValueError as exc:  # a selector that does not parse
            raise HTTPException(status_code=400, detail=str(exc)) from exc
        return sorted((summary(obj) for obj in objs), key=lambda s: (s["namespace"], s["name"]))

    @app.get("/{resource}/{namespace}/{name}")
    async def get_object(request: Request, resource: str, namespace: str, name: str) -> Response:
        obj = informer_of(request, resource).lister().get(name, namespace=namespace)
        if obj is None:
            raise HTTPException(status_code=404, detail=f"{resource} {namespace}/{name} not found")
        # A compact cache's view holds the bytes the server sent: answer with them as they
        # are. (Returning the view itself works too, through FastAPI's jsonable_encoder,
        # but not with a ``-> dict[str, Any]`` annotation: pydantic cannot serialise the
        # view's metadata. A ``cache="objects"`` informer gives dicts, with no to_json.)
        return Response(obj.to_json(), media_type="application/json")

    return app


app = create_app()
"""The app for an ASGI server (``uvicorn examples.fastapi_app:app``)."""


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


async def demo() -> None:
    """Serve the app in-process against the fake API server and query it."""
    import httpx  # the demo's HTTP client; the app itself does not need it

    async with FakeAPIServer() as server:
        server.create(pod("web-0", app="web"))
        server.create(pod("web-1", app="web"))
        server.create(pod("db-0", app="db"))
        service = create_app(server.client)
        transport = httpx.ASGITransport(app=service)
        async with (
            service.router.lifespan_context(service),
            httpx.AsyncClient(transport=transport, base_url="http://service") as http,
        ):
            async with asyncio.timeout(10):
                # Polling is the point here: it is what a kubelet readiness probe does.
                while (ready := await http.get("/readyz")).status_code != 200:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            print("readyz:", ready.status_code, ready.json()["ready"])
            pods = (await http.get("/pods", params={"selector": "app=web"})).json()
            print("pods app=web:", [p["name"] for p in pods])
            one = await http.get("/pods/default/db-0")
            print("db-0 labels:", one.json()["metadata"]["labels"])
            missing = await http.get("/pods/default/nope")
            print("nope:", missing.status_code)


if __name__ == "__main__":
    asyncio.run(demo())
