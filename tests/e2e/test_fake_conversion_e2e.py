"""The fake API server calls a CustomResourceDefinition's conversion webhook as
kube-apiserver v1.36 does: a small HTTPS webhook written here (aiohttp.web, a trustme CA
in the definition's ``caBundle``) renames ``spec.replicas`` (v1, the storage version)
to ``spec.count`` (v1beta1). A write in v1beta1 is stored as v1; every read in v1beta1
(get, list in one review, each watch event, a write's answer) is converted; a webhook
that is down, hangs, is not trusted or answers what kube-apiserver refuses fails the
request with kube-apiserver's 500 and message; ``strategy: None`` calls nothing; and
kubectl reads ``widgets.v1beta1.example.com`` converted."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import json
import socket
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web

from aioinformer import SharedIndexInformer
from aioinformer.errors import ApiError
from aioinformer.listwatch import ListOptions
from aioinformer.testing import FakeAPIServer, eventually
from tests._support_tls import make_pki
from tests.e2e.test_fake_apiserver_kubectl import KUBECTL, kubectl
from tests.unit.testing.test_fake_crds import widget_crd

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

    from aioinformer.client import Client
    from tests._support_tls import Pki

CRDS = "apiextensions.k8s.io/v1/customresourcedefinitions"
V1BETA1 = "example.com/v1beta1/widgets"
V1 = "example.com/v1/widgets"


def convert(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """v1's ``spec.replicas`` is v1beta1's ``spec.count``."""
    out = copy.deepcopy(obj)
    spec = out.setdefault("spec", {})
    if desired == "example.com/v1beta1" and "replicas" in spec:
        spec["count"] = spec.pop("replicas")
    elif desired == "example.com/v1" and "count" in spec:
        spec["replicas"] = spec.pop("count")
    out["apiVersion"] = desired
    return out


class Webhook:
    """A conversion webhook on 127.0.0.1 over HTTPS; ``behaviour`` says how it answers:
    ``convert``, ``rename`` (changes the first object's name), ``drop`` (leaves the
    last object out), ``garbage`` (not JSON), ``error`` (a 500 with a text body) or
    ``hang`` (answers when ``release`` is set)."""

    def __init__(self, pki: Pki) -> None:
        self.pki = pki
        self.reviews: list[dict[str, Any]] = []
        self.queries: list[str] = []
        self.behaviour = "convert"
        self.release = asyncio.Event()
        self.port = 0
        self.runner: web.AppRunner | None = None
        # Called with each review before it is answered.
        self.on_review: Callable[[dict[str, Any]], None] | None = None

    async def handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append(review)
        self.queries.append(request.query_string)
        if self.on_review is not None:
            self.on_review(review)
        req = review["request"]
        objects = [convert(o, req["desiredAPIVersion"]) for o in req["objects"]]
        if self.behaviour == "rename":
            objects[0]["metadata"]["name"] += "-renamed"
        elif self.behaviour == "drop":
            objects = objects[:-1]
        elif self.behaviour == "hang":
            await self.release.wait()
        elif self.behaviour == "garbage":
            return web.Response(body=b"<html>not a review</html>", content_type="text/html")
        elif self.behaviour == "error":
            return web.Response(status=500, text="converter crashed")
        return web.json_response(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "ConversionReview",
                "response": {
                    "uid": req["uid"],
                    "convertedObjects": objects,
                    "result": {"status": "Success"},
                },
            }
        )

    async def start(self, *, names: tuple[str, ...] = ("127.0.0.1",)) -> None:
        app = web.Application()
        app.router.add_post("/convert", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        context = self.pki.server_context(names=names)
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        self.port = self.runner.addresses[0][1]

    async def stop(self) -> None:
        self.release.set()
        if self.runner is not None:
            await self.runner.cleanup()

    @property
    def connections(self) -> int:
        assert self.runner is not None
        assert self.runner.server is not None
        return len(self.runner.server.connections)

    def client_config(self) -> dict[str, Any]:
        return {"url": f"https://127.0.0.1:{self.port}/convert", "caBundle": ca_bundle(self.pki)}


def ca_bundle(pki: Pki) -> str:
    return base64.b64encode(pki.ca_pem.encode()).decode()


def conversion_crd(client_config: dict[str, Any], strategy: str = "Webhook") -> dict[str, Any]:
    """``widgets.example.com`` served as v1 (storage) and v1beta1, converted by the
    webhook ``client_config`` names (``strategy: None``: by nothing)."""
    crd = widget_crd()
    v1 = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [v1, {**v1, "name": "v1beta1", "storage": False}]
    if strategy == "Webhook":
        crd["spec"]["conversion"] = {
            "strategy": "Webhook",
            "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1"]},
        }
    return crd


def beta_widget(name: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1beta1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"count": count},
    }


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    hook = Webhook(make_pki())
    await hook.start()
    try:
        yield hook
    finally:
        await hook.stop()


@pytest.fixture
async def served(webhook: Webhook) -> AsyncIterator[tuple[FakeAPIServer, Client]]:
    async with FakeAPIServer() as server, server.client() as client:
        await client.resource(CRDS).create(conversion_crd(webhook.client_config()))
        yield server, client


async def test_a_write_in_another_version_is_stored_in_the_storage_version(
    served: tuple[FakeAPIServer, Client], webhook: Webhook
) -> None:
    server, client = served
    beta = client.resource(V1BETA1, namespace="default")

    created = await beta.create(beta_widget("a", 3))

    assert (created["apiVersion"], created["spec"]) == ("example.com/v1beta1", {"count": 3})
    [stored] = server.objects("widgets")
    assert (stored["apiVersion"], stored["spec"]) == ("example.com/v1", {"replicas": 3})
    # To the storage version, then the answer back from it: two reviews of one object.
    [to_storage, back] = webhook.reviews
    assert to_storage["apiVersion"] == "apiextensions.k8s.io/v1"
    assert to_storage["kind"] == "ConversionReview"
    assert to_storage["request"]["desiredAPIVersion"] == "example.com/v1"
    assert [o["spec"] for o in to_storage["request"]["objects"]] == [{"count": 3}]
    assert back["request"]["desiredAPIVersion"] == "example.com/v1beta1"
    assert back["request"]["objects"][0]["apiVersion"] == "example.com/v1"
    assert to_storage["request"]["uid"] != back["request"]["uid"]
    assert webhook.queries == ["timeout=30s", "timeout=30s"]

    # The storage version is read as stored: no review.
    webhook.reviews.clear()
    assert (await client.resource(V1, namespace="default").get("a"))["spec"] == {"replicas": 3}
    assert webhook.reviews == []


async def test_reads_in_another_version_are_converted_a_list_in_one_review(
    served: tuple[FakeAPIServer, Client], webhook: Webhook
) -> None:
    _, client = served
    v1 = client.resource(V1, namespace="default")
    for name, replicas in (("a", 1), ("b", 2)):
        await v1.create(
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": name},
                "spec": {"replicas": replicas},
            }
        )
    beta = client.resource(V1BETA1, namespace="default")

    got = await beta.get("b")
    assert (got["apiVersion"], got["spec"]) == ("example.com/v1beta1", {"count": 2})
    webhook.reviews.clear()
    listed = await beta.list()
    assert [(i["apiVersion"], i["spec"]) for i in listed.items] == [
        ("example.com/v1beta1", {"count": 1}),
        ("example.com/v1beta1", {"count": 2}),
    ]
    [review] = webhook.reviews
    assert [o["metadata"]["name"] for o in review["request"]["objects"]] == ["a", "b"]

    # Patch and update in v1beta1: the stored object converted, changed, stored as v1.
    patched = await beta.patch("a", {"spec": {"count": 5}})
    assert patched["spec"] == {"count": 5}
    assert (await v1.get("a"))["spec"] == {"replicas": 5}
    replaced = await beta.update({**got, "spec": {"count": 7}})
    assert replaced["spec"] == {"count": 7}
    assert (await v1.get("b"))["spec"] == {"replicas": 7}


async def test_each_watch_event_in_another_version_is_converted(
    served: tuple[FakeAPIServer, Client], webhook: Webhook
) -> None:
    server, client = served
    server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {"replicas": 1}})
    events: list[tuple[str, str, dict[str, Any]]] = []
    done = asyncio.Event()

    async def consume() -> None:
        beta = client.resource(V1BETA1, namespace="default")
        async with contextlib.aclosing(beta.watch(ListOptions())) as stream:
            async for event in stream:
                obj = event.object
                events.append((event.type, obj["apiVersion"], obj["spec"]))
                if len(events) == 2:
                    done.set()
                    return

    watching = asyncio.create_task(consume())
    await server.wait_for_watchers(1, resource="widgets")
    await client.resource(V1, namespace="default").patch("a", {"spec": {"replicas": 4}})
    async with asyncio.timeout(10):
        await done.wait()
        await watching
    assert events == [
        ("ADDED", "example.com/v1beta1", {"count": 1}),
        ("MODIFIED", "example.com/v1beta1", {"count": 4}),
    ]


async def test_an_informer_on_another_version_syncs_and_follows_converted_objects(
    served: tuple[FakeAPIServer, Client], webhook: Webhook
) -> None:
    server, client = served
    server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {"replicas": 1}})
    informer = SharedIndexInformer(client.resource(V1BETA1, namespace="default"))
    async with informer:
        assert await informer.wait_for_sync(timeout=10)

        def count() -> Any:
            cached = informer.lister().get("a", namespace="default")
            assert cached is not None
            return cached["spec"].get("count")

        assert count() == 1
        await client.resource(V1, namespace="default").patch("a", {"spec": {"replicas": 8}})

        await eventually(lambda: count() == 8, timeout=10)


async def test_a_webhook_that_is_down_fails_reads_and_writes_with_a_500(
    webhook: Webhook,
) -> None:
    port = closed_port()
    config = {"url": f"https://127.0.0.1:{port}/convert", "caBundle": ca_bundle(webhook.pki)}
    async with FakeAPIServer() as server, server.client() as client:
        await client.resource(CRDS).create(conversion_crd(config))
        server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {"replicas": 1}})
        beta = client.resource(V1BETA1, namespace="default")
        refusal = (
            f'Post "https://127.0.0.1:{port}/convert?timeout=30s": dial tcp 127.0.0.1:{port}: '
            "connect: connection refused"
        )

        with pytest.raises(ApiError) as failed:
            await beta.get("a")
        assert failed.value.code == 500
        assert failed.value.reason == "InternalError"
        message = f"conversion webhook for example.com/v1, Kind=Widget failed: {refusal}"
        assert failed.value.message == f"Internal error occurred: {message}"
        assert failed.value.details == {"causes": [{"message": message}]}
        with pytest.raises(ApiError) as failed:
            await beta.list()
        assert failed.value.message == (
            "Internal error occurred: conversion webhook for example.com/v1, Kind=WidgetList "
            f"failed: {refusal}"
        )
        # A write's conversion for storage fails with the bare error: no reason, no cause.
        with pytest.raises(ApiError) as failed:
            await beta.create(beta_widget("b", 2))
        assert (failed.value.code, failed.value.reason, failed.value.details) == (500, "", {})
        assert failed.value.message == (
            f"conversion webhook for example.com/v1beta1, Kind=Widget failed: {refusal}"
        )
        # Metadata-only reads of the version are converted too.
        with pytest.raises(ApiError) as failed:
            await client.resource(V1BETA1, namespace="default", metadata_only=True).get("a")
        assert failed.value.reason == "InternalError"
        # Nothing was stored; the storage version is still served.
        listed = await client.resource(V1, namespace="default").list()
        assert [i["metadata"]["name"] for i in listed.items] == ["a"]


async def test_a_webhook_that_hangs_fails_after_the_timeout_and_one_not_trusted_at_once(
    webhook: Webhook,
) -> None:
    async with FakeAPIServer(conversion_timeout=0.2) as server, server.client() as client:
        await client.resource(CRDS).create(conversion_crd(webhook.client_config()))
        server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {"replicas": 1}})
        beta = client.resource(V1BETA1, namespace="default")
        webhook.behaviour = "hang"
        with pytest.raises(ApiError) as failed:
            async with asyncio.timeout(10):
                await beta.get("a")
        assert failed.value.message == (
            "Internal error occurred: conversion webhook for example.com/v1, Kind=Widget "
            f'failed: Post "https://127.0.0.1:{webhook.port}/convert?timeout=200ms": context '
            "deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )
        webhook.release.set()

        other_ca = make_pki()
        crd = conversion_crd({**webhook.client_config(), "caBundle": ca_bundle(other_ca)})
        current = await client.resource(CRDS).get("widgets.example.com")
        crd["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await client.resource(CRDS).update(crd)
        webhook.behaviour = "convert"
        with pytest.raises(ApiError) as failed:
            await beta.get("a")
        assert failed.value.message.endswith(
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        )


async def test_an_answer_that_renames_or_drops_an_object_is_refused(
    served: tuple[FakeAPIServer, Client], webhook: Webhook
) -> None:
    server, client = served
    for name in ("a", "b"):
        server.create({**convert(beta_widget(name, 1), "example.com/v1"), "spec": {}})
    beta = client.resource(V1BETA1, namespace="default")

    webhook.behaviour = "rename"
    with pytest.raises(ApiError) as failed:
        await beta.get("a")
    assert failed.value.message == (
        "Internal error occurred: conversion webhook for example.com/v1, Kind=Widget returned "
        "invalid object: must have the same name: a != a-renamed"
    )
    webhook.behaviour = "drop"
    with pytest.raises(ApiError) as failed:
        await beta.list()
    assert failed.value.message == (
        "Internal error occurred: conversion webhook for example.com/v1, Kind=WidgetList "
        "returned 1 objects, expected 2"
    )


async def test_an_answer_that_is_not_a_review_or_not_a_success_is_a_500(
    served: tuple[FakeAPIServer, Client], webhook: Webhook
) -> None:
    server, client = served
    server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {}})
    beta = client.resource(V1BETA1, namespace="default")
    prefix = "Internal error occurred: conversion webhook for example.com/v1, Kind=Widget failed: "

    webhook.behaviour = "garbage"
    with pytest.raises(ApiError) as failed:
        await beta.get("a")
    assert failed.value.code == 500
    assert failed.value.message.startswith(prefix + "couldn't get version/kind; json parse error: ")
    webhook.behaviour = "error"
    with pytest.raises(ApiError) as failed:
        await beta.get("a")
    assert failed.value.message == prefix + (
        'an error on the server ("converter crashed") has prevented the request from succeeding'
    )


async def test_deletes_and_status_writes_in_another_version_are_converted(
    served: tuple[FakeAPIServer, Client], webhook: Webhook
) -> None:
    server, client = served
    for name in ("a", "b"):
        server.create(
            {
                **convert(beta_widget(name, 1), "example.com/v1"),
                "metadata": {"name": name, "namespace": "default", "finalizers": ["x.io/f"]},
                "spec": {"replicas": 2},
            }
        )
    beta = client.resource(V1BETA1, namespace="default")

    current = await beta.get("a")
    status = await client.request(
        "PUT",
        "/apis/example.com/v1beta1/namespaces/default/widgets/a/status",
        json={**current, "status": {"ready": True}},
    )
    assert (status["spec"], status["status"]) == ({"count": 2}, {"ready": True})
    assert server.objects("widgets")[0]["status"] == {"ready": True}
    # Held by its finalizer, the deleted object is the answer, converted.
    marked = await client.request(
        "DELETE", "/apis/example.com/v1beta1/namespaces/default/widgets/a"
    )
    assert (marked["apiVersion"], marked["spec"]) == ("example.com/v1beta1", {"count": 2})
    assert marked["metadata"]["deletionTimestamp"]
    webhook.reviews.clear()
    deleted = await client.request("DELETE", "/apis/example.com/v1beta1/namespaces/default/widgets")
    assert [(i["metadata"]["name"], i["spec"]) for i in deleted["items"]] == [
        ("a", {"count": 2}),
        ("b", {"count": 2}),
    ]
    [review] = webhook.reviews
    assert len(review["request"]["objects"]) == 2


async def test_a_patch_raced_by_another_write_is_applied_again_to_the_newer_object(
    served: tuple[FakeAPIServer, Client], webhook: Webhook
) -> None:
    server, client = served
    server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {"replicas": 1}})
    beta = client.resource(V1BETA1, namespace="default")
    raced: list[str] = []

    def race(review: dict[str, Any]) -> None:
        # While the patched object is converted for storage, another client writes it.
        if review["request"]["desiredAPIVersion"] == "example.com/v1" and not raced:
            written = server.patch("widgets", "default", "a", {"metadata": {"labels": {"l": "x"}}})
            raced.append(written["metadata"]["resourceVersion"])

    webhook.on_review = race
    patched = await beta.patch("a", {"spec": {"count": 9}})
    assert (patched["spec"], patched["metadata"]["labels"]) == ({"count": 9}, {"l": "x"})
    to_storage = [r for r in webhook.reviews if r["request"]["desiredAPIVersion"].endswith("/v1")]
    assert len(to_storage) == 2  # the patch, applied again after the race

    # A patch naming a resourceVersion is a precondition: its conflict is answered.
    raced.clear()
    webhook.reviews.clear()
    with pytest.raises(ApiError) as failed:
        await beta.patch(
            "a", {"metadata": {"resourceVersion": patched["metadata"]["resourceVersion"]}}
        )
    assert failed.value.code == 409
    assert [r["request"]["desiredAPIVersion"] for r in webhook.reviews] == [
        "example.com/v1beta1",
        "example.com/v1",
    ]


async def test_the_scale_of_another_version_is_read_and_written_at_its_own_paths(
    webhook: Webhook,
) -> None:
    crd = conversion_crd(webhook.client_config())
    for version, path in zip(
        crd["spec"]["versions"], (".spec.replicas", ".spec.count"), strict=True
    ):
        scale = {"specReplicasPath": path, "statusReplicasPath": ".status.replicas"}
        version["subresources"] = {"status": {}, "scale": scale}
    async with FakeAPIServer() as server, server.client() as client:
        await client.resource(CRDS).create(crd)
        server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {"replicas": 2}})
        path = "/apis/example.com/v1beta1/namespaces/default/widgets/a/scale"

        assert (await client.request("GET", path))["spec"] == {"replicas": 2}
        scale = await client.request(
            "PUT", path, json={"kind": "Scale", "metadata": {"name": "a"}, "spec": {"replicas": 5}}
        )
        assert scale["spec"] == {"replicas": 5}
        assert server.objects("widgets")[0]["spec"] == {"replicas": 5}


async def test_the_review_version_is_the_first_the_definition_prefers(webhook: Webhook) -> None:
    crd = conversion_crd(webhook.client_config())
    crd["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = ["v2", "v1beta1", "v1"]
    async with FakeAPIServer() as server, server.client() as client:
        await client.resource(CRDS).create(crd)
        server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {}})
        # The webhook answers a v1 review to a v1beta1 one: kube-apiserver never checked
        # a v1beta1 answer's kind or uid.
        got = await client.resource(V1BETA1, namespace="default").get("a")
    assert got["apiVersion"] == "example.com/v1beta1"
    assert [r["apiVersion"] for r in webhook.reviews] == ["apiextensions.k8s.io/v1beta1"]


async def test_a_watch_ends_when_an_event_cannot_be_converted(
    served: tuple[FakeAPIServer, Client], webhook: Webhook
) -> None:
    server, client = served
    server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {}})
    webhook.behaviour = "rename"
    beta = client.resource(V1BETA1, namespace="default")
    events = []
    async with asyncio.timeout(10), contextlib.aclosing(beta.watch(ListOptions())) as stream:
        async for event in stream:
            events.append(event)
    assert events == []


async def test_strategy_none_converts_nothing(webhook: Webhook) -> None:
    async with FakeAPIServer() as server, server.client() as client:
        await client.resource(CRDS).create(conversion_crd({}, strategy="None"))
        beta = client.resource(V1BETA1, namespace="default")
        await beta.create(beta_widget("a", 3))
        [stored] = server.objects("widgets")
        assert stored["spec"] == {"count": 3}  # only the apiVersion differs between them
        got = await client.resource(V1, namespace="default").get("a")
        assert (got["apiVersion"], got["spec"]) == ("example.com/v1", {"count": 3})
    assert webhook.reviews == []


async def test_a_service_reference_connects_where_the_server_maps_it() -> None:
    hook = Webhook(make_pki())
    await hook.start(names=("hooks.ops.svc",))
    # A port nothing listens on: the reference's own, where an unmapped service connects.
    closed = closed_port()
    service = {"namespace": "ops", "name": "hooks", "port": closed, "path": "/convert"}
    config = {"service": service, "caBundle": ca_bundle(hook.pki)}
    try:
        async with FakeAPIServer() as server, server.client() as client:
            await client.resource(CRDS).create(conversion_crd(config))
            server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {}})
            beta = client.resource(V1BETA1, namespace="default")
            with pytest.raises(ApiError) as failed:
                await beta.get("a")
            assert failed.value.message == (
                "Internal error occurred: conversion webhook for example.com/v1, Kind=Widget "
                f'failed: Post "https://hooks.ops.svc:{closed}/convert?timeout=30s": dial tcp '
                f"127.0.0.1:{closed}: connect: connection refused"
            )

            server.webhook_services[("ops", "hooks")] = ("127.0.0.1", hook.port)
            assert (await beta.get("a"))["apiVersion"] == "example.com/v1beta1"
            assert hook.connections == 1
        # The server's session went with it, and its connection.
        await eventually(lambda: hook.connections == 0, timeout=5)
    finally:
        await hook.stop()


async def test_an_unmapped_service_connects_to_loopback_at_its_port() -> None:
    hook = Webhook(make_pki())
    await hook.start(names=("hooks.ops.svc",))
    service = {"namespace": "ops", "name": "hooks", "port": hook.port, "path": "/convert"}
    try:
        async with FakeAPIServer() as server, server.client() as client:
            config = {"service": service, "caBundle": ca_bundle(hook.pki)}
            await client.resource(CRDS).create(conversion_crd(config))
            server.create({**convert(beta_widget("a", 2), "example.com/v1")})
            got = await client.resource(V1BETA1, namespace="default").get("a")
            assert (got["apiVersion"], got["spec"]) == ("example.com/v1beta1", {"count": 2})
            [review] = hook.reviews
            assert review["request"]["desiredAPIVersion"] == "example.com/v1beta1"
    finally:
        await hook.stop()


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
async def test_kubectl_gets_the_other_version_converted(webhook: Webhook, tmp_path: Path) -> None:
    async with FakeAPIServer(tls=True) as server, server.client() as client:
        await client.resource(CRDS).create(conversion_crd(webhook.client_config()))
        server.create({**convert(beta_widget("a", 1), "example.com/v1"), "spec": {"replicas": 6}})

        code, out, err = await kubectl(
            server, tmp_path, "get", "widgets.v1beta1.example.com", "-o", "json"
        )
        assert code == 0, err
        [item] = json.loads(out)["items"]
        assert (item["apiVersion"], item["spec"]) == ("example.com/v1beta1", {"count": 6})
        code, out, err = await kubectl(server, tmp_path, "get", "widgets.v1beta1.example.com")
        assert code == 0, err
        header, row = out.splitlines()
        assert (header.split(), row.split()[0]) == (["NAME", "AGE"], "a")
