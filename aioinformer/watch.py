"""The watch-stream reader: chunked HTTP body in, :class:`WatchEvent` out.

Role: the hot path between the socket and a reflector. Input: the body of a ``?watch=1``
response, one JSON object per line (``{"type": ..., "object": {...}}``), arriving in
chunks whose boundaries fall anywhere. Output: one :class:`WatchEvent` per line, in stream
order, each decoded with a single ``orjson.loads``; or, for a compact cache
(``compact=True``), an event whose object is a :class:`~aioinformer._raw.RawObject`: the
object's bytes and its head, read by msgspec without decoding the rest (bookmarks and
anything unusual are still decoded whole).

Framing is done here rather than with ``StreamReader.readline()``, which refuses lines
over 128 KiB (a large Secret or ConfigMap is bigger): :class:`WatchStreamDecoder` keeps the
unfinished tail of the previous chunks and scans each byte once.

Failures, raised from the iterator after every complete event before them was yielded:

* an ``ERROR`` event whose object is a ``Status`` becomes the matching
  :class:`~aioinformer.errors.ApiError` (410 → :class:`~aioinformer.errors.Gone`); an
  ``ERROR`` without a usable ``Status`` becomes a :class:`~aioinformer.errors.WatchError`;
* a line that is not JSON, or not a watch event, and a body that ends mid-line become a
  :class:`~aioinformer.errors.WatchError` (the reflector re-watches);
* a line longer than ``max_line_bytes`` (default :data:`DEFAULT_MAX_LINE_BYTES`) becomes a
  :class:`~aioinformer.errors.WatchError` naming the limit, as soon as the unfinished line
  passes it: a server announcing a huge object never gets it buffered whole;
* silence past a read deadline (aiohttp's ``sock_read`` timeout, which the client sets
  only when asked to; a reflector keeps its own) becomes
  :class:`~aioinformer.errors.WatchTimeout`.

:class:`WatchStream` wraps the same generator and also says, through ``opened``, whether
the server answered the request with a 2xx: a stream that breaks before its first event
is then an open watch ending, not a failed request.

Task model: :func:`read_watch_stream` is an async generator run by the consuming task.
Closing it (``aclose()``), cancelling the consumer, or any failure closes the HTTP
connection instead of returning it to the pool. Nothing is logged per event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import orjson

from aioinformer._raw import decode_watch_line
from aioinformer._transport import map_transport_errors
from aioinformer.errors import AioinformerError, WatchError
from aioinformer.errors import error_from_watch_status as error_from_watch_status
from aioinformer.listwatch import WatchEvent

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
    from contextlib import AbstractAsyncContextManager

    import aiohttp

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "WatchStream",
    "WatchStreamDecoder",
    "error_from_watch_status",
    "read_watch_stream",
]

CHUNK_SIZE: Final = 256 * 1024
"""Largest chunk asked of aiohttp at a time; lines longer than this span several."""

DEFAULT_MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""Longest watch line (one event) accepted by default: 64 MiB. Generous on purpose:
kube-apiserver refuses request bodies over 3 MiB and etcd objects over about 1.5 MiB."""

_NEWLINE: Final = b"\n"


