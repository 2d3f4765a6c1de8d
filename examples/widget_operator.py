"""Write an operator: one ConfigMap per ``Widget`` custom resource, kept in line with it.

The reconcile loop is level-based: it gets a key (``"namespace/name"``), reads the
Widget and its ConfigMap from the informers' caches, and creates, patches or deletes the
ConfigMap until it matches what the Widget asks for. It never looks at *what* changed,
so missed, repeated or merged events do no harm, and one function handles every case:
a new Widget, an edited Widget, a ConfigMap edited or deleted by hand, a deleted Widget.
Once the ConfigMap is in place it records that in the Widget's ``status``
(``observedGeneration`` and ``configMap``) through the status subresource, which is the
only place an operator should write status: the API server keeps spec edits and status
writes apart, so neither can clobber the other.

After each write it waits for its own cache to hold the result
(``informer.wait_for_resource_version`` with the resourceVersion the write returned): the
next reconcile of that Widget, which may run as soon as this one returns, then reads what
was written, not the state from before. Without it, a reconcile woken by the status write
could still miss the ConfigMap it had just created, try to create it again and take the
``AlreadyExists`` for a foreign ConfigMap in the way.

* ``widgets``: a typed informer (``model=Widget``) on ``example.com/v1/widgets``.
* ``config_maps``: an informer on the ConfigMaps this operator manages (label selector),
  mapped back to their owning Widget with ``enqueue_owner``.
* ``Controller`` runs ``reconcile`` on two workers, once both caches are synced; a
  failure (a 409, a 500, a timeout) is retried with backoff, and ``Requeue(after=...)``
  asks to look again later without counting as a failure.

Runs against the embedded fake API server, which has the CRD registered::

    python examples/widget_operator.py

``python examples/widget_operator.py --sharded`` runs it as three replicas sharing the
Widgets over Leases (``Manager(shard=...)``): each replica reconciles its own Widgets, and
their ConfigMaps go with them; one replica stops and the others take its Widgets over.

A validating admission webhook guards the Widgets (``check_widget``): a greeting may not
be blank and ``size`` may be at most 10 (the schema already says at least 1). The demo
serves it from the Manager with a self-signed certificate (``pip install
'aioinformer[webhooks]'``), writes its ``ValidatingWebhookConfiguration`` to the fake
server with ``webhook_manifests``, and shows a Widget of size 50 refused.

Against a cluster, apply the CRD in ``WIDGET_CRD`` (``kubectl apply -f`` its YAML form)
and run ``python examples/widget_operator.py --cluster``: it uses ``Client.from_env()`` and runs
until Ctrl-C. With ``$WEBHOOK_CERT_DIR`` set (where cert-manager's Secret is mounted) it also
serves the webhook on ``:9443``; ``aioinformer webhook manifests widget_operator:webhooks
--service <namespace>/<service>`` (run in ``examples/``) prints its configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from aioinformer import (
    AlreadyExists,
    Client,
    Forbidden,
    KubeObject,
    NotFound,
    split_meta_namespace_key,
)
from aioinformer.operator import (
    AdmissionRequest,
    Controller,
    Denied,
    EventRecorder,
    Finalizer,
    FinalizerAction,
    LeaderElection,
    Manager,
    Requeue,
    ShardedResource,
    ShardRing,
    WebhookOptions,
    WebhookServer,
    enqueue_owner,
    generation_changed,
    set_controller_reference,
    webhook_manifests,
)
from aioinformer.priority_queue import namespace_of_key
from aioinformer.testing import FakeAPIServer, eventually

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from aioinformer import SharedIndexInformer, SharedInformerFactory
    from aioinformer.operator import EventType

logger = logging.getLogger("widget-operator")

GROUP = "example.com"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
WIDGETS = f"{API_VERSION}/widgets"
MANAGED_BY = "app.kubernetes.io/managed-by"
OPERATOR = "widget-operator"
FINALIZER = f"{GROUP}/cleanup"
REPORTING_CONTROLLER = f"{GROUP}/{OPERATOR}"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "greeting": {"type": "string"},
                                    "size": {"type": "integer", "minimum": 1},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "observedGeneration": {"type": "integer"},
                                    "configMap": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}
"""The CustomResourceDefinition a cluster needs (the fake server uses ``register_crd``)."""


class WidgetSpec(BaseModel):
    greeting: str = "Hello"
    size: int = 1


class WidgetStatus(BaseModel):
    """What the operator last did: the spec generation it acted on, and its ConfigMap."""

    observed_generation: int | None = Field(default=None, alias="observedGeneration")
    config_map: str | None = Field(default=None, alias="configMap")


class Widget(KubeObject):
    """The typed custom resource: listers and handlers hand these out."""

    spec: WidgetSpec = WidgetSpec()
    status: WidgetStatus = WidgetStatus()


MAX_SIZE = 10
"""The largest ``spec.size`` the validating webhook admits."""


def check_widget(request: AdmissionRequest[Widget]) -> None:
    """The validating webhook: a Widget's greeting is not blank and its size at most
    :data:`MAX_SIZE`. Typed: ``request.object`` is a :class:`Widget`."""
    widget = request.object
    assert widget is not None  # CREATE and UPDATE carry the object
    if not widget.spec.greeting.strip():
        raise Denied("spec.greeting may not be blank")
    if widget.spec.size > MAX_SIZE:
        raise Denied(f"spec.size must be at most {MAX_SIZE}, not {widget.spec.size}")


def add_webhooks(server: WebhookServer) -> None:
    """Register the operator's webhooks on ``server`` (a Manager's ``webhooks``)."""
    server.validate(
        None,
        check_widget,
        group=GROUP,
        version=VERSION,
        resource="widgets",
        kind="Widget",
        model=Widget,
    )


def webhooks() -> WebhookServer:
    """The webhooks alone, for ``aioinformer webhook manifests widget_operator:webhooks``."""
    server = WebhookServer()
    add_webhooks(server)
    return server


def config_map_name(widget_name: str) -> str:
    return f"{widget_name}-config"


def desired_config_map(widget: Widget, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ConfigMap ``widget`` asks for, controlled by it (so a cluster's garbage
    collector deletes it with the Widget, and ``enqueue_owner`` maps its events back),
    with ``labels`` besides ours (a sharded replica's shard label: what it creates is in
    its own cache at once)."""
    meta = widget.metadata
    assert meta.name is not None
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": config_map_name(meta.name),
            "namespace": meta.namespace,
            "labels": {**(labels or {}), MANAGED_BY: OPERATOR},
        },
        "data": {"greeting": widget.spec.greeting, "size": str(widget.spec.size)},
    }
    return set_controller_reference(widget, config_map)  # type: ignore[no-any-return]


