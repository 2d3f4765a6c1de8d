"""aioinformer: asyncio-native Kubernetes informers.

Reflectors list and watch the API server into a DeltaFIFO; one task pops it into an
indexed cache and dispatches to per-handler queues. This module only re-exports the
public names; each lives in the module named for its concept.
"""

from __future__ import annotations

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
from aioinformer.listwatch import ListerWatcher as ListerWatcher
from aioinformer.listwatch import ListOptions as ListOptions
from aioinformer.listwatch import ObjectList as ObjectList
from aioinformer.listwatch import WatchEvent as WatchEvent
from aioinformer.models import DeletedFinalStateUnknown as DeletedFinalStateUnknown
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

__version__ = "0.1.0"

__all__ = [
    "AioinformerError",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "DeletedFinalStateUnknown",
    "FIFOClosedError",
    "Forbidden",
    "Gone",
    "InformerStoppedError",
    "KeyFuncError",
    "KubeObject",
    "ListMeta",
    "ListOptions",
    "ListerWatcher",
    "NotFound",
    "ObjectList",
    "ObjectMeta",
    "OwnerReference",
    "QueueEmpty",
    "RawList",
    "RawListMeta",
    "RawMeta",
    "RawObject",
    "Requeue",
    "ResourceExpired",
    "SelectorError",
    "ServerError",
    "ShutDown",
    "Status",
    "StatusCause",
    "StatusDetails",
    "TLSVerificationError",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "UnknownResourceError",
    "UnprocessableEntity",
    "WatchError",
    "WatchEvent",
    "WatchTimeout",
]
