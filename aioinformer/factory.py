"""Shared informers for a whole program: :class:`SharedInformerFactory`.

Role: hands out one :class:`~aioinformer.informer.SharedIndexInformer` per distinct
``(resource, namespace, label selector, field selector, metadata_only)``, so every part of
a program that watches pods shares one watch connection and one cache. Input: a
:class:`~aioinformer.client.Client`. Output: informers, started and stopped together.

Resources are named as :meth:`Client.resource` accepts them: ``"pods"``, ``"v1/configmaps"``,
``"apps/v1/deployments"``, ``"deployments.apps"``, a :class:`~aioinformer.client.GVR`, or a
custom resource's plural. Informers are shared by the resource a name means: every name of
a built-in resource (``"configmaps"``, ``"configmap"``, ``"cm"``, ``"ConfigMap"``,
``"v1/configmaps"``, ``GVR("", "v1", "configmaps")``) gets one informer, watching that
group/version/resource, from a table of kube-apiserver's built-ins
(:mod:`aioinformer.client._builtin`), so no discovery is needed to tell them apart. A
custom resource's names are resolved through discovery when its informer first lists,
so the factory cannot know before then that ``"widgets"`` and ``"example.com/v1/widgets"``
are one resource: use one spelling per custom resource.

Every informer the factory builds carries the namespace index (as client-go's generated
informers do), so ``lister().list(namespace=...)`` is an index lookup.

Task model: the factory is a :class:`~aioinformer._kernel.lifecycle.Service` whose run
is one supervisor, owning a task group (:class:`~aioinformer._kernel.runner.TaskRunner`)
with one task per informer, each running ``informer.run()``; it starts every informer
built so far, is ready then (without waiting for sync), and once it has started,
``informer_for`` hands each new informer over to it (through a queue: only the supervisor
starts tasks in its group) to start at once. An informer that fails is logged as the
factory stops and does not stop the others. Run it with ``async with factory:``, ``await
factory.run()``, or client-go's pair ``await factory.start()`` (the run in a task of its
own) and ``await factory.shutdown()`` (:meth:`~SharedInformerFactory.stop`, then wait):
stopping ends the supervisor, which cancels every informer, and waits until each has
stopped and closed its connection.

Example::

    async with client, SharedInformerFactory(client, resync_period=600) as factory:
        pods = factory.informer_for("pods", namespace="default")
        pods.add_event_handler(on_add=...)
        await factory.wait_for_cache_sync(timeout=30)  # or CacheSyncError saying why not
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aioinformer._kernel.lifecycle import Service, State
from aioinformer._kernel.runner import TaskRunner
from aioinformer._kernel.sync import Watched, wait_synced
from aioinformer._objects.meta import namespace_of, uid_of
from aioinformer._pipeline.watch_policy import RelistRequested
from aioinformer.client import GVR, Client, ResourceInfo
from aioinformer.client._builtin import builtin_gvr
from aioinformer.health import FactoryHealth
from aioinformer.indexer import NAMESPACE_INDEX, IndexFunc, as_indexers, namespace_index_func
from aioinformer.informer import SharedIndexInformer
from aioinformer.labels import parse_field_selector, parse_label_selector
from aioinformer.listwatch import (
    ADDED,
    DELETED,
    MODIFIED,
    DescribedListerWatcher,
    ListOptions,
    SourceInfo,
)
from aioinformer.reflector import ReflectorOptions
from aioinformer.shard_selector import ShardSelector, parse_shard_selector

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping
    from types import EllipsisType

    from anyio.abc import TaskStatus

    from aioinformer._kernel.backoff import Backoff
    from aioinformer._kernel.clock import Clock
    from aioinformer.audit import CacheAudit
    from aioinformer.informer import CacheMode
    from aioinformer.listwatch import Decoder, ObjectList, WatchEvent
    from aioinformer.processor import SlowHandlerThresholds

__all__ = ["InformerKey", "SelectionMoved", "SharedInformerFactory", "resource_key"]

logger = logging.getLogger(__name__)

_OBJECT_EVENTS = frozenset((ADDED, MODIFIED, DELETED))


@dataclass(frozen=True, slots=True)
class InformerKey:
    """What makes two informers of a factory the same informer."""

    resource: str
    """The resource it means: a GVR string (``"v1/configmaps"``) for a built-in resource
    or a name with a version, else the custom resource's name in lower case."""
    namespace: str | None
    """``None`` for all namespaces."""
    label_selector: str | None
    field_selector: str | None
    metadata_only: bool
    shard_selector: str | None = None
    """The shard selector (KEP-5866) in its normalised text, ``None`` for every shard."""
    spelling: str = dataclasses.field(default="", compare=False)
    """How the first ``informer_for`` call named the resource (``"configmaps"``, ``"cm"``,
    ``"v1/configmaps"``), for names and messages; not part of the identity."""

    def describe(self) -> str:
        """A readable name: ``"pods"``, ``"apps/v1/deployments ns=default l=app=web"``
        (the resource as first named), as its informer's source describes it."""
        return SourceInfo(
            resource=self.spelling or self.resource,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            metadata_only=self.metadata_only,
            shard_selector=self.shard_selector,
        ).label


