"""aioinformer: asyncio-native Kubernetes informers.

Reflectors list and watch the API server into a DeltaFIFO; one task pops it into an
indexed cache and dispatches to per-handler queues. This module only re-exports the
public names; each lives in the module named for its concept.
"""

from __future__ import annotations

from aioinformer._clock import Clock as Clock
from aioinformer._clock import LoopClock as LoopClock
from aioinformer._clock import default_clock as default_clock
from aioinformer.client import DEFAULT_MAX_LIST_BYTES as DEFAULT_MAX_LIST_BYTES
from aioinformer.client import DEFAULT_MAX_OBJECT_BYTES as DEFAULT_MAX_OBJECT_BYTES
from aioinformer.client import GVR as GVR
from aioinformer.client import Client as Client
from aioinformer.client import PatchType as PatchType
from aioinformer.client import ResourceClient as ResourceClient
from aioinformer.client import ResourceInfo as ResourceInfo
from aioinformer.config import SERVICE_ACCOUNT_DIR as SERVICE_ACCOUNT_DIR
from aioinformer.config import Config as Config
from aioinformer.config import ExecConfig as ExecConfig
from aioinformer.config import load_config as load_config
from aioinformer.config import load_incluster_config as load_incluster_config
from aioinformer.config import load_kube_config as load_kube_config
from aioinformer.controller import Controller as Controller
from aioinformer.controller import ControllerState as ControllerState
from aioinformer.controller import ControllerStatistics as ControllerStatistics
from aioinformer.controller import EnqueueFunc as EnqueueFunc
from aioinformer.controller import Reconcile as Reconcile
from aioinformer.controller import enqueue_owner as enqueue_owner
from aioinformer.delta_fifo import Delta as Delta
from aioinformer.delta_fifo import DeltaFIFO as DeltaFIFO
from aioinformer.delta_fifo import Deltas as Deltas
from aioinformer.delta_fifo import DeltaType as DeltaType
from aioinformer.delta_fifo import KnownObjects as KnownObjects
from aioinformer.delta_fifo import PopProcessFunc as PopProcessFunc
from aioinformer.delta_fifo import TransformFunc as TransformFunc
from aioinformer.errors import AioinformerError as AioinformerError
from aioinformer.errors import AlreadyExists as AlreadyExists
from aioinformer.errors import ApiError as ApiError
from aioinformer.errors import BadRequest as BadRequest
from aioinformer.errors import ConfigError as ConfigError
from aioinformer.errors import Conflict as Conflict
from aioinformer.errors import ConnectionFailed as ConnectionFailed
from aioinformer.errors import FIFOClosedError as FIFOClosedError
from aioinformer.errors import Forbidden as Forbidden
from aioinformer.errors import Gone as Gone
from aioinformer.errors import InformerStoppedError as InformerStoppedError
from aioinformer.errors import KeyFuncError as KeyFuncError
from aioinformer.errors import LeadershipLost as LeadershipLost
from aioinformer.errors import NotFound as NotFound
from aioinformer.errors import QueueEmpty as QueueEmpty
from aioinformer.errors import Requeue as Requeue
from aioinformer.errors import ResourceExpired as ResourceExpired
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
from aioinformer.errors import api_error_from_status as api_error_from_status
from aioinformer.factory import InformerKey as InformerKey
from aioinformer.factory import SharedInformerFactory as SharedInformerFactory
from aioinformer.indexer import NAMESPACE_INDEX as NAMESPACE_INDEX
from aioinformer.indexer import Index as Index
from aioinformer.indexer import Indexer as Indexer
from aioinformer.indexer import Indexers as Indexers
from aioinformer.indexer import IndexFunc as IndexFunc
from aioinformer.indexer import KeyFunc as KeyFunc
from aioinformer.indexer import meta_namespace_key as meta_namespace_key
from aioinformer.indexer import namespace_index_func as namespace_index_func
from aioinformer.indexer import split_meta_namespace_key as split_meta_namespace_key
from aioinformer.informer import Event as Event
from aioinformer.informer import EventHandler as EventHandler
from aioinformer.informer import EventStream as EventStream
from aioinformer.informer import EventType as EventType
from aioinformer.informer import HandlerRegistration as HandlerRegistration
from aioinformer.informer import InformerState as InformerState
from aioinformer.informer import InformerStatistics as InformerStatistics
from aioinformer.informer import Lister as Lister
from aioinformer.informer import SharedIndexInformer as SharedIndexInformer
from aioinformer.labels import FieldRequirement as FieldRequirement
from aioinformer.labels import FieldSelector as FieldSelector
from aioinformer.labels import LabelRequirement as LabelRequirement
from aioinformer.labels import LabelSelector as LabelSelector
from aioinformer.labels import SelectorOperator as SelectorOperator
from aioinformer.labels import match_labels as match_labels
from aioinformer.labels import parse_field_selector as parse_field_selector
from aioinformer.labels import parse_label_selector as parse_label_selector
from aioinformer.labels import selector_from_set as selector_from_set
from aioinformer.leaderelection import JITTER_FACTOR as JITTER_FACTOR
from aioinformer.leaderelection import ElectorState as ElectorState
from aioinformer.leaderelection import LeaderElectionRecord as LeaderElectionRecord
from aioinformer.leaderelection import LeaderElector as LeaderElector
from aioinformer.leaderelection import LeaseLock as LeaseLock
from aioinformer.leaderelection import ResourceLock as ResourceLock
from aioinformer.leaderelection import lease_spec_to_record as lease_spec_to_record
from aioinformer.leaderelection import record_to_lease_spec as record_to_lease_spec
from aioinformer.listwatch import ADDED as ADDED
from aioinformer.listwatch import BOOKMARK as BOOKMARK
from aioinformer.listwatch import DELETED as DELETED
from aioinformer.listwatch import ERROR as ERROR
from aioinformer.listwatch import INITIAL_EVENTS_END_ANNOTATION as INITIAL_EVENTS_END_ANNOTATION
from aioinformer.listwatch import MODIFIED as MODIFIED
from aioinformer.listwatch import ListerWatcher as ListerWatcher
from aioinformer.listwatch import ListOptions as ListOptions
from aioinformer.listwatch import ObjectList as ObjectList
from aioinformer.listwatch import WatchEvent as WatchEvent
from aioinformer.models import DeletedFinalStateUnknown as DeletedFinalStateUnknown
from aioinformer.models import KubeConfig as KubeConfig
from aioinformer.models import KubeConfigAuthInfo as KubeConfigAuthInfo
from aioinformer.models import KubeConfigCluster as KubeConfigCluster
from aioinformer.models import KubeConfigContext as KubeConfigContext
from aioinformer.models import KubeConfigExec as KubeConfigExec
from aioinformer.models import KubeConfigExecEnvVar as KubeConfigExecEnvVar
from aioinformer.models import KubeConfigNamedAuthInfo as KubeConfigNamedAuthInfo
from aioinformer.models import KubeConfigNamedCluster as KubeConfigNamedCluster
from aioinformer.models import KubeConfigNamedContext as KubeConfigNamedContext
from aioinformer.models import KubeObject as KubeObject
from aioinformer.models import ListMeta as ListMeta
from aioinformer.models import ObjectMeta as ObjectMeta
from aioinformer.models import OwnerReference as OwnerReference
from aioinformer.models import RawList as RawList
from aioinformer.models import RawListMeta as RawListMeta
from aioinformer.models import RawMeta as RawMeta
from aioinformer.models import RawObject as RawObject
from aioinformer.models import Status as Status
from aioinformer.models import StatusCause as StatusCause
from aioinformer.models import StatusDetails as StatusDetails
from aioinformer.processor import ADD as ADD
from aioinformer.processor import DELETE as DELETE
from aioinformer.processor import MINIMUM_RESYNC_PERIOD as MINIMUM_RESYNC_PERIOD
from aioinformer.processor import UPDATE as UPDATE
from aioinformer.processor import HandlerStatistics as HandlerStatistics
from aioinformer.processor import Notification as Notification
from aioinformer.processor import NotificationKind as NotificationKind
from aioinformer.processor import OverflowPolicy as OverflowPolicy
from aioinformer.processor import ProcessorListener as ProcessorListener
from aioinformer.processor import SharedProcessor as SharedProcessor
from aioinformer.processor import determine_resync_period as determine_resync_period
from aioinformer.reflector import Reflector as Reflector
from aioinformer.reflector import ReflectorOptions as ReflectorOptions
from aioinformer.reflector import ReflectorState as ReflectorState
from aioinformer.reflector import ReflectorStatistics as ReflectorStatistics
from aioinformer.reflector import ReflectorStore as ReflectorStore
from aioinformer.reflector import WatchErrorHandler as WatchErrorHandler
from aioinformer.transforms import chain as chain
from aioinformer.transforms import keep_metadata_only as keep_metadata_only
from aioinformer.transforms import strip_managed_fields as strip_managed_fields
from aioinformer.watch import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
from aioinformer.watch import WatchStreamDecoder as WatchStreamDecoder
from aioinformer.watch import error_from_watch_status as error_from_watch_status
from aioinformer.watch import read_watch_stream as read_watch_stream
from aioinformer.workqueue import BucketRateLimiter as BucketRateLimiter
from aioinformer.workqueue import CounterMetric as CounterMetric
from aioinformer.workqueue import DelayingQueue as DelayingQueue
from aioinformer.workqueue import GaugeMetric as GaugeMetric
from aioinformer.workqueue import HistogramMetric as HistogramMetric
from aioinformer.workqueue import (
    ItemExponentialFailureRateLimiter as ItemExponentialFailureRateLimiter,
)
from aioinformer.workqueue import ItemFastSlowRateLimiter as ItemFastSlowRateLimiter
from aioinformer.workqueue import MaxOfRateLimiter as MaxOfRateLimiter
from aioinformer.workqueue import MetricsProvider as MetricsProvider
from aioinformer.workqueue import QueueStatistics as QueueStatistics
from aioinformer.workqueue import RateLimiter as RateLimiter
from aioinformer.workqueue import RateLimitingQueue as RateLimitingQueue
from aioinformer.workqueue import SettableGaugeMetric as SettableGaugeMetric
from aioinformer.workqueue import WithMaxWaitRateLimiter as WithMaxWaitRateLimiter
from aioinformer.workqueue import WorkQueue as WorkQueue
from aioinformer.workqueue import default_controller_rate_limiter as default_controller_rate_limiter
from aioinformer.workqueue import get_metrics_provider as get_metrics_provider
from aioinformer.workqueue import set_metrics_provider as set_metrics_provider

