"""The REST client's metrics: each request it answers, turned into metrics.

Role: the client's HTTP layer reports each request to a *recorder*, which writes it to the
metric objects a :class:`~aioinformer._kernel.metrics.RestClientMetricsProvider` made, with
client-go's labels (the verb, the host, the URL as a template).

Input: an HTTP request answered (or not) and finished, sync, on the client's event loop.
Output: ``inc``/``observe`` calls on the provider's metric objects.

Cost: a request costs one dictionary lookup per metric (its label set's object is made on
first use) and, for the duration, building its URL template. With no provider, or one
lacking the protocol, the client gets the no-op recorder.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Final
from urllib.parse import quote_plus, urlsplit

from aioinformer._kernel.metrics import (
    RestClientMetricsProvider,
    get_metrics_provider,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aioinformer._kernel.clock import Clock
    from aioinformer._kernel.metrics import CounterMetric, HistogramMetric

__all__ = [
    "NO_REST_CLIENT_METRICS",
    "RestClientMetrics",
    "new_rest_client_metrics",
    "url_template",
]


_NO_ANSWER: Final = 0
"""The status a recorder files a request without an answer under."""
_NO_ANSWER_CODE: Final = "<error>"
"""client-go's ``code`` for a request without an answer: an error's text would make the
label unbounded."""
_UNNAMED_SUBRESOURCES: Final = frozenset(("finalize", "status"))
"""The subresources client-go's template recognises after a name."""
_NAME: Final = "%7Bname%7D"
_NAMESPACE: Final = "%7Bnamespace%7D"


