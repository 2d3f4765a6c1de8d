"""The metadata accessors of ``aioinformer._objects.meta``: the same answer for a raw dict, another
mapping, a model with mapping metadata and a model with model metadata."""

from __future__ import annotations

from types import MappingProxyType, SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

from aioinformer._objects.meta import (
    annotations_of,
    api_version_and_kind_of,
    describe,
    generation_of,
    labels_of,
    meta_namespace_key,
    metadata_of,
    name_of,
    namespace_of,
    owner_references_of,
    resource_version_of,
    same_resource_version,
    uid_of,
)
from aioinformer.errors import KeyFuncError
from aioinformer.models import DeletedFinalStateUnknown, KubeObject

if TYPE_CHECKING:
    from collections.abc import Mapping

OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "controller": True}

WIRE_META: dict[str, Any] = {
    "name": "web-0",
    "namespace": "default",
    "resourceVersion": "7",
    "generation": 3,
    "labels": {"app": "web"},
    "annotations": {"note": "x"},
    "ownerReferences": [OWNER],
}


class _Ref:
    """An owner reference held as a model, as pydantic metadata holds it."""

    def model_dump(self, *, by_alias: bool) -> dict[str, Any]:
        assert by_alias
        return dict(OWNER)


def model_meta() -> SimpleNamespace:
    return SimpleNamespace(
        name="web-0",
        namespace="default",
        resource_version="7",
        generation=3,
        labels={"app": "web"},
        annotations={"note": "x"},
        owner_references=[_Ref()],
    )


SHAPES = [
    pytest.param({"metadata": dict(WIRE_META)}, id="raw-dict"),
    pytest.param(MappingProxyType({"metadata": dict(WIRE_META)}), id="other-mapping"),
    pytest.param(SimpleNamespace(metadata=dict(WIRE_META)), id="model-with-dict-metadata"),
    pytest.param(SimpleNamespace(metadata=model_meta()), id="model-with-model-metadata"),
]


@pytest.mark.parametrize("obj", SHAPES)
def test_every_shape_gives_the_same_fields(obj: Any) -> None:
    assert metadata_of(obj) is not None
    assert meta_namespace_key(obj) == "default/web-0"
    assert namespace_of(obj) == "default"
    assert name_of(obj) == "web-0"
    assert resource_version_of(obj) == "7"
    assert generation_of(obj) == 3
    assert labels_of(obj) == {"app": "web"}
    assert annotations_of(obj) == {"note": "x"}
    assert owner_references_of(obj) == (OWNER,)


EMPTY = [
    pytest.param({}, id="dict-without-metadata"),
    pytest.param({"metadata": {}}, id="dict-with-empty-metadata"),
    pytest.param(SimpleNamespace(), id="object-without-metadata"),
    pytest.param(SimpleNamespace(metadata=SimpleNamespace()), id="model-with-empty-metadata"),
    pytest.param(None, id="none"),
]


@pytest.mark.parametrize("obj", EMPTY)
def test_missing_fields_read_as_neutral_values(obj: Any) -> None:
    assert namespace_of(obj) == ""
    assert name_of(obj) is None
    assert resource_version_of(obj) is None
    assert generation_of(obj) is None
    assert labels_of(obj) is None
    assert annotations_of(obj) is None
    assert owner_references_of(obj) == ()


@pytest.mark.parametrize("value", ["3", 3.0, True, None])
def test_a_generation_that_is_not_an_integer_reads_as_none(value: object) -> None:
    assert generation_of({"metadata": {"generation": value}}) is None


def test_a_cluster_scoped_object_is_keyed_by_name_alone() -> None:
    assert meta_namespace_key({"metadata": {"name": "node-1"}}) == "node-1"
    assert meta_namespace_key(SimpleNamespace(metadata=SimpleNamespace(name="node-1"))) == "node-1"


def test_a_tombstone_is_keyed_by_its_key() -> None:
    assert meta_namespace_key(DeletedFinalStateUnknown("ns/gone", None)) == "ns/gone"


def test_a_kube_object_model_is_keyed_like_its_dict() -> None:
    obj = KubeObject.model_validate({"metadata": {"name": "a", "namespace": "ns"}})
    assert meta_namespace_key(obj) == "ns/a"


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param({}, "no metadata.name", id="dict-without-metadata"),
        pytest.param({"metadata": {"name": 5}}, "no metadata.name", id="dict-with-non-str-name"),
        pytest.param(MappingProxyType({}), "no metadata:", id="mapping-without-metadata"),
        pytest.param(SimpleNamespace(), "no metadata:", id="object-without-metadata"),
        pytest.param(
            SimpleNamespace(metadata={"namespace": "ns"}), "no metadata.name", id="nameless"
        ),
    ],
)
def test_an_object_without_a_usable_name_has_no_key(obj: Any, message: str) -> None:
    with pytest.raises(KeyFuncError, match=message):
        meta_namespace_key(obj)


def test_describe_names_identity_never_content() -> None:
    secret = {
        "kind": "Secret",
        "metadata": {"name": "token", "namespace": "ns", "uid": "u-1"},
        "data": {"password": "hunter2"},
    }
    text = describe(secret)
    assert text == "dict kind='Secret' namespace='ns' name='token' uid='u-1'"
    assert "hunter2" not in text


def rv_dict(rv: str) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv}}


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        pytest.param(rv_dict("1"), rv_dict("1"), True, id="dicts-equal"),
        pytest.param(rv_dict("1"), rv_dict("2"), False, id="dicts-differ"),
        pytest.param({"metadata": {}}, {"metadata": {}}, True, id="dicts-both-without"),
        pytest.param(
            SimpleNamespace(metadata=SimpleNamespace(resource_version="3")),
            {"metadata": {"resourceVersion": "3"}},
            True,
            id="model-and-dict-equal",
        ),
        pytest.param(
            SimpleNamespace(metadata=SimpleNamespace(resource_version="3")),
            SimpleNamespace(metadata=SimpleNamespace(resource_version="4")),
            False,
            id="models-differ",
        ),
    ],
)
def test_same_resource_version(old: Any, new: Any, same: bool) -> None:
    assert same_resource_version(old, new) is same


def test_labels_are_returned_as_held_not_copied() -> None:
    labels: Mapping[str, str] = {"a": "b"}
    assert labels_of({"metadata": {"labels": labels}}) is labels


def test_annotations_are_returned_as_held_not_copied() -> None:
    annotations: Mapping[str, str] = {"a": "b"}
    assert annotations_of({"metadata": {"annotations": annotations}}) is annotations


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"apiVersion": "v1", "kind": "Pod", "metadata": {"uid": "u"}}, ("v1", "Pod", "u")),
        (KubeObject.model_validate({"apiVersion": "v1", "kind": "Pod"}), ("v1", "Pod", None)),
        ({"kind": 3, "metadata": {"uid": 4}}, (None, None, None)),
        (SimpleNamespace(), (None, None, None)),
    ],
    ids=["dict", "model", "not-strings", "bare"],
)
def test_api_version_kind_and_uid_are_read_from_dicts_and_models(
    obj: Any, expected: tuple[str | None, str | None, str | None]
) -> None:
    assert (*api_version_and_kind_of(obj), uid_of(obj)) == expected