class WidgetOperator:
    """The operator: two informers from ``factory`` (a factory, or a Manager, whose
    informers of a sharded resource watch its shard only), a controller, a finalizer,
    and ``reconcile``. ``labels`` go on every ConfigMap it creates.

    Build it before the factory starts, then run the factory, the controller and the
    event recorder together: :func:`build_manager` does that with a
    :class:`~aioinformer.operator.manager.Manager`, and tests may also run them by hand
    (``async with factory, operator.controller:``). ``recorder`` receives the Events the
    operator reports on its Widgets (``None`` reports none). ``recheck_after`` is how long
    to wait before looking again at a ConfigMap name taken by something else;
    ``read_back_timeout`` bounds the wait for the cache to show a write (past it, the
    reconcile ends anyway: a reconcile that reads the older state only repeats a write).
    """

    def __init__(
        self,
        client: Client,
        factory: SharedInformerFactory | Manager,
        *,
        labels: Mapping[str, str] | None = None,
        recorder: EventRecorder | None = None,
        workers: int = 2,
        recheck_after: float = 30.0,
        read_back_timeout: float = 10.0,
    ) -> None:
        self.widgets = factory.informer_for(WIDGETS, model=Widget)
        self.config_maps = factory.informer_for(
            "v1/configmaps", label_selector=f"{MANAGED_BY}={OPERATOR}"
        )
        self._config_map_api = client.resource("v1/configmaps")
        self._widget_api = client.resource(WIDGETS)
        self.recorder = recorder
        self._labels = dict(labels or {})
        self._recheck_after = recheck_after
        self._read_back_timeout = read_back_timeout
        # Cleanup runs once a Widget is marked for deletion, before the server lets it go.
        self.finalizer = Finalizer(self._widget_api, FINALIZER, self._clean_up)
        # Reconcile a Widget when its spec changes (generation), when it is created or
        # deleted, and when its deletion starts (that bumps the generation too); not for
        # its own status writes or a label edit. Within a priority (changes before the
        # start's and resyncs' backlog), namespaces take turns: a busy one cannot starve
        # the rest.
        self.controller = Controller(
            OPERATOR,
            self.reconcile,
            informers=[self.widgets],
            predicates=[generation_changed],
            workers=workers,
            fair_key=namespace_of_key,
        )
        # A ConfigMap event (edited or deleted by hand) re-reconciles its Widget.
        self.controller.watch(
            self.config_maps, enqueue=enqueue_owner("Widget", api_version=API_VERSION)
        )

    async def reconcile(self, key: str) -> Requeue | None:
        """Make the ConfigMap of Widget ``key`` match it; idempotent."""
        namespace, name = split_meta_namespace_key(key)
        widget: Widget | None = self.widgets.lister().get(name, namespace=namespace)
        if widget is None:
            # Gone without our cleanup (the finalizer was removed by hand, or never
            # added): a cluster's garbage collector follows the owner reference; doing it
            # here too gives the same result without one.
            await self._delete_config_map(namespace, config_map_name(name))
            return None

        handled = await self.finalizer.handle(widget)
        if handled.action is FinalizerAction.ADDED:
            await self._read_back(self.widgets, handled.object)
        if handled.stop:
            return None  # being deleted: the cleanup has run, nothing more to build

        cm_name = config_map_name(name)
        current: dict[str, Any] | None = self.config_maps.lister().get(cm_name, namespace)
        desired = desired_config_map(widget, self._labels)
        if current is None:
            try:
                created = await self._config_map_api.create(desired, namespace)
            except AlreadyExists:
                # The name is taken by a ConfigMap this operator does not manage (it is
                # not in our label-selected cache). Not an error: look again later.
                logger.warning(
                    "ConfigMap %s/%s exists and is not managed by %s; retrying in %ss",
                    namespace,
                    cm_name,
                    OPERATOR,
                    self._recheck_after,
                )
                self._event(widget, "Warning", "NameTaken", "Create", f"ConfigMap {cm_name} exists")
                return Requeue(after=self._recheck_after)
            logger.info("created ConfigMap %s/%s", namespace, cm_name)
            self._event(widget, "Normal", "Created", "Create", f"created ConfigMap {cm_name}")
            await self._read_back(self.config_maps, created)
            await self._record_status(widget, cm_name)
            return None

        wanted_owners = desired["metadata"]["ownerReferences"]
        if (
            current.get("data") != desired["data"]
            or current["metadata"].get("ownerReferences") != wanted_owners
        ):
            # The whole object at the cached resourceVersion, as controller-runtime's
            # Update: a merge patch of ``data`` would leave a key someone added in place.
            # A 409 from a stale cache is requeued quietly, anything else (5xx, a timeout)
            # retried with backoff.
            metadata = {**current["metadata"], "ownerReferences": wanted_owners}
            written = await self._config_map_api.update(
                {**current, "data": desired["data"], "metadata": metadata}, namespace
            )
            logger.info("updated ConfigMap %s/%s", namespace, cm_name)
            self._event(widget, "Normal", "Updated", "Update", f"updated ConfigMap {cm_name}")
            await self._read_back(self.config_maps, written)
        await self._record_status(widget, cm_name)
        return None

    async def _clean_up(self, widget: Widget) -> None:
        """The finalizer's cleanup: delete the Widget's ConfigMap (in a cluster the
        garbage collector would too; an operator holding resources outside the cluster
        releases them here)."""
        meta = widget.metadata
        assert meta.name is not None
        cm_name = config_map_name(meta.name)
        if await self._delete_config_map(meta.namespace or "default", cm_name):
            self._event(widget, "Normal", "Deleted", "Delete", f"deleted ConfigMap {cm_name}")

    async def _delete_config_map(self, namespace: str, cm_name: str) -> bool:
        """Delete our ConfigMap ``namespace/cm_name`` if the cache holds it."""
        if self.config_maps.lister().get(cm_name, namespace) is None:
            return False
        with contextlib.suppress(NotFound):
            await self._config_map_api.delete(cm_name, namespace)
        logger.info("deleted ConfigMap %s/%s", namespace, cm_name)
        return True

    def _event(self, widget: Widget, type_: EventType, reason: str, action: str, note: str) -> None:
        if self.recorder is not None:
            self.recorder.event(widget, type=type_, reason=reason, action=action, note=note)

    async def _read_back(self, informer: SharedIndexInformer, written: Any) -> None:
        """Wait until ``informer``'s cache has applied ``written`` (what a write returned),
        so that the next reconcile reads it back rather than the state before it."""
        rv = written["metadata"]["resourceVersion"]
        if not await informer.wait_for_resource_version(rv, timeout=self._read_back_timeout):
            logger.warning("the cache has not shown resourceVersion %s yet; going on", rv)

    async def _record_status(self, widget: Widget, cm_name: str) -> None:
        """Write the Widget's status when it is not already what this reconcile did.

        The status subresource changes only ``status`` (a stale spec in the request could
        not undo a user's edit) and does not bump ``generation``, so the controller's
        ``generation_changed`` predicate keeps this write from waking another reconcile.
        """
        meta = widget.metadata
        assert meta.name is not None
        wanted = WidgetStatus(observedGeneration=meta.generation, configMap=cm_name)
        if widget.status == wanted:
            return
        written = await self._widget_api.patch(
            meta.name,
            {"status": wanted.model_dump(by_alias=True)},
            meta.namespace,
            subresource="status",
        )
        logger.info("recorded status of Widget %s/%s", meta.namespace, meta.name)
        await self._read_back(self.widgets, written)


