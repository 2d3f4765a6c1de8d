"""SharedInformerFactory and end-to-end informers over real HTTP against the fake API
server: sharing, selectors, CRDs through discovery, metadata-only informers, and churn
after which every handler's view equals the server's objects."""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from aioinformer import State
from aioinformer._kernel.backoff import Backoff
from aioinformer.client import GVR, Client
from aioinformer.errors import CacheSyncError, SelectorError
from aioinformer.factory import SharedInformerFactory
from aioinformer.indexer import meta_namespace_key
from aioinformer.models import DeletedFinalStateUnknown, KubeObject
from aioinformer.processor import SlowHandlerThresholds
from aioinformer.reflector import ReflectorOptions, ReflectorState
from aioinformer.testing import FakeAPIServer, FakeClock
from tests._support_reflector import reflector_statistics
from tests._support_wait import wait_until

if TYPE_CHECKING:
    from collections.abc import Callable

    from aioinformer.informer import CacheMode, SharedIndexInformer


# The conditions below depend on socket I/O between the real client and server: a short
# real sleep between checks lets the loop's selector run.
SOCKET_POLL = 0.001


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def server_view(server: FakeAPIServer, resource: str = "pods") -> dict[str, str]:
    return {
        meta_namespace_key(obj): obj["metadata"]["resourceVersion"]
        for obj in server.objects(resource)
    }


async def converge(
    condition: Callable[[], bool],
    informers: list[SharedIndexInformer],
    clock: FakeClock,
    *,
    timeout: float = 10.0,
) -> None:
    """Wait (real time, bounded) for ``condition``; whenever a reflector backs off, let its
    backoff run out on the fake clock."""

    async def past_backoffs() -> None:
        if any(
            (reflector := informer.statistics().reflector) is not None
            and reflector.state is ReflectorState.BACKING_OFF
            for informer in informers
        ):
            await clock.advance(2)

    await wait_until(condition, poll=SOCKET_POLL, between=past_backoffs, timeout=timeout)


async def _watches_closed(server: FakeAPIServer) -> None:
    await wait_until(lambda: server.watch_count == 0, poll=SOCKET_POLL, timeout=10)


class ViewHandler:
    """Replays its events into a dict ``key -> resourceVersion``, checking that each event
    is consistent with what it saw before."""

    def __init__(self) -> None:
        self.view: dict[str, str] = {}
        self.inconsistencies: list[str] = []

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        key = meta_namespace_key(obj)
        if key in self.view:
            self.inconsistencies.append(f"add of known {key}")
        self.view[key] = obj["metadata"]["resourceVersion"]

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        key = meta_namespace_key(new)
        if self.view.get(key) != old["metadata"]["resourceVersion"]:
            self.inconsistencies.append(f"update of {key} from an old state we did not see")
        self.view[key] = new["metadata"]["resourceVersion"]

    def on_delete(self, obj: Any) -> None:
        key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else meta_namespace_key(obj)
        if self.view.pop(key, None) is None:
            self.inconsistencies.append(f"delete of unknown {key}")


class SlowViewHandler(ViewHandler):
    """The same, async, yielding on every call."""

    async def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().on_add(obj, is_in_initial_list)

    async def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().on_update(old, new)

    async def on_delete(self, obj: Any) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().on_delete(obj)


# -- sharing ---------------------------------------------------------------------------


def test_informer_for_shares_one_informer_per_resource_namespace_selectors_and_kind(
    kube_client: Client,
) -> None:
    factory = SharedInformerFactory(kube_client)
    pods = factory.informer_for("v1/pods")
    assert factory.informer_for(GVR("", "v1", "pods")) is pods
    assert factory.informer_for("v1/pods", namespace=None) is pods
    others = [
        factory.informer_for("v1/pods", namespace="default"),
        factory.informer_for("v1/pods", label_selector="app=web"),
        factory.informer_for("v1/pods", field_selector="status.phase=Running"),
        factory.informer_for("v1/pods", metadata_only=True),
    ]
    assert len({id(informer) for informer in [pods, *others]}) == 5
    assert len(factory.informers()) == 5


