"""The fake API server's HTTP dispatch: authentication, authorization, faults, verbs.

Role: the one ``aiohttp`` handler every request goes through. Input is an HTTP request
on 127.0.0.1; output is kube-apiserver's answer: a discovery document, a stored object,
a LIST page, a delete's answer (the object, or a ``Success`` Status), a watch stream
(handed to :class:`~aioinformer.testing._watchstream.WatchStreams`), or a ``Status``
failure with the same code, reason and details. The ``scale`` subresource (an ``autoscaling/v1``
Scale over ``spec.replicas``, or over the paths a CustomResourceDefinition names) and the
``status`` subresource are served here too.

Ordering, per request: the request is logged (:class:`RequestRecord`); injected latency
is applied; an unknown or missing bearer token answers 401; discovery (aggregated when
the ``Accept`` header prefers it) and ``/openapi/v3`` paths are answered; otherwise the
path is parsed, an injected failure answers if one matches the verb and resource, the
account's :class:`Rule` list is checked (403), the ``Accept`` header is negotiated, and
only then does the verb run against the store (a protobuf create or update body is
decoded to the JSON it carries first). A create, update, patch or delete goes through the
admission chain (``_admission``: mutating webhooks, the store's validation as a dry run,
validating webhooks) before its write, which ``?dryRun=All`` leaves out; the webhooks'
warnings become the answer's ``Warning`` headers. A version of a custom resource that its
definition's webhook converts (``_converter``) is admitted in the request's version,
converted to the storage version for the write; every object answered is converted
back. A LIST or WATCH reads ``shardSelector`` only with the ``ShardedListAndWatch``
feature gate on (see :func:`feature_gates`). A write takes effect in the store before its
answer is encoded, so a conversion that does not fit the answer fails after the write, as
on kube-apiserver.

Layout: this module parses, authorizes and dispatches, and answers. What makes a create,
update, patch or delete into admitted, converted store writes (the admission chain, the
body's checks against the URL, the patch and its conflict retries) is ``_writes``'s
:class:`~aioinformer.testing._writes.Writes`; the helpers of requests and answers are
``_requests`` and ``_apiserver.requests``; watches are ``_watchstream``'s.

Task model: :meth:`Router.handle` runs in the aiohttp handler task of its request on the
server's event loop; it awaits only the request body, the injected latency, a wait for a
future resourceVersion (``too_large_rv_wait``), a watch stream, the admission webhooks'
calls and a conversion webhook's answer (bounded by the server's ``conversion_timeout``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson
from aiohttp import web

from aioinformer._apiserver.aggregated import aggregated_response, wants_aggregated
from aioinformer._apiserver.discovery import VERBS, discovery_response, is_discovery
from aioinformer._apiserver.objects import (
    Entry,
    ResourceType,
    StatusError,
    object_key,
    status_body,
)
from aioinformer._apiserver.openapi import is_openapi, openapi_response
from aioinformer._apiserver.requests import (
    JSON,
    Conversion,
    bearer,
    bool_param,
    entry_response,
    list_query,
    list_response,
    method_not_allowed,
    negotiate,
    not_acceptable,
    not_served,
    page_response,
    selectors,
    status_response,
)
from aioinformer.testing._admission import collect_warnings, warning_header, write_options
from aioinformer.testing._faults import Failure, FaultPlan, Faults, failure_error
from aioinformer.testing._managed import manager_from_user_agent
from aioinformer.testing._patch import PatchError
from aioinformer.testing._protobuf import decode_protobuf_object, is_protobuf
from aioinformer.testing._requests import (
    PATCH_TYPES,
    Target,
    decode_body,
    invalid,
    unsupported_patch_type,
)
from aioinformer.testing._validation import decode_object
from aioinformer.testing._writes import WriteRequest, Writes, field_validation

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from aioinformer._kernel.clock import Clock
    from aioinformer.testing._converter import Conversions
    from aioinformer.testing._resources import ResourceRegistry
    from aioinformer.testing._store import Store
    from aioinformer.testing._watchstream import WatchStreams

__all__ = [
    "Account",
    "FEATURE_GATES",
    "RequestRecord",
    "Router",
    "RouterSettings",
    "Rule",
    "SHARDED_LIST_AND_WATCH",
    "feature_gates",
]

SHARDED_LIST_AND_WATCH: Final = "ShardedListAndWatch"
"""kube-apiserver v1.36's alpha gate of sharded LIST and WATCH (KEP-5866): with it on, the
``shardSelector`` parameter keeps only the objects of its slice; off, it is ignored."""

FEATURE_GATES: Final[Mapping[str, bool]] = MappingProxyType({SHARDED_LIST_AND_WATCH: False})
"""The feature gates the fake knows, each with its default (kube-apiserver v1.36's)."""


def feature_gates(given: Mapping[str, bool] | None) -> Mapping[str, bool]:
    """Every known gate, as ``given`` sets it or at its default (a read-only mapping);
    ``ValueError`` for a gate the fake does not know, or a value that is not a bool, as
    kube-apiserver refuses to start with one."""
    gates = dict(FEATURE_GATES)
    for name, value in (given or {}).items():
        if name not in FEATURE_GATES:
            raise ValueError(
                f"unrecognized feature gate: {name!r} (known gates: {', '.join(FEATURE_GATES)})"
            )
        if not isinstance(value, bool):
            raise ValueError(f"feature gate {name!r} must be True or False, not {value!r}")
        gates[name] = value
    return MappingProxyType(gates)


@dataclass(frozen=True, slots=True)
class Rule:
    """An allow rule: any of ``verbs`` on any of ``resources`` in any of ``namespaces``.

    ``"*"`` in a field allows everything. ``resources`` are plurals (``"pods"``), with
    ``/status`` for the subresource (``"pods/status"``). ``namespaces`` may contain ``""``
    for cluster-wide requests (listing across namespaces, cluster-scoped resources).
    """

    verbs: Sequence[str]
    resources: Sequence[str]
    namespaces: Sequence[str] = ("*",)

    def allows(self, verb: str, resource: str, namespace: str) -> bool:
        """Whether this rule lets ``verb`` on ``resource`` in ``namespace`` through."""
        return (
            ("*" in self.verbs or verb in self.verbs)
            and ("*" in self.resources or resource in self.resources)
            and ("*" in self.namespaces or namespace in self.namespaces)
        )


@dataclass(frozen=True, slots=True)
class Account:
    """Who a bearer token authenticates as, and what that user may do."""

    user: str
    rules: tuple[Rule, ...] | None  # None: everything is allowed


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request the server received, in arrival order: ``headers`` are its headers
    but ``Authorization`` (a bearer token stays out of test output), under the names the
    client sent."""

    method: str
    path: str
    query: Mapping[str, str]
    user: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


class RouterSettings(Protocol):
    """What the routes read from the server on every request (the server's public
    options may change between requests)."""

    @property
    def clock(self) -> Clock:
        """Times injected latency."""
        ...

    @property
    def too_large_rv_wait(self) -> float:
        """Seconds a LIST at a future resourceVersion waits for it."""
        ...

    @property
    def request_log(self) -> list[RequestRecord]:
        """Where every request is recorded, in arrival order."""
        ...

    @property
    def port(self) -> int:
        """The listening port, which ``/api`` publishes."""
        ...

    @property
    def feature_gates(self) -> Mapping[str, bool]:
        """Every known feature gate, on or off (see :func:`feature_gates`)."""
        ...


class Router:
    """Answers every HTTP request of one server (see the module docstring).

    The router owns nothing: the store, the resource registry, the token table, the
    fault plan and the watch streams are the server's, shared by reference, so a token
    added or a CRD registered by the test is seen by the next request.
    """

    def __init__(
        self,
        settings: RouterSettings,
        *,
        store: Store,
        registry: ResourceRegistry,
        accounts: dict[str, Account],
        plan: FaultPlan,
        faults: Faults,
        streams: WatchStreams,
        written: asyncio.Event,
        conversions: Conversions,
    ) -> None:
        self._server = settings
        self._writes = Writes(store, registry, conversions)
        self._store = store
        self._registry = registry
        self._accounts = accounts
        self._plan = plan
        self._faults = faults
        self._streams = streams
        self._conversions = conversions
        # Set by the store after every write; a LIST at a future version waits on it.
        self._written = written

    async def handle(self, request: web.Request) -> web.StreamResponse:
        # Webhooks' warnings reach the client on the answer, failures included.
        with collect_warnings() as warnings:
            response = await self._handle(request)
        for text in warnings:
            response.headers.add("Warning", warning_header(text))
        return response

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        token = bearer(request)
        account = self._accounts.get(token) if token is not None else None
        self._server.request_log.append(
            RequestRecord(
                request.method,
                request.path,
                query,
                account.user if account is not None else None,
                {
                    name: value
                    for name, value in request.headers.items()
                    if name.lower() != "authorization"
                },
            )
        )
        try:
            latency = self._plan.latency
            if latency > 0:
                self._faults.record("latency", request.path, f"{latency}s")
                await self._server.clock.sleep(latency)
            if account is None:
                raise StatusError(status_body(401, "Unauthorized", "Unauthorized"))
            parts = [p for p in request.path.split("/") if p]
            if not parts or parts[0] not in ("api", "apis") or is_discovery(parts):
                failure = self._plan.take_failure(None, "get")
                if failure is not None:
                    return self._fail(request, failure)
                if is_openapi(parts):
                    return openapi_response(request.method, parts, self._registry, verbs=VERBS)
                if wants_aggregated(parts, request.headers.get("Accept", "")):
                    return aggregated_response(request.method, parts, self._registry, verbs=VERBS)
                return discovery_response(
                    request.method, parts, self._registry, port=self._server.port
                )
            target = self._parse_target(parts)
            verb = _verb(request, target)
            failure = self._plan.take_failure(target.rt, verb)
            if failure is not None:
                return self._fail(request, failure)
            self._authorize(account, verb, target)
            return await self._serve(request, verb, target, query, account)
        except StatusError as exc:
            return status_response(exc)

    def _fail(self, request: web.Request, failure: Failure) -> web.Response:
        error = failure_error(failure)
        self._faults.record("fail", request.path, f"{error.code} {error.status['reason']}")
        return status_response(error)

    def _parse_target(self, parts: list[str]) -> Target:
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) < 3:
                raise not_served()
            group, version, rest = parts[1], parts[2], parts[3:]
        namespace: str | None = None
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and (listed := self._registry.lookup(group, version, rest[2])) is not None
            and listed.namespaced
        ):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise not_served()
        rt = self._registry.lookup(group, version, rest[0])
        if rt is None:
            raise not_served()
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        served = (sub == "status" and rt.status_subresource) or (
            sub == "scale" and rt.scale_subresource
        )
        if sub is not None and not served:
            raise not_served()
        if rt.namespaced and name is not None and namespace is None:
            raise not_served()
        if not rt.namespaced and namespace is not None:
            raise not_served()
        return Target(rt, namespace, name, sub)

    def _authorize(self, account: Account, verb: str, target: Target) -> None:
        if account.rules is None:
            return
        resource = target.rt.plural + (f"/{target.subresource}" if target.subresource else "")
        namespace = target.namespace or ""
        if any(rule.allows(verb, resource, namespace) for rule in account.rules):
            return
        rt = target.rt
        where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        subject = f'{rt.qualified} "{target.name}"' if target.name else rt.qualified
        message = (
            f'{subject} is forbidden: User "{account.user}" cannot {verb} resource '
            f'"{resource}" in API group "{rt.group}" {where}'
        )
        raise StatusError(status_body(403, "Forbidden", message, rt.details(target.name)))

    async def _serve(
        self,
        request: web.Request,
        verb: str,
        target: Target,
        query: dict[str, str],
        account: Account,
    ) -> web.StreamResponse:
        rt = target.rt
        # As on kube-apiserver, the Accept header is negotiated before anything happens,
        # but a conversion that does not fit the answer (a list as PartialObjectMetadata)
        # fails only when the answer is written, after a write request took effect.
        convert = negotiate(request.headers.get("Accept", ""))
        if verb == "watch":
            return await self._streams.serve(
                request, target, query, convert, shard_selectors=self._shard_selectors
            )
        if verb == "list":
            return await self._list(target, query, convert)
        if verb == "deletecollection":
            return await self._delete_collection(target, query, convert)
        if target.subresource == "scale":
            return await self._scale(request, verb, target, convert)
        if verb == "get":
            assert target.name is not None
            entry = self._store.get(rt, target.namespace, target.name)
            return await self._answer(rt, entry, convert)
        body = await request.read()
        dry_run = request.query.getall("dryRun", [])
        if verb == "delete":
            assert target.name is not None
            entry = await self._writes.delete(target, body, account.user, dry_run)
            return await self._deleted(target, entry, convert)
        write = WriteRequest(
            target,
            account.user,
            write_options(verb, dry_run, query),
            _manager(request),
            field_validation(request),
        )
        if verb == "patch":
            assert target.name is not None
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            if content_type not in PATCH_TYPES:
                raise unsupported_patch_type()
            entry = await self._writes.patch(write, decode_body(body), content_type)
            return entry_response(rt, entry, convert)
        if is_protobuf(request.headers.get("Content-Type", "")):
            # kubectl's generators (create configmap, secret, ...) send protobuf: the
            # object goes on as the JSON it carries.
            body = orjson.dumps(decode_protobuf_object(body))
        obj = decode_object(rt, body)
        if verb == "create":
            if target.subresource is not None:
                raise method_not_allowed()
            return entry_response(rt, await self._writes.create(write, obj), convert, status=201)
        return entry_response(rt, await self._writes.update(write, obj), convert)

    async def _answer(
        self, rt: ResourceType, entry: Entry, convert: Conversion | None, *, status: int = 200
    ) -> web.Response:
        """The answer carrying a stored object, converted to ``rt``'s version by the
        definition's webhook when it has one (a metadata-only answer too: its labels
        and annotations are the converted object's)."""
        if self._conversions.converts(rt):
            entry = await self._conversions.entry(rt, entry)
        return entry_response(rt, entry, convert, status=status)

    async def _scale(
        self, request: web.Request, verb: str, target: Target, convert: Conversion | None
    ) -> web.Response:
        """The ``scale`` subresource: an ``autoscaling/v1`` Scale read from the object, and
        writes that change only ``spec.replicas`` (the Scale's resourceVersion, when set,
        is a precondition on the object)."""
        rt = target.rt
        assert target.name is not None
        # A version a webhook converts reads its scale at its own paths, converted.
        entry = await self._conversions.entry(
            rt, self._store.get(rt, target.namespace, target.name)
        )
        if verb == "get":
            return _scale_response(rt, entry, convert)
        if verb not in ("update", "patch"):
            raise method_not_allowed()
        body = await request.read()
        manager = _manager(request)
        current = _scale_of(rt, entry)
        if verb == "patch":
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            apply = PATCH_TYPES.get(content_type)
            if apply is None:
                raise unsupported_patch_type()
            try:
                scale = apply(current, decode_body(body))
            except PatchError as exc:
                raise StatusError(
                    status_body(exc.code, "Invalid" if exc.code == 422 else "BadRequest", str(exc))
                ) from exc
        else:
            scale = decode_body(body)
        if not isinstance(scale, dict):
            raise StatusError(status_body(400, "BadRequest", "the request body must be an object"))
        raw_meta = scale.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        if meta.get("name", target.name) != target.name:
            raise StatusError(
                status_body(
                    400,
                    "BadRequest",
                    f"the name of the object ({meta.get('name')}) does not match the name on "
                    f"the URL ({target.name})",
                )
            )
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            scale_rt = ResourceType("autoscaling", "v1", "scale", "Scale", rt.namespaced)
            raise invalid(
                scale_rt, target.name, "spec.replicas", f"{replicas}: must be a non-negative int"
            )
        obj = entry.decode()
        if rt.scale_paths is None:
            obj.setdefault("spec", {})["replicas"] = replicas
        else:
            _set_path(obj, rt.scale_paths[0], replicas)
        obj["metadata"]["resourceVersion"] = meta.get("resourceVersion") or str(entry.rv)
        storage_rt, obj = await self._conversions.to_storage(rt, obj)
        updated = self._store.update(storage_rt, obj, manager=manager)
        return _scale_response(rt, await self._conversions.entry(rt, updated), convert)

    async def _deleted(
        self, target: Target, entry: Entry, convert: Conversion | None
    ) -> web.Response:
        """A delete's answer. Still stored (finalizers hold it): the object as marked.
        Removed: the object as deleted, at the deletion's resourceVersion, for the kinds
        kube-apiserver answers so; a Status naming the uid for the others."""
        rt = target.rt
        if (entry.deleting and self._exists(rt, entry)) or rt.returns_deleted_object:
            return await self._answer(rt, entry, convert)
        details = rt.details(target.name)
        details["uid"] = entry.uid
        body_out = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }
        return web.Response(body=orjson.dumps(body_out), content_type=JSON)

    def _exists(self, rt: ResourceType, entry: Entry) -> bool:
        key = object_key(entry.namespace, entry.name)
        return key in self._store.table(rt).entries

    async def _delete_collection(
        self, target: Target, query: dict[str, str], convert: Conversion | None
    ) -> web.Response:
        rt = target.rt
        labels, fields = selectors(rt, query)
        result = self._store.list(
            rt,
            namespace=target.namespace,
            label_selector=labels,
            field_selector=fields,
            resource_version=None,
            resource_version_match=None,
            limit=None,
            continue_=None,
        )
        deleted = [
            self._store.delete(rt, listed.namespace, listed.name) for listed in result.entries
        ]
        if self._conversions.converts(rt):
            deleted = await self._conversions.entries(rt, deleted)
        return list_response(rt, deleted, self._store.rv, None, None, convert)

    async def _list(
        self, target: Target, query: dict[str, str], convert: Conversion | None
    ) -> web.Response:
        rt = target.rt
        options = list_query(rt, query, shard_selectors=self._shard_selectors)
        rv = options["resource_version"]
        if rv and self._server.too_large_rv_wait > 0 and not options["continue_"]:
            await self._wait_for_rv(rv)
        result = self._store.list(rt, namespace=target.namespace, **options)
        if result.entries and self._conversions.converts(rt):
            entries = await self._conversions.entries(rt, result.entries)
            result = dataclasses.replace(result, entries=entries)
        return page_response(rt, result, convert)

    @property
    def _shard_selectors(self) -> bool:
        return self._server.feature_gates[SHARDED_LIST_AND_WATCH]

    async def _wait_for_rv(self, text: str) -> None:
        try:
            wanted = int(text)
        except ValueError:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._server.too_large_rv_wait):
                while self._store.rv < wanted:
                    self._written.clear()
                    await self._written.wait()


