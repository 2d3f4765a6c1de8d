"""An in-memory ``ListerWatcher`` for unit tests: :class:`FakeListerWatcher`.

Role: stands in for an API server resource behind the :class:`~aioinformer.listwatch.
ListerWatcher` seam, so reflectors and informers can be tested without HTTP. Tests change
its objects (``add``/``modify``/``delete``, each bumping one resourceVersion counter, as
etcd does), break its watches (``drop_watches()``, ``reset_watch()``, ``compact()``) and
script failures for the next calls (``fail_next_list()``, ``stall_next_list()``,
``fail_next_watch()``, ``stall_next_watch()``, ``error_next_watch()``) or for the open
watches (``send_error()``, ``break_watches()``). Every ``ListOptions`` it receives is kept,
in order, in :attr:`FakeListerWatcher.list_calls` and :attr:`FakeListerWatcher.watch_calls`
(both interleaved in :attr:`FakeListerWatcher.requests`).

Behaviour, modelled on kube-apiserver (see the Kubernetes "API Concepts" page):

* LIST answers with the current objects, sorted by key, at the current resourceVersion;
  ``limit`` cuts pages and hands out a ``continue`` token that serves the rest of the same
  snapshot; a token made stale by ``compact()``/``reset_watch()`` answers 410 Expired. A
  resourceVersion newer than the current one answers 504 "Too large resource version".
  Each page names the items' ``kind``/``apiVersion`` when every stored object agrees on
  them (as a real ``PodList`` does), and leaves them ``None`` otherwise.
* WATCH from resourceVersion ``N`` replays the retained changes after ``N``, then streams
  live ones. ``N`` older than the retained history gets a 410 Expired ``ERROR`` event (as
  the watch cache sends it), ``N`` in the future a "Too large resource version" one. As
  the :class:`~aioinformer.listwatch.ListerWatcher` contract asks, an ``ERROR`` event is
  never yielded: the stream raises the ``ApiError`` for its Status, made by the same
  function as the real client's (:func:`aioinformer.watch.error_from_watch_status`).
  Without a resourceVersion (``None``, ``""`` or ``"0"``), or with ``send_initial_events``,
  the watch starts with a synthetic ``ADDED`` per current object; with
  ``send_initial_events`` and bookmarks allowed, a ``BOOKMARK`` annotated
  ``k8s.io/initial-events-end`` follows them. ``send_initial_events`` on a fake built with
  ``supports_watch_list=False`` answers 422 Invalid, as a server without the feature does.
* Label and field selectors filter lists and watches; an object modified into (out of)
  a watch's selector arrives as ``ADDED`` (``DELETED``).
* ``timeout_seconds`` is recorded and otherwise ignored: time never passes here.

Objects are raw dicts and are deep-copied on the way in and out, so neither side can
mutate the other's state. Scripted errors are raised by ``list()`` itself, or by the first
read of the watch stream (that is when a real watch request is sent).

Task model: everything runs on the caller's event loop; methods that change state are
synchronous and deliver to open watches through per-watch queues. The async ``wait_for_*``
helpers let a test wait (bounded, in real time) for the code under test to catch up.

Example::

    lw = FakeListerWatcher(objects=[pod("a"), pod("b")])
    reflector = Reflector(lw, store, clock=clock)
    ...
    lw.modify(pod("a", phase="Running"))
    lw.drop_watches()                      # the reflector re-watches from its last RV
    assert lw.watch_calls[-1].resource_version == lw.resource_version
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import itertools
from collections import deque
from typing import TYPE_CHECKING, Any, Final

from aioinformer._apiserver.objects import status_body
from aioinformer._objects.meta import meta_namespace_key
from aioinformer.errors import (
    AioinformerError,
    ApiError,
    BadRequest,
    KeyFuncError,
    UnprocessableEntity,
    api_error_from_status,
)
from aioinformer.labels import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from aioinformer.listwatch import (
    ADDED,
    BOOKMARK,
    DELETED,
    INITIAL_EVENTS_END_ANNOTATION,
    MODIFIED,
    DescribedListerWatcher,
    ListOptions,
    ObjectList,
    SourceInfo,
    WatchEvent,
    WatchStreamBase,
)
from aioinformer.watch import error_from_watch_status

if TYPE_CHECKING:
    import builtins
    from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping

__all__ = ["FakeListerWatcher"]

_END: Final = object()
"""Queue item that ends a watch stream normally."""


class _Stall:
    """Script entry: the watch opens and then never sends anything."""


class _ErrorEvent:
    """Script entry: the watch opens and sends one ``ERROR`` event carrying ``status``
    (raised as its ``ApiError``), then ends."""

    __slots__ = ("status",)

    def __init__(self, status: dict[str, Any]) -> None:
        self.status = status


_WatchScript = BaseException | _Stall | _ErrorEvent | None


def _expired_status(message: str) -> dict[str, Any]:
    return status_body(410, "Expired", message)


def _too_large_status(requested: int, current: int) -> dict[str, Any]:
    return status_body(
        504,
        "Timeout",
        f"Too large resource version: {requested}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def _key(obj: Mapping[str, Any]) -> str:
    try:
        return meta_namespace_key(obj)
    except KeyFuncError:
        # The fake's callers have always seen a plain ValueError naming the whole object.
        raise ValueError(f"object without metadata.name: {obj!r}") from None


class _Change:
    """One recorded change: the event type, the object after it, the object before it.

    Invariant: ``object["metadata"]["resourceVersion"] == str(rv)``.
    """

    __slots__ = ("object", "previous", "rv", "type")

    def __init__(
        self, type_: str, obj: dict[str, Any], previous: dict[str, Any] | None, rv: int
    ) -> None:
        self.type = type_
        self.object = obj
        self.previous = previous
        self.rv = rv


class _Filter:
    """The namespace and selectors of one request, pre-parsed."""

    __slots__ = ("fields", "labels", "namespace")

    def __init__(self, namespace: str | None, options: ListOptions) -> None:
        self.namespace = namespace
        self.labels: LabelSelector | None = (
            parse_label_selector(options.label_selector) if options.label_selector else None
        )
        self.fields: FieldSelector | None = (
            parse_field_selector(options.field_selector) if options.field_selector else None
        )

    def matches(self, obj: Mapping[str, Any] | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(meta.get("labels")):
            return False
        return self.fields is None or self.fields.matches(obj)


class _Watcher:
    """One open watch stream: its request, filter and delivery queue."""

    __slots__ = ("bookmarks", "filter", "queue", "streaming_list")

    def __init__(self, filter_: _Filter, *, bookmarks: bool, streaming_list: bool) -> None:
        self.filter = filter_
        self.bookmarks = bookmarks
        self.streaming_list = streaming_list
        self.queue: asyncio.Queue[object] = asyncio.Queue()

    def offer(self, change: _Change) -> None:
        """Queue ``change`` as this watch's selectors see it (maybe not at all)."""
        now = self.filter.matches(change.object)
        if change.type == MODIFIED:
            before = self.filter.matches(change.previous)
            if now and before:
                self.queue.put_nowait(WatchEvent(MODIFIED, copy.deepcopy(change.object)))
            elif now:
                self.queue.put_nowait(WatchEvent(ADDED, copy.deepcopy(change.object)))
            elif before:
                self.queue.put_nowait(WatchEvent(DELETED, copy.deepcopy(change.object)))
        elif now:
            self.queue.put_nowait(WatchEvent(change.type, copy.deepcopy(change.object)))


