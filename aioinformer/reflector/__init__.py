"""The Reflector: keeps a store in step with one resource on the API server.

Role. The first stage of an informer. It LISTs the resource, hands the whole result to
the store with one ``replace(items, resource_version)``, then WATCHes from the list's
resourceVersion and applies each event with ``add``/``update``/``delete``. When the
watch ends it watches again from the last resourceVersion it saw; when the server has
forgotten that resourceVersion (410 Gone) it lists again. Its input is a
:class:`~aioinformer.listwatch.ListerWatcher`, its output the calls on a
:class:`ReflectorStore` (in an informer, a ``DeltaFIFO``).

Semantics are client-go v0.32's ``tools/cache/reflector.go``:

* **Lists.** The first list asks for resourceVersion ``"0"`` (any cached state will do)
  in pages of 500 (``page_size`` overrides it), following ``continue`` tokens; later
  pages clear the resourceVersion, and an expired token falls back to one unpaginated
  list. Relists ask for the last resourceVersion seen (bookmarks included), unpaginated
  unless ``page_size`` is set or the first list came back paginated. When a list's
  resourceVersion is expired (410) or too large (504 ``ResourceVersionTooLarge``), the
  list is retried at once with ``""``: a consistent read.
* **Watches** send ``allow_watch_bookmarks=True`` and a ``timeout_seconds`` drawn from
  [300, 600), spreading reconnects over time. A ``BOOKMARK`` advances the resourceVersion,
  and goes to ``store.bookmark(rv)`` when the store has it (a DeltaFIFO does). A watch that
  ends normally is re-opened from the last resourceVersion; one that ends within a second
  with no events, or with an ``ERROR`` event (410 Gone included), makes
  :meth:`Reflector.list_and_watch` return so that :meth:`Reflector.run` relists after a
  backoff. Refused connections and 429s back off (a ``Retry-After`` wins over the
  computed delay) and re-watch without relisting.
* **Inactivity deadline.** A watch that delivers nothing (no event, no bookmark) for
  longer than its deadline is closed and re-opened from the same resourceVersion: a dead
  connection never hangs the reflector. This is the one silence deadline of a watch (the
  client's own read timeout is off for watches). It is
  ``ReflectorOptions.watch_inactivity_timeout``, 120 s by default
  (``DEFAULT_WATCH_INACTIVITY_TIMEOUT``): two of the bookmarks kube-apiserver sends an
  idle watch about once a minute. It never exceeds the watch's ``timeout_seconds`` plus
  30 s, by which the server must have ended the watch. Raise it for a server that sends
  no bookmarks. Silence accrues only while the reflector waits on the stream (not while
  a slow store call holds it up) and is measured in twentieths of the deadline, so a
  stalled watch is closed after between 1 and 1.05 times the deadline.
* **Last heard.** ``statistics().seconds_since_heard`` counts from the last list
  answered, watch started, or progress the inactivity check saw on the stream (no clock
  read per event); see :mod:`aioinformer._pipeline.reflector_status`.
* **Streaming list** (``use_watch_list=True``, the default, with a source that declares
  :attr:`~aioinformer.listwatch.SourceInfo.watch_list`): the initial state comes from a
  watch with ``send_initial_events=True`` and ``resource_version_match="NotOlderThan"``;
  its events are collected apart and committed with one ``replace()`` at the bookmark
  annotated ``k8s.io/initial-events-end``, and the same stream then carries on as the
  watch, as in client-go 1.35+. A plain source (one that declares nothing) is never asked
  for one: nothing says its ``watch`` honours ``send_initial_events``.
* **Streaming-list retries.** A streaming list that fails in a way worth retrying (a 429,
  as an answer or an ``ERROR`` event; a refused or lost connection; the stream closing
  before its initial-events-end bookmark) is sent again after a backoff (the
  reflector's, a ``Retry-After`` winning), as client-go's ``watchList`` does, at most
  ``ReflectorOptions.max_watch_list_retries`` times (3 by default,
  ``DEFAULT_WATCH_LIST_RETRIES``): a throttled server is not sent the full LIST it can
  least afford. Past that, and at once after any other failure, the round falls back to
  LIST+WATCH: another ``Status`` (an old server's 422 or 400, a 403, a 410, any 5xx), a
  TLS failure, a stream closed within a second with nothing sent, one silent past its
  deadline, and a source that shows it serves a plain watch: a plain bookmark, or events
  and then no bookmark at all, and no initial-events-end bookmark within
  ``INITIAL_EVENTS_GRACE`` (10 s) after it (see
  :func:`~aioinformer._pipeline.watch_policy.watch_list_retriable` for why 5xx falls back).
  Each failure goes to the error handler; ``statistics()`` counts the retries and the
  fallbacks, and so do the metrics. After a fallback the next rounds list without trying
  to stream until a watch has opened, so a source that fails every request (a forbidden
  or unknown resource) costs one request per retry; once a watch opened, the next relist
  streams again, so a server upgraded meanwhile is used.
* **Failing fast.** Before the first list succeeds, a failure that no retry alone heals
  (:func:`~aioinformer.errors.fails_until_fixed`: an unknown resource, a 404, a 401 or
  403, a refused connection, a rejected certificate, an unusable configuration) is kept
  as :attr:`Reflector.sync_blocker`, which the waits for an informer's sync raise at once
  (see :meth:`~aioinformer.informer.SharedIndexInformer.wait_for_sync`). The reflector
  retries it all the same, with backoff: a CustomResourceDefinition installed later, a
  RoleBinding granted, a server started, and the next list syncs the store.
* **Backoff** between attempts is :class:`aioinformer._kernel.backoff.Backoff`: 0.8 s doubling
  to 30 s, with jitter, reset after two minutes without failures.
* **Resync.** With ``resync_period > 0``, ``store.resync()`` is called every period while
  watching (when ``should_resync`` allows it).
* **Garbage collector.** A list and its hand-over to the store run with CPython's cyclic
  collector paused (``gc_policy="pause"``), or paused and then frozen (``"freeze"``), or
  untouched (``"off"``); see :mod:`aioinformer._kernel.gcpolicy` for why and for the price.
* **Expected kind.** Watch events whose object is not of the expected ``kind`` /
  ``apiVersion`` are logged and skipped: they never reach the store. The expectation is
  ``expected_kind``/``expected_api_version`` when given; each one not given is adopted
  from the first LIST page that names it (:attr:`ObjectList.kind` /
  :attr:`ObjectList.api_version`, which the client derives from the List's kind:
  ``PodList`` → ``Pod``) and kept for the reflector's life. A source that names no kind
  (and a streaming list, which has no List) leaves the check off.
* **ERROR events.** A source raises the error of an ``ERROR`` event's ``Status``; one
  that yields the event instead (an adapted ``watch.Interface``) is handled exactly as if
  it had raised that error: a 410 relists from the last resourceVersion, a 429 backs off
  and re-watches, any other ``Status`` ends the watch and relists, and an object that is
  no ``Status`` ends the watch as a broken stream would. It is never skipped.

Reading a watch. :class:`WatchRead` (at the end of this module) takes one open watch stream
(the async iterator a ``ListerWatcher`` returned), applies its events to a sink (the
reflector's store, or the :class:`TemporaryStore` of a streaming list) and sums up how
the stream ended in a :class:`~aioinformer._pipeline.watch_policy.WatchEnd`, which the reflector
hands to :func:`~aioinformer._pipeline.watch_policy.next_step`.

A read's input: the stream (read a batch at a time when it declares
:class:`~aioinformer.listwatch.WatchStreamBase`, else an event at a time), the sink, a
:class:`Cursor` to advance, the inactivity deadline. Its output: the events of each read
checked (kind, resourceVersion, ``ERROR``) and handed to the sink with one call
(:class:`~aioinformer.listwatch.WatchBatchSink`) or one call per event, in stream order;
the cursor's resourceVersion after each batch; the ``WatchEnd``.

Errors. :meth:`Reflector.list_and_watch` raises when a list fails (after the retry at
``""``) or when opening a watch fails for a reason other than a refusal or a 429; it
returns normally when a watch ends in a way that calls for a relist. :meth:`Reflector.run`
loops over it with backoff until cancelled. ``watch_error_handler(reflector, error)``
(sync or async) hears about every failure exactly once: the errors ``list_and_watch``
raises through ``run()``, the ones it absorbs where they happen. How a watch ends
(re-watch, back off, relist, raise) is decided by the pure
:func:`aioinformer._pipeline.watch_policy.next_step`, shared by the watch and the streaming list.

Task model. Everything runs in the task that awaits ``run()``/``list_and_watch()``.
The reads of a watch stream are bounded by an ``asyncio.timeout`` scope on that task,
expired only while a read is awaited (see :class:`WatchRead`): a
callback on the injected clock, not a task, expires it when the stream has been silent
too long. With a resync period, a resync task calls ``store.resync()`` and, when that
fails, expires the current read's scope too; it is a
:meth:`~aioinformer._kernel.runner.Running.spawn` helper local to ``list_and_watch()``,
which reaps it before it returns. Cancellation is clean at every
await: a list in progress is dropped before anything reaches the store, an open watch
stream is closed in the reflector's task, with the iterator it was read through (see
:class:`OpenWatch`), and a backoff sleep simply ends.

Example::

    reflector = Reflector(client.resource("pods", namespace="default"), fifo)
    async with TaskRunner(name="pods") as tasks:
        tasks.start_soon(reflector.run(), name="reflector")
"""

