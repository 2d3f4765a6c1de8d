"""CRD conversion of typed objects: ``Conversion.from_models`` with pydantic models whose
spokes implement ``Convertible`` (controller-runtime's ``Hub``/``Convertible`` pair), sync
and async, objects in and out as dicts; and the registration faults it refuses."""

from __future__ import annotations

import asyncio
from typing import Any, Self

import pytest
from pydantic import BaseModel

from aioinformer.errors import ConversionSetupError
from aioinformer.models import KubeObject
from aioinformer.operator import Conversion, Convertible

CRD = "widgets.example.com"


class SpecV1(BaseModel):
    replicas: int
    color: str = "blue"


class SpecV1beta1(BaseModel):
    size: int


class SpecV1alpha1(BaseModel):
    count: int


class WidgetV1(KubeObject):
    """The hub."""

    spec: SpecV1


class WidgetV1beta1(KubeObject):
    spec: SpecV1beta1

    def to_hub(self) -> WidgetV1:
        return WidgetV1(metadata=self.metadata, spec=SpecV1(replicas=self.spec.size))

    @classmethod
    def from_hub(cls, hub: WidgetV1) -> Self:
        return cls(metadata=hub.metadata, spec=SpecV1beta1(size=hub.spec.replicas))


class WidgetV1alpha1(KubeObject):
    spec: SpecV1alpha1

    async def to_hub(self) -> WidgetV1:
        await asyncio.sleep(0)
        return WidgetV1(metadata=self.metadata, spec=SpecV1(replicas=self.spec.count))

    @classmethod
    async def from_hub(cls, hub: WidgetV1) -> Self:
        await asyncio.sleep(0)
        return cls(metadata=hub.metadata, spec=SpecV1alpha1(count=hub.spec.replicas))


MODELS: dict[str, type[BaseModel]] = {
    "v1": WidgetV1,
    "v1beta1": WidgetV1beta1,
    "v1alpha1": WidgetV1alpha1,
}


def typed() -> Conversion:
    return Conversion.from_models(CRD, hub="v1", models=MODELS, kind="Widget")


def widget(version: str, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"example.com/{version}",
        "kind": "Widget",
        "metadata": {
            "name": "w1",
            "namespace": "default",
            "uid": "u-1",
            "resourceVersion": "3",
            "labels": {"app": "w"},
        },
        "spec": spec,
        **extra,
    }


def review_of(desired: str, *objects: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "r-1", "desiredAPIVersion": desired, "objects": list(objects)},
    }


def converted(answer: dict[str, Any]) -> list[Any]:
    assert answer["response"]["result"] == {"status": "Success"}, answer["response"]["result"]
    objects: list[Any] = answer["response"]["convertedObjects"]
    return objects


def failed(answer: dict[str, Any]) -> str:
    response = answer["response"]
    assert response["result"]["status"] == "Failure"
    assert response["convertedObjects"] == []
    message: str = response["result"]["message"]
    return message


@pytest.mark.parametrize(
    ("source", "target", "spec", "expected"),
    [
        pytest.param("v1beta1", "v1", {"size": 2}, {"replicas": 2}, id="sync-spoke-to-hub"),
        pytest.param("v1", "v1beta1", {"replicas": 2}, {"size": 2}, id="hub-to-sync-spoke"),
        pytest.param("v1alpha1", "v1", {"count": 2}, {"replicas": 2}, id="async-spoke-to-hub"),
        pytest.param("v1", "v1alpha1", {"replicas": 2}, {"count": 2}, id="hub-to-async-spoke"),
        pytest.param("v1beta1", "v1alpha1", {"size": 2}, {"count": 2}, id="spoke-to-spoke"),
        pytest.param("v1alpha1", "v1beta1", {"count": 2}, {"size": 2}, id="spoke-to-spoke-back"),
    ],
)
async def test_typed_objects_convert_between_any_two_versions(
    source: str, target: str, spec: dict[str, Any], expected: dict[str, Any]
) -> None:
    (out,) = converted(
        await typed().review(review_of(f"example.com/{target}", widget(source, spec)))
    )
    assert out == widget(target, expected)


async def test_a_field_a_model_does_not_declare_round_trips_as_an_extra() -> None:
    obj = widget("v1beta1", {"size": 1}, status={"ready": True})

    class Keeping(KubeObject):
        spec: SpecV1beta1

        def to_hub(self) -> WidgetV1:
            extra = self.model_extra or {}
            return WidgetV1.model_validate(
                {"metadata": self.metadata, "spec": {"replicas": self.spec.size}, **extra}
            )

        @classmethod
        def from_hub(cls, hub: WidgetV1) -> Self:
            return cls(metadata=hub.metadata, spec=SpecV1beta1(size=hub.spec.replicas))

    conversion = Conversion.from_models(CRD, hub="v1", models={"v1": WidgetV1, "v1beta1": Keeping})
    (out,) = converted(await conversion.review(review_of("example.com/v1", obj)))
    assert out["status"] == {"ready": True}


async def test_an_object_its_model_refuses_is_a_failure_naming_the_fields() -> None:
    message = failed(
        await typed().review(review_of("example.com/v1", widget("v1beta1", {"size": "many"})))
    )
    assert message.startswith(
        "objects[0] (default/w1): WidgetV1beta1.to_hub: not a valid WidgetV1beta1: spec.size: "
    )


async def test_a_hub_object_its_model_refuses_is_a_failure_too() -> None:
    message = failed(await typed().review(review_of("example.com/v1beta1", widget("v1", {}))))
    assert "WidgetV1beta1.from_hub: not a valid WidgetV1: spec.replicas: Field required" in message