def build_manager(
    client: Client,
    recorder: EventRecorder,
    *,
    leader_election: LeaderElection | None = None,
    shard: ShardRing | None = None,
    health_address: str | None = None,
    webhook: WebhookOptions | None = None,
    **options: Any,
) -> tuple[Manager, WidgetOperator]:
    """The operator on a :class:`~aioinformer.operator.manager.Manager`: the manager owns the
    informers and runs the controller once the caches are warm (and, with
    ``leader_election``, only while this replica leads; with ``shard``, on this
    replica's share of the Widgets). ``recorder`` is run by the caller around the
    manager, so it flushes the last Events after the controller has drained. With
    ``webhook``, the manager serves the validating webhook too. ``options`` go to
    :class:`WidgetOperator`."""
    manager = Manager(
        client,
        leader_election=leader_election,
        shard=shard,
        health_address=health_address,
        webhook=webhook,
    )
    if webhook is not None:
        add_webhooks(manager.webhooks)
    labels = shard.labels if shard is not None else None
    operator = WidgetOperator(client, manager, labels=labels, recorder=recorder, **options)
    manager.add(operator.controller)
    return manager, operator


def widget_ring(identity: str, *, lease_duration: float = 15.0) -> ShardRing:
    """The ring the Widgets are sharded over: Widgets by their own key, their ConfigMaps
    with the Widget that controls them."""
    return ShardRing(
        name=OPERATOR,
        namespace=os.environ.get("POD_NAMESPACE", "default"),
        resources=(ShardedResource(WIDGETS, controlled=("v1/configmaps",)),),
        identity=identity,
        lease_duration=lease_duration,
        renew_deadline=lease_duration * 2 / 3,
        retry_period=lease_duration / 6,
    )