@pytest.mark.parametrize(
    "spelling",
    ["configmaps", "configmap", "cm", "ConfigMap", "CM", GVR("", "v1", "configmaps")],
    ids=str,
)
async def test_every_name_of_a_built_in_resource_shares_one_informer_and_one_watch(
    fake_apiserver: FakeAPIServer, kube_client: Client, spelling: str | GVR
) -> None:
    fake_apiserver.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "kube-system"},
        }
    )
    async with SharedInformerFactory(kube_client) as factory:
        first = factory.informer_for("v1/configmaps")
        assert factory.informer_for(spelling) is first
        assert factory.informer_for("deployments.apps") is factory.informer_for(
            "apps/v1/deployments"
        )
        await factory.wait_for_cache_sync(timeout=5)
        await fake_apiserver.wait_for_watchers(2)
        assert fake_apiserver.watch_count == 2  # configmaps and deployments, once each
    assert len(factory.informers()) == 2
    assert first.lister().get("a", "kube-system") is not None
    # Named as first asked for, in health records and messages.
    assert first.name == "v1/configmaps"


def test_a_custom_resource_is_shared_by_the_name_as_given(kube_client: Client) -> None:
    factory = SharedInformerFactory(kube_client)
    widgets = factory.informer_for("widgets")
    assert factory.informer_for("Widgets") is widgets
    assert factory.informer_for("example.com/v1/widgets") is not widgets


async def test_the_lister_of_an_informer_for_one_namespace_gets_by_name_alone(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("web-0", namespace="kube-system"))
    async with SharedInformerFactory(kube_client) as factory:
        scoped = factory.informer_for("pods", namespace="kube-system")
        everywhere = factory.informer_for("pods")
        await factory.wait_for_cache_sync(timeout=5)
    found = scoped.lister().get("web-0")
    assert found is not None
    assert found["metadata"]["namespace"] == "kube-system"
    assert everywhere.lister().get("web-0") is None  # all namespaces: name one
    assert everywhere.lister().get("web-0", "kube-system") is not None


def test_factory_defaults_apply_and_can_be_overridden(kube_client: Client) -> None:
    factory = SharedInformerFactory(kube_client, namespace="team-a", label_selector="tier=db")
    default = factory.informer_for("pods")
    assert default.name == "pods ns=team-a l=tier=db"
    assert factory.informer_for("pods", namespace=None, label_selector=None).name == "pods"


def test_informer_for_merges_new_indexers_and_refuses_a_second_model(
    kube_client: Client,
) -> None:
    class Pod(KubeObject):
        pass

    class OtherPod(KubeObject):
        pass

    factory = SharedInformerFactory(kube_client)
    informer = factory.informer_for("pods", model=Pod, indexers={"by-node": lambda o: []})
    assert factory.informer_for("pods", indexers={"by-app": lambda o: []}) is informer
    assert sorted(informer.indexer.get_indexers()) == ["by-app", "by-node", "namespace"]
    assert factory.informer_for("pods", model=Pod) is informer
    with pytest.raises(ValueError, match="model"):
        factory.informer_for("pods", model=OtherPod)


@pytest.mark.parametrize(
    ("argument", "selector"),
    [
        ("label_selector", "a in ("),
        ("label_selector", "a==b==c"),
        ("label_selector", "x in (a b)"),
        ("field_selector", "metadata.name"),
    ],
    ids=["unclosed-set", "double-equals", "set-without-comma", "field-without-operator"],
)
def test_an_invalid_selector_is_refused_before_any_informer_or_request(
    kube_client: Client, argument: str, selector: str
) -> None:
    # The server would answer every LIST with a 400 and the reflector would retry it
    # forever: a selector that cannot parse is the caller's bug, reported at once.
    options: dict[str, Any] = {argument: selector}
    with pytest.raises(SelectorError):
        SharedInformerFactory(kube_client, **options)
    factory = SharedInformerFactory(kube_client)
    with pytest.raises(SelectorError):
        factory.informer_for("pods", **options)
    assert factory.informers() == {}


async def test_shut_down_factory_refuses_new_informers(kube_client: Client) -> None:
    factory = SharedInformerFactory(kube_client)
    await factory.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        factory.informer_for("pods")


# -- running -------------------------------------------------------------------------


async def test_factory_starts_syncs_and_shuts_down_every_informer(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("web-0", app="web"))
    fake_apiserver.create(pod("db-0", namespace="kube-system", app="db"))
    async with SharedInformerFactory(kube_client) as factory:
        pods = factory.informer_for("pods")
        configmaps = factory.informer_for("v1/configmaps", namespace="default")
        synced = await factory.wait_for_cache_sync(timeout=10)
        assert synced == {"pods": True, "v1/configmaps ns=default": True}
        lister = pods.lister()
        web = lister.get("web-0", namespace="default")
        assert web is not None
        assert web["metadata"]["labels"] == {"app": "web"}
        assert [p["metadata"]["name"] for p in lister.list(namespace="kube-system")] == ["db-0"]
        assert [p["metadata"]["name"] for p in lister.list(label_selector="app=web")] == ["web-0"]
        assert configmaps.lister().list() == []
        await fake_apiserver.wait_for_watchers(2)
    await _watches_closed(fake_apiserver)
    assert pods.state.name == "STOPPED"


