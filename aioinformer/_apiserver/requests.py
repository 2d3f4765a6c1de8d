"""Request parsing and answers shared by servers of the list/watch API.

Role: the small, pure pieces of HTTP handling that kube-apiserver applies to every read,
used by the fake API server (``aioinformer.testing``) and the caching proxy
(``aioinformer.proxy``). Input is parts of an ``aiohttp`` request (the query, the
``Accept``, ``Accept-Encoding`` and ``Authorization`` headers); output is parsed values
(selectors, integer and boolean parameters, the negotiated :class:`Conversion`, whether a
watch is a streaming list and may be compressed, a bearer token) or the
:class:`~aioinformer._apiserver.objects.StatusError` kube-apiserver answers with (400
``BadRequest``, 404, 405, 406 ``NotAcceptable``, 422 ``Invalid``, 500 ``InternalError``
for a shard selector that does not parse), and the ``web.Response`` for a stored entry, a
LIST page or a failure.

Shard selectors (KEP-5866, the ``shardSelector`` parameter of a LIST or WATCH) are read
only for a server that serves them (``shard_selectors=True``): kube-apiserver v1.36 with
its alpha ``ShardedListAndWatch`` gate on, or the caching proxy, which serves them from
its cache whatever its upstream; any other server ignores the parameter, malformed or
not, as kube-apiserver with the gate off does.

Ordering: none; each function looks at its arguments only.

Task model: synchronous functions, called from request handlers on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, NotRequired, TypeAlias, TypedDict

import orjson
from aiohttp import web

from aioinformer._apiserver.objects import META_GROUP, Entry, ResourceType, StatusError, status_body
from aioinformer.errors import SelectorError
from aioinformer.labels import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from aioinformer.shard_selector import parse_shard_selector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aioinformer._apiserver.watch import ListResult
    from aioinformer.shard_selector import ShardSelector

__all__ = [
    "JSON",
    "Conversion",
    "ListQuery",
    "WatchListSupport",
    "WatchQuery",
    "accepts_gzip",
    "bearer",
    "bool_param",
    "entry_response",
    "int_param",
    "invalid_options",
    "list_query",
    "list_response",
    "method_not_allowed",
    "negotiate",
    "not_acceptable",
    "not_served",
    "page_response",
    "selectors",
    "shard_selector",
    "status_response",
    "streams_a_list",
    "validate_rv_match",
    "watch_query",
    "watch_response",
]

JSON: Final = "application/json"


_META_KINDS: Final = frozenset({"PartialObjectMetadata", "PartialObjectMetadataList"})


_META_VERSIONS: Final = frozenset({"v1", "v1beta1"})


@dataclass(frozen=True, slots=True)
class Conversion:
    """What an ``Accept: application/json;as=<kind>;g=meta.k8s.io;v=<version>`` asks for:
    ``kind`` is ``PartialObjectMetadata`` or ``PartialObjectMetadataList``,
    ``api_version`` ``meta.k8s.io/v1`` or ``meta.k8s.io/v1beta1``."""

    kind: str
    api_version: str


def negotiate(accept: str) -> Conversion | None:
    """The answer's form for an Accept header, as kube-apiserver negotiates it.

    ``None`` means the resource's own JSON. Media ranges are tried by falling ``q`` (in
    header order for equal ones); a range the fake cannot serve (protobuf, YAML, ``Table``
    or an unknown conversion) is skipped. No servable range answers 406 ``NotAcceptable``.
    """
    if not accept.strip():
        return None
    ranges: list[tuple[float, int, str, dict[str, str]]] = []
    for position, clause in enumerate(accept.split(",")):
        media, *raw_params = (part.strip() for part in clause.split(";"))
        params: dict[str, str] = {}
        for raw in raw_params:
            key, _, value = raw.partition("=")
            params[key.strip()] = value.strip().strip('"')
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 0.0
        if quality > 0:
            ranges.append((-quality, position, media.lower(), params))
    for _, _, media, params in sorted(ranges, key=lambda r: (r[0], r[1])):
        if media not in (JSON, "application/*", "*/*"):
            continue
        kind = params.get("as")
        if kind is None:
            return None
        version = params.get("v", "")
        if kind in _META_KINDS and params.get("g") == META_GROUP and version in _META_VERSIONS:
            return Conversion(kind, f"{META_GROUP}/{version}")
    raise not_acceptable(f"only the following media types are accepted: {JSON}")


def status_response(exc: StatusError) -> web.Response:
    """The HTTP answer carrying a failure's ``Status`` body, code and headers."""
    return web.Response(
        body=orjson.dumps(exc.status), status=exc.code, content_type=JSON, headers=exc.headers
    )


