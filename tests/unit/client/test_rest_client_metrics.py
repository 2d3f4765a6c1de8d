"""REST client metrics under client-go's names, without HTTP: the URL template that labels a
request's duration (client-go's ``TestURLTemplate`` cases, ported), and the recorder a
client's HTTP layer reports to, driven directly on a FakeClock into a provider of plain
recorders. The HTTP layer's own reports are exercised over real HTTP in
``tests/e2e/test_metrics_e2e.py``."""

from __future__ import annotations

import pytest

from aioinformer._kernel.metrics import RestClientMetricsProvider, set_metrics_provider
from aioinformer.client._metrics import (
    NO_REST_CLIENT_METRICS,
    new_rest_client_metrics,
    url_template,
)
from aioinformer.testing.clock import FakeClock
from tests._support_metrics import (  # noqa: F401
    RecordedMetric,
    RecordingProvider,
    WorkqueueOnlyProvider,
    restore_installed_provider,
)

BASE = "http://localhost/some/base/url/path"
ROOT = "http://localhost/"

# (base, path, query, template): client-go's cases, with its base URL and paths.
TEMPLATES = [
    pytest.param(
        BASE,
        "/api/v1/namespaces/ns/r1/nm",
        {"p0": "v0"},
        f"{BASE}/api/v1/namespaces/%7Bnamespace%7D/r1/%7Bname%7D?p0=%7Bvalue%7D",
        id="core-namespaced-object-with-a-parameter",
    ),
    pytest.param(
        BASE,
        "/pre1/v1/namespaces/ns/r1/nm",
        {"p0": "v0"},
        "http://localhost/%7Bprefix%7D",
        id="unknown-api-prefix",
    ),
    pytest.param(
        BASE,
        "/api/v1/namespaces/ns/r1/name1",
        None,
        f"{BASE}/api/v1/namespaces/%7Bnamespace%7D/r1/%7Bname%7D",
        id="core-namespaced-object",
    ),
    pytest.param(
        BASE,
        "/apis/g1/v1/namespaces/ns/r1/name1",
        None,
        f"{BASE}/apis/g1/v1/namespaces/%7Bnamespace%7D/r1/%7Bname%7D",
        id="group-namespaced-object",
    ),
    pytest.param(
        BASE,
        "/api/v1/namespaces/ns/r1",
        None,
        f"{BASE}/api/v1/namespaces/%7Bnamespace%7D/r1",
        id="core-namespaced-collection",
    ),
    pytest.param(
        BASE,
        "/apis/g1/v1/namespaces/ns/r1",
        None,
        f"{BASE}/apis/g1/v1/namespaces/%7Bnamespace%7D/r1",
        id="group-namespaced-collection",
    ),
    pytest.param(
        BASE, "/api/v1/r1/name1", None, f"{BASE}/api/v1/r1/%7Bname%7D", id="core-cluster-object"
    ),
    pytest.param(
        BASE,
        "/apis/g1/v1/r1/name1",
        None,
        f"{BASE}/apis/g1/v1/r1/%7Bname%7D",
        id="group-cluster-object",
    ),
    pytest.param(
        BASE,
        "/apis/namespaces/namespaces/namespaces/namespaces/namespaces/namespaces/finalize",
        None,
        f"{BASE}/apis/namespaces/namespaces/namespaces/%7Bnamespace%7D/namespaces/%7Bname%7D"
        "/finalize",
        id="namespaced-object-finalize",
    ),
    pytest.param(
        BASE,
        "/apis/namespaces/namespaces/namespaces/namespaces/namespaces/namespaces",
        None,
        f"{BASE}/apis/namespaces/namespaces/namespaces/%7Bnamespace%7D/namespaces/%7Bname%7D",
        id="namespaced-object-named-like-its-path",
    ),
    pytest.param(
        BASE,
        "/apis/namespaces/namespaces/namespaces/namespaces/namespaces/finalize",
        None,
        f"{BASE}/apis/namespaces/namespaces/namespaces/%7Bnamespace%7D/namespaces/finalize",
        id="namespaced-collection-then-finalize",
    ),
    pytest.param(
        BASE,
        "/apis/namespaces/namespaces/namespaces/namespaces/namespaces/status",
        None,
        f"{BASE}/apis/namespaces/namespaces/namespaces/%7Bnamespace%7D/namespaces/status",
        id="namespaced-collection-then-status",
    ),
    pytest.param(
        BASE,
        "/apis/namespaces/namespaces/namespaces/namespaces/namespaces",
        None,
        f"{BASE}/apis/namespaces/namespaces/namespaces/%7Bnamespace%7D/namespaces",
        id="namespaced-collection-named-like-its-path",
    ),
    pytest.param(
        BASE,
        "/apis/namespaces/namespaces/namespaces/namespaces/finalize",
        None,
        f"{BASE}/apis/namespaces/namespaces/namespaces/%7Bname%7D/finalize",
        id="cluster-object-finalize",
    ),
    pytest.param(
        BASE,
        "/apis/namespaces/namespaces/namespaces/namespaces/status",
        None,
        f"{BASE}/apis/namespaces/namespaces/namespaces/%7Bname%7D/status",
        id="cluster-object-status",
    ),
    pytest.param(
        BASE,
        "/apis/namespaces/namespaces/namespaces/namespaces",
        None,
        f"{BASE}/apis/namespaces/namespaces/namespaces/%7Bname%7D",
        id="cluster-object-named-like-its-path",
    ),
    pytest.param(
        BASE,
        "/apis/namespaces/namespaces/namespaces",
        None,
        f"{BASE}/apis/namespaces/namespaces/namespaces",
        id="cluster-collection",
    ),
    pytest.param(
        BASE,
        "/pre1/namespaces/namespaces/namespaces/namespaces/namespaces/namespaces/finalize",
        None,
        "http://localhost/%7Bprefix%7D",
        id="unknown-prefix-with-a-subresource",
    ),
    pytest.param(
        ROOT,
        "/api/v1/namespaces/ns/r2/name1",
        None,
        "http://localhost/api/v1/namespaces/%7Bnamespace%7D/r2/%7Bname%7D",
        id="root-base-namespaced-object",
    ),
    pytest.param(
        BASE,
        "/api/v1/namespaces/ns/r3/name1",
        None,
        f"{BASE}/api/v1/namespaces/%7Bnamespace%7D/r3/%7Bname%7D",
        id="base-path-namespaced-object",
    ),
    pytest.param(ROOT, "/", None, "http://localhost/", id="root"),
    pytest.param(ROOT, "/version", None, "http://localhost/version", id="one-segment"),
    # Beyond client-go's table: what this library's own requests look like.
    pytest.param(
        "https://10.0.0.1:6443",
        "/api/v1/namespaces/default/pods",
        {"watch": "1", "resourceVersion": "42", "allowWatchBookmarks": "true"},
        "https://10.0.0.1:6443/api/v1/namespaces/%7Bnamespace%7D/pods"
        "?allowWatchBookmarks=%7Bvalue%7D&resourceVersion=%7Bvalue%7D&watch=%7Bvalue%7D",
        id="watch-query-keys-sorted",
    ),
    pytest.param(
        "https://10.0.0.1:6443",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        None,
        "https://10.0.0.1:6443/apis/apps/v1/namespaces/%7Bnamespace%7D/deployments/%7Bname%7D"
        "/scale",
        id="named-subresource",
    ),
    pytest.param(
        "https://10.0.0.1:6443",
        "/api/v1/nodes/node-1/status",
        None,
        "https://10.0.0.1:6443/api/v1/nodes/%7Bname%7D/status",
        id="cluster-status",
    ),
    pytest.param(
        "https://10.0.0.1:6443",
        "/version",
        {"timeout": "32s"},
        "https://10.0.0.1:6443/version?timeout=%7Bvalue%7D",
        id="one-segment-keeps-its-query-template",
    ),
]