def _canonical(resource: str | GVR | ResourceInfo) -> GVR | ResourceInfo | str:
    """What ``resource`` names, as far as it is known without discovery: a
    :class:`ResourceInfo` as given; a :class:`GVR` for a GVR, ``"v1/configmaps"``, or any
    name of a built-in resource (``"cm"``, ``"ConfigMap"``, ``"deployments.apps"``);
    otherwise the word in lower case (a custom resource's name, resolved on first list)."""
    if isinstance(resource, GVR | ResourceInfo):
        return resource
    if "/" in resource:
        return GVR.parse(resource)
    return builtin_gvr(resource) or resource.lower()


def _key_of(resource: GVR | ResourceInfo | str) -> str:
    return str(resource.gvr if isinstance(resource, ResourceInfo) else resource)


def resource_key(resource: str | GVR | ResourceInfo) -> str:
    """The resource as an :class:`InformerKey` names it, known without discovery: two
    spellings of one resource (``"cm"``, ``"configmaps"``, ``"v1/configmaps"``) give the
    same key."""
    return _key_of(_canonical(resource))


def _spelling(resource: str | GVR | ResourceInfo) -> str:
    """How an informer's name and messages give ``resource``: a bare word as given (lower
    case), anything with a version as its GVR string."""
    if isinstance(resource, str) and "/" not in resource:
        return resource.lower()
    return _key_of(_canonical(resource))


def _check_selectors(label_selector: str | None, field_selector: str | None) -> None:
    """Raise :class:`~aioinformer.errors.SelectorError` for a selector that does not parse:
    sent as is, the server would refuse every LIST and the reflector retry it forever."""
    if label_selector:
        parse_label_selector(label_selector)
    if field_selector:
        parse_field_selector(field_selector)


def _shard_text(selector: str | ShardSelector | None) -> str | None:
    """A shard selector's normalised text (two spellings of one selector share an
    informer), checked: :class:`~aioinformer.errors.SelectorError` when it does not parse."""
    if selector is None:
        return None
    if isinstance(selector, str):
        selector = parse_shard_selector(selector)
    return str(selector)


