"""A loopback fake kube-apiserver on ``aiohttp.web``, faithful where informers look.

Role: the real client talks to it over real HTTP, so tests (ours and users') exercise
exactly the code that talks to a cluster. Input is HTTP requests on 127.0.0.1 and the
test's direct calls (``create``, ``compact``, fault injection); output is what
kube-apiserver answers: JSON objects, ``Status`` failures with the same codes, reasons and
details, LIST pages, and watch streams of chunked JSON lines.

Semantics served (see :class:`FakeAPIServer` for the test-facing API):

* one global resourceVersion counter; ``uid``, ``creationTimestamp`` and
  ``managedFields`` (one ``Update`` entry per field manager, named from the User-Agent)
  set by the server, and ``generation`` for the kinds that have one (pods, workloads,
  custom resources; not ConfigMaps, Secrets or Namespaces); finalizers hold a deleted
  object until they are cleared;
* refusals as kube-apiserver v1.36 words them: 400 ``BadRequest`` for a body that is not
  JSON, is of another kind, names another object than the URL (PUT), or has a field of
  the wrong type (a non-string label value, ConfigMap ``data`` that is not a map of
  strings, a port given as a string); 422 ``Invalid`` with a ``FieldValueInvalid`` cause
  for a name that is not a DNS-1123 subdomain (a label for namespaces) or an invalid
  label key or value, ``FieldValueRequired`` for a missing name, and the causes of an
  invalid spec of a Pod, workload, Job, Service, ConfigMap or Secret (see
  :class:`FakeAPIServer`); 404 ``NotFound`` (``namespaces "x" not
  found``) for a create in a namespace that does not exist, 403 for one being deleted;
* LIST with ``limit``/``continue`` (pages of one consistent snapshot; a token whose
  version was compacted answers 410 ``Expired``), ``resourceVersion`` and
  ``resourceVersionMatch`` (unset = latest, ``0`` = any, ``NotOlderThan``, ``Exact``; a
  version the server has not reached answers 504 ``Timeout`` with cause
  ``ResourceVersionTooLarge``; an ``Exact`` version older than the history window
  answers 410 ``Expired``), ``labelSelector`` and ``fieldSelector``;
* a history window like kube-apiserver's watch cache: it starts at the resourceVersion
  the server started serving at (the objects stored before are there, their history is
  not) and holds the last ``history_size`` events after it; ``compact()`` and a
  restart that resets the history move its start to the newest version;
* WATCH from a resourceVersion: a 200 stream of JSON lines; a version older than the
  history window gets, as from v1.36.2, HTTP 200 and one ``ERROR`` event carrying the 410
  ``Expired`` Status (``too old resource version: 1 (216)``), then the end of the stream
  (or, with ``expired_watch="status"``, HTTP 410 on open); ``timeoutSeconds`` ends the
  stream cleanly; ``allowWatchBookmarks`` adds a BOOKMARK every ``bookmark_interval``;
  ``sendInitialEvents=true`` sends the state as ADDED events then the
  ``k8s.io/initial-events-end`` BOOKMARK; an update that moves an object into or out of a
  watch's selectors arrives as ADDED or DELETED;
* sharded LIST and WATCH (KEP-5866) with ``feature_gates={"ShardedListAndWatch": True}``,
  as kube-apiserver v1.36 serves them behind that alpha gate: ``shardSelector`` keeps
  the objects whose FNV-1a 64 hash of ``metadata.uid`` (or ``metadata.namespace``) falls
  in one of its ranges, on every page of a LIST (typed or ``PartialObjectMetadataList``;
  each echoes the normalised selector as ``metadata.shardInfo.selector``, none gives
  ``remainingItemCount``) and on a watch, initial events included; a selector that does
  not parse answers 500 ``InternalError`` with the parser's message. With the gate off
  (the default) the parameter is ignored, as kube-apiserver ignores it;
* streaming lists compressed as kube-apiserver 1.37 compresses them, one gzip member per
  event, with ``watch_list_compression=True``;
* create (409 ``AlreadyExists``), update with a resourceVersion precondition (409
  ``Conflict``), JSON merge, JSON and strategic merge patch, delete answering a
  ``Success`` Status; the ``status`` subresource (writes there change only ``status``,
  writes to the main resource never change it) and the ``scale`` subresource of
  deployments, replica sets, stateful sets and CRDs registered with it (an
  ``autoscaling/v1`` Scale; writes change only ``spec.replicas``);
* metadata-only answers negotiated from ``Accept`` as kube-apiserver does:
  ``as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`` turns a LIST into a
  ``PartialObjectMetadataList`` whose items carry kind and apiVersion,
  ``as=PartialObjectMetadata`` turns a GET, a write's answer and every watch event's
  object (bookmarks included) into a ``PartialObjectMetadata``; a list asked for as an
  object, or an object as a list, answers 406 ``NotAcceptable`` (a watch asked for as a
  list gets the full objects, as the real server's failed per-event conversion does);
* discovery (``/api``, ``/api/v1``, ``/apis``, ``/apis/{group}``,
  ``/apis/{group}/{version}``, and the aggregated ``apidiscovery.k8s.io/v2`` documents
  of ``/api`` and ``/apis`` for a client that asks for them) and ``/version``, built-ins
  and runtime-registered CRDs;
* ``apiextensions.k8s.io/v1`` CustomResourceDefinitions (``crd``, ``crds``): creating one
  validates it (422 ``Invalid`` with kube-apiserver's causes), defaults it, writes its
  ``Established`` status and serves its served versions at once; an update changes the
  versions served; deleting one holds it ``Terminating`` while its objects are deleted
  (those with finalizers until they are cleared), then ends the resource's watches and
  stops serving it (see ``_crds``); each version needs a structural
  ``openAPIV3Schema``, by which every write of a custom object is pruned, defaulted and
  validated with kube-apiserver's 422 causes (see ``_schema``; the unknown fields
  pruned are refused under ``fieldValidation=Strict`` and answered as ``Warning``
  headers under ``Warn``, the default; CEL rules are not evaluated); with
  ``conversion.strategy: Webhook`` the other versions are converted to and from the
  storage version by the definition's webhook over HTTPS (see ``_converter`` and
  Conversion webhooks in :class:`FakeAPIServer`);
* admission webhooks: ``admissionregistration.k8s.io/v1``
  ValidatingWebhookConfigurations and MutatingWebhookConfigurations, validated (422 with
  kube-apiserver's causes) and defaulted, whose webhooks are called over HTTPS on every
  create, update, patch and delete over HTTP, as kube-apiserver calls them (mutating by
  configuration name, each JSONPatch applied, then the object's validation, then the
  validating webhooks; rules, selectors, matchPolicy, failurePolicy, timeoutSeconds;
  ``reinvocationPolicy: IfNeeded``; denials, call failures and ``Warning`` headers in
  its words; see ``_admission``), and
  ``?dryRun=All`` on those writes: admitted (and converted), answered, nothing stored;
  ``/openapi/v3`` documents without schemas, whose PATCH operations take
  ``fieldValidation``, so kubectl's ``create -f`` and ``apply`` validate on the server;
* protobuf request bodies (``application/vnd.kubernetes.protobuf``, what kubectl's
  generators send: ``create configmap``, ``secret``, ``namespace``, ``serviceaccount``,
  ``deployment``, ``service``, ``job``, ``cronjob``, ``ingress``) decoded for those
  kinds and for the other workloads, Endpoints, Leases and Events client-go programs
  write; another kind, or a field the fake does not decode, answers 415
  ``UnsupportedMediaType`` saying to send JSON; answers are JSON;
* bearer-token authentication (401) and per-token rules (403 with kube-apiserver's
  message); HTTPS with ``tls=True``, from a CA of the server's own that its kubeconfig
  carries, so kubectl (which sends no token over plain HTTP) authenticates.

Ordering: every write, over HTTP or direct, takes the next resourceVersion and reaches
every open watch before the call returns; watch lines go out in resourceVersion order.

Layout: this module is the façade, the lifecycle and the test-facing API. Requests are
dispatched by ``_routes`` (authn/authz, verbs, subresources) with the helpers of
``_requests``; a create, update, patch or delete is made into admitted, converted store
writes by ``_writes`` (whose ``patch_object`` the direct ``patch`` uses too); kubeconfig
files are written and removed by ``_kubeconfig``; watches are streamed by
``_watchstream``; faults are armed and logged in ``_faults``; discovery and OpenAPI
documents come from ``_apiserver``'s ``discovery`` and ``openapi``, protobuf bodies are
decoded by ``_protobuf``; the socket and timers live in ``_listener``, the TLS
certificates come from ``_tls``; objects, history and watchers in ``_store`` and
``_objects``.

Task model: one ``aiohttp`` server on the caller's event loop. Watch handlers wait on
their watcher's buffer; a write fans out synchronously to every watcher (see
``_store``), and each handler writes whatever accumulated in one ``write()`` call, so a
burst of events costs one syscall per batch, not per event (a compressed streaming list
writes each event's gzip member on its own, as kube-apiserver 1.37 may). Leaving ``async with`` ends
every watch, cancels the server's own timers and closes the listening socket.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Final

import orjson

from aioinformer._apiserver.lifecycle import Server
from aioinformer._apiserver.objects import Entry, ResourceType, StatusError, status_body
from aioinformer._kernel.clock import Clock, default_clock
from aioinformer._kernel.runner import finish_regardless
from aioinformer._objects.view import json_default
from aioinformer.client._write_args import check_fake_patch_arguments, object_body
from aioinformer.errors import BadRequest, NotFound, api_error_from_status
from aioinformer.testing._converter import CONVERSION_TIMEOUT, Conversions
from aioinformer.testing._crds import Definitions
from aioinformer.testing._faults import FaultPlan, FaultRecord, Faults
from aioinformer.testing._kubeconfig import Kubeconfigs, kubeconfig
from aioinformer.testing._listener import Listener
from aioinformer.testing._requests import prepare_new
from aioinformer.testing._resources import CRD_TYPE, ResourceRegistry
from aioinformer.testing._routes import Account, RequestRecord, Router, Rule
from aioinformer.testing._routes import feature_gates as known_gates
from aioinformer.testing._store import Store
from aioinformer.testing._tls import make_server_tls
from aioinformer.testing._watchstream import ExpiredWatch, WatchListSupport, WatchStreams
from aioinformer.testing._webhook_configs import WEBHOOK_CONFIGURATION_TYPES, WebhookConfigurations
from aioinformer.testing._writes import patch_object

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator, Mapping

    from pydantic import BaseModel

    from aioinformer.client import Client

__all__ = [
    "ADMIN_TOKEN",
    "FakeAPIServer",
    "FaultRecord",
    "Faults",
    "RequestRecord",
    "Rule",
    "WatchListSupport",
]

ADMIN_TOKEN: Final = "aioinformer-fake-admin-token"
"""The bearer token of the fake server's all-powerful user (``system:admin``)."""

