"""The protobuf messages every kind's schema embeds: ``metav1.ObjectMeta`` and the
references between objects.

Role: what the kinds' messages share (``_protobuf_workloads``, ``_protobuf_services``,
``_protobuf_machinery``, and the kinds ``_protobuf``'s table describes inline), fields
numbered as in ``k8s.io/apimachinery``'s and ``k8s.io/api``'s ``generated.proto``:
:data:`METADATA`, an object's field 1, its ``ObjectMeta`` with the owner references
(``selfLink``, the timestamps and ``managedFields``, which the server sets, are
skipped); :data:`OBJECT_REFERENCE`, a ``core/v1.ObjectReference``; and
:data:`LOCAL_OBJECT_REFERENCE`, a name in the object's own namespace.

Task model: constants, read by
:func:`~aioinformer.testing._protobuf_schema.decode_message` wherever a message embeds
them.
"""

from __future__ import annotations

from typing import Final

from aioinformer.testing._protobuf_schema import SKIP, Field, Schema

__all__ = ["LOCAL_OBJECT_REFERENCE", "METADATA", "OBJECT_REFERENCE"]

_OWNER_REFERENCE: Final[Schema] = {
    1: Field("kind", "string"),
    3: Field("name", "string"),
    4: Field("uid", "string"),
    5: Field("apiVersion", "string"),
    6: Field("controller", "bool", optional=True),
    7: Field("blockOwnerDeletion", "bool", optional=True),
}

_OBJECT_META: Final[Schema] = {
    1: Field("name", "string"),
    2: Field("generateName", "string"),
    3: Field("namespace", "string"),
    4: SKIP,  # selfLink
    5: Field("uid", "string"),
    6: Field("resourceVersion", "string"),
    7: Field("generation", "int"),
    8: SKIP,  # creationTimestamp
    9: SKIP,  # deletionTimestamp
    10: Field("deletionGracePeriodSeconds", "int", optional=True),
    11: Field("labels", "string", map=True),
    12: Field("annotations", "string", map=True),
    13: Field("ownerReferences", "message", _OWNER_REFERENCE, repeated=True),
    14: Field("finalizers", "string", repeated=True),
    17: SKIP,  # managedFields
}

OBJECT_REFERENCE: Final[Schema] = {
    1: Field("kind", "string"),
    2: Field("namespace", "string"),
    3: Field("name", "string"),
    4: Field("uid", "string"),
    5: Field("apiVersion", "string"),
    6: Field("resourceVersion", "string"),
    7: Field("fieldPath", "string"),
}

METADATA: Final = Field("metadata", "message", _OBJECT_META)

LOCAL_OBJECT_REFERENCE: Final[Schema] = {1: Field("name", "string")}
