"""The protobuf messages client-go's own machinery writes: leader election's Leases and
recorders' Events.

Role: the schemas of ``coordination.k8s.io/v1`` Leases (the lock a leader elector takes
and renews) and of Events in both groups, ``v1`` (:data:`CORE_EVENT`, the older
recorder's) and ``events.k8s.io/v1`` (:data:`EVENT`), for ``_protobuf``'s table of kinds.
Fields are numbered as in ``k8s.io/api``'s ``generated.proto``; the times Go keeps to the
microsecond (a lease's acquire and renew times, an event's ``eventTime`` and series) are
``metav1.MicroTime``.

Task model: constants; nothing here runs but their construction at import.
"""

from __future__ import annotations

from typing import Final

from aioinformer.testing._protobuf_meta import METADATA, OBJECT_REFERENCE
from aioinformer.testing._protobuf_schema import Field, Schema

__all__ = ["CORE_EVENT", "EVENT", "LEASE"]

_LEASE_SPEC: Final[Schema] = {
    1: Field("holderIdentity", "string", optional=True),
    2: Field("leaseDurationSeconds", "int", optional=True),
    3: Field("acquireTime", "micro_time", optional=True),
    4: Field("renewTime", "micro_time", optional=True),
    5: Field("leaseTransitions", "int", optional=True),
    6: Field("strategy", "string", optional=True),
    7: Field("preferredHolder", "string", optional=True),
}

LEASE: Final[Schema] = {1: METADATA, 2: Field("spec", "message", _LEASE_SPEC)}

_EVENT_SOURCE: Final[Schema] = {1: Field("component", "string"), 2: Field("host", "string")}

_EVENT_SERIES: Final[Schema] = {
    1: Field("count", "int"),
    2: Field("lastObservedTime", "micro_time"),
}

CORE_EVENT: Final[Schema] = {
    1: METADATA,
    2: Field("involvedObject", "message", OBJECT_REFERENCE),
    3: Field("reason", "string"),
    4: Field("message", "string"),
    5: Field("source", "message", _EVENT_SOURCE),
    6: Field("firstTimestamp", "time"),
    7: Field("lastTimestamp", "time"),
    8: Field("count", "int"),
    9: Field("type", "string"),
    10: Field("eventTime", "micro_time"),
    11: Field("series", "message", _EVENT_SERIES, optional=True),
    12: Field("action", "string"),
    13: Field("related", "message", OBJECT_REFERENCE, optional=True),
    14: Field("reportingComponent", "string"),
    15: Field("reportingInstance", "string"),
}

EVENT: Final[Schema] = {
    1: METADATA,
    2: Field("eventTime", "micro_time"),
    3: Field("series", "message", _EVENT_SERIES, optional=True),
    4: Field("reportingController", "string"),
    5: Field("reportingInstance", "string"),
    6: Field("action", "string"),
    7: Field("reason", "string"),
    8: Field("regarding", "message", OBJECT_REFERENCE),
    9: Field("related", "message", OBJECT_REFERENCE, optional=True),
    10: Field("note", "string"),
    11: Field("type", "string"),
    12: Field("deprecatedSource", "message", _EVENT_SOURCE),
    13: Field("deprecatedFirstTimestamp", "time"),
    14: Field("deprecatedLastTimestamp", "time"),
    15: Field("deprecatedCount", "int"),
}
