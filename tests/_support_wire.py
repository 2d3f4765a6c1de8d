"""A fake source whose watches cross the wire reader: ``OnTheWire(fake)``.

:class:`~aioinformer.testing.FakeListerWatcher` hands its watch events over as objects. Wrapped
in :class:`OnTheWire`, its lists are served as they are, and each of its watch reads is
encoded as JSON lines and read back by :class:`~aioinformer.watch.WatchStream` with the
informer's codec, as a client's watch reads a server's: framing, the head decode and a
compact cache's entries are those of a real stream.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import orjson
import yarl

from aioinformer.listwatch import DescribedListerWatcher, WatchStreamBase
from aioinformer.watch import WatchStream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.listwatch import Decoder, ListOptions, ObjectList, SourceInfo
    from aioinformer.testing import FakeListerWatcher


class _Body:
    """A response body whose chunks are the fake watch's reads, one JSON line per event."""

    def __init__(self, stream: WatchStreamBase) -> None:
        self._stream = stream

    async def iter_chunked(self, size: int) -> AsyncIterator[bytes]:
        async for batch in self._stream.batches():
            yield b"".join(
                orjson.dumps({"type": event.type, "object": event.object}) + b"\n"
                for event in batch
            )


class _Response:
    url = yarl.URL("http://127.0.0.1/api/v1/pods")

    def __init__(self, stream: WatchStreamBase) -> None:
        self.content = _Body(stream)


class OnTheWire(DescribedListerWatcher):
    """``fake``'s lists as they are, its watches sent through the wire reader."""

    def __init__(self, fake: FakeListerWatcher, codec: Decoder | None = None) -> None:
        self.fake = fake
        self.codec = codec

    def describe(self) -> SourceInfo:
        return self.fake.describe()

    def decoded_with(self, codec: Decoder) -> DescribedListerWatcher:
        return OnTheWire(self.fake, codec)

    async def list(self, options: ListOptions) -> ObjectList:
        return await self.fake.list(options)

    def watch(self, options: ListOptions) -> WatchStream:
        inner = self.fake.watch(options)
        assert isinstance(inner, WatchStreamBase)

        @contextlib.asynccontextmanager
        async def open_response() -> AsyncIterator[Any]:
            try:
                yield _Response(inner)
            finally:
                await inner.aclose()

        assert self.codec is not None
        return WatchStream(open_response, codec=self.codec)