from __future__ import annotations

from aioinformer._kernel.backoff import Backoff as Backoff
from aioinformer._kernel.gcpolicy import GCPolicy as GCPolicy
from aioinformer._kernel.metrics import AddCounterMetric as AddCounterMetric
from aioinformer._kernel.metrics import ReflectorMetricsProvider as ReflectorMetricsProvider
from aioinformer._pipeline.list_policy import DEFAULT_PAGE_SIZE as DEFAULT_PAGE_SIZE
from aioinformer._pipeline.reflector_status import ReflectorState as ReflectorState
from aioinformer._pipeline.reflector_status import ReflectorStatistics as ReflectorStatistics

# ListerWatcher, ListOptions, ObjectList and WatchEvent are re-exported: DESIGN.md names
# this module as their home for reflector users.
from aioinformer.listwatch import ListerWatcher as ListerWatcher
from aioinformer.listwatch import ListOptions as ListOptions
from aioinformer.listwatch import ObjectList as ObjectList
from aioinformer.listwatch import WatchEvent as WatchEvent
from aioinformer.reflector._options import (
    DEFAULT_WATCH_LIST_RETRIES as DEFAULT_WATCH_LIST_RETRIES,
)
from aioinformer.reflector._options import MIN_WATCH_TIMEOUT as MIN_WATCH_TIMEOUT
from aioinformer.reflector._options import ReflectorOptions as ReflectorOptions
from aioinformer.reflector._reflector import Reflector as Reflector
from aioinformer.reflector._reflector import WatchErrorHandler as WatchErrorHandler
from aioinformer.reflector._watch_read import DEADLINE_TICKS as DEADLINE_TICKS
from aioinformer.reflector._watch_read import (
    DEFAULT_WATCH_INACTIVITY_TIMEOUT as DEFAULT_WATCH_INACTIVITY_TIMEOUT,
)
from aioinformer.reflector._watch_read import INACTIVITY_GRACE as INACTIVITY_GRACE
from aioinformer.reflector._watch_read import INITIAL_EVENTS_GRACE as INITIAL_EVENTS_GRACE
from aioinformer.reflector._watch_read import Cursor as Cursor
from aioinformer.reflector._watch_read import InitialEventsIgnored as InitialEventsIgnored
from aioinformer.reflector._watch_read import OpenWatch as OpenWatch
from aioinformer.reflector._watch_read import ReflectorStore as ReflectorStore
from aioinformer.reflector._watch_read import TemporaryStore as TemporaryStore
from aioinformer.reflector._watch_read import WatchRead as WatchRead
from aioinformer.reflector._watch_read import WatchSink as WatchSink
from aioinformer.reflector._watch_read import inactivity_deadline as inactivity_deadline

__all__ = [
    "AddCounterMetric",
    "Backoff",
    "DEFAULT_WATCH_INACTIVITY_TIMEOUT",
    "DEFAULT_WATCH_LIST_RETRIES",
    "GCPolicy",
    "ListOptions",
    "ListerWatcher",
    "ObjectList",
    "Reflector",
    "ReflectorMetricsProvider",
    "ReflectorOptions",
    "ReflectorState",
    "ReflectorStatistics",
    "ReflectorStore",
    "WatchErrorHandler",
    "WatchEvent",
]
