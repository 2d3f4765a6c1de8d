"""Streaming lists end to end: informers and the factory over real HTTP against the fake
API server get their initial state from a watch with ``sendInitialEvents`` by default,
stream again after a 429 or a lost stream, and fall back to LIST+WATCH when the server
forbids or ignores it, or keeps failing past the retries.

Every test runs twice (``tests._support_gzip``): against servers answering as v1.36 does,
and against servers compressing streaming lists as v1.37 does, one gzip member per event,
with clients that ask for gzip."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from aioinformer.errors import ApiError, Forbidden, TooManyRequests, WatchError
from aioinformer.factory import SharedInformerFactory
from aioinformer.informer import SharedIndexInformer
from aioinformer.reflector import ReflectorOptions
from aioinformer.testing import FakeAPIServer, FakeClock
from tests._support_gzip import compressed as compressed
from tests._support_gzip import fake_apiserver_factory as fake_apiserver_factory
from tests._support_gzip import kube_client as kube_client
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.testing import RequestRecord

# The conditions below depend on socket I/O between the real client and server: a short
# real sleep between checks lets the loop's selector run.
SOCKET_POLL = 0.001


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def pod_requests(server: FakeAPIServer) -> list[str]:
    """The pod requests so far, each as ``LIST``, ``WATCH`` or ``STREAM`` (a watch with
    ``sendInitialEvents=true``)."""
    return [_verb(record) for record in server.request_log if record.path.endswith("/pods")]


def _verb(record: RequestRecord) -> str:
    if record.query.get("watch") not in ("1", "true"):
        return "LIST"
    return "STREAM" if record.query.get("sendInitialEvents") == "true" else "WATCH"


class Recorder:
    """Every add as ``(name, is_in_initial_list)``."""

    def __init__(self) -> None:
        self.adds: list[tuple[str, bool]] = []

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.adds.append((obj["metadata"]["name"], is_in_initial_list))


async def test_an_informer_syncs_from_a_streaming_list_by_default(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.create(pod("b"))
    recorder = Recorder()
    informer = SharedIndexInformer(kube_client.resource("v1/pods", namespace="default"))
    informer.add_event_handler(on_add=recorder.on_add)
    async with informer:
        assert await informer.wait_for_sync(timeout=10)
        await wait_until(lambda: len(recorder.adds) == 2, poll=SOCKET_POLL, timeout=10)
        fake_apiserver.create(pod("c"))
        await wait_until(lambda: len(recorder.adds) == 3, poll=SOCKET_POLL, timeout=10)
        reflector = informer.statistics().reflector
        assert reflector is not None
        assert reflector.lists == 0
    assert sorted(recorder.adds[:2]) == [("a", True), ("b", True)]
    assert recorder.adds[2] == ("c", False)
    # One request: the streaming list, whose stream then carried the live event.
    assert pod_requests(fake_apiserver) == ["STREAM"]
    stream = next(r for r in fake_apiserver.request_log if r.path.endswith("/pods"))
    assert stream.query["resourceVersionMatch"] == "NotOlderThan"
    assert stream.query["allowWatchBookmarks"] == "true"


async def test_the_factory_streams_by_default_and_lists_when_told(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    for name in ("a", "b", "c"):
        fake_apiserver.create(pod(name))
    async with SharedInformerFactory(kube_client, namespace="default") as factory:
        informer = factory.informer_for("v1/pods")
        assert await factory.wait_for_cache_sync(timeout=10) == {"v1/pods ns=default": True}
        assert len(informer.lister().list()) == 3
    assert pod_requests(fake_apiserver) == ["STREAM"]

    fake_apiserver.request_log.clear()
    async with SharedInformerFactory(
        kube_client,
        namespace="default",
        reflector=ReflectorOptions(use_watch_list=False, page_size=2),
    ) as factory:
        informer = factory.informer_for("v1/pods")
        assert await factory.wait_for_cache_sync(timeout=10) == {"v1/pods ns=default": True}
        assert len(informer.lister().list()) == 3
        await fake_apiserver.wait_for_watchers(1)
    assert pod_requests(fake_apiserver) == ["LIST", "LIST", "WATCH"]
    lists = [r for r in fake_apiserver.request_log if _verb(r) == "LIST"]
    assert [r.query.get("limit") for r in lists] == ["2", "2"]


def test_the_factory_checks_its_reflector_keywords_once(kube_client: Client) -> None:
    with pytest.raises(ValueError, match="page_size"):
        SharedInformerFactory(kube_client, reflector=ReflectorOptions(page_size=-1))


async def sync_then_see_b(
    server: FakeAPIServer, client: Client, *, advance: float = 0.0
) -> tuple[Recorder, list[BaseException]]:
    """Run an informer over the server's pod ``a`` on a fake clock, moved by ``advance``
    between checks (0: never, so a backoff would never end) until synced; then create pod
    ``b`` and wait for its add. Returns the adds and what the error handler heard."""
    server.create(pod("a"))
    errors: list[BaseException] = []
    recorder = Recorder()
    clock = FakeClock()
    informer = SharedIndexInformer(
        client.resource("v1/pods", namespace="default"),
        watch_error_handler=lambda _r, exc: errors.append(exc),
        clock=clock,
    )
    informer.add_event_handler(on_add=recorder.on_add)

    async def move_clock() -> None:
        if advance:
            await clock.advance(advance)

    async with informer:
        await wait_until(informer.has_synced, poll=SOCKET_POLL, between=move_clock, timeout=10)
        await server.wait_for_watchers(1)
        server.create(pod("b"))
        await wait_until(lambda: len(recorder.adds) == 2, poll=SOCKET_POLL, timeout=10)
    return recorder, errors


@pytest.mark.fake_apiserver(watch_list="forbidden")
async def test_a_server_forbidding_streaming_lists_gets_list_and_watch(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    # The informer's clock never moves: a backoff would never end.
    recorder, errors = await sync_then_see_b(fake_apiserver, kube_client)
    assert recorder.adds == [("a", True), ("b", False)]
    # Fell back at once, in the same round, without a backoff.
    assert pod_requests(fake_apiserver) == ["STREAM", "LIST", "WATCH"]
    assert len(errors) == 1
    assert isinstance(errors[0], ApiError)
    assert errors[0].code == 422
    assert "sendInitialEvents" in errors[0].message


async def test_a_streaming_list_refused_with_403_falls_back_to_list_and_watch(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.faults.fail_next(1, status=403, resource="pods", verb="watch")
    recorder, errors = await sync_then_see_b(fake_apiserver, kube_client)
    assert recorder.adds == [("a", True), ("b", False)]
    assert pod_requests(fake_apiserver) == ["STREAM", "LIST", "WATCH"]
    assert [type(e) for e in errors] == [Forbidden]


async def test_a_throttled_streaming_list_is_streamed_again_and_no_list_is_sent(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    # Two 429s with Retry-After: 1, as kube-apiserver's priority and fairness answers:
    # each is backed off for its second on the informer's clock, and the third streaming
    # list syncs. The server is never sent the LIST it can least afford.
    fake_apiserver.faults.fail_next(2, status=429, retry_after=1, resource="pods", verb="watch")
    recorder, errors = await sync_then_see_b(fake_apiserver, kube_client, advance=0.5)
    assert recorder.adds == [("a", True), ("b", False)]
    assert pod_requests(fake_apiserver) == ["STREAM", "STREAM", "STREAM"]
    assert [type(e) for e in errors] == [TooManyRequests, TooManyRequests]
    assert all(isinstance(e, TooManyRequests) and e.retry_after == 1 for e in errors)


async def test_a_streaming_list_dropped_before_its_bookmark_is_streamed_again(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    # The connection closes after pod a's ADDED, before the initial-events-end bookmark.
    fake_apiserver.faults.drop_watch_after(1, resource="pods", abrupt=True)
    recorder, errors = await sync_then_see_b(fake_apiserver, kube_client, advance=0.5)
    assert recorder.adds == [("a", True), ("b", False)]
    assert pod_requests(fake_apiserver) == ["STREAM", "STREAM"]
    assert [type(e) for e in errors] == [WatchError]


async def test_a_streaming_list_throttled_past_its_retries_falls_back_to_a_list(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.faults.fail_next(2, status=429, retry_after=1, resource="pods", verb="watch")
    fake_apiserver.create(pod("a"))
    clock = FakeClock()
    informer = SharedIndexInformer(
        kube_client.resource("v1/pods", namespace="default"),
        clock=clock,
        reflector=ReflectorOptions(max_watch_list_retries=1),
    )
    async with informer:
        await retried(informer, clock, 1)
        assert await informer.wait_for_sync(timeout=10)
        await fake_apiserver.wait_for_watchers(1)
        stats = informer.statistics().reflector
        assert stats is not None
        assert (stats.watch_list_retries, stats.watch_list_fallbacks) == (1, 1)
    assert pod_requests(fake_apiserver) == ["STREAM", "STREAM", "LIST", "WATCH"]


@pytest.mark.fake_apiserver(watch_list="ignored", bookmark_interval=0.01)
async def test_a_server_ignoring_streaming_lists_is_left_after_its_first_bookmark(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    # The server's bookmarks come every 10 ms of real time; the grace after the first one
    # runs on the informer's clock, moved half a second between checks.
    recorder, errors = await sync_then_see_b(fake_apiserver, kube_client, advance=0.5)
    # The ADDED events the ignoring server sent never reached the cache or the handlers:
    # the list's state replaced them.
    assert recorder.adds == [("a", True), ("b", False)]
    assert pod_requests(fake_apiserver) == ["STREAM", "LIST", "WATCH"]
    assert len(errors) == 1
    assert "ignored sendInitialEvents" in str(errors[0])


@pytest.mark.fake_apiserver(watch_list="forbidden")
async def test_every_relist_tries_a_streaming_list_first(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("a"))
    informer = SharedIndexInformer(kube_client.resource("v1/pods", namespace="default"))
    async with informer:
        assert await informer.wait_for_sync(timeout=10)
        await fake_apiserver.wait_for_watchers(1)
        # The server learns streaming lists meanwhile, as an upgraded one would.
        fake_apiserver.watch_list = "supported"
        fake_apiserver.create(pod("b"))
        fake_apiserver.compact()
        await fake_apiserver.restart(reset_history=True)
        await wait_until(
            lambda: pod_requests(fake_apiserver).count("STREAM") == 2,
            poll=SOCKET_POLL,
            timeout=10,
        )
        await wait_until(lambda: len(informer.lister().list()) == 2, poll=SOCKET_POLL, timeout=10)
    requests = pod_requests(fake_apiserver)
    assert requests[:3] == ["STREAM", "LIST", "WATCH"]
    assert requests[-1] == "STREAM"


def test_the_fake_server_names_its_streaming_list_modes() -> None:
    with pytest.raises(ValueError, match="'supported', 'forbidden' or 'ignored'"):
        FakeAPIServer(watch_list="refused")  # type: ignore[arg-type]
    assert FakeAPIServer().watch_list == "supported"


async def retried(informer: SharedIndexInformer, clock: FakeClock, times: int) -> None:
    """Move ``clock`` through ``times`` of the informer's backoffs."""
    for _ in range(times):
        await wait_until(
            lambda: (
                (stats := informer.statistics().reflector) is not None
                and stats.state.name == "BACKING_OFF"
            ),
            poll=SOCKET_POLL,
            timeout=10,
        )
        await clock.advance_to_next()