class WatchStreamDecoder:
    """Splits a watch body into lines and decodes each into a :class:`WatchEvent`.

    ``feed(chunk)`` yields the events completed by ``chunk``. At the first failure
    (garbage line, ``ERROR`` event) it sets ``failure`` and ignores everything after it;
    the caller passes on the events yielded, then raises ``failure``. ``finish()`` at the
    end of the body reports a truncated last line. A line longer than ``max_line_bytes``
    is a failure too, detected while the line is still arriving.
    """

    __slots__ = ("_compact", "_max_line", "_pending", "_pending_size", "_url", "failure")

    def __init__(
        self,
        *,
        url: str = "",
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        compact: bool = False,
    ) -> None:
        if max_line_bytes <= 0:
            raise ValueError(f"max_line_bytes must be positive, got {max_line_bytes!r}")
        self._url = url
        # Objects of ADDED/MODIFIED/DELETED events become RawObjects.
        self._compact = compact
        self._max_line = max_line_bytes
        # Parts of the line being assembled, in order; none of them contains b"\n".
        self._pending: list[bytes] = []
        # The total length of _pending's parts; never above _max_line while sound.
        self._pending_size = 0
        self.failure: AioinformerError | None = None
        """The first failure met; ``None`` while the stream is sound."""

    def feed(self, chunk: bytes) -> Iterator[WatchEvent]:
        """Consume one chunk; yield the events whose lines it completes, one at a time.

        Iterate the result to the end before the next ``feed()``: the events are decoded
        lazily, so that only the one being handled is alive (holding a chunk's worth of
        decoded objects at once costs the garbage collector dearly).
        """
        if self.broken:
            return
        find = chunk.find
        end = find(_NEWLINE)
        if end < 0:
            if chunk:
                self._hold(chunk)
            return
        start = 0
        max_line = self._max_line
        if self._pending:
            if self._pending_size + end > max_line:
                self._too_long(self._pending_size + end)
                return
            self._pending.append(chunk[:end])
            event = self._decode(self._take_pending())
            if event is not None:
                yield event
            if self.failure is not None:
                return
            start = end + 1
            end = find(_NEWLINE, start)
        loads = orjson.loads
        compact = self._compact
        while end >= 0:
            if end - start > max_line:
                self._too_long(end - start)
                return
            if end > start:
                # The common case inline (one slice, one decode, two lookups); anything
                # unusual goes through _careful, which classifies it.
                line = chunk[start:end]
                if compact:
                    decoded = decode_watch_line(line)
                    event = WatchEvent(*decoded) if decoded is not None else self._careful(line)
                else:
                    try:
                        raw = loads(line)
                        kind = raw["type"]
                        obj = raw["object"]
                    except (orjson.JSONDecodeError, TypeError, KeyError):
                        kind = None
                    if type(kind) is str and kind != "ERROR" and type(obj) is dict:
                        event = WatchEvent(kind, obj)
                    else:
                        event = self._careful(line)
                if event is not None:
                    yield event
                elif self.failure is not None:
                    return
            start = end + 1
            end = find(_NEWLINE, start)
        if start < len(chunk):
            self._hold(chunk[start:])

    def _hold(self, part: bytes) -> None:
        """Keep ``part`` of the unfinished line, or fail once the line is too long."""
        size = self._pending_size + len(part)
        if size > self._max_line:
            self._too_long(size)
            return
        self._pending.append(part)
        self._pending_size = size

    def _take_pending(self) -> bytes:
        """The unfinished line held so far, removed from the buffer."""
        line = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        return line

    def _too_long(self, size: int) -> None:
        # What was buffered goes at once: the rest of the stream is ignored anyway.
        self._pending.clear()
        self._pending_size = 0
        self.failure = WatchError(
            f"watch on {self._url} sent a line of at least {size} bytes, over the limit "
            f"of {self._max_line} bytes"
        )

    @property
    def broken(self) -> bool:
        """Whether a failure was met (the rest of the stream is ignored)."""
        return self.failure is not None

    def _decode(self, line: bytes) -> WatchEvent | None:
        """Decode one line: the event, or ``None`` for a blank line or a failure (then
        ``failure`` is set)."""
        if self._compact:
            decoded = decode_watch_line(line)
            if decoded is not None:
                return WatchEvent(*decoded)
        return self._careful(line)

    def _careful(self, line: bytes) -> WatchEvent | None:
        """Decode one line whole and classify it: the event, or ``None`` for a blank line
        or a failure (then ``failure`` is set)."""
        try:
            raw = orjson.loads(line)
        except orjson.JSONDecodeError:
            if not line.strip():
                return None  # a blank line (e.g. "\r\n" framing) carries nothing
            # The line is not quoted: it may hold Secret data.
            self.failure = WatchError(
                f"watch on {self._url} sent a line that is not JSON ({len(line)} bytes)"
            )
            return None
        try:
            kind = raw["type"]
            obj = raw["object"]
        except (TypeError, KeyError):
            self.failure = WatchError(f"watch on {self._url} sent a line that is not an event")
            return None
        if kind == "ERROR":
            self.failure = error_from_watch_status(obj, url=self._url)
            return None
        if type(kind) is not str or type(obj) is not dict:
            self.failure = WatchError(f"watch on {self._url} sent a malformed event")
            return None
        return WatchEvent(kind, obj)

    def finish(self) -> None:
        """At the end of the body: raise :class:`WatchError` if a line was cut short."""
        if self.failure is None and self._pending:
            tail = self._take_pending()
            if tail.strip():
                raise WatchError(
                    f"watch on {self._url} ended in the middle of a line ({len(tail)} bytes)"
                )