def widget(name: str, greeting: str, *, size: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"greeting": greeting, "size": size},
    }


def widget_status(server: FakeAPIServer, name: str) -> dict[str, Any]:
    """The status the operator recorded on Widget ``name`` (``{}`` before it did)."""
    status: dict[str, Any] = server.get(WIDGETS, "default", name).get("status", {})
    return status


def managed_config_maps(server: FakeAPIServer) -> dict[str, dict[str, str]]:
    """The managed ConfigMaps on the server, by name, with their data."""
    return {
        obj["metadata"]["name"]: obj.get("data", {})
        for obj in server.objects("configmaps", "default")
        if obj["metadata"].get("labels", {}).get(MANAGED_BY) == OPERATOR
    }


def widget_names(server: FakeAPIServer) -> list[str]:
    """The names of the Widgets on the server."""
    return sorted(obj["metadata"]["name"] for obj in server.objects(WIDGETS, "default"))


def recorded_events(server: FakeAPIServer) -> list[tuple[str, str, str, int]]:
    """The Events the operator wrote: (regarding name, reason, note, count), sorted."""
    return sorted(
        (
            event["regarding"]["name"],
            event["reason"],
            event.get("note", ""),
            (event.get("series") or {}).get("count", 1),
        )
        for event in server.objects("events.k8s.io/v1/events", "default")
        if event.get("reportingController") == REPORTING_CONTROLLER
    )