async def test_a_to_hub_returning_another_model_is_a_failure() -> None:
    class Wrong(KubeObject):
        spec: SpecV1beta1

        def to_hub(self) -> Any:
            return self

        @classmethod
        def from_hub(cls, hub: WidgetV1) -> Self:
            return cls(metadata=hub.metadata, spec=SpecV1beta1(size=hub.spec.replicas))

    conversion = Conversion.from_models(CRD, hub="v1", models={"v1": WidgetV1, "v1beta1": Wrong})
    message = failed(
        await conversion.review(review_of("example.com/v1", widget("v1beta1", {"size": 1})))
    )
    assert message.endswith("Wrong.to_hub: returned a Wrong, not a WidgetV1")


async def test_a_model_method_that_raises_is_a_failure_naming_it() -> None:
    class Failing(WidgetV1beta1):
        @classmethod
        def from_hub(cls, hub: WidgetV1) -> Self:
            raise ValueError("replicas cannot be expressed")

    conversion = Conversion.from_models(CRD, hub="v1", models={"v1": WidgetV1, "v1beta1": Failing})
    message = failed(
        await conversion.review(review_of("example.com/v1beta1", widget("v1", {"replicas": 1})))
    )
    assert message == (
        "objects[0] (default/w1): Failing.from_hub raised ValueError: replicas cannot be expressed"
    )


async def test_a_from_hub_that_forgets_the_metadata_is_refused_as_kube_apiserver_would() -> None:
    class Forgetful(WidgetV1beta1):
        @classmethod
        def from_hub(cls, hub: WidgetV1) -> Self:
            return cls(spec=SpecV1beta1(size=hub.spec.replicas))

    conversion = Conversion.from_models(
        CRD, hub="v1", models={"v1": WidgetV1, "v1beta1": Forgetful}
    )
    message = failed(
        await conversion.review(review_of("example.com/v1beta1", widget("v1", {"replicas": 1})))
    )
    assert message == (
        "objects[0] (default/w1) converted from example.com/v1 to example.com/v1beta1: the "
        "converted object has no metadata (a converter keeps the input's)"
    )


def test_the_spoke_models_are_convertible_and_the_hub_is_not() -> None:
    assert issubclass(WidgetV1beta1, Convertible)
    assert issubclass(WidgetV1alpha1, Convertible)
    assert not issubclass(WidgetV1, Convertible)
    conversion = typed()
    assert conversion.versions == ("v1", "v1alpha1", "v1beta1")
    assert conversion.kind == "Widget"


def test_the_hub_must_have_a_model() -> None:
    with pytest.raises(ConversionSetupError, match=r"no model for the hub version 'v2'"):
        Conversion.from_models(CRD, hub="v2", models=MODELS)


def test_a_spoke_model_without_the_convertible_methods_is_refused() -> None:
    class Plain(KubeObject):
        def to_hub(self) -> WidgetV1:
            raise NotImplementedError

    with pytest.raises(
        ConversionSetupError, match=r"Plain, the model of spoke 'v1beta1', has no from_hub"
    ):
        Conversion.from_models(CRD, hub="v1", models={"v1": WidgetV1, "v1beta1": Plain})


def test_one_model_for_two_versions_is_refused() -> None:
    with pytest.raises(ConversionSetupError, match=r"WidgetV1 is the model of both 'v1' and 'v2'"):
        Conversion.from_models(CRD, hub="v1", models={"v1": WidgetV1, "v2": WidgetV1})


def test_a_model_that_is_not_a_pydantic_class_is_refused() -> None:
    with pytest.raises(ConversionSetupError, match=r"models\['v1beta1'\] is .*not a pydantic"):
        Conversion.from_models(
            CRD,
            hub="v1",
            models={"v1": WidgetV1, "v1beta1": dict},  # type: ignore[dict-item]
        )


def test_a_typed_conversion_refuses_more_converters_for_its_spokes() -> None:
    with pytest.raises(ConversionSetupError, match=r"to_hub\('v1beta1'\) is already registered"):
        typed().to_hub("v1beta1", lambda obj: obj)


class SpecV2(BaseModel):
    replicas: int
    color: str


class WidgetV2(KubeObject):
    """A hub with a field the older version lacks."""

    spec: SpecV2


COLOR = "example.com/color"


class WidgetV1Poor(KubeObject):
    """A spoke without ``color``: it keeps it in an annotation, for the way back."""

    spec: SpecV1beta1

    def to_hub(self) -> WidgetV2:
        metadata = self.metadata.model_copy(deep=True)
        color = metadata.annotations.pop(COLOR, "blue")
        return WidgetV2(metadata=metadata, spec=SpecV2(replicas=self.spec.size, color=color))

    @classmethod
    def from_hub(cls, hub: WidgetV2) -> Self:
        metadata = hub.metadata.model_copy(deep=True)
        metadata.annotations = {**metadata.annotations, COLOR: hub.spec.color}
        return cls(metadata=metadata, spec=SpecV1beta1(size=hub.spec.replicas))


async def test_a_typed_round_trip_through_a_poorer_version_keeps_every_field() -> None:
    conversion = Conversion.from_models(CRD, hub="v2", models={"v2": WidgetV2, "v1": WidgetV1Poor})
    start = widget("v2", {"replicas": 5, "color": "teal"})
    start["metadata"]["annotations"] = {"keep": "me"}
    (down,) = converted(await conversion.review(review_of("example.com/v1", start)))
    assert down["spec"] == {"size": 5}
    assert down["metadata"]["annotations"] == {"keep": "me", COLOR: "teal"}
    (back,) = converted(await conversion.review(review_of("example.com/v2", down)))
    assert back == start
