"""The exception tree of aioinformer.

Every error the library raises on purpose derives from :class:`AioinformerError`.
Third-party errors (aiohttp, ssl, orjson) never escape: they are translated at one
private boundary, ``aioinformer.client._transport``, and chained with ``raise ... from exc`` so
the original cause stays visible. This module holds the tree and the pure ``Status`` →
error mappings (:func:`api_error_from_status`, :func:`error_from_watch_status`) only, and
imports nothing third-party::

    AioinformerError
    ├── ConfigError                      kubeconfig / in-cluster config unusable (informers
    │                                    retry it; their waits for sync fail fast)
    ├── KeyFuncError (ValueError)        an object has no usable metadata for a key   (not retried)
    ├── IndexFuncError                   an index function failed on an object: kept out of
    │                                    that index (reported), or the informer stopped
    │                                    (``strict_indexes=True``)                    (terminal)
    ├── IndexerArgumentsError (TypeError) ``indexers=`` not a mapping of names to functions
    ├── IndexValuesError (TypeError)     an index function returned no list of strings
    ├── TransformError (TypeError)       a transform returned no object (``None``, a list)
    ├── SelectorError (ValueError)       a label or field selector does not parse     (not retried)
    ├── UnknownResourceError             discovery does not know a resource (informers
    │                                    retry it; their waits for sync fail fast)
    ├── FIFOClosedError                  DeltaFIFO.pop() after close() and drain      (terminal)
    ├── InformerStoppedError             a stopped informer: no handler, no read waits (terminal)
    ├── InvalidObjectError (ValueError)  a cached object fails the informer's ``model``
    ├── OwnerReferenceError (ValueError) an owner reference cannot be set: owner or scope unfit
    │   └── AlreadyOwnedError            another controller already controls the object
    ├── NotAnObjectError (TypeError)     create/update given a list or a str, not one object
    ├── PatchArgumentsError (TypeError)  patch() with the namespace where its body goes
    ├── ReadOnlyObjectError (TypeError)  an object from a compact cache changed in place
    ├── CacheSyncError (TimeoutError)    caches did not sync in time, an informer stopped first,
    │                                    or (``cause``) a failure no retry alone heals
    ├── CacheDivergence                  a cache audit found the cache differing from the server
    │                                    (reported, never raised: the informer relists)
    ├── CacheReadTimeout (TimeoutError)  a cache-backed read: the cache did not show the
    │                                    client's own writes in time                 (not retried)
    ├── CacheScopeError (ValueError)     a cache-backed read of what the cache cannot hold
    ├── Requeue                          "put this item back" signal (FIFO, controller)
    ├── LeadershipLost                   leadership lost inside ``leadership()``      (terminal)
    ├── ConversionSetupError (ValueError) a CRD conversion registered wrong: a spoke twice,
    │                                    the hub as a spoke, one direction only
    ├── ShutDown                         WorkQueue.get() on a shut-down, empty queue  (terminal)
    ├── QueueEmpty                       WorkQueue.get_nowait() with nothing ready
    ├── TransportError                   no usable HTTP answer: timeout, bad JSON (reflectors retry)
    │   ├── ConnectionFailed             cannot connect (``refused`` tells refusal apart)
    │   │   └── TLSVerificationError     the server's certificate was rejected (informers
    │   │                                retry it; their waits for sync fail fast)
    │   └── WatchError                   a watch stream broke: garbage/truncated line (re-watched)
    │       └── WatchTimeout             silent past the inactivity deadline (re-watched)
    └── ApiError                         the server answered with a non-2xx ``Status``
        ├── BadRequest                   400
        ├── Unauthorized                 401 (credentials refreshed once, then raised,
        │                                naming the credentials sent and where from)
        ├── Forbidden                    403
        ├── NotFound                     404
        ├── MethodNotAllowed             405: the path does not serve that verb
        ├── Conflict                     409
        │   └── AlreadyExists            409 with reason AlreadyExists
        ├── Gone (= ResourceExpired)     410, whatever the reason: the reflector relists
        ├── UnprocessableEntity          422
        ├── TooManyRequests              429, ``retry_after`` from the Retry-After header
        └── ServerError                  5xx (504 "Too large resource version" included)

Whether an error is retried is the caller's decision; the notes above describe what the
reflector and client do with them. :func:`fails_until_fixed` tells the failures no retry
alone heals, which make the waits for an informer's first sync raise at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

__all__ = [
    "AioinformerError",
    "AlreadyExists",
    "AlreadyOwnedError",
    "ApiError",
    "BadRequest",
    "CacheDivergence",
    "CacheReadTimeout",
    "CacheScopeError",
    "CacheSyncError",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "ConversionSetupError",
    "FIFOClosedError",
    "Forbidden",
    "Gone",
    "IndexFuncError",
    "IndexValuesError",
    "IndexerArgumentsError",
    "InformerStoppedError",
    "InvalidObjectError",
    "KeyFuncError",
    "LeadershipLost",
    "MethodNotAllowed",
    "NotAnObjectError",
    "NotFound",
    "OwnerReferenceError",
    "PatchArgumentsError",
    "QueueEmpty",
    "ReadOnlyObjectError",
    "Requeue",
    "ResourceExpired",
    "SelectorError",
    "ServerError",
    "ShutDown",
    "TLSVerificationError",
    "TooManyRequests",
    "TransformError",
    "TransportError",
    "Unauthorized",
    "UnknownResourceError",
    "UnprocessableEntity",
    "UnsyncedInformer",
    "WatchError",
    "WatchTimeout",
    "api_error_from_status",
    "describe_error",
    "error_from_watch_status",
    "fails_until_fixed",
]


class AioinformerError(Exception):
    """Base of every error raised by aioinformer on purpose."""


class ConfigError(AioinformerError):
    """Raised when a kubeconfig or the in-cluster environment cannot be used.

    The message names the file, the context and the field at fault. A direct call (loading
    the configuration, a request whose credentials cannot be refreshed) raises it; an
    informer that meets it retries with backoff, and its waits for sync fail fast
    (:func:`fails_until_fixed`).
    """


class KeyFuncError(AioinformerError, ValueError):
    """Raised by key functions for an object without usable ``metadata.name``."""


class IndexFuncError(AioinformerError):
    """An index function failed on one object: it raised, or returned something other
    than a list of strings (then ``error`` is an :class:`IndexValuesError`).

    ``index`` is the index's name, ``key`` the object's key, ``error`` what the function
    raised (also the ``__cause__`` when this is raised). By default an indexer does not
    raise it: the object stays cached and in every other index, left out of this one
    until the function succeeds on it, and the failure is logged once per index and key
    and counted (``informer.health().index_errors``, whose ``last_index_error`` is this
    error's message). With ``strict_indexes=True`` (an indexer's ``strict=True``) it is
    raised instead, as client-go panics: the write is refused and the informer stops with
    it. Not retried: the index function is at fault.
    """

    def __init__(self, index: str, key: str, error: BaseException) -> None:
        super().__init__(f"index {index!r} failed on {key}: {describe_error(error)}")
        self.index = index
        self.key = key
        self.error = error


class IndexerArgumentsError(AioinformerError, TypeError):
    """Raised before anything is indexed when ``indexers=`` (of an indexer, an informer,
    ``add_indexers`` or a factory's ``informer_for``) is not a mapping of index names to
    index functions, such as a function passed on its own. The message says what to
    write: ``indexers={"by-team": by_team}``. Not retried."""


class IndexValuesError(AioinformerError, TypeError):
    """What an index function that returned something other than a list (or tuple) of
    strings is reported with, inside an :class:`IndexFuncError`: a ``str`` (which would
    otherwise index each of its characters), ``None``, a set, a list holding ``None``. The
    message names the function, the object's key and what it returned, and says to
    return a list of strings, e.g. ``[value]``."""


class TransformError(AioinformerError, TypeError):
    """A transform returned something that is not an object to cache (``None``, a list,
    a string, a mapping without ``metadata.name``), or, in the compact cache, a dict that
    does not encode as JSON (a ``set`` or a ``bytes`` in it, say): the message names the
    transform (its ``__qualname__``, also ``transform``) and ``key``, the key of the
    object before it was transformed.

    Handled as a transform that raises: on a watch event the reflector logs it and skips
    the event; on a listed object the whole list fails and is retried after the backoff,
    so the informer does not report synced on a cache it could not fill. Not retried
    otherwise: the transform is at fault."""

    def __init__(
        self, transform: str, key: str, returned: object, *, unencodable: str | None = None
    ) -> None:
        if unencodable is None:
            message = (
                f"transform {transform} returned {_brief_type(returned)} for {key}, not an "
                "object: a transform must return the object to cache (a mapping with "
                "metadata.name, or a model), e.g. end it with 'return obj'"
            )
        else:
            message = (
                f"transform {transform} returned an object for {key} that the compact cache "
                f"cannot encode as JSON ({unencodable}): return JSON values only (dicts with "
                "str keys, lists, str, numbers, bools, None), or use cache='objects'"
            )
        super().__init__(message)
        self.transform = transform
        self.key = key


def _brief_type(value: object) -> str:
    """``None``, or what a value is, by its type only: what a transform returned may be
    a Secret's content."""
    if value is None:
        return "None"
    if isinstance(value, Mapping):
        return f"a {type(value).__name__} without metadata.name"
    return f"a {type(value).__name__}"


class SelectorError(AioinformerError, ValueError):
    """Raised before any request when a label or field selector does not parse."""


class UnknownResourceError(AioinformerError):
    """Raised when discovery does not know the resource a user asked for."""


class FIFOClosedError(AioinformerError):
    """Raised by ``DeltaFIFO.pop()`` once the FIFO is closed and drained."""


class InformerStoppedError(AioinformerError):
    """Raised by ``add_event_handler()`` on an informer that has stopped, and by a
    cache-backed read whose informer stopped while it waited for the cache."""


class InvalidObjectError(AioinformerError, ValueError):
    """Raised by ``lister().get()`` of an informer with a ``model`` when the cached object
    of that key does not validate into the model.

    ``key`` is the object's ``"namespace/name"`` (``"name"`` when cluster-scoped),
    ``resource_version`` its resourceVersion (``None`` when it has none) and ``error`` the
    validation error (a pydantic ``ValidationError``), also chained as the cause. The
    object stays in the cache: other reads skip it until the server holds a valid one.
    """

    def __init__(self, key: str, resource_version: str | None, error: Exception) -> None:
        super().__init__(
            f"object {key} (resourceVersion {resource_version}) does not validate: {error}"
        )
        self.key = key
        self.resource_version = resource_version
        self.error = error


class OwnerReferenceError(AioinformerError, ValueError):
    """Raised by :mod:`aioinformer.operator.ownership` when an owner reference cannot be
    written: the owner lacks ``apiVersion``, ``kind``, ``name`` or ``uid``, a cluster-scoped
    object would get a namespaced owner, or owner and object live in different namespaces
    (the garbage collector would ignore such a reference). Never retried: the code is at fault."""


class AlreadyOwnedError(OwnerReferenceError):
    """Raised by ``set_controller_reference`` when another owner is already the object's
    controller; ``owner`` and ``existing`` are the two references (wire-shaped dicts)."""

    def __init__(self, obj: str, owner: Mapping[str, Any], existing: Mapping[str, Any]) -> None:
        super().__init__(
            f"{obj} is already controlled by {existing.get('kind')} {existing.get('name')!r} "
            f"({existing.get('apiVersion')}); cannot make {owner.get('kind')} "
            f"{owner.get('name')!r} ({owner.get('apiVersion')}) its controller"
        )
        self.owner = dict(owner)
        self.existing = dict(existing)


def describe_error(error: BaseException) -> str:
    """A failure as one line: an API error as the server put it (``"403 Forbidden:
    configmaps is forbidden: ..."``: its text leads with code and reason), anything else
    prefixed with its type, which says more than a bare message (``"WatchTimeout: watch
    sent nothing for 120s"``)."""
    text = str(error)
    if isinstance(error, ApiError) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


@dataclass(frozen=True, slots=True)
class UnsyncedInformer:
    """One informer that had not synced when a :class:`CacheSyncError` was raised."""

    name: str
    """The informer's name (as in its logs and statistics)."""
    resource: str
    """The resource it lists and watches, as given (``"configmaps"``, ``"apps/v1/..."``)."""
    namespace: str | None
    """Its namespace; ``None`` for all namespaces (or a cluster-scoped resource)."""
    state: str
    """``"new"`` (its run never started), ``"starting"`` (still listing or retrying),
    ``"stopped"`` (its run ended, or is ending, before the initial list was in the cache)
    or ``"synced"`` (the cache is, but the handler waited on, a controller's, has not yet
    handled every object of the initial list)."""
    last_error: BaseException | None
    """The most recent list or watch failure, or why the run ended; ``None`` if none."""

    def describe(self) -> str:
        """``"configmaps in kube-system: 403 Forbidden: ..."``: where, and what went wrong."""
        where = "(all namespaces)" if self.namespace is None else f"in {self.namespace}"
        error = self.last_error
        if self.state == "new":
            why = "never started"
        elif self.state == "synced":
            why = "synced, but its handler has not yet handled the whole initial list"
        elif error is None:
            why = "stopped before it synced" if self.state == "stopped" else "no error yet"
        else:
            why = describe_error(error)
            if self.state == "stopped":
                why = f"stopped before it synced: {why}"
        return f"{self.resource} {where}: {why}"


class CacheSyncError(AioinformerError, TimeoutError):
    """Raised by the waits for cache sync when caches did not sync within their timeout,
    at once when an informer stopped before it synced (it never will), and at once when
    an informer's first list failed in a way no retry alone heals (``cause``).

    ``unsynced`` holds one :class:`UnsyncedInformer` per informer still unsynced, and the
    message names each with its resource, namespace and last error::

        caches did not sync within 120s: configmaps in kube-system: 503 ...

    ``cause`` is set when the wait failed fast: before its first sync, an informer's list
    or watch failed with an error that stays until someone acts (see
    :func:`fails_until_fixed`): a resource the server does not serve
    (:class:`UnknownResourceError`, a 404 :class:`NotFound`), credentials refused
    (:class:`Unauthorized`, :class:`Forbidden`), a server refusing connections or a
    certificate rejected (:class:`ConnectionFailed`), a configuration that cannot be
    used (:class:`ConfigError`). It is that error, also the ``__cause__``, and the message
    names the resource, the namespace, the server and the error::

        caches cannot sync: configmaps in kube-system at https://10.0.0.1:6443:
        403 Forbidden: configmaps is forbidden: User "..." cannot list resource ...

    The informer keeps retrying with backoff meanwhile (a CustomResourceDefinition may be
    installed later, a RoleBinding granted); a wait given ``fail_fast=False`` waits for
    that instead of raising.

    ``timeout`` is the wait's timeout in seconds (``None`` when the wait ended because an
    informer stopped or failed fast). A ``TimeoutError`` too, so code written for a
    timed-out wait (``except TimeoutError`` around ``asyncio.timeout``) catches it. Not
    retried: the informers themselves keep retrying; the caller decides whether to wait
    again.
    """

    def __init__(
        self,
        message: str,
        *,
        unsynced: tuple[UnsyncedInformer, ...],
        timeout: float | None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message)
        self.unsynced = unsynced
        self.timeout = timeout
        self.cause = cause


class CacheReadTimeout(AioinformerError, TimeoutError):
    """Raised by a read of :class:`~aioinformer.operator.cached_client.CachedClient` when the cache
    did not show the client's own writes within the client's ``timeout``.

    The message names what was awaited and what the cache had reached::

        configmaps default/settings: the cache did not reach resourceVersion 57 of this
        client's write within 10s (it has applied 53)
        configmaps namespace default: the cache did not show this client's deletion of
        default/settings (uid 6f1c...) within 10s; later reads will not wait for it

    ``resource`` names the informer, ``key`` the object (``None`` for a list, which names
    its ``namespace``, ``None`` for all), ``resource_version`` the version not reached
    (``None`` when it was reached), ``uid`` the deleted object still awaited (``None``
    when none was), ``applied`` the cache's ``last_store_resource_version`` and
    ``timeout`` the seconds waited. A ``TimeoutError`` too. Not retried: the deletions
    it waited for are no longer awaited by later reads (the cache may never see them:
    see :mod:`aioinformer.operator._own_writes`); the versions are, as a live cache reaches them.
    """

    def __init__(
        self,
        message: str,
        *,
        resource: str,
        key: str | None,
        namespace: str | None,
        resource_version: str | None,
        uid: str | None,
        applied: str,
        timeout: float,
    ) -> None:
        super().__init__(message)
        self.resource = resource
        self.key = key
        self.namespace = namespace
        self.resource_version = resource_version
        self.uid = uid
        self.applied = applied
        self.timeout = timeout


class CacheScopeError(AioinformerError, ValueError):
    """Raised by a read of :class:`~aioinformer.operator.cached_client.CachedClient` that asks for
    objects its cache cannot hold: a namespace other than the one its informer watches.
    The message names the resource, the namespace asked for and the one watched."""


class CacheDivergence(AioinformerError):
    """A cache audit found the informer's cache differing from the server.

    Not raised to callers: it is the reason the informer gives its reflector for the
    relist that repairs the cache, so it reaches the watch error handler and shows as
    the informer's ``last_error``. ``missing`` (keys the server has and the cache lacks),
    ``extra`` (keys the cache has and the server lacks) and ``stale`` (keys whose
    resourceVersion differs) are sorted; the message names up to a few of each.
    """

    def __init__(
        self,
        resource_version: str,
        *,
        missing: tuple[str, ...] = (),
        extra: tuple[str, ...] = (),
        stale: tuple[str, ...] = (),
        shown: int = 5,
    ) -> None:
        parts = [
            f"{label} {_some(keys, shown)}"
            for label, keys in (("missing", missing), ("extra", extra), ("stale", stale))
            if keys
        ]
        count = len(missing) + len(extra) + len(stale)
        super().__init__(
            f"cache audit at resourceVersion {resource_version}: {count} "
            f"{'key differs' if count == 1 else 'keys differ'} from the server"
            + (f" ({'; '.join(parts)})" if parts else "")
        )
        self.resource_version = resource_version
        self.missing = missing
        self.extra = extra
        self.stale = stale


def _some(keys: tuple[str, ...], shown: int) -> str:
    """Up to ``shown`` of ``keys``, and how many more."""
    text = ", ".join(keys[:shown])
    more = len(keys) - shown
    if more > 0:
        text = f"{text} and {more} more" if text else f"{more} {'key' if more == 1 else 'keys'}"
    return text


class Requeue(AioinformerError):
    """Asks for an item to be put back.

    Raised by a ``DeltaFIFO.pop()`` ``process`` callback with the error that caused it:
    the key goes to the back of the queue and ``pop()`` raises ``err``. A controller's
    reconcile may raise (or return) it with ``after=`` seconds to be retried later;
    ``after`` must be ``>= 0`` (``ValueError`` otherwise, here: a negative delay is a
    mistake, not "at once").
    """

    def __init__(self, err: BaseException | None = None, *, after: float | None = None) -> None:
        if after is not None and not after >= 0:
            raise ValueError(f"Requeue(after=...) must be >= 0 seconds or None, got {after!r}")
        super().__init__(err if err is not None else f"requeue after {after}s")
        self.err = err
        self.after = after


class LeadershipLost(AioinformerError):
    """Raised on leaving ``async with elector.leadership():`` when leadership was lost inside.

    The body was cancelled when the loss was noticed; this error replaces that cancellation.
    """


class ConversionSetupError(AioinformerError, ValueError):
    """Raised while a :class:`~aioinformer.operator.Conversion` is built, before it serves
    a request: a CRD name or version name Kubernetes would refuse, a converter registered
    twice for one version and direction, a converter for the hub version, a model that
    lacks ``to_hub`` or ``from_hub``, or (from ``Conversion.check()``) a spoke version with
    a converter in one direction only. The message names the version and the fault.
    """


class ShutDown(AioinformerError):
    """Raised by ``WorkQueue.get()`` once the queue is shut down and has nothing queued."""


class QueueEmpty(AioinformerError):
    """Raised by ``WorkQueue.get_nowait()`` when no item is ready."""


class NotAnObjectError(AioinformerError, TypeError):
    """Raised before any request by ``create`` and ``update`` (of a
    :class:`~aioinformer.client.ResourceClient` or of the fake API server) when what they
    were given is not one object: a list, a string, a number. The message names what was
    passed and what to pass instead: one object as a mapping (or a pydantic model such as
    a :class:`~aioinformer.models.KubeObject`), one call per object. Not retried."""


class PatchArgumentsError(AioinformerError, TypeError):
    """Raised before any request by ``patch`` (of a
    :class:`~aioinformer.client.ResourceClient` or of the fake API server) when its
    arguments are in the wrong places: a string where the patch body goes, a mapping
    where the namespace or the name goes, as when the namespace is passed where
    ``get(name, namespace)`` takes it. The message gives the call to write. Not
    retried."""


class ReadOnlyObjectError(AioinformerError, TypeError):
    """An object from a compact cache (a handler's argument, a lister's answer) was
    changed in place. Such objects are views of the cache, shared with every other reader;
    ``obj.to_dict()`` or ``copy.deepcopy(obj)`` gives a plain copy to change."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"objects from a compact cache are read-only ({what}): obj.to_dict() or "
            "copy.deepcopy(obj) gives a copy to change (cache='objects' keeps plain dicts)"
        )


class TransportError(AioinformerError):
    """The request did not produce an HTTP answer (network, TLS, broken stream)."""


class ConnectionFailed(TransportError):
    """Could not connect to the API server.

    ``refused`` is true when the server actively refused the connection (nothing
    listening), which reflectors treat as "back off and re-watch", not "relist".
    """

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


class TLSVerificationError(ConnectionFailed):
    """The server's certificate failed verification. Never downgraded to insecure."""


class WatchError(TransportError):
    """A watch stream broke: a garbage or truncated line, or the body ended mid-object."""


class WatchTimeout(WatchError):
    """A watch sent no bytes for longer than its inactivity deadline."""


class ApiError(AioinformerError):
    """The API server answered with a non-2xx status.

    Carries the decoded ``Status``: ``code``, ``reason``, ``message`` and ``details``.
    ``ApiError(status)`` accepts the ``Status`` as a dict or a model; use
    :func:`api_error_from_status` to get the subclass matching its code.
    """

    code: int = 0

    def __init__(self, status: Mapping[str, Any] | Any | None = None) -> None:
        if status is None:
            data: dict[str, Any] = {}
        elif isinstance(status, Mapping):
            data = dict(status)
        else:  # a pydantic Status model
            data = status.model_dump(by_alias=True, exclude_none=True)
        self.status: dict[str, Any] = data
        code = data.get("code")
        if isinstance(code, int) and code:
            self.code = code
        self.reason: str = str(data.get("reason") or "")
        self.message: str = str(data.get("message") or "")
        details = data.get("details")
        self.details: dict[str, Any] = dict(details) if isinstance(details, Mapping) else {}
        super().__init__(self._describe())

    def _describe(self) -> str:
        parts = [f"{self.code}"]
        if self.reason:
            parts.append(self.reason)
        text = " ".join(parts)
        return f"{text}: {self.message}" if self.message else text


class BadRequest(ApiError):
    """400: the request was malformed (bad selector, invalid options)."""

    code = 400


class Unauthorized(ApiError):
    """401: credentials missing or rejected (after one refresh of rotating credentials).

    ``credentials``, when the client knows them, says which it sent and where they were
    configured, never the secret itself, and ends the message::

        401 Unauthorized: Unauthorized; credentials sent: the bearer token of user
        'alice', context 'prod' in /home/alice/.kube/config
    """

    code = 401

    def __init__(
        self, status: Mapping[str, Any] | Any | None = None, *, credentials: str | None = None
    ) -> None:
        self.credentials = credentials
        super().__init__(status)

    def _describe(self) -> str:
        text = super()._describe()
        return f"{text}; credentials sent: {self.credentials}" if self.credentials else text


class Forbidden(ApiError):
    """403: the credentials may not do this (verb, resource or namespace)."""

    code = 403


class NotFound(ApiError):
    """404: the object, or the resource type, does not exist."""

    code = 404


class MethodNotAllowed(ApiError):
    """405: the resource does not serve this verb (e.g. a create on a subresource)."""

    code = 405


class Conflict(ApiError):
    """409: a resourceVersion precondition failed (optimistic concurrency)."""

    code = 409


class AlreadyExists(Conflict):
    """409 with reason ``AlreadyExists``: create of a name already taken."""


class Gone(ApiError):
    """410: the requested resourceVersion is too old (compacted); relist."""

    code = 410


ResourceExpired = Gone


class UnprocessableEntity(ApiError):
    """422: the object failed validation."""

    code = 422


class TooManyRequests(ApiError):
    """429: throttled. ``retry_after`` (seconds) comes from the Retry-After header."""

    code = 429

    def __init__(
        self, status: Mapping[str, Any] | Any | None = None, *, retry_after: float | None = None
    ) -> None:
        super().__init__(status)
        if retry_after is None:
            raw = self.details.get("retryAfterSeconds")
            retry_after = float(raw) if isinstance(raw, int | float) else None
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx: the server failed (including 504 for a too-large resourceVersion)."""

    code = 500


_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: UnprocessableEntity,
    429: TooManyRequests,
}


def api_error_from_status(
    status: Mapping[str, Any], *, code: int | None = None, retry_after: float | None = None
) -> ApiError:
    """Build the :class:`ApiError` subclass matching a ``Status`` (or an HTTP ``code``)."""
    data = dict(status)
    if code is not None and not data.get("code"):
        data["code"] = code
    raw_code = data.get("code")
    value = raw_code if isinstance(raw_code, int) else (code or 0)
    if value == 409 and data.get("reason") == "AlreadyExists":
        return AlreadyExists(data)
    cls = _BY_CODE.get(value)
    if cls is TooManyRequests:
        return TooManyRequests(data, retry_after=retry_after)
    if cls is not None:
        return cls(data)
    if value >= 500:
        return ServerError(data)
    return ApiError(data)


def error_from_watch_status(obj: Any, *, url: str = "") -> AioinformerError:
    """The exception for the object of an ``ERROR`` watch event.

    A ``Status`` (``kind: Status`` or an integer ``code``) gives the matching
    :class:`ApiError` (a 410 is :class:`Gone`, a 429 :class:`TooManyRequests`); anything
    else gives a :class:`WatchError`, since there is no status to act on. ``url`` names the
    watch in that message.
    """
    if isinstance(obj, Mapping) and (
        obj.get("kind") == "Status" or isinstance(obj.get("code"), int)
    ):
        return api_error_from_status(obj)
    where = f"watch on {url}" if url else "watch"
    return WatchError(f"{where} sent an ERROR event without a Status: {_brief(obj)}")


def _brief(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 80 else text[:77] + "..."


def fails_until_fixed(error: BaseException) -> bool:
    """Whether ``error``, met by a list or watch, is one that no retry alone heals: every
    attempt fails the same way until someone acts.

    True for a resource the server does not serve (:class:`UnknownResourceError`, a 404
    :class:`NotFound` of a list: a CustomResourceDefinition not installed, a misspelt
    name), credentials refused (:class:`Unauthorized`) or not allowed (:class:`Forbidden`),
    a server refusing connections (:class:`ConnectionFailed` with ``refused``, or the
    builtin ``ConnectionRefusedError`` from a source of one's own), a server certificate
    rejected (:class:`TLSVerificationError`) and a configuration that cannot be used
    (:class:`ConfigError`: a token file gone, an exec plugin failing). False for the
    rest, which a later attempt may get past (a timeout, a 429, a 5xx, a broken stream).

    Before an informer's first sync, such a failure makes the waits for its sync raise a
    :class:`CacheSyncError` at once (its ``cause``); the informer still retries it.
    """
    if isinstance(error, ConnectionFailed):
        return error.refused or isinstance(error, TLSVerificationError)
    return isinstance(
        error,
        UnknownResourceError
        | NotFound
        | Unauthorized
        | Forbidden
        | ConfigError
        | ConnectionRefusedError,
    )


if not TYPE_CHECKING:  # type checkers report the old names as missing, as they should
    # The one import upwards (pyproject.toml's contract names it): the hook that serves
    # this module's names of the first release, for one release more.
    from aioinformer._kernel.moved import moved_names

    __getattr__ = moved_names(__name__)