class FakeListerWatcher(DescribedListerWatcher):
    """An in-memory resource implementing the ``ListerWatcher`` protocol.

    ``resource`` and ``namespace`` name what it serves (``namespace=None``: all
    namespaces); it declares them, and streaming lists, as a
    :class:`~aioinformer.client.ResourceClient` does (:meth:`describe`), whatever
    ``supports_watch_list`` says: that is the server's side, as a client cannot know it
    beforehand. Objects missing ``apiVersion``/``kind`` get ``api_version``/``kind``.
    ``objects`` are added first, in order, taking resourceVersions 1, 2, ...
    ``history_limit`` bounds the retained changes (``None``: keep all until ``compact()``);
    a watch from before the retained history gets 410 Expired.
    ``send_initial_events_end=False`` holds back the bookmark that ends a streaming
    list's initial events until :meth:`send_initial_events_end` is called, so a test can
    slip changes in between.
    """

    def __init__(
        self,
        *,
        resource: str = "pods",
        namespace: str | None = None,
        api_version: str = "v1",
        kind: str = "Pod",
        objects: Iterable[Mapping[str, Any]] = (),
        supports_watch_list: bool = True,
        send_initial_events_end: bool = True,
        history_limit: int | None = None,
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        self.api_version = api_version
        self.kind = kind
        self.supports_watch_list = supports_watch_list
        self.auto_initial_events_end = send_initial_events_end
        self.list_calls: list[ListOptions] = []
        """Every ``ListOptions`` passed to :meth:`list`, in call order (copies)."""
        self.watch_calls: list[ListOptions] = []
        """Every ``ListOptions`` passed to :meth:`watch`, in call order (copies)."""
        self.requests: list[tuple[str, ListOptions]] = []
        """Both kinds of call interleaved, in order: ``("list" | "watch", options)``."""
        self._history_limit = history_limit
        # The current resourceVersion: the RV of the newest change (0 before any).
        self._rv = 0
        # Current objects by key. Invariant: each stored object's RV <= _rv.
        self._items: dict[str, dict[str, Any]] = {}
        # Retained changes, oldest first. Invariant: they are exactly the changes with
        # rv > _history_floor, in rv order.
        self._changes: deque[_Change] = deque()
        self._history_floor = 0
        self._watchers: list[_Watcher] = []
        # Snapshots behind issued continue tokens: token -> (list RV, remaining items).
        self._snapshots: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self._tokens = itertools.count(1)
        self._list_script: deque[BaseException | _Stall | None] = deque()
        self._watch_script: deque[_WatchScript] = deque()
        self._changed: asyncio.Event | None = None
        for obj in objects:
            self.add(obj)

    # ------------------------------------------------------------------ state

    def describe(self) -> SourceInfo:
        """Its resource and namespace; streaming lists supported."""
        return SourceInfo(resource=self.resource, namespace=self.namespace, watch_list=True)

    @property
    def resource_version(self) -> str:
        """The current resourceVersion (of the newest change), as a string."""
        return str(self._rv)

    @property
    def open_watches(self) -> int:
        """How many watch streams are open (started and not yet ended)."""
        return len(self._watchers)

    def objects(self) -> list[dict[str, Any]]:
        """Copies of the current objects, sorted by key."""
        return [copy.deepcopy(self._items[key]) for key in sorted(self._items)]

    def get(self, key: str) -> dict[str, Any] | None:
        """A copy of the object stored under ``key`` (``ns/name`` or ``name``), or None."""
        obj = self._items.get(key)
        return copy.deepcopy(obj) if obj is not None else None

    # ---------------------------------------------------------------- changes

    def add(self, obj: Mapping[str, Any], *, notify: bool = True) -> dict[str, Any]:
        """Create ``obj`` (replacing any object with its key); returns the stored copy.

        ``notify=False`` changes the state without telling open watches, as a watch
        that silently missed an event would (client-go's ``AddDropWatch``).
        """
        return self._change(ADDED, obj, notify)

    def modify(self, obj: Mapping[str, Any], *, notify: bool = True) -> dict[str, Any]:
        """Replace the object with ``obj``'s key; returns the stored copy."""
        return self._change(MODIFIED, obj, notify)

    def delete(self, obj: Mapping[str, Any] | str, *, notify: bool = True) -> dict[str, Any]:
        """Delete the object (given as an object or a key); returns its final state."""
        key = obj if isinstance(obj, str) else _key(obj)
        current = self._items.get(key)
        if current is None:
            raise KeyError(key)
        return self._change(DELETED, current, notify)

    def _change(self, type_: str, obj: Mapping[str, Any], notify: bool) -> dict[str, Any]:
        stored = copy.deepcopy(dict(obj))
        stored.setdefault("apiVersion", self.api_version)
        stored.setdefault("kind", self.kind)
        key = _key(stored)
        previous = self._items.get(key)
        if type_ == MODIFIED and previous is None:
            raise KeyError(key)
        self._rv += 1
        meta = stored.setdefault("metadata", {})
        meta["resourceVersion"] = str(self._rv)
        if type_ == DELETED:
            del self._items[key]
        else:
            self._items[key] = stored
        change = _Change(type_, stored, previous, self._rv)
        self._changes.append(change)
        if self._history_limit is not None:
            while len(self._changes) > self._history_limit:
                self._history_floor = self._changes.popleft().rv
        if notify:
            for watcher in self._watchers:
                watcher.offer(change)
        return copy.deepcopy(stored)

    def send_bookmark(self) -> None:
        """Send a ``BOOKMARK`` at the current resourceVersion to watches that allow them."""
        for watcher in self._watchers:
            if watcher.bookmarks:
                watcher.queue.put_nowait(WatchEvent(BOOKMARK, self._bookmark_object()))

    def send_error(self, status: Mapping[str, Any] | ApiError) -> None:
        """Send an ``ERROR`` event carrying ``status`` to every open watch, which ends
        them: each raises the status's ``ApiError`` after the events queued before it."""
        body = _status_of(status)
        for watcher in self._watchers:
            watcher.queue.put_nowait(self._error_event(body))

    def drop_watches(self) -> None:
        """End every open watch normally; the history stays, so re-watching works."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(_END)

    def break_watches(self, error: BaseException) -> None:
        """Make every open watch raise ``error`` from its next read, as a connection
        that breaks mid-stream does (say, ``WatchError``)."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(error)

    def send_initial_events_end(self) -> None:
        """Send the ``k8s.io/initial-events-end`` bookmark to the open streaming lists.

        Only needed with ``send_initial_events_end=False``; otherwise it follows the
        initial events by itself.
        """
        for watcher in self._watchers:
            if watcher.streaming_list and watcher.bookmarks:
                watcher.queue.put_nowait(WatchEvent(BOOKMARK, self._initial_events_end()))

    def compact(self) -> None:
        """Forget the change history and expire continue tokens, as etcd compaction does.

        Open watches keep streaming; a new watch from an older resourceVersion, or a
        LIST continued with an older token, gets 410 Expired.
        """
        self._changes.clear()
        self._history_floor = self._rv
        self._snapshots.clear()

    def reset_watch(self) -> None:
        """Simulate losing the server: end every watch and ``compact()``.

        Clients have to relist (client-go's ``ResetWatch``).
        """
        self.drop_watches()
        self.compact()

    # --------------------------------------------------------------- scripting

    def stall_next_list(self) -> None:
        """Make the next ``list()`` call wait forever (until cancelled)."""
        self._list_script.append(_Stall())

    def fail_next_list(self, *errors: BaseException | None) -> None:
        """Make the next ``list()`` calls raise these errors, one per call, in order.

        ``None`` lets that call through, so ``fail_next_list(None, Gone())`` fails the
        second call (say, the second page of a paginated list).
        """
        self._list_script.extend(errors)

    def fail_next_watch(self, *errors: BaseException | None) -> None:
        """Make the next watches raise these errors on their first read, one per call.

        ``None`` lets that watch through. Shares one queue with :meth:`stall_next_watch`
        and :meth:`error_next_watch`, so scripted behaviours apply in the order given.
        """
        self._watch_script.extend(errors)

    def stall_next_watch(self) -> None:
        """Make the next watch open and then send nothing, ever, until it is closed."""
        self._watch_script.append(_Stall())

    def error_next_watch(self, status: Mapping[str, Any] | ApiError) -> None:
        """Make the next watch open and send one ``ERROR`` event with ``status``, then
        end: its first read raises the status's ``ApiError``."""
        self._watch_script.append(_ErrorEvent(_status_of(status)))

    # ---------------------------------------------------------------- waiting

    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()

    async def _wait(self, predicate: Any, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                event = self._event()
                event.clear()
                await event.wait()

    async def wait_for_watchers(self, count: int = 1, *, timeout: float = 5.0) -> None:
        """Wait (real time, bounded) until at least ``count`` watches are open."""
        await self._wait(lambda: len(self._watchers) >= count, timeout)

    async def wait_for_list_calls(self, count: int, *, timeout: float = 5.0) -> None:
        """Wait (real time, bounded) until ``list()`` was called ``count`` times."""
        await self._wait(lambda: len(self.list_calls) >= count, timeout)

    async def wait_for_watch_calls(self, count: int, *, timeout: float = 5.0) -> None:
        """Wait (real time, bounded) until ``watch()`` was called ``count`` times."""
        await self._wait(lambda: len(self.watch_calls) >= count, timeout)

    # ---------------------------------------------------------- ListerWatcher

    async def list(self, options: ListOptions) -> ObjectList:
        """One LIST page for ``options`` (see the module docstring for the rules)."""
        self.list_calls.append(dataclasses.replace(options))
        self.requests.append(("list", self.list_calls[-1]))
        self._notify()
        await asyncio.sleep(0)  # a real request always suspends
        if self._list_script:
            scripted = self._list_script.popleft()
            if isinstance(scripted, _Stall):
                await asyncio.get_running_loop().create_future()
            elif scripted is not None:
                raise scripted
        if options.continue_:
            snapshot = self._snapshots.get(options.continue_)
            if snapshot is None:
                raise api_error_from_status(
                    _expired_status(
                        "The provided continue parameter is too old to display a consistent "
                        "list result. You can start a new list without the continue parameter."
                    )
                )
            list_rv, remaining = snapshot
        else:
            requested = _parse_rv(options.resource_version)
            if requested is not None and requested > self._rv:
                raise api_error_from_status(_too_large_status(requested, self._rv))
            request_filter = _Filter(self.namespace, options)
            remaining = [
                self._items[key]
                for key in sorted(self._items)
                if request_filter.matches(self._items[key])
            ]
            list_rv = self._rv
        token: str | None = None
        left: int | None = None
        if options.limit and len(remaining) > options.limit:
            page, rest = remaining[: options.limit], remaining[options.limit :]
            token = f"continue-{next(self._tokens)}"
            self._snapshots[token] = (list_rv, rest)
            left = len(rest)
        else:
            page = remaining
        kinds = {(obj.get("kind"), obj.get("apiVersion")) for obj in self._items.values()}
        kind, api_version = kinds.pop() if len(kinds) == 1 else (None, None)
        return ObjectList(
            items=copy.deepcopy(page),
            resource_version=str(list_rv),
            continue_=token,
            remaining_item_count=left,
            kind=kind,
            api_version=api_version,
        )

    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        """Open a watch for ``options``; the stream starts on its first read."""
        self.watch_calls.append(dataclasses.replace(options))
        self.requests.append(("watch", self.watch_calls[-1]))
        self._notify()
        script = self._watch_script.popleft() if self._watch_script else None
        stream = _WatchStream()
        stream.source = self._stream(options, script, stream)
        return stream

    async def _stream(
        self, options: ListOptions, script: _WatchScript, stream: _WatchStream
    ) -> AsyncGenerator[builtins.list[WatchEvent], None]:
        await asyncio.sleep(0)  # a real request always suspends
        if isinstance(script, BaseException):
            raise script
        if options.send_initial_events and not self.supports_watch_list:
            raise UnprocessableEntity(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": "ListOptions.meta.k8s.io is invalid: sendInitialEvents: "
                    "Forbidden: sendInitialEvents is forbidden for watch unless the "
                    "WatchList feature gate is enabled",
                    "reason": "Invalid",
                    "code": 422,
                }
            )
        stream.opened = True  # the server accepted the watch: errors now come as events
        if isinstance(script, _ErrorEvent):
            raise self._error_event(script.status)
        watcher = _Watcher(
            _Filter(self.namespace, options),
            bookmarks=bool(options.allow_watch_bookmarks),
            streaming_list=bool(options.send_initial_events),
        )
        failure = self._start(watcher, options)
        if failure is not None:
            raise self._error_event(failure)
        self._watchers.append(watcher)
        self._notify()
        try:
            if isinstance(script, _Stall):
                await asyncio.get_running_loop().create_future()
            queue = watcher.queue
            while True:
                # What is queued now arrives as one batch, as one read of a connection
                # brings what the server wrote meanwhile; an end or an error comes after
                # the events queued before it.
                item = await queue.get()
                batch: list[WatchEvent] = []
                while isinstance(item, WatchEvent):
                    batch.append(item)
                    if queue.empty():
                        break
                    item = queue.get_nowait()
                if batch:
                    yield batch
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
        finally:
            self._watchers.remove(watcher)
            self._notify()

    def _start(self, watcher: _Watcher, options: ListOptions) -> dict[str, Any] | None:
        """Queue what a new watch sends before live changes; a Status if it cannot start."""
        requested = _parse_rv(options.resource_version)
        initial = options.send_initial_events or requested is None or requested == 0
        if requested is not None and requested > self._rv:
            return _too_large_status(requested, self._rv)
        if initial:
            for key in sorted(self._items):
                obj = self._items[key]
                if watcher.filter.matches(obj):
                    watcher.queue.put_nowait(WatchEvent(ADDED, copy.deepcopy(obj)))
            if watcher.streaming_list and watcher.bookmarks and self.auto_initial_events_end:
                watcher.queue.put_nowait(WatchEvent(BOOKMARK, self._initial_events_end()))
            return None
        assert requested is not None
        if requested < self._history_floor:
            return _expired_status(
                f"too old resource version: {requested} ({self._history_floor + 1})"
            )
        for change in self._changes:
            if change.rv > requested:
                watcher.offer(change)
        return None

    def _error_event(self, status: Mapping[str, Any]) -> AioinformerError:
        """What a watch raises for an ``ERROR`` event carrying ``status``."""
        return error_from_watch_status(copy.deepcopy(dict(status)), url=f"fake:{self.resource}")

    def _initial_events_end(self) -> dict[str, Any]:
        bookmark = self._bookmark_object()
        bookmark["metadata"]["annotations"] = {INITIAL_EVENTS_END_ANNOTATION: "true"}
        return bookmark

    def _bookmark_object(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": {"resourceVersion": str(self._rv)},
        }

    def __repr__(self) -> str:
        ns = f" ns={self.namespace!r}" if self.namespace else ""
        return (
            f"<FakeListerWatcher {self.resource}{ns} rv={self._rv} objects={len(self._items)}"
            f" watches={len(self._watchers)}>"
        )


class _WatchStream(WatchStreamBase):
    """What :meth:`FakeListerWatcher.watch` returns: the event stream, plus ``opened``.

    ``opened`` turns true once the fake has accepted the watch request, before any
    event; from then on an error the stream raises is an ``ERROR`` event on an
    established watch, not a failed request (see :meth:`ListerWatcher.watch`).
    :meth:`batches` hands out what was queued for the watch by the time it is read.
    """

    __slots__ = ("_events", "_opened", "source")

    def __init__(self) -> None:
        self._opened = False
        self.source: AsyncGenerator[list[WatchEvent], None] | None = None
        self._events: AsyncGenerator[WatchEvent, None] | None = None

    @property
    def opened(self) -> bool:
        return self._opened

    @opened.setter
    def opened(self, value: bool) -> None:
        self._opened = value

    def batches(self) -> AsyncGenerator[list[WatchEvent], None]:
        assert self.source is not None
        return self.source

    def __aiter__(self) -> AsyncGenerator[WatchEvent, None]:
        if self._events is None:
            self._events = self.one_by_one(self.batches())
        return self._events

    async def aclose(self) -> None:
        """Close the stream, as closing a real watch closes its connection."""
        if self._events is not None:
            await self._events.aclose()
        if self.source is not None:
            await self.source.aclose()


def _parse_rv(value: str | None) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise BadRequest(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": f"invalid resource version: {value!r}",
                "reason": "BadRequest",
                "code": 400,
            }
        ) from None


def _status_of(status: Mapping[str, Any] | ApiError) -> dict[str, Any]:
    if isinstance(status, ApiError):
        body = dict(status.status)
        body.setdefault("code", status.code)
        return body
    return dict(status)
