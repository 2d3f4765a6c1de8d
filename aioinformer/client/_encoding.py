"""Content codings of answers: what the client asks for, and the gzip reader it owns.

Role: decode a response body the server compressed, whatever the installed aiohttp can
do. Input: the ``Content-Encoding`` of an answer and its body's chunks as they arrive.
Output: the body as sent before compression, in pieces of at most :data:`PIECE_SIZE`
bytes, or :class:`CompressedBodyError` for a coding the client did not ask for, a body
that is not gzip, or one cut short inside a member.

Why the client decodes gzip itself rather than letting aiohttp do it: a gzip body may be
several *members* one after another (RFC 1952, section 2.2), and kube-apiserver 1.37
compresses a streaming list as one member per event (the ``WatchListCompression`` feature
gate, on by default). aiohttp before 3.14 stops at the end of the first member and drops
the rest of the body without an error, so a reader relying on it gets the first event and
then silence. :class:`GzipReader` starts a new member wherever one ends, so every byte is
read with every aiohttp version the package accepts; the client therefore always turns
aiohttp's own decompression off and asks only for the codings named here.

Pieces are bounded so that a small compressed chunk that inflates to gigabytes (a
decompression bomb) is handed on, and refused by the caller's size limit, a piece at a
time instead of being inflated whole into memory.

Ordering: pieces come in body order. Task model: plain synchronous code, called by the
task reading the body; nothing is logged.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "GZIP",
    "IDENTITY",
    "PIECE_SIZE",
    "CompressedBodyError",
    "GzipReader",
    "body_reader",
]

GZIP: Final = "gzip"
"""The ``Accept-Encoding`` of a LIST or any other answer read whole: kube-apiserver then
compresses answers over 128 KiB (``APIResponseCompression``), one gzip member each."""

IDENTITY: Final = "identity"
"""The ``Accept-Encoding`` of a watch unless compression is asked for: the body as sent,
one JSON line per event (see :mod:`aioinformer.watch` for why)."""

PIECE_SIZE: Final = 256 * 1024
"""Inflated bytes after which a piece is handed on: a piece holds less than twice this."""

_GZIP_WBITS: Final = 16 + zlib.MAX_WBITS


class CompressedBodyError(Exception):
    """A compressed body could not be read; the message says why. Translated into a
    :class:`~aioinformer.errors.TransportError` (a :class:`~aioinformer.errors.WatchError`
    on a watch) by :func:`aioinformer.client._transport.map_transport_errors`."""


class GzipReader:
    """Inflates a gzip body of any number of members, a chunk at a time.

    :meth:`feed` returns the pieces a chunk completes; :meth:`finish`, at the end of the
    body, those still held and raises :class:`CompressedBodyError` if the body stopped
    inside a member. Anything after a member that does not start another one is not gzip
    and raises at once.
    """

    __slots__ = ("_inflate", "_open")

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(wbits=_GZIP_WBITS)
        # Whether the member being read has had any byte: an empty body is a sound one.
        self._open = False

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The inflated pieces of ``chunk``, in order (iterate to the end before the next
        call). Members that end within the chunk share a piece: a chunk of many small
        members (a streaming list's events) is one piece, not one per member."""
        data = chunk
        held: list[bytes] = []
        size = 0
        while True:
            inflate = self._inflate
            if data:
                self._open = True
            try:
                piece = inflate.decompress(data, PIECE_SIZE)
            except zlib.error as exc:
                raise CompressedBodyError(f"the gzip body is corrupt: {exc}") from exc
            if piece:
                held.append(piece)
                size += len(piece)
                if size >= PIECE_SIZE:
                    yield b"".join(held)
                    held.clear()
                    size = 0
            if inflate.eof:
                # The member ended; what follows it, if anything, is the next one.
                data = inflate.unused_data
                self._inflate = zlib.decompressobj(wbits=_GZIP_WBITS)
                self._open = False
                if data:
                    continue
                break
            # A piece cut at its size may leave input, or output zlib still holds.
            data = inflate.unconsumed_tail
            if not data and len(piece) < PIECE_SIZE:
                break
        if held:
            yield b"".join(held)

    def finish(self) -> Iterator[bytes]:
        """At the end of the body: what is left, then :class:`CompressedBodyError` if the
        body ended inside a member."""
        if not self._open:
            return
        inflate = self._inflate
        while True:
            try:
                piece = inflate.decompress(b"", PIECE_SIZE)
            except zlib.error as exc:
                raise CompressedBodyError(f"the gzip body is corrupt: {exc}") from exc
            if piece:
                yield piece
            if len(piece) < PIECE_SIZE:
                break
        if not inflate.eof:
            raise CompressedBodyError("the gzip body ended in the middle of a member")


def body_reader(content_encoding: str | None) -> GzipReader | None:
    """The reader for a body sent with ``content_encoding`` (the header's value; ``None``
    or ``identity`` for a body sent as is, which needs none).

    A gzip body is read whatever the request asked for (a server or a proxy may compress
    anyway); any other coding raises :class:`CompressedBodyError`: the client asks for
    none and can read none."""
    coding = (content_encoding or "").strip().lower()
    if coding in ("", IDENTITY):
        return None
    if coding in (GZIP, "x-gzip"):
        return GzipReader()
    raise CompressedBodyError(
        f"the answer is encoded as {content_encoding!r}, which the client never asks for: "
        "it reads only gzip and uncompressed bodies"
    )
