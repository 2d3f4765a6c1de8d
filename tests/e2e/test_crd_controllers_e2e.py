"""Controllers that come and go with their CustomResourceDefinition, on a running Manager
against the fake API server: the CRD installed and deleted while the manager runs."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer import State
from aioinformer.errors import NotFound
from aioinformer.operator import Manager
from aioinformer.operator.crds import CRDS_RESOURCE, CRDControllers, CRDScope, crd_established
from tests._support_tasks import no_task_outlives_the_test as no_task_outlives_the_test
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from aioinformer.client import Client
    from aioinformer.testing import FakeAPIServer

pytestmark = pytest.mark.e2e

POLL = 0.005
CRD_NAME = "widgets.example.com"
WIDGETS = "example.com/v1/widgets"


def widget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def widget(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 1},
    }


class Recorder:
    """A setup that builds one controller of widgets, recording what it reconciles and
    whether the widget was there."""

    def __init__(self) -> None:
        self.scopes: list[CRDScope] = []
        self.seen: list[tuple[int, str, bool]] = []

    def __call__(self, scope: CRDScope) -> None:
        generation = len(self.scopes) + 1
        self.scopes.append(scope)
        widgets = scope.informer_for(WIDGETS)

        async def reconcile(key: str) -> None:
            self.seen.append((generation, key, widgets.indexer.get_by_key(key) is not None))

        scope.controller("widgets", reconcile, informers=[widgets])


async def install(client: Client) -> None:
    await client.resource(CRDS_RESOURCE).create(widget_crd())


async def uninstall(client: Client) -> None:
    await client.resource(CRDS_RESOURCE).delete(CRD_NAME)


def widget_informers(manager: Manager) -> list[str]:
    return [key.describe() for key in manager.factory.informers() if "widgets" in key.resource]


async def test_controllers_start_with_their_crd_stop_when_it_goes_and_start_again(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    recorder = Recorder()
    manager = Manager(kube_client)
    gate = manager.add_crd_controllers(CRD_NAME, recorder)
    async with manager:
        await asyncio.wait_for(manager.elected.wait(), 5)
        # No CRD yet: nothing was set up, no informer of widgets exists.
        assert gate.idle.is_set()
        assert (gate.generations, gate.controllers, widget_informers(manager)) == (0, (), [])

        await install(kube_client)
        await asyncio.wait_for(gate.serving.wait(), 5)
        assert gate.generations == 1
        (first,) = gate.controllers
        await kube_client.resource(WIDGETS, "default").create(widget("a"))
        await wait_until(lambda: (1, "default/a", True) in recorder.seen, poll=POLL)
        assert manager.health().controllers == {"widgets": "running"}
        assert len(widget_informers(manager)) == 1

        await uninstall(kube_client)
        await asyncio.wait_for(gate.idle.wait(), 5)
        assert first.state is State.STOPPED
        assert (gate.controllers, widget_informers(manager)) == ((), [])
        assert manager.health().controllers == {}
        assert manager.state is State.RUNNING

        await install(kube_client)
        await asyncio.wait_for(gate.serving.wait(), 5)
        assert gate.generations == 2
        await kube_client.resource(WIDGETS, "default").create(widget("b"))
        await wait_until(lambda: (2, "default/b", True) in recorder.seen, poll=POLL)
        # The new generation starts empty: the first widget died with the first CRD.
        assert not any(g == 2 and key == "default/a" for g, key, _ in recorder.seen)
    assert gate.controllers == ()
    assert recorder.scopes[1].controllers[0].state is State.STOPPED


async def test_a_crd_there_before_the_manager_starts_runs_its_controllers_once_synced(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    await install(kube_client)
    await kube_client.resource(WIDGETS, "default").create(widget("a"))
    recorder = Recorder()
    manager = Manager(kube_client)
    gate = manager.add_crd_controllers(CRD_NAME, recorder)
    async with manager:
        await asyncio.wait_for(gate.serving.wait(), 5)
        await wait_until(lambda: recorder.seen == [(1, "default/a", True)], poll=POLL)
    assert gate.generations == 1


async def test_a_controller_with_a_finalizer_keeps_running_while_its_crd_is_deleted(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    # The API server deletes every widget before the CRD; a widget with a finalizer waits
    # for its controller to remove it, which it can because it still runs.
    await install(kube_client)
    widgets_api = kube_client.resource(WIDGETS, "default")
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/cleanup"]
    await widgets_api.create(held)
    cleaned: list[str] = []

    def setup(scope: CRDScope) -> None:
        widgets = scope.informer_for(WIDGETS)

        async def reconcile(key: str) -> None:
            obj = widgets.indexer.get_by_key(key)
            if obj is None or not obj["metadata"].get("deletionTimestamp"):
                return
            await widgets_api.patch(
                obj["metadata"]["name"],
                {"metadata": {"finalizers": None}},
            )
            cleaned.append(key)

        scope.controller("widgets", reconcile, informers=[widgets])

    manager = Manager(kube_client)
    gate = manager.add_crd_controllers(CRD_NAME, setup)
    async with manager:
        await asyncio.wait_for(gate.serving.wait(), 5)
        await uninstall(kube_client)
        await asyncio.wait_for(gate.idle.wait(), 5)
        assert cleaned == ["default/held"]
    with pytest.raises(NotFound):
        await kube_client.resource(CRDS_RESOURCE).get(CRD_NAME)


async def test_a_failing_setup_stops_the_manager_with_its_error(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    await install(kube_client)

    async def setup(scope: CRDScope) -> None:
        raise RuntimeError("no widgets today")

    manager = Manager(kube_client)
    manager.add_crd_controllers(CRD_NAME, setup)
    with pytest.raises(RuntimeError, match="no widgets today"):
        await asyncio.wait_for(manager.run(), 5)
    assert manager.state is State.STOPPED


async def test_an_async_setup_may_share_an_informer_the_operator_already_holds(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    # An informer the factory held before the scope asked for it is the operator's: it
    # stays when the CRD goes, only the scope's own leave.
    manager = Manager(kube_client)
    config_maps = manager.informer_for("configmaps")
    recorder = Recorder()

    async def setup(scope: CRDScope) -> None:
        assert scope.informer_for("configmaps") is config_maps
        recorder(scope)

    gate = manager.add_crd_controllers(CRD_NAME, setup)
    async with manager:
        await install(kube_client)
        await asyncio.wait_for(gate.serving.wait(), 5)
        assert len(recorder.scopes[0].informers) == 1
        await uninstall(kube_client)
        await asyncio.wait_for(gate.idle.wait(), 5)
        assert config_maps in manager.factory.informers().values()
        assert widget_informers(manager) == []


def test_crd_established_reads_the_established_condition() -> None:
    crd = widget_crd()
    assert not crd_established(crd)
    crd["status"] = {"conditions": [{"type": "Established", "status": "False"}]}
    assert not crd_established(crd)
    crd["status"]["conditions"].append({"type": "NamesAccepted", "status": "True"})
    assert not crd_established(crd)
    crd["status"]["conditions"][0]["status"] = "True"
    assert crd_established(crd)
    assert not crd_established(None)


async def test_a_crd_name_must_be_plural_dot_group(kube_client: Client) -> None:
    manager = Manager(kube_client)
    with pytest.raises(ValueError, match=r"<plural>\.<group>"):
        manager.add_crd_controllers("widgets", Recorder())
    with pytest.raises(TypeError, match="setup must be callable"):
        CRDControllers(manager, CRD_NAME, "not a function")  # type: ignore[arg-type]