def entry_response(
    rt: ResourceType, entry: Entry, convert: Conversion | None = None, *, status: int = 200
) -> web.Response:
    """The HTTP answer carrying a stored object, as itself or converted."""
    if convert is None:
        body = entry.full(rt)
    elif convert.kind == "PartialObjectMetadata":
        body = entry.partial(convert.api_version)
    else:
        raise not_acceptable(
            f"you requested {convert.kind}, but the requested object is not a list ({rt.kind})"
        )
    return web.Response(body=body, status=status, content_type=JSON)


def not_acceptable(message: str) -> StatusError:
    """The 406 ``NotAcceptable`` for an answer that cannot take the asked form."""
    return StatusError(status_body(406, "NotAcceptable", message))


def not_served() -> StatusError:
    """The 404 for a path that names no served resource or subresource."""
    return StatusError(
        status_body(404, "NotFound", "the server could not find the requested resource", {})
    )


def method_not_allowed() -> StatusError:
    """The 405 for a method the path does not serve."""
    return StatusError(
        status_body(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            {},
        )
    )


def invalid_options(message: str) -> StatusError:
    """The 422 ``Invalid`` for query options kube-apiserver refuses together."""
    return StatusError(
        status_body(
            422,
            "Invalid",
            f'ListOptions.meta.k8s.io "" is invalid: {message}',
            {"group": "meta.k8s.io", "kind": "ListOptions"},
        )
    )


def validate_rv_match(
    rv: str | None, match: str | None, *, watch: bool, send_initial_events: bool | None
) -> None:
    """Refuse the ``resourceVersion``/``resourceVersionMatch``/``sendInitialEvents``
    combinations kube-apiserver refuses for a LIST or (``watch``) a WATCH."""
    if match not in (None, "", "Exact", "NotOlderThan"):
        raise invalid_options(
            f'resourceVersionMatch: Unsupported value: "{match}": supported values: '
            '"Exact", "NotOlderThan", ""'
        )
    if watch:
        if send_initial_events is not None and match != "NotOlderThan":
            raise invalid_options(
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch "
                "unless resourceVersionMatch is set to NotOlderThan"
            )
        if match and send_initial_events is None:
            raise invalid_options(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch "
                "unless sendInitialEvents is provided"
            )
        return
    if match and not rv:
        raise invalid_options(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
            "resourceVersion is provided"
        )
    if match == "Exact" and rv == "0":
        raise invalid_options(
            'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
            'resourceVersion "0"'
        )


def selectors(
    rt: ResourceType, query: Mapping[str, str]
) -> tuple[LabelSelector | None, FieldSelector | None]:
    """The request's label and field selectors, or the 400 for one that does not parse
    or filters on a field the resource does not support."""
    labels: LabelSelector | None = None
    fields: FieldSelector | None = None
    try:
        if query.get("labelSelector"):
            labels = parse_label_selector(query["labelSelector"]) or None
        if query.get("fieldSelector"):
            fields = parse_field_selector(query["fieldSelector"]) or None
    except SelectorError as exc:
        raise StatusError(
            status_body(400, "BadRequest", f"unable to parse requirement: {exc}")
        ) from exc
    if fields is not None:
        for name in sorted(fields.fields()):
            if name not in rt.field_labels:
                raise StatusError(
                    status_body(400, "BadRequest", f"field label not supported: {name}")
                )
    return labels, fields


def shard_selector(query: Mapping[str, str], *, enabled: bool) -> ShardSelector | None:
    """The request's ``shardSelector`` when the server serves shard selectors
    (``enabled``), else ``None`` whatever it says. One that does not parse answers what
    kube-apiserver v1.36 answers: 500 ``InternalError`` with the parser's message."""
    text = query.get("shardSelector") if enabled else None
    if not text:
        return None
    try:
        return parse_shard_selector(text)
    except SelectorError as exc:
        raise StatusError(status_body(500, "InternalError", str(exc))) from exc


def int_param(query: Mapping[str, str], name: str) -> int | None:
    """A non-negative integer query parameter (``None`` when absent), or the 400."""
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise StatusError(status_body(400, "BadRequest", f'invalid value for {name}: "{raw}"'))
    return value