@pytest.mark.parametrize(("base", "path", "query", "expected"), TEMPLATES)
def test_the_url_template_follows_client_go(
    base: str, path: str, query: dict[str, str] | None, expected: str
) -> None:
    assert url_template(base, path, query) == expected


def test_two_objects_of_one_collection_share_a_template() -> None:
    base = "https://10.0.0.1:6443"
    first = url_template(base, "/api/v1/namespaces/a/configmaps/x", {"fieldManager": "m"})
    second = url_template(base, "/api/v1/namespaces/b/configmaps/y", {"fieldManager": "n"})
    assert first == second


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


HOST = "10.0.0.1:6443"


def test_answers_count_by_code_and_method_and_failures_as_error(clock: FakeClock) -> None:
    provider = RecordingProvider()
    metrics = new_rest_client_metrics(f"https://{HOST}", provider, clock=clock)
    for status in (200, 200, 404, 500):
        metrics.answered("GET", status)
    metrics.answered("POST", 201)
    metrics.answered("PATCH", 409)
    metrics.unanswered("GET")
    assert {
        labels: m.value for labels, m in provider.series("rest_client_requests_total").items()
    } == {
        ("200", "GET", HOST): 2,
        ("404", "GET", HOST): 1,
        ("500", "GET", HOST): 1,
        ("201", "POST", HOST): 1,
        ("409", "PATCH", HOST): 1,
        ("<error>", "GET", HOST): 1,
    }