async def demo() -> None:
    """The operator against the fake API server, driven through a few changes."""
    async with FakeAPIServer() as server, server.client() as client:
        server.register_crd(GROUP, VERSION, "widgets", "Widget", namespaced=True)
        server.create(widget("hello", "Hello"))
        server.create(widget("bye", "Goodbye", size=2))

        recorder = EventRecorder(client, reporting_controller=REPORTING_CONTROLLER)
        webhook = WebhookOptions(address="127.0.0.1:0", self_signed=("127.0.0.1",))
        manager, operator = build_manager(client, recorder, webhook=webhook)
        async with recorder, manager:
            await eventually(lambda: len(managed_config_maps(server)) == 2, timeout=10)
            print("created:", managed_config_maps(server))

            # The webhook's configuration, as `aioinformer webhook manifests` writes it.
            url = f"https://{manager.webhooks.address}"
            (configuration,) = webhook_manifests(manager, url=url)
            await client.resource(
                "admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
            ).create(configuration)
            try:
                await client.resource(WIDGETS, "default").create(widget("huge", "Hi", size=50))
            except Forbidden as refused:
                print("refused by the webhook:", refused.message)
            await eventually(
                lambda: widget_status(server, "hello").get("configMap") is not None, timeout=10
            )
            print("status:", widget_status(server, "hello"))
            print("finalizers:", server.get(WIDGETS, "default", "hello")["metadata"]["finalizers"])

            server.patch(WIDGETS, "default", "hello", {"spec": {"greeting": "Hello, world"}})
            await eventually(
                lambda: managed_config_maps(server)["hello-config"]["greeting"] == "Hello, world",
                timeout=10,
            )
            print("widget edited:", managed_config_maps(server)["hello-config"])

            hand_edit = {"data": {"size": "99", "note": "by hand"}}
            server.patch("configmaps", "default", "bye-config", hand_edit)
            await eventually(
                lambda: (
                    managed_config_maps(server)["bye-config"]
                    == {"greeting": "Goodbye", "size": "2"}
                ),
                timeout=10,
            )
            print("ConfigMap edited by hand, repaired:", managed_config_maps(server)["bye-config"])

            server.delete("configmaps", "default", "hello-config")
            await eventually(lambda: "hello-config" in managed_config_maps(server), timeout=10)
            print("ConfigMap deleted by hand, recreated:", sorted(managed_config_maps(server)))

            # The finalizer holds the Widget until the operator has cleaned up after it.
            server.delete(WIDGETS, "default", "bye")
            await eventually(lambda: "bye" not in widget_names(server), timeout=10)
            print("widget deleted, after cleanup:", sorted(managed_config_maps(server)))

        stats = operator.controller.statistics()
        print(f"reconciles: {stats.reconciles}, failures: {stats.failures}")
        for event in recorded_events(server):
            print("event:", event)


