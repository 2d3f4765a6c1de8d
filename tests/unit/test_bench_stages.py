"""The stage benchmark's pieces that need no server: its adapters drive the library's own
stages over the replay server's bytes (every event goes through each), its stopwatch and
span count what they should, its figures add up, and its table puts the naive loop beside
the two codecs. No figure is judged here."""

from __future__ import annotations

import asyncio
import gc
import itertools
import math
import weakref
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from aioinformer._objects.raw import CompactEntry
from aioinformer.indexer import NAMESPACE_INDEX
from aioinformer.k8s.core_v1 import Pod
from aioinformer.processor import NotificationKind
from bench.objects import APP_LABEL
from bench.run import SCENARIOS, render_summary
from bench.stages import (
    ADAPTERS,
    CHUNK_BYTES,
    Body,
    Codec,
    Span,
    Stopwatch,
    _Stages,
    chunked,
    fifo,
    hand_over,
    handler_call,
    in_batches,
    indexers,
    measure_stages,
    new_cache,
    node_index,
    one_handler,
    pause_cost,
    pipeline_codec,
    popped_as,
    reader,
    reads_key,
    reads_model,
    reads_new,
    reads_old_and_new,
    stage_figures,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.listwatch import WatchEvent

CODECS: tuple[Codec, ...] = ("naive", "objects", "compact")
LIBRARY_CODECS: tuple[Codec, ...] = ("objects", "compact")
OBJECTS, EVENTS = 3, 10
"""A small body: ten MODIFIED events over three Pods."""


@pytest.fixture(scope="module")
def body() -> Body:
    return Body({"objects": OBJECTS, "events": EVENTS})


class _Ticks:
    """A clock read by hand: ``now`` moves only when a test moves it, or by ``step`` on
    every read."""

    def __init__(self, step: float = 0.0) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _wire_body(body: Body) -> bytes:
    return b"".join(body.data.event_line(event) for event in range(1, EVENTS + 1))


def _last_versions(body: Body) -> dict[str, str]:
    """Each object's key and the resourceVersion of the last event that modified it."""
    versions = {}
    for line in body.lines(0, EVENTS):
        obj = orjson.loads(line)["object"]
        versions[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"] = obj["metadata"][
            "resourceVersion"
        ]
    return versions


def _decoded(codec: Codec, body: Body) -> list[WatchEvent]:
    return list(reader(codec).feed(b"".join(body.lines(0, EVENTS))))


# --- inputs -------------------------------------------------------------------------------


def test_chunks_are_the_parts_joined_and_cut_at_the_size_wherever_lines_end() -> None:
    parts = [b"ab\n", b"cdef\n", b"g\n"]
    assert list(chunked(parts, 4)) == [b"ab\nc", b"def\n", b"g\n"]
    assert list(chunked(parts, 100)) == [b"ab\ncdef\ng\n"]
    assert list(chunked([], 4)) == []
    with pytest.raises(ValueError, match="size must be at least 1"):
        list(chunked(parts, 0))


def test_batches_keep_the_order_and_leave_the_rest_to_the_last() -> None:
    assert list(in_batches(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(in_batches([], 3)) == []
    with pytest.raises(ValueError, match="size must be at least 1"):
        list(in_batches(range(3), 0))


def test_the_body_is_the_replay_servers_watch_body_cut_into_chunks(body: Body) -> None:
    chunks = body.chunks()
    assert b"".join(chunks) == _wire_body(body)
    assert all(len(chunk) == CHUNK_BYTES for chunk in chunks[:-1])
    assert [stop - start for start, stop in body.slices()] == [4, 4, 2]
    assert body.lines(2, 4) == [body.data.event_line(3), body.data.event_line(4)]
    listed = orjson.loads(body.list_body())
    assert len(listed["items"]) == OBJECTS


def test_a_body_needs_objects_and_two_events_at_least() -> None:
    with pytest.raises(ValueError, match="objects >= 1 and events >= 2"):
        Body({"objects": 3, "events": 1})


def test_the_own_index_function_indexes_pods_by_node() -> None:
    assert set(indexers()) == {NAMESPACE_INDEX, APP_LABEL, "tier"}
    assert indexers(own=True)["node"] is node_index
    assert node_index({"spec": {"nodeName": "node-1"}}) == ["node-1"]
    assert node_index({"spec": {}}) == []


# --- keeping time ---------------------------------------------------------------------


def test_the_stopwatch_counts_only_while_it_runs_and_not_what_it_pauses_for() -> None:
    clock = _Ticks()
    watch = Stopwatch(clock, pause_cost=0.5)
    clock.now = 10.0
    with watch:
        clock.now += 2.0

        def prepare(seconds: float) -> str:
            clock.now += seconds
            return "prepared"

        assert watch.paused(prepare, 100.0) == "prepared"
        clock.now += 3.0
    clock.now += 7.0
    assert watch.elapsed == 5.0
    assert watch.pauses == 1
    assert watch.net == 4.5


def test_a_stopwatch_refuses_to_start_twice_or_to_stop_unstarted() -> None:
    watch = Stopwatch(_Ticks())
    with pytest.raises(RuntimeError, match="not running"):
        watch.stop()
    watch.start()
    with pytest.raises(RuntimeError, match="already running"):
        watch.start()


def test_the_pause_cost_is_what_one_pause_adds_to_the_count() -> None:
    # Every read moves the clock by one: a run of four pauses counts five steps (the
    # stretch before each pause and the one after the last).
    assert pause_cost(_Ticks(step=1.0), pauses=4) == 1.25


def test_a_span_runs_from_its_first_begin_to_its_end_with_the_collections_between() -> None:
    cpu, wall = _Ticks(), _Ticks(step=1.0)
    between: list[int] = []

    def count(phase: str, _info: dict[str, int]) -> None:
        if phase == "stop" and spans_open[0]:
            between.append(1)

    spans_open = [False]
    gc.callbacks.append(count)
    try:
        with Span(cpu=cpu, wall=wall) as span:
            gc.collect(0)
            cpu.now = 1.0
            span.begin()
            spans_open[0] = True
            began_at = wall.now
            cpu.now = 5.0
            span.begin()  # only the first one counts
            gc.collect(0)
            cpu.now = 8.0
            span.end()
            spans_open[0] = False
            ended_at = wall.now
            gc.collect(0)
    finally:
        gc.callbacks.remove(count)
    assert span.cpu == 7.0
    # Each collection between took one read of the wall clock to time.
    assert span.collector == len(between) >= 1
    assert span.wall == ended_at - began_at
    assert count not in gc.callbacks
    assert span._callback not in gc.callbacks


def test_a_span_has_no_figures_before_it_ends_and_ends_once() -> None:
    span = Span(_Ticks(), _Ticks())
    with pytest.raises(RuntimeError, match="has not begun"):
        span.end()
    span.begin()
    with pytest.raises(RuntimeError, match="has not ended"):
        _ = span.cpu
    span.end()
    with pytest.raises(RuntimeError, match="ended already"):
        span.end()


def test_the_figures_add_the_stages_up_and_set_each_choice_against_its_base() -> None:
    cpu, wall = _Ticks(), _Ticks()
    whole = Span(cpu, wall)
    whole.begin()
    cpu.now, wall.now = 0.0010, 0.0020
    whole.end()
    stages = {"frame_us": 1.0, "decode_us": 2.0, "store_us": 3.5}
    figures = stage_figures(
        stages,
        events=101,
        whole=whole,
        choices={"model_us": 9.0, "keys_only_us": 0.5},
        base={"model_us": 4.0, "keys_only_us": 2.0},
    )
    assert figures["stage_sum_us"] == 6.5
    # From the first event handled: the 100 after it.
    assert figures["whole_us"] == pytest.approx(10.0)
    assert figures["whole_events_per_s"] == pytest.approx(50_000.0)
    assert figures["whole_collector_us"] == 0.0
    assert (figures["model_us"], figures["keys_only_us"]) == (5.0, -1.5)
    with pytest.raises(ValueError, match="choice 'model_us' has no figure"):
        stage_figures(stages, events=101, whole=whole, choices={"model_us": 9.0})


def test_what_a_slice_holds_is_freed_untimed_two_slices_later(body: Body) -> None:
    class Held:
        pass

    refs: list[weakref.ref[Held]] = []
    freed: list[list[bool]] = []
    watch = Stopwatch()

    def prepare(_start: int, _stop: int) -> list[Any]:
        # Called with the stopwatch stopped, after what it frees is freed.
        assert watch._since is None
        freed.append([ref() is None for ref in refs])
        held = Held()
        refs.append(weakref.ref(held))
        return [held]

    with watch:
        for _prepared in _Stages("naive", body)._prepared(watch, prepare):
            pass
    # The stage's own variable still names the last slice: only the one before that goes.
    assert freed == [[], [False], [True, False]]
    assert watch.pauses == 3


# --- the adapters drive the library's stages --------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_each_codec_frames_every_line_of_a_body_cut_anywhere(codec: Codec, body: Body) -> None:
    chunks = list(chunked([_wire_body(body)], 1_000))
    assert ADAPTERS[codec].frame(chunks) == EVENTS
    # The stand-in decode was the framing's alone: a reader decodes as before.
    assert _decoded(codec, body)[0].type == "MODIFIED"


def test_each_codec_decodes_a_line_into_its_own_object(body: Body) -> None:
    line = body.lines(0, 1)[0][:-1]
    version = str(OBJECTS + 1)
    (naive,) = ADAPTERS["naive"].decode([line])
    assert naive["metadata"]["resourceVersion"] == version
    (objects,) = ADAPTERS["objects"].decode([line])
    assert objects.type == "MODIFIED"
    assert objects.object == naive
    (compact,) = ADAPTERS["compact"].decode([line])
    assert compact.type == "MODIFIED"
    assert type(compact.object) is CompactEntry
    assert compact.object.resource_version == version
    assert compact.object.decode() == naive


@pytest.mark.parametrize("codec", LIBRARY_CODECS)
async def test_the_fifo_stage_hands_every_event_to_the_pop_side(codec: Codec, body: Body) -> None:
    cache = new_cache(codec, body.list_body(), indexers())

    async def reads() -> AsyncIterator[list[WatchEvent]]:
        events = _decoded(codec, body)
        for start in range(0, len(events), 4):
            yield events[start : start + 4]

    run = ADAPTERS[codec].fifo
    assert run is fifo
    assert await run(cache, reads()) == EVENTS


@pytest.mark.parametrize("codec", LIBRARY_CODECS)
def test_the_store_stage_writes_each_event_to_the_cache_and_its_indexes(
    codec: Codec, body: Body
) -> None:
    cache = new_cache(codec, body.list_body(), indexers(own=True))
    made: list[Any] = []
    adapters = ADAPTERS[codec]
    for batch in in_batches((popped_as(e.object) for e in _decoded(codec, body)), 4):
        adapters.store(cache, pipeline_codec(codec), batch, lambda n, _sync: made.append(n))
    assert len(made) == EVENTS
    assert {notification.kind for notification in made} == {NotificationKind.UPDATE}
    for key, version in _last_versions(body).items():
        assert cache.get_by_key(key)["metadata"]["resourceVersion"] == version
        namespace = key.partition("/")[0]
        assert key in cache.index_keys(NAMESPACE_INDEX, namespace)
    assert cache.list_index_func_values("node")
    # The update carries what the cache replaced.
    assert adapters.replaced is not None
    first = made[0]
    replaced = adapters.replaced(first)
    listed = replaced if codec == "objects" else replaced.decode()
    assert listed["metadata"]["resourceVersion"] == "1"


def test_the_naive_store_keeps_the_newest_object_by_key(body: Body) -> None:
    cache = new_cache("naive", body.list_body(), {})
    ADAPTERS["naive"].store(cache, [event.object for event in _decoded("naive", body)])
    assert {key: obj["metadata"]["resourceVersion"] for key, obj in cache.items()} == (
        _last_versions(body)
    )


async def test_dispatch_hands_every_notification_to_the_one_handler(body: Body) -> None:
    got: list[tuple[Any, Any]] = []
    all_got = asyncio.Event()

    def record(old: Any, new: Any) -> None:
        got.append((old, new))
        if len(got) == EVENTS:
            all_got.set()

    processor, _listener = one_handler(record)
    notifications: list[Any] = []
    cache = new_cache("compact", body.list_body(), indexers())
    for popped in in_batches((popped_as(e.object) for e in _decoded("compact", body)), 4):
        ADAPTERS["compact"].store(
            cache, pipeline_codec("compact"), popped, lambda n, _sync: notifications.append(n)
        )
    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(processor.run())
        for batch in in_batches(notifications, 4):
            hand_over(processor, batch)
            await asyncio.sleep(0)
        await all_got.wait()
        running.cancel()
    # Given as distributed: the compact codec's entries, undecoded.
    assert [(a, b) for _kind, a, b in notifications] == got
    assert all(type(new) is CompactEntry for _old, new in got)


def _update(codec: Codec, body: Body) -> tuple[Any, Any, str]:
    """The first event's update as the apply step distributes it, and its version."""
    cache = new_cache(codec, body.list_body(), indexers())
    made: list[Any] = []
    ADAPTERS[codec].store(
        cache,
        pipeline_codec(codec),
        [popped_as(_decoded(codec, body)[0].object)],
        lambda n, _s: made.append(n),
    )
    (notification,) = made
    assert notification.kind is NotificationKind.UPDATE
    return notification.a, notification.b, str(OBJECTS + 1)


@pytest.mark.parametrize("codec", LIBRARY_CODECS)
def test_the_handler_call_is_the_one_the_informer_binds(codec: Codec, body: Body) -> None:
    old, new, version = _update(codec, body)
    assert handler_call(codec, reads_new)(old, new) == version
    assert handler_call(codec, reads_old_and_new)(old, new) == ("1", version)
    first = _decoded("naive", body)[0].object["metadata"]
    key = f"{first['namespace']}/{first['name']}"
    assert handler_call(codec, reads_key, keys_only=True)(old, new) == key
    assert handler_call(codec, reads_model, model=Pod)(old, new) == version
    typed: list[Any] = []
    handler_call(codec, lambda _old, pod: typed.append(pod), model=Pod)(old, new)
    assert type(typed[0]) is Pod


def test_the_naive_loop_has_no_handler_to_call() -> None:
    with pytest.raises(ValueError, match="no handler"):
        handler_call("naive", reads_new)


@pytest.mark.parametrize("codec", CODECS)
async def test_every_stage_of_a_codec_sees_every_event(
    codec: Codec, body: Body, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full collection before each stage costs more than this body's stages together.
    monkeypatch.setattr("bench.stages._quiet", lambda: None)
    # Each stage raises when fewer events than the body's went through it.
    stages, choices, base = await measure_stages(codec, body)
    expected = ["frame_us", "decode_us", "store_us"]
    if codec != "naive":
        expected += ["fifo_us", "dispatch_us", "handler_us"]
    assert sorted(stages) == sorted(expected)
    assert set(choices) == set(base)
    assert set(choices) == (
        set() if codec == "naive" else {"own_index_us", "reads_old_us", "model_us", "keys_only_us"}
    )
    assert all(math.isfinite(value) for value in itertools.chain(stages.values(), choices.values()))


# --- the table --------------------------------------------------------------------------


def _stats(value: float) -> dict[str, Any]:
    return {"median": value, "min": value, "max": value, "samples": [value]}


def _entry(variants: dict[str, Any], ratios: dict[str, Any]) -> dict[str, Any]:
    """A stage scenario's results as the runner summarises them."""
    scenario = next(s for s in SCENARIOS if s.name == "stages")
    return {
        "name": scenario.name,
        "kind": scenario.kind,
        "reference": scenario.reference,
        "params": scenario.params,
        "variants": variants,
        "ratios": ratios,
        "targets": [],
    }


def test_the_stage_table_puts_the_naive_loop_beside_the_two_codecs() -> None:
    entry = _entry(
        {
            "baseline": {"metrics": {"decode_us": _stats(10.0)}, "errors": []},
            "ours": {"metrics": {"decode_us": _stats(12.0), "fifo_us": _stats(5.0)}, "errors": []},
            "ours-compact": {
                "metrics": {
                    "decode_us": _stats(4.0),
                    "fifo_us": _stats(4.5),
                    "keys_only_us": _stats(-12.25),
                },
                "errors": [],
            },
        },
        {"ours": {"decode_us": 1.2}, "ours-compact": {"decode_us": 0.4}},
    )
    table = render_summary({"scenarios": [entry]})
    assert table.startswith(
        '| scenario | stage (CPU µs per event) | naive loop | cache="objects" | cache="compact" |'
    )
    assert "| stages | 2. decode | 10.00 | 12.00 (1.20x) | 4.00 (0.40x) |" in table
    assert "| stages | 3. FIFO: reflector hand-off and pop | — | 5.00 | 4.50 |" in table
    assert "| stages | a keys_only handler instead | — | — | -12.25 |" in table
    # A figure no side reported has no row.
    assert "1. read and frame" not in table


def test_a_stage_run_that_failed_shows_where() -> None:
    failed = {"metrics": {}, "errors": ["RuntimeError: boom"]}
    entry = _entry({"baseline": failed, "ours": failed}, {})
    assert render_summary({"scenarios": [entry]}).endswith("| stages | — | error | error |  |")
