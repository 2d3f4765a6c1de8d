"""aioinformer: asyncio-native Kubernetes informers.

Reflectors list and watch the API server into a DeltaFIFO; one task pops it into an
indexed cache and dispatches to per-handler queues. This module only re-exports the
names applications write (tested against an explicit list in
``tests/unit/test_exports.py``): the client, informers and their caches, controllers and
work queues, errors. Each lives in the module named for its concept. The pipeline's parts
(``aioinformer.reflector``'s ``Reflector``, ``Backoff``, ``ReflectorState``;
``aioinformer.delta_fifo``'s ``DeltaFIFO``, ``Delta``, ``DeltaType``; ``.processor``,
``.workqueue``'s ``MetricsProvider``, ``.labels``, ``.listwatch``, ``.watch``, ...) are
exported by their modules, not here; the operator toolkit (``Manager``, finalizers,
predicates, ``EventRecorder``, leader election) comes through :mod:`aioinformer.operator`;
the few operator names kept here (``Controller``, ``Reconcile``, ``enqueue_owner``,
``LeaderElector``, ``LeaseLock``) are imported the first time they are read, so ``import
aioinformer`` loads neither the toolkit nor aiohttp's web server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aioinformer._kernel.clock import Clock as Clock
from aioinformer._kernel.lazy import lazy_exports
from aioinformer._kernel.lifecycle import State as State
from aioinformer._objects.view import ObjectView as ObjectView
from aioinformer._objects.view import json_default as json_default
from aioinformer.audit import CacheAudit as CacheAudit
from aioinformer.client import GVR as GVR
from aioinformer.client import Client as Client
from aioinformer.client import PatchType as PatchType
from aioinformer.client import ResourceClient as ResourceClient
from aioinformer.client import ResourceInfo as ResourceInfo
from aioinformer.config import Config as Config
from aioinformer.config import load_config as load_config
from aioinformer.config import load_incluster_config as load_incluster_config
from aioinformer.config import load_kube_config as load_kube_config
from aioinformer.errors import AioinformerError as AioinformerError
from aioinformer.errors import AlreadyExists as AlreadyExists
from aioinformer.errors import ApiError as ApiError
from aioinformer.errors import BadRequest as BadRequest
from aioinformer.errors import CacheSyncError as CacheSyncError
from aioinformer.errors import ConfigError as ConfigError
from aioinformer.errors import Conflict as Conflict
from aioinformer.errors import ConnectionFailed as ConnectionFailed
from aioinformer.errors import FIFOClosedError as FIFOClosedError
from aioinformer.errors import Forbidden as Forbidden
from aioinformer.errors import Gone as Gone
from aioinformer.errors import InformerStoppedError as InformerStoppedError
from aioinformer.errors import InvalidObjectError as InvalidObjectError
from aioinformer.errors import KeyFuncError as KeyFuncError
from aioinformer.errors import LeadershipLost as LeadershipLost
from aioinformer.errors import NotFound as NotFound
from aioinformer.errors import QueueEmpty as QueueEmpty
from aioinformer.errors import ReadOnlyObjectError as ReadOnlyObjectError
from aioinformer.errors import Requeue as Requeue
from aioinformer.errors import SelectorError as SelectorError
from aioinformer.errors import ServerError as ServerError
from aioinformer.errors import ShutDown as ShutDown
from aioinformer.errors import TLSVerificationError as TLSVerificationError
from aioinformer.errors import TooManyRequests as TooManyRequests
from aioinformer.errors import TransportError as TransportError
from aioinformer.errors import Unauthorized as Unauthorized
from aioinformer.errors import UnknownResourceError as UnknownResourceError
from aioinformer.errors import UnprocessableEntity as UnprocessableEntity
from aioinformer.errors import WatchError as WatchError
from aioinformer.errors import WatchTimeout as WatchTimeout
from aioinformer.factory import SharedInformerFactory as SharedInformerFactory
from aioinformer.indexer import NAMESPACE_INDEX as NAMESPACE_INDEX
from aioinformer.indexer import Indexer as Indexer
from aioinformer.indexer import Indexers as Indexers
from aioinformer.indexer import IndexFunc as IndexFunc
from aioinformer.indexer import KeyFunc as KeyFunc
from aioinformer.indexer import meta_namespace_key as meta_namespace_key
from aioinformer.indexer import namespace_index_func as namespace_index_func
from aioinformer.indexer import split_meta_namespace_key as split_meta_namespace_key
from aioinformer.informer import CacheMode as CacheMode
from aioinformer.informer import EventHandler as EventHandler
from aioinformer.informer import InformerStatistics as InformerStatistics
from aioinformer.informer import SharedIndexInformer as SharedIndexInformer
from aioinformer.lister import EventStream as EventStream
from aioinformer.lister import Lister as Lister
from aioinformer.listwatch import ListerWatcher as ListerWatcher
from aioinformer.listwatch import ListOptions as ListOptions
from aioinformer.listwatch import ObjectList as ObjectList
from aioinformer.listwatch import WatchEvent as WatchEvent
from aioinformer.models import DeletedFinalStateUnknown as DeletedFinalStateUnknown
from aioinformer.models import KubeObject as KubeObject
from aioinformer.models import ObjectMeta as ObjectMeta
from aioinformer.models import Status as Status
from aioinformer.processor import HandlerRegistration as HandlerRegistration
from aioinformer.processor import HandlerStatistics as HandlerStatistics
from aioinformer.reflector import ReflectorOptions as ReflectorOptions
from aioinformer.transforms import strip_managed_fields as strip_managed_fields
from aioinformer.workqueue import DelayingQueue as DelayingQueue
from aioinformer.workqueue import RateLimiter as RateLimiter
from aioinformer.workqueue import RateLimitingQueue as RateLimitingQueue
from aioinformer.workqueue import WorkQueue as WorkQueue
from aioinformer.workqueue import default_controller_rate_limiter as default_controller_rate_limiter
from aioinformer.workqueue import set_metrics_provider as set_metrics_provider

if TYPE_CHECKING:
    from aioinformer.operator.controller import Controller as Controller
    from aioinformer.operator.controller import Reconcile as Reconcile
    from aioinformer.operator.controller import enqueue_owner as enqueue_owner
    from aioinformer.operator.leaderelection import LeaderElector as LeaderElector
    from aioinformer.operator.leaderelection import LeaseLock as LeaseLock

__all__ = [
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


# The operator's names, imported the first time one is read: an informer does not pay for
# the toolkit (18 modules, and aiohttp's web server behind the Manager's endpoints).
_HOMES = {
    "aioinformer.operator.controller": ("Controller", "Reconcile", "enqueue_owner"),
    "aioinformer.operator.leaderelection": ("LeaderElector", "LeaseLock"),
}

if not TYPE_CHECKING:  # type checkers read the imports above, and report old names as missing
    from aioinformer._kernel.moved import moved_names

    __getattr__, __dir__ = lazy_exports(__name__, _HOMES, otherwise=moved_names(__name__, frames=1))
