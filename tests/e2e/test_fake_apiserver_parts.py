"""The fake API server's parts answer on their own as the whole server does: injected
failures, the fault plan's matching, resource-name resolution, discovery paths and the
listening socket."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from aioinformer._apiserver.discovery import discovery_response, is_discovery
from aioinformer._apiserver.objects import ResourceType, StatusError
from aioinformer._kernel.clock import Clock, default_clock
from aioinformer.errors import UnknownResourceError
from aioinformer.testing._faults import Failure, FaultPlan, WatchFault, failure_error
from aioinformer.testing._listener import Listener
from aioinformer.testing._resources import BUILTIN_TYPES, ResourceRegistry

PODS = next(rt for rt in BUILTIN_TYPES if rt.plural == "pods")
DEPLOYMENTS = next(rt for rt in BUILTIN_TYPES if rt.plural == "deployments")


# -- failure_error -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "retry_after", "reason", "header", "details"),
    [
        pytest.param(429, 1, "TooManyRequests", "1", {"retryAfterSeconds": 1}, id="429-whole"),
        pytest.param(429, 1.5, "TooManyRequests", "1.5", {"retryAfterSeconds": 1}, id="429-frac"),
        pytest.param(429, None, "TooManyRequests", None, None, id="429-no-retry-after"),
        pytest.param(500, 2, "InternalError", "2", {"retryAfterSeconds": 2}, id="500"),
        pytest.param(503, 1, "ServiceUnavailable", "1", {"retryAfterSeconds": 1}, id="503"),
        pytest.param(504, None, "Timeout", None, None, id="504"),
        pytest.param(400, 1, "BadRequest", None, None, id="400-never-retry-after"),
    ],
)
def test_an_injected_failure_answers_with_kube_apiservers_status(
    status: int,
    retry_after: float | None,
    reason: str,
    header: str | None,
    details: dict[str, Any] | None,
) -> None:
    error = failure_error(Failure(status, retry_after, None, None, 1))
    assert error.code == status
    assert error.status["reason"] == reason
    assert error.status["status"] == "Failure"
    assert error.headers.get("Retry-After") == header
    assert error.status.get("details") == details


# -- FaultPlan -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "verb", "rt", "asked_verb", "taken"),
    [
        pytest.param(None, None, PODS, "list", True, id="any-request"),
        pytest.param(None, None, None, "get", True, id="any-discovery"),
        pytest.param("pods", None, PODS, "list", True, id="by-plural"),
        pytest.param("deployments.apps", None, DEPLOYMENTS, "get", True, id="by-qualified"),
        pytest.param("pods", None, DEPLOYMENTS, "get", False, id="other-resource"),
        pytest.param("pods", None, None, "get", False, id="resource-never-discovery"),
        pytest.param(None, "watch", PODS, "list", False, id="other-verb"),
        pytest.param("pods", "watch", PODS, "watch", True, id="resource-and-verb"),
    ],
)
def test_a_failure_answers_only_requests_it_matches(
    resource: str | None,
    verb: str | None,
    rt: ResourceType | None,
    asked_verb: str,
    taken: bool,
) -> None:
    plan = FaultPlan()
    failure = Failure(500, None, resource, verb, 1)
    plan.failures.append(failure)
    assert (plan.take_failure(rt, asked_verb) is failure) is taken
    assert plan.failures == ([] if taken else [failure])


@given(st.integers(min_value=1, max_value=20), st.integers(min_value=0, max_value=40))
def test_a_failure_answers_exactly_its_count_of_requests(k: int, requests: int) -> None:
    plan = FaultPlan()
    plan.failures.append(Failure(429, 1, None, None, k))
    answered = sum(1 for _ in range(requests) if plan.take_failure(PODS, "list") is not None)
    assert answered == min(k, requests)
    assert bool(plan.failures) == (requests < k)


def test_watch_faults_are_taken_in_arming_order_and_a_returned_one_goes_first() -> None:
    plan = FaultPlan()
    on_deployments = WatchFault("drop", 1, "deployments")
    first = WatchFault("garbage_line", 0, None)
    second = WatchFault("stall", 2, "pods")
    plan.watch.extend([on_deployments, first, second])
    assert plan.take_watch_fault(PODS) is first
    plan.return_watch_fault(first)
    assert plan.watch == [first, on_deployments, second]
    assert plan.take_watch_fault(PODS) is first
    assert plan.take_watch_fault(PODS) is second
    assert plan.take_watch_fault(PODS) is None
    assert plan.watch == [on_deployments]


def test_clearing_the_plan_disarms_everything() -> None:
    plan = FaultPlan()
    plan.watch.append(WatchFault("drop", 0, None))
    plan.failures.append(Failure(500, None, None, None, 3))
    plan.latency = 2.0
    plan.clear()
    assert (plan.watch, plan.failures, plan.latency) == ([], [], 0.0)


# -- ResourceRegistry ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("pods", ("", "v1", "pods"), id="plural"),
        pytest.param("v1/pods", ("", "v1", "pods"), id="version-plural"),
        pytest.param("deployments", ("apps", "v1", "deployments"), id="plural-of-a-group"),
        pytest.param("deployments.apps", ("apps", "v1", "deployments"), id="plural-group"),
        pytest.param("apps/v1/deployments", ("apps", "v1", "deployments"), id="gvr"),
        pytest.param("events", ("", "v1", "events"), id="core-wins-a-bare-plural"),
        pytest.param("events.example.com", ("example.com", "v1", "events"), id="group-chosen"),
    ],
)
def test_a_resource_name_resolves_as_the_test_api_documents(
    name: str, expected: tuple[str, str, str]
) -> None:
    registry = ResourceRegistry()
    registry.add(ResourceType("", "v1", "events", "Event", True))
    registry.add(ResourceType("example.com", "v1", "events", "Event", True))
    rt = registry.resolve(name)
    assert (rt.group, rt.version, rt.plural) == expected


@pytest.mark.parametrize(
    "name", ["widgets", "v2/pods", "apps/v2/deployments", "pods.apps"], ids=str
)
def test_an_unserved_resource_name_is_an_unknown_resource_error(name: str) -> None:
    with pytest.raises(UnknownResourceError, match="does not serve"):
        ResourceRegistry().resolve(name)


def test_registry_finds_an_object_by_api_version_and_kind_and_a_url_by_its_parts() -> None:
    registry = ResourceRegistry()
    assert registry.for_object({"apiVersion": "apps/v1", "kind": "Deployment"}) == DEPLOYMENTS
    assert registry.lookup("", "v1", "pods") == PODS
    assert registry.lookup("apps", "v1", "pods") is None
    with pytest.raises(UnknownResourceError, match=r"does not serve example\.com/v1 Widget"):
        registry.for_object({"apiVersion": "example.com/v1", "kind": "Widget"})


def test_registering_a_resource_again_replaces_it_in_its_first_place() -> None:
    registry = ResourceRegistry(BUILTIN_TYPES[:2])
    first, second = BUILTIN_TYPES[:2]
    replaced = ResourceType(first.group, first.version, first.plural, first.kind, True)
    registry.add(replaced)
    assert list(registry) == [replaced, second]


# -- discovery -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/api", True, id="api"),
        pytest.param("/api/v1", True, id="core-version"),
        pytest.param("/api/v1/pods", False, id="core-resource"),
        pytest.param("/apis", True, id="apis"),
        pytest.param("/apis/apps", True, id="group"),
        pytest.param("/apis/apps/v1", True, id="group-version"),
        pytest.param("/apis/apps/v1/deployments", False, id="group-resource"),
    ],
)
def test_discovery_paths_are_told_from_resource_paths(path: str, expected: bool) -> None:
    assert is_discovery([p for p in path.split("/") if p]) is expected


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [
        pytest.param("POST", "/api", 405, id="not-get"),
        pytest.param("GET", "/apis/example.com", 404, id="unknown-group"),
        pytest.param("GET", "/apis/apps/v2", 404, id="unknown-version"),
        pytest.param("GET", "/metrics", 404, id="unknown-path"),
    ],
)
def test_discovery_refuses_what_it_does_not_serve(method: str, path: str, code: int) -> None:
    parts = [p for p in path.split("/") if p]
    with pytest.raises(StatusError) as caught:
        discovery_response(method, parts, ResourceRegistry(), port=1)
    assert caught.value.code == code


def test_discovery_documents_follow_the_registry_and_publish_the_port() -> None:
    registry = ResourceRegistry()
    registry.add(ResourceType("example.com", "v1", "widgets", "Widget", True))
    registry.add(ResourceType("example.com", "v2", "widgets", "Widget", True))

    def get(path: str) -> Any:
        parts = [p for p in path.split("/") if p]
        response = discovery_response("GET", parts, registry, port=4321)
        assert response.text is not None
        return orjson.loads(response.text)

    api = get("/api")
    assert api["serverAddressByClientCIDRs"][0]["serverAddress"] == "127.0.0.1:4321"
    group = get("/apis/example.com")
    assert group["preferredVersion"] == {"groupVersion": "example.com/v2", "version": "v2"}
    assert "example.com" in [g["name"] for g in get("/apis")["groups"]]
    widgets = get("/apis/example.com/v1")
    assert widgets["groupVersion"] == "example.com/v1"
    assert [r["name"] for r in widgets["resources"]] == ["widgets"]


# -- Listener ------------------------------------------------------------------------------


class _Owner:
    clock: Clock = default_clock


async def _ok(request: web.Request) -> web.StreamResponse:
    return web.Response(text="ok")


async def test_a_listener_refuses_connections_while_stopped_and_keeps_its_port() -> None:
    dropped: list[bool] = []
    listener = Listener(_Owner(), port=0, on_drop=lambda: dropped.append(True))
    await listener.start(_ok)
    try:
        port = listener.port
        url = f"http://127.0.0.1:{port}/"
        async with aiohttp.ClientSession() as session:
            async with session.get(url) as response:
                assert await response.text() == "ok"
            await listener.stop_listening()
            assert (listener.listening, dropped) == (False, [True])
            with pytest.raises(aiohttp.ClientConnectionError):
                await session.get(url)
            assert await listener.start_listening() is True
            assert await listener.start_listening() is False
            assert listener.port == port
            async with session.get(url) as response:
                assert response.status == 200
    finally:
        await listener.cleanup()
    assert not listener.listening


async def test_a_listener_cancels_and_awaits_its_spawned_tasks() -> None:
    listener = Listener(_Owner(), port=0, on_drop=lambda: None)
    ended = asyncio.Event()

    async def timer() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            ended.set()

    listener.spawn(timer())
    await asyncio.sleep(0)
    await listener.cancel_tasks()
    assert ended.is_set()
