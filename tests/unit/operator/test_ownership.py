"""Owner references (controller-runtime's ``controllerutil`` owner tests, as Python): the
reference written, in-place updates, the one-controller rule, the scope rules, models as
well as dicts, and that :func:`enqueue_owner` maps what :func:`set_controller_reference`
writes back to the owner's key."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer import ObjectView, ReadOnlyObjectError
from aioinformer._objects.raw import CompactEntry
from aioinformer.errors import AlreadyOwnedError, OwnerReferenceError
from aioinformer.models import KubeObject, ObjectMeta, OwnerReference
from aioinformer.operator.controller import enqueue_owner
from aioinformer.operator.ownership import (
    has_controller_reference,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
)


def obj(
    name: str,
    *,
    api_version: str = "v1",
    kind: str = "ConfigMap",
    namespace: str | None = "default",
    uid: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if uid is not None:
        meta["uid"] = uid
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def widget(name: str = "hello", *, uid: str = "uid-1", namespace: str | None = "default") -> Any:
    return obj(name, api_version="example.com/v1", kind="Widget", namespace=namespace, uid=uid)


def test_set_controller_reference_writes_a_blocking_controller_reference() -> None:
    dependent = obj("hello-config")
    assert set_controller_reference(widget(), dependent) is dependent
    assert dependent["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "name": "hello",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert has_controller_reference(dependent)


def test_block_owner_deletion_can_be_turned_off() -> None:
    dependent = set_controller_reference(widget(), obj("c"), block_owner_deletion=False)
    assert dependent["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is False


def test_the_same_owner_again_updates_in_place_without_a_duplicate() -> None:
    dependent = obj("c")
    dependent["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "u0"},
        {"apiVersion": "example.com/v1alpha1", "kind": "Widget", "name": "hello", "uid": "old"},
    ]
    set_controller_reference(widget(uid="new"), dependent)
    refs = dependent["metadata"]["ownerReferences"]
    assert [ref["kind"] for ref in refs] == ["Other", "Widget"]
    assert refs[1]["uid"] == "new"
    assert refs[1]["apiVersion"] == "example.com/v1"
    assert refs[1]["controller"] is True
    set_controller_reference(widget(uid="new"), dependent)
    assert len(dependent["metadata"]["ownerReferences"]) == 2


def test_another_controller_raises_already_owned_naming_both() -> None:
    dependent = set_controller_reference(widget("first"), obj("c"))
    with pytest.raises(AlreadyOwnedError, match=r"Widget 'first'.*Widget 'second'") as caught:
        set_controller_reference(widget("second", uid="uid-2"), dependent)
    assert caught.value.existing["name"] == "first"
    assert caught.value.owner["name"] == "second"
    assert len(dependent["metadata"]["ownerReferences"]) == 1


def test_an_owner_of_another_group_with_the_same_kind_and_name_is_another_owner() -> None:
    dependent = set_controller_reference(widget(), obj("c"))
    other = obj("hello", api_version="other.io/v1", kind="Widget", uid="uid-9")
    with pytest.raises(AlreadyOwnedError):
        set_controller_reference(other, dependent)
    set_owner_reference(other, dependent)
    assert len(dependent["metadata"]["ownerReferences"]) == 2


def test_set_owner_reference_adds_a_plain_reference_beside_the_controller() -> None:
    dependent = set_controller_reference(widget(), obj("c"))
    set_owner_reference(obj("p", kind="Pod", uid="uid-p"), dependent)
    refs = dependent["metadata"]["ownerReferences"]
    assert refs[1] == {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p"}
    assert has_controller_reference(dependent)


def test_set_owner_reference_replaces_a_controller_reference_to_the_same_owner() -> None:
    dependent = set_controller_reference(widget(), obj("c"))
    set_owner_reference(widget(), dependent)
    assert not has_controller_reference(dependent)
    assert len(dependent["metadata"]["ownerReferences"]) == 1


@pytest.mark.parametrize(
    ("owner", "missing"),
    [
        (obj("w", kind="Widget"), "uid"),
        ({"kind": "Widget", "metadata": {"name": "w", "uid": "u"}}, "apiVersion"),
        ({"apiVersion": "v1", "metadata": {"uid": "u"}}, "kind, name"),
    ],
    ids=["no-uid", "no-api-version", "no-kind-no-name"],
)
def test_an_owner_missing_identity_fields_raises_naming_them(owner: Any, missing: str) -> None:
    with pytest.raises(OwnerReferenceError, match=f"has no {missing}:"):
        set_controller_reference(owner, obj("c"))


def test_a_cluster_scoped_object_cannot_have_a_namespaced_owner() -> None:
    with pytest.raises(OwnerReferenceError, match=r"cluster-scoped .* namespaced owner"):
        set_controller_reference(widget(), obj("n", kind="Namespace", namespace=None))
    with pytest.raises(OwnerReferenceError, match="cluster-scoped"):
        set_owner_reference(widget(), obj("n", kind="Namespace", namespace=None))


def test_cross_namespace_owner_references_are_refused() -> None:
    with pytest.raises(OwnerReferenceError, match="owner's namespace 'default', object's"):
        set_controller_reference(widget(), obj("c", namespace="other"))


def test_a_cluster_scoped_owner_fits_namespaced_and_cluster_scoped_objects() -> None:
    node = obj("node-1", kind="Node", namespace=None, uid="uid-n")
    set_controller_reference(node, obj("c", namespace="other"))
    set_controller_reference(node, obj("pv", kind="PersistentVolume", namespace=None))


def test_models_work_as_owner_and_as_dependent() -> None:
    owner = KubeObject.model_validate(widget())
    dependent = KubeObject(
        apiVersion="v1", kind="ConfigMap", metadata=ObjectMeta(name="c", namespace="default")
    )
    assert set_controller_reference(owner, dependent) is dependent
    assert dependent.metadata.owner_references == [
        OwnerReference(
            apiVersion="example.com/v1",
            kind="Widget",
            name="hello",
            uid="uid-1",
            controller=True,
            blockOwnerDeletion=True,
        )
    ]
    assert has_controller_reference(dependent)


def test_an_object_without_metadata_gets_a_metadata_map() -> None:
    dependent: dict[str, Any] = {"apiVersion": "v1", "kind": "Node"}
    set_controller_reference(obj("n", kind="Node", namespace=None, uid="u"), dependent)
    assert dependent["metadata"]["ownerReferences"][0]["name"] == "n"


def test_remove_owner_reference_keeps_the_others_and_refuses_an_unknown_owner() -> None:
    pod = obj("p", kind="Pod", uid="uid-p")
    dependent = set_owner_reference(pod, set_controller_reference(widget(), obj("c")))
    remove_owner_reference(widget(), dependent)
    assert [ref["name"] for ref in dependent["metadata"]["ownerReferences"]] == ["p"]
    assert not has_controller_reference(dependent)
    with pytest.raises(OwnerReferenceError, match="has no owner reference to Widget 'hello'"):
        remove_owner_reference(widget(), dependent)


def test_has_controller_reference_is_false_without_references() -> None:
    assert not has_controller_reference(obj("c"))
    assert not has_controller_reference(set_owner_reference(widget(), obj("c")))


def test_enqueue_owner_finds_what_set_controller_reference_writes() -> None:
    dependent = set_controller_reference(widget("hello"), obj("hello-config"))
    assert list(enqueue_owner("Widget")(dependent)) == ["default/hello"]
    assert list(enqueue_owner("Widget", api_version="example.com/v1")(dependent)) == [
        "default/hello"
    ]
    plain = set_owner_reference(widget("hello"), obj("hello-config"))
    assert list(enqueue_owner("Widget")(plain)) == []


def test_a_compact_cache_view_is_refused_with_the_way_to_a_copy() -> None:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "uid": "u-1"},
    }
    child = ObjectView(CompactEntry.from_dict({"metadata": {"name": "c", "namespace": "ns"}}))
    with pytest.raises(ReadOnlyObjectError, match=r"obj\.to_dict\(\)"):
        set_controller_reference(ObjectView(CompactEntry.from_dict(owner)), child)
    copied = set_controller_reference(ObjectView(CompactEntry.from_dict(owner)), child.to_dict())
    assert copied["metadata"]["ownerReferences"][0]["uid"] == "u-1"