def url_template(base: str, path: str, query: Mapping[str, str] | None = None) -> str:
    """client-go's URL template of a request (its ``finalURLTemplate``): the URL with
    bounded cardinality that labels a request's duration.

    ``base`` is the server's URL as configured (it may carry a path prefix), ``path``
    the request's path under it (``/api/...`` or ``/apis/...``), ``query`` its
    parameters. Under ``/api/<version>`` and ``/apis/<group>/<version>``, the namespace
    after ``namespaces/`` becomes ``{namespace}`` and the object's name ``{name}``
    (kept before ``status`` and ``finalize``); every query value becomes ``{value}``,
    keys sorted; braces are escaped as Go writes them (``%7Bname%7D``). A path of one
    segment (``/version``) is kept as it is; any other path outside ``/api`` and
    ``/apis`` becomes ``/{prefix}``, without its query or the base's path.
    """
    parts = urlsplit(base)
    return _template(f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/"), path, query)


def _template(origin: str, base_path: str, path: str, query: Mapping[str, str] | None) -> str:
    """:func:`url_template` with the base already split into its origin and its path."""
    if not path.startswith("/"):
        path = "/" + path
    segments = path.split("/")
    if len(segments) <= 2:
        return origin + base_path + path + _query_template(query)
    if segments[1] == "api":
        index = 3
    elif segments[1] == "apis":
        index = 4
    else:
        return origin + "/%7Bprefix%7D"
    # The placeholders are written escaped: the path is already quoted, so it holds no
    # brace of its own to escape.
    after = len(segments) - index
    if after == 2:
        segments[index + 1] = _NAME
    elif after == 3:
        if segments[index + 2] in _UNNAMED_SUBRESOURCES:
            segments[index + 1] = _NAME
        else:
            segments[index + 1] = _NAMESPACE
    elif after >= 4:
        segments[index + 1] = _NAMESPACE
        if segments[index + 3] not in _UNNAMED_SUBRESOURCES:
            segments[index + 3] = _NAME
    # Empty segments drop out and a trailing slash goes, as Go's path.Join cleans them.
    joined = "/".join([part for part in segments if part])
    return f"{origin}{base_path}/{joined}{_query_template(query)}"


def _query_template(query: Mapping[str, str] | None) -> str:
    if not query:
        return ""
    return _query_keys_template(tuple(sorted(query)))


@functools.lru_cache(maxsize=256)
def _query_keys_template(keys: tuple[str, ...]) -> str:
    # A client sends a handful of parameter names: the template of each set is kept.
    return "?" + "&".join(f"{quote_plus(key)}=%7Bvalue%7D" for key in keys)


class RestClientMetrics:
    """A client's recorder. This base records nothing: clients without a provider use
    it.

    Every request sent is reported once it is :meth:`answered` (its response headers
    arrived) or :meth:`unanswered` (it failed first); a retried request once per
    attempt. A request whose answer is read whole (not a stream) is also reported when
    it is :meth:`finished`, with what :meth:`started` returned when it began.
    """

    __slots__ = ()

    def started(self) -> float:
        """A request whose answer is read whole begins; returns the start time."""
        return 0.0

    def answered(self, method: str, status: int) -> None:
        """A request's response headers arrived with ``status``."""

    def unanswered(self, method: str) -> None:
        """A request failed before any answer: connection, TLS, timeout."""

    def finished(
        self, method: str, path: str, query: Mapping[str, str] | None, started: float
    ) -> None:
        """The request begun at ``started`` ended: its answer read, or failed."""


class _ProviderRestClientMetrics(RestClientMetrics):
    """Records a client's requests through a :class:`RestClientMetricsProvider`."""

    __slots__ = (
        "_base_path",
        "_clock",
        "_durations",
        "_host",
        "_origin",
        "_provider",
        "_results",
    )

    def __init__(self, provider: RestClientMetricsProvider, base: str, clock: Clock) -> None:
        self._provider = provider
        parts = urlsplit(base)
        # Split once: the URL template of each request only adds its path and query.
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._base_path = parts.path.rstrip("/")
        # client-go's host label: the server's host[:port] as configured.
        self._host = parts.netloc.rpartition("@")[2]
        self._clock = clock
        # (status, method) -> counter; status _NO_ANSWER for a request without an answer.
        self._results: dict[tuple[int, str], CounterMetric] = {}
        # (method, URL template) -> histogram.
        self._durations: dict[tuple[str, str], HistogramMetric] = {}

    def started(self) -> float:
        return self._clock.monotonic()

    def answered(self, method: str, status: int) -> None:
        counter = self._results.get((status, method))
        if counter is None:
            counter = self._result_metric(method, status, str(status))
        counter.inc()

    def unanswered(self, method: str) -> None:
        counter = self._results.get((_NO_ANSWER, method))
        if counter is None:
            counter = self._result_metric(method, _NO_ANSWER, _NO_ANSWER_CODE)
        counter.inc()

    def _result_metric(self, method: str, status: int, code: str) -> CounterMetric:
        counter = self._provider.new_rest_client_requests_metric(code, method, self._host)
        self._results[status, method] = counter
        return counter

    def finished(
        self, method: str, path: str, query: Mapping[str, str] | None, started: float
    ) -> None:
        key = (method, _template(self._origin, self._base_path, path, query))
        histogram = self._durations.get(key)
        if histogram is None:
            histogram = self._provider.new_rest_client_request_duration_metric(
                method, key[1], self._host
            )
            self._durations[key] = histogram
        histogram.observe(self._clock.monotonic() - started)


NO_REST_CLIENT_METRICS: Final = RestClientMetrics()
"""The recorder of a client that has not opened its session yet, or has no provider."""


def new_rest_client_metrics(
    base: str, provider: RestClientMetricsProvider | None, *, clock: Clock
) -> RestClientMetrics:
    """The recorder for a client of the server at ``base`` (its configured URL):
    ``provider``'s, else the installed provider's when it implements
    :class:`RestClientMetricsProvider`, else the no-op one. Durations are read on
    ``clock``."""
    chosen = provider if provider is not None else get_metrics_provider()
    if not isinstance(chosen, RestClientMetricsProvider):
        return NO_REST_CLIENT_METRICS
    return _ProviderRestClientMetrics(chosen, base, clock)
