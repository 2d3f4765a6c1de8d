"""The fake API server's listening socket, its connections and its own timer tasks.

Role: the part of the server's lifecycle that faults and restarts act on. Input is the
request handler to serve, and calls to stop and resume listening (``restart``,
``refuse_connections``); output is an ``aiohttp`` site on 127.0.0.1 whose port stays the
same across stops, so clients reconnect to the address they know.

Ordering: stopping closes the listening socket first, then ends every watch stream and
cuts its connection, then force-closes the other open connections; a stopped listener
refuses connections until :meth:`Listener.start_listening` binds the same port again.

Task model: the ``aiohttp`` runner serves each request in its own task. The only tasks
started here are the server's timers (:meth:`Listener.spawn`, as
:meth:`~aioinformer._kernel.runner.Running.spawn` helpers), kept in a set and cancelled
and reaped by :meth:`Listener.cancel_tasks` when the server closes.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from aioinformer._kernel.runner import Running

if TYPE_CHECKING:
    import ssl
    from collections.abc import Awaitable, Callable, Coroutine

    from aioinformer._kernel.clock import Clock

__all__ = ["Listener"]


class _Clocked(Protocol):
    """The owner whose clock the timers use (read at each use: it may be replaced)."""

    @property
    def clock(self) -> Clock: ...


class Listener:
    """The server's socket and timers; implements the faults' ``ConnectionHost``.

    Invariants: ``_site`` is set iff the server is listening, which needs ``_runner``;
    after the first bind ``port`` is the bound port and never changes (0 before it asks
    the system for a free one); ``_tasks`` holds every spawned timer not yet reaped (those
    that ended are dropped at the next spawn).
    """

    def __init__(
        self,
        owner: _Clocked,
        *,
        port: int,
        on_drop: Callable[[], None],
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._owner = owner
        self.port = port
        # Serves HTTPS with it when set (every bind, restarts included).
        self._ssl_context = ssl_context
        # Ends every watch stream and cuts its connection; runs when listening stops.
        self._on_drop = on_drop
        self._runner: web.AppRunner | None = None
        self._site: web.SockSite | None = None
        self._tasks: set[Running] = set()

    @property
    def clock(self) -> Clock:
        """The server's clock, as it is now."""
        return self._owner.clock

    @property
    def listening(self) -> bool:
        """Whether the socket accepts connections."""
        return self._site is not None

    async def start(self, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> None:
        """Set up the application around ``handler`` and start listening."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", handler)
        self._runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=1.0,
        )
        await self._runner.setup()
        await self.start_listening()

    async def start_listening(self) -> bool:
        """Bind the port (again) and accept connections; ``False`` when already
        listening or not set up."""
        if self._site is not None or self._runner is None:
            return False
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", self.port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        self._site = web.SockSite(self._runner, sock, ssl_context=self._ssl_context)
        await self._site.start()
        return True

    async def stop_listening(self) -> None:
        """Close the listening socket and drop every open connection."""
        if self._site is not None:
            await self._site.stop()
            self._site = None
        self._on_drop()
        server = self._runner.server if self._runner is not None else None
        if server is not None:
            for connection in list(server.connections):
                connection.force_close()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task that :meth:`cancel_tasks` reaps."""
        ended = {timer for timer in self._tasks if timer.done and timer.failure is None}
        self._tasks -= ended
        self._tasks.add(Running.spawn(coro, name="fake API server timer"))

    async def cancel_tasks(self) -> None:
        """Cancel every spawned task, wait for each to finish, then raise the first
        failure among them, if any."""
        timers = list(self._tasks)
        self._tasks.clear()
        for timer in timers:
            timer.cancel()
        for timer in timers:
            await timer.stop()
        failures = [timer.failure for timer in timers if timer.failure is not None]
        if failures:
            raise failures[0]

    async def cleanup(self) -> None:
        """Stop serving: close the socket and the connections left."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._site = None
