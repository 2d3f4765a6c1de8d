"""Names that moved since the first release keep working for one release, with a warning.

Role: the one table of what moved where, and the two ways an old name is still served.
A module that lost a name answers it from a module ``__getattr__`` (PEP 562) that calls
:func:`moved_attribute`: Python calls it only for a name the module does not have, so the
module's own names, ``from module import *`` and ``dir(module)`` never reach it and never
warn. A module that moved as a whole leaves a shim at its old path (``aioinformer.manager``
for :mod:`aioinformer.operator.manager`) that re-exports the new module's names and calls
:func:`warn_moved_module` as it is imported. Nothing imports a shim: ``import aioinformer``
loads none of them, and the new module is imported only when an old name is asked for.

Either way the caller gets the new object itself (``old is new``) and a
:class:`DeprecationWarning`, pointing at the caller's line, that names the new name (a
``from aioinformer import Old`` asks the package twice, so it warns twice at that line;
the default filters show it once). The tests hold every entry of the tables to that, and
the changelog's "Deprecated" section to listing each of them.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "MOVED_MODULES",
    "MOVED_NAMES",
    "moved_attribute",
    "warn_moved_module",
]

_KEPT: Final = "the old name is kept for one release, then removed"

MOVED_MODULES: Final[Mapping[str, str]] = {
    "aioinformer.controller": "aioinformer.operator.controller",
    "aioinformer.events": "aioinformer.operator.recorder",
    "aioinformer.finalizers": "aioinformer.operator.finalizers",
    "aioinformer.leaderelection": "aioinformer.operator.leaderelection",
    "aioinformer.manager": "aioinformer.operator.manager",
    "aioinformer.ownership": "aioinformer.operator.ownership",
    "aioinformer.predicates": "aioinformer.operator.predicates",
    "aioinformer.retry": "aioinformer.operator.retry",
}
"""Each old module path and the module it moved to; the old one is a shim. Some were
added after 0.1.0 and moved before the next release: their old paths are kept as well."""

MOVED_NAMES: Final[Mapping[str, Mapping[str, str]]] = {
    "aioinformer": {
        "ADD": "aioinformer.processor.NotificationKind.ADD",
        "ADDED": "aioinformer.listwatch.ADDED",
        "BOOKMARK": "aioinformer.listwatch.BOOKMARK",
        "Backoff": "aioinformer.reflector.Backoff",
        "BucketRateLimiter": "aioinformer.workqueue.BucketRateLimiter",
        "ControllerState": "aioinformer.State",
        "ControllerStatistics": "aioinformer.operator.controller.ControllerStatistics",
        "CounterMetric": "aioinformer.workqueue.CounterMetric",
        "DEFAULT_MAX_LINE_BYTES": "aioinformer.watch.DEFAULT_MAX_LINE_BYTES",
        "DEFAULT_MAX_LIST_BYTES": "aioinformer.client.DEFAULT_MAX_LIST_BYTES",
        "DEFAULT_MAX_OBJECT_BYTES": "aioinformer.client.DEFAULT_MAX_OBJECT_BYTES",
        "DELETE": "aioinformer.processor.NotificationKind.DELETE",
        "DELETED": "aioinformer.listwatch.DELETED",
        "Delta": "aioinformer.delta_fifo.Delta",
        "DeltaFIFO": "aioinformer.delta_fifo.DeltaFIFO",
        "DeltaType": "aioinformer.delta_fifo.DeltaType",
        "Deltas": "aioinformer.delta_fifo.Deltas",
        "ERROR": "aioinformer.listwatch.ERROR",
        "ElectorState": "aioinformer.State",
        "EnqueueFunc": "aioinformer.operator.controller.EnqueueFunc",
        "Event": "aioinformer.informer.Event",
        "EventType": "aioinformer.informer.NotificationType",
        "ExecConfig": "aioinformer.config.ExecConfig",
        "FieldRequirement": "aioinformer.labels.FieldRequirement",
        "FieldSelector": "aioinformer.labels.FieldSelector",
        "GCPolicy": "aioinformer.reflector.GCPolicy",
        "GaugeMetric": "aioinformer.workqueue.GaugeMetric",
        "HistogramMetric": "aioinformer.workqueue.HistogramMetric",
        "INITIAL_EVENTS_END_ANNOTATION": "aioinformer.listwatch.INITIAL_EVENTS_END_ANNOTATION",
        "Index": "aioinformer.indexer.Index",
        "InformerKey": "aioinformer.factory.InformerKey",
        "InformerState": "aioinformer.State",
        "ItemExponentialFailureRateLimiter": "aioinformer.workqueue.ItemExponentialFailureRateLimiter",  # noqa: E501
        "ItemFastSlowRateLimiter": "aioinformer.workqueue.ItemFastSlowRateLimiter",
        "JITTER_FACTOR": "aioinformer.operator.leaderelection.JITTER_FACTOR",
        "KnownObjects": "aioinformer.delta_fifo.KnownObjects",
        "KubeConfig": "aioinformer.models.KubeConfig",
        "KubeConfigAuthInfo": "aioinformer.models.KubeConfigAuthInfo",
        "KubeConfigCluster": "aioinformer.models.KubeConfigCluster",
        "KubeConfigContext": "aioinformer.models.KubeConfigContext",
        "KubeConfigExec": "aioinformer.models.KubeConfigExec",
        "KubeConfigExecEnvVar": "aioinformer.models.KubeConfigExecEnvVar",
        "KubeConfigNamedAuthInfo": "aioinformer.models.KubeConfigNamedAuthInfo",
        "KubeConfigNamedCluster": "aioinformer.models.KubeConfigNamedCluster",
        "KubeConfigNamedContext": "aioinformer.models.KubeConfigNamedContext",
        "LabelRequirement": "aioinformer.labels.LabelRequirement",
        "LabelSelector": "aioinformer.labels.LabelSelector",
        "LeaderElectionRecord": "aioinformer.operator.leaderelection.LeaderElectionRecord",
        "ListMeta": "aioinformer.models.ListMeta",
        "MINIMUM_RESYNC_PERIOD": "aioinformer.processor.MINIMUM_RESYNC_PERIOD",
        "MODIFIED": "aioinformer.listwatch.MODIFIED",
        "MaxOfRateLimiter": "aioinformer.workqueue.MaxOfRateLimiter",
        "MetricsProvider": "aioinformer.workqueue.MetricsProvider",
        "Notification": "aioinformer.processor.Notification",
        "OverflowPolicy": "aioinformer.processor.OverflowPolicy",
        "OwnerReference": "aioinformer.models.OwnerReference",
        "PopProcessFunc": "aioinformer.delta_fifo.PopProcessFunc",
        "ProcessorListener": "aioinformer.processor.ProcessorListener",
        "QueueStatistics": "aioinformer.workqueue.QueueStatistics",
        "RawList": "aioinformer.models.RawList",
        "RawListMeta": "aioinformer.models.RawListMeta",
        "RawMeta": "aioinformer.models.RawMeta",
        "RawObject": "aioinformer.models.RawObject",
        "Reflector": "aioinformer.reflector.Reflector",
        "ReflectorState": "aioinformer.reflector.ReflectorState",
        "ReflectorStatistics": "aioinformer.reflector.ReflectorStatistics",
        "ReflectorStore": "aioinformer.reflector.ReflectorStore",
        "ResourceExpired": "aioinformer.errors.ResourceExpired",
        "ResourceLock": "aioinformer.operator.leaderelection.ResourceLock",
        "SERVICE_ACCOUNT_DIR": "aioinformer.config.SERVICE_ACCOUNT_DIR",
        "SelectorOperator": "aioinformer.labels.SelectorOperator",
        "SettableGaugeMetric": "aioinformer.workqueue.SettableGaugeMetric",
        "SharedProcessor": "aioinformer.processor.SharedProcessor",
        "StatusCause": "aioinformer.models.StatusCause",
        "StatusDetails": "aioinformer.models.StatusDetails",
        "TransformFunc": "aioinformer.delta_fifo.TransformFunc",
        "UPDATE": "aioinformer.processor.NotificationKind.UPDATE",
        "WatchErrorHandler": "aioinformer.reflector.WatchErrorHandler",
        "WatchStreamDecoder": "aioinformer.watch.WatchStreamDecoder",
        "WithMaxWaitRateLimiter": "aioinformer.workqueue.WithMaxWaitRateLimiter",
        "api_error_from_status": "aioinformer.errors.api_error_from_status",
        "chain": "aioinformer.transforms.chain",
        "determine_resync_period": "aioinformer.processor.determine_resync_period",
        "error_from_watch_status": "aioinformer.watch.error_from_watch_status",
        "get_metrics_provider": "aioinformer.workqueue.get_metrics_provider",
        "keep_metadata_only": "aioinformer.transforms.keep_metadata_only",
        "lease_spec_to_record": "aioinformer.operator.leaderelection.lease_spec_to_record",
        "match_labels": "aioinformer.labels.match_labels",
        "parse_field_selector": "aioinformer.labels.parse_field_selector",
        "parse_label_selector": "aioinformer.labels.parse_label_selector",
        "read_watch_stream": "aioinformer.watch.read_watch_stream",
        "record_to_lease_spec": "aioinformer.operator.leaderelection.record_to_lease_spec",
        "selector_from_set": "aioinformer.labels.selector_from_set",
    },
    "aioinformer.controller": {"ControllerState": "aioinformer.State"},
    "aioinformer.events": {"RecorderState": "aioinformer.State"},
    "aioinformer.health": {"InformerState": "aioinformer.State"},
    "aioinformer.informer": {
        "EventType": "aioinformer.informer.NotificationType",
        "InformerState": "aioinformer.State",
    },
    "aioinformer.leaderelection": {"ElectorState": "aioinformer.State"},
    "aioinformer.lister": {"EventType": "aioinformer.lister.NotificationType"},
    "aioinformer.manager": {"ManagerState": "aioinformer.State"},
    "aioinformer.processor": {
        "ADD": "aioinformer.processor.NotificationKind.ADD",
        "DELETE": "aioinformer.processor.NotificationKind.DELETE",
        "UPDATE": "aioinformer.processor.NotificationKind.UPDATE",
    },
}
"""By module, each name it no longer has and the dotted path of the object now meant. The
root's are the names 0.1.0's root exported (the pipeline's parts, the work queue's rate
limiters and metrics, selectors, kubeconfig models, ...) that now live only in their
modules; the five state enums are :class:`aioinformer.State`."""


def _resolve(path: str) -> object:
    """The object at a dotted path: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(f"no module in {path!r}")


