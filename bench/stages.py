"""``python -m bench --only stages``: what each stage of the pipeline costs per event.

Role: the cost table of the watch path. One MODIFIED event crosses, today: the reader
(chunks) → the decoder (framing, then one decode per line) → the reflector's watch loop →
the DeltaFIFO → the pop task → the apply step (cache write, indexes, notifications) → the
processor → one handler's queue → its delivery task → the handler call (with the decode
the handler needs). A case here measures those stages one at a time, as CPU µs per event
(``time.process_time``; the collector left on, as in production), for one codec: the
naive loop (aiohttp + orjson into a dict, :mod:`bench.baseline`), ``cache="objects"`` or
``cache="compact"``; then the whole pipeline over the replay server, so that the sum of
the stages can be set against the whole; then what a user's choices add.

Input: the bytes the replay server sends for the scenario (``events`` MODIFIED lines over a
cache of ``objects`` Pods, :class:`bench.replay.ReplayData`), the same for every row and
codec. Framing reads them cut into 64 KiB chunks; every later stage reads what the stages
before it make of them, prepared untimed by the library's own code, :data:`SLICE` events at
a time, as many as the pipeline has in flight.

The rows (metric names in brackets):

1. read and frame (``frame_us``): the decoder's framing, ``WatchStreamDecoder.feed`` with
   the decode swapped for a function returning a prepared event (what is left is the
   framing and the per-event checks); naive: ``split(b"\\n")``. aiohttp's own reading is
   not in it; the whole pipeline has it.
2. decode (``decode_us``): each line to the event's object: ``orjson.loads`` (naive,
   objects) or ``decode_watch_line`` (compact: a ``CompactEntry``, only its head decoded).
3. FIFO (``fifo_us``): the reflector's watch loop (``WatchRead``) reading decoded events from
   an async iterator into a ``DeltaFIFO`` as the informer builds it, handing off every few
   events as it does, and the pop task taking them with ``pop_batch`` without applying
   them.
4. store and indexes (``store_us``): each popped key applied to a synced cache with the
   informer's three built-in indexes (``namespace_index_func``, two ``label_index_func``):
   the cache write, the index updates, and the notifications built (compact: carrying
   the entries) and handed to nobody, which frees the object the cache
   replaced here (what they carry of the new object is kept for the handler); naive:
   ``cache[key] = obj``.
5. dispatch (``dispatch_us``): the processor handing each batch's notifications to one
   handler's queue (a loop callback stands in for the pop task), and that handler's
   delivery task taking them and calling a handler that does nothing.
6. handler call (``handler_us``): the call the informer binds for a handler reading
   ``new["metadata"]["resourceVersion"]``: for compact, the read-only view it gets (read
   from the entry's head, no decode), freed as the call returns.

Each stage frees what the pipeline frees in it and nothing else: the object the cache
replaced in the store, a handler's view in the handler call; whatever else a slice's
input holds (the decoded objects the cache keeps) is let go of untimed, while a later
slice is prepared. Stepping out of the count costs two reads of the clock per slice: what
they add is measured once per case and taken off (:class:`Stopwatch`).

``stage_sum_us`` adds the stages up. ``whole_us``, ``whole_collector_us`` and
``whole_events_per_s`` are the whole pipeline over the replay server (an informer with the
same indexes and handler; the naive loop): CPU µs per event, the part of it the cyclic
collector ran, and events per second, from the first event handled to the last.

What a user's choices add (µs per event, against the rows above): ``own_index_us``, an
index function of one's own written in Python (by node name) beside the built-in ones
(stages 4 and 6 together: in a compact cache it decodes the object, a decode the handler
then shares); ``reads_old_us``, a handler reading ``old`` as well as ``new``; ``model_us``,
``model=`` with :class:`aioinformer.k8s.core_v1.Pod` and a handler reading
``new.metadata.resource_version``; ``keys_only_us``, a ``keys_only`` handler instead (the
controller's shape, the cheap end: a negative figure).

The adapters: every call into the pipeline's stages is made by the functions of the first
section below, gathered per codec in :data:`ADAPTERS`, so that they are what to re-point
when the pipeline's APIs change; the rest of the module prepares inputs and keeps time.

Task model: one coroutine per case on the worker's loop (:mod:`bench.worker`); the async
stages run their tasks inside it and end them before it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, cast

import orjson

from aioinformer._kernel.clock import default_clock
from aioinformer._objects.raw import CompactEntry, decode_list
from aioinformer.codec import DICT_BATCH, CompactCodec, ObjectsCodec
from aioinformer.codec import Codec as PipelineCodec
from aioinformer.delta_fifo import DEFAULT_BATCH_KEYS, Delta, DeltaFIFO, Deltas, DeltaType
from aioinformer.errors import FIFOClosedError
from aioinformer.indexer import CompactIndexer, Indexer, meta_namespace_key
from aioinformer.informer import SharedIndexInformer, apply_deltas
from aioinformer.listwatch import WatchEvent, WatchStreamBase
from aioinformer.processor import NotificationKind, ProcessorListener, SharedProcessor
from aioinformer.reflector import Cursor, WatchRead
from aioinformer.testing import FakeListerWatcher
from aioinformer.watch import WatchStreamDecoder
from bench import harness
from bench.baseline import raw_list, raw_watch
from bench.replay import ReplayConfig, ReplayData

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Mapping

    from aioinformer.indexer import IndexFunc
    from aioinformer.processor import Notification
    from bench.harness import CacheMode

__all__ = [
    "ADAPTERS",
    "Adapters",
    "Body",
    "CHUNK_BYTES",
    "Codec",
    "HANDOFF",
    "SLICE",
    "Span",
    "Stopwatch",
    "chunked",
    "decode_compact",
    "decode_naive",
    "decode_objects",
    "fifo",
    "frame_naive",
    "frame_ours",
    "hand_over",
    "handler_call",
    "in_batches",
    "indexers",
    "measure_stages",
    "new_cache",
    "node_index",
    "one_handler",
    "pause_cost",
    "pipeline_codec",
    "popped_as",
    "reader",
    "reads_key",
    "reads_model",
    "reads_new",
    "reads_old_and_new",
    "replaced_compact",
    "replaced_objects",
    "stage_figures",
    "stages_case",
    "stages_ours",
    "store_naive",
    "store_ours",
    "whole_naive",
    "whole_ours",
]

_T = TypeVar("_T")

Codec = Literal["naive", "objects", "compact"]
"""The naive loop, or the library with ``cache="objects"`` or ``cache="compact"``."""

CHUNK_BYTES: Final = 64 * 1024
"""What one read of the watch body hands the framing (aiohttp's usual chunk)."""

HANDOFF: Final = DICT_BATCH
"""Events the reader hands on at a time when it decodes dicts (a compact read hands on a
whole chunk's): the size of one popped batch, and so of one hand-over to the handlers, at
its smallest."""

SLICE: Final = HANDOFF
"""Events whose input is prepared at a time, untimed, for stages 2 to 6: as many as the
pipeline has in flight, so that what the stages keep alive meanwhile, and so what the
collector sees, is what it sees there."""

Distribute = Callable[["Notification", bool], None]
"""What the apply step hands each notification to (``SharedProcessor.distribute``)."""


# --- adapters: where each stage meets the library ---------------------------------------
#
# One function per stage and codec (the objects and compact codecs share those that do the
# same for both today), gathered per codec in ADAPTERS below. Each drives the library's own
# code for its stage and nothing more: re-point these when the pipeline's APIs change.


def new_cache(codec: Codec, list_body: bytes, indexers: Mapping[str, IndexFunc]) -> Any:
    """A synced cache of the LIST answer ``list_body``, as the codec's informer holds it
    (the naive loop: a dict by key, no index)."""
    if codec == "naive":
        return {meta_namespace_key(item): item for item in orjson.loads(list_body)["items"]}
    if codec == "compact":
        compact = CompactIndexer(meta_namespace_key, indexers)
        compact.replace(decode_list(list_body, kind="Pod", api_version="v1").items)
        return compact
    items = orjson.loads(list_body)["items"]
    for item in items:
        item["apiVersion"], item["kind"] = "v1", "Pod"
    objects: Indexer[Any] = Indexer(meta_namespace_key, indexers)
    objects.replace(items)
    return objects


def pipeline_codec(codec: Codec) -> PipelineCodec:
    """The library's codec an informer of this cache mode runs with."""
    return CompactCodec() if codec == "compact" else ObjectsCodec()


def reader(codec: Codec) -> WatchStreamDecoder:
    """The decoder a watch of this codec reads with: what prepares the later stages'
    input."""
    return WatchStreamDecoder(codec=pipeline_codec(codec))


# 1. read and frame


def frame_naive(chunks: Iterable[bytes]) -> int:
    """The naive loop's framing; the lines framed."""
    framed = 0
    pending = b""
    for chunk in chunks:
        lines = (pending + chunk).split(b"\n") if pending else chunk.split(b"\n")
        pending = lines.pop()
        for _line in lines:
            framed += 1
    return framed


_STAND_IN_EVENT: Final = WatchEvent("MODIFIED", {})


class _NoDecode(ObjectsCodec):
    """A codec whose every line "decodes" to one prepared event, so that feeding the
    decoder costs its framing alone (the framing is the same whatever the codec)."""

    __slots__ = ()

    def decode_event(self, line: bytes) -> WatchEvent | None:
        return _STAND_IN_EVENT


def _events_fed(decoder: WatchStreamDecoder, chunks: Iterable[bytes]) -> int:
    framed = 0
    for chunk in chunks:
        for _event in decoder.feed(chunk):
            framed += 1
    if decoder.failure is not None:
        raise decoder.failure
    return framed


def frame_ours(chunks: Iterable[bytes]) -> int:
    """The decoder's framing, the decode swapped out; the events framed."""
    return _events_fed(WatchStreamDecoder(codec=_NoDecode()), chunks)


# 2. decode


def decode_naive(lines: Iterable[bytes]) -> list[Any]:
    """The naive loop's decode of each line: the objects."""
    loads = orjson.loads
    return [loads(line)["object"] for line in lines]


def decode_objects(lines: Iterable[bytes]) -> list[Any]:
    """The objects codec's decode of each line: the event, its object a dict."""
    decode = ObjectsCodec().decode_event
    return [decode(line) for line in lines]


def decode_compact(lines: Iterable[bytes]) -> list[Any]:
    """The compact codec's decode of each line: the event, its object a ``CompactEntry``."""
    decode = CompactCodec().decode_event
    return [decode(line) for line in lines]


# 3. FIFO


async def fifo(cache: Any, reads: AsyncIterator[list[WatchEvent]]) -> int:
    """The reflector's watch loop reading ``events`` into a DeltaFIFO as the informer
    builds it, and the pop task taking every key without applying it; the events taken
    (a key's deltas count one each: a key changed twice before a pop is taken once)."""
    queue = DeltaFIFO(known_objects=cache.known_objects, atomic=True)
    read = WatchRead(
        _Reads(reads),
        queue,
        Cursor(),
        name="stages",
        clock=default_clock,
        deadline=120.0,
        expected_kind="Pod",
        expected_api_version="v1",
    )
    popped = 0

    def take(batch: Iterable[tuple[str, Deltas]]) -> None:
        nonlocal popped
        for _key, deltas in batch:
            popped += len(deltas)

    async def pop() -> None:
        with contextlib.suppress(FIFOClosedError):
            while True:
                await queue.pop_batch(take, max_keys=DEFAULT_BATCH_KEYS)

    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(pop())
        try:
            _, end = await read.run()
        finally:
            queue.close()
    if end.error is not None:
        raise end.error
    return popped


class _Reads(WatchStreamBase):
    """Prepared reads as a watch stream hands them to the reflector: one list of events
    per read."""

    def __init__(self, reads: AsyncIterator[list[WatchEvent]]) -> None:
        self._reads = reads

    @property
    def opened(self) -> bool:
        return True

    def batches(self) -> AsyncIterator[list[WatchEvent]]:
        return self._reads

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:  # type: ignore[override]
        async for read in self._reads:
            for event in read:
                yield event

    async def aclose(self) -> None:
        return None


# 4. store and indexes


def popped_as(obj: Any) -> tuple[str, Deltas]:
    """One watch event's object as the pop task is handed it: its key and its Deltas."""
    deltas = Deltas()
    deltas.append(Delta(DeltaType.UPDATED, obj))
    return (obj.key if type(obj) is CompactEntry else meta_namespace_key(obj)), deltas


def store_naive(cache: dict[str, Any], objs: Iterable[Any]) -> None:
    """The naive loop's store."""
    for obj in objs:
        meta = obj["metadata"]
        cache[f"{meta['namespace']}/{meta['name']}"] = obj


def store_ours(
    cache: Any,
    codec: PipelineCodec,
    batch: Iterable[tuple[str, Deltas]],
    distribute: Distribute,
) -> None:
    """The informer's apply step for one popped batch, with its codec."""
    for _key, deltas in batch:
        apply_deltas(deltas, cache, distribute, codec, is_in_initial_list=False)


def replaced_objects(notification: Notification) -> Any:
    """The object the cache replaced, as an objects codec's update carries it."""
    return notification.a


def replaced_compact(notification: Notification) -> Any:
    """The entry the cache replaced, as a compact codec's update carries it (each handler
    call makes its own view of it)."""
    return notification.a


# 5. dispatch


def one_handler(on_update: Callable[[Any, Any], Any]) -> tuple[SharedProcessor, ProcessorListener]:
    """A processor with one handler, given what is distributed as it is; run the
    processor for the handler's delivery task."""
    processor = SharedProcessor()
    listener = ProcessorListener(name="stages", on_update=on_update)
    processor.add_listener(listener)
    return processor, listener


def hand_over(processor: SharedProcessor, notifications: Iterable[Notification]) -> None:
    """The pop task's hand-over of one applied batch's notifications."""
    with processor.batch():
        distribute = processor.distribute
        for notification in notifications:
            distribute(notification, False)


# 6. handler call


def handler_call(
    codec: Codec,
    on_update: Callable[[Any, Any], Any],
    *,
    keys_only: bool = False,
    model: type[Any] | None = None,
) -> Callable[[Any, Any], Any]:
    """The call an informer of this codec makes for ``on_update`` (registered with
    ``keys_only``, on an informer with ``model``): its conversion, then the handler."""
    if codec == "naive":
        raise ValueError("the naive loop has no handler")
    informer = SharedIndexInformer(FakeListerWatcher(), cache=codec, model=model)
    registration = informer.add_event_handler(on_update=on_update, keys_only=keys_only)
    listener = cast("ProcessorListener", registration._listener)
    bound = listener._calls[NotificationKind.UPDATE]
    assert bound is not None
    return cast("Callable[[Any, Any], Any]", bound[0])


# the whole pipeline


async def whole_naive(url: str, params: dict[str, Any], span: Span) -> None:
    """The naive loop over the replay server, ``span`` from its first watch event stored
    to its last."""

    def on_event(_obj: Any) -> None:
        span.begin()

    async with harness.session() as session:
        cache, rv = await raw_list(session, url, "pods", page_size=500)
        run = await raw_watch(
            session,
            url,
            "pods",
            cache,
            resource_version=rv,
            until_resource_version=params["objects"] + params["events"],
            on_event=on_event,
        )
        span.end()
    if run.applied != params["events"]:
        raise RuntimeError(f"applied {run.applied} of {params['events']} events")


async def whole_ours(url: str, params: dict[str, Any], codec: Codec, span: Span) -> None:
    """An informer of this codec over the replay server, with the built-in indexes and the
    handler of stage 6, ``span`` from its first update handled to its last."""
    last = str(params["objects"] + params["events"])
    finished = asyncio.Event()

    def on_update(_old: Any, new: Any) -> None:
        span.begin()
        if new["metadata"]["resourceVersion"] == last:
            span.end()
            finished.set()

    async with harness.client(url) as client:
        informer = harness.informer(
            client, "pods", cache=cast("CacheMode", codec), indexers=indexers()
        )
        informer.add_event_handler(on_update=on_update)
        async with informer:
            if not await informer.wait_for_sync():
                raise RuntimeError("informer did not report synced")
            await finished.wait()


@dataclass(frozen=True, slots=True)
class Adapters:
    """One codec's way into each stage it has (``None``: the naive loop has no such
    stage)."""

    frame: Callable[[Iterable[bytes]], int]
    decode: Callable[[Iterable[bytes]], list[Any]]
    store: Callable[..., None]
    """``(cache, objs)`` for the naive loop, else ``(cache, codec, batch, distribute)``."""
    replaced: Callable[[Notification], Any] | None = None
    fifo: Callable[[Any, AsyncIterator[list[WatchEvent]]], Awaitable[int]] | None = None


ADAPTERS: Final[dict[Codec, Adapters]] = {
    "naive": Adapters(frame=frame_naive, decode=decode_naive, store=store_naive),
    "objects": Adapters(
        frame=frame_ours,
        decode=decode_objects,
        store=store_ours,
        replaced=replaced_objects,
        fifo=fifo,
    ),
    "compact": Adapters(
        frame=frame_ours,
        decode=decode_compact,
        store=store_ours,
        replaced=replaced_compact,
        fifo=fifo,
    ),
}
"""Each codec's stage functions; dispatch (:func:`one_handler`, :func:`hand_over`), the
handler call (:func:`handler_call`) and the whole pipeline (:func:`whole_naive`,
:func:`whole_ours`) take the codec, or need none."""


# --- inputs -------------------------------------------------------------------------------


def indexers(*, own: bool = False) -> dict[str, IndexFunc]:
    """The watch scenarios' three built-in indexes; with ``own``, also an index function of
    one's own, by node name, written as a user would."""
    built_in: dict[str, IndexFunc] = dict(harness.watch_indexers())
    if own:
        built_in["node"] = node_index
    return built_in


def node_index(obj: Any) -> list[str]:
    """Pods by the node they run on: an index function a user writes."""
    node = obj["spec"].get("nodeName")
    return [node] if node else []


def chunked(parts: Iterable[bytes], size: int) -> Iterator[bytes]:
    """``parts`` joined and cut into chunks of ``size`` bytes (the last may be shorter),
    as a socket hands a body over: chunk borders fall anywhere, mid-line included."""
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    buffer = bytearray()
    for part in parts:
        buffer += part
        while len(buffer) >= size:
            yield bytes(buffer[:size])
            del buffer[:size]
    if buffer:
        yield bytes(buffer)


def in_batches(items: Iterable[_T], size: int) -> Iterator[list[_T]]:
    """``items`` in lists of ``size`` (the last may be shorter)."""
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


class Body:
    """The scenario's watch body, as the replay server sends it, in the shapes the
    stages read."""

    __slots__ = ("data", "events", "objects")

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.objects: int = params["objects"]
        self.events: int = params["events"]
        if self.objects < 1 or self.events < 2:
            raise ValueError(
                f"the stages need objects >= 1 and events >= 2, got {self.objects} and "
                f"{self.events}"
            )
        self.data = ReplayData(ReplayConfig(objects=self.objects, watch_events=self.events))

    def list_body(self) -> bytes:
        """The LIST answer the cache is synced from."""
        return self.data.list_page(0, None)

    def lines(self, start: int, stop: int) -> list[bytes]:
        """Events ``start`` to ``stop - 1`` (0-based), each its line with the newline."""
        line = self.data.event_line
        return [line(event) for event in range(start + 1, stop + 1)]

    def slices(self) -> Iterator[tuple[int, int]]:
        """``(start, stop)`` of each :data:`SLICE` of events, in order."""
        for start in range(0, self.events, SLICE):
            yield start, min(self.events, start + SLICE)

    def chunks(self) -> list[bytes]:
        """The whole body in :data:`CHUNK_BYTES` chunks."""
        lines = itertools.chain.from_iterable(self.lines(*s) for s in self.slices())
        return list(chunked(lines, CHUNK_BYTES))


# --- keeping time -------------------------------------------------------------------------


class Stopwatch:
    """CPU time of this process (``clock``, ``time.process_time`` by default), counted
    only between :meth:`start` and :meth:`stop`; ``with`` runs it over a block.

    :meth:`paused` steps out of the count for a while, at a cost of its own that the count
    cannot exclude (the clock's reads, about a microsecond): :attr:`net` takes off
    ``pause_cost`` (as :func:`pause_cost` measures it) per pause.
    """

    __slots__ = ("_clock", "_since", "elapsed", "pause_cost", "pauses")

    def __init__(
        self, clock: Callable[[], float] = time.process_time, *, pause_cost: float = 0.0
    ) -> None:
        self._clock = clock
        self._since: float | None = None
        self.pause_cost = pause_cost
        self.elapsed = 0.0
        """Seconds counted so far."""
        self.pauses = 0
        """Calls of :meth:`paused` so far."""

    @property
    def net(self) -> float:
        """:attr:`elapsed` less what the pauses themselves added to it."""
        return self.elapsed - self.pauses * self.pause_cost

    def start(self) -> None:
        if self._since is not None:
            raise RuntimeError("the stopwatch is already running")
        self._since = self._clock()

    def stop(self) -> None:
        if self._since is None:
            raise RuntimeError("the stopwatch is not running")
        self.elapsed += self._clock() - self._since
        self._since = None

    def __enter__(self) -> Stopwatch:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def paused(self, prepare: Callable[..., _T], *args: Any) -> _T:
        """``prepare(*args)`` run with the stopwatch stopped (it must be running)."""
        self.stop()
        self.pauses += 1
        try:
            return prepare(*args)
        finally:
            self.start()


def _nothing() -> None:
    return None


def pause_cost(clock: Callable[[], float] = time.process_time, *, pauses: int = 2_000) -> float:
    """What one :meth:`Stopwatch.paused` adds to the count, with nothing to prepare: the
    least over five runs of ``pauses`` pauses, each run's count divided by ``pauses``."""
    costs = []
    for _ in range(5):
        with Stopwatch(clock) as watch:
            for _ in range(pauses):
                watch.paused(_nothing)
        costs.append(watch.elapsed / pauses)
    return min(costs)


class Span:
    """CPU and wall seconds from :meth:`begin` (the first call counts) to :meth:`end`, and
    the seconds the cyclic collector ran in between; ``with`` watches the collector
    (through ``gc.callbacks``) while inside."""

    __slots__ = ("_collecting_since", "_cpu", "_marks", "_wall", "collector")

    def __init__(
        self,
        cpu: Callable[[], float] = time.process_time,
        wall: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._cpu = cpu
        self._wall = wall
        # (cpu, wall) at begin, then at end.
        self._marks: list[float] = []
        self._collecting_since: float | None = None
        self.collector = 0.0
        """Seconds of the collections that ended between :meth:`begin` and :meth:`end`."""

    def begin(self) -> None:
        if not self._marks:
            self._marks.extend((self._cpu(), self._wall()))

    def end(self) -> None:
        if len(self._marks) != 2:
            raise RuntimeError("the span has not begun, or has ended already")
        self._marks.extend((self._cpu(), self._wall()))

    @property
    def cpu(self) -> float:
        """CPU seconds from begin to end."""
        return self._ended()[2] - self._marks[0]

    @property
    def wall(self) -> float:
        """Wall seconds from begin to end."""
        return self._ended()[3] - self._marks[1]

    def _ended(self) -> list[float]:
        if len(self._marks) != 4:
            raise RuntimeError("the span has not ended")
        return self._marks

    def _callback(self, phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            self._collecting_since = self._wall()
        elif self._collecting_since is not None:
            if len(self._marks) == 2:
                self.collector += self._wall() - self._collecting_since
            self._collecting_since = None

    def __enter__(self) -> Span:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc_info: object) -> None:
        gc.callbacks.remove(self._callback)


# --- the stages, timed ------------------------------------------------------------------


def _per_event(seconds: float, events: int) -> float:
    return seconds / events * 1e6


def _quiet() -> None:
    """Start a measurement with no garbage from the one before."""
    gc.collect()


class _Stages:
    """One codec's stages over one body; each method returns CPU µs per event.

    A stage's input is prepared a slice at a time with the stopwatch stopped
    (:meth:`_prepared`); each stage frees only what it frees in the pipeline, and what a
    slice's input still holds after that is freed untimed too.
    """

    def __init__(self, codec: Codec, body: Body) -> None:
        self.codec = codec
        self.adapters = ADAPTERS[codec]
        self.body = body
        self._list_body = body.list_body()
        self._pause_cost = pause_cost()

    def _stopwatch(self) -> Stopwatch:
        return Stopwatch(pause_cost=self._pause_cost)

    def cache(self, *, own_index: bool = False) -> Any:
        return new_cache(self.codec, self._list_body, indexers(own=own_index))

    def _prepared(
        self, watch: Stopwatch, prepare: Callable[[int, int], list[Any]]
    ) -> Iterator[list[Any]]:
        """Each slice's input, prepared while ``watch`` (running) is stopped.

        The list handed out two slices before is emptied then too, so that what it still
        holds is freed untimed (two, not one: the stage's own variables may still name the
        last slice's objects). A stage keeps alive what it must not free by adding it to
        the list.
        """
        handed: deque[list[Any]] = deque()
        for start, stop in self.body.slices():
            handed.append(watch.paused(_next_slice, handed, prepare, start, stop))
            yield handed[-1]

    def _decoded(self, start: int, stop: int) -> list[WatchEvent]:
        """Events ``start`` to ``stop - 1`` as the codec's reader hands them over."""
        events = list(reader(self.codec).feed(b"".join(self.body.lines(start, stop))))
        if len(events) != stop - start:
            raise RuntimeError(f"decoded {len(events)} of {stop - start} events")
        return events

    def _lines(self, start: int, stop: int) -> list[Any]:
        return [[line[:-1] for line in self.body.lines(start, stop)]]

    def _objects(self, start: int, stop: int) -> list[Any]:
        return [event.object for event in self._decoded(start, stop)]

    def _popped(self, start: int, stop: int) -> list[Any]:
        """A slice's events as the pop task is handed them, batch by batch."""
        popped = (popped_as(event.object) for event in self._decoded(start, stop))
        return list(in_batches(popped, HANDOFF))

    def frame(self) -> float:
        chunks = self.body.chunks()
        _quiet()
        with self._stopwatch() as watch:
            framed = self.adapters.frame(chunks)
        self._check(framed)
        return _per_event(watch.net, self.body.events)

    def decode(self) -> float:
        decode = self.adapters.decode
        decoded = 0
        _quiet()
        with self._stopwatch() as watch:
            for prepared in self._prepared(watch, self._lines):
                # What is decoded lives on in the pipeline (in the cache): kept here.
                objs = decode(prepared[0])
                decoded += len(objs)
                prepared.append(objs)
        self._check(decoded)
        return _per_event(watch.net, self.body.events)

    async def fifo(self) -> float:
        run = self.adapters.fifo
        if run is None:
            raise ValueError(f"the {self.codec} codec has no FIFO")
        cache = self.cache()
        watch = self._stopwatch()

        async def reads() -> AsyncIterator[list[WatchEvent]]:
            for prepared in self._prepared(watch, self._decoded):
                yield prepared

        _quiet()
        with watch:
            popped = await run(cache, reads())
        self._check(popped)
        return _per_event(watch.net, self.body.events)

    def store(self, *, own_index: bool = False) -> float:
        cache = self.cache(own_index=own_index)
        store = self.adapters.store
        _quiet()
        if self.codec == "naive":
            with self._stopwatch() as watch:
                for objs in self._prepared(watch, self._objects):
                    store(cache, objs)
        else:
            codec = pipeline_codec(self.codec)
            with self._stopwatch() as watch:
                for batches in self._prepared(watch, self._popped):
                    # What a handler would read is kept for it, untimed.
                    kept: list[Any] = []
                    batches.append(kept)
                    distribute = _keeping_new(kept)
                    for batch in batches[:-1]:
                        store(cache, codec, batch, distribute)
        self._check_stored(cache)
        return _per_event(watch.net, self.body.events)

    def _notifier(self, *, own_index: bool = False) -> Callable[[int, int], list[Any]]:
        """What prepares a slice's notifications: the events applied to a synced cache of
        this codec, ``(notifications, replaced)`` per popped batch, what the apply step
        distributed and the objects the cache replaced (whose freeing is the store's)."""
        cache = self.cache(own_index=own_index)
        codec = pipeline_codec(self.codec)
        store = self.adapters.store
        replaced_by = self.adapters.replaced
        if replaced_by is None:
            raise ValueError(f"the {self.codec} codec has no handlers")

        def notifications(start: int, stop: int) -> list[Any]:
            prepared: list[Any] = []
            for batch in self._popped(start, stop):
                made: list[Any] = []
                store(cache, codec, batch, _collecting(made))
                prepared.append((made, [replaced_by(notification) for notification in made]))
            return prepared

        return notifications

    async def dispatch(self) -> float:
        processor, listener = one_handler(_ignores)
        notifications = self._notifier()
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        total = self.body.events
        watch = self._stopwatch()
        batches = itertools.chain.from_iterable(self._prepared(watch, notifications))

        # A loop callback stands in for the pop task: one hand-over per turn of the loop,
        # as the pipeline makes one per batch the reflector hands off, for less than a
        # task's step of its own.
        def feed() -> None:
            prepared = next(batches, None)
            if prepared is None:
                finish()
                return
            batch, _replaced = prepared
            hand_over(processor, batch)
            # The handler's queue holds them now: it lets go of them as it takes them.
            batch.clear()
            loop.call_soon(feed)

        def finish() -> None:
            if listener.delivered >= total:
                done.set_result(None)
            else:
                loop.call_soon(finish)

        async with asyncio.TaskGroup() as tasks:
            running = tasks.create_task(processor.run())
            # Turns enough for the processor to start the handler's delivery task and for
            # that task to wait on its empty queue.
            for _ in range(3):
                await asyncio.sleep(0)
            _quiet()
            with watch:
                loop.call_soon(feed)
                await done
            running.cancel()
        self._check(listener.delivered)
        return _per_event(watch.net, total)

    def handler(
        self,
        on_update: Callable[[Any, Any], Any],
        *,
        keys_only: bool = False,
        model: type[Any] | None = None,
        own_index: bool = False,
    ) -> float:
        call = handler_call(self.codec, on_update, keys_only=keys_only, model=model)
        notifications = self._notifier(own_index=own_index)
        called = 0
        _quiet()
        with self._stopwatch() as watch:
            for prepared in self._prepared(watch, notifications):
                for batch, _replaced in prepared:
                    called += len(batch)
                    # Each notification is let go of once handled, as a handler's queue
                    # does: what its conversion made (a decode) is freed here.
                    batch.reverse()
                    while batch:
                        _kind, old, new = batch.pop()
                        call(old, new)
        self._check(called)
        return _per_event(watch.net, self.body.events)

    def _check(self, count: int) -> None:
        if count != self.body.events:
            raise RuntimeError(f"{count} of {self.body.events} events went through")

    def _check_stored(self, cache: Any) -> None:
        """Raise unless the cache holds the last event's object."""
        (event,) = self._decoded(self.body.events - 1, self.body.events)
        obj = event.object
        if type(obj) is CompactEntry:
            key, wanted = obj.key, obj.resource_version
            version = cache.entry_by_key(key).resource_version
        else:
            key, wanted = meta_namespace_key(obj), obj["metadata"]["resourceVersion"]
            stored = cache[key] if type(cache) is dict else cache.get_by_key(key)
            version = stored["metadata"]["resourceVersion"]
        if version != wanted:
            raise RuntimeError(f"the cache holds {version} for {key}, not the last event's")


def _keeping_new(kept: list[Any]) -> Distribute:
    """A ``distribute`` handing notifications to nobody, keeping only what each carries of
    the new object in ``kept`` (for the handler stage to read): the notifications, and the
    objects the cache replaced, are freed at once."""

    def keep_new(notification: Notification, _is_sync: bool) -> None:
        kept.append(notification.b)

    return keep_new


def _collecting(made: list[Any]) -> Distribute:
    """A ``distribute`` keeping every notification in ``made``."""

    def keep(notification: Notification, _is_sync: bool) -> None:
        made.append(notification)

    return keep


def _next_slice(
    handed: deque[list[Any]], prepare: Callable[[int, int], list[Any]], start: int, stop: int
) -> list[Any]:
    if len(handed) == 2:
        handed.popleft().clear()
    return prepare(start, stop)


def _ignores(_old: Any, _new: Any) -> None:
    """The handler of stage 5: does nothing with what it is given."""


def reads_new(_old: Any, new: Any) -> Any:
    """The handler of stage 6: reads the new object's resourceVersion."""
    return new["metadata"]["resourceVersion"]


def reads_old_and_new(old: Any, new: Any) -> Any:
    """A handler reading ``old`` as well."""
    return old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"]


def reads_model(_old: Any, new: Any) -> Any:
    """The handler of stage 6 for a typed informer."""
    return new.metadata.resource_version


def reads_key(_old: Any, key: Any) -> Any:
    """A ``keys_only`` handler: the controller's shape."""
    return key


_STAGE_NAMES: Final = ("frame_us", "decode_us", "fifo_us", "store_us", "dispatch_us", "handler_us")


def stage_figures(
    stages: Mapping[str, float],
    *,
    events: int,
    whole: Span,
    choices: Mapping[str, float] | None = None,
    base: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """The case's figures: ``stages`` (µs per event, by metric name) and their sum; the
    whole pipeline's CPU µs per event, the collector's part of it and events per second,
    over the ``events - 1`` events after the first (``whole`` begins as that one is
    handled); and each choice's stages (``{name: µs}``) less the same stages without it
    (``base``)."""
    figures = dict(stages)
    figures["stage_sum_us"] = sum(stages[name] for name in _STAGE_NAMES if name in stages)
    counted = max(1, events - 1)
    figures["whole_us"] = _per_event(whole.cpu, counted)
    figures["whole_collector_us"] = _per_event(whole.collector, counted)
    figures["whole_events_per_s"] = counted / whole.wall
    for name, measured in (choices or {}).items():
        if base is None or name not in base:
            raise ValueError(f"choice {name!r} has no figure to be set against")
        figures[name] = measured - base[name]
    return figures


async def measure_stages(
    codec: Codec, body: Body
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Every stage of ``codec`` over ``body``, alone: the stages' µs per event by metric
    name; then, for the library's codecs, each user choice's stages and the same stages
    without the choice (empty for the naive loop)."""
    stages = _Stages(codec, body)
    figures = {"frame_us": stages.frame(), "decode_us": stages.decode()}
    if codec == "naive":
        figures["store_us"] = stages.store()
        return figures, {}, {}
    # The built-in kinds' models take a while to import; only this row needs them.
    from aioinformer.k8s.core_v1 import Pod

    figures["fifo_us"] = await stages.fifo()
    figures["store_us"] = stages.store()
    figures["dispatch_us"] = await stages.dispatch()
    figures["handler_us"] = stages.handler(reads_new)
    choices = {
        "own_index_us": stages.store(own_index=True) + stages.handler(reads_new, own_index=True),
        "reads_old_us": stages.handler(reads_old_and_new),
        "model_us": stages.handler(reads_model, model=Pod),
        "keys_only_us": stages.handler(reads_key, keys_only=True),
    }
    base = {
        "own_index_us": figures["store_us"] + figures["handler_us"],
        "reads_old_us": figures["handler_us"],
        "model_us": figures["handler_us"],
        "keys_only_us": figures["handler_us"],
    }
    return figures, choices, base


async def stages_case(url: str, params: dict[str, Any], *, codec: Codec) -> dict[str, float]:
    """Every row of the stage table for one codec, the whole pipeline over the replay
    server at ``url``."""
    body = Body(params)
    figures, choices, base = await measure_stages(codec, body)
    with Span() as whole:
        if codec == "naive":
            await whole_naive(url, params, whole)
        else:
            await whole_ours(url, params, codec, whole)
    return stage_figures(figures, events=body.events, whole=whole, choices=choices, base=base)


async def stages_ours(url: str, params: dict[str, Any], *, cache: CacheMode) -> dict[str, float]:
    """:func:`stages_case` for the library in that cache mode (its codec)."""
    return await stages_case(url, params, codec=cache)
