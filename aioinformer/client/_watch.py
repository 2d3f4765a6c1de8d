"""The watch-stream reader: chunked HTTP body in, :class:`WatchEvent` out.

Public as :mod:`aioinformer.watch`, whose notes say what it reads, how it frames lines,
what it does with compression and which failures it raises. It lives in the client, the one
side that opens watches, and knows no cache: the usual line is decoded by the
:class:`~aioinformer.listwatch.Decoder` it is given (dicts by default, a compact cache's
entries when an informer hands it its codec).

Task model: :func:`read_watch_stream` is an async generator run by the consuming task.
Closing it, cancelling the consumer, or any failure closes the HTTP connection instead of
returning it to the pool. Nothing is logged per event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import orjson

from aioinformer._objects.raw import OBJECTS_DECODER
from aioinformer.client._encoding import body_reader
from aioinformer.client._transport import map_transport_errors
from aioinformer.errors import AioinformerError, WatchError
from aioinformer.errors import error_from_watch_status as error_from_watch_status
from aioinformer.listwatch import WatchEvent, WatchStreamBase

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator
    from contextlib import AbstractAsyncContextManager

    import aiohttp

    from aioinformer.listwatch import Decoder

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

    __slots__ = ("_codec", "_max_line", "_pending", "_pending_size", "_url", "failure")

    def __init__(
        self,
        *,
        url: str = "",
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        codec: Decoder = OBJECTS_DECODER,
    ) -> None:
        if max_line_bytes <= 0:
            raise ValueError(f"max_line_bytes must be positive, got {max_line_bytes!r}")
        self._url = url
        # Decodes the usual line (ADDED/MODIFIED/DELETED); anything else goes the careful way.
        self._codec = codec
        self._max_line = max_line_bytes
        # Parts of the line being assembled, in order; none of them contains b"\n".
        self._pending: list[bytes] = []
        # The total length of _pending's parts; never above _max_line while sound.
        self._pending_size = 0
        self.failure: AioinformerError | None = None
        """The first failure met; ``None`` while the stream is sound."""

    def feed(self, chunk: bytes) -> list[WatchEvent]:
        """Consume one chunk; return the events whose lines it completes, in order.

        The reader hands them on as one batch: one call into the store for every event a
        read of the connection brought. At the first failure the events before it are
        returned and :attr:`failure` is set; the rest of the stream is ignored.
        """
        decode = self._codec.decode_event
        careful = self._careful
        events: list[WatchEvent] = []
        append = events.append
        for line in self._frame(chunk):
            event = decode(line)
            if event is None:
                event = careful(line)
                if event is None:
                    if self.failure is not None:
                        break
                    continue
            append(event)
        return events

    def feed_in_groups(self, chunk: bytes, size: int) -> Iterator[list[WatchEvent]]:
        """As :meth:`feed`, in lists of at most ``size`` events, each decoded only when
        the previous list has been taken: decoded dicts are tracked by the garbage
        collector, so only a few of them should be alive at a time (iterate it to the
        end before the next call)."""
        decode = self._decode_line
        events: list[WatchEvent] = []
        for line in self._frame(chunk):
            event = decode(line)
            if event is not None:
                events.append(event)
                if len(events) == size:
                    yield events
                    events = []
            elif self.failure is not None:
                break
        if events:
            yield events

    def _frame(self, chunk: bytes) -> Iterator[bytes]:
        """The complete lines ``chunk`` ends (an unfinished one is kept for the next
        chunk); stops, with :attr:`failure` set, at a line over the limit."""
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
            yield self._take_pending()
            start = end + 1
            end = find(_NEWLINE, start)
        while end >= 0:
            if end - start > max_line:
                self._too_long(end - start)
                return
            if end > start:
                yield chunk[start:end]
            start = end + 1
            end = find(_NEWLINE, start)
        if start < len(chunk):
            self._hold(chunk[start:])

    def _decode_line(self, line: bytes) -> WatchEvent | None:
        """One line's event: the usual line decoded by the codec, anything unusual
        through :meth:`_careful`, which classifies it. ``None`` for a blank line or a
        failure (then :attr:`failure` is set)."""
        event = self._codec.decode_event(line)
        return event if event is not None else self._careful(line)

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
    codec: Decoder = OBJECTS_DECODER,
    raw_body: bool = False,
) -> AsyncGenerator[WatchEvent, None]:
    """Open a watch with ``open_response()`` and yield its events until the body ends.

    ``open_response`` returns an async context manager yielding a 2xx response (the
    client's request path, which maps HTTP errors and releases the connection on exit).
    Ending normally means the server closed the watch (e.g. ``timeoutSeconds`` elapsed).
    A line longer than ``max_line_bytes`` raises :class:`WatchError`. ``codec`` decodes
    the usual lines (the objects of ``ADDED``/``MODIFIED``/``DELETED`` events): dicts by
    default, :class:`~aioinformer._objects.raw.CompactEntry` entries with a compact codec.
    ``raw_body`` declares that the response was requested with aiohttp's decompression
    off (``auto_decompress=False``): a gzip body is then inflated here, every member of
    it, whatever the aiohttp version. Without it the body is read as aiohttp hands it
    over; before aiohttp 3.14 that is only a gzip body's first member, so such a stream
    should ask for ``Accept-Encoding: identity``. :class:`WatchStream` is the same
    stream saying whether the server accepted the request, and handing its events out
    by the batch.
    """
    return WatchStreamBase.one_by_one(
        _batches(open_response, _Acceptance(), max_line_bytes, codec, raw_body=raw_body)
    )


class WatchStream(WatchStreamBase):
    """A watch's events (as :func:`read_watch_stream` yields them) and whether the server
    accepted the request: :attr:`opened` turns true once a 2xx answer's headers arrived,
    before the first event.

    A reflector needs the difference: a stream that breaks after it opened is re-watched
    from the same resourceVersion, while a request that failed is a failed list-and-watch.
    A reflector reads :meth:`batches`: each read of the connection's body gives one list
    of the events its complete lines hold. ``async for`` reads the events one by one;
    :meth:`aclose` closes the connection. Read it one way only.
    """

    __slots__ = ("_acceptance", "_batches", "_events")

    def __init__(
        self,
        open_response: Callable[[], AbstractAsyncContextManager[aiohttp.ClientResponse]],
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        codec: Decoder = OBJECTS_DECODER,
        raw_body: bool = False,
    ) -> None:
        self._acceptance = _Acceptance()
        self._batches = _batches(
            open_response, self._acceptance, max_line_bytes, codec, raw_body=raw_body
        )
        self._events: AsyncGenerator[WatchEvent, None] | None = None

    @property
    def opened(self) -> bool:
        """Whether the server answered the watch request with a 2xx."""
        return self._acceptance.opened

    def batches(self) -> AsyncIterator[list[WatchEvent]]:
        """The events, a read of the connection at a time (never an empty list)."""
        return self._batches

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        events = self._events
        if events is None:
            events = self._events = self.one_by_one(self._batches)
        return events

    async def aclose(self) -> None:
        """Stop reading and close the connection (idempotent)."""
        if self._events is not None:
            await self._events.aclose()
        await self._batches.aclose()


def _event_lists(
    decoder: WatchStreamDecoder, data: bytes, group: int | None
) -> Iterable[list[WatchEvent]]:
    """The events ``data`` completes: one list, or lists of ``group`` events at most."""
    if group is None:
        events = decoder.feed(data)
        return (events,) if events else ()
    return decoder.feed_in_groups(data, group)


async def _batches(
    open_response: Callable[[], AbstractAsyncContextManager[aiohttp.ClientResponse]],
    acceptance: _Acceptance,
    max_line_bytes: int,
    codec: Decoder,
    *,
    raw_body: bool,
) -> AsyncGenerator[list[WatchEvent], None]:
    async with open_response() as response:
        acceptance.opened = True
        url = str(response.url.with_query(None))
        decoder = WatchStreamDecoder(url=url, max_line_bytes=max_line_bytes, codec=codec)
        group = codec.event_batch
        with map_transport_errors(url, streaming=True):
            inflater = body_reader(response.headers.get("Content-Encoding")) if raw_body else None
            async for chunk in response.content.iter_chunked(CHUNK_SIZE):
                # An inflated chunk comes in bounded pieces, one batch each.
                for piece in (chunk,) if inflater is None else inflater.feed(chunk):
                    for events in _event_lists(decoder, piece, group):
                        yield events
                    if decoder.failure is not None:
                        raise decoder.failure
            if inflater is not None:
                for piece in inflater.finish():
                    for events in _event_lists(decoder, piece, group):
                        yield events
                    if decoder.failure is not None:
                        raise decoder.failure
            decoder.finish()
