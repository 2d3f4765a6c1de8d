"""The public surface is explicit and small: the package root re-exports exactly the names
applications write (about 75, listed here), every public module lists a sorted ``__all__`` whose
names exist, and the module paths DESIGN.md names keep their names."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import aioinformer
import aioinformer.informer
import aioinformer.lister
import aioinformer.operator
import aioinformer.processor
from aioinformer._kernel.deprecation import MOVED_MODULES

PUBLIC_MODULES = sorted(
    name
    for _, name, _ in pkgutil.walk_packages(aioinformer.__path__, "aioinformer.")
    if not any(part.startswith("_") for part in name.split("."))
    and name not in {"aioinformer.testing.plugin", "aioinformer.cli"}
    and name not in MOVED_MODULES  # shims of moved modules, tested in test_deprecated_names
)

TOP_LEVEL = [
    "AioinformerError",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "CacheAudit",
    "CacheMode",
    "CacheSyncError",
    "Client",
    "Clock",
    "Config",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "Controller",
    "DelayingQueue",
    "DeletedFinalStateUnknown",
    "EventHandler",
    "EventStream",
    "FIFOClosedError",
    "Forbidden",
    "GVR",
    "Gone",
    "HandlerRegistration",
    "HandlerStatistics",
    "IndexFunc",
    "Indexer",
    "Indexers",
    "InformerStatistics",
    "InformerStoppedError",
    "InvalidObjectError",
    "KeyFunc",
    "KeyFuncError",
    "KubeObject",
    "LeaderElector",
    "LeadershipLost",
    "LeaseLock",
    "ListOptions",
    "Lister",
    "ListerWatcher",
    "NAMESPACE_INDEX",
    "NotFound",
    "ObjectList",
    "ObjectMeta",
    "ObjectView",
    "PatchType",
    "QueueEmpty",
    "RateLimiter",
    "RateLimitingQueue",
    "ReadOnlyObjectError",
    "Reconcile",
    "ReflectorOptions",
    "Requeue",
    "ResourceClient",
    "ResourceInfo",
    "SelectorError",
    "ServerError",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "ShutDown",
    "State",
    "Status",
    "TLSVerificationError",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "UnknownResourceError",
    "UnprocessableEntity",
    "WatchError",
    "WatchEvent",
    "WatchTimeout",
    "WorkQueue",
    "default_controller_rate_limiter",
    "enqueue_owner",
    "json_default",
    "load_config",
    "load_incluster_config",
    "load_kube_config",
    "meta_namespace_key",
    "namespace_index_func",
    "set_metrics_provider",
    "split_meta_namespace_key",
    "strip_managed_fields",
]

# The module paths DESIGN.md §2-§3 gives users, and what each must keep exporting.
DESIGN_PATHS = {
    "aioinformer.errors": [
        "ApiError",
        "CacheReadTimeout",
        "CacheScopeError",
        "Conflict",
        "Forbidden",
        "Gone",
        "NotAnObjectError",
        "NotFound",
        "PatchArgumentsError",
        "ResourceExpired",
        "ServerError",
        "TooManyRequests",
    ],
    "aioinformer.models": ["KubeObject", "ListMeta", "ObjectMeta", "Status"],
    "aioinformer.listwatch": ["ListOptions", "ListerWatcher", "ObjectList", "WatchEvent"],
    "aioinformer.config": ["Config", "load_incluster_config", "load_kube_config"],
    "aioinformer.client": ["GVR", "Client", "ResourceClient", "RestClientMetricsProvider"],
    "aioinformer.indexer": [
        "NAMESPACE_INDEX",
        "Indexer",
        "meta_namespace_key",
        "namespace_index_func",
        "split_meta_namespace_key",
    ],
    "aioinformer.delta_fifo": [
        "DeletedFinalStateUnknown",
        "Delta",
        "DeltaFIFO",
        "DeltaType",
        "Deltas",
        "FIFOClosedError",
        "Requeue",
    ],
    "aioinformer.reflector": ["ListOptions", "ListerWatcher", "Reflector"],
    "aioinformer.processor": ["ProcessorListener", "SharedProcessor"],
    "aioinformer.informer": ["EventHandler", "HandlerRegistration", "SharedIndexInformer"],
    "aioinformer.lister": ["Event", "EventStream", "Lister"],
    "aioinformer.factory": ["SharedInformerFactory"],
    "aioinformer.workqueue": [
        "DelayingQueue",
        "MaxOfRateLimiter",
        "RateLimitingQueue",
        "WorkQueue",
        "default_controller_rate_limiter",
    ],
    "aioinformer.operator.controller": ["Controller", "ControllerMetricsProvider"],
    "aioinformer.operator.leaderelection": ["LeaderElector"],
    "aioinformer.testing": ["FakeAPIServer", "FakeListerWatcher"],
    # The cache-backed client, controller-runtime's mgr.GetClient() (read your own writes).
    "aioinformer.operator.cached_client": [
        "CachedClient",
        "CachedClientStatistics",
        "CachedResource",
    ],
    "aioinformer.operator.manager": ["Manager"],
}


def test_the_package_root_exports_exactly_the_user_api() -> None:
    assert aioinformer.__all__ == TOP_LEVEL
    assert sorted(TOP_LEVEL) == TOP_LEVEL
    assert len(TOP_LEVEL) <= 90


@pytest.mark.parametrize("module_name", ["aioinformer", *PUBLIC_MODULES])
def test_all_is_sorted_and_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = module.__all__
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert hasattr(module, name), f"{module_name}.{name} is listed but missing"


@pytest.mark.parametrize("module_name", sorted(DESIGN_PATHS))
def test_the_design_paths_keep_their_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in DESIGN_PATHS[module_name]:
        assert hasattr(module, name), f"{module_name}.{name} is gone"


# The operator façade, by the module each name lives in.
OPERATOR_HOMES = {
    "aioinformer.operator.controller": [
        "Controller",
        "ControllerStatistics",
        "EnqueueFunc",
        "Reconcile",
        "enqueue_owner",
    ],
    "aioinformer.errors": ["ConversionSetupError", "Requeue"],
    "aioinformer.operator.conversion": ["Conversion", "Convertible"],
    "aioinformer.operator.admission": ["AdmissionRequest", "Allowed", "Denied"],
    "aioinformer.operator.webhook": ["WebhookOptions", "WebhookServer"],
    "aioinformer.operator.manifests": ["webhook_manifests"],
    "aioinformer.operator.crds": ["CRDControllers", "CRDScope"],
    "aioinformer.operator.finalizers": [
        "Cleanup",
        "Finalizer",
        "FinalizerAction",
        "FinalizerResult",
        "add_finalizer",
        "finalizers_of",
        "has_finalizer",
        "is_being_deleted",
        "remove_finalizer",
    ],
    "aioinformer.operator.leaderelection": [
        "LeaderElector",
        "LeadershipLost",
        "LeaseLock",
    ],
    "aioinformer.operator.manager": [
        "LeaderElection",
        "Manager",
        "ManagerHealth",
        "ManagerOptions",
    ],
    "aioinformer.operator.sharding": ["ShardRing", "ShardedResource"],
    "aioinformer.operator.ownership": [
        "has_controller_reference",
        "remove_owner_reference",
        "set_controller_reference",
        "set_owner_reference",
    ],
    "aioinformer.operator.predicates": [
        "Predicate",
        "PredicateLike",
        "UpdatePredicate",
        "all_of",
        "annotations_changed",
        "any_of",
        "generation_changed",
        "labels_changed",
        "not_",
        "object_filter",
        "resource_version_changed",
    ],
    "aioinformer.operator.recorder": [
        "EventRecorder",
        "EventRecorderStatistics",
        "EventSink",
        "EventType",
        "object_reference",
    ],
    "aioinformer.operator.retry": [
        "DEFAULT_RETRY",
        "RetryBackoff",
        "is_conflict",
        "on_error",
        "retry_on_conflict",
    ],
}


def test_the_operator_facade_exports_exactly_the_toolkit() -> None:
    expected = sorted(name for names in OPERATOR_HOMES.values() for name in names)
    assert aioinformer.operator.__all__ == expected


@pytest.mark.parametrize("module_name", sorted(OPERATOR_HOMES))
def test_the_operator_facade_hands_out_the_very_objects_of_their_modules(
    module_name: str,
) -> None:
    module = importlib.import_module(module_name)
    for name in OPERATOR_HOMES[module_name]:
        assert getattr(aioinformer.operator, name) is getattr(module, name), name


def test_a_name_in_both_the_root_and_the_operator_facade_is_one_object() -> None:
    shared = set(aioinformer.__all__) & set(aioinformer.operator.__all__)
    assert shared  # Controller, Requeue, ...: the same names, not look-alikes
    for name in shared:
        assert getattr(aioinformer, name) is getattr(aioinformer.operator, name), name


# The pipeline's parts: off the root, each exported by the module of its stage.
PIPELINE_PATHS = {
    "aioinformer.delta_fifo": ["Delta", "DeltaFIFO", "DeltaType", "Deltas"],
    "aioinformer.reflector": [
        "Backoff",
        "GCPolicy",
        "Reflector",
        "ReflectorState",
        "ReflectorStatistics",
    ],
    "aioinformer.workqueue": ["MetricsProvider"],
}


@pytest.mark.parametrize("module_name", sorted(PIPELINE_PATHS))
def test_the_pipeline_parts_are_exported_by_their_stage_not_the_root(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in PIPELINE_PATHS[module_name]:
        assert name in module.__all__, f"{module_name}.{name} is not exported"
        # Only the deprecated alias, with a warning (test_deprecated_names), is left there.
        assert name not in vars(aioinformer), f"aioinformer.{name} is still at the root"


def test_the_root_names_no_kubernetes_kind_for_an_informer_notification() -> None:
    # An informer's notification is lister.Event; a Kubernetes Event is a k8s model.
    assert "Event" not in vars(aioinformer)  # but for its deprecated alias
    assert aioinformer.informer.Event is aioinformer.lister.Event


def test_the_processor_encoding_stays_out_of_the_root() -> None:
    for name in ("ADD", "UPDATE", "DELETE", "Notification", "NotificationKind"):
        assert name not in vars(aioinformer)  # ADD and Notification: deprecated aliases only
    # One name per kind: NotificationKind.ADD, not a module-level ADD beside it (the old
    # module-level names are deprecated aliases, not names of the module).
    for name in ("ADD", "UPDATE", "DELETE"):
        assert name not in vars(aioinformer.processor)
