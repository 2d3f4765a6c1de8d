"""How a server of the list/watch API is started and stopped by ``async with``.

Role: the lifecycle the fake API server and the caching proxy share. Input: a subclass's
:meth:`Server.start` (listen; return once requests are answered) and :meth:`Server.close`
(stop answering, end every watch, release the port). Output: ``async with server:``,
which starts on entry and closes on exit, whatever ends the block.

Task model: both methods run on the caller's event loop; this module starts nothing.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["Server"]


class Server(abc.ABC):
    """A server that listens from :meth:`start` to :meth:`close`; ``async with`` calls
    both."""

    @abc.abstractmethod
    async def start(self) -> None:
        """Start listening; return once requests are answered."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop listening and end every open watch."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