def bool_param(query: Mapping[str, str], name: str) -> bool | None:
    """A boolean query parameter as kube-apiserver reads it (``None`` when absent)."""
    raw = query.get(name)
    if raw is None:
        return None
    return raw.lower() in ("1", "true", "t", "yes")


def bearer(request: web.BaseRequest) -> str | None:
    """The bearer token of the ``Authorization`` header, if there is one."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def list_response(
    rt: ResourceType,
    entries: list[Entry],
    rv: int,
    token: str | None,
    remaining: int | None,
    convert: Conversion | None,
    *,
    shards: ShardSelector | None = None,
) -> web.Response:
    """The HTTP answer carrying a LIST page of ``entries`` read at ``rv``, as the
    resource's own List or converted (``PartialObjectMetadataList``); ``shards``, the
    shard selector that filtered it, is echoed normalised (``metadata.shardInfo``)."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if token:
        meta["continue"] = token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    if shards is not None:
        meta["shardInfo"] = {"selector": str(shards)}
    if convert is None:
        head = {"kind": rt.kind + "List", "apiVersion": rt.api_version, "metadata": meta}
        items = [entry.item for entry in entries]
    elif convert.kind == "PartialObjectMetadataList":
        # Unlike a typed list's, the items of a PartialObjectMetadataList carry their
        # own kind and apiVersion.
        head = {"kind": convert.kind, "apiVersion": convert.api_version, "metadata": meta}
        items = [entry.partial(convert.api_version) for entry in entries]
    else:
        raise not_acceptable(
            f"you requested {convert.kind}, but the requested object is a list ({rt.kind}List)"
        )
    encoded = orjson.dumps(head)
    body = b"".join((encoded[:-1], b',"items":[', b",".join(items), b"]}"))
    return web.Response(body=body, content_type=JSON)


def page_response(rt: ResourceType, result: ListResult, convert: Conversion | None) -> web.Response:
    """The HTTP answer carrying a watch cache's LIST page (see :func:`list_response`)."""
    return list_response(
        rt,
        result.entries,
        result.rv,
        result.continue_,
        result.remaining,
        convert,
        shards=result.shards,
    )


class ListQuery(TypedDict):
    """What a LIST asks of a watch cache (``WatchCache.list``'s options but the
    namespace, which the path names)."""

    label_selector: LabelSelector | None
    field_selector: FieldSelector | None
    resource_version: str | None
    resource_version_match: str | None
    limit: int | None
    continue_: str | None
    shard_selector: NotRequired[ShardSelector | None]


def list_query(
    rt: ResourceType, query: Mapping[str, str], *, shard_selectors: bool = False
) -> ListQuery:
    """A LIST request's options, or the error kube-apiserver answers: 400 for a
    selector, limit or version that does not parse (decoding the options comes first),
    422 for a ``resourceVersionMatch`` it refuses, then, on a server that serves shard
    selectors (``shard_selectors``), 500 for a ``shardSelector`` that does not parse (see
    :func:`shard_selector`)."""
    labels, fields = selectors(rt, query)
    limit = int_param(query, "limit")
    rv = query.get("resourceVersion")
    match = query.get("resourceVersionMatch")
    validate_rv_match(rv, match, watch=False, send_initial_events=None)
    return ListQuery(
        label_selector=labels,
        field_selector=fields,
        resource_version=rv,
        resource_version_match=match,
        limit=limit,
        continue_=query.get("continue") or None,
        shard_selector=shard_selector(query, enabled=shard_selectors),
    )


WatchListSupport: TypeAlias = Literal["supported", "forbidden", "ignored"]
"""How a server answers a streaming list (``sendInitialEvents``): as kube-apiserver v1.36
does, as one whose WatchList feature gate is off (422), or as one too old to know the
parameter (it is dropped)."""


class WatchQuery(TypedDict):
    """What a WATCH asks of a watch cache (``WatchCache.open_watch``'s options but the
    namespace, which the path names, and the version it is served at)."""

    label_selector: LabelSelector | None
    field_selector: FieldSelector | None
    resource_version: str | None
    initial_events: bool
    initial_events_end: bool
    bookmarks: NotRequired[bool]
    as_meta: NotRequired[str | None]
    shard_selector: NotRequired[ShardSelector | None]