__version__ = "0.1.0"

__all__ = [
    "ADD",
    "ADDED",
    "AioinformerError",
    "AlreadyExists",
    "ApiError",
    "BOOKMARK",
    "BadRequest",
    "BucketRateLimiter",
    "Client",
    "Clock",
    "Config",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "Controller",
    "ControllerState",
    "ControllerStatistics",
    "CounterMetric",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_LIST_BYTES",
    "DEFAULT_MAX_OBJECT_BYTES",
    "DELETE",
    "DELETED",
    "DelayingQueue",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "ERROR",
    "ElectorState",
    "EnqueueFunc",
    "Event",
    "EventHandler",
    "EventStream",
    "EventType",
    "ExecConfig",
    "FIFOClosedError",
    "FieldRequirement",
    "FieldSelector",
    "Forbidden",
    "GVR",
    "GaugeMetric",
    "Gone",
    "HandlerRegistration",
    "HandlerStatistics",
    "HistogramMetric",
    "INITIAL_EVENTS_END_ANNOTATION",
    "Index",
    "IndexFunc",
    "Indexer",
    "Indexers",
    "InformerKey",
    "InformerState",
    "InformerStatistics",
    "InformerStoppedError",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "JITTER_FACTOR",
    "KeyFunc",
    "KeyFuncError",
    "KnownObjects",
    "KubeConfig",
    "KubeConfigAuthInfo",
    "KubeConfigCluster",
    "KubeConfigContext",
    "KubeConfigExec",
    "KubeConfigExecEnvVar",
    "KubeConfigNamedAuthInfo",
    "KubeConfigNamedCluster",
    "KubeConfigNamedContext",
    "KubeObject",
    "LabelRequirement",
    "LabelSelector",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeadershipLost",
    "LeaseLock",
    "ListMeta",
    "ListOptions",
    "Lister",
    "ListerWatcher",
    "LoopClock",
    "MINIMUM_RESYNC_PERIOD",
    "MODIFIED",
    "MaxOfRateLimiter",
    "MetricsProvider",
    "NAMESPACE_INDEX",
    "NotFound",
    "Notification",
    "NotificationKind",
    "ObjectList",
    "ObjectMeta",
    "OverflowPolicy",
    "OwnerReference",
    "PatchType",
    "PopProcessFunc",
    "ProcessorListener",
    "QueueEmpty",
    "QueueStatistics",
    "RateLimiter",
    "RateLimitingQueue",
    "RawList",
    "RawListMeta",
    "RawMeta",
    "RawObject",
    "Reconcile",
    "Reflector",
    "ReflectorOptions",
    "ReflectorState",
    "ReflectorStatistics",
    "ReflectorStore",
    "Requeue",
    "ResourceClient",
    "ResourceExpired",
    "ResourceInfo",
    "ResourceLock",
    "SERVICE_ACCOUNT_DIR",
    "SelectorError",
    "SelectorOperator",
    "ServerError",
    "SettableGaugeMetric",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "SharedProcessor",
    "ShutDown",
    "Status",
    "StatusCause",
    "StatusDetails",
    "TLSVerificationError",
    "TooManyRequests",
    "TransformFunc",
    "TransportError",
    "UPDATE",
    "Unauthorized",
    "UnknownResourceError",
    "UnprocessableEntity",
    "WatchError",
    "WatchErrorHandler",
    "WatchEvent",
    "WatchStreamDecoder",
    "WatchTimeout",
    "WithMaxWaitRateLimiter",
    "WorkQueue",
    "api_error_from_status",
    "chain",
    "default_clock",
    "default_controller_rate_limiter",
    "determine_resync_period",
    "enqueue_owner",
    "error_from_watch_status",
    "get_metrics_provider",
    "keep_metadata_only",
    "lease_spec_to_record",
    "load_config",
    "load_incluster_config",
    "load_kube_config",
    "match_labels",
    "meta_namespace_key",
    "namespace_index_func",
    "parse_field_selector",
    "parse_label_selector",
    "read_watch_stream",
    "record_to_lease_spec",
    "selector_from_set",
    "set_metrics_provider",
    "split_meta_namespace_key",
    "strip_managed_fields",
]
