"""Conversion between the versions of a CustomResourceDefinition, through a hub version.

Role: the logic of a CRD's conversion webhook, as controller-runtime's
``pkg/webhook/conversion`` with its ``Hub`` and ``Convertible`` is for Go. A CRD that
serves several versions stores each object in one of them; when a client reads another,
kube-apiserver sends the objects to the webhook in a ConversionReview and serves what it
answers. One version is the **hub**; every other (a **spoke**) has a converter to the hub
and one from it, so ``n`` versions need ``2(n-1)`` converters and never one per pair:

* spoke to hub: the spoke's ``to_hub``; hub to spoke: the spoke's ``from_hub``;
* spoke ``A`` to spoke ``B``: ``A``'s ``to_hub``, then ``B``'s ``from_hub``;
* a version to itself: the object unchanged (controller-runtime answers Failure here;
  kube-apiserver never asks, as it sends only objects of another version).

Converters are written on dicts (:meth:`Conversion.to_hub`, :meth:`Conversion.from_hub`)
or on pydantic models, the spokes implementing :class:`Convertible`
(:meth:`Conversion.from_models`); either kind may be sync or async, which is detected
once, when it is registered. A converter gets its own copy of the object. It need not
set ``apiVersion`` (left as it came in or absent, it is set to the version converted to)
nor ``kind`` (absent, it is kept).

Input: :meth:`Conversion.review` takes a ConversionReview ``apiextensions.k8s.io/v1``
body, decoded (``request``: ``uid``, ``desiredAPIVersion``, ``objects``). Output: the
ConversionReview answer (``response``: ``uid``, ``convertedObjects``, ``result``), the
objects in the request's order, one for one. ``review`` never raises for what a request
or a converter does: a request that is not a ConversionReview v1, without a uid, for a
version or group this conversion does not serve, an object of another kind, a converter
that raises or returns something else than an object, all answer ``result.status:
Failure`` with a message naming the object (``objects[2] (default/w3)``) and the cause.
kube-apiserver then fails the client's read with that message.

Before answering, each converted object is held to the rules kube-apiserver applies to a
webhook's answer (apiextensions-apiserver's ``webhook_converter.go``), so that a broken
converter is a Failure that says what broke rather than the API server's refusal: the
desired ``apiVersion``, the same ``kind``, the same name, namespace and uid; labels and
annotations the converter's, but valid; every other metadata field restored from the
request, as the API server restores it.

Task model: ``review`` converts the objects one after another, awaiting async converters;
sync converters run on the event loop (a conversion is quick arithmetic on a dict). A
Failure is logged at WARNING, with the converter's traceback when one raised. A
:class:`Conversion` satisfies the Manager's conversion-handler seam: ``crd_name`` and
``review``.

Example::

    conversion = Conversion("widgets.example.com", hub="v1")

    @conversion.to_hub("v1beta1")
    def v1beta1_to_v1(widget: dict[str, Any]) -> dict[str, Any]:
        widget["spec"]["replicas"] = widget["spec"].pop("size")
        return widget

    @conversion.from_hub("v1beta1")
    def v1_to_v1beta1(widget: dict[str, Any]) -> dict[str, Any]:
        widget["spec"]["size"] = widget["spec"].pop("replicas")
        return widget

    answer = await conversion.review(conversion_review)
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol, Self, TypeVar, overload, runtime_checkable

from pydantic import BaseModel

from aioinformer.errors import ConversionSetupError
from aioinformer.operator._conversion_review import (
    ReviewFailure,
    answer,
    reference,
    request_of,
    uid_of,
)
from aioinformer.operator._conversion_rules import RuleBroken, settle_metadata
from aioinformer.operator._conversion_steps import Step, awaiting, model_step, qualname, run_step

__all__ = ["Conversion", "Convertible", "ObjectConverter"]

logger = logging.getLogger(__name__)

ObjectConverter = Callable[[dict[str, Any]], Mapping[str, Any] | Awaitable[Mapping[str, Any]]]
"""A converter on dicts: takes the object (its own copy) and returns it converted; sync
or async."""

_C = TypeVar("_C", bound=ObjectConverter)
_HubT = TypeVar("_HubT")

_VERSION_RE: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_LABEL_RE: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN_RE: Final = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+"
)


@runtime_checkable
class Convertible(Protocol[_HubT]):
    """What a spoke model implements, as controller-runtime's ``Convertible``: a way to the
    hub model and a way back. Either may be ``async``.

    Example::

        class WidgetV1beta1(KubeObject):
            spec: SpecV1beta1

            def to_hub(self) -> WidgetV1:
                return WidgetV1(metadata=self.metadata, spec=SpecV1(replicas=self.spec.size))

            @classmethod
            def from_hub(cls, hub: WidgetV1) -> Self:
                return cls(metadata=hub.metadata, spec=SpecV1beta1(size=hub.spec.replicas))
    """

    def to_hub(self) -> _HubT | Awaitable[_HubT]:
        """This object as the hub version's model."""
        ...

    @classmethod
    def from_hub(cls, hub: _HubT) -> Self | Awaitable[Self]:
        """The hub's object as this version's model."""
        ...


