"""Small HTTP endpoints for probes and metrics, served with aiohttp.web.

Role: the manager's ``/healthz``, ``/readyz`` and ``/metrics`` listeners (controller-runtime's
``HealthProbeBindAddress`` and ``Metrics.BindAddress``). Input: an address
``"host:port"`` (port 0 picks a free port; ``":8081"`` listens on every interface, as in
controller-runtime) and a table of paths to answer functions. Output: a listening
socket answering ``GET`` on those paths; anything else is 404, another method 405.

Task model: aiohttp's server runs on the caller's event loop; :meth:`HttpEndpoint.start`
returns once the socket listens, :meth:`HttpEndpoint.close` once it is closed and every
connection to it has ended. An answer function is called on the event loop, per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

__all__ = ["Answer", "HttpEndpoint", "parse_address"]


@dataclass(frozen=True, slots=True)
class Answer:
    """One HTTP answer: status, body and content type."""

    status: int
    body: bytes
    content_type: str = "application/json"


def parse_address(address: str, *, option: str) -> tuple[str, int]:
    """``"host:port"`` as ``(host, port)``; an empty host means every interface.

    Raises ``ValueError`` naming ``option`` for anything else (no port, a port that is not
    a number in 0..65535)."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"{option} must be 'host:port' (port 0 picks a free one), got {address!r}")
    return host.strip("[]") or "0.0.0.0", int(port_text)


class HttpEndpoint:
    """An aiohttp server answering ``GET`` on a fixed set of paths (see the module)."""

    def __init__(
        self, name: str, address: str, routes: Mapping[str, Callable[[], Awaitable[Answer]]]
    ) -> None:
        self.name = name
        self._host, self._port = parse_address(address, option=f"{name} address")
        self._routes = dict(routes)
        self._runner: web.AppRunner | None = None
        # The bound "host:port", from start() until close().
        self._bound: str | None = None

    @property
    def address(self) -> str | None:
        """The bound ``"host:port"`` (the real port when 0 was asked) while serving."""
        return self._bound

    async def start(self) -> None:
        """Listen. Raises ``OSError`` when the address cannot be bound."""
        app = web.Application()
        for path, answer in self._routes.items():
            app.router.add_get(path, self._handler(answer), allow_head=False)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        port = sockets[0].getsockname()[1] if sockets else self._port
        self._bound = f"{self._host}:{port}"

    @staticmethod
    def _handler(
        answer: Callable[[], Awaitable[Answer]],
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            result = await answer()
            content_type, _, charset = result.content_type.partition("; charset=")
            return web.Response(
                status=result.status,
                body=result.body,
                content_type=content_type,
                charset=charset or None,
            )

        return handle

    async def close(self) -> None:
        """Stop listening and close every connection. Idempotent."""
        runner, self._runner = self._runner, None
        self._bound = None
        if runner is not None:
            await runner.cleanup()
