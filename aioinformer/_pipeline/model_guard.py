"""Validating cached objects into an informer's ``model`` without letting one bad object
break a read.

Role: the one place where a typed informer (``model=``) turns raw objects into models.
Listers, ``events()`` streams and handlers all validate through the informer's
:class:`ModelGuard`, so an object the model rejects is reported and counted in one place.

Input: raw objects (decoded dicts) and tombstones. Output: model instances, or an
:class:`~aioinformer.errors.InvalidObjectError` naming the object's key,
resourceVersion and validation error. What each reader does with that error is its own
rule: a lister's ``list()``/``by_index()`` and an ``events()`` stream skip the object, a
lister's ``get()`` raises the error, a handler is not called for an add or an update whose
new object is invalid (an invalid ``old`` is handed over as ``None``; an invalid deleted
object as a tombstone without a last state).

Reporting: the first failure of a given key at a given resourceVersion logs one WARNING
and counts once in :attr:`ModelGuard.invalid_objects`; reading the same version again,
from any reader, neither logs nor counts, so a lister polled in a loop does not flood the
log. A new resourceVersion of the key that fails again is reported again.

Ordering and task model: synchronous, on the event loop's thread; no task of its own.
Only typed informers have a guard: a raw informer's per-event path never reaches here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from aioinformer._objects.meta import meta_namespace_key, resource_version_of
from aioinformer._objects.view import ObjectView
from aioinformer.errors import InvalidObjectError, KeyFuncError
from aioinformer.models import DeletedFinalStateUnknown

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["ModelGuard", "SkipDelivery", "converted_deleted", "converted_old"]

logger = logging.getLogger("aioinformer.informer")

M = TypeVar("M")


class ModelGuard(Generic[M]):
    """Validates objects into ``model`` (a pydantic model class), reporting each invalid
    object version once."""

    __slots__ = ("_reported", "_validate", "invalid_objects", "model", "source")

    def __init__(self, model: type[M], *, source: str = "") -> None:
        self.model = model
        self.source = source
        """Named in the warning (the informer's name)."""
        self._validate = model.model_validate  # type: ignore[attr-defined]
        self.invalid_objects = 0
        """Distinct invalid object versions met so far (key and resourceVersion)."""
        # key -> the resourceVersion last reported for it: what makes a re-read silent.
        self._reported: dict[str, str | None] = {}

    def validate(self, obj: Any) -> M:
        """``obj`` as the model (returned as is when it already is one); raises
        :class:`InvalidObjectError` when it does not validate."""
        if isinstance(obj, self.model):
            return obj
        if type(obj) is ObjectView:
            # One decode of the whole object is cheaper to validate than a view's fields.
            obj = obj.to_dict()
        try:
            return self._validate(obj)  # type: ignore[no-any-return]
        except ValueError as error:
            # pydantic's ValidationError is a ValueError; anything else is a bug in a
            # validator and propagates as it would without the guard.
            raise self._invalid(obj, error) from error

    def validate_or_tombstone(self, obj: Any) -> Any:
        """For a deleted object or a tombstone: ``obj`` validated (a tombstone's last state
        validated inside it), or, when that is invalid, a tombstone without a last state,
        so the deletion is still delivered."""
        if isinstance(obj, DeletedFinalStateUnknown):
            inner = obj.obj
            if inner is None or isinstance(inner, self.model):
                return obj
            try:
                return DeletedFinalStateUnknown(obj.key, self.validate(inner))
            except InvalidObjectError:
                return DeletedFinalStateUnknown(obj.key, None)
        try:
            return self.validate(obj)
        except InvalidObjectError as error:
            return DeletedFinalStateUnknown(error.key, None)

    def _invalid(self, obj: Any, error: ValueError) -> InvalidObjectError:
        try:
            key = meta_namespace_key(obj)
        except KeyFuncError:
            key = "<no metadata.name>"
        version = resource_version_of(obj)
        reported = self._reported
        if key not in reported or reported[key] != version:
            reported[key] = version
            self.invalid_objects += 1
            logger.warning(
                "informer %s: object %s (resourceVersion %s) does not validate into %s and"
                " is skipped by reads: %s",
                self.source,
                key,
                version,
                self.model.__name__,
                error,
            )
        return InvalidObjectError(key, version, error)

    def __repr__(self) -> str:
        return f"<ModelGuard {self.model.__name__} invalid_objects={self.invalid_objects}>"


class SkipDelivery(Exception):
    """Raised by a bound call, before the handler is called, when the object to deliver
    does not validate into the informer's model: the listener skips that notification.
    Its own type, so an :class:`~aioinformer.errors.InvalidObjectError` the handler
    itself lets out still counts as the handler's failure."""


def converted_old(convert: Callable[[Any], Any], old: Any) -> Any:
    """An update's ``old`` converted, or ``None`` when it does not validate: the update
    still carries the valid new state."""
    try:
        return convert(old)
    except InvalidObjectError:
        return None


def converted_deleted(convert: Callable[[Any], Any], obj: Any) -> Any:
    """A deleted object converted, or, when it does not validate, a tombstone without a
    last state: the deletion itself must still reach the reader."""
    try:
        return convert(obj)
    except InvalidObjectError as error:
        return DeletedFinalStateUnknown(error.key, None)
