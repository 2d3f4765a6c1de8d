"""How a server of the list/watch API is started and stopped: a
:class:`~aioinformer._kernel.lifecycle.Service` that listens while it runs.

Role: the lifecycle the fake API server and the caching proxy share. Input: a subclass's
:meth:`Server._serving`, an async context manager that listens on entry (returning once
requests are answered) and on exit stops answering, ends every watch and releases the
port. Output: the Service's ``run()``, ``stop()``, states and ``async with server:``
(ready once it listens), and the pair :meth:`Server.start` / :meth:`Server.close` for a
server started in one place and closed in another (a fixture, a test that closes it
mid-body).

Task model: the run is one task (started by ``start()`` or by ``async with``), or the
caller's own (``run()``); whatever the subclass
starts lives inside ``_serving``. The exit of ``_serving`` must finish even when the run
is cancelled (the subclasses use ``finish_regardless``), so that nothing is left
listening.
"""

from __future__ import annotations

import abc
import asyncio
from typing import TYPE_CHECKING, Any

from aioinformer._kernel.lifecycle import Service

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    import anyio.abc

__all__ = ["Server"]


class Server(Service, abc.ABC):
    """A server that listens while it runs (see the module notes)."""

    _stop_requested: asyncio.Event | None = None
    """Set by :meth:`stop`; made on first use (a server is built outside a loop)."""

    @abc.abstractmethod
    def _serving(self) -> AbstractAsyncContextManager[None]:
        """Listen on entry, return once requests are answered; on exit, stop answering,
        end every open watch and release the port, even if cancelled meanwhile."""

    def _stop_event(self) -> asyncio.Event:
        event = self._stop_requested
        if event is None:
            event = self._stop_requested = asyncio.Event()
        return event

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[Any]) -> None:
        async with self._serving():
            task_status.started()
            await self._stop_event().wait()

    def _request_stop(self) -> None:
        self._stop_event().set()

    async def start(self) -> None:
        """Start listening, in a run of its own; return once requests are answered.
        Raises what made the start fail, with nothing left listening; runs once
        (``RuntimeError`` after). :meth:`close` ends it."""
        await self._start_in_task()

    async def close(self) -> None:
        """Stop listening and end every open watch; return once done: :meth:`aclose`
        under the name asyncio's servers use. Idempotent, and safe inside ``async with``.
        A caller cancelled while it waits still gets all of it done before the
        cancellation is raised. Raises what made a run begun by :meth:`start` fail
        (``async with`` raises it from the block)."""
        await self.aclose()