class SharedInformerFactory(Service):
    """Builds, shares, starts and stops informers for one client.

    Defaults for every informer: ``namespace`` (``None``: all namespaces),
    ``resync_period`` (seconds, 0 = never), ``label_selector``, ``field_selector``,
    ``shard_selector``, ``transform`` and ``clock``; ``informer_for`` may override the
    namespace and selectors. A selector that does not parse raises
    :class:`~aioinformer.errors.SelectorError` here and in ``informer_for``, before any
    request.

    ``shard_selector`` (a :class:`~aioinformer.shard_selector.ShardSelector` or its text)
    asks the server for one slice of each resource (KEP-5866, kube-apiserver 1.36 behind
    the ``ShardedListAndWatch`` gate, or ``aioinformer proxy`` in front of any cluster).
    Where a LIST answer does not say it applied the selector (no ``shardInfo``: an older
    server, or the gate off), the informer keeps only the slice itself, on every page and
    watch event, and logs once that it does: the cache holds the same objects either way,
    at the cost of watching the whole resource.

    Reflector settings for every informer: ``backoff``, a callable returning a new
    :class:`~aioinformer._kernel.backoff.Backoff` for each informer (a backoff holds one
    component's failure history, so informers never share one), for instance
    ``functools.partial(Backoff, initial=1.0, cap=60.0, clock=clock)``; and
    ``reflector``, one :class:`~aioinformer.reflector.ReflectorOptions` handed to every
    informer, for instance ``ReflectorOptions(watch_inactivity_timeout=60.0,
    gc_policy="freeze")``: ``watch_inactivity_timeout`` (seconds of silence after which
    a watch is re-opened; 120 by default), ``gc_policy`` (``"pause"``, ``"freeze"`` or
    ``"off"``, see :class:`SharedIndexInformer`), ``use_watch_list`` (true by default:
    the initial state and every relist come from a streaming list, falling back to
    LIST+WATCH where the server refuses one), ``page_size`` (LIST page size; ``None``:
    pages of 500 for a first list) and the rest. Its ``resync_period`` is replaced by
    each informer's.
    ``cache`` (``"compact"``, the default, or ``"objects"``) is every informer's cache
    representation, see :class:`SharedIndexInformer`; ``slow_handler_thresholds``
    (:class:`~aioinformer.processor.SlowHandlerThresholds`) every informer's bounds past
    which a handler call is reported as slow; ``in_order=True`` makes every informer
    deliver each watch event in arrival order, uncoalesced (see
    :class:`SharedIndexInformer`); ``strict_indexes=True`` makes every informer stop
    when an index function fails on an object, instead of leaving the object out of that
    index (see :class:`SharedIndexInformer`). ``cache_audit`` (a
    :class:`~aioinformer.audit.CacheAudit`; ``None``, the default: no audits) makes every
    informer audit its cache, each listing its own objects (resource, namespace,
    selectors) as ``PartialObjectMetadata``; so it must not name a ``lister``
    (``ValueError``).
    """

    def __init__(
        self,
        client: Client,
        *,
        namespace: str | None = None,
        resync_period: float = 0.0,
        label_selector: str | None = None,
        field_selector: str | None = None,
        shard_selector: str | ShardSelector | None = None,
        transform: Callable[[Any], Any] | None = None,
        clock: Clock | None = None,
        backoff: Callable[[], Backoff] | None = None,
        reflector: ReflectorOptions | None = None,
        cache: CacheMode = "compact",
        slow_handler_thresholds: SlowHandlerThresholds | None = None,
        in_order: bool = False,
        cache_audit: CacheAudit | None = None,
        strict_indexes: bool = False,
    ) -> None:
        _check_selectors(label_selector, field_selector)
        self._shard_selector = _shard_text(shard_selector)
        if cache_audit is not None and cache_audit.lister is not None:
            raise ValueError(
                "a factory's cache_audit must not name a lister: each informer audits "
                "through its own resource's metadata lister"
            )
        self._cache_audit = cache_audit
        if cache not in ("compact", "objects"):
            raise ValueError(f"cache must be 'compact' or 'objects', got {cache!r}")
        self._cache: CacheMode = cache
        self._slow_handler_thresholds = slow_handler_thresholds
        self._in_order = in_order
        self._strict_indexes = strict_indexes
        # Checked when it was built; every informer gets this one object.
        self._reflector_options = reflector if reflector is not None else ReflectorOptions()
        self._client = client
        self._namespace = namespace
        self._resync_period = resync_period
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._transform = transform
        self._clock = clock
        self._backoff = backoff
        # Every informer built, by key; insertion-ordered.
        self._informers: dict[InformerKey, SharedIndexInformer] = {}
        # Keys of the informers handed to the supervisor, in order; emptied by shutdown().
        self._launched: list[InformerKey] = []
        # Informers handed over by informer_for() once started, for the supervisor to start;
        # None asks it to stop.
        self._to_start: asyncio.Queue[tuple[InformerKey, SharedIndexInformer] | None] = (
            asyncio.Queue()
        )
        # Informers whose run ended with an error, logged as the supervisor ends.
        self._failures: list[tuple[InformerKey, Exception]] = []
        # Set by shutdown() (before the start, too) and as the run begins to end.
        self._shut_down = False

    def informer_for(
        self,
        resource: str | GVR | ResourceInfo,
        *,
        namespace: str | EllipsisType | None = ...,
        label_selector: str | EllipsisType | None = ...,
        field_selector: str | EllipsisType | None = ...,
        shard_selector: str | ShardSelector | EllipsisType | None = ...,
        metadata_only: bool = False,
        model: type[Any] | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        resync_period: float | None = None,
    ) -> SharedIndexInformer:
        """The shared informer for this resource, namespace, selectors and
        ``metadata_only`` (``...`` means the factory's default), built on first request.

        ``metadata_only=True`` lists and watches ``PartialObjectMetadata``: the cached
        objects are ``meta.k8s.io/v1`` ``PartialObjectMetadata`` carrying ``apiVersion``,
        ``kind`` and ``metadata`` only, as the server sends them.
        ``model`` makes its listers and handlers typed (a later request with another
        model raises ``ValueError``); ``indexers`` (a mapping of names to index functions,
        else :class:`~aioinformer.errors.IndexerArgumentsError`) are added to the shared
        informer when their names are new; ``resync_period`` applies when the informer is
        built. Once the factory has started, a new informer starts at once.
        """
        if self._shut_down:
            raise RuntimeError("the factory has been shut down")
        # Checked first: a function passed as indexers= builds nothing.
        indexers = as_indexers(indexers)
        canonical = _canonical(resource)
        key = InformerKey(
            resource=_key_of(canonical),
            spelling=_spelling(resource),
            namespace=self._namespace if namespace is ... else namespace,
            label_selector=self._label_selector if label_selector is ... else label_selector,
            field_selector=self._field_selector if field_selector is ... else field_selector,
            metadata_only=metadata_only,
            shard_selector=(
                self._shard_selector if shard_selector is ... else _shard_text(shard_selector)
            ),
        )
        informer = self._informers.get(key)
        if informer is None:
            _check_selectors(key.label_selector, key.field_selector)
            informer = self._build(canonical, key, model, resync_period)
            self._informers[key] = informer
            if self._state is not State.NEW:
                self._launched.append(key)
                self._to_start.put_nowait((key, informer))
                informer._schedule_run()
        elif model is not None and informer.model is not model:
            raise ValueError(
                f"informer {key.describe()} already exists with model "
                f"{getattr(informer.model, '__name__', None)}, not {model.__name__}"
            )
        if indexers:
            existing = informer.indexer.get_indexers()
            new = {name: func for name, func in indexers.items() if name not in existing}
            if new:
                informer.add_indexers(new)
        return informer

    def _build(
        self,
        resource: str | GVR | ResourceInfo,
        key: InformerKey,
        model: type[Any] | None,
        resync_period: float | None,
    ) -> SharedIndexInformer:
        resource_client = self._client.resource(
            resource, key.namespace, metadata_only=key.metadata_only
        )
        lister_watcher = _SelectedResource(resource_client, key)
        return SharedIndexInformer(
            lister_watcher,
            resync_period=self._resync_period if resync_period is None else resync_period,
            indexers={NAMESPACE_INDEX: namespace_index_func},
            transform=self._transform,
            model=model,
            clock=self._clock,
            backoff=None if self._backoff is None else self._backoff(),
            reflector=self._reflector_options,
            cache=self._cache,
            slow_handler_thresholds=self._slow_handler_thresholds,
            in_order=self._in_order,
            audit=self._cache_audit,
            strict_indexes=self._strict_indexes,
        )

    async def remove_informer(self, informer: SharedIndexInformer | InformerKey) -> None:
        """Stop an informer of this factory, forget it, and return once its run has ended
        (its watch closed, its handlers' tasks ended): what a controller for a resource
        that went away (a deleted CustomResourceDefinition) does with its informers. A
        later ``informer_for`` with the same key builds a new one. ``ValueError`` for an
        informer (or key) this factory does not hold."""
        if isinstance(informer, InformerKey):
            key: InformerKey | None = informer
            found = self._informers.get(informer)
        else:
            key = next((k for k, i in self._informers.items() if i is informer), None)
            found = informer if key is not None else None
        if key is None or found is None:
            raise ValueError(f"{informer!r} is not an informer of this factory")
        del self._informers[key]
        if key in self._launched:
            self._launched.remove(key)
        await found.aclose()

    def reselect(
        self,
        informer: SharedIndexInformer,
        *,
        shard_selector: str | ShardSelector | EllipsisType | None = ...,
        label_selector: str | EllipsisType | None = ...,
    ) -> bool:
        """Move an informer of this factory to other selectors while it runs (``...``
        leaves one as it is, ``None`` drops it): its requests carry them from now on, and
        it relists at once (after its reflector's backoff), so the objects it no longer
        selects leave its cache as deletions (tombstones, to its handlers) and the newly
        selected ones arrive as adds. Before it starts, its first list uses them. What a
        shard of a ring whose slots change does. The informer keeps its key (a later
        ``informer_for`` with the key's selectors still returns it). False when nothing
        changed; ``ValueError`` for an informer this factory does not hold;
        :class:`~aioinformer.errors.SelectorError` for a selector that does not parse."""
        key = next((k for k, i in self._informers.items() if i is informer), None)
        source = informer.lister_watcher
        if key is None or not isinstance(source, _SelectedResource):
            raise ValueError(f"{informer!r} is not an informer of this factory")
        selection = source.selection
        shards = selection.shard_selector if shard_selector is ... else _shard_text(shard_selector)
        labels = selection.label_selector if label_selector is ... else label_selector
        _check_selectors(labels, key.field_selector)
        if (shards, labels) == (selection.shard_selector, selection.label_selector):
            return False
        selection.move_shards(shards)
        selection.label_selector = labels
        informer._request_relist(SelectionMoved(f"selectors now l={labels} s={shards}"))
        return True

    def informers(self) -> dict[InformerKey, SharedIndexInformer]:
        """Every informer built so far, by key."""
        return dict(self._informers)

    @property
    def service_name(self) -> str:
        return "informer factory"

    async def start(self) -> None:
        """Start every informer not yet started, in a task of the factory's own (client-go's
        ``Start``); later ``informer_for`` calls start theirs at once. Returns without
        waiting for sync. Idempotent, also once ``async with`` or ``run()`` started it;
        ``RuntimeError`` once it was shut down. :meth:`shutdown` ends it."""
        if self._shut_down:
            raise RuntimeError("the factory has been shut down")
        if self._state is State.NEW:
            await self._start_in_task()

    async def _serve(self, *, task_status: TaskStatus[Any]) -> None:
        """Run every informer: those built so far, then each ``informer_for`` hands over,
        until asked to stop; then log the informers that failed."""
        try:
            async with TaskRunner(name="informer") as informers:
                for key, informer in self._informers.items():
                    if key not in self._launched:
                        self._launched.append(key)
                        informer._schedule_run()
                        informers.start_soon(self._run(key, informer), name=informer.name)
                task_status.started()
                while (handed := await self._to_start.get()) is not None:
                    key, informer = handed
                    informers.start_soon(self._run(key, informer), name=informer.name)
        finally:
            self._shut_down = True
            for key, exc in self._failures:
                logger.error("informer %s failed", key.describe(), exc_info=exc)
            self._failures.clear()
            self._launched.clear()

    def _request_stop(self) -> None:
        self._shut_down = True
        self._to_start.put_nowait(None)

    async def _run(self, key: InformerKey, informer: SharedIndexInformer) -> None:
        try:
            await informer.run()
        except Exception as exc:  # noqa: BLE001
            # Kept for shutdown(): one informer's failure must not stop the others.
            self._failures.append((key, exc))

    async def wait_for_cache_sync(
        self, timeout: float | None = None, *, fail_fast: bool = True
    ) -> dict[str, bool]:
        """Wait until every started informer has synced, at most ``timeout`` seconds (on
        the event loop's clock; ``None``: no limit) in all; returns each informer's name
        mapped to ``True``.

        Raises :class:`~aioinformer.errors.CacheSyncError` naming each unsynced
        informer's resource, namespace and last error when the timeout passes first, at
        once when an informer's run ended before it synced, and at once when an
        informer's first list failed in a way no retry alone heals (a resource the server
        does not serve, a 401 or 403, a refused connection; the error's ``cause``), as
        ``informer.wait_for_sync()`` does. The informers keep retrying: with
        ``fail_fast=False`` the wait goes on until they sync (a CustomResourceDefinition
        installed meanwhile) or the timeout passes. Raises ``RuntimeError``
        when the factory was never started or has been shut down: nothing would ever
        sync. A factory started with no informers returns ``{}``.
        """
        if self._state is State.NEW:
            raise RuntimeError(
                "the informer factory was never started: use 'async with factory:' or "
                "'await factory.start()' before waiting for its caches to sync"
            )
        if self._shut_down:
            raise RuntimeError("the informer factory has been shut down: its caches never sync")
        watched = [self._watched(key) for key in self._launched]
        await wait_synced(watched, timeout=timeout, fail_fast=fail_fast)
        return {w.informer.name: True for w in watched}

    def _watched(self, key: InformerKey) -> Watched:
        def run_failure() -> BaseException | None:
            return next((exc for failed, exc in self._failures if failed == key), None)

        informer = self._informers[key]
        return dataclasses.replace(Watched.of(informer), run_failure=run_failure)

    def health(self) -> FactoryHealth:
        """Whether every informer is synced and live (``ready``) and none has stopped
        (``live``), with each one's record by name: see :mod:`aioinformer.health`. Before
        :meth:`start` the factory is not ready; once shutting down, live and not ready."""
        return FactoryHealth.of(
            {informer.name: informer.health() for informer in self._informers.values()},
            started=self._state is not State.NEW,
            stopping=self._shut_down,
        )

    async def shutdown(self) -> None:
        """client-go's ``Shutdown``: the same as :meth:`aclose`."""
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every informer and wait until all have stopped (:meth:`stop`, then wait for
        the run). Idempotent; before the start, it only refuses later informers and starts.

        An informer whose run ended with an error is logged as the factory stops, so
        that one failure does not hide the others.
        """
        self._shut_down = True
        # Finishes stopping even if cancelled meanwhile: no task may outlive us.
        failure = await self._stop_and_wait()
        if failure is not None:
            logger.error("the informer factory failed", exc_info=failure)

    def __repr__(self) -> str:
        return f"<SharedInformerFactory informers={len(self._informers)} {self._state.name}>"


class SelectionMoved(RelistRequested):
    """Why an informer relists after :meth:`SharedInformerFactory.reselect`: its selectors
    moved (logged at INFO: a move is no fault)."""


class _Selection:
    """The label and shard selectors an informer's requests carry, shared by every copy of
    its source (the decoding one the reflector reads through, the audit's metadata
    lister), so that :meth:`SharedInformerFactory.reselect` moves them all at once; and
    whether the server applies the shard selector, as the last LIST page said (``None``
    until one has answered)."""

    __slots__ = ("label_selector", "served", "shard_selector", "shards")

    def __init__(self, label_selector: str | None, shard_selector: str | None) -> None:
        self.label_selector = label_selector
        self.shard_selector = shard_selector
        self.shards = parse_shard_selector(shard_selector) if shard_selector is not None else None
        self.served: bool | None = None

    def move_shards(self, text: str | None) -> None:
        self.shard_selector = text
        self.shards = parse_shard_selector(text) if text is not None else None
        self.served = None


class _SelectedResource(DescribedListerWatcher):
    """A ListerWatcher adding the informer's label, field and shard selectors to every
    request of a resource client; it describes itself by them.

    A shard selector the server did not apply (a LIST page without ``shardInfo``) is
    applied here instead, to that page and to the watches that follow it, until a LIST
    says the server applies it. A streaming list's answer cannot say, so before the first
    watch of a source no LIST has answered for, one LIST of a single object asks. The
    label and shard selectors may move while the informer runs
    (:meth:`SharedInformerFactory.reselect`)."""

    __slots__ = ("_key", "_resource", "_warned", "selection")

    def __init__(
        self,
        resource: DescribedListerWatcher,
        key: InformerKey,
        selection: _Selection | None = None,
    ) -> None:
        self._resource = resource
        self._key = key
        self.selection = (
            selection
            if selection is not None
            else _Selection(key.label_selector, key.shard_selector)
        )
        self._warned = False

    def describe(self) -> SourceInfo:
        key = self._key
        selection = self.selection
        inner = self._resource.describe()
        return SourceInfo(
            resource=key.spelling or key.resource,
            namespace=key.namespace,
            label_selector=selection.label_selector,
            field_selector=key.field_selector,
            metadata_only=key.metadata_only,
            shard_selector=selection.shard_selector,
            watch_list=inner.watch_list,
            server=inner.server,
        )

    def _options(self, options: ListOptions) -> ListOptions:
        key = self._key
        selection = self.selection
        labels, shards = selection.label_selector, selection.shard_selector
        if labels is None and key.field_selector is None and shards is None:
            return options
        return dataclasses.replace(
            options,
            label_selector=labels or options.label_selector,
            field_selector=key.field_selector or options.field_selector,
            shard_selector=shards or options.shard_selector,
        )

    def _in_shard(self, obj: Any) -> bool:
        shards = self.selection.shards
        assert shards is not None
        return shards.contains(uid=uid_of(obj) or "", namespace=namespace_of(obj))

    async def list(self, options: ListOptions) -> ObjectList:
        page = await self._resource.list(self._options(options))
        selection = self.selection
        if selection.shards is None:
            return page
        selection.served = page.shard_selector is not None
        if not selection.served:
            self._note_local_shards()
            page.items = [item for item in page.items if self._in_shard(item)]
        return page

    def watch(self, options: ListOptions) -> AsyncIterator[WatchEvent]:
        events = self._resource.watch(self._options(options))
        if self.selection.shards is None or self.selection.served:
            return events
        return self._shard_events(events)

    async def _shard_events(self, events: AsyncIterator[WatchEvent]) -> AsyncIterator[WatchEvent]:
        in_shard = self._in_shard
        selection = self.selection
        try:
            if selection.served is None:
                probe = await self._resource.list(self._options(ListOptions(limit=1)))
                selection.served = probe.shard_selector is not None
            if selection.served:
                async for event in events:
                    yield event
                return
            self._note_local_shards()
            async for event in events:
                if event.type in _OBJECT_EVENTS and not in_shard(event.object):
                    continue
                yield event
        finally:
            closing = getattr(events, "aclose", None)
            if closing is not None:
                await closing()

    def _note_local_shards(self) -> None:
        if not self._warned:
            self._warned = True
            logger.warning(
                "%s: the server did not apply the shard selector (no shardInfo in its LIST"
                " answer: a kube-apiserver before 1.36, or its ShardedListAndWatch gate"
                " off); the informer keeps its slice itself, watching the whole resource",
                self._key.describe(),
            )

    def decoded_with(self, codec: Decoder) -> _SelectedResource:
        return _SelectedResource(self._resource.decoded_with(codec), self._key, self.selection)

    def metadata_lister(self) -> _SelectedResource | None:
        """The same objects (namespace, selectors) as ``PartialObjectMetadata``, for a
        cache audit."""
        metadata = self._resource.metadata_lister()
        return None if metadata is None else _SelectedResource(metadata, self._key, self.selection)

    def __repr__(self) -> str:
        selection = self.selection
        shard = selection.shard_selector
        shards = "" if shard is None else f" shard_selector={shard!r}"
        return (
            f"<{self._resource!r} label_selector={selection.label_selector!r}"
            f" field_selector={self._key.field_selector!r}{shards}>"
        )
