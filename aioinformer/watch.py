"""The watch-stream reader: chunked HTTP body in, :class:`WatchEvent` out.

The reader lives in the client (``aioinformer/client/_watch.py``), the one side that opens
watches, and knows no cache: it decodes through the :class:`~aioinformer.listwatch.Decoder`
it is given. This module is its public name.

Role: the hot path between the socket and a reflector. Input: the body of a ``?watch=1``
response, one JSON object per line (``{"type": ..., "object": {...}}``), arriving in
chunks whose boundaries fall anywhere. Output: one :class:`WatchEvent` per line, in stream
order, handed on a read at a time (:meth:`WatchStream.batches`). The usual line is decoded
by a :class:`~aioinformer.listwatch.Decoder` (the informer's codec): into a dict with one
``orjson.loads`` (the default), or, for a compact cache, into a
:class:`~aioinformer._objects.raw.CompactEntry`: the object's bytes and its head, read by
msgspec without decoding the rest. Bookmarks and anything unusual are decoded whole, the
careful way.

Framing is done here rather than with ``StreamReader.readline()``, which refuses lines
over 128 KiB (a large Secret or ConfigMap is bigger): :class:`WatchStreamDecoder` keeps the
unfinished tail of the previous chunks and scans each byte once.

Compression: the client's watches ask for none (``Accept-Encoding: identity``, unless
``Client(watch_compression=True)``). kube-apiserver 1.37 compresses a streaming list sent
to a client that accepts gzip as one gzip member per event, which costs the reader some
12 µs of CPU more per event (2.5 times an uncompressed stream's in the compact cache), and
which aiohttp before 3.14 reads only up to the end of the first member, dropping every
later event without an error. A stream opened with aiohttp's decompression off
(``raw_body=True``, as the client's are) whose answer is gzip all the same is inflated
here, every member of it (:class:`~aioinformer.client._encoding.GzipReader`); any other
coding is a :class:`~aioinformer.errors.WatchError`.

Failures, raised from the iterator after every complete event before them was yielded:

* an ``ERROR`` event whose object is a ``Status`` becomes the matching
  :class:`~aioinformer.errors.ApiError` (410 → :class:`~aioinformer.errors.Gone`); an
  ``ERROR`` without a usable ``Status`` becomes a :class:`~aioinformer.errors.WatchError`;
* a line that is not JSON, or not a watch event, a body that ends mid-line, and a
  compressed body that cannot be read (corrupt, cut inside a gzip member, or in a coding
  other than gzip) become a :class:`~aioinformer.errors.WatchError` (the reflector
  re-watches);
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

from aioinformer.client._watch import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
from aioinformer.client._watch import WatchStream as WatchStream
from aioinformer.client._watch import WatchStreamDecoder as WatchStreamDecoder
from aioinformer.client._watch import error_from_watch_status as error_from_watch_status
from aioinformer.client._watch import read_watch_stream as read_watch_stream

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "WatchStream",
    "WatchStreamDecoder",
    "error_from_watch_status",
    "read_watch_stream",
]