async def test_factory_is_a_service_with_client_gos_start_and_shutdown_besides(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("web-0"))
    factory = SharedInformerFactory(kube_client)
    pods = factory.informer_for("pods")
    states = [factory.state]
    await factory.start()
    await factory.start()  # idempotent, as client-go's Start
    states.append(factory.state)
    assert states == [State.NEW, State.RUNNING]
    assert await pods.wait_for_sync(timeout=10)
    with pytest.raises(RuntimeError, match="runs only once"):
        async with factory:
            pass
    await factory.shutdown()
    await factory.shutdown()  # idempotent, as client-go's Shutdown
    await factory.aclose()  # the name every service answers to, the same stop
    assert (factory.state, pods.state) == (State.STOPPED, State.STOPPED)
    await _watches_closed(fake_apiserver)
    with pytest.raises(RuntimeError, match="shut down"):
        await factory.start()


async def test_factory_run_is_ready_once_its_informers_started_and_stop_ends_it(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("web-0"))
    factory = SharedInformerFactory(kube_client)
    pods = factory.informer_for("pods")
    async with anyio.create_task_group() as task_group:
        await task_group.start(factory.run)
        await factory.start()  # already running: nothing to do
        assert pods.state is not State.NEW
        assert await factory.wait_for_cache_sync(timeout=10) == {"pods": True}
        factory.stop()
        assert factory.state is State.STOPPING
        with pytest.raises(RuntimeError, match="shut down"):
            factory.informer_for("configmaps")
    assert (factory.state, pods.state) == (State.STOPPED, State.STOPPED)
    await _watches_closed(fake_apiserver)


async def test_informer_requested_after_start_starts_at_once(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("late"))
    async with SharedInformerFactory(kube_client) as factory:
        informer = factory.informer_for("pods")
        assert await informer.wait_for_sync(timeout=10)
        assert informer.lister().get("late", "default") is not None


async def test_custom_resource_is_found_by_plural_through_discovery(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.register_crd("example.com", "v1", "widgets", "Widget")
    fake_apiserver.create(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default"},
            "spec": {"size": 3},
        }
    )
    async with SharedInformerFactory(kube_client) as factory:
        widgets = factory.informer_for("widgets")
        assert await factory.wait_for_cache_sync(timeout=10) == {"widgets": True}
        widget = widgets.lister().get("w1", "default")
        assert widget is not None
        assert widget["kind"] == "Widget"
        assert widget["spec"] == {"size": 3}


async def test_metadata_only_informer_caches_metadata_without_spec(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("web-0", app="web"))
    async with SharedInformerFactory(kube_client) as factory:
        informer = factory.informer_for("pods", metadata_only=True)
        assert all((await factory.wait_for_cache_sync(timeout=10)).values())
        obj = informer.lister().get("web-0", "default")
        assert obj is not None
        assert obj["metadata"]["labels"] == {"app": "web"}
        assert set(obj) == {"apiVersion", "kind", "metadata"}
        assert (obj["apiVersion"], obj["kind"]) == ("meta.k8s.io/v1", "PartialObjectMetadata")
        fake_apiserver.patch("pods", "default", "web-0", {"metadata": {"labels": {"app": "x"}}})

        def relabelled() -> bool:
            current = informer.lister().get("web-0", "default")
            assert current is not None
            return bool(current["metadata"]["labels"] == {"app": "x"})

        await wait_until(relabelled, poll=SOCKET_POLL, timeout=10)
        fake_apiserver.create(pod("web-1", app="web"))
        await wait_until(
            lambda: informer.lister().get("web-1", "default") is not None,
            poll=SOCKET_POLL,
            timeout=10,
        )
        # Objects arriving by watch are PartialObjectMetadata too, with nothing else.
        for cached in informer.lister().list():
            assert set(cached) == {"apiVersion", "kind", "metadata"}, cached
            assert cached["kind"] == "PartialObjectMetadata"