_DEFAULT_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")
_PATCH_CONTENT_TYPES: Final = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}


class FakeAPIServer(Server):
    """A kube-apiserver double listening on 127.0.0.1 (see the module docstring).

    Lifecycle::

        async with FakeAPIServer() as server:
            server.url                  # "http://127.0.0.1:PORT" ("https://" with tls=True)
            async with server.client() as client: ...   # aioinformer Client, admin token
            server.kubeconfig_path()    # a kubeconfig file for it (removed on exit)

    State, bypassing HTTP (synchronous; watches see the changes at once)::

        server.create(obj)                      # -> stored copy; AlreadyExists
        server.update(obj)                      # RV precondition when set; Conflict
        server.patch("pods", "default", "x", {"metadata": {"labels": {"a": "b"}}})
        server.delete("pods", "default", "x")   # -> last state
        server.get("pods", "default", "x")      # -> copy, NotFound
        server.objects("pods")                  # the truth, for convergence assertions
        server.resource_version                 # the global counter
        server.register_crd("example.com", "v1", "widgets", "Widget", namespaced=True)
        server.create(crd)                      # a CustomResourceDefinition: served at once
        server.delete("customresourcedefinitions", None, "widgets.example.com")
        server.compact()                        # older versions now answer 410
        await server.restart(reset_history=True)

    Resources are named by plural (``"pods"``), ``"plural.group"``
    (``"deployments.apps"``) or ``"group/version/plural"`` (``"apps/v1/deployments"``,
    ``"v1/pods"``); a name the server does not serve raises
    :class:`aioinformer.errors.UnknownResourceError`. Direct calls are admitted and
    refused as HTTP requests are, raising the typed :class:`aioinformer.errors.ApiError`
    subclasses (``NotFound``, ``AlreadyExists``, ``Conflict``, ``BadRequest``,
    ``UnprocessableEntity`` for a 422 ``Invalid``).

    Namespaces: ``default``, ``kube-system``, ``kube-public`` and ``kube-node-lease``
    exist from the start, as on a cluster; a create in any other namespace answers 404
    until it exists: ``server.create_namespace("team-a")`` (or create a ``Namespace``
    object, over HTTP or directly). ``require_namespaces=False`` (also
    ``@pytest.mark.fake_apiserver(require_namespaces=False)``) turns the check off for
    tests where namespaces are incidental. Deleting a namespace refuses creates in it
    from then on (403 while it has finalizers, 404 once gone) but does not delete its
    contents.

    History: like a freshly started kube-apiserver, whose watch cache begins at the
    resourceVersion it read its storage at, the server keeps no history from before it
    started serving. Objects stored before :meth:`start` (seeded directly, and the
    default namespaces) are there and LIST shows them, but a WATCH from a version older
    than the one the server started at gets one ``ERROR`` event with the 410 ``Expired``
    Status (``too old resource version: 3 (7)``) in a 200 stream that then ends, and an
    ``Exact`` LIST answers 410 (``The resourceVersion for
    the provided list is too old.``: kube-apiserver passes that LIST on to etcd, which
    answers so once compacted past it; the fake keeps one history for both); a watch
    from the start version or later replays what happened since. LIST with
    ``resourceVersion`` unset, ``"0"`` or ``NotOlderThan``, and watches without a
    version, at ``"0"`` or with ``sendInitialEvents``, read the current state and are
    never too old. After the start the window holds the last ``history_size`` events;
    ``compact()`` forgets all of it and ``restart(reset_history=True)`` starts it again
    at the restart, as a restarted kube-apiserver does. ``keep_history_before_start=True``
    keeps every event since the server was created instead, for tests that replay
    seeded objects through a watch from an early version (a convenience a real cluster
    lacks).

    Served from a thread of its own, for code that runs no event loop to serve it on (a
    sync test, an app driven by Starlette's ``TestClient``):
    :class:`~aioinformer.testing.ThreadedFakeAPIServer`, the same options and methods,
    blocking.

    Faults (:class:`Faults`) are under :attr:`faults`, e.g.
    ``server.faults.fail_next(2, status=429)``, ``server.faults.freeze_watches()`` to
    silence every open watch as a dead TCP path would, or
    ``server.faults.drop_watch_events(1, resource="pods")`` to lose the next deletion's
    watch event as a faulty watch cache does; each fault that took effect is in
    ``server.faults.log``. Every request is in :attr:`request_log`.

    Authentication: every request needs ``Authorization: Bearer <token>``; ``ADMIN_TOKEN``
    may do anything, :meth:`add_token` adds users limited by :class:`Rule` lists.

    Options (keyword-only): ``history_size`` events kept for watches from an older
    version (10 000); ``keep_history_before_start`` (``False``: the history starts when
    the server starts serving, see above); ``bookmark_interval`` seconds between
    BOOKMARKs on an idle watch that allows them (60.0, kube-apiserver's cadence; tests
    that want them sooner pass less); ``clock`` for bookmark, watch-timeout, latency and
    reconnect timers (the event loop's by default; pass a ``FakeClock`` to drive them);
    ``too_large_rv_wait`` seconds a read at a future resourceVersion waits for it before
    answering 504 (0; the real server waits up to 3); ``watch_list``, how a watch with
    ``sendInitialEvents`` is answered: ``"supported"`` (the default, as kube-apiserver
    1.34+ does), ``"forbidden"`` (422 ``Invalid``, as a server with the WatchList feature
    gate off does) or ``"ignored"`` (``sendInitialEvents`` and ``resourceVersionMatch``
    dropped, as a proxy or aggregated server that does not know them: the watch carries
    on as a plain one, with no initial-events-end bookmark). It may be changed between
    watches, as may ``expired_watch`` (``"error_event"``, the default: a watch from a
    compacted resourceVersion gets a 200 stream with one ERROR event carrying the 410, as
    kube-apiserver v1.36.2 answers it; ``"status"``: HTTP 410 on the request, for tests of
    a client's handling of that answer),
    ``watch_list_compression`` (``False``), ``require_namespaces`` (``True``) and
    ``validate_specs`` (``True``: see Spec validation below); ``feature_gates``, the
    kube-apiserver feature gates to turn on or off by name (see Feature gates below;
    fixed for the server's life, and read back, every known gate, from
    :attr:`feature_gates`);
    ``port`` (0: a free one, kept across restarts); ``tls`` (``False``): serve HTTPS with
    a certificate from a CA made for this server (``ca_pem``; needs ``trustme``), which
    :meth:`client` and :meth:`kubeconfig_path` trust, so kubectl authenticates with the
    kubeconfig's token; ``conversion_timeout`` seconds a conversion webhook call may take
    (30.0, kube-apiserver's; also settable later) and ``webhook_services``, where a
    webhook's ``service`` reference connects (see Webhook services below).

    ``watch_list_compression=True`` compresses streaming lists as kube-apiserver 1.37 does
    (its ``WatchListCompression`` feature gate, beta and on by default there): a watch
    that allows bookmarks and sends initial events (``sendInitialEvents=true``, or a
    plain watch from an unset or ``"0"`` resourceVersion, which kube-apiserver turns into
    a streaming list), sent with an ``Accept-Encoding`` that names ``gzip``, is answered
    ``Content-Encoding: gzip`` with every line, live events after the initial-events-end
    bookmark included, a gzip member of its own, written on its own. A client that reads
    only a body's first gzip member (aiohttp before 3.14 does) gets the first event and
    then silence. Watches from a resourceVersion, and clients that do not accept gzip, are
    answered as before. Off by default: the fake answers as v1.36 does.

    Feature gates: one is known, ``"ShardedListAndWatch"`` (``False``, as kube-apiserver
    v1.36 has its alpha gate). On, a LIST or WATCH with ``shardSelector`` (KEP-5866,
    ``shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')``, see
    :mod:`aioinformer.shard_selector`) is served only the objects of that slice, with
    label and field selectors and the namespace applied too: every page of a LIST (the
    continue token does not carry the selector; each page applies the one its request
    sends) echoes it normalised as ``metadata.shardInfo.selector`` and gives no
    ``remainingItemCount``; a watch, streaming lists' initial events included, is sent
    the slice's events only; a selector that does not parse answers HTTP 500
    ``InternalError`` whose message is the parser's (``invalid shard selector: shard
    range start 0x8000000000000000 must be less than end 0x0000000000000000``). Off, the
    parameter is ignored, malformed or not, and no ``shardInfo`` is echoed. A gate the
    fake does not know raises ``ValueError`` naming it and the known gates, as
    kube-apiserver refuses to start with one.

    Spec validation: creates, updates and patches of the kinds users create most are
    refused as kube-apiserver v1.36 refuses them, with its field paths and messages (422
    ``Invalid``, one ``details.causes`` entry per error; ``Pod "web" is invalid:
    spec.containers: Required value``): a Pod's containers (and init containers) need a
    unique DNS-1123 ``name`` and an ``image``, ports 1..65535 and a known protocol; a
    Deployment, ReplicaSet, StatefulSet or DaemonSet needs a ``selector`` that matches its
    template's labels (```selector` does not match template `labels```), a valid pod
    template and ``replicas`` >= 0; a Job's template restarts ``OnFailure`` or ``Never``;
    a Service's ports need a valid ``port``, protocol and ``targetPort``, and unique
    names once there are two; ConfigMap and Secret keys are alphanumerics, ``-``, ``_``
    and ``.``. A port given as a string is the decoder's 400, as on the real server.
    What kube-apiserver defaults (a port's protocol, a pod's restart policy) is checked
    only when set, and not defaulted. ``validate_specs=False`` (also
    ``@pytest.mark.fake_apiserver(validate_specs=False)``) admits any spec, for tests
    that seed minimal objects; names, labels and namespaces are still checked.

    Conversion webhooks: a CustomResourceDefinition with ``spec.conversion.strategy:
    Webhook`` (validated as kube-apiserver validates it: ``webhookClientConfig`` with
    exactly one of an ``https`` ``url`` or a ``service``, ``conversionReviewVersions``
    naming ``v1`` or ``v1beta1``; 422 with its field paths otherwise) has its objects stored
    in the storage version. A create, update or patch in another version is admitted in that
    version (admission webhooks are sent it, or under ``matchPolicy: Equivalent`` the
    version their rule names, converted by the webhook), then converted to the storage
    version for the object's validation and the store (a dry run converts too, stores
    nothing), and answered converted back; a get, list, watch event, delete, write answer or
    ``scale`` in another version is converted from it (a LIST page's objects in one
    ConversionReview, each watch event in its own; the storage version is never sent;
    metadata-only gets and lists too, metadata-only watches not). The review
    (``apiextensions.k8s.io/v1``, or ``v1beta1`` when the definition prefers it) is POSTed
    to ``clientConfig.url`` with ``?timeout=30s``, trusting ``caBundle``; a ``service`` as
    in Webhook services below. The answer is checked as kube-apiserver checks it (the uid,
    ``Success``, the count, each object's apiVersion, kind, name, namespace and uid; other
    metadata restored but for labels and annotations). A failed conversion (the webhook
    down, hanging past ``conversion_timeout``, untrusted, answering garbage or something
    refused) answers a read with 500 ``InternalError``: ``Internal error occurred:
    conversion webhook for example.com/v1, Kind=Widget failed: Post
    "https://127.0.0.1:8443/convert?timeout=30s": dial tcp 127.0.0.1:8443: connect:
    connection refused``; a write it fails to convert for storage with a 500 of no reason
    and the bare message, nothing stored; a watch whose event fails to convert ends. The
    test's direct calls (``create``, ``objects``, ``patch``...) are not converted and see
    the stored fields. The HTTP session closes with the server.

    Webhook services: a webhook's ``clientConfig.service`` (namespace, name, port,
    path), admission or conversion alike, is called as
    ``https://<name>.<namespace>.svc:<port><path>``: the fake connects to the
    ``(host, port)`` ``webhook_services[(namespace, name)]`` gives when the
    service is listed there (the test may add to it while the server runs), else to
    127.0.0.1 at the reference's port; either way the certificate is checked for
    ``<name>.<namespace>.svc``.

    Caveats: a single process's double, not a conformance-tested server. Strategic merge
    patch merges lists by ``name``-like keys without schemas; server-side apply, the
    built-in admission plugins (but NamespaceLifecycle's 404), validating and mutating
    admission policies, webhooks' ``matchConditions``, admission of
    ``scale`` writes and of DELETE collections, validation of other kinds' specs and of
    fields beyond those above, defaulting, and garbage collection are not modelled; the
    test's direct writes skip admission and conversion, as writes to etcd do; a
    CustomResourceDefinition's CEL rules (``x-kubernetes-validations``) are not evaluated,
    and with ``strategy: None`` every version reads the stored object as is;
    ``validate_specs=False`` does not turn the definitions' own validation off. Answers
    are JSON only (no protobuf, YAML or ``Table``); protobuf bodies are decoded for
    ConfigMaps, Secrets, Namespaces and ServiceAccounts only; the OpenAPI documents carry
    no schemas (``kubectl explain`` finds nothing).
    """

    def __init__(
        self,
        *,
        history_size: int = 10_000,
        keep_history_before_start: bool = False,
        bookmark_interval: float = 60.0,
        clock: Clock | None = None,
        too_large_rv_wait: float = 0.0,
        watch_list: WatchListSupport = "supported",
        expired_watch: ExpiredWatch = "error_event",
        watch_list_compression: bool = False,
        require_namespaces: bool = True,
        validate_specs: bool = True,
        port: int = 0,
        tls: bool = False,
        feature_gates: Mapping[str, bool] | None = None,
        conversion_timeout: float = CONVERSION_TIMEOUT,
        webhook_services: Mapping[tuple[str, str], tuple[str, int]] | None = None,
    ) -> None:
        # Every known gate, on or off, read-only: kube-apiserver reads its gates at start.
        self.feature_gates: Mapping[str, bool] = known_gates(feature_gates)
        if watch_list not in ("supported", "forbidden", "ignored"):
            raise ValueError(
                f"watch_list must be 'supported', 'forbidden' or 'ignored', got {watch_list!r}"
            )
        if expired_watch not in ("status", "error_event"):
            raise ValueError(
                f"expired_watch must be 'status' or 'error_event', got {expired_watch!r}"
            )
        self.clock: Clock = clock if clock is not None else default_clock
        # Read by start(): whether the events before it stay in the history.
        self.keep_history_before_start = keep_history_before_start
        self.expired_watch: ExpiredWatch = expired_watch
        self.bookmark_interval = bookmark_interval
        self.watch_list: WatchListSupport = watch_list
        self.watch_list_compression = watch_list_compression
        self.too_large_rv_wait = too_large_rv_wait
        self._tls = make_server_tls() if tls else None
        self._listener = Listener(
            self,
            port=port,
            on_drop=self._abort_watches,
            ssl_context=self._tls.context if self._tls is not None else None,
        )
        plan = FaultPlan()
        self.faults = Faults(self._listener, plan)
        self.request_log: list[RequestRecord] = []
        self._store = Store(history_size=history_size)
        self._store.require_namespaces = require_namespaces
        self._store.validate_specs = validate_specs
        written = asyncio.Event()
        self._store.on_write = written.set
        self._store.loses_event = self.faults.loses
        self._registry = ResourceRegistry()
        self._store.controllers[CRD_TYPE.id] = Definitions(self._registry, self._store)
        for rt in WEBHOOK_CONFIGURATION_TYPES:
            self._store.controllers[rt.id] = WebhookConfigurations(rt)
        self._accounts: dict[str, Account] = {ADMIN_TOKEN: Account("system:admin", None)}
        # Where a webhook's service reference connects: (namespace, name) -> (host, port).
        # The test may add to it while the server runs.
        self.webhook_services: dict[tuple[str, str], tuple[str, int]] = dict(webhook_services or {})
        self._conversions = Conversions(
            self._store, timeout=conversion_timeout, services=self.webhook_services
        )
        self._streams = WatchStreams(
            self,
            store=self._store,
            plan=plan,
            faults=self.faults,
            conversions=self._conversions,
        )
        self.faults.attach_freezer(self._streams)
        self._router = Router(
            self,
            store=self._store,
            registry=self._registry,
            accounts=self._accounts,
            plan=plan,
            faults=self.faults,
            streams=self._streams,
            written=written,
            conversions=self._conversions,
        )
        self._kubeconfigs = Kubeconfigs()
        for namespace in _DEFAULT_NAMESPACES:
            self.create_namespace(namespace)

    # -- lifecycle -----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _serving(self) -> AsyncIterator[None]:
        """Serve from entry to exit (``async with``, ``run()`` and ``start()``/``close()``
        run it). The history starts here: watches and ``Exact`` reads at an older version
        answer 410, as a freshly started kube-apiserver's do (unless
        ``keep_history_before_start``). The exit ends every watch, stops timers, stops
        listening and removes kubeconfig files."""
        try:
            if not self.keep_history_before_start:
                self._store.compact()
            await self._listener.start(self._router.handle)
            yield
        finally:
            await finish_regardless(self._shut_down())

    async def _shut_down(self) -> None:
        self._streams.closing = True
        await self._listener.cancel_tasks()
        self._streams.close_all()
        await self._listener.cleanup()
        await self._conversions.close()
        self._kubeconfigs.remove_all()

    def _abort_watches(self) -> None:
        self._streams.abort_all()

    async def restart(self, *, reset_history: bool = True) -> None:
        """Simulate an API server restart: drop every connection and watch, then listen
        again. Objects survive (they live in etcd). With ``reset_history`` (the default)
        the history starts again at the restart, as a restarted kube-apiserver's watch
        cache does, so watches, ``Exact`` reads and continue tokens from before answer
        410 (``keep_history_before_start`` is about :meth:`start` only).
        ``reset_history=False`` keeps it, as when clients reconnect to another
        kube-apiserver of the control plane whose watch cache still holds their
        version."""
        await self._listener.stop_listening()
        if reset_history:
            self._store.compact()
        self.faults.record("restart", "", f"reset_history={reset_history}")
        await self._listener.start_listening()

    def __repr__(self) -> str:
        state = "listening" if self._listener.listening else "not listening"
        return (
            f"<FakeAPIServer {self.url} {state} rv={self._store.rv} "
            f"watches={self._streams.count()} history={len(self._store.history)}>"
        )

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1 (stable across restarts)."""
        return self._listener.port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, or ``https://127.0.0.1:PORT`` with ``tls=True``."""
        scheme = "https" if self._tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def conversion_timeout(self) -> float:
        """Seconds a conversion webhook call may take (see Conversion webhooks); it may
        be changed while the server runs."""
        return self._conversions.timeout

    @conversion_timeout.setter
    def conversion_timeout(self, seconds: float) -> None:
        self._conversions.timeout = seconds

    @property
    def ca_pem(self) -> bytes | None:
        """The PEM certificate of the CA that issued the server's certificate (``tls=True``;
        ``None`` over plain HTTP): what a client must trust. Made for this server alone."""
        return self._tls.ca_pem if self._tls is not None else None

    @property
    def require_namespaces(self) -> bool:
        """Whether a create in a namespace that does not exist is refused (404)."""
        return self._store.require_namespaces

    @require_namespaces.setter
    def require_namespaces(self, value: bool) -> None:
        self._store.require_namespaces = value

    @property
    def validate_specs(self) -> bool:
        """Whether writes of Pods, workloads, Jobs, Services, ConfigMaps and Secrets are
        refused (422 ``Invalid``) when their spec or keys are invalid."""
        return self._store.validate_specs

    @validate_specs.setter
    def validate_specs(self, value: bool) -> None:
        self._store.validate_specs = value

    @property
    def resource_version(self) -> str:
        """The newest resourceVersion, as the servers writes it."""
        return str(self._store.rv)

    def client(self, *, token: str = ADMIN_TOKEN) -> Client:
        """An :class:`aioinformer.client.Client` for this server (use ``async with``),
        trusting its CA when it serves TLS."""
        from aioinformer.client import Client
        from aioinformer.config import Config

        ca_data = self.ca_pem.decode() if self.ca_pem is not None else None
        return Client(Config(host=self.url, token=token, ca_data=ca_data))

    def kubeconfig_path(
        self, *, token: str = ADMIN_TOKEN, namespace: str = "default", path: str | None = None
    ) -> str:
        """Write a kubeconfig pointing at this server, with ``token`` for its user, to
        ``path`` (default: a new temporary file), readable by its owner only; return its
        path. The file is removed on exit. With ``tls=True`` it carries the server's CA as
        ``certificate-authority-data``, so kubectl (which sends no token over plain HTTP)
        and every other client verify the server and authenticate."""
        config = kubeconfig(self.url, self.ca_pem, token=token, namespace=namespace)
        return self._kubeconfigs.write(config, path)

    # -- resources -------------------------------------------------------------------------

    def register_crd(
        self,
        group: str,
        version: str,
        plural: str,
        kind: str,
        *,
        namespaced: bool = True,
        status_subresource: bool = True,
        scale_subresource: bool = False,
        singular: str | None = None,
        short_names: Iterable[str] = (),
    ) -> None:
        """Serve a custom resource from now on (discovery included), without a
        CustomResourceDefinition object: none is listed, and a definition of the same
        plural and group is refused as already served. Registering the same group,
        version and plural again replaces it.

        ``scale_subresource`` serves ``/scale`` with the usual paths: ``spec.replicas``,
        ``status.replicas`` and ``status.selector``. To serve a resource as a cluster
        does, with its definition's names, versions and scale paths, and to remove it
        again, :meth:`create` its CustomResourceDefinition and :meth:`delete` it.
        """
        if not group:
            raise ValueError("a custom resource needs an API group")
        self._registry.add(
            ResourceType(
                group,
                version,
                plural,
                kind,
                namespaced,
                singular or kind.lower(),
                tuple(short_names),
                status_subresource,
                scale_subresource=scale_subresource,
                generation=True,
            )
        )

    def resolve(self, resource: str) -> ResourceType:
        """The resource named ``pods``, ``deployments.apps`` or ``apps/v1/deployments``."""
        return self._registry.resolve(resource)

    # -- direct state access ---------------------------------------------------------------

    def create(self, obj: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
        """Store a new object as a POST would (status kept); return the stored copy.

        Admitted as a POST is: :class:`aioinformer.errors.NotFound` for a namespace that
        does not exist, :class:`aioinformer.errors.UnprocessableEntity` (422
        ``Invalid``) for an invalid name or label, :class:`aioinformer.errors.BadRequest`
        for a field of the wrong type, :class:`aioinformer.errors.AlreadyExists` for a
        taken name; :class:`aioinformer.errors.UnknownResourceError` for a kind the
        server does not serve. ``obj`` is one object, a mapping or a pydantic model, as
        ``ResourceClient.create`` takes it: anything else raises
        :class:`aioinformer.errors.NotAnObjectError`.
        """
        obj = object_body(obj, call="FakeAPIServer.create")
        rt = self._registry.for_object(obj)
        with _as_api_error():
            data = prepare_new(rt, orjson.loads(orjson.dumps(obj, default=json_default)), None)
            entry = self._store.create(rt, data)
        return _copy(rt, entry)

    def create_namespace(
        self, name: str, *, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Make sure namespace ``name`` exists (with ``labels`` when it is created here);
        return it. Idempotent, so shared fixtures may call it freely."""
        try:
            return self.get("namespaces", None, name)
        except NotFound:
            pass
        metadata: dict[str, Any] = {"name": name}
        if labels:
            metadata["labels"] = dict(labels)
        return self.create(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": metadata,
                "status": {"phase": "Active"},
            }
        )

    def update(
        self, obj: Mapping[str, Any] | BaseModel, *, subresource: str | None = None
    ) -> dict[str, Any]:
        """Replace an object as a PUT would; a set ``metadata.resourceVersion`` is a
        precondition (:class:`aioinformer.errors.Conflict`). ``obj`` is one object, as for
        :meth:`create`."""
        obj = object_body(obj, call="FakeAPIServer.update")
        rt = self._registry.for_object(obj)
        data = orjson.loads(orjson.dumps(obj, default=json_default))
        if not isinstance(data.get("metadata"), dict) or not data["metadata"].get("name"):
            raise BadRequest(
                status_body(400, "BadRequest", "the object to update has no metadata.name")
            )
        if rt.namespaced:
            data["metadata"].setdefault("namespace", "default")
        with _as_api_error():
            entry = self._store.update(rt, data, subresource=subresource)
        return _copy(rt, entry)

    def patch(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Apply a ``merge``, ``strategic`` or ``json`` patch; return the new object.

        The namespace comes before the name, as in :meth:`get` and :meth:`delete` (and
        unlike ``ResourceClient.patch``): a string where the patch body goes, or a
        mapping where the namespace or the name goes, raises
        :class:`aioinformer.errors.PatchArgumentsError` giving the call to write."""
        check_fake_patch_arguments(resource, namespace, name, patch)
        rt = self.resolve(resource)
        content_type = _PATCH_CONTENT_TYPES[patch_type]
        with _as_api_error():
            entry = patch_object(
                self._store,
                rt,
                namespace if rt.namespaced else None,
                name,
                patch,
                content_type,
                subresource,
            )
        return _copy(rt, entry)

    def delete(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        """Delete an object (mark it, if it has finalizers); return its last state."""
        rt = self.resolve(resource)
        with _as_api_error():
            entry = self._store.delete(rt, namespace if rt.namespaced else None, name)
        return _copy(rt, entry)

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        """A copy of one object; :class:`aioinformer.errors.NotFound` when absent."""
        rt = self.resolve(resource)
        with _as_api_error():
            entry = self._store.get(rt, namespace if rt.namespaced else None, name)
        return _copy(rt, entry)

    def objects(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of every object of ``resource`` (in ``namespace``), sorted by key."""
        rt = self.resolve(resource)
        result = []
        for entry in self._store.table(rt).ordered()[1]:
            if namespace is None or entry.namespace == namespace:
                result.append(_copy(rt, entry))
        return result

    def compact(self) -> None:
        """Forget all history: watches and exact reads at older versions answer 410."""
        self._store.compact()

    def add_token(
        self, token: str, *, user: str | None = None, rules: Iterable[Rule] | None = None
    ) -> None:
        """Accept ``token`` for ``user`` (default ``system:serviceaccount:default:<token>``),
        limited to ``rules`` (``None``: everything)."""
        name = user or f"system:serviceaccount:default:{token}"
        self._accounts[token] = Account(name, None if rules is None else tuple(rules))

    def remove_token(self, token: str) -> None:
        """Stop accepting ``token`` (its requests answer 401 from now on)."""
        self._accounts.pop(token, None)

    async def wait_for_watchers(
        self, count: int = 1, *, resource: str | None = None, timeout: float = 5.0
    ) -> None:
        """Wait (in real time, bounded) until ``count`` watches are open (on ``resource``)."""
        rt = self.resolve(resource) if resource is not None else None
        await self._streams.wait_for(count, rt=rt, timeout=timeout)

    @property
    def watch_count(self) -> int:
        """How many watch streams are open now."""
        return self._streams.count()


@contextlib.contextmanager
def _as_api_error() -> Iterator[None]:
    try:
        yield
    except StatusError as exc:
        raise api_error_from_status(exc.status) from None


def _copy(rt: ResourceType, entry: Entry) -> dict[str, Any]:
    """A private copy of a stored object, decoded from its stored encoding."""
    result: dict[str, Any] = orjson.loads(entry.full(rt))
    return result