def handled_by(server: FakeAPIServer) -> dict[str, tuple[str, str]]:
    """Each Widget's shard, and its ConfigMap's (they go together), by Widget name."""
    label = widget_ring("x").shard_label
    config_maps = {
        obj["metadata"]["name"]: obj["metadata"].get("labels", {}).get(label, "")
        for obj in server.objects("configmaps", "default")
    }
    return {
        obj["metadata"]["name"]: (
            obj["metadata"].get("labels", {}).get(label, ""),
            config_maps.get(config_map_name(obj["metadata"]["name"]), ""),
        )
        for obj in server.objects(WIDGETS, "default")
    }


def shared_out(server: FakeAPIServer, replicas: set[str]) -> bool:
    """Every Widget has its ConfigMap and status, on one shard of ``replicas`` with it,
    and every replica has some."""
    shards = handled_by(server)
    return (
        {widget for widget, _ in shards.values()} == replicas
        and all(widget == config_map for widget, config_map in shards.values())
        and all(widget_status(server, name).get("configMap") for name in shards)
    )


def per_replica(server: FakeAPIServer) -> str:
    counts: dict[str, int] = {}
    for shard, _ in handled_by(server).values():
        counts[shard] = counts.get(shard, 0) + 1
    return ", ".join(f"{shard}: {counts[shard]}" for shard in sorted(counts))


async def sharded_demo() -> None:
    """Three replicas share twelve Widgets; one stops and the others take its share."""
    async with FakeAPIServer() as server, server.client() as client:
        server.register_crd(GROUP, VERSION, "widgets", "Widget", namespaced=True)
        for index in range(12):
            server.create(widget(f"w{index}", f"Hello {index}"))
        recorder = EventRecorder(client, reporting_controller=REPORTING_CONTROLLER)
        async with recorder, contextlib.AsyncExitStack() as stack:
            managers = {}
            for identity in ("a", "b", "c"):
                manager, _ = build_manager(
                    client, recorder, shard=widget_ring(identity, lease_duration=3.0)
                )
                managers[identity] = await stack.enter_async_context(manager)
            await eventually(lambda: shared_out(server, {"a", "b", "c"}), timeout=20)
            print("widgets per replica:", per_replica(server))
            print("each ConfigMap on its Widget's replica:", len(managed_config_maps(server)))
            moved = sorted(name for name, (shard, _) in handled_by(server).items() if shard == "b")
            managers["b"].stop()  # as on SIGTERM: its Lease is released
            await eventually(lambda: shared_out(server, {"a", "c"}), timeout=20)
            print("b stopped; widgets per replica:", per_replica(server))
            edited = moved[0]
            server.patch(WIDGETS, "default", edited, {"spec": {"greeting": "moved"}})
            await eventually(
                lambda: managed_config_maps(server)[config_map_name(edited)]["greeting"] == "moved",
                timeout=10,
            )
            print(f"{edited} (was b's) edited; its new replica updated its ConfigMap:", end=" ")
            print(handled_by(server)[edited])


@contextlib.asynccontextmanager
async def on_cluster() -> AsyncIterator[Manager]:
    """The operator against the cluster ``Client.from_env()`` finds, with leader election
    on the Lease ``widget-operator`` in ``$POD_NAMESPACE`` and probes on
    ``$HEALTH_ADDRESS`` (default ``:8081``)."""
    async with Client.from_env() as client:
        recorder = EventRecorder(client, reporting_controller=REPORTING_CONTROLLER)
        namespace = os.environ.get("POD_NAMESPACE", "default")
        cert_dir = os.environ.get("WEBHOOK_CERT_DIR")
        manager, _ = build_manager(
            client,
            recorder,
            leader_election=LeaderElection(lease_name=OPERATOR, lease_namespace=namespace),
            health_address=os.environ.get("HEALTH_ADDRESS", ":8081"),
            webhook=WebhookOptions(cert_dir=cert_dir) if cert_dir else None,
        )
        async with recorder:
            yield manager


def main(argv: list[str]) -> int:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("  [%(name)s] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    if "--cluster" in argv:
        return Manager.main(on_cluster)
    asyncio.run(sharded_demo() if "--sharded" in argv else demo())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