def _manager(request: web.Request) -> str:
    """The field manager of a write: ``?fieldManager=``, else the User-Agent's prefix."""
    return request.query.get("fieldManager") or manager_from_user_agent(
        request.headers.get("User-Agent")
    )


def _verb(request: web.Request, target: Target) -> str:
    method = request.method
    if method == "GET":
        if target.name is not None:
            return "get"
        return "watch" if bool_param(request.query, "watch") else "list"
    if method == "POST" and target.name is None:
        return "create"
    if method == "PUT" and target.name is not None:
        return "update"
    if method == "PATCH" and target.name is not None:
        return "patch"
    if method == "DELETE":
        return "delete" if target.name is not None else "deletecollection"
    raise method_not_allowed()


def _label_selector_text(selector: Any) -> str:
    """A ``LabelSelector`` object as the selector string a Scale's status carries."""
    if not isinstance(selector, dict):
        return ""
    terms: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        terms.append((key, f"{key}={value}"))
    operators = {"In": "in", "NotIn": "notin"}
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key", ""), expression.get("operator")
        if operator in operators:
            values = ",".join(sorted(expression.get("values") or ()))
            terms.append((key, f"{key} {operators[operator]} ({values})"))
        elif operator == "Exists":
            terms.append((key, key))
        elif operator == "DoesNotExist":
            terms.append((key, "!" + key))
    return ",".join(text for _, text in sorted(terms))