def moved_attribute(module: str, name: str) -> object:
    """What ``module.name`` now is, with a :class:`DeprecationWarning` naming the new name;
    :class:`AttributeError` as Python words it for a name that never moved.

    For a module's ``__getattr__``: the warning points at the line that asked for the
    name (the caller of that ``__getattr__``).
    """
    new = MOVED_NAMES.get(module, {}).get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} is deprecated: use {new} ({_KEPT})",
        DeprecationWarning,
        stacklevel=3,
    )
    return _resolve(new)


_IMPORT_HOOKS: Final = frozenset({"importlib", "_pytest"})
"""Top-level packages whose frames may stand between a shim and the importing line: the
import system's own and pytest's assertion rewriter, which loads the modules of any
package with a pytest plugin (this one has)."""


def _importer_stacklevel() -> int:
    """The ``stacklevel`` of the line importing the shim that called
    :func:`warn_moved_module`, counted as :func:`warnings.warn` counts (the interpreter's
    frozen import frames are skipped there, so they are not counted here)."""
    level = 2  # warn_moved_module, then the shim's body
    frame = sys._getframe(2).f_back
    while frame is not None:
        filename = frame.f_code.co_filename
        if "importlib" in filename and "_bootstrap" in filename:
            frame = frame.f_back
            continue
        level += 1
        if str(frame.f_globals.get("__name__", "")).partition(".")[0] not in _IMPORT_HOOKS:
            break
        frame = frame.f_back
    return level


def warn_moved_module(module: str) -> None:
    """Warn that ``module`` (a shim of :data:`MOVED_MODULES`) moved, naming the new module;
    called by the shim as it is imported, so the warning points at the importing line."""
    warnings.warn(
        f"module {module} is deprecated: use {MOVED_MODULES[module]} ({_KEPT})",
        DeprecationWarning,
        stacklevel=_importer_stacklevel(),
    )