async def test_label_selected_informer_sees_only_matching_objects(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("web-0", app="web"))
    fake_apiserver.create(pod("db-0", app="db"))
    async with SharedInformerFactory(kube_client, label_selector="app=web") as factory:
        informer = factory.informer_for("pods")
        await factory.wait_for_cache_sync(timeout=10)
        assert informer.indexer.list_keys() == ["default/web-0"]
        # Relabelled out of the selector: the watch reports it deleted.
        fake_apiserver.patch("pods", "default", "web-0", {"metadata": {"labels": {"app": "x"}}})
        await wait_until(lambda: informer.indexer.list_keys() == [], poll=SOCKET_POLL, timeout=10)


async def test_unknown_resource_never_syncs(kube_client: Client) -> None:
    clock = FakeClock()
    async with SharedInformerFactory(kube_client, clock=clock) as factory:
        factory.informer_for("gizmos")
        with pytest.raises(CacheSyncError) as caught:
            await factory.wait_for_cache_sync(timeout=0.2)
        assert [record.name for record in caught.value.unsynced] == ["gizmos"]


# -- end to end --------------------------------------------------------------------------


async def churn(server: FakeAPIServer, rng: random.Random, steps: int, prefix: str) -> None:
    names: list[tuple[str, str]] = [
        (obj["metadata"]["namespace"], obj["metadata"]["name"]) for obj in server.objects("pods")
    ]
    for step in range(steps):
        roll = rng.random()
        if not names or roll < 0.4:
            namespace = rng.choice(["default", "kube-system"])
            name = f"{prefix}-{step}"
            server.create(pod(name, namespace, step=str(step)))
            names.append((namespace, name))
        elif roll < 0.8:
            namespace, name = rng.choice(names)
            server.patch("pods", namespace, name, {"metadata": {"labels": {"step": str(step)}}})
        else:
            namespace, name = names.pop(rng.randrange(len(names)))
            server.delete("pods", namespace, name)
        if step % 7 == 0:
            await asyncio.sleep(0)