def _check_version(version: Any, what: str) -> str:
    if not isinstance(version, str) or len(version) > 63 or not _VERSION_RE.fullmatch(version):
        raise ConversionSetupError(
            f"{what} {version!r} is not a version name Kubernetes accepts: lowercase "
            "alphanumerics and '-', starting with a letter, at most 63 characters ('v1beta1')"
        )
    return version


class Conversion:
    """The conversion webhook of the CRD ``crd_name`` (``"<plural>.<group>"``), through the
    version ``hub``; ``kind``, when given, is the only kind it converts (otherwise all the
    objects of one request must share a kind).

    Register each spoke's converters with :meth:`to_hub` and :meth:`from_hub`, or build
    the whole from models with :meth:`from_models`; then mount it in the Manager, which
    calls :meth:`review`. Registration faults raise
    :class:`~aioinformer.errors.ConversionSetupError` at once; a spoke left with one
    direction only is found by :meth:`check` (and answered as a Failure by
    :meth:`review`).
    """

    def __init__(self, crd_name: str, *, hub: str, kind: str | None = None) -> None:
        plural, _, group = crd_name.partition(".") if isinstance(crd_name, str) else ("", "", "")
        if (
            not _LABEL_RE.fullmatch(plural)
            or len(plural) > 63
            or len(group) > 253
            or not _SUBDOMAIN_RE.fullmatch(group)
        ):
            raise ConversionSetupError(
                f"{crd_name!r} is not a CRD name: '<plural>.<group>', a lowercase plural "
                "and a group with at least one dot ('widgets.example.com')"
            )
        if kind is not None and not (isinstance(kind, str) and kind):
            raise ConversionSetupError(f"kind must be a non-empty str or None, not {kind!r}")
        self.crd_name: str = crd_name
        """The CRD's name, ``"<plural>.<group>"``, which the Manager serves it under."""
        self.group: Final[str] = group
        """The CRD's API group."""
        self.hub: Final[str] = _check_version(hub, "the hub version")
        """The version every conversion goes through."""
        self.kind: Final[str | None] = kind
        """The kind converted, or ``None`` for any one kind per request."""
        self._to_hub: dict[str, Step] = {}
        self._from_hub: dict[str, Step] = {}

    @property
    def spokes(self) -> tuple[str, ...]:
        """The versions with a converter registered (in either direction), sorted."""
        return tuple(sorted(self._to_hub.keys() | self._from_hub.keys()))

    @property
    def versions(self) -> tuple[str, ...]:
        """Every version converted: the hub first, then the spokes."""
        return (self.hub, *self.spokes)

    def __repr__(self) -> str:
        return f"<Conversion {self.crd_name} hub={self.hub!r} spokes={list(self.spokes)!r}>"

    @overload
    def to_hub(self, version: str) -> Callable[[_C], _C]: ...
    @overload
    def to_hub(self, version: str, converter: _C) -> _C: ...
    def to_hub(self, version: str, converter: ObjectConverter | None = None) -> Any:
        """Register the converter from spoke ``version`` to the hub: it takes a ``dict`` of
        a ``version`` object and returns the hub's. As a decorator
        (``@conversion.to_hub("v1beta1")``) or a call (``conversion.to_hub("v1beta1", f)``);
        the converter is returned unchanged."""
        return self._register(self._to_hub, "to_hub", version, converter)

    @overload
    def from_hub(self, version: str) -> Callable[[_C], _C]: ...
    @overload
    def from_hub(self, version: str, converter: _C) -> _C: ...
    def from_hub(self, version: str, converter: ObjectConverter | None = None) -> Any:
        """Register the converter from the hub to spoke ``version``: it takes a ``dict`` of
        a hub object and returns the ``version`` one. A decorator or a call, as
        :meth:`to_hub`."""
        return self._register(self._from_hub, "from_hub", version, converter)

    def _register(
        self,
        table: dict[str, Step],
        direction: str,
        version: str,
        converter: ObjectConverter | None,
    ) -> Any:
        self._claim(table, direction, version)

        def register(function: _C) -> _C:
            if not callable(function):
                raise ConversionSetupError(
                    f"{direction}({version!r}) takes a function, not {function!r}"
                )
            self._claim(table, direction, version)
            label = f"{direction}({version!r}) ({qualname(function)})"
            table[version] = Step(label, awaiting(function))
            return function

        return register if converter is None else register(converter)

    def _claim(self, table: dict[str, Step], direction: str, version: str) -> None:
        _check_version(version, f"{direction}: the version")
        if version == self.hub:
            raise ConversionSetupError(
                f"{direction}({version!r}): {version!r} is the hub of {self.crd_name}; "
                "only the other versions (the spokes) have converters"
            )
        if version in table:
            raise ConversionSetupError(
                f"{direction}({version!r}) is already registered for {self.crd_name} "
                f"({table[version].label})"
            )

    @classmethod
    def from_models(
        cls,
        crd_name: str,
        *,
        hub: str,
        models: Mapping[str, type[BaseModel]],
        kind: str | None = None,
    ) -> Self:
        """A conversion of typed objects: ``models`` maps each version to its pydantic
        model (a :class:`~aioinformer.KubeObject` subclass, typically), ``models[hub]``
        being the hub's; every other is a spoke and implements :class:`Convertible`.

        Objects come in as dicts, are validated into the source version's model (a
        failure is answered as a Failure naming the fields), converted through the hub
        model, and go out as ``model_dump(mode="json", by_alias=True,
        exclude_unset=True)``: what the returned model holds, extras included, and
        nothing it only defaults. A spoke's ``to_hub`` must return an instance of the
        hub's model, ``from_hub`` one of its own; pass ``metadata`` on (``metadata=
        self.metadata``), since a converted object keeps its name, namespace and uid. An
        object converted to its own version is not validated: it comes back as sent.
        The whole is checked at once (:meth:`check`).

        Example::

            conversion = Conversion.from_models(
                "widgets.example.com",
                hub="v1",
                models={"v1": WidgetV1, "v1beta1": WidgetV1beta1},
            )
        """
        if hub not in models:
            raise ConversionSetupError(
                f"models has no model for the hub version {hub!r} (it has {sorted(models)})"
            )
        conversion = cls(crd_name, hub=hub, kind=kind)
        seen: dict[type[BaseModel], str] = {}
        for version, model in models.items():
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise ConversionSetupError(
                    f"models[{version!r}] is {model!r}, not a pydantic model class"
                )
            if model in seen:
                raise ConversionSetupError(
                    f"{model.__name__} is the model of both {seen[model]!r} and "
                    f"{version!r}: each version has a model of its own"
                )
            seen[model] = version
        hub_model = models[hub]
        for version, model in models.items():
            if version == hub:
                continue
            missing = [name for name in ("to_hub", "from_hub") if not hasattr(model, name)]
            if missing or not issubclass(model, Convertible):
                raise ConversionSetupError(
                    f"{model.__name__}, the model of spoke {version!r}, has no "
                    f"{' or '.join(missing) or 'to_hub and from_hub'}: a spoke implements "
                    "Convertible (to_hub(self) and the classmethod from_hub(cls, hub))"
                )
            conversion._claim(conversion._to_hub, "to_hub", version)
            name = model.__name__
            conversion._to_hub[version] = model_step(
                f"{name}.to_hub", model, hub_model, model.to_hub
            )
            conversion._from_hub[version] = model_step(
                f"{name}.from_hub", hub_model, model, model.from_hub
            )
        conversion.check()
        return conversion

    def check(self) -> None:
        """Raise :class:`~aioinformer.errors.ConversionSetupError` unless every spoke has
        both converters. Call it once registration is done (where the conversion is
        mounted), so that a missing half fails the start rather than every request:
        :meth:`review` answers Failure for it until it is registered."""
        problem = self._problem()
        if problem is not None:
            raise ConversionSetupError(problem)

    def _problem(self) -> str | None:
        halves = [
            f"{version!r} has {'to_hub' if version in self._to_hub else 'from_hub'} but no "
            f"{'from_hub' if version in self._to_hub else 'to_hub'}"
            for version in self.spokes
            if (version in self._to_hub) != (version in self._from_hub)
        ]
        if not halves:
            return None
        return f"the conversion of {self.crd_name} is incomplete: {'; '.join(halves)}"

    def spec_conversion(self, client_config: Mapping[str, Any]) -> dict[str, Any]:
        """The CRD's ``spec.conversion`` for this webhook, reached through
        ``client_config`` (``{"service": {...}, "caBundle": ...}`` or ``{"url": ...}``)."""
        return {
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": dict(client_config),
                "conversionReviewVersions": ["v1"],
            },
        }

    async def review(self, review: Mapping[str, Any]) -> dict[str, Any]:
        """The answer to the ConversionReview ``review``: Success with the converted
        objects, or Failure with a message naming the object and the cause. Never
        raises for the request's content or a converter's error (cancellation passes)."""
        uid = uid_of(review)
        try:
            request = request_of(review)
            desired = request["desiredAPIVersion"]
            if not isinstance(desired, str) or self._version_in(desired) is None:
                raise ReviewFailure(
                    f"desiredAPIVersion {desired!r} is not a version of {self.crd_name} "
                    f"(group {self.group!r}, versions {list(self.versions)})"
                )
            problem = self._problem()
            if problem is not None:
                raise ReviewFailure(problem)
            kinds: set[str] = set()
            converted = [
                await self._convert(index, obj, desired, kinds)
                for index, obj in enumerate(request["objects"])
            ]
        except ReviewFailure as failure:
            logger.warning(
                "%r answers Failure to ConversionReview %r: %s",
                self,
                uid,
                failure,
                exc_info=failure.cause,
            )
            return answer(uid, [], {"status": "Failure", "message": str(failure)})
        return answer(uid, converted, {"status": "Success"})

    def _version_in(self, api_version: str) -> str | None:
        """The version of ``api_version`` when it is this CRD's group and a version
        converted; ``None`` otherwise."""
        group, slash, version = api_version.rpartition("/")
        if not slash or group != self.group or version not in self.versions:
            return None
        return version

    async def _convert(self, index: int, obj: Any, desired: str, kinds: set[str]) -> Any:
        if not isinstance(obj, Mapping):
            raise ReviewFailure(f"objects[{index}] is a {type(obj).__name__}, not an object")
        ref = reference(index, obj)
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        source = self._version_in(api_version) if isinstance(api_version, str) else None
        if source is None:
            raise ReviewFailure(
                f"{ref} has apiVersion {api_version!r}, not a version of {self.crd_name} "
                f"(group {self.group!r}, versions {list(self.versions)})"
            )
        if not isinstance(kind, str) or not kind:
            raise ReviewFailure(f"{ref} has no kind")
        if not isinstance(obj.get("metadata", {}), Mapping):
            raise ReviewFailure(f"{ref} has metadata of type {type(obj['metadata']).__name__}")
        if (self.kind is not None and kind != self.kind) or (kinds and kind not in kinds):
            expected = self.kind or next(iter(kinds))
            raise ReviewFailure(
                f"{ref} is a {kind}, not a {expected}: {self.crd_name} serves one kind"
            )
        kinds.add(kind)
        target = desired.rpartition("/")[2]
        steps = []
        if source != target and source != self.hub:
            steps.append((self._to_hub[source], self.hub))
        if source != target and target != self.hub:
            steps.append((self._from_hub[target], target))
        current: dict[str, Any] = copy.deepcopy(dict(obj))
        for step, version in steps:
            current = await run_step(step, current, f"{self.group}/{version}", ref)
        try:
            return settle_metadata(obj, current)
        except RuleBroken as broken:
            raise ReviewFailure(
                f"{ref} converted from {api_version} to {desired}: {broken}"
            ) from None