async def test_a_forbidden_resource_costs_one_request_per_retry(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.faults.fail_next(4, status=403, resource="pods")
    clock = FakeClock()
    informer = SharedIndexInformer(
        kube_client.resource("v1/pods", namespace="default"), clock=clock
    )
    async with informer:
        await retried(informer, clock, 3)
        assert await informer.wait_for_sync(timeout=10)
        await fake_apiserver.wait_for_watchers(1)
    # The streaming attempt and its fallback LIST once; then a LIST per retry, the last
    # one answered; then the watch.
    assert pod_requests(fake_apiserver) == ["STREAM", "LIST", "LIST", "LIST", "LIST", "WATCH"]


async def test_an_unknown_resource_costs_one_discovery_per_retry(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    informer = SharedIndexInformer(kube_client.resource("widgets"), clock=clock)
    async with informer:
        await retried(informer, clock, 1)
        first_round = len(fake_apiserver.request_log)
        await retried(informer, clock, 1)
        per_retry = len(fake_apiserver.request_log) - first_round
        await retried(informer, clock, 1)
        assert len(fake_apiserver.request_log) - first_round == 2 * per_retry
        stats = informer.statistics().reflector
        assert stats is not None
        assert "no resource named 'widgets'" in str(stats.last_error)
    # Each retry looks the name up once: /api, /apis and each group-version, nothing else.
    discovery = [r.path for r in fake_apiserver.request_log[first_round:]][:per_retry]
    assert discovery[:2] == ["/api", "/apis"]
    assert all(path.startswith(("/api", "/apis")) and "widgets" not in path for path in discovery)
    assert per_retry == 2 + len(set(discovery[2:]))
