"""Metadata-only answers: the fake API server negotiates ``Accept`` as kube-apiserver does
(``as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1``), and the library's metadata-only
client and informer round-trip over it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest

from aioinformer.informer import SharedIndexInformer
from aioinformer.listwatch import ListOptions, WatchEvent
from aioinformer.testing import ADMIN_TOKEN, FakeAPIServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from aioinformer.client import Client

PODS = "/api/v1/namespaces/default/pods"
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
META_OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
READ_TIMEOUT = 5.0


def pod(name: str, *, app: str = "web", namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


class Api:
    """Plain HTTP with a chosen Accept header: (status, decoded body) per call."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def call(
        self,
        method: str,
        path: str,
        *,
        accept: str | None,
        body: Any = None,
        params: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": content_type}
        if accept is not None:
            headers["Accept"] = accept
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(
            method, self.url + path, data=data, params=params, headers=headers
        ) as response:
            return response.status, orjson.loads(await response.read())

    @contextlib.asynccontextmanager
    async def watch(self, accept: str, **params: str) -> AsyncIterator[aiohttp.ClientResponse]:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept": accept}
        async with self.session.get(
            self.url + PODS, params={"watch": "true", **params}, headers=headers
        ) as response:
            yield response


async def next_event(response: aiohttp.ClientResponse) -> dict[str, Any]:
    async with asyncio.timeout(READ_TIMEOUT):
        line = await response.content.readline()
    assert line, "the watch ended early"
    decoded: dict[str, Any] = orjson.loads(line)
    return decoded


@pytest.fixture
async def api(fake_apiserver: FakeAPIServer) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(session, fake_apiserver.url)


# -- LIST and GET ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
async def test_list_as_partial_object_metadata_list_keeps_only_metadata(
    api: Api, fake_apiserver: FakeAPIServer, version: str
) -> None:
    stored = fake_apiserver.create(pod("a"))
    accept = f"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v={version}"
    code, body = await api.call("GET", PODS, accept=accept)
    assert code == 200
    assert body == {
        "kind": "PartialObjectMetadataList",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": {"resourceVersion": fake_apiserver.resource_version},
        "items": [
            {
                "kind": "PartialObjectMetadata",
                "apiVersion": f"meta.k8s.io/{version}",
                "metadata": stored["metadata"],
            }
        ],
    }


async def test_metadata_list_pages_keep_continue_and_remaining_count(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    for name in ("a", "b", "c"):
        fake_apiserver.create(pod(name))
    code, first = await api.call("GET", PODS, accept=META_LIST, params={"limit": "2"})
    assert code == 200
    assert [item["metadata"]["name"] for item in first["items"]] == ["a", "b"]
    assert first["metadata"]["remainingItemCount"] == 1
    token = first["metadata"]["continue"]
    _, rest = await api.call("GET", PODS, accept=META_LIST, params={"continue": token})
    assert [item["metadata"]["name"] for item in rest["items"]] == ["c"]
    assert rest["kind"] == "PartialObjectMetadataList"


async def test_empty_metadata_list_has_an_empty_items_array(api: Api) -> None:
    code, body = await api.call("GET", PODS, accept=META_LIST)
    assert (code, body["kind"], body["items"]) == (200, "PartialObjectMetadataList", [])


async def test_get_as_partial_object_metadata_keeps_only_metadata(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    stored = fake_apiserver.create(pod("a"))
    code, body = await api.call("GET", PODS + "/a", accept=META_OBJECT + ",application/json")
    assert code == 200
    assert body == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": stored["metadata"],
    }


NEGOTIATION_CASES = [
    ("", "PodList", "v1"),
    ("*/*", "PodList", "v1"),
    ("application/json", "PodList", "v1"),
    (META_LIST + ",application/json", "PartialObjectMetadataList", "meta.k8s.io/v1"),
    (
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
        + META_LIST,
        "PartialObjectMetadataList",
        "meta.k8s.io/v1",
    ),
    ("application/json;as=Table;g=meta.k8s.io;v=v1,application/json", "PodList", "v1"),
    ("application/json;as=PartialObjectMetadataList;g=example.com;v=v1,*/*", "PodList", "v1"),
    (META_LIST + ";q=0.5,application/json", "PodList", "v1"),
    ("application/json;q=0.5," + META_LIST, "PartialObjectMetadataList", "meta.k8s.io/v1"),
]


@pytest.mark.parametrize(
    ("accept", "kind", "api_version"),
    NEGOTIATION_CASES,
    ids=[
        "no-accept",
        "any",
        "plain-json",
        "metadata-list-then-json",
        "protobuf-skipped",
        "table-not-served-falls-back",
        "foreign-group-falls-back",
        "lower-quality-metadata-loses",
        "higher-quality-metadata-wins",
    ],
)
async def test_accept_negotiation_picks_the_first_servable_media_range(
    api: Api, fake_apiserver: FakeAPIServer, accept: str, kind: str, api_version: str
) -> None:
    fake_apiserver.create(pod("a"))
    code, body = await api.call("GET", PODS, accept=accept)
    assert (code, body["kind"], body["apiVersion"]) == (200, kind, api_version)


NOT_ACCEPTABLE_CASES = [
    (
        "GET",
        PODS,
        META_OBJECT + ",application/json",
        "you requested PartialObjectMetadata, but the requested object is a list (PodList)",
    ),
    (
        "GET",
        PODS + "/a",
        META_LIST,
        "you requested PartialObjectMetadataList, but the requested object is not a list (Pod)",
    ),
    (
        "GET",
        PODS,
        "application/vnd.kubernetes.protobuf",
        "only the following media types are accepted: application/json",
    ),
    (
        "GET",
        PODS,
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v2",
        "only the following media types are accepted: application/json",
    ),
]


@pytest.mark.parametrize(
    ("method", "path", "accept", "message"),
    NOT_ACCEPTABLE_CASES,
    ids=["list-as-object", "object-as-list", "protobuf-only", "unknown-meta-version"],
)
async def test_unservable_accept_answers_406_not_acceptable(
    api: Api, fake_apiserver: FakeAPIServer, method: str, path: str, accept: str, message: str
) -> None:
    fake_apiserver.create(pod("a"))
    code, body = await api.call(method, path, accept=accept)
    assert code == 406
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "NotAcceptable",
        "code": 406,
    }


