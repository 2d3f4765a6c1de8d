"""The operator toolkit in one namespace: what an operator imports, re-exported.

Role: the entry point for writing an operator, as controller-runtime's ``ctrl`` package
(its ``alias.go``) is for Go. An operator needs the :class:`Manager` that runs it, the
:class:`Controller` and its reconcile outcome (:class:`Requeue`), the finalizer and
owner-reference helpers, the watch predicates, the Event recorder, leader election,
``retry_on_conflict``, and the webhooks (the server, admission answers, conversion through
a hub version, the configurations written from code); each lives in this package's module
named for its concept
(:mod:`~aioinformer.operator.manager`, :mod:`~aioinformer.operator.controller`,
:mod:`~aioinformer.operator.finalizers`, :mod:`~aioinformer.operator.ownership`,
:mod:`~aioinformer.operator.predicates`, :mod:`~aioinformer.operator.recorder`,
:mod:`~aioinformer.operator.leaderelection`, :mod:`~aioinformer.operator.retry`,
:mod:`~aioinformer.operator.crds`, :mod:`~aioinformer.operator.webhook`,
:mod:`~aioinformer.operator.admission`, :mod:`~aioinformer.operator.conversion`,
:mod:`~aioinformer.operator.manifests`), which
keep exporting them. Nothing is defined here: every name is the very object of its module,
and that module is imported the first time the name is read (PEP 562), so importing the
toolkit costs nothing until an operator uses a part of it.

The informer side (``Client``, ``SharedInformerFactory``, ``SharedIndexInformer``,
``KubeObject``, the errors, ``split_meta_namespace_key``) comes from the package root, and
the test doubles from :mod:`aioinformer.testing`, so an operator imports from three
places::

    from aioinformer import Client, KubeObject, NotFound, split_meta_namespace_key
    from aioinformer.operator import Controller, Finalizer, Manager, generation_changed
    from aioinformer.testing import FakeAPIServer

A reconcile gets a key (``"namespace/name"``), not a controller-runtime ``Request``, and
tells what to do next by returning or raising :class:`Requeue`, not by a ``Result``; see
:mod:`aioinformer.operator.controller`. ``retry_on_conflict`` takes the retry policy of
:mod:`aioinformer.operator.retry` (``DEFAULT_RETRY``, or a :class:`RetryBackoff` of your own),
named apart from the reflector's ``Backoff``, which paces relists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aioinformer._kernel.lazy import lazy_exports

if TYPE_CHECKING:
    from aioinformer.errors import ConversionSetupError as ConversionSetupError
    from aioinformer.errors import Requeue as Requeue
    from aioinformer.operator.admission import AdmissionRequest as AdmissionRequest
    from aioinformer.operator.admission import Allowed as Allowed
    from aioinformer.operator.admission import Denied as Denied
    from aioinformer.operator.controller import Controller as Controller
    from aioinformer.operator.controller import ControllerStatistics as ControllerStatistics
    from aioinformer.operator.controller import EnqueueFunc as EnqueueFunc
    from aioinformer.operator.controller import Reconcile as Reconcile
    from aioinformer.operator.controller import enqueue_owner as enqueue_owner
    from aioinformer.operator.conversion import Conversion as Conversion
    from aioinformer.operator.conversion import Convertible as Convertible
    from aioinformer.operator.crds import CRDControllers as CRDControllers
    from aioinformer.operator.crds import CRDScope as CRDScope
    from aioinformer.operator.finalizers import Cleanup as Cleanup
    from aioinformer.operator.finalizers import Finalizer as Finalizer
    from aioinformer.operator.finalizers import FinalizerAction as FinalizerAction
    from aioinformer.operator.finalizers import FinalizerResult as FinalizerResult
    from aioinformer.operator.finalizers import add_finalizer as add_finalizer
    from aioinformer.operator.finalizers import finalizers_of as finalizers_of
    from aioinformer.operator.finalizers import has_finalizer as has_finalizer
    from aioinformer.operator.finalizers import is_being_deleted as is_being_deleted
    from aioinformer.operator.finalizers import remove_finalizer as remove_finalizer
    from aioinformer.operator.leaderelection import LeaderElector as LeaderElector
    from aioinformer.operator.leaderelection import LeadershipLost as LeadershipLost
    from aioinformer.operator.leaderelection import LeaseLock as LeaseLock
    from aioinformer.operator.manager import LeaderElection as LeaderElection
    from aioinformer.operator.manager import Manager as Manager
    from aioinformer.operator.manager import ManagerHealth as ManagerHealth
    from aioinformer.operator.manager import ManagerOptions as ManagerOptions
    from aioinformer.operator.manifests import webhook_manifests as webhook_manifests
    from aioinformer.operator.ownership import has_controller_reference as has_controller_reference
    from aioinformer.operator.ownership import remove_owner_reference as remove_owner_reference
    from aioinformer.operator.ownership import set_controller_reference as set_controller_reference
    from aioinformer.operator.ownership import set_owner_reference as set_owner_reference
    from aioinformer.operator.predicates import Predicate as Predicate
    from aioinformer.operator.predicates import PredicateLike as PredicateLike
    from aioinformer.operator.predicates import UpdatePredicate as UpdatePredicate
    from aioinformer.operator.predicates import all_of as all_of
    from aioinformer.operator.predicates import annotations_changed as annotations_changed
    from aioinformer.operator.predicates import any_of as any_of
    from aioinformer.operator.predicates import generation_changed as generation_changed
    from aioinformer.operator.predicates import labels_changed as labels_changed
    from aioinformer.operator.predicates import not_ as not_
    from aioinformer.operator.predicates import object_filter as object_filter
    from aioinformer.operator.predicates import resource_version_changed as resource_version_changed
    from aioinformer.operator.recorder import EventRecorder as EventRecorder
    from aioinformer.operator.recorder import EventRecorderStatistics as EventRecorderStatistics
    from aioinformer.operator.recorder import EventSink as EventSink
    from aioinformer.operator.recorder import EventType as EventType
    from aioinformer.operator.recorder import object_reference as object_reference
    from aioinformer.operator.retry import DEFAULT_RETRY as DEFAULT_RETRY
    from aioinformer.operator.retry import RetryBackoff as RetryBackoff
    from aioinformer.operator.retry import is_conflict as is_conflict
    from aioinformer.operator.retry import on_error as on_error
    from aioinformer.operator.retry import retry_on_conflict as retry_on_conflict
    from aioinformer.operator.sharding import ShardedResource as ShardedResource
    from aioinformer.operator.sharding import ShardRing as ShardRing
    from aioinformer.operator.webhook import WebhookOptions as WebhookOptions
    from aioinformer.operator.webhook import WebhookServer as WebhookServer

__all__ = [
    "AdmissionRequest",
    "Allowed",
    "CRDControllers",
    "CRDScope",
    "Cleanup",
    "Controller",
    "ControllerStatistics",
    "Conversion",
    "ConversionSetupError",
    "Convertible",
    "DEFAULT_RETRY",
    "Denied",
    "EnqueueFunc",
    "EventRecorder",
    "EventRecorderStatistics",
    "EventSink",
    "EventType",
    "Finalizer",
    "FinalizerAction",
    "FinalizerResult",
    "LeaderElection",
    "LeaderElector",
    "LeadershipLost",
    "LeaseLock",
    "Manager",
    "ManagerHealth",
    "ManagerOptions",
    "Predicate",
    "PredicateLike",
    "Reconcile",
    "Requeue",
    "RetryBackoff",
    "ShardRing",
    "ShardedResource",
    "UpdatePredicate",
    "WebhookOptions",
    "WebhookServer",
    "add_finalizer",
    "all_of",
    "annotations_changed",
    "any_of",
    "enqueue_owner",
    "finalizers_of",
    "generation_changed",
    "has_controller_reference",
    "has_finalizer",
    "is_being_deleted",
    "is_conflict",
    "labels_changed",
    "not_",
    "object_filter",
    "object_reference",
    "on_error",
    "remove_finalizer",
    "remove_owner_reference",
    "resource_version_changed",
    "retry_on_conflict",
    "set_controller_reference",
    "set_owner_reference",
    "webhook_manifests",
]

# Each name's module, imported the first time the name is read: importing the toolkit costs
# nothing until an operator uses a part of it (the Manager, and the web server of its
# endpoints, only when a Manager is asked for).
_HOMES = {
    "aioinformer.errors": ("ConversionSetupError", "Requeue"),
    "aioinformer.operator.admission": ("AdmissionRequest", "Allowed", "Denied"),
    "aioinformer.operator.controller": (
        "Controller",
        "ControllerStatistics",
        "EnqueueFunc",
        "Reconcile",
        "enqueue_owner",
    ),
    "aioinformer.operator.conversion": ("Conversion", "Convertible"),
    "aioinformer.operator.webhook": ("WebhookOptions", "WebhookServer"),
    "aioinformer.operator.manifests": ("webhook_manifests",),
    "aioinformer.operator.crds": ("CRDControllers", "CRDScope"),
    "aioinformer.operator.finalizers": (
        "Cleanup",
        "Finalizer",
        "FinalizerAction",
        "FinalizerResult",
        "add_finalizer",
        "finalizers_of",
        "has_finalizer",
        "is_being_deleted",
        "remove_finalizer",
    ),
    "aioinformer.operator.leaderelection": ("LeaderElector", "LeadershipLost", "LeaseLock"),
    "aioinformer.operator.manager": (
        "LeaderElection",
        "Manager",
        "ManagerHealth",
        "ManagerOptions",
    ),
    "aioinformer.operator.ownership": (
        "has_controller_reference",
        "remove_owner_reference",
        "set_controller_reference",
        "set_owner_reference",
    ),
    "aioinformer.operator.predicates": (
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
    ),
    "aioinformer.operator.recorder": (
        "EventRecorder",
        "EventRecorderStatistics",
        "EventSink",
        "EventType",
        "object_reference",
    ),
    "aioinformer.operator.retry": (
        "DEFAULT_RETRY",
        "RetryBackoff",
        "is_conflict",
        "on_error",
        "retry_on_conflict",
    ),
    "aioinformer.operator.sharding": ("ShardedResource", "ShardRing"),
}

if not TYPE_CHECKING:  # type checkers read the imports above
    __getattr__, __dir__ = lazy_exports(__name__, _HOMES)
