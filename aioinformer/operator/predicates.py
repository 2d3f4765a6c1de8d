"""Event predicates: which informer events may enqueue a key (controller-runtime's
``pkg/predicate``).

Role: a :class:`~aioinformer.operator.controller.Controller` watch consults its predicates on every
event before it maps the object to keys; an event any predicate refuses enqueues nothing.
The usual use is to ignore updates that do not matter to the reconcile, such as status
writes (:data:`generation_changed`) or periodic resyncs (:data:`resource_version_changed`).

Input: the objects of one event, as the informer's handlers get them (raw dicts, compact
cache objects, or pydantic models when the informer has ``model=``); the predicates here
read them through the same metadata accessors as the rest of the library, so they work on
all of them. Output: ``True`` to let the event through, ``False`` to drop it.

A predicate is either

* a plain callable ``(old, new) -> bool``, consulted on updates only: adds and deletes
  always pass it (as controller-runtime's ``GenerationChangedPredicate`` lets them); or
* a :class:`Predicate`, whose ``create(obj)``, ``update(old, new)`` and ``delete(obj)``
  each decide one kind of event (subclass it and override what you filter; the defaults
  pass everything). A ``Predicate`` is itself callable as its ``update``.

The built-in ones are update filters; on an update whose ``old`` or ``new`` is ``None`` they
answer ``False``, as controller-runtime's do:

================================  ========================================================
predicate                         an update passes when
================================  ========================================================
:data:`generation_changed`        ``metadata.generation`` differs (spec changed; not a
                                  status, label or annotation write, not a resync)
:data:`labels_changed`            the labels differ (absent and empty count as equal)
:data:`annotations_changed`       the annotations differ (absent and empty count as equal)
:data:`resource_version_changed`  ``metadata.resourceVersion`` differs (any write; never a
                                  resync, which hands over the same state twice)
================================  ========================================================

Combinators: :func:`all_of`, :func:`any_of` and :func:`not_` (controller-runtime's
``And``, ``Or`` and ``Not``) combine predicates event kind by event kind. ``not_``
inverts every kind, so ``not_(generation_changed)`` drops adds and deletes too, exactly as
``predicate.Not`` does; :func:`object_filter` (``NewPredicateFuncs``) applies a test of
one object to every kind of event.

Ordering and task model: pure, synchronous calls made on the event loop by the informer's
handler; a predicate must not block and must not change the objects it reads.

Example::

    controller = Controller(
        "widgets",
        reconcile,
        informers=[widgets],
        predicates=[any_of(generation_changed, labels_changed)],
    )
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeAlias

from aioinformer._objects.meta import annotations_of, generation_of, labels_of, resource_version_of

__all__ = [
    "Predicate",
    "PredicateLike",
    "UpdatePredicate",
    "all_of",
    "annotations_changed",
    "any_of",
    "as_predicate",
    "as_predicates",
    "generation_changed",
    "labels_changed",
    "not_",
    "object_filter",
    "resource_version_changed",
]

UpdatePredicate: TypeAlias = Callable[[Any, Any], bool]
"""``(old, new) -> bool``: a predicate of updates alone."""


class Predicate:
    """Decides, event kind by event kind, whether an informer event may enqueue keys.

    Each method returns ``True`` to let the event through; these defaults pass every
    event. Subclass and override the kinds you filter. ``predicate(old, new)`` is
    ``predicate.update(old, new)``, so a ``Predicate`` is also an :data:`UpdatePredicate`.
    """

    __slots__ = ()

    def create(self, obj: Any) -> bool:
        """An add: ``obj`` is new to the cache (initial list included)."""
        return True

    def update(self, old: Any, new: Any) -> bool:
        """An update from ``old`` to ``new`` (a resync hands over the same state twice)."""
        return True

    def delete(self, obj: Any) -> bool:
        """A delete: ``obj`` is the last state known (for a delete the watch missed, the
        tombstone's last state)."""
        return True

    def __call__(self, old: Any, new: Any) -> bool:
        return self.update(old, new)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


PredicateLike: TypeAlias = Predicate | UpdatePredicate
"""What ``predicates=`` accepts: a :class:`Predicate`, or a callable of updates alone."""


class _UpdateOnly(Predicate):
    """A plain callable consulted on updates; adds and deletes pass."""

    __slots__ = ("_update",)

    def __init__(self, update: UpdatePredicate) -> None:
        self._update = update

    def update(self, old: Any, new: Any) -> bool:
        return bool(self._update(old, new))

    def __repr__(self) -> str:
        return f"<update predicate {getattr(self._update, '__qualname__', self._update)!r}>"


def as_predicate(predicate: PredicateLike) -> Predicate:
    """``predicate`` as a :class:`Predicate`: itself, or a plain callable wrapped to be
    consulted on updates only. Raises ``TypeError`` for anything else."""
    if isinstance(predicate, Predicate):
        return predicate
    if not callable(predicate):
        raise TypeError(
            f"a predicate must be a Predicate or a callable (old, new) -> bool,"
            f" got {type(predicate).__name__}"
        )
    return _UpdateOnly(predicate)


def as_predicates(predicates: Iterable[PredicateLike]) -> tuple[Predicate, ...]:
    """Each of ``predicates`` through :func:`as_predicate`. Raises ``TypeError`` for a
    single predicate given where a collection of them is expected."""
    if callable(predicates):
        raise TypeError(
            f"predicates must be a collection of predicates, got the single predicate"
            f" {predicates!r}: wrap it in a list"
        )
    return tuple(as_predicate(p) for p in predicates)


class _Named(Predicate):
    """An update filter comparing one metadata field of ``old`` and ``new``."""

    __slots__ = ("_changed", "_name")

    def __init__(self, name: str, changed: Callable[[Any, Any], bool]) -> None:
        self._name = name
        self._changed = changed

    def update(self, old: Any, new: Any) -> bool:
        if old is None or new is None:
            return False
        return self._changed(old, new)

    def __repr__(self) -> str:
        return f"<predicate {self._name}>"


_NO_ENTRIES: Final[Mapping[str, str]] = {}


generation_changed: Final[Predicate] = _Named(
    "generation_changed", lambda old, new: generation_of(old) != generation_of(new)
)
"""Updates pass when ``metadata.generation`` changed: the spec changed. Status, label and
annotation writes and resyncs do not pass. Kinds without a generation (ConfigMaps) never
pass; custom resources without a status subresource move their generation on status
writes too."""

labels_changed: Final[Predicate] = _Named(
    "labels_changed",
    lambda old, new: (labels_of(old) or _NO_ENTRIES) != (labels_of(new) or _NO_ENTRIES),
)
"""Updates pass when ``metadata.labels`` changed."""

annotations_changed: Final[Predicate] = _Named(
    "annotations_changed",
    lambda old, new: (annotations_of(old) or _NO_ENTRIES) != (annotations_of(new) or _NO_ENTRIES),
)
"""Updates pass when ``metadata.annotations`` changed."""

resource_version_changed: Final[Predicate] = _Named(
    "resource_version_changed",
    lambda old, new: resource_version_of(old) != resource_version_of(new),
)
"""Updates pass when ``metadata.resourceVersion`` changed: every real write passes, the
periodic resyncs (which deliver the same state as old and new) do not."""


class _Combined(Predicate):
    """Predicates joined by ``all`` or ``any``, event kind by event kind."""

    __slots__ = ("_join", "_predicates")

    def __init__(
        self, join: Callable[[Iterable[bool]], bool], predicates: tuple[Predicate, ...]
    ) -> None:
        self._join = join
        self._predicates = predicates

    def create(self, obj: Any) -> bool:
        return self._join(p.create(obj) for p in self._predicates)

    def update(self, old: Any, new: Any) -> bool:
        return self._join(p.update(old, new) for p in self._predicates)

    def delete(self, obj: Any) -> bool:
        return self._join(p.delete(obj) for p in self._predicates)

    def __repr__(self) -> str:
        return f"{self._join.__name__}_of{self._predicates!r}"


class _Not(Predicate):
    __slots__ = ("_predicate",)

    def __init__(self, predicate: Predicate) -> None:
        self._predicate = predicate

    def create(self, obj: Any) -> bool:
        return not self._predicate.create(obj)

    def update(self, old: Any, new: Any) -> bool:
        return not self._predicate.update(old, new)

    def delete(self, obj: Any) -> bool:
        return not self._predicate.delete(obj)

    def __repr__(self) -> str:
        return f"not_({self._predicate!r})"


class _ObjectFilter(Predicate):
    __slots__ = ("_test",)

    def __init__(self, test: Callable[[Any], bool]) -> None:
        self._test = test

    def create(self, obj: Any) -> bool:
        return bool(self._test(obj))

    def update(self, old: Any, new: Any) -> bool:
        return bool(self._test(new))

    def delete(self, obj: Any) -> bool:
        return bool(self._test(obj))

    def __repr__(self) -> str:
        return f"<object_filter {getattr(self._test, '__qualname__', self._test)!r}>"


def all_of(*predicates: PredicateLike) -> Predicate:
    """Passes an event when every one of ``predicates`` does (none given: every event),
    checking them in order and stopping at the first refusal."""
    return _Combined(all, tuple(as_predicate(p) for p in predicates))


def any_of(*predicates: PredicateLike) -> Predicate:
    """Passes an event when at least one of ``predicates`` does (none given: no event),
    checking them in order and stopping at the first that passes."""
    return _Combined(any, tuple(as_predicate(p) for p in predicates))


def not_(predicate: PredicateLike) -> Predicate:
    """Passes exactly the events ``predicate`` refuses, of every kind: a plain callable
    lets adds and deletes through, so ``not_`` of one drops them."""
    return _Not(as_predicate(predicate))


def object_filter(test: Callable[[Any], bool]) -> Predicate:
    """Passes an event when ``test(obj)`` is true for its object: the added or deleted
    object, or an update's new state.

    Example: ``object_filter(lambda obj: namespace_of(obj) != "kube-system")``.
    """
    return _ObjectFilter(test)
