"""The base and the scalar types the generated models of :mod:`aioinformer.k8s` share.

Role: what every generated module imports; nothing here is generated.

* :class:`K8sModel`: the base of every non-kind type. Unknown fields are kept
  (``extra="allow"``), fields are filled by alias or by name (``populate_by_name``), and
  the class is built on its first validation, not at import (``defer_build``): a group
  module defines hundreds of classes and most programs touch a few.
* ``Time``, ``MicroTime``: ``str``, the RFC 3339 text exactly as the server sent it. A
  ``datetime`` would not round-trip byte for byte (``Z`` against ``+00:00``, the
  microseconds of a ``MicroTime``), and writing an object back must not change it; parse
  with ``datetime.fromisoformat(value)`` where a value is needed.
* ``Quantity``: ``str | int | float`` as sent (``"500m"``, ``"1Gi"``, ``2``); the server
  always answers with the canonical string.
* ``IntOrString``: ``int | str`` (a port number or a port name, ``"25%"``), as sent.

Example::

    class Thing(K8sModel):
        size: Quantity | None = None
"""

from __future__ import annotations

from typing import TypeAlias

from pydantic import BaseModel, ConfigDict

__all__ = ["IntOrString", "K8sModel", "MicroTime", "Quantity", "Time"]

Time: TypeAlias = str
MicroTime: TypeAlias = str
# int before str: pydantic's smart union keeps each JSON value's own type either way.
IntOrString: TypeAlias = int | str
Quantity: TypeAlias = str | int | float

_CONFIG = ConfigDict(defer_build=True)
"""What the generated kinds add to :class:`~aioinformer.models.KubeObject`'s config."""


class K8sModel(BaseModel):
    """Base of the generated non-kind types: unknown fields kept, aliases or names
    accepted, built lazily."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)