class _Acceptance:
    """Whether a watch's request was answered with a 2xx; shared by a :class:`WatchStream`
    and its generator (the generator holding the stream itself would be a cycle, and an
    async generator in a cycle is only finalised by the cyclic collector)."""

    __slots__ = ("opened",)

    def __init__(self) -> None:
        self.opened = False


def read_watch_stream(
    open_response: Callable[[], AbstractAsyncContextManager[aiohttp.ClientResponse]],
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    compact: bool = False,
) -> AsyncGenerator[WatchEvent, None]:
    """Open a watch with ``open_response()`` and yield its events until the body ends.

    ``open_response`` returns an async context manager yielding a 2xx response (the
    client's request path, which maps HTTP errors and releases the connection on exit).
    Ending normally means the server closed the watch (e.g. ``timeoutSeconds`` elapsed).
    A line longer than ``max_line_bytes`` raises :class:`WatchError`. With ``compact``
    the objects of ``ADDED``/``MODIFIED``/``DELETED`` events are
    :class:`~aioinformer._raw.RawObject`. :class:`WatchStream` is the same stream saying
    whether the server accepted the request.
    """
    return _events(open_response, _Acceptance(), max_line_bytes, compact)


class WatchStream:
    """A watch's events (as :func:`read_watch_stream` yields them) and whether the server
    accepted the request: :attr:`opened` turns true once a 2xx answer's headers arrived,
    before the first event.

    A reflector needs the difference: a stream that breaks after it opened is re-watched
    from the same resourceVersion, while a request that failed is a failed list-and-watch.
    ``async for`` reads it; :meth:`aclose` closes the connection. Iterating it (``aiter()``,
    as ``async for`` and a reflector do) hands out the generator itself, so the wrapper
    costs the per-event path nothing; ``__anext__`` on the wrapper works too, at the price
    of one call per event.
    """

    __slots__ = ("_acceptance", "_events")

    def __init__(
        self,
        open_response: Callable[[], AbstractAsyncContextManager[aiohttp.ClientResponse]],
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        compact: bool = False,
    ) -> None:
        self._acceptance = _Acceptance()
        self._events = _events(open_response, self._acceptance, max_line_bytes, compact)

    @property
    def opened(self) -> bool:
        """Whether the server answered the watch request with a 2xx."""
        return self._acceptance.opened

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events

    def __anext__(self) -> Awaitable[WatchEvent]:
        return self._events.__anext__()

    def aclose(self) -> Awaitable[None]:
        """Stop reading and close the connection (idempotent)."""
        return self._events.aclose()


async def _events(
    open_response: Callable[[], AbstractAsyncContextManager[aiohttp.ClientResponse]],
    acceptance: _Acceptance,
    max_line_bytes: int,
    compact: bool,
) -> AsyncGenerator[WatchEvent, None]:
    async with open_response() as response:
        acceptance.opened = True
        url = str(response.url.with_query(None))
        decoder = WatchStreamDecoder(url=url, max_line_bytes=max_line_bytes, compact=compact)
        with map_transport_errors(url, streaming=True):
            async for chunk in response.content.iter_chunked(CHUNK_SIZE):
                for event in decoder.feed(chunk):
                    yield event
                if decoder.failure is not None:
                    raise decoder.failure
            decoder.finish()
