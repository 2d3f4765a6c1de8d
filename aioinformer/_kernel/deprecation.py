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

Two kinds of old name give something else. The five state enums that became
:class:`aioinformer.State` (:data:`OLD_STATE_ENUMS`) give an :class:`OldStateEnum`, a
stand-in whose every old member is the ``State`` member now meant (a renamed one warns
again, naming it), since their members were not all ``State``'s. A name with no public
successor (:data:`RETIRED_NAMES`) gives the private object it became, with a warning that
says what to write instead.
"""

from __future__ import annotations

import functools
import importlib
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from aioinformer._kernel.lifecycle import State

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = [
    "MOVED_MODULES",
    "MOVED_NAMES",
    "OLD_STATE_ENUMS",
    "RETIRED_NAMES",
    "OldStateEnum",
    "Retired",
    "moved_attribute",
    "old_state_enum",
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
    # Named apart from the reflector's Backoff, which is another thing.
    "aioinformer.operator.retry": {"Backoff": "aioinformer.operator.retry.RetryBackoff"},
    "aioinformer.processor": {
        "ADD": "aioinformer.processor.NotificationKind.ADD",
        "DELETE": "aioinformer.processor.NotificationKind.DELETE",
        "UPDATE": "aioinformer.processor.NotificationKind.UPDATE",
    },
    "aioinformer.retry": {"Backoff": "aioinformer.operator.retry.RetryBackoff"},
}
"""By module, each name it no longer has and the dotted path of the object now meant. The
root's are the names 0.1.0's root exported (the pipeline's parts, the work queue's rate
limiters and metrics, selectors, kubeconfig models, ...) that now live only in their
modules; the five state enums are :class:`aioinformer.State`, served as
:class:`OldStateEnum` (:data:`OLD_STATE_ENUMS`)."""

OLD_STATE_ENUMS: Final[Mapping[str, Mapping[str, tuple[str, str]]]] = {
    "ControllerState": {
        "NEW": ("new", "NEW"),
        "WAITING_FOR_SYNC": ("waiting for sync", "STARTING"),
        "RUNNING": ("running", "RUNNING"),
        "DRAINING": ("draining", "STOPPING"),
        "STOPPED": ("stopped", "STOPPED"),
    },
    "ElectorState": {
        "IDLE": ("IDLE", "NEW"),
        "ACQUIRING": ("ACQUIRING", "STARTING"),
        "LEADING": ("LEADING", "RUNNING"),
        "STOPPING": ("STOPPING", "STOPPING"),
        "STOPPED": ("STOPPED", "STOPPED"),
    },
    "InformerState": {
        "NEW": ("new", "NEW"),
        "RUNNING": ("running", "RUNNING"),
        "STOPPED": ("stopped", "STOPPED"),
    },
    "ManagerState": {
        "NEW": ("new", "NEW"),
        "SYNCING": ("syncing", "STARTING"),
        "CAMPAIGNING": ("campaigning", "RUNNING"),
        "RUNNING": ("running", "RUNNING"),
        "STOPPING": ("stopping", "STOPPING"),
        "STOPPED": ("stopped", "STOPPED"),
    },
    "RecorderState": {
        "NEW": ("new", "NEW"),
        "RUNNING": ("running", "RUNNING"),
        "CLOSING": ("closing", "STOPPING"),
        "CLOSED": ("closed", "STOPPED"),
    },
}
"""Each old state enum, and each of its members: the value it had and the
:class:`~aioinformer.State` member it is now (the changelog's migration table). A manager
is ``RUNNING`` once its caches synced, campaigning or leading; an elector, once leading."""


@dataclass(frozen=True, slots=True)
class Retired:
    """A name of the first release with no public successor: for one release more, the
    private object it became."""

    path: str
    """The dotted path of the object the old name still gives."""
    instead: str
    """What to write instead, as the warning and the changelog say it."""


_CLOCK: Final = (
    "give no clock= (every component then uses the event loop's clock), an "
    "aioinformer.Clock of your own, or aioinformer.testing.FakeClock in tests"
)
_FROM_RESPONSE: Final = Retired(
    "aioinformer.client._transport.api_error_from_response",
    "the client raises each answer's ApiError itself; build one from a decoded Status "
    "with aioinformer.errors.api_error_from_status",
)
_TRANSPORT: Final = Retired(
    "aioinformer.client._transport.map_transport_errors",
    "the client translates transport failures itself; catch aioinformer.errors.TransportError",
)

RETIRED_NAMES: Final[Mapping[str, Mapping[str, Retired]]] = {
    "aioinformer": {
        "LoopClock": Retired("aioinformer._kernel.clock.LoopClock", _CLOCK),
        "api_error_from_response": _FROM_RESPONSE,
        "default_clock": Retired("aioinformer._kernel.clock.default_clock", _CLOCK),
        "map_transport_errors": _TRANSPORT,
    },
    "aioinformer.errors": {
        "api_error_from_response": _FROM_RESPONSE,
        "map_transport_errors": _TRANSPORT,
    },
}
"""By module, each name it no longer has that no public name replaces: the object it gives
for one release more, and what to use instead."""


class OldStateEnum:
    """One of the state enums that became :class:`aioinformer.State`, kept for one release.

    Each member of the old enum is the ``State`` member now meant, per
    :data:`OLD_STATE_ENUMS`: ``ElectorState.LEADING is State.RUNNING``, with a
    :class:`DeprecationWarning` naming ``State.RUNNING`` for a member that was renamed.
    ``Old["NAME"]``, ``Old(value)`` (old values too), iteration (``State``'s members),
    ``in`` and ``isinstance(state, Old)`` work as ``State`` does. A mapped member is
    ``State``'s: its ``name`` and ``value`` are the new ones (``ElectorState.LEADING.value``
    is ``"running"``, not ``"LEADING"``).
    """

    __slots__ = ("_members", "_name")

    def __init__(self, name: str, members: Mapping[str, tuple[str, str]]) -> None:
        self._name = name
        self._members = members

    def _member(self, name: str, stacklevel: int) -> State:
        """The ``State`` member the old member ``name`` is now (a ``State`` name is itself),
        warning for a renamed one; ``KeyError`` for any other name."""
        old = self._members.get(name)
        if old is None:
            return State[name]
        new = old[1]
        if new != name:
            self._warn(name, new, stacklevel + 1)
        return State[new]

    def _warn(self, old: str, new: str, stacklevel: int) -> None:
        warnings.warn(
            f"{self._name}.{old} is deprecated: use aioinformer.State.{new} ({_KEPT})",
            DeprecationWarning,
            stacklevel=stacklevel + 1,
        )

    def __getattr__(self, name: str) -> State:
        try:
            return self._member(name, 2)
        except KeyError:
            raise AttributeError(f"{self._name} has no member {name!r}") from None

    def __getitem__(self, name: str) -> State:
        try:
            return self._member(name, 2)
        except KeyError:
            raise KeyError(name) from None

    def __call__(self, value: object) -> State:
        for old, (old_value, new) in self._members.items():
            if value == old_value:
                if State[new].value != old_value:
                    self._warn(old, new, 2)
                return State[new]
        return State(value)

    @property
    def __members__(self) -> Mapping[str, State]:
        """Each old member's name and the ``State`` member it is now."""
        return {old: State[new] for old, (_, new) in self._members.items()}

    def __iter__(self) -> Iterator[State]:
        return iter(State)

    def __len__(self) -> int:
        return len(State)

    def __contains__(self, value: object) -> bool:
        return isinstance(value, State)

    def __instancecheck__(self, instance: object) -> bool:
        return isinstance(instance, State)

    def __repr__(self) -> str:
        return f"<deprecated {self._name}: aioinformer.State>"


@functools.cache
def old_state_enum(name: str) -> OldStateEnum:
    """The one stand-in for the old state enum ``name``, whichever module it is asked of."""
    return OldStateEnum(name, OLD_STATE_ENUMS[name])


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


def moved_attribute(module: str, name: str, *, frames: int = 0) -> object:
    """What ``module.name`` now is, with a :class:`DeprecationWarning` naming the new name;
    :class:`AttributeError` as Python words it for a name that never moved.

    For a module's ``__getattr__``: the warning points at the line that asked for the
    name (the caller of that ``__getattr__``, ``frames`` calls further out when the
    ``__getattr__`` reaches this through helpers of its own).
    """
    new = MOVED_NAMES.get(module, {}).get(name)
    if new is not None:
        warnings.warn(
            f"{module}.{name} is deprecated: use {new} ({_KEPT})",
            DeprecationWarning,
            stacklevel=3 + frames,
        )
        return old_state_enum(name) if name in OLD_STATE_ENUMS else _resolve(new)
    retired = RETIRED_NAMES.get(module, {}).get(name)
    if retired is not None:
        warnings.warn(
            f"{module}.{name} is deprecated and has no public successor: {retired.instead} "
            f"({_KEPT})",
            DeprecationWarning,
            stacklevel=3 + frames,
        )
        return _resolve(retired.path)
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


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
