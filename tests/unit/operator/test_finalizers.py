"""The finalizer helpers on objects in memory (controller-runtime's ``controllerutil``
finalizer tests, as Python): name validation, membership, in-place add/remove on dicts and
models, and the conditional merge patches :class:`Finalizer` writes."""

from __future__ import annotations

from typing import Any

import pytest

from aioinformer import ObjectView, ReadOnlyObjectError
from aioinformer._objects.raw import CompactEntry
from aioinformer.models import KubeObject, ObjectMeta
from aioinformer.operator.finalizers import (
    Finalizer,
    FinalizerAction,
    FinalizerResult,
    add_finalizer,
    add_finalizer_patch,
    check_finalizer_name,
    finalizers_of,
    has_finalizer,
    is_being_deleted,
    remove_finalizer,
    remove_finalizer_patch,
)

NAME = "example.com/cleanup"


def widget(*finalizers: str, rv: str | None = "7", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "w", "namespace": "default"}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if rv is not None:
        meta["resourceVersion"] = rv
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta}


@pytest.mark.parametrize(
    "name",
    ["example.com/cleanup", "a.b/c", "widgets.example.com/release-volumes", "x/a_b.c"],
)
def test_domain_qualified_names_are_accepted(name: str) -> None:
    assert check_finalizer_name(name) == name


@pytest.mark.parametrize(
    ("name", "fault"),
    [
        ("cleanup", "not domain-qualified"),
        ("kubernetes", "not domain-qualified"),
        ("/cleanup", "prefix '' must be a DNS subdomain"),
        ("Example.com/cleanup", "must be a DNS subdomain"),
        ("example.com/", "part after '/'"),
        ("example.com/-x", "part after '/'"),
        ("example.com/a/b", "part after '/'"),
        ("example.com/" + "x" * 64, "part after '/'"),
        ("a" * 254 + "/x", "must be a DNS subdomain"),
    ],
    ids=[
        "bare",
        "built-in",
        "no-prefix",
        "uppercase-prefix",
        "no-path",
        "dash-start",
        "two-slashes",
        "path-too-long",
        "prefix-too-long",
    ],
)
def test_bad_names_raise_value_error_naming_the_fault(name: str, fault: str) -> None:
    with pytest.raises(ValueError, match=fault.replace("(", r"\(")) as caught:
        check_finalizer_name(name)
    assert repr(name) in str(caught.value)


def test_a_finalizer_refuses_a_bad_name_at_construction() -> None:
    with pytest.raises(ValueError, match="not domain-qualified"):
        Finalizer(None, "cleanup", lambda obj: None)  # type: ignore[arg-type]


def test_membership_and_deletion_are_read_from_dicts_and_models() -> None:
    assert has_finalizer(widget(NAME), NAME)
    assert not has_finalizer(widget("other.io/x"), NAME)
    assert not has_finalizer({"metadata": {}}, NAME)
    assert is_being_deleted(widget(deleting=True))
    assert not is_being_deleted(widget())
    model = KubeObject(
        metadata=ObjectMeta(name="w", finalizers=[NAME], deletionTimestamp="2026-01-01T00:00:00Z")
    )
    assert has_finalizer(model, NAME)
    assert is_being_deleted(model)


def test_add_and_remove_in_place_keep_other_finalizers_and_say_whether_they_changed() -> None:
    obj = widget("other.io/x")
    assert add_finalizer(obj, NAME)
    assert not add_finalizer(obj, NAME)
    assert finalizers_of(obj) == ["other.io/x", NAME]
    assert remove_finalizer(obj, NAME)
    assert not remove_finalizer(obj, NAME)
    assert finalizers_of(obj) == ["other.io/x"]


def test_add_and_remove_in_place_work_on_models_and_bare_dicts() -> None:
    model = KubeObject(metadata=ObjectMeta(name="w"))
    assert add_finalizer(model, NAME)
    assert model.metadata.finalizers == [NAME]
    assert remove_finalizer(model, NAME)
    assert model.metadata.finalizers == []
    bare: dict[str, Any] = {}
    assert add_finalizer(bare, NAME)
    assert bare == {"metadata": {"finalizers": [NAME]}}


def test_remove_drops_every_copy_of_the_name() -> None:
    obj = widget(NAME, "other.io/x", NAME)
    assert remove_finalizer(obj, NAME)
    assert finalizers_of(obj) == ["other.io/x"]


def test_patches_carry_the_whole_list_and_the_resource_version_precondition() -> None:
    assert add_finalizer_patch(widget("other.io/x"), NAME) == {
        "metadata": {"resourceVersion": "7", "finalizers": ["other.io/x", NAME]}
    }
    assert remove_finalizer_patch(widget("other.io/x", NAME), NAME) == {
        "metadata": {"resourceVersion": "7", "finalizers": ["other.io/x"]}
    }
    assert remove_finalizer_patch(widget(NAME), NAME) == {
        "metadata": {"resourceVersion": "7", "finalizers": []}
    }


def test_no_patch_when_nothing_changes() -> None:
    assert add_finalizer_patch(widget(NAME), NAME) is None
    assert remove_finalizer_patch(widget("other.io/x"), NAME) is None


def test_a_patch_needs_a_resource_version() -> None:
    with pytest.raises(ValueError, match=r"no metadata\.resourceVersion"):
        add_finalizer_patch(widget(rv=None), NAME)
    with pytest.raises(ValueError, match=r"no metadata\.resourceVersion"):
        remove_finalizer_patch(widget(NAME, rv=None), NAME)


@pytest.mark.parametrize(
    ("action", "stop"),
    [
        (FinalizerAction.ADDED, False),
        (FinalizerAction.PRESENT, False),
        (FinalizerAction.FINALIZED, True),
        (FinalizerAction.DELETING, True),
    ],
)
def test_a_result_says_whether_to_stop_and_carries_the_resource_version(
    action: FinalizerAction, stop: bool
) -> None:
    result = FinalizerResult(action, widget(rv="12"))
    assert result.stop is stop
    assert result.resource_version == "12"
    assert FinalizerResult(action, None).resource_version is None


def test_a_compact_cache_view_is_refused_with_the_way_to_a_copy() -> None:
    obj = {"metadata": {"name": "a", "namespace": "ns", "finalizers": ["example.com/x"]}}
    view = ObjectView(CompactEntry.from_dict(obj))
    with pytest.raises(ReadOnlyObjectError, match=r"obj\.to_dict\(\)"):
        add_finalizer(view, "example.com/y")
    with pytest.raises(ReadOnlyObjectError):
        remove_finalizer(view, "example.com/x")
    assert has_finalizer(view, "example.com/x")
    copied = view.to_dict()
    assert add_finalizer(copied, "example.com/y")
    assert finalizers_of(copied) == ["example.com/x", "example.com/y"]