def watch_query(
    rt: ResourceType,
    query: Mapping[str, str],
    convert: Conversion | None,
    *,
    name: str | None,
    watch_list: WatchListSupport = "supported",
    shard_selectors: bool = False,
) -> tuple[WatchQuery, int | None]:
    """A WATCH request's options and its ``timeoutSeconds``, or the error kube-apiserver
    answers (400, or 422 for options it refuses together; with ``shard_selectors``, 500
    for a ``shardSelector`` that does not parse, see :func:`shard_selector`). ``name`` (a
    watch of one object by its path) adds ``metadata.name`` to the field selector.
    Initial events are sent for ``sendInitialEvents=true``, and without it for an unset
    or ``"0"`` version.

    Asked for a ``PartialObjectMetadataList``, kube-apiserver converts each event's object
    on its own, the conversion fails, and it sends the objects unconverted: only
    ``PartialObjectMetadata`` makes a metadata-only watch.
    """
    labels, fields = selectors(rt, query)
    rv = query.get("resourceVersion")
    match = query.get("resourceVersionMatch")
    send_initial = bool_param(query, "sendInitialEvents")
    if send_initial is not None:
        if watch_list == "forbidden":
            raise invalid_options(
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch "
                "unless the WatchList feature gate is enabled"
            )
        if watch_list == "ignored":
            send_initial = match = None
    bookmarks = bool_param(query, "allowWatchBookmarks") is True
    validate_rv_match(rv, match, watch=True, send_initial_events=send_initial)
    if send_initial and not bookmarks:
        raise invalid_options(
            "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting "
            "allowWatchBookmarks=true"
        )
    timeout = int_param(query, "timeoutSeconds")
    shards = shard_selector(query, enabled=shard_selectors)
    if name is not None:
        by_name = parse_field_selector(f"metadata.name={name}")
        fields = (
            by_name
            if fields is None
            else FieldSelector(
                tuple(sorted(fields.requirements + by_name.requirements, key=lambda r: r.field))
            )
        )
    initial = (not rv or rv == "0") if send_initial is None else send_initial
    as_meta = (
        convert.api_version
        if convert is not None and convert.kind == "PartialObjectMetadata"
        else None
    )
    options = WatchQuery(
        label_selector=labels,
        field_selector=fields,
        resource_version=rv,
        initial_events=initial,
        initial_events_end=bool(send_initial),
        bookmarks=bookmarks,
        as_meta=as_meta,
        shard_selector=shards,
    )
    return options, timeout


def watch_response(*, gzip: bool = False) -> web.StreamResponse:
    """The chunked 200 response a watch's JSON lines are written to; with ``gzip``, one
    announcing them compressed (``Content-Encoding: gzip``, ``Vary: Accept-Encoding``, as
    kube-apiserver's compressed watches do). The lines are compressed by the writer."""
    headers = {"Content-Type": JSON}
    if gzip:
        headers["Content-Encoding"] = "gzip"
        headers["Vary"] = "Accept-Encoding"
    response = web.StreamResponse(status=200, headers=headers)
    response.enable_chunked_encoding()
    return response


def streams_a_list(query: Mapping[str, str], *, watch_list: WatchListSupport) -> bool:
    """Whether kube-apiserver counts a WATCH as a streaming list (a *WatchList* request),
    as 1.37 decides whether to compress it.

    The watch must allow bookmarks and send initial events: ``sendInitialEvents=true``,
    or, the parameter unset and no ``resourceVersionMatch`` given, an unset or ``"0"``
    ``resourceVersion``, which kube-apiserver's defaulting (``SetListOptionsDefaults``)
    turns into a streaming list, so a plain watch from ``""`` or ``"0"`` with bookmarks is
    one too. A server whose WatchList feature is off (``"forbidden"``) or that does not
    know the parameter (``"ignored"``) has none.
    """
    if watch_list != "supported" or bool_param(query, "allowWatchBookmarks") is not True:
        return False
    send_initial = bool_param(query, "sendInitialEvents")
    if send_initial is not None:
        return send_initial
    version = query.get("resourceVersion")
    return not query.get("resourceVersionMatch") and version in (None, "", "0")


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` header lets kube-apiserver compress with gzip: one of
    its comma-separated codings is exactly ``gzip`` once trimmed (kube-apiserver reads no
    ``q`` values: ``gzip;q=0`` is not ``gzip``, nor is ``*``)."""
    return any(coding.strip() == "gzip" for coding in accept_encoding.split(","))