async def test_a_duration_is_observed_on_the_clock_under_its_template(clock: FakeClock) -> None:
    provider = RecordingProvider()
    metrics = new_rest_client_metrics(f"https://{HOST}", provider, clock=clock)
    started = metrics.started()
    await clock.advance(0.25)
    metrics.finished("GET", "/api/v1/namespaces/default/pods/web", None, started)
    started = metrics.started()
    await clock.advance(0.75)
    metrics.finished("GET", "/api/v1/namespaces/other/pods/db", None, started)
    template = f"https://{HOST}/api/v1/namespaces/%7Bnamespace%7D/pods/%7Bname%7D"
    durations = provider.series("rest_client_request_duration_seconds")
    assert list(durations) == [("GET", template, HOST)]
    assert durations["GET", template, HOST].observations == [0.25, 0.75]


def test_each_label_set_s_object_is_made_once(clock: FakeClock) -> None:
    made: list[tuple[str, ...]] = []

    class Counting(RecordingProvider):
        def new_rest_client_requests_metric(
            self, code: str, method: str, host: str
        ) -> RecordedMetric:
            made.append((code, method, host))
            return super().new_rest_client_requests_metric(code, method, host)

    metrics = new_rest_client_metrics(f"https://{HOST}", Counting(), clock=clock)
    for _ in range(3):
        metrics.answered("GET", 200)
        metrics.unanswered("GET")
    assert made == [("200", "GET", HOST), ("<error>", "GET", HOST)]


def test_the_host_label_leaves_out_credentials_in_the_url(clock: FakeClock) -> None:
    provider = RecordingProvider()
    metrics = new_rest_client_metrics(
        "https://user:secret@api.example:443/prefix", provider, clock=clock
    )
    metrics.answered("GET", 200)
    assert list(provider.series("rest_client_requests_total")) == [
        ("200", "GET", "api.example:443")
    ]


def test_the_installed_provider_is_used_only_with_the_protocol(
    restore_installed_provider: None,  # noqa: F811
    clock: FakeClock,
) -> None:
    assert isinstance(RecordingProvider(), RestClientMetricsProvider)
    set_metrics_provider(WorkqueueOnlyProvider())
    assert new_rest_client_metrics("https://h", None, clock=clock) is NO_REST_CLIENT_METRICS
    set_metrics_provider(None)
    assert new_rest_client_metrics("https://h", None, clock=clock) is NO_REST_CLIENT_METRICS
    installed = RecordingProvider()
    set_metrics_provider(installed)
    new_rest_client_metrics("https://h", None, clock=clock).answered("GET", 200)
    assert installed.value("rest_client_requests_total", "200", "GET", "h") == 1