@pytest.mark.slow
async def test_every_handler_view_equals_the_server_after_churn_and_a_server_restart(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    rng = random.Random(20240611)
    clock = FakeClock()
    for i in range(30):
        fake_apiserver.create(pod(f"seed-{i}", rng.choice(["default", "kube-system"])))
    fast, slow = ViewHandler(), SlowViewHandler()
    stream_view: dict[str, str] = {}
    async with SharedInformerFactory(kube_client, clock=clock) as factory:
        informer = factory.informer_for("pods")
        informer.add_event_handler(fast)
        informer.add_event_handler(slow)
        stream = informer.events()

        async def consume() -> None:
            async for event in stream:
                if event.type == "DELETED":
                    obj = event.object
                    key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else None
                    stream_view.pop(key or meta_namespace_key(obj), None)
                else:
                    stream_view[meta_namespace_key(event.object)] = event.object["metadata"][
                        "resourceVersion"
                    ]

        consumer = asyncio.create_task(consume())
        await factory.wait_for_cache_sync(timeout=10)
        await churn(fake_apiserver, rng, 300, "a")
        # Lose the server and its history mid-churn: a relist with tombstones follows.
        await fake_apiserver.restart(reset_history=True)
        await churn(fake_apiserver, rng, 300, "b")
        late = ViewHandler()
        informer.add_event_handler(late)
        await churn(fake_apiserver, rng, 100, "c")

        def converged() -> bool:
            truth = server_view(fake_apiserver)
            return fast.view == slow.view == late.view == stream_view == truth

        await converge(converged, [informer], clock, timeout=20)
        cache = {
            meta_namespace_key(obj): obj["metadata"]["resourceVersion"]
            for obj in informer.indexer.list()
        }
        assert cache == server_view(fake_apiserver)
        reflector = informer.statistics().reflector
        assert reflector is not None
        assert reflector.relists >= 1  # the restart forced a relist
    await asyncio.wait_for(consumer, timeout=5)
    assert fast.inconsistencies == slow.inconsistencies == late.inconsistencies == []


async def test_the_factory_gives_each_informer_its_own_backoff(
    fake_apiserver: FakeAPIServer, kube_client: Client, cache: CacheMode
) -> None:
    clock = FakeClock()
    made: list[Backoff] = []

    def backoff() -> Backoff:
        made.append(Backoff(initial=7.0, cap=7.0, jitter=0.0, clock=clock))
        return made[-1]

    # A silence deadline whose watchdog ticks (every 20th of it) come after the 7 s
    # backoff, so that the clock's next deadline is the backoff's.
    factory = SharedInformerFactory(
        kube_client,
        clock=clock,
        backoff=backoff,
        cache=cache,
        reflector=ReflectorOptions(watch_inactivity_timeout=300.0, use_watch_list=False),
    )
    pods = factory.informer_for("pods")
    configmaps = factory.informer_for("configmaps")
    assert len(made) == 2
    assert made[0] is not made[1]
    # Each informer's reflector backs off by its own backoff: 7 s, not the default.
    pods.set_watch_error_handler(lambda _r, _e: None)
    fake_apiserver.faults.fail_next(status=500, retry_after=None, resource="pods", verb="list")
    async with factory:
        await wait_until(
            lambda: reflector_statistics(pods).state is ReflectorState.BACKING_OFF,
            poll=SOCKET_POLL,
            timeout=10,
        )
        assert clock.next_deadline() == pytest.approx(7.0)
        await clock.advance(7.0)
        assert all((await factory.wait_for_cache_sync(timeout=10)).values())
    assert configmaps.has_synced()


async def test_the_factory_passes_its_watch_inactivity_timeout_to_every_informer(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    factory = SharedInformerFactory(
        kube_client, clock=clock, reflector=ReflectorOptions(watch_inactivity_timeout=40.0)
    )
    informer = factory.informer_for("pods")
    async with factory:
        assert all((await factory.wait_for_cache_sync(timeout=10)).values())
        await wait_until(
            lambda: reflector_statistics(informer).state is ReflectorState.WATCHING,
            poll=SOCKET_POLL,
            timeout=10,
        )
        await clock.wait_for_sleepers(1)  # the watch's inactivity watchdog
        await clock.advance(45.0)  # the default deadline is 120 s
        await wait_until(
            lambda: reflector_statistics(informer).watches >= 2, poll=SOCKET_POLL, timeout=10
        )


def test_the_factory_refuses_a_non_positive_inactivity_timeout(kube_client: Client) -> None:
    with pytest.raises(ValueError, match="watch_inactivity_timeout"):
        SharedInformerFactory(kube_client, reflector=ReflectorOptions(watch_inactivity_timeout=-1))


def _stray_cancellation(obj: dict[str, Any]) -> list[str]:
    """An index function that lets out a CancelledError nobody asked for."""
    raise asyncio.CancelledError


async def test_a_failed_informer_leaves_the_others_running_and_is_logged_at_shutdown(
    fake_apiserver: FakeAPIServer, kube_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    fake_apiserver.create(pod("web-0"))
    async with SharedInformerFactory(kube_client) as factory:
        broken = factory.informer_for("pods", indexers={"stray": _stray_cancellation})
        healthy = factory.informer_for("v1/configmaps")
        assert await healthy.wait_for_sync(timeout=10)
        # Its wait says why it will never sync.
        with pytest.raises(RuntimeError, match="'pods pop' was cancelled unexpectedly"):
            await broken.wait_for_sync(timeout=10)
        assert healthy.state.name == "RUNNING"
        assert not [r for r in caplog.records if r.getMessage() == "informer pods failed"]
    assert [r.getMessage() for r in caplog.records if r.name == "aioinformer.factory"] == [
        "informer pods failed"
    ]


async def test_the_factory_gives_every_informer_its_slow_handler_thresholds(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    clock = FakeClock()
    factory = SharedInformerFactory(
        kube_client, clock=clock, slow_handler_thresholds=SlowHandlerThresholds(total=1.0)
    )
    fake_apiserver.create(pod("a"))
    returned = asyncio.Event()

    async def on_add(obj: dict[str, Any], is_in_initial_list: bool) -> None:
        await clock.advance(2.0)  # past the factory's 1 s bound, well under the 5 s default
        returned.set()

    registration = factory.informer_for("pods").add_event_handler(on_add=on_add)
    async with factory:
        await asyncio.wait_for(returned.wait(), timeout=10)
        await wait_until(
            lambda: registration.statistics().slow_calls == 1, poll=SOCKET_POLL, timeout=10
        )


async def test_the_factory_builds_in_order_informers_when_asked(
    fake_apiserver: FakeAPIServer, kube_client: Client
) -> None:
    fake_apiserver.create(pod("a"))
    default = SharedInformerFactory(kube_client).informer_for("pods")
    factory = SharedInformerFactory(kube_client, in_order=True)
    pods = factory.informer_for("pods")
    assert not default.in_order
    assert pods.in_order
    async with factory:
        assert await pods.wait_for_sync(timeout=10)
        assert [o["metadata"]["name"] for o in pods.lister().list()] == ["a"]