def _path_value(obj: Any, path: str) -> Any:
    """The value at a ``.spec.replicas``-like path of ``obj`` (``None`` when absent)."""
    for part in path.split(".")[1:]:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at a ``.spec.replicas``-like path of ``obj``, making its maps."""
    *parents, last = path.split(".")[1:]
    for part in parents:
        child = obj.get(part)
        if not isinstance(child, dict):
            child = obj[part] = {}
        obj = child
    obj[last] = value


def _scale_of(rt: ResourceType, entry: Entry) -> dict[str, Any]:
    """The ``autoscaling/v1`` Scale of a stored object."""
    obj = entry.decode()
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    scale_meta = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    if rt.scale_paths is not None:
        # A definition's paths, read as the apiextensions server reads them.
        spec_path, status_path, selector_path = rt.scale_paths
        wanted, current = _path_value(obj, spec_path), _path_value(obj, status_path)
        replicas = wanted if isinstance(wanted, int) else 0
        scale_status: dict[str, Any] = {"replicas": current if isinstance(current, int) else 0}
        selector = _path_value(obj, selector_path) if selector_path else None
        if not isinstance(selector, str):
            selector = ""
    else:
        # The API server defaults a built-in workload's spec.replicas to 1; the fake does
        # not default, so the Scale does. A custom resource without the field reports 0.
        replicas = spec.get("replicas", 1 if rt.group == "apps" else 0)
        scale_status = {"replicas": status.get("replicas", 0)}
        selector = _label_selector_text(spec.get("selector"))
        if not selector and isinstance(status.get("selector"), str):
            selector = status["selector"]
    if selector:
        scale_status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": replicas},
        "status": scale_status,
    }


def _scale_response(rt: ResourceType, entry: Entry, convert: Conversion | None) -> web.Response:
    scale = _scale_of(rt, entry)
    if convert is not None:
        if convert.kind != "PartialObjectMetadata":
            raise not_acceptable(
                f"you requested {convert.kind}, but the requested object is not a list (Scale)"
            )
        scale = {
            "kind": convert.kind,
            "apiVersion": convert.api_version,
            "metadata": scale["metadata"],
        }
    return web.Response(body=orjson.dumps(scale), content_type=JSON)