async def test_write_answers_are_converted_after_the_write_took_effect(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(pod("a"))
    code, body = await api.call(
        "PATCH",
        PODS + "/a",
        accept=META_OBJECT,
        body={"metadata": {"labels": {"app": "db"}}},
        content_type="application/merge-patch+json",
    )
    assert (code, body["kind"], body["metadata"]["labels"]) == (
        200,
        "PartialObjectMetadata",
        {"app": "db"},
    )
    assert "spec" not in body
    # As on kube-apiserver, a conversion that does not fit fails after the write.
    code, _ = await api.call(
        "PATCH",
        PODS + "/a",
        accept=META_LIST,
        body={"metadata": {"labels": {"app": "cache"}}},
        content_type="application/merge-patch+json",
    )
    assert code == 406
    assert fake_apiserver.get("pods", "default", "a")["metadata"]["labels"] == {"app": "cache"}


async def test_delete_collection_as_metadata_list_returns_the_deleted_objects(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(pod("a"))
    fake_apiserver.create(pod("b", app="db"))
    code, body = await api.call(
        "DELETE", PODS, accept=META_LIST, params={"labelSelector": "app=web"}
    )
    assert code == 200
    assert [(i["kind"], i["metadata"]["name"]) for i in body["items"]] == [
        ("PartialObjectMetadata", "a")
    ]
    assert [o["metadata"]["name"] for o in fake_apiserver.objects("pods")] == ["b"]


# -- WATCH ----------------------------------------------------------------------------------


async def test_metadata_watch_events_carry_partial_object_metadata(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    start = fake_apiserver.resource_version
    async with api.watch(META_OBJECT + ",application/json", resourceVersion=start) as response:
        await fake_apiserver.wait_for_watchers(1)
        created = fake_apiserver.create(pod("a"))
        fake_apiserver.patch("pods", "default", "a", {"metadata": {"labels": {"app": "db"}}})
        fake_apiserver.delete("pods", "default", "a")
        events = [await next_event(response) for _ in range(3)]
    assert [event["type"] for event in events] == ["ADDED", "MODIFIED", "DELETED"]
    for event in events:
        assert set(event["object"]) == {"kind", "apiVersion", "metadata"}
        assert (event["object"]["kind"], event["object"]["apiVersion"]) == (
            "PartialObjectMetadata",
            "meta.k8s.io/v1",
        )
    assert events[0]["object"]["metadata"] == created["metadata"]
    assert events[1]["object"]["metadata"]["labels"] == {"app": "db"}


async def test_metadata_watch_initial_events_and_bookmark_are_partial(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(pod("a"))
    params = {
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
    }
    async with api.watch(META_OBJECT, **params) as response:
        added = await next_event(response)
        bookmark = await next_event(response)
    assert added["type"] == "ADDED"
    assert set(added["object"]) == {"kind", "apiVersion", "metadata"}
    assert added["object"]["kind"] == "PartialObjectMetadata"
    assert bookmark == {
        "type": "BOOKMARK",
        "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {
                "resourceVersion": fake_apiserver.resource_version,
                "annotations": {"k8s.io/initial-events-end": "true"},
            },
        },
    }


async def test_selected_metadata_watch_reports_a_relabelled_object_as_deleted(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(pod("a"))
    start = fake_apiserver.resource_version
    async with api.watch(META_OBJECT, resourceVersion=start, labelSelector="app=web") as response:
        await fake_apiserver.wait_for_watchers(1)
        fake_apiserver.patch("pods", "default", "a", {"metadata": {"labels": {"app": "db"}}})
        event = await next_event(response)
    assert (event["type"], event["object"]["kind"]) == ("DELETED", "PartialObjectMetadata")


async def test_full_and_metadata_watches_of_one_change_each_get_their_form(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    start = fake_apiserver.resource_version
    async with (
        api.watch("application/json", resourceVersion=start) as full,
        api.watch(META_OBJECT, resourceVersion=start) as partial,
    ):
        await fake_apiserver.wait_for_watchers(2)
        fake_apiserver.create(pod("a"))
        full_event = await next_event(full)
        partial_event = await next_event(partial)
    assert (full_event["object"]["kind"], "spec" in full_event["object"]) == ("Pod", True)
    assert (partial_event["object"]["kind"], "spec" in partial_event["object"]) == (
        "PartialObjectMetadata",
        False,
    )


async def test_watch_asked_for_a_metadata_list_gets_full_objects_like_the_real_server(
    api: Api, fake_apiserver: FakeAPIServer
) -> None:
    start = fake_apiserver.resource_version
    async with api.watch(META_LIST, resourceVersion=start) as response:
        await fake_apiserver.wait_for_watchers(1)
        fake_apiserver.create(pod("a"))
        event = await next_event(response)
    assert (event["object"]["kind"], event["object"]["apiVersion"]) == ("Pod", "v1")


# -- the library's metadata-only client and informer ----------------------------------------------


async def first_event(kube_client: Client, options: ListOptions) -> WatchEvent:
    pods = kube_client.resource("pods", "default", metadata_only=True)
    async with contextlib.aclosing(pods.watch(options)) as events:
        async for event in events:
            return event
    raise AssertionError("the watch ended without an event")


async def test_metadata_only_client_round_trips_list_watch_and_get(
    kube_client: Client, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(pod("a"))
    pods = kube_client.resource("pods", "default", metadata_only=True)
    page = await pods.list(ListOptions())
    assert [(i["apiVersion"], i["kind"], "spec" in i) for i in page.items] == [
        ("meta.k8s.io/v1", "PartialObjectMetadata", False)
    ]
    assert page.resource_version == fake_apiserver.resource_version
    fake_apiserver.patch("pods", "default", "a", {"metadata": {"labels": {"app": "db"}}})
    event = await first_event(kube_client, ListOptions(resource_version=page.resource_version))
    assert (event.type, event.object["kind"], event.object["metadata"]["labels"]) == (
        "MODIFIED",
        "PartialObjectMetadata",
        {"app": "db"},
    )
    assert "spec" not in event.object
    got = await pods.get("a")
    assert (got["kind"], "spec" in got) == ("PartialObjectMetadata", False)
    patched = await pods.patch("a", {"metadata": {"annotations": {"seen": "yes"}}})
    assert (patched["kind"], patched["metadata"]["annotations"]) == (
        "PartialObjectMetadata",
        {"seen": "yes"},
    )


async def test_informer_over_the_metadata_only_client_caches_metadata_without_transform(
    kube_client: Client, fake_apiserver: FakeAPIServer
) -> None:
    fake_apiserver.create(pod("a"))
    informer = SharedIndexInformer(kube_client.resource("pods", metadata_only=True), name="pods")
    added: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    informer.add_event_handler(on_add=lambda obj, _initial: added.put_nowait(obj))
    async with informer:
        assert await informer.wait_for_sync(timeout=READ_TIMEOUT)
        cached = informer.indexer.get_by_key("default/a")
        assert cached is not None
        assert set(cached) == {"apiVersion", "kind", "metadata"}
        assert (cached["apiVersion"], cached["kind"]) == ("meta.k8s.io/v1", "PartialObjectMetadata")
        fake_apiserver.create(pod("b"))
        async with asyncio.timeout(READ_TIMEOUT):
            seen = [await added.get(), await added.get()]
    assert [obj["metadata"]["name"] for obj in seen] == ["a", "b"]
    assert all(set(obj) == {"apiVersion", "kind", "metadata"} for obj in seen)
