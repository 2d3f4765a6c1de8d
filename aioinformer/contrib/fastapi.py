"""``/readyz`` and ``/livez`` for FastAPI and Starlette apps, from informer health.

Role: serves :mod:`aioinformer.health` over HTTP for a kubelet's probes. Input: a
*source* of informers, looked up on every request: a
:class:`~aioinformer.factory.SharedInformerFactory`, one
:class:`~aioinformer.informer.SharedIndexInformer`, a mapping of names to informers, or
a zero-argument callable returning one of those, or ``None`` while there is none yet (an
app usually builds its factory in its lifespan, after its routes are made). Output: two
``GET`` routes answering JSON, the source's :meth:`FactoryHealth.as_dict
<aioinformer.health.FactoryHealth.as_dict>`:

* ``/readyz``: 200 while ``ready`` (started, every informer synced and heard from within
  its liveness window), else 503 with the same body, which says which informer is not
  and why (``state``, ``seconds_since_heard``, ``last_error``). A load balancer then
  stops sending traffic while a cache may be missing changes.
* ``/livez``: 200 while ``live`` (no informer has stopped), else 503. A stale cache
  heals itself (the reflector re-watches and relists) and does not fail this probe; an
  informer whose run ended never comes back, and a restart does.

A source that is ``None`` is not started: not ready, live. The rules are
:mod:`aioinformer.health`'s. Task model: each request computes the health on the event
loop that runs the informers (the endpoints are coroutines, never run in a worker
thread); nothing is cached or started.

Requires Starlette, and for :func:`health_router` FastAPI (``pip install
aioinformer[fastapi]``); FastAPI is imported only when a router is made. Example::

    from aioinformer.contrib.fastapi import health_router

    app = FastAPI(lifespan=lifespan)          # the lifespan sets app.state.factory
    app.include_router(health_router(lambda: getattr(app.state, "factory", None)))

With Starlette: ``Starlette(routes=[*health_routes(factory), ...])``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeAlias

from starlette.responses import JSONResponse
from starlette.routing import Route

from aioinformer.factory import SharedInformerFactory
from aioinformer.health import FactoryHealth
from aioinformer.informer import SharedIndexInformer

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from fastapi import APIRouter
    from starlette.requests import Request
    from starlette.routing import BaseRoute

__all__ = ["HealthSource", "health_of", "health_router", "health_routes"]

Informers: TypeAlias = (
    SharedInformerFactory | SharedIndexInformer | Mapping[str, SharedIndexInformer] | None
)
HealthSource: TypeAlias = Informers | Callable[[], Informers]
"""What the endpoints report on: informers, or a callable returning them (or ``None``)."""


def health_of(source: HealthSource) -> FactoryHealth:
    """The health of ``source`` (see the module docstring for what it may be); a single
    informer or a mapping counts as started once every informer in it has."""
    informers = source() if callable(source) else source
    if informers is None:
        return FactoryHealth.of({}, started=False)
    if isinstance(informers, SharedInformerFactory):
        return informers.health()
    if isinstance(informers, SharedIndexInformer):
        return FactoryHealth.of({informers.name: informers.health()})
    if isinstance(informers, Mapping):
        return FactoryHealth.of({name: inf.health() for name, inf in informers.items()})
    raise TypeError(
        "a health source is a SharedInformerFactory, a SharedIndexInformer, a mapping of "
        f"informers or a callable returning one, not {type(informers).__name__}"
    )


def _probe(
    source: HealthSource, passed: Callable[[FactoryHealth], bool]
) -> Callable[[Request], Awaitable[JSONResponse]]:
    # A coroutine on purpose: Starlette runs plain functions in a worker thread, and
    # the informers' state belongs to the event loop's thread.
    async def endpoint(request: Request) -> JSONResponse:
        health = health_of(source)
        return JSONResponse(health.as_dict(), status_code=200 if passed(health) else 503)

    return endpoint


def health_routes(
    source: HealthSource, *, readyz: str = "/readyz", livez: str = "/livez"
) -> list[BaseRoute]:
    """The two probe routes, for a Starlette app (or any router taking Starlette
    routes); ``readyz``/``livez`` are their paths."""
    return [
        Route(readyz, _probe(source, lambda h: h.ready), methods=["GET"], name="readyz"),
        Route(livez, _probe(source, lambda h: h.live), methods=["GET"], name="livez"),
    ]


def health_router(
    source: HealthSource, *, readyz: str = "/readyz", livez: str = "/livez"
) -> APIRouter:
    """The two probe routes as a FastAPI router: ``app.include_router(...)`` it."""
    from fastapi import APIRouter  # only here: Starlette users need not install FastAPI

    return APIRouter(routes=health_routes(source, readyz=readyz, livez=livez))
